//! The in-memory backend: the reference for the store's semantics and the store of unit tests.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::{Arc, Mutex};

use crate::engine::{self, Effect, Failed};
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

    fn write_one(&self, op: TransactOp) -> Result<Option<Item>, StoreError> {
        engine::validate_op(&op)?;
        let now = self.clock.now();
        let mut items = self.lock();
        let stored = items.get(op.key());
        let old = stored.filter(|i| engine::is_live(i, now)).cloned();
        match engine::plan(&op, stored, now)? {
            Err(Failed { old }) => Err(StoreError::ConditionFailed { old }),
            Ok(effect) => {
                let key = op.key().clone();
                Ok(apply(&mut items, key, effect).or(old))
            }
        }
    }
}

/// Applies a planned effect; returns the stored item for a store.
fn apply(items: &mut BTreeMap<Key, Item>, key: Key, effect: Effect) -> Option<Item> {
    match effect {
        Effect::Store(item) => {
            items.insert(key, item.clone());
            Some(item)
        }
        Effect::Remove => {
            items.remove(&key);
            None
        }
        Effect::Keep => None,
    }
}

#[async_trait::async_trait]
impl Store for MemoryStore {
    async fn get(&self, key: &Key) -> Result<Option<Item>, StoreError> {
        engine::validate_key(key)?;
        let now = self.clock.now();
        Ok(self
            .lock()
            .get(key)
            .filter(|i| engine::is_live(i, now))
            .cloned())
    }

    async fn batch_get(&self, keys: &[Key]) -> Result<Vec<Option<Item>>, StoreError> {
        engine::validate_batch(keys)?;
        let now = self.clock.now();
        let items = self.lock();
        Ok(keys
            .iter()
            .map(|k| items.get(k).filter(|i| engine::is_live(i, now)).cloned())
            .collect())
    }

    async fn put(&self, put: Put) -> Result<(), StoreError> {
        self.write_one(TransactOp::Put(put)).map(|_| ())
    }

    async fn update(&self, update: Update) -> Result<Item, StoreError> {
        self.write_one(TransactOp::Update(update))
            .map(Option::unwrap_or_default)
    }

    async fn delete(&self, delete: Delete) -> Result<Option<Item>, StoreError> {
        // For a delete, `write_one` returns the live item that was there before.
        self.write_one(TransactOp::Delete(delete))
    }

    async fn query(&self, query: Query) -> Result<Page, StoreError> {
        if query.limit == Some(0) {
            return Err(crate::Invalid::ZeroLimit.into());
        }
        if query.pk.is_empty() {
            return Err(crate::Invalid::EmptyKey.into());
        }
        let after = query
            .cursor
            .as_ref()
            .map(|c| engine::decode_cursor(c, &query.pk))
            .transpose()?;
        let now = self.clock.now();
        let items = self.lock();
        let lo = Key::new(query.pk.clone(), String::new());
        let partition = items
            .range((Bound::Included(lo), Bound::Unbounded))
            .take_while(|(k, _)| k.pk == query.pk);
        let mut matching: Vec<(&Key, &Item)> = partition
            .filter(|(k, _)| query.sort.as_ref().is_none_or(|c| c.matches(&k.sk)))
            .filter(|(_, i)| engine::is_live(i, now))
            .collect();
        if query.descending {
            matching.reverse();
        }
        let start = match &after {
            None => 0,
            Some(sk) => matching
                .iter()
                .position(|(k, _)| {
                    if query.descending {
                        k.sk.as_str() < sk.as_str()
                    } else {
                        k.sk.as_str() > sk.as_str()
                    }
                })
                .unwrap_or(matching.len()),
        };
        let limit = query.limit.map_or(usize::MAX, |l| l as usize);
        let rest = &matching[start..];
        let page: Vec<(Key, Item)> = rest
            .iter()
            .take(limit)
            .map(|(k, i)| ((*k).clone(), (*i).clone()))
            .collect();
        let next = if rest.len() > page.len() {
            page.last().map(|(k, _)| engine::encode_cursor(k))
        } else {
            None
        };
        Ok(Page { items: page, next })
    }

    async fn transact_write(&self, ops: Vec<TransactOp>) -> Result<(), StoreError> {
        engine::validate_transaction(&ops)?;
        let now = self.clock.now();
        let mut items = self.lock();
        let mut effects = Vec::with_capacity(ops.len());
        let mut failures = Vec::with_capacity(ops.len());
        for op in &ops {
            match engine::plan(op, items.get(op.key()), now)? {
                Ok(effect) => {
                    effects.push(effect);
                    failures.push(None);
                }
                Err(failed) => failures.push(Some(failed)),
            }
        }
        if failures.iter().any(Option::is_some) {
            return Err(engine::cancelled(failures));
        }
        for (op, effect) in ops.into_iter().zip(effects) {
            let key = op.key().clone();
            apply(&mut items, key, effect);
        }
        Ok(())
    }
}
