//! A store that fails on purpose: it wraps any backend and, by rule, throttles, fails, delays,
//! or commits and then loses the answer, for the calls a rule picks (an operation touching a
//! kind of partition). The app runs on it unchanged, so a test can break one step of a call
//! (authentication, replay lookup, admission, the body's reads, the commit, the confirmation's
//! consumption, the outbox claim) and then look at what the real store holds.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use store::{
    CancelReason, Delete, Item, Key, Page, Put, Query, Store, StoreError, TransactOp, Update,
};

/// A store operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    Get,
    BatchGet,
    Put,
    Update,
    Delete,
    Query,
    Transact,
}

/// A gate a held call waits at until the test opens it: an order between two calls that no
/// machine's speed changes (a fixed delay only hopes the other call is done by then).
#[derive(Debug, Clone)]
pub(crate) struct Gate(Arc<tokio::sync::watch::Sender<bool>>);

impl Gate {
    pub(crate) fn new() -> Gate {
        Gate(Arc::new(tokio::sync::watch::channel(false).0))
    }

    /// Lets every call held at it (and every later one) through.
    pub(crate) fn open(&self) {
        self.0.send_replace(true);
    }

    /// Once the gate is open.
    pub(crate) async fn passed(&self) {
        let mut open = self.0.subscribe();
        let _ = open.wait_for(|open| *open).await;
    }
}

/// What a rule does to the calls it picks.
#[derive(Debug, Clone)]
pub(crate) enum Fault {
    /// `StoreError::Throttled`, nothing done.
    Throttle,
    /// `StoreError::Unavailable`, nothing done.
    Fail,
    /// Forwarded after this long.
    Delay(Duration),
    /// Forwarded once the gate is open.
    HoldUntil(Gate),
    /// Forwarded and done, then answered `Unavailable` as if the answer was lost on the way.
    LoseAnswer,
    /// Refused as the backend refuses an item over 400 KB, nothing done.
    TooLarge,
    /// A transaction cancelled by a concurrent one on the same items (DynamoDB's
    /// `TransactionConflict`), nothing done.
    Conflict,
    /// A transaction done, its answer lost, and sent again as an SDK would: the answer is that
    /// second attempt's (its conditions now fail on the first attempt's items).
    DoneThenRetried,
    /// The store's code panics in the call after this long (a bug in a driver), nothing done.
    PanicAfter(Duration),
    /// A batch read answered as DynamoDB may answer one, item by item with no common snapshot:
    /// the items in partitions of kind `first`, then (having opened `read`), once `until` is
    /// open, the others (elsewhere forwarded unchanged).
    ReadApart {
        first: &'static str,
        read: Gate,
        until: Gate,
    },
}

/// One call as the rules see it: its operation and the items it addresses (a query: its
/// partition, with an empty sort key).
#[derive(Debug, Clone)]
pub(crate) struct Call {
    pub(crate) op: Op,
    pub(crate) keys: Vec<Key>,
}

impl Call {
    /// Whether any item it addresses is in a partition with `kind` among the segments of its
    /// name (`acme#replay#con_1` is a `replay` partition, `mcptoken#ab12` an `mcptoken` one).
    pub(crate) fn touches(&self, kind: &str) -> bool {
        self.keys.iter().any(|k| is_kind(k, kind))
    }

    /// Whether it addresses items and every one is in a partition of `kind`.
    pub(crate) fn touches_only(&self, kind: &str) -> bool {
        !self.keys.is_empty() && self.keys.iter().all(|k| is_kind(k, kind))
    }
}

/// Whether `key`'s partition has `kind` among the segments of its name.
fn is_kind(key: &Key, kind: &str) -> bool {
    key.pk.split('#').any(|segment| segment == kind)
}

type Picks = Box<dyn Fn(&Call) -> bool + Send + Sync>;
type Sees = Box<dyn Fn(&Call) + Send + Sync>;

