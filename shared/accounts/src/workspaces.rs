//! Workspaces (tenants): created with a validated id, zone, currency and tax rate, audited,
//! and listed; members are only ever added to a workspace that exists.

use std::sync::Arc;

use store::Store;

use crate::AccountsError;

/// The workspace must exist.
pub async fn require(store: &dyn Store, tenant: &str) -> Result<(), AccountsError> {
    let key = booking::keys::tenant(tenant);
    if store.get(&key).await?.is_some() {
        return Ok(());
    }
    Err(AccountsError::NotFound(format!(
        "there is no workspace {tenant:?}; create it first with `gatehouse tenant create`"
    )))
}

/// Creates a workspace with its settings, audited in the same transaction. `actor` names who
/// does it; its tenant is the new workspace's id. Refused in a store that holds the demo.
pub async fn create(
    store: &Arc<dyn Store>,
    actor: &identity::Actor,
    tenant: &booking::Tenant,
) -> Result<(), AccountsError> {
    crate::demo::refuse_beside_demo(store.as_ref(), "a workspace").await?;
    create_in_demo(store, actor, tenant).await
}

/// [`create`] for the demo's seed, which makes its workspaces in the store it marked as the
/// demo's.
pub async fn create_in_demo(
    store: &Arc<dyn Store>,
    actor: &identity::Actor,
    tenant: &booking::Tenant,
) -> Result<(), AccountsError> {
    let creator = booking::Actor {
        tenant: tenant.id.clone(),
        member: actor.member.clone(),
        rights: [booking::rights::AGENT_ACCESS_MANAGE.to_owned()].into(),
    };
    let change = booking::Tenants::new(Arc::clone(store)).create(&creator, tenant)?;
    let audit = crate::audit(actor, "workspace.create", vec![tenant.id.clone()]);
    change.commit(store.as_ref(), vec![audit]).await?;
    Ok(())
}

/// Every workspace's id and name.
pub async fn list(store: &Arc<dyn Store>) -> Result<Vec<(String, String)>, AccountsError> {
    booking::Tenants::new(Arc::clone(store))
        .list()
        .await
        .map_err(AccountsError::from)
}
