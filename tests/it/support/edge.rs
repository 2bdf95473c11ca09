//! The edge function served locally (`tests/edge.sh` builds `functions/mcp-worker` and serves
//! it in `workerd`; `tests/run` sets `GATEHOUSE_TEST_EDGE_URL`): its store reached through the
//! worker's test route, one Durable Object per test so that tests never share data.

use std::net::SocketAddr;
use std::sync::Arc;

/// The header (test configuration only) that names the prefix of a request's store objects.
pub(crate) const STORE_OBJECT_HEADER: &str = store_http::TEST_OBJECT_HEADER;

/// The locally served worker's base URL, from `GATEHOUSE_TEST_EDGE_URL`. Never skipped
/// silently: in CI a missing URL fails the test; elsewhere the skip is printed.
pub(crate) fn edge_url(what: &str) -> Option<String> {
    match std::env::var("GATEHOUSE_TEST_EDGE_URL") {
        Ok(url) if !url.is_empty() => Some(url.trim_end_matches('/').to_owned()),
        _ => {
            assert!(
                std::env::var_os("CI").is_none(),
                "{what}: GATEHOUSE_TEST_EDGE_URL is not set in CI; run the tests through tests/run"
            );
            eprintln!(
                "{what}: SKIPPED (GATEHOUSE_TEST_EDGE_URL not set; tests/run serves the worker in workerd and sets it)"
            );
            None
        }
    }
}

/// The worker's address (`http://127.0.0.1:PORT`).
pub(crate) fn edge_addr(url: &str) -> SocketAddr {
    url.trim_start_matches("http://")
        .parse()
        .unwrap_or_else(|e| panic!("GATEHOUSE_TEST_EDGE_URL={url} is not http://host:port: {e}"))
}

/// A store on new, empty objects of the served worker (through its `/admin/store` route, open
/// in the test configuration), and the prefix of their names: each key goes to its workspace's
/// object or the global one (ADR 51), as the app's own messages do.
pub(crate) fn fresh_edge_store(url: &str) -> (Arc<dyn store::Store>, String) {
    let prefix = format!("test-{}-", super::store::unique_suffix());
    (edge_store(url, Some(&prefix), None), prefix)
}

/// A store whose every message goes, unrouted, to the one new object `role` names after a
/// fresh prefix (`global`, or `t:<tenant>`), and that object's name.
pub(crate) fn pinned_edge_store(url: &str, role: &str) -> (Arc<dyn store::Store>, String) {
    let object = format!("test-{}-{role}", super::store::unique_suffix());
    (edge_store(url, None, Some(&object)), object)
}

/// The store of the served worker at `url`, its objects after `prefix` or only `pin`.
pub(crate) fn edge_store(
    url: &str,
    prefix: Option<&str>,
    pin: Option<&str>,
) -> Arc<dyn store::Store> {
    let store = store_http::connect(edge_endpoint(url, prefix, pin)).expect("an HTTP client");
    Arc::new(store)
}

/// The test configuration's admin endpoint of the worker at `url`.
pub(crate) fn edge_endpoint(
    url: &str,
    prefix: Option<&str>,
    pin: Option<&str>,
) -> store_http::Endpoint {
    store_http::Endpoint {
        url: url.to_owned(),
        admin_token: None,
        test_object: prefix.map(str::to_owned),
        test_pin: pin.map(str::to_owned),
    }
}

/// Sends `head` and then `body` on a new connection to `addr` and returns what came back
/// within `wait` (the connection is left open: a server that waits for the rest of a body
/// answers nothing in that time).
pub(crate) async fn answer_to_partial_request(
    addr: SocketAddr,
    head: &str,
    body: &[u8],
    wait: std::time::Duration,
) -> String {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream.write_all(head.as_bytes()).await.unwrap();
    // The server may answer, and stop reading, before all of it is sent.
    let _ = stream.write_all(body).await;
    let mut answer = vec![0u8; 4096];
    match tokio::time::timeout(wait, stream.read(&mut answer)).await {
        Ok(Ok(n)) => String::from_utf8_lossy(&answer[..n]).into_owned(),
        Ok(Err(e)) => format!("read failed: {e}"),
        Err(_) => String::new(),
    }
}

