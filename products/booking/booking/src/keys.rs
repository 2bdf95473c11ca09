//! Every key the booking product stores, in one place. The tenant id is the first segment.

use store::{Key, TenantId};

use crate::ids::{BookingId, TechnicianId};

/// The second segment of the product's tenant partitions (`<tenant>#<kind>`): its settings,
/// each kind of record ([`crate::ids::Kind::noun`]), duplicate claims and alert rules (its
/// messages are in the platform's outbox, `outbox_format::keys`).
pub const TENANT_KINDS: &[&str] = &[
    "prices",
    "customer",
    "technician",
    "booking",
    "quote",
    "message",
    "unique",
    "alert",
];

/// The first segment of the product's partitions that belong to no tenant.
pub const GLOBAL: &[&str] = &[];

/// How a workspace writes prices (currency, tax rate): the product's own settings.
pub fn prices(tenant: &TenantId) -> Key {
    Key::new(format!("{tenant}#prices"), "settings")
}

/// Where stores made before prices had their own item kept them: the platform's workspace
/// item (`accounts::keys::workspace`), read for them only.
pub(crate) fn workspace_of_earlier_stores(tenant: &TenantId) -> Key {
    Key::new(format!("{tenant}#tenant"), "settings")
}

/// The partition of a kind of object.
pub fn partition(tenant: &TenantId, kind: crate::ids::Kind) -> String {
    format!("{tenant}#{}", kind.noun())
}

/// One object. Its id is text because its kind is a value (a handle's kind is known only once
/// the handle is read); callers holding a typed id pass its `as_str()`.
pub fn object(tenant: &TenantId, kind: crate::ids::Kind, id: &str) -> Key {
    Key::new(partition(tenant, kind), id)
}

/// A technician's schedule revision (ADR 46), in the bookings' partition under a key that sorts
/// before every booking (`!` before letters and digits), so that the query reading the
/// bookings reads it first: a booking committed after it was read has changed it.
pub fn schedule(tenant: &TenantId, technician: &TechnicianId) -> Key {
    Key::new(
        partition(tenant, crate::ids::Kind::Booking),
        format!("!schedule#{technician}"),
    )
}

/// The record a handle names (`None`: not a handle in its exact form).
pub fn of_handle(tenant: &TenantId, handle: &str) -> Option<Key> {
    let (kind, id) = crate::ids::Kind::parse_handle(handle)?;
    Some(object(tenant, kind, id))
}

/// The claim on a unique business key (`email` of customers, ...).
pub fn unique(tenant: &TenantId, what: &str, value: &str) -> Key {
    Key::new(format!("{tenant}#unique#{what}"), value)
}

/// The alert rule of a booking.
pub fn alert_rule(tenant: &TenantId, booking: &BookingId) -> Key {
    Key::new(format!("{tenant}#alert"), booking.as_str())
}
