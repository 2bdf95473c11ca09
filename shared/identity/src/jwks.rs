//! The authorization server's signing keys, cached.
//!
//! Keys are fetched on first use and kept for at most [`KEYS_MAX_AGE`]. A token naming a key
//! id the cache lacks may mean the server rotated its keys, so it triggers one refresh; one
//! fetch serves every caller waiting at that moment (single flight), and a new fetch starts at
//! most once per [`REFRESH_COOL_DOWN`] however many unknown key ids arrive, so forged key ids
//! cannot make gatehouse hammer the authorization server. When a fetch fails the old keys stay
//! in use (an outage of the key endpoint must not lock every user out); a key the server has
//! removed is refused from the first successful refresh on. A fetch is not its caller's: one
//! whose caller goes away is finished by the next caller that needs keys, so a client that
//! sends a forged key id and disconnects cannot hold a refresh back (see
//! [`FETCH_OUTLIVES_CALLER`] for the edge).

use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::Duration;

use futures_util::FutureExt as _;
use futures_util::future::{BoxFuture, Shared};

use jsonwebtoken::DecodingKey;
use jsonwebtoken::jwk::JwkSet;

/// How long fetched keys are used before they are fetched again.
pub const KEYS_MAX_AGE: Duration = Duration::from_secs(600);
/// At most one fetch per this interval once keys are held.
pub const REFRESH_COOL_DOWN: Duration = Duration::from_secs(60);
/// At most one fetch per this interval while no key has ever been fetched.
pub const FIRST_FETCH_RETRY: Duration = Duration::from_secs(5);

/// Where the authorization server's keys come from.
#[async_trait::async_trait]
pub trait JwksSource: std::fmt::Debug + Send + Sync + 'static {
    /// The current key set, or why it could not be had.
    async fn fetch(&self) -> Result<JwkSet, String>;
}

/// A key set given in configuration.
#[derive(Debug, Clone)]
pub struct StaticJwks(pub JwkSet);

#[async_trait::async_trait]
impl JwksSource for StaticJwks {
    async fn fetch(&self) -> Result<JwkSet, String> {
        Ok(self.0.clone())
    }
}

/// A fetch under way, shared by every caller waiting for it.
type Fetch = Shared<BoxFuture<'static, ()>>;

/// Whether a fetch one caller started may be finished by another. Natively, yes: a caller that
/// goes away (a client disconnecting drops its call) leaves its fetch to the next caller that
/// needs keys, so no caller can hold a refresh back by leaving. Not at the edge: a Worker's I/O
/// belongs to the request that started it and ends with it, so there each fetch is its
/// caller's own, one at a time (a caller that leaves mid-fetch uses up the cool-down).
const FETCH_OUTLIVES_CALLER: bool = !cfg!(target_arch = "wasm32");

#[derive(Default)]
struct Held {
    keys: Option<Arc<JwkSet>>,
    /// When `keys` were fetched (Unix seconds, the caller's clock).
    fetched_at: i64,
    /// When the last fetch started, successful or not.
    last_attempt: Option<i64>,
    /// Counts fetches: a caller that saw generation `g` before waiting skips its own fetch
    /// when another caller's fetch finished meanwhile.
    generation: u64,
    /// The fetch under way, when [`FETCH_OUTLIVES_CALLER`].
    in_flight: Option<InFlight>,
    /// Counts fetches started, to tell the one under way from one that replaced it.
    started: u64,
}

/// A fetch under way: its number, when it started, and its arrival.
struct InFlight {
    number: u64,
    started_at: i64,
    fetch: Fetch,
}

impl std::fmt::Debug for Held {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Held")
            .field("fetched_at", &self.fetched_at)
            .field("last_attempt", &self.last_attempt)
            .field("generation", &self.generation)
            .field("fetching", &self.in_flight.is_some())
            .finish_non_exhaustive()
    }
}

fn lock(held: &Mutex<Held>) -> MutexGuard<'_, Held> {
    held.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The keys of one authorization server, fetched from `source` and cached.
#[derive(Debug)]
pub struct KeyCache {
    source: Arc<dyn JwksSource>,
    held: Arc<Mutex<Held>>,
    /// One fetch at a time where a fetch cannot outlive its caller.
    fetching: futures_util::lock::Mutex<()>,
}

impl KeyCache {
    /// A cache that has fetched nothing yet.
    pub fn new(source: Arc<dyn JwksSource>) -> Self {
        KeyCache {
            source,
            held: Arc::default(),
            fetching: futures_util::lock::Mutex::new(()),
        }
    }

