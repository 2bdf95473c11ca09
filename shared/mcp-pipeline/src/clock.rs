//! The time and the randomness a call uses, given from outside (the time through the `clock`
//! crate): tests set them, and the same code runs where there is no system clock or random
//! generator to read.

pub use clock::{Clock, FixedClock, SystemClock};

/// Where the pipeline draws random bytes (request ids, confirmation tokens, keys).
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
