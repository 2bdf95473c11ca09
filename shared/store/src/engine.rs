//! Request validation and write planning shared by the backends that evaluate conditions
//! themselves (memory, SQLite). Keeping it in one place is what makes them agree.

use std::collections::HashSet;

use base64::Engine as _;

use crate::{
    CancelReason, Cursor, Invalid, Item, Key, MAX_BATCH_GET, MAX_ITEM_BYTES, MAX_TRANSACT_OPS,
    Number, PK, SK, StoreError, TTL_ATTRIBUTE, TransactOp, UpdateAction, Value,
};

/// Whether an item is live at `now`: it has no expiry, or its expiry is still ahead.
/// An expiry that is not a number is ignored, as DynamoDB's TTL ignores it.
pub fn is_live(item: &Item, now: i64) -> bool {
    match item.get(TTL_ATTRIBUTE) {
        Some(Value::N(expiry)) => expiry.cmp_integer(now).is_gt(),
        _ => true,
    }
}

/// Checks a key.
pub fn validate_key(key: &Key) -> Result<(), Invalid> {
    if key.pk.is_empty() || key.sk.is_empty() {
        return Err(Invalid::EmptyKey);
    }
    Ok(())
}

fn validate_value(name: &str, value: &Value) -> Result<(), Invalid> {
    match value {
        Value::Ss(set) if set.is_empty() => Err(Invalid::EmptySet(name.to_owned())),
        Value::L(items) => items.iter().try_for_each(|v| validate_value(name, v)),
        Value::M(map) => map.values().try_for_each(|v| validate_value(name, v)),
        _ => Ok(()),
    }
}

/// Checks an item that is about to be stored at `key`.
pub fn validate_item(key: &Key, item: &Item) -> Result<(), Invalid> {
    validate_key(key)?;
    for (name, value) in item {
        if name == PK || name == SK || name.is_empty() {
            return Err(Invalid::BadAttribute(name.clone()));
        }
        validate_value(name, value)?;
    }
    let size = crate::item_size(key, item);
    if size > MAX_ITEM_BYTES {
        return Err(Invalid::ItemTooLarge { size });
    }
    Ok(())
}

/// Checks an update's actions before any item is read.
pub fn validate_actions(actions: &[UpdateAction]) -> Result<(), Invalid> {
    if actions.is_empty() {
        return Err(Invalid::Empty);
    }
    let mut seen = HashSet::new();
    for (i, action) in actions.iter().enumerate() {
        let name = action.attribute();
        // An update names a handful of attributes: comparing each with those before it costs
        // less than building a set.
        let repeated = if actions.len() <= SMALL_BATCH {
            actions[..i].iter().any(|before| before.attribute() == name)
        } else {
            !seen.insert(name)
        };
        if name == PK || name == SK || name.is_empty() || repeated {
            return Err(Invalid::BadAttribute(name.to_owned()));
        }
        if let UpdateAction::Set(name, value) = action {
            validate_value(name, value)?;
        }
    }
    Ok(())
}

/// Applies update actions to the current item (absent or expired counts as empty).
pub fn apply_actions(current: Option<&Item>, actions: &[UpdateAction]) -> Result<Item, Invalid> {
    let mut item = current.cloned().unwrap_or_default();
    for action in actions {
        match action {
            UpdateAction::Set(name, value) => {
                item.insert(name.clone(), value.clone());
            }
            UpdateAction::Remove(name) => {
                item.remove(name);
            }
            UpdateAction::Add(name, delta) => {
                let base = match item.get(name) {
                    None => Number::from(0i64),
                    Some(Value::N(n)) => n.clone(),
                    Some(other) => {
                        return Err(Invalid::WrongType {
                            attribute: name.clone(),
                            reason: format!("cannot add a number to a {}", other.type_name()),
                        });
                    }
                };
                let sum = base.checked_add(delta).map_err(|e| Invalid::WrongType {
                    attribute: name.clone(),
                    reason: e.to_string(),
                })?;
                item.insert(name.clone(), Value::N(sum));
            }
            UpdateAction::Append(name, values) => match item.get_mut(name) {
                None => {
                    item.insert(name.clone(), Value::L(values.clone()));
                }
                Some(Value::L(list)) => list.extend(values.iter().cloned()),
                Some(other) => {
                    return Err(Invalid::WrongType {
                        attribute: name.clone(),
                        reason: format!("cannot append to a {}", other.type_name()),
                    });
                }
            },
        }
    }
    Ok(item)
}

