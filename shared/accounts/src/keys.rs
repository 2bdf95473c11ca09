//! Every key this crate reads or writes, in one place. Tenant-owned items put the validated
//! tenant id first; the others live in partitions whose first segment no tenant id can take
//! ([`GLOBAL`], reserved by `store::tenant_id`).

use store::{Key, MemberId, TenantId};

/// The second segment of this crate's tenant partitions (`<tenant>#<kind>`).
pub const TENANT_KINDS: &[&str] = &["tenant", "apitoken", "signin", "session"];

/// The first segment of this crate's partitions that belong to no tenant.
pub const GLOBAL: &[&str] = &["session", "apitoken", "operator", "signin", WORKSPACES];

/// The partition listing every workspace (no tenant's: `tenants` is reserved).
pub const WORKSPACES: &str = store::placement::WORKSPACES;

/// A workspace: its name and zone.
pub fn workspace(tenant: &TenantId) -> Key {
    Key::new(format!("{tenant}#tenant"), "settings")
}

/// A workspace's entry in the list of workspaces.
pub fn listed_workspace(tenant: &TenantId) -> Key {
    Key::new(WORKSPACES, tenant.as_str())
}

/// A member's sign-in session, by the hash of its cookie value, in the workspace the cookie's
/// locator names (ADR 53).
pub fn session(tenant: &TenantId, id_hash: &str) -> Key {
    Key::new(format!("{tenant}#session"), id_hash)
}

/// A session whose cookie names no workspace, by the hash of its cookie value: an operator's
/// (who belongs to none), or a member's made before ADR 53 (it lives out its hours there).
pub fn global_session(id_hash: &str) -> Key {
    Key::new(format!("session#{id_hash}"), "session")
}

/// A product API token's index item, by the token's hash, in the workspace the token's
/// locator names (ADR 53). Beside the listing's partition, not in it.
pub fn api_token(tenant: &TenantId, hash: &str) -> Key {
    Key::new(format!("{tenant}#apitoken#byhash"), hash)
}

/// The index item of a product API token made before ADR 53, found by the token's hash alone
/// (its text names no workspace).
pub fn legacy_api_token(hash: &str) -> Key {
    Key::new(format!("apitoken#{hash}"), "token")
}

/// The partition of a tenant's product API tokens (what the listing shows).
pub fn api_tokens(tenant: &TenantId) -> String {
    format!("{tenant}#apitoken")
}

/// One product API token of a tenant, by its public id.
pub fn api_token_record(tenant: &TenantId, id: &str) -> Key {
    Key::new(api_tokens(tenant), id)
}

/// An operator (a global identity, outside every tenant), by normalized email. The partition
/// `operator` has no `#`, so it is no tenant's partition.
pub fn operator(email: &str) -> Key {
    Key::new("operator", email)
}

/// Sign-in attempts of one member: the account's count and the count of the account from
/// `address` (the account's sort key, `#`, the address), in the tenant's partition.
pub fn sign_in_member(tenant: &TenantId, member: &MemberId, address: &str) -> (Key, Key) {
    let partition = format!("{tenant}#signin");
    (
        Key::new(partition.clone(), member.as_str()),
        Key::new(partition, format!("{member}#{address}")),
    )
}

/// Sign-in attempts of one operator: the account's count and its count from `address`.
pub fn sign_in_operator(email: &str, address: &str) -> (Key, Key) {
    (
        Key::new("signin#operator", email),
        Key::new("signin#operator", format!("{email}#{address}")),
    )
}

/// Failed sign-ins from one client address.
pub fn sign_in_address(address: &str) -> Key {
    Key::new("signin#address", address)
}
