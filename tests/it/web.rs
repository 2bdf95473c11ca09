//! The product's own adapters: pages (sessions, CSRF, approvals, agent access) and the JSON API
//! (product API tokens), and that credentials never cross between them and the MCP endpoint.

use bytes::Bytes;
use http_body_util::BodyExt as _;
use mcp_pipeline::Toolset;
use serde_json::{Value, json};

use crate::support::on_every_backend;
use crate::world::World;

pub(crate) struct Reply {
    pub(crate) status: u16,
    pub(crate) headers: http::HeaderMap,
    pub(crate) body: String,
}

pub(crate) async fn send(
    world: &World,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Reply {
    send_from(world, None, method, path, headers, body).await
}

/// [`send`] from a client address, as the transports tell it to the pages.
pub(crate) async fn send_from(
    world: &World,
    address: Option<&str>,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Reply {
    let mut req = http::Request::builder().method(method).uri(path);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    // As a browser on the pages sends them: the host of the console base, and on a change the
    // pages' origin (tests of the site's checks send their own).
    let named = |name: &str| headers.iter().any(|(k, _)| k.eq_ignore_ascii_case(name));
    let page = web::is_product_path(path);
    if page && !named("host") {
        req = req.header("host", crate::support::pages::HOST);
    }
    if page && method != "GET" && !named("origin") && !named("x-no-origin") {
        req = req.header("origin", crate::support::pages::ORIGIN);
    }
    let mut req = req
        .body(http_body_util::Full::new(Bytes::from(body.to_owned())))
        .unwrap();
    if let Some(address) = address {
        req.extensions_mut()
            .insert(web::ClientAddress(address.to_owned()));
    }
    let response = if web::is_product_path(path) {
        world.app.web.handle(req).await
    } else {
        world.app.http.handle(req).await
    };
    let (parts, body) = response.into_parts();
    let bytes = body.collect().await.unwrap().to_bytes();
    Reply {
        status: parts.status.as_u16(),
        headers: parts.headers,
        body: String::from_utf8_lossy(&bytes).into_owned(),
    }
}

pub(crate) const FORM: (&str, &str) = ("content-type", "application/x-www-form-urlencoded");

pub(crate) async fn sign_in(world: &World, tenant: &str, member: &str) -> (String, String) {
    // A new password ends the member's other sessions: set it only where there is none.
    let key = identity::keys::member(&store::TenantId::new(tenant), &store::MemberId::new(member));
    let stored = world.app.store.get(&key).await.unwrap();
    if !stored.is_some_and(|item| item.contains_key("password_hash")) {
        crate::support::set_password(&world.app, tenant, member, "correct horse battery")
            .await
            .unwrap();
    }
    let r = send(
        world,
        "POST",
        "/app/login",
        &[FORM],
        &format!("tenant={tenant}&member={member}&password=correct+horse+battery"),
    )
    .await;
    assert_eq!(r.status, 303, "{}", r.body);
    let cookie = r
        .headers
        .get("set-cookie")
        .unwrap()
        .to_str()
        .unwrap()
        .to_owned();
    let pair = cookie.split(';').next().unwrap().to_owned();
    // The CSRF token is in every form of the session's pages.
    let home = send(world, "GET", "/app/", &[("cookie", &pair)], "").await;
    (pair, crate::support::pages::form_value(&home.body, "csrf"))
}

async fn credentials_do_not_cross(world: World) {
    world.member("acme", "ana", "owner").await;
    let (_, mcp_token) = world.connect("acme", "ana", Toolset::Full).await;
    let bearer = format!("Bearer {mcp_token}");
    for path in [
        "/app/",
        "/app/connections",
        "/app/approvals/cfm_x",
        "/api/customers",
    ] {
        let r = send(&world, "GET", path, &[("authorization", &bearer)], "").await;
        assert_eq!(r.status, 401, "an MCP token opened {path}");
    }
    let api = crate::support::api_token(&world.app, "acme", "ana")
        .await
        .unwrap();
    let r = send(
        &world,
        "GET",
        "/api/customers",
        &[("authorization", &format!("Bearer {api}"))],
        "",
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).to_string();
    let r = send(
        &world,
        "POST",
        "/mcp",
        &[
            ("content-type", "application/json"),
            ("authorization", &format!("Bearer {api}")),
        ],
        &list,
    )
    .await;
    assert_eq!(r.status, 401, "a product API token opened the MCP endpoint");
    let (cookie, _) = sign_in(&world, "acme", "ana").await;
    let r = send(
        &world,
        "POST",
        "/mcp",
        &[("content-type", "application/json"), ("cookie", &cookie)],
        &list,
    )
    .await;
    assert_eq!(r.status, 401, "a session cookie opened the MCP endpoint");
}
on_every_backend!(credentials_cross, credentials_do_not_cross);

async fn sign_in_sets_a_safe_cookie_and_forms_need_csrf(world: World) {
    world.member("acme", "ana", "owner").await;
    crate::support::set_password(&world.app, "acme", "ana", "correct horse battery")
        .await
        .unwrap();
    let wrong = send(
        &world,
        "POST",
        "/app/login",
        &[FORM],
        "tenant=acme&member=ana&password=nope",
    )
    .await;
    assert_eq!(wrong.status, 401);
    assert!(wrong.headers.get("set-cookie").is_none());
    let ok = send(
        &world,
        "POST",
        "/app/login",
        &[FORM],
        "tenant=acme&member=ana&password=correct+horse+battery",
    )
    .await;
    let cookie = ok
        .headers
        .get("set-cookie")
        .unwrap()
        .to_str()
        .unwrap()
        .to_owned();
    for flag in ["HttpOnly", "SameSite=Strict", "Secure", "Path=/app"] {
        assert!(cookie.contains(flag), "{flag} missing: {cookie}");
    }
    let (pair, csrf) = sign_in(&world, "acme", "ana").await;
    for body in [
        "client=x&toolset=core".to_owned(),
        "client=x&toolset=core&csrf=wrong".to_owned(),
    ] {
        let r = send(
            &world,
            "POST",
            "/app/connections",
            &[FORM, ("cookie", &pair)],
            &body,
        )
        .await;
        assert_eq!(r.status, 403, "{body}");
    }
    assert!(
        world
            .app
            .connections
            .list(&store::TenantId::new("acme"))
            .await
            .unwrap()
            .is_empty(),
        "no connection was made without the token"
    );
    let r = send(
        &world,
        "POST",
        "/app/connections",
        &[FORM, ("cookie", &pair)],
        &format!("client=laptop&toolset=core&form=f-laptop&csrf={csrf}"),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.body.contains("ghm_"), "the new token is shown once");
    assert_eq!(
        world
            .app
            .connections
            .list(&store::TenantId::new("acme"))
            .await
            .unwrap()
            .len(),
        1
    );
    let anonymous = send(&world, "GET", "/app/connections", &[], "").await;
    assert_eq!(anonymous.status, 303, "pages need a session");
}
on_every_backend!(sessions, sign_in_sets_a_safe_cookie_and_forms_need_csrf);

async fn the_api_and_the_tools_refuse_the_same_inputs(world: World) {
    world.member("acme", "ana", "owner").await;
    let (_, token) = world.connect("acme", "ana", Toolset::Full).await;
    let client = world.client(&token);
    let api = format!(
        "Bearer {}",
        crate::support::api_token(&world.app, "acme", "ana")
            .await
            .unwrap()
    );
    let post = |body: Value| {
        let world = &world;
        let api = api.clone();
        async move {
            send(
                world,
                "POST",
                "/api/customers",
                &[
                    ("content-type", "application/json"),
                    ("authorization", &api),
                ],
                &body.to_string(),
            )
            .await
        }
    };
    for (input, field) in [
        (json!({"name": "X", "email": "not-an-email"}), "email"),
        (json!({"name": "", "email": "x@example.com"}), "name"),
        (
            json!({"name": "X", "email": "x@example.com", "phone": "call me"}),
            "phone",
        ),
        (
            json!({"name": "X", "email": "x@example.com", "separate": true}),
            "reason",
        ),
        (
            json!({"name": "X", "email": "x@example.com", "reason": "a second office"}),
            "reason",
        ),
    ] {
        let r = post(input.clone()).await;
        assert_eq!(r.status, 400, "{input}");
        assert_eq!(
            serde_json::from_str::<Value>(&r.body).unwrap()["field"],
            field
        );
        let tool = client.call_tool("create_customer", input.clone()).await;
        assert_eq!(
            tool.structured()["field"],
            field,
            "the tool refuses {input} for the same reason"
        );
    }
    // A duplicate made through one adapter is refused by the other.
    let made = post(json!({"name": "Ada", "email": "ada@example.com"})).await;
    assert_eq!(made.status, 201, "{}", made.body);
    let handle = serde_json::from_str::<Value>(&made.body).unwrap()["customer"]
        .as_str()
        .unwrap()
        .to_owned();
    let tool = client
        .call_tool(
            "create_customer",
            json!({"name": "Ada L", "email": "ADA@example.com"}),
        )
        .await;
    assert_eq!(tool.structured()["existing"], handle.as_str());
    let tool_made = client
        .call_tool(
            "create_customer",
            json!({"name": "Grace", "email": "grace@example.com"}),
        )
        .await;
    let grace = tool_made.structured()["customer"]["customer"]
        .as_str()
        .unwrap_or_else(|| panic!("{}", tool_made.text()))
        .to_owned();
    let r = post(json!({"name": "G", "email": "grace@example.com"})).await;
    assert_eq!(r.status, 409);
    assert_eq!(
        serde_json::from_str::<Value>(&r.body).unwrap()["existing"],
        grace.as_str()
    );
    let unknown = post(json!({"name": "X", "email": "y@example.com", "tenant_id": "globex"})).await;
    assert_eq!(
        unknown.status, 400,
        "unknown fields are refused by the API too"
    );
}
on_every_backend!(api_and_tools, the_api_and_the_tools_refuse_the_same_inputs);

async fn money_is_approved_in_the_product_by_a_member_with_the_right(world: World) {
    world.member("acme", "ana", "owner").await;
    world.member("acme", "vic", "viewer").await;
    let (_, token) = world.connect("acme", "ana", Toolset::Full).await;
    let agent = world.client(&token);
    crate::support::workspaces::create(&world.app.store, "acme", "EUR", "19").await;
    let customer = agent
        .call_tool(
            "create_customer",
            json!({"name": "Ada", "email": "ada@example.com"}),
        )
        .await
        .structured()["customer"]["customer"]
        .clone();
    let quote = agent.call_tool("create_quote", json!({"customer": customer, "lines": [{"description": "Filter", "quantity": "3", "unit_price": "19.99"}]})).await.structured()["quote"].clone();
    let preview = agent
        .call_tool(
            "send_quote",
            json!({"quote": quote["quote"], "version": quote["version"]}),
        )
        .await;
    let url = preview.structured()["approval_url"]
        .as_str()
        .unwrap()
        .to_owned();
    let path = url
        .split_once("/app/")
        .map(|(_, p)| format!("/app/{p}"))
        .unwrap();
    let outbox = || async {
        world
            .app
            .store
            .query(store::Query::partition("acme#outbox"))
            .await
            .unwrap()
            .items
            .len()
    };
    // A viewer sees the page but cannot approve.
    let (viewer, viewer_csrf) = sign_in(&world, "acme", "vic").await;
    let page = send(&world, "GET", &path, &[("cookie", &viewer)], "").await;
    assert!(
        page.body.contains("71.36"),
        "the summary shows the amount: {}",
        page.body
    );
    assert!(
        page.body.contains("The message to ada@example.com") && page.body.contains("Hello Ada"),
        "the page shows the exact message: {}",
        page.body
    );
    // The right it waits for is the one sending a quote takes (review of 2026-12-05: the
    // page named customers:notify, which a dispatcher has, and then refused the dispatcher).
    assert!(page.body.contains("quotes:approve"), "{}", page.body);
    assert!(!page.body.contains("customers:notify"), "{}", page.body);
    assert!(
        !page.body.contains("<button"),
        "no buttons for a viewer: {}",
        page.body
    );
    let refused = send(
        &world,
        "POST",
        &path,
        &[FORM, ("cookie", &viewer)],
        &format!("decision=approve&csrf={viewer_csrf}"),
    )
    .await;
    assert_eq!(refused.status, 403, "{}", refused.body);
    assert_eq!(outbox().await, 0);
    // The owner approves; exactly once.
    let (owner, csrf) = sign_in(&world, "acme", "ana").await;
    let no_csrf = send(
        &world,
        "POST",
        &path,
        &[FORM, ("cookie", &owner)],
        "decision=approve",
    )
    .await;
    assert_eq!(no_csrf.status, 403);
    assert_eq!(outbox().await, 0);
    // A quote changed since its preview cannot be sent as previewed: 409, the action's state,
    // not the member's rights (it answered 403).
    let other = agent.call_tool("create_quote", json!({"customer": customer, "lines": [{"description": "Valve", "quantity": "1", "unit_price": "5"}]})).await.structured()["quote"].clone();
    let stale = agent
        .call_tool(
            "send_quote",
            json!({"quote": other["quote"], "version": other["version"]}),
        )
        .await;
    let changed = agent.call_tool("update_quote", json!({"quote": other["quote"], "version": other["version"], "lines": [{"description": "Valve", "quantity": "2", "unit_price": "5"}]})).await;
    assert!(!changed.is_error(), "{}", changed.text());
    let stale_url = stale.structured()["approval_url"].as_str().unwrap();
    let stale_path = format!("/app/{}", stale_url.split_once("/app/").unwrap().1);
    let r = send(
        &world,
        "POST",
        &stale_path,
        &[FORM, ("cookie", &owner)],
        &format!("decision=approve&csrf={csrf}"),
    )
    .await;
    assert_eq!(r.status, 409, "{}", r.body);
    assert_eq!(outbox().await, 0);
    let approved = send(
        &world,
        "POST",
        &path,
        &[FORM, ("cookie", &owner)],
        &format!("decision=approve&csrf={csrf}"),
    )
    .await;
    assert_eq!(approved.status, 200, "{}", approved.body);
    assert!(approved.body.contains("Done."), "{}", approved.body);
    assert_eq!(outbox().await, 1, "exactly one outbox entry");
    let again = send(
        &world,
        "POST",
        &path,
        &[FORM, ("cookie", &owner)],
        &format!("decision=approve&csrf={csrf}"),
    )
    .await;
    assert_eq!(again.status, 409, "a second approval fails: it was decided");
    let reused = agent.call_tool("confirm_action", json!({"confirm_token": preview.structured()["confirm_token"], "confirm_summary": preview.structured()["confirm_summary"]})).await;
    assert!(
        reused.is_error(),
        "the token cannot be reused by the agent either"
    );
    assert_eq!(outbox().await, 1);
    // The agent sees the outcome on its next read.
    let read = agent
        .call_tool("get_quote", json!({"quote": quote["quote"]}))
        .await;
    assert_eq!(read.structured()["quote"]["state"], "sent");
    // Agent access off in the page: the next MCP call is refused.
    let off = send(
        &world,
        "POST",
        "/app/agent-access",
        &[FORM, ("cookie", &owner)],
        &format!("state=off&csrf={csrf}"),
    )
    .await;
    assert_eq!(off.status, 200, "{}", off.body);
    assert_eq!(agent.request("tools/list", json!({})).await.status, 503);
}
on_every_backend!(
    approvals,
    money_is_approved_in_the_product_by_a_member_with_the_right
);

/// Every `link` in a tool result opens the record's page for a signed-in member of the same
/// tenant; text the customer wrote is escaped; another tenant's record is not found; nobody
/// signed in is sent to sign in.
async fn links_in_tool_results_open_the_records_pages(world: World) {
    world.member("acme", "ana", "owner").await;
    world.member("globex", "gus", "owner").await;
    let (_, token) = world.connect("acme", "ana", Toolset::Full).await;
    let agent = world.client(&token);
    let created = agent
        .call_tool(
            "create_customer",
            json!({"name": "Grace <b>Hopper</b>", "email": "grace@example.com"}),
        )
        .await;
    assert!(!created.is_error(), "{}", created.text());
    let link = created.structured()["customer"]["link"]
        .as_str()
        .unwrap()
        .to_owned();
    let path = link
        .split_once("/app/")
        .map(|(_, rest)| format!("/app/{rest}"))
        .unwrap();
    assert!(path.starts_with("/app/customers/cus_"), "{path}");

    let anonymous = send(&world, "GET", &path, &[], "").await;
    assert_eq!(anonymous.status, 303, "nobody signed in is sent to sign in");

    let (ana, _) = sign_in(&world, "acme", "ana").await;
    let page = send(&world, "GET", &path, &[("cookie", &ana)], "").await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(page.body.contains("grace@example.com"), "{}", page.body);
    assert!(
        page.body.contains("Grace &lt;b&gt;Hopper&lt;/b&gt;") && !page.body.contains("<b>Hopper"),
        "the name is escaped: {}",
        page.body
    );

    let (gus, _) = sign_in(&world, "globex", "gus").await;
    let foreign = send(&world, "GET", &path, &[("cookie", &gus)], "").await;
    assert_eq!(
        foreign.status, 404,
        "another tenant's record: {}",
        foreign.body
    );
    assert!(!foreign.body.contains("grace@example.com"));

    // A quote's page shows the money the server computed.
    crate::support::workspaces::create(&world.app.store, "acme", "EUR", "19").await;
    let customer = created.structured()["customer"]["customer"].clone();
    let quoted = agent
        .call_tool(
            "create_quote",
            json!({"customer": customer, "lines": [{"description": "Filter", "quantity": "3", "unit_price": "19.99"}]}),
        )
        .await;
    assert!(!quoted.is_error(), "{}", quoted.text());
    let link = quoted.structured()["quote"]["link"].as_str().unwrap();
    let path = format!("/app/{}", link.split_once("/app/").unwrap().1);
    let page = send(&world, "GET", &path, &[("cookie", &ana)], "").await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(
        page.body.contains("<td>71.36</td>") && page.body.contains("<td>EUR</td>"),
        "the total and its currency: {}",
        page.body
    );
    let foreign = send(&world, "GET", &path, &[("cookie", &gus)], "").await;
    assert_eq!(foreign.status, 404);

    for wrong in [
        "/app/customers/tec_abc",
        "/app/customers/cus_",
        "/app/customers/cus_a%2Fb",
        "/app/invoices/inv_abc",
    ] {
        let r = send(&world, "GET", wrong, &[("cookie", &ana)], "").await;
        assert_eq!(r.status, 404, "{wrong}: {}", r.body);
    }
}
on_every_backend!(record_pages, links_in_tool_results_open_the_records_pages);

/// `GET /api/customers?query=...` searches; without a query it lists.
async fn the_customer_list_searches(world: World) {
    world.member("acme", "ana", "owner").await;
    let api = format!(
        "Bearer {}",
        crate::support::api_token(&world.app, "acme", "ana")
            .await
            .unwrap()
    );
    let headers = [
        ("content-type", "application/json"),
        ("authorization", api.as_str()),
    ];
    for (name, email) in [
        ("Ada Lovelace", "ada@example.com"),
        ("Tom Weber", "tom@example.com"),
    ] {
        let body = json!({"name": name, "email": email}).to_string();
        let created = send(&world, "POST", "/api/customers", &headers, &body).await;
        assert_eq!(created.status, 201, "{}", created.body);
    }
    let names = |body: &str| -> Vec<String> {
        let v: serde_json::Value = serde_json::from_str(body).unwrap();
        v["customers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap().to_owned())
            .collect()
    };
    let found = send(&world, "GET", "/api/customers?query=ada", &headers, "").await;
    assert_eq!(found.status, 200, "{}", found.body);
    assert_eq!(names(&found.body), ["Ada Lovelace"]);
    let all = send(&world, "GET", "/api/customers", &headers, "").await;
    assert_eq!(names(&all.body).len(), 2, "{}", all.body);
}
on_every_backend!(customer_search, the_customer_list_searches);

/// A sign-in form whose `%` is followed by a multi-byte character is refused as a wrong
/// sign-in, never a crash.
async fn an_odd_form_is_refused_not_a_crash(world: World) {
    world.member("acme", "ana", "owner").await;
    let r = send(
        &world,
        "POST",
        "/app/login",
        &[FORM],
        "tenant=acme&member=%a\u{e9}na&password=%\u{20ac}x%",
    )
    .await;
    assert!(r.status < 500, "{}: {}", r.status, r.body);
    assert!(
        r.headers.get("set-cookie").is_none(),
        "no session for an odd form"
    );
}
on_every_backend!(odd_forms, an_odd_form_is_refused_not_a_crash);

/// The approvals inbox: what agents prepared, who asked, when it expires in the workspace's
/// zone; the approval page shows what would be done; Approve only for a member who may.
async fn the_inbox_shows_what_waits_and_only_those_who_may_decide_get_the_buttons(world: World) {
    let (agent, _) = crate::booking_tools::setup(&world).await;
    crate::booking_tools::tenant_settings(&world, "acme", "EUR", "19").await;
    world.member("acme", "vic", "viewer").await;
    let ada =
        crate::booking_tools::seeded_customer(&world, "acme", "Ada Lovelace", "ada@example.com")
            .await;
    let preview = agent
        .call_tool("delete_customer", json!({"customer": ada}))
        .await;
    assert_eq!(
        preview.structured()["status"],
        "PREVIEW",
        "{}",
        preview.text()
    );
    let summary = preview.structured()["confirm_summary"]
        .as_str()
        .unwrap()
        .to_owned();
    let (owner, _) = sign_in(&world, "acme", "ana").await;
    let inbox = send(&world, "GET", "/app/approvals", &[("cookie", &owner)], "").await;
    assert_eq!(inbox.status, 200, "{}", inbox.body);
    // As maud escapes text: & < > and ".
    let escaped = summary
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;");
    assert!(inbox.body.contains(&escaped), "the summary: {}", inbox.body);
    assert!(
        inbox.body.contains("contract tests (made by ana)"),
        "{}",
        inbox.body
    );
    assert!(inbox.body.contains("Europe/Berlin"), "{}", inbox.body);
    assert!(
        inbox.body.contains("CET") || inbox.body.contains("CEST"),
        "the expiry in the workspace's zone: {}",
        inbox.body
    );
    assert!(
        inbox.body.contains("(in "),
        "how long is left: {}",
        inbox.body
    );
    assert!(inbox.body.contains("Review and decide"), "{}", inbox.body);
    assert!(
        inbox
            .body
            .contains("someone with <code>records:delete</code>")
            && !inbox.body.contains("you lack it"),
        "the right a decision takes: {}",
        inbox.body
    );
    let token = preview.structured()["confirm_token"]
        .as_str()
        .unwrap()
        .to_owned();
    let page = send(
        &world,
        "GET",
        &format!("/app/approvals/{token}"),
        &[("cookie", &owner)],
        "",
    )
    .await;
    assert!(
        page.body.contains("Asked by") && page.body.contains(">Approve</button>"),
        "{}",
        page.body
    );
    assert!(page.body.contains("What would be done"), "{}", page.body);
    // A viewer sees what waits, but no button to decide it.
    let (viewer, _) = sign_in(&world, "acme", "vic").await;
    let inbox = send(&world, "GET", "/app/approvals", &[("cookie", &viewer)], "").await;
    assert!(inbox.body.contains("(needs "), "{}", inbox.body);
    assert!(
        inbox
            .body
            .contains("<code>records:delete</code> (you lack it)"),
        "{}",
        inbox.body
    );
    assert!(!inbox.body.contains("Review and decide"), "{}", inbox.body);
    let page = send(
        &world,
        "GET",
        &format!("/app/approvals/{token}"),
        &[("cookie", &viewer)],
        "",
    )
    .await;
    assert!(
        !page.body.contains("<button"),
        "no button without the right: {}",
        page.body
    );
    assert!(page.body.contains("which you do not have"), "{}", page.body);
    // Decided, it leaves the inbox.
    let (owner2, csrf2) = sign_in(&world, "acme", "ana").await;
    let decided = send(
        &world,
        "POST",
        &format!("/app/approvals/{token}"),
        &[FORM, ("cookie", &owner2)],
        &format!("decision=approve&csrf={csrf2}"),
    )
    .await;
    assert_eq!(decided.status, 200, "{}", decided.body);
    let inbox = send(&world, "GET", "/app/approvals", &[("cookie", &owner2)], "").await;
    assert!(inbox.body.contains("Nothing is waiting"), "{}", inbox.body);
}
on_every_backend!(
    approvals_inbox,
    the_inbox_shows_what_waits_and_only_those_who_may_decide_get_the_buttons
);

/// Connections: a summary row each with the details folded away, times in words; making and
/// revoking only for members with the right; a new token comes with ready client
/// configurations and copy buttons.
async fn connections_show_configurations_and_only_allowed_actions(world: World) {
    crate::booking_tools::setup(&world).await;
    crate::booking_tools::tenant_settings(&world, "acme", "EUR", "19").await;
    world.member("acme", "vic", "viewer").await;
    let (viewer, _) = sign_in(&world, "acme", "vic").await;
    let page = send(
        &world,
        "GET",
        "/app/connections",
        &[("cookie", &viewer)],
        "",
    )
    .await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(
        page.body.contains("<details>"),
        "details folded: {}",
        page.body
    );
    assert!(!page.body.contains(">Revoke</button>"), "{}", page.body);
    assert!(
        !page.body.contains("action=\"/app/connections\""),
        "{}",
        page.body
    );
    assert!(
        page.body.contains("needs the right connections:manage"),
        "{}",
        page.body
    );
    let (owner, csrf) = sign_in(&world, "acme", "ana").await;
    let page = send(&world, "GET", "/app/connections", &[("cookie", &owner)], "").await;
    assert!(page.body.contains(">Revoke</button>"), "{}", page.body);
    assert!(
        page.body.contains("Times in Europe/Berlin"),
        "{}",
        page.body
    );
    let created = send(
        &world,
        "POST",
        "/app/connections",
        &[FORM, ("cookie", &owner)],
        &format!("client=laptop&toolset=standard&approval=client&form=f-standard&csrf={csrf}"),
    )
    .await;
    assert_eq!(created.status, 200, "{}", created.body);
    // This deployment has no store on the person's machine (as on Lambda and the edge): no
    // stdio configuration (transports::the_pages_stdio_configuration_works_as_shown has one).
    assert!(!created.body.contains("(stdio"), "{}", created.body);
    for config in [
        "claude mcp add --transport http gatehouse",
        "&quot;mcpServers&quot;",
        "&quot;servers&quot;: {&quot;gatehouse&quot;: {&quot;type&quot;: &quot;http&quot;",
        "data-copy=\"token\"",
    ] {
        assert!(created.body.contains(config), "{config}: {}", created.body);
    }
}
on_every_backend!(
    connections_page,
    connections_show_configurations_and_only_allowed_actions
);

/// A form body that is not a form (a `%` before a non-ASCII byte, bytes that are not UTF-8, a
/// cut escape) is a 400 that reads nothing: no sign-in attempt, no connection; the pages go on.
async fn a_malformed_form_is_a_400_and_changes_nothing(world: World) {
    crate::booking_tools::setup(&world).await;
    let (owner, csrf) = sign_in(&world, "acme", "ana").await;
    let before = world
        .app
        .connections
        .list(&store::TenantId::new("acme"))
        .await
        .unwrap()
        .len();
    for body in [
        "tenant=acme&member=%a\u{e9}x&password=x",
        "tenant=acme&password=%ff%fe",
        "x=%4",
    ] {
        let r = send(&world, "POST", "/app/login", &[FORM], body).await;
        assert_eq!(r.status, 400, "{body}: {}", r.body);
        let create = format!("client=%ff&toolset=standard&form=f4&csrf={csrf}");
        let r = send(
            &world,
            "POST",
            "/app/connections",
            &[FORM, ("cookie", &owner)],
            &create,
        )
        .await;
        assert_eq!(r.status, 400, "{}", r.body);
    }
    assert_eq!(
        world
            .app
            .connections
            .list(&store::TenantId::new("acme"))
            .await
            .unwrap()
            .len(),
        before
    );
    // The pages go on, and the refused bodies counted no failed sign-in.
    assert_eq!(send(&world, "GET", "/app/login", &[], "").await.status, 200);
    sign_in(&world, "acme", "ana").await;
}
on_every_backend!(
    malformed_form,
    a_malformed_form_is_a_400_and_changes_nothing
);

/// A form field with a fixed set of values (a toolset, an approval place, agent access on or
/// off) sent with another value is refused with 400 and changes nothing; before, an unknown
/// toolset became "standard" and any state but "on" turned agent access off. A revocation
/// naming no connection is the form's mistake too (it answered 503, "store error").
async fn a_choice_outside_its_options_is_refused(world: World) {
    crate::booking_tools::setup(&world).await;
    let (owner, csrf) = sign_in(&world, "acme", "ana").await;
    let audit = |world: &World| {
        let store = world.app.store.clone();
        async move {
            crate::support::audit_rows(store.as_ref(), "acme", None, 100)
                .await
                .len()
        }
    };
    let before = audit(&world).await;
    for (path, body) in [
        (
            "/app/connections",
            "client=laptop&toolset=everything&form=f1",
        ),
        ("/app/connections", "client=laptop&approval=maybe&form=f2"),
        ("/app/agent-access", "state=of"),
        ("/app/agent-access", ""),
        ("/app/connections/revoke", ""),
        ("/app/connections/revoke", "connection="),
    ] {
        let r = send(
            &world,
            "POST",
            path,
            &[FORM, ("cookie", &owner)],
            &format!("{body}&csrf={csrf}"),
        )
        .await;
        assert_eq!(r.status, 400, "{path} {body}: {}", r.body);
    }
    let listed = world
        .app
        .connections
        .list(&store::TenantId::new("acme"))
        .await
        .unwrap();
    assert_eq!(listed.len(), 1, "only setup's connection: {listed:?}");
    assert_eq!(audit(&world).await, before, "nothing was changed");
    // A client name out of bounds is the caller's mistake too, not a refusal of rights.
    let r = send(
        &world,
        "POST",
        "/app/connections",
        &[FORM, ("cookie", &owner)],
        &format!("client=&toolset=core&form=f3&csrf={csrf}"),
    )
    .await;
    assert_eq!(r.status, 400, "{}", r.body);
}
on_every_backend!(form_choices, a_choice_outside_its_options_is_refused);

/// The activity page shows the workspace's agent audit trail only to members with the right
/// `list_recent_changes` asks for (audit:read); a viewer gets 403 and none of it (review of
/// 2026-12-05: the page checked no right).
async fn the_activity_page_needs_audit_read(world: World) {
    world.member("acme", "ana", "owner").await;
    world.member("acme", "vic", "viewer").await;
    let (connection, token) = world.connect("acme", "ana", Toolset::Full).await;
    let made = world
        .client(&token)
        .call_tool(
            "create_customer",
            json!({"name": "Ada", "email": "ada@example.com"}),
        )
        .await;
    assert!(!made.is_error(), "{}", made.text());
    let (viewer, _) = sign_in(&world, "acme", "vic").await;
    let refused = send(&world, "GET", "/app/activity", &[("cookie", &viewer)], "").await;
    assert_eq!(refused.status, 403, "{}", refused.body);
    assert!(refused.body.contains("audit:read"), "{}", refused.body);
    assert!(!refused.body.contains(&connection), "{}", refused.body);
    assert!(
        !refused.body.contains("create_customer"),
        "{}",
        refused.body
    );
    let (owner, _) = sign_in(&world, "acme", "ana").await;
    let shown = send(&world, "GET", "/app/activity", &[("cookie", &owner)], "").await;
    assert_eq!(shown.status, 200, "{}", shown.body);
    assert!(shown.body.contains("create_customer"), "{}", shown.body);
}
on_every_backend!(activity_rights, the_activity_page_needs_audit_read);

/// One "new connection" form makes one connection: the page that shows the token, reloaded
/// (the browser sends the same form again), or a second press, makes nothing more and names
/// the connection the first made (review of 2026-12-05: each reload made another connection).
async fn a_connection_form_sent_twice_makes_one(world: World) {
    crate::booking_tools::setup(&world).await;
    let (owner, csrf) = sign_in(&world, "acme", "ana").await;
    let page = send(&world, "GET", "/app/connections", &[("cookie", &owner)], "").await;
    let form_id = crate::support::pages::form_value(&page.body, "form");
    let before = world
        .app
        .connections
        .list(&store::TenantId::new("acme"))
        .await
        .unwrap()
        .len();
    let body = format!("client=laptop&toolset=core&form={form_id}&csrf={csrf}");
    let post = async || {
        send(
            &world,
            "POST",
            "/app/connections",
            &[FORM, ("cookie", &owner)],
            &body,
        )
        .await
    };
    let first = post().await;
    assert_eq!(first.status, 200, "{}", first.body);
    assert!(
        first.body.contains("ghm_"),
        "the token, once: {}",
        first.body
    );
    let again = post().await;
    assert_eq!(again.status, 400, "{}", again.body);
    assert!(!again.body.contains("ghm_"), "{}", again.body);
    let listed = world
        .app
        .connections
        .list(&store::TenantId::new("acme"))
        .await
        .unwrap();
    assert_eq!(listed.len(), before + 1, "{listed:?}");
    let made = listed.iter().find(|c| c.client_name == "laptop").unwrap();
    assert!(
        again.body.contains(made.id.as_str()),
        "names the connection: {}",
        again.body
    );
    let other = send(&world, "GET", "/app/connections", &[("cookie", &owner)], "").await;
    assert!(
        !other.body.contains(&format!("value=\"{form_id}\"")),
        "a new page, a new form"
    );
}
on_every_backend!(connection_form_once, a_connection_form_sent_twice_makes_one);

/// A page asked with a method it does not take answers 405 with the ones it does (review of
/// 2026-12-05: `GET /app/logout` said "no such record", a POST to a read-only page 404).
async fn a_page_asked_the_wrong_way_says_how(world: World) {
    crate::booking_tools::setup(&world).await;
    let (owner, csrf) = sign_in(&world, "acme", "ana").await;
    for (method, path, allowed) in [
        ("GET", "/app/logout", "POST"),
        ("POST", "/app/activity", "GET"),
        ("PUT", "/app/connections", "GET, POST"),
    ] {
        let r = send(
            &world,
            method,
            path,
            &[FORM, ("cookie", &owner)],
            &format!("csrf={csrf}"),
        )
        .await;
        assert_eq!(r.status, 405, "{method} {path}: {}", r.body);
        let allow = r.headers.get("allow").and_then(|v| v.to_str().ok());
        assert_eq!(allow, Some(allowed), "{method} {path}");
    }
    let still = send(&world, "GET", "/app/", &[("cookie", &owner)], "").await;
    assert_eq!(still.status, 200, "the session was not ended by the GET");
}
on_every_backend!(wrong_method, a_page_asked_the_wrong_way_says_how);
