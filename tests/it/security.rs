//! The findings of the review from outside (issue 44, ADR 48), each through the real entry
//! point on every backend it touches: every decision checks the decider's rights, the pages
//! and the API answer only their own origin, sign-in counts an attempt before it checks it and
//! cannot be used to lock a member out from elsewhere, and a new password ends the sessions of
//! the old one. The demo's place, `serve`'s connection limits, the edge's admin route and the
//! release artifacts are in `security_processes` and `edge`.

use mcp_pipeline::Toolset;
use serde_json::json;

use crate::support::on_every_backend;
use crate::web::{FORM, Reply, send, send_from, sign_in};
use crate::world::World;

/// An owner's `send_quote` preview waiting for a person; its approval page's path.
async fn quote_waiting(world: &World, agent: &mcp_test_client::TestClient) -> String {
    crate::booking_tools::tenant_settings(world, "acme", "EUR", "19").await;
    let customer = crate::support::created_customer(agent, "Ada", "ada@example.com").await;
    let lines = json!([{"description": "Filter", "quantity": "3", "unit_price": "19.99"}]);
    let quote = agent
        .call_tool(
            "create_quote",
            json!({"customer": customer, "lines": lines}),
        )
        .await
        .structured()["quote"]
        .clone();
    let preview = agent
        .call_tool(
            "send_quote",
            json!({"quote": quote["quote"], "version": quote["version"]}),
        )
        .await;
    let url = preview.structured()["approval_url"].as_str().unwrap();
    format!("/app/{}", url.split_once("/app/").unwrap().1)
}

/// The audit rows of `tenant` whose action or outcome is `what`.
async fn audited(world: &World, tenant: &str, what: &str) -> usize {
    crate::support::audit_rows(world.app.store.as_ref(), tenant, None, 100)
        .await
        .iter()
        .filter(|e| e.outcome == what || e.action == what)
        .count()
}

/// A viewer, and a dispatcher lacking `quotes:approve`, are refused rejecting an owner's
/// `send_quote` on the approval page as they are refused approving it (403); the action stays
/// pending, no rejection is audited, and the owner can still approve it. Before, a viewer's
/// `decision=reject` answered 200 "Rejected; nothing was done".
async fn rejecting_needs_what_approving_needs(world: World) {
    let (agent, _) = crate::booking_tools::setup(&world).await;
    world.member("acme", "vic", "viewer").await;
    world.member("acme", "dan", "dispatcher").await;
    let path = quote_waiting(&world, &agent).await;
    for member in ["vic", "dan"] {
        let (cookie, csrf) = sign_in(&world, "acme", member).await;
        for decision in ["reject", "approve"] {
            let r = send(
                &world,
                "POST",
                &path,
                &[FORM, ("cookie", &cookie)],
                &format!("decision={decision}&csrf={csrf}"),
            )
            .await;
            assert_eq!(r.status, 403, "{member} {decision}: {}", r.body);
            assert!(r.body.contains("quotes:approve"), "{}", r.body);
        }
    }
    assert_eq!(audited(&world, "acme", "rejected").await, 0);
    let (owner, csrf) = sign_in(&world, "acme", "ana").await;
    let page = send(&world, "GET", &path, &[("cookie", &owner)], "").await;
    assert!(page.body.contains("<dd>pending</dd>"), "{}", page.body);
    let approved = send(
        &world,
        "POST",
        &path,
        &[FORM, ("cookie", &owner)],
        &format!("decision=approve&csrf={csrf}"),
    )
    .await;
    assert_eq!(approved.status, 200, "{}", approved.body);
}
on_every_backend!(page_rejection_rights, rejecting_needs_what_approving_needs);

