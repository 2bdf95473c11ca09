//! Two-step actions: a notify or delete tool only prepares; `confirm_action` runs it once,
//! `reject_action` kills it, and a changed object needs a new preview.

use std::sync::Arc;

use mcp_pipeline::Limits;
use serde_json::json;
use store::{Store as _, Value as SV};

use super::{confirm_args, new_note};
use crate::support::notes::Notes;
use crate::support::on_every_backend;

async fn a_preview_alone_sends_nothing_and_confirmation_sends_once(n: Notes) {
    let c = n.client();
    let note = new_note(&c, "Arrival", "The technician arrives at 9:00.").await;
    let list = c.list_tools().await;
    let names: Vec<&str> = list["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"confirm_action") && names.contains(&"reject_action"),
        "{names:?}"
    );
    let preview = c
        .call_tool("send_note", json!({"note": note, "to": "ada@example.com"}))
        .await;
    assert!(!preview.is_error(), "{}", preview.text());
    let s = preview.structured();
    assert_eq!(s["status"], "PREVIEW");
    assert!(s["confirm_token"].as_str().unwrap().starts_with("cfm_"));
    assert_eq!(
        s["confirm_summary"],
        format!("Send note {note} to ada@example.com: \"The technician arrives at 9:00.\"")
    );
    assert!(
        s["next_steps"][0]
            .as_str()
            .unwrap()
            .contains("confirm_action")
    );
    assert!(n.outbox().await.is_empty(), "a preview sends nothing");
    assert_eq!(
        n.audit_actions().await,
        ["send_note:prepared", "create_note"],
        "a preview executes nothing, and its pending action is audited as prepared"
    );
    // A second identical call prepares afresh (never served from a replay cache).
    let again = c
        .call_tool("send_note", json!({"note": note, "to": "ada@example.com"}))
        .await;
    assert_ne!(again.structured()["confirm_token"], s["confirm_token"]);
    let done = c.call_tool("confirm_action", confirm_args(&preview)).await;
    assert!(!done.is_error(), "{}", done.text());
    assert_eq!(done.structured()["status"], "DONE");
    assert_eq!(n.outbox().await.len(), 1);
    assert_eq!(
        n.audit_actions().await,
        [
            "send_note",
            "send_note:prepared",
            "send_note:prepared",
            "create_note"
        ]
    );
    let reused = c.call_tool("confirm_action", confirm_args(&preview)).await;
    assert!(reused.is_error());
    assert_eq!(reused.structured()["status"], "used");
    assert_eq!(n.outbox().await.len(), 1, "a reused token sends nothing");
}
on_every_backend!(
    two_step,
    a_preview_alone_sends_nothing_and_confirmation_sends_once,
    |backend| Notes::on(backend, Limits::default()),
    threads = 4
);

async fn twenty_racing_confirmations_execute_once(n: Notes) {
    let c = n.client();
    let note = new_note(&c, "Race", "x").await;
    let preview = c
        .call_tool("send_note", json!({"note": note, "to": "ada@example.com"}))
        .await;
    let client = Arc::new(c);
    let args = confirm_args(&preview);
    let mut tasks = Vec::new();
    for _ in 0..20 {
        let (client, args) = (client.clone(), args.clone());
        tasks.push(tokio::spawn(async move {
            client.call_tool("confirm_action", args).await
        }));
    }
    let mut done = 0;
    for task in tasks {
        if !task.await.unwrap().is_error() {
            done += 1;
        }
    }
    assert_eq!(done, 1, "exactly one confirmation executes");
    assert_eq!(n.outbox().await.len(), 1);
}
on_every_backend!(
    confirm_race,
    twenty_racing_confirmations_execute_once,
    |backend| Notes::on(backend, Limits::default()),
    threads = 4
);

