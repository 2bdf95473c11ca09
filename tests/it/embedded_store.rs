//! The embedded store as processes use it (ADR 19): limits shared by several processes on one
//! data folder, and acknowledged writes that survive the process being killed.

use mcp_test_client::TestClient;
use serde_json::json;

use crate::support::created_customer;
use crate::support::processes::{cli_token, serve_new_folder, start_serve};
use crate::support::sqlite_file::WithExpiredRows;

/// Waits until the current rate window (60 s, aligned to the minute) has at least `left`
/// seconds to run, so that a count of admitted calls stays in one window.
pub(crate) async fn fresh_window(left: i64) {
    loop {
        let now = chrono::Utc::now().timestamp();
        if 60 - now % 60 >= left {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    }
}

/// Two `gatehouse serve` processes on one data folder count one connection's reads in one
/// bucket: together they admit the connection's limit once, not once each.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_on_one_folder_share_a_connections_limits() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let token = cli_token(&data);
    let (_first, a) = start_serve(&data);
    let (_second, b) = start_serve(&data);
    let bearer = format!("Bearer {token}");
    let clients = [a, b].map(|addr| TestClient::http(addr).with_header("authorization", &bearer));
    let limit = mcp_pipeline::Limits::default().per_connection.read;
    fresh_window(25).await;
    let (mut admitted, mut refusals) = ([0u32; 2], Vec::new());
    for i in 0..(limit + 4) as usize {
        let call = clients[i % 2]
            .call_tool("get_server_status", json!({}))
            .await;
        if call.is_error() {
            refusals.push(call.structured()["code"].as_str().unwrap().to_owned());
        } else {
            assert!(refusals.is_empty(), "a call was admitted after a refusal");
            admitted[i % 2] += 1;
        }
    }
    assert_eq!(
        admitted[0] + admitted[1],
        limit,
        "admitted {admitted:?} across both processes"
    );
    assert!(admitted[0] > 0 && admitted[1] > 0, "both processes served");
    // The first refusals are the limit's; repeating them then trips the loop brake.
    assert_eq!(
        refusals[..2],
        ["rate_limited", "rate_limited"],
        "{refusals:?}"
    );
}

/// A write is acknowledged only once it is synced: writes answered just before the process
/// is killed (SIGKILL, no shutdown) are all in the store when it is opened again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_writes_survive_a_killed_process() {
    let served = serve_new_folder();
    let (data, client) = (&served.data, &served.client);
    let mut acknowledged = Vec::new();
    for i in 0..20 {
        let (name, email) = (format!("Killed {i}"), format!("killed{i}@example.com"));
        acknowledged.push(created_customer(client, &name, &email).await);
    }
    // Killed right after the answers, before anything else could run.
    drop(served.server);
    let store =
        std::sync::Arc::new(store_sqlite::SqliteStore::open(data.join("gatehouse.db")).unwrap());
    let customers = booking::Customers::new(store);
    for handle in &acknowledged {
        let id = booking::CustomerId::new(handle.trim_start_matches("cus_"));
        let actor = booking::Actor {
            tenant: store::TenantId::new("acme"),
            member: store::MemberId::new("check"),
            rights: booking::rights::ALL
                .iter()
                .map(|r| (*r).to_owned())
                .collect(),
        };
        let found = customers.get(&actor, &id).await;
        assert!(
            found.is_ok(),
            "{handle} was acknowledged but is gone: {found:?}"
        );
    }
}

