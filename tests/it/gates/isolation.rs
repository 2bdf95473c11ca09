//! What belongs to one principal stays there: a replay record answers only its own connection,
//! a confirmation token works only for the connection that prepared it (another tenant gets
//! the same answer as for a token that never existed), and a confirmation is checked again
//! against the live rights and the kill switch when it is used. Replays count against no rate
//! bucket (ADR 12).

use mcp_pipeline::{Limits, Toolset};
use mcp_test_client::TestClient;
use serde_json::{Value, json};

use super::{confirm_args, new_note, prepared_send};
use crate::support::notes::Notes;
use crate::support::{connect, on_every_backend, rights};

/// A client of a new connection of `member` in `tenant` with the notes tools' rights.
async fn writer(n: &Notes, tenant: &str, member: &str) -> TestClient {
    n.app
        .directory
        .put_member(
            &store::TenantId::new(tenant),
            &store::MemberId::new(member),
            "dispatcher",
            true,
        )
        .await
        .unwrap();
    let rights = rights(&[
        booking::rights::BOOKINGS_READ,
        booking::rights::BOOKINGS_WRITE,
        booking::rights::CUSTOMERS_NOTIFY,
    ]);
    let (_, token) = connect(&n.app, tenant, member, rights, Toolset::Full, "isolation").await;
    TestClient::in_process(n.app.http.clone())
        .with_header("authorization", &format!("Bearer {token}"))
}

fn separate_note() -> Value {
    json!({"title": "Gate code", "body": "4711", "separate": true, "reason": "one per site"})
}

async fn a_replay_answers_only_its_own_connection(n: Notes) {
    let first = n.client().call_tool("create_note", separate_note()).await;
    let again = n.client().call_tool("create_note", separate_note()).await;
    assert_eq!(again.structured()["replayed"], true, "{}", again.text());
    for (who, client) in [
        (
            "another connection of the tenant",
            writer(&n, "acme", "erin").await,
        ),
        (
            "a connection of another tenant",
            writer(&n, "globex", "gus").await,
        ),
    ] {
        let call = client.call_tool("create_note", separate_note()).await;
        assert!(!call.is_error(), "{who}: {}", call.text());
        assert!(
            call.structured().get("replayed").is_none(),
            "{who}: replayed another's write"
        );
        assert_ne!(
            call.structured()["note"]["note"],
            first.structured()["note"]["note"],
            "{who}: got the other principal's result"
        );
    }
    assert_eq!(n.notes().await.len(), 2, "acme: its own note and erin's");
}
on_every_backend!(
    replay_per_connection,
    a_replay_answers_only_its_own_connection,
    |backend| Notes::on(backend, Limits::default()),
    threads = 4
);

async fn a_token_of_another_tenant_is_an_unknown_token(n: Notes) {
    let c = n.client();
    let preview = prepared_send(&c).await;
    let stranger = writer(&n, "globex", "gus").await;
    let foreign = stranger
        .call_tool("confirm_action", confirm_args(&preview))
        .await;
    let mut bogus = confirm_args(&preview);
    bogus["confirm_token"] = json!("cfm_AAAAAAAAAAAAAAAAAAAAAAAA");
    let unknown = stranger.call_tool("confirm_action", bogus).await;
    assert_eq!(
        foreign.structured()["code"],
        "not_found",
        "{}",
        foreign.text()
    );
    assert_eq!(
        foreign.structured()["message"],
        unknown.structured()["message"],
        "the same answer as a token that never existed"
    );
    assert!(n.outbox().await.is_empty(), "nothing was sent");
    let own = c.call_tool("confirm_action", confirm_args(&preview)).await;
    assert!(
        !own.is_error(),
        "the preparing connection still can: {}",
        own.text()
    );
}
on_every_backend!(
    token_per_tenant,
    a_token_of_another_tenant_is_an_unknown_token,
    |backend| Notes::on(backend, Limits::default()),
    threads = 4
);

