//! Limits on calls: rate buckets (per class, per object notified, sharded per tenant),
//! concurrency slots, the deadline of a tool body and the loop brake.

use std::sync::Arc;

use mcp_pipeline::{ClassLimits, Limits};
use serde_json::json;
use store::{Key, Query, Store as _, Value as SV};

use super::{confirm_args, new_note};
use crate::support::notes::Notes;
use crate::support::on_every_backend;

const SMALL: ClassLimits = ClassLimits {
    read: 4,
    expensive_read: 4,
    write: 4,
    notify: 1,
    wake: 1,
};

/// `calls` concurrent `create_note` calls, alternating over two instances of the server sharing
/// the store (as Lambda instances do), numbered from `first`: (admitted, limited). Every
/// refusal is `rate_limited`, with a wait no longer than `window` seconds.
async fn burst(n: &Notes, first: usize, calls: usize, window: i64) -> (usize, usize) {
    let clients = [Arc::new(n.client()), Arc::new(n.second_instance())];
    let mut tasks = Vec::new();
    for i in first..first + calls {
        let client = clients[i % 2].clone();
        tasks.push(tokio::spawn(async move {
            client
                .call_tool(
                    "create_note",
                    json!({"title": format!("Burst {i}"), "body": "x"}),
                )
                .await
        }));
    }
    let (mut admitted, mut limited) = (0, 0);
    for task in tasks {
        let call = task.await.unwrap();
        if call.is_error() {
            assert_eq!(call.structured()["code"], "rate_limited", "{}", call.text());
            let wait = call.structured()["retry_after_seconds"].as_i64().unwrap();
            assert!((1..=window).contains(&wait), "wait {wait}");
            limited += 1;
        } else {
            admitted += 1;
        }
    }
    (admitted, limited)
}

/// Ten times a bucket's size in concurrent calls, over two instances of the server sharing the
/// store (as Lambda instances do): exactly the size is admitted, no update is lost.
async fn a_bucket_of_size_c_admits_exactly_c(n: Notes) {
    let (admitted, limited) = burst(&n, 0, 40, 3600).await;
    assert_eq!(admitted, 4, "the server's clock stands still: one window");
    assert_eq!(admitted + limited, 40);
    assert_eq!(
        n.notes().await.len(),
        admitted,
        "limited calls changed nothing"
    );
}
on_every_backend!(
    rate_limits,
    a_bucket_of_size_c_admits_exactly_c,
    |backend| Notes::on(
        backend,
        Limits {
            window_seconds: 3600,
            per_connection: SMALL,
            per_tenant: SMALL,
            concurrency: false,
            ..Limits::default()
        }
    ),
    threads = 4
);

/// The refill under contention (catalogue Q02): buckets are fixed windows keyed by their start
/// (ADR 6), so a refill is the next window's counter, created by whichever call comes first.
/// Window after window, concurrent calls over two instances admit exactly the bucket's size:
/// a new window is claimed once, never once per racer or per instance; a burst across a
/// window's end admits at most two windows' worth; no limited call leaves a note.
async fn each_window_is_claimed_once(n: Notes) {
    let window = n.limits().window_seconds;
    let mut total = 0;
    for round in 0..3 {
        let (admitted, limited) = burst(&n, round * 20, 20, window).await;
        assert_eq!((admitted, limited), (4, 16), "window {round}");
        total += admitted;
        n.clock.advance(window);
    }
    // Calls started on both sides of a window's end.
    let before = tokio::spawn({
        let n = n.client();
        async move {
            let calls = (0..10).map(|i| {
                n.call_tool(
                    "create_note",
                    json!({"title": format!("Edge {i}"), "body": "x"}),
                )
            });
            futures_util::future::join_all(calls).await
        }
    });
    tokio::task::yield_now().await;
    n.clock.advance(window);
    let (after, _) = burst(&n, 100, 10, window).await;
    let before = before
        .await
        .unwrap()
        .iter()
        .filter(|c| !c.is_error())
        .count();
    assert!((4..=8).contains(&(before + after)), "{before} + {after}");
    total += before + after;
    assert_eq!(
        n.notes().await.len(),
        total,
        "limited calls changed nothing"
    );
}
on_every_backend!(
    windows_claimed_once,
    each_window_is_claimed_once,
    |backend| Notes::on(
        backend,
        Limits {
            window_seconds: 60,
            per_connection: SMALL,
            per_tenant: SMALL,
            concurrency: false,
            ..Limits::default()
        }
    ),
    threads = 4
);

