//! Every store call with an end: a wrapper that answers `Unavailable` when the backend has
//! not answered within a bound, so that no step of a call (authentication, admission, the
//! commit) waits on a slow or queuing store for longer than that (ADR 22).
//!
//! A call given up on may still complete at the backend. That is safe where it matters: a
//! write's replay record commits with it, so the caller's retry is answered by the replay.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use crate::{Delete, Item, Key, Page, Put, Query, Store, StoreError, TransactOp, Update};

/// A timer: a future that ends after the duration (the runtime's; the edge passes its own).
pub type Timer = Arc<dyn Fn(Duration) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync>;

/// Wraps a store so that each call answers within `bound`.
pub struct BoundedStore {
    inner: Arc<dyn Store>,
    bound: Duration,
    timer: Timer,
}

impl std::fmt::Debug for BoundedStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BoundedStore")
            .field("inner", &self.inner)
            .field("bound", &self.bound)
            .finish_non_exhaustive()
    }
}

impl BoundedStore {
    /// `inner`, each of whose calls is given up on after `bound` (timed by `timer`).
    pub fn new(inner: Arc<dyn Store>, bound: Duration, timer: Timer) -> Self {
        BoundedStore {
            inner,
            bound,
            timer,
        }
    }

    async fn within<T>(
        &self,
        call: impl Future<Output = Result<T, StoreError>> + Send,
    ) -> Result<T, StoreError> {
        let mut call = std::pin::pin!(call);
        // The timer is made when the call first waits: a backend that answers on its first
        // poll (the embedded store's gate state and kept items) needs none, and making one
        // costs an allocation and a timer entry per call. Polled as `select` polls: the call
        // first, then the timer.
        let mut timer = None;
        std::future::poll_fn(|cx| {
            if let Poll::Ready(answer) = call.as_mut().poll(cx) {
                return Poll::Ready(answer);
            }
            let timer = timer.get_or_insert_with(|| (self.timer)(self.bound));
            match timer.as_mut().poll(cx) {
                Poll::Ready(()) => Poll::Ready(Err(StoreError::Unavailable(format!(
                    "the store did not answer within {} ms",
                    self.bound.as_millis()
                )))),
                Poll::Pending => Poll::Pending,
            }
        })
        .await
    }
}

#[async_trait::async_trait]
impl Store for BoundedStore {
    async fn get(&self, key: &Key) -> Result<Option<Item>, StoreError> {
        self.within(self.inner.get(key)).await
    }

    async fn batch_get(&self, keys: &[Key]) -> Result<Vec<Option<Item>>, StoreError> {
        self.within(self.inner.batch_get(keys)).await
    }

    async fn put(&self, put: Put) -> Result<(), StoreError> {
        self.within(self.inner.put(put)).await
    }

    async fn update(&self, update: Update) -> Result<Item, StoreError> {
        self.within(self.inner.update(update)).await
    }

    async fn delete(&self, delete: Delete) -> Result<Option<Item>, StoreError> {
        self.within(self.inner.delete(delete)).await
    }

    async fn query(&self, query: Query) -> Result<Page, StoreError> {
        self.within(self.inner.query(query)).await
    }

    async fn transact_write(&self, ops: Vec<TransactOp>) -> Result<(), StoreError> {
        self.within(self.inner.transact_write(ops)).await
    }

    async fn batch_get_derived(
        &self,
        keys: &[Key],
        more: &[Key],
        derivation: crate::Derivation<'_>,
    ) -> Result<(crate::Derived, Vec<Option<Item>>), StoreError> {
        self.within(self.inner.batch_get_derived(keys, more, derivation))
            .await
    }
}