/// Gate state that cannot be read (a power cut can leave unsynced pages behind, ADR 27) is
/// gate state lost, not a store that no longer opens: the gate file starts empty, and the
/// data beside it is untouched.
#[tokio::test]
async fn an_unreadable_gate_file_starts_empty() {
    use store::{Item, Key, Put, Store, Value};
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("gatehouse.db");
    let data_key = Key::new("acme#customer", "c1");
    let gate_key = Key::new("acme#rate#conn_1", "Read#0");
    let item = |n: i64| Item::from([("count".to_owned(), Value::n(n))]);
    {
        let store = store_sqlite::SqliteStore::open(&file).unwrap();
        store
            .put(Put::new(data_key.clone(), item(1)))
            .await
            .unwrap();
        store
            .put(Put::new(gate_key.clone(), item(7)))
            .await
            .unwrap();
        assert_eq!(store.get(&gate_key).await.unwrap(), Some(item(7)));
    }
    let gates = dir.path().join("gatehouse-gates.mdb");
    assert!(gates.exists(), "the gate file sits beside the data file");
    std::fs::write(&gates, vec![0x5a_u8; 64 * 1024]).unwrap();
    let store = store_sqlite::SqliteStore::open(&file).unwrap();
    assert_eq!(store.get(&gate_key).await.unwrap(), None, "gate state lost");
    assert_eq!(
        store.get(&data_key).await.unwrap(),
        Some(item(1)),
        "data kept"
    );
    store
        .put(Put::new(gate_key.clone(), item(1)))
        .await
        .unwrap();
    assert_eq!(store.get(&gate_key).await.unwrap(), Some(item(1)));
}

/// The sweep deletes expired gate state a step at a time, and only that: 600 expired buckets
/// (more than two steps) go, a live slot and a live bucket stay, and a second sweep finds
/// nothing left to delete.
#[tokio::test]
async fn the_sweep_deletes_expired_gate_state_in_steps() {
    use store::{Item, Key, Put, Store, Value};
    let dir = tempfile::tempdir().unwrap();
    let clock = std::sync::Arc::new(mcp_pipeline::FixedClock::starting_now());
    let store = store_sqlite::SqliteStore::open(dir.path().join("gatehouse.db"))
        .unwrap()
        .with_clock(clock.clone());
    let now = mcp_pipeline::Clock::now(&*clock);
    let until = |at: i64| {
        Item::from([
            ("count".to_owned(), Value::n(1)),
            (store::TTL_ATTRIBUTE.to_owned(), Value::n(at)),
        ])
    };
    for i in 0..600 {
        let key = Key::new("acme#rate#conn_1", format!("Read#{i}"));
        store.put(Put::new(key, until(now + 10))).await.unwrap();
    }
    let live = [
        Key::new("acme#slot#conn_1", "0"),
        Key::new("acme#rate#conn_2", "Read#0"),
    ];
    for key in &live {
        store
            .put(Put::new(key.clone(), until(now + 3600)))
            .await
            .unwrap();
    }
    clock.advance(60);
    assert_eq!(store.sweep_expired().await.unwrap(), 600);
    for key in &live {
        assert_eq!(store.get(key).await.unwrap(), Some(until(now + 3600)));
    }
    assert_eq!(
        store.sweep_expired().await.unwrap(),
        0,
        "nothing expired is left"
    );
}

