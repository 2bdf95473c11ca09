//! The edge at scale (ADR 51), in `workerd`: each workspace's items in a store object of its
//! own, a busy workspace holding up no other, and the global kill switch reaching every
//! workspace's object from the global one, with the bound after which a cut-off workspace
//! stops its agents; each workspace object delivering its own outbox.

use std::time::{Duration, Instant};

use mcp_pipeline::Toolset;
use outbox_format::Status;
use serde_json::json;

use crate::edge::passed;
use crate::support::edge;
use crate::support::receiver::{Answer, Receiver};
use crate::support::store::Backend;
use crate::world::World;

fn customer(name: &str) -> serde_json::Value {
    let email = format!("{}@example.com", name.to_lowercase().replace(' ', "."));
    json!({"name": name, "email": email})
}

/// Five workspaces make five store objects, and the global one a sixth, counted in workerd's
/// storage of a worker no other test uses. Tokens whose locators name workspaces that do not
/// exist make none that holds anything: such an object is only read, so it makes no tables,
/// asks the global object nothing and is never told of a flip (the runtime still opens an
/// empty database for it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edge_each_workspace_has_a_store_object_of_its_own() {
    let Some((url, storage)) = edge::scale_worker("objects per workspace") else {
        return;
    };
    let (before, empty_before) = edge::objects_in(&storage);
    let world = World::on_edge_at(&url, World::settings());
    for i in 0..5 {
        let tenant = format!("ws{i}");
        world.member(&tenant, "ana", "owner").await;
        let (_, token) = world.connect(&tenant, "ana", Toolset::Full).await;
        let made = world
            .client(&token)
            .call_tool("create_customer", customer(&format!("Customer {i}")))
            .await;
        assert!(!made.is_error(), "{}", made.text());
    }
    // Tokens whose locators name workspaces that do not exist: refused, and the objects they
    // name store nothing, ask the global object nothing and are not told of flips.
    for i in 0..5 {
        let locator = identity::token::Locator {
            tenant: store::TenantId::new(format!("forged{i}")),
            creator: store::MemberId::new("mallory"),
            connection: store::ConnectionId::new("con_forged"),
        };
        let forged = identity::token::generate(&locator, &outside::SystemRandomness);
        let refused = world
            .client(&forged.secret)
            .request("tools/list", json!({}))
            .await;
        assert_eq!(refused.status, 401);
    }
    let (after, empty_after) = edge::objects_in(&storage);
    assert_eq!(
        after - before,
        6,
        "five workspace objects and the global one hold data, none a forged locator names"
    );
    assert!(
        empty_after - empty_before <= 5,
        "at most an empty database each"
    );
    let (url, prefix) = world.edge_objects().expect("an edge world");
    let admin = store_http::Admin::new(edge::edge_endpoint(&url, Some(prefix), None)).unwrap();
    assert_eq!(
        admin.switch_status().await.unwrap().workspaces,
        5,
        "the global object keeps the five workspaces' objects as copies, no forged one"
    );
    passed("edge_each_workspace_has_a_store_object_of_its_own");
}

