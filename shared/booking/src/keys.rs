//! Every key the booking product stores, in one place. The tenant id is the first segment.

use store::Key;

/// A tenant's settings.
pub fn tenant(tenant: &str) -> Key {
    Key::new(format!("{tenant}#tenant"), "settings")
}

/// The partition listing every workspace (it belongs to no tenant: `tenants` is reserved).
pub const LISTED_TENANTS: &str = "tenants";

/// A workspace in the list of workspaces.
pub fn listed_tenant(tenant: &str) -> Key {
    Key::new(LISTED_TENANTS, tenant)
}

/// The partition of a kind of object.
pub fn partition(tenant: &str, kind: crate::ids::Kind) -> String {
    format!("{tenant}#{}", kind.noun())
}

/// One object.
pub fn object(tenant: &str, kind: crate::ids::Kind, id: &str) -> Key {
    Key::new(partition(tenant, kind), id)
}

/// The record a handle names (`None`: not a handle in its exact form).
pub fn of_handle(tenant: &str, handle: &str) -> Option<Key> {
    let (kind, id) = crate::ids::Kind::parse_handle(handle)?;
    Some(object(tenant, kind, id))
}

/// The claim on a unique business key (`email` of customers, ...).
pub fn unique(tenant: &str, what: &str, value: &str) -> Key {
    Key::new(format!("{tenant}#unique#{what}"), value)
}

/// An outbox message.
pub fn outbox(tenant: &str, id: &str) -> Key {
    Key::new(format!("{tenant}#outbox"), id)
}
