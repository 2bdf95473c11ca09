//! An MCP client over Streamable HTTP, speaking 2026-07-28 the way a well-behaved client does
//! (per-request `_meta`, `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name` headers).

use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use anyhow::{Context as _, bail};
use serde_json::{Value, json};

use crate::http;

/// One tool call's outcome as observed on the wire.
#[derive(Debug, Clone)]
pub struct CallOutcome {
    /// HTTP status.
    pub http_status: u16,
    /// The JSON-RPC `result`, if any.
    pub result: Option<Value>,
    /// The JSON-RPC `error`, if any.
    pub rpc_error: Option<Value>,
    /// The body when it was not a JSON-RPC message.
    pub raw: String,
}

impl CallOutcome {
    /// The structured content (`null` when absent).
    pub fn structured(&self) -> &Value {
        self.result
            .as_ref()
            .and_then(|r| r.get("structuredContent"))
            .unwrap_or(&Value::Null)
    }

    /// Whether the call failed in any way (HTTP, JSON-RPC or a tool error result).
    pub fn is_error(&self) -> bool {
        self.http_status != 200
            || self.rpc_error.is_some()
            || self.result.is_none()
            || self
                .result
                .as_ref()
                .is_some_and(|r| r.get("isError") == Some(&json!(true)))
    }

    /// The error code: the tool error's `code`, else the JSON-RPC code, else the HTTP status.
    pub fn error_code(&self) -> Option<String> {
        if !self.is_error() {
            return None;
        }
        if let Some(code) = self.structured().get("code").and_then(Value::as_str) {
            return Some(code.to_owned());
        }
        if let Some(code) = self
            .rpc_error
            .as_ref()
            .and_then(|e| e.get("code"))
            .and_then(Value::as_i64)
        {
            return Some(format!("rpc {code}"));
        }
        Some(format!("http {}", self.http_status))
    }

    /// A generic error: the server failed without a model-correctable reason (HTTP 5xx,
    /// JSON-RPC internal error, or a tool error with `code: internal`).
    pub fn is_generic_error(&self) -> bool {
        self.http_status >= 500
            || self
                .rpc_error
                .as_ref()
                .and_then(|e| e.get("code"))
                .and_then(Value::as_i64)
                == Some(-32603)
            || (self.is_error()
                && self.structured().get("code").and_then(Value::as_str) == Some("internal"))
    }

    /// What a model is shown: the result's text blocks, or a description of the failure.
    pub fn model_text(&self) -> String {
        if let Some(result) = &self.result {
            let texts: Vec<&str> = result
                .get("content")
                .and_then(Value::as_array)
                .map(|blocks| {
                    blocks
                        .iter()
                        .filter_map(|b| b.get("text").and_then(Value::as_str))
                        .collect()
                })
                .unwrap_or_default();
            if !texts.is_empty() {
                return texts.join("\n");
            }
            return result.to_string();
        }
        if let Some(e) = &self.rpc_error {
            return format!("JSON-RPC error: {e}");
        }
        format!("HTTP {}: {}", self.http_status, self.raw)
    }
}

/// A client bound to one endpoint and one bearer token.
#[derive(Debug)]
pub struct McpClient {
    url: String,
    token: String,
    next_id: AtomicI64,
    timeout: Duration,
}

impl McpClient {
    /// A client for `url` (the `/mcp` endpoint) with `token`.
    pub fn new(url: &str, token: &str) -> Self {
        McpClient {
            url: url.to_owned(),
            token: token.to_owned(),
            next_id: AtomicI64::new(1),
            timeout: Duration::from_secs(60),
        }
    }