/// While workspace A's object is held busy (a test-only fault: the object holds its input for
/// three seconds), workspace B's call completes; A's own call waits for its object.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn edge_a_busy_workspace_holds_up_no_other() {
    let Some(world) = World::on(Backend::Edge).await else {
        return;
    };
    world.member("acme", "ana", "owner").await;
    world.member("globex", "gus", "owner").await;
    let (_, a) = world.connect("acme", "ana", Toolset::Full).await;
    let (_, b) = world.connect("globex", "gus", Toolset::Full).await;
    for token in [&a, &b] {
        let warm = world
            .client(token)
            .call_tool("get_server_status", json!({}))
            .await;
        assert!(!warm.is_error(), "{}", warm.text());
    }
    let (url, prefix) = world.edge_objects().expect("an edge world");
    let prefix = prefix.to_owned();
    let hold = tokio::spawn(async move {
        edge::hold_workspace_object(&url, &prefix, "acme", 3000).await;
        Instant::now()
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    let call = |token: &str| {
        let client = world.client(token);
        async move {
            let found = client
                .call_tool("find_customers", json!({"query": "nobody"}))
                .await;
            assert!(!found.is_error(), "{}", found.text());
            Instant::now()
        }
    };
    let (a_done, b_done) = tokio::join!(call(&a), call(&b));
    let released = hold.await.unwrap();
    assert!(
        b_done < released,
        "globex's call completed while acme's object was held"
    );
    assert!(
        a_done > b_done && a_done >= released,
        "acme's call waited for its object"
    );
    passed("edge_a_busy_workspace_holds_up_no_other");
}

/// The global kill switch stops the next write of every one of eight workspaces once the flip
/// has reached their objects (the command waits for that and says how many), and a write
/// refused so leaves nothing; switched off, every workspace writes again.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn edge_the_global_switch_stops_the_next_write_of_every_workspace() {
    let Some(world) = World::on(Backend::Edge).await else {
        return;
    };
    let mut clients = Vec::new();
    for i in 0..8 {
        let tenant = format!("ws{i}");
        world.member(&tenant, "ana", "owner").await;
        let (_, token) = world.connect(&tenant, "ana", Toolset::Full).await;
        let client = world.client(&token);
        let made = client
            .call_tool("create_customer", customer(&format!("Before {i}")))
            .await;
        assert!(!made.is_error(), "{}", made.text());
        clients.push(client);
    }
    let (url, prefix) = world.edge_objects().expect("an edge world");
    let endpoint = edge::edge_endpoint(&url, Some(prefix), None);
    let oncall = crate::support::cli_actor("system", "oncall");
    world
        .app
        .switches
        .set_global(&oncall, true, "drill")
        .await
        .unwrap();
    let status = edge::switch_reached(&endpoint).await;
    assert_eq!((status.reached, status.workspaces), (8, 8), "{status:?}");
    for (i, client) in clients.iter().enumerate() {
        let refused = client
            .request(
                "tools/call",
                json!({"name": "create_customer", "arguments": customer(&format!("During {i}"))}),
            )
            .await;
        assert_eq!(refused.status, 503, "workspace ws{i}");
    }
    world
        .app
        .switches
        .set_global(&oncall, false, "drill over")
        .await
        .unwrap();
    edge::switch_reached(&endpoint).await;
    for (i, client) in clients.iter().enumerate() {
        let found = client
            .call_tool("find_customers", json!({"query": "During"}))
            .await;
        assert!(!found.is_error(), "{}", found.text());
        assert_eq!(
            found.structured()["customers"],
            json!([]),
            "ws{i}: the refused write left nothing"
        );
        let made = client
            .call_tool("create_customer", customer(&format!("After {i}")))
            .await;
        assert!(!made.is_error(), "ws{i}: {}", made.text());
    }
    passed("edge_the_global_switch_stops_the_next_write_of_every_workspace");
}

/// A workspace object that cannot reach the global object trusts its copy of the switch for
/// its bound only (60 s; a test-only fault shortens it): within it, calls are served (the
/// window ADR 51 names); past it, the switch counts as on and the call is refused, writing
/// nothing; in touch again, it is served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edge_a_workspace_cut_off_from_the_global_object_stops_after_its_bound() {
    let Some((world, token)) = edge::acme_on_the_edge().await else {
        return;
    };
    let first = world
        .client(&token)
        .call_tool("get_server_status", json!({}))
        .await;
    assert!(!first.is_error(), "{}", first.text());
    let cut_off = |bound: &str| {
        world
            .client(&token)
            .with_header("x-gatehouse-test-global-unreachable", "1")
            .with_header("x-gatehouse-test-bound-seconds", bound)
    };
    let within = cut_off("60")
        .call_tool("create_customer", customer("Within Bound"))
        .await;
    assert!(!within.is_error(), "{}", within.text());
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let past = cut_off("1")
        .request(
            "tools/call",
            json!({"name": "create_customer", "arguments": customer("Past Bound")}),
        )
        .await;
    assert_eq!(past.status, 503, "{}", String::from_utf8_lossy(&past.body));
    let again = world.client(&token);
    let found = again
        .call_tool("find_customers", json!({"query": "Bound"}))
        .await;
    assert!(!found.is_error(), "{}", found.text());
    let names: Vec<&str> = found.structured()["customers"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["name"]["untrusted_text"].as_str())
        .collect();
    assert_eq!(names, ["Within Bound"], "the refused write left nothing");
    passed("edge_a_workspace_cut_off_from_the_global_object_stops_after_its_bound");
}

