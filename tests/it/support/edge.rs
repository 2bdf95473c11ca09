//! The edge function served locally (`tests/edge.sh` builds `functions/mcp-worker` and serves
//! it in `workerd`; `tests/run` sets `GATEHOUSE_TEST_EDGE_URL`): its store reached through the
//! worker's test route, one Durable Object per test so that tests never share data.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use store::StoreError;
use store::remote::{RemoteStore, Transport};

/// The header (test configuration only) that picks the store object of a request.
pub(crate) const STORE_OBJECT_HEADER: &str = "x-gatehouse-test-store";

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

/// Store messages over HTTP to the worker's `POST /__store`, which hands them to the object.
#[derive(Debug)]
pub(crate) struct EdgeTransport {
    client: http_client::HttpClient,
    url: String,
    object: String,
}

#[async_trait::async_trait]
impl Transport for EdgeTransport {
    async fn send(&self, request: String) -> Result<String, StoreError> {
        let answer = self
            .client
            .post(
                &format!("{}/__store", self.url),
                &[
                    ("content-type", "application/json"),
                    (STORE_OBJECT_HEADER, &self.object),
                ],
                request.into(),
            )
            .await
            .map_err(|e| StoreError::Unavailable(e.to_string()))?;
        let text = String::from_utf8_lossy(&answer.body).into_owned();
        if answer.status != 200 {
            return Err(StoreError::Unavailable(format!(
                "{}: {text}",
                answer.status
            )));
        }
        Ok(text)
    }
}

/// A store in a new, empty object of the served worker, and the object's name.
pub(crate) fn fresh_edge_store(url: &str) -> (Arc<dyn store::Store>, String) {
    let object = format!("test-{}", super::store::unique_suffix());
    let transport = EdgeTransport {
        client: http_client::HttpClient::new(Duration::from_secs(30)).expect("an HTTP client"),
        url: url.to_owned(),
        object: object.clone(),
    };
    (Arc::new(RemoteStore::new(Arc::new(transport))), object)
}