    /// The key for `kid` at `now` (Unix seconds): from the cache while it is fresh and knows
    /// the id, after at most one refresh otherwise.
    pub async fn key(
        &self,
        kid: Option<&str>,
        alg: jsonwebtoken::Algorithm,
        now: i64,
    ) -> Option<DecodingKey> {
        let (keys, generation, fresh) = self.snapshot(now);
        if fresh && let Some(key) = keys.as_deref().and_then(|set| find(set, kid, alg)) {
            return Some(key);
        }
        self.refresh(generation, now).await;
        let (keys, ..) = self.snapshot(now);
        keys.as_deref().and_then(|set| find(set, kid, alg))
    }

    /// Whether any key set was ever fetched: without one, no token can be checked at all (an
    /// outage of the issuer's key endpoint, not a bad token).
    pub fn has_keys(&self) -> bool {
        lock(&self.held).keys.is_some()
    }

    /// The keys held, the fetch generation, and whether they are younger than the maximum age.
    fn snapshot(&self, now: i64) -> (Option<Arc<JwkSet>>, u64, bool) {
        let held = lock(&self.held);
        let fresh =
            held.keys.is_some() && now.saturating_sub(held.fetched_at) < seconds(KEYS_MAX_AGE);
        (held.keys.clone(), held.generation, fresh)
    }

    /// Fetches once for every caller waiting now, unless another fetch finished since the
    /// caller looked (`seen`) or the last one started within the cool-down: joins the fetch
    /// under way, or starts one.
    async fn refresh(&self, seen: u64, now: i64) {
        if FETCH_OUTLIVES_CALLER {
            let Some(fetch) = self.join_or_start(seen, now) else {
                return;
            };
            return fetch.await;
        }
        let _one_flight = self.fetching.lock().await;
        let Some(fetch) = self.join_or_start(seen, now) else {
            return;
        };
        fetch.await;
    }

    /// The fetch to wait for: the one under way, or a new one when none finished since `seen`
    /// and the cool-down allows; `None` when there is nothing to wait for.
    fn join_or_start(&self, seen: u64, now: i64) -> Option<Fetch> {
        let mut held = lock(&self.held);
        let cool_down = if held.keys.is_some() {
            REFRESH_COOL_DOWN
        } else {
            FIRST_FETCH_RETRY
        };
        // A fetch under way is joined while it is younger than the cool-down; an older one
        // is stuck or long over (nobody came back for its answer), and a new one replaces it.
        // (Dropping its handle here takes no lock: a fetch takes this one only once it ends.)
        if let Some(flight) = &held.in_flight
            && now.saturating_sub(flight.started_at) < seconds(cool_down)
        {
            return Some(flight.fetch.clone());
        }
        held.in_flight = None;
        let cooling = held
            .last_attempt
            .is_some_and(|t| now.saturating_sub(t) < seconds(cool_down));
        if held.generation != seen || cooling {
            return None;
        }
        held.last_attempt = Some(now);
        held.started += 1;
        let number = held.started;
        let held_here = Arc::downgrade(&self.held);
        let fetching = fetch_into(Arc::clone(&self.source), held_here, number, now);
        let fetch = fetching.boxed().shared();
        if FETCH_OUTLIVES_CALLER {
            held.in_flight = Some(InFlight {
                number,
                started_at: now,
                fetch: fetch.clone(),
            });
        }
        Some(fetch)
    }
}

/// Fetches the key set from `source` (fetch `number`, started at `now`) and keeps it in
/// `held` as fetched then. A panic in the source is this fetch's failure, not its waiters'
/// (a shared future that panicked panics again in every poll).
async fn fetch_into(source: Arc<dyn JwksSource>, held: Weak<Mutex<Held>>, number: u64, now: i64) {
    // The source's call inside the catch too: a source may panic before its future exists.
    let fetched = AssertUnwindSafe(async move { source.fetch().await })
        .catch_unwind()
        .await;
    let Some(held) = held.upgrade() else {
        return;
    };
    let mut held = lock(&held);
    // Done with, unless a fetch that replaced this one is under way.
    if held.in_flight.as_ref().is_some_and(|f| f.number == number) {
        held.in_flight = None;
    }
    held.generation += 1;
    match fetched {
        Ok(Ok(set)) => {
            held.keys = Some(Arc::new(set));
            held.fetched_at = now;
        }
        Ok(Err(e)) => tracing::warn!(error = %e, "could not fetch the authorization server's keys"),
        Err(_) => tracing::error!("fetching the authorization server's keys panicked"),
    }
}