/// Runs `binary` (gatehouse's command line, or a product's own) with `args` on the worker at
/// `url` through its admin route, with the deployment's admin `token`; it must succeed; its
/// stdout.
pub(crate) fn administer(
    binary: &std::path::Path,
    url: &str,
    token: &str,
    args: &[&str],
) -> String {
    let mut command = std::process::Command::new(binary);
    command
        .args(args)
        .args(["--edge-url", url])
        .env("GATEHOUSE_EDGE_ADMIN_TOKEN", token);
    crate::support::processes::succeed(&mut command, args)
}

/// [`administer`] with `input` on the command's stdin.
pub(crate) fn administer_with_input(
    binary: &std::path::Path,
    url: &str,
    token: &str,
    args: &[&str],
    input: &str,
) -> String {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("stdin");
    std::fs::write(&file, input).unwrap();
    let mut command = std::process::Command::new(binary);
    command
        .args(args)
        .args(["--edge-url", url])
        .env("GATEHOUSE_EDGE_ADMIN_TOKEN", token)
        .stdin(std::fs::File::open(&file).unwrap());
    crate::support::processes::succeed(&mut command, args)
}

/// Waits until the global switch's last flip has reached every listed workspace's object of
/// `endpoint` (at most 20 s); the status then.
pub(crate) async fn switch_reached(endpoint: &store_http::Endpoint) -> store_http::SwitchStatus {
    let admin = store_http::Admin::new(endpoint.clone()).unwrap();
    let started = std::time::Instant::now();
    loop {
        let status = admin.switch_status().await.unwrap();
        if status.done {
            return status;
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(20),
            "the flip did not reach every workspace object in 20 s: {status:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// The worker served on objects no other test uses, and the folder of its objects in
/// workerd's storage (`tests/edge.sh`: `GATEHOUSE_TEST_EDGE_SCALE_URL` and `_STORAGE`).
pub(crate) fn scale_worker(what: &str) -> Option<(String, std::path::PathBuf)> {
    edge_url(what)?;
    let url = std::env::var("GATEHOUSE_TEST_EDGE_SCALE_URL").expect("tests/edge.sh sets it");
    let storage =
        std::env::var("GATEHOUSE_TEST_EDGE_SCALE_STORAGE").expect("tests/edge.sh sets it");
    Some((url, storage.into()))
}

/// The store objects in a folder of workerd's storage that hold data, and those that hold an
/// empty database: one SQLite file each (its alarms' `metadata.sqlite` aside). The runtime
/// opens an object's database when the object first runs a query, so an object that was only
/// read holds an empty one: one 4 KB page.
pub(crate) fn objects_in(storage: &std::path::Path) -> (usize, usize) {
    const EMPTY_DATABASE: u64 = 4096;
    let size = |path: &std::path::Path| std::fs::metadata(path).map_or(0, |m| m.len());
    let sizes: Vec<u64> = std::fs::read_dir(storage)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| {
                    p.extension().is_some_and(|x| x == "sqlite")
                        && p.file_stem().is_some_and(|s| s != "metadata")
                })
                // What a database holds may still be in its write-ahead log.
                .map(|p| size(&p) + size(&p.with_extension("sqlite-wal")))
                .collect()
        })
        .unwrap_or_default();
    let empty = sizes.iter().filter(|s| **s <= EMPTY_DATABASE).count();
    (sizes.len() - empty, empty)
}

/// Holds the object of `tenant` (of the objects after `prefix` at `url`) for `millis`: a store
/// message to it that asks it to hold its input first (test build only); returns when the
/// hold is over.
pub(crate) async fn hold_workspace_object(url: &str, prefix: &str, tenant: &str, millis: u64) {
    let http = http_client::HttpClient::new(std::time::Duration::from_secs(60)).unwrap();
    let read = store::remote::StoreRequest::Get(store::Key::new(format!("{tenant}#probe"), "x"));
    let millis = millis.to_string();
    let headers = [
        ("content-type", "application/json"),
        (store_http::TEST_OBJECT_HEADER, prefix),
        ("x-gatehouse-test-hold-ms", millis.as_str()),
    ];
    let answer = http
        .post(
            &format!("{url}{}", store_http::STORE_PATH),
            &headers,
            serde_json::to_string(&read).unwrap().into(),
        )
        .await
        .unwrap();
    assert_eq!(answer.status, 200);
}

