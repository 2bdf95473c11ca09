//! A test client that speaks raw JSON-RPC to the real endpoint, with the headers and `_meta`
//! a 2026-07-28 client sends (or a legacy client's, on request).
//!
//! Contract tests for a new tool take a few lines:
//!
//! ```ignore
//! let client = TestClient::in_process(app.http.clone());
//! let result = client.call_tool("get_server_status", json!({})).await;
//! assert!(!result.is_error());
//! ```
//!
//! Every `tools/call` result passing through the client is checked for the invariant that the
//! text block carries exactly the structured content, so no test can miss a violation.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicI64, Ordering};

use base64::Engine as _;
use bytes::Bytes;
use http::{HeaderMap, Method};
use http_body_util::{BodyExt as _, Full};
use mcp_http::McpService;
use serde_json::{Value, json};

/// How requests reach the server.
#[derive(Debug, Clone)]
enum Transport {
    InProcess(McpService),
    Http(SocketAddr, Box<http_client::HttpClient>),
}

/// An HTTP response as received.
#[derive(Debug, Clone)]
pub struct RawResponse {
    /// Status code.
    pub status: u16,
    /// Headers.
    pub headers: HeaderMap,
    /// Body bytes.
    pub body: Bytes,
}

impl RawResponse {
    /// The body as JSON (the last message of an SSE stream).
    pub fn json(&self) -> Value {
        if self.is_sse() {
            return self.sse_messages().pop().unwrap_or(Value::Null);
        }
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "body is not JSON ({e}): {:?}",
                String::from_utf8_lossy(&self.body)
            )
        })
    }

    /// Whether the response is an SSE stream.
    pub fn is_sse(&self) -> bool {
        self.header("content-type")
            .is_some_and(|c| c.starts_with("text/event-stream"))
    }

    /// A header's value.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The messages of an SSE stream, in order.
    pub fn sse_messages(&self) -> Vec<Value> {
        String::from_utf8_lossy(&self.body)
            .split("\n\n")
            .filter_map(|event| {
                let data: Vec<&str> = event
                    .lines()
                    .filter_map(|l| l.strip_prefix("data: "))
                    .collect();
                (!data.is_empty())
                    .then(|| serde_json::from_str(&data.join("\n")).expect("SSE data is JSON"))
            })
            .collect()
    }

    /// The JSON-RPC error code, if the body is an error.
    pub fn error_code(&self) -> Option<i64> {
        self.json().get("error")?.get("code")?.as_i64()
    }
}

/// A `tools/call` result.
#[derive(Debug, Clone)]
pub struct ToolCall {
    /// The HTTP response.
    pub response: RawResponse,
    /// `result` of the JSON-RPC response.
    pub result: Value,
}

impl ToolCall {
    /// Whether the result is an error result.
    pub fn is_error(&self) -> bool {
        self.result["isError"] == json!(true)
    }

    /// The structured content.
    pub fn structured(&self) -> &Value {
        &self.result["structuredContent"]
    }

    /// The first text block.
    pub fn text(&self) -> &str {
        self.result["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
    }
}

/// Checks that a `CallToolResult` carries its structured content as text: the whole text
/// of a success, the last line of an error (which starts with `Error:`); and that an error
/// leads on (a `next_call`, a `retry_after_seconds` or a `handover`).
pub fn assert_text_matches_structured(result: &Value) {
    if result.get("resultType").and_then(Value::as_str) == Some("input_required") {
        return;
    }
    let Some(structured) = result.get("structuredContent") else {
        panic!("result without structuredContent: {result}");
    };
    let text = result["content"][0]["text"]
        .as_str()
        .expect("first content block is text");
    if result["isError"] == json!(true) {
        assert!(
            text.starts_with("Error:"),
            "error text must start with `Error:`: {text}"
        );
        let last = text.lines().last().unwrap_or_default();
        let parsed: Value = serde_json::from_str(last).expect("last line of an error is JSON");
        assert_eq!(
            &parsed, structured,
            "the error's last line differs from structuredContent"
        );
        assert_eq!(
            last,
            structured.to_string(),
            "the error's last line is not the serialized structuredContent"
        );
        // ADR 18: every error leads on.
        let leads_on = structured.get("next_call").is_some_and(Value::is_string)
            || structured.get("handover").is_some_and(Value::is_string)
            || structured
                .get("retry_after_seconds")
                .is_some_and(Value::is_number);
        assert!(
            leads_on,
            "an error without a next_call, a retry_after_seconds or a handover: {text}"
        );
    } else {
        assert_eq!(
            text,
            structured.to_string(),
            "text differs from serialized structuredContent"
        );
    }
}

/// A raw JSON-RPC client.
#[derive(Debug)]
pub struct TestClient {
    transport: Transport,
    version: String,
    extra_headers: Vec<(String, String)>,
    /// Headers the way to the server needs on every request, raw ones from [`Self::send`]
    /// included (the edge tests' store object).
    routing_headers: Vec<(String, String)>,
    next_id: AtomicI64,
}

impl TestClient {
    /// Calls the service in this process, with no network.
    pub fn in_process(service: McpService) -> Self {
        Self::new(Transport::InProcess(service))
    }

    /// Calls a server over real HTTP on `addr` (path `/mcp`).
    pub fn http(addr: SocketAddr) -> Self {
        // Generous: a test's server may be busy with other tests on a loaded machine.
        let client = http_client::HttpClient::new(std::time::Duration::from_secs(120))
            .expect("an HTTP client");
        Self::new(Transport::Http(addr, Box::new(client)))
    }

    fn new(transport: Transport) -> Self {
        TestClient {
            transport,
            version: mcp_protocol::LATEST_VERSION.into(),
            extra_headers: Vec::new(),
            routing_headers: Vec::new(),
            next_id: AtomicI64::new(1),
        }
    }

