//! What only the store's insides can show: a data commit whose process died between counting
//! its start and its end (ADR 28).

use store::{Item, Key, Put, Store, Value};

use crate::SqliteStore;

fn item(n: i64) -> Item {
    Item::from([("count".to_owned(), Value::n(n))])
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
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(dir.path().join("store.db")).unwrap();
        let key = Key::new("acme#customer", "c1");
        store.put(Put::new(key.clone(), item(1))).await.unwrap();
        store.get(&key).await.unwrap();
        let reads = store.file_reads();
        store.get(&key).await.unwrap();
        assert_eq!(store.file_reads(), reads, "kept");

        // The writer of another process counts its commit and dies before counting its end.
        store.inner.gates.begin_commit().unwrap();
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
