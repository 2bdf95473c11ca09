//! Administration through audited services (issue 14, defects 4 and 5): workspaces are created
//! with a validated id, zone and currency; members are added only to a workspace that exists,
//! and every change to them, their passwords (read from stdin) and their API tokens is audited;
//! removing a member ends every credential their person made, for good; API tokens expire and
//! can be revoked; sign-in slows down per account and per client address.

use std::io::Write as _;
use std::process::{Command, Stdio};

use mcp_pipeline::Toolset;
use serde_json::json;

use crate::support::on_every_backend;
use crate::support::processes::{ACME, gatehouse, gatehouse_binary};
use crate::web::{FORM, send, send_from};
use crate::world::World;

/// Runs `gatehouse args` with `stdin`; returns (success, stdout, stderr).
fn run(args: &[&str], data: &std::path::Path, stdin: &str) -> (bool, String, String) {
    let mut child = Command::new(gatehouse_binary())
        .args(args)
        .arg("--data-dir")
        .arg(data)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

async fn audit_actions(data: &std::path::Path, tenant: &str) -> Vec<String> {
    let store = store_sqlite::SqliteStore::open(data.join("gatehouse.db")).unwrap();
    crate::support::audit_rows(&store, tenant, None, 100)
        .await
        .into_iter()
        .map(|e| format!("{} by {}", e.action, e.actor))
        .collect()
}

#[tokio::test]
async fn the_cli_administers_through_audited_services_and_refuses_mistakes() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    // Workspaces: a reserved or malformed id, an unknown zone or currency are refused.
    for (bad, why) in [("system", "reserved"), ("Acme Inc", "not a workspace id")] {
        let mut args = ACME;
        args[2] = bad;
        let (ok, _, err) = run(&args, data, "");
        assert!(!ok && err.contains(why), "{bad}: {err}");
    }
    let mut mars = ACME;
    mars[6] = "Mars/Olympus";
    assert!(!run(&mars, data, "").0);
    let mut coins = ACME;
    coins[8] = "XYZ";
    assert!(!run(&coins, data, "").0);
    // A tax rate quotes could not use (more than four decimals, or past 100%) is refused at
    // once, not stored to break every later quote.
    for rate in ["7.12345", "101"] {
        let mut taxed = ACME;
        taxed[10] = rate;
        let (ok, _, err) = run(&taxed, data, "");
        assert!(!ok && err.contains("tax"), "{rate}: {err}");
    }
    assert_eq!(gatehouse(&["tenant", "list"], data), "");
    gatehouse(&ACME, data);
    assert_eq!(gatehouse(&["tenant", "list"], data), "acme\tAcme\n");
    // Members only join a workspace that exists.
    let (ok, _, err) = run(
        &[
            "member", "set", "--tenant", "no-such", "--member", "ana", "--role", "owner",
        ],
        data,
        "",
    );
    assert!(!ok && err.contains("no workspace"), "{err}");
    assert!(audit_actions(data, "no-such").await.is_empty());
    gatehouse(
        &[
            "member", "set", "--tenant", "acme", "--member", "ana", "--role", "owner",
        ],
        data,
    );
    gatehouse(
        &[
            "member", "set", "--tenant", "acme", "--member", "ana", "--role", "admin",
        ],
        data,
    );
    // The password comes from stdin, never from the command line.
    let (ok, _, err) = run(
        &[
            "member",
            "password",
            "--tenant",
            "acme",
            "--member",
            "ana",
            "--password",
            "x",
        ],
        data,
        "",
    );
    assert!(!ok && err.contains("--password"), "{err}");
    let (ok, _, err) = run(
        &["member", "password", "--tenant", "acme", "--member", "ana"],
        data,
        "correct horse battery\n",
    );
    assert!(ok, "{err}");
    // API tokens: made with an expiry, listed, revoked.
    let made = gatehouse(
        &[
            "member",
            "api-token",
            "create",
            "--tenant",
            "acme",
            "--member",
            "ana",
            "--days",
            "7",
        ],
        data,
    );
    let id = made.split_whitespace().nth(3).unwrap().to_owned();
    assert!(id.starts_with("tok_"), "{made}");
    let listed = gatehouse(&["member", "api-token", "list", "--tenant", "acme"], data);
    assert!(
        listed.contains(&id) && listed.contains("active"),
        "{listed}"
    );
    gatehouse(
        &["member", "api-token", "revoke", "--tenant", "acme", &id],
        data,
    );
    let listed = gatehouse(&["member", "api-token", "list", "--tenant", "acme"], data);
    assert!(listed.contains("revoked"), "{listed}");
    assert!(
        !run(
            &["member", "api-token", "revoke", "--tenant", "acme", &id],
            data,
            ""
        )
        .0
    );
    // Removing someone who is not a member is an error.
    let (ok, _, err) = run(
        &["member", "remove", "--tenant", "acme", "--member", "bob"],
        data,
        "",
    );
    assert!(!ok && err.contains("not a member"), "{err}");
    gatehouse(
        &["member", "remove", "--tenant", "acme", "--member", "ana"],
        data,
    );
    let audited = audit_actions(data, "acme").await;
    for expected in [
        "workspace.create by cli",
        "member.add by cli",
        "member.set by cli",
        "member.password by cli",
        "api_token.create by ana",
        "api_token.revoke by cli",
        "member.remove by cli",
    ] {
        assert!(
            audited.iter().any(|a| a == expected),
            "{expected} missing from {audited:?}"
        );
    }
    assert_eq!(
        audited.len(),
        7,
        "one row per change, none for refusals: {audited:?}"
    );
    let store = std::fs::read(data.join("gatehouse.db")).unwrap();
    assert!(
        !String::from_utf8_lossy(&store).contains("correct horse battery"),
        "the password is stored only as a hash"
    );
}

