//! A wrapper that counts round trips, so tests can hold each tool call to a budget.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::{Delete, Item, Key, Page, Put, Query, Store, StoreError, TransactOp, Update};

/// Round trips made through a [`CountingStore`], per kind of call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RoundTrips {
    /// `get` calls.
    pub get: u64,
    /// `batch_get` calls.
    pub batch_get: u64,
    /// `put` calls.
    pub put: u64,
    /// `update` calls.
    pub update: u64,
    /// `delete` calls.
    pub delete: u64,
    /// `query` calls.
    pub query: u64,
    /// `transact_write` calls.
    pub transact_write: u64,
}

impl RoundTrips {
    /// All round trips together.
    pub fn total(&self) -> u64 {
        self.get
            + self.batch_get
            + self.put
            + self.update
            + self.delete
            + self.query
            + self.transact_write
    }
}

/// Wraps any store and counts every call it forwards (failed calls count: they were still a
/// round trip).
#[derive(Debug, Default)]
pub struct CountingStore<S> {
    inner: S,
    counters: [AtomicU64; 7],
}

impl<S> CountingStore<S> {
    /// Wraps `inner` with every count at zero.
    pub fn new(inner: S) -> Self {
        CountingStore {
            inner,
            counters: Default::default(),
        }
    }

    /// The counts so far.
    pub fn round_trips(&self) -> RoundTrips {
        let c = |i: usize| self.counters[i].load(Ordering::Relaxed);
        RoundTrips {
            get: c(0),
            batch_get: c(1),
            put: c(2),
            update: c(3),
            delete: c(4),
            query: c(5),
            transact_write: c(6),
        }
    }

    /// Sets every count back to zero.
    pub fn reset(&self) {
        for counter in &self.counters {
            counter.store(0, Ordering::Relaxed);
        }
    }

    /// The wrapped store.
    pub fn inner(&self) -> &S {
        &self.inner
    }

    fn bump(&self, i: usize) {
        self.counters[i].fetch_add(1, Ordering::Relaxed);
    }
}

#[async_trait::async_trait]
impl<S: Store> Store for CountingStore<S> {
    async fn get(&self, key: &Key) -> Result<Option<Item>, StoreError> {
        self.bump(0);
        self.inner.get(key).await
    }

    async fn batch_get(&self, keys: &[Key]) -> Result<Vec<Option<Item>>, StoreError> {
        self.bump(1);
        self.inner.batch_get(keys).await
    }

    async fn put(&self, put: Put) -> Result<(), StoreError> {
        self.bump(2);
        self.inner.put(put).await
    }

    async fn update(&self, update: Update) -> Result<Item, StoreError> {
        self.bump(3);
        self.inner.update(update).await
    }

    async fn delete(&self, delete: Delete) -> Result<Option<Item>, StoreError> {
        self.bump(4);
        self.inner.delete(delete).await
    }

    async fn query(&self, query: Query) -> Result<Page, StoreError> {
        self.bump(5);
        self.inner.query(query).await
    }

    async fn transact_write(&self, ops: Vec<TransactOp>) -> Result<(), StoreError> {
        self.bump(6);
        self.inner.transact_write(ops).await
    }
}

#[async_trait::async_trait]
impl<S: Store + ?Sized> Store for std::sync::Arc<S> {
    async fn get(&self, key: &Key) -> Result<Option<Item>, StoreError> {
        (**self).get(key).await
    }
    async fn batch_get(&self, keys: &[Key]) -> Result<Vec<Option<Item>>, StoreError> {
        (**self).batch_get(keys).await
    }
    async fn put(&self, put: Put) -> Result<(), StoreError> {
        (**self).put(put).await
    }
    async fn update(&self, update: Update) -> Result<Item, StoreError> {
        (**self).update(update).await
    }
    async fn delete(&self, delete: Delete) -> Result<Option<Item>, StoreError> {
        (**self).delete(delete).await
    }
    async fn query(&self, query: Query) -> Result<Page, StoreError> {
        (**self).query(query).await
    }
    async fn transact_write(&self, ops: Vec<TransactOp>) -> Result<(), StoreError> {
        (**self).transact_write(ops).await
    }
}
