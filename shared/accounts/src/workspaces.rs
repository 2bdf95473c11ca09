//! Workspaces (tenants), the platform's (ADR 49): a validated id, a name and the IANA time zone
//! people read times in; a product keeps its own settings beside them, written in the same
//! transaction (`app::Product::new_workspace`). Created audited, listed; members are only ever
//! added to a workspace that exists.

use std::sync::Arc;

use store::{Condition, Item, Put, Store, TransactOp, Value};

use crate::{AccountsError, keys};

/// A workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workspace {
    /// The id (the first segment of every key it owns).
    pub id: String,
    /// Its name.
    pub name: String,
    /// The IANA time zone its people read times in.
    pub zone: String,
}

/// The workspace must exist.
pub async fn require(store: &dyn Store, tenant: &store::TenantId) -> Result<(), AccountsError> {
    if store.get(&keys::workspace(tenant)).await?.is_some() {
        return Ok(());
    }
    Err(AccountsError::NotFound(format!(
        "there is no workspace {:?}; create it first with `gatehouse tenant create`",
        tenant.as_str()
    )))
}

/// The workspace `tenant`, when it exists.
pub async fn get(
    store: &dyn Store,
    tenant: &store::TenantId,
) -> Result<Option<Workspace>, AccountsError> {
    let Some(item) = store.get(&keys::workspace(tenant)).await? else {
        return Ok(None);
    };
    let text = |k: &str| {
        item.get(k)
            .and_then(Value::as_s)
            .unwrap_or_default()
            .to_owned()
    };
    Ok(Some(Workspace {
        id: tenant.to_string(),
        name: text("name"),
        zone: text("zone"),
    }))
}

/// The zone `tenant`'s people read times in (UTC when it has none, or cannot be read).
pub async fn zone(store: &dyn Store, tenant: &store::TenantId) -> String {
    match get(store, tenant).await {
        Ok(Some(w)) if !w.zone.is_empty() => w.zone,
        _ => "UTC".to_owned(),
    }
}

/// Creates a workspace with the product's settings (`product_ops`, planned by the product),
/// audited in the same transaction. `actor` names who does it. Refused in a store that holds
/// the demo.
pub async fn create(
    store: &Arc<dyn Store>,
    outside: &outside::ClockAndRandomness,
    actor: &identity::Actor,
    workspace: &Workspace,
    product_ops: Vec<TransactOp>,
) -> Result<(), AccountsError> {
    crate::demo::refuse_beside_demo(store.as_ref(), "a workspace").await?;
    create_in_demo(store, outside, actor, workspace, product_ops).await
}

/// [`create`] for the demo's seed, which makes its workspaces in the store it marked as the
/// demo's.
pub async fn create_in_demo(
    store: &Arc<dyn Store>,
    outside: &outside::ClockAndRandomness,
    actor: &identity::Actor,
    workspace: &Workspace,
    product_ops: Vec<TransactOp>,
) -> Result<(), AccountsError> {
    let (item, listed) = checked(workspace)?;
    // The id is checked: from here on it is a tenant's.
    let tenant = store::TenantId::new(workspace.id.as_str());
    let mut ops: Vec<TransactOp> = vec![
        Put::new(keys::workspace(&tenant), item)
            .when(Condition::item_not_exists())
            .into(),
        Put::new(keys::listed_workspace(&tenant), listed)
            .when(Condition::item_not_exists())
            .into(),
    ];
    ops.extend(product_ops);
    ops.push(crate::audit(
        actor,
        "workspace.create",
        vec![workspace.id.clone()],
        outside,
    ));
    match store.transact_write(ops).await {
        Err(store::StoreError::TransactionCancelled { .. }) => Err(AccountsError::Invalid(
            format!("the workspace {} exists already", workspace.id),
        )),
        other => Ok(other?),
    }
}

/// The workspace's items, once its id, name and zone are checked.
fn checked(workspace: &Workspace) -> Result<(Item, Item), AccountsError> {
    store::tenant_id::check(&workspace.id).map_err(AccountsError::Invalid)?;
    let name = workspace.name.trim();
    let plain = |c: char| !c.is_control() && !outside::untrusted::hides_or_reorders(c);
    if name.is_empty() || name.chars().count() > 100 || !name.chars().all(plain) {
        return Err(AccountsError::Invalid(
            "the name must be one line of 1 to 100 characters, without hidden characters".into(),
        ));
    }
    if workspace.zone.parse::<chrono_tz::Tz>().is_err() {
        return Err(AccountsError::Invalid(format!(
            "{:?} is not an IANA time zone like Europe/Berlin",
            workspace.zone
        )));
    }
    let mut item = Item::new();
    item.insert("name".into(), Value::s(name));
    item.insert("zone".into(), Value::s(&workspace.zone));
    let mut listed = Item::new();
    listed.insert("name".into(), Value::s(name));
    Ok((item, listed))
}

/// Every workspace's id and name, by id (for operators and the command line).
pub async fn list(store: &Arc<dyn Store>) -> Result<Vec<(String, String)>, AccountsError> {
    let mut out = Vec::new();
    let mut cursor = None;
    loop {
        let page = store
            .query(store::Query::partition(keys::WORKSPACES).after(cursor))
            .await?;
        out.extend(page.items.into_iter().map(|(k, i)| {
            let name = i.get("name").and_then(Value::as_s).unwrap_or_default();
            (k.sk, name.to_owned())
        }));
        match page.next {
            Some(next) => cursor = Some(next),
            None => return Ok(out),
        }
    }
}
