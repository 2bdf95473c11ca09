//! A product's record kinds (ADR 49): the handle prefix and noun of each kind of record its
//! tools name, and the typed attributes (string, integer, decimal, date-time) a record of it
//! shows. The platform renders a record's page from them (the page a tool result's `link`
//! opens) and checks them when the app is built; policies can read the same attributes.

use std::collections::{BTreeMap, BTreeSet};

use futures_util::future::BoxFuture;

/// The type of an attribute's values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttributeType {
    /// Text.
    String,
    /// A whole number.
    Integer,
    /// An exact decimal (money, rates).
    Decimal,
    /// An instant, shown in the workspace's zone.
    DateTime,
}

/// One attribute of a record kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attribute {
    /// Its name (`email`), unique in its kind.
    pub name: &'static str,
    /// What a page calls it (`Email`).
    pub label: &'static str,
    /// The type of its values.
    pub ty: AttributeType,
    /// Whether someone outside the workspace wrote it (a customer's notes): a page says so.
    pub third_party: bool,
}

impl Attribute {
    /// An attribute of type `ty` that the workspace's own people write.
    pub const fn new(name: &'static str, label: &'static str, ty: AttributeType) -> Self {
        Attribute {
            name,
            label,
            ty,
            third_party: false,
        }
    }

    /// The same attribute, written by someone outside the workspace.
    pub const fn third_party(self) -> Self {
        Attribute {
            third_party: true,
            ..self
        }
    }
}

/// A kind of record a product's tools name by handle (`cus_...`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordKind {
    /// The handle prefix, without `_` (`cus`): 2 to 5 lower-case letters.
    pub prefix: &'static str,
    /// The noun (`customer`).
    pub noun: &'static str,
    /// The path segment of its pages (`customers`: `/app/customers/cus_...`).
    pub path: &'static str,
    /// Its attributes, in the order a page shows them.
    pub attributes: &'static [Attribute],
}

impl RecordKind {
    /// The handle of the record `id`.
    pub fn handle(&self, id: &str) -> String {
        format!("{}_{id}", self.prefix)
    }

    /// The id in `handle` when it is a handle of this kind (letters and digits after the
    /// prefix).
    pub fn id_of<'h>(&self, handle: &'h str) -> Option<&'h str> {
        handle
            .strip_prefix(self.prefix)?
            .strip_prefix('_')
            .filter(|id| !id.is_empty() && id.bytes().all(|b| b.is_ascii_alphanumeric()))
    }

    /// The attribute `name`.
    pub fn attribute(&self, name: &str) -> Option<&'static Attribute> {
        self.attributes.iter().find(|a| a.name == name)
    }
}

/// One attribute's value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AttributeValue {
    /// Text.
    String(String),
    /// A whole number.
    Integer(i64),
    /// An exact decimal.
    Decimal(rust_decimal::Decimal),
    /// An instant.
    DateTime(chrono::DateTime<chrono::Utc>),
}

impl AttributeValue {
    /// The value's type.
    pub fn ty(&self) -> AttributeType {
        match self {
            AttributeValue::String(_) => AttributeType::String,
            AttributeValue::Integer(_) => AttributeType::Integer,
            AttributeValue::Decimal(_) => AttributeType::Decimal,
            AttributeValue::DateTime(_) => AttributeType::DateTime,
        }
    }
}

impl From<&str> for AttributeValue {
    fn from(text: &str) -> Self {
        AttributeValue::String(text.to_owned())
    }
}

impl From<String> for AttributeValue {
    fn from(text: String) -> Self {
        AttributeValue::String(text)
    }
}

/// A record's attribute values, by name (an attribute without a value is left out).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Record {
    /// The values.
    pub values: BTreeMap<&'static str, AttributeValue>,
}

impl Record {
    /// The record with `value` for `name` too.
    pub fn with(mut self, name: &'static str, value: impl Into<AttributeValue>) -> Self {
        self.values.insert(name, value.into());
        self
    }

    /// The record with `value` for `name` when there is one.
    pub fn with_some(self, name: &'static str, value: Option<impl Into<AttributeValue>>) -> Self {
        match value {
            Some(v) => self.with(name, v),
            None => self,
        }
    }