/// A handle keeps what it read (ADR 28): an unchanged item, or its absence, is read from the
/// file once; a commit through another handle (another process, in use) is seen by the very
/// next read; nothing kept is used once it is older than about a second.
#[tokio::test]
async fn kept_items_are_used_until_a_commit_writes_them() {
    use store::{Delete, Item, Key, Put, Store, Value};
    let (writes, reads, clock, _dir) = crate::support::store::write_and_read_handles();
    let (kept, absent) = (
        Key::new("acme#customer", "c1"),
        Key::new("acme#customer", "c2"),
    );
    let item = |n: i64| Item::from([("count".to_owned(), Value::n(n))]);
    writes.put(Put::new(kept.clone(), item(1))).await.unwrap();
    let pair = [kept.clone(), absent.clone()];
    assert_eq!(reads.batch_get(&pair).await.unwrap(), [Some(item(1)), None]);
    let once = reads.file_reads();
    for _ in 0..3 {
        assert_eq!(reads.get(&kept).await.unwrap(), Some(item(1)));
        assert_eq!(reads.get(&absent).await.unwrap(), None);
        assert_eq!(reads.batch_get(&pair).await.unwrap(), [Some(item(1)), None]);
    }
    assert_eq!(
        reads.file_reads(),
        once,
        "unchanged items are not read again"
    );

    writes.put(Put::new(absent.clone(), item(2))).await.unwrap();
    assert_eq!(
        reads.get(&absent).await.unwrap(),
        Some(item(2)),
        "seen at once"
    );
    writes.delete(Delete::new(kept.clone())).await.unwrap();
    assert_eq!(reads.get(&kept).await.unwrap(), None, "a delete too");
    assert!(reads.file_reads() >= once + 2);

    let before = reads.file_reads();
    for _ in 0..2 {
        assert_eq!(reads.get(&absent).await.unwrap(), Some(item(2)));
    }
    assert_eq!(
        reads.file_reads(),
        before + 1,
        "read once since the last commit"
    );
    clock.advance(2);
    assert_eq!(reads.get(&absent).await.unwrap(), Some(item(2)));
    assert_eq!(reads.file_reads(), before + 2, "too old to be used");
}

/// Kept items are labelled by partition (ADR 31): a commit through another handle to one
/// partition leaves what was kept from another in use, and is seen at once in its own. This is
/// what keeps a write's authentication in memory while other writes commit.
#[tokio::test]
async fn a_commit_makes_only_its_own_partitions_read_again() {
    use store::{Condition, ConditionCheck, Item, Key, Put, Store, TransactOp, Value};
    let (writes, reads, _clock, _dir) = crate::support::store::write_and_read_handles();
    let item = |n: i64| Item::from([("count".to_owned(), Value::n(n))]);
    let member = Key::new("acme#member", "dana");
    let customer = Key::new("acme#customer", "c1");
    writes.put(Put::new(member.clone(), item(1))).await.unwrap();
    writes
        .put(Put::new(customer.clone(), item(1)))
        .await
        .unwrap();
    let both = [member.clone(), customer.clone()];
    assert_eq!(
        reads.batch_get(&both).await.unwrap(),
        [Some(item(1)), Some(item(1))]
    );
    let once = reads.file_reads();

    // Another customer and an audit row, on the condition that the member exists (as every MCP
    // write checks the kill switches): the check writes nothing in the member's partition.
    let member_exists = ConditionCheck::new(member.clone(), Condition::item_exists());
    writes
        .transact_write(vec![
            TransactOp::Put(Put::new(Key::new("acme#customer", "c2"), item(2))),
            TransactOp::Put(Put::new(Key::new("acme#audit", "a1"), item(3))),
            TransactOp::Check(member_exists),
        ])
        .await
        .unwrap();
    assert_eq!(reads.get(&member).await.unwrap(), Some(item(1)));
    assert_eq!(
        reads.file_reads(),
        once,
        "the member's partition was checked, not written"
    );
    assert_eq!(reads.get(&customer).await.unwrap(), Some(item(1)));
    assert_eq!(reads.file_reads(), once + 1, "the customers' partition was");

    writes.put(Put::new(member.clone(), item(4))).await.unwrap();
    assert_eq!(
        reads.get(&member).await.unwrap(),
        Some(item(4)),
        "seen at once"
    );
    assert_eq!(reads.get(&customer).await.unwrap(), Some(item(1)));
    assert_eq!(reads.file_reads(), once + 2, "only the member read again");
}

