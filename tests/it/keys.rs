//! Keys in one place per owner (issue 14): every owner of stored items (the pipeline's gates,
//! MCP identity, the product's accounts, the product) builds its keys in its own `keys`
//! module, which names the kinds of its tenant partitions and the first segments of its
//! partitions that belong to no tenant. No two owners share a kind or a global partition, every
//! global partition begins with a word no tenant id may take, and every tenant partition
//! begins with the (validated) tenant id.

use std::collections::BTreeMap;

/// (owner, tenant kinds, global first segments)
const OWNERS: [(&str, &[&str], &[&str]); 5] = [
    ("mcp-pipeline", mcp_pipeline::keys::TENANT_KINDS, &[]),
    (
        "identity",
        identity::keys::TENANT_KINDS,
        identity::keys::GLOBAL,
    ),
    (
        "accounts",
        accounts::keys::TENANT_KINDS,
        accounts::keys::GLOBAL,
    ),
    (
        "booking",
        booking::keys::TENANT_KINDS,
        booking::keys::GLOBAL,
    ),
    (
        "outbox-format",
        outbox_format::keys::TENANT_KINDS,
        outbox_format::keys::GLOBAL,
    ),
];

#[test]
fn no_two_owners_share_a_partition() {
    let mut kinds: BTreeMap<&str, &str> = BTreeMap::new();
    let mut globals: BTreeMap<&str, &str> = BTreeMap::new();
    for (owner, tenant_kinds, global) in OWNERS {
        for kind in tenant_kinds {
            if let Some(other) = kinds.insert(kind, owner) {
                panic!("the tenant kind {kind:?} belongs to both {other} and {owner}");
            }
        }
        for first in global {
            assert!(
                store::tenant_id::RESERVED.contains(first),
                "{owner}'s global partition {first:?} is not reserved: a tenant could take it"
            );
            if let Some(other) = globals.insert(first, owner) {
                // Several partitions of one owner may share a first segment; owners may not.
                assert_eq!(other, owner, "{first:?} is global for {other} and {owner}");
            }
        }
    }
    for reserved in store::tenant_id::RESERVED {
        assert!(store::tenant_id::check(reserved).is_err(), "{reserved}");
    }
}

/// The owner-kind of a built key: `(tenant kind)` for `<tenant>#<kind>...`, or the global
/// first segment.
fn kind_of(pk: &str, tenant: &str) -> (bool, String) {
    match pk.strip_prefix(&format!("{tenant}#")) {
        Some(rest) => (true, rest.split('#').next().unwrap_or_default().to_owned()),
        None => (false, pk.split('#').next().unwrap_or_default().to_owned()),
    }
}

#[test]
fn every_key_builder_uses_its_owners_kinds() {
    let t = "acme";
    let tid = store::TenantId::new(t);
    let built: Vec<(&str, store::Key)> = vec![
        (
            "mcp-pipeline",
            mcp_pipeline::keys::replay(
                &store::TenantId::new(t),
                &store::ConnectionId::new("con_1"),
                "create_booking",
                "f",
            ),
        ),
        (
            "mcp-pipeline",
            mcp_pipeline::keys::brake(&store::TenantId::new(t), &store::ConnectionId::new("con_1")),
        ),
        (
            "mcp-pipeline",
            mcp_pipeline::keys::rate(&store::TenantId::new(t), "con_1", "read", 0),
        ),
        (
            "mcp-pipeline",
            mcp_pipeline::keys::object_rate(&store::TenantId::new(t), "bkg_1", 0),
        ),
        (
            "mcp-pipeline",
            mcp_pipeline::keys::slot(
                &store::TenantId::new(t),
                &store::ConnectionId::new("con_1"),
                "0",
            ),
        ),
        (
            "mcp-pipeline",
            mcp_pipeline::keys::pending(&store::TenantId::new(t), "cfm_1"),
        ),
        (
            "mcp-pipeline",
            mcp_pipeline::keys::executed(&store::TenantId::new(t), "a1"),
        ),
        (
            "identity",
            identity::keys::mcp_token(&store::TenantId::new(t), "ab"),
        ),
        ("identity", identity::keys::legacy_mcp_token("ab")),
        (
            "identity",
            identity::keys::connection(
                &store::TenantId::new(t),
                &store::ConnectionId::new("con_1"),
            ),
        ),
        (
            "identity",
            identity::keys::oauth_subject(&store::TenantId::new(t), "sub"),
        ),
        (
            "identity",
            identity::keys::member(&store::TenantId::new(t), &store::MemberId::new("ana")),
        ),
        ("identity", identity::keys::global_switch()),
        (
            "identity",
            identity::keys::tenant_switch(&store::TenantId::new(t)),
        ),
        (
            "identity",
            store::Key::new(
                identity::keys::audit_partition(&store::TenantId::new(t)),
                "x",
            ),
        ),
        (
            "identity",
            store::Key::new(
                identity::keys::audit_partition(&store::TenantId::new("system")),
                "x",
            ),
        ),
        ("accounts", accounts::keys::session(&tid, "ab")),
        ("accounts", accounts::keys::global_session("ab")),
        ("accounts", accounts::keys::api_token(&tid, "ab")),
        ("accounts", accounts::keys::legacy_api_token("ab")),
        (
            "accounts",
            accounts::keys::api_token_record(&store::TenantId::new(t), "tok_1"),
        ),
        ("accounts", accounts::keys::operator("ops@example.com")),
        (
            "accounts",
            accounts::keys::sign_in_member(
                &store::TenantId::new(t),
                &store::MemberId::new("ana"),
                "",
            )
            .0,
        ),
        (
            "accounts",
            accounts::keys::sign_in_member(
                &store::TenantId::new(t),
                &store::MemberId::new("ana"),
                "192.0.2.1",
            )
            .1,
        ),
        (
            "accounts",
            accounts::keys::sign_in_operator("ops@example.com", "").0,
        ),
        (
            "accounts",
            accounts::keys::sign_in_operator("ops@example.com", "192.0.2.1").1,
        ),
        ("accounts", accounts::keys::sign_in_address("192.0.2.1")),
        (
            "accounts",
            accounts::keys::workspace(&store::TenantId::new(t)),
        ),
        (
            "accounts",
            accounts::keys::listed_workspace(&store::TenantId::new(t)),
        ),
        ("booking", booking::keys::prices(&tid)),
        (
            "booking",
            booking::keys::object(&tid, booking::ids::Kind::Booking, "b"),
        ),
        (
            "booking",
            booking::keys::object(&tid, booking::ids::Kind::Message, "m"),
        ),
        (
            "booking",
            booking::keys::unique(&tid, "customer-email", "a@b.c"),
        ),
        (
            "outbox-format",
            outbox_format::keys::outbox(&store::TenantId::new(t), "m1"),
        ),
        (
            "outbox-format",
            outbox_format::keys::outbox_due(&store::TenantId::new(t), "m1"),
        ),
        (
            "booking",
            booking::keys::alert_rule(&tid, &booking::BookingId::new("b")),
        ),
        (
            "booking",
            booking::keys::schedule(&tid, &booking::TechnicianId::new("tec_1")),
        ),
    ];
    for (owner, key) in built {
        let (_, kinds, globals) = OWNERS.iter().find(|(o, _, _)| *o == owner).unwrap();
        let (tenant_owned, kind) = kind_of(&key.pk, t);
        let ok = if tenant_owned {
            kinds.contains(&kind.as_str())
        } else {
            globals.contains(&kind.as_str())
        };
        assert!(
            ok,
            "{owner} built {:?}, whose {kind:?} it does not declare",
            key.pk
        );
    }
}
