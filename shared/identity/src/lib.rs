//! Who is calling, decided on every request from the credential alone.
//!
//! - [`token`]: MCP tokens (own prefix, random, shown once, stored as SHA-256) and how a bearer
//!   credential is classified, so product API tokens and session cookies never pass here.
//! - [`connection`]: a connection binds one tenant, its creator, capped rights, a toolset and a
//!   client name; created, listed and revoked through [`ConnectionService`], which audits.
//! - [`directory`]: the narrow trait through which the product says what a member may do now.
//! - [`switch`]: the global kill switch and the per-tenant agent-access switch, and the
//!   transaction checks that make an in-flight write fail when a switch is set.
//! - [`audit`]: audit rows, written in the transaction of the change they record.
//! - [`oauth`]: OAuth access tokens (JWT) for this server's audience only.
//! - [`authenticator`]: the transport hook that turns a request's credential into a
//!   [`mcp_pipeline::Caller`] with live rights.
//!
//! Every item this crate stores is keyed in [`keys`]; tenant-owned items start with the tenant.
//! The product's own accounts (passwords, sessions, API tokens, operators) are the `accounts`
//! crate's.

pub mod audit;
pub mod authenticator;
pub mod connection;
pub mod directory;
mod hooks;
mod jwks;
pub mod keys;
pub mod oauth;
pub mod switch;
pub mod token;

pub use audit::{AuditEntry, Channel};
pub use authenticator::McpAuthenticator;
pub use connection::{Connection, ConnectionService, NewConnection};
pub use directory::{Directory, Member, RoleCatalog, StoreDirectory};
pub use hooks::McpCommitHooks;
pub use switch::SwitchService;

/// The person or process on whose behalf a service acts. Services take it as a parameter;
/// there is no ambient current user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Actor {
    /// The tenant acted in.
    pub tenant: store::TenantId,
    /// The member (or `operator` for the command line).
    pub member: store::MemberId,
    /// Where the action came from.
    pub channel: Channel,
}

/// What went wrong in an identity service.
#[derive(Debug, thiserror::Error)]
pub enum IdentityError {
    /// The store failed.
    #[error("store error")]
    Store(#[from] store::StoreError),
    /// The acting member may not do this.
    #[error("{0}")]
    Forbidden(String),
    /// Bad input (unknown right, empty name, unknown toolset).
    #[error("{0}")]
    Invalid(String),
    /// No such connection or member.
    #[error("{0}")]
    NotFound(String),
}

/// The owner of what belongs to no tenant (the global switch and its audit trail): a word
/// no tenant id may take (`store::tenant_id::RESERVED`).
pub fn system() -> store::TenantId {
    store::TenantId::new("system")
}

/// A Unix time (microseconds) as RFC 3339, sortable as text (every stored time's form).
pub fn rfc3339_at(unix_micros: i64) -> String {
    chrono::DateTime::from_timestamp_micros(unix_micros)
        .unwrap_or_default()
        .to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
}

/// The time `clock` reads, as RFC 3339.
pub fn rfc3339_now(clock: &dyn outside::Clock) -> String {
    rfc3339_at(clock.now_micros())
}
