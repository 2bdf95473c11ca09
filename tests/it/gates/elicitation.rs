//! Approval in the client: a client that declared elicitation is asked for approval; the
//! request state is bound to its connection, sealed, used once and expires. Money moves only
//! with approval in the product.

use mcp_pipeline::Limits;
use serde_json::json;

use super::new_note;
use crate::support::notes::Notes;
use crate::support::on_every_backend;

fn with_elicitation(name: &str, arguments: serde_json::Value) -> serde_json::Value {
    json!({
        "name": name,
        "arguments": arguments,
        "_meta": {"io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}},
    })
}

fn approval_retry(arguments: serde_json::Value, state: &str, approve: bool) -> serde_json::Value {
    let mut params = with_elicitation("send_note", arguments);
    params["requestState"] = json!(state);
    params["inputResponses"] =
        json!({"approval": {"action": "accept", "content": {"approve": approve}}});
    params
}

async fn a_client_that_can_ask_gets_an_approval_request(n: Notes) {
    let c = n.client();
    let note = new_note(&c, "Approve me", "See you at 10.").await;
    let args = json!({"note": note, "to": "ada@example.com"});
    let asked = c
        .call_tool_with("send_note", with_elicitation("send_note", args.clone()))
        .await;
    assert_eq!(asked.result["resultType"], "input_required");
    let request = &asked.result["inputRequests"]["approval"];
    assert_eq!(request["method"], "elicitation/create");
    assert!(
        request["params"]["message"]
            .as_str()
            .unwrap()
            .contains("ada@example.com")
    );
    let state = asked.result["requestState"].as_str().unwrap().to_owned();
    assert!(n.outbox().await.is_empty(), "asking sends nothing");
    // Another connection cannot use the state; an altered state is refused.
    let other = n.second_connection().await;
    let r = other
        .request("tools/call", approval_retry(args.clone(), &state, true))
        .await;
    assert_eq!(r.error_code(), Some(-32602));
    let mut tampered = state.clone();
    tampered.insert(5, 'x');
    let r = c
        .request("tools/call", approval_retry(args.clone(), &tampered, true))
        .await;
    assert_eq!(r.error_code(), Some(-32602));
    assert!(n.outbox().await.is_empty());
    let done = c
        .call_tool_with("send_note", approval_retry(args.clone(), &state, true))
        .await;
    assert!(!done.is_error(), "{}", done.text());
    assert_eq!(done.structured()["status"], "DONE");
    assert_eq!(n.outbox().await.len(), 1);
    assert_eq!(
        n.approvals_of("send_note").await,
        [Some("elicitation".to_owned())],
        "the audit row says the client's user approved it"
    );
    // The same approval replayed is refused: it was consumed in the store.
    let replayed = c
        .call_tool_with("send_note", approval_retry(args, &state, true))
        .await;
    assert!(replayed.is_error());
    assert_eq!(replayed.structured()["status"], "used");
    assert_eq!(n.outbox().await.len(), 1, "executed once");
}
on_every_backend!(
    approval_in_client,
    a_client_that_can_ask_gets_an_approval_request,
    |backend| Notes::on(backend, Limits::default()),
    threads = 4
);

async fn a_declined_approval_does_nothing(n: Notes) {
    let c = n.client();
    let note = new_note(&c, "Decline me", "x").await;
    let args = json!({"note": note, "to": "ada@example.com"});
    let asked = c
        .call_tool_with("send_note", with_elicitation("send_note", args.clone()))
        .await;
    let state = asked.result["requestState"].as_str().unwrap().to_owned();
    let declined = c
        .call_tool_with("send_note", approval_retry(args.clone(), &state, false))
        .await;
    assert_eq!(declined.structured()["status"], "DECLINED");
    let late = c
        .call_tool_with("send_note", approval_retry(args, &state, true))
        .await;
    assert!(late.is_error());
    assert!(n.outbox().await.is_empty());
    // Steps that move money never use the client's elicitation nor confirm_action: only a
    // person in the product's page approves them.
    let charge = c
        .call_tool_with(
            "charge_note",
            with_elicitation("charge_note", json!({"note": note})),
        )
        .await;
    assert_eq!(
        charge.structured()["status"],
        "PREVIEW",
        "{}",
        charge.text()
    );
    let url = charge.structured()["approval_url"]
        .as_str()
        .unwrap()
        .to_owned();
    // The link names the token's id (its digest), never the token itself.
    let token = charge.structured()["confirm_token"].as_str().unwrap();
    let id = mcp_pipeline::keys::pending(&store::TenantId::new("acme"), token).sk;
    assert!(url.ends_with(&format!("/approvals/{id}")), "{url}");
    assert!(!url.contains("cfm_"), "{url}");
    assert!(
        charge.structured()["handover"]
            .as_str()
            .unwrap()
            .contains(&url)
    );
    let confirm = json!({"confirm_token": charge.structured()["confirm_token"], "confirm_summary": charge.structured()["confirm_summary"]});
    let refused = c.call_tool("confirm_action", confirm).await;
    assert_eq!(
        refused.structured()["code"],
        "forbidden",
        "{}",
        refused.text()
    );
    assert_eq!(refused.structured()["approval_url"], url.as_str());
    assert!(n.outbox().await.is_empty(), "nothing was charged");
}
on_every_backend!(
    approval_declined,
    a_declined_approval_does_nothing,
    |backend| Notes::on(backend, Limits::default()),
    threads = 4
);

/// The token a request state carries (it is signed, not encrypted: anyone who sees the state
/// can read it).
fn token_in(state: &str) -> String {
    use base64::Engine as _;
    let payload = state.split('.').nth(1).unwrap();
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .unwrap();
    let sealed: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    sealed["s"].as_str().unwrap().to_owned()
}

/// An action put to the client's user is approved only by that user's answer: the token read
/// out of the request's state does not let `confirm_action` run it (review of 2026-12-05: it
/// did, and the user was never asked), and the refusal leaves the request answerable.
async fn a_prompted_action_is_not_confirmed_around_the_prompt(n: Notes) {
    let c = n.client();
    let note = new_note(&c, "Prompted", "See you at 10.").await;
    let args = json!({"note": note, "to": "ada@example.com"});
    let asked = c
        .call_tool_with("send_note", with_elicitation("send_note", args.clone()))
        .await;
    let state = asked.result["requestState"].as_str().unwrap().to_owned();
    let request = &asked.result["inputRequests"]["approval"]["params"];
    let summary = request["requestedSchema"]["properties"]["approve"]["description"].clone();
    let around = c
        .call_tool(
            "confirm_action",
            json!({"confirm_token": token_in(&state), "confirm_summary": summary}),
        )
        .await;
    assert!(around.is_error(), "{}", around.text());
    assert_eq!(
        around.structured()["code"],
        "forbidden",
        "{}",
        around.text()
    );
    assert!(n.outbox().await.is_empty(), "nothing was sent");
    let answered = c
        .call_tool_with("send_note", approval_retry(args, &state, true))
        .await;
    assert_eq!(
        answered.structured()["status"],
        "DONE",
        "{}",
        answered.text()
    );
    assert_eq!(n.outbox().await.len(), 1);
}
on_every_backend!(
    prompted_only,
    a_prompted_action_is_not_confirmed_around_the_prompt,
    |backend| Notes::on(backend, Limits::default()),
    threads = 4
);

async fn an_expired_approval_state_is_refused(n: Notes) {
    let c = n.client();
    let note = new_note(&c, "Expiring", "x").await;
    let args = json!({"note": note, "to": "ada@example.com"});
    let asked = c
        .call_tool_with("send_note", with_elicitation("send_note", args.clone()))
        .await;
    let state = asked.result["requestState"].as_str().unwrap().to_owned();
    // The state lives one second (the fixture's setting); the server's clock moves on two.
    n.clock.advance(2);
    let r = c
        .request("tools/call", approval_retry(args, &state, true))
        .await;
    assert_eq!(r.error_code(), Some(-32602), "{:?}", r.json());
    assert!(
        r.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("expired"),
        "{:?}",
        r.json()
    );
    assert!(n.outbox().await.is_empty());
}
on_every_backend!(
    expired_state,
    an_expired_approval_state_is_refused,
    |backend| Notes::with_state_ttl(backend, Limits::default(), 1),
    threads = 2
);

/// A retry whose answer is missing or says neither yes nor no is asked again: the pending
/// action stays pending, nothing is declined or sent, and a later yes runs it once (review of
/// 2026-12-05: such a retry was taken as the user declining, and the action was dead).
async fn an_unanswered_approval_is_asked_again(n: Notes) {
    let c = n.client();
    let note = new_note(&c, "Ask again", "See you at 10.").await;
    let args = json!({"note": note, "to": "ada@example.com"});
    let asked = c
        .call_tool_with("send_note", with_elicitation("send_note", args.clone()))
        .await;
    let mut state = asked.result["requestState"].as_str().unwrap().to_owned();
    let unanswered = [
        None,
        Some(json!({})),
        Some(json!({"approval": {"action": "accept", "content": {"approve": "yes"}}})),
        Some(json!({"approval": {"action": "accept"}})),
        Some(json!({"approval": "yes"})),
    ];
    for responses in unanswered {
        let mut params = with_elicitation("send_note", args.clone());
        params["requestState"] = json!(state);
        if let Some(responses) = &responses {
            params["inputResponses"] = responses.clone();
        }
        let again = c.call_tool_with("send_note", params).await;
        assert_eq!(
            again.result["resultType"], "input_required",
            "{responses:?}: {}",
            again.result
        );
        assert_eq!(
            again.result["inputRequests"]["approval"]["method"],
            "elicitation/create"
        );
        state = again.result["requestState"].as_str().unwrap().to_owned();
    }
    assert!(n.outbox().await.is_empty(), "nothing was sent");
    let rows = n.audit_actions().await;
    assert!(
        !rows.iter().any(|r| r.ends_with(":declined")),
        "nothing was declined: {rows:?}"
    );
    let done = c
        .call_tool_with("send_note", approval_retry(args.clone(), &state, true))
        .await;
    assert_eq!(done.structured()["status"], "DONE", "{}", done.text());
    assert_eq!(n.outbox().await.len(), 1);
    // A cancelled prompt is the user saying no.
    let other = new_note(&c, "Cancel me", "x").await;
    let args = json!({"note": other, "to": "ada@example.com"});
    let asked = c
        .call_tool_with("send_note", with_elicitation("send_note", args.clone()))
        .await;
    let mut params = with_elicitation("send_note", args);
    params["requestState"] = asked.result["requestState"].clone();
    params["inputResponses"] = json!({"approval": {"action": "cancel"}});
    let cancelled = c.call_tool_with("send_note", params).await;
    assert_eq!(cancelled.structured()["status"], "DECLINED");
    assert_eq!(n.outbox().await.len(), 1);
}
on_every_backend!(
    unanswered,
    an_unanswered_approval_is_asked_again,
    |backend| Notes::on(backend, Limits::default()),
    threads = 2
);

/// Only a client that declared form-mode elicitation is asked in the call: one that declared
/// only URL mode, or sent something that is no capability object, gets the preview to confirm
/// (review of 2026-12-05: both were sent a form). A request that is of an earlier protocol by
/// its header is refused when its body says 2026-07-28, so it is never sent `input_required`.
async fn only_form_clients_are_asked(n: Notes) {
    let c = n.client();
    let note = new_note(&c, "Forms", "See you at 10.").await;
    let args = json!({"note": note, "to": "ada@example.com"});
    let declared = |elicitation: serde_json::Value| {
        let mut params = with_elicitation("send_note", args.clone());
        params["_meta"]["io.modelcontextprotocol/clientCapabilities"] =
            json!({"elicitation": elicitation});
        params
    };
    for elicitation in [json!({"url": {}}), json!(true), json!({"other": {}})] {
        let answer = c
            .call_tool_with("send_note", declared(elicitation.clone()))
            .await;
        assert_eq!(
            answer.structured()["status"],
            "PREVIEW",
            "{elicitation}: {}",
            answer.result
        );
    }
    for elicitation in [
        json!({"form": {}}),
        json!({"form": {}, "url": {}}),
        json!({}),
    ] {
        let answer = c
            .call_tool_with("send_note", declared(elicitation.clone()))
            .await;
        assert_eq!(
            answer.result["resultType"], "input_required",
            "{elicitation}: {}",
            answer.result
        );
    }
    assert!(n.outbox().await.is_empty());
}
on_every_backend!(
    form_clients,
    only_form_clients_are_asked,
    |backend| Notes::on(backend, Limits::default()),
    threads = 2
);
