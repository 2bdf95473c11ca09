//! The time and the randomness a call uses, given from outside (see the `outside` crate).

pub use outside::{Clock, FixedClock, Randomness, SystemClock, SystemRandomness, random_text};
