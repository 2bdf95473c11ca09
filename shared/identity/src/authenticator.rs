//! The transport hook: credential in, caller with live rights out, on every request.

use std::collections::BTreeSet;
use std::sync::Arc;

use http::HeaderMap;
use mcp_http::{Authenticator, Rejection};
use mcp_pipeline::{BoxFuture, Caller};
use store::Store;

use crate::oauth::OAuthValidator;
use crate::token::{self, BearerKind};
use crate::{Connection, Directory, keys, switch};

/// Authenticates MCP requests with MCP tokens and, when configured, OAuth access tokens.
#[derive(Debug, Clone)]
pub struct McpAuthenticator {
    store: Arc<dyn Store>,
    directory: Arc<dyn Directory>,
    oauth: Option<Arc<OAuthValidator>>,
}

impl McpAuthenticator {
    /// An authenticator reading connections from `store` and rights from `directory`.
    pub fn new(store: Arc<dyn Store>, directory: Arc<dyn Directory>) -> Self {
        McpAuthenticator {
            store,
            directory,
            oauth: None,
        }
    }

    /// Also accepts OAuth access tokens validated by `validator`.
    pub fn with_oauth(mut self, validator: Arc<OAuthValidator>) -> Self {
        self.oauth = Some(validator);
        self
    }

    /// Authenticates one request.
    pub async fn caller(
        &self,
        headers: &HeaderMap,
        path_tenant: Option<&str>,
    ) -> Result<Caller, Rejection> {
        let bearer = bearer(headers)?;
        let (index_key, from_oauth) = match token::classify(bearer) {
            BearerKind::Mcp => (keys::mcp_token(&token::hash(bearer)), false),
            BearerKind::ProductApi => {
                return Err(Rejection::invalid_token(
                    "product API tokens are not accepted at the MCP endpoint; create an MCP connection",
                ));
            }
            BearerKind::Jwt => {
                let Some(oauth) = &self.oauth else {
                    return Err(Rejection::invalid_token(
                        "this server does not accept OAuth access tokens",
                    ));
                };
                let subject = oauth
                    .validate(bearer)
                    .await
                    .map_err(Rejection::invalid_token)?;
                (keys::oauth_subject(&subject.tenant, &subject.subject), true)
            }
            BearerKind::Unknown => {
                return Err(Rejection::invalid_token(
                    "the credential is not an MCP token",
                ));
            }
        };
        // One round trip for the credential and the global switch.
        let got = self
            .store
            .batch_get(&[index_key.clone(), keys::global_switch()])
            .await
            .map_err(|e| unavailable(&e))?;
        let connection = got[0].as_ref().and_then(Connection::from_item);
        let Some(connection) = connection.filter(|c| !c.revoked) else {
            let what = if from_oauth {
                "no active connection for this OAuth subject"
            } else {
                "the MCP token is unknown or revoked"
            };
            return Err(Rejection::invalid_token(what));
        };
        if switch::global_is_on(got[1].as_ref()) {
            // The alarm on the kill switch counts this line (infra/template.json).
            tracing::warn!("kill switch is on: agent call refused with 503");
            return Err(Rejection::switched_off(
                "agent access is switched off for maintenance",
                switch::RETRY_AFTER_SECONDS,
            ));
        }
        if path_tenant.is_some_and(|t| t != connection.tenant) {
            return Err(Rejection::forbidden(
                "this credential is bound to another tenant than the one in the path",
            ));
        }
        // The tenant's switch and the creator's current rights are independent: ask both at once.
        let switch_key = keys::tenant_switch(&connection.tenant);
        let tenant_switch = self.store.get(&switch_key);
        let member = self
            .directory
            .member(&connection.tenant, &connection.creator);
        let (tenant_switch, member) = futures_util::future::join(tenant_switch, member).await;
        if !switch::tenant_allows(tenant_switch.map_err(|e| unavailable(&e))?.as_ref()) {
            return Err(Rejection::switched_off(
                "agent access is switched off for this workspace",
                switch::RETRY_AFTER_SECONDS,
            ));
        }
        let member = member.map_err(|e| unavailable(&e))?;
        let Some(member) = member.filter(|m| m.active) else {
            return Err(Rejection::invalid_token(
                "the person who created this connection no longer has access; the connection has ended",
            ));
        };
        // Bookkeeping for the connections page: at most one write per connection per hour, and
        // only onto an item that still exists (a revoked credential is never brought back). A
        // failure here does not fail the call.
        let now = chrono::Utc::now();
        if connection.last_used_is_stale(now) {
            let touch = store::Update::new(
                index_key,
                vec![store::UpdateAction::Set(
                    "last_used".into(),
                    store::Value::s(crate::now_rfc3339()),
                )],
            )
            .when(store::Condition::item_exists());
            if let Err(e) = self.store.update(touch).await {
                tracing::debug!(error = %e, "could not record when the connection was last used");
            }
        }
        let rights: BTreeSet<String> = connection
            .rights
            .intersection(&member.rights)
            .cloned()
            .collect();
        Ok(Caller {
            tenant: connection.tenant,
            connection: connection.id,
            creator: connection.creator,
            client_name: connection.client_name,
            rights,
            toolset: connection.toolset,
        })
    }
}

fn unavailable(e: &store::StoreError) -> Rejection {
    tracing::error!(error = %e, "store failed during authentication");
    Rejection::switched_off("the server cannot check credentials right now", 5)
}

fn bearer(headers: &HeaderMap) -> Result<&str, Rejection> {
    let Some(value) = headers.get(http::header::AUTHORIZATION) else {
        let has_session = headers
            .get_all(http::header::COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .any(|c| {
                c.split(';')
                    .any(|p| p.trim().starts_with(&format!("{}=", token::SESSION_COOKIE)))
            });
        let message = if has_session {
            "session cookies are not accepted at the MCP endpoint; use an MCP token"
        } else {
            "an MCP token or OAuth access token is required (Authorization: Bearer ...)"
        };
        return Err(Rejection::unauthorized(message));
    };
    let value = value
        .to_str()
        .map_err(|_| Rejection::invalid_token("the Authorization header is not text"))?;
    match value.split_once(' ') {
        Some((scheme, token))
            if scheme.eq_ignore_ascii_case("bearer") && !token.trim().is_empty() =>
        {
            Ok(token.trim())
        }
        _ => Err(Rejection::invalid_token(
            "the Authorization header must be `Bearer <token>`",
        )),
    }
}

impl Authenticator for McpAuthenticator {
    fn authenticate<'a>(
        &'a self,
        headers: &'a HeaderMap,
        tenant: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Caller, Rejection>> {
        Box::pin(self.caller(headers, tenant))
    }
}
