//! Replays a recording: each `call` step is one turn with one tool call, each `say` step a
//! turn handed to the user. Arguments may refer to earlier results by name (as a model
//! reads them) and to demo objects by name; the harness measures what the calls did, never
//! what the recording claims.

use anyhow::{Context as _, anyhow};
use serde_json::Value;

use super::{Reply, ToolCallRequest, ToolResult, Turn};
use crate::refs::Scope;
use crate::scenario::{Recording, Step};

/// The scripted model.
#[derive(Debug)]
pub struct ScriptedDriver {
    steps: Vec<Step>,
    cursor: usize,
    scope: Scope,
    last_reply: Option<Reply>,
    pending_name: Option<String>,
    calls: usize,
}

impl ScriptedDriver {
    /// Plays `recording`, resolving references in `scope` (fixture and setup results).
    pub fn new(recording: &Recording, scope: Scope) -> Self {
        ScriptedDriver {
            steps: recording.steps.clone(),
            cursor: 0,
            scope,
            last_reply: None,
            pending_name: None,
            calls: 0,
        }
    }

    pub(super) fn next(&mut self) -> anyhow::Result<Turn> {
        while let Some(step) = self.steps.get(self.cursor).cloned() {
            self.cursor += 1;
            if let Some(when) = &step.when
                && self.last_reply.map(Reply::as_str) != Some(when.as_str())
            {
                continue;
            }
            if let Some(tool) = &step.call {
                let args = if step.args.is_null() {
                    Value::Object(serde_json::Map::new())
                } else {
                    self.scope
                        .render(&step.args)
                        .with_context(|| format!("recording step {} ({tool})", self.cursor))?
                };
                self.calls += 1;
                self.pending_name = Some(step.name.clone().unwrap_or_default());
                return Ok(Turn {
                    calls: vec![ToolCallRequest {
                        id: format!("call_{}", self.calls),
                        name: tool.clone(),
                        arguments: Ok(args),
                        connection: step.connection.clone(),
                    }],
                    ..Turn::default()
                });
            }
            if let Some(say) = &step.say {
                let text = self
                    .scope
                    .render_text(say)
                    .with_context(|| format!("recording step {} (say)", self.cursor))?;
                return Ok(Turn {
                    text,
                    ..Turn::default()
                });
            }
            return Err(anyhow!(
                "recording step {} has neither `call` nor `say`",
                self.cursor
            ));
        }
        Ok(Turn {
            text: "Done.".into(),
            exhausted: true,
            ..Turn::default()
        })
    }

    pub(super) fn tool_results(&mut self, results: Vec<ToolResult>) {
        for r in results {
            self.scope
                .results
                .insert("last".into(), r.structured.clone());
            if let Some(name) = self.pending_name.take()
                && !name.is_empty()
            {
                self.scope.results.insert(name, r.structured);
            }
        }
    }

    pub(super) fn user_says(&mut self, kind: Reply) {
        self.last_reply = Some(kind);
    }
}
