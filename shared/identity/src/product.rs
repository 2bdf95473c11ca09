//! The product's own credentials: member passwords, sign-in sessions and product API tokens.
//! None of them is accepted at the MCP endpoint, and MCP tokens are accepted by none of the
//! product's routes.

use std::sync::Arc;

use argon2::Argon2;
use argon2::password_hash::{PasswordHash, PasswordHasher as _, PasswordVerifier as _, SaltString};
use store::{Condition, Item, Key, Put, Store, Update, UpdateAction, Value};

use crate::{IdentityError, keys, token};

/// How long a sign-in lasts.
pub const SESSION_SECONDS: i64 = 8 * 3600;

/// Hashes a password with Argon2id and a random salt.
pub fn hash_password(password: &str) -> Result<String, IdentityError> {
    let mut bytes = [0u8; 16];
    outside::Randomness::fill(&outside::SystemRandomness, &mut bytes);
    let salt = SaltString::encode_b64(&bytes)
        .map_err(|e| IdentityError::Invalid(format!("cannot make a salt: {e}")))?;
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| IdentityError::Invalid(format!("cannot hash the password: {e}")))
}

/// Whether `password` matches the stored hash.
pub fn verify_password(password: &str, hash: &str) -> bool {
    PasswordHash::new(hash).is_ok_and(|parsed| {
        Argon2::default()
            .verify_password(password.as_bytes(), &parsed)
            .is_ok()
    })
}

/// Sets a member's sign-in password.
pub async fn set_password(
    store: &dyn Store,
    tenant: &str,
    member: &str,
    password: &str,
) -> Result<(), IdentityError> {
    if password.chars().count() < 8 {
        return Err(IdentityError::Invalid(
            "passwords have at least 8 characters".into(),
        ));
    }
    let hash = hash_password(password)?;
    store
        .update(
            Update::new(
                keys::member(tenant, member),
                vec![UpdateAction::Set("password_hash".into(), Value::s(hash))],
            )
            .when(Condition::item_exists()),
        )
        .await
        .map_err(|e| match e {
            store::StoreError::ConditionFailed { .. } => {
                IdentityError::NotFound(format!("{member} is not a member of {tenant}"))
            }
            other => other.into(),
        })?;
    Ok(())
}

/// Checks a member's password; `true` only for an active member with that password.
pub async fn check_password(
    store: &dyn Store,
    tenant: &str,
    member: &str,
    password: &str,
) -> Result<bool, IdentityError> {
    let Some(item) = store.get(&keys::member(tenant, member)).await? else {
        // Spend the same time as a real check, so that timing does not tell members apart.
        let _ = verify_password(
            password,
            "$argon2id$v=19$m=19456,t=2,p=1$c29tZXNhbHQ$RdescudvJCsgt3ub+b+dWRWJTmaaJObG",
        );
        return Ok(false);
    };
    let active = matches!(item.get("active"), Some(Value::Bool(true)));
    let hash = item
        .get("password_hash")
        .and_then(Value::as_s)
        .unwrap_or_default();
    Ok(verify_password(password, hash) && active)
}

/// A signed-in member, or an operator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    /// The tenant (empty for an operator, who belongs to none).
    pub tenant: String,
    /// The member (an operator's email).
    pub member: String,
    /// Whether this is an operator's session ([`crate::operator`]): it opens only the
    /// operator's pages, and a member's session never opens those.
    pub operator: bool,
    /// The token every form of this session must carry.
    pub csrf: String,
}

fn session_key(id: &str) -> Key {
    Key::new(format!("session#{}", token::hash(id)), "session")
}

/// Starts a member's session; returns its id (for the cookie) and the session.
pub async fn start_session(
    store: &dyn Store,
    tenant: &str,
    member: &str,
) -> Result<(String, Session), IdentityError> {
    start_session_with_role(store, tenant, member, "member").await
}

pub(crate) async fn start_session_with_role(
    store: &dyn Store,
    tenant: &str,
    member: &str,
    role: &str,
) -> Result<(String, Session), IdentityError> {
    let id = crate::random_id(43);
    let csrf = crate::random_id(32);
    let mut item = Item::new();
    item.insert("tenant".into(), Value::s(tenant));
    item.insert("member".into(), Value::s(member));
    item.insert("csrf".into(), Value::s(&csrf));
    item.insert("role".into(), Value::s(role));
    item.insert(
        store::TTL_ATTRIBUTE.into(),
        Value::n(outside::Clock::now(&outside::SystemClock) + SESSION_SECONDS),
    );
    store
        .put(Put::new(session_key(&id), item).when(Condition::item_not_exists()))
        .await?;
    Ok((
        id,
        Session {
            tenant: tenant.into(),
            member: member.into(),
            operator: role == crate::operator::ROLE,
            csrf,
        },
    ))
}

/// The live session of a cookie value.
pub async fn session(store: &dyn Store, id: &str) -> Result<Option<Session>, IdentityError> {
    let Some(item) = store.get(&session_key(id)).await? else {
        return Ok(None);
    };
    let s = |k: &str| {
        item.get(k)
            .and_then(Value::as_s)
            .unwrap_or_default()
            .to_owned()
    };
    Ok(Some(Session {
        tenant: s("tenant"),
        member: s("member"),
        operator: s("role") == crate::operator::ROLE,
        csrf: s("csrf"),
    }))
}

/// Ends a session.
pub async fn end_session(store: &dyn Store, id: &str) -> Result<(), IdentityError> {
    store.delete(store::Delete::new(session_key(id))).await?;
    Ok(())
}

fn api_token_key(hash: &str) -> Key {
    Key::new(format!("apitoken#{hash}"), "token")
}

/// Creates a product API token for a member (shown once, stored as its hash).
pub async fn create_api_token(
    store: &Arc<dyn Store>,
    tenant: &str,
    member: &str,
) -> Result<String, IdentityError> {
    let secret = format!("{}{}", token::API_TOKEN_PREFIX, crate::random_id(43));
    let mut item = Item::new();
    item.insert("tenant".into(), Value::s(tenant));
    item.insert("member".into(), Value::s(member));
    store
        .put(
            Put::new(api_token_key(&token::hash(&secret)), item).when(Condition::item_not_exists()),
        )
        .await?;
    Ok(secret)
}

/// The tenant and member of a product API token.
pub async fn api_token(
    store: &dyn Store,
    secret: &str,
) -> Result<Option<(String, String)>, IdentityError> {
    if token::classify(secret) != token::BearerKind::ProductApi {
        return Ok(None);
    }
    let Some(item) = store.get(&api_token_key(&token::hash(secret))).await? else {
        return Ok(None);
    };
    let s = |k: &str| {
        item.get(k)
            .and_then(Value::as_s)
            .unwrap_or_default()
            .to_owned()
    };
    Ok(Some((s("tenant"), s("member"))))
}
