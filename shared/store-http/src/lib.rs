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
/// Where the CLI asks how far a flip of the global switch has reached.
pub const SWITCH_PATH: &str = "/admin/switch";
/// The header (test configuration only) that names the prefix of a request's store objects.
pub const TEST_OBJECT_HEADER: &str = "x-gatehouse-test-store";
/// The header (test configuration only) that hands every message to exactly one object.
pub const TEST_PIN_HEADER: &str = "x-gatehouse-test-object";

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
    /// The prefix of the store objects' names, in the test configuration only.
    pub test_object: Option<String>,
    /// The one object every message goes to, unrouted, in the test configuration only.
    pub test_pin: Option<String>,
}

impl Endpoint {
    /// `path` at the worker.
    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.url.trim_end_matches('/'))
    }

    /// The headers of every admin request: the bearer and the test configuration's.
    fn headers(&self) -> Vec<(&'static str, String)> {
        let mut headers = vec![("content-type", "application/json".to_owned())];
        if let Some(token) = &self.admin_token {
            headers.push(("authorization", format!("Bearer {token}")));
        }
        if let Some(prefix) = &self.test_object {
            headers.push((TEST_OBJECT_HEADER, prefix.clone()));
        }
        if let Some(object) = &self.test_pin {
            headers.push((TEST_PIN_HEADER, object.clone()));
        }
        headers
    }

    /// Posts `body` to `path`; the answer's text, or why there is none.
    async fn post(
        &self,
        client: &http_client::HttpClient,
        path: &str,
        body: String,
    ) -> Result<String, StoreError> {
        let url = self.url(path);
        let owned = self.headers();
        let headers: Vec<(&str, &str)> = owned.iter().map(|(n, v)| (*n, v.as_str())).collect();
        let answer = client
            .post(&url, &headers, body.into())
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

/// How far the global switch's last flip has reached the workspaces' store objects (ADR 51).
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
pub struct SwitchStatus {
    /// The flip's number (0: never flipped).
    pub version: i64,
    /// Workspaces listed in the deployment.
    pub workspaces: u64,
    /// Workspace objects told of the flip.
    pub reached: u64,
    /// Workspaces whose objects could not be told yet (retried with backoff).
    pub stragglers: Vec<String>,
    /// Every listed workspace's object has it.
    pub done: bool,
    /// How long a workspace object not reached may still trust its copy of the switch before
    /// it stops its agents.
    pub bound_seconds: i64,
}

/// Where the CLI reads a page of one object's items.
pub const EXPORT_PATH: &str = "/admin/export";
/// Where the CLI writes items back, each into its object.
pub const IMPORT_PATH: &str = "/admin/import";

/// The edge worker's administration beside its store: the switch's fan-out, and the export
/// and import of its objects' items (ADR 51).
#[derive(Debug)]
pub struct Admin {
    client: http_client::HttpClient,
    endpoint: Endpoint,
}

impl Admin {
    /// The administration of the worker at `endpoint` (https, or plain http to this machine).
    ///
    /// # Errors
    ///
    /// The URL is neither, or the HTTP client cannot be made.
    pub fn new(endpoint: Endpoint) -> Result<Admin, ConnectError> {
        let client = client_for(&endpoint)?;
        Ok(Admin { client, endpoint })
    }

    async fn ask<T: serde::de::DeserializeOwned>(
        &self,
        path: &str,
        body: String,
    ) -> Result<T, StoreError> {
        let text = self.endpoint.post(&self.client, path, body).await?;
        serde_json::from_str(&text).map_err(|e| {
            StoreError::Unavailable(format!("{path} answered something unreadable: {e}"))
        })
    }

    /// How far the global switch's last flip has reached the workspaces' objects.
    ///
    /// # Errors
    ///
    /// The worker could not be reached, refused, or answered something unreadable.
    pub async fn switch_status(&self) -> Result<SwitchStatus, StoreError> {
        self.ask(SWITCH_PATH, String::new()).await
    }

    /// Every item of the object `object` names (`global`, `t:<tenant>`, or `store`), page by
    /// page, each page handed to `each`.
    ///
    /// # Errors
    ///
    /// The worker could not be reached or refused, or `each` failed.
    pub async fn export(
        &self,
        object: &str,
        mut each: impl FnMut(Vec<store::remote::ExportRow>) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        let mut from = store::remote::ExportFrom {
            object: object.to_owned(),
            ask: store::remote::ExportAsk {
                after: None,
                limit: 500,
            },
        };
        loop {
            let body =
                serde_json::to_string(&from).map_err(|e| StoreError::Unavailable(e.to_string()))?;
            let page: store::remote::ExportPage = self.ask(EXPORT_PATH, body).await?;
            each(page.rows)?;
            match page.next {
                Some(next) => from.ask.after = Some(next),
                None => return Ok(()),
            }
        }
    }

    /// Copies every item of a deployment made before ADR 51 (its one object, `store`) into the
    /// object it now belongs in, where no item is at its key; how many it found, and what the
    /// import did. The old object is left as it was.
    ///
    /// # Errors
    ///
    /// The worker could not be reached or refused (what was copied before stays).
    pub async fn move_from_one_object(
        &self,
    ) -> Result<(usize, store::remote::Imported), StoreError> {
        let mut rows = Vec::new();
        self.export("store", |page| {
            rows.extend(page);
            Ok(())
        })
        .await?;
        let found = rows.len();
        Ok((found, self.import(rows).await?))
    }

    /// Writes each of `rows` into the object its key belongs in, where no item is at its key.
    ///
    /// # Errors
    ///
    /// The worker could not be reached or refused (what was written before stays).
    pub async fn import(
        &self,
        rows: Vec<store::remote::ExportRow>,
    ) -> Result<store::remote::Imported, StoreError> {
        let mut total = store::remote::Imported::default();
        for chunk in rows.chunks(store::remote::MOST_IMPORTED) {
            let body = serde_json::to_string(&store::remote::ImportRows {
                rows: chunk.to_vec(),
            })
            .map_err(|e| StoreError::Unavailable(e.to_string()))?;
            let done: store::remote::Imported = self.ask(IMPORT_PATH, body).await?;
            total.written += done.written;
            total.present += done.present;
        }
        Ok(total)
    }
}

#[derive(Debug)]
struct HttpTransport {
    client: http_client::HttpClient,
    endpoint: Endpoint,
}

#[async_trait::async_trait]
impl Transport for HttpTransport {
    async fn send(&self, request: String) -> Result<String, StoreError> {
        self.endpoint.post(&self.client, STORE_PATH, request).await
    }
}

/// The store behind `endpoint`. The admin token travels only over https, or plain http to
/// this machine (a local `workerd`): any other URL is refused before anything is sent.
pub fn connect(endpoint: Endpoint) -> Result<RemoteStore, ConnectError> {
    let client = client_for(&endpoint)?;
    Ok(RemoteStore::new(Arc::new(HttpTransport {
        client,
        endpoint,
    })))
}

/// The HTTP client for `endpoint`, refused before anything is sent when its URL would carry the
/// admin token in the clear.
fn client_for(endpoint: &Endpoint) -> Result<http_client::HttpClient, ConnectError> {
    if !outside::destination::is_secure_or_loopback(&endpoint.url) {
        return Err(ConnectError::Insecure(endpoint.url.clone()));
    }
    http_client::HttpClient::new(Duration::from_secs(30))
        .map_err(|e| ConnectError::Client(e.to_string()))
}
