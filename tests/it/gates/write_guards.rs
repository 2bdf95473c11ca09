//! What a write checks before it commits: a duplicate names the existing item, a stale
//! version is a conflict, a batch wider than expected runs nothing.

use mcp_pipeline::Limits;
use serde_json::json;

use crate::support::notes::Notes;
use crate::support::on_every_backend;

async fn a_second_create_with_the_same_key_names_the_first(n: Notes) {
    let c = n.client();
    let first = c
        .call_tool("create_note", json!({"title": "Door code", "body": "1234"}))
        .await;
    let handle = first.structured()["note"]["note"]
        .as_str()
        .unwrap()
        .to_owned();
    let second = c
        .call_tool(
            "create_note",
            json!({"title": "  door CODE ", "body": "9999"}),
        )
        .await;
    assert!(second.is_error());
    assert_eq!(second.structured()["code"], "conflict");
    assert_eq!(second.structured()["existing"], handle.as_str());
    assert!(
        second.structured()["next_call"].as_str().unwrap()
            == format!("get_note {{\"note\": \"{handle}\"}}"),
        "the existing note's read, with its version: {}",
        second.text()
    );
    assert_eq!(n.notes().await.len(), 1, "one row");
    let no_reason = c
        .call_tool(
            "create_note",
            json!({"title": "Door code", "body": "9999", "separate": true}),
        )
        .await;
    assert_eq!(no_reason.structured()["code"], "validation");
    let separate = c
        .call_tool(
            "create_note",
            json!({"title": "Door code", "body": "9999", "separate": true, "reason": "back door"}),
        )
        .await;
    assert!(!separate.is_error(), "{}", separate.text());
    assert_eq!(n.notes().await.len(), 2);
}
on_every_backend!(
    duplicates,
    a_second_create_with_the_same_key_names_the_first,
    |backend| Notes::on(backend, Limits::default()),
    threads = 4
);

async fn a_stale_version_is_a_conflict_and_changes_nothing(n: Notes) {
    let c = n.client();
    let created = c
        .call_tool("create_note", json!({"title": "Versioned", "body": "one"}))
        .await;
    let note = created.structured()["note"].clone();
    let (handle, v1) = (
        note["note"].as_str().unwrap(),
        note["version"].as_str().unwrap(),
    );
    // Someone else changes it.
    let other = c
        .call_tool(
            "update_note",
            json!({"note": handle, "version": v1, "body": "two"}),
        )
        .await;
    assert!(!other.is_error(), "{}", other.text());
    let stale = c
        .call_tool(
            "update_note",
            json!({"note": handle, "version": v1, "body": "three"}),
        )
        .await;
    assert!(stale.is_error());
    assert_eq!(stale.structured()["code"], "conflict");
    assert_eq!(
        stale.structured()["current"]["body"],
        "two",
        "the current state comes with the conflict"
    );
    let stored = n.notes().await;
    assert_eq!(stored[0].body, "two", "row unchanged by the stale update");
}
on_every_backend!(
    versions,
    a_stale_version_is_a_conflict_and_changes_nothing,
    |backend| Notes::on(backend, Limits::default()),
    threads = 4
);

async fn a_filter_wider_than_expected_executes_nothing(n: Notes) {
    let c = n.client();
    for i in 0..12 {
        let r = c
            .call_tool(
                "create_note",
                json!({"title": format!("Visit {i:02}"), "body": "x"}),
            )
            .await;
        assert!(!r.is_error(), "{}", r.text());
    }
    let call = c
        .call_tool(
            "archive_notes",
            json!({"title_prefix": "Visit", "expected_count": 3}),
        )
        .await;
    assert!(call.is_error());
    assert_eq!(
        call.structured()["matches"].as_array().unwrap().len(),
        12,
        "the matches are listed"
    );
    assert!(
        n.notes().await.iter().all(|note| !note.archived),
        "nothing changed"
    );
    let call = c
        .call_tool(
            "archive_notes",
            json!({"title_prefix": "Visit", "expected_count": 12}),
        )
        .await;
    assert!(!call.is_error(), "{}", call.text());
    assert!(n.notes().await.iter().all(|note| note.archived));
    let audit = crate::support::audit_rows(
        n.app.store.as_ref(),
        "acme",
        Some(n.connection.as_str()),
        100,
    )
    .await;
    assert_eq!(audit[0].action, "archive_notes");
    assert_eq!(
        audit[0].ids.len(),
        12,
        "the audit row names every archived note"
    );
}
on_every_backend!(
    batches,
    a_filter_wider_than_expected_executes_nothing,
    |backend| Notes::on(backend, Limits::default()),
    threads = 4
);