/// `gatehouse kill-switch --edge-url` on a deployed worker (on objects of its own) waits for
/// the flip to reach every workspace's object and says how many it reached.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_flip_says_how_many_workspace_objects_have_it() {
    let Some(_) = edge::edge_url("the switch's fan-out from the CLI") else {
        return;
    };
    let url = std::env::var("GATEHOUSE_TEST_EDGE_SWITCH_URL").expect("tests/edge.sh sets it");
    let token = std::env::var("GATEHOUSE_TEST_EDGE_ADMIN_TOKEN").expect("tests/edge.sh sets it");
    let gatehouse = crate::support::processes::gatehouse_binary();
    let run = |args: &[&str]| edge::administer(&gatehouse, &url, &token, args);
    let mut agents = Vec::new();
    let suffix = crate::support::store::unique_suffix().replace('-', "");
    for region in ["north", "south", "east"] {
        let tenant = format!("{region}{suffix}");
        let tenant = tenant.as_str();
        let mut create = crate::support::processes::ACME.to_vec();
        let position = create.iter().position(|a| *a == "acme").expect("the id");
        create[position] = tenant;
        run(&create);
        run(&[
            "member", "set", "--tenant", tenant, "--member", "ana", "--role", "owner",
        ]);
        let created: serde_json::Value = serde_json::from_str(&run(&[
            "token", "create", "--tenant", tenant, "--member", "ana", "--client", "edge", "--json",
        ]))
        .unwrap();
        let agent = mcp_test_client::TestClient::http(edge::edge_addr(&url)).with_header(
            "authorization",
            &format!("Bearer {}", created["token"].as_str().expect("a token")),
        );
        let status = agent.call_tool("get_server_status", json!({})).await;
        assert!(!status.is_error(), "{}", status.text());
        agents.push(agent);
    }
    let on = run(&[
        "kill-switch",
        "on",
        "--reason",
        "drill",
        "--operator",
        "oncall",
    ]);
    let (reached, of) = reached_of(&on);
    // Every object of the worker that keeps a copy: these three, and any an earlier run made.
    assert!(reached == of && of >= 3, "{on}");
    for agent in &agents {
        let refused = agent.request("tools/list", json!({})).await;
        assert_eq!(refused.status, 503);
    }
    let off = run(&[
        "kill-switch",
        "off",
        "--reason",
        "drill over",
        "--operator",
        "oncall",
    ]);
    assert_eq!(reached_of(&off), (of, of), "{off}");
    for agent in &agents {
        assert_eq!(agent.request("tools/list", json!({})).await.status, 200);
    }
    // The edge's objects deliver their own messages: the outbox command says it does not
    // reach them instead of finding nothing due.
    let outbox = edge::administer_refused(&gatehouse, &url, Some(&token), &["outbox", "dispatch"]);
    assert!(outbox.contains("delivers its own messages"), "{outbox}");
    // The same command line writes a workspace's object out and reads it back.
    let north = format!("north{suffix}");
    let exported = run(&["edge", "export", "--tenant", &north]);
    let lines = exported.lines().count();
    assert!(
        lines > 0 && exported.contains(&format!("\"object\":\"t:{north}\"")),
        "{exported}"
    );
    let imported =
        edge::administer_with_input(&gatehouse, &url, &token, &["edge", "import"], &exported);
    assert!(
        imported.contains(&format!("0 items written, {lines} already there")),
        "{imported}"
    );
    passed("the_cli_flip_says_how_many_workspace_objects_have_it");
}

/// The counts in the command's "the switch reached N of M workspace objects".
fn reached_of(said: &str) -> (u64, u64) {
    let line = said
        .lines()
        .find_map(|l| l.strip_prefix("the switch reached "))
        .unwrap_or_else(|| panic!("no count in {said:?}"));
    let mut words = line.split(' ');
    let reached = words.next().and_then(|n| n.parse().ok());
    let of = words.nth(1).and_then(|n| n.parse().ok());
    match (reached, of) {
        (Some(reached), Some(of)) => (reached, of),
        _ => panic!("no count in {said:?}"),
    }
}

