//! The store's one error type: every variant is something a caller can act on.

use crate::{Item, Key};

/// What went wrong with a store call.
#[derive(Debug, Clone, PartialEq, thiserror::Error, serde::Serialize, serde::Deserialize)]
pub enum StoreError {
    /// The write's condition did not hold; nothing changed. `old` is the current item when the
    /// caller asked for it and the item exists (and has not expired).
    #[error("condition failed")]
    ConditionFailed {
        /// The item as it is, when asked for.
        old: Option<Item>,
    },
    /// A transaction was cancelled and nothing was written. One reason per operation, in the
    /// order the operations were given.
    #[error("transaction cancelled")]
    TransactionCancelled {
        /// Why each operation was (or was not) at fault.
        reasons: Vec<CancelReason>,
    },
    /// The backend is shedding load; retry with backoff.
    #[error("store throttled the request")]
    Throttled,
    /// The backend cannot be reached or failed; retrying later may help.
    #[error("store unavailable: {0}")]
    Unavailable(String),
    /// The request itself is wrong and will never succeed as it is.
    #[error("invalid store request")]
    Invalid(#[from] Invalid),
}

impl StoreError {
    /// Whether retrying the same call later may succeed.
    pub fn is_retryable(&self) -> bool {
        matches!(self, StoreError::Throttled | StoreError::Unavailable(_))
    }
}

/// Why one operation of a cancelled transaction failed.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum CancelReason {
    /// This operation was fine; another one cancelled the transaction.
    None,
    /// This operation's condition did not hold.
    ConditionFailed {
        /// The current item, when the operation asked for it and the item exists.
        old: Option<Item>,
    },
    /// Another transaction was writing the same item at the same time; retry.
    Conflict,
    /// Any other reason the backend gave (its code and message).
    Other(String),
}

impl CancelReason {
    /// The first operation of a cancelled transaction whose condition failed: its position in
    /// the transaction and the item it found (when it asked). The one place where a
    /// transaction's failure is traced back to the operation that caused it.
    pub fn first_failed(reasons: &[CancelReason]) -> Option<(usize, Option<&Item>)> {
        reasons.iter().enumerate().find_map(|(i, r)| match r {
            CancelReason::ConditionFailed { old } => Some((i, old.as_ref())),
            _ => None,
        })
    }
}

/// A request that can never succeed as written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, serde::Serialize, serde::Deserialize)]
pub enum Invalid {
    /// A partition or sort key is empty.
    #[error("partition and sort keys must not be empty")]
    EmptyKey,
    /// The item with its key exceeds 400 KB.
    #[error("item of {size} bytes exceeds the 400 KB limit")]
    ItemTooLarge {
        /// The item's size in bytes.
        size: usize,
    },
    /// More operations in one transaction (or keys in one batch) than allowed.
    #[error("{count} operations exceed the limit of {limit}")]
    TooManyOperations {
        /// How many were given.
        count: usize,
        /// The limit.
        limit: usize,
    },
    /// A transaction's items and keys together exceed 4 MB.
    #[error("a transaction of {size} bytes exceeds the 4 MB limit")]
    TransactionTooLarge {
        /// Its size in bytes.
        size: usize,
    },
    /// A transaction with no operation, or an update with no action.
    #[error("nothing to do")]
    Empty,
    /// Two operations of one transaction (or two keys of one batch) address the same item.
    #[error("two operations address the same item {0:?}")]
    DuplicateKey(Key),
    /// An item or action names a key attribute or repeats an attribute.
    #[error("attribute {0:?} cannot be written this way")]
    BadAttribute(String),
    /// An empty string set (DynamoDB has no empty sets).
    #[error("string set {0:?} is empty")]
    EmptySet(String),
    /// An add or append met an attribute of another type, or a number left the range.
    #[error("attribute {attribute:?}: {reason}")]
    WrongType {
        /// The attribute.
        attribute: String,
        /// What was expected.
        reason: String,
    },
    /// A cursor that this store did not issue for this query.
    #[error("cursor is not valid for this query")]
    BadCursor,
    /// A query limit of zero.
    #[error("query limit must be at least 1")]
    ZeroLimit,
    /// A transaction addresses the items of two workspaces: a store split by owner (the edge's
    /// objects, ADR 51) cannot commit it in one step, and no workspace's write names another's.
    #[error("one transaction addresses the items of two workspaces ({0} and {1})")]
    SpansWorkspaces(String, String),
    /// A key longer than this backend keeps (the embedded gate file's limit).
    #[error("a key of {size} bytes exceeds this store's limit of {limit}")]
    KeyTooLong {
        /// The key's size in bytes.
        size: usize,
        /// The limit.
        limit: usize,
    },
}