async fn a_confirmation_is_checked_again_when_used(n: Notes) {
    let c = n.client();
    let note = new_note(&c, "Arrival", "At nine.").await;
    let send = json!({"note": note, "to": "ada@example.com"});
    // The right is cut between preview and confirmation.
    let preview = c.call_tool("send_note", send.clone()).await;
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
    let denied = c.call_tool("confirm_action", confirm_args(&preview)).await;
    assert!(denied.is_error(), "{}", denied.text());
    assert_eq!(
        denied.structured()["code"],
        "forbidden",
        "{}",
        denied.text()
    );
    assert!(n.outbox().await.is_empty(), "sent without the right");
    // Restored, then the kill switch is engaged between preview and confirmation.
    n.app
        .directory
        .put_member(
            &store::TenantId::new("acme"),
            &store::MemberId::new("dan"),
            "dispatcher",
            true,
        )
        .await
        .unwrap();
    let preview = c.call_tool("send_note", send).await;
    let operator = crate::support::cli_actor("acme", "ops");
    n.app
        .switches
        .set_global(&operator, true, "incident")
        .await
        .unwrap();
    let switched = c
        .request(
            "tools/call",
            json!({"name": "confirm_action", "arguments": confirm_args(&preview)}),
        )
        .await;
    assert_eq!(switched.status, 503);
    assert!(n.outbox().await.is_empty(), "sent with the switch on");
}
on_every_backend!(
    confirmation_rechecked,
    a_confirmation_is_checked_again_when_used,
    |backend| Notes::on(backend, Limits::default()),
    threads = 4
);

/// ADR 12: a replay does no work, so it counts against no bucket: far more replays than the
/// write limit are all answered, and the limit is still there for new writes.
async fn replays_count_against_no_bucket(n: Notes) {
    let c = n.client();
    let limit = n.limits().per_connection.write as usize;
    let args = json!({"title": "Once", "body": "x"});
    assert!(!c.call_tool("create_note", args.clone()).await.is_error());
    for _ in 0..limit + 3 {
        let again = c.call_tool("create_note", args.clone()).await;
        assert_eq!(again.structured()["replayed"], true, "{}", again.text());
    }
    for i in 1..limit {
        let new = c
            .call_tool(
                "create_note",
                json!({"title": format!("New {i}"), "body": "y"}),
            )
            .await;
        assert!(!new.is_error(), "write {i} of {limit}: {}", new.text());
    }
    let over = c
        .call_tool("create_note", json!({"title": "One too many", "body": "z"}))
        .await;
    assert_eq!(over.structured()["code"], "rate_limited", "{}", over.text());
}
on_every_backend!(
    replays_free,
    replays_count_against_no_bucket,
    |backend| Notes::on(backend, few_writes()),
    threads = 4
);

fn few_writes() -> Limits {
    let mut limits = Limits::default();
    limits.per_connection.write = 4;
    limits
}

/// Every refused call leaves a line in the call log naming the tenant, the connection, the
/// tool, why (the error code) and the arguments' digest, never their values.
#[tokio::test(flavor = "current_thread")]
async fn refusals_are_recorded_by_digest_without_their_arguments() {
    let captured = crate::support::LogCapture::default();
    let _guard = captured.install();
    let mut limits = Limits::default();
    limits.per_connection.write = 1;
    let n = Notes::on(crate::support::store::Backend::Sqlite, limits)
        .await
        .unwrap();
    let c = n.client();
    let secret_body = "canary-7c1d personal text";
    let note = |title: &str| json!({"title": title, "body": secret_body});
    assert!(!c.call_tool("create_note", note("first")).await.is_error());
    let limited = c.call_tool("create_note", note("second")).await;
    let reader = n.second_connection().await;
    let forbidden = reader.call_tool("create_note", note("third")).await;
    let bogus = json!({"confirm_token": "cfm_AAAAAAAAAAAAAAAAAAAAAAAA", "confirm_summary": "x"});
    let stale = c.call_tool("confirm_action", bogus).await;
    let lines = captured.lines();
    for (call, tool) in [
        (&limited, "create_note"),
        (&forbidden, "create_note"),
        (&stale, "confirm_action"),
    ] {
        let code = call.structured()["code"].as_str().unwrap().to_owned();
        let line = lines
            .iter()
            .find(|l| {
                l.contains("tool call")
                    && l.contains(&format!("outcome={code}"))
                    && l.contains(tool)
            })
            .unwrap_or_else(|| panic!("no log line for {tool} refused with {code}: {lines:#?}"));
        assert!(
            line.contains("tenant=\"acme\"") && line.contains("connection="),
            "{line}"
        );
        let digest = line.split("args_digest=").nth(1).unwrap_or_default();
        assert!(digest.len() >= 64, "no digest: {line}");
    }
    let all = lines.join("\n");
    assert!(
        !all.contains("canary-7c1d"),
        "argument values in the log: {all}"
    );
}

