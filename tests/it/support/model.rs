//! The whole app under `shuttle`'s scheduler: a store that yields to the scheduler before each
//! operation (each operation itself atomic, as a backend's are), so that every interleaving of
//! concurrent calls at store boundaries can be chosen; the pipeline's timer and deferred work
//! on shuttle's tasks.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use store::{
    Delete, Item, Key, MemoryStore, Page, Put, Query, Store, StoreError, TransactOp, Update,
};

/// A `MemoryStore` whose every operation first lets another task run. It also remembers the
/// most concurrency slots any connection held at once.
#[derive(Debug, Default)]
pub(crate) struct YieldingStore {
    inner: MemoryStore,
    most_slots_held: AtomicUsize,
}

impl YieldingStore {
    /// The most slots one connection held at any moment so far.
    pub(crate) fn most_slots_held(&self) -> usize {
        self.most_slots_held.load(Ordering::SeqCst)
    }

    /// After a write: how many slots the written slot partitions hold now.
    async fn note_slots(&self, keys: impl Iterator<Item = &Key>) {
        for key in keys.filter(|k| k.pk.contains("#slot#")) {
            let held = self.inner.query(Query::partition(key.pk.clone())).await;
            let held = held.map_or(0, |page| page.items.len());
            self.most_slots_held.fetch_max(held, Ordering::SeqCst);
        }
    }
}

#[async_trait::async_trait]
impl Store for YieldingStore {
    async fn get(&self, key: &Key) -> Result<Option<Item>, StoreError> {
        shuttle::future::yield_now().await;
        self.inner.get(key).await
    }

    async fn batch_get(&self, keys: &[Key]) -> Result<Vec<Option<Item>>, StoreError> {
        shuttle::future::yield_now().await;
        self.inner.batch_get(keys).await
    }

    async fn put(&self, put: Put) -> Result<(), StoreError> {
        shuttle::future::yield_now().await;
        let key = put.key.clone();
        let done = self.inner.put(put).await;
        self.note_slots(std::iter::once(&key)).await;
        done
    }

    async fn update(&self, update: Update) -> Result<Item, StoreError> {
        shuttle::future::yield_now().await;
        self.inner.update(update).await
    }

    async fn delete(&self, delete: Delete) -> Result<Option<Item>, StoreError> {
        shuttle::future::yield_now().await;
        self.inner.delete(delete).await
    }

    async fn query(&self, query: Query) -> Result<Page, StoreError> {
        shuttle::future::yield_now().await;
        self.inner.query(query).await
    }

    async fn transact_write(&self, ops: Vec<TransactOp>) -> Result<(), StoreError> {
        shuttle::future::yield_now().await;
        let keys: Vec<Key> = ops.iter().map(|op| op.key().clone()).collect();
        let done = self.inner.transact_write(ops).await;
        self.note_slots(keys.iter()).await;
        done
    }
}

/// Work deferred past an answer (slot releases), to be awaited before the end is checked.
pub(crate) type Deferred = Arc<Mutex<Vec<shuttle::future::JoinHandle<()>>>>;

/// Settings running the app on shuttle: short waits (the slot wait) yield a few times; long
/// ones (deadlines, the store bound) never end, since nothing here is slow; deferred work is
/// a shuttle task, remembered in `deferred`.
pub(crate) fn settings(deferred: &Deferred) -> app::Settings {
    let sleep = mcp_pipeline::Sleep(Arc::new(|d: Duration| {
        Box::pin(async move {
            if d >= Duration::from_secs(1) {
                futures_util::future::pending::<()>().await;
            }
            for _ in 0..3 {
                shuttle::future::yield_now().await;
            }
        })
    }));
    let spawned = Arc::clone(deferred);
    let defer = mcp_pipeline::Defer(Arc::new(move |work| {
        let handle = shuttle::future::spawn(work);
        spawned.lock().unwrap().push(handle);
    }));
    app::Settings {
        sleep: Some(sleep),
        defer: Some(defer),
        ..app::Settings::default()
    }
}

/// Awaits every deferred piece of work, including work deferred meanwhile.
pub(crate) async fn settle(deferred: &Deferred) {
    loop {
        let next = deferred.lock().unwrap().pop();
        let Some(handle) = next else { return };
        let _ = handle.await;
    }
}

/// Runs `body` under `schedules` random schedules, each on a fresh state. The app's futures
/// are deep in a debug build, so each task gets a thread-sized stack.
pub(crate) fn check<F>(schedules: usize, body: F)
where
    F: Fn() + Send + Sync + 'static,
{
    let mut config = shuttle::Config::new();
    config.stack_size = 8 * 1024 * 1024;
    let scheduler = shuttle::scheduler::RandomScheduler::new(schedules);
    shuttle::Runner::new(scheduler, config).run(body);
}
