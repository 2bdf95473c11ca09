//! End to end in a real browser: an agent prepares a quote over MCP, a person with the right
//! approves it in the product's page in headless Chromium, exactly once, and then a booking
//! cancellation the workspace approves in the product (ADR 15); a second approval, a
//! reused token and an approval by a member without the right all fail; agent access turned
//! off in the page stops the agent's next call; the same at the edge. Screenshots go to
//! `target/screenshots/` (the edge's to `target/screenshots-edge/`).

use std::process::Command;

use mcp_test_client::TestClient;
use serde_json::{Value, json};

use crate::support::pages::form_login;
use crate::support::processes::start_serve;

/// Where the browser run finds playwright-core and Chromium.
struct Browser {
    modules: String,
    chromium: String,
}

fn browser_env() -> Option<Browser> {
    match (
        std::env::var("GATEHOUSE_TEST_BROWSER"),
        std::env::var("PLAYWRIGHT_MODULES"),
    ) {
        (Ok(_), Ok(modules)) => Some(Browser {
            modules,
            chromium: std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into()),
        }),
        _ => {
            assert!(
                std::env::var_os("CI").is_none(),
                "the browser test needs tests/browser.sh's environment in CI"
            );
            eprintln!(
                "browser test: SKIPPED (run `eval \"$(tests/browser.sh)\"` first; tests/run does)"
            );
            None
        }
    }
}

async fn approve_by_form(addr: std::net::SocketAddr, path: &str, cookie: &str, csrf: &str) -> u16 {
    let headers = crate::support::pages::form_headers(addr, cookie);
    TestClient::http(addr)
        .send(
            http::Method::POST,
            path,
            &headers,
            format!("decision=approve&csrf={csrf}").into(),
        )
        .await
        .status
}

async fn prepare_quote(
    agent: &TestClient,
    customer: &Value,
) -> (mcp_test_client::ToolCall, String) {
    let quote = agent.call_tool("create_quote", json!({"customer": customer, "lines": [{"description": "Filter", "quantity": "3", "unit_price": "19.99"}]})).await;
    let q = quote.structured()["quote"].clone();
    let preview = agent
        .call_tool(
            "send_quote",
            json!({"quote": q["quote"], "version": q["version"]}),
        )
        .await;
    let url = preview.structured()["approval_url"]
        .as_str()
        .unwrap()
        .to_owned();
    let path = format!("/app/{}", url.split_once("/app/").unwrap().1);
    (preview, path)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_approves_an_agents_quote_in_the_browser() {
    let Some(browser) = browser_env() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let (_server, addr) = start_serve(&data);
    let demo: Value =
        serde_json::from_str(&std::fs::read_to_string(data.join("demo-connections.json")).unwrap())
            .unwrap();
    let token = demo["connections"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["tenant"] == "acme" && c["role"] == "owner" && c["toolset"] == "full")
        .unwrap()["token"]
        .as_str()
        .unwrap()
        .to_owned();
    // Read beside the running server.
    let store = store_sqlite::SqliteStore::open(data.join("gatehouse.db")).unwrap();
    approves_in_the_browser(browser, addr, &token, &store, "screenshots").await;
}

/// The same at the edge: the Worker serves the pages and the JSON API beside MCP, its items in
/// the workspace's and the global store objects (ADR 51), the demo seeded through its admin
/// route.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edge_a_person_approves_an_agents_quote_in_the_browser() {
    let what = "edge_a_person_approves_an_agents_quote_in_the_browser";
    let Some(browser) = browser_env() else {
        return;
    };
    let Some((url, store)) = crate::support::edge::pages_worker(what) else {
        return;
    };
    let token = crate::support::edge::demo_on_the_edge(&store, "acme").await;
    let addr = crate::support::edge::edge_addr(&url);
    approves_in_the_browser(browser, addr, &token, store.as_ref(), "screenshots-edge").await;
    crate::edge::passed(what);
}

