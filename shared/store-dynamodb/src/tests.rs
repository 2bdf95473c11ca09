//! Unit tests of the expression compiler, and tests against a DynamoDB-compatible server when
//! `GATEHOUSE_TEST_DYNAMODB_ENDPOINT` is set (e.g. moto on `http://127.0.0.1:5055`). Server
//! tests compare every answer with `MemoryStore`, the reference semantics.

use std::collections::{BTreeMap, BTreeSet};

use store::{CmpOp, ConditionCheck, Cursor, MemoryStore, Number, SortCondition as SC, Value};

use super::*;

const ENDPOINT_VAR: &str = "GATEHOUSE_TEST_DYNAMODB_ENDPOINT";

fn endpoint() -> Option<String> {
    std::env::var(ENDPOINT_VAR).ok().filter(|s| !s.is_empty())
}

/// A store on a fresh table, or `None` (test skipped, with a note) when no server is
/// configured. In CI (`CI` set) a missing server fails the test instead, as in `tests/it`.
async fn fresh() -> Option<DynamoStore> {
    let Some(endpoint) = endpoint() else {
        assert!(
            std::env::var_os("CI").is_none(),
            "{ENDPOINT_VAR} is not set in CI; run the tests through tests/run"
        );
        eprintln!(
            "SKIPPED: {ENDPOINT_VAR} is not set (tests/run starts a local server and sets it)"
        );
        return None;
    };
    let table = format!("gatehouse-test-{}", request_token());
    let store = DynamoStore::local(&endpoint, &table);
    store.create_table().await.expect("create table");
    // Creating it again is fine.
    store.create_table().await.expect("create existing table");
    Some(store)
}

macro_rules! store_or_skip {
    () => {
        match fresh().await {
            Some(store) => store,
            None => return,
        }
    };
}

fn key(pk: &str, sk: &str) -> Key {
    Key::new(pk, sk)
}

fn num(text: &str) -> Value {
    Value::N(Number::parse(text).expect("number"))
}

fn item(pairs: &[(&str, Value)]) -> Item {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.clone()))
        .collect()
}

fn past() -> Value {
    Value::n(outside::Clock::now(&outside::SystemClock) - 100)
}

fn future() -> Value {
    Value::n(outside::Clock::now(&outside::SystemClock) + 3600)
}

/// Runs the same write on both stores and requires the same answer.
async fn same<T: PartialEq + std::fmt::Debug>(
    what: &str,
    memory: Result<T, StoreError>,
    dynamo: Result<T, StoreError>,
) {
    assert_eq!(
        dynamo, memory,
        "{what}: DynamoDB answer differs from the memory store"
    );
}

/// Puts the same item in both stores.
async fn seed(memory: &MemoryStore, dynamo: &DynamoStore, k: &Key, i: &Item) {
    memory
        .put(Put::new(k.clone(), i.clone()))
        .await
        .expect("memory put");
    dynamo
        .put(Put::new(k.clone(), i.clone()))
        .await
        .expect("dynamo put");
}

fn every_type() -> Item {
    item(&[
        ("s", Value::s("héllo wörld ✓ 🦀 日本語")),
        ("empty_s", Value::s("")),
        ("n38", num("12345678901234567890123456789012345678")),
        ("n38frac", num("-0.12345678901234567890123456789012345678")),
        ("nsmall", num("1.5e-100")),
        ("nbig", num("9.9999999999999999999999999999999999999e125")),
        ("nzero", num("0")),
        ("b", Value::B(vec![0, 1, 2, 0x7f, 0x80, 0xfe, 0xff])),
        ("t", Value::Bool(true)),
        ("f", Value::Bool(false)),
        ("null", Value::Null),
        (
            "l",
            Value::L(vec![
                Value::s("a"),
                Value::n(1),
                Value::Null,
                Value::L(vec![]),
            ]),
        ),
        ("empty_l", Value::L(vec![])),
        (
            "m",
            Value::M(BTreeMap::from([
                ("x".to_owned(), Value::s("ü")),
                ("y".to_owned(), Value::M(BTreeMap::new())),
                ("z".to_owned(), Value::Ss(BTreeSet::from(["q".to_owned()]))),
            ])),
        ),
        ("empty_m", Value::M(BTreeMap::new())),
        (
            "ss",
            Value::Ss(BTreeSet::from([
                "b".to_owned(),
                "a".to_owned(),
                "ç".to_owned(),
            ])),
        ),
        ("ünïcode näme", Value::s("v")),
    ])
}

// ---- unit tests, no server -------------------------------------------------------------

#[test]
fn values_round_trip_through_attribute_values() {
    for (name, value) in every_type() {
        let back = convert::from_av(&name, &convert::to_av(&value)).expect("convert back");
        assert_eq!(back, value, "{name}");
    }
}

#[test]
fn items_come_back_without_their_key() {
    let k = key("p", "s");
    let raw = convert::item_to_raw(&k, &every_type());
    assert_eq!(convert::key_from_raw(&raw).expect("key"), k);
    assert_eq!(convert::item_from_raw(&raw).expect("item"), every_type());
}