/// Posts the store message `message` to the objects after `prefix` at `url` with the test
/// build's fault headers `faults`; the answer's text.
pub(crate) async fn post_with_faults(
    url: &str,
    prefix: &str,
    message: &store::remote::StoreRequest,
    faults: &[(&str, &str)],
) -> String {
    let http = http_client::HttpClient::new(std::time::Duration::from_secs(60)).unwrap();
    let mut headers = vec![
        ("content-type", "application/json"),
        (store_http::TEST_OBJECT_HEADER, prefix),
    ];
    headers.extend_from_slice(faults);
    let answer = http
        .post(
            &format!("{url}{}", store_http::STORE_PATH),
            &headers,
            serde_json::to_string(message).unwrap().into(),
        )
        .await
        .unwrap();
    assert_eq!(answer.status, 200);
    String::from_utf8_lossy(&answer.body).into_owned()
}

/// A world on the edge worker with the workspace acme, its owner ana, and a connection of
/// ana's with the full toolset; the connection's token.
pub(crate) async fn acme_on_the_edge() -> Option<(crate::world::World, String)> {
    let world = crate::world::World::on(super::store::Backend::Edge).await?;
    world.member("acme", "ana", "owner").await;
    let (_, token) = world
        .connect("acme", "ana", mcp_pipeline::Toolset::Full)
        .await;
    Some((world, token))
}

/// Runs `binary` with `args` on the worker at `url` (with the admin `token`, or none at all);
/// it must fail; its stderr.
pub(crate) fn administer_refused(
    binary: &std::path::Path,
    url: &str,
    token: Option<&str>,
    args: &[&str],
) -> String {
    let mut command = std::process::Command::new(binary);
    command.args(args).args(["--edge-url", url]);
    match token {
        Some(token) => command.env("GATEHOUSE_EDGE_ADMIN_TOKEN", token),
        None => command.env_remove("GATEHOUSE_EDGE_ADMIN_TOKEN"),
    };
    let output = command.output().unwrap();
    assert!(!output.status.success(), "{args:?} succeeded");
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The test build that delivers its outbox to a webhook on this machine (`tests/edge.sh`): its
/// URL, the port its receiver must listen on, and the secret it signs with. Only one test uses
/// it, since the port is fixed when the worker starts.
pub(crate) fn outbox_worker(what: &str) -> Option<(String, u16, String)> {
    edge_url(what)?;
    let variable = |name: &str| {
        std::env::var(name).unwrap_or_else(|_| panic!("{name} is not set; run tests/edge.sh start"))
    };
    let port = variable("GATEHOUSE_TEST_EDGE_WEBHOOK_PORT")
        .parse()
        .unwrap();
    Some((
        variable("GATEHOUSE_TEST_EDGE_OUTBOX_URL"),
        port,
        variable("GATEHOUSE_TEST_EDGE_WEBHOOK_SECRET"),
    ))
}

/// The test build serving the product's pages on its own objects, its public URL its own
/// loopback address (`tests/edge.sh`): its URL and its store, reached without a test prefix,
/// so that the browser's requests, which carry none, find what the test seeds. Only one test
/// uses it.
pub(crate) fn pages_worker(what: &str) -> Option<(String, Arc<dyn store::Store>)> {
    edge_url(what)?;
    let url = std::env::var("GATEHOUSE_TEST_EDGE_PAGES_URL").unwrap_or_else(|_| {
        panic!("GATEHOUSE_TEST_EDGE_PAGES_URL is not set; run tests/edge.sh start")
    });
    let store = edge_store(&url, None, None);
    Some((url, store))
}

/// Seeds the booking product's demo into `store` (as `gatehouse serve` does into an empty
/// store) and returns the MCP token of `tenant`'s owner's full connection.
pub(crate) async fn demo_on_the_edge(store: &Arc<dyn store::Store>, tenant: &str) -> String {
    let settings = app::Settings {
        oauth: None,
        ..crate::world::World::settings()
    };
    let app = app::build(
        &settings,
        Arc::clone(store),
        booking_product::Booking::shared(),
    )
    .unwrap();
    let app::demo::Seeded::Now(connections) = app::demo::seed_if_empty(&app, chrono::Utc::now())
        .await
        .unwrap()
    else {
        panic!("the pages worker's store was seeded before: restart tests/edge.sh");
    };
    connections
        .into_iter()
        .find(|c| c.tenant == tenant && c.role == "owner" && c.toolset == "full")
        .expect("the demo's owner connection")
        .token
}