    /// Speaks a legacy revision: no `_meta`, no `Mcp-Method`/`Mcp-Name`.
    pub fn legacy(mut self, version: &str) -> Self {
        self.version = version.into();
        self
    }

    /// Adds a header to every request, those sent with [`Self::send`] too.
    pub fn with_routing_header(mut self, name: &str, value: &str) -> Self {
        self.routing_headers.push((name.into(), value.into()));
        self
    }

    /// Adds a header to every request.
    pub fn with_header(mut self, name: &str, value: &str) -> Self {
        self.extra_headers.push((name.into(), value.into()));
        self
    }

    fn is_modern(&self) -> bool {
        self.version == mcp_protocol::LATEST_VERSION
    }

    /// The body and headers a well-behaved client sends for `method`.
    pub fn build(&self, method: &str, mut params: Value) -> (Value, Vec<(String, String)>) {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut headers = vec![
            ("content-type".to_owned(), "application/json".to_owned()),
            (
                "accept".to_owned(),
                "application/json, text/event-stream".to_owned(),
            ),
            ("mcp-protocol-version".to_owned(), self.version.clone()),
        ];
        if self.is_modern() {
            let meta = params
                .as_object_mut()
                .expect("params must be an object")
                .entry("_meta")
                .or_insert_with(|| json!({}));
            meta.as_object_mut()
                .expect("_meta is an object")
                .entry(mcp_protocol::META_PROTOCOL_VERSION)
                .or_insert_with(|| json!(mcp_protocol::LATEST_VERSION));
            meta.as_object_mut()
                .expect("_meta is an object")
                .entry(mcp_protocol::META_CLIENT_CAPABILITIES)
                .or_insert_with(|| json!({}));
            headers.push(("mcp-method".to_owned(), method.to_owned()));
            if let Some(name) = params.get("name").and_then(Value::as_str) {
                headers.push(("mcp-name".to_owned(), encode_header(name)));
            }
        }
        headers.extend(self.extra_headers.iter().cloned());
        (
            json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
            headers,
        )
    }

    /// Sends a request built by [`TestClient::build`].
    pub async fn request(&self, method: &str, params: Value) -> RawResponse {
        let (body, headers) = self.build(method, params);
        self.send(Method::POST, "/mcp", &headers, body.to_string().into())
            .await
    }

    /// Lists the tools.
    pub async fn list_tools(&self) -> Value {
        let response = self.request("tools/list", json!({})).await;
        assert_eq!(
            response.status,
            200,
            "tools/list: {:?}",
            String::from_utf8_lossy(&response.body)
        );
        response.json()["result"].clone()
    }

    /// Calls a tool and checks the result's text/structured invariant.
    pub async fn call_tool(&self, name: &str, arguments: Value) -> ToolCall {
        self.call_tool_with(name, json!({"name": name, "arguments": arguments}))
            .await
    }

    /// Calls a tool with full params (for `_meta` such as `progressToken`).
    pub async fn call_tool_with(&self, name: &str, params: Value) -> ToolCall {
        let response = self.request("tools/call", params).await;
        assert_eq!(
            response.status,
            200,
            "tools/call {name}: {:?}",
            String::from_utf8_lossy(&response.body)
        );
        let body = response.json();
        let result = body
            .get("result")
            .cloned()
            .unwrap_or_else(|| panic!("no result: {body}"));
        assert_text_matches_structured(&result);
        ToolCall { response, result }
    }

    /// Sends anything.
    pub async fn send(
        &self,
        method: Method,
        path: &str,
        headers: &[(String, String)],
        body: Bytes,
    ) -> RawResponse {
        let mut headers = headers.to_vec();
        headers.extend(self.routing_headers.iter().cloned());
        let headers = headers.as_slice();
        match &self.transport {
            Transport::InProcess(service) => {
                let mut request = http::Request::builder().method(method).uri(path);
                for (k, v) in headers {
                    request = request.header(k, v);
                }
                let request = request.body(Full::new(body)).expect("valid request");
                let response = service.handle(request).await;
                let (parts, body) = response.into_parts();
                let body = match body.collect().await {
                    Ok(c) => c.to_bytes(),
                    Err(never) => match never {},
                };
                RawResponse {
                    status: parts.status.as_u16(),
                    headers: parts.headers,
                    body,
                }
            }
            Transport::Http(addr, client) => {
                http_send(client, *addr, method, path, headers, body).await
            }
        }
    }
}

/// Encodes a header value, using the `=?base64?...?=` form when it is not plain ASCII.
pub fn encode_header(value: &str) -> String {
    if value.bytes().all(|b| (0x20..0x7f).contains(&b)) && value.trim() == value {
        value.to_owned()
    } else {
        format!(
            "=?base64?{}?=",
            base64::engine::general_purpose::STANDARD.encode(value)
        )
    }
}

/// A minimal HTTP/1.1 exchange over a fresh connection (no client library, so the test
/// sees exactly what the server sent).
/// One request over real HTTP with the workspace's HTTP client (hyper): the answer as it
/// came, whatever its framing (length, chunks) and whether the server keeps the connection.
async fn http_send(
    client: &http_client::HttpClient,
    addr: SocketAddr,
    method: Method,
    path: &str,
    headers: &[(String, String)],
    body: Bytes,
) -> RawResponse {
    let headers: Vec<(&str, &str)> = headers
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let answer = client
        .send(method, &format!("http://{addr}{path}"), &headers, body)
        .await
        .unwrap_or_else(|e| panic!("{path} on {addr}: {e}"));
    RawResponse {
        status: answer.status,
        headers: answer.headers,
        body: answer.body,
    }
}