#[test]
fn unsupported_types_are_refused() {
    let e = convert::from_av("x", &AttributeValue::Ns(vec!["1".to_owned()])).unwrap_err();
    assert!(matches!(e, StoreError::Invalid(Invalid::WrongType { .. })));
}

#[test]
fn expressions_use_placeholders_only() {
    let c = Condition::eq("select", Value::s("x"))
        .and(Condition::Cmp("a.b".into(), CmpOp::Lt, Value::n(3)))
        .or(Condition::BeginsWith("select".into(), "y".into()).not());
    let mut expr = Expr::new();
    let text = Cond::absent_if_expired(&c, 100)
        .render(&mut expr)
        .expect("a condition");
    assert!(!text.contains("select") && !text.contains("a.b"), "{text}");
    let (names, values) = expr.into_maps();
    let names = names.expect("names");
    assert_eq!(names.get("#n0").map(String::as_str), Some(TTL_ATTRIBUTE));
    assert!(names.values().any(|n| n == "select"));
    assert!(names.values().any(|n| n == "a.b"));
    // `select` gets one placeholder however often it appears.
    assert_eq!(names.len(), 3);
    assert!(values.expect("values").keys().all(|k| k.starts_with(":v")));
}

#[test]
fn conditions_fold_to_the_store_rules() {
    // Ordering comparisons with unordered types never hold.
    assert_eq!(
        Cond::fold(&Condition::Cmp("a".into(), CmpOp::Lt, Value::Bool(true))),
        Cond::False
    );
    // `<>` with a value no item can hold always holds.
    let empty_set = Value::Ss(BTreeSet::new());
    assert_eq!(
        Cond::fold(&Condition::Cmp("a".into(), CmpOp::Ne, empty_set)),
        Cond::True
    );
    assert_eq!(Cond::fold(&Condition::Exists(String::new())), Cond::False);
    assert_eq!(
        Cond::fold(&Condition::BeginsWith("a".into(), String::new())),
        Cond::IsType("a".into(), "S")
    );
    // A condition that always holds sends nothing; one that never holds still renders.
    let always = Condition::NotExists(String::new());
    assert_eq!(
        Cond::absent_if_expired(&always, 1).render(&mut Expr::new()),
        None
    );
    let never = Condition::Exists(String::new());
    assert!(
        Cond::absent_if_expired(&never, 1)
            .render(&mut Expr::new())
            .is_some()
    );
    // Conditions holding on an absent item also hold on an expired one.
    let absent_ok = Condition::item_not_exists();
    assert!(matches!(
        Cond::absent_if_expired(&absent_ok, 1),
        Cond::Or(..)
    ));
    let absent_not_ok = Condition::item_exists();
    assert!(matches!(
        Cond::absent_if_expired(&absent_not_ok, 1),
        Cond::And(..)
    ));
}

#[test]
fn update_expressions_group_clauses() {
    let mut expr = Expr::new();
    let text = update_expression(
        &[
            UpdateAction::Set("a".into(), Value::n(1)),
            UpdateAction::Remove("b".into()),
            UpdateAction::Add("c".into(), Number::from(2i64)),
            UpdateAction::Append("d".into(), vec![Value::s("x")]),
        ],
        &mut expr,
    );
    assert_eq!(
        text,
        "SET #n0 = :v0, #n3 = list_append(if_not_exists(#n3, :v2), :v3) REMOVE #n1 ADD #n2 :v1"
    );
}

#[test]
fn sort_ranges_fold_empty_and_inverted_bounds() {
    assert!(matches!(
        sort_range(Some(&SC::Eq(String::new()))),
        Range::Nothing
    ));
    assert!(matches!(
        sort_range(Some(&SC::Gt(String::new()))),
        Range::All
    ));
    assert!(matches!(
        sort_range(Some(&SC::Between("b".into(), "a".into()))),
        Range::Nothing
    ));
    assert!(matches!(
        sort_range(Some(&SC::Between(String::new(), "a".into()))),
        Range::Where(SC::Le(_))
    ));
    assert!(below(&SC::BeginsWith("m".into()), "a"));
    assert!(!below(&SC::BeginsWith("m".into()), "n"));
    assert!(!below(&SC::Lt("m".into()), "z"));
}

// ---- against a server ------------------------------------------------------------------

