//! The stdio transport: one JSON-RPC message a line in, its replies out, authenticated on
//! every message through the same path as HTTP ([`Server::authenticate`]), so that a revoked
//! token or a switched-off tenant stops the next call here too. No I/O: the binary reads the
//! lines and writes the replies.

use std::panic::AssertUnwindSafe;

use futures_util::FutureExt as _;
use mcp_pipeline::{Authenticator, Headers, Request, Server};
use mcp_protocol::{Incoming, parse_message};
use serde_json::{Value, json};

/// The replies to one line, each a line of JSON text: notifications first, then the response
/// (none for a notification or a response from the client).
pub async fn reply(
    server: &Server,
    authenticator: &dyn Authenticator,
    headers: &Headers,
    line: &str,
) -> Vec<String> {
    let message = match parse_message(line.as_bytes()) {
        Ok(Incoming::Message(message)) => message,
        // A response from the client: this server sends no requests, so nothing matches it.
        Ok(Incoming::Response(_)) => return Vec::new(),
        Err(e) => return vec![mcp_protocol::error_response(e.id.as_ref(), &e.error).to_string()],
    };
    // One session answers every message in turn: a message whose handling panics gets an
    // internal error, and the next is read as usual.
    let id = message.id.clone();
    let answered = AssertUnwindSafe(answer(server, authenticator, headers, message))
        .catch_unwind()
        .await;
    answered.unwrap_or_else(|_| {
        let request_id = server.new_request_id();
        tracing::error!(%request_id, "a message over stdio panicked; answered with an internal error");
        let error = mcp_protocol::RpcError::internal(&request_id);
        id.map(|id| mcp_protocol::error_response(Some(&id), &error).to_string())
            .into_iter()
            .collect()
    })
}

/// The error code of a refused credential over stdio, where there is no HTTP status to say
/// 401 or 403 (the status goes in `data`). Application-defined: outside JSON-RPC's reserved
/// range (-32768 to -32000), as MCP asks of new codes.
pub const CREDENTIAL_REFUSED: i64 = -31_001;

/// The replies to one parsed message.
async fn answer(
    server: &Server,
    authenticator: &dyn Authenticator,
    headers: &Headers,
    message: mcp_protocol::Message,
) -> Vec<String> {
    let admitted = match server
        .authenticate(authenticator, headers, None, Some(&message))
        .await
    {
        Ok(admitted) => admitted,
        Err(rejection) => {
            // Over stdio nobody sees a status code: say why in the log the client shows.
            tracing::warn!(
                status = rejection.status,
                reason = %rejection.message,
                "the credential (GATEHOUSE_TOKEN) was refused"
            );
            let text = format!(
                "the MCP token in GATEHOUSE_TOKEN was refused: {}",
                rejection.message
            );
            let error = json!({"code": CREDENTIAL_REFUSED, "message": text, "data": {"status": rejection.status}});
            return message
                .id
                .map(|id| json!({"jsonrpc": "2.0", "id": id, "error": error}).to_string())
                .into_iter()
                .collect();
        }
    };
    let request = Request {
        message,
        headers: None,
        version_header: None,
        caller: Some(admitted.authenticated.caller),
        prefetched: admitted.authenticated.prefetched,
        plan: admitted.plan,
        request_id: Some(server.new_request_id()),
    };
    let outcome = server.handle(request).await;
    // A response serialized already (`tools/list`, a tool's result) goes out as it is.
    outcome
        .notifications
        .iter()
        .map(Value::to_string)
        .chain(outcome.body.map(mcp_pipeline::Body::into_text))
        .collect()
}
