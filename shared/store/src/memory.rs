//! The in-memory backend: the reference for the store's semantics and the store of unit tests.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::{Arc, Mutex};

use crate::rows::{self, Rows};
use crate::{Delete, Item, Key, Page, Put, Query, Store, StoreError, TransactOp, Update};

/// A store held in one process's memory. Every call takes one lock, so every call is atomic.
#[derive(Debug)]
pub struct MemoryStore {
    items: Mutex<BTreeMap<Key, Item>>,
    /// Decides which items have expired (the unit of [`crate::TTL_ATTRIBUTE`]).
    clock: Arc<dyn outside::Clock>,
}

impl Default for MemoryStore {
    fn default() -> Self {
        MemoryStore {
            items: Mutex::default(),
            clock: Arc::new(outside::SystemClock),
        }
    }
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Decides expiry by `clock` instead of the system's.
    pub fn with_clock(mut self, clock: Arc<dyn outside::Clock>) -> Self {
        self.clock = clock;
        self
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<Key, Item>> {
        // A panic while holding the lock cannot leave a half-applied write (each write is one
        // map operation after planning), so a poisoned lock is still consistent.
        self.items
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The map as the store's rows: the caller holds the lock for the whole operation.
impl Rows for BTreeMap<Key, Item> {
    fn get(&self, key: &Key) -> Result<Option<Item>, StoreError> {
        Ok(BTreeMap::get(self, key).cloned())
    }

    fn set(&mut self, key: &Key, item: &Item) -> Result<(), StoreError> {
        self.insert(key.clone(), item.clone());
        Ok(())
    }

    fn remove(&mut self, key: &Key) -> Result<(), StoreError> {
        BTreeMap::remove(self, key);
        Ok(())
    }

    fn scan<'a>(
        &'a self,
        pk: &str,
        after: Option<&str>,
        descending: bool,
    ) -> Result<rows::Scan<'a>, StoreError> {
        let first = Key::new(pk.to_owned(), String::new());
        let pk = pk.to_owned();
        let after = after.map(str::to_owned);
        let partition = self
            .range((Bound::Included(first), Bound::Unbounded))
            .take_while(move |(k, _)| k.pk == pk);
        let rows: Vec<(&Key, &Item)> = if descending {
            partition.collect::<Vec<_>>().into_iter().rev().collect()
        } else {
            partition.collect()
        };
        Ok(Box::new(
            rows.into_iter()
                .filter(move |(k, _)| match &after {
                    None => true,
                    Some(a) if descending => k.sk.as_str() < a.as_str(),
                    Some(a) => k.sk.as_str() > a.as_str(),
                })
                .map(|(k, i)| Ok((k.clone(), i.clone()))),
        ))
    }
}

#[async_trait::async_trait]
impl Store for MemoryStore {
    async fn get(&self, key: &Key) -> Result<Option<Item>, StoreError> {
        rows::get(&*self.lock(), key, self.clock.now())
    }

    async fn batch_get(&self, keys: &[Key]) -> Result<Vec<Option<Item>>, StoreError> {
        rows::batch_get(&*self.lock(), keys, self.clock.now())
    }

    async fn put(&self, put: Put) -> Result<(), StoreError> {
        rows::put(&mut *self.lock(), put, self.clock.now())
    }

    async fn update(&self, update: Update) -> Result<Item, StoreError> {
        rows::update(&mut *self.lock(), update, self.clock.now())
    }

    async fn delete(&self, delete: Delete) -> Result<Option<Item>, StoreError> {
        rows::delete(&mut *self.lock(), delete, self.clock.now())
    }

    async fn query(&self, query: Query) -> Result<Page, StoreError> {
        rows::query(&*self.lock(), &query, self.clock.now())
    }

    async fn transact_write(&self, ops: Vec<TransactOp>) -> Result<(), StoreError> {
        rows::transact_write(&mut *self.lock(), &ops, self.clock.now())
    }
}