/// The items of every object of a world at `url` after `prefix`: the global one and `tenants`'.
async fn every_item(url: &str, prefix: &str, tenants: &[&str]) -> Vec<store::remote::ExportRow> {
    let admin = store_http::Admin::new(edge::edge_endpoint(url, Some(prefix), None)).unwrap();
    let mut rows = Vec::new();
    let objects =
        std::iter::once("global".to_owned()).chain(tenants.iter().map(|t| format!("t:{t}")));
    for object in objects {
        admin
            .export(&object, |page| {
                rows.extend(page);
                Ok(())
            })
            .await
            .unwrap();
    }
    rows
}

/// A workspace's objects exported from one deployment and imported into an empty one come
/// back whole: every item with every attribute (`expires_at` included), and the workspace's
/// agent token works there; imported again, nothing is written twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edge_a_deployment_is_exported_and_restored_whole() {
    let Some((world, token)) = edge::acme_on_the_edge().await else {
        return;
    };
    let client = world.client(&token);
    let made = client
        .call_tool("create_customer", customer("Ada Backup"))
        .await;
    assert!(!made.is_error(), "{}", made.text());
    let (url, prefix) = world.edge_objects().expect("an edge world");
    let rows = every_item(&url, prefix, &["acme"]).await;
    assert!(
        rows.iter()
            .any(|r| r.item.get(store::TTL_ATTRIBUTE).is_some()),
        "some item expires (a rate bucket, a replay record)"
    );
    let restored = format!("test-{}-", crate::support::store::unique_suffix());
    let admin = store_http::Admin::new(edge::edge_endpoint(&url, Some(&restored), None)).unwrap();
    let imported = admin.import(rows.clone()).await.unwrap();
    assert_eq!((imported.written, imported.present), (rows.len() as u64, 0));
    assert_eq!(
        every_item(&url, &restored, &["acme"]).await,
        rows,
        "every item, as it was"
    );
    let there = mcp_test_client::TestClient::http(edge::edge_addr(&url))
        .with_routing_header(edge::STORE_OBJECT_HEADER, &restored)
        .with_header("authorization", &format!("Bearer {token}"));
    let found = there
        .call_tool("find_customers", json!({"query": "Ada"}))
        .await;
    assert!(!found.is_error(), "{}", found.text());
    assert_eq!(
        found.structured()["customers"].as_array().map(Vec::len),
        Some(1)
    );
    let again = admin.import(rows.clone()).await.unwrap();
    assert_eq!((again.written, again.present), (0, rows.len() as u64));
    passed("edge_a_deployment_is_exported_and_restored_whole");
}

/// A deployment made before ADR 51 kept every item in one object (`store`), its tokens'
/// index items by hash alone; the move copies each item into the object it now belongs in,
/// and the workspace's agent token works after it (its index item moving into the tenant's
/// partition on first use).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edge_a_deployment_made_before_adr_51_moves_into_its_objects() {
    let Some((world, token)) = edge::acme_on_the_edge().await else {
        return;
    };
    let made = world
        .client(&token)
        .call_tool("create_customer", customer("Old Layout"))
        .await;
    assert!(!made.is_error(), "{}", made.text());
    let (url, prefix) = world.edge_objects().expect("an edge world");
    // What the one object of an older deployment held: the same items, the token's index
    // item under its hash alone, its connection without the mark of an index in the tenant's
    // partition.
    let hash = identity::token::hash(&token);
    let older = format!("test-{}-", crate::support::store::unique_suffix());
    let one_object = edge::edge_store(&url, None, Some(&format!("{older}store")));
    for row in every_item(&url, prefix, &["acme"]).await {
        let mut key = store::Key::new(row.pk, row.sk);
        if key == identity::keys::mcp_token(&store::TenantId::new("acme"), &hash) {
            key = identity::keys::legacy_mcp_token(&hash);
        }
        let mut item = store::item_from_json(&row.item.to_string()).unwrap();
        item.remove("index_in_tenant");
        one_object.put(store::Put::new(key, item)).await.unwrap();
    }
    let there = mcp_test_client::TestClient::http(edge::edge_addr(&url))
        .with_routing_header(edge::STORE_OBJECT_HEADER, &older)
        .with_header("authorization", &format!("Bearer {token}"));
    assert_eq!(
        there.request("tools/list", json!({})).await.status,
        401,
        "before the move, nothing is in the objects"
    );
    let admin = store_http::Admin::new(edge::edge_endpoint(&url, Some(&older), None)).unwrap();
    let (found, imported) = admin.move_from_one_object().await.unwrap();
    assert_eq!((imported.written as usize, imported.present), (found, 0));
    let found = there
        .call_tool("find_customers", json!({"query": "Old Layout"}))
        .await;
    assert!(!found.is_error(), "{}", found.text());
    assert_eq!(
        found.structured()["customers"].as_array().map(Vec::len),
        Some(1)
    );
    let (_, twice) = admin.move_from_one_object().await.unwrap();
    assert_eq!(twice.written, 0, "run again, nothing is copied twice");
    passed("edge_a_deployment_made_before_adr_51_moves_into_its_objects");
}

