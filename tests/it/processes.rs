//! Several processes on one store, as deployments run: two `gatehouse serve` on one data
//! folder (a laptop's `serve` beside the `stdio` processes of desktop clients), three on one
//! table of the local DynamoDB server (Lambda instances). Identical writes and one
//! confirmation raced across them run once; one connection's limits hold across them.

use std::net::SocketAddr;

use mcp_test_client::TestClient;
use serde_json::{Value, json};

use crate::support::processes::{Place, Running, cli_token_on, start_serve_on};
use crate::support::store::fresh_table;

/// `count` servers on `place` and a client of each with one connection's token.
fn servers(place: &Place, count: usize) -> (Vec<Running>, Vec<TestClient>) {
    let token = cli_token_on(place);
    let bearer = format!("Bearer {token}");
    let (running, addrs): (Vec<Running>, Vec<SocketAddr>) =
        (0..count).map(|_| start_serve_on(place)).unzip();
    let clients = addrs
        .into_iter()
        .map(|a| TestClient::http(a).with_header("authorization", &bearer))
        .collect();
    (running, clients)
}

/// The places to race on: a data folder (2 processes), and a table (3) when the DynamoDB
/// server is there.
async fn places() -> Vec<(Place, usize, Option<tempfile::TempDir>)> {
    let dir = tempfile::tempdir().unwrap();
    let mut places = vec![(Place::Folder(dir.path().join("data")), 2, Some(dir))];
    if let Some(endpoint) = crate::support::dynamodb_endpoint("process races [dynamodb]") {
        let (_, table) = fresh_table(&endpoint, "races").await;
        places.push((Place::Table { table, endpoint }, 3, None));
    }
    places
}

/// Sends `call` to every client `rounds` times at once; the JSON-RPC answers.
async fn race(clients: &[TestClient], call: &Value, rounds: usize) -> Vec<Value> {
    let sends = (0..rounds)
        .flat_map(|_| clients.iter())
        .map(|c| async move { c.request("tools/call", call.clone()).await.json() });
    futures_util::future::join_all(sends).await
}

async fn audit_ok(place: &Place, action: &str) -> usize {
    let store = place.store();
    crate::support::audit_rows(store.as_ref(), "acme", None, 100)
        .await
        .iter()
        .filter(|e| e.action == action && e.outcome == "ok")
        .count()
}

async fn live_customers(place: &Place) -> Vec<store::Item> {
    let page = place
        .store()
        .query(store::Query::partition("acme#customer"))
        .await
        .unwrap();
    page.items.into_iter().map(|(_, item)| item).collect()
}

/// An answer is fine when it is the write's result (first or replayed) or an error that asks
/// to come back (the same call still running elsewhere, a busy slot or store).
fn settled(answer: &Value) -> Result<bool, String> {
    let result = &answer["result"];
    if result["isError"] == json!(false) {
        return Ok(result["structuredContent"]["replayed"] != json!(true));
    }
    let code = result["structuredContent"]["code"]
        .as_str()
        .unwrap_or_default();
    match code {
        "conflict" | "rate_limited" | "unavailable" => Ok(false),
        _ => Err(format!("an answer that is neither: {answer}")),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn identical_writes_raced_across_processes_run_once() {
    for (place, count, _dir) in places().await {
        let (_running, clients) = servers(&place, count);
        let call = json!({"name": "create_customer",
            "arguments": {"name": "Grace Hopper", "email": "grace@example.com"}});
        let answers = race(&clients, &call, 4).await;
        let executed = answers
            .iter()
            .map(settled)
            .collect::<Result<Vec<bool>, String>>()
            .unwrap();
        assert_eq!(
            executed.iter().filter(|e| **e).count(),
            1,
            "{place:?}: one answer executed the write: {answers:#?}"
        );
        assert_eq!(live_customers(&place).await.len(), 1, "{place:?}");
        assert_eq!(audit_ok(&place, "create_customer").await, 1, "{place:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_confirmation_raced_across_processes_runs_once() {
    for (place, count, _dir) in places().await {
        let (_running, clients) = servers(&place, count);
        let created = clients[0]
            .call_tool(
                "create_customer",
                json!({"name": "Ada", "email": "ada@example.com"}),
            )
            .await;
        let customer = created.structured()["customer"]["customer"].clone();
        let preview = clients[0]
            .call_tool("delete_customer", json!({"customer": customer}))
            .await;
        let confirm = json!({"name": "confirm_action", "arguments": {
            "confirm_token": preview.structured()["confirm_token"],
            "confirm_summary": preview.structured()["confirm_summary"]}});
        let answers = race(&clients, &confirm, 3).await;
        let done = answers
            .iter()
            .filter(|a| a["result"]["isError"] == json!(false))
            .count();
        assert!(
            done >= 1,
            "{place:?}: no confirmation succeeded: {answers:#?}"
        );
        assert_eq!(
            audit_ok(&place, "delete_customer").await,
            1,
            "{place:?}: deleted once: {answers:#?}"
        );
        let active = live_customers(&place)
            .await
            .iter()
            .filter(|c| c.get("state").and_then(store::Value::as_s) == Some("active"))
            .count();
        assert_eq!(active, 0, "{place:?}");
    }
}

/// Three processes on one table count one connection's reads in one bucket: together they
/// admit the limit once (the data-folder case: `embedded_store`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connections_limit_holds_across_processes_on_one_table() {
    let Some(endpoint) = crate::support::dynamodb_endpoint("process limits [dynamodb]") else {
        return;
    };
    let (_, table) = fresh_table(&endpoint, "limits").await;
    let place = Place::Table { table, endpoint };
    let (_running, clients) = servers(&place, 3);
    let limit = mcp_pipeline::Limits::default().per_connection.read as usize;
    // 124 calls through the local DynamoDB server, which a loaded machine slows: a window with
    // room for them, lest it turn and refill the bucket half-way.
    crate::embedded_store::fresh_window(45).await;
    let mut admitted = [0usize; 3];
    let mut refusals = Vec::new();
    // Calls the processes could not take to the store in time (a loaded machine): whether
    // they spent a token is unknown.
    let mut unknown = 0;
    for i in 0..limit + 4 {
        let call = clients[i % 3]
            .call_tool("get_server_status", json!({}))
            .await;
        if call.is_error() {
            let code = call.structured()["code"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            if code == "unavailable" {
                unknown += 1;
                continue;
            }
            refusals.push((code, call.text().to_owned()));
        } else {
            // A refusal that is not the limit's (the local server failing a call) is named.
            assert!(
                refusals.is_empty(),
                "a call was admitted after a refusal: {refusals:?}"
            );
            admitted[i % 3] += 1;
        }
    }
    let sum = admitted.iter().sum::<usize>();
    assert!(
        sum <= limit && sum + unknown >= limit,
        "admitted {admitted:?}, {unknown} unknown"
    );
    assert!(
        admitted.iter().all(|a| *a > 0),
        "every process served: {admitted:?}"
    );
    // The first refusals are the limit's; repeating them then trips the loop brake.
    // Past the limit, calls are refused (unless a loaded machine made them all unknown).
    assert!(!refusals.is_empty() || unknown >= 4, "{unknown} unknown");
    for (code, text) in refusals.iter().take(2) {
        assert_eq!(code, "rate_limited", "{text}");
    }
}