/// What a planned write does to the stored item.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// Store this item at the key.
    Store(Item),
    /// Remove the item at the key.
    Remove,
    /// Leave the item alone (a condition check).
    Keep,
}

/// A write's condition failed; carries the current item if the caller asked for it.
#[derive(Debug, Clone, PartialEq)]
pub struct Failed {
    /// The current live item, when asked for.
    pub old: Option<Item>,
}

/// Whether `condition` holds on the live item at `key` as conditions see it (with its key
/// attributes), without copying the item.
fn holds_on_live(condition: &crate::Condition, key: &Key, live: Option<&Item>) -> bool {
    let Some(item) = live else {
        return condition.holds(None);
    };
    let (pk, sk) = (Value::S(key.pk.clone()), Value::S(key.sk.clone()));
    condition.holds_for(&|name| match name {
        PK => Some(&pk),
        SK => Some(&sk),
        _ => item.get(name),
    })
}

/// Plans one operation against the stored item (`stored` may be expired; this function
/// decides). Returns the effect, or the failed condition.
pub fn plan(
    op: &TransactOp,
    stored: Option<&Item>,
    now: i64,
) -> Result<Result<Effect, Failed>, Invalid> {
    let key = op.key();
    let live = stored.filter(|i| is_live(i, now));
    if let Some(condition) = op.condition()
        && !holds_on_live(condition, key, live)
    {
        let old = if op.wants_old_on_failure() {
            live.cloned()
        } else {
            None
        };
        return Ok(Err(Failed { old }));
    }
    let effect = match op {
        TransactOp::Put(put) => Effect::Store(put.item.clone()),
        TransactOp::Update(update) => {
            let item = apply_actions(live, &update.actions)?;
            validate_item(key, &item)?;
            Effect::Store(item)
        }
        TransactOp::Delete(_) => Effect::Remove,
        TransactOp::Check(_) => Effect::Keep,
    };
    Ok(Ok(effect))
}

/// Checks a query before any item is read; returns the sort key its cursor resumes after.
pub fn validate_query(query: &crate::Query) -> Result<Option<String>, Invalid> {
    if query.limit == Some(0) {
        return Err(Invalid::ZeroLimit);
    }
    if query.pk.is_empty() {
        return Err(Invalid::EmptyKey);
    }
    query
        .cursor
        .as_ref()
        .map(|c| decode_cursor(c, &query.pk))
        .transpose()
}

/// Plans every operation of a transaction against its stored item (`stored` reads one);
/// the effects in order, or the cancellation naming each operation whose condition failed.
/// Nothing is written here: a caller applies the effects only when all were planned.
pub fn plan_all(
    ops: &[TransactOp],
    mut stored: impl FnMut(&Key) -> Result<Option<Item>, crate::StoreError>,
    now: i64,
) -> Result<Vec<Effect>, crate::StoreError> {
    let mut effects = Vec::with_capacity(ops.len());
    let mut failures = Vec::with_capacity(ops.len());
    for op in ops {
        match plan(op, stored(op.key())?.as_ref(), now)? {
            Ok(effect) => {
                effects.push(effect);
                failures.push(None);
            }
            Err(failed) => failures.push(Some(failed)),
        }
    }
    if failures.iter().any(Option::is_some) {
        return Err(cancelled(failures));
    }
    Ok(effects)
}

/// Checks one operation before any item is read.
pub fn validate_op(op: &TransactOp) -> Result<(), Invalid> {
    validate_key(op.key())?;
    match op {
        TransactOp::Put(put) => validate_item(&put.key, &put.item),
        TransactOp::Update(update) => validate_actions(&update.actions),
        TransactOp::Delete(_) | TransactOp::Check(_) => Ok(()),
    }
}