async fn removing_a_member_ends_their_credentials_for_good(world: World) {
    world.member("acme", "ana", "owner").await;
    let (_, mcp) = world.connect("acme", "ana", Toolset::Full).await;
    let api = crate::support::api_token(&world.app, "acme", "ana")
        .await
        .unwrap();
    let (cookie, _) = crate::web::sign_in(&world, "acme", "ana").await;
    let api_header = format!("Bearer {api}");
    let api_get = |h: String| {
        let world = &world;
        async move {
            send(
                world,
                "GET",
                "/api/customers",
                &[("authorization", h.as_str())],
                "",
            )
            .await
            .status
        }
    };
    assert_eq!(api_get(api_header.clone()).await, 200);
    assert_eq!(
        world
            .client(&mcp)
            .request("tools/list", json!({}))
            .await
            .status,
        200
    );
    let console = crate::support::cli_actor("acme", "cli");
    world
        .app
        .members
        .remove(&console, &store::MemberId::new("ana"))
        .await
        .unwrap();
    // The same id added again is a new person: none of the old credentials comes back.
    world.member("acme", "ana", "owner").await;
    assert_eq!(
        world
            .client(&mcp)
            .request("tools/list", json!({}))
            .await
            .status,
        401
    );
    assert_eq!(api_get(api_header).await, 401);
    let page = send(
        &world,
        "GET",
        "/app/connections",
        &[("cookie", &cookie)],
        "",
    )
    .await;
    assert_eq!(page.status, 303, "the old session is gone: {}", page.body);
    // New credentials of the new person work.
    let (_, fresh) = world.connect("acme", "ana", Toolset::Full).await;
    assert_eq!(
        world
            .client(&fresh)
            .request("tools/list", json!({}))
            .await
            .status,
        200
    );
    let new_api = crate::support::api_token(&world.app, "acme", "ana")
        .await
        .unwrap();
    assert_eq!(api_get(format!("Bearer {new_api}")).await, 200);
}
on_every_backend!(
    member_removal,
    removing_a_member_ends_their_credentials_for_good
);

