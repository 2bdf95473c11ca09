//! Time (being written).
