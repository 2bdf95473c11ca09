//! The product's own accounts: members and their passwords, sign-in sessions and the
//! throttling of sign-in attempts, product API tokens, operators, and the workspaces members
//! belong to. None of these credentials is accepted at the MCP endpoint, and MCP tokens are
//! accepted by none of the product's routes.
//!
//! Every change here is audited in the transaction that makes it. A member id is held by a
//! person (drawn when the member is added): removing the member ends every credential that
//! person made, for good, even if the id is added again.

pub mod api_tokens;
pub mod demo;
pub mod keys;
pub mod members;
pub mod operators;
pub mod passwords;
pub mod sessions;
pub mod sign_in;
pub mod workspaces;

pub use api_tokens::{ApiToken, ApiTokens, Bearer};
pub use members::Members;
pub use sessions::Session;
pub use sign_in::{Attempt, Throttle};

/// What went wrong in an accounts service.
#[derive(Debug, thiserror::Error)]
pub enum AccountsError {
    /// The store failed.
    #[error("store error")]
    Store(#[from] store::StoreError),
    /// Bad input.
    #[error("{0}")]
    Invalid(String),
    /// No such member, token or workspace.
    #[error("{0}")]
    NotFound(String),
    /// The acting person may not do this.
    #[error("{0}")]
    Forbidden(String),
    /// Too many failed sign-ins: wait this long.
    #[error("too many failed sign-ins; try again in {retry_after_seconds} seconds")]
    Throttled {
        /// How long to wait.
        retry_after_seconds: u64,
    },
}

impl From<identity::IdentityError> for AccountsError {
    fn from(e: identity::IdentityError) -> Self {
        match e {
            identity::IdentityError::Store(e) => AccountsError::Store(e),
            identity::IdentityError::Forbidden(m) => AccountsError::Forbidden(m),
            identity::IdentityError::Invalid(m) => AccountsError::Invalid(m),
            identity::IdentityError::NotFound(m) => AccountsError::NotFound(m),
        }
    }
}

/// An audit row of an accounts change, stamped by `outside`, for the transaction that makes
/// it.
fn audit(
    actor: &identity::Actor,
    action: &str,
    ids: Vec<String>,
    outside: &outside::ClockAndRandomness,
) -> store::TransactOp {
    identity::AuditEntry::by(actor, action, ids, outside.clock.as_ref())
        .op(outside.randomness.as_ref())
}

/// A whole-number attribute.
fn int(item: &store::Item, name: &str) -> Option<i64> {
    item.get(name)
        .and_then(store::Value::as_n)
        .and_then(|n| n.as_str().parse().ok())
}