/// A store object deletes what expired when its alarm fires (within the hour; a test-only fault
/// fires it at once): the expired row is gone from the object's rows, not only absent to reads,
/// and a row that does not expire stays. Before ADR 51 the alarm was set at twice the current
/// time, so nothing was ever swept at the edge.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edge_expired_items_are_swept_by_the_objects_alarm() {
    let Some(url) = edge::edge_url("the sweep of expired items") else {
        return;
    };
    let prefix = format!("test-{}-", crate::support::store::unique_suffix());
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let mut expired = store::Item::new();
    expired.insert(store::TTL_ATTRIBUTE.into(), store::Value::n(now - 60));
    let live = store::Key::new("acme#probe", "live");
    let store = edge::edge_store(&url, Some(&prefix), None);
    store
        .put(store::Put::new(live.clone(), store::Item::new()))
        .await
        .unwrap();
    let put = store::remote::StoreRequest::Put(store::Put::new(
        store::Key::new("acme#probe", "expired"),
        expired,
    ));
    edge::post_with_faults(&url, &prefix, &put, &[("x-gatehouse-test-sweep-now", "1")]).await;
    let admin = store_http::Admin::new(edge::edge_endpoint(&url, Some(&prefix), None)).unwrap();
    let started = Instant::now();
    loop {
        let mut keys = Vec::new();
        admin
            .export("t:acme", |rows| {
                keys.extend(rows.into_iter().map(|r| r.sk));
                Ok(())
            })
            .await
            .unwrap();
        if keys == ["live"] {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the expired row is still stored: {keys:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(store.get(&live).await.unwrap().is_some());
    passed("edge_expired_items_are_swept_by_the_objects_alarm");
}

/// The requests the receiver got for the message `key`, once `count` of them came (or 20 s).
async fn deliveries_of(
    receiver: &Receiver,
    key: &store::Key,
    count: usize,
) -> Vec<crate::support::receiver::Received> {
    let id = key.sk.as_str();
    let of_key = || -> Vec<_> {
        receiver
            .received()
            .into_iter()
            .filter(|r| r.headers["idempotency-key"].ends_with(id))
            .collect()
    };
    let started = Instant::now();
    while of_key().len() < count && started.elapsed() < Duration::from_secs(20) {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    of_key()
}

/// The message at `key` once it is in `status` (or 20 s).
async fn message_once(world: &World, key: &store::Key, status: Status) -> outbox_format::Message {
    let started = Instant::now();
    loop {
        let message = crate::outbox::message(world, key).await;
        if message.status == status || started.elapsed() > Duration::from_secs(20) {
            return message;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A notify action confirmed at the edge reaches the webhook once, signed, sent by its
/// workspace object's alarm (nothing else runs a dispatcher there); a message the receiver
/// keeps failing is tried three times a second apart (the test build's retries) under one
/// idempotency key and ends a dead letter, and nothing is sent again; the CLI lists it in its
/// workspace's object and queues it again, and the object delivers it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edge_a_confirmed_message_is_delivered_once_and_a_failing_one_ends_dead() {
    let what = "edge_a_confirmed_message_is_delivered_once_and_a_failing_one_ends_dead";
    let Some((url, port, secret)) = edge::outbox_worker(what) else {
        return;
    };
    let receiver = Receiver::start_at(port, vec![]).await;
    // Unprefixed, so that the CLI finds the same objects; the workspace made as an operator
    // makes it, so that the CLI knows it.
    let world = World::on_edge_unprefixed(&url);
    let token = std::env::var("GATEHOUSE_TEST_EDGE_ADMIN_TOKEN").expect("tests/edge.sh sets it");
    let gatehouse = crate::support::processes::gatehouse_binary();
    edge::administer(&gatehouse, &url, &token, &crate::support::processes::ACME);
    let first = crate::outbox::one_message(&world).await;
    let got = deliveries_of(&receiver, &first, 1).await;
    assert_eq!(got.len(), 1, "the confirmed message reaches the receiver");
    let sent = message_once(&world, &first, Status::Sent).await;
    assert_eq!(sent.status, Status::Sent);
    let delivery = &got[0];
    assert_eq!(delivery.headers["idempotency-key"], sent.idempotency_key());
    assert_eq!(delivery.headers["gatehouse-attempt"], "1");
    let body: serde_json::Value = serde_json::from_str(&delivery.body).unwrap();
    assert_eq!(body["to"], "ada@example.com");
    assert!(delivery.is_signed_with(secret.as_bytes()));

    receiver.answer_next(vec![Answer::Status(500); 10]);
    crate::outbox::queue_one_more(&world).await;
    let messages = crate::outbox::acme_messages(&world).await;
    let second = messages.iter().map(|m| m.key()).find(|k| *k != first);
    let second = second.expect("a second message");
    let dead = message_once(&world, &second, Status::Dead).await;
    assert_eq!(dead.status, Status::Dead, "{dead:?}");
    assert_eq!(dead.attempts, 3);
    // Three seconds more: no further attempt, and the first message is not sent again.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let tries = deliveries_of(&receiver, &second, 3).await;
    let attempts: Vec<&str> = tries
        .iter()
        .map(|r| r.headers["gatehouse-attempt"].as_str())
        .collect();
    assert_eq!(attempts, ["1", "2", "3"]);
    assert!(
        tries
            .iter()
            .all(|r| r.headers["idempotency-key"] == dead.idempotency_key())
    );
    assert_eq!(deliveries_of(&receiver, &first, 1).await.len(), 1);
    assert_eq!(receiver.received().len(), 4);
    dead_letters_are_listed_and_retried_from_the_cli(&world, &url, &receiver, &second).await;
    passed(what);
}

/// `gatehouse outbox --edge-url`: the dead letter at `key` is listed in its workspace's object
/// and queued again, and its object delivers it; nothing else is sent.
async fn dead_letters_are_listed_and_retried_from_the_cli(
    world: &World,
    url: &str,
    receiver: &Receiver,
    key: &store::Key,
) {
    let token = std::env::var("GATEHOUSE_TEST_EDGE_ADMIN_TOKEN").expect("tests/edge.sh sets it");
    let gatehouse = crate::support::processes::gatehouse_binary();
    let run = |args: &[&str]| edge::administer(&gatehouse, url, &token, args);
    let unnamed = edge::administer_refused(&gatehouse, url, Some(&token), &["outbox", "dead"]);
    assert!(unnamed.contains("--tenant"), "{unnamed}");
    let id = crate::outbox::message(world, key).await.id;
    let listed = run(&["outbox", "dead", "--tenant", "acme"]);
    assert_eq!(listed.lines().count(), 1, "{listed}");
    assert!(listed.contains(&id), "{listed}");
    receiver.recover();
    run(&["outbox", "retry", "--tenant", "acme", &id]);
    let sent = message_once(world, key, Status::Sent).await;
    assert_eq!(sent.status, Status::Sent, "{sent:?}");
    assert_eq!(deliveries_of(receiver, key, 4).await.len(), 4);
    assert_eq!(receiver.received().len(), 5);
    assert_eq!(run(&["outbox", "dead", "--tenant", "acme"]), "");
}
