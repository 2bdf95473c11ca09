//! Operators: a global identity outside every tenant that signs in on the product's pages and
//! sets the global kill switch at `/app/operator`, through the real handler on every backend.
//! The switch holds from the next MCP call and is audited with the operator as actor; members
//! (even owners) cannot reach the page, operators cannot reach tenant pages, and a form without
//! its CSRF token changes nothing.

use std::io::Write as _;
use std::process::{Command, Stdio};

use mcp_pipeline::Toolset;
use serde_json::json;

use crate::support::on_every_backend;
use crate::web::{FORM, send, sign_in};
use crate::world::World;

const EMAIL: &str = "ops@example.com";
const PASSWORD: &str = "correct horse battery";

fn csrf_of(body: &str) -> String {
    crate::support::pages::form_value(body, "csrf")
}

async fn make_operator(world: &World) {
    let cli = crate::support::cli_actor("system", "tests");
    accounts::operators::create(
        world.app.store.as_ref(),
        &world.app.web.outside(),
        &cli,
        EMAIL,
        PASSWORD,
    )
    .await
    .unwrap();
}

/// Signs the operator in; returns the cookie pair and the page's CSRF token.
async fn operator_sign_in(world: &World) -> (String, String) {
    let r = send(
        world,
        "POST",
        "/app/operator/login",
        &[FORM],
        "email=OPS%40example.com&password=correct+horse+battery",
    )
    .await;
    assert_eq!(r.status, 303, "{}", r.body);
    assert_eq!(r.headers["location"], "/app/operator");
    let cookie = r.headers["set-cookie"].to_str().unwrap().to_owned();
    for flag in ["HttpOnly", "SameSite=Strict", "Path=/app"] {
        assert!(cookie.contains(flag), "{flag} missing: {cookie}");
    }
    let pair = cookie.split(';').next().unwrap().to_owned();
    let page = send(world, "GET", "/app/operator", &[("cookie", &pair)], "").await;
    assert_eq!(page.status, 200, "{}", page.body);
    (pair, csrf_of(&page.body))
}

async fn global_audit(world: &World) -> Vec<identity::AuditEntry> {
    crate::support::audit_rows(world.app.store.as_ref(), "system", None, 50)
        .await
        .into_iter()
        .filter(|e| e.action.starts_with("kill_switch"))
        .collect()
}

async fn an_operator_sets_the_kill_switch_on_the_page(world: World) {
    world.member("acme", "ana", "owner").await;
    let (_, token) = world.connect("acme", "ana", Toolset::Full).await;
    let agent = world.client(&token);
    make_operator(&world).await;
    assert_eq!(agent.request("tools/list", json!({})).await.status, 200);

    let wrong = send(
        &world,
        "POST",
        "/app/operator/login",
        &[FORM],
        "email=ops%40example.com&password=nope-nope",
    )
    .await;
    assert_eq!(wrong.status, 401);
    assert!(wrong.headers.get("set-cookie").is_none());
    let (cookie, csrf) = operator_sign_in(&world).await;

    // Without the session's CSRF token nothing changes.
    for body in [
        "state=on&reason=incident".to_owned(),
        "state=on&reason=incident&csrf=wrong".to_owned(),
    ] {
        let r = send(
            &world,
            "POST",
            "/app/operator",
            &[FORM, ("cookie", &cookie)],
            &body,
        )
        .await;
        assert_eq!(r.status, 403, "{body}: {}", r.body);
    }
    // A reason is required.
    let r = send(
        &world,
        "POST",
        "/app/operator",
        &[FORM, ("cookie", &cookie)],
        &format!("state=on&reason=+&csrf={csrf}"),
    )
    .await;
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(!world.app.switches.global_on().await.unwrap());
    assert!(global_audit(&world).await.is_empty(), "nothing audited");
    assert_eq!(agent.request("tools/list", json!({})).await.status, 200);

    // On: the next MCP call is refused, and the audit row names the operator.
    let on = send(
        &world,
        "POST",
        "/app/operator",
        &[FORM, ("cookie", &cookie)],
        &format!("state=on&reason=incident+42&csrf={csrf}"),
    )
    .await;
    assert_eq!(on.status, 200, "{}", on.body);
    assert!(on.body.contains("ON"), "{}", on.body);
    assert!(world.app.switches.global_on().await.unwrap());
    let refused = agent.request("tools/list", json!({})).await;
    assert_eq!(refused.status, 503, "{:?}", refused.body);
    let audit = global_audit(&world).await;
    assert_eq!(audit.len(), 1);
    assert_eq!(audit[0].action, "kill_switch.on");
    assert_eq!(audit[0].actor, store::MemberId::new(EMAIL));
    assert_eq!(audit[0].channel, identity::Channel::Web);

    // Off: the next call is served again.
    let off = send(
        &world,
        "POST",
        "/app/operator",
        &[FORM, ("cookie", &cookie)],
        &format!("state=off&reason=resolved&csrf={csrf}"),
    )
    .await;
    assert_eq!(off.status, 200, "{}", off.body);
    assert_eq!(agent.request("tools/list", json!({})).await.status, 200);
    let audit = global_audit(&world).await;
    assert_eq!(audit.len(), 2);
    assert_eq!(audit[0].action, "kill_switch.off");
    assert_eq!(audit[0].actor, store::MemberId::new(EMAIL));

    // An operator's session opens no tenant's pages and changes no tenant's switch.
    for path in ["/app/connections", "/app/activity", "/app/agent-access"] {
        let r = send(&world, "GET", path, &[("cookie", &cookie)], "").await;
        assert_eq!(r.status, 403, "{path}: {}", r.body);
    }
    // A mistyped operator page is not found, not called a workspace's page.
    let r = send(&world, "GET", "/app/operator/x", &[("cookie", &cookie)], "").await;
    assert_eq!(r.status, 404, "{}", r.body);
    let r = send(
        &world,
        "POST",
        "/app/agent-access",
        &[FORM, ("cookie", &cookie)],
        &format!("state=off&csrf={csrf}"),
    )
    .await;
    assert_eq!(r.status, 403, "{}", r.body);
    assert_eq!(agent.request("tools/list", json!({})).await.status, 200);
}
on_every_backend!(operator_page, an_operator_sets_the_kill_switch_on_the_page);

