//! Store round trips per call, counted with `CountingStore` around SQLite on the real pipeline
//! with every gate on (authentication, both switches, the creator's live rights, loop brake,
//! replay, rate buckets, concurrency slots, audit).
//!
//! The budget is the number of round trips the caller waits for one after the other
//! (`RoundTrips::sequential`): every store call gets a simulated network latency, so calls
//! the pipeline issues together (one batch for the credential and the gate items, the
//! admission transaction beside the tool's read, a slot release beside the commit) overlap
//! and count once. Budgets (the performance issue): `tools/list` 1, a read 2, a silent write
//! 3, a two-step preview 3, a confirmation 3. Each call is also held to the store calls it
//! makes in all (what it costs), as measured when this test was written: lower a number
//! when the code improves; never raise one to make a change pass.
//!
//! A read gives its concurrency slot back after the answer (`Settings::defer`); the test
//! holds that work, counts the call, then runs it and checks the slot was given back.
//! The first call of a connection in each hour also records when it was last used (one
//! update); the setup makes it, so that the counts below are those of every other call.

use std::sync::{Arc, Mutex};

use mcp_pipeline::BoxFuture;
use serde_json::{Value, json};
use store::{CountingStore, Key, RoundTrips, Store as _};
use store_sqlite::SqliteStore;

/// Simulated store latency: long against this machine's scheduling jitter, short for a test.
const LATENCY: std::time::Duration = std::time::Duration::from_millis(15);

type Held = Arc<Mutex<Vec<BoxFuture<'static, ()>>>>;

struct Counted {
    store: Arc<CountingStore<SqliteStore>>,
    client: mcp_test_client::TestClient,
    after_answer: Held,
    tenant: String,
    connection: String,
    _dir: tempfile::TempDir,
}

async fn counted_demo() -> Counted {
    let (sqlite, dir) = crate::support::store::fresh_sqlite("gatehouse.db");
    let latency: store::Latency = Arc::new(|| Box::pin(tokio::time::sleep(LATENCY)));
    let store = Arc::new(CountingStore::new(sqlite).with_latency(latency));
    let after_answer: Held = Arc::default();
    let held = Arc::clone(&after_answer);
    let settings = app::Settings {
        backend: "sqlite".into(),
        defer: Some(mcp_pipeline::Defer(Arc::new(move |work| {
            held.lock().unwrap().push(work);
        }))),
        ..app::Settings::default()
    };
    let app = app::build(&settings, store.clone(), booking_product::Booking::shared()).unwrap();
    let seeded = app::demo::seed_if_empty(&app, chrono::Utc::now()).await;
    let Ok(app::demo::Seeded::Now(demo)) = seeded else {
        panic!("an empty store is seeded: {seeded:?}")
    };
    let owner = demo
        .iter()
        .find(|c| c.tenant == "acme" && c.role == "owner" && c.toolset == "full")
        .expect("acme's owner has a full connection");
    let client = mcp_test_client::TestClient::in_process(app.http.clone())
        .with_header("authorization", &format!("Bearer {}", owner.token));
    let connection = owner.connection.clone();
    let counted = Counted {
        store,
        client,
        after_answer,
        tenant: "acme".into(),
        connection,
        _dir: dir,
    };
    counted.client.list_tools().await;
    counted.run_after_answer().await;
    counted
}

impl Counted {
    async fn call(&self, tool: &str, arguments: Value) -> (Value, RoundTrips) {
        self.store.reset();
        let result = self.client.call_tool(tool, arguments).await;
        let trips = self.store.round_trips();
        assert!(!result.is_error(), "{tool}: {}", result.text());
        // What was left for after the answer: run it, and check that no slot is still held.
        self.run_after_answer().await;
        for slot in ["0", "1"] {
            let key = Key::new(format!("{}#slot#{}", self.tenant, self.connection), slot);
            assert_eq!(
                self.store.inner().get(&key).await.unwrap(),
                None,
                "{tool}: concurrency slot {slot} is still held after the call"
            );
        }
        (result.structured().clone(), trips)
    }

    async fn run_after_answer(&self) {
        let work: Vec<_> = std::mem::take(&mut *self.after_answer.lock().unwrap());
        for w in work {
            w.await;
        }
    }
}

fn row(what: &str, t: RoundTrips) -> String {
    format!(
        "round trips [{what}]: {} sequential, {} store calls (get {}, batch_get {}, query {}, put {}, update {}, delete {}, transact_write {})",
        t.sequential,
        t.total(),
        t.get,
        t.batch_get,
        t.query,
        t.put,
        t.update,
        t.delete,
        t.transact_write
    )
}

