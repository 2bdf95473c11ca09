//! Store conditions and update actions as DynamoDB expressions.
//!
//! Every attribute name goes through `ExpressionAttributeNames` (`#n0`, `#n1`, …) and every
//! value through `ExpressionAttributeValues` (`:v0`, `:v1`, …), so no name can collide with a
//! reserved word and no value is ever spliced into expression text.
//!
//! Conditions are first folded into [`Cond`], which drops the cases DynamoDB would reject but
//! the store defines (an ordering comparison with a boolean, an empty attribute name, an empty
//! set) by replacing them with the constant the store's rules give. Then the time-to-live rule
//! is added: an expired item is absent to every condition.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::AttributeValue;
use store::{CmpOp, Condition, Number, PK, TTL_ATTRIBUTE, UpdateAction, Value};

use crate::convert::to_av;

/// `ExpressionAttributeNames`: placeholder → attribute name.
pub(crate) type Names = HashMap<String, String>;
/// `ExpressionAttributeValues`: placeholder → value.
pub(crate) type Values = HashMap<String, AttributeValue>;

/// Collects the names and values of one request's expressions.
#[derive(Debug, Default)]
pub(crate) struct Expr {
    names: HashMap<String, String>,
    placeholders: HashMap<String, String>,
    values: HashMap<String, AttributeValue>,
}

impl Expr {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// The placeholder of an attribute name (one per distinct name).
    pub(crate) fn name(&mut self, name: &str) -> String {
        if let Some(p) = self.placeholders.get(name) {
            return p.clone();
        }
        let p = format!("#n{}", self.placeholders.len());
        self.placeholders.insert(name.to_owned(), p.clone());
        self.names.insert(p.clone(), name.to_owned());
        p
    }

    /// The placeholder of a value (one per use).
    pub(crate) fn value(&mut self, value: AttributeValue) -> String {
        let p = format!(":v{}", self.values.len());
        self.values.insert(p.clone(), value);
        p
    }

    /// The name and value maps, `None` when empty (DynamoDB refuses empty maps).
    pub(crate) fn into_maps(self) -> (Option<Names>, Option<Values>) {
        let names = (!self.names.is_empty()).then_some(self.names);
        let values = (!self.values.is_empty()).then_some(self.values);
        (names, values)
    }
}

/// A condition folded to what DynamoDB can evaluate, with constants for the cases whose answer
/// the store's rules fix in advance.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Cond {
    True,
    False,
    Exists(String),
    NotExists(String),
    /// An equality comparison (any type).
    Equal(String, bool, Value),
    /// An ordering comparison; the value is a string, number or binary.
    Order(String, CmpOp, Value),
    BeginsWith(String, String),
    /// The attribute has the DynamoDB type (`"S"`, `"N"`, …).
    IsType(String, &'static str),
    And(Box<Cond>, Box<Cond>),
    Or(Box<Cond>, Box<Cond>),
    Not(Box<Cond>),
}

fn has_empty_set(value: &Value) -> bool {
    match value {
        Value::Ss(set) => set.is_empty(),
        Value::L(items) => items.iter().any(has_empty_set),
        Value::M(map) => map.values().any(has_empty_set),
        Value::S(_) | Value::N(_) | Value::B(_) | Value::Bool(_) | Value::Null => false,
    }
}

impl Cond {
    pub(crate) fn and(a: Cond, b: Cond) -> Cond {
        match (a, b) {
            (Cond::False, _) | (_, Cond::False) => Cond::False,
            (Cond::True, x) | (x, Cond::True) => x,
            (a, b) => Cond::And(Box::new(a), Box::new(b)),
        }
    }

    pub(crate) fn or(a: Cond, b: Cond) -> Cond {
        match (a, b) {
            (Cond::True, _) | (_, Cond::True) => Cond::True,
            (Cond::False, x) | (x, Cond::False) => x,
            (a, b) => Cond::Or(Box::new(a), Box::new(b)),
        }
    }

    pub(crate) fn not(a: Cond) -> Cond {
        match a {
            Cond::True => Cond::False,
            Cond::False => Cond::True,
            Cond::Not(inner) => *inner,
            other => Cond::Not(Box::new(other)),
        }
    }

