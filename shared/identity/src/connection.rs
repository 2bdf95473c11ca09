//! Connections: one tenant, one creator, capped rights, a toolset and a client name.

use std::collections::BTreeSet;
use std::sync::Arc;

use mcp_pipeline::{ApprovalMode, Toolset};
use store::{
    Condition, ConnectionId, Item, MemberId, Put, Query, Store, TenantId, TransactOp, Update,
    UpdateAction, Value,
};

use crate::{Actor, AuditEntry, Directory, IdentityError, keys, token};

/// The right needed to create, list and revoke connections.
pub const MANAGE_CONNECTIONS: &str = "connections:manage";

/// A connection as stored (never with its token).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Connection {
    /// Public id (`con_...`).
    pub id: ConnectionId,
    /// The tenant it is bound to.
    pub tenant: TenantId,
    /// The member who created it.
    pub creator: MemberId,
    /// Rights granted at creation (never more than the creator had then).
    pub rights: BTreeSet<String>,
    /// The tool catalog it sees.
    pub toolset: Toolset,
    /// The client it was made for.
    pub client_name: String,
    /// When it was created.
    pub created_at: String,
    /// Whether it was revoked.
    pub revoked: bool,
    /// `token` (an MCP token) or `oauth` (an OAuth subject).
    pub kind: String,
    /// The OAuth subject, for `oauth` connections.
    pub subject: Option<String>,
    /// Pinned to approval in the product for every class (a client known not to prompt).
    pub approval_pinned: bool,
    /// The person who held the creator's member id when it was created: the connection ends
    /// for good when that member is removed, even if the id is added again.
    pub creator_person: Option<String>,
    /// When its credential last authenticated a request, to the hour
    /// ([`LAST_USED_RESOLUTION_SECONDS`]); `None`: never. Kept on the credential's index item,
    /// which authentication reads anyway, so that recording it costs one write per connection
    /// per hour rather than one per call.
    pub last_used: Option<String>,
}

/// How stale `last_used` may get before authentication records a new time.
pub const LAST_USED_RESOLUTION_SECONDS: i64 = 3600;

impl Connection {
    pub(crate) fn to_item(&self) -> Item {
        let mut item = Item::new();
        item.insert("id".into(), Value::s(self.id.as_str()));
        item.insert("tenant".into(), Value::s(self.tenant.as_str()));
        item.insert("creator".into(), Value::s(self.creator.as_str()));
        item.insert(
            "rights".into(),
            Value::L(self.rights.iter().map(Value::s).collect()),
        );
        item.insert("toolset".into(), Value::s(self.toolset.as_str()));
        item.insert("client".into(), Value::s(&self.client_name));
        item.insert("created_at".into(), Value::s(&self.created_at));
        item.insert("revoked".into(), Value::Bool(self.revoked));
        item.insert("kind".into(), Value::s(&self.kind));
        if let Some(subject) = &self.subject {
            item.insert("subject".into(), Value::s(subject));
        }
        if let Some(at) = &self.last_used {
            item.insert("last_used".into(), Value::s(at));
        }
        if self.approval_pinned {
            item.insert("approval".into(), Value::s(ApprovalMode::Product.as_str()));
        }
        if let Some(person) = &self.creator_person {
            item.insert("creator_person".into(), Value::s(person));
        }
        item
    }

    /// Whether `last_used` is missing or older than [`LAST_USED_RESOLUTION_SECONDS`] at `now`.
    pub fn last_used_is_stale(&self, now: chrono::DateTime<chrono::Utc>) -> bool {
        let seen = self
            .last_used
            .as_deref()
            .and_then(|at| chrono::DateTime::parse_from_rfc3339(at).ok());
        seen.is_none_or(|at| (now - at.to_utc()).num_seconds() >= LAST_USED_RESOLUTION_SECONDS)
    }

