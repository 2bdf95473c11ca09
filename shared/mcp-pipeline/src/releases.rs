//! Slot releases sent after an answer, gathered into batches (ADR 14, ADR 38).
//!
//! A read gives its concurrency slot back after its answer. Releases of answers written close
//! together go to the store as one transaction: the first opens a batch and sends it once the
//! runtime has run whatever else was ready; the others join it on the way. Under load one
//! store transaction gives back the slots of several calls; a lone call's batch holds one
//! slot and goes as the plain conditional delete it always was.
//!
//! A client that sends its next call at once could reach admission before its release lands
//! and be told its other calls are still running; so admission first waits for this process's
//! unfinished releases of the same connection ([`Releases::settle`]), and its waiting sends a
//! batch nobody has sent yet. Calls of one connection on two instances at the same moment are
//! concurrent calls, which the slots are there to limit.

use std::collections::BTreeMap;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};

use futures_util::FutureExt as _;
use futures_util::future::{BoxFuture, Shared};
use store::{Key, Store, TransactOp};

use crate::gates::{Gates, Slot, release};
use crate::{Caller, Defer};

/// Most slots one batch gives back: far under a transaction's limit of operations.
const MOST_PER_BATCH: usize = 25;

/// A batch's arrival in the store, awaited by the deferred work and by admissions.
type Landed = Shared<BoxFuture<'static, ()>>;

/// Slot releases sent after an answer and not yet landed, in this process.
#[derive(Debug, Default)]
pub(crate) struct Releases(Arc<Mutex<Pending>>);

/// What is on its way to the store.
#[derive(Default)]
struct Pending {
    /// Each unfinished release's slot, with the number of the batch it travels in.
    by_slot: crate::FastMap<Key, u64>,
    /// Every batch that has not landed, by number.
    batches: BTreeMap<u64, Batch>,
    /// The next batch's number.
    next: u64,
}

/// Releases that go to the store together.
struct Batch {
    /// Its arrival in the store: the only handle kept here, dropped when it lands.
    landed: Landed,
    /// Its slots until it is sent; the newest unsent batch takes more while it has room.
    unsent: Option<Vec<Slot>>,
}

impl std::fmt::Debug for Pending {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pending")
            .field("landing", &self.by_slot.len())
            .field("batches", &self.batches.len())
            .finish()
    }
}

fn lock(pending: &Mutex<Pending>) -> MutexGuard<'_, Pending> {
    pending.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Releases {
    /// Gives `slot` back after the answer, in the newest unsent batch when it has room, else
    /// in a new batch sent through `defer`; remembered until it lands. The batch rides on the
    /// first release's `defer`, so a `Defer` must run (or queue) every piece of work it gets:
    /// work it drops leaves the batch to be sent by the next admission of one of its
    /// connections, or to the slots' leases.
    pub(crate) fn release_later(&self, gates: &Gates, slot: Slot, defer: &Defer) {
        let Some(key) = slot.key().cloned() else {
            return;
        };
        let mut guard = lock(&self.0);
        let pending = &mut *guard;
        let newest = pending.next.wrapping_sub(1);
        let open = pending
            .batches
            .get_mut(&newest)
            .and_then(|b| b.unsent.as_mut());
        if let Some(slots) = open.filter(|slots| slots.len() < MOST_PER_BATCH) {
            slots.push(slot);
            pending.by_slot.insert(key, newest);
            return;
        }
        let number = pending.next;
        pending.next += 1;
        let store = Arc::clone(&gates.store);
        let landed = landing(send(Arc::clone(&self.0), number, store));
        let batch = Batch {
            landed: landed.clone(),
            unsent: Some(vec![slot]),
        };
        pending.batches.insert(number, batch);
        pending.by_slot.insert(key, number);
        // `defer` may run the work at once: not under the lock.
        drop(guard);
        (defer.0)(Box::pin(landed));
    }

    /// Waits for this process's unfinished releases of `caller`'s slots.
    pub(crate) async fn settle(&self, caller: &Caller) {
        let partition = crate::keys::slots(&caller.tenant, &caller.connection);
        let landing: Vec<Landed> = {
            let pending = lock(&self.0);
            pending
                .by_slot
                .iter()
                .filter(|(k, _)| k.pk == partition)
                .filter_map(|(_, n)| pending.batches.get(n))
                .map(|batch| batch.landed.clone())
                .collect()
        };
        futures_util::future::join_all(landing).await;
    }
}

/// A batch's sending as its arrival, shared by the deferred work and the admissions waiting
/// for it. A panic in the store ends the sending, not them: a shared future that panicked
/// panics again in every other poll, which would take down a call of the same connection
/// waiting in admission. Unwind safety holds: the sending's drop guard has forgotten the batch
/// by then, and the lock it takes ignores poisoning; its slots wait for their leases.
fn landing(sending: impl Future<Output = ()> + Send + 'static) -> Landed {
    AssertUnwindSafe(sending)
        .catch_unwind()
        .map(|sent| {
            if sent.is_err() {
                tracing::error!(
                    "a batch of slot releases panicked; its slots wait for their leases"
                );
            }
        })
        .boxed()
        .shared()
}

/// Sends batch `number` once the runtime has run what else was ready (the answers written
/// meanwhile add their releases to it), then forgets it.
async fn send(pending: Arc<Mutex<Pending>>, number: u64, store: Arc<dyn Store>) {
    YieldOnce(false).await;
    let slots = lock(&pending)
        .batches
        .get_mut(&number)
        .and_then(|batch| batch.unsent.take())
        .unwrap_or_default();
    let _forget = Forget { pending, number };
    give_back(&store, &slots).await;
}