#[tokio::test]
async fn every_value_type_round_trips() {
    let store = store_or_skip!();
    let k = key("tenant#1", "item#ü");
    store
        .put(Put::new(k.clone(), every_type()))
        .await
        .expect("put");
    assert_eq!(store.get(&k).await.expect("get"), Some(every_type()));
    let got = store
        .batch_get(&[key("tenant#1", "nope"), k.clone()])
        .await
        .expect("batch");
    assert_eq!(got, vec![None, Some(every_type())]);
    let page = store
        .query(Query::partition("tenant#1"))
        .await
        .expect("query");
    assert_eq!(page.items, vec![(k.clone(), every_type())]);
    assert_eq!(page.next, None);
    // An update returns the whole item, key stripped.
    let updated = store
        .update(Update::new(
            k.clone(),
            vec![UpdateAction::Set("extra".into(), Value::Null)],
        ))
        .await
        .expect("update");
    let mut expected = every_type();
    expected.insert("extra".into(), Value::Null);
    assert_eq!(updated, expected);
    // A delete returns the old item.
    assert_eq!(
        store.delete(Delete::new(k.clone())).await.expect("delete"),
        Some(expected)
    );
    assert_eq!(store.get(&k).await.expect("get"), None);
}

#[tokio::test]
async fn invalid_requests_fail_like_the_memory_store() {
    let store = store_or_skip!();
    let memory = MemoryStore::new();
    let k = key("p", "s");
    let bad_put = Put::new(key("", "s"), Item::new());
    same(
        "empty key",
        memory.put(bad_put.clone()).await,
        store.put(bad_put).await,
    )
    .await;
    let bad_item = Put::new(k.clone(), item(&[("pk", Value::s("x"))]));
    same(
        "key attribute",
        memory.put(bad_item.clone()).await,
        store.put(bad_item).await,
    )
    .await;
    let empty_set = Put::new(k.clone(), item(&[("x", Value::Ss(BTreeSet::new()))]));
    same(
        "empty set",
        memory.put(empty_set.clone()).await,
        store.put(empty_set).await,
    )
    .await;
    let big = Put::new(k.clone(), item(&[("x", Value::s("x".repeat(401 * 1024)))]));
    same(
        "too large",
        memory.put(big.clone()).await,
        store.put(big).await,
    )
    .await;
    same(
        "empty tx",
        memory.transact_write(vec![]).await,
        store.transact_write(vec![]).await,
    )
    .await;
    let dup = vec![
        TransactOp::Put(Put::new(k.clone(), Item::new())),
        TransactOp::Delete(Delete::new(k.clone())),
    ];
    same(
        "dup tx",
        memory.transact_write(dup.clone()).await,
        store.transact_write(dup).await,
    )
    .await;
    same(
        "zero limit",
        memory.query(Query::partition("p").limit(0)).await,
        store.query(Query::partition("p").limit(0)).await,
    )
    .await;
    let cursor = Some(Cursor("garbage".into()));
    same(
        "bad cursor",
        memory
            .query(Query::partition("p").after(cursor.clone()))
            .await,
        store.query(Query::partition("p").after(cursor)).await,
    )
    .await;
    type_errors_fail_alike(&memory, &store, &k).await;
}

/// Type errors DynamoDB finds are reported as the memory store reports them.
async fn type_errors_fail_alike(memory: &MemoryStore, store: &DynamoStore, k: &Key) {
    // Type errors found by DynamoDB are reported as the memory store reports them.
    seed(
        memory,
        store,
        k,
        &item(&[("s", Value::s("text")), ("n", Value::n(1))]),
    )
    .await;
    let add = Update::new(
        k.clone(),
        vec![UpdateAction::Add("s".into(), Number::from(1i64))],
    );
    same(
        "add to string",
        memory.update(add.clone()).await,
        store.update(add.clone()).await,
    )
    .await;
    let append = Update::new(k.clone(), vec![UpdateAction::Append("n".into(), vec![])]);
    same(
        "append to number",
        memory.update(append.clone()).await,
        store.update(append).await,
    )
    .await;
    let tx = vec![TransactOp::Update(add)];
    same(
        "add in tx",
        memory.transact_write(tx.clone()).await,
        store.transact_write(tx).await,
    )
    .await;
}

#[tokio::test]
async fn every_condition_form_agrees_with_the_memory_store() {
    let store = store_or_skip!();
    let memory = MemoryStore::new();
    let present = key("cond", "present");
    let expired = key("cond", "expired");
    let absent = key("cond", "absent");
    let text_ttl = key("cond", "text-ttl");
    let base = condition_item();
    let mut old = base.clone();
    old.insert(TTL_ATTRIBUTE.into(), past());

    let conditions = every_condition();
    // Each condition on a present, an expired and an absent item, as a condition check (which
    // changes nothing, so the items stay as seeded).
    seed(&memory, &store, &present, &base).await;
    seed(&memory, &store, &expired, &old).await;
    // An expiry that is not a number is ignored: the item is live.
    let mut text = base.clone();
    text.insert(TTL_ATTRIBUTE.into(), Value::s("never"));
    seed(&memory, &store, &text_ttl, &text).await;
    let mut checked = 0;
    for condition in &conditions {
        for k in [&present, &expired, &absent, &text_ttl] {
            let check = || {
                vec![TransactOp::Check(
                    ConditionCheck::new(k.clone(), condition.clone()).return_old_on_failure(),
                )]
            };
            let m = memory.transact_write(check()).await;
            let d = store.transact_write(check()).await;
            assert_eq!(d, m, "condition {condition:?} on {k:?}");
            checked += 1;
        }
    }
    assert_eq!(checked, conditions.len() * 4);
    conditions_as_writes(
        &memory,
        &store,
        &conditions,
        [Some(&base), Some(&old), Some(&text), None],
    )
    .await;
}

