//! The time and the randomness a call uses, given from outside: tests set the time, and the
//! same code runs where there is no system clock to read (an edge runtime passes its own).

/// Where the pipeline reads the time.
pub trait Clock: std::fmt::Debug + Send + Sync {
    /// Microseconds since the Unix epoch.
    fn now_micros(&self) -> i64;

    /// Seconds since the Unix epoch.
    fn now(&self) -> i64 {
        self.now_micros().div_euclid(1_000_000)
    }
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
    fn now_micros(&self) -> i64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
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

/// A clock that stands where a test puts it, for every time rule (expiry, windows, leases).
/// Each reading moves it on by one microsecond, so that what it times keeps its order.
#[derive(Debug, Default)]
pub struct FixedClock(std::sync::atomic::AtomicI64);

impl FixedClock {
    /// A clock standing at `now` (Unix seconds).
    pub fn at(now: i64) -> Self {
        FixedClock(std::sync::atomic::AtomicI64::new(now * 1_000_000))
    }

    /// A clock standing at the system's time now.
    pub fn starting_now() -> Self {
        FixedClock(std::sync::atomic::AtomicI64::new(SystemClock.now_micros()))
    }

    /// Moves the clock on by `seconds`.
    pub fn advance(&self, seconds: i64) {
        self.0
            .fetch_add(seconds * 1_000_000, std::sync::atomic::Ordering::SeqCst);
    }
}

impl Clock for FixedClock {
    fn now_micros(&self) -> i64 {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst)
    }
}
