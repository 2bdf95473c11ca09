//! The transport hook: credential in, caller with live rights out, on every request.

use std::collections::BTreeSet;
use std::sync::Arc;

use mcp_pipeline::{
    Authenticated, Authenticator, BoxFuture, Caller, Claim, Headers, Prefetched, Rejection,
};
use store::Store;

use crate::oauth::OAuthValidator;
use crate::token::{self, BearerKind};
use crate::{Connection, Directory, keys, switch};

/// Most items read ahead beside a credential (the pipeline names at most a dozen).
const MAX_PREFETCH: usize = 16;

/// Authenticates MCP requests with MCP tokens and, when configured, OAuth access tokens.
#[derive(Debug, Clone)]
pub struct McpAuthenticator {
    store: Arc<dyn Store>,
    directory: Arc<dyn Directory>,
    oauth: Option<Arc<OAuthValidator>>,
    clock: Arc<dyn mcp_pipeline::Clock>,
}

impl McpAuthenticator {
    /// An authenticator reading connections from `store` and rights from `directory`. A
    /// directory that names its member items ([`Directory::member_key`]) must keep them in
    /// `store`: they are read in the credential's batch. The time is read from `clock` (the
    /// server's), so that tests can set it.
    pub fn new(
        store: Arc<dyn Store>,
        directory: Arc<dyn Directory>,
        clock: Arc<dyn mcp_pipeline::Clock>,
    ) -> Self {
        McpAuthenticator {
            store,
            directory,
            oauth: None,
            clock,
        }
    }

    /// Also accepts OAuth access tokens validated by `validator`.
    pub fn with_oauth(mut self, validator: Arc<OAuthValidator>) -> Self {
        self.oauth = Some(validator);
        self
    }

    /// The tenant and connection an MCP token's locator names (unchecked, no I/O).
    pub fn claim(&self, headers: &Headers) -> Option<Claim> {
        let locator = token::locator(bearer(headers).ok()?)?;
        Some(Claim {
            tenant: locator.tenant,
            connection: locator.connection,
        })
    }

    /// Authenticates one request (reading nothing ahead).
    pub async fn caller(
        &self,
        headers: &Headers,
        path_tenant: Option<&str>,
    ) -> Result<Caller, Rejection> {
        self.authenticate_with(headers, path_tenant, Vec::new())
            .await
            .map(|done| done.caller)
    }