/// An item with one attribute of every type.
fn condition_item() -> Item {
    item(&[
        ("s", Value::s("hello")),
        ("n", num("42.5")),
        ("b", Value::B(vec![1, 2, 3])),
        ("t", Value::Bool(true)),
        ("null", Value::Null),
        ("l", Value::L(vec![Value::n(1)])),
        (
            "m",
            Value::M(BTreeMap::from([("k".to_owned(), Value::s("v"))])),
        ),
        (
            "ss",
            Value::Ss(BTreeSet::from(["a".to_owned(), "b".to_owned()])),
        ),
    ])
}

/// Every condition form: the structural ones, and each comparison of every attribute type
/// with values of every type.
fn every_condition() -> Vec<Condition> {
    let cmp = |name: &str, op: CmpOp, v: Value| Condition::Cmp(name.into(), op, v);
    let mut conditions = vec![
        Condition::item_exists(),
        Condition::item_not_exists(),
        Condition::Exists("s".into()),
        Condition::NotExists("s".into()),
        Condition::Exists("missing".into()),
        Condition::NotExists("missing".into()),
        Condition::Exists(String::new()),
        Condition::NotExists(String::new()),
        Condition::eq(PK, Value::s("cond")),
        cmp(SK, CmpOp::Ge, Value::s("f")),
        Condition::BeginsWith("s".into(), "he".into()),
        Condition::BeginsWith("s".into(), "x".into()),
        Condition::BeginsWith("s".into(), String::new()),
        Condition::BeginsWith("n".into(), String::new()),
        Condition::BeginsWith("missing".into(), "h".into()),
        Condition::BeginsWith("b".into(), "h".into()),
        Condition::eq("s", Value::s("hello")).and(Condition::Exists("n".into())),
        Condition::eq("s", Value::s("nope")).or(Condition::NotExists("n".into())),
        Condition::eq("s", Value::s("nope")).not(),
        Condition::item_not_exists().or(Condition::eq("n", num("42.50"))),
    ];
    let values = [
        Value::s("hello"),
        Value::s("hellp"),
        Value::s(""),
        num("42.5"),
        num("-1"),
        num("100"),
        Value::B(vec![1, 2, 3]),
        Value::B(vec![0xff]),
        Value::Bool(true),
        Value::Null,
        Value::L(vec![Value::n(1)]),
        Value::M(BTreeMap::from([("k".to_owned(), Value::s("v"))])),
        Value::Ss(BTreeSet::from(["b".to_owned(), "a".to_owned()])),
        Value::Ss(BTreeSet::new()),
    ];
    let ops = [
        CmpOp::Eq,
        CmpOp::Ne,
        CmpOp::Lt,
        CmpOp::Le,
        CmpOp::Gt,
        CmpOp::Ge,
    ];
    for name in ["s", "n", "b", "t", "null", "l", "m", "ss", "missing", ""] {
        for op in ops {
            for v in &values {
                conditions.push(cmp(name, op, v.clone()));
            }
        }
    }
    conditions
}

/// A sample of `conditions` as write conditions (put, update, delete) on fresh copies of each
/// source item (or none).
async fn conditions_as_writes(
    memory: &MemoryStore,
    store: &DynamoStore,
    conditions: &[Condition],
    sources: [Option<&Item>; 4],
) {
    // And a sample as write conditions (put, update, delete) on fresh copies.
    for (i, condition) in conditions.iter().enumerate().filter(|(i, _)| i % 7 == 0) {
        for (j, source) in sources.into_iter().enumerate() {
            let k = key("condw", &format!("{i}-{j}"));
            if let Some(source) = source {
                seed(memory, store, &k, source).await;
            }
            let put = Put::new(k.clone(), item(&[("w", Value::n(1))]))
                .when(condition.clone())
                .return_old_on_failure();
            same("put", memory.put(put.clone()).await, store.put(put).await).await;
            let update = Update::new(
                k.clone(),
                vec![UpdateAction::Add("w".into(), Number::from(1i64))],
            )
            .when(condition.clone())
            .return_old_on_failure();
            same(
                "update",
                memory.update(update.clone()).await,
                store.update(update).await,
            )
            .await;
            let delete = Delete::new(k.clone())
                .when(condition.clone())
                .return_old_on_failure();
            same(
                "delete",
                memory.delete(delete.clone()).await,
                store.delete(delete).await,
            )
            .await;
            same("after", memory.get(&k).await, store.get(&k).await).await;
        }
    }
}

