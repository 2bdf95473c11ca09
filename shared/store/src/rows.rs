//! The store's operations on any table of rows that one caller holds alone while it works:
//! the memory backend's map, and a Durable Object's SQLite database at the edge (where a
//! request runs alone until it awaits, and writes made without an await commit together).
//!
//! Each function reads, plans with [`crate::engine`], and only then writes, so a failed
//! condition or an invalid request writes nothing. Keeping this in one place is what makes the
//! backends built on it agree with each other and with the conformance suite.

use crate::engine::{self, Effect, Failed};
use crate::{Delete, Item, Key, Page, Put, Query, StoreError, TransactOp, Update, Value};

/// The rows of a partition, in order, as a backend reads them.
pub type Scan<'a> = Box<dyn Iterator<Item = Result<(Key, Item), StoreError>> + 'a>;

/// A table of items by key, held by the caller for the whole of one store operation.
pub trait Rows {
    /// The stored item at `key` (live or expired).
    fn get(&self, key: &Key) -> Result<Option<Item>, StoreError>;
    /// Stores `item` at `key`.
    fn set(&mut self, key: &Key, item: &Item) -> Result<(), StoreError>;
    /// Removes the item at `key`.
    fn remove(&mut self, key: &Key) -> Result<(), StoreError>;
    /// The items of partition `pk` in sort-key order (reversed when `descending`), starting
    /// after `after` (exclusive) when given, live or expired.
    fn scan<'a>(
        &'a self,
        pk: &str,
        after: Option<&str>,
        descending: bool,
    ) -> Result<Scan<'a>, StoreError>;
}

/// The live item at `key`.
pub fn get(rows: &impl Rows, key: &Key, now: i64) -> Result<Option<Item>, StoreError> {
    engine::validate_key(key)?;
    Ok(rows.get(key)?.filter(|i| engine::is_live(i, now)))
}

/// The live items at `keys`, in their order.
pub fn batch_get(
    rows: &impl Rows,
    keys: &[Key],
    now: i64,
) -> Result<Vec<Option<Item>>, StoreError> {
    engine::validate_batch(keys)?;
    keys.iter()
        .map(|k| Ok(rows.get(k)?.filter(|i| engine::is_live(i, now))))
        .collect()
}

/// One write; returns the stored item for a put or update, the removed live item for a delete.
fn write_one(rows: &mut impl Rows, op: &TransactOp, now: i64) -> Result<Option<Item>, StoreError> {
    engine::validate_op(op)?;
    let stored = rows.get(op.key())?;
    let old = stored.as_ref().filter(|i| engine::is_live(i, now)).cloned();
    match engine::plan(op, stored.as_ref(), now)? {
        Err(Failed { old }) => Err(StoreError::ConditionFailed { old }),
        Ok(effect) => Ok(apply(rows, op.key(), effect)?.or(old)),
    }
}

/// Applies a planned effect; returns the stored item for a store.
fn apply(rows: &mut impl Rows, key: &Key, effect: Effect) -> Result<Option<Item>, StoreError> {
    match effect {
        Effect::Store(item) => {
            rows.set(key, &item)?;
            Ok(Some(item))
        }
        Effect::Remove => rows.remove(key).map(|()| None),
        Effect::Keep => Ok(None),
    }
}

/// Writes a whole item.
pub fn put(rows: &mut impl Rows, put: Put, now: i64) -> Result<(), StoreError> {
    write_one(rows, &TransactOp::Put(put), now).map(|_| ())
}

/// Changes an item and returns it as stored.
pub fn update(rows: &mut impl Rows, update: Update, now: i64) -> Result<Item, StoreError> {
    write_one(rows, &TransactOp::Update(update), now).map(Option::unwrap_or_default)
}

/// Removes an item; returns the live item it removed.
pub fn delete(rows: &mut impl Rows, delete: Delete, now: i64) -> Result<Option<Item>, StoreError> {
    write_one(rows, &TransactOp::Delete(delete), now)
}

/// One page of a partition's live items.
pub fn query(rows: &impl Rows, query: &Query, now: i64) -> Result<Page, StoreError> {
    let after = engine::validate_query(query)?;
    let limit = query.limit.map_or(usize::MAX, |l| l as usize);
    let mut items = Vec::new();
    let mut more = false;
    for row in rows.scan(&query.pk, after.as_deref(), query.descending)? {
        let (key, item) = row?;
        let wanted = query.sort.as_ref().is_none_or(|c| c.matches(&key.sk));
        if !wanted || !engine::is_live(&item, now) {
            continue;
        }
        if items.len() == limit {
            more = true;
            break;
        }
        items.push((key, item));
    }
    let next = if more {
        items.last().map(|(k, _)| engine::encode_cursor(k))
    } else {
        None
    };
    Ok(Page { items, next })
}

/// Up to 100 operations on distinct items, all or nothing.
pub fn transact_write(
    rows: &mut impl Rows,
    ops: &[TransactOp],
    now: i64,
) -> Result<(), StoreError> {
    engine::validate_transaction(ops)?;
    let effects = engine::plan_all(ops, |key| rows.get(key), now)?;
    for (op, effect) in ops.iter().zip(effects) {
        apply(rows, op.key(), effect)?;
    }
    Ok(())
}

/// The expiry of an item in whole seconds (`None` without one): for backends that index it to
/// delete expired rows, and for showing when something expires.
pub fn expiry(item: &Item) -> Option<i64> {
    match item.get(crate::TTL_ATTRIBUTE) {
        Some(Value::N(n)) => n.as_str().split('.').next()?.parse().ok(),
        _ => None,
    }
}
