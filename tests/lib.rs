//! Support code for the integration tests lives in `it/`; this library is empty on purpose.
