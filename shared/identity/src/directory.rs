//! The narrow trait through which the product tells what a member may do right now.

use std::collections::BTreeSet;
use std::sync::Arc;

use store::{
    Condition, Item, Key, MemberId, Put, Store, StoreError, TenantId, TransactOp, Update,
    UpdateAction, Value,
};

use crate::keys;

/// A member as the product sees them now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// The member's id.
    pub id: MemberId,
    /// Whether the member may act at all.
    pub active: bool,
    /// The member's role.
    pub role: String,
    /// The rights the role grants now.
    pub rights: BTreeSet<String>,
    /// Which person holds this member id: drawn when the member is added, so that a member
    /// removed and added again under the same id is a new person, and the credentials the
    /// first one made never work for the second (`None`: added before persons were recorded).
    pub person: Option<String>,
}

/// Answers "what may this member do now?". Implemented by the product; asked on every call.
#[async_trait::async_trait]
pub trait Directory: std::fmt::Debug + Send + Sync + 'static {
    /// The member, or `None` when they are no longer a member of the tenant.
    async fn member(
        &self,
        tenant: &TenantId,
        member_id: &MemberId,
    ) -> Result<Option<Member>, StoreError>;

    /// The item holding the member, when this directory keeps members in the store that
    /// authentication reads, so that the member comes back in the same batch as the
    /// credential. `None` (the default): authentication asks [`Directory::member`].
    fn member_key(&self, _tenant: &TenantId, _member_id: &MemberId) -> Option<Key> {
        None
    }

    /// The member read from the item at [`Directory::member_key`] (`None` when absent).
    fn member_from_item(&self, _member_id: &MemberId, _item: Option<&Item>) -> Option<Member> {
        None
    }
}

/// The member item's attribute naming the person who holds the id.
const PERSON: &str = "person";

/// The write that adds a member (with a new person, its id drawn from `randomness`) or
/// changes an existing one's role and active flag, keeping its person and password; it fails if the item changed since
/// `existing` was read. Put it in the transaction that audits the change.
pub fn member_write(
    tenant: &TenantId,
    member_id: &MemberId,
    role: &str,
    active: bool,
    existing: Option<&Item>,
    randomness: &dyn outside::Randomness,
) -> TransactOp {
    let key = keys::member(tenant, member_id);
    let Some(existing) = existing else {
        let mut item = Item::new();
        item.insert("role".into(), Value::s(role));
        item.insert("active".into(), Value::Bool(active));
        item.insert(
            PERSON.into(),
            Value::s(format!("per_{}", outside::random_text(randomness, 20))),
        );
        return Put::new(key, item)
            .when(Condition::item_not_exists())
            .into();
    };
    Update::new(
        key,
        vec![
            UpdateAction::Set("role".into(), Value::s(role)),
            UpdateAction::Set("active".into(), Value::Bool(active)),
        ],
    )
    .when(same_person(existing))
    .into()
}

/// The item still holds the person it held when `existing` was read.
fn same_person(existing: &Item) -> Condition {
    match existing.get(PERSON) {
        Some(p) => Condition::eq(PERSON, p.clone()),
        None => Condition::item_exists().and(Condition::NotExists(PERSON.into())),
    }
}

/// The write that removes a member, only while it is the person read as `existing`.
pub fn member_removal(tenant: &TenantId, member_id: &MemberId, existing: &Item) -> TransactOp {
    store::Delete::new(keys::member(tenant, member_id))
        .when(same_person(existing))
        .into()
}

/// The rights each role grants, defined once by the product.
pub type RoleCatalog = fn(&str) -> &'static [&'static str];

/// A directory kept in the store: one item per member with a role and an active flag.
#[derive(Debug, Clone)]
pub struct StoreDirectory {
    store: Arc<dyn Store>,
    catalog: RoleCatalog,
    /// Draws a new member's person id.
    randomness: Arc<dyn outside::Randomness>,
}

impl StoreDirectory {
    /// A directory over `store`, with rights from `catalog`, drawing new members' person ids
    /// from `randomness`.
    pub fn new(
        store: Arc<dyn Store>,
        catalog: RoleCatalog,
        randomness: Arc<dyn outside::Randomness>,
    ) -> Self {
        StoreDirectory {
            store,
            catalog,
            randomness,
        }
    }

    /// Adds or changes a member, unaudited (seeding and tests; people administer members
    /// through the audited service of the accounts crate, which writes [`member_write`]).
    pub async fn put_member(
        &self,
        tenant: &TenantId,
        member_id: &MemberId,
        role: &str,
        active: bool,
    ) -> Result<(), StoreError> {
        let existing = self.store.get(&keys::member(tenant, member_id)).await?;
        let randomness = self.randomness.as_ref();
        let write = member_write(
            tenant,
            member_id,
            role,
            active,
            existing.as_ref(),
            randomness,
        );
        self.store.transact_write(vec![write]).await
    }
}

#[async_trait::async_trait]
impl Directory for StoreDirectory {
    async fn member(
        &self,
        tenant: &TenantId,
        member_id: &MemberId,
    ) -> Result<Option<Member>, StoreError> {
        let item = self.store.get(&keys::member(tenant, member_id)).await?;
        Ok(self.member_from_item(member_id, item.as_ref()))
    }

    fn member_key(&self, tenant: &TenantId, member_id: &MemberId) -> Option<Key> {
        Some(keys::member(tenant, member_id))
    }

    fn member_from_item(&self, member_id: &MemberId, item: Option<&Item>) -> Option<Member> {
        let item = item?;
        let role = item
            .get("role")
            .and_then(Value::as_s)
            .unwrap_or_default()
            .to_owned();
        let active = matches!(item.get("active"), Some(Value::Bool(true)));
        let rights = (self.catalog)(&role)
            .iter()
            .map(|r| (*r).to_owned())
            .collect();
        Some(Member {
            id: member_id.clone(),
            active,
            role,
            rights,
            person: item.get(PERSON).and_then(Value::as_s).map(str::to_owned),
        })
    }
}
