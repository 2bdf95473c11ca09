//! Where the time comes from. Every crate a call passes through (the pipeline, identity, the
//! booking tools, the store backends' expiry) reads it through [`Clock`], given from outside:
//! tests set the time, and the same code runs where there is no system clock to read (an edge
//! runtime passes its own).

use std::sync::atomic::{AtomicI64, Ordering};

/// Where the time is read.
pub trait Clock: std::fmt::Debug + Send + Sync {
    /// Microseconds since the Unix epoch.
    fn now_micros(&self) -> i64;

    /// Seconds since the Unix epoch.
    fn now(&self) -> i64 {
        self.now_micros().div_euclid(1_000_000)
    }
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
}