/// A dispatcher holding `connections:manage` may revoke their own connection but not the
/// owner's, which holds rights they lack (the owner's agent keeps working); the owner may
/// revoke anyone's. Before, `connections:manage` was enough for any connection.
async fn revoking_another_members_connection_needs_its_rights(world: World) {
    world.member("acme", "ana", "owner").await;
    world.member("acme", "dan", "dispatcher").await;
    let (owners, owner_token) = world.connect("acme", "ana", Toolset::Full).await;
    let (dispatchers, _) = world.connect("acme", "dan", Toolset::Full).await;
    let (dan, csrf) = sign_in(&world, "acme", "dan").await;
    let revoke = |cookie: String, csrf: String, id: String| {
        let world = &world;
        async move {
            send(
                world,
                "POST",
                "/app/connections/revoke",
                &[FORM, ("cookie", &cookie)],
                &format!("connection={id}&csrf={csrf}"),
            )
            .await
        }
    };
    let refused = revoke(dan.clone(), csrf.clone(), owners.clone()).await;
    assert_eq!(refused.status, 403, "{}", refused.body);
    assert!(refused.body.contains("quotes:approve"), "{}", refused.body);
    let still = world
        .client(&owner_token)
        .request("tools/list", json!({}))
        .await;
    assert_eq!(still.status, 200, "the owner's agent still works");
    assert_eq!(audited(&world, "acme", "connection.revoke").await, 0);
    let own = revoke(dan, csrf, dispatchers.clone()).await;
    assert_eq!(own.status, 303, "{}", own.body);
    let (ana, csrf) = sign_in(&world, "acme", "ana").await;
    let (second, _) = world.connect("acme", "dan", Toolset::Core).await;
    let by_owner = revoke(ana, csrf, second).await;
    assert_eq!(by_owner.status, 303, "{}", by_owner.body);
}
on_every_backend!(
    revocation_rights,
    revoking_another_members_connection_needs_its_rights
);

/// A workspace's switches change only for a member with `agent_access:manage`, whatever the
/// door: the service itself refuses a viewer (as the page and the CLI reach it), and nothing
/// changes.
async fn switches_check_the_deciders_rights(world: World) {
    world.member("acme", "ana", "owner").await;
    world.member("acme", "vic", "viewer").await;
    let viewer = crate::support::cli_actor("acme", "vic");
    let refused = world.app.switches.set_agent_access(&viewer, false).await;
    assert!(
        matches!(&refused, Err(identity::IdentityError::Forbidden(m)) if m.contains("agent_access:manage")),
        "{refused:?}"
    );
    let notify = mcp_pipeline::EffectClass::Notify;
    let product = mcp_pipeline::ApprovalMode::Product;
    let refused = world
        .app
        .switches
        .set_approval_mode(&viewer, notify, product)
        .await;
    assert!(
        matches!(refused, Err(identity::IdentityError::Forbidden(_))),
        "{refused:?}"
    );
    assert!(
        world
            .app
            .switches
            .agent_access(&store::TenantId::new("acme"))
            .await
            .unwrap()
    );
    let modes = world
        .app
        .switches
        .approval_modes(&store::TenantId::new("acme"))
        .await
        .unwrap();
    assert_eq!(modes.mode(notify), mcp_pipeline::ApprovalMode::Client);
    for action in ["agent_access.off", "approval_mode.notify.product"] {
        assert_eq!(audited(&world, "acme", action).await, 0, "{action} audited");
    }
}
on_every_backend!(switch_rights, switches_check_the_deciders_rights);