    /// The key of the item authentication reads for this connection's credential (which holds
    /// `last_used`), from the stored connection item.
    fn credential_key(item: &Item) -> Option<store::Key> {
        let s = |k: &str| item.get(k).and_then(Value::as_s);
        match s("kind").unwrap_or("token") {
            "oauth" => Some(keys::oauth_subject(
                &TenantId::new(s("tenant")?),
                s("subject")?,
            )),
            _ => Some(keys::mcp_token(
                &TenantId::new(s("tenant")?),
                s("token_hash")?,
            )),
        }
    }

    /// Reads a connection back from a stored item (the connection or an index copy).
    pub fn from_item(item: &Item) -> Option<Self> {
        let s = |k: &str| item.get(k).and_then(Value::as_s).map(str::to_owned);
        let rights = match item.get("rights") {
            Some(Value::L(list)) => list
                .iter()
                .filter_map(Value::as_s)
                .map(str::to_owned)
                .collect(),
            _ => BTreeSet::new(),
        };
        Some(Connection {
            id: ConnectionId::new(s("id")?),
            tenant: TenantId::new(s("tenant")?),
            creator: MemberId::new(s("creator")?),
            rights,
            toolset: Toolset::parse(&s("toolset")?)?,
            client_name: s("client").unwrap_or_default(),
            created_at: s("created_at").unwrap_or_default(),
            revoked: matches!(item.get("revoked"), Some(Value::Bool(true))),
            kind: s("kind").unwrap_or_else(|| "token".into()),
            subject: s("subject"),
            last_used: s("last_used"),
            approval_pinned: s("approval").as_deref() == Some(ApprovalMode::Product.as_str()),
            creator_person: s("creator_person"),
        })
    }
}

/// What the creator asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewConnection {
    /// Rights to grant (at most the creator's).
    pub rights: BTreeSet<String>,
    /// The tool catalog.
    pub toolset: Toolset,
    /// The client it is for ("Claude Desktop on Ana's laptop").
    pub client_name: String,
    /// `Product`: every action this connection prepares is approved only in the product,
    /// whatever the tenant's modes (for clients known not to prompt; ADR 15).
    pub approval: ApprovalMode,
}

/// Creates, lists and revokes connections; every change is audited in its transaction.
#[derive(Debug, Clone)]
pub struct ConnectionService {
    store: Arc<dyn Store>,
    directory: Arc<dyn Directory>,
    outside: outside::ClockAndRandomness,
}

impl ConnectionService {
    /// The service over `store`, asking `directory` for members' rights; connections' ids,
    /// tokens and times come from `outside`.
    pub fn new(
        store: Arc<dyn Store>,
        directory: Arc<dyn Directory>,
        outside: outside::ClockAndRandomness,
    ) -> Self {
        ConnectionService {
            store,
            directory,
            outside,
        }
    }

