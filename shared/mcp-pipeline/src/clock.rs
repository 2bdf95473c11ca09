//! The time and the randomness a call uses, given from outside: tests set the time, and the
//! same code runs where there is no system clock to read (an edge runtime passes its own).

/// Where the pipeline reads the time.
pub trait Clock: std::fmt::Debug + Send + Sync {
    /// Seconds since the Unix epoch.
    fn now(&self) -> i64;
}

/// Where the pipeline draws random bytes (request ids, confirmation tokens, keys).
pub trait Randomness: std::fmt::Debug + Send + Sync {
    /// Fills `bytes` with random bytes.
    fn fill(&self, bytes: &mut [u8]);
}

/// The operating system's clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> i64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
            .unwrap_or(0)
    }
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

/// A clock that says what it is told: for tests of every time rule (expiry, windows, leases).
#[derive(Debug, Default)]
pub struct FixedClock(std::sync::atomic::AtomicI64);

impl FixedClock {
    /// A clock standing at `now` (Unix seconds).
    pub fn at(now: i64) -> Self {
        FixedClock(std::sync::atomic::AtomicI64::new(now))
    }

    /// Moves the clock by `seconds`.
    pub fn advance(&self, seconds: i64) {
        self.0
            .fetch_add(seconds, std::sync::atomic::Ordering::SeqCst);
    }
}

impl Clock for FixedClock {
    fn now(&self) -> i64 {
        self.0.load(std::sync::atomic::Ordering::SeqCst)
    }
}
