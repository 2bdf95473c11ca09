//! Any OpenAI-compatible chat-completions endpoint (`POST {base}/chat/completions`): vLLM,
//! llama.cpp's server, Ollama, LM Studio, hosted APIs.

use serde_json::{Value, json};

use super::{ModelConfig, ToolCallRequest, ToolResult, ToolSpec, Turn, Usage, post_json};

/// A conversation with a chat-completions model.
#[derive(Debug)]
pub struct OpenAiDriver {
    config: ModelConfig,
    tools: Vec<Value>,
    messages: Vec<Value>,
}

impl OpenAiDriver {
    /// Starts a conversation with the user's first message.
    pub fn new(config: ModelConfig, system: &str, tools: &[ToolSpec], user: &str) -> Self {
        let tools = tools
            .iter()
            .map(|t| {
                json!({"type": "function", "function": {
                    "name": t.name, "description": t.description, "parameters": t.schema
                }})
            })
            .collect();
        OpenAiDriver {
            config,
            tools,
            messages: vec![
                json!({"role": "system", "content": system}),
                json!({"role": "user", "content": user}),
            ],
        }
    }

    pub(super) async fn next(&mut self) -> anyhow::Result<Turn> {
        let mut body = json!({
            "model": self.config.model,
            "messages": self.messages,
            "tools": self.tools,
            "tool_choice": "auto",
            "max_tokens": self.config.max_tokens,
        });
        if let Some(t) = self.config.temperature {
            body["temperature"] = json!(t);
        }
        let mut headers = vec![("content-type".to_owned(), "application/json".to_owned())];
        if let Some(key) = &self.config.api_key {
            headers.push(("authorization".to_owned(), format!("Bearer {key}")));
        }
        let url = format!(
            "{}/chat/completions",
            self.config.base_url.trim_end_matches('/')
        );
        let response = post_json(&url, &headers, &body, self.config.timeout).await?;
        let message = response
            .pointer("/choices/0/message")
            .cloned()
            .ok_or_else(|| anyhow::anyhow!("{url}: no choices[0].message in {response}"))?;
        let mut turn = Turn {
            text: message
                .get("content")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            ..Turn::default()
        };
        let mut kept = json!({"role": "assistant", "content": message.get("content").cloned().unwrap_or(Value::Null)});
        if let Some(calls) = message.get("tool_calls").and_then(Value::as_array)
            && !calls.is_empty()
        {
            kept["tool_calls"] = Value::Array(calls.clone());
            for (i, call) in calls.iter().enumerate() {
                let id = call
                    .get("id")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
                    .unwrap_or_else(|| format!("call_{i}"));
                let name = call
                    .pointer("/function/name")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                let arguments = match call.pointer("/function/arguments") {
                    Some(Value::String(s)) if s.trim().is_empty() => Ok(json!({})),
                    Some(Value::String(s)) => serde_json::from_str::<Value>(s)
                        .map_err(|e| format!("the arguments are not valid JSON ({e}): {s}")),
                    Some(v @ Value::Object(_)) => Ok(v.clone()),
                    _ => Ok(json!({})),
                };
                turn.calls.push(ToolCallRequest {
                    id,
                    name,
                    arguments,
                    connection: None,
                });
            }
        }
        self.messages.push(kept);
        let usage = response.get("usage").cloned().unwrap_or(Value::Null);
        let n = |k: &str| usage.get(k).and_then(Value::as_u64).unwrap_or(0);
        turn.usage = Usage {
            input: n("prompt_tokens"),
            output: n("completion_tokens"),
        };
        Ok(turn)
    }

    pub(super) fn tool_results(&mut self, results: Vec<ToolResult>) {
        for r in results {
            self.messages.push(json!({
                "role": "tool",
                "tool_call_id": r.id,
                "name": r.name,
                "content": r.text,
            }));
        }
    }

    pub(super) fn user_says(&mut self, text: &str) {
        self.messages.push(json!({"role": "user", "content": text}));
    }
}