    /// The endpoint.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Sends one JSON-RPC request; returns the HTTP status and the JSON-RPC message (if any).
    pub async fn request(
        &self,
        method: &str,
        mut params: Value,
    ) -> anyhow::Result<(u16, Option<Value>, String)> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        if let Some(obj) = params.as_object_mut() {
            let meta = obj.entry("_meta").or_insert_with(|| json!({}));
            if let Some(meta) = meta.as_object_mut() {
                meta.entry(mcp_protocol::META_PROTOCOL_VERSION)
                    .or_insert_with(|| json!(mcp_protocol::LATEST_VERSION));
                meta.entry(mcp_protocol::META_CLIENT_CAPABILITIES)
                    .or_insert_with(|| json!({}));
                meta.entry(mcp_protocol::META_CLIENT_INFO).or_insert_with(
                    || json!({"name": "gatehouse-evals", "version": env!("CARGO_PKG_VERSION")}),
                );
            }
        }
        let mut headers = vec![
            ("content-type".to_owned(), "application/json".to_owned()),
            (
                "accept".to_owned(),
                "application/json, text/event-stream".to_owned(),
            ),
            (
                "mcp-protocol-version".to_owned(),
                mcp_protocol::LATEST_VERSION.to_owned(),
            ),
            ("mcp-method".to_owned(), method.to_owned()),
            ("authorization".to_owned(), format!("Bearer {}", self.token)),
        ];
        if let Some(name) = params.get("name").and_then(Value::as_str) {
            if name.bytes().all(|b| (0x21..0x7f).contains(&b)) {
                headers.push(("mcp-name".to_owned(), name.to_owned()));
            } else {
                bail!("tool name {name:?} is not a plain ASCII token");
            }
        }
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let response = http::post(
            &self.url,
            &headers,
            body.to_string().as_bytes(),
            self.timeout,
        )
        .await
        .with_context(|| format!("{method} to {}", self.url))?;
        let text = response.text();
        let is_sse = response
            .header("content-type")
            .is_some_and(|c| c.starts_with("text/event-stream"));
        let message = if is_sse {
            last_sse_response(&text)
        } else {
            serde_json::from_str::<Value>(&text).ok()
        };
        Ok((response.status, message, text))
    }

    /// `tools/list`, following `nextCursor`.
    pub async fn list_tools(&self) -> anyhow::Result<Vec<Value>> {
        let mut tools = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..20 {
            let params = match &cursor {
                Some(c) => json!({"cursor": c}),
                None => json!({}),
            };
            let (status, message, raw) = self.request("tools/list", params).await?;
            let Some(result) = message.as_ref().and_then(|m| m.get("result")) else {
                bail!("tools/list failed: HTTP {status}: {raw}");
            };
            if let Some(page) = result.get("tools").and_then(Value::as_array) {
                tools.extend(page.iter().cloned());
            }
            cursor = result
                .get("nextCursor")
                .and_then(Value::as_str)
                .map(str::to_owned);
            if cursor.is_none() {
                return Ok(tools);
            }
        }
        bail!("tools/list did not end after 20 pages")
    }

    /// The server's instructions from `server/discover` (`None` when it gives none).
    pub async fn instructions(&self) -> anyhow::Result<Option<String>> {
        let (_, message, _) = self.request("server/discover", json!({})).await?;
        Ok(message
            .as_ref()
            .and_then(|m| m.get("result"))
            .and_then(|r| r.get("instructions"))
            .and_then(Value::as_str)
            .map(str::to_owned))
    }

    /// `tools/call`; an `Err` only when the server could not be reached.
    pub async fn call(&self, name: &str, arguments: Value) -> anyhow::Result<CallOutcome> {
        let (status, message, raw) = self
            .request("tools/call", json!({"name": name, "arguments": arguments}))
            .await?;
        let result = message.as_ref().and_then(|m| m.get("result")).cloned();
        let rpc_error = message.as_ref().and_then(|m| m.get("error")).cloned();
        Ok(CallOutcome {
            http_status: status,
            result,
            rpc_error,
            raw: if message.is_some() {
                String::new()
            } else {
                raw
            },
        })
    }

    /// `tools/call` that must succeed (for the harness's own reads).
    pub async fn call_ok(&self, name: &str, arguments: Value) -> anyhow::Result<Value> {
        let outcome = self.call(name, arguments.clone()).await?;
        if outcome.is_error() {
            bail!("{name} {arguments} failed: {}", outcome.model_text());
        }
        Ok(outcome.structured().clone())
    }
}

/// The last JSON-RPC response (a message with `result` or `error`) on an SSE stream.
fn last_sse_response(text: &str) -> Option<Value> {
    text.split("\n\n")
        .filter_map(|event| {
            let data: Vec<&str> = event
                .lines()
                .filter_map(|l| l.strip_prefix("data:").map(str::trim_start))
                .collect();
            (!data.is_empty())
                .then(|| serde_json::from_str::<Value>(&data.join("\n")).ok())
                .flatten()
        })
        .filter(|m| m.get("result").is_some() || m.get("error").is_some())
        .last()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_response_on_an_sse_stream() {
        let text = "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"x\":1}}\n\n";
        assert_eq!(last_sse_response(text).unwrap()["result"]["x"], 1);
    }

    #[test]
    fn generic_errors_are_recognised() {
        let internal = CallOutcome {
            http_status: 200,
            result: Some(json!({"isError": true, "structuredContent": {"code": "internal"}})),
            rpc_error: None,
            raw: String::new(),
        };
        assert!(internal.is_generic_error());
        let validation = CallOutcome {
            http_status: 200,
            result: Some(json!({"isError": true, "structuredContent": {"code": "validation"}})),
            rpc_error: None,
            raw: String::new(),
        };
        assert!(!validation.is_generic_error());
        assert_eq!(validation.error_code().as_deref(), Some("validation"));
        let http = CallOutcome {
            http_status: 502,
            result: None,
            rpc_error: None,
            raw: "bad gateway".into(),
        };
        assert!(http.is_generic_error());
    }
}
