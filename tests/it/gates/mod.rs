//! The safety gates on example write tools (the fake "notes" product of
//! [`crate::support::notes`]) through the real handler, on SQLite and on the local DynamoDB
//! server: replay, idempotency keys, duplicate guard, versions, batches, the kill switch during
//! a write, audit, two-step confirmation, approval by elicitation, rate buckets, concurrency
//! slots, deadlines and the loop brake.

mod call_path;
mod confirmation;
mod elicitation;
mod isolation;
mod kill_switch;
mod limits;
mod replay;
mod write_guards;

use mcp_test_client::TestClient;
use serde_json::json;

/// Creates a note through `c`; returns its handle.
async fn new_note(c: &TestClient, title: &str, body: &str) -> String {
    let call = c
        .call_tool("create_note", json!({"title": title, "body": body}))
        .await;
    assert!(!call.is_error(), "{}", call.text());
    call.structured()["note"]["note"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// A new note and the preview of sending it to Ada: a prepared action to confirm.
async fn prepared_send(c: &TestClient) -> mcp_test_client::ToolCall {
    let note = new_note(c, "Arrival", "At nine.").await;
    c.call_tool("send_note", json!({"note": note, "to": "ada@example.com"}))
        .await
}

/// The arguments of `confirm_action` for the action `preview` prepared.
fn confirm_args(preview: &mcp_test_client::ToolCall) -> serde_json::Value {
    json!({
        "confirm_token": preview.structured()["confirm_token"],
        "confirm_summary": preview.structured()["confirm_summary"],
    })
}
