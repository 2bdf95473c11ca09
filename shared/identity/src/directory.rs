//! The narrow trait through which the product tells what a member may do right now.

use std::collections::BTreeSet;
use std::sync::Arc;

use store::{Item, Key, Put, Store, StoreError, Value};

use crate::keys;

/// A member as the product sees them now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// The member's id.
    pub id: String,
    /// Whether the member may act at all.
    pub active: bool,
    /// The member's role.
    pub role: String,
    /// The rights the role grants now.
    pub rights: BTreeSet<String>,
}

/// Answers "what may this member do now?". Implemented by the product; asked on every call.
#[async_trait::async_trait]
pub trait Directory: std::fmt::Debug + Send + Sync + 'static {
    /// The member, or `None` when they are no longer a member of the tenant.
    async fn member(&self, tenant: &str, member_id: &str) -> Result<Option<Member>, StoreError>;

    /// The item holding the member, when this directory keeps members in the store that
    /// authentication reads, so that the member comes back in the same batch as the
    /// credential. `None` (the default): authentication asks [`Directory::member`].
    fn member_key(&self, _tenant: &str, _member_id: &str) -> Option<Key> {
        None
    }

    /// The member read from the item at [`Directory::member_key`] (`None` when absent).
    fn member_from_item(&self, _member_id: &str, _item: Option<&Item>) -> Option<Member> {
        None
    }
}

/// The rights each role grants, defined once by the product.
pub type RoleCatalog = fn(&str) -> &'static [&'static str];

/// A directory kept in the store: one item per member with a role and an active flag.
#[derive(Debug, Clone)]
pub struct StoreDirectory {
    store: Arc<dyn Store>,
    catalog: RoleCatalog,
}

impl StoreDirectory {
    /// A directory over `store`, with rights from `catalog`.
    pub fn new(store: Arc<dyn Store>, catalog: RoleCatalog) -> Self {
        StoreDirectory { store, catalog }
    }

    /// Adds or changes a member (used by seeding and the command line).
    pub async fn put_member(
        &self,
        tenant: &str,
        member_id: &str,
        role: &str,
        active: bool,
    ) -> Result<(), StoreError> {
        let mut item = Item::new();
        item.insert("role".into(), Value::s(role));
        item.insert("active".into(), Value::Bool(active));
        self.store
            .put(Put::new(keys::member(tenant, member_id), item))
            .await
    }
}

#[async_trait::async_trait]
impl Directory for StoreDirectory {
    async fn member(&self, tenant: &str, member_id: &str) -> Result<Option<Member>, StoreError> {
        let item = self.store.get(&keys::member(tenant, member_id)).await?;
        Ok(self.member_from_item(member_id, item.as_ref()))
    }

    fn member_key(&self, tenant: &str, member_id: &str) -> Option<Key> {
        Some(keys::member(tenant, member_id))
    }

    fn member_from_item(&self, member_id: &str, item: Option<&Item>) -> Option<Member> {
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
            id: member_id.to_owned(),
            active,
            role,
            rights,
        })
    }
}
