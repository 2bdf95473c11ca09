//! The composition root: one function builds the server every entry point runs (the Lambda
//! function, `gatehouse serve`, `gatehouse stdio`, the tests), so they cannot drift apart.
//! Entry points read their environment and hand typed settings here; this crate reads none.

pub mod bench;
pub mod demo;
#[cfg(feature = "tokio")]
pub mod key_set_url;
pub mod manifest;
pub mod product;
mod recent;
pub mod settings;
mod status;
#[cfg(feature = "test-tool")]
pub mod test_tool;

use std::collections::BTreeMap;
use std::sync::Arc;

use identity::oauth::OAuthValidator;
use identity::{McpAuthenticator, StoreDirectory};
use mcp_http::{HttpConfig, McpService, ProtectedResource};
use mcp_pipeline::{Registry, RegistryError, Server, ServerConfig, ToolSpec};
use store::Store;

pub use product::{Product, ProductContext, SharedProduct, WorkspaceSetting};

/// Settings of one deployment.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Which store backend serves this process (for status and logs).
    pub backend: String,
    /// Origins allowed to call the endpoint.
    pub allowed_origins: Vec<String>,
    /// Largest accepted request body.
    pub max_body_bytes: usize,
    /// OAuth access tokens, when this deployment accepts them.
    pub oauth: Option<OAuth>,
    /// Rate limits per effect class.
    pub limits: mcp_pipeline::Limits,
    /// How long a sealed `requestState` (an approval asked in the client) stays valid.
    pub state_ttl_seconds: i64,
    /// Base URL of the product's pages, for console links in results; its host is the one
    /// the pages answer (ADR 48).
    pub console_base: String,
    /// The port a server listening on loopback listens on: the pages also answer to the
    /// loopback names there (`serve`); `None` elsewhere.
    pub loopback_port: Option<u16>,
    /// Whether the product's session cookies carry `Secure` (all but plain local HTTP).
    pub secure_cookies: bool,
    /// The MCP endpoint's URL, for the client configurations the pages show (`None`: unknown
    /// here, as on the web function, whose template cannot name the MCP function's URL).
    pub mcp_url: Option<String>,
    /// The options `gatehouse stdio` needs on this machine to open the store this server uses
    /// (`--data-dir PATH`, or none for the default folder), for the stdio client
    /// configurations the pages show; `None`: no local store (Lambda, the edge), so none shown.
    pub stdio_args: Option<Vec<String>>,
    /// The key sealing `requestState`; every instance of a deployment needs the same one.
    /// `None` makes a random key for this process (fine for one local process).
    pub state_key: Option<Vec<u8>>,
    /// Where work after the answer runs (a read's slot release); `None`: spawned on tokio.
    /// Tests set it to hold that work until they have counted the call; the edge passes the
    /// request's `waitUntil`.
    pub defer: Option<mcp_pipeline::Defer>,
    /// The timer for deadlines; `None`: tokio's. The edge passes its own (no tokio there).
    pub sleep: Option<mcp_pipeline::Sleep>,
    /// Whether `defer`'s work is awaited before the answer goes out (Lambda, ADR 25).
    pub answer_waits_for_deferred: bool,
    /// The longest wait for one store call (ADR 22): past it the call is answered as an
    /// outage (503 at authentication, a retryable tool error after), never left queuing.
    pub store_wait: std::time::Duration,
    /// Where calls read the time (the system's; tests set their own).
    pub clock: Arc<dyn mcp_pipeline::Clock>,
    /// Where request ids, tokens and the product's ids come from (the system's generator).
    pub randomness: Arc<dyn mcp_pipeline::Randomness>,
}

/// How this deployment accepts OAuth access tokens: one validator, shared by every app built
/// with these settings, so keys fetched once serve them all (the edge builds an app per
/// request).
#[derive(Debug, Clone)]
pub struct OAuth {
    validator: Arc<OAuthValidator>,
}

impl OAuth {
    /// Tokens checked against `config`, signed by keys from `source`.
    pub fn new(
        config: identity::oauth::OAuthConfig,
        source: Arc<dyn identity::oauth::JwksSource>,
    ) -> Self {
        OAuth {
            validator: Arc::new(OAuthValidator::new(config, source)),
        }
    }