async fn the_third_identical_failing_call_is_braked(n: Notes) {
    let c = n.client();
    let missing = json!({"note": "not_DoesNotExist0000000"});
    for _ in 0..2 {
        let call = c.call_tool("get_note", missing.clone()).await;
        assert_eq!(call.structured()["code"], "not_found");
    }
    let third = c.call_tool("get_note", missing).await;
    assert_eq!(third.structured()["loop_brake"], true, "{}", third.text());
    assert!(third.text().contains("ask the user"));
    let different = c
        .call_tool("get_note", json!({"note": "not_SomethingElse00000"}))
        .await;
    assert_eq!(
        different.structured()["code"],
        "not_found",
        "a changed call is not braked"
    );
}
on_every_backend!(
    loop_brake,
    the_third_identical_failing_call_is_braked,
    |backend| Notes::on(backend, Limits::default()),
    threads = 4
);

/// Waits until slot `slot` of the connection is taken (not a fixed sleep: under load a call can
/// take a while to reach admission).
async fn slot_taken(n: &Notes, slot: &str) {
    let key = Key::new(format!("acme#slot#{}", n.connection), slot);
    for _ in 0..500 {
        if n.app.store.get(&key).await.unwrap().is_some() {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("slot {slot} was never taken");
}

/// Starts `name` (`get_slowly` or `set_slowly`) taking `millis`, as a task of its own.
fn spawn_slow(
    client: &Arc<mcp_test_client::TestClient>,
    name: &'static str,
    tag: &str,
    millis: u64,
) -> tokio::task::JoinHandle<mcp_test_client::ToolCall> {
    let client = Arc::clone(client);
    let args = json!({"millis": millis, "tag": tag});
    tokio::spawn(async move { client.call_tool(name, args).await })
}

async fn two_slots_per_connection_one_kept_for_writes(n: Notes) {
    let client = Arc::new(n.client());
    let slow = |name: &'static str, tag: &str, millis: u64| spawn_slow(&client, name, tag, millis);
    let taken = |slot: &'static str| slot_taken(&n, slot);
    // Long bodies, so that a loaded machine (or the slow local DynamoDB server) cannot end
    // them before the calls that must find their slots taken.
    let first_read = slow("get_slowly", "r1", 4000);
    taken("0").await;
    // A second read finds the read slot taken.
    let second_read = client
        .call_tool("get_slowly", json!({"millis": 0, "tag": "r2"}))
        .await;
    assert_eq!(
        second_read.structured()["concurrency"],
        true,
        "{}",
        second_read.text()
    );
    // A write still gets the slot kept for writes...
    let write = slow("set_slowly", "w1", 2500);
    taken("1").await;
    // ...and a third call finds both taken.
    let third = client
        .call_tool("set_slowly", json!({"millis": 0, "tag": "w2"}))
        .await;
    assert_eq!(third.structured()["concurrency"], true, "{}", third.text());
    assert!(!first_read.await.unwrap().is_error());
    assert!(!write.await.unwrap().is_error());
    // Admission runs beside the body: the refused write's body ran and planned its note, and
    // nothing of it committed.
    let notes: Vec<String> = n.notes().await.into_iter().map(|v| v.note).collect();
    assert_eq!(notes, ["not_sloww1"], "only the admitted write committed");
    // Both slots are given back when the calls end.
    let after = client
        .call_tool("get_slowly", json!({"millis": 0, "tag": "r3"}))
        .await;
    assert!(!after.is_error(), "{}", after.text());
}
on_every_backend!(
    concurrency,
    two_slots_per_connection_one_kept_for_writes,
    |backend| Notes::on(backend, Limits::default()),
    threads = 4
);

/// A call its client abandons half-way (the transport drops it, as a server does when the
/// connection closes) gives its slot back: the connection's next read is admitted at once, not
/// after the slot's lease (the tool deadline plus five seconds).
async fn an_abandoned_call_gives_its_slot_back(n: Notes) {
    let client = Arc::new(n.client());
    let abandoned = spawn_slow(&client, "get_slowly", "gone", 4000);
    slot_taken(&n, "0").await;
    abandoned.abort();
    assert!(abandoned.await.unwrap_err().is_cancelled());
    let next = client
        .call_tool("get_slowly", json!({"millis": 0, "tag": "next"}))
        .await;
    assert!(!next.is_error(), "{}", next.text());
}
on_every_backend!(
    abandoned_call,
    an_abandoned_call_gives_its_slot_back,
    |backend| Notes::on(backend, Limits::default()),
    threads = 4
);

async fn a_body_past_its_deadline_commits_nothing(n: Notes) {
    let c = n.client();
    let call = c
        .call_tool("set_slowly", json!({"millis": 5000, "tag": "late"}))
        .await;
    assert!(call.is_error());
    assert_eq!(call.structured()["deadline_seconds"], 3, "{}", call.text());
    assert!(
        n.notes().await.is_empty(),
        "the planned write did not commit"
    );
    assert!(n.audit_actions().await.is_empty());
    let quick = c
        .call_tool("set_slowly", json!({"millis": 0, "tag": "quick"}))
        .await;
    assert!(
        !quick.is_error(),
        "the slot was given back: {}",
        quick.text()
    );
}
on_every_backend!(
    deadline,
    a_body_past_its_deadline_commits_nothing,
    |backend| Notes::on(backend, Limits::default()),
    threads = 4
);

async fn one_object_is_notified_at_most_n_times_per_window(n: Notes) {
    let c = n.client();
    let note = new_note(&c, "Popular", "x").await;
    for round in 0..4 {
        let preview = c
            .call_tool(
                "send_note",
                json!({"note": note, "to": format!("c{round}@example.com")}),
            )
            .await;
        let done = c.call_tool("confirm_action", confirm_args(&preview)).await;
        if round < 3 {
            assert!(!done.is_error(), "{round}: {}", done.text());
        } else {
            assert_eq!(done.structured()["code"], "rate_limited", "{}", done.text());
            assert_eq!(done.structured()["object"], note.as_str());
        }
    }
    assert_eq!(n.outbox().await.len(), 3, "the fourth message was not sent");
}
on_every_backend!(
    notify_per_object,
    one_object_is_notified_at_most_n_times_per_window,
    |backend| Notes::on(backend, Limits::default()),
    threads = 4
);

async fn expensive_reads_have_their_own_smaller_bucket(n: Notes) {
    let c = n.client();
    for i in 0..2 {
        let r = c
            .call_tool("get_slowly", json!({"millis": 0, "tag": format!("e{i}")}))
            .await;
        assert!(!r.is_error(), "{}", r.text());
    }
    let third = c
        .call_tool("get_slowly", json!({"millis": 0, "tag": "e2"}))
        .await;
    assert_eq!(
        third.structured()["code"],
        "rate_limited",
        "{}",
        third.text()
    );
    // Cheap reads still have room.
    let cheap = c
        .call_tool("get_note", json!({"note": "not_Nope000000000000000"}))
        .await;
    assert_eq!(cheap.structured()["code"], "not_found");
}
on_every_backend!(
    expensive_reads,
    expensive_reads_have_their_own_smaller_bucket,
    |backend| Notes::on(
        backend,
        Limits {
            window_seconds: 3600,
            per_connection: ClassLimits {
                read: 10,
                expensive_read: 2,
                write: 10,
                notify: 1,
                wake: 1
            },
            per_tenant: ClassLimits {
                read: 10,
                expensive_read: 2,
                write: 10,
                notify: 1,
                wake: 1
            },
            ..Limits::default()
        }
    ),
    threads = 4
);

/// A tenant limit past what one item takes (DynamoDB: about 1,000 writes a second per item)
/// is counted over shards, each call in one of them, none lost.
async fn a_hot_tenant_bucket_is_sharded(n: Notes) {
    let c = n.client();
    // 16 reads: under the connection's own limit; all in one of four shards by chance once
    // in about a billion runs.
    for i in 0..16 {
        let call = c
            .call_tool("get_slowly", json!({"millis": 0, "tag": format!("s{i}")}))
            .await;
        assert!(!call.is_error(), "{}", call.text());
    }
    // Each shard is its own partition (`<tenant>#rate#tenant~<n>`), as is the unsharded
    // bucket (`<tenant>#rate#tenant`).
    let mut shards = std::collections::BTreeMap::new();
    let partitions =
        std::iter::once("tenant".to_owned()).chain((0..4).map(|s| format!("tenant~{s}")));
    for who in partitions {
        let page = n
            .app
            .store
            .query(Query::partition(format!("acme#rate#{who}")))
            .await
            .unwrap();
        for (_, item) in &page.items {
            let count = match item.get("count") {
                Some(SV::N(n)) => n.to_string().parse::<u64>().unwrap(),
                other => panic!("a count: {other:?}"),
            };
            *shards.entry(who.clone()).or_insert(0) += count;
        }
    }
    assert!(
        shards.keys().all(|who| who.starts_with("tenant~")),
        "no unsharded tenant bucket: {shards:?}"
    );
    assert!(shards.len() >= 2, "calls spread over shards: {shards:?}");
    assert_eq!(shards.values().sum::<u64>(), 16, "every call counted once");
}
on_every_backend!(
    hot_tenant,
    a_hot_tenant_bucket_is_sharded,
    |backend| Notes::on(
        backend,
        Limits {
            per_tenant: ClassLimits {
                read: 60_000,
                expensive_read: 60_000,
                ..Limits::default().per_tenant
            },
            ..Limits::default()
        }
    ),
    threads = 4
);