#[tokio::test]
async fn expired_items_are_absent_everywhere() {
    let store = store_or_skip!();
    let old = key("ttl", "old");
    let live_key = key("ttl", "live");
    let text_ttl = key("ttl", "text");
    store
        .put(Put::new(
            old.clone(),
            item(&[("n", Value::n(41)), (TTL_ATTRIBUTE, past())]),
        ))
        .await
        .expect("put expired");
    let live_item = item(&[("n", Value::n(1)), (TTL_ATTRIBUTE, future())]);
    store
        .put(Put::new(live_key.clone(), live_item.clone()))
        .await
        .expect("put live");
    // An expiry that is not a number is ignored.
    let text_item = item(&[(TTL_ATTRIBUTE, Value::s("tomorrow"))]);
    store
        .put(Put::new(text_ttl.clone(), text_item.clone()))
        .await
        .expect("put text");

    assert_eq!(store.get(&old).await.expect("get"), None);
    assert_eq!(
        store.get(&live_key).await.expect("get"),
        Some(live_item.clone())
    );
    assert_eq!(
        store.get(&text_ttl).await.expect("get"),
        Some(text_item.clone())
    );
    let batch = store
        .batch_get(&[old.clone(), live_key.clone()])
        .await
        .expect("batch");
    assert_eq!(batch, vec![None, Some(live_item.clone())]);
    let page = store.query(Query::partition("ttl")).await.expect("query");
    let keys: Vec<&Key> = page.items.iter().map(|(k, _)| k).collect();
    assert_eq!(keys, vec![&live_key, &text_ttl]);

    conditions_see_expired_items_as_absent(&store, &old).await;
    updates_of_expired_items_start_empty(&store, &old).await;
}

/// Conditions see an expired item as absent.
async fn conditions_see_expired_items_as_absent(store: &DynamoStore, old: &Key) {
    // Conditions see an absent item.
    let exists = Put::new(old.clone(), Item::new()).when(Condition::item_exists());
    assert_eq!(
        store.put(exists).await,
        Err(StoreError::ConditionFailed { old: None })
    );
    let gone = Update::new(
        old.clone(),
        vec![UpdateAction::Set("x".into(), Value::n(1))],
    )
    .when(Condition::eq("n", Value::n(41)))
    .return_old_on_failure();
    assert_eq!(
        store.update(gone).await,
        Err(StoreError::ConditionFailed { old: None })
    );
    let delete = Delete::new(old.clone())
        .when(Condition::item_exists())
        .return_old_on_failure();
    assert_eq!(
        store.delete(delete).await,
        Err(StoreError::ConditionFailed { old: None })
    );

    updates_of_expired_items_start_empty(store, old).await;
    writes_over_expired_items_are_plain(store, old).await;
}

/// An update of an expired item starts from an empty item, with a condition and in a
/// transaction too.
async fn updates_of_expired_items_start_empty(store: &DynamoStore, old: &Key) {
    // An update of an expired item starts from an empty item.
    let add = Update::new(
        old.clone(),
        vec![UpdateAction::Add("n".into(), Number::from(1i64))],
    );
    assert_eq!(
        store.update(add.clone()).await.expect("add"),
        item(&[("n", Value::n(1))])
    );
    assert_eq!(
        store.update(add).await.expect("add"),
        item(&[("n", Value::n(2))])
    );

    // Same with a condition that holds on an absent item, and in a transaction.
    store
        .put(Put::new(
            old.clone(),
            item(&[("n", Value::n(41)), (TTL_ATTRIBUTE, past())]),
        ))
        .await
        .expect("put expired");
    let create = Update::new(
        old.clone(),
        vec![UpdateAction::Add("n".into(), Number::from(5i64))],
    )
    .when(Condition::item_not_exists());
    assert_eq!(
        store.update(create).await.expect("create"),
        item(&[("n", Value::n(5))])
    );
    let tx_key = key("ttl", "tx");
    store
        .put(Put::new(
            tx_key.clone(),
            item(&[("n", Value::n(41)), (TTL_ATTRIBUTE, past())]),
        ))
        .await
        .expect("put expired");
    store
        .transact_write(vec![
            TransactOp::Update(
                Update::new(
                    tx_key.clone(),
                    vec![UpdateAction::Add("n".into(), Number::from(1i64))],
                )
                .when(Condition::item_not_exists()),
            ),
            TransactOp::Put(Put::new(key("ttl", "other"), Item::new())),
        ])
        .await
        .expect("transaction");
    assert_eq!(
        store.get(&tx_key).await.expect("get"),
        Some(item(&[("n", Value::n(1))]))
    );

    writes_over_expired_items_are_plain(store, old).await;
}

