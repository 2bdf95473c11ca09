//! Replay: the same write sent again is answered from its first result, never run twice,
//! also after a crash between commit and answer; idempotency keys bind their arguments.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use mcp_pipeline::Limits;
use serde_json::json;

use crate::support::notes::Notes;
use crate::support::on_every_backend;

async fn the_same_write_twice_runs_once(n: Notes) {
    let c = n.client();
    let args = json!({"title": "Gate code", "body": "4711"});
    let first = c.call_tool("create_note", args.clone()).await;
    assert!(!first.is_error(), "{}", first.text());
    assert!(first.structured().get("replayed").is_none());
    let second = c
        .call_tool("create_note", json!({"body": "4711", "title": "Gate code"}))
        .await;
    assert!(!second.is_error(), "{}", second.text());
    assert_eq!(second.structured()["replayed"], true);
    assert_eq!(
        second.structured()["note"],
        first.structured()["note"],
        "the first result, not a new note"
    );
    assert_eq!(n.notes().await.len(), 1);
    assert_eq!(
        n.audit_actions().await,
        ["create_note"],
        "exactly one audit row, channel mcp"
    );
}
on_every_backend!(
    same_write_twice,
    the_same_write_twice_runs_once,
    |backend| Notes::on(backend, Limits::default()),
    threads = 4
);

async fn twenty_identical_calls_in_parallel_write_once(n: Notes) {
    let client = Arc::new(n.client());
    let mut tasks = Vec::new();
    for _ in 0..20 {
        let client = client.clone();
        tasks.push(tokio::spawn(async move {
            client
                .call_tool("create_note", json!({"title": "Race", "body": "same"}))
                .await
        }));
    }
    let mut notes_seen = std::collections::BTreeSet::new();
    for task in tasks {
        let call = task.await.unwrap();
        if call.is_error() {
            // While the first is still committing, a clear retryable answer is allowed.
            assert_eq!(call.structured()["retryable"], true, "{}", call.text());
        } else {
            notes_seen.insert(
                call.structured()["note"]["note"]
                    .as_str()
                    .unwrap()
                    .to_owned(),
            );
        }
    }
    assert_eq!(
        notes_seen.len(),
        1,
        "every success names the same note: {notes_seen:?}"
    );
    assert_eq!(n.notes().await.len(), 1, "one execution");
    assert_eq!(n.audit_actions().await.len(), 1);
}
on_every_backend!(
    parallel_replay,
    twenty_identical_calls_in_parallel_write_once,
    |backend| Notes::on(backend, Limits::default()),
    threads = 4
);

async fn a_crash_after_commit_is_answered_by_the_replay(n: Notes) {
    let c = n.client();
    // The first transaction of the call is its rate-limit admission; the second is the write.
    n.lost_answer.skip.store(1, Ordering::SeqCst);
    n.lost_answer.armed.store(true, Ordering::SeqCst);
    let lost = c
        .call_tool("create_note", json!({"title": "Lost", "body": "answer"}))
        .await;
    assert!(lost.is_error(), "the caller saw a failure");
    let retry = c
        .call_tool("create_note", json!({"title": "Lost", "body": "answer"}))
        .await;
    assert!(!retry.is_error(), "{}", retry.text());
    assert_eq!(retry.structured()["replayed"], true);
    assert_eq!(n.notes().await.len(), 1, "one row");
    assert_eq!(n.audit_actions().await.len(), 1, "one audit row");
}
on_every_backend!(
    crash_after_commit,
    a_crash_after_commit_is_answered_by_the_replay,
    |backend| Notes::on(backend, Limits::default()),
    threads = 4
);

async fn an_idempotency_key_is_bound_to_its_arguments(n: Notes) {
    let c = n.client();
    let first = c
        .call_tool(
            "create_note",
            json!({"title": "Keyed", "body": "v1", "idempotency_key": "k-1"}),
        )
        .await;
    assert!(!first.is_error(), "{}", first.text());
    let again = c
        .call_tool(
            "create_note",
            json!({"title": "Keyed", "body": "v1", "idempotency_key": "k-1"}),
        )
        .await;
    assert_eq!(again.structured()["replayed"], true);
    let other = c
        .call_tool(
            "create_note",
            json!({"title": "Keyed", "body": "v2", "idempotency_key": "k-1"}),
        )
        .await;
    assert!(other.is_error());
    assert_eq!(other.structured()["code"], "conflict");
    assert_eq!(other.structured()["differs_in"], json!(["body"]));
    assert!(other.text().contains("`body`"), "{}", other.text());
    assert_eq!(n.notes().await.len(), 1);
}
on_every_backend!(
    idempotency_key,
    an_idempotency_key_is_bound_to_its_arguments,
    |backend| Notes::on(backend, Limits::default()),
    threads = 4
);

