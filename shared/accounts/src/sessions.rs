//! Sign-in sessions of members and operators, kept in the store by the hash of the cookie.

use store::{Condition, Item, Put, Store, Value};

use crate::{AccountsError, keys};

/// How long a sign-in lasts.
pub const SESSION_SECONDS: i64 = 8 * 3600;

/// The role a session carries for an operator.
pub const OPERATOR_ROLE: &str = "operator";

/// A signed-in member, or an operator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    /// The tenant (empty for an operator, who belongs to none).
    pub tenant: String,
    /// The member (an operator's email).
    pub member: String,
    /// The person who held the member id at sign-in: the session ends when the member is
    /// removed, even if the id is added again (`None` for operators and older members).
    pub person: Option<String>,
    /// Whether this is an operator's session: it opens only the operator's pages, and a
    /// member's session never opens those.
    pub operator: bool,
    /// The token every form of this session must carry.
    pub csrf: String,
}

/// Starts a session for a member who just signed in; returns its id (for the cookie).
pub async fn start_member(
    store: &dyn Store,
    tenant: &str,
    member: &identity::Member,
) -> Result<(String, Session), AccountsError> {
    let session = Session {
        tenant: tenant.into(),
        member: member.id.clone(),
        person: member.person.clone(),
        operator: false,
        csrf: crate::random_id(32),
    };
    start(store, session).await
}

/// Starts an operator's session (the role travels in the session, with no tenant).
pub async fn start_operator(
    store: &dyn Store,
    email: &str,
) -> Result<(String, Session), AccountsError> {
    let session = Session {
        tenant: String::new(),
        member: crate::operators::normalize_email(email)?,
        person: None,
        operator: true,
        csrf: crate::random_id(32),
    };
    start(store, session).await
}

async fn start(store: &dyn Store, session: Session) -> Result<(String, Session), AccountsError> {
    let id = crate::random_id(43);
    let mut item = Item::new();
    item.insert("tenant".into(), Value::s(&session.tenant));
    item.insert("member".into(), Value::s(&session.member));
    item.insert("csrf".into(), Value::s(&session.csrf));
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
        Value::n(outside::Clock::now(&outside::SystemClock) + SESSION_SECONDS),
    );
    let key = keys::session(&identity::token::hash(&id));
    store
        .put(Put::new(key, item).when(Condition::item_not_exists()))
        .await?;
    Ok((id, session))
}

/// The live session of a cookie value.
pub async fn get(store: &dyn Store, id: &str) -> Result<Option<Session>, AccountsError> {
    let key = keys::session(&identity::token::hash(id));
    let Some(item) = store.get(&key).await? else {
        return Ok(None);
    };
    let s = |k: &str| item.get(k).and_then(Value::as_s).map(str::to_owned);
    Ok(Some(Session {
        tenant: s("tenant").unwrap_or_default(),
        member: s("member").unwrap_or_default(),
        person: s("person"),
        operator: s("role").as_deref() == Some(OPERATOR_ROLE),
        csrf: s("csrf").unwrap_or_default(),
    }))
}

/// Ends a session.
pub async fn end(store: &dyn Store, id: &str) -> Result<(), AccountsError> {
    let key = keys::session(&identity::token::hash(id));
    store.delete(store::Delete::new(key)).await?;
    Ok(())
}