/// The pages and the API answer only their own host and, for a change, their own origin: a
/// rebound name is 421, a sign-in or a change from another site 403 (no session, no change), a
/// cookie's change without `Origin` needs the pages' own `Referer`; a script with an API token
/// and no `Origin` still works. Every answer says `nosniff` and keeps its path from other sites.
async fn pages_answer_only_their_own_origin(world: World) {
    world.member("acme", "ana", "owner").await;
    let rebound = send(
        &world,
        "GET",
        "/app/login",
        &[("host", "attacker.example:8787")],
        "",
    )
    .await;
    assert_eq!(rebound.status, 421, "{}", rebound.body);
    let login = "tenant=acme&member=ana&password=correct+horse+battery";
    crate::support::set_password(&world.app, "acme", "ana", "correct horse battery")
        .await
        .unwrap();
    let foreign = send(
        &world,
        "POST",
        "/app/login",
        &[FORM, ("origin", "https://evil.example")],
        login,
    )
    .await;
    assert_eq!(foreign.status, 403, "{}", foreign.body);
    assert!(foreign.headers.get("set-cookie").is_none());
    let (cookie, csrf) = sign_in(&world, "acme", "ana").await;
    let off = format!("state=off&csrf={csrf}");
    let no_origin = [FORM, ("cookie", cookie.as_str()), ("x-no-origin", "1")];
    let r = send(&world, "POST", "/app/agent-access", &no_origin, &off).await;
    assert_eq!(
        r.status, 403,
        "a cookie's change without Origin: {}",
        r.body
    );
    let elsewhere = [
        FORM,
        ("cookie", cookie.as_str()),
        ("origin", "http://127.0.0.1:8787.evil.example"),
    ];
    let r = send(&world, "POST", "/app/agent-access", &elsewhere, &off).await;
    assert_eq!(r.status, 403, "{}", r.body);
    assert!(
        world
            .app
            .switches
            .agent_access(&store::TenantId::new("acme"))
            .await
            .unwrap(),
        "unchanged"
    );
    let referred = [
        FORM,
        ("cookie", cookie.as_str()),
        ("x-no-origin", "1"),
        ("referer", "http://127.0.0.1:8787/app/agent-access"),
    ];
    let r = send(&world, "POST", "/app/agent-access", &referred, &off).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(
        !world
            .app
            .switches
            .agent_access(&store::TenantId::new("acme"))
            .await
            .unwrap()
    );
    for header in ["x-content-type-options", "referrer-policy"] {
        assert!(r.headers.get(header).is_some(), "{header} missing");
    }
    let api = crate::support::api_token(&world.app, "acme", "ana")
        .await
        .unwrap();
    let bearer = format!("Bearer {api}");
    let body = json!({"name": "Ada", "email": "ada@example.com"}).to_string();
    let json = ("content-type", "application/json");
    let refused = send(
        &world,
        "POST",
        "/api/customers",
        &[
            json,
            ("authorization", &bearer),
            ("origin", "https://evil.example"),
        ],
        &body,
    )
    .await;
    assert_eq!(refused.status, 403, "{}", refused.body);
    let script = send(
        &world,
        "POST",
        "/api/customers",
        &[json, ("authorization", &bearer), ("x-no-origin", "1")],
        &body,
    )
    .await;
    assert_eq!(script.status, 201, "{}", script.body);
    assert_eq!(
        crate::booking_tools::customers_of(&world, "acme")
            .await
            .len(),
        1
    );
}
on_every_backend!(own_origin, pages_answer_only_their_own_origin);

/// A sign-in attempt from `address` with `password`.
async fn attempt(world: &World, address: &str, password: &str) -> Reply {
    send_from(
        world,
        Some(address),
        "POST",
        "/app/login",
        &[FORM],
        &format!("tenant=acme&member=ana&password={password}"),
    )
    .await
}

/// 40 wrong passwords at once from one address are checked at most 5 times (every check
/// answers 401, every attempt counted first and refused answers 429); before, the check came
/// before the count and 7 of 40 were checked on two cores.
async fn concurrent_guesses_are_counted_before_they_are_checked(world: World) {
    world.member("acme", "ana", "owner").await;
    crate::support::set_password(&world.app, "acme", "ana", "correct horse battery")
        .await
        .unwrap();
    let guesses = (0..40).map(|i| {
        let world = &world;
        async move {
            attempt(world, "192.0.2.7", &format!("wrong-{i}"))
                .await
                .status
        }
    });
    let statuses = futures_util::future::join_all(guesses).await;
    let checked = statuses.iter().filter(|s| **s == 401).count();
    let waited = statuses.iter().filter(|s| **s == 429).count();
    assert_eq!(checked + waited, 40, "{statuses:?}");
    assert!(checked <= 5, "{checked} of 40 were checked: {statuses:?}");
    assert!(checked >= 1, "{statuses:?}");
}
on_every_backend!(
    concurrent_guesses,
    concurrent_guesses_are_counted_before_they_are_checked,
    |backend| World::at_a_fixed_time(backend),
    threads = 2
);

