//! Approval where the person is (ADR 15): `confirm_action` asks a prompting client to prompt;
//! a tenant may move any class of prepared action to approval in the product (audited), and a
//! connection may be pinned there; then the preview carries the approval link, the client
//! cannot confirm, and a member with the right executes it once on the page. Every executed
//! action's audit row says how it was approved. Through MCP and the pages, on SQLite and the
//! local DynamoDB server.

use mcp_pipeline::Toolset;
use serde_json::{Value, json};

use crate::booking_tools::{confirm, draft, seeded_customer, seeded_technician};
use crate::support::on_every_backend;
use crate::web::{FORM, send, sign_in};
use crate::world::World;

const MARK: &str = "anthropic/requiresUserInteraction";

/// Every tool that executes an external effect at once carries the mark, in every toolset,
/// and the manifest checker passes on what the server really lists.
async fn confirm_action_asks_prompting_clients_to_prompt(world: World) {
    world.member("acme", "ana", "owner").await;
    for toolset in [Toolset::Core, Toolset::Standard, Toolset::Full] {
        let (_, token) = world.connect("acme", "ana", toolset).await;
        let list = world.client(&token).list_tools().await;
        let marked: Vec<&str> = list["tools"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| t["_meta"][MARK] == json!(true))
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        assert_eq!(marked, ["confirm_action"], "{toolset:?}");
        let report = manifest_check::check(&list);
        assert!(report.is_clean(), "{toolset:?}: {}", report.to_text());
    }
}
on_every_backend!(the_mark, confirm_action_asks_prompting_clients_to_prompt);

/// The audit rows of `acme` for `action` with outcome `ok`: their approval paths.
async fn approvals_of(world: &World, action: &str) -> Vec<Option<String>> {
    crate::support::audit_rows(world.app.store.as_ref(), "acme", None, 50)
        .await
        .into_iter()
        .filter(|e| e.action == action && e.outcome == "ok")
        .map(|e| e.approval)
        .collect()
}

async fn booking_exists(world: &World, handle: &Value) -> bool {
    let (_, token) = world.connect("acme", "ana", Toolset::Full).await;
    let read = world
        .client(&token)
        .call_tool("get_booking", json!({"booking": handle}))
        .await;
    !read.is_error()
}

/// The page path of an approval link.
fn page_path(url: &str) -> String {
    url.split_once("/app/")
        .map(|(_, p)| format!("/app/{p}"))
        .unwrap()
}

