//! Concurrency slots given back after the answer, in batches (ADR 14, ADR 38), through the real
//! handler on SQLite and on the local DynamoDB server: releases of answers written together go
//! to the store as one transaction, every slot comes back, and a batch the store refuses still
//! gives every slot back, one at a time.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mcp_pipeline::SystemClock;
use serde_json::json;

use crate::support::faults::{Call, Fault, Op};
use crate::support::load::{Ended, Tenant, roomy_limits, sort};
use crate::support::on_every_backend;
use crate::support::store::Backend;

const ROUNDS: usize = 4;

/// Connections reading at once: fewer on the local DynamoDB server, which answers one request
/// at a time and serves the other tests too.
fn connections(backend: Backend) -> usize {
    match backend {
        Backend::Sqlite => 12,
        _ => 4,
    }
}

/// A store call that only gives slots back: a delete of a slot, or a transaction of slots
/// alone (an admission also counts the call in its rate buckets).
fn is_release(call: &Call) -> bool {
    matches!(call.op, Op::Delete | Op::Transact) && call.touches_only("slot")
}

/// Records the slots of every release the store is sent, one number per store call.
fn watch_releases(t: &Tenant) -> Arc<Mutex<Vec<usize>>> {
    let seen: Arc<Mutex<Vec<usize>>> = Arc::default();
    let log = Arc::clone(&seen);
    t.store.watch(move |call| {
        if is_release(call) {
            log.lock().unwrap().push(call.keys.len());
        }
    });
    seen
}

/// `ROUNDS` rounds of one read on every connection at once, each connection's next read sent
/// as soon as its answer is in: how each call ended.
async fn read_in_rounds(t: &Arc<Tenant>) -> Vec<Ended> {
    let clients: Vec<_> = (0..t.connections.len())
        .map(|c| {
            let t = Arc::clone(t);
            tokio::spawn(async move {
                let client = t.world.client(&t.connections[c].1);
                let mut ended = Vec::new();
                for _ in 0..ROUNDS {
                    let params = json!({"name": "find_customers", "arguments": {"query": ""}});
                    ended.push(sort(&client.request("tools/call", params).await));
                }
                ended
            })
        })
        .collect();
    let mut ended = Vec::new();
    for client in clients {
        ended.extend(client.await.unwrap());
    }
    ended
}

/// Waits until no connection of `t` holds a slot: every release has landed.
async fn all_slots_given_back(t: &Tenant) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let mut held = 0;
        for (connection, _) in &t.connections {
            held += t.partition(&format!("acme#slot#{connection}")).await.len();
        }
        if held == 0 {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{held} slots were never given back"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Many reads at once: every one served, every slot given back. On SQLite, whose answers come
/// within one pass of the scheduler and which fails no call on its own, each slot is sent once,
/// and fewer store calls give them back than there were calls, at least one carrying the slots
/// of several calls. On DynamoDB answers come milliseconds apart and releases seldom meet.
/// (That a client waiting for its answers is not refused by its own release is
/// `gates::call_path::a_sequential_client_is_not_refused_by_its_own_release`.)
async fn releases_of_answers_written_together_share_a_transaction(t: Tenant) {
    let seen = watch_releases(&t);
    let t = Arc::new(t);
    let ended = read_in_rounds(&t).await;
    assert!(ended.iter().all(|e| *e == Ended::Done), "{ended:?}");
    all_slots_given_back(&t).await;
    if t.world.backend != Backend::Sqlite {
        return;
    }
    let releases = seen.lock().unwrap().clone();
    let calls = t.connections.len() * ROUNDS;
    let given_back: usize = releases.iter().sum();
    assert_eq!(given_back, calls, "one slot per call: {releases:?}");
    assert!(
        releases.len() < calls && releases.iter().any(|&n| n > 1),
        "releases were not gathered: {releases:?}"
    );
}

on_every_backend!(
    batched,
    releases_of_answers_written_together_share_a_transaction,
    // Every read must be served: no bound a slow local DynamoDB server would meet.
    |backend| Tenant::waiting(
        backend,
        roomy_limits(),
        Duration::from_secs(20),
        connections(backend),
        Arc::new(SystemClock)
    ),
    threads = 2
);

/// The store refuses every transaction of releases: each slot still goes back on its own, and
/// the next reads of every connection are served. On SQLite, where batches form (see above).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_batch_gives_each_slot_back_alone() {
    let sqlite = Backend::Sqlite;
    let t = Tenant::on(
        sqlite,
        roomy_limits(),
        connections(sqlite),
        Arc::new(SystemClock),
    );
    let t = t.await.expect("SQLite is always available");
    let seen = watch_releases(&t);
    t.store.on(
        |call| is_release(call) && call.op == Op::Transact,
        Fault::Conflict,
        usize::MAX,
    );
    let t = Arc::new(t);
    let ended = read_in_rounds(&t).await;
    assert!(ended.iter().all(|e| *e == Ended::Done), "{ended:?}");
    all_slots_given_back(&t).await;
    let releases = seen.lock().unwrap().clone();
    let refused = releases.iter().filter(|&&n| n > 1).count();
    assert!(refused > 0, "no batch was sent: {releases:?}");
    let alone = releases.iter().filter(|&&n| n == 1).count();
    let calls = t.connections.len() * ROUNDS;
    assert_eq!(alone, calls, "each slot alone once: {releases:?}");
    assert!(t.store.faults_met() >= refused);
}

/// The store panics while it gives a slot back (a bug in a driver), with the connection's next
/// call waiting for that release: the call is answered (told its other call still runs, until
/// that slot's lease ends) instead of tripping over the sending that ended half-way, and the
/// other connection is not touched.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_that_panics_leaves_no_admission_waiting() {
    let t = Tenant::on(Backend::Sqlite, roomy_limits(), 2, Arc::new(SystemClock));
    let t = t.await.expect("SQLite is always available");
    let first = t.connections[0].1.clone();
    let panics = Fault::PanicAfter(Duration::from_millis(300));
    t.store.on(is_release, panics, 1);
    let read = |token: &str| {
        let client = t.world.client(token);
        async move {
            let params = json!({"name": "find_customers", "arguments": {"query": ""}});
            let answer = tokio::time::timeout(
                Duration::from_secs(10),
                client.request("tools/call", params),
            );
            sort(&answer.await.expect("the call was answered in time"))
        }
    };
    assert_eq!(read(&first).await, Ended::Done);
    let deadline = Instant::now() + Duration::from_secs(10);
    while t.store.faults_met() == 0 {
        assert!(
            Instant::now() < deadline,
            "the release never reached the store"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let next = read(&first).await;
    assert_eq!(next, Ended::Wait("rate_limited".into()));
    let other = t.connections[1].1.clone();
    for _ in 0..3 {
        assert_eq!(read(&other).await, Ended::Done);
    }
}
