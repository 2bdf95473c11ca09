//! Conditions, update actions and sort-key conditions, and their evaluation against an item.
//!
//! The memory and SQLite backends evaluate these here; the DynamoDB backend translates them
//! into expressions. The conformance suite holds all three to the same answers.

use crate::{Item, Number, Value};

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum CmpOp {
    /// `=`
    Eq,
    /// `<>`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
}

/// A condition on the current item. Attribute names are top-level names; `pk` and `sk` name
/// the key. An item whose expiry has passed is evaluated as absent.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum Condition {
    /// The attribute is present.
    Exists(String),
    /// The attribute is absent.
    NotExists(String),
    /// The attribute compares to the value. A missing attribute or one of another type makes
    /// every comparison false, except `Ne`, which is then true (DynamoDB's rule).
    Cmp(String, CmpOp, Value),
    /// The string attribute starts with the prefix.
    BeginsWith(String, String),
    /// Both hold.
    And(Box<Condition>, Box<Condition>),
    /// Either holds.
    Or(Box<Condition>, Box<Condition>),
    /// The inner condition does not hold.
    Not(Box<Condition>),
}

impl Condition {
    /// The item exists (its partition key attribute is present).
    pub fn item_exists() -> Self {
        Condition::Exists(crate::PK.to_owned())
    }

    /// The item does not exist.
    pub fn item_not_exists() -> Self {
        Condition::NotExists(crate::PK.to_owned())
    }

    /// `name = value`
    pub fn eq(name: impl Into<String>, value: Value) -> Self {
        Condition::Cmp(name.into(), CmpOp::Eq, value)
    }

    /// Both conditions.
    pub fn and(self, other: Condition) -> Self {
        Condition::And(Box::new(self), Box::new(other))
    }

    /// Either condition.
    pub fn or(self, other: Condition) -> Self {
        Condition::Or(Box::new(self), Box::new(other))
    }

    /// The negation.
    #[allow(clippy::should_implement_trait)]
    pub fn not(self) -> Self {
        Condition::Not(Box::new(self))
    }

    /// Evaluates the condition against an item (already filtered for expiry). `item` includes
    /// the key attributes when present.
    pub fn holds(&self, item: Option<&Item>) -> bool {
        self.holds_for(&|name| item.and_then(|i| i.get(name)))
    }

    /// Evaluates the condition against the attributes `get` finds (`None`: absent).
    pub fn holds_for<'a>(&self, get: &dyn Fn(&str) -> Option<&'a Value>) -> bool {
        match self {
            Condition::Exists(name) => get(name).is_some(),
            Condition::NotExists(name) => get(name).is_none(),
            Condition::Cmp(name, op, value) => compare(get(name), *op, value),
            Condition::BeginsWith(name, prefix) => {
                matches!(get(name), Some(Value::S(s)) if s.starts_with(prefix.as_str()))
            }
            Condition::And(a, b) => a.holds_for(get) && b.holds_for(get),
            Condition::Or(a, b) => a.holds_for(get) || b.holds_for(get),
            Condition::Not(a) => !a.holds_for(get),
        }
    }
}

fn compare(current: Option<&Value>, op: CmpOp, value: &Value) -> bool {
    let Some(current) = current else {
        return op == CmpOp::Ne;
    };
    let ordering = match (current, value) {
        (Value::S(a), Value::S(b)) => Some(a.as_bytes().cmp(b.as_bytes())),
        (Value::N(a), Value::N(b)) => Some(a.cmp(b)),
        (Value::B(a), Value::B(b)) => Some(a.cmp(b)),
        _ => None,
    };
    match op {
        CmpOp::Eq => current == value,
        CmpOp::Ne => current != value,
        CmpOp::Lt => ordering.is_some_and(|o| o.is_lt()),
        CmpOp::Le => ordering.is_some_and(|o| o.is_le()),
        CmpOp::Gt => ordering.is_some_and(|o| o.is_gt()),
        CmpOp::Ge => ordering.is_some_and(|o| o.is_ge()),
    }
}

/// One change an update makes.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum UpdateAction {
    /// Sets the attribute to the value.
    Set(String, Value),
    /// Removes the attribute (no effect when absent).
    Remove(String),
    /// Adds to a number attribute (a missing attribute counts as zero).
    Add(String, Number),
    /// Appends to a list attribute (a missing attribute counts as an empty list).
    Append(String, Vec<Value>),
}

impl UpdateAction {
    /// The attribute this action changes.
    pub fn attribute(&self) -> &str {
        match self {
            UpdateAction::Set(name, _)
            | UpdateAction::Remove(name)
            | UpdateAction::Add(name, _)
            | UpdateAction::Append(name, _) => name,
        }
    }
}

/// A condition on the sort key of a query.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum SortCondition {
    /// Equal to.
    Eq(String),
    /// Starts with the prefix.
    BeginsWith(String),
    /// Between the two bounds, both included.
    Between(String, String),
    /// Less than.
    Lt(String),
    /// Less than or equal.
    Le(String),
    /// Greater than.
    Gt(String),
    /// Greater than or equal.
    Ge(String),
}

impl SortCondition {
    /// Whether a sort key satisfies the condition (byte order, as DynamoDB compares strings).
    pub fn matches(&self, sk: &str) -> bool {
        let sk = sk.as_bytes();
        match self {
            SortCondition::Eq(v) => sk == v.as_bytes(),
            SortCondition::BeginsWith(p) => sk.starts_with(p.as_bytes()),
            SortCondition::Between(lo, hi) => sk >= lo.as_bytes() && sk <= hi.as_bytes(),
            SortCondition::Lt(v) => sk < v.as_bytes(),
            SortCondition::Le(v) => sk <= v.as_bytes(),
            SortCondition::Gt(v) => sk > v.as_bytes(),
            SortCondition::Ge(v) => sk >= v.as_bytes(),
        }
    }
}
