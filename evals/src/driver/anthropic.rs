//! The Anthropic Messages API (`POST {base}/v1/messages`).

use serde_json::{Value, json};

use super::{ModelConfig, ToolCallRequest, ToolResult, ToolSpec, Turn, Usage, post_json};

/// A conversation with a Claude model.
#[derive(Debug)]
pub struct AnthropicDriver {
    config: ModelConfig,
    system: String,
    tools: Vec<Value>,
    messages: Vec<Value>,
    pending_results: Vec<Value>,
}

impl AnthropicDriver {
    /// Starts a conversation with the user's first message.
    pub fn new(config: ModelConfig, system: &str, tools: &[ToolSpec], user: &str) -> Self {
        let tools = tools
            .iter()
            .map(
                |t| json!({"name": t.name, "description": t.description, "input_schema": t.schema}),
            )
            .collect();
        AnthropicDriver {
            config,
            system: system.to_owned(),
            tools,
            messages: vec![json!({"role": "user", "content": user})],
            pending_results: Vec::new(),
        }
    }

    pub(super) async fn next(&mut self) -> anyhow::Result<Turn> {
        if !self.pending_results.is_empty() {
            let content: Vec<Value> = std::mem::take(&mut self.pending_results);
            self.messages
                .push(json!({"role": "user", "content": content}));
        }
        let mut body = json!({
            "model": self.config.model,
            "max_tokens": self.config.max_tokens,
            "system": self.system,
            "tools": self.tools,
            "messages": self.messages,
        });
        if let Some(t) = self.config.temperature {
            body["temperature"] = json!(t);
        }
        let mut headers = vec![
            ("content-type".to_owned(), "application/json".to_owned()),
            ("anthropic-version".to_owned(), "2023-06-01".to_owned()),
        ];
        if let Some(key) = &self.config.api_key {
            headers.push(("x-api-key".to_owned(), key.clone()));
        }
        let url = format!("{}/v1/messages", self.config.base_url.trim_end_matches('/'));
        let response = post_json(&url, &headers, &body, self.config.timeout).await?;
        let content = response
            .get("content")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        self.messages
            .push(json!({"role": "assistant", "content": content}));
        let mut turn = Turn::default();
        let mut texts = Vec::new();
        for block in &content {
            match block.get("type").and_then(Value::as_str) {
                Some("text") => {
                    if let Some(t) = block.get("text").and_then(Value::as_str) {
                        texts.push(t.to_owned());
                    }
                }
                Some("tool_use") => turn.calls.push(ToolCallRequest {
                    id: block
                        .get("id")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                    name: block
                        .get("name")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                    arguments: Ok(block.get("input").cloned().unwrap_or_else(|| json!({}))),
                    connection: None,
                }),
                _ => {}
            }
        }
        turn.text = texts.join("\n");
        let usage = response.get("usage").cloned().unwrap_or(Value::Null);
        let n = |k: &str| usage.get(k).and_then(Value::as_u64).unwrap_or(0);
        turn.usage = Usage {
            input: n("input_tokens")
                + n("cache_creation_input_tokens")
                + n("cache_read_input_tokens"),
            output: n("output_tokens"),
        };
        Ok(turn)
    }

    pub(super) fn tool_results(&mut self, results: Vec<ToolResult>) {
        for r in results {
            self.pending_results.push(json!({
                "type": "tool_result",
                "tool_use_id": r.id,
                "content": r.text,
                "is_error": r.is_error,
            }));
        }
    }

    pub(super) fn user_says(&mut self, text: &str) {
        if self.pending_results.is_empty() {
            self.messages.push(json!({"role": "user", "content": text}));
        } else {
            let mut content: Vec<Value> = std::mem::take(&mut self.pending_results);
            content.push(json!({"type": "text", "text": text}));
            self.messages
                .push(json!({"role": "user", "content": content}));
        }
    }
}
