//! Duplicate guards: a record that must be unique by a business key (a customer's email, a
//! booking's customer, technician and start) holds a claim item on that key, and the claim
//! follows the record in the same transaction as every change of it: taken on create, moved
//! when the key changes, given back when the record is cancelled or deleted. A record created
//! as a deliberate duplicate (`separate`) holds none and never touches another's claim.

use store::{Condition, Item, Key, Put, Value};

use crate::{BookingError, Change};

/// Takes the claim on `key` for `holder`; when another record holds it, the change fails as a
/// duplicate of that record (`kind` and `what` name the record kind and the business key).
pub(crate) fn take<T>(
    change: &mut Change<T>,
    key: Key,
    holder: &str,
    kind: &'static str,
    what: &'static str,
) {
    let mut claim = Item::new();
    claim.insert("holder".into(), Value::s(holder));
    let op = Put::new(key, claim)
        .when(Condition::item_not_exists())
        .return_old_on_failure();
    change.push(op, move |current| BookingError::Duplicate {
        kind,
        key: what,
        existing: current
            .and_then(|i| i.get("holder"))
            .and_then(Value::as_s)
            .unwrap_or("an existing record")
            .to_owned(),
    });
}

/// Gives back `holder`'s claim on `key`: removed when `holder` holds it, left alone when it
/// is gone already (records from before claims followed them), and never another record's.
pub(crate) fn release<T>(change: &mut Change<T>, key: Key, holder: &str) {
    let mine = Condition::NotExists("holder".into()).or(Condition::eq("holder", Value::s(holder)));
    change.push(store::Delete::new(key).when(mine), |_| {
        BookingError::Rejected(
            "the record's duplicate claim is held by another record; read it again".into(),
        )
    });
}

/// Moves `holder`'s claim from `from` to `to` (nothing when the key did not change).
pub(crate) fn relocate<T>(
    change: &mut Change<T>,
    from: Key,
    to: Key,
    holder: &str,
    kind: &'static str,
    what: &'static str,
) {
    if from != to {
        release(change, from, holder);
        take(change, to, holder, kind, what);
    }
}