/// A value derived from items (ADR 32) is made once and used while its items' partitions see no
/// commit, even when another handle writes elsewhere; a write by another handle to one of its
/// items, or an item's expiry, makes it again at once.
#[tokio::test]
async fn a_derived_value_is_made_again_only_when_its_items_change() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use store::{Derivation, Derived, Item, Key, Put, Store, Value};
    let (writes, reads, clock, _dir) = crate::support::store::write_and_read_handles();
    let item = |n: i64| Item::from([("count".to_owned(), Value::n(n))]);
    let member = Key::new("acme#member", "dana");
    let switch = Key::new("acme#switch", "agents");
    writes.put(Put::new(member.clone(), item(1))).await.unwrap();
    let made = AtomicUsize::new(0);
    let copy = |items: &[Option<Item>]| -> Derived {
        made.fetch_add(1, Ordering::SeqCst);
        Arc::new(items.to_vec())
    };
    let derivation = Derivation {
        name: "test::copy",
        derive: &copy,
    };
    let keys = [member.clone(), switch.clone()];
    let derived = || async {
        let (value, _) = reads
            .batch_get_derived(&keys, &[], derivation)
            .await
            .unwrap();
        value.downcast_ref::<Vec<Option<Item>>>().unwrap().clone()
    };
    assert_eq!(derived().await, [Some(item(1)), None]);
    assert_eq!(derived().await, [Some(item(1)), None]);
    assert_eq!(made.load(Ordering::SeqCst), 1, "made once");

    writes
        .put(Put::new(Key::new("acme#customer", "c1"), item(2)))
        .await
        .unwrap();
    assert_eq!(derived().await, [Some(item(1)), None]);
    assert_eq!(made.load(Ordering::SeqCst), 1, "another partition's commit");

    writes.put(Put::new(switch.clone(), item(3))).await.unwrap();
    assert_eq!(
        derived().await,
        [Some(item(1)), Some(item(3))],
        "seen at once"
    );
    assert_eq!(derived().await, [Some(item(1)), Some(item(3))]);
    assert_eq!(made.load(Ordering::SeqCst), 2, "made again once");

    // An item that expires a second from now: absent to the derivation when that second comes,
    // although the value is young enough to be used.
    let expiring = |n: i64| {
        let mut i = item(n);
        i.insert(
            store::TTL_ATTRIBUTE.into(),
            Value::n(mcp_pipeline::Clock::now(clock.as_ref()) + 1),
        );
        i
    };
    writes
        .put(Put::new(member.clone(), expiring(4)))
        .await
        .unwrap();
    assert_eq!(derived().await, [Some(expiring(4)), Some(item(3))]);
    clock.advance(1);
    assert_eq!(derived().await, [None, Some(item(3))], "expired");
}

/// What another process changes acts on the very next call of a running `serve`, although
/// `serve` keeps the items it authenticated with (ADR 28): the kill switch turned on and off
/// with the CLI, the creator's role lowered and raised again, then the connection revoked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_process_changes_act_on_the_next_call() {
    use crate::support::processes::gatehouse;
    // Held to the end: dropping it stops `serve` and deletes the folder.
    let served = serve_new_folder();
    let (data, client) = (&served.data, &served.client);
    let status = || async {
        let params = json!({"name": "get_server_status", "arguments": {}});
        client.request("tools/call", params).await.status
    };
    for _ in 0..3 {
        assert_eq!(status().await, 200);
    }
    let switch = |state: &'static str| ["kill-switch", state, "--reason", "test"];
    gatehouse(&switch("on"), data);
    assert_eq!(status().await, 503, "the kill switch acts on the next call");
    gatehouse(&switch("off"), data);
    assert_eq!(status().await, 200, "and so does turning it off");
    let tools = || async { client.list_tools().await["tools"].as_array().unwrap().len() };
    let role = |role: &'static str| {
        [
            "member", "set", "--tenant", "acme", "--member", "ana", "--role", role,
        ]
    };
    let as_owner = tools().await;
    gatehouse(&role("viewer"), data);
    assert!(
        tools().await < as_owner,
        "the creator's rights are cut on the next call"
    );
    gatehouse(&role("owner"), data);
    assert_eq!(tools().await, as_owner, "and given back on the next call");
    let connections: serde_json::Value = serde_json::from_str(&gatehouse(
        &["token", "list", "--tenant", "acme", "--json"],
        data,
    ))
    .unwrap();
    let connection = connections[0]["connection"].as_str().unwrap();
    let revoke = ["token", "revoke", "--tenant", "acme", "--member", "ana"];
    gatehouse(&[&revoke[..], &[connection]].concat(), data);
    assert_eq!(status().await, 401, "a revocation acts on the next call");
}

