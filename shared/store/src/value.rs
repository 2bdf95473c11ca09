//! Typed attribute values and items, with DynamoDB's type system.

use std::collections::{BTreeMap, BTreeSet};

use base64::Engine as _;
use serde::{Deserialize, Serialize};

use crate::Number;

/// One attribute value. The variants mirror DynamoDB's types that gatehouse uses.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Value {
    /// UTF-8 text.
    #[serde(rename = "S")]
    S(String),
    /// An exact decimal.
    #[serde(rename = "N")]
    N(Number),
    /// Raw bytes (base64 in the JSON encoding).
    #[serde(rename = "B", with = "b64")]
    B(Vec<u8>),
    /// A boolean.
    #[serde(rename = "BOOL")]
    Bool(bool),
    /// An explicit null.
    #[serde(rename = "NULL")]
    Null,
    /// An ordered list of values.
    #[serde(rename = "L")]
    L(Vec<Value>),
    /// A map of named values.
    #[serde(rename = "M")]
    M(BTreeMap<String, Value>),
    /// A set of distinct strings (never empty; DynamoDB refuses empty sets).
    #[serde(rename = "SS")]
    Ss(BTreeSet<String>),
}

mod b64 {
    use base64::Engine as _;
    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(v: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&base64::engine::general_purpose::STANDARD.encode(v))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let text = String::deserialize(d)?;
        base64::engine::general_purpose::STANDARD
            .decode(text)
            .map_err(serde::de::Error::custom)
    }
}

impl Value {
    /// A string value.
    pub fn s(text: impl Into<String>) -> Self {
        Value::S(text.into())
    }

    /// A number value from an integer.
    pub fn n(v: i64) -> Self {
        Value::N(Number::from(v))
    }

    /// The text of a string value.
    pub fn as_s(&self) -> Option<&str> {
        match self {
            Value::S(s) => Some(s),
            _ => None,
        }
    }

    /// The number of a number value.
    pub fn as_n(&self) -> Option<&Number> {
        match self {
            Value::N(n) => Some(n),
            _ => None,
        }
    }

    /// Size as DynamoDB counts it toward the 400 KB item limit (close enough to decide
    /// every case the store's callers meet; the limit is enforced with margin by callers that
    /// store large text).
    pub fn size(&self) -> usize {
        match self {
            Value::S(s) => s.len(),
            Value::N(n) => n.as_str().len().div_ceil(2) + 1,
            Value::B(b) => b.len(),
            Value::Bool(_) | Value::Null => 1,
            Value::L(items) => 3 + items.iter().map(|v| 1 + v.size()).sum::<usize>(),
            Value::M(map) => {
                3 + map
                    .iter()
                    .map(|(k, v)| 1 + k.len() + v.size())
                    .sum::<usize>()
            }
            Value::Ss(set) => set.iter().map(String::len).sum(),
        }
    }

    /// Compact text for error messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::S(_) => "S",
            Value::N(_) => "N",
            Value::B(_) => "B",
            Value::Bool(_) => "BOOL",
            Value::Null => "NULL",
            Value::L(_) => "L",
            Value::M(_) => "M",
            Value::Ss(_) => "SS",
        }
    }

    /// Base64 text of a binary value (used by backends that store JSON).
    pub fn b64(bytes: &[u8]) -> String {
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }
}

/// The attributes of one item, without its key.
pub type Item = BTreeMap<String, Value>;

/// Where an item lives: a partition key and a sort key. Tenant-owned items put the tenant id
/// first in the partition key (an architecture invariant, checked where keys are built).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Key {
    /// Partition key.
    pub pk: String,
    /// Sort key.
    pub sk: String,
}

impl Key {
    /// A key from its two parts.
    pub fn new(pk: impl Into<String>, sk: impl Into<String>) -> Self {
        Key {
            pk: pk.into(),
            sk: sk.into(),
        }
    }
}

/// Key text: `parts` joined, in a string allocated once at its final length. Keys are built
/// several times on every call, where `format!` costs several times more.
pub fn concat(parts: &[&str]) -> String {
    let mut text = String::with_capacity(parts.iter().map(|part| part.len()).sum());
    for part in parts {
        text.push_str(part);
    }
    text
}

/// `parts` joined, then `n` in decimal (as [`concat`]).
pub fn concat_int(parts: &[&str], n: i64) -> String {
    let mut buffer = itoa::Buffer::new();
    let digits = buffer.format(n);
    let mut text = concat(parts);
    text.push_str(digits);
    text
}

/// Total size of an item with its key, as counted toward the 400 KB limit.
pub fn item_size(key: &Key, item: &Item) -> usize {
    crate::PK.len()
        + key.pk.len()
        + crate::SK.len()
        + key.sk.len()
        + item.iter().map(|(k, v)| k.len() + v.size()).sum::<usize>()
}