/// Checks a whole transaction before any item is read.
pub fn validate_transaction(ops: &[TransactOp]) -> Result<(), Invalid> {
    if ops.is_empty() {
        return Err(Invalid::Empty);
    }
    if ops.len() > MAX_TRANSACT_OPS {
        return Err(Invalid::TooManyOperations {
            count: ops.len(),
            limit: MAX_TRANSACT_OPS,
        });
    }
    for op in ops {
        validate_op(op)?;
    }
    if let Some(key) = repeated(ops.iter().map(TransactOp::key), ops.len()) {
        return Err(Invalid::DuplicateKey(key.clone()));
    }
    let size: usize = ops.iter().map(op_size).sum();
    if size > crate::MAX_TRANSACT_BYTES {
        return Err(Invalid::TransactionTooLarge { size });
    }
    Ok(())
}

/// What an operation weighs in its transaction: its item (a put), the values it writes (an
/// update), or its key.
fn op_size(op: &TransactOp) -> usize {
    let key = op.key().pk.len() + op.key().sk.len();
    match op {
        TransactOp::Put(p) => crate::item_size(&p.key, &p.item),
        TransactOp::Update(u) => {
            let values: usize = u
                .actions
                .iter()
                .map(|a| match a {
                    UpdateAction::Set(name, v) => name.len() + v.size(),
                    UpdateAction::Append(name, vs) => {
                        name.len() + vs.iter().map(Value::size).sum::<usize>()
                    }
                    UpdateAction::Remove(name) | UpdateAction::Add(name, _) => name.len() + 21,
                })
                .sum();
            key + values
        }
        TransactOp::Delete(_) | TransactOp::Check(_) => key,
    }
}

/// Checks the keys of a batch read.
pub fn validate_batch(keys: &[Key]) -> Result<(), Invalid> {
    validate_split_batch(keys, &[])
}

/// Up to this many keys are checked for duplicates without a set.
const SMALL_BATCH: usize = 16;

/// The first of `count` keys that repeats one before it. A call's batch or transaction is a
/// handful of keys: comparing each with those before it costs less than building a set.
fn repeated<'a>(keys: impl Iterator<Item = &'a Key> + Clone, count: usize) -> Option<&'a Key> {
    if count <= SMALL_BATCH {
        return keys
            .clone()
            .enumerate()
            .find(|&(i, key)| keys.clone().take(i).any(|before| before == key))
            .map(|(_, key)| key);
    }
    let mut seen = HashSet::new();
    keys.into_iter().find(|key| !seen.insert(*key))
}

/// Checks a batch read of `keys` and `more` together, as one batch (`Store::batch_get_derived`).
pub fn validate_split_batch(keys: &[Key], more: &[Key]) -> Result<(), Invalid> {
    let count = keys.len() + more.len();
    if count > MAX_BATCH_GET {
        return Err(Invalid::TooManyOperations {
            count,
            limit: MAX_BATCH_GET,
        });
    }
    for key in keys.iter().chain(more) {
        validate_key(key)?;
    }
    if let Some(key) = repeated(keys.iter().chain(more), count) {
        return Err(Invalid::DuplicateKey(key.clone()));
    }
    Ok(())
}

/// Turns per-operation failures into the transaction's cancellation error.
pub fn cancelled(failures: Vec<Option<Failed>>) -> StoreError {
    StoreError::TransactionCancelled {
        reasons: failures
            .into_iter()
            .map(|f| match f {
                None => CancelReason::None,
                Some(Failed { old }) => CancelReason::ConditionFailed { old },
            })
            .collect(),
    }
}

/// Encodes the last key of a page as an opaque cursor.
pub fn encode_cursor(key: &Key) -> Cursor {
    let json = serde_json::to_vec(key).unwrap_or_default();
    Cursor(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(json))
}

/// Decodes a cursor issued for partition `pk` into the sort key where the page ended.
pub fn decode_cursor(cursor: &Cursor, pk: &str) -> Result<String, Invalid> {
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(&cursor.0)
        .map_err(|_| Invalid::BadCursor)?;
    let key: Key = serde_json::from_slice(&bytes).map_err(|_| Invalid::BadCursor)?;
    if key.pk != pk {
        return Err(Invalid::BadCursor);
    }
    Ok(key.sk)
}
