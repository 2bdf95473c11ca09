//! The time and the randomness a call uses, given from outside (see the `ambient` crate).

pub use ambient::{Clock, FixedClock, Randomness, SystemClock, SystemRandomness};
