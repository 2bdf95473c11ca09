//! Every key the pipeline's gates read or write, in one place. Each is tenant-owned: the
//! caller's tenant id comes first (validated when the workspace is made, see
//! `store::tenant_id`), then the kind, so no gate's item can land in another owner's partition.

use store::{ConnectionId, Key, TenantId, concat, concat_int};

/// The second segment of the pipeline's tenant partitions (`<tenant>#<kind>`).
pub const TENANT_KINDS: &[&str] = &["replay", "brake", "rate", "slot", "pending", "executed"];

/// The replay record of a silent write of `connection` (keyed by tenant and connection, so
/// that it can be named from a credential's claim before authentication, see `prefetch`).
pub fn replay(tenant: &TenantId, connection: &ConnectionId, tool: &str, fingerprint: &str) -> Key {
    Key::new(
        concat(&[tenant.as_str(), "#replay#", connection.as_str()]),
        concat(&[tool, "#", fingerprint]),
    )
}

/// The loop-brake item of a connection: the last call that failed and how often in a row.
pub fn brake(tenant: &TenantId, connection: &ConnectionId) -> Key {
    Key::new(
        concat(&[tenant.as_str(), "#brake#", connection.as_str()]),
        "last",
    )
}

/// A rate bucket of `who` (a connection, or a tenant shard) for `bucket` in the window that
/// starts at `start`: one partition per connection and per shard.
pub fn rate(tenant: &TenantId, who: &str, bucket: &str, start: i64) -> Key {
    Key::new(
        concat(&[tenant.as_str(), "#rate#", who]),
        concat_int(&[bucket, "#"], start),
    )
}

/// The per-object notify bucket of the record `id` in the window that starts at `start`.
pub fn object_rate(tenant: &TenantId, id: &str, start: i64) -> Key {
    Key::new(
        concat(&[tenant.as_str(), "#rate"]),
        concat_int(&["object#", id, "#"], start),
    )
}

/// The partition of a connection's concurrency slots.
pub fn slots(tenant: &TenantId, connection: &ConnectionId) -> String {
    concat(&[tenant.as_str(), "#slot#", connection.as_str()])
}

/// One concurrency slot of a connection (`0` for reads and writes, `1` kept for writes).
pub fn slot(tenant: &TenantId, connection: &ConnectionId, slot: &str) -> Key {
    Key::new(slots(tenant, connection), slot)
}

/// A pending action's id (its sort key) from its token, or the id itself (the product's
/// approval page names a pending action by its id, never by its token).
pub fn pending_id(token_or_id: &str) -> String {
    if token_or_id.starts_with("cfm_") {
        token_id(token_or_id)
    } else {
        token_or_id.to_owned()
    }
}

/// A pending (prepared) action, by its confirm token or by that token's id (its SHA-256, what
/// the product's inbox links with). Only the id is stored: whoever reads the store cannot
/// confirm an action with what it finds there.
pub fn pending(tenant: &TenantId, token_or_id: &str) -> Key {
    Key::new(
        concat(&[tenant.as_str(), "#pending"]),
        pending_id(token_or_id),
    )
}

/// The mark an executed action leaves, on which its previews register: `action` is the digest
/// of its tool and the content its preview showed (ADR 42, ADR 44).
pub fn executed(tenant: &TenantId, action: &str) -> Key {
    Key::new(concat(&[tenant.as_str(), "#executed"]), action)
}

/// A confirmation token's id: its SHA-256 in hex, the pending action's sort key.
pub fn token_id(token: &str) -> String {
    crate::sha256_hex(token.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replay_key_names_its_tool_and_connection() {
        let key = replay(
            &TenantId::new("acme"),
            &ConnectionId::new("con_1"),
            "create_note",
            "abc",
        );
        assert_ne!(
            key,
            replay(
                &TenantId::new("acme"),
                &ConnectionId::new("con_1"),
                "update_note",
                "abc"
            ),
            "another tool"
        );
        assert_ne!(
            key,
            replay(
                &TenantId::new("acme"),
                &ConnectionId::new("con_2"),
                "create_note",
                "abc"
            ),
            "another connection"
        );
        assert_ne!(
            key,
            replay(
                &TenantId::new("globex"),
                &ConnectionId::new("con_1"),
                "create_note",
                "abc"
            ),
            "another tenant"
        );
        assert_eq!(
            key,
            replay(
                &TenantId::new("acme"),
                &ConnectionId::new("con_1"),
                "create_note",
                "abc"
            )
        );
    }
}
