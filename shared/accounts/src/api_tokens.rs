//! Product API tokens (`gha_...`): made by a member for the JSON API, shown once, stored as a
//! hash, with an expiry; listed and revoked by the workspace, every change audited. A token
//! works only while its member is active and still the same person.

use std::sync::Arc;

use identity::{Actor, Directory as _, RoleCatalog, StoreDirectory};
use store::{Condition, Item, Put, Store, Update, UpdateAction, Value};

use crate::{AccountsError, keys};

/// How long a token lasts unless its maker says otherwise.
pub const DEFAULT_VALID_DAYS: u32 = 90;
/// The longest a token may last.
pub const MAX_VALID_DAYS: u32 = 365;

/// A product API token as the workspace sees it (never its secret).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiToken {
    /// Public id (`tok_...`).
    pub id: String,
    /// The member it acts as.
    pub member: store::MemberId,
    /// When it was made (RFC 3339).
    pub created_at: String,
    /// When it stops working (RFC 3339).
    pub expires_at: String,
    /// Whether it was revoked.
    pub revoked: bool,
}

/// Who a live product API token acts for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bearer {
    /// The workspace.
    pub tenant: store::TenantId,
    /// The member.
    pub member: store::MemberId,
    /// The token's public id (its rate buckets are its own).
    pub token: String,
    /// The member's rights now: their current role decides, not what they had when the
    /// token was made.
    pub rights: std::collections::BTreeSet<String>,
}

/// The product API token service.
#[derive(Debug, Clone)]
pub struct ApiTokens {
    store: Arc<dyn Store>,
    catalog: RoleCatalog,
    outside: outside::ClockAndRandomness,
}

impl ApiTokens {
    /// The service over `store`, with roles from `catalog`, its times and secrets from
    /// `outside`.
    pub fn new(
        store: Arc<dyn Store>,
        catalog: RoleCatalog,
        outside: outside::ClockAndRandomness,
    ) -> Self {
        ApiTokens {
            store,
            catalog,
            outside,
        }
    }

    fn directory(&self) -> StoreDirectory {
        let randomness = Arc::clone(&self.outside.randomness);
        StoreDirectory::new(Arc::clone(&self.store), self.catalog, randomness)
    }

    /// Makes a token for the actor (an active member), valid for `valid_days` (1 to 365);
    /// returns it and its secret, which is shown once and never stored. Audited.
    pub async fn create(
        &self,
        actor: &Actor,
        valid_days: Option<u32>,
    ) -> Result<(ApiToken, String), AccountsError> {
        let days = valid_days.unwrap_or(DEFAULT_VALID_DAYS);
        if !(1..=MAX_VALID_DAYS).contains(&days) {
            return Err(AccountsError::Invalid(format!(
                "a token lasts 1 to {MAX_VALID_DAYS} days, not {days}"
            )));
        }
        let member = self
            .directory()
            .member(&actor.tenant, &actor.member)
            .await?
            .filter(|m| m.active)
            .ok_or_else(|| {
                AccountsError::Forbidden(format!(
                    "{} is not an active member of {}",
                    actor.member, actor.tenant
                ))
            })?;
        let now = self.outside.now_micros();
        let expires = now + i64::from(days) * 86_400 * 1_000_000;
        let token = ApiToken {
            id: format!("tok_{}", self.outside.random_text(16)),
            member: actor.member.clone(),
            created_at: identity::rfc3339_at(now),
            expires_at: identity::rfc3339_at(expires),
            revoked: false,
        };
        // The token names its workspace and member, so that authenticating it asks that
        // workspace alone, in one round trip (ADR 53).
        let locator = identity::token::MemberLocator {
            tenant: actor.tenant.clone(),
            member: actor.member.clone(),
        };
        let identity::token::NewToken { secret, hash } =
            identity::token::generate_api(&locator, self.outside.randomness.as_ref());
        let mut record = record_item(&token);
        record.insert("hash".into(), Value::s(&hash));
        record.insert(LOCATED.into(), Value::Bool(true));
        let mut index = Item::new();
        index.insert("tenant".into(), Value::s(actor.tenant.as_str()));
        index.insert("member".into(), Value::s(actor.member.as_str()));
        index.insert("id".into(), Value::s(&token.id));
        index.insert("expires".into(), Value::n(expires / 1_000_000));
        if let Some(person) = &member.person {
            index.insert("person".into(), Value::s(person));
        }
        let ops = vec![
            Put::new(keys::api_token_record(&actor.tenant, &token.id), record)
                .when(Condition::item_not_exists())
                .into(),
            Put::new(keys::api_token(&actor.tenant, &hash), index)
                .when(Condition::item_not_exists())
                .into(),
            crate::audit(
                actor,
                "api_token.create",
                vec![token.id.clone()],
                &self.outside,
            ),
        ];
        self.store.transact_write(ops).await?;
        Ok((token, secret))
    }

