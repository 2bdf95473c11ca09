//! The requests a store accepts, with small builders so call sites read as sentences.

use crate::{Condition, Item, Key, SortCondition, UpdateAction};

/// Writes a whole item, replacing any item with the same key.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Put {
    /// Where.
    pub key: Key,
    /// The attributes (without the key).
    pub item: Item,
    /// Write only if this holds.
    pub condition: Option<Condition>,
    /// On a failed condition, return the current item.
    pub return_old_on_failure: bool,
}

/// Changes some attributes of an item, creating it when absent (unless the condition forbids).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Update {
    /// Where.
    pub key: Key,
    /// The changes, applied in order (each attribute at most once).
    pub actions: Vec<UpdateAction>,
    /// Write only if this holds.
    pub condition: Option<Condition>,
    /// On a failed condition, return the current item.
    pub return_old_on_failure: bool,
}

/// Removes an item (no error when absent, unless the condition requires it).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Delete {
    /// Where.
    pub key: Key,
    /// Delete only if this holds.
    pub condition: Option<Condition>,
    /// On a failed condition, return the current item.
    pub return_old_on_failure: bool,
}

/// A condition on an item that a transaction requires without writing it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ConditionCheck {
    /// Where.
    pub key: Key,
    /// What must hold.
    pub condition: Condition,
    /// On a failed condition, return the current item.
    pub return_old_on_failure: bool,
}

macro_rules! conditional_builders {
    ($t:ty) => {
        impl $t {
            /// Adds a condition that must hold for the write to happen.
            pub fn when(mut self, condition: Condition) -> Self {
                self.condition = Some(condition);
                self
            }

            /// Asks for the current item when the condition fails.
            pub fn return_old_on_failure(mut self) -> Self {
                self.return_old_on_failure = true;
                self
            }
        }
    };
}

impl Put {
    /// Puts `item` at `key`, unconditionally.
    pub fn new(key: Key, item: Item) -> Self {
        Put {
            key,
            item,
            condition: None,
            return_old_on_failure: false,
        }
    }
}
conditional_builders!(Put);

impl Update {
    /// Applies `actions` to the item at `key`, unconditionally.
    pub fn new(key: Key, actions: Vec<UpdateAction>) -> Self {
        Update {
            key,
            actions,
            condition: None,
            return_old_on_failure: false,
        }
    }
}
conditional_builders!(Update);

impl Delete {
    /// Deletes the item at `key`, unconditionally.
    pub fn new(key: Key) -> Self {
        Delete {
            key,
            condition: None,
            return_old_on_failure: false,
        }
    }
}
conditional_builders!(Delete);

impl ConditionCheck {
    /// Requires `condition` of the item at `key`.
    pub fn new(key: Key, condition: Condition) -> Self {
        ConditionCheck {
            key,
            condition,
            return_old_on_failure: false,
        }
    }

    /// Asks for the current item when the condition fails.
    pub fn return_old_on_failure(mut self) -> Self {
        self.return_old_on_failure = true;
        self
    }
}

/// One operation of a transaction.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum TransactOp {
    /// A put.
    Put(Put),
    /// An update.
    Update(Update),
    /// A delete.
    Delete(Delete),
    /// A condition check.
    Check(ConditionCheck),
}

impl TransactOp {
    /// The item this operation addresses.
    pub fn key(&self) -> &Key {
        match self {
            TransactOp::Put(p) => &p.key,
            TransactOp::Update(u) => &u.key,
            TransactOp::Delete(d) => &d.key,
            TransactOp::Check(c) => &c.key,
        }
    }

    /// The operation's condition, if any.
    pub fn condition(&self) -> Option<&Condition> {
        match self {
            TransactOp::Put(p) => p.condition.as_ref(),
            TransactOp::Update(u) => u.condition.as_ref(),
            TransactOp::Delete(d) => d.condition.as_ref(),
            TransactOp::Check(c) => Some(&c.condition),
        }
    }

    /// Whether the operation asked for the current item on a failed condition.
    pub fn wants_old_on_failure(&self) -> bool {
        match self {
            TransactOp::Put(p) => p.return_old_on_failure,
            TransactOp::Update(u) => u.return_old_on_failure,
            TransactOp::Delete(d) => d.return_old_on_failure,
            TransactOp::Check(c) => c.return_old_on_failure,
        }
    }
}

impl From<Put> for TransactOp {
    fn from(p: Put) -> Self {
        TransactOp::Put(p)
    }
}
impl From<Update> for TransactOp {
    fn from(u: Update) -> Self {
        TransactOp::Update(u)
    }
}
impl From<Delete> for TransactOp {
    fn from(d: Delete) -> Self {
        TransactOp::Delete(d)
    }
}
impl From<ConditionCheck> for TransactOp {
    fn from(c: ConditionCheck) -> Self {
        TransactOp::Check(c)
    }
}

/// Reads items of one partition in sort-key order.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Query {
    /// The partition.
    pub pk: String,
    /// Which sort keys.
    pub sort: Option<SortCondition>,
    /// Highest sort key first.
    pub descending: bool,
    /// At most this many items per page.
    pub limit: Option<u32>,
    /// Where the previous page ended.
    pub cursor: Option<Cursor>,
}

impl Query {
    /// Every live item of the partition, ascending.
    pub fn partition(pk: impl Into<String>) -> Self {
        Query {
            pk: pk.into(),
            sort: None,
            descending: false,
            limit: None,
            cursor: None,
        }
    }

    /// Restricts the sort keys.
    pub fn sort(mut self, condition: SortCondition) -> Self {
        self.sort = Some(condition);
        self
    }

    /// Highest sort key first.
    pub fn descending(mut self) -> Self {
        self.descending = true;
        self
    }

    /// At most `n` items per page.
    pub fn limit(mut self, n: u32) -> Self {
        self.limit = Some(n);
        self
    }

    /// Continues after a previous page.
    pub fn after(mut self, cursor: Option<Cursor>) -> Self {
        self.cursor = cursor;
        self
    }
}

/// One page of a query. A page may hold fewer items than the limit (expired items are
/// filtered after the limit is applied, as DynamoDB filters); only `next == None` means the end.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Page {
    /// The items with their keys, in the query's order.
    pub items: Vec<(Key, Item)>,
    /// Where to continue, if there may be more.
    pub next: Option<Cursor>,
}

/// An opaque position in a query, only meaningful to the store that issued it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Cursor(pub String);