async fn bad_tokens_and_summaries_fail(n: Notes) {
    let c = n.client();
    let note = new_note(&c, "Tokens", "x").await;
    let preview = c
        .call_tool("send_note", json!({"note": note, "to": "ada@example.com"}))
        .await;
    let token = preview.structured()["confirm_token"]
        .as_str()
        .unwrap()
        .to_owned();
    let wrong = c
        .call_tool(
            "confirm_action",
            json!({"confirm_token": token, "confirm_summary": "Send something else"}),
        )
        .await;
    assert_eq!(wrong.structured()["code"], "validation");
    assert_eq!(
        wrong.structured()["expected_summary"],
        preview.structured()["confirm_summary"]
    );
    let foreign = n
        .second_connection()
        .await
        .call_tool("confirm_action", confirm_args(&preview))
        .await;
    assert_eq!(
        foreign.structured()["code"],
        "not_found",
        "another connection's token names nothing"
    );
    let unknown = c
        .call_tool(
            "confirm_action",
            json!({"confirm_token": "cfm_nope", "confirm_summary": "x"}),
        )
        .await;
    assert_eq!(unknown.structured()["code"], "not_found");
    let extra = c
        .call_tool(
            "confirm_action",
            json!({"confirm_token": token, "confirm_summary": "x", "force": true}),
        )
        .await;
    assert_eq!(
        extra.structured()["allowed"],
        json!(["confirm_token", "confirm_summary"])
    );
    // Expired: the pending action's expiry passes.
    let key = mcp_pipeline::keys::pending(&store::TenantId::new("acme"), &token);
    let past = store::Update::new(
        key,
        vec![store::UpdateAction::Set(
            store::TTL_ATTRIBUTE.into(),
            SV::n(mcp_pipeline::Clock::now(&mcp_pipeline::SystemClock) - 1),
        )],
    );
    n.app.store.update(past).await.unwrap();
    let expired = c.call_tool("confirm_action", confirm_args(&preview)).await;
    assert_eq!(expired.structured()["code"], "not_found");
    assert!(
        n.outbox().await.is_empty(),
        "nothing was sent by any failed confirmation"
    );
}
on_every_backend!(
    bad_tokens,
    bad_tokens_and_summaries_fail,
    |backend| Notes::on(backend, Limits::default()),
    threads = 4
);

async fn an_edit_between_preview_and_confirm_yields_a_new_preview(n: Notes) {
    let c = n.client();
    let created = c
        .call_tool(
            "create_note",
            json!({"title": "Edited", "body": "old text"}),
        )
        .await;
    let note = created.structured()["note"].clone();
    let handle = note["note"].as_str().unwrap();
    let preview = c
        .call_tool(
            "send_note",
            json!({"note": handle, "to": "ada@example.com"}),
        )
        .await;
    let edit = c
        .call_tool(
            "update_note",
            json!({"note": handle, "version": note["version"], "body": "new text"}),
        )
        .await;
    assert!(!edit.is_error(), "{}", edit.text());
    let changed = c.call_tool("confirm_action", confirm_args(&preview)).await;
    assert!(changed.is_error());
    assert_eq!(
        changed.structured()["changed_since_preview"],
        true,
        "{}",
        changed.text()
    );
    assert_eq!(changed.structured()["preview"]["body"], "new text");
    assert!(n.outbox().await.is_empty(), "nothing sent");
    let old = c.call_tool("confirm_action", confirm_args(&preview)).await;
    assert!(old.is_error(), "the old token is dead");
    // The conflict names the new preview's confirmation; followed verbatim, it executes.
    let next = changed.structured()["next_call"].as_str().unwrap();
    let (tool, args) = next.split_once(' ').unwrap();
    assert_eq!(tool, "confirm_action");
    let fresh: serde_json::Value = serde_json::from_str(args).unwrap();
    assert_eq!(
        fresh["confirm_token"],
        changed.structured()["confirm_token"]
    );
    let done = c.call_tool(tool, fresh).await;
    assert!(!done.is_error(), "{}", done.text());
    let outbox = n.outbox().await;
    assert_eq!(outbox.len(), 1);
    assert_eq!(
        outbox[0]["body"],
        SV::s("new text"),
        "what was approved is what went out"
    );
}
on_every_backend!(
    changed_since_preview,
    an_edit_between_preview_and_confirm_yields_a_new_preview,
    |backend| Notes::on(backend, Limits::default()),
    threads = 4
);

async fn rejecting_kills_the_action_and_delete_waits_for_confirmation(n: Notes) {
    let c = n.client();
    let note = new_note(&c, "Doomed", "x").await;
    let preview = c
        .call_tool("send_note", json!({"note": note, "to": "ada@example.com"}))
        .await;
    let rejected = c
        .call_tool(
            "reject_action",
            json!({"confirm_token": preview.structured()["confirm_token"]}),
        )
        .await;
    assert_eq!(rejected.structured()["status"], "REJECTED");
    let late = c.call_tool("confirm_action", confirm_args(&preview)).await;
    assert_eq!(late.structured()["status"], "rejected");
    assert!(n.outbox().await.is_empty());
    let delete = c.call_tool("delete_note", json!({"note": note})).await;
    assert_eq!(delete.structured()["status"], "PREVIEW");
    assert_eq!(n.notes().await.len(), 1, "a delete preview deletes nothing");
    let done = c.call_tool("confirm_action", confirm_args(&delete)).await;
    assert!(!done.is_error(), "{}", done.text());
    assert!(n.notes().await.is_empty());
    assert_eq!(n.executed().await[0], "delete_note");
    assert!(
        n.audit_actions()
            .await
            .contains(&"send_note:rejected".to_owned()),
        "a rejection is audited"
    );
}
on_every_backend!(
    reject_and_delete,
    rejecting_kills_the_action_and_delete_waits_for_confirmation,
    |backend| Notes::on(backend, Limits::default()),
    threads = 4
);
