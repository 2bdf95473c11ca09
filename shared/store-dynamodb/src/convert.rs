//! Store values and items to DynamoDB attribute values and back, byte for byte.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use aws_sdk_dynamodb::primitives::Blob;
use aws_sdk_dynamodb::types::AttributeValue;
use store::{Invalid, Item, Key, Number, PK, SK, StoreError, Value};

/// A DynamoDB item as the SDK carries it.
pub(crate) type Raw = HashMap<String, AttributeValue>;

/// One store value as a DynamoDB attribute value.
pub(crate) fn to_av(value: &Value) -> AttributeValue {
    match value {
        Value::S(s) => AttributeValue::S(s.clone()),
        Value::N(n) => AttributeValue::N(n.as_str().to_owned()),
        Value::B(b) => AttributeValue::B(Blob::new(b.clone())),
        Value::Bool(b) => AttributeValue::Bool(*b),
        Value::Null => AttributeValue::Null(true),
        Value::L(items) => AttributeValue::L(items.iter().map(to_av).collect()),
        Value::M(map) => {
            AttributeValue::M(map.iter().map(|(k, v)| (k.clone(), to_av(v))).collect())
        }
        Value::Ss(set) => AttributeValue::Ss(set.iter().cloned().collect()),
    }
}

fn unsupported(name: &str, kind: &str) -> StoreError {
    StoreError::Invalid(Invalid::WrongType {
        attribute: name.to_owned(),
        reason: format!("the store does not use DynamoDB type {kind}"),
    })
}

/// One DynamoDB attribute value as a store value (`name` is for error messages).
pub(crate) fn from_av(name: &str, value: &AttributeValue) -> Result<Value, StoreError> {
    Ok(match value {
        AttributeValue::S(s) => Value::S(s.clone()),
        AttributeValue::N(n) => Value::N(Number::parse(n).map_err(|e| {
            StoreError::Invalid(Invalid::WrongType {
                attribute: name.to_owned(),
                reason: e.to_string(),
            })
        })?),
        AttributeValue::B(b) => Value::B(b.as_ref().to_vec()),
        AttributeValue::Bool(b) => Value::Bool(*b),
        AttributeValue::Null(_) => Value::Null,
        AttributeValue::L(items) => Value::L(
            items
                .iter()
                .map(|v| from_av(name, v))
                .collect::<Result<_, _>>()?,
        ),
        AttributeValue::M(map) => Value::M(
            map.iter()
                .map(|(k, v)| Ok((k.clone(), from_av(name, v)?)))
                .collect::<Result<BTreeMap<_, _>, StoreError>>()?,
        ),
        AttributeValue::Ss(set) => Value::Ss(set.iter().cloned().collect::<BTreeSet<_>>()),
        AttributeValue::Ns(_) => return Err(unsupported(name, "NS")),
        AttributeValue::Bs(_) => return Err(unsupported(name, "BS")),
        // The SDK's enum is non-exhaustive: a type added after this code was written.
        _ => return Err(unsupported(name, "unknown")),
    })
}

/// The key as DynamoDB's key map.
pub(crate) fn key_to_raw(key: &Key) -> Raw {
    HashMap::from([
        (PK.to_owned(), AttributeValue::S(key.pk.clone())),
        (SK.to_owned(), AttributeValue::S(key.sk.clone())),
    ])
}

/// An item with its key, as DynamoDB stores it.
pub(crate) fn item_to_raw(key: &Key, item: &Item) -> Raw {
    let mut raw = key_to_raw(key);
    raw.extend(item.iter().map(|(k, v)| (k.clone(), to_av(v))));
    raw
}

/// A stored item without its key attributes (the store's items never carry the key).
pub(crate) fn item_from_raw(raw: &Raw) -> Result<Item, StoreError> {
    raw.iter()
        .filter(|(name, _)| name.as_str() != PK && name.as_str() != SK)
        .map(|(name, value)| Ok((name.clone(), from_av(name, value)?)))
        .collect()
}

/// The key of a stored item (or of a `LastEvaluatedKey`).
pub(crate) fn key_from_raw(raw: &Raw) -> Result<Key, StoreError> {
    let part = |name: &str| match raw.get(name) {
        Some(AttributeValue::S(s)) => Ok(s.clone()),
        _ => Err(StoreError::Unavailable(format!(
            "DynamoDB returned an item without a string {name:?} attribute"
        ))),
    };
    Ok(Key {
        pk: part(PK)?,
        sk: part(SK)?,
    })
}

/// An optional raw item as a store item; an empty map (DynamoDB's "nothing") is `None`.
pub(crate) fn opt_item(raw: Option<&Raw>) -> Result<Option<Item>, StoreError> {
    match raw {
        Some(raw) if !raw.is_empty() => item_from_raw(raw).map(Some),
        _ => Ok(None),
    }
}