    /// This server's resource URL (the tokens' audience), e.g. `https://mcp.example.com/mcp`.
    pub fn resource(&self) -> &str {
        &self.validator.config().audience
    }

    /// The authorization server (the tokens' issuer).
    pub fn issuer(&self) -> &str {
        &self.validator.config().issuer
    }
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            backend: "memory".into(),
            allowed_origins: Vec::new(),
            max_body_bytes: 1024 * 1024,
            oauth: None,
            limits: mcp_pipeline::Limits::default(),
            state_ttl_seconds: 600,
            console_base: "http://127.0.0.1:8787/app".into(),
            loopback_port: None,
            store_wait: STORE_WAIT,
            secure_cookies: true,
            mcp_url: None,
            stdio_args: None,
            state_key: None,
            defer: None,
            answer_waits_for_deferred: false,
            sleep: None,
            clock: Arc::new(mcp_pipeline::SystemClock),
            randomness: Arc::new(mcp_pipeline::SystemRandomness),
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
    /// The members and their rights.
    pub directory: Arc<StoreDirectory>,
    /// Connections and their credentials.
    pub connections: identity::ConnectionService,
    /// The kill switch and agent access.
    pub switches: identity::SwitchService,
    /// Members of workspaces (audited administration).
    pub members: accounts::Members,
    /// Product API tokens.
    pub api_tokens: accounts::ApiTokens,
    /// The pages and the product's JSON API.
    pub web: web::Web,
    /// The product served.
    pub product: SharedProduct,
}

/// What the product is given: the store serving each call's read-ahead (the records a call
/// named, read with its credential: `ServerConfig::read_ahead`), and the settings' links and
/// randomness.
fn product_context(settings: &Settings, store: &Arc<dyn Store>) -> ProductContext {
    ProductContext {
        store: Arc::new(store::read_ahead::ReadAheadStore::new(Arc::clone(store))),
        plain_store: Arc::clone(store),
        console_base: settings.console_base.clone(),
        randomness: Arc::clone(&settings.randomness),
    }
}

/// The tools every gatehouse serves, in `tools/list` order: the platform's status, the
/// product's tools, the platform's recent changes (which show the product's records, so they
/// need the product's read right).
pub fn registry(
    settings: &Settings,
    store: &Arc<dyn Store>,
    product: &dyn Product,
) -> Result<Registry, RegistryError> {
    let mut registry = Registry::new();
    registry.register(ToolSpec::new(status::GetServerStatus {
        backend: settings.backend.clone(),
    }))?;
    product.register(&mut registry, &product_context(settings, store))?;
    rights_in_the_catalogue(&registry, product)?;
    let recent = recent::ListRecentChanges {
        store: Arc::clone(store),
    };
    registry.register(ToolSpec::new(recent).requires(product.read_right()))?;
    Ok(registry)
}

/// Refuses a product whose tools, or whose read right, name a right its catalogue lacks: no
/// role could grant it, so the tool would stay hidden from everyone without a word.
fn rights_in_the_catalogue(
    registry: &Registry,
    product: &dyn Product,
) -> Result<(), RegistryError> {
    let catalogue = product.rights();
    let unknown = |right: &str| !catalogue.contains(&right);
    if unknown(product.read_right()) {
        return Err(RegistryError::Product(format!(
            "its read right {:?} is not in its rights catalogue",
            product.read_right()
        )));
    }
    for tool in registry.iter() {
        if let Some(right) = tool.required_rights().iter().find(|r| unknown(r)) {
            return Err(RegistryError::Product(format!(
                "tool {:?} requires {right:?}, which is not in its rights catalogue",
                tool.name()
            )));
        }
    }
    Ok(())
}

/// Builds the application of `product` on `store`.
pub fn build(
    settings: &Settings,
    store: Arc<dyn Store>,
    product: SharedProduct,
) -> Result<App, RegistryError> {
    build_adding(settings, store, product, |_| Ok(()))
}