async fn api_tokens_expire_and_can_be_revoked(world: World) {
    world.member("acme", "ana", "owner").await;
    let ana = crate::support::cli_actor("acme", "ana");
    let (token, secret) = world.app.api_tokens.create(&ana, Some(1)).await.unwrap();
    let header = format!("Bearer {secret}");
    let headers = [("authorization", header.as_str())];
    let get = || send(&world, "GET", "/api/customers", &headers, "");
    assert_eq!(get().await.status, 200);
    // A day and a second later the same token no longer authenticates.
    let later =
        mcp_pipeline::FixedClock::at(mcp_pipeline::Clock::now(&mcp_pipeline::SystemClock) + 86_401);
    let tomorrow = accounts::ApiTokens::new(
        world.app.store.clone(),
        booking::rights::for_role,
        outside::ClockAndRandomness::new(
            std::sync::Arc::new(later),
            world.app.web.randomness.clone(),
        ),
    );
    assert_eq!(tomorrow.authenticate(&secret).await.unwrap(), None);
    assert!(world.app.api_tokens.create(&ana, Some(366)).await.is_err());
    world.app.api_tokens.revoke(&ana, &token.id).await.unwrap();
    let refused = get().await;
    assert_eq!(refused.status, 401, "{}", refused.body);
    assert!(world.app.api_tokens.revoke(&ana, &token.id).await.is_err());
}
on_every_backend!(api_token_life, api_tokens_expire_and_can_be_revoked);

async fn sign_in_slows_down_per_account_and_address(world: World) {
    world.member("acme", "ana", "owner").await;
    crate::support::set_password(&world.app, "acme", "ana", "correct horse battery")
        .await
        .unwrap();
    let attempt = |member: &'static str, password: &'static str, address: &'static str| {
        let world = &world;
        async move {
            let body = format!("tenant=acme&member={member}&password={password}");
            send_from(world, Some(address), "POST", "/app/login", &[FORM], &body).await
        }
    };
    for _ in 0..5 {
        assert_eq!(attempt("ana", "wrong", "198.51.100.7").await.status, 401);
    }
    let throttled = attempt("ana", "wrong", "198.51.100.7").await;
    assert_eq!(throttled.status, 429, "{}", throttled.body);
    assert!(throttled.headers.contains_key("retry-after"));
    // The right password waits too from that address: guessing gains nothing there. From
    // another address the member signs in: failures elsewhere do not lock them out (ADR 48).
    let right = "correct%20horse%20battery";
    assert_eq!(attempt("ana", right, "198.51.100.7").await.status, 429);
    assert_eq!(attempt("ana", right, "203.0.113.9").await.status, 303);
    // One address failing on many accounts is slowed down as well.
    for i in 0..accounts::sign_in::ADDRESS_ATTEMPTS {
        let member: &'static str = Box::leak(format!("nobody{i}").into_boxed_str());
        assert_eq!(attempt(member, "wrong", "192.0.2.1").await.status, 401);
    }
    assert_eq!(attempt("eve", "wrong", "192.0.2.1").await.status, 429);
}
on_every_backend!(
    sign_in_throttle,
    sign_in_slows_down_per_account_and_address,
    // The wait after the fifth failure is two seconds: a slow machine must not outlast it.
    |backend| World::at_a_fixed_time(backend),
    threads = 2
);

