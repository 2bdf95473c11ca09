//! Clocks of several instances that disagree: one true time the test moves, and each
//! instance's reading of it off by a set skew.

use std::sync::Arc;

use mcp_pipeline::{Clock, FixedClock};

/// An instance's clock: the shared true time plus `skew` seconds.
#[derive(Debug)]
pub(crate) struct SkewedClock {
    pub(crate) truth: Arc<FixedClock>,
    pub(crate) skew: i64,
}

impl Clock for SkewedClock {
    fn now_micros(&self) -> i64 {
        self.truth.now_micros() + self.skew * 1_000_000
    }
}
