//! Who is calling: the port every transport authenticates through, and the one path that
//! plans a call, names what to read with its credential, and authenticates it.
//!
//! The port belongs here, beside [`crate::Caller`], because the pipeline is the side that needs
//! a caller; `identity` implements it, and the transports (HTTP, stdio) call
//! [`crate::Server::authenticate`], so a check added there applies to every transport.

use mcp_protocol::Message;

use crate::{BoxFuture, Caller, Claim, Headers, Planned, Prefetched, Server};

/// Why a request's credential was not accepted; answered before any JSON-RPC work.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    /// 401 (no, invalid or expired credential), 403 (valid but not for this), 503 (kill switch
    /// or a store that cannot be reached: fail closed).
    pub status: u16,
    /// One sentence for the person reading the client's log (never the credential).
    pub message: String,
    /// Seconds to wait (503).
    pub retry_after: Option<u64>,
    /// The OAuth error code for `WWW-Authenticate` (`invalid_token`), if any.
    pub oauth_error: Option<&'static str>,
}

impl Rejection {
    fn new(status: u16, message: impl Into<String>) -> Self {
        Rejection {
            status,
            message: message.into(),
            retry_after: None,
            oauth_error: None,
        }
    }

    /// 401: no usable credential.
    pub fn unauthorized(message: impl Into<String>) -> Self {
        Rejection::new(401, message)
    }

    /// 401 with `error="invalid_token"`: a credential was presented and is not valid here.
    pub fn invalid_token(message: impl Into<String>) -> Self {
        Rejection {
            oauth_error: Some("invalid_token"),
            ..Rejection::new(401, message)
        }
    }

    /// 403: a valid credential that may not do this.
    pub fn forbidden(message: impl Into<String>) -> Self {
        Rejection::new(403, message)
    }

    /// 503 with `Retry-After`: agent access is switched off, or credentials cannot be checked.
    pub fn switched_off(message: impl Into<String>, retry_after: u64) -> Self {
        Rejection {
            retry_after: Some(retry_after),
            ..Rejection::new(503, message)
        }
    }
}

/// Turns the request's credential into the caller of this request: who, which tenant, which
/// rights right now. Runs on every request, after the transport's own checks and before
/// anything else is answered (a request without a valid credential learns nothing, not even
/// whether its body parses).
pub trait Authenticator: std::fmt::Debug + Send + Sync + 'static {
    /// The tenant and connection the credential names, read off it without checking it and
    /// without I/O; `None` when the credential does not say (then nothing is read ahead).
    fn claim(&self, _headers: &Headers) -> Option<Claim> {
        None
    }

    /// Authenticates; `tenant` is the tenant named by the path (`/t/{tenant}/mcp`), which the
    /// credential must be bound to. `prefetch` names gate items named from [`Self::claim`]:
    /// an authenticator may read them in its own batch and hand them over, but only once the
    /// credential proved that claim.
    fn authenticate<'a>(
        &'a self,
        headers: &'a Headers,
        tenant: Option<&'a str>,
        prefetch: Vec<store::Key>,
    ) -> BoxFuture<'a, Result<Authenticated, Rejection>>;
}

/// An authenticated request: its caller, and the gate items read with the credential.
#[derive(Debug, Clone)]
pub struct Authenticated {
    /// Who is calling, with their live rights.
    pub caller: Caller,
    /// Items read ahead (empty when none were).
    pub prefetched: Prefetched,
}

/// What [`Server::authenticate`] found: the caller, the items read with the credential, and
/// the call's plan to hand on in [`crate::Request::plan`].
#[derive(Debug, Clone)]
pub struct Admitted {
    /// The caller and the items read ahead.
    pub authenticated: Authenticated,
    /// The plan of a `tools/call` (made once, used for the read and for the call).
    pub plan: Option<Planned>,
}

impl Server {
    /// Authenticates one message (`None`: a body that did not parse, which is answered only
    /// after its credential is accepted): plans a `tools/call`, names the items it reads from
    /// the credential's claim, and lets `authenticator` read them with the credential.
    pub async fn authenticate(
        &self,
        authenticator: &dyn Authenticator,
        headers: &Headers,
        path_tenant: Option<&str>,
        message: Option<&Message>,
    ) -> Result<Admitted, Rejection> {
        let plan = message.and_then(|m| self.plan(m));
        let prefetch = match (&plan, authenticator.claim(headers)) {
            (Some(plan), Some(claim)) => self.prefetch_keys(plan, &claim),
            _ => Vec::new(),
        };
        let authenticated = authenticator
            .authenticate(headers, path_tenant, prefetch)
            .await?;
        Ok(Admitted {
            authenticated,
            plan,
        })
    }
}
