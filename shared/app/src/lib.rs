//! The composition root: one function builds the server every entry point runs (the Lambda
//! function, `gatehouse serve`, `gatehouse stdio`, the tests), so they cannot drift apart.
//! Entry points read their environment and hand typed settings here; this crate reads none.

mod status;

use std::sync::Arc;

use mcp_http::{HttpConfig, McpService};
use mcp_pipeline::{Registry, RegistryError, Server, ServerConfig, ToolSpec};
use store::Store;

/// Settings of one deployment.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Which store backend serves this process (for status and logs).
    pub backend: String,
    /// Origins allowed to call the endpoint.
    pub allowed_origins: Vec<String>,
    /// Largest accepted request body.
    pub max_body_bytes: usize,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            backend: "memory".into(),
            allowed_origins: Vec::new(),
            max_body_bytes: 1024 * 1024,
        }
    }
}

/// Everything a running gatehouse needs, built once per process and shared by requests.
#[derive(Debug, Clone)]
pub struct App {
    /// The MCP server.
    pub server: Arc<Server>,
    /// The HTTP service around it.
    pub http: McpService,
    /// The store.
    pub store: Arc<dyn Store>,
}

/// The tools every gatehouse serves, in `tools/list` order.
pub fn registry(settings: &Settings) -> Result<Registry, RegistryError> {
    let mut registry = Registry::new();
    registry.register(ToolSpec::new(status::GetServerStatus {
        backend: settings.backend.clone(),
    }))?;
    Ok(registry)
}

/// Builds the application on `store`.
pub fn build(settings: &Settings, store: Arc<dyn Store>) -> Result<App, RegistryError> {
    let config = ServerConfig {
        instructions: Some(
            "gatehouse exposes a field-service booking product. Read before you write; \
             every write tool says what it changes."
                .into(),
        ),
        ..ServerConfig::default()
    };
    let server = Server::new(config, registry(settings)?);
    let http = McpService::new(
        Arc::clone(&server),
        HttpConfig {
            allowed_origins: settings.allowed_origins.clone(),
            max_body_bytes: settings.max_body_bytes,
            ..HttpConfig::default()
        },
    );
    Ok(App {
        server,
        http,
        store,
    })
}

/// The body type of the HTTP service's responses.
pub type HttpBody = http_body_util::Full<bytes::Bytes>;

/// The bytes of a response body (always complete in memory).
pub async fn body_bytes(body: HttpBody) -> Vec<u8> {
    use http_body_util::BodyExt as _;
    match body.collect().await {
        Ok(collected) => collected.to_bytes().to_vec(),
        Err(never) => match never {},
    }
}
