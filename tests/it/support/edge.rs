//! The edge function served locally (`tests/edge.sh` builds `functions/mcp-worker` and serves
//! it in `workerd`; `tests/run` sets `GATEHOUSE_TEST_EDGE_URL`): its store reached through the
//! worker's test route, one Durable Object per test so that tests never share data.

use std::net::SocketAddr;
use std::sync::Arc;

/// The header (test configuration only) that picks the store object of a request.
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

/// A store in a new, empty object of the served worker (through its `/admin/store` route, open
/// in the test configuration), and the object's name.
pub(crate) fn fresh_edge_store(url: &str) -> (Arc<dyn store::Store>, String) {
    let object = format!("test-{}", super::store::unique_suffix());
    let store = store_http::connect(store_http::Endpoint {
        url: url.to_owned(),
        admin_token: None,
        test_object: Some(object.clone()),
    })
    .expect("an HTTP client");
    (Arc::new(store), object)
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