struct Rule {
    picks: Picks,
    fault: Fault,
    /// How many more calls it applies to.
    left: usize,
}

/// The wrapping store.
pub(crate) struct FaultyStore {
    inner: Arc<dyn Store>,
    rules: Mutex<Vec<Rule>>,
    /// Shown every call, which they leave unchanged.
    watchers: Mutex<Vec<Sees>>,
    /// Shown every single-item call and query once it has answered.
    answer_watchers: Mutex<Vec<Sees>>,
    /// Every call that met a fault, in order.
    hit: Mutex<Vec<(Op, Vec<Key>)>>,
}

impl std::fmt::Debug for FaultyStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FaultyStore").finish_non_exhaustive()
    }
}

impl FaultyStore {
    pub(crate) fn new(inner: Arc<dyn Store>) -> Arc<FaultyStore> {
        Arc::new(FaultyStore {
            inner,
            rules: Mutex::new(Vec::new()),
            watchers: Mutex::new(Vec::new()),
            answer_watchers: Mutex::new(Vec::new()),
            hit: Mutex::new(Vec::new()),
        })
    }

    /// From now on, the next `times` calls `picks` chooses meet `fault`.
    pub(crate) fn on(
        &self,
        picks: impl Fn(&Call) -> bool + Send + Sync + 'static,
        fault: Fault,
        times: usize,
    ) {
        self.rules.lock().unwrap().push(Rule {
            picks: Box::new(picks),
            fault,
            left: times,
        });
    }

    /// From now on `sees` is shown every call, which goes on unchanged.
    pub(crate) fn watch(&self, sees: impl Fn(&Call) + Send + Sync + 'static) {
        self.watchers.lock().unwrap().push(Box::new(sees));
    }

    /// From now on `sees` is shown every single-item call and query once it has answered
    /// (not batch reads or transactions).
    pub(crate) fn watch_answers(&self, sees: impl Fn(&Call) + Send + Sync + 'static) {
        self.answer_watchers.lock().unwrap().push(Box::new(sees));
    }

    /// No more faults.
    pub(crate) fn heal(&self) {
        self.rules.lock().unwrap().clear();
    }

    /// How many calls met a fault so far.
    pub(crate) fn faults_met(&self) -> usize {
        self.hit.lock().unwrap().len()
    }

    /// The wrapped store, to look at what it holds.
    pub(crate) fn inner(&self) -> &Arc<dyn Store> {
        &self.inner
    }

    /// The fault for `call`, if a rule picks it (using up one of the rule's times).
    fn fault_for(&self, call: Call) -> Option<Fault> {
        for sees in self.watchers.lock().unwrap().iter() {
            sees(&call);
        }
        let mut rules = self.rules.lock().unwrap();
        let rule = rules.iter_mut().find(|r| r.left > 0 && (r.picks)(&call))?;
        rule.left -= 1;
        self.hit.lock().unwrap().push((call.op, call.keys));
        Some(rule.fault.clone())
    }

    /// Runs `forward` under the fault `call` meets, if any.
    async fn run<T>(
        &self,
        call: Call,
        forward: impl Future<Output = Result<T, StoreError>>,
    ) -> Result<T, StoreError> {
        let answer = self.apply(self.fault_for(call.clone()), forward).await;
        for sees in self.answer_watchers.lock().unwrap().iter() {
            sees(&call);
        }
        answer
    }