#[tokio::test]
async fn store_calls_per_tool_call_do_not_grow() {
    let w = counted_demo().await;
    // (what, counted, sequential budget, store calls in all when written)
    let mut seen: Vec<(&str, RoundTrips, u64, u64)> = Vec::new();

    w.store.reset();
    let listed = w.client.list_tools().await;
    assert!(listed["tools"].as_array().is_some_and(|t| !t.is_empty()));
    seen.push(("tools/list", w.store.round_trips(), 1, 1));

    let (_, t) = w.call("get_server_status", json!({})).await;
    seen.push(("read: get_server_status", t, 2, 2));

    let (found, t) = w.call("find_customers", json!({"query": "a"})).await;
    seen.push(("read: find_customers", t, 2, 3));
    let customer = found["customers"][0]["customer"]
        .as_str()
        .unwrap()
        .to_owned();

    let (_, t) = w.call("get_customer", json!({"customer": customer})).await;
    seen.push(("read: get_customer", t, 2, 3));

    let (bookings, t) = w.call("find_bookings", json!({})).await;
    seen.push(("read: find_bookings", t, 2, 3));
    let booking = bookings["bookings"][0]["booking"]
        .as_str()
        .unwrap()
        .to_owned();

    let (_, t) = w
        .call(
            "add_booking_note",
            json!({"booking": booking, "note": "Gate code 4711"}),
        )
        .await;
    seen.push(("silent write: add_booking_note", t, 3, 5));

    let (created, t) = w
        .call(
            "create_customer",
            json!({"name": "Round Trip", "email": "round.trip@example.com"}),
        )
        .await;
    seen.push(("silent write: create_customer", t, 3, 5));
    let new_customer = created["customer"]["customer"].as_str().unwrap().to_owned();

    let (preview, t) = w
        .call("delete_customer", json!({"customer": new_customer}))
        .await;
    assert_eq!(preview["status"], "PREVIEW");
    seen.push(("two-step preview: delete_customer", t, 3, 5));

    let (_, t) = w
        .call(
            "confirm_action",
            json!({"confirm_token": preview["confirm_token"], "confirm_summary": preview["confirm_summary"]}),
        )
        .await;
    seen.push(("confirmation: confirm_action", t, 3, 5));

    for (what, trips, _, _) in &seen {
        eprintln!("{}", row(what, *trips));
    }
    for (what, trips, budget, calls) in &seen {
        assert!(
            trips.sequential <= *budget,
            "{what} waits for {} store round trips, over its budget of {budget}",
            trips.sequential
        );
        assert!(
            trips.total() <= *calls,
            "{what} makes {} store calls, more than the {calls} it made when this test was written",
            trips.total()
        );
    }
}

/// Sequential budgets per effect: what a caller waits for.
const READ: u64 = 2;
const SILENT_WRITE: u64 = 3;
const PREVIEW: u64 = 3;
const CONFIRMATION: u64 = 3;

