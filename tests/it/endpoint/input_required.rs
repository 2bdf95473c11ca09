//! Multi round-trip requests: input required (elicitation) and the sealed request state.

use serde_json::{Value, json};

use crate::support::probe_tools::{client, fixture};

#[tokio::test]
async fn input_required_asks_only_for_declared_capabilities_and_the_retry_completes() {
    let f = fixture();
    let with_elicitation =
        json!({"io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}});
    let call = client(&f)
        .call_tool_with(
            "ask_user",
            json!({"name": "ask_user", "arguments": {}, "_meta": with_elicitation}),
        )
        .await;
    assert_eq!(call.result["resultType"], "input_required");
    assert_eq!(
        call.result["inputRequests"]["colour"]["method"],
        "elicitation/create"
    );
    assert!(call.result.get("content").is_none() && call.result.get("ttlMs").is_none());
    // The tool's state travels sealed: the client never sees it in clear.
    let sealed = call.result["requestState"].as_str().unwrap().to_owned();
    assert!(
        sealed.starts_with("s1.") && !sealed.contains("state-1"),
        "{sealed}"
    );
    let retry = |state: &str, arguments: Value| {
        json!({
            "name": "ask_user",
            "arguments": arguments,
            "inputResponses": {"colour": {"action": "accept", "content": {"colour": "teal"}}},
            "requestState": state,
            "_meta": with_elicitation,
        })
    };
    let call = client(&f)
        .call_tool_with("ask_user", retry(&sealed, json!({})))
        .await;
    assert_eq!(call.result["resultType"], "complete");
    assert_eq!(call.structured()["choice"]["colour"], "teal");
    assert_eq!(
        call.structured()["state"],
        "state-1",
        "the tool gets its own state back"
    );
    // Altered in one character, or made up: refused before the tool runs.
    let mut tampered = sealed.clone();
    let last = tampered.pop().unwrap();
    tampered.push(if last == 'A' { 'B' } else { 'A' });
    for bad in [tampered.as_str(), "state-1", ""] {
        let r = client(&f)
            .request("tools/call", retry(bad, json!({})))
            .await;
        assert_eq!(r.error_code(), Some(-32602), "{bad:?}: {:?}", r.json());
        assert!(
            r.json()["error"]["message"]
                .as_str()
                .unwrap()
                .starts_with("Invalid requestState")
        );
    }
    // A client that did not declare elicitation gets -32021, not a request it cannot answer.
    let r = client(&f)
        .request("tools/call", json!({"name": "ask_user", "arguments": {}}))
        .await;
    assert_eq!((r.status, r.error_code()), (400, Some(-32021)));
    assert!(r.json()["error"]["data"]["requiredCapabilities"]["elicitation"].is_object());
}