/// Forgets a batch when its sending ends, however it ends: landed, or stopped half-way (the
/// runtime shutting down, a panic in the store), so that no admission waits for it.
struct Forget {
    pending: Arc<Mutex<Pending>>,
    number: u64,
}

impl Drop for Forget {
    fn drop(&mut self) {
        let mut pending = lock(&self.pending);
        // Only this batch's entries: a later call may have taken a slot and left it since.
        pending.by_slot.retain(|_, n| *n != self.number);
        let batch = pending.batches.remove(&self.number);
        // Dropping a batch's handle may end a sending, which takes the lock: not under it.
        drop(pending);
        drop(batch);
    }
}

/// Gives `slots` back: one conditional delete for one slot, one transaction for several.
async fn give_back(store: &Arc<dyn Store>, slots: &[Slot]) {
    if let [slot] = slots {
        return release(Arc::clone(store), slot.clone()).await;
    }
    let ops: Vec<TransactOp> = slots
        .iter()
        .filter_map(Slot::release_op)
        .map(TransactOp::from)
        .collect();
    if ops.is_empty() {
        return;
    }
    if let Err(e) = store.transact_write(ops).await {
        // Cancelled (a slot already gone, or taken again after its lease ran out) or not
        // known to be done: each slot goes alone, as a lone release does; its condition makes
        // a second delete harmless.
        tracing::debug!(error = %e, slots = slots.len(), "slot releases sent one by one");
        let alone = slots.iter().map(|s| release(Arc::clone(store), s.clone()));
        futures_util::future::join_all(alone).await;
    }
}

/// Lets the runtime run whatever else is ready before this task goes on (tokio puts a task
/// that wakes itself at the back of its queue).
struct YieldOnce(bool);

impl Future for YieldOnce {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            return Poll::Ready(());
        }
        self.0 = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use store::{Item, MemoryStore, Put, Value};

    /// Runs `work` to its end on this thread: the memory store never waits, and a batch yields
    /// once before it is sent.
    fn run<T>(work: impl Future<Output = T>) -> T {
        let mut work = std::pin::pin!(work);
        let mut cx = Context::from_waker(futures_util::task::noop_waker_ref());
        for _ in 0..8 {
            if let Poll::Ready(out) = work.as_mut().poll(&mut cx) {
                return out;
            }
        }
        panic!("the work did not end");
    }

    /// Releases on the memory store, whose deferred work is held to be run by the test.
    struct Rig {
        store: Arc<dyn Store>,
        gates: Gates,
        held: Arc<Mutex<Vec<BoxFuture<'static, ()>>>>,
        defer: Defer,
        releases: Releases,
    }

    fn rig() -> Rig {
        let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
        let held: Arc<Mutex<Vec<BoxFuture<'static, ()>>>> = Arc::default();
        let keep = Arc::clone(&held);
        Rig {
            gates: Gates::new(Arc::clone(&store)),
            store,
            held,
            defer: Defer(Arc::new(move |work| keep.lock().unwrap().push(work))),
            releases: Releases::default(),
        }
    }

    /// The slot of connection `n`, held by its call `req_n`.
    fn slot_key(n: usize) -> Key {
        Key::new(format!("acme#slot#con_{n}"), "0")
    }

    #[test]
    fn releases_past_a_full_batch_open_the_next_and_every_slot_comes_back() {
        let Rig {
            store,
            gates,
            held,
            defer,
            releases,
        } = rig();
        let slots = 2 * MOST_PER_BATCH + 3;
        for n in 0..slots {
            let request = format!("req_{n}");
            let item = Item::from([("request".to_owned(), Value::s(&request))]);
            run(store.put(Put::new(slot_key(n), item))).unwrap();
            releases.release_later(&gates, Slot::held(slot_key(n), &request), &defer);
        }
        let batches = std::mem::take(&mut *held.lock().unwrap());
        assert_eq!(batches.len(), 3, "batches of 25, 25 and 3 slots");
        for batch in batches {
            run(batch);
        }
        for n in 0..slots {
            assert_eq!(run(store.get(&slot_key(n))).unwrap(), None, "slot {n}");
        }
        let pending = lock(&releases.0);
        assert!(pending.by_slot.is_empty() && pending.batches.is_empty());
    }

    /// One slot twice in a batch (given back by a call whose lease ran out, and by the call
    /// that took it next): the store refuses a transaction naming one item twice, so each
    /// release goes alone, and the one that still holds the slot gives it back.
    #[test]
    fn a_slot_twice_in_a_batch_is_given_back_by_its_holder() {
        let Rig {
            store,
            gates,
            held,
            defer,
            releases,
        } = rig();
        let item = Item::from([("request".to_owned(), Value::s("req_new"))]);
        run(store.put(Put::new(slot_key(0), item))).unwrap();
        releases.release_later(&gates, Slot::held(slot_key(0), "req_old"), &defer);
        releases.release_later(&gates, Slot::held(slot_key(0), "req_new"), &defer);
        let batches = std::mem::take(&mut *held.lock().unwrap());
        assert_eq!(batches.len(), 1, "one batch of two releases");
        batches.into_iter().for_each(run);
        assert_eq!(run(store.get(&slot_key(0))).unwrap(), None);
        assert!(lock(&releases.0).batches.is_empty());
    }
}
