//! Models: a driver turns the conversation so far into the model's next turn (tool calls or
//! text for the user). `scripted` replays a recording; `anthropic` and `openai` ask a model.

mod anthropic;
mod openai;
mod scripted;

use std::time::Duration;

use anyhow::bail;
use serde_json::Value;

pub use anthropic::AnthropicDriver;
pub use openai::OpenAiDriver;
pub use scripted::ScriptedDriver;

/// A tool call the model asks for.
#[derive(Debug, Clone)]
pub struct ToolCallRequest {
    /// The model's id for the call.
    pub id: String,
    /// The tool.
    pub name: String,
    /// The arguments, or why they could not be read.
    pub arguments: Result<Value, String>,
    /// Scripted failure recordings only: another demo connection (`tenant/role/toolset`).
    pub connection: Option<String>,
}

/// Tokens a turn used.
#[derive(Debug, Clone, Copy, Default)]
pub struct Usage {
    /// Prompt tokens (including cached ones).
    pub input: u64,
    /// Completion tokens.
    pub output: u64,
}

/// The model's turn.
#[derive(Debug, Clone, Default)]
pub struct Turn {
    /// Tool calls; empty when the model hands the turn to the user.
    pub calls: Vec<ToolCallRequest>,
    /// Text for the user.
    pub text: String,
    /// Tokens used.
    pub usage: Usage,
    /// The driver has nothing more to say (a recording ran out).
    pub exhausted: bool,
}

/// A tool result handed back to the model.
#[derive(Debug, Clone)]
pub struct ToolResult {
    /// The call's id.
    pub id: String,
    /// The tool.
    pub name: String,
    /// What the model reads (the result's text).
    pub text: String,
    /// Whether it is an error.
    pub is_error: bool,
    /// The structured content (the scripted driver reads fields from it).
    pub structured: Value,
}

/// How the user answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reply {
    /// Approved the previews shown.
    Approved,
    /// Rejected them.
    Rejected,
    /// Gave information.
    Answered,
}

impl Reply {
    /// The name recordings use in `when`.
    pub fn as_str(self) -> &'static str {
        match self {
            Reply::Approved => "approved",
            Reply::Rejected => "rejected",
            Reply::Answered => "answered",
        }
    }
}

/// Settings of a real-model driver.
#[derive(Debug, Clone)]
pub struct ModelConfig {
    /// Model name.
    pub model: String,
    /// Base URL (`https://api.anthropic.com`, `http://127.0.0.1:11434/v1`, ...).
    pub base_url: String,
    /// API key, if the endpoint needs one.
    pub api_key: Option<String>,
    /// Most tokens per response.
    pub max_tokens: u32,
    /// Sampling temperature, if set.
    pub temperature: Option<f64>,
    /// Per request.
    pub timeout: Duration,
}

/// A tool as the model sees it.
#[derive(Debug, Clone)]
pub struct ToolSpec {
    /// Name.
    pub name: String,
    /// Description.
    pub description: String,
    /// JSON Schema of the arguments.
    pub schema: Value,
}

impl ToolSpec {
    /// From a `tools/list` entry.
    pub fn from_mcp(tool: &Value) -> Self {
        let mut schema = tool
            .get("inputSchema")
            .cloned()
            .unwrap_or_else(|| serde_json::json!({"type": "object"}));
        if let Some(obj) = schema.as_object_mut() {
            obj.remove("$schema");
        }
        ToolSpec {
            name: tool
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            description: tool
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            schema,
        }
    }
}

/// Any driver.
#[derive(Debug)]
pub enum Driver {
    /// Replays a recording.
    Scripted(Box<ScriptedDriver>),
    /// The Anthropic Messages API.
    Anthropic(Box<AnthropicDriver>),
    /// An OpenAI-compatible chat-completions endpoint.
    OpenAi(Box<OpenAiDriver>),
}

impl Driver {
    /// The model's next turn.
    pub async fn next(&mut self) -> anyhow::Result<Turn> {
        match self {
            Driver::Scripted(d) => d.next(),
            Driver::Anthropic(d) => d.next().await,
            Driver::OpenAi(d) => d.next().await,
        }
    }

    /// Hands the results of the last turn's calls back.
    pub fn tool_results(&mut self, results: Vec<ToolResult>) {
        match self {
            Driver::Scripted(d) => d.tool_results(results),
            Driver::Anthropic(d) => d.tool_results(results),
            Driver::OpenAi(d) => d.tool_results(results),
        }
    }

    /// The user's answer.
    pub fn user_says(&mut self, text: &str, kind: Reply) {
        match self {
            Driver::Scripted(d) => d.user_says(kind),
            Driver::Anthropic(d) => d.user_says(text),
            Driver::OpenAi(d) => d.user_says(text),
        }
    }
}

/// POSTs JSON, tried again on transport errors, 429 and 5xx by the HTTP client's default
/// policy (4 retries, waits doubling from 2 s, a `Retry-After` in seconds taking their place,
/// at most a minute); returns the JSON body.
pub(crate) async fn post_json(
    url: &str,
    headers: &[(String, String)],
    body: &Value,
    timeout: Duration,
) -> anyhow::Result<Value> {
    let bytes = body.to_string().into_bytes();
    let policy = http_client::RetryPolicy::default();
    let r = crate::http::post_with_retries(url, headers, &bytes, timeout, policy).await?;
    if r.status != 200 {
        bail!(
            "{url}: HTTP {}: {}",
            r.status,
            crate::truncate(&r.text(), 2000)
        );
    }
    serde_json::from_slice(&r.body)
        .map_err(|e| anyhow::anyhow!("{url}: answer is not JSON ({e}): {}", r.text()))
}
