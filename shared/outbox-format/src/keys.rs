//! The outbox's keys: a tenant's messages in its own partition (`<tenant>#outbox`), and the due
//! index, which belongs to no tenant (`outbox`, a word no tenant id may take).

use store::{Key, TenantId};

/// The kind of the tenant partition this crate owns.
pub const TENANT_KINDS: &[&str] = &["outbox"];

/// The due index: every message not yet sent, of every tenant, by when it is due.
pub const OUTBOX_DUE: &str = "outbox";

/// The first segments of this crate's partitions that belong to no tenant.
pub const GLOBAL: &[&str] = &[OUTBOX_DUE];

/// A message of `tenant`.
pub fn outbox(tenant: &TenantId, id: &str) -> Key {
    Key::new(outbox_partition(tenant), id)
}

/// The partition of a tenant's outbox (what the dispatcher reads).
pub fn outbox_partition(tenant: &TenantId) -> String {
    format!("{tenant}#outbox")
}

/// A message's entry in the due index.
pub fn outbox_due(tenant: &TenantId, id: &str) -> Key {
    Key::new(OUTBOX_DUE, format!("{tenant}#{id}"))
}

/// The tenant of an outbox partition (`None`: `pk` is no outbox partition).
pub fn outbox_tenant(pk: &str) -> Option<TenantId> {
    pk.strip_suffix("#outbox").map(TenantId::new)
}
