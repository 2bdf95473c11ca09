//! What a call takes from outside itself: the time ([`Clock`]) and randomness
//! ([`Randomness`]). Every crate a call passes through (the pipeline, identity, the booking
//! services and tools, the store backends' expiry) reads them through these ports, given from
//! outside: tests set them, and the same code runs where there is no system clock or random
//! generator to read (an edge runtime passes its own).

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

pub mod destination;
pub mod untrusted;
pub mod when;

/// Where the time is read.
pub trait Clock: std::fmt::Debug + Send + Sync {
    /// Microseconds since the Unix epoch.
    fn now_micros(&self) -> i64;

    /// Seconds since the Unix epoch.
    fn now(&self) -> i64 {
        self.now_micros().div_euclid(1_000_000)
    }
}

/// The host's clock: the operating system's, or on a JavaScript host (Cloudflare Workers,
/// `wasm32-unknown-unknown`, where `std::time::SystemTime::now` panics) `Date.now()`.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    #[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
    fn now_micros(&self) -> i64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
            .unwrap_or(0)
    }

    /// Milliseconds only: a Worker's clock moves on between I/O, not within a computation.
    #[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
    #[allow(clippy::cast_possible_truncation)]
    fn now_micros(&self) -> i64 {
        (js_sys::Date::now() * 1000.0) as i64
    }
}

/// A clock that stands where a test puts it, for every time rule (expiry, windows, leases).
/// Each reading moves it on by one microsecond, so that what it times keeps its order.
#[derive(Debug, Default)]
pub struct FixedClock(AtomicI64);

impl FixedClock {
    /// A clock standing at `now` (Unix seconds).
    pub fn at(now: i64) -> Self {
        FixedClock(AtomicI64::new(now * 1_000_000))
    }

    /// A clock standing at the system's time now.
    pub fn starting_now() -> Self {
        FixedClock(AtomicI64::new(SystemClock.now_micros()))
    }

    /// Moves the clock on by `seconds`.
    pub fn advance(&self, seconds: i64) {
        self.0.fetch_add(seconds * 1_000_000, Ordering::SeqCst);
    }
}

impl Clock for FixedClock {
    fn now_micros(&self) -> i64 {
        self.0.fetch_add(1, Ordering::SeqCst)
    }
}

/// Where random bytes come from (ids, tokens, keys).
pub trait Randomness: std::fmt::Debug + Send + Sync {
    /// Fills `bytes` with random bytes.
    fn fill(&self, bytes: &mut [u8]);
}

/// The operating system's random generator.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemRandomness;

impl Randomness for SystemRandomness {
    fn fill(&self, bytes: &mut [u8]) {
        use rand::Rng as _;
        rand::rng().fill(bytes);
    }
}

const ALPHANUMERIC: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// `len` random letters and digits, each equally likely (the form of every id and token).
pub fn random_text(randomness: &dyn Randomness, len: usize) -> String {
    let mut out = String::with_capacity(len);
    let mut bytes = [0u8; 32];
    while out.len() < len {
        randomness.fill(&mut bytes);
        // 248 is the largest multiple of 62 under 256: bytes past it are drawn again.
        for &b in bytes.iter().filter(|b| **b < 248) {
            if out.len() == len {
                break;
            }
            out.push(char::from(ALPHANUMERIC[usize::from(b % 62)]));
        }
    }
    out
}

/// The server's clock and randomness together: what a service that stamps times or draws ids
/// (audit rows, connections, sessions, tokens) is given when it is built, so that every time
/// and id it makes comes from the same sources as the calls' (the settings').
#[derive(Debug, Clone)]
pub struct ClockAndRandomness {
    /// Where the time is read.
    pub clock: Arc<dyn Clock>,
    /// Where random bytes come from.
    pub randomness: Arc<dyn Randomness>,
}

impl ClockAndRandomness {
    /// The two sources, as given.
    pub fn new(clock: Arc<dyn Clock>, randomness: Arc<dyn Randomness>) -> Self {
        ClockAndRandomness { clock, randomness }
    }

    /// The host's clock and the operating system's generator: for entry points and tools
    /// (a CLI command, a benchmark), never inside a crate a call passes through.
    pub fn system() -> Self {
        ClockAndRandomness::new(Arc::new(SystemClock), Arc::new(SystemRandomness))
    }

    /// Seconds since the Unix epoch.
    pub fn now(&self) -> i64 {
        self.clock.now()
    }

    /// Microseconds since the Unix epoch.
    pub fn now_micros(&self) -> i64 {
        self.clock.now_micros()
    }

    /// `len` random letters and digits.
    pub fn random_text(&self, len: usize) -> String {
        random_text(self.randomness.as_ref(), len)
    }

    /// Fills `bytes` with random bytes.
    pub fn fill(&self, bytes: &mut [u8]) {
        self.randomness.fill(bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fixed_clock_stands_and_moves_only_when_told() {
        let clock = FixedClock::at(1_000);
        assert_eq!(clock.now(), 1_000);
        let (a, b) = (clock.now_micros(), clock.now_micros());
        assert!(a < b, "readings keep their order");
        clock.advance(60);
        assert_eq!(clock.now(), 1_060);
    }

    #[test]
    fn random_text_has_the_length_and_alphabet_asked() {
        let text = random_text(&SystemRandomness, 43);
        assert_eq!(text.len(), 43);
        assert!(text.bytes().all(|b| b.is_ascii_alphanumeric()));
        assert_ne!(text, random_text(&SystemRandomness, 43));
    }
}
