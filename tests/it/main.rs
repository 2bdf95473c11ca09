//! The one integration test binary of the workspace.

mod store_conformance;
mod support;
mod workspace;