/// The JSON API has MCP's limits per effect class, counted per API token, and shares the
/// tenant's buckets with MCP: paging a technician is a wake (3 per credential, 10 per
/// workspace a minute), whichever door it comes through.
async fn the_api_is_rate_limited_with_mcp(world: World) {
    world.member("acme", "ana", "owner").await;
    let tom =
        crate::booking_tools::seeded_technician(&world, "acme", "Tom Weber", "Europe/Berlin").await;
    let path = format!("/api/technicians/{tom}/pages");
    let page = |token: String| {
        let (world, path) = (&world, path.clone());
        async move {
            let bearer = format!("Bearer {token}");
            let headers = [
                ("content-type", "application/json"),
                ("authorization", bearer.as_str()),
            ];
            send(
                world,
                "POST",
                &path,
                &headers,
                r#"{"message": "Boiler down at Hauptstr. 1"}"#,
            )
            .await
        }
    };
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
    let first = crate::support::api_token(&world.app, "acme", "ana")
        .await
        .unwrap();
    for _ in 0..3 {
        let paged = page(first.clone()).await;
        assert_eq!(paged.status, 201, "{}", paged.body);
    }
    let refused = page(first.clone()).await;
    assert_eq!(refused.status, 429, "{}", refused.body);
    assert!(refused.headers.contains_key("retry-after"));
    assert_eq!(outbox().await, 3, "a refused call sends nothing");
    // Two more tokens fill the workspace's ten wakes with MCP's: the tenant's total holds.
    for _ in 0..2 {
        let token = crate::support::api_token(&world.app, "acme", "ana")
            .await
            .unwrap();
        for _ in 0..3 {
            assert_eq!(page(token.clone()).await.status, 201);
        }
    }
    let (_, mcp) = world.connect("acme", "ana", Toolset::Full).await;
    let agent = world.client(&mcp);
    let args = json!({"technician": tom, "message": "Boiler down"});
    let tenth = agent.call_tool("page_technician", args.clone()).await;
    assert!(!tenth.is_error(), "{}", tenth.text());
    let eleventh = agent.call_tool("page_technician", args).await;
    assert_eq!(
        eleventh.structured()["code"],
        "rate_limited",
        "{}",
        eleventh.text()
    );
    let token = crate::support::api_token(&world.app, "acme", "ana")
        .await
        .unwrap();
    assert_eq!(
        page(token).await.status,
        429,
        "a new token does not lift the workspace's limit"
    );
}
on_every_backend!(
    api_limits,
    the_api_is_rate_limited_with_mcp,
    // A rate window turning during the calls would refill the buckets.
    |backend| World::at_a_fixed_time(backend),
    threads = 2
);

/// Every flip of the kill switch keeps its reason in the audit trail, not only on the switch
/// (which the next flip overwrites); a reason too long to keep is refused and flips nothing.
#[tokio::test]
async fn the_kill_switch_reasons_stay_in_the_audit_trail() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    gatehouse(&ACME, data);
    gatehouse(&["kill-switch", "on", "--reason", "incident 42"], data);
    gatehouse(&["kill-switch", "off", "--reason", "resolved"], data);
    let long = "x".repeat(501);
    let (ok, _, err) = run(&["kill-switch", "on", "--reason", &long], data, "");
    assert!(!ok && err.contains("at most 500 are allowed"), "{err}");
    let store = store_sqlite::SqliteStore::open(data.join("gatehouse.db")).unwrap();
    let trail = crate::support::audit_rows(&store, "system", None, 100).await;
    let mut flips: Vec<(String, Option<String>)> =
        trail.into_iter().map(|e| (e.action, e.reason)).collect();
    flips.sort();
    assert_eq!(
        flips,
        [
            ("kill_switch.off".to_owned(), Some("resolved".to_owned())),
            ("kill_switch.on".to_owned(), Some("incident 42".to_owned())),
        ]
    );
}

/// `member set` without `--active` or `--inactive` keeps a member's active flag: changing a
/// deactivated member's role does not bring them (and their connections) back; `--active`
/// does.
#[tokio::test]
async fn a_role_change_keeps_a_deactivated_member_deactivated() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    gatehouse(&ACME, data);
    let set = |extra: &[&str]| {
        let mut args = vec!["member", "set", "--tenant", "acme", "--member", "bob"];
        args.extend_from_slice(extra);
        gatehouse(&args, data)
    };
    assert!(set(&["--role", "admin"]).contains("is an active admin"));
    assert!(set(&["--role", "admin", "--inactive"]).contains("is an inactive admin"));
    assert!(set(&["--role", "viewer"]).contains("is an inactive viewer"));
    assert!(set(&["--role", "viewer", "--active"]).contains("is an active viewer"));
    let (ok, _, err) = run(
        &[
            "member",
            "set",
            "--tenant",
            "acme",
            "--member",
            "bob",
            "--role",
            "viewer",
            "--active",
            "--inactive",
        ],
        data,
        "",
    );
    assert!(!ok && err.contains("cannot be used with"), "{err}");
}

