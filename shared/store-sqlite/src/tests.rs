//! What only the store's insides can show: a data commit whose process died between counting
//! its start and its end (ADR 28, ADR 31), the expiry column a write without a read fills
//! (ADR 37), and the log copied back beside the writes (ADR 52).

use store::{Item, Key, Put, Store, Value};

use crate::SqliteStore;

fn item(n: i64) -> Item {
    Item::from([("count".to_owned(), Value::n(n))])
}

/// A fresh store (and its folder) with `key` written and kept: read once from the file, then
/// answered from what was kept.
async fn store_keeping(key: &Key) -> (SqliteStore, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("store.db")).unwrap();
    store.put(Put::new(key.clone(), item(1))).await.unwrap();
    store.get(key).await.unwrap();
    let reads = store.file_reads();
    store.get(key).await.unwrap();
    assert_eq!(store.file_reads(), reads, "kept");
    (store, dir)
}

fn run(test: impl std::future::Future<Output = ()>) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    runtime.block_on(test);
}

/// A commit counted as begun and never ended keeps every handle reading the file, until the
/// next commit ends; then items are kept again.
#[test]
fn a_commit_that_never_ended_keeps_nothing() {
    run(async {
        let key = Key::new("acme#customer", "c1");
        let (store, _dir) = store_keeping(&key).await;
        let reads = store.file_reads();

        // The writer of another process counts its commit and dies before counting its end.
        store
            .inner
            .gates
            .begin_commit(&crate::gate_file::Touched::Everything)
            .unwrap();
        for n in 1..=3 {
            assert_eq!(store.get(&key).await.unwrap(), Some(item(1)));
            assert_eq!(
                store.file_reads(),
                reads + n,
                "nothing kept while unsettled"
            );
        }

        store.put(Put::new(key.clone(), item(2))).await.unwrap();
        assert_eq!(store.get(&key).await.unwrap(), Some(item(2)));
        let reads = store.file_reads();
        assert_eq!(store.get(&key).await.unwrap(), Some(item(2)));
        assert_eq!(
            store.file_reads(),
            reads,
            "kept again after the next commit"
        );
    });
}

/// A commit under way keeps its own partitions' items from being kept or used, and no other's
/// (ADR 31): the writer of another process counted a commit to the customers and died.
#[test]
fn a_commit_under_way_holds_back_only_its_own_partitions() {
    use crate::gate_file::{Touched, group_of};
    run(async {
        let customer = Key::new("acme#customer", "c1");
        let member = Key::new("acme#member", "dana");
        assert_ne!(group_of(&customer.pk), group_of(&member.pk));
        let (store, _dir) = store_keeping(&member).await;
        store
            .put(Put::new(customer.clone(), item(1)))
            .await
            .unwrap();
        let touched = Touched::Groups([group_of(&customer.pk)].into());
        store.inner.gates.begin_commit(&touched).unwrap();
        let reads = store.file_reads();
        for _ in 0..3 {
            assert_eq!(store.get(&customer).await.unwrap(), Some(item(1)));
            assert_eq!(store.get(&member).await.unwrap(), Some(item(1)));
        }
        assert_eq!(
            store.file_reads(),
            reads + 3,
            "the customer read every time, the member kept"
        );

        // The next commit, to another partition, begins after the dead one's transaction is
        // gone: the customer is read once more, then kept again.
        let other = Key::new("acme#audit", "a1");
        assert_ne!(group_of(&other.pk), group_of(&customer.pk));
        store.put(Put::new(other, item(2))).await.unwrap();
        let reads = store.file_reads();
        for _ in 0..3 {
            assert_eq!(store.get(&customer).await.unwrap(), Some(item(1)));
        }
        assert_eq!(store.file_reads(), reads + 1, "settled by a later commit");
    });
}

/// A commit counted by a gatehouse older than ADR 31 names no partitions: every handle then
/// reads the file on every read, until a labelled commit stands for every partition.
#[test]
fn an_unlabelled_commit_keeps_nothing_until_a_labelled_one() {
    run(async {
        let member = Key::new("acme#member", "dana");
        let (store, _dir) = store_keeping(&member).await;
        let reads = store.file_reads();

        store.inner.gates.count_unlabelled_commit().unwrap();
        for n in 1..=2 {
            assert_eq!(store.get(&member).await.unwrap(), Some(item(1)));
            assert_eq!(store.file_reads(), reads + n, "nothing kept or used");
        }

        // A labelled commit to another partition stands for all of them, once.
        store
            .put(Put::new(Key::new("acme#customer", "c1"), item(2)))
            .await
            .unwrap();
        let reads = store.file_reads();
        for _ in 0..3 {
            assert_eq!(store.get(&member).await.unwrap(), Some(item(1)));
        }
        assert_eq!(store.file_reads(), reads + 1, "read once, then kept");
    });
}

