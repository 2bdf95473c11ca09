//! The rights catalog and what each role grants: defined here once. The identity layer asks
//! the product for a member's rights through its directory, which reads this catalog.

/// Create, list and revoke MCP connections.
pub const CONNECTIONS_MANAGE: &str = "connections:manage";
/// Read the whole tenant's audit trail (every connection's changes).
pub const AUDIT_READ: &str = "audit:read";
/// Read bookings, customers, technicians and quotes.
pub const BOOKINGS_READ: &str = "bookings:read";
/// Create and change bookings, customers and quotes.
pub const BOOKINGS_WRITE: &str = "bookings:write";
/// Send messages to customers.
pub const CUSTOMERS_NOTIFY: &str = "customers:notify";
/// Page technicians.
pub const TECHNICIANS_PAGE: &str = "technicians:page";
/// Mute, pause and reroute alerts.
pub const ALERTS_MANAGE: &str = "alerts:manage";
/// Delete records.
pub const RECORDS_DELETE: &str = "records:delete";
/// Approve quotes (moves money).
pub const QUOTES_APPROVE: &str = "quotes:approve";
/// Turn agent access of the tenant on or off.
pub const AGENT_ACCESS_MANAGE: &str = "agent_access:manage";

/// Every right, in catalog order.
pub const ALL: &[&str] = &[
    CONNECTIONS_MANAGE,
    AUDIT_READ,
    BOOKINGS_READ,
    BOOKINGS_WRITE,
    CUSTOMERS_NOTIFY,
    TECHNICIANS_PAGE,
    ALERTS_MANAGE,
    RECORDS_DELETE,
    QUOTES_APPROVE,
    AGENT_ACCESS_MANAGE,
];

const DISPATCHER: &[&str] = &[
    CONNECTIONS_MANAGE,
    BOOKINGS_READ,
    BOOKINGS_WRITE,
    CUSTOMERS_NOTIFY,
    TECHNICIANS_PAGE,
];
const VIEWER: &[&str] = &[BOOKINGS_READ];

/// The rights a role grants; an unknown role grants nothing.
pub fn for_role(role: &str) -> &'static [&'static str] {
    match role {
        "owner" | "admin" => ALL,
        "dispatcher" => DISPATCHER,
        "viewer" => VIEWER,
        _ => &[],
    }
}