    /// Folds a store condition. The result holds on exactly the items the store's
    /// `Condition::holds` accepts.
    pub(crate) fn fold(condition: &Condition) -> Cond {
        match condition {
            Condition::Exists(name) if name.is_empty() => Cond::False,
            Condition::Exists(name) => Cond::Exists(name.clone()),
            Condition::NotExists(name) if name.is_empty() => Cond::True,
            Condition::NotExists(name) => Cond::NotExists(name.clone()),
            Condition::Cmp(name, op, value) => {
                // No stored attribute has an empty name or holds an empty set, so these
                // comparisons are decided: `<>` holds and every other one fails.
                if name.is_empty() || has_empty_set(value) {
                    return if *op == CmpOp::Ne {
                        Cond::True
                    } else {
                        Cond::False
                    };
                }
                match op {
                    // NULL has one value: equality is a type test (which also keeps local
                    // emulators from equating a missing attribute with NULL).
                    CmpOp::Eq if *value == Value::Null => Cond::IsType(name.clone(), "NULL"),
                    CmpOp::Ne if *value == Value::Null => {
                        Cond::not(Cond::IsType(name.clone(), "NULL"))
                    }
                    CmpOp::Eq => Cond::Equal(name.clone(), true, value.clone()),
                    CmpOp::Ne => Cond::Equal(name.clone(), false, value.clone()),
                    CmpOp::Lt | CmpOp::Le | CmpOp::Gt | CmpOp::Ge => match value {
                        Value::S(_) | Value::N(_) | Value::B(_) => {
                            Cond::Order(name.clone(), *op, value.clone())
                        }
                        // Only strings, numbers and binaries are ordered: the comparison is
                        // false whatever the item holds.
                        Value::Bool(_) | Value::Null | Value::L(_) | Value::M(_) | Value::Ss(_) => {
                            Cond::False
                        }
                    },
                }
            }
            Condition::BeginsWith(name, _) if name.is_empty() => Cond::False,
            Condition::BeginsWith(name, prefix) if prefix.is_empty() => {
                Cond::IsType(name.clone(), "S")
            }
            Condition::BeginsWith(name, prefix) => Cond::BeginsWith(name.clone(), prefix.clone()),
            Condition::And(a, b) => Cond::and(Cond::fold(a), Cond::fold(b)),
            Condition::Or(a, b) => Cond::or(Cond::fold(a), Cond::fold(b)),
            Condition::Not(a) => Cond::not(Cond::fold(a)),
        }
    }

    /// The item has expired at `now`: its expiry is a number at or before now.
    pub(crate) fn expired(now: i64) -> Cond {
        Cond::Order(
            TTL_ATTRIBUTE.to_owned(),
            CmpOp::Le,
            Value::N(Number::from(now)),
        )
    }

    /// The item is live at `now` (absent items included).
    pub(crate) fn live(now: i64) -> Cond {
        Cond::not(Cond::expired(now))
    }

    /// [`Cond::absent_if_expired`] of a put's or delete's optional condition (none: true).
    pub(crate) fn of_write(condition: Option<&Condition>, now: i64) -> Cond {
        condition.map_or(Cond::True, |c| Cond::absent_if_expired(c, now))
    }

    /// The condition as the store means it, where an expired item counts as absent:
    /// `(live AND C) OR expired` when `C` holds on an absent item, else `live AND C`.
    pub(crate) fn absent_if_expired(condition: &Condition, now: i64) -> Cond {
        let folded = Cond::fold(condition);
        match folded {
            Cond::True => Cond::True,
            Cond::False => Cond::False,
            folded if condition.holds(None) => {
                Cond::or(Cond::and(Cond::live(now), folded), Cond::expired(now))
            }
            folded => Cond::and(Cond::live(now), folded),
        }
    }

    /// The condition required of a write that must only see a live item (updates, whose
    /// expired case the backend handles itself): `live AND C`.
    pub(crate) fn live_and(condition: Option<&Condition>, now: i64) -> Cond {
        let folded = condition.map_or(Cond::True, Cond::fold);
        Cond::and(Cond::live(now), folded)
    }

    /// Renders the condition; `None` when it always holds (no condition to send).
    pub(crate) fn render(&self, expr: &mut Expr) -> Option<String> {
        match self {
            Cond::True => None,
            other => Some(other.render_always(expr)),
        }
    }

    /// Renders the condition, with an expression that always holds for `True` (a transaction's
    /// condition check needs one).
    pub(crate) fn render_always(&self, expr: &mut Expr) -> String {
        self.render_at(expr).0
    }

