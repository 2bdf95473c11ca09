//! The shape of results: success and error results, and progress and logs as SSE.

use mcp_pipeline::{ErrorKind, ToolError, ToolResult};
use serde_json::json;

use crate::support::probe_tools::{client, fixture};

#[tokio::test]
async fn success_results_lead_with_summary_then_output_warnings_next_steps() {
    let f = fixture();
    let call = client(&f)
        .call_tool("echo_args", json!({"text": "hi"}))
        .await;
    assert!(!call.is_error());
    let keys: Vec<&String> = call.structured().as_object().unwrap().keys().collect();
    assert_eq!(keys, ["summary", "echo", "warnings", "next_steps"]);
    assert_eq!(
        call.structured()["next_steps"],
        json!(["call echo_args again"])
    );
    assert_eq!(call.result["resultType"], "complete");
}

#[tokio::test]
async fn progress_and_logs_come_as_sse_only_when_asked_for() {
    let f = fixture();
    let plain = client(&f)
        .call_tool("echo_args", json!({"text": "x"}))
        .await;
    assert!(!plain.response.is_sse(), "no progress was asked for");
    let params = json!({
        "name": "echo_args",
        "arguments": {"text": "x"},
        "_meta": {"progressToken": "tok-1", "io.modelcontextprotocol/logLevel": "info"},
    });
    let call = client(&f).call_tool_with("echo_args", params).await;
    assert!(call.response.is_sse());
    assert_eq!(call.response.header("x-accel-buffering"), Some("no"));
    let messages = call.response.sse_messages();
    let methods: Vec<&str> = messages
        .iter()
        .filter_map(|m| m["method"].as_str())
        .collect();
    assert_eq!(
        methods,
        [
            "notifications/progress",
            "notifications/message",
            "notifications/progress"
        ]
    );
    assert_eq!(messages[0]["params"]["progressToken"], "tok-1");
    assert_eq!(
        messages.last().unwrap()["result"]["isError"],
        false,
        "the response comes last"
    );
}

#[tokio::test]
async fn an_error_result_is_built_from_tool_error_fields() {
    let e = ToolError::new(
        ErrorKind::Conflict,
        "The booking changed since you read it",
        "Read it again",
    )
    .next_call("get_booking")
    .detail("current_version", "v2");
    let r = ToolResult::error(&e).to_json();
    mcp_test_client::assert_text_matches_structured(&r);
    let text = r["content"][0]["text"].as_str().unwrap();
    assert!(
        text.starts_with(
            "Error: The booking changed since you read it. Read it again. Next call: get_booking.\n"
        ),
        "{text}"
    );
    assert_eq!(r["structuredContent"]["next_call"], "get_booking");
    assert_eq!(r["structuredContent"]["current_version"], "v2");
}
