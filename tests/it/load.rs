//! A hot tenant and a soak, sized for CI (catalogue L01 and L04): many calls of one tenant at
//! once, through the real handler on SQLite and on the local DynamoDB server, with the store
//! throttling some of them; and a mixed run with client retries and abandoned calls, then a
//! reconciliation of what the store holds. Slow on purpose (seconds, not minutes): the full
//! sizes (2,000 writes/s for five minutes, a one-hour soak) belong to `tests/bench`, not to a
//! 2-core CI machine.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use mcp_pipeline::{ClassLimits, FixedClock, Limits, SystemClock};
use serde_json::json;

use crate::support::faults::{Fault, Op};
use crate::support::load::{Dice, Ended, Tenant, roomy_limits, sort};
use crate::support::on_every_backend;
use crate::support::store::Backend;

/// Far more writes than the tenant may make: each connection's write bucket is small, the
/// tenant's is large enough to be sharded (ADR 6).
fn hot_limits() -> Limits {
    let roomy = roomy_limits();
    Limits {
        per_connection: ClassLimits {
            write: 10,
            ..roomy.per_connection
        },
        ..roomy
    }
}

/// From now on every `n`th call of `op` is throttled by the store.
fn throttle_every(t: &Tenant, op: Op, n: usize) {
    let seen = AtomicUsize::new(0);
    let picks = move |c: &crate::support::faults::Call| {
        c.op == op && seen.fetch_add(1, Ordering::SeqCst) % n == n - 1
    };
    t.store.on(picks, Fault::Throttle, usize::MAX);
}

/// The `q`th quantile of `times` (sorted here).
fn quantile(times: &mut [Duration], q: f64) -> Duration {
    times.sort();
    let at = ((times.len() as f64 - 1.0) * q).round() as usize;
    times[at]
}

/// One tenant, 16 clients on 8 connections on SQLite (4 on 2 on the local DynamoDB server,
/// which answers one request at a time and serves the other tests too), each writing as fast
/// as it is answered, the store throttling every 6th transaction and every 13th batch read:
/// every answer is a success or a wait (a tool error with `retry_after_seconds`, or 503 with
/// `Retry-After`), never a 500 or `internal`; what was acknowledged is stored once, and every
/// stored write has its audit row (a write answered `unavailable` may have landed: its outcome
/// is unknown to the client, whose retry would be answered by the replay); the tenant's bucket
/// is spread over shards; and every call ends within the tool deadline.
async fn a_hot_tenant_is_told_to_wait_never_failed(t: Tenant) {
    let (clients_n, per_client) = if t.world.backend == Backend::Dynamodb {
        (4, 8)
    } else {
        (16, 40)
    };
    throttle_every(&t, Op::Transact, 6);
    throttle_every(&t, Op::BatchGet, 13);
    let t = Arc::new(t);
    let mut clients = Vec::new();
    for c in 0..clients_n {
        let t = Arc::clone(&t);
        clients.push(tokio::spawn(async move {
            let client = t.world.client(&t.connections[c % (clients_n / 2)].1);
            let mut ended = Vec::new();
            for i in 0..per_client {
                let args = json!({"name": "Hot", "email": format!("hot-{c}-{i}@example.com")});
                let params = json!({"name": "create_customer", "arguments": args});
                let started = Instant::now();
                let answer = client.request("tools/call", params).await;
                ended.push((sort(&answer), started.elapsed()));
            }
            ended
        }));
    }
    let mut tally: BTreeMap<Ended, usize> = BTreeMap::new();
    let mut times = Vec::new();
    for client in clients {
        for (ended, took) in client.await.unwrap() {
            *tally.entry(ended).or_default() += 1;
            times.push(took);
        }
    }
    let (p50, p99) = (quantile(&mut times, 0.5), quantile(&mut times, 0.99));
    eprintln!(
        "hot tenant [{:?}]: {tally:?}, p50 {p50:?}, p99 {p99:?}",
        t.world.backend
    );
    let done = tally.get(&Ended::Done).copied().unwrap_or(0);
    assert!(
        tally.keys().all(|e| !matches!(e, Ended::Refused(_))),
        "{tally:?}"
    );
    assert!(
        done > 0 && tally.contains_key(&Ended::Wait("rate_limited".into())),
        "{tally:?}"
    );
    assert!(t.store.faults_met() > 0);
    assert!(
        *times.last().unwrap() < Duration::from_secs(20),
        "every call ended in time"
    );
    t.store.heal();
    let stored = t.partition("acme#customer").await.len();
    let unknown = tally
        .get(&Ended::Wait("unavailable".into()))
        .copied()
        .unwrap_or(0);
    assert!(
        (done..=done + unknown).contains(&stored),
        "{stored} stored, {tally:?}"
    );
    assert_eq!(t.audited("create_customer", "ok").await, stored);
    let mut shards = 0;
    for s in 0..8 {
        shards += usize::from(
            !t.partition(&format!("acme#rate#tenant~{s}"))
                .await
                .is_empty(),
        );
    }
    assert!(
        t.partition("acme#rate#tenant").await.is_empty(),
        "no unsharded bucket"
    );
    assert!(
        shards >= 2,
        "the tenant's bucket spread over {shards} shards"
    );
}
on_every_backend!(
    hot_tenant,
    a_hot_tenant_is_told_to_wait_never_failed,
    // The time stands still for the server: a rate window ending during the test (they are
    // aligned to the minute) would refill every bucket, and no call would be told to wait.
    |backend| Tenant::on(
        backend,
        hot_limits(),
        8,
        Arc::new(FixedClock::starting_now())
    ),
    threads = 2
);