/// A create written without reading first (ADR 37) keeps its expiry in the column the sweep
/// deletes by, as a planned write does: without it the row would never be given back.
#[test]
fn a_create_written_unread_keeps_its_expiry_for_the_sweep() {
    run(async {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(dir.path().join("store.db")).unwrap();
        let key = Key::new("acme#replay#con_1", "create_customer#abc");
        let replay = Item::from([
            (store::TTL_ATTRIBUTE.to_owned(), Value::n(1_900_000_000)),
            ("result".to_owned(), Value::s("{}")),
        ]);
        let create = Put::new(key.clone(), replay).when(store::Condition::item_not_exists());
        store.transact_write(vec![create.into()]).await.unwrap();
        let column: Option<i64> = store
            .read(|conn| {
                conn.query_row(
                    "SELECT expires_at FROM items WHERE pk = ?1 AND sk = ?2",
                    rusqlite::params![key.pk, key.sk],
                    |row| row.get(0),
                )
                .map_err(crate::unavailable)
            })
            .unwrap();
        assert_eq!(column, Some(1_900_000_000));
    });
}

/// Past the log's threshold a commit only wakes the checkpoint thread (ADR 52): the log is
/// copied back beside the writes, starts over instead of growing, and every write is in the
/// file. (In tests the threshold is 64 pages, so that a few hundred writes cross it often.)
#[test]
fn the_log_is_copied_back_beside_the_writes_and_starts_over() {
    use std::sync::Arc;

    use crate::checkpoints::{CHECKPOINT_PAGES, INLINE_PAGES};
    run(async {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("store.db");
        let store = Arc::new(SqliteStore::open(&path).unwrap());
        let log = dir.path().join("store.db-wal");
        let body = Item::from([("text".to_owned(), Value::s("x".repeat(6_000)))]);
        let (rounds, writers) = (40, 16);
        let mut largest_log = 0;
        for round in 0..rounds {
            let writes: Vec<_> = (0..writers)
                .map(|i| {
                    let (store, item) = (Arc::clone(&store), body.clone());
                    let key = Key::new("acme#note", format!("{round}-{i}"));
                    tokio::spawn(async move { store.put(Put::new(key, item)).await })
                })
                .collect();
            for write in writes {
                write.await.unwrap().unwrap();
            }
            largest_log = largest_log.max(std::fs::metadata(&log).map_or(0, |m| m.len()));
        }
        // Each write leaves at least two pages in the log: over 1,280 pages in all.
        let frame = 4_096 + 24;
        let bound = (INLINE_PAGES + 4 * CHECKPOINT_PAGES) as u64 * frame;
        assert!(
            largest_log <= bound,
            "the log grew to {largest_log} bytes (at most {bound}): it was not started over"
        );
        let (by_thread, _) = store.log_copies();
        assert!(by_thread > 0, "the checkpoint thread copied the log back");
        for round in 0..rounds {
            for i in 0..writers {
                let key = Key::new("acme#note", format!("{round}-{i}"));
                assert_eq!(
                    store.get(&key).await.unwrap(),
                    Some(body.clone()),
                    "{key:?}"
                );
            }
        }
    });
}

/// When the store's last handle is dropped, every connection to its file is closed before the
/// drop returns: the writer's and the checkpoint thread's too. Else a connection closing a
/// moment later deletes the log and shared-memory files by name, which may by then be a new
/// store's at the same path (`gatehouse demo remove` removes the files and opens the store
/// again at once).
#[test]
fn dropping_the_store_closes_its_file_before_it_returns() {
    run(async {
        for round in 0..20 {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("store.db");
            let store = SqliteStore::open(&path).unwrap();
            let key = Key::new("acme#note", format!("{round}"));
            store.put(Put::new(key, Item::new())).await.unwrap();
            drop(store);
            for suffix in ["-wal", "-shm"] {
                let file = dir.path().join(format!("store.db{suffix}"));
                assert!(
                    !file.exists(),
                    "round {round}: {} is still there",
                    file.display()
                );
            }
        }
    });
}
