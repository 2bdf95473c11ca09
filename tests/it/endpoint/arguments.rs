//! Arguments: unknown fields, tolerant coercion, invalid values, handles.

use mcp_pipeline::Handle;
use serde_json::json;

use crate::support::probe_tools::{Booking, client, entries, fixture};

#[tokio::test]
async fn unknown_fields_are_refused_with_the_allowed_list_and_nothing_runs() {
    let f = fixture();
    let call = client(&f)
        .call_tool("echo_args", json!({"text": "hi", "colour": "red"}))
        .await;
    assert!(call.is_error());
    assert!(
        call.text().starts_with("Error: Unknown argument `colour`."),
        "{}",
        call.text()
    );
    let s = call.structured();
    assert_eq!(s["code"], "validation");
    assert_eq!(s["unknown"], json!(["colour"]));
    assert_eq!(
        s["allowed"],
        json!([
            "text", "count", "amount", "flag", "tags", "status", "booking"
        ])
    );
    assert!(
        entries(&f.log).is_empty(),
        "the body ran: {:?}",
        entries(&f.log)
    );
}

#[tokio::test]
async fn tolerant_input_is_coerced_and_every_coercion_is_reported() {
    let f = fixture();
    let call = client(&f)
        .call_tool(
            "echo_args",
            json!({"text": 42, "count": "5", "amount": "12.5", "flag": "true", "tags": "[\"a\",\"b\"]", "status": "Canceled"}),
        )
        .await;
    assert!(!call.is_error(), "{}", call.text());
    let echo = &call.structured()["echo"];
    assert_eq!(echo["text"], "42");
    assert_eq!(echo["count"], 5);
    assert_eq!(echo["amount"], 12.5);
    assert_eq!(echo["flag"], true);
    assert_eq!(echo["tags"], json!(["a", "b"]));
    assert_eq!(echo["status"], "cancelled");
    let warnings = call.structured()["warnings"].as_array().unwrap();
    assert_eq!(warnings.len(), 6, "{warnings:?}");
    for field in ["text", "count", "amount", "flag", "tags", "status"] {
        assert!(
            warnings
                .iter()
                .any(|w| w.as_str().unwrap().starts_with(&format!("`{field}`"))),
            "{field}: {warnings:?}"
        );
    }
    // Enum by case alone.
    let call = client(&f)
        .call_tool("echo_args", json!({"text": "x", "status": "CONFIRMED"}))
        .await;
    assert_eq!(call.structured()["echo"]["status"], "confirmed");
    // Well-typed input gets no warnings.
    let call = client(&f)
        .call_tool("echo_args", json!({"text": "x", "count": 3, "flag": false}))
        .await;
    assert_eq!(call.structured()["warnings"], json!([]));
}

#[tokio::test]
async fn invalid_values_are_validation_errors_naming_the_field() {
    let f = fixture();
    for (args, field) in [
        (json!({"text": "x", "count": "many"}), "count"),
        (json!({"text": "x", "status": "maybe"}), "status"),
        (json!({"text": "x", "flag": "perhaps"}), "flag"),
        (json!({}), "text"),
    ] {
        let call = client(&f).call_tool("echo_args", args.clone()).await;
        assert!(call.is_error(), "{args}");
        assert_eq!(call.structured()["code"], "validation");
        assert!(call.text().contains(field), "{field}: {}", call.text());
    }
    assert!(entries(&f.log).is_empty());
}

#[tokio::test]
async fn handles_are_accepted_in_every_form_and_wrong_kinds_are_named() {
    let f = fixture();
    let h = Handle::<Booking>::generate_with(&mcp_pipeline::SystemRandomness);
    for form in [
        h.to_string(),
        h.id().to_owned(),
        format!("https://app.example.com/bookings/{h}"),
    ] {
        let call = client(&f)
            .call_tool("echo_args", json!({"text": "x", "booking": form}))
            .await;
        assert!(!call.is_error(), "{form}: {}", call.text());
        assert_eq!(call.structured()["echo"]["booking"], h.to_string());
    }
    let call = client(&f)
        .call_tool("echo_args", json!({"text": "x", "booking": "cus_4f9Xk2"}))
        .await;
    assert!(call.is_error());
    assert!(
        call.text().contains("cus_")
            && call.text().contains("booking")
            && call.text().contains("bkg_"),
        "{}",
        call.text()
    );
}