/// A put over an expired item is a plain write; the delete of one returns nothing.
async fn writes_over_expired_items_are_plain(store: &DynamoStore, old: &Key) {
    // Put over an expired item is a plain write; delete of one returns nothing.
    store
        .put(Put::new(old.clone(), item(&[(TTL_ATTRIBUTE, past())])))
        .await
        .expect("put expired");
    let create =
        Put::new(old.clone(), item(&[("v", Value::n(7))])).when(Condition::item_not_exists());
    store.put(create).await.expect("put over expired");
    assert_eq!(
        store.get(old).await.expect("get"),
        Some(item(&[("v", Value::n(7))]))
    );
    store
        .put(Put::new(old.clone(), item(&[(TTL_ATTRIBUTE, past())])))
        .await
        .expect("put expired");
    assert_eq!(
        store
            .delete(Delete::new(old.clone()))
            .await
            .expect("delete"),
        None
    );
}

async fn collect_pages(store: &DynamoStore, query: Query) -> Vec<Vec<String>> {
    let mut pages = Vec::new();
    let mut cursor = None;
    loop {
        let page = store
            .query(query.clone().after(cursor))
            .await
            .expect("query");
        pages.push(page.items.iter().map(|(k, _)| k.sk.clone()).collect());
        cursor = page.next;
        if cursor.is_none() {
            return pages;
        }
        assert!(pages.len() < 100, "paging does not end");
    }
}

#[tokio::test]
async fn queries_page_in_both_directions() {
    let store = store_or_skip!();
    let memory = MemoryStore::new();
    for i in 0..25 {
        let k = key("q", &format!("item#{i:02}"));
        seed(&memory, &store, &k, &item(&[("i", Value::n(i))])).await;
    }
    seed(&memory, &store, &key("q2", "item#00"), &Item::new()).await;
    let sizes = |pages: &Vec<Vec<String>>| pages.iter().map(Vec::len).collect::<Vec<_>>();
    let asc = collect_pages(&store, Query::partition("q").limit(7)).await;
    assert_eq!(sizes(&asc), vec![7, 7, 7, 4]);
    let all: Vec<String> = (0..25).map(|i| format!("item#{i:02}")).collect();
    assert_eq!(asc.concat(), all);
    let desc = collect_pages(&store, Query::partition("q").limit(7).descending()).await;
    assert_eq!(sizes(&desc), vec![7, 7, 7, 4]);
    let mut reversed = all.clone();
    reversed.reverse();
    assert_eq!(desc.concat(), reversed);
    // An exact multiple of the limit ends without an empty page, as in memory.
    let exact = collect_pages(&store, Query::partition("q").limit(5)).await;
    assert_eq!(sizes(&exact), vec![5, 5, 5, 5, 5]);

    // Every sort condition, both directions, several limits: page by page as in memory.
    let conditions = [
        None,
        Some(SC::Eq("item#03".into())),
        Some(SC::BeginsWith("item#1".into())),
        Some(SC::Between("item#05".into(), "item#17".into())),
        Some(SC::Between("item#17".into(), "item#05".into())),
        Some(SC::Lt("item#09".into())),
        Some(SC::Le("item#09".into())),
        Some(SC::Gt("item#20".into())),
        Some(SC::Ge("item#20".into())),
        Some(SC::Gt(String::new())),
        Some(SC::Lt(String::new())),
        Some(SC::BeginsWith(String::new())),
    ];
    for condition in &conditions {
        for descending in [false, true] {
            for limit in [None, Some(1), Some(3), Some(100)] {
                let mut q = Query::partition("q");
                q.sort = condition.clone();
                q.descending = descending;
                q.limit = limit;
                let mut cursor = None;
                loop {
                    let m = memory
                        .query(q.clone().after(cursor.clone()))
                        .await
                        .expect("memory");
                    let d = store
                        .query(q.clone().after(cursor.clone()))
                        .await
                        .expect("dynamo");
                    assert_eq!(d, m, "{q:?} after {cursor:?}");
                    cursor = m.next;
                    if cursor.is_none() {
                        break;
                    }
                }
            }
        }
    }
    cursors_are_positions(&memory, &store, &conditions).await;
}

/// A cursor reused with another sort condition continues where it points; a cursor of
/// another partition is refused.
async fn cursors_are_positions(
    memory: &MemoryStore,
    store: &DynamoStore,
    conditions: &[Option<SC>],
) {
    // A cursor reused with another sort condition continues where it points.
    let first = memory
        .query(Query::partition("q").limit(12))
        .await
        .expect("memory");
    for condition in conditions {
        for descending in [false, true] {
            let mut q = Query::partition("q").after(first.next.clone());
            q.sort = condition.clone();
            q.descending = descending;
            let m = memory.query(q.clone()).await.expect("memory");
            let d = store.query(q.clone()).await.expect("dynamo");
            assert_eq!(d, m, "{q:?}");
        }
    }
    // A cursor of another partition is refused.
    let other = store.query(Query::partition("q2").after(first.next)).await;
    assert_eq!(other, Err(StoreError::Invalid(Invalid::BadCursor)));
}