async fn a_replay_is_not_served_without_the_right(n: Notes) {
    let c = n.client();
    let args = json!({"title": "Rights", "body": "b"});
    assert!(!c.call_tool("create_note", args.clone()).await.is_error());
    n.app
        .directory
        .put_member(
            &store::TenantId::new("acme"),
            &store::MemberId::new("dan"),
            "viewer",
            true,
        )
        .await
        .unwrap();
    let call = c.call_tool("create_note", args).await;
    assert!(call.is_error());
    assert_eq!(call.structured()["hidden_by"], "rights");
    assert!(call.structured().get("replayed").is_none());
}
on_every_backend!(
    replay_and_rights,
    a_replay_is_not_served_without_the_right,
    |backend| Notes::on(backend, Limits::default()),
    threads = 4
);

/// A silent write's arguments absent, `null` or `{}` are one call: the same replay record is
/// named for all three, so replay protection is never skipped for want of arguments.
#[tokio::test]
async fn absent_null_and_empty_arguments_name_one_replay_record() {
    let n = Notes::on(crate::support::store::Backend::Memory, Limits::default())
        .await
        .unwrap();
    let claim = mcp_pipeline::Claim {
        tenant: store::TenantId::new("acme"),
        connection: store::ConnectionId::new(n.connection.clone()),
    };
    let keys: Vec<Vec<store::Key>> = [
        r#"{"name":"create_note"}"#,
        r#"{"name":"create_note","arguments":null}"#,
        r#"{"name":"create_note","arguments":{}}"#,
    ]
    .iter()
    .map(|params| {
        let body = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{params}}}"#);
        let mcp_protocol::Incoming::Message(message) =
            mcp_protocol::parse_message(body.as_bytes()).unwrap()
        else {
            panic!("a request");
        };
        let planned = n.app.server.plan(&message).expect("planned");
        n.app.server.prefetch_keys(&planned, &claim)
    })
    .collect();
    assert!(
        keys[0].iter().any(|k| k.pk.contains("#replay#")),
        "a replay record is read: {:?}",
        keys[0]
    );
    assert_eq!(keys[0], keys[1]);
    assert_eq!(keys[1], keys[2]);
}

/// A replay record past its expiry that the store has not yet removed (TTL deletes late) is
/// not a replay: the call runs anew and its record takes the old one's place.
async fn an_expired_replay_record_is_not_replayed(n: Notes) {
    use store::Store as _;
    let c = n.client();
    let args = json!({"title": "Gate", "body": "4711", "separate": true, "reason": "one per site"});
    let first = c.call_tool("create_note", args.clone()).await;
    assert!(!first.is_error(), "{}", first.text());
    let partition = format!("acme#replay#{}", n.connection);
    let page = n
        .app
        .store
        .query(store::Query::partition(partition.clone()))
        .await
        .unwrap();
    let (key, mut record) = page.items.into_iter().next().expect("a replay record");
    let past = mcp_pipeline::Clock::now(&mcp_pipeline::SystemClock) - 60;
    record.insert(store::TTL_ATTRIBUTE.into(), store::Value::n(past));
    n.app
        .store
        .put(store::Put::new(key.clone(), record))
        .await
        .unwrap();
    let again = c.call_tool("create_note", args).await;
    assert!(!again.is_error(), "{}", again.text());
    assert!(
        again.structured().get("replayed").is_none(),
        "replayed an expired record"
    );
    assert_ne!(again.structured()["note"], first.structured()["note"]);
    assert_eq!(n.notes().await.len(), 2);
    let renewed = n
        .app
        .store
        .get(&key)
        .await
        .unwrap()
        .expect("the new record");
    let expires = store::rows::expiry(&renewed);
    assert!(expires.is_some_and(|e| e > past + 60), "{renewed:?}");
}
on_every_backend!(
    expired_record,
    an_expired_replay_record_is_not_replayed,
    |backend| Notes::on(backend, Limits::default()),
    threads = 4
);
