//! The tool manifest: what `tools/list` returns to a connection of each toolset with every
//! right, so that it can be checked and snapshotted.

use std::collections::BTreeSet;
use std::sync::Arc;

use mcp_pipeline::{Caller, Request, Toolset};
use mcp_protocol::Message;
use serde_json::{Map, Value, json};

use crate::Settings;

/// `tools/list` of `product` for a connection of `toolset` holding every right.
pub async fn dump(
    settings: &Settings,
    product: crate::SharedProduct,
    toolset: Toolset,
) -> Result<Value, mcp_pipeline::RegistryError> {
    let rights: BTreeSet<String> = product.rights().iter().map(|r| (*r).to_owned()).collect();
    dump_with_rights(settings, product, toolset, rights).await
}

/// `tools/list` of `product` for a connection of `toolset` holding `rights` (a role's).
pub async fn dump_with_rights(
    settings: &Settings,
    product: crate::SharedProduct,
    toolset: Toolset,
    rights: BTreeSet<String>,
) -> Result<Value, mcp_pipeline::RegistryError> {
    let app = crate::build(settings, Arc::new(store::MemoryStore::new()), product)?;
    let caller = Caller {
        tenant: mcp_pipeline::TenantId::new("manifest"),
        connection: mcp_pipeline::ConnectionId::new("con_manifest"),
        creator: mcp_pipeline::MemberId::new("manifest"),
        client_name: "manifest".into(),
        rights,
        toolset,
        product_approval: mcp_pipeline::ProductApproval::NONE,
    };
    let message = Message {
        id: Some(mcp_protocol::RequestId::Number(1.into())),
        method: "tools/list".into(),
        params: Map::new(),
        beyond_64_bits: None,
    };
    let outcome = app
        .server
        .handle(Request {
            message,
            headers: None,
            version_header: Some("2025-11-25".into()),
            caller: Some(caller),
            prefetched: Default::default(),
            plan: None,
            request_id: None,
        })
        .await;
    let tools = outcome
        .body
        .map(mcp_pipeline::Body::into_value)
        .and_then(|b| b.get("result").and_then(|r| r.get("tools")).cloned())
        .unwrap_or_else(|| json!([]));
    Ok(json!({"toolset": toolset.as_str(), "tools": tools}))
}