    /// The workspace's tokens, newest first.
    pub async fn list(&self, tenant: &store::TenantId) -> Result<Vec<ApiToken>, AccountsError> {
        let mut out = Vec::new();
        let mut cursor = None;
        loop {
            let page = self
                .store
                .query(store::Query::partition(keys::api_tokens(tenant)).after(cursor))
                .await?;
            out.extend(page.items.iter().map(|(k, i)| read_record(&k.sk, i)));
            match page.next {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        out.sort_by(|a, b| b.created_at.cmp(&a.created_at));
        Ok(out)
    }

    /// Revokes a token of the actor's workspace: it stops working on the next request.
    /// Audited; a token that does not exist or was revoked already is an error.
    pub async fn revoke(&self, actor: &Actor, id: &str) -> Result<(), AccountsError> {
        if id.trim().is_empty() {
            return Err(AccountsError::Invalid(
                "name the API token to revoke by its id, as `member api-token list` shows it"
                    .into(),
            ));
        }
        let key = keys::api_token_record(&actor.tenant, id);
        let record = self.store.get(&key).await?;
        let live = record
            .as_ref()
            .filter(|r| !matches!(r.get("revoked"), Some(Value::Bool(true))));
        let Some((hash, located)) = live.and_then(|r| {
            let hash = r.get("hash").and_then(Value::as_s)?;
            Some((hash, r.get(LOCATED) == Some(&Value::Bool(true))))
        }) else {
            return Err(AccountsError::NotFound(format!(
                "no active API token {id} in {}",
                actor.tenant
            )));
        };
        let ops = vec![
            Update::new(
                key,
                vec![UpdateAction::Set("revoked".into(), Value::Bool(true))],
            )
            .when(Condition::eq("revoked", Value::Bool(false)))
            .into(),
            store::Delete::new(if located {
                keys::api_token(&actor.tenant, hash)
            } else {
                keys::legacy_api_token(hash)
            })
            .into(),
            crate::audit(
                actor,
                "api_token.revoke",
                vec![id.to_owned()],
                &self.outside,
            ),
        ];
        match self.store.transact_write(ops).await {
            Err(store::StoreError::TransactionCancelled { .. }) => Err(AccountsError::NotFound(
                format!("API token {id} was revoked meanwhile"),
            )),
            other => Ok(other?),
        }
    }

    /// Who a token acts for, if it is live: not revoked, not expired, and its member still
    /// active and still the person who made it. A token that names its workspace and member
    /// takes one round trip (its index item and the member read together, in that workspace);
    /// one made before ADR 53 takes two.
    pub async fn authenticate(&self, secret: &str) -> Result<Option<Bearer>, AccountsError> {
        if identity::token::classify(secret) != identity::token::BearerKind::ProductApi {
            return Ok(None);
        }
        let hash = identity::token::hash(secret);
        let found = match identity::token::api_locator(secret) {
            Some(at) => self.located(&at, &hash).await?,
            None => self.made_before_adr_53(&hash).await?,
        };
        let Some((item, member)) = found else {
            return Ok(None);
        };
        let s = |k: &str| item.get(k).and_then(Value::as_s).map(str::to_owned);
        let (Some(tenant), Some(token)) = (s("tenant"), s("id")) else {
            return Ok(None);
        };
        let expires = crate::int(&item, "expires");
        if expires.is_none_or(|e| e <= self.outside.now()) {
            return Ok(None);
        }
        let live = member.filter(|m| m.active && m.person == s("person"));
        Ok(live.map(|m| Bearer {
            tenant: store::TenantId::new(tenant),
            member: m.id,
            token,
            rights: m.rights,
        }))
    }

    /// The index item of a token that names its workspace and member, and the member, read
    /// together in that workspace.
    async fn located(
        &self,
        at: &identity::token::MemberLocator,
        hash: &str,
    ) -> Result<Option<(Item, Option<identity::Member>)>, AccountsError> {
        let directory = self.directory();
        let Some(member_key) = directory.member_key(&at.tenant, &at.member) else {
            return Ok(None);
        };
        let index = keys::api_token(&at.tenant, hash);
        let mut both = self
            .store
            .batch_get(&[index, member_key])
            .await?
            .into_iter();
        let (Some(Some(item)), Some(member)) = (both.next(), both.next()) else {
            return Ok(None);
        };
        // The index item is the locator's own (the hash covers the whole token); checked
        // anyway, as the MCP token's is.
        let text = |k: &str| item.get(k).and_then(Value::as_s);
        if text("tenant") != Some(at.tenant.as_str()) || text("member") != Some(at.member.as_str())
        {
            return Ok(None);
        }
        let member = directory.member_from_item(&at.member, member.as_ref());
        Ok(Some((item, member)))
    }

    /// The index item of a token made before ADR 53 (found by its hash alone), then its member.
    async fn made_before_adr_53(
        &self,
        hash: &str,
    ) -> Result<Option<(Item, Option<identity::Member>)>, AccountsError> {
        let Some(item) = self.store.get(&keys::legacy_api_token(hash)).await? else {
            return Ok(None);
        };
        let s = |k: &str| item.get(k).and_then(Value::as_s);
        let (Some(tenant), Some(member)) = (s("tenant"), s("member")) else {
            return Ok(None);
        };
        let (tenant, member) = (store::TenantId::new(tenant), store::MemberId::new(member));
        let member = self.directory().member(&tenant, &member).await?;
        Ok(Some((item, member)))
    }
}

/// Marks a token's record whose index item is in its workspace (made after ADR 53): its
/// revocation deletes that item, not the deployment's.
const LOCATED: &str = "located";

fn record_item(token: &ApiToken) -> Item {
    let mut item = Item::new();
    item.insert("member".into(), Value::s(token.member.as_str()));
    item.insert("created_at".into(), Value::s(&token.created_at));
    item.insert("valid_until".into(), Value::s(&token.expires_at));
    item.insert("revoked".into(), Value::Bool(token.revoked));
    item
}

fn read_record(id: &str, item: &Item) -> ApiToken {
    let s = |k: &str| {
        item.get(k)
            .and_then(Value::as_s)
            .unwrap_or_default()
            .to_owned()
    };
    ApiToken {
        id: id.to_owned(),
        member: store::MemberId::new(s("member")),
        created_at: s("created_at"),
        expires_at: s("valid_until"),
        revoked: matches!(item.get("revoked"), Some(Value::Bool(true))),
    }
}