#[tokio::test]
async fn queries_skip_expired_items_across_pages() {
    let store = store_or_skip!();
    let mut live_keys = Vec::new();
    for i in 0..25 {
        let sk = format!("item#{i:02}");
        let mut it = item(&[("i", Value::n(i))]);
        if i % 3 == 0 {
            it.insert(TTL_ATTRIBUTE.into(), past());
        } else {
            live_keys.push(sk.clone());
        }
        store.put(Put::new(key("qe", &sk), it)).await.expect("put");
    }
    for descending in [false, true] {
        let mut q = Query::partition("qe").limit(7);
        q.descending = descending;
        let pages = collect_pages(&store, q).await;
        assert!(pages.iter().all(|p| p.len() <= 7));
        let mut expected = live_keys.clone();
        if descending {
            expected.reverse();
        }
        assert_eq!(pages.concat(), expected);
    }
}

#[tokio::test]
async fn transactions_are_all_or_nothing_with_reasons() {
    let store = store_or_skip!();
    let memory = MemoryStore::new();
    let a = key("tx", "a");
    let b = key("tx", "b");
    let c = key("tx", "c");
    let d = key("tx", "d");
    seed(&memory, &store, &a, &item(&[("v", Value::n(1))])).await;
    seed(&memory, &store, &b, &item(&[("v", Value::n(2))])).await;
    let ops = vec![
        TransactOp::Put(
            Put::new(a.clone(), item(&[("v", Value::n(10))]))
                .when(Condition::item_not_exists())
                .return_old_on_failure(),
        ),
        TransactOp::Update(Update::new(
            c.clone(),
            vec![UpdateAction::Add("v".into(), Number::from(1i64))],
        )),
        TransactOp::Delete(Delete::new(b.clone()).when(Condition::eq("v", Value::n(3)))),
        TransactOp::Check(ConditionCheck::new(d.clone(), Condition::item_not_exists())),
    ];
    let m = memory.transact_write(ops.clone()).await;
    let r = store.transact_write(ops).await;
    assert_eq!(
        r,
        Err(StoreError::TransactionCancelled {
            reasons: vec![
                CancelReason::ConditionFailed {
                    old: Some(item(&[("v", Value::n(1))]))
                },
                CancelReason::None,
                CancelReason::ConditionFailed { old: None },
                CancelReason::None,
            ]
        })
    );
    assert_eq!(r, m);
    // Nothing was written.
    let keys = [a.clone(), b.clone(), c.clone(), d.clone()];
    assert_eq!(
        store.batch_get(&keys).await.expect("batch"),
        vec![
            Some(item(&[("v", Value::n(1))])),
            Some(item(&[("v", Value::n(2))])),
            None,
            None
        ]
    );
    // The same transaction with conditions that hold commits everything.
    let ops = vec![
        TransactOp::Put(Put::new(a.clone(), item(&[("v", Value::n(10))]))),
        TransactOp::Update(Update::new(
            c.clone(),
            vec![UpdateAction::Add("v".into(), Number::from(1i64))],
        )),
        TransactOp::Delete(Delete::new(b.clone()).when(Condition::eq("v", Value::n(2)))),
        TransactOp::Check(ConditionCheck::new(d.clone(), Condition::item_not_exists())),
    ];
    store.transact_write(ops.clone()).await.expect("commit");
    memory.transact_write(ops).await.expect("commit");
    assert_eq!(store.batch_get(&keys).await, memory.batch_get(&keys).await);
}

#[tokio::test]
async fn failed_conditions_return_the_old_item_when_asked() {
    let store = store_or_skip!();
    let k = key("old", "k");
    let current = item(&[("v", Value::n(1))]);
    store
        .put(Put::new(k.clone(), current.clone()))
        .await
        .expect("put");
    let cond = Condition::item_not_exists();
    let put = Put::new(k.clone(), Item::new()).when(cond.clone());
    assert_eq!(
        store.put(put.clone()).await,
        Err(StoreError::ConditionFailed { old: None })
    );
    let asked = StoreError::ConditionFailed {
        old: Some(current.clone()),
    };
    assert_eq!(
        store.put(put.return_old_on_failure()).await.unwrap_err(),
        asked
    );
    let update =
        Update::new(k.clone(), vec![UpdateAction::Set("x".into(), Value::n(1))]).when(cond.clone());
    assert_eq!(
        store.update(update.clone()).await,
        Err(StoreError::ConditionFailed { old: None })
    );
    assert_eq!(
        store
            .update(update.return_old_on_failure())
            .await
            .unwrap_err(),
        asked
    );
    let delete = Delete::new(k.clone()).when(cond.clone());
    assert_eq!(
        store.delete(delete.clone()).await,
        Err(StoreError::ConditionFailed { old: None })
    );
    assert_eq!(
        store
            .delete(delete.return_old_on_failure())
            .await
            .unwrap_err(),
        asked
    );
    assert_eq!(store.get(&k).await.expect("get"), Some(current));
}

