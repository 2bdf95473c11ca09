//! Model checks with `shuttle`: concurrent calls of one connection through the real app, with
//! the scheduler choosing the interleaving at every store operation (each operation atomic, as
//! a backend's are), a hundred schedules per property. What must hold in every schedule: a
//! confirmation consumed once, identical writes committed once, no slot left taken, and no
//! more calls in a connection's slots than it has.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use mcp_pipeline::Toolset;
use mcp_test_client::TestClient;
use serde_json::{Value, json};
use store::Store as _;

use crate::support::model::{self, Deferred, YieldingStore};
use crate::support::{connect, rights_of};

const SCHEDULES: usize = 100;

struct Model {
    store: Arc<YieldingStore>,
    client: Arc<TestClient>,
    connection: String,
    deferred: Deferred,
}

async fn model() -> Model {
    let deferred = Deferred::default();
    let store = Arc::new(YieldingStore::default());
    let app = app::build(
        &model::settings(&deferred),
        store.clone(),
        booking_product::Booking::shared(),
    )
    .unwrap();
    app.directory
        .put_member(
            &store::TenantId::new("acme"),
            &store::MemberId::new("ana"),
            "owner",
            true,
        )
        .await
        .unwrap();
    let rights = rights_of(&app, "acme", "ana").await;
    let (connection, token) = connect(&app, "acme", "ana", rights, Toolset::Full, "model").await;
    let client = Arc::new(
        TestClient::in_process(app.http.clone())
            .with_header("authorization", &format!("Bearer {token}")),
    );
    Model {
        store,
        client,
        connection,
        deferred,
    }
}

/// `calls` sent at once (one task each); their JSON-RPC answers, after deferred work is done.
async fn at_once(m: &Model, calls: Vec<Value>) -> Vec<Value> {
    let tasks: Vec<_> = calls
        .into_iter()
        .map(|call| {
            let client = Arc::clone(&m.client);
            shuttle::future::spawn(async move { client.request("tools/call", call).await.json() })
        })
        .collect();
    let mut answers = Vec::new();
    for task in tasks {
        answers.push(task.await.unwrap());
    }
    model::settle(&m.deferred).await;
    answers
}

async fn count(m: &Model, pk: &str) -> usize {
    let page = m.store.query(store::Query::partition(pk)).await.unwrap();
    page.items.len()
}

async fn audited(m: &Model, action: &str) -> usize {
    crate::support::audit_rows(m.store.as_ref(), "acme", None, 100)
        .await
        .iter()
        .filter(|e| e.action == action && e.outcome == "ok")
        .count()
}

fn customer(i: usize) -> Value {
    json!({"name": "create_customer",
        "arguments": {"name": format!("Customer {i}"), "email": format!("c{i}@example.com")}})
}

fn ok(answer: &Value) -> bool {
    answer["result"]["isError"] == json!(false)
}

fn code(answer: &Value) -> &str {
    answer["result"]["structuredContent"]["code"]
        .as_str()
        .unwrap_or_default()
}

#[test]
fn a_confirmation_sent_three_times_at_once_runs_once() {
    model::check(SCHEDULES, || {
        shuttle::future::block_on(async {
            let m = model().await;
            let created = m
                .client
                .call_tool("create_customer", customer(0)["arguments"].clone())
                .await;
            let handle = created.structured()["customer"]["customer"].clone();
            let preview = m
                .client
                .call_tool("delete_customer", json!({"customer": handle}))
                .await;
            let confirm = json!({"name": "confirm_action", "arguments": {
                    "confirm_token": preview.structured()["confirm_token"],
                    "confirm_summary": preview.structured()["confirm_summary"]}});
            let answers = at_once(&m, vec![confirm; 3]).await;
            assert!(answers.iter().any(ok), "{answers:#?}");
            // The others are told it was decided (or is being decided, or to wait for a
            // slot), never that the customer changed or is missing, which would send a model
            // to read her and delete again.
            for a in answers.iter().filter(|a| !ok(a)) {
                let refused = &a["result"]["structuredContent"];
                let message = refused["message"].as_str().unwrap_or_default();
                let waits = refused.get("retry_after_seconds").is_some();
                assert!(code(a) == "conflict" || waits, "{a}");
                assert!(
                    !message.contains("changed") && code(a) != "not_found",
                    "{a}"
                );
            }
            assert_eq!(audited(&m, "delete_customer").await, 1, "{answers:#?}");
            let pending = m
                .store
                .query(store::Query::partition("acme#pending"))
                .await
                .unwrap();
            let statuses: Vec<_> = pending
                .items
                .iter()
                .filter_map(|(_, i)| i.get("status").and_then(store::Value::as_s))
                .collect();
            assert_eq!(statuses, ["used"], "consumed once, and only once");
        });
    });
}

#[test]
fn identical_writes_at_once_commit_once_and_leave_no_slot_taken() {
    model::check(SCHEDULES, || {
        shuttle::future::block_on(async {
            let m = model().await;
            let answers = at_once(&m, vec![customer(1); 3]).await;
            let executed = answers
                .iter()
                .filter(|a| ok(a) && a["result"]["structuredContent"]["replayed"] != json!(true))
                .count();
            assert_eq!(executed, 1, "{answers:#?}");
            for a in answers.iter().filter(|a| !ok(a)) {
                assert!(matches!(code(a), "conflict" | "rate_limited"), "{a}");
            }
            assert_eq!(count(&m, "acme#customer").await, 1);
            assert_eq!(audited(&m, "create_customer").await, 1);
            let slots = format!("acme#slot#{}", m.connection);
            assert_eq!(count(&m, &slots).await, 0, "a slot was left taken");
        });
    });
}

#[test]
fn different_writes_at_once_hold_the_connections_slots_and_give_them_back() {
    static BOTH_HELD: AtomicUsize = AtomicUsize::new(0);
    model::check(SCHEDULES, || {
        shuttle::future::block_on(async {
            let m = model().await;
            let answers = at_once(&m, (2..6).map(customer).collect()).await;
            let done = answers.iter().filter(|a| ok(a)).count();
            assert!(done >= 1, "{answers:#?}");
            for a in answers.iter().filter(|a| !ok(a)) {
                assert_eq!(code(a), "rate_limited", "{a}");
                let details = &a["result"]["structuredContent"];
                assert_eq!(details["concurrency"], json!(true), "{a}");
            }
            assert_eq!(
                count(&m, "acme#customer").await,
                done,
                "one customer per success"
            );
            assert_eq!(audited(&m, "create_customer").await, done);
            let slots = format!("acme#slot#{}", m.connection);
            assert_eq!(count(&m, &slots).await, 0, "a slot was left taken");
            let most = m.store.most_slots_held();
            assert!(most <= 2, "{most} slots held at once; a connection has 2");
            if most == 2 {
                BOTH_HELD.fetch_add(1, Ordering::Relaxed);
            }
        });
    });
    // The schedules did overlap the calls: in some, both slots were held at once.
    assert!(
        BOTH_HELD.load(Ordering::Relaxed) > 0,
        "no schedule ran two calls together"
    );
}