/// The key named `kid` (without a `kid`, the set's only key), when it may verify a signature
/// made with `alg`: a key published for encryption, or for another algorithm, never does
/// (ADR 48).
fn find(set: &JwkSet, kid: Option<&str>, alg: jsonwebtoken::Algorithm) -> Option<DecodingKey> {
    use jsonwebtoken::jwk::{KeyAlgorithm, PublicKeyUse};
    let jwk = match kid {
        Some(kid) => set.find(kid)?,
        None if set.keys.len() == 1 => &set.keys[0],
        None => return None,
    };
    let common = &jwk.common;
    if !matches!(common.public_key_use, None | Some(PublicKeyUse::Signature)) {
        return None;
    }
    let same_alg = match common.key_algorithm {
        None => true,
        Some(KeyAlgorithm::RS256) => alg == jsonwebtoken::Algorithm::RS256,
        Some(KeyAlgorithm::ES256) => alg == jsonwebtoken::Algorithm::ES256,
        Some(_) => false,
    };
    if !same_alg {
        return None;
    }
    DecodingKey::from_jwk(jwk).ok()
}

fn seconds(d: Duration) -> i64 {
    i64::try_from(d.as_secs()).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::future::Future;
    use std::task::{Context, Poll};

    /// Runs `work` to its end on this thread (nothing here waits on the outside).
    fn run<T>(work: impl Future<Output = T>) -> T {
        let mut work = std::pin::pin!(work);
        let mut cx = Context::from_waker(futures_util::task::noop_waker_ref());
        match work.as_mut().poll(&mut cx) {
            Poll::Ready(out) => out,
            Poll::Pending => panic!("the work waited"),
        }
    }

    #[derive(Debug)]
    struct Panics;

    #[async_trait::async_trait]
    impl JwksSource for Panics {
        async fn fetch(&self) -> Result<JwkSet, String> {
            panic!("injected: the key source panicked")
        }
    }

    /// A source whose first fetch never ends and whose later ones answer an empty key set.
    #[derive(Debug, Default)]
    struct StuckOnce(std::sync::atomic::AtomicBool);

    #[async_trait::async_trait]
    impl JwksSource for StuckOnce {
        async fn fetch(&self) -> Result<JwkSet, String> {
            if !self.0.swap(true, std::sync::atomic::Ordering::SeqCst) {
                futures_util::future::pending::<()>().await;
            }
            Ok(JwkSet { keys: Vec::new() })
        }
    }

    /// Polls `work` once: whether it ended.
    fn ends_at_once(work: impl Future) -> bool {
        let mut work = std::pin::pin!(work);
        let mut cx = Context::from_waker(futures_util::task::noop_waker_ref());
        work.as_mut().poll(&mut cx).is_ready()
    }

    /// A fetch whose caller left is joined by the callers that come while it is young (one
    /// fetch, however many wait), and replaced by a new one once it is older than the
    /// cool-down (stuck, or its answer never collected), so that it holds no refresh back.
    #[test]
    fn a_fetch_left_under_way_is_joined_while_young_and_replaced_when_old() {
        let cache = KeyCache::new(Arc::new(StuckOnce::default()));
        let retry = seconds(FIRST_FETCH_RETRY);
        assert!(
            !ends_at_once(cache.key(Some("k"), jsonwebtoken::Algorithm::RS256, 0)),
            "the first fetch hangs"
        );
        assert!(
            !ends_at_once(cache.key(Some("k"), jsonwebtoken::Algorithm::RS256, retry - 1)),
            "joined, still hanging"
        );
        assert_eq!(lock(&cache.held).started, 1, "one fetch for both");
        assert!(
            ends_at_once(cache.key(Some("k"), jsonwebtoken::Algorithm::RS256, retry)),
            "replaced, and answered"
        );
        assert!(cache.has_keys());
        let held = lock(&cache.held);
        assert_eq!((held.started, held.fetched_at), (2, retry));
        assert!(held.in_flight.is_none());
    }

    /// A source that panics fails its fetch, as an unreachable one does: the caller finds no
    /// key, nothing is left under way, and the next fetch waits for the retry pause.
    #[test]
    fn a_source_that_panics_fails_its_fetch_and_nothing_else() {
        let cache = KeyCache::new(Arc::new(Panics));
        assert!(run(cache.key(Some("k"), jsonwebtoken::Algorithm::RS256, 0)).is_none());
        let held = lock(&cache.held);
        assert!(held.in_flight.is_none() && held.keys.is_none());
        assert_eq!((held.generation, held.last_attempt), (1, Some(0)));
    }
}