    /// Runs `forward` under `fault`.
    async fn apply<T>(
        &self,
        fault: Option<Fault>,
        forward: impl Future<Output = Result<T, StoreError>>,
    ) -> Result<T, StoreError> {
        match fault {
            None => forward.await,
            Some(Fault::Throttle) => Err(StoreError::Throttled),
            Some(Fault::Fail) => Err(StoreError::Unavailable("injected failure".into())),
            Some(Fault::TooLarge) => Err(StoreError::Invalid(store::Invalid::ItemTooLarge {
                size: 500_000,
            })),
            Some(Fault::PanicAfter(d)) => {
                tokio::time::sleep(d).await;
                panic!("injected: the store panicked")
            }
            Some(Fault::Delay(d)) => {
                tokio::time::sleep(d).await;
                forward.await
            }
            Some(Fault::HoldUntil(gate)) => {
                gate.passed().await;
                forward.await
            }
            Some(Fault::LoseAnswer) => {
                let _done = forward.await;
                Err(StoreError::Unavailable(
                    "injected: the answer was lost".into(),
                ))
            }
            Some(Fault::ReadApart { .. }) => forward.await,
            // Only transactions meet these (see `transact_write`); elsewhere they fail.
            Some(Fault::Conflict | Fault::DoneThenRetried) => {
                Err(StoreError::Unavailable("injected failure".into()))
            }
        }
    }
}

impl FaultyStore {
    /// `keys` read in two batches, those of kind `first` (then `read` is opened), and once
    /// `until` is open the others, answered in the order asked.
    async fn read_apart(
        &self,
        keys: &[Key],
        first: &str,
        read_first: &Gate,
        until: &Gate,
    ) -> Result<Vec<Option<Item>>, StoreError> {
        let (early, late): (Vec<Key>, Vec<Key>) =
            keys.iter().cloned().partition(|k| is_kind(k, first));
        let mut read = std::collections::HashMap::new();
        for (part, late) in [(early, false), (late, true)] {
            if late {
                read_first.open();
                until.passed().await;
            }
            if !part.is_empty() {
                let items = self.inner.batch_get(&part).await?;
                read.extend(part.into_iter().zip(items));
            }
        }
        Ok(keys.iter().map(|k| read.remove(k).flatten()).collect())
    }
}

fn call(op: Op, keys: Vec<Key>) -> Call {
    Call { op, keys }
}

#[async_trait::async_trait]
impl Store for FaultyStore {
    async fn get(&self, key: &Key) -> Result<Option<Item>, StoreError> {
        self.run(call(Op::Get, vec![key.clone()]), self.inner.get(key))
            .await
    }

    async fn batch_get(&self, keys: &[Key]) -> Result<Vec<Option<Item>>, StoreError> {
        match self.fault_for(call(Op::BatchGet, keys.to_vec())) {
            Some(Fault::ReadApart { first, read, until }) => {
                self.read_apart(keys, first, &read, &until).await
            }
            fault => self.apply(fault, self.inner.batch_get(keys)).await,
        }
    }

    async fn put(&self, put: Put) -> Result<(), StoreError> {
        let c = call(Op::Put, vec![put.key.clone()]);
        self.run(c, self.inner.put(put)).await
    }

    async fn update(&self, update: Update) -> Result<Item, StoreError> {
        let c = call(Op::Update, vec![update.key.clone()]);
        self.run(c, self.inner.update(update)).await
    }

    async fn delete(&self, delete: Delete) -> Result<Option<Item>, StoreError> {
        let c = call(Op::Delete, vec![delete.key.clone()]);
        self.run(c, self.inner.delete(delete)).await
    }

    async fn query(&self, query: Query) -> Result<Page, StoreError> {
        let c = call(Op::Query, vec![Key::new(query.pk.clone(), "")]);
        self.run(c, self.inner.query(query)).await
    }

    async fn transact_write(&self, ops: Vec<TransactOp>) -> Result<(), StoreError> {
        let c = call(Op::Transact, ops.iter().map(|o| o.key().clone()).collect());
        match self.fault_for(c) {
            Some(Fault::Conflict) => Err(StoreError::TransactionCancelled {
                reasons: vec![CancelReason::Conflict; ops.len()],
            }),
            Some(Fault::DoneThenRetried) => {
                let _first = self.inner.transact_write(ops.clone()).await;
                self.inner.transact_write(ops).await
            }
            fault => self.apply(fault, self.inner.transact_write(ops)).await,
        }
    }
}