/// Failures from one address hold that address only: the member still signs in from another;
/// `member unlock` lets the first address in at once, and so does a new password. Fifty
/// failures from many addresses hold the account everywhere until it is unlocked. Before, five
/// failures from anywhere kept the member out, one attempt a quarter hour kept it so, and
/// nothing unlocked it.
async fn nobody_can_keep_a_member_locked_out(world: World) {
    world.member("acme", "ana", "owner").await;
    let right = "correct+horse+battery";
    crate::support::set_password(&world.app, "acme", "ana", "correct horse battery")
        .await
        .unwrap();
    for _ in 0..5 {
        assert_eq!(attempt(&world, "198.51.100.1", "nope").await.status, 401);
    }
    let held = attempt(&world, "198.51.100.1", right).await;
    assert_eq!(held.status, 429, "{}", held.body);
    assert!(held.headers.get("retry-after").is_some());
    assert_eq!(
        attempt(&world, "203.0.113.9", right).await.status,
        303,
        "another address"
    );
    let console = crate::support::cli_actor("acme", "cli");
    world
        .app
        .members
        .unlock(&console, &store::MemberId::new("ana"))
        .await
        .unwrap();
    assert_eq!(
        attempt(&world, "198.51.100.1", right).await.status,
        303,
        "unlocked"
    );
    for i in 0..50 {
        let address = format!("198.51.100.{}", 10 + i / 4);
        attempt(&world, &address, "nope").await;
    }
    let everywhere = attempt(&world, "203.0.113.50", right).await;
    assert_eq!(everywhere.status, 429, "fifty failures hold the account");
    crate::support::set_password(&world.app, "acme", "ana", "another good password")
        .await
        .unwrap();
    let after_reset = attempt(&world, "203.0.113.50", "another+good+password").await;
    assert_eq!(
        after_reset.status, 303,
        "a new password unlocks: {}",
        after_reset.body
    );
}
on_every_backend!(
    lockout,
    nobody_can_keep_a_member_locked_out,
    |backend| World::at_a_fixed_time(backend),
    threads = 2
);

/// A new password ends every session started with the old one (a member's and an
/// operator's), and removing an operator ends theirs; before, sessions outlived both.
async fn sessions_end_with_their_password(world: World) {
    world.member("acme", "ana", "owner").await;
    let (cookie, _) = sign_in(&world, "acme", "ana").await;
    let home = send(&world, "GET", "/app/", &[("cookie", &cookie)], "").await;
    assert_eq!(home.status, 200);
    crate::support::set_password(&world.app, "acme", "ana", "a brand new password")
        .await
        .unwrap();
    let after = send(&world, "GET", "/app/", &[("cookie", &cookie)], "").await;
    assert_eq!(after.status, 303, "sent to sign in again: {}", after.body);

    let cli = crate::support::cli_actor("system", "cli");
    let store = world.app.store.as_ref();
    let outside = world.app.web.outside();
    let email = "ops@example.com";
    accounts::operators::create(store, &outside, &cli, email, "operator password 1")
        .await
        .unwrap();
    let first = operator_session(&world, "operator+password+1").await;
    assert_eq!(operator_page(&world, &first).await, 200);
    accounts::operators::set_password(store, &outside, &cli, email, "operator password 2")
        .await
        .unwrap();
    assert_eq!(
        operator_page(&world, &first).await,
        303,
        "a new password ends it"
    );
    let second = operator_session(&world, "operator+password+2").await;
    assert_eq!(operator_page(&world, &second).await, 200);
    accounts::operators::remove(store, &outside, &cli, email)
        .await
        .unwrap();
    assert_eq!(operator_page(&world, &second).await, 303, "removal ends it");
}

/// ops@example.com signs in with `password` (form-encoded); the session's cookie.
async fn operator_session(world: &World, password: &str) -> String {
    let body = format!("email=ops%40example.com&password={password}");
    let r = send(world, "POST", "/app/operator/login", &[FORM], &body).await;
    assert_eq!(r.status, 303, "{}", r.body);
    let set = r.headers.get("set-cookie").unwrap().to_str().unwrap();
    set.split(';').next().unwrap().to_owned()
}

/// The status of the operator's page for `cookie`.
async fn operator_page(world: &World, cookie: &str) -> u16 {
    send(world, "GET", "/app/operator", &[("cookie", cookie)], "")
        .await
        .status
}
on_every_backend!(session_ends, sessions_end_with_their_password);

