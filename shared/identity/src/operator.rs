//! Operators: the people who run a deployment. An operator is a global identity, not a member
//! of any tenant: they sign in on the product's pages with an email and an Argon2 password and
//! may set the global kill switch, and see no tenant's pages or data.

use store::{Condition, Item, Put, Store, Value};

use crate::product::{Session, hash_password, verify_password};
use crate::{Actor, AuditEntry, IdentityError, keys};

/// The role a session carries for an operator.
pub const ROLE: &str = "operator";

/// The email as an operator's key: trimmed and lower-case, and plausibly an address.
pub fn normalize_email(email: &str) -> Result<String, IdentityError> {
    let e = email.trim().to_lowercase();
    let plausible = e.len() <= 254
        && !e.chars().any(char::is_whitespace)
        && e.split_once('@')
            .is_some_and(|(local, domain)| !local.is_empty() && domain.contains('.'));
    if plausible {
        Ok(e)
    } else {
        Err(IdentityError::Invalid(format!(
            "{email:?} is not an email address like ops@example.com"
        )))
    }
}

/// Creates an operator; refuses an email that is an operator already. `actor` is who does it
/// (audited in the global trail, in the same transaction).
pub async fn create(
    store: &dyn Store,
    actor: &Actor,
    email: &str,
    password: &str,
) -> Result<String, IdentityError> {
    let email = normalize_email(email)?;
    if password.chars().count() < 8 {
        return Err(IdentityError::Invalid(
            "passwords have at least 8 characters".into(),
        ));
    }
    let at = crate::now_rfc3339();
    let mut item = Item::new();
    item.insert("email".into(), Value::s(&email));
    item.insert("password_hash".into(), Value::s(hash_password(password)?));
    item.insert("active".into(), Value::Bool(true));
    item.insert("created_at".into(), Value::s(&at));
    let audit = AuditEntry {
        tenant: "system".into(),
        actor: actor.member.clone(),
        channel: actor.channel.clone(),
        action: "operator.create".into(),
        outcome: "ok".into(),
        approval: None,
        ids: vec![email.clone()],
        at,
    };
    let put = Put::new(keys::operator(&email), item).when(Condition::item_not_exists());
    match store.transact_write(vec![put.into(), audit.op()]).await {
        Ok(()) => Ok(email),
        Err(store::StoreError::TransactionCancelled { .. }) => Err(IdentityError::Invalid(
            format!("{email} is an operator already"),
        )),
        Err(e) => Err(e.into()),
    }
}

/// Checks an operator's password; `true` only for an active operator with that password.
pub async fn check_password(
    store: &dyn Store,
    email: &str,
    password: &str,
) -> Result<bool, IdentityError> {
    let item = match normalize_email(email) {
        Ok(e) => store.get(&keys::operator(&e)).await?,
        Err(_) => None,
    };
    let Some(item) = item else {
        // Spend the same time as a real check, so that timing does not tell operators apart.
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

/// Starts an operator's session (the role travels in the session, with no tenant).
pub async fn start_session(
    store: &dyn Store,
    email: &str,
) -> Result<(String, Session), IdentityError> {
    let email = normalize_email(email)?;
    crate::product::start_session_with_role(store, "", &email, ROLE).await
}
