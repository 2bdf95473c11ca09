//! Sign-in sessions of members and operators, kept in the store by the hash of the cookie.
//! A session lives while its account does as it was at sign-in: a member's while the member is
//! active, the same person, with the same password; an operator's while the operator exists,
//! is active, with the same password (ADR 48). So a password change or reset, a removal or a
//! deactivation ends every session at the next request.

use store::{Condition, Item, Key, Put, Store, Value};

use crate::{AccountsError, keys};

/// How long a sign-in lasts.
pub const SESSION_SECONDS: i64 = 8 * 3600;

/// The role a session carries for an operator.
pub const OPERATOR_ROLE: &str = "operator";

/// A signed-in member, or an operator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    /// The tenant (empty for an operator, who belongs to none).
    pub tenant: store::TenantId,
    /// The member (an operator's email).
    pub member: store::MemberId,
    /// The person who held the member id at sign-in: the session ends when the member is
    /// removed, even if the id is added again (`None` for operators and older members).
    pub person: Option<String>,
    /// Whether this is an operator's session: it opens only the operator's pages, and a
    /// member's session never opens those.
    pub operator: bool,
    /// The token every form of this session must carry.
    pub csrf: String,
    /// A digest of the password hash the session was started with
    /// ([`crate::passwords::credential_tag`]).
    pub credential: String,
}

/// Starts a session for a member who just signed in with the password whose hash's tag is
/// `credential`; returns its id (for the cookie).
pub async fn start_member(
    store: &dyn Store,
    outside: &outside::ClockAndRandomness,
    tenant: &store::TenantId,
    member: &identity::Member,
    credential: &str,
) -> Result<(String, Session), AccountsError> {
    let session = Session {
        tenant: tenant.clone(),
        member: member.id.clone(),
        person: member.person.clone(),
        operator: false,
        csrf: outside.random_text(32),
        credential: credential.to_owned(),
    };
    start(store, outside, session).await
}

/// Starts an operator's session (the role travels in the session, with no tenant); `email`
/// is the operator's key, normalized.
pub async fn start_operator(
    store: &dyn Store,
    outside: &outside::ClockAndRandomness,
    email: &str,
    credential: &str,
) -> Result<(String, Session), AccountsError> {
    let session = Session {
        tenant: store::TenantId::default(),
        member: store::MemberId::new(email),
        person: None,
        operator: true,
        csrf: outside.random_text(32),
        credential: credential.to_owned(),
    };
    start(store, outside, session).await
}

async fn start(
    store: &dyn Store,
    outside: &outside::ClockAndRandomness,
    session: Session,
) -> Result<(String, Session), AccountsError> {
    // A member's cookie names their workspace, so that every later request finds the session
    // (and the member) in that workspace alone; an operator belongs to none (ADR 53).
    let (id, key) = if session.operator {
        let id = outside.random_text(43);
        let key = keys::global_session(&identity::token::hash(&id));
        (id, key)
    } else {
        let locator = identity::token::MemberLocator {
            tenant: session.tenant.clone(),
            member: session.member.clone(),
        };
        let id = identity::token::generate_session(&locator, outside.randomness.as_ref());
        (id.secret, keys::session(&session.tenant, &id.hash))
    };
    let mut item = Item::new();
    item.insert("tenant".into(), Value::s(session.tenant.as_str()));
    item.insert("member".into(), Value::s(session.member.as_str()));
    item.insert("csrf".into(), Value::s(&session.csrf));
    item.insert("credential".into(), Value::s(&session.credential));
    let role = if session.operator {
        OPERATOR_ROLE
    } else {
        "member"
    };
    item.insert("role".into(), Value::s(role));
    if let Some(person) = &session.person {
        item.insert("person".into(), Value::s(person));
    }
    item.insert(
        store::TTL_ATTRIBUTE.into(),
        Value::n(outside.now() + SESSION_SECONDS),
    );
    store
        .put(Put::new(key, item).when(Condition::item_not_exists()))
        .await?;
    Ok((id, session))
}

/// Where the session of a cookie value is kept: in the workspace its locator names, or (an
/// operator's, or one made before ADR 53) in the deployment's partition.
fn key_of(id: &str) -> Key {
    let hash = identity::token::hash(id);
    match identity::token::session_locator(id) {
        Some(at) => keys::session(&at.tenant, &hash),
        None => keys::global_session(&hash),
    }
}

fn from_item(item: &Item) -> Session {
    let s = |k: &str| item.get(k).and_then(Value::as_s).map(str::to_owned);
    Session {
        tenant: store::TenantId::new(s("tenant").unwrap_or_default()),
        member: store::MemberId::new(s("member").unwrap_or_default()),
        person: s("person"),
        operator: s("role").as_deref() == Some(OPERATOR_ROLE),
        csrf: s("csrf").unwrap_or_default(),
        credential: s("credential").unwrap_or_default(),
    }
}

/// The stored session of a cookie value, whether or not its account still holds it (see
/// [`live`]).
pub async fn get(store: &dyn Store, id: &str) -> Result<Option<Session>, AccountsError> {
    Ok(store.get(&key_of(id)).await?.as_ref().map(from_item))
}

/// The session of a cookie value while its account holds it: the member active, the same
/// person, the same password; the operator existing, active, the same password. A cookie that
/// names its workspace and member is answered in one round trip (the session and the member
/// read together); the others in two.
pub async fn live(store: &dyn Store, id: &str) -> Result<Option<Session>, AccountsError> {
    let (session, account) = match identity::token::session_locator(id) {
        Some(at) => {
            let member = identity::keys::member(&at.tenant, &at.member);
            let mut both = store.batch_get(&[key_of(id), member]).await?.into_iter();
            let (Some(Some(found)), Some(account)) = (both.next(), both.next()) else {
                return Ok(None);
            };
            let session = from_item(&found);
            // The hash covers the whole cookie, so the locator is the session's own; checked
            // anyway, as the MCP token's is.
            if session.operator || session.tenant != at.tenant || session.member != at.member {
                return Ok(None);
            }
            (session, account)
        }
        None => {
            let Some(session) = get(store, id).await? else {
                return Ok(None);
            };
            let account = if session.operator {
                keys::operator(session.member.as_str())
            } else {
                identity::keys::member(&session.tenant, &session.member)
            };
            let account = store.get(&account).await?;
            (session, account)
        }
    };
    let Some(item) = account else {
        return Ok(None);
    };
    let text = |k: &str| item.get(k).and_then(Value::as_s);
    let active = item.get("active") != Some(&Value::Bool(false));
    let same_person = session.operator || text("person") == session.person.as_deref();
    let same_password = text("password_hash")
        .is_some_and(|hash| crate::passwords::credential_tag(hash) == session.credential);
    Ok((active && same_person && same_password).then_some(session))
}

/// Ends a session.
pub async fn end(store: &dyn Store, id: &str) -> Result<(), AccountsError> {
    store.delete(store::Delete::new(key_of(id))).await?;
    Ok(())
}