/// What one soak client saw, for the reconciliation.
#[derive(Debug, Default)]
struct Seen {
    /// Emails whose creation was acknowledged (customer handle).
    created: BTreeMap<String, String>,
    /// Emails of creations abandoned half-way, or never answered but with a wait: stored at
    /// most once.
    abandoned: Vec<String>,
    /// Emails whose customer's deletion was acknowledged.
    deleted: Vec<String>,
    /// Emails whose customer's deletion was confirmed but only ever answered with a wait: the
    /// deletion may have landed (its answer lost) or not.
    maybe_deleted: Vec<String>,
    calls: usize,
}

/// How a deletion confirmed twice at once ended, as far as the client can tell.
#[derive(Debug, PartialEq)]
enum Deletion {
    Done,
    NotDone,
    /// Every answer was a wait: a confirmation may have executed and lost its answer.
    Unknown,
}

/// A `tools/call`, sent again (up to five times, a little apart) while the answer says to wait,
/// as a careful client does: its last answer and how it ended.
async fn call_patiently(
    client: &mcp_test_client::TestClient,
    params: serde_json::Value,
) -> (mcp_test_client::RawResponse, Ended) {
    let mut attempts = 0;
    loop {
        let answer = client.request("tools/call", params.clone()).await;
        let ended = sort(&answer);
        attempts += 1;
        if attempts == 5 || !matches!(ended, Ended::Wait(_) | Ended::Door(_)) {
            return (answer, ended);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// `create_customer` for `email`, retried while told to wait: the customer's handle when done,
/// else how the last attempt ended.
async fn create(client: &mcp_test_client::TestClient, email: &str) -> Result<String, Ended> {
    let args = json!({"name": "Soak", "email": email});
    let params = json!({"name": "create_customer", "arguments": args});
    let (answer, ended) = call_patiently(client, params).await;
    if ended != Ended::Done {
        return Err(ended);
    }
    let body = answer.json();
    let customer = &body["result"]["structuredContent"]["customer"]["customer"];
    Ok(customer.as_str().expect("a handle").to_owned())
}

/// Whether a refused confirmation says the action was decided already (by the other one).
fn decided_already(answer: &mcp_test_client::RawResponse) -> bool {
    let refused = &answer.json()["result"]["structuredContent"];
    let message = refused["message"].as_str().unwrap_or_default();
    refused["code"] == "conflict" && message.contains("already confirmed")
}

/// The customer deleted in two steps, the confirmation sent twice at once (each retried while
/// told to wait). At most one confirmation executes it; the other is told it was decided (or
/// both are, when the answer of the one that executed was lost).
async fn delete_twice(client: &mcp_test_client::TestClient, customer: &str) -> Deletion {
    let params = json!({"name": "delete_customer", "arguments": {"customer": customer}});
    let (preview, ended) = call_patiently(client, params).await;
    if ended != Ended::Done {
        return Deletion::NotDone;
    }
    let preview = preview.json()["result"]["structuredContent"].clone();
    let params = json!({"name": "confirm_action", "arguments": {
        "confirm_token": preview["confirm_token"], "confirm_summary": preview["confirm_summary"]}});
    let answers = futures_util::future::join(
        call_patiently(client, params.clone()),
        call_patiently(client, params),
    )
    .await;
    let answers = [answers.0, answers.1];
    let done = answers.iter().filter(|(_, e)| *e == Ended::Done).count();
    assert!(done <= 1, "a deletion confirmed twice executed twice");
    let waited = |e: &Ended| matches!(e, Ended::Wait(_) | Ended::Door(_));
    for (answer, ended) in answers
        .iter()
        .filter(|(_, e)| *e != Ended::Done && !waited(e))
    {
        assert!(decided_already(answer), "{ended:?}: {answer:?}");
    }
    if done == 1
        || answers
            .iter()
            .any(|(a, e)| !waited(e) && decided_already(a))
    {
        Deletion::Done
    } else {
        Deletion::Unknown
    }
}

/// One soak client: until `until`, reads, writes (some sent again as a retry), creations
/// abandoned half-way (some retried), and deletions confirmed twice at once.
async fn soak_client(t: Arc<Tenant>, c: usize, mut dice: Dice, until: Instant) -> Seen {
    let client = Arc::new(t.world.client(&t.connections[c % 4].1));
    let mut seen = Seen::default();
    while Instant::now() < until {
        seen.calls += 1;
        let email = format!("soak-{c}-{}@example.com", seen.calls);
        match dice.below(100) {
            0..40 => {
                let params = json!({"name": "find_customers", "arguments": {"query": "Soak"}});
                let ended = sort(&client.request("tools/call", params).await);
                assert!(!matches!(ended, Ended::Refused(_)), "{ended:?}");
            }
            40..70 => {
                let Ok(customer) = create(&client, &email).await else {
                    seen.abandoned.push(email);
                    continue;
                };
                if dice.below(3) == 0 {
                    // Answered by the replay, or told to wait (never refused, never new).
                    match create(&client, &email).await {
                        Ok(again) => {
                            assert_eq!(again, customer, "a retry is answered by the replay")
                        }
                        Err(Ended::Wait(_) | Ended::Door(_)) => {}
                        Err(refused) => panic!("a retry was refused: {refused:?}"),
                    }
                }
                seen.created.insert(email, customer);
            }
            70..85 => {
                let abandoned = tokio::spawn({
                    let (client, email) = (Arc::clone(&client), email.clone());
                    async move { create(&client, &email).await.ok() }
                });
                tokio::time::sleep(Duration::from_millis(dice.below(4))).await;
                abandoned.abort();
                let finished = abandoned.await.ok().flatten();
                let retried = if dice.below(2) == 0 {
                    create(&client, &email).await.ok()
                } else {
                    None
                };
                match retried.or(finished) {
                    Some(customer) => drop(seen.created.insert(email, customer)),
                    None => seen.abandoned.push(email),
                }
            }
            _ => {
                let Ok(customer) = create(&client, &email).await else {
                    seen.abandoned.push(email);
                    continue;
                };
                match delete_twice(&client, &customer).await {
                    Deletion::Done => seen.deleted.push(email.clone()),
                    Deletion::Unknown => seen.maybe_deleted.push(email.clone()),
                    Deletion::NotDone => {}
                }
                seen.created.insert(email, customer);
            }
        }
    }
    seen
}

/// A mixed soak (catalogue L04) of 8 clients on 4 connections (3 on the local DynamoDB
/// server): reads, writes with client retries, creations abandoned half-way, deletions
/// confirmed twice at once. Then the reconciliation: stored customers are the acknowledged
/// creations, less the deletions, with some abandoned ones; no email twice; audit rows of
/// creations = replay records of creations = customers ever stored; deletions' audit rows =
/// acknowledged deletions and those only ever answered with a wait that landed (a loaded
/// store can lose an answer after its commit); no slot held past its lease (a call abandoned
/// while its admission was on its way to the store can leave its slot taken until that
/// admission is undone, ADR 26, at the latest when the lease ends).
async fn a_soak_with_retries_and_abandoned_calls_reconciles(t: Tenant) {
    // The local DynamoDB server answers one request at a time and serves the other tests too.
    let (seconds, clients_n) = if t.world.backend == Backend::Dynamodb {
        (4, 3)
    } else {
        (15, 8)
    };
    let dice = Dice::seeded("soak");
    let t = Arc::new(t);
    let until = Instant::now() + Duration::from_secs(seconds);
    let clients: Vec<_> = (0..clients_n)
        .map(|c| tokio::spawn(soak_client(Arc::clone(&t), c, dice.fork(c as u64), until)))
        .collect();
    let mut seen = Seen::default();
    for client in clients {
        let s = client.await.unwrap();
        seen.calls += s.calls;
        seen.created.extend(s.created);
        seen.abandoned.extend(s.abandoned);
        seen.deleted.extend(s.deleted);
        seen.maybe_deleted.extend(s.maybe_deleted);
    }
    eprintln!(
        "soak [{:?}]: {} calls, {} created, {} abandoned, {} deleted, {} deletions unanswered",
        t.world.backend,
        seen.calls,
        seen.created.len(),
        seen.abandoned.len(),
        seen.deleted.len(),
        seen.maybe_deleted.len()
    );
    reconcile(&t, &seen).await;
}
on_every_backend!(
    soak,
    a_soak_with_retries_and_abandoned_calls_reconciles,
    // The real time: slots left by abandoned calls must be given back when their leases end.
    |backend| Tenant::on(backend, roomy_limits(), 4, Arc::new(SystemClock)),
    threads = 2
);

/// Waits (up to ten seconds) until the audit trail stops growing: a call abandoned by its
/// client is still run by the server, and may commit after the clients have stopped.
async fn settled(t: &Tenant) {
    let (mut before, mut unchanged) = (None, 0);
    for _ in 0..20 {
        let now = (
            t.audited("create_customer", "ok").await,
            t.audited("delete_customer", "ok").await,
        );
        unchanged = if before == Some(now) {
            unchanged + 1
        } else {
            0
        };
        // A second without change: a commit queued at the local DynamoDB server lands sooner.
        if unchanged == 2 {
            return;
        }
        before = Some(now);
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

async fn reconcile(t: &Tenant, seen: &Seen) {
    settled(t).await;
    let text = |item: &store::Item, k: &str| {
        item.get(k)
            .and_then(store::Value::as_s)
            .unwrap_or_default()
            .to_owned()
    };
    let stored: Vec<String> = t
        .partition("acme#customer")
        .await
        .iter()
        .map(|(_, item)| text(item, "email"))
        .collect();
    let unique: std::collections::BTreeSet<&String> = stored.iter().collect();
    assert_eq!(unique.len(), stored.len(), "no customer stored twice");
    for email in seen.created.keys() {
        if !seen.maybe_deleted.contains(email) {
            let deleted = seen.deleted.contains(email);
            assert_eq!(unique.contains(email), !deleted, "{email}");
        }
    }
    // Deletions whose every answer was a wait, and which landed.
    let unanswered = seen.maybe_deleted.iter().filter(|e| !unique.contains(e));
    let deleted = seen.deleted.len() + unanswered.count();
    let from_abandoned = stored.iter().filter(|e| seen.abandoned.contains(e)).count();
    let expected = seen.created.len() - deleted + from_abandoned;
    assert_eq!(
        stored.len(),
        expected,
        "stored = acknowledged - deleted + abandoned that landed"
    );
    let ever = stored.len() + deleted;
    assert_eq!(t.audited("create_customer", "ok").await, ever);
    assert_eq!(t.audited("delete_customer", "ok").await, deleted);
    let mut replays = 0;
    for (connection, _) in &t.connections {
        let records = t.partition(&format!("acme#replay#{connection}")).await;
        replays += records
            .iter()
            .filter(|(k, _)| k.sk.starts_with("create_customer#"))
            .count();
    }
    assert_eq!(replays, ever, "one replay record per stored creation");
    // Releases sent after the last answers land first.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let now = mcp_pipeline::Clock::now(&mcp_pipeline::SystemClock);
    let mut left = 0;
    for (connection, _) in &t.connections {
        for (key, item) in t
            .partition(&mcp_pipeline::keys::slots(
                &store::TenantId::new("acme"),
                &store::ConnectionId::new(connection.as_str()),
            ))
            .await
        {
            let expires = item.get(store::TTL_ATTRIBUTE).and_then(store::Value::as_n);
            let expires: i64 = expires
                .and_then(|n| n.as_str().parse().ok())
                .unwrap_or(i64::MAX);
            assert!(
                expires <= now + 25,
                "slot {key:?} held past a lease: {item:?}"
            );
            left += 1;
        }
    }
    eprintln!(
        "soak [{:?}]: {left} slots of abandoned admissions wait for their lease",
        t.world.backend
    );
}
