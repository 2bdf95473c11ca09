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

/// Creates an operator; refuses an email that is an operator already, and any operator in a
/// store that holds the demo. `actor` is who does it (audited in the global trail, in the
/// same transaction).
pub async fn create(
    store: &dyn Store,
    outside: &outside::ClockAndRandomness,
    actor: &Actor,
    email: &str,
    password: &str,
) -> Result<String, AccountsError> {
    crate::demo::refuse_beside_demo(store, "an operator").await?;
    create_in_demo(store, outside, actor, email, password).await
}

/// [`create`] for the demo's seed, which makes its operator in the store it marked as the
/// demo's.
pub async fn create_in_demo(
    store: &dyn Store,
    outside: &outside::ClockAndRandomness,
    actor: &Actor,
    email: &str,
    password: &str,
) -> Result<String, AccountsError> {
    let email = normalize_email(email)?;
    let mut item = Item::new();
    item.insert("email".into(), Value::s(&email));
    item.insert(
        "password_hash".into(),
        Value::s(passwords::hash(password, outside)?),
    );
    item.insert("active".into(), Value::Bool(true));
    item.insert(
        "created_at".into(),
        Value::s(identity::rfc3339_now(outside.clock.as_ref())),
    );
    let audit = crate::audit(
        &in_global_trail(actor),
        "operator.create",
        vec![email.clone()],
        outside,
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

/// The global trail's actor for a change made by `actor`.
fn in_global_trail(actor: &Actor) -> Actor {
    Actor {
        tenant: identity::system(),
        ..actor.clone()
    }
}

fn not_an_operator(email: &str) -> AccountsError {
    AccountsError::NotFound(format!("{email} is not an operator"))
}

/// Removes an operator, audited in the global trail: their sessions end at their next
/// request (a session lives only while its operator does). An email that is no operator is
/// an error.
pub async fn remove(
    store: &dyn Store,
    outside: &outside::ClockAndRandomness,
    actor: &Actor,
    email: &str,
) -> Result<(), AccountsError> {
    let email = normalize_email(email)?;
    let delete = store::Delete::new(keys::operator(&email)).when(Condition::item_exists());
    let audit = crate::audit(
        &in_global_trail(actor),
        "operator.remove",
        vec![email.clone()],
        outside,
    );
    match store.transact_write(vec![delete.into(), audit]).await {
        Err(store::StoreError::TransactionCancelled { .. }) => Err(not_an_operator(&email)),
        other => Ok(other?),
    }
}

/// Sets an operator's password, audited in the global trail: their sessions started with the
/// old one end, and their sign-in counts are cleared.
pub async fn set_password(
    store: &dyn Store,
    outside: &outside::ClockAndRandomness,
    actor: &Actor,
    email: &str,
    password: &str,
) -> Result<(), AccountsError> {
    let email = normalize_email(email)?;
    let change = store::Update::new(
        keys::operator(&email),
        vec![store::UpdateAction::Set(
            "password_hash".into(),
            Value::s(passwords::hash(password, outside)?),
        )],
    )
    .when(Condition::item_exists());
    let audit = crate::audit(
        &in_global_trail(actor),
        "operator.password",
        vec![email.clone()],
        outside,
    );
    match store.transact_write(vec![change.into(), audit]).await {
        Err(store::StoreError::TransactionCancelled { .. }) => {
            return Err(not_an_operator(&email));
        }
        other => other?,
    }
    crate::sign_in::clear_operator(store, &email).await
}

/// The tag of an active operator's password hash when `password` is theirs (`None`
/// otherwise, after the same work). The check runs away from the request threads.
pub async fn check_password(
    store: &dyn Store,
    email: &str,
    password: &str,
) -> Result<Option<String>, AccountsError> {
    let item = match normalize_email(email) {
        Ok(e) => store.get(&keys::operator(&e)).await?,
        Err(_) => None,
    };
    let Some(item) = item else {
        let _ = passwords::verify_aside(password, passwords::DUMMY_HASH).await;
        return Ok(None);
    };
    let active = matches!(item.get("active"), Some(Value::Bool(true)));
    let hash = item
        .get("password_hash")
        .and_then(Value::as_s)
        .unwrap_or_default();
    let matches = passwords::verify_aside(password, hash).await;
    Ok((matches && active).then(|| passwords::credential_tag(hash)))
}

/// Signs an operator in from `address`, as [`crate::Members::sign_in`] does a member.
pub async fn sign_in(
    store: &dyn Store,
    outside: &outside::ClockAndRandomness,
    throttle: &crate::Throttle,
    email: &str,
    password: &str,
    address: Option<&str>,
) -> Result<Option<(String, crate::Session)>, AccountsError> {
    let attempt = crate::Attempt::operator(email, address);
    throttle.begin(&attempt).await?;
    let Some(tag) = check_password(store, email, password).await? else {
        return Ok(None);
    };
    if let Err(e) = throttle.succeeded(&attempt).await {
        tracing::warn!(error = %e, "could not clear an operator's sign-in count");
    }
    let email = normalize_email(email)?;
    Ok(Some(
        crate::sessions::start_operator(store, outside, &email, &tag).await?,
    ))
}

/// Turns the global kill switch on or off as the operator `email` (ADR 48: only an existing,
/// active operator flips it, whatever the door: their page or `gatehouse kill-switch`).
pub async fn set_kill_switch(
    store: &dyn Store,
    switches: &identity::SwitchService,
    email: &str,
    channel: identity::Channel,
    on: bool,
    reason: &str,
) -> Result<(), AccountsError> {
    let email = normalize_email(email)?;
    let active = store
        .get(&keys::operator(&email))
        .await?
        .is_some_and(|item| matches!(item.get("active"), Some(Value::Bool(true))));
    if !active {
        return Err(AccountsError::Forbidden(format!(
            "{email} is not an active operator: only operators flip the global kill switch              (gatehouse operator create makes one)"
        )));
    }
    let actor = Actor {
        tenant: identity::system(),
        member: store::MemberId::new(email),
        channel,
    };
    Ok(switches.set_global(&actor, on, reason).await?)
}