    /// Whether every value is one of `kind`'s attributes, of its declared type (a product's
    /// mistake otherwise: the page shows nothing of the record and logs which).
    pub fn check(&self, kind: &RecordKind) -> Result<(), String> {
        for (name, value) in &self.values {
            match kind.attribute(name) {
                None => return Err(format!("a {} has no attribute {name:?}", kind.noun)),
                Some(a) if a.ty != value.ty() => {
                    return Err(format!(
                        "the {} attribute {name:?} is declared {:?}, not {:?}",
                        kind.noun,
                        a.ty,
                        value.ty()
                    ));
                }
                Some(_) => {}
            }
        }
        Ok(())
    }
}

/// Who reads a record: a signed-in member with their live rights.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reader {
    /// The workspace.
    pub tenant: crate::TenantId,
    /// The member.
    pub member: crate::MemberId,
    /// Their rights now.
    pub rights: BTreeSet<String>,
}

/// Why a record is not shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordError {
    /// There is no such record in the reader's workspace.
    NotFound,
    /// Reading it takes `right`, which the reader lacks.
    Forbidden {
        /// The right.
        right: String,
    },
    /// The store could not be read.
    Unavailable,
}

/// Where a product's records are read for their pages: through the product's own services,
/// with the reader's rights, so a page shows exactly what that person may see.
pub trait Records: std::fmt::Debug + Send + Sync {
    /// The kinds of record the product's tools name.
    fn kinds(&self) -> &'static [RecordKind];

    /// The record `id` of `kind` in `reader`'s workspace.
    fn read<'a>(
        &'a self,
        reader: &'a Reader,
        kind: &'static RecordKind,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Record, RecordError>>;
}

/// Whether `kinds` can be told apart and shown: prefixes of 2 to 5 lower-case letters, page
/// paths of lower-case letters and hyphens, neither used twice, attribute names unique within
/// a kind. Checked when the app is built, so a mistake stops the start with its name.
pub fn check_kinds(kinds: &[RecordKind]) -> Result<(), String> {
    let mut prefixes = BTreeSet::new();
    let mut paths = BTreeSet::new();
    for kind in kinds {
        let lower = |s: &str| s.bytes().all(|b| b.is_ascii_lowercase());
        if !(2..=5).contains(&kind.prefix.len()) || !lower(kind.prefix) {
            return Err(format!(
                "the {} prefix {:?} must be 2 to 5 lower-case letters",
                kind.noun, kind.prefix
            ));
        }
        let path_ok = !kind.path.is_empty()
            && kind
                .path
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b == b'-');
        if !path_ok {
            return Err(format!(
                "the {} page path {:?} must be lower-case letters and hyphens",
                kind.noun, kind.path
            ));
        }
        if !prefixes.insert(kind.prefix) || !paths.insert(kind.path) {
            return Err(format!(
                "the {} prefix {:?} or path {:?} is another kind's too",
                kind.noun, kind.prefix, kind.path
            ));
        }
        let mut names = BTreeSet::new();
        if let Some(twice) = kind.attributes.iter().find(|a| !names.insert(a.name)) {
            return Err(format!(
                "the {} attribute {:?} is declared twice",
                kind.noun, twice.name
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const NAME: Attribute = Attribute::new("name", "Name", AttributeType::String);
    const TICKET: RecordKind = RecordKind {
        prefix: "tkt",
        noun: "ticket",
        path: "tickets",
        attributes: &[NAME],
    };

    #[test]
    fn a_handle_names_its_kind_and_nothing_else() {
        assert_eq!(TICKET.id_of("tkt_abc1"), Some("abc1"));
        for wrong in ["cus_abc", "tkt_", "tkt_a/b", "tktabc", "tkt_a_b"] {
            assert_eq!(TICKET.id_of(wrong), None, "{wrong}");
        }
    }

    #[test]
    fn kinds_that_cannot_be_told_apart_are_refused() {
        assert!(check_kinds(&[TICKET]).is_ok());
        assert!(check_kinds(&[TICKET, TICKET]).is_err());
        let bad_prefix = RecordKind {
            prefix: "T",
            ..TICKET
        };
        assert!(check_kinds(&[bad_prefix]).is_err());
        let twice = RecordKind {
            attributes: &[NAME, NAME],
            ..TICKET
        };
        assert!(check_kinds(&[twice]).is_err());
    }

    #[test]
    fn a_value_of_another_type_or_name_is_a_mistake() {
        assert!(Record::default().with("name", "Ada").check(&TICKET).is_ok());
        let wrong_type = Record::default().with("name", AttributeValue::Integer(1));
        assert!(wrong_type.check(&TICKET).is_err());
        assert!(Record::default().with("age", "1").check(&TICKET).is_err());
    }
}