    /// Authenticates one request, reading `prefetch` (gate items named from the token's
    /// locator) in the same batch when the token has a locator.
    ///
    /// An MCP token with a locator takes one round trip: the credential, both switches, the
    /// creator's member item and `prefetch`, in one batch. Tokens without one and OAuth
    /// access tokens take two: the credential and the global switch, then the tenant's
    /// switch and the creator (at once); their gate items are read by the pipeline.
    pub async fn authenticate_with(
        &self,
        headers: &Headers,
        path_tenant: Option<&str>,
        prefetch: Vec<store::Key>,
    ) -> Result<Authenticated, Rejection> {
        let bearer = bearer(headers)?;
        let (index_key, from_oauth) = match token::classify(bearer) {
            BearerKind::Mcp => {
                let hash = token::hash(bearer);
                if let Some(locator) = token::locator(bearer) {
                    return self
                        .with_locator_moving(&hash, &locator, path_tenant, prefetch)
                        .await;
                }
                (keys::legacy_mcp_token(&hash), false)
            }
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
                    .validate(bearer, self.clock.now())
                    .await
                    .map_err(|reason| oauth_refusal(oauth, reason))?;
                (
                    keys::oauth_subject(
                        &store::TenantId::new(subject.tenant.as_str()),
                        &subject.subject,
                    ),
                    true,
                )
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
        let stored = got[0].as_ref().and_then(Connection::from_item);
        let connection = active_connection(stored.as_ref(), from_oauth)?;
        check_global(switch::global_is_on(got[1].as_ref()))?;
        check_path(connection, path_tenant)?;
        // The tenant's switch and the creator's current rights are independent: ask both at once.
        let switch_key = keys::tenant_switch(&connection.tenant);
        let tenant_switch = self.store.get(&switch_key);
        let member = self
            .directory
            .member(&connection.tenant, &connection.creator);
        let (tenant_switch, member) = futures_util::future::join(tenant_switch, member).await;
        let tenant_switch = tenant_switch.map_err(|e| unavailable(&e))?;
        check_tenant(switch::tenant_allows(tenant_switch.as_ref()))?;
        let modes = switch::approval_modes(tenant_switch.as_ref());
        let member = member.map_err(|e| unavailable(&e))?;
        self.admit(
            index_key,
            connection,
            modes,
            member.as_ref(),
            Prefetched::default(),
        )
        .await
    }

    /// [`Self::with_locator`], and for a token made before its index item moved into the
    /// tenant's partition (ADR 51), the move on first use and then the same path.
    async fn with_locator_moving(
        &self,
        hash: &str,
        locator: &token::Locator,
        path_tenant: Option<&str>,
        prefetch: Vec<store::Key>,
    ) -> Result<Authenticated, Rejection> {
        let index_key = keys::mcp_token(&locator.tenant, hash);
        let refusal = match self
            .with_locator(index_key.clone(), locator, path_tenant, prefetch)
            .await
        {
            Located::Done(result) => return result,
            Located::NoIndexItem(refusal) => refusal,
        };
        if !self.move_legacy_index(hash, &index_key, locator).await {
            return Err(refusal);
        }
        // Once per token: its gate items are then read by the pipeline.
        match self
            .with_locator(index_key, locator, path_tenant, Vec::new())
            .await
        {
            Located::Done(result) => result,
            Located::NoIndexItem(refusal) => Err(refusal),
        }
    }

    /// Copies a token's index item from where it was kept before ADR 51 into its tenant's
    /// partition, when it is there and names the connection the locator does; whether it did.
    /// The copy is made only where no item is (a revocation leaves a tombstone there, so that
    /// a revoked token never comes back).
    async fn move_legacy_index(
        &self,
        hash: &str,
        index_key: &store::Key,
        locator: &token::Locator,
    ) -> bool {
        // Only a connection made before ADR 51 may have one: a locator naming no such
        // connection (a forged one) never sends a read to what belongs to no tenant.
        let connection = keys::connection(&locator.tenant, &locator.connection);
        match self.store.get(&connection).await {
            Ok(Some(stored)) if crate::connection::index_may_be_legacy(&stored) => {}
            _ => return false,
        }
        let legacy = keys::legacy_mcp_token(hash);
        let Ok(Some(item)) = self.store.get(&legacy).await else {
            return false;
        };
        let names_it = Connection::from_item(&item).is_some_and(|c| {
            c.tenant == locator.tenant && c.id == locator.connection && !c.revoked
        });
        if !names_it {
            return false;
        }
        let copy =
            store::Put::new(index_key.clone(), item).when(store::Condition::item_not_exists());
        match self.store.put(copy).await {
            Ok(()) => {
                tracing::info!(connection = %locator.connection, "an MCP token's index item moved into its tenant's partition");
                true
            }
            Err(_) => false,
        }
    }

    /// The one-batch path of a token whose locator names its tenant, creator and connection:
    /// its items decoded once while they do not change (ADR 32), checked on every request.
    async fn with_locator(
        &self,
        index_key: store::Key,
        locator: &token::Locator,
        path_tenant: Option<&str>,
        prefetch: Vec<store::Key>,
    ) -> Located {
        let member_key = self.directory.member_key(&locator.tenant, &locator.creator);
        let mut batch = vec![
            index_key.clone(),
            keys::global_switch(),
            keys::tenant_switch(&locator.tenant),
        ];
        batch.extend(member_key);
        // What a call's arguments name must never fail authentication: a key asked twice would
        // be refused by DynamoDB's BatchGetItem, and a batch has room for 100 keys.
        let mut prefetch: Vec<store::Key> = prefetch
            .into_iter()
            .filter(|k| !batch.contains(k))
            .collect();
        let mut seen = std::collections::HashSet::new();
        prefetch.retain(|k| seen.insert(k.clone()));
        prefetch.truncate(MAX_PREFETCH);
        let directory = &self.directory;
        let decode = |items: &[Option<store::Item>]| -> store::Derived {
            Arc::new(Decoded::from_items(
                directory.as_ref(),
                &locator.creator,
                items,
            ))
        };
        let derivation = store::Derivation {
            name: "identity::credential",
            derive: &decode,
        };
        let (decoded, read_ahead) = match self
            .store
            .batch_get_derived(&batch, &prefetch, derivation)
            .await
        {
            Ok(read) => read,
            Err(e) => return Located::Done(Err(unavailable(&e))),
        };
        let Some(decoded) = decoded.downcast_ref::<Decoded>() else {
            tracing::error!("the store answered a credential with another derivation's value");
            return Located::Done(Err(Rejection::switched_off(
                "the server cannot check credentials right now",
                5,
            )));
        };
        if decoded.index_missing {
            return Located::NoIndexItem(Rejection::invalid_token(UNKNOWN_TOKEN));
        }
        Located::Done(
            self.check_located(
                decoded,
                index_key,
                locator,
                path_tenant,
                Prefetched::new(prefetch, read_ahead),
            )
            .await,
        )
    }

    /// The checks of the one-batch path on its decoded items.
    async fn check_located(
        &self,
        decoded: &Decoded,
        index_key: store::Key,
        locator: &token::Locator,
        path_tenant: Option<&str>,
        prefetched: Prefetched,
    ) -> Result<Authenticated, Rejection> {
        let connection = decoded.connection(locator)?;
        check_global(decoded.global_on)?;
        check_path(connection, path_tenant)?;
        check_tenant(decoded.tenant_allows)?;
        // The decoded member is borrowed, not copied; only a directory without member items
        // is asked per request.
        let asked;
        let member = match &decoded.member {
            Some(member) => member.as_ref(),
            None => {
                asked = self
                    .directory
                    .member(&connection.tenant, &connection.creator)
                    .await
                    .map_err(|e| unavailable(&e))?;
                asked.as_ref()
            }
        };
        self.admit(index_key, connection, decoded.modes, member, prefetched)
            .await
    }

    /// The last checks, shared by both paths: the creator is still an active member; then
    /// the caller with the connection's rights capped by the creator's live rights.
    async fn admit(
        &self,
        index_key: store::Key,
        connection: &Connection,
        tenant_modes: mcp_pipeline::ProductApproval,
        member: Option<&crate::Member>,
        prefetched: Prefetched,
    ) -> Result<Authenticated, Rejection> {
        // The member id must still be held by the person who created the connection: a member
        // removed and added again is a new person, whose credentials start afresh.
        let same_person = |m: &crate::Member| m.person == connection.creator_person;
        let Some(member) = member.filter(|m| m.active && same_person(m)) else {
            return Err(Rejection::invalid_token(
                "the person who created this connection no longer has access; the connection has ended",
            ));
        };
        // Bookkeeping for the connections page: at most one write per connection per hour, and
        // only onto an item that still exists (a revoked credential is never brought back). A
        // failure here does not fail the call.
        let micros = self.clock.now_micros();
        let now = chrono::DateTime::from_timestamp_micros(micros).unwrap_or_default();
        if connection.last_used_is_stale(now) {
            let touch = store::Update::new(
                index_key,
                vec![store::UpdateAction::Set(
                    "last_used".into(),
                    store::Value::s(crate::rfc3339_at(micros)),
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
        // A pinned connection approves every class in the product; modes only add strictness.
        let product_approval = if connection.approval_pinned {
            tenant_modes.union(mcp_pipeline::ProductApproval::all())
        } else {
            tenant_modes
        };
        Ok(Authenticated {
            caller: Caller {
                tenant: connection.tenant.clone(),
                connection: connection.id.clone(),
                creator: connection.creator.clone(),
                client_name: connection.client_name.clone(),
                rights,
                toolset: connection.toolset,
                product_approval,
            },
            prefetched,
        })
    }
}

/// The message of a refused MCP token that names no stored credential.
const UNKNOWN_TOKEN: &str = "the MCP token is unknown or revoked";

/// How the one-batch path ended: with an answer, or without the token's index item in the
/// tenant's partition (where a token made before ADR 51 may not have one yet).
enum Located {
    Done(Result<Authenticated, Rejection>),
    NoIndexItem(Rejection),
}

/// What the items of a locator token's batch hold, decoded: the index item's connection, both
/// switches and the creator's member item (when the directory keeps one). A function of the
/// items alone, so the store may keep it while they do not change (ADR 32); every check on it
/// runs per request, in the order of the path without a locator.
#[derive(Debug)]
struct Decoded {
    /// The tenant's partition holds no index item for the token.
    index_missing: bool,
    connection: Option<Connection>,
    global_on: bool,
    tenant_allows: bool,
    modes: mcp_pipeline::ProductApproval,
    /// `None`: the directory keeps no member item, so the member is asked for per request.
    member: Option<Option<crate::Member>>,
}

impl Decoded {
    fn from_items(
        directory: &dyn Directory,
        creator: &store::MemberId,
        items: &[Option<store::Item>],
    ) -> Self {
        let item = |i: usize| items.get(i).and_then(Option::as_ref);
        Decoded {
            index_missing: item(0).is_none(),
            connection: item(0).and_then(Connection::from_item),
            global_on: switch::global_is_on(item(1)),
            tenant_allows: switch::tenant_allows(item(2)),
            modes: switch::approval_modes(item(2)),
            member: (items.len() > 3).then(|| directory.member_from_item(creator, item(3))),
        }
    }

    /// The active connection, when it is the one the token's locator names.
    fn connection(&self, locator: &token::Locator) -> Result<&Connection, Rejection> {
        let connection = active_connection(self.connection.as_ref(), false)?;
        // The hash covers the locator, so a token found by its hash carries the locator it was
        // made with; a mismatch means the stored connection was changed underneath it.
        if connection.tenant != locator.tenant
            || connection.creator != locator.creator
            || connection.id != locator.connection
        {
            tracing::error!(connection = %connection.id, "an MCP token's locator does not match its connection");
            return Err(Rejection::invalid_token(
                "the MCP token is unknown or revoked",
            ));
        }
        Ok(connection)
    }
}

/// The connection a credential's index item holds, unless it is missing or revoked.
fn active_connection(
    stored: Option<&Connection>,
    from_oauth: bool,
) -> Result<&Connection, Rejection> {
    match stored {
        Some(connection) if !connection.revoked => Ok(connection),
        _ => Err(Rejection::invalid_token(if from_oauth {
            "no active connection for this OAuth subject"
        } else {
            "the MCP token is unknown or revoked"
        })),
    }
}

fn check_global(on: bool) -> Result<(), Rejection> {
    if on {
        // The alarm on the kill switch counts this line (infra/template.json).
        tracing::warn!("kill switch is on: agent call refused with 503");
        return Err(Rejection::switched_off(
            "agent access is switched off for maintenance",
            switch::RETRY_AFTER_SECONDS,
        ));
    }
    Ok(())
}

fn check_path(connection: &Connection, path_tenant: Option<&str>) -> Result<(), Rejection> {
    if path_tenant.is_some_and(|t| t != connection.tenant.as_str()) {
        return Err(Rejection::forbidden(
            "this credential is bound to another tenant than the one in the path",
        ));
    }
    Ok(())
}

fn check_tenant(allows: bool) -> Result<(), Rejection> {
    if !allows {
        return Err(Rejection::switched_off(
            "agent access is switched off for this workspace",
            switch::RETRY_AFTER_SECONDS,
        ));
    }
    Ok(())
}

/// A token that could not be accepted: invalid (401), unless no key of the issuer was ever
/// fetched, when nothing could be checked: an outage, 503 with a short wait (the key cache
/// tries again after `FIRST_FETCH_RETRY`).
fn oauth_refusal(oauth: &OAuthValidator, reason: String) -> Rejection {
    if oauth.has_keys() {
        return Rejection::invalid_token(reason);
    }
    let wait = crate::oauth::FIRST_FETCH_RETRY.as_secs();
    Rejection::switched_off(
        "the authorization server's keys cannot be fetched right now",
        wait,
    )
}

fn unavailable(e: &store::StoreError) -> Rejection {
    tracing::error!(error = %e, "store failed during authentication");
    Rejection::switched_off("the server cannot check credentials right now", 5)
}

fn bearer(headers: &Headers) -> Result<&str, Rejection> {
    let Some(value) = headers.get("authorization") else {
        let has_session = headers.get("cookie").is_some_and(|c| {
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
    fn claim(&self, headers: &Headers) -> Option<Claim> {
        McpAuthenticator::claim(self, headers)
    }

    fn authenticate<'a>(
        &'a self,
        headers: &'a Headers,
        tenant: Option<&'a str>,
        prefetch: Vec<store::Key>,
    ) -> BoxFuture<'a, Result<Authenticated, Rejection>> {
        Box::pin(self.authenticate_with(headers, tenant, prefetch))
    }
}