/// An agent with `token` prepares a quote and a cancellation at `addr`; people approve in
/// Chromium, and the outcome is checked in `store`. Screenshots go to `target/<shots>/`.
async fn approves_in_the_browser(
    browser: Browser,
    addr: std::net::SocketAddr,
    token: &str,
    store: &dyn store::Store,
    shots: &str,
) {
    let probe = TestClient::http(addr)
        .request("tools/list", json!({}))
        .await;
    assert_eq!(probe.status, 401);
    let agent = TestClient::http(addr).with_header("authorization", &format!("Bearer {token}"));
    let customer = agent
        .call_tool("find_customers", json!({"query": "ada"}))
        .await
        .structured()["customers"][0]["customer"]
        .clone();
    let (preview, path) = prepare_quote(&agent, &customer).await;
    let cancel_path = prepare_cancellation_in_product_mode(addr, &agent).await;

    // A member without the right cannot approve.
    let (viewer, viewer_csrf) = form_login(addr, "victor").await;
    assert_eq!(
        approve_by_form(addr, &path, &viewer, &viewer_csrf).await,
        403,
        "a viewer may not approve money"
    );

    let shots = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("..")
        .join(shots);
    std::fs::create_dir_all(&shots).unwrap();
    let out = Command::new("node")
        .arg(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("browser/approve.mjs"))
        .args([
            format!("http://{addr}"),
            path.clone(),
            shots.display().to_string(),
            cancel_path,
        ])
        .env("PLAYWRIGHT_MODULES", browser.modules)
        .env("CHROMIUM", browser.chromium)
        .output()
        .expect("run node");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the browser run failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let seen: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert!(
        seen["summary"].as_str().unwrap().contains("71.36"),
        "the page showed the summary: {seen}"
    );
    assert_eq!(
        seen["lines_shown"], true,
        "the quote's lines and totals: {seen}"
    );
    assert!(
        seen["inbox_rows"].as_i64().unwrap_or(0) >= 2,
        "the inbox lists the quote and the cancellation: {seen}"
    );
    assert!(
        seen["inbox_text"]
            .as_str()
            .unwrap()
            .contains("Europe/Berlin"),
        "times in the workspace's zone: {seen}"
    );
    assert_eq!(seen["phone_inbox_fits"], true, "{seen}");
    assert_eq!(seen["phone_approval_fits"], true, "{seen}");
    assert_eq!(seen["approved"], true);
    assert_eq!(seen["cancellation_approved"], true);
    assert!(
        seen["cancellation_summary"]
            .as_str()
            .unwrap()
            .starts_with("Cancel booking"),
        "{seen}"
    );
    assert_eq!(seen["token_copied"], true, "the copy button works: {seen}");
    assert_eq!(seen["csp_refusals"], json!([]), "{seen}");
    assert_eq!(seen["agent_access"], "off");
    for shot in [
        "approvals-inbox.png",
        "phone-approvals-inbox.png",
        "phone-approval-page.png",
        "approval-page.png",
        "approval-done.png",
        "cancellation-done.png",
        "connections-page.png",
        "new-connection.png",
    ] {
        assert!(shots.join(shot).exists(), "{shot} was not saved");
    }

    // Exactly one outbox entry.
    let outbox = store
        .query(store::Query::partition("acme#outbox"))
        .await
        .unwrap()
        .items;
    assert_eq!(
        outbox.len(),
        1,
        "one message to the customer (the cancelled demo booking was a draft: nobody is told)"
    );
    let cancelled: Vec<_> = crate::support::audit_rows(store, "acme", None, 50)
        .await
        .into_iter()
        .filter(|e| e.action == "cancel_booking" && e.outcome == "ok")
        .map(|e| e.approval)
        .collect();
    assert_eq!(cancelled, [Some("product_page:olivia".to_owned())]);
    // A second approval and the reused token fail; nothing more is sent.
    let (owner, owner_csrf) = form_login(addr, "olivia").await;
    assert_eq!(
        approve_by_form(addr, &path, &owner, &owner_csrf).await,
        409,
        "a second approval fails: it was decided"
    );
    // The browser turned agent access off: the agent's next call is refused.
    let refused = agent.request("tools/call", json!({"name": "confirm_action", "arguments": {"confirm_token": preview.structured()["confirm_token"], "confirm_summary": preview.structured()["confirm_summary"]}})).await;
    assert_eq!(refused.status, 503, "agent access is off");
    assert_eq!(
        store
            .query(store::Query::partition("acme#outbox"))
            .await
            .unwrap()
            .items
            .len(),
        1
    );
}

/// The owner moves notify actions to approval in the product (the agent access page's form);
/// the agent prepares a cancellation, which the client cannot confirm. Returns its approval
/// page's path.
async fn prepare_cancellation_in_product_mode(
    addr: std::net::SocketAddr,
    agent: &TestClient,
) -> String {
    let (owner, csrf) = form_login(addr, "olivia").await;
    let headers = crate::support::pages::form_headers(addr, &owner);
    let set = TestClient::http(addr)
        .send(
            http::Method::POST,
            "/app/agent-access/approval",
            &headers,
            format!("class=notify&mode=product&csrf={csrf}").into(),
        )
        .await;
    assert_eq!(set.status, 200);
    let bookings = agent.call_tool("find_bookings", json!({})).await;
    let booking = bookings.structured()["bookings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["state"] != "cancelled")
        .expect("a demo booking to cancel")
        .clone();
    let preview = agent
        .call_tool(
            "cancel_booking",
            json!({"booking": booking["booking"], "version": booking["version"]}),
        )
        .await;
    let by_client = agent
        .call_tool("confirm_action", json!({"confirm_token": preview.structured()["confirm_token"], "confirm_summary": preview.structured()["confirm_summary"]}))
        .await;
    assert_eq!(
        by_client.structured()["code"],
        "forbidden",
        "{}",
        by_client.text()
    );
    let url = preview.structured()["approval_url"].as_str().unwrap();
    format!("/app/{}", url.split_once("/app/").unwrap().1)
}
