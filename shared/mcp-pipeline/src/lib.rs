//! The tool model and the request pipeline.
//!
//! A tool is a type ([`Tool`]) registered once with its guards, interceptors, exception
//! handlers and metadata ([`ToolSpec`]). [`Server::handle`] takes one JSON-RPC message and
//! returns the answer, running every call through the same stages in the same order. No I/O
//! and no runtime-specific code: transports (HTTP, Lambda, stdio) live elsewhere.
//!
//! A tower layer is HTTP middleware and cannot be attached to a tool:
//!
//! ```compile_fail
//! # use mcp_pipeline::ToolSpec;
//! # fn attach(spec: ToolSpec) -> ToolSpec {
//! spec.guard(tower::layer::util::Identity::new())
//! # }
//! ```

mod approval;
mod args;
mod authenticate;
mod call;
mod caller;
mod canonical;
mod clock;
mod confirm;
mod context;
mod decorators;
mod dispatch;
mod effect;
mod gates;
mod handle;
mod json_text;
pub mod keys;
mod lengths;
mod names;
mod outcome;
mod plan;
mod prefetch;
pub mod records;
mod registry;
mod releases;
mod schema;
mod search;
mod server;
mod state;
mod tool;
mod writes;

pub use approval::{
    APPROVAL_CLASSES, ApprovalMode, META_REQUIRES_USER_INTERACTION, ProductApproval,
    approval_class, class_name,
};
pub use args::{Normalized, Synonym, normalize};
pub use authenticate::{Admitted, Authenticated, Authenticator, Rejection};
pub use call::{Approvals, PendingView};
pub use caller::{Caller, Hidden, Toolset};
pub use canonical::{canonical_json, digest, sha256_hex};
pub use clock::{Clock, FixedClock, Randomness, SystemClock, SystemRandomness};
pub use confirm::{CONFIRM_ACTION, REJECT_ACTION};
pub use context::{ExecutionContext, Headers, Notifications, ToolContext};
pub use decorators::{
    CallError, ExceptionHandler, Guard, Interceptor, Next, Refusal, handle_error,
};
pub use effect::EffectClass;
pub use gates::{
    BRAKE_AFTER_FAILURES, ClassLimits, CommitContext, CommitHooks, Gates, IDEMPOTENCY_KEY, Limits,
};
pub use handle::{Handle, HandleKind};
pub use lengths::DEFAULT_MAX_LENGTH;
pub use names::{MAX_CANDIDATES, NameResolver, Named};
pub use outcome::{
    Choice, ErrorKind, STORE_RETRY_AFTER_SECONDS, Success, ToolError, ToolResult, shape_success,
};
pub use prefetch::{Claim, Defer, Prefetched, ReadAhead, RecordKey};
pub use registry::{DEFAULT_DEADLINE, MAX_NAME_LEN, Registry, RegistryError, ToolSpec};
pub use search::{MOST_SHOWN, search_limit};
pub use server::{Body, Outcome, Planned, Request, Runtime, Server, ServerConfig, Sleep};
pub use tool::{InputRequired, Policy, Tool};
pub use writes::Writes;

pub use futures_util::future::BoxFuture;

/// The pipeline's maps on the call path (read-ahead items, slot releases, tool names and
/// metadata) hash with foldhash: their keys are the server's own and the maps are bounded, so
/// SipHash's protection against chosen keys buys nothing and costs on every call (ADR 35).
pub(crate) type FastMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;
