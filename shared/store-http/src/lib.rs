//! A [`store::Store`] reached over HTTP: each operation is one `POST` of a
//! [`store::remote::StoreRequest`] to the edge worker's `/admin/store` route, which hands it to
//! the store's Durable Object (ADR 20). The CLI administers an edge deployment through it
//! (with the deployment's admin token), and the tests drive the locally served worker.

use std::sync::Arc;
use std::time::Duration;

use store::StoreError;
use store::remote::{RemoteStore, Transport};

/// The worker's route for store messages.
pub const STORE_PATH: &str = "/admin/store";
/// The header (test configuration only) that picks the store object of a request.
pub const TEST_OBJECT_HEADER: &str = "x-gatehouse-test-store";

/// Why the store could not be reached.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// The URL would carry the admin token in the clear.
    #[error(
        "{0} is not an https URL (plain http only to 127.0.0.1, localhost or [::1]): the \
         deployment's admin token would cross the network in the clear"
    )]
    Insecure(String),
    /// The HTTP client could not be made.
    #[error("cannot make the HTTP client: {0}")]
    Client(String),
}

/// Where and how to reach the store.
#[derive(Debug, Clone)]
pub struct Endpoint {
    /// The worker's base URL (`https://gatehouse-mcp.example.workers.dev`).
    pub url: String,
    /// The deployment's admin token (`GATEHOUSE_ADMIN_TOKEN`), when the route needs one.
    pub admin_token: Option<String>,
    /// The store object, in the test configuration only.
    pub test_object: Option<String>,
}

#[derive(Debug)]
struct HttpTransport {
    client: http_client::HttpClient,
    endpoint: Endpoint,
}

#[async_trait::async_trait]
impl Transport for HttpTransport {
    async fn send(&self, request: String) -> Result<String, StoreError> {
        let url = format!("{}{STORE_PATH}", self.endpoint.url.trim_end_matches('/'));
        let bearer = self
            .endpoint
            .admin_token
            .as_ref()
            .map(|t| format!("Bearer {t}"));
        let mut headers = vec![("content-type", "application/json")];
        if let Some(bearer) = &bearer {
            headers.push(("authorization", bearer));
        }
        if let Some(object) = &self.endpoint.test_object {
            headers.push((TEST_OBJECT_HEADER, object));
        }
        let answer = self
            .client
            .post(&url, &headers, request.into())
            .await
            .map_err(|e| StoreError::Unavailable(format!("{url}: {e}")))?;
        let text = String::from_utf8_lossy(&answer.body).into_owned();
        match answer.status {
            200 => Ok(text),
            401 | 403 | 404 => Err(StoreError::Unavailable(format!(
                "{url} answered {}: is GATEHOUSE_ADMIN_TOKEN the deployment's admin token? {text}",
                answer.status
            ))),
            status => Err(StoreError::Unavailable(format!(
                "{url} answered {status}: {text}"
            ))),
        }
    }
}

/// The store behind `endpoint`. The admin token travels only over https, or plain http to
/// this machine (a local `workerd`): any other URL is refused before anything is sent.
pub fn connect(endpoint: Endpoint) -> Result<RemoteStore, ConnectError> {
    if !outside::destination::is_secure_or_loopback(&endpoint.url) {
        return Err(ConnectError::Insecure(endpoint.url));
    }
    let client = http_client::HttpClient::new(Duration::from_secs(30))
        .map_err(|e| ConnectError::Client(e.to_string()))?;
    Ok(RemoteStore::new(Arc::new(HttpTransport {
        client,
        endpoint,
    })))
}
