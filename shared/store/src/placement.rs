//! Where an item lives in a store split by owner (the edge's one store object per workspace,
//! ADR 51): every key belongs to one workspace, to the deployment (the global object), or is
//! the global kill switch, whose source is the global object and whose copy every workspace
//! object keeps, so that a workspace's write checks it in its own transaction.
//!
//! The rule reads the key only: a partition whose first segment is a tenant id belongs to that
//! tenant (`<tenant>#<kind>`, see [`crate::tenant_id`]); one that begins with a reserved word
//! belongs to the deployment, except the outbox's due entry of a tenant's message
//! (`outbox` / `<tenant>#<id>`), which lives beside the message so that queueing it commits in
//! one object.

use crate::Key;
use crate::tenant_id::RESERVED;

/// The partition and sort key of the global kill switch.
pub const GLOBAL_SWITCH: (&str, &str) = ("system", "kill_switch");
/// The partition that lists every workspace (`tenants` / `<tenant>`), in the global object.
pub const WORKSPACES: &str = "tenants";
/// The partition of the outbox's due index.
const OUTBOX_DUE: &str = "outbox";

/// Where one key lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place<'a> {
    /// In the object of this tenant.
    Workspace(&'a str),
    /// In the deployment's global object.
    Global,
    /// The global kill switch: in the global object, and copied into every workspace object.
    Mirrored,
}

/// Where `key` lives.
pub fn place(key: &Key) -> Place<'_> {
    if (key.pk.as_str(), key.sk.as_str()) == GLOBAL_SWITCH {
        return Place::Mirrored;
    }
    if key.pk == OUTBOX_DUE {
        return match key.sk.split_once('#') {
            Some((tenant, _)) if is_tenant(tenant) => Place::Workspace(tenant),
            _ => Place::Global,
        };
    }
    partition_place(&key.pk)
}

/// Where the items of the partition `pk` live (a query reads one partition).
pub fn partition_place(pk: &str) -> Place<'_> {
    let first = pk.split('#').next().unwrap_or_default();
    if is_tenant(first) {
        Place::Workspace(first)
    } else {
        Place::Global
    }
}

/// Whether `segment` can be a tenant's: not empty and not a reserved word (the id rules are
/// enforced where a workspace is made; here only who owns the key matters).
fn is_tenant(segment: &str) -> bool {
    !segment.is_empty() && !RESERVED.contains(&segment)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_placed_by_their_owner() {
        let at = |pk: &str, sk: &str| format!("{:?}", place(&Key::new(pk, sk)));
        let acme = format!("{:?}", Place::Workspace("acme"));
        assert_eq!(at("acme#customer", "c1"), acme);
        assert_eq!(at("acme#replay#con_1", "t#f"), acme);
        assert_eq!(at("acme#mcptoken", "ab"), acme);
        assert_eq!(at("outbox", "acme#m1"), acme);
        assert_eq!(at("system", "kill_switch"), "Mirrored");
        for (pk, sk) in [
            ("system", "admincalls#1"),
            ("system#audit", "x"),
            ("tenants", "acme"),
            ("mcptoken#ab", "token"),
            ("session#ab", "session"),
            ("operator", "a@example.com"),
            ("outbox", "nohash"),
            ("", "x"),
        ] {
            assert_eq!(at(pk, sk), "Global", "{pk}/{sk}");
        }
        assert_eq!(partition_place("acme#outbox"), Place::Workspace("acme"));
        assert_eq!(partition_place("outbox"), Place::Global);
    }
}