async fn product_mode_moves_approval_to_the_page(world: World) {
    world.member("acme", "ana", "owner").await;
    world.member("acme", "vic", "viewer").await;
    let (_, token) = world.connect("acme", "ana", Toolset::Full).await;
    let agent = world.client(&token);
    let ada = seeded_customer(&world, "acme", "Ada Lovelace", "ada@example.com").await;
    let tom = seeded_technician(&world, "acme", "Tom Weber", "Europe/Berlin").await;
    let (owner, csrf) = sign_in(&world, "acme", "ana").await;
    let (viewer, viewer_csrf) = sign_in(&world, "acme", "vic").await;

    // A viewer cannot change a mode; nothing is written.
    let refused = send(
        &world,
        "POST",
        "/app/agent-access/approval",
        &[FORM, ("cookie", &viewer)],
        &format!("class=delete&mode=product&csrf={viewer_csrf}"),
    )
    .await;
    assert_eq!(refused.status, 403, "{}", refused.body);
    assert_eq!(
        world
            .app
            .switches
            .approval_modes(&store::TenantId::new("acme"))
            .await
            .unwrap(),
        mcp_pipeline::ProductApproval::NONE
    );
    // The owner moves deletes to the product, audited.
    let set = send(
        &world,
        "POST",
        "/app/agent-access/approval",
        &[FORM, ("cookie", &owner)],
        &format!("class=delete&mode=product&csrf={csrf}"),
    )
    .await;
    assert_eq!(set.status, 200, "{}", set.body);
    assert!(set.body.contains("in the product only"), "{}", set.body);
    assert_eq!(
        approvals_of(&world, "approval_mode.delete.product")
            .await
            .len(),
        1,
        "the mode change is audited"
    );

    // The preview carries the link; confirm_action is refused and changes nothing.
    let b = agent
        .call_tool("create_booking", draft(&ada, &tom, "2055-06-07 09:00"))
        .await
        .structured()["booking"]
        .clone();
    let preview = agent
        .call_tool(
            "delete_booking",
            json!({"booking": b["booking"], "version": b["version"]}),
        )
        .await;
    let s = preview.structured().clone();
    assert_eq!(s["status"], "PREVIEW", "{}", preview.text());
    let url = s["approval_url"].as_str().expect("an approval link");
    assert!(
        s["handover"].as_str().unwrap().contains(url),
        "{}",
        preview.text()
    );
    let by_client = confirm(&agent, &preview).await;
    assert!(by_client.is_error(), "{}", by_client.text());
    assert_eq!(by_client.structured()["code"], "forbidden");
    assert_eq!(by_client.structured()["approval_url"], url);
    assert!(booking_exists(&world, &b["booking"]).await);
    assert!(approvals_of(&world, "delete_booking").await.is_empty());

    // A viewer lacks the right on the page; the owner executes it once.
    let path = page_path(url);
    let page = send(&world, "GET", &path, &[("cookie", &owner)], "").await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(page.body.contains("Expires"), "{}", page.body);
    let approve = |cookie: String, csrf: String| {
        let path = path.clone();
        let world = &world;
        async move {
            send(
                world,
                "POST",
                &path,
                &[FORM, ("cookie", &cookie)],
                &format!("decision=approve&csrf={csrf}"),
            )
            .await
        }
    };
    let by_viewer = approve(viewer.clone(), viewer_csrf.clone()).await;
    assert_eq!(by_viewer.status, 403, "{}", by_viewer.body);
    assert!(booking_exists(&world, &b["booking"]).await);
    let by_owner = approve(owner.clone(), csrf.clone()).await;
    assert_eq!(by_owner.status, 200, "{}", by_owner.body);
    assert!(
        !by_owner.body.contains("Expires"),
        "a decided action expires no more"
    );
    assert!(!booking_exists(&world, &b["booking"]).await);
    assert_eq!(
        approvals_of(&world, "delete_booking").await,
        [Some("product_page:ana".to_owned())]
    );
    let twice = approve(owner.clone(), csrf.clone()).await;
    assert_eq!(twice.status, 409, "a second approval executes nothing");
    assert_eq!(approvals_of(&world, "delete_booking").await.len(), 1);

    // Other classes keep the client's approval, and say so.
    let c = agent
        .call_tool("create_booking", draft(&ada, &tom, "2055-06-08 09:00"))
        .await
        .structured()["booking"]
        .clone();
    let cancel = agent
        .call_tool(
            "cancel_booking",
            json!({"booking": c["booking"], "version": c["version"]}),
        )
        .await;
    assert!(cancel.structured().get("approval_url").is_none());
    assert!(!confirm(&agent, &cancel).await.is_error());
    assert_eq!(
        approvals_of(&world, "cancel_booking").await,
        [Some("client_prompt".to_owned())]
    );

    // What was approved how shows in list_recent_changes and on the activity page.
    let recent = agent
        .call_tool("list_recent_changes", json!({"scope": "tenant"}))
        .await;
    let paths: Vec<&Value> = recent.structured()["changes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["outcome"] == "ok")
        .map(|c| &c["approval"])
        .filter(|a| !a.is_null())
        .collect();
    assert_eq!(paths, [&json!("client_prompt"), &json!("product_page:ana")]);
    let activity = send(&world, "GET", "/app/activity", &[("cookie", &owner)], "").await;
    assert!(
        activity.body.contains("ana, in the product"),
        "{}",
        activity.body
    );
}
on_every_backend!(product_mode, product_mode_moves_approval_to_the_page);

/// A pending action prepared under `product` stays product-only after the mode goes back to
/// `client`; modes only ever make approval stricter.
async fn a_mode_switched_back_does_not_release_prepared_actions(world: World) {
    world.member("acme", "ana", "owner").await;
    let (_, token) = world.connect("acme", "ana", Toolset::Full).await;
    let agent = world.client(&token);
    let ada = seeded_customer(&world, "acme", "Ada Lovelace", "ada@example.com").await;
    let tom = seeded_technician(&world, "acme", "Tom Weber", "Europe/Berlin").await;
    let actor = crate::support::cli_actor("acme", "ana");
    let switches = &world.app.switches;
    let delete = mcp_pipeline::EffectClass::Delete;
    switches
        .set_approval_mode(&actor, delete, mcp_pipeline::ApprovalMode::Product)
        .await
        .unwrap();
    let b = agent
        .call_tool("create_booking", draft(&ada, &tom, "2055-06-07 09:00"))
        .await
        .structured()["booking"]
        .clone();
    let preview = agent
        .call_tool(
            "delete_booking",
            json!({"booking": b["booking"], "version": b["version"]}),
        )
        .await;
    assert!(preview.structured()["approval_url"].is_string());
    switches
        .set_approval_mode(&actor, delete, mcp_pipeline::ApprovalMode::Client)
        .await
        .unwrap();
    let by_client = confirm(&agent, &preview).await;
    assert_eq!(
        by_client.structured()["code"],
        "forbidden",
        "{}",
        by_client.text()
    );
    assert!(booking_exists(&world, &b["booking"]).await);
    // A new preview under `client` is confirmed by the client.
    let again = agent
        .call_tool(
            "delete_booking",
            json!({"booking": b["booking"], "version": b["version"]}),
        )
        .await;
    assert!(again.structured().get("approval_url").is_none());
    assert!(!confirm(&agent, &again).await.is_error());
    assert!(!booking_exists(&world, &b["booking"]).await);
}
on_every_backend!(
    switched_back,
    a_mode_switched_back_does_not_release_prepared_actions
);

/// A connection pinned to the product gets links for every class, even from a client that
/// declares elicitation, whatever the tenant chose.
async fn a_pinned_connection_approves_everything_in_the_product(world: World) {
    world.member("acme", "ana", "owner").await;
    let rights = crate::support::rights_of(&world.app, "acme", "ana").await;
    let actor = crate::support::cli_actor("acme", "ana");
    let new = identity::NewConnection {
        rights,
        toolset: Toolset::Full,
        client_name: "nightly batch agent".into(),
        approval: mcp_pipeline::ApprovalMode::Product,
    };
    let (connection, token) = world
        .app
        .connections
        .create_token(&actor, new)
        .await
        .unwrap();
    assert!(connection.approval_pinned);
    let agent = world.client(&token);
    let ada = seeded_customer(&world, "acme", "Ada Lovelace", "ada@example.com").await;
    let tom = seeded_technician(&world, "acme", "Tom Weber", "Europe/Berlin").await;
    let b = agent
        .call_tool("create_booking", draft(&ada, &tom, "2055-06-07 09:00"))
        .await
        .structured()["booking"]
        .clone();
    let eliciting = agent
        .call_tool_with(
            "cancel_booking",
            json!({
                "name": "cancel_booking",
                "arguments": {"booking": b["booking"], "version": b["version"]},
                "_meta": {"io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}},
            }),
        )
        .await;
    assert_eq!(
        eliciting.result["resultType"], "complete",
        "no elicitation in product mode: {}",
        eliciting.result
    );
    assert!(eliciting.structured()["approval_url"].is_string());
    let by_client = confirm(&agent, &eliciting).await;
    assert_eq!(by_client.structured()["code"], "forbidden");
    // The booking is still a draft: nothing was cancelled, nothing queued.
    let read = agent
        .call_tool("get_booking", json!({"booking": b["booking"]}))
        .await;
    assert_eq!(read.structured()["booking"]["state"], "draft");
    assert!(approvals_of(&world, "cancel_booking").await.is_empty());
}
on_every_backend!(
    pinned,
    a_pinned_connection_approves_everything_in_the_product
);

/// `gatehouse approval-mode` changes a mode for a member with the right (audited) and refuses
/// anyone else; `token create --approval product` pins a connection.
#[tokio::test]
async fn the_cli_sets_modes_and_pins_connections() {
    use crate::support::processes::{cli_token, gatehouse, gatehouse_binary};
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    cli_token(data);
    gatehouse(
        &[
            "member", "set", "--tenant", "acme", "--member", "vic", "--role", "viewer",
        ],
        data,
    );
    let refused = std::process::Command::new(gatehouse_binary())
        .args([
            "approval-mode",
            "delete",
            "product",
            "--tenant",
            "acme",
            "--member",
            "vic",
        ])
        .arg("--data-dir")
        .arg(data)
        .output()
        .unwrap();
    assert!(!refused.status.success());
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("agent_access:manage"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
    let before = gatehouse(
        &["approval-mode", "--tenant", "acme", "--member", "vic"],
        data,
    );
    assert!(before.contains("delete    client"), "{before}");
    let after = gatehouse(
        &[
            "approval-mode",
            "delete",
            "product",
            "--tenant",
            "acme",
            "--member",
            "ana",
        ],
        data,
    );
    assert!(after.contains("delete    product"), "{after}");
    assert!(after.contains("notify    client"), "{after}");
    let pinned: Value = serde_json::from_str(&gatehouse(
        &[
            "token",
            "create",
            "--tenant",
            "acme",
            "--member",
            "ana",
            "--client",
            "batch agent",
            "--approval",
            "product",
            "--json",
        ],
        data,
    ))
    .unwrap();
    assert_eq!(pinned["approval"], "product");
    // Listed in the words --approval takes, as text and as JSON.
    let listed = gatehouse(&["token", "list", "--tenant", "acme"], data);
    assert!(listed.contains("approval product"), "{listed}");
    let listed: Value = serde_json::from_str(&gatehouse(
        &["token", "list", "--tenant", "acme", "--json"],
        data,
    ))
    .unwrap();
    let words: Vec<&Value> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|c| &c["approval"])
        .collect();
    assert!(
        words.iter().all(|w| *w == "client" || *w == "product"),
        "{words:?}"
    );
    let store = store_sqlite::SqliteStore::open(data.join("gatehouse.db")).unwrap();
    let audited: Vec<String> = crate::support::audit_rows(&store, "acme", None, 50)
        .await
        .into_iter()
        .map(|e| format!("{}:{}", e.action, e.actor))
        .filter(|a| a.starts_with("approval_mode"))
        .collect();
    assert_eq!(audited, ["approval_mode.delete.product:ana"]);
}

/// Every audit row of a decision names what the action was about, as its preview's did: a
/// rejection's row (it had no ids) names the booking the cancellation was for.
async fn a_decisions_audit_row_names_its_record(world: World) {
    world.member("acme", "ana", "owner").await;
    let (_, token) = world.connect("acme", "ana", Toolset::Full).await;
    let agent = world.client(&token);
    let ada = seeded_customer(&world, "acme", "Ada Lovelace", "ada@example.com").await;
    let tom = seeded_technician(&world, "acme", "Tom Weber", "Europe/Berlin").await;
    let b = agent
        .call_tool("create_booking", draft(&ada, &tom, "2055-06-08 09:00"))
        .await
        .structured()["booking"]
        .clone();
    let preview = agent
        .call_tool(
            "cancel_booking",
            json!({"booking": b["booking"], "version": b["version"]}),
        )
        .await;
    let token = preview.structured()["confirm_token"].clone();
    let rejected = agent
        .call_tool("reject_action", json!({"confirm_token": token}))
        .await;
    assert!(!rejected.is_error(), "{}", rejected.text());
    let recent = agent
        .call_tool("list_recent_changes", json!({"scope": "tenant"}))
        .await;
    let changes = recent.structured()["changes"].as_array().unwrap().clone();
    let of = |outcome: &str| {
        changes
            .iter()
            .find(|c| c["outcome"] == outcome)
            .unwrap_or_else(|| panic!("no {outcome} row: {changes:?}"))["ids"]
            .clone()
    };
    assert!(
        of("prepared")
            .to_string()
            .contains(b["booking"].as_str().unwrap()),
        "{changes:?}"
    );
    assert_eq!(of("rejected"), of("prepared"), "{changes:?}");
}
on_every_backend!(decision_rows, a_decisions_audit_row_names_its_record);