async fn members_cannot_reach_the_operator_page(world: World) {
    world.member("acme", "ana", "owner").await;
    make_operator(&world).await;
    let anonymous = send(&world, "GET", "/app/operator", &[], "").await;
    assert_eq!(anonymous.status, 303);
    assert_eq!(anonymous.headers["location"], "/app/operator/login");

    let (cookie, csrf) = sign_in(&world, "acme", "ana").await;
    let page = send(&world, "GET", "/app/operator", &[("cookie", &cookie)], "").await;
    assert_eq!(page.status, 403, "{}", page.body);
    assert!(page.body.contains("for operators"), "{}", page.body);
    let post = send(
        &world,
        "POST",
        "/app/operator",
        &[FORM, ("cookie", &cookie)],
        &format!("state=on&reason=owner+tries&csrf={csrf}"),
    )
    .await;
    assert_eq!(post.status, 403, "{}", post.body);
    assert!(!world.app.switches.global_on().await.unwrap());
    assert!(global_audit(&world).await.is_empty());

    // A member's password does not open the operator's sign-in, nor an operator's the
    // members' one.
    let r = send(
        &world,
        "POST",
        "/app/operator/login",
        &[FORM],
        "email=ana&password=correct+horse+battery",
    )
    .await;
    assert_eq!(r.status, 401);
    let r = send(
        &world,
        "POST",
        "/app/login",
        &[FORM],
        "tenant=&member=ops%40example.com&password=correct+horse+battery",
    )
    .await;
    assert_eq!(r.status, 401);
}
on_every_backend!(operator_only, members_cannot_reach_the_operator_page);

