//! The MCP contract at the edge: the worker (`functions/mcp-worker`) built for wasm32 and
//! served in `workerd` (`tests/edge.sh`), called over real HTTP, each test on a Durable Object
//! of its own. Authentication, a read, a silent write answered once and replayed, a preview
//! and its confirmation, the kill switch (the write guards in the store's transactions) and
//! tenant isolation; the store conformance suite runs against the same object in
//! `store_conformance::conformance_edge`.

use mcp_pipeline::Toolset;
use serde_json::json;

use crate::support::store::Backend;
use crate::world::World;

async fn edge() -> Option<World> {
    World::on(Backend::Edge).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edge_authenticates_and_serves_a_read() {
    let Some(world) = edge().await else { return };
    world.member("acme", "ana", "owner").await;
    let (_, token) = world.connect("acme", "ana", Toolset::Full).await;
    let stranger = world.anonymous().request("tools/list", json!({})).await;
    assert_eq!(stranger.status, 401);
    assert!(
        stranger
            .header("www-authenticate")
            .is_some_and(|c| c.starts_with("Bearer"))
    );
    let forged = world
        .client("ghm_notARealTokenAtAll0000000000000000000000000")
        .request("tools/list", json!({}))
        .await;
    assert_eq!(forged.status, 401);
    let client = world.client(&token);
    let list = client.request("tools/list", json!({})).await;
    assert_eq!(list.status, 200, "{}", String::from_utf8_lossy(&list.body));
    let status = client.call_tool("get_server_status", json!({})).await;
    assert!(!status.is_error(), "{}", status.text());
    assert_eq!(
        status.structured()["store_backend"],
        "durable-object",
        "{}",
        status.text()
    );
    let read = client
        .call_tool("find_customers", json!({"query": "Ada"}))
        .await;
    assert!(!read.is_error(), "{}", read.text());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edge_answers_a_silent_write_once_and_replays_it() {
    let Some(world) = edge().await else { return };
    world.member("acme", "ana", "owner").await;
    let (_, token) = world.connect("acme", "ana", Toolset::Full).await;
    let client = world.client(&token);
    let args = json!({"name": "Ada Lovelace", "email": "ada@example.com"});
    let first = client.call_tool("create_customer", args.clone()).await;
    assert!(!first.is_error(), "{}", first.text());
    assert!(first.structured().get("replayed").is_none());
    let again = client.call_tool("create_customer", args).await;
    assert!(!again.is_error(), "{}", again.text());
    assert_eq!(again.structured()["replayed"], true, "{}", again.text());
    let found = client
        .call_tool("find_customers", json!({"query": "Ada Lovelace"}))
        .await;
    let matches = found.structured()["customers"].as_array().map(Vec::len);
    assert_eq!(matches, Some(1), "one customer: {}", found.text());
    let audit = identity::audit::recent(world.app.store.as_ref(), "acme", None, 20)
        .await
        .unwrap();
    let created = audit
        .iter()
        .filter(|a| a.action == "create_customer")
        .count();
    assert_eq!(created, 1, "one audit row for one write");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edge_preview_and_confirmation() {
    let Some(world) = edge().await else { return };
    crate::booking_tools::deleting_a_customer_takes_two_steps(world).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edge_kill_switch() {
    let Some(world) = edge().await else { return };
    crate::identity_contract::kill_switch_answers_503_and_is_audited(world).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edge_tenant_isolation() {
    let Some(world) = edge().await else { return };
    crate::booking_tools::foreign_handles_are_not_found_and_change_nothing(world).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edge_tenant_comes_from_the_credential_only() {
    let Some(world) = edge().await else { return };
    crate::identity_contract::the_tenant_comes_from_the_credential_only(world).await;
}