#[tokio::test]
async fn batch_get_answers_in_key_order() {
    let store = store_or_skip!();
    let keys: Vec<Key> = (0..100)
        .map(|i| key(&format!("bg{}", i % 7), &format!("{i}")))
        .collect();
    for k in keys.iter().step_by(3) {
        store
            .put(Put::new(k.clone(), item(&[("id", Value::s(&k.sk))])))
            .await
            .expect("put");
    }
    let got = store.batch_get(&keys).await.expect("batch");
    assert_eq!(got.len(), 100);
    for (i, (k, v)) in keys.iter().zip(&got).enumerate() {
        let expected = (i % 3 == 0).then(|| item(&[("id", Value::s(&k.sk))]));
        assert_eq!(v, &expected, "{k:?}");
    }
    assert_eq!(store.batch_get(&[]).await, Ok(vec![]));
}

/// Adds 1 to `n` of the item at `k`.
fn add(k: &Key) -> Update {
    Update::new(
        k.clone(),
        vec![UpdateAction::Add("n".into(), Number::from(1i64))],
    )
}

#[tokio::test]
async fn transactions_treat_expired_items_as_absent_like_memory() {
    let store = store_or_skip!();
    let memory = MemoryStore::new();
    let expired = item(&[("n", Value::n(41)), (TTL_ATTRIBUTE, past())]);
    let keys: Vec<Key> = (0..4).map(|i| key("txe", &format!("{i}"))).collect();
    for k in &keys {
        seed(&memory, &store, k, &expired).await;
    }
    // One operation fails for real: the expired updates report no fault, nothing is written.
    let failing = vec![
        TransactOp::Update(add(&keys[0])),
        TransactOp::Update(add(&keys[1]).when(Condition::item_not_exists())),
        TransactOp::Check(
            ConditionCheck::new(keys[2].clone(), Condition::item_exists()).return_old_on_failure(),
        ),
        TransactOp::Update(
            add(&keys[3])
                .when(Condition::item_exists())
                .return_old_on_failure(),
        ),
    ];
    let m = memory.transact_write(failing.clone()).await;
    let d = store.transact_write(failing).await;
    assert_eq!(d, m);
    assert!(matches!(d, Err(StoreError::TransactionCancelled { .. })));
    assert_eq!(store.batch_get(&keys).await, memory.batch_get(&keys).await);
    // Without the failing operations, every expired item starts again from nothing.
    let passing = vec![
        TransactOp::Update(add(&keys[0])),
        TransactOp::Update(add(&keys[1]).when(Condition::item_not_exists())),
        TransactOp::Check(ConditionCheck::new(
            keys[2].clone(),
            Condition::item_not_exists(),
        )),
        TransactOp::Delete(Delete::new(keys[3].clone()).when(Condition::item_not_exists())),
    ];
    same(
        "passing",
        memory.transact_write(passing.clone()).await,
        store.transact_write(passing).await,
    )
    .await;
    assert_eq!(store.batch_get(&keys).await, memory.batch_get(&keys).await);
    assert_eq!(
        store.get(&keys[0]).await.expect("get"),
        Some(item(&[("n", Value::n(1))]))
    );
    conditions_on_expired_attributes_see_nothing(&memory, &store, &keys, &expired).await;
}

/// Conditions on attributes of an expired item see nothing, in a transaction as alone.
async fn conditions_on_expired_attributes_see_nothing(
    memory: &MemoryStore,
    store: &DynamoStore,
    keys: &[Key],
    expired: &Item,
) {
    // Conditions on attributes of an expired item see nothing.
    store
        .put(Put::new(keys[2].clone(), expired.clone()))
        .await
        .expect("put");
    memory
        .put(Put::new(keys[2].clone(), expired.clone()))
        .await
        .expect("put");
    for condition in [
        Condition::eq("n", Value::n(41)),
        Condition::Cmp("n".into(), CmpOp::Ne, Value::n(41)),
        Condition::NotExists("n".into()),
        Condition::Cmp(
            TTL_ATTRIBUTE.into(),
            CmpOp::Lt,
            Value::n(outside::Clock::now(&outside::SystemClock)),
        ),
    ] {
        let op = || {
            vec![TransactOp::Update(
                add(&keys[2])
                    .when(condition.clone())
                    .return_old_on_failure(),
            )]
        };
        same(
            "expired condition",
            memory.transact_write(op()).await,
            store.transact_write(op()).await,
        )
        .await;
        same(
            "after",
            memory.get(&keys[2]).await,
            store.get(&keys[2]).await,
        )
        .await;
        store
            .put(Put::new(keys[2].clone(), expired.clone()))
            .await
            .expect("put");
        memory
            .put(Put::new(keys[2].clone(), expired.clone()))
            .await
            .expect("put");
        let update = add(&keys[2])
            .when(condition.clone())
            .return_old_on_failure();
        same(
            "expired update",
            memory.update(update.clone()).await,
            store.update(update).await,
        )
        .await;
        store
            .put(Put::new(keys[2].clone(), expired.clone()))
            .await
            .expect("put");
        memory
            .put(Put::new(keys[2].clone(), expired.clone()))
            .await
            .expect("put");
    }
}