/// A command that changes or reads a store refuses to run where there is none (a mistyped
/// `--data-dir`, `sudo` with another home): it would make an empty store and report success
/// while the server saw nothing. Setting one up still works on an empty folder; a DynamoDB
/// endpoint without a table is refused instead of ignored.
#[tokio::test]
async fn commands_on_a_store_refuse_a_folder_without_one() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    for args in [
        &["kill-switch", "on", "--reason", "x"][..],
        &["token", "list", "--tenant", "acme"][..],
        &["tenant", "list"][..],
    ] {
        let (ok, _, err) = run(args, data, "");
        assert!(
            !ok && err.contains("no gatehouse data at"),
            "{args:?}: {err}"
        );
    }
    assert!(!data.join("gatehouse.db").exists(), "no store was made");
    let (ok, _, err) = run(
        &[
            "tenant",
            "list",
            "--dynamodb-endpoint",
            "http://127.0.0.1:9",
        ],
        data,
        "",
    );
    assert!(!ok && err.contains("--dynamodb-table"), "{err}");
    gatehouse(&ACME, data);
    assert_eq!(gatehouse(&["tenant", "list"], data), "acme\tAcme\n");
}

/// A command naming a workspace that does not exist (a typo) says so and changes nothing,
/// instead of listing nothing or showing default approval modes as if they were acme's; a
/// connection asked for with an empty list of rights is refused rather than made useless.
#[tokio::test]
async fn a_mistyped_workspace_or_empty_rights_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    gatehouse(&ACME, data);
    gatehouse(
        &[
            "member", "set", "--tenant", "acme", "--member", "ana", "--role", "owner",
        ],
        data,
    );
    let before = audit_actions(data, "acme").await;
    for args in [
        &["token", "list", "--tenant", "acne"][..],
        &["member", "api-token", "list", "--tenant", "acne"][..],
        &["approval-mode", "--tenant", "acne", "--member", "ana"][..],
        &["agent-access", "on", "--tenant", "acne", "--member", "ana"][..],
        &["member", "remove", "--tenant", "acne", "--member", "ana"][..],
        &[
            "token", "revoke", "--tenant", "acne", "--member", "ana", "con_x",
        ][..],
        &["outbox", "retry", "--tenant", "acne", "x"][..],
    ] {
        let (ok, out, err) = run(args, data, "");
        assert!(
            !ok && err.contains("no workspace \"acne\""),
            "{args:?}: {out} {err}"
        );
    }
    for rights in [",", " , ", ""] {
        let (ok, out, err) = run(
            &[
                "token", "create", "--tenant", "acme", "--member", "ana", "--client", "laptop",
                "--rights", rights,
            ],
            data,
            "",
        );
        assert!(
            !ok && err.contains("at least one right"),
            "{rights:?}: {out} {err}"
        );
    }
    // An empty id names nothing: the caller is told what to give, not that the store failed.
    for (args, says) in [
        (
            &["token", "revoke", "--tenant", "acme", "--member", "ana", ""][..],
            "con_",
        ),
        (
            &["member", "api-token", "revoke", "--tenant", "acme", " "][..],
            "api-token list",
        ),
    ] {
        let (ok, out, err) = run(args, data, "");
        assert!(!ok && err.contains(says), "{args:?}: {out} {err}");
        assert!(!err.contains("store error"), "{args:?}: {err}");
    }
    assert_eq!(gatehouse(&["token", "list", "--tenant", "acme"], data), "");
    assert_eq!(
        audit_actions(data, "acme").await,
        before,
        "nothing was written"
    );
}