/// `gatehouse operator create --password-stdin` on the embedded store and on DynamoDB.
#[tokio::test]
async fn the_cli_creates_operators_on_every_backend() {
    let create = |extra: &[&str]| {
        let mut child = Command::new(crate::support::processes::gatehouse_binary())
            .args([
                "operator",
                "create",
                "--email",
                "Ops@Example.com",
                "--password-stdin",
            ])
            .args(extra)
            .env("AWS_ACCESS_KEY_ID", "test")
            .env("AWS_SECRET_ACCESS_KEY", "test")
            .env("AWS_REGION", "us-east-1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(format!("{PASSWORD}\n").as_bytes())
            .unwrap();
        child.wait_with_output().unwrap()
    };
    let check = |store: std::sync::Arc<dyn store::Store>| async move {
        assert!(
            accounts::operators::check_password(store.as_ref(), EMAIL, PASSWORD)
                .await
                .unwrap()
                .is_some()
        );
        assert!(
            accounts::operators::check_password(store.as_ref(), EMAIL, "wrong password")
                .await
                .unwrap()
                .is_none()
        );
        // The key has no `#`: no tenant's partition can hold it.
        assert!(
            store
                .get(&accounts::keys::operator(EMAIL))
                .await
                .unwrap()
                .is_some()
        );
    };

    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().to_str().unwrap().to_owned();
    let out = create(&["--data-dir", &data]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains(EMAIL));
    let again = create(&["--data-dir", &data]);
    assert!(!again.status.success(), "an operator is created once");
    check(std::sync::Arc::new(
        store_sqlite::SqliteStore::open(dir.path().join("gatehouse.db")).unwrap(),
    ))
    .await;

    let Some(endpoint) = crate::support::dynamodb_endpoint("operator create [dynamodb]") else {
        return;
    };
    let (dynamo, table) = crate::support::store::fresh_table(&endpoint, "cli-operator").await;
    let out = create(&["--dynamodb-table", &table, "--dynamodb-endpoint", &endpoint]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    check(std::sync::Arc::new(dynamo)).await;
}

/// The demo seed makes one operator, who signs in with the demo password.
async fn the_demo_seeds_an_operator(world: World) {
    let seeded = app::demo::seed_if_empty(&world.app, chrono::Utc::now()).await;
    assert!(
        matches!(seeded, Ok(app::demo::Seeded::Now(_))),
        "{seeded:?}"
    );
    // Seeded once: a second start finds it done.
    let again = app::demo::seed_if_empty(&world.app, chrono::Utc::now()).await;
    assert!(matches!(again, Ok(app::demo::Seeded::Before)), "{again:?}");
    assert!(
        accounts::operators::check_password(
            world.app.store.as_ref(),
            app::demo::DEMO_OPERATOR,
            app::demo::DEMO_PASSWORD
        )
        .await
        .unwrap()
        .is_some()
    );
    let body = format!(
        "email={}&password={}",
        app::demo::DEMO_OPERATOR.replace('@', "%40"),
        app::demo::DEMO_PASSWORD
    );
    let r = send(&world, "POST", "/app/operator/login", &[FORM], &body).await;
    assert_eq!(r.status, 303, "{}", r.body);
}
on_every_backend!(demo_operator, the_demo_seeds_an_operator);

/// The demo seeds whatever the date: its bookings are placed around the workspace zone's next
/// clock change, so a first start after the dates once written into it (the next spring)
/// still seeds, with every booking ahead and one on each side of the change: four months on
/// (past the next spring) and almost six years on. On SQLite (the seed is the same on every
/// backend).
#[tokio::test]
async fn the_demo_seeds_at_any_date() {
    for days_ahead in [120, 5 * 365 + 330] {
        let world = World::on(crate::support::store::Backend::Sqlite).await;
        let world = world.expect("SQLite is always there");
        let now = chrono::Utc::now() + chrono::TimeDelta::days(days_ahead);
        let seeded = app::demo::seed_if_empty(&world.app, now).await;
        assert!(
            matches!(seeded, Ok(app::demo::Seeded::Now(_))),
            "{now}: {seeded:?}"
        );
        for tenant in ["acme", "globex"] {
            let owner = crate::booking_tools::owner(tenant);
            let bookings = booking::Bookings::new(world.app.store.clone())
                .find(&owner, &booking::BookingFilter::default(), 100)
                .await
                .unwrap();
            assert!(bookings.len() >= 2, "{tenant}: {bookings:?}");
            assert!(
                bookings.iter().all(|b| b.start > now),
                "{tenant}: {bookings:?}"
            );
            let offset = |b: &booking::Booking| {
                use chrono::{Offset as _, TimeZone as _};
                b.zone
                    .offset_from_utc_datetime(&b.start.naive_utc())
                    .fix()
                    .local_minus_utc()
            };
            let offsets: std::collections::BTreeSet<_> = bookings.iter().map(offset).collect();
            assert!(
                offsets.len() >= 2,
                "{tenant}: a booking on each side of the change: {bookings:?}"
            );
        }
    }
}

/// A seed an earlier start began and never finished (stopped half way) is reported as such,
/// with when it began, instead of being taken for a finished one: `serve` then says the
/// workspaces may be incomplete and how to seed afresh. On SQLite.
#[tokio::test]
async fn an_unfinished_demo_seed_is_reported() {
    use store::Store as _;
    let world = World::on(crate::support::store::Backend::Sqlite).await;
    let world = world.expect("SQLite is always there");
    let mut marker = store::Item::new();
    marker.insert("seeded_at".into(), store::Value::s("2026-12-05T10:00:00Z"));
    marker.insert("state".into(), store::Value::s("seeding"));
    let key = store::Key::new("system", "demo_seeded");
    world
        .app
        .store
        .put(store::Put::new(key, marker))
        .await
        .unwrap();
    let seeded = app::demo::seed_if_empty(&world.app, chrono::Utc::now()).await;
    let Ok(app::demo::Seeded::Unfinished { started_at }) = seeded else {
        panic!("{seeded:?}")
    };
    assert_eq!(started_at, "2026-12-05T10:00:00Z");
}
