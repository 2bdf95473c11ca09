//! Values made from items, which a backend may keep beside them ([`crate::Store::batch_get_derived`], ADR 32).

use std::any::Any;
use std::sync::Arc;

use crate::{Item, Key, Store, StoreError};

/// A value made from items: shared, so a backend that keeps it hands out the same one.
pub type Derived = Arc<dyn Any + Send + Sync>;

/// What to make of the items at some keys, under a name.
///
/// Two derivations with one name must make the same of the same items within a process, and
/// depend on nothing else (not the clock, not the request): a backend may answer with what the
/// named derivation made of the same, unchanged items before.
#[derive(Clone, Copy)]
pub struct Derivation<'a> {
    /// Names the function, for the backend's keeping.
    pub name: &'static str,
    /// The function: the items in the order of their keys (`None` when absent or expired).
    pub derive: &'a (dyn Fn(&[Option<Item>]) -> Derived + Send + Sync),
}

impl std::fmt::Debug for Derivation<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Derivation")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// What [`crate::Store::batch_get_derived`] means, for any backend: one batch read of `keys`
/// and `more`, the first part handed to the derivation.
pub async fn derive_from_batch<S: Store + ?Sized>(
    store: &S,
    keys: &[Key],
    more: &[Key],
    derivation: Derivation<'_>,
) -> Result<(Derived, Vec<Option<Item>>), StoreError> {
    let all: Vec<Key> = keys.iter().chain(more).cloned().collect();
    let mut items = store.batch_get(&all).await?;
    let rest = items.split_off(keys.len());
    Ok(((derivation.derive)(&items), rest))
}