/// A data file written by an earlier gatehouse (every item in one `WITHOUT ROWID` table) is
/// converted when `serve` opens it (ADR 29): every row is still there unchanged, the old
/// credential authenticates, items are read and written through the new layout, and a
/// uniqueness rule still finds what the earlier layout held.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_data_file_of_the_earlier_layout_is_converted_with_every_item() {
    use crate::support::sqlite_file::{layout, rewrite_in_earlier_layout, rows};
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let file = data.join("gatehouse.db");
    let bearer = format!("Bearer {}", cli_token(&data));
    let client = |addr| TestClient::http(addr).with_header("authorization", &bearer);
    let created = {
        let (_server, addr) = start_serve(&data);
        created_customer(&client(addr), "Earlier", "earlier@example.com").await
    };
    let before = rows(&file);
    rewrite_in_earlier_layout(&file);
    assert!(
        layout(&file)[0].contains("WITHOUT ROWID"),
        "{:?}",
        layout(&file)
    );
    assert_eq!(rows(&file), before, "the rewrite kept every row");

    let (_server, addr) = start_serve(&data);
    let now = layout(&file);
    assert!(
        !now.iter().any(|sql| sql.contains("WITHOUT ROWID")) && now.len() == 2,
        "converted to a rowid table and its key index: {now:?}"
    );
    let after = rows(&file);
    let missing: Vec<_> = before.iter().filter(|row| !after.contains(row)).collect();
    assert!(missing.is_empty(), "rows lost or changed: {missing:?}");

    let client = client(addr);
    let read = client
        .call_tool("get_customer", json!({"customer": created}))
        .await;
    assert!(!read.is_error(), "{}", read.text());
    assert_eq!(
        read.structured()["customer"]["email"],
        "earlier@example.com"
    );
    let again = client
        .call_tool(
            "create_customer",
            json!({"name": "Earlier twin", "email": "earlier@example.com"}),
        )
        .await;
    assert!(again.is_error(), "the email is taken: {}", again.text());
    created_customer(&client, "Later", "later@example.com").await;
    assert!(
        rows(&file).len() > after.len(),
        "the new customer was written"
    );
}

/// `serve` gives back the space of expired items (a write's replay record stays a day, then
/// only takes room): soon after it starts, every expired row of the data file is deleted and
/// every live row is left as it was; the customer still reads.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_deletes_expired_items_and_leaves_live_ones() {
    let folder = WithExpiredRows::new().await;
    let (_server, addr) = start_serve(&folder.data);
    folder.expired_rows_are_deleted().await;
    let bearer = format!("Bearer {}", folder.token);
    let read = TestClient::http(addr)
        .with_header("authorization", &bearer)
        .call_tool("get_customer", json!({"customer": folder.created}))
        .await;
    assert!(!read.is_error(), "{}", read.text());
}

/// `stdio`, which desktop clients start, deletes them too (a user may never run `serve`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_deletes_expired_items_and_leaves_live_ones() {
    use std::process::{Command, Stdio};
    let folder = WithExpiredRows::new().await;
    let mut stdio = Command::new(crate::support::processes::gatehouse_binary())
        .args(["stdio", "--data-dir"])
        .arg(&folder.data)
        .env("GATEHOUSE_TOKEN", &folder.token)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start gatehouse stdio");
    folder.expired_rows_are_deleted().await;
    drop(stdio.stdin.take());
    assert!(stdio.wait().unwrap().success());
}
