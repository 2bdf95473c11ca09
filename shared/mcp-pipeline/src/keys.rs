//! Every key the pipeline's gates read or write, in one place. Each is tenant-owned: the
//! caller's tenant id comes first (validated when the workspace is made, see
//! `store::tenant_id`), then the kind, so no gate's item can land in another owner's partition.

use store::{Key, concat, concat_int};

/// The second segment of the pipeline's tenant partitions (`<tenant>#<kind>`).
pub const TENANT_KINDS: &[&str] = &["replay", "brake", "rate", "slot", "pending", "executed"];

/// The replay record of a silent write of `connection` (keyed by tenant and connection, so
/// that it can be named from a credential's claim before authentication, see `prefetch`).
pub fn replay(tenant: &str, connection: &str, tool: &str, fingerprint: &str) -> Key {
    Key::new(
        concat(&[tenant, "#replay#", connection]),
        concat(&[tool, "#", fingerprint]),
    )
}

/// The loop-brake item of a connection: the last call that failed and how often in a row.
pub fn brake(tenant: &str, connection: &str) -> Key {
    Key::new(concat(&[tenant, "#brake#", connection]), "last")
}

/// A rate bucket of `who` (a connection, or a tenant shard) for `bucket` in the window that
/// starts at `start`: one partition per connection and per shard.
pub fn rate(tenant: &str, who: &str, bucket: &str, start: i64) -> Key {
    Key::new(
        concat(&[tenant, "#rate#", who]),
        concat_int(&[bucket, "#"], start),
    )
}

/// The per-object notify bucket of the record `id` in the window that starts at `start`.
pub fn object_rate(tenant: &str, id: &str, start: i64) -> Key {
    Key::new(
        concat(&[tenant, "#rate"]),
        concat_int(&["object#", id, "#"], start),
    )
}

/// The partition of a connection's concurrency slots.
pub fn slots(tenant: &str, connection: &str) -> String {
    concat(&[tenant, "#slot#", connection])
}

/// One concurrency slot of a connection (`0` for reads and writes, `1` kept for writes).
pub fn slot(tenant: &str, connection: &str, slot: &str) -> Key {
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
pub fn pending(tenant: &str, token_or_id: &str) -> Key {
    Key::new(concat(&[tenant, "#pending"]), pending_id(token_or_id))
}

/// The mark an executed action leaves, on which its previews register: `action` is the digest
/// of its tool and the content its preview showed (ADR 42, ADR 44).
pub fn executed(tenant: &str, action: &str) -> Key {
    Key::new(concat(&[tenant, "#executed"]), action)
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
        let key = replay("acme", "con_1", "create_note", "abc");
        assert_ne!(
            key,
            replay("acme", "con_1", "update_note", "abc"),
            "another tool"
        );
        assert_ne!(
            key,
            replay("acme", "con_2", "create_note", "abc"),
            "another connection"
        );
        assert_ne!(
            key,
            replay("globex", "con_1", "create_note", "abc"),
            "another tenant"
        );
        assert_eq!(key, replay("acme", "con_1", "create_note", "abc"));
    }
}
