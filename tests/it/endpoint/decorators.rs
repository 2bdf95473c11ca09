//! Per-tool decorators: guards, interceptors and exception handlers.

use serde_json::json;

use crate::support::probe_tools::{client, entries, fixture};

#[tokio::test]
async fn guards_run_in_order_and_the_first_refusal_wins() {
    let f = fixture();
    let call = client(&f).call_tool("guarded_action", json!({})).await;
    assert!(call.is_error());
    assert!(
        call.text()
            .starts_with("Error: DenyGuard refuses guarded_action."),
        "{}",
        call.text()
    );
    let s = call.structured();
    assert_eq!(s["type"], "FORBIDDEN");
    assert_eq!(s["guard"], "DenyGuard");
    assert_eq!(s["code"], "forbidden");
    assert_eq!(
        entries(&f.log),
        ["guard:AllowGuard", "guard:DenyGuard"],
        "later guards and the body must not run"
    );
}

#[tokio::test]
async fn guards_read_metadata_with_the_tools_value_winning() {
    let f = fixture();
    let call = client(&f).call_tool("open_action", json!({})).await;
    assert!(call.is_error());
    assert_eq!(call.structured()["guard"], "RoleGuard");
    assert_eq!(entries(&f.log), ["required=admin app=shop"]);
    let admin = client(&f).with_header("x-role", "admin");
    let call = admin.call_tool("open_action", json!({})).await;
    assert!(!call.is_error(), "{}", call.text());
    assert_eq!(entries(&f.log).last().unwrap(), "body:open_action");
}

#[tokio::test]
async fn guard_on_one_tool_does_not_affect_others() {
    let f = fixture();
    let call = client(&f).call_tool("intercepted_action", json!({})).await;
    assert!(!call.is_error());
    assert!(!entries(&f.log).iter().any(|e| e.starts_with("guard:")));
}

#[tokio::test]
async fn interceptors_wrap_like_an_onion_and_may_change_the_result() {
    let f = fixture();
    let call = client(&f).call_tool("intercepted_action", json!({})).await;
    assert_eq!(
        entries(&f.log),
        [
            "outer:before",
            "inner:before",
            "body:intercepted_action",
            "inner:after",
            "outer:after"
        ]
    );
    assert_eq!(call.structured()["seen_by"], json!(["inner", "outer"]));
}

#[tokio::test]
async fn exception_handlers_chain_in_order_and_declining_passes_on() {
    let f = fixture();
    let call = client(&f).call_tool("failing_action", json!({})).await;
    assert!(call.is_error());
    assert!(
        call.text()
            .starts_with("Error: Invalid input: qty must be positive."),
        "{}",
        call.text()
    );
    assert_eq!(call.structured()["code"], "validation");
    assert_eq!(call.structured()["tool"], "failing_action");
    assert_eq!(
        entries(&f.log),
        [
            "outer:before",
            "body:failing_action",
            "handler:declines",
            "handler:value",
            "outer:after"
        ],
        "handlers run inside the interceptors, in order"
    );
}

#[tokio::test]
async fn an_error_no_handler_takes_is_generic_with_a_request_id_and_no_cause() {
    let f = fixture();
    for tool in ["unhandled_action", "panicking_action"] {
        let call = client(&f).call_tool(tool, json!({})).await;
        assert!(call.is_error());
        let s = call.structured();
        assert_eq!(s["code"], "internal");
        let request_id = s["request_id"].as_str().unwrap();
        assert!(request_id.starts_with("req_"));
        assert!(call.text().contains(request_id));
        assert!(
            !call.text().contains("hunter2") && !call.text().contains("boom"),
            "the cause leaked: {}",
            call.text()
        );
    }
}
