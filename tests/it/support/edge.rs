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
