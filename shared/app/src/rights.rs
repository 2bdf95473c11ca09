//! The rights catalog lives with the product (`booking::rights`); re-exported for the adapters.

pub use booking::rights::*;
