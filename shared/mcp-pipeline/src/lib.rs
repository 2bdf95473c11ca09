//! The request pipeline: the gates and the two-step workflow around the tools of
//! `gatehouse-tool` (re-exported here, so that the platform names one crate).
//!
//! [`Server::handle`] takes one JSON-RPC message and returns the answer, running every call
//! through the same stages in the same order. No I/O and no runtime-specific code: transports
//! (HTTP, Lambda, stdio) live elsewhere.

mod authenticate;
mod call;
mod confirm;
mod dispatch;
mod gates;
pub mod keys;
mod plan;
mod releases;
mod server;
mod state;

pub(crate) use gatehouse_tool::__pipeline::*;
pub use gatehouse_tool::*;

pub use authenticate::{Admitted, Authenticated, Authenticator, Rejection};
pub use call::{Approvals, PendingView};
pub use confirm::{CONFIRM_ACTION, REJECT_ACTION};
pub use gates::{BRAKE_AFTER_FAILURES, ClassLimits, CommitContext, CommitHooks, Gates, Limits};
pub use server::{Body, Outcome, Planned, Request, Runtime, Server, ServerConfig, Sleep};

/// The pipeline's maps on the call path (read-ahead items, slot releases, tool names and
/// metadata) hash with foldhash: their keys are the server's own and the maps are bounded, so
/// SipHash's protection against chosen keys buys nothing and costs on every call (ADR 35).
pub(crate) type FastMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;
