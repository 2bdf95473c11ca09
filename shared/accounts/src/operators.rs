//! Operators: the people who run a deployment. An operator is a global identity, not a member
//! of any tenant: they sign in on the product's pages with an email and an Argon2 password and
//! may set the global kill switch, and see no tenant's pages or data.

use identity::Actor;
use store::{Condition, Item, Put, Store, Value};

use crate::{AccountsError, keys, passwords};

/// The email as an operator's key: trimmed and lower-case, and plausibly an address.
pub fn normalize_email(email: &str) -> Result<String, AccountsError> {
    let e = email.trim().to_lowercase();
    let plausible = e.len() <= 254
        && !e.chars().any(char::is_whitespace)
        && e.split_once('@')
            .is_some_and(|(local, domain)| !local.is_empty() && domain.contains('.'));
    if plausible {
        Ok(e)
    } else {
        Err(AccountsError::Invalid(format!(
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
) -> Result<String, AccountsError> {
    let email = normalize_email(email)?;
    let mut item = Item::new();
    item.insert("email".into(), Value::s(&email));
    item.insert("password_hash".into(), Value::s(passwords::hash(password)?));
    item.insert("active".into(), Value::Bool(true));
    item.insert("created_at".into(), Value::s(identity::now_rfc3339()));
    let audit = crate::audit(
        &Actor {
            tenant: "system".into(),
            ..actor.clone()
        },
        "operator.create",
        vec![email.clone()],
    );
    let put = Put::new(keys::operator(&email), item).when(Condition::item_not_exists());
    match store.transact_write(vec![put.into(), audit]).await {
        Ok(()) => Ok(email),
        Err(store::StoreError::TransactionCancelled { .. }) => Err(AccountsError::Invalid(
            format!("{email} is an operator already"),
        )),
        Err(e) => Err(e.into()),
    }
}

/// Whether the deployment has any operator.
pub async fn any(store: &dyn Store) -> Result<bool, AccountsError> {
    let query = store::Query::partition(keys::operator("-").pk).limit(1);
    Ok(!store.query(query).await?.items.is_empty())
}

/// Checks an operator's password; `true` only for an active operator with that password.
pub async fn check_password(
    store: &dyn Store,
    email: &str,
    password: &str,
) -> Result<bool, AccountsError> {
    let item = match normalize_email(email) {
        Ok(e) => store.get(&keys::operator(&e)).await?,
        Err(_) => None,
    };
    let Some(item) = item else {
        let _ = passwords::verify(password, passwords::DUMMY_HASH);
        return Ok(false);
    };
    let active = matches!(item.get("active"), Some(Value::Bool(true)));
    let hash = item
        .get("password_hash")
        .and_then(Value::as_s)
        .unwrap_or_default();
    Ok(passwords::verify(password, hash) && active)
}
