//! Items read ahead for one piece of work, served to its reads without another round trip.
//!
//! The pipeline reads the records a tool call names (its handle arguments) in the same batch
//! as the caller's credential. The product's services read through their own store handle and
//! know nothing of that batch; [`ReadAheadStore`] wraps that handle and answers a `get` (or
//! part of a `batch_get`) from the items of the [`scope`] the read runs in. Outside a scope,
//! and for every key not read ahead, it is the store it wraps.
//!
//! A scope lives for the polls of one future on whatever thread polls it, so it reaches
//! exactly the reads that future makes, never another request's (work it spawns elsewhere
//! reads the store). Items read ahead are as fresh as the batch (milliseconds older than a
//! read in the body); every write that depends on one is conditional on its version anyway.

use std::cell::RefCell;
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use crate::{Delete, Item, Key, Page, Put, Query, Store, StoreError, TransactOp, Update};

/// Items by key (`None`: read, and absent).
pub type ReadAheadItems = HashMap<Key, Option<Item>>;

thread_local! {
    static CURRENT: RefCell<Option<Arc<ReadAheadItems>>> = const { RefCell::new(None) };
}

fn lookup(key: &Key) -> Option<Option<Item>> {
    CURRENT.with(|current| {
        current
            .borrow()
            .as_ref()
            .and_then(|items| items.get(key).cloned())
    })
}

/// Runs `work` with `items` served to its reads through [`ReadAheadStore`].
pub fn scope<'a, T: 'a>(
    items: Arc<ReadAheadItems>,
    work: impl Future<Output = T> + Send + 'a,
) -> impl Future<Output = T> + Send + 'a {
    Scoped {
        items,
        work: Box::pin(work),
    }
}

struct Scoped<'a, T> {
    items: Arc<ReadAheadItems>,
    work: Pin<Box<dyn Future<Output = T> + Send + 'a>>,
}

/// Puts the previous scope back when a poll ends, even by a panic.
struct Restore(Option<Arc<ReadAheadItems>>);

impl Drop for Restore {
    fn drop(&mut self) {
        let previous = self.0.take();
        CURRENT.with(|current| *current.borrow_mut() = previous);
    }
}

impl<T> Future for Scoped<'_, T> {
    type Output = T;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        let this = self.get_mut();
        let previous = CURRENT.with(|current| current.replace(Some(Arc::clone(&this.items))));
        let _restore = Restore(previous);
        this.work.as_mut().poll(cx)
    }
}

/// A store whose reads are answered from the current [`scope`] where it has the item.
#[derive(Debug, Clone)]
pub struct ReadAheadStore<S> {
    inner: S,
}

impl<S> ReadAheadStore<S> {
    /// Wraps `inner`.
    pub fn new(inner: S) -> Self {
        ReadAheadStore { inner }
    }
}

#[async_trait::async_trait]
impl<S: Store> Store for ReadAheadStore<S> {
    async fn get(&self, key: &Key) -> Result<Option<Item>, StoreError> {
        match lookup(key) {
            Some(item) => Ok(item),
            None => self.inner.get(key).await,
        }
    }

    async fn batch_get(&self, keys: &[Key]) -> Result<Vec<Option<Item>>, StoreError> {
        let known: Vec<Option<Option<Item>>> = keys.iter().map(lookup).collect();
        let missing: Vec<Key> = keys
            .iter()
            .zip(&known)
            .filter(|(_, k)| k.is_none())
            .map(|(key, _)| key.clone())
            .collect();
        let mut fetched = if missing.is_empty() {
            Vec::new()
        } else {
            self.inner.batch_get(&missing).await?
        }
        .into_iter();
        Ok(known
            .into_iter()
            .map(|k| match k {
                Some(item) => item,
                None => fetched.next().flatten(),
            })
            .collect())
    }

    async fn put(&self, put: Put) -> Result<(), StoreError> {
        self.inner.put(put).await
    }

    async fn update(&self, update: Update) -> Result<Item, StoreError> {
        self.inner.update(update).await
    }

    async fn delete(&self, delete: Delete) -> Result<Option<Item>, StoreError> {
        self.inner.delete(delete).await
    }

    async fn query(&self, query: Query) -> Result<Page, StoreError> {
        self.inner.query(query).await
    }

    async fn transact_write(&self, ops: Vec<TransactOp>) -> Result<(), StoreError> {
        self.inner.transact_write(ops).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MemoryStore;
    use crate::test_support::{block_on, item};

    #[test]
    fn reads_in_scope_are_served_and_others_are_not() {
        block_on(async {
            let inner = Arc::new(MemoryStore::new());
            let (a, b) = (Key::new("t#x", "a"), Key::new("t#x", "b"));
            inner
                .put(Put::new(a.clone(), item("stored a")))
                .await
                .unwrap();
            inner
                .put(Put::new(b.clone(), item("stored b")))
                .await
                .unwrap();
            let store = ReadAheadStore::new(Arc::clone(&inner));
            let items: ReadAheadItems = [(a.clone(), Some(item("ahead a")))].into();
            let (in_scope, batch) = scope(Arc::new(items), async {
                (
                    store.get(&a).await.unwrap(),
                    store.batch_get(&[b.clone(), a.clone()]).await.unwrap(),
                )
            })
            .await;
            assert_eq!(in_scope, Some(item("ahead a")));
            assert_eq!(batch, vec![Some(item("stored b")), Some(item("ahead a"))]);
            // Outside the scope the store answers.
            assert_eq!(store.get(&a).await.unwrap(), Some(item("stored a")));
        });
    }
}