/// A confirmation token is never at rest: the store keeps only its SHA-256 (the pending
/// action's key), the approval link names that id, and the id confirms nothing over MCP. The
/// log of a preview and its confirmation holds no token either.
#[tokio::test(flavor = "current_thread")]
async fn confirmation_tokens_are_kept_only_as_digests() {
    use sha2::Digest as _;
    use store::Store as _;
    let captured = crate::support::LogCapture::default();
    let _guard = captured.install();
    let n = Notes::on(crate::support::store::Backend::Sqlite, Limits::default())
        .await
        .unwrap();
    let c = n.client();
    let preview = prepared_send(&c).await;
    let token = preview.structured()["confirm_token"]
        .as_str()
        .unwrap()
        .to_owned();
    let id: String = sha2::Sha256::digest(token.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let stored = n
        .app
        .store
        .query(store::Query::partition("acme#pending"))
        .await
        .unwrap();
    assert_eq!(stored.items.len(), 1);
    let (key, item) = &stored.items[0];
    assert_eq!(key.sk, id, "stored under the token's digest");
    assert!(
        !format!("{item:?}").contains("cfm_"),
        "the token is stored: {item:?}"
    );
    let by_id = c
        .call_tool("confirm_action", json!({"confirm_token": id, "confirm_summary": preview.structured()["confirm_summary"]}))
        .await;
    assert!(
        by_id.is_error() && n.outbox().await.is_empty(),
        "the digest confirmed: {}",
        by_id.text()
    );
    let done = c.call_tool("confirm_action", confirm_args(&preview)).await;
    assert!(!done.is_error(), "{}", done.text());
    let logs = captured.lines().join("\n");
    assert!(!logs.contains(&token), "the token reached the log: {logs}");
}

/// Each effect class counts in its own bucket: reads used up leave writes their own limit; and
/// the classes that reach people are the strictest by default (wake below notify below write
/// below read).
async fn a_class_used_up_leaves_the_others_their_limits(n: Notes) {
    let c = n.client();
    let note = new_note(&c, "Kept", "x").await;
    let read_limit = n.limits().per_connection.read as usize;
    let mut refused = None;
    for i in 0..read_limit + 1 {
        let read = c.call_tool("get_note", json!({"note": note})).await;
        if read.is_error() {
            refused = Some((i, read.structured()["code"].clone()));
            break;
        }
    }
    let (at, code) = refused.expect("the reads ran out");
    assert_eq!(code, "rate_limited");
    assert!(at >= read_limit, "refused at read {at} of {read_limit}");
    let write = c
        .call_tool("create_note", json!({"title": "Still", "body": "y"}))
        .await;
    assert!(
        !write.is_error(),
        "reads used up blocked a write: {}",
        write.text()
    );
    let d = Limits::default().per_connection;
    assert!(
        d.wake < d.notify && d.notify < d.write && d.write < d.read,
        "{d:?}"
    );
}
on_every_backend!(
    classes_apart,
    a_class_used_up_leaves_the_others_their_limits,
    |backend| Notes::on(backend, few_reads()),
    threads = 4
);

fn few_reads() -> Limits {
    let mut limits = Limits::default();
    limits.per_connection.read = 3;
    limits
}

/// A tenant's agent access switched off stops that tenant's calls at the door, replays
/// included (a replay is not served past the switch), and no other tenant's.
async fn a_tenant_switch_stops_its_replays_and_no_other_tenant(n: Notes) {
    let c = n.client();
    let args = json!({"title": "Before", "body": "x"});
    assert!(!c.call_tool("create_note", args.clone()).await.is_error());
    let other = writer(&n, "globex", "gus").await;
    // Switching a workspace's agent access needs a member who may (ADR 48).
    n.app
        .directory
        .put_member(
            &store::TenantId::new("acme"),
            &store::MemberId::new("olivia"),
            "owner",
            true,
        )
        .await
        .unwrap();
    let owner = crate::support::cli_actor("acme", "olivia");
    n.app
        .switches
        .set_agent_access(&owner, false)
        .await
        .unwrap();
    let replay = c
        .request(
            "tools/call",
            json!({"name": "create_note", "arguments": args}),
        )
        .await;
    assert_eq!(replay.status, 503, "a replay was served past the switch");
    assert!(replay.header("retry-after").is_some());
    let theirs = other
        .call_tool("create_note", json!({"title": "Globex", "body": "y"}))
        .await;
    assert!(
        !theirs.is_error(),
        "another tenant was stopped: {}",
        theirs.text()
    );
}
on_every_backend!(
    tenant_switch,
    a_tenant_switch_stops_its_replays_and_no_other_tenant,
    |backend| Notes::on(backend, Limits::default()),
    threads = 4
);