    /// The creator, when they may create `new`; their person is recorded with it.
    async fn check_creator(
        &self,
        actor: &Actor,
        new: &NewConnection,
    ) -> Result<crate::Member, IdentityError> {
        let member = self
            .directory
            .member(&actor.tenant, &actor.member)
            .await?
            .filter(|m| m.active)
            .ok_or_else(|| {
                IdentityError::Forbidden(format!(
                    "{} is not an active member of {}",
                    actor.member, actor.tenant
                ))
            })?;
        if !member.rights.contains(MANAGE_CONNECTIONS) {
            return Err(IdentityError::Forbidden(format!(
                "{} lacks the right {MANAGE_CONNECTIONS}",
                actor.member
            )));
        }
        if new.rights.iter().all(|r| r.trim().is_empty()) {
            // A connection without rights can call nothing: a slip, not a wish.
            return Err(IdentityError::Invalid(
                "a connection needs at least one right".into(),
            ));
        }
        let excess: Vec<&String> = new.rights.difference(&member.rights).collect();
        if !excess.is_empty() {
            return Err(IdentityError::Forbidden(format!(
                "a connection cannot have rights its creator lacks: {}",
                excess
                    .iter()
                    .map(|r| r.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        let name = new.client_name.trim();
        if name.is_empty() || name.chars().count() > 64 {
            return Err(IdentityError::Invalid(
                "the client name must be 1 to 64 characters".into(),
            ));
        }
        Ok(member)
    }

    fn record(
        &self,
        actor: &Actor,
        creator: crate::Member,
        new: &NewConnection,
        kind: &str,
        subject: Option<&str>,
    ) -> Connection {
        Connection {
            creator_person: creator.person,
            id: ConnectionId::new(format!("con_{}", self.outside.random_text(20))),
            tenant: actor.tenant.clone(),
            creator: actor.member.clone(),
            rights: new.rights.clone(),
            toolset: new.toolset,
            client_name: new.client_name.trim().to_owned(),
            created_at: crate::rfc3339_now(self.outside.clock.as_ref()),
            revoked: false,
            kind: kind.into(),
            subject: subject.map(str::to_owned),
            last_used: None,
            approval_pinned: new.approval == ApprovalMode::Product,
        }
    }

    fn audit(&self, actor: &Actor, action: &str, id: &ConnectionId) -> TransactOp {
        let clock = self.outside.clock.as_ref();
        AuditEntry::by(actor, action, vec![id.as_str().to_owned()], clock)
            .op(self.outside.randomness.as_ref())
    }

    /// Creates a connection with an MCP token. The token is returned here once and never
    /// stored; only its hash is.
    pub async fn create_token(
        &self,
        actor: &Actor,
        new: NewConnection,
    ) -> Result<(Connection, String), IdentityError> {
        self.create_token_once(actor, new, None).await
    }

    /// As [`Self::create_token`], for the submission of the form `form` (an id the page put
    /// in it): a second submission of the same form (a page reloaded after it showed the
    /// token, a button pressed twice) makes nothing and says which connection the first made.
    pub async fn create_token_for_form(
        &self,
        actor: &Actor,
        new: NewConnection,
        form: &str,
    ) -> Result<(Connection, String), IdentityError> {
        if form.is_empty() || form.len() > 64 {
            return Err(IdentityError::Invalid(
                "the form has no valid id: open the page again".into(),
            ));
        }
        self.create_token_once(actor, new, Some(form)).await
    }

    async fn create_token_once(
        &self,
        actor: &Actor,
        new: NewConnection,
        form: Option<&str>,
    ) -> Result<(Connection, String), IdentityError> {
        let creator = self.check_creator(actor, &new).await?;
        let connection = self.record(actor, creator, &new, "token", None);
        let locator = token::Locator {
            tenant: connection.tenant.clone(),
            creator: connection.creator.clone(),
            connection: connection.id.clone(),
        };
        let token = token::generate(&locator, self.outside.randomness.as_ref());
        let mut index = connection.to_item();
        index.insert("token_hash".into(), Value::s(&token.hash));
        let mut stored = connection.to_item();
        stored.insert("token_hash".into(), Value::s(&token.hash));
        // Its index lives in the tenant's partition only: nothing to revoke elsewhere (ADR 51).
        stored.insert(INDEX_IN_TENANT.into(), Value::Bool(true));
        let mut ops = vec![
            Put::new(keys::connection(&actor.tenant, &connection.id), stored)
                .when(Condition::item_not_exists())
                .into(),
            Put::new(keys::mcp_token(&actor.tenant, &token.hash), index)
                .when(Condition::item_not_exists())
                .into(),
            self.audit(actor, "connection.create", &connection.id),
        ];
        if let Some(form) = form {
            let mut mark = Item::new();
            mark.insert("connection".into(), Value::s(connection.id.as_str()));
            let expires = self.outside.now() + FORM_MARK_SECONDS;
            mark.insert(store::TTL_ATTRIBUTE.into(), Value::n(expires));
            let mark = Put::new(keys::connection_form(&actor.tenant, form), mark)
                .when(Condition::item_not_exists())
                .return_old_on_failure();
            ops.push(mark.into());
        }
        match self.store.transact_write(ops).await {
            Ok(()) => Ok((connection, token.secret)),
            Err(store::StoreError::TransactionCancelled { reasons }) if form.is_some() => {
                Err(submitted_before(&reasons))
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Creates a connection for an OAuth subject of this tenant (one per subject).
    pub async fn create_oauth(
        &self,
        actor: &Actor,
        subject: &str,
        new: NewConnection,
    ) -> Result<Connection, IdentityError> {
        let creator = self.check_creator(actor, &new).await?;
        if subject.trim().is_empty() {
            return Err(IdentityError::Invalid(
                "the OAuth subject must not be empty".into(),
            ));
        }
        let connection = self.record(actor, creator, &new, "oauth", Some(subject));
        self.store
            .transact_write(vec![
                Put::new(
                    keys::connection(&actor.tenant, &connection.id),
                    connection.to_item(),
                )
                .when(Condition::item_not_exists())
                .into(),
                Put::new(
                    keys::oauth_subject(&actor.tenant, subject),
                    connection.to_item(),
                )
                .when(Condition::item_not_exists())
                .into(),
                self.audit(actor, "connection.create", &connection.id),
            ])
            .await
            .map_err(|e| match e {
                store::StoreError::TransactionCancelled { .. } => IdentityError::Invalid(format!(
                    "subject {subject} already has a connection in {}",
                    actor.tenant
                )),
                other => other.into(),
            })?;
        Ok(connection)
    }

    /// The tenant's connections, oldest first.
    pub async fn list(&self, tenant: &TenantId) -> Result<Vec<Connection>, IdentityError> {
        let mut out = Vec::new();
        let mut credentials = Vec::new();
        let mut cursor = None;
        loop {
            let page = self
                .store
                .query(
                    Query::partition(keys::connections(tenant))
                        .limit(100)
                        .after(cursor),
                )
                .await?;
            for (_, item) in &page.items {
                if let Some(connection) = Connection::from_item(item) {
                    credentials.push(Connection::credential_key(item));
                    out.push(connection);
                }
            }
            match page.next {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        // `last_used` lives on the credentials' index items: read them in batches.
        let wanted: Vec<(usize, store::Key)> = credentials
            .into_iter()
            .enumerate()
            .filter_map(|(i, key)| key.map(|k| (i, k)))
            .collect();
        for chunk in wanted.chunks(100) {
            let keys: Vec<store::Key> = chunk.iter().map(|(_, k)| k.clone()).collect();
            let got = self.store.batch_get(&keys).await?;
            for ((i, _), item) in chunk.iter().zip(got) {
                out[*i].last_used = item
                    .as_ref()
                    .and_then(|item| item.get("last_used"))
                    .and_then(Value::as_s)
                    .map(str::to_owned);
            }
        }
        out.sort_by(|a, b| a.created_at.cmp(&b.created_at));
        Ok(out)
    }

    /// Revokes a connection: its credential stops working on the next request.
    pub async fn revoke(
        &self,
        actor: &Actor,
        connection_id: &ConnectionId,
    ) -> Result<Connection, IdentityError> {
        let member = self
            .directory
            .member(&actor.tenant, &actor.member)
            .await?
            .filter(|m| m.active && m.rights.contains(MANAGE_CONNECTIONS))
            .ok_or_else(|| {
                IdentityError::Forbidden(format!(
                    "{} may not revoke connections in {}",
                    actor.member, actor.tenant
                ))
            })?;
        if connection_id.as_str().trim().is_empty() {
            return Err(IdentityError::Invalid(
                "name the connection to revoke by its id (con_..., as `token list` and the connections page show it)".into(),
            ));
        }
        let key = keys::connection(&actor.tenant, connection_id);
        let stored = self.store.get(&key).await?.ok_or_else(|| {
            IdentityError::NotFound(format!("no connection {connection_id} in {}", actor.tenant))
        })?;
        let mut connection = Connection::from_item(&stored).ok_or_else(|| {
            IdentityError::NotFound(format!("connection {connection_id} is unreadable"))
        })?;
        may_revoke(&member, &connection)?;
        if connection.revoked {
            return Ok(connection);
        }
        let revoke = vec![
            UpdateAction::Set("revoked".into(), Value::Bool(true)),
            UpdateAction::Set(
                "revoked_at".into(),
                Value::s(crate::rfc3339_now(self.outside.clock.as_ref())),
            ),
        ];
        let mut ops = vec![
            Update::new(key, revoke.clone())
                .when(Condition::item_exists())
                .into(),
        ];
        match (
            &connection.subject,
            stored.get("token_hash").and_then(Value::as_s),
        ) {
            (Some(subject), _) => ops.push(
                Update::new(keys::oauth_subject(&actor.tenant, subject), revoke)
                    .when(Condition::item_exists())
                    .into(),
            ),
            (None, Some(hash)) => {
                ops.extend(revoke_token_index(&actor.tenant, hash, &stored, revoke))
            }
            (None, None) => {
                return Err(IdentityError::NotFound(format!(
                    "connection {connection_id} has no credential"
                )));
            }
        }
        ops.push(self.audit(actor, "connection.revoke", connection_id));
        self.store.transact_write(ops).await?;
        connection.revoked = true;
        Ok(connection)
    }
}

/// The attribute of a connection item whose token index was made in the tenant's partition
/// (ADR 51); an item without it may also have one under [`keys::legacy_mcp_token`].
const INDEX_IN_TENANT: &str = "index_in_tenant";

/// Whether the stored connection item `stored` may have its token's index item under
/// [`keys::legacy_mcp_token`] (it was made before ADR 51).
pub(crate) fn index_may_be_legacy(stored: &Item) -> bool {
    stored.get(INDEX_IN_TENANT) != Some(&Value::Bool(true))
}

/// The writes that end an MCP token's index items. The tenant's item is written whether or not
/// it exists: for a token made before ADR 51 and not yet used since, it is a tombstone, so that
/// no later copy from the legacy item (the authenticator's, on first use) brings the token back.
fn revoke_token_index(
    tenant: &TenantId,
    hash: &str,
    stored: &Item,
    revoke: Vec<UpdateAction>,
) -> Vec<TransactOp> {
    let mut ops: Vec<TransactOp> =
        vec![Update::new(keys::mcp_token(tenant, hash), revoke.clone()).into()];
    if index_may_be_legacy(stored) {
        ops.push(Update::new(keys::legacy_mcp_token(hash), revoke).into());
    }
    ops
}

/// The role whose members may revoke any connection of their workspace.
pub const OWNER_ROLE: &str = "owner";

/// Whether `member` (active, holding [`MANAGE_CONNECTIONS`]) may revoke `connection` (ADR 48):
/// their own always; another member's only while they hold every right it holds, so that
/// managing connections does not let a dispatcher cut off an owner's agents; an owner any.
fn may_revoke(member: &crate::Member, connection: &Connection) -> Result<(), IdentityError> {
    if connection.creator == member.id || member.role == OWNER_ROLE {
        return Ok(());
    }
    let lacking: Vec<&str> = connection
        .rights
        .iter()
        .filter(|r| !member.rights.contains(*r))
        .map(String::as_str)
        .collect();
    if lacking.is_empty() {
        return Ok(());
    }
    Err(IdentityError::Forbidden(format!(
        "{} may not revoke {}'s connection {}: it holds {}, which {} does not; an owner, or a \
         member with every right it holds, may",
        member.id,
        connection.creator,
        connection.id,
        lacking.join(", "),
        member.id
    )))
}

/// How long a submitted form's mark is kept: longer than anyone keeps a page open to reload.
const FORM_MARK_SECONDS: i64 = 24 * 60 * 60;

/// The refusal of a form submitted before, naming the connection its first submission made
/// (the form's mark is the last operation; the others cannot fail for a new connection).
fn submitted_before(reasons: &[store::CancelReason]) -> IdentityError {
    let made = store::CancelReason::first_failed(reasons)
        .and_then(|(_, old)| old)
        .and_then(|old| {
            old.get("connection")
                .and_then(Value::as_s)
                .map(str::to_owned)
        });
    match made {
        Some(id) => IdentityError::Invalid(format!(
            "this form was submitted already: it made connection {id}, whose token was shown \
             once; to make another connection, open the connections page again"
        )),
        None => IdentityError::Store(store::StoreError::TransactionCancelled {
            reasons: reasons.to_vec(),
        }),
    }
}