/// Looking at dead letters and requeueing one deliver nothing, so they work while the webhook's
/// settings are half made; delivering still refuses them.
#[tokio::test]
async fn dead_letters_are_listed_without_the_webhooks_settings() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    gatehouse(&ACME, data);
    let outbox = |command: &str| {
        Command::new(gatehouse_binary())
            .args(["outbox", command, "--data-dir"])
            .arg(data)
            .env(
                "GATEHOUSE_WEBHOOK_URL",
                "https://hooks.example.com/gatehouse",
            )
            .env_remove("GATEHOUSE_WEBHOOK_SECRET")
            .output()
            .unwrap()
    };
    let dead = outbox("dead");
    assert!(
        dead.status.success(),
        "{}",
        String::from_utf8_lossy(&dead.stderr)
    );
    let dispatch = outbox("dispatch");
    assert!(!dispatch.status.success());
    assert!(String::from_utf8_lossy(&dispatch.stderr).contains("GATEHOUSE_WEBHOOK_SECRET"));
}

/// `serve --demo-as-of` takes only today or a later day: a demo seeded as of a past day would
/// hold bookings in the past. The refusal comes before anything is made.
#[tokio::test]
async fn a_demo_as_of_a_past_day_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    for day in ["2020-01-01", "tomorrow"] {
        let (ok, _, err) = run(
            &["serve", "--addr", "127.0.0.1:0", "--demo-as-of", day],
            data,
            "",
        );
        assert!(!ok && err.contains("--demo-as-of"), "{day}: {err}");
    }
    assert!(!data.join("gatehouse.db").exists(), "no store was made");
}

/// `agent-access status` prints the workspace's agent access, as its help offers (review of
/// 2026-12-05: it answered "use on or off"), for any member and without writing anything;
/// changing it still needs agent_access:manage.
#[tokio::test]
async fn agent_access_status_is_printed() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    gatehouse(&ACME, data);
    for (member, role) in [("ana", "owner"), ("vic", "viewer")] {
        let set = [
            "member", "set", "--tenant", "acme", "--member", member, "--role", role,
        ];
        gatehouse(&set, data);
    }
    let status = |member: &str| {
        gatehouse(
            &[
                "agent-access",
                "status",
                "--tenant",
                "acme",
                "--member",
                member,
            ],
            data,
        )
    };
    let before = audit_actions(data, "acme").await;
    assert_eq!(status("vic").trim(), "agent access in acme is on");
    gatehouse(
        &["agent-access", "off", "--tenant", "acme", "--member", "ana"],
        data,
    );
    assert_eq!(status("vic").trim(), "agent access in acme is off");
    let (ok, _, err) = run(
        &["agent-access", "on", "--tenant", "acme", "--member", "vic"],
        data,
        "",
    );
    assert!(!ok && err.contains("may not change"), "{err}");
    assert_eq!(status("ana").trim(), "agent access in acme is off");
    let after = audit_actions(data, "acme").await;
    assert_eq!(
        after.len(),
        before.len() + 1,
        "only the change is audited: {after:?}"
    );
}

/// Commands say what happened where they used to say nothing or too little (review of
/// 2026-12-05): an empty dead-letter list says so on stderr (stdout stays empty for scripts);
/// `--tenant` explains itself in the help; a port in use names `--addr`; an origin with a
/// path is refused.
#[tokio::test]
async fn commands_say_what_happened() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    gatehouse(&ACME, data);
    let (ok, out, err) = run(&["outbox", "dead"], data, "");
    assert!(
        ok && out.is_empty() && err.contains("no dead letters"),
        "{out} {err}"
    );
    let (_, help, _) = run(&["token", "list", "--help"], data, "");
    assert!(help.contains("The workspace (tenant) id"), "{help}");
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let (ok, _, err) = run(&["serve", "--no-demo", "--addr", &addr], data, "");
    assert!(!ok && err.contains("--addr 127.0.0.1:PORT"), "{err}");
    // An origin with a path matches no browser: refused as Lambda and the edge refuse it.
    let origin = [
        "serve",
        "--no-demo",
        "--allow-origin",
        "http://localhost:3000/",
    ];
    let (ok, _, err) = run(&origin, data, "");
    assert!(!ok && err.contains("not a list of origins"), "{err}");
}
