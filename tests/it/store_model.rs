//! The store engines against the reference: random sequences of operations (puts, updates,
//! deletes, reads, queries, transactions; with conditions, asked-for old items and expired
//! items) run on the embedded SQLite store and on `MemoryStore`, and every answer must be the
//! same. Property test (proptest); a failing sequence is shrunk to a short one.

use std::sync::Arc;

use proptest::prelude::*;
use store::{
    CmpOp, Condition, Delete, Item, Key, MemoryStore, Put, Query, SortCondition, Store, StoreError,
    TransactOp, Update, UpdateAction, Value,
};

/// When items expire: long ago, or far ahead (the stores read the system clock).
#[derive(Debug, Clone, Copy)]
enum Life {
    Forever,
    Expired,
    Later,
}

#[derive(Debug, Clone)]
enum Op {
    Put(Key, i64, Life, Option<Condition>, bool),
    Update(Key, UpdateAction, Option<Condition>, bool),
    Delete(Key, Option<Condition>, bool),
    Get(Key),
    BatchGet(Vec<Key>),
    Query(String, Option<SortCondition>, bool, Option<u32>),
    Transact(Vec<TransactOp>),
}

fn key() -> impl Strategy<Value = Key> {
    (0..2u8, 0..3u8).prop_map(|(p, s)| Key::new(format!("t#p{p}"), format!("s{s}")))
}

fn condition() -> impl Strategy<Value = Option<Condition>> {
    prop_oneof![
        Just(None),
        Just(Some(Condition::item_exists())),
        Just(Some(Condition::item_not_exists())),
        (0..3i64).prop_map(|n| Some(Condition::eq("n", Value::n(n)))),
        (0..3i64).prop_map(|n| Some(Condition::Cmp("n".into(), CmpOp::Lt, Value::n(n)))),
        Just(Some(Condition::NotExists("tag".into()))),
    ]
}

fn life() -> impl Strategy<Value = Life> {
    prop_oneof![Just(Life::Forever), Just(Life::Expired), Just(Life::Later)]
}

fn action() -> impl Strategy<Value = UpdateAction> {
    prop_oneof![
        (0..3i64).prop_map(|n| UpdateAction::Set("n".into(), Value::n(n))),
        (1..3i64).prop_map(|n| UpdateAction::Add("n".into(), n.into())),
        Just(UpdateAction::Set("tag".into(), Value::s("x"))),
        Just(UpdateAction::Remove("tag".into())),
    ]
}

fn sort() -> impl Strategy<Value = Option<SortCondition>> {
    prop_oneof![
        Just(None),
        Just(Some(SortCondition::BeginsWith("s".into()))),
        Just(Some(SortCondition::Gt("s0".into()))),
        Just(Some(SortCondition::Between("s1".into(), "s2".into()))),
        Just(Some(SortCondition::Eq("s1".into()))),
    ]
}

fn write_op() -> impl Strategy<Value = TransactOp> {
    prop_oneof![
        (key(), 0..3i64, condition()).prop_map(|(k, n, c)| {
            let put = Put::new(k, item(n, Life::Forever));
            TransactOp::Put(match c {
                Some(c) => put.when(c),
                None => put,
            })
        }),
        (key(), action(), condition()).prop_map(|(k, a, c)| {
            let update = Update::new(k, vec![a]);
            TransactOp::Update(match c {
                Some(c) => update.when(c),
                None => update,
            })
        }),
        (key(), condition()).prop_map(|(k, c)| {
            let delete = Delete::new(k);
            TransactOp::Delete(match c {
                Some(c) => delete.when(c),
                None => delete,
            })
        }),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (key(), 0..3i64, life(), condition(), any::<bool>())
            .prop_map(|(k, n, l, c, old)| Op::Put(k, n, l, c, old)),
        3 => (key(), action(), condition(), any::<bool>())
            .prop_map(|(k, a, c, old)| Op::Update(k, a, c, old)),
        2 => (key(), condition(), any::<bool>()).prop_map(|(k, c, old)| Op::Delete(k, c, old)),
        2 => key().prop_map(Op::Get),
        1 => prop::collection::btree_set(key(), 1..4)
            .prop_map(|keys| Op::BatchGet(keys.into_iter().collect())),
        2 => (0..2u8, sort(), any::<bool>(), prop::option::of(1..3u32))
            .prop_map(|(p, s, d, l)| Op::Query(format!("t#p{p}"), s, d, l)),
        2 => prop::collection::vec(write_op(), 1..4).prop_map(Op::Transact),
    ]
}

fn item(n: i64, life: Life) -> Item {
    let mut item = Item::new();
    item.insert("n".into(), Value::n(n));
    let now = chrono::Utc::now().timestamp();
    match life {
        Life::Forever => {}
        Life::Expired => {
            item.insert(store::TTL_ATTRIBUTE.into(), Value::n(now - 3600));
        }
        Life::Later => {
            item.insert(store::TTL_ATTRIBUTE.into(), Value::n(now + 86_400));
        }
    }
    item
}

/// One operation's answer, comparable across engines.
async fn run(store: &dyn Store, op: &Op) -> Result<String, StoreError> {
    let conditional = |c: &Option<Condition>| c.clone();
    Ok(match op.clone() {
        Op::Put(k, n, l, c, old) => {
            let mut put = Put::new(k, item(n, l));
            if let Some(c) = conditional(&c) {
                put = put.when(c);
            }
            if old {
                put = put.return_old_on_failure();
            }
            format!("{:?}", store.put(put).await?)
        }
        Op::Update(k, a, c, old) => {
            let mut update = Update::new(k, vec![a]);
            if let Some(c) = c {
                update = update.when(c);
            }
            if old {
                update = update.return_old_on_failure();
            }
            format!("{:?}", store.update(update).await?)
        }
        Op::Delete(k, c, old) => {
            let mut delete = Delete::new(k);
            if let Some(c) = c {
                delete = delete.when(c);
            }
            if old {
                delete = delete.return_old_on_failure();
            }
            format!("{:?}", store.delete(delete).await?)
        }
        Op::Get(k) => format!("{:?}", store.get(&k).await?),
        Op::BatchGet(keys) => format!("{:?}", store.batch_get(&keys).await?),
        Op::Query(pk, sort, descending, limit) => {
            let mut query = Query::partition(pk);
            if let Some(s) = sort {
                query = query.sort(s);
            }
            if descending {
                query = query.descending();
            }
            if let Some(l) = limit {
                query = query.limit(l);
            }
            let page = store.query(query).await?;
            format!("{:?} more={}", page.items, page.next.is_some())
        }
        Op::Transact(ops) => format!("{:?}", store.transact_write(ops).await?),
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn sqlite_answers_every_sequence_as_the_reference_does(ops in prop::collection::vec(op(), 1..25)) {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(async {
            let reference: Arc<dyn Store> = Arc::new(MemoryStore::new());
            let (sqlite, _dir) = crate::support::store::fresh_sqlite("model.db");
            for (i, op) in ops.iter().enumerate() {
                let want = run(reference.as_ref(), op).await;
                let got = run(&sqlite, op).await;
                prop_assert_eq!(&got, &want, "operation {} of {:?}", i, ops);
            }
            Ok(())
        })?;
    }
}
