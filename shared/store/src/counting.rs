//! A wrapper that counts round trips, so tests can hold each tool call to a budget.
//!
//! Two numbers matter. The calls per kind say what a call costs in store requests (and so in
//! money). [`RoundTrips::sequential`] says how long a caller waits: the longest chain of calls
//! each of which started after the one before it ended, so calls issued together (a batch of
//! independent reads, an admission write issued beside the tool's read) count once, and a read
//! that waits for another counts after it. A store on this machine answers in microseconds, so
//! overlap would be an accident of scheduling; [`CountingStore::with_latency`] gives every
//! call a simulated network delay so that calls issued together really are in flight together.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

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
    /// Round trips a caller waits for one after the other: the longest chain of calls each
    /// started after the previous one ended.
    pub sequential: u64,
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

/// A simulated network delay, awaited before every call is forwarded.
pub type Latency = Arc<dyn Fn() -> Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync>;

/// Wraps any store and counts every call it forwards (failed calls count: they were still a
/// round trip).
pub struct CountingStore<S> {
    inner: S,
    counters: [AtomicU64; 7],
    /// When each call since the last reset started and ended.
    spans: Mutex<Vec<(Instant, Instant)>>,
    latency: Option<Latency>,
}

impl<S: std::fmt::Debug> std::fmt::Debug for CountingStore<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CountingStore")
            .field("inner", &self.inner)
            .field("round_trips", &self.round_trips())
            .finish_non_exhaustive()
    }
}

/// Records one call's span when it ends.
struct InFlight<'a> {
    spans: &'a Mutex<Vec<(Instant, Instant)>>,
    started: Instant,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        let span = (self.started, Instant::now());
        self.spans
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(span);
    }
}

/// The longest chain of spans, each starting after the previous one ended.
fn longest_chain(spans: &[(Instant, Instant)]) -> u64 {
    let mut spans = spans.to_vec();
    spans.sort();
    let mut chain: Vec<u64> = Vec::with_capacity(spans.len());
    for (i, (start, _)) in spans.iter().enumerate() {
        let before = (0..i)
            .filter(|&j| spans[j].1 <= *start)
            .map(|j| chain[j])
            .max()
            .unwrap_or(0);
        chain.push(before + 1);
    }
    chain.into_iter().max().unwrap_or(0)
}

impl<S> CountingStore<S> {
    /// Wraps `inner` with every count at zero.
    pub fn new(inner: S) -> Self {
        CountingStore {
            inner,
            counters: Default::default(),
            spans: Mutex::new(Vec::new()),
            latency: None,
        }
    }

    /// Awaits `latency` before forwarding each call, as a network store would take, so that
    /// [`RoundTrips::sequential`] sees which calls were issued together.
    pub fn with_latency(mut self, latency: Latency) -> Self {
        self.latency = Some(latency);
        self
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
            sequential: longest_chain(
                &self
                    .spans
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner),
            ),
        }
    }

    /// Sets every count back to zero.
    pub fn reset(&self) {
        for counter in &self.counters {
            counter.store(0, Ordering::Relaxed);
        }
        self.spans
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clear();
    }

    /// The wrapped store.
    pub fn inner(&self) -> &S {
        &self.inner
    }

    /// Counts a call of kind `i`; the returned guard records its span when the call ends.
    async fn begin(&self, i: usize) -> InFlight<'_> {
        self.counters[i].fetch_add(1, Ordering::Relaxed);
        let guard = InFlight {
            spans: &self.spans,
            started: Instant::now(),
        };
        if let Some(latency) = &self.latency {
            latency().await;
        }
        guard
    }
}

#[async_trait::async_trait]
impl<S: Store> Store for CountingStore<S> {
    async fn get(&self, key: &Key) -> Result<Option<Item>, StoreError> {
        let _in_flight = self.begin(0).await;
        self.inner.get(key).await
    }

    async fn batch_get(&self, keys: &[Key]) -> Result<Vec<Option<Item>>, StoreError> {
        let _in_flight = self.begin(1).await;
        self.inner.batch_get(keys).await
    }

    async fn put(&self, put: Put) -> Result<(), StoreError> {
        let _in_flight = self.begin(2).await;
        self.inner.put(put).await
    }

    async fn update(&self, update: Update) -> Result<Item, StoreError> {
        let _in_flight = self.begin(3).await;
        self.inner.update(update).await
    }

    async fn delete(&self, delete: Delete) -> Result<Option<Item>, StoreError> {
        let _in_flight = self.begin(4).await;
        self.inner.delete(delete).await
    }

    async fn query(&self, query: Query) -> Result<Page, StoreError> {
        let _in_flight = self.begin(5).await;
        self.inner.query(query).await
    }

    async fn transact_write(&self, ops: Vec<TransactOp>) -> Result<(), StoreError> {
        let _in_flight = self.begin(6).await;
        self.inner.transact_write(ops).await
    }

    async fn batch_get_derived(
        &self,
        keys: &[Key],
        more: &[Key],
        derivation: crate::Derivation<'_>,
    ) -> Result<(crate::Derived, Vec<Option<Item>>), StoreError> {
        // A batch read, whatever the backend keeps.
        let _in_flight = self.begin(1).await;
        self.inner.batch_get_derived(keys, more, derivation).await
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
    async fn batch_get_derived(
        &self,
        keys: &[Key],
        more: &[Key],
        derivation: crate::Derivation<'_>,
    ) -> Result<(crate::Derived, Vec<Option<Item>>), StoreError> {
        (**self).batch_get_derived(keys, more, derivation).await
    }
}
