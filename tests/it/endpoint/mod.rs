//! Contract tests of the MCP endpoint over raw JSON-RPC, on the probe tools of
//! [`crate::support::probe_tools`]: statuses and error codes, the tool model, per-tool
//! decorators, argument handling, result shape and multi round-trip requests.

mod arguments;
mod decorators;
mod input_required;
mod protocol;
mod results;
mod tool_model;
mod x_mcp_header;

use serde_json::{Value, json};

use crate::support::probe_tools::{Fixture, client};

/// A JSON-RPC request in the 2026-07-28 form, with the `_meta` fields it requires.
fn modern_body(method: &str, params: Value) -> Value {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params})
}

/// Header pairs as `TestClient::send` takes them.
fn headers(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

const JSON: (&str, &str) = ("content-type", "application/json");
const V: (&str, &str) = ("mcp-protocol-version", "2026-07-28");

/// POSTs `body` to `/mcp` with exactly the headers `hs`.
async fn post(f: &Fixture, hs: &[(&str, &str)], body: &Value) -> mcp_test_client::RawResponse {
    client(f)
        .send(
            http::Method::POST,
            "/mcp",
            &headers(hs),
            body.to_string().into(),
        )
        .await
}