/// A store that holds the demo refuses a real workspace and an operator beside it (the demo's
/// passwords are published); a store without it takes them.
async fn no_real_workspace_beside_the_demo(world: World) {
    let seeded = app::demo::seed_if_empty(&world.app, chrono::Utc::now()).await;
    assert!(
        matches!(seeded, Ok(app::demo::Seeded::Now(_))),
        "{seeded:?}"
    );
    use crate::support::workspaces::{console, named, prices};
    let console = console("mycompany");
    let workspace = named("mycompany", "Europe/Berlin");
    let refused = accounts::workspaces::create(
        &world.app.store,
        &world.app.web.outside(),
        &console,
        &workspace,
        vec![prices("mycompany", "EUR", "19")],
    )
    .await;
    assert!(
        matches!(&refused, Err(accounts::AccountsError::Invalid(m)) if m.contains("gatehouse demo remove")),
        "{refused:?}"
    );
    let store = world.app.store.as_ref();
    let refused = accounts::operators::create(
        store,
        &world.app.web.outside(),
        &console,
        "me@example.com",
        "long password",
    )
    .await;
    assert!(refused.is_err(), "{refused:?}");
    let listed = accounts::workspaces::list(&world.app.store).await.unwrap();
    assert!(
        !listed.iter().any(|(id, _)| id == "mycompany"),
        "{listed:?}"
    );
}
on_every_backend!(demo_alone, no_real_workspace_beside_the_demo);

/// The OAuth settings of a world whose issuer publishes the RS256 test key for `use` and types
/// its tokens as `accept_untyped` says.
fn oauth_with(key_use: &str, accept_untyped: bool) -> app::Settings {
    let mut keys = crate::support::tokens::key_set(&["test-rs256"]);
    keys["keys"][0]["use"] = json!(key_use);
    let oauth = app::OAuth::new(
        identity::oauth::OAuthConfig {
            issuer: crate::world::ISSUER.into(),
            audience: crate::world::RESOURCE.into(),
            tenant_claim: "tenant".into(),
            accept_untyped,
        },
        std::sync::Arc::new(identity::oauth::StaticJwks(
            serde_json::from_value(keys).unwrap(),
        )),
    );
    app::Settings {
        oauth: Some(oauth),
        ..app::Settings::default()
    }
}

/// An access token's status at `world`'s endpoint, signed RS256 with `typ`.
async fn token_status(world: &World, typ: &str) -> u16 {
    let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::RS256);
    header.kid = Some("test-rs256".into());
    header.typ = Some(typ.into());
    let claims = crate::identity_contract::claims("acme", "user-olga");
    let token = crate::support::tokens::sign_with(header, &claims);
    world
        .anonymous()
        .with_header("authorization", &format!("Bearer {token}"))
        .request("tools/list", json!({}))
        .await
        .status
}

/// A key published for encryption verifies no access token, and a token typed `JWT` passes only
/// where the deployment accepts untyped tokens (`GATEHOUSE_OAUTH_ACCEPT_UNTYPED=1`).
async fn oauth_keys_and_token_types(backend: crate::support::store::Backend) {
    let Some(world) = World::with_settings(backend, oauth_with("enc", true)).await else {
        return;
    };
    world.member("acme", "olga", "owner").await;
    crate::identity_contract::oauth_connection(&world, "acme", "olga", "user-olga").await;
    assert_eq!(
        token_status(&world, "at+jwt").await,
        401,
        "a key for encryption"
    );
    let Some(world) = World::with_settings(backend, oauth_with("sig", true)).await else {
        return;
    };
    world.member("acme", "olga", "owner").await;
    crate::identity_contract::oauth_connection(&world, "acme", "olga", "user-olga").await;
    assert_eq!(token_status(&world, "at+jwt").await, 200);
    assert_eq!(
        token_status(&world, "JWT").await,
        200,
        "accepted when configured"
    );
    assert_eq!(token_status(&world, "id_token+jwt").await, 401);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oauth_keys_and_token_types_sqlite() {
    oauth_keys_and_token_types(crate::support::store::Backend::Sqlite).await;
}