/// Every tool the demo connection lists, each held to the budget of its effect: a new tool
/// without a row here fails, and so does a tool that adds a round trip.
#[tokio::test]
async fn every_tool_keeps_its_round_trip_budget() {
    let w = counted_demo().await;
    let mut checked: Vec<(String, RoundTrips, u64)> = Vec::new();
    let mut run = async |tool: &str, arguments: Value, budget: u64| -> Value {
        let (structured, trips) = w.call(tool, arguments).await;
        checked.push((tool.to_owned(), trips, budget));
        structured
    };
    let s = |v: &Value| v.as_str().expect("a text field").to_owned();

    run("get_server_status", json!({}), READ).await;
    let techs = run("list_technicians", json!({}), READ).await;
    let tech = s(&techs["technicians"][0]["technician"]);
    run("find_customers", json!({"query": "a"}), READ).await;
    let created = run(
        "create_customer",
        json!({"name": "Budget Customer", "email": "budget.customer@example.com"}),
        SILENT_WRITE,
    )
    .await;
    let customer = s(&created["customer"]["customer"]);
    let got = run("get_customer", json!({"customer": customer}), READ).await;
    run(
        "update_customer",
        json!({"customer": customer, "version": got["customer"]["version"], "phone": "+1 555 0100"}),
        SILENT_WRITE,
    )
    .await;
    run("find_bookings", json!({}), READ).await;
    run(
        "find_available_slots",
        json!({"technician": tech, "date": "2055-06-07", "duration_minutes": 60}),
        READ,
    )
    .await;
    let draft = |start: &str| {
        json!({"customer": customer, "technician": tech, "service": "boiler service",
               "start": start, "zone": "Europe/Berlin", "duration_minutes": 90})
    };
    let booking = s(
        &run("create_booking", draft("2055-06-07 09:00"), SILENT_WRITE).await["booking"]["booking"],
    );
    // Reads between the measured calls, with their after-answer work run at once.
    let current = async |w: &Counted| -> Value {
        let got = w
            .client
            .call_tool("get_booking", json!({"booking": booking}))
            .await;
        w.run_after_answer().await;
        got.structured()["booking"].clone()
    };
    let b = run("get_booking", json!({"booking": booking}), READ).await["booking"].clone();
    run(
        "update_booking",
        json!({"booking": booking, "version": b["version"], "service": "boiler check"}),
        SILENT_WRITE,
    )
    .await;
    run(
        "add_booking_note",
        json!({"booking": booking, "note": "Gate code 4711"}),
        SILENT_WRITE,
    )
    .await;
    let confirm_args = |p: &Value| json!({"confirm_token": p["confirm_token"], "confirm_summary": p["confirm_summary"]});
    let reject_args = |p: &Value| json!({"confirm_token": p["confirm_token"]});

    let b = current(&w).await;
    let p = run(
        "send_booking_confirmation",
        json!({"booking": booking, "version": b["version"]}),
        PREVIEW,
    )
    .await;
    run("confirm_action", confirm_args(&p), CONFIRMATION).await;
    let b = current(&w).await;
    let p = run(
        "reschedule_booking",
        json!({"booking": booking, "version": b["version"], "start": "2055-06-08 10:00", "zone": "Europe/Berlin"}),
        PREVIEW,
    )
    .await;
    run("reject_action", reject_args(&p), CONFIRMATION).await;
    let p = run(
        "mute_booking_alerts",
        json!({"booking": booking, "hours": 24}),
        PREVIEW,
    )
    .await;
    run("confirm_action", confirm_args(&p), CONFIRMATION).await;
    let p = run(
        "page_technician",
        json!({"technician": tech, "message": "Burst pipe, please call"}),
        PREVIEW,
    )
    .await;
    run("reject_action", reject_args(&p), CONFIRMATION).await;
    let b = current(&w).await;
    let p = run(
        "cancel_booking",
        json!({"booking": booking, "version": b["version"]}),
        PREVIEW,
    )
    .await;
    run("reject_action", reject_args(&p), CONFIRMATION).await;
    let p = run(
        "cancel_bookings",
        json!({"customer": customer, "expected_count": 1}),
        PREVIEW,
    )
    .await;
    run("reject_action", reject_args(&p), CONFIRMATION).await;

    let second =
        run("create_booking", draft("2055-06-09 13:00"), SILENT_WRITE).await["booking"].clone();
    let p = run(
        "delete_booking",
        json!({"booking": second["booking"], "version": second["version"]}),
        PREVIEW,
    )
    .await;
    run("confirm_action", confirm_args(&p), CONFIRMATION).await;

    let quote = run(
        "create_quote",
        json!({"customer": customer, "lines": [{"description": "Filter", "quantity": "3", "unit_price": "19.99"}]}),
        SILENT_WRITE,
    )
    .await["quote"]
        .clone();
    let q = run("get_quote", json!({"quote": quote["quote"]}), READ).await["quote"].clone();
    run("find_quotes", json!({"state": "draft"}), READ).await;
    let q = run(
        "update_quote",
        json!({"quote": quote["quote"], "version": q["version"], "lines": [{"description": "Filter", "quantity": "2", "unit_price": "19.99"}]}),
        SILENT_WRITE,
    )
    .await["quote"]
        .clone();
    let sent = run(
        "send_quote",
        json!({"quote": quote["quote"], "version": q["version"]}),
        PREVIEW,
    )
    .await;
    assert!(
        sent["approval_url"].is_string(),
        "money is approved in the product: {sent}"
    );

    let gone = run(
        "create_customer",
        json!({"name": "Budget Leaver", "email": "budget.leaver@example.com"}),
        SILENT_WRITE,
    )
    .await;
    let p = run(
        "delete_customer",
        json!({"customer": gone["customer"]["customer"]}),
        PREVIEW,
    )
    .await;
    run("confirm_action", confirm_args(&p), CONFIRMATION).await;
    run("list_recent_changes", json!({}), READ).await;

    for (tool, trips, _) in &checked {
        eprintln!("{}", row(tool, *trips));
    }
    let over: Vec<String> = checked
        .iter()
        .filter(|(_, trips, budget)| trips.sequential > *budget)
        .map(|(tool, trips, budget)| format!("{tool}: {} > {budget}", trips.sequential))
        .collect();
    assert!(over.is_empty(), "over budget: {over:?}");
    let listed = w.client.list_tools().await;
    let missing: Vec<String> = listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| s(&t["name"]))
        .filter(|name| !checked.iter().any(|(tool, ..)| tool == name))
        .collect();
    assert!(
        missing.is_empty(),
        "tools without a round-trip budget check: {missing:?}"
    );
}
