//! Key-value storage with DynamoDB's semantics, behind one trait.
//!
//! Everything gatehouse keeps between requests goes through [`Store`]: items addressed by a
//! partition key and a sort key, conditional writes, transactions of up to 100 operations,
//! queries on one partition, and time-to-live. Backends: [`MemoryStore`] (here), SQLite and
//! DynamoDB (their own crates). This crate knows nothing of AWS, HTTP or MCP.

mod bounded;
mod counting;
mod derived;
pub mod engine;
mod error;
mod expr;
mod ids;
mod item_json;
mod json_str;
mod memory;
mod number;
pub mod placement;
pub mod read_ahead;
pub mod remote;
mod request;
pub mod routed;
pub mod rows;
pub mod tenant_id;
#[cfg(test)]
mod test_support;
mod value;

pub use bounded::{BoundedStore, Timer};
pub use counting::{CountingStore, Latency, RoundTrips};
pub use derived::{Derivation, Derived, derive_from_batch};
pub use error::{CancelReason, Invalid, StoreError};
pub use expr::{CmpOp, Condition, SortCondition, UpdateAction};
pub use ids::{ConnectionId, MemberId, TenantId};
pub use item_json::{item_from_json, item_to_json};
pub use json_str::write_json_str;
pub use memory::MemoryStore;
pub use number::{Number, NumberError};
pub use request::{ConditionCheck, Cursor, Delete, Page, Put, Query, TransactOp, Update};
pub use value::{Item, Key, Value, concat, concat_int, item_size};

/// Name of the partition-key attribute. The tenant id is its first segment for every
/// tenant-owned item.
pub const PK: &str = "pk";
/// Name of the sort-key attribute.
pub const SK: &str = "sk";
/// Name of the expiry attribute (seconds since the epoch, a number). An item whose expiry is
/// at or before now is absent to every read and every condition, whether or not a backend
/// has deleted it yet.
pub const TTL_ATTRIBUTE: &str = "expires_at";
/// Largest item, key included, in bytes.
pub const MAX_ITEM_BYTES: usize = 400 * 1024;
/// Most operations in one transaction.
pub const MAX_TRANSACT_OPS: usize = 100;
/// Largest transaction, all its items and keys together, in bytes (DynamoDB's 4 MB).
pub const MAX_TRANSACT_BYTES: usize = 4 * 1024 * 1024;
/// Most keys in one batch read.
pub const MAX_BATCH_GET: usize = 100;

/// Partition kinds (the segment after the owner: `<tenant>#rate#...`) that hold gate state
/// rather than anyone's data: rate buckets, concurrency slots, the loop brake. Losing their
/// last writes in a power cut is harmless (a limit restarts a little early), so a backend may
/// keep them without syncing each commit; the embedded store does (ADR 19). They still obey
/// every rule of the store contract, conditions and transactions included.
pub const GATE_STATE_KINDS: &[&str] = &["rate", "slot", "brake"];

/// Whether `pk` is a partition of gate state ([`GATE_STATE_KINDS`]).
pub fn is_gate_state(pk: &str) -> bool {
    // Asked several times for every key of every call: bytes compared in place, no searcher.
    let bytes = pk.as_bytes();
    let Some(owner_end) = bytes.iter().position(|&b| b == b'#') else {
        return false;
    };
    let rest = &bytes[owner_end + 1..];
    GATE_STATE_KINDS.iter().any(|kind| {
        rest.starts_with(kind.as_bytes()) && rest.get(kind.len()).is_none_or(|&next| next == b'#')
    })
}

/// A key-value store with conditional writes.
///
/// Contract, held by every backend and checked by one conformance suite:
/// reads are strongly consistent; an expired item is absent everywhere; a failed condition
/// changes nothing; a transaction is all or nothing; every method is one round trip.
#[async_trait::async_trait]
pub trait Store: Send + Sync + std::fmt::Debug + 'static {
    /// The live item at `key`, or `Ok(None)` when absent or expired.
    async fn get(&self, key: &Key) -> Result<Option<Item>, StoreError>;

    /// Up to 100 distinct keys in one round trip; the answer is in the order of `keys`.
    async fn batch_get(&self, keys: &[Key]) -> Result<Vec<Option<Item>>, StoreError>;

    /// Writes a whole item.
    async fn put(&self, put: Put) -> Result<(), StoreError>;

    /// Changes an item (creating it when absent) and returns it as stored.
    async fn update(&self, update: Update) -> Result<Item, StoreError>;

    /// Removes an item and returns the live item it removed, if any.
    async fn delete(&self, delete: Delete) -> Result<Option<Item>, StoreError>;

    /// One page of a partition's live items.
    async fn query(&self, query: Query) -> Result<Page, StoreError>;

    /// Up to 100 operations on distinct items, all or nothing.
    async fn transact_write(&self, ops: Vec<TransactOp>) -> Result<(), StoreError>;

    /// What `derivation` makes of the items at `keys`, and the items at `more`, in one round
    /// trip (up to 100 distinct keys in all). Means exactly [`derive_from_batch`]; a backend
    /// that knows the items at `keys` did not change may answer with the value it derived from
    /// them before (the embedded store does, ADR 32).
    async fn batch_get_derived(
        &self,
        keys: &[Key],
        more: &[Key],
        derivation: Derivation<'_>,
    ) -> Result<(Derived, Vec<Option<Item>>), StoreError> {
        derive_from_batch(self, keys, more, derivation).await
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn gate_state_is_the_kind_after_the_owner() {
        let by_split = |pk: &str| {
            pk.split('#')
                .nth(1)
                .is_some_and(|kind| super::GATE_STATE_KINDS.contains(&kind))
        };
        let keys = [
            "acme#rate#con_1",
            "acme#rate",
            "acme#slot#c",
            "acme#brake#c#x",
            "#rate#x",
            "acme#rates#x",
            "acme#rat",
            "acme#ratex",
            "rate#x",
            "acme",
            "acme#",
            "",
            "acme#replay#c",
            "acme#member",
            "mcptoken#abc",
            "a#b#rate",
        ];
        for pk in keys {
            assert_eq!(super::is_gate_state(pk), by_split(pk), "{pk:?}");
        }
        assert!(super::is_gate_state("acme#slot#c") && !super::is_gate_state("acme#rates#x"));
    }
}