/// Builds the application of `product` on `store` with every tool of [`registry`] and those
/// `add` registers (the benchmark's and test-only tools of the entry points that offer them).
pub fn build_adding(
    settings: &Settings,
    store: Arc<dyn Store>,
    product: SharedProduct,
    add: impl FnOnce(&mut Registry) -> Result<(), RegistryError>,
) -> Result<App, RegistryError> {
    let store = bounded(settings, store);
    let mut tools = registry(settings, &store, product.as_ref())?;
    add(&mut tools)?;
    check_api(settings, &store, product.as_ref(), &tools)?;
    assemble_on(settings, store, product, tools)
}

/// Every route of the product's API does the work of a registered tool (it takes that tool's
/// effect class), so a route cannot name a tool that is not there.
fn check_api(
    settings: &Settings,
    store: &Arc<dyn Store>,
    product: &dyn Product,
    tools: &Registry,
) -> Result<(), RegistryError> {
    let Some(api) = product.api(&product_context(settings, store)) else {
        return Ok(());
    };
    match api.routes().iter().find(|r| tools.get(r.tool).is_none()) {
        Some(r) => Err(RegistryError::Product(format!(
            "the API route {} /api/{} names the tool {:?}, which is not registered",
            r.method,
            r.path.join("/"),
            r.tool
        ))),
        None => Ok(()),
    }
}

/// The longest wait for one store call by default: with the default tool deadline (20 s), the
/// credential's read and the commit, a call ends within 26.2 s, inside the MCP function's
/// 30 s timeout (ADR 22).
pub const STORE_WAIT: std::time::Duration = std::time::Duration::from_secs(3);

/// Builds the application of `product` on `store` with these tools in place of the product's
/// own (tests use it for example tools).
pub fn build_with(
    settings: &Settings,
    store: Arc<dyn Store>,
    product: SharedProduct,
    tools: Registry,
) -> Result<App, RegistryError> {
    assemble_on(settings, bounded(settings, store), product, tools)
}

/// `store` with every call bounded by `settings.store_wait`.
fn bounded(settings: &Settings, store: Arc<dyn Store>) -> Arc<dyn Store> {
    let timer = runtime(settings).sleep.0;
    Arc::new(store::BoundedStore::new(store, settings.store_wait, timer))
}

fn assemble_on(
    settings: &Settings,
    store: Arc<dyn Store>,
    product: SharedProduct,
    tools: Registry,
) -> Result<App, RegistryError> {
    let cx = product_context(settings, &store);
    if let Some(records) = product.records(&cx) {
        mcp_pipeline::records::check_kinds(records.kinds()).map_err(RegistryError::Product)?;
    }
    let api_tools = tools
        .iter()
        .map(|t| {
            let tool = web::ApiTool {
                effect: t.effect(),
                rights: t.required_rights().to_vec(),
            };
            (t.name(), tool)
        })
        .collect();
    let server = Server::new(server_config(settings, &store, product.as_ref()), tools);
    let built = Built {
        server,
        api_tools: Arc::new(api_tools),
    };
    Ok(assemble(settings, store, built, &product))
}

/// The pipeline's configuration for this deployment of `product`.
fn server_config(
    settings: &Settings,
    store: &Arc<dyn Store>,
    product: &dyn Product,
) -> ServerConfig {
    let gates = mcp_pipeline::Gates {
        hooks: Some(Arc::new(identity::McpCommitHooks)),
        limits: settings.limits,
        ..mcp_pipeline::Gates::new(Arc::clone(store))
    };
    let mut config = ServerConfig::new(gates, runtime(settings));
    config.names = product.names(&product_context(settings, store));
    config.instructions = Some(product.instructions());
    if let Some(key) = &settings.state_key {
        config.state_key.clone_from(key);
    }
    config.read_ahead = product.read_ahead();
    config.state_ttl_seconds = settings.state_ttl_seconds;
    config.approval_url_base = format!("{}/approvals", settings.console_base);
    config.clock = Arc::clone(&settings.clock);
    config.randomness = Arc::clone(&settings.randomness);
    config
}

