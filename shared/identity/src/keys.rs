//! Every key this crate reads or writes, in one place.
//!
//! Tenant-owned items put the tenant first, the MCP token index included (a token's locator
//! names its tenant, ADR 51). Some kinds are not tenant-owned: the index of tokens made before
//! that (found by the hash alone), the global switch and its audit trail.

use store::{ConnectionId, Key, MemberId, TenantId, concat};

/// The second segment of this crate's tenant partitions (`<tenant>#<kind>`).
pub const TENANT_KINDS: &[&str] = &[
    "connection",
    "oauth",
    "member",
    "settings",
    "audit",
    "mcptoken",
];

/// The first segment of this crate's partitions that belong to no tenant.
pub const GLOBAL: &[&str] = &["mcptoken", "system"];

/// The item found by an MCP token's hash in the tenant its locator names; holds a copy of the
/// connection. In the tenant's partition, so that a tool call at the edge reaches only its
/// workspace's store object (ADR 51).
pub fn mcp_token(tenant: &TenantId, hash_hex: &str) -> Key {
    Key::new(concat(&[tenant.as_str(), "#mcptoken"]), hash_hex)
}

/// Where an MCP token's index item was kept before ADR 51 (and still is for a token without a
/// locator): found by the hash alone. Read when the tenant's item is missing, and copied there
/// on first use.
pub fn legacy_mcp_token(hash_hex: &str) -> Key {
    Key::new(concat(&["mcptoken#", hash_hex]), "token")
}

/// The mark of a submitted "new connection" form: one form makes one connection.
pub fn connection_form(tenant: &TenantId, form: &str) -> Key {
    Key::new(concat(&[tenant.as_str(), "#connection_form"]), form)
}

/// A connection of a tenant.
pub fn connection(tenant: &TenantId, connection_id: &ConnectionId) -> Key {
    Key::new(
        concat(&[tenant.as_str(), "#connection"]),
        connection_id.as_str(),
    )
}

/// The partition of a tenant's connections.
pub fn connections(tenant: &TenantId) -> String {
    concat(&[tenant.as_str(), "#connection"])
}

/// The item mapping an OAuth subject to its connection in a tenant.
pub fn oauth_subject(tenant: &TenantId, subject: &str) -> Key {
    Key::new(concat(&[tenant.as_str(), "#oauth"]), subject)
}

/// A member of a tenant (used by [`crate::StoreDirectory`]).
pub fn member(tenant: &TenantId, member_id: &MemberId) -> Key {
    Key::new(concat(&[tenant.as_str(), "#member"]), member_id.as_str())
}

/// The global kill switch.
pub fn global_switch() -> Key {
    Key::new("system", "kill_switch")
}

/// A tenant's agent-access switch.
pub fn tenant_switch(tenant: &TenantId) -> Key {
    Key::new(concat(&[tenant.as_str(), "#settings"]), "agent_access")
}

/// The partition of a tenant's audit rows (`system` for global events).
pub fn audit_partition(tenant: &TenantId) -> String {
    concat(&[tenant.as_str(), "#audit"])
}

/// Bearers the edge's admin route refused from `address` in the window numbered `window`.
pub fn admin_refusals(address: &str, window: i64) -> Key {
    Key::new(
        "system",
        concat(&["adminrefused#", address, "#", &window.to_string()]),
    )
}

/// Calls the edge's admin route took in the minute numbered `minute`.
pub fn admin_calls(minute: i64) -> Key {
    Key::new("system", concat(&["admincalls#", &minute.to_string()]))
}
