//! The authorization server's signing keys, cached.
//!
//! Keys are fetched on first use and kept for at most [`KEYS_MAX_AGE`]. A token naming a key
//! id the cache lacks may mean the server rotated its keys, so it triggers one refresh; one
//! fetch serves every caller waiting at that moment (single flight), and a new fetch starts at
//! most once per [`REFRESH_COOL_DOWN`] however many unknown key ids arrive, so forged key ids
//! cannot make gatehouse hammer the authorization server. When a fetch fails the old keys stay
//! in use (an outage of the key endpoint must not lock every user out); a key the server has
//! removed is refused from the first successful refresh on.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

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

#[derive(Debug, Default)]
struct Held {
    keys: Option<Arc<JwkSet>>,
    /// When `keys` were fetched (Unix seconds, the caller's clock).
    fetched_at: i64,
    /// When the last fetch started, successful or not.
    last_attempt: Option<i64>,
    /// Counts fetches: a caller that saw generation `g` before waiting skips its own fetch
    /// when another caller's fetch finished meanwhile.
    generation: u64,
}

/// The keys of one authorization server, fetched from `source` and cached.
#[derive(Debug)]
pub struct KeyCache {
    source: Arc<dyn JwksSource>,
    held: Mutex<Held>,
    fetching: futures_util::lock::Mutex<()>,
}

impl KeyCache {
    /// A cache that has fetched nothing yet.
    pub fn new(source: Arc<dyn JwksSource>) -> Self {
        KeyCache {
            source,
            held: Mutex::new(Held::default()),
            fetching: futures_util::lock::Mutex::new(()),
        }
    }

    /// The key for `kid` at `now` (Unix seconds): from the cache while it is fresh and knows
    /// the id, after at most one refresh otherwise.
    pub async fn key(&self, kid: Option<&str>, now: i64) -> Option<DecodingKey> {
        let (keys, generation, fresh) = self.snapshot(now);
        if fresh && let Some(key) = keys.as_deref().and_then(|set| find(set, kid)) {
            return Some(key);
        }
        self.refresh(generation, now).await;
        let (keys, ..) = self.snapshot(now);
        keys.as_deref().and_then(|set| find(set, kid))
    }

    /// Whether any key set was ever fetched: without one, no token can be checked at all (an
    /// outage of the issuer's key endpoint, not a bad token).
    pub fn has_keys(&self) -> bool {
        self.held
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .keys
            .is_some()
    }

    /// The keys held, the fetch generation, and whether they are younger than the maximum age.
    fn snapshot(&self, now: i64) -> (Option<Arc<JwkSet>>, u64, bool) {
        let held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        let fresh =
            held.keys.is_some() && now.saturating_sub(held.fetched_at) < seconds(KEYS_MAX_AGE);
        (held.keys.clone(), held.generation, fresh)
    }

    /// Fetches once for every caller waiting now, unless another fetch finished since the
    /// caller looked (`seen`) or the last one started within the cool-down.
    async fn refresh(&self, seen: u64, now: i64) {
        let _one_flight = self.fetching.lock().await;
        {
            let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
            let cool_down = if held.keys.is_some() {
                REFRESH_COOL_DOWN
            } else {
                FIRST_FETCH_RETRY
            };
            let cooling = held
                .last_attempt
                .is_some_and(|t| now.saturating_sub(t) < seconds(cool_down));
            if held.generation != seen || cooling {
                return;
            }
            held.last_attempt = Some(now);
        }
        let fetched = self.source.fetch().await;
        let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        held.generation += 1;
        match fetched {
            Ok(set) => {
                held.keys = Some(Arc::new(set));
                held.fetched_at = now;
            }
            Err(e) => tracing::warn!(error = %e, "could not fetch the authorization server's keys"),
        }
    }
}

/// The key named `kid`; without a `kid`, the set's only key.
fn find(set: &JwkSet, kid: Option<&str>) -> Option<DecodingKey> {
    let jwk = match kid {
        Some(kid) => set.find(kid)?,
        None if set.keys.len() == 1 => &set.keys[0],
        None => return None,
    };
    DecodingKey::from_jwk(jwk).ok()
}

fn seconds(d: Duration) -> i64 {
    i64::try_from(d.as_secs()).unwrap_or(i64::MAX)
}