/// The timer and the deferred work: tokio's, which every native entry point runs on, unless
/// the settings bring their own (tests hold deferred work; the edge has no tokio).
fn runtime(settings: &Settings) -> mcp_pipeline::Runtime {
    #[cfg(feature = "tokio")]
    let native = Some(mcp_http::tokio_runtime());
    #[cfg(not(feature = "tokio"))]
    let native: Option<mcp_pipeline::Runtime> = None;
    let sleep = settings
        .sleep
        .clone()
        .or(native.as_ref().map(|r| r.sleep.clone()));
    let defer = settings.defer.clone().or(native.map(|r| r.defer));
    mcp_pipeline::Runtime {
        sleep: sleep.expect("built without tokio: Settings.sleep must be set"),
        defer: defer.expect("built without tokio: Settings.defer must be set"),
        answer_waits_for_deferred: settings.answer_waits_for_deferred,
    }
}

/// The pipeline as built, with each registered tool's effect class (for the product's API).
struct Built {
    server: Arc<Server>,
    api_tools: Arc<BTreeMap<&'static str, web::ApiTool>>,
}

/// The application around its pipeline: the HTTP service with its authenticator, the pages.
fn assemble(
    settings: &Settings,
    store: Arc<dyn Store>,
    built: Built,
    product: &SharedProduct,
) -> App {
    let Built { server, api_tools } = built;
    let roles = product.roles();
    let outside = outside::ClockAndRandomness::new(
        Arc::clone(&settings.clock),
        Arc::clone(&settings.randomness),
    );
    let randomness = Arc::clone(&settings.randomness);
    let directory = Arc::new(StoreDirectory::new(Arc::clone(&store), roles, randomness));
    let clock = Arc::clone(&settings.clock);
    let mut authenticator = McpAuthenticator::new(Arc::clone(&store), directory.clone(), clock);
    let mut protected_resource = None;
    if let Some(oauth) = &settings.oauth {
        authenticator = authenticator.with_oauth(Arc::clone(&oauth.validator));
        protected_resource = Some(ProtectedResource {
            resource: oauth.resource().to_owned(),
            authorization_servers: vec![oauth.issuer().to_owned()],
            scopes: product.rights().iter().map(|r| (*r).to_owned()).collect(),
        });
    }
    let http = McpService::new(
        Arc::clone(&server),
        HttpConfig {
            allowed_origins: settings.allowed_origins.clone(),
            max_body_bytes: settings.max_body_bytes,
            protected_resource,
            ..HttpConfig::default()
        },
    )
    .with_authenticator(Arc::new(authenticator));
    let connections =
        identity::ConnectionService::new(Arc::clone(&store), directory.clone(), outside.clone());
    let switches =
        identity::SwitchService::new(Arc::clone(&store), directory.clone(), outside.clone());
    let members = accounts::Members::new(Arc::clone(&store), roles, outside.clone());
    let api_tokens = accounts::ApiTokens::new(Arc::clone(&store), roles, outside);
    let web = web::Web {
        store: Arc::clone(&store),
        approvals: server.clone(),
        directory: directory.clone(),
        connections: connections.clone(),
        switches: switches.clone(),
        api_tools,
        records: product.records(&product_context(settings, &store)),
        api: product.api(&product_context(settings, &store)),
        members: members.clone(),
        api_tokens: api_tokens.clone(),
        throttle: accounts::Throttle::new(Arc::clone(&store), Arc::clone(&settings.clock)),
        gates: server.config().gates.clone(),
        clock: Arc::clone(&settings.clock),
        randomness: Arc::clone(&settings.randomness),
        secure_cookies: settings.secure_cookies,
        mcp_url: settings.mcp_url.clone(),
        stdio_args: settings.stdio_args.clone(),
        site: site(settings),
    };
    App {
        server,
        http,
        connections,
        switches,
        members,
        api_tokens,
        web,
        directory,
        store,
        product: Arc::clone(product),
    }
}

/// Where the pages are served: the console base's host, and loopback names at the loopback
/// port. A base that is no URL (the entry points check theirs) closes the pages.
fn site(settings: &Settings) -> web::Site {
    web::Site::new(&settings.console_base, settings.loopback_port).unwrap_or_else(|e| {
        tracing::error!(error = %e, "the pages' public URL is not a URL; they answer nothing");
        web::Site::closed()
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