    /// The text and its precedence. DynamoDB refuses redundant parentheses, so a
    /// subexpression is parenthesized only where precedence requires it.
    fn render_at(&self, expr: &mut Expr) -> (String, Precedence) {
        match self {
            Cond::True => {
                let pk = expr.name(PK);
                (
                    format!("attribute_exists({pk}) OR attribute_not_exists({pk})"),
                    Precedence::Or,
                )
            }
            Cond::False => {
                let pk = expr.name(PK);
                (
                    format!("attribute_exists({pk}) AND attribute_not_exists({pk})"),
                    Precedence::And,
                )
            }
            Cond::Exists(name) => (
                format!("attribute_exists({})", expr.name(name)),
                Precedence::Atom,
            ),
            Cond::NotExists(name) => (
                format!("attribute_not_exists({})", expr.name(name)),
                Precedence::Atom,
            ),
            Cond::Equal(name, equal, value) => {
                let n = expr.name(name);
                let v = expr.value(to_av(value));
                (
                    format!("{n} {} {v}", if *equal { "=" } else { "<>" }),
                    Precedence::Atom,
                )
            }
            Cond::Order(name, op, value) => {
                // The type test first: DynamoDB already answers false across types, and some
                // local emulators fail on such a comparison instead; both short-circuit AND.
                let n = expr.name(name);
                let t = expr.value(AttributeValue::S(value.type_name().to_owned()));
                let v = expr.value(to_av(value));
                let op = match op {
                    CmpOp::Eq => "=",
                    CmpOp::Ne => "<>",
                    CmpOp::Lt => "<",
                    CmpOp::Le => "<=",
                    CmpOp::Gt => ">",
                    CmpOp::Ge => ">=",
                };
                (
                    format!("attribute_type({n}, {t}) AND {n} {op} {v}"),
                    Precedence::And,
                )
            }
            Cond::BeginsWith(name, prefix) => {
                let n = expr.name(name);
                let v = expr.value(AttributeValue::S(prefix.clone()));
                (format!("begins_with({n}, {v})"), Precedence::Atom)
            }
            Cond::IsType(name, kind) => {
                let n = expr.name(name);
                let t = expr.value(AttributeValue::S((*kind).to_owned()));
                (format!("attribute_type({n}, {t})"), Precedence::Atom)
            }
            Cond::And(a, b) => {
                let a = a.render_within(Precedence::And, expr);
                let b = b.render_within(Precedence::And, expr);
                (format!("{a} AND {b}"), Precedence::And)
            }
            Cond::Or(a, b) => {
                let a = a.render_within(Precedence::Or, expr);
                let b = b.render_within(Precedence::Or, expr);
                (format!("{a} OR {b}"), Precedence::Or)
            }
            Cond::Not(a) => (
                format!("NOT {}", a.render_within(Precedence::Not, expr)),
                Precedence::Not,
            ),
        }
    }

    /// The text as an operand of an operator of precedence `outer`.
    fn render_within(&self, outer: Precedence, expr: &mut Expr) -> String {
        let (text, precedence) = self.render_at(expr);
        if precedence < outer {
            format!("({text})")
        } else {
            text
        }
    }
}

/// How tightly an expression binds, loosest first (DynamoDB: OR < AND < NOT < comparisons and
/// functions).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Precedence {
    Or,
    And,
    Not,
    Atom,
}

/// The update expression of a list of (validated) actions.
pub(crate) fn update_expression(actions: &[UpdateAction], expr: &mut Expr) -> String {
    let mut set = Vec::new();
    let mut remove = Vec::new();
    let mut add = Vec::new();
    for action in actions {
        match action {
            UpdateAction::Set(name, value) => {
                let n = expr.name(name);
                let v = expr.value(to_av(value));
                set.push(format!("{n} = {v}"));
            }
            UpdateAction::Remove(name) => remove.push(expr.name(name)),
            UpdateAction::Add(name, delta) => {
                let n = expr.name(name);
                let v = expr.value(AttributeValue::N(delta.as_str().to_owned()));
                add.push(format!("{n} {v}"));
            }
            UpdateAction::Append(name, values) => {
                let n = expr.name(name);
                let empty = expr.value(AttributeValue::L(Vec::new()));
                let v = expr.value(AttributeValue::L(values.iter().map(to_av).collect()));
                set.push(format!(
                    "{n} = list_append(if_not_exists({n}, {empty}), {v})"
                ));
            }
        }
    }
    let mut clauses = Vec::new();
    if !set.is_empty() {
        clauses.push(format!("SET {}", set.join(", ")));
    }
    if !remove.is_empty() {
        clauses.push(format!("REMOVE {}", remove.join(", ")));
    }
    if !add.is_empty() {
        clauses.push(format!("ADD {}", add.join(", ")));
    }
    clauses.join(" ")
}

/// An equality condition on the expiry attribute (the expired item is still the same one).
pub(crate) fn expiry_is(expiry: &Value) -> Cond {
    Cond::Equal(TTL_ATTRIBUTE.to_owned(), true, expiry.clone())
}
