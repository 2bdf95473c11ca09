//! Money (being written).
