//! Helpers shared by the integration tests: fresh stores ([`store`]), connections
//! ([`connect`]), running a test on every backend ([`on_every_backend!`]), and the fake
//! products the pipeline tests run against ([`notes`], [`probe_tools`]).

use std::collections::BTreeSet;

use mcp_pipeline::Toolset;

pub(crate) mod clocks;
pub(crate) mod dates;
pub(crate) mod deletion;
pub(crate) mod edge;
pub(crate) mod faults;
pub(crate) mod hint_follower;
pub(crate) mod key_server;
pub(crate) mod lambda_extension;
pub(crate) mod load;
pub(crate) mod misdescribed;
pub(crate) mod model;
pub(crate) mod notes;
pub(crate) mod pages;
pub(crate) mod places;
pub(crate) mod probe_tools;
pub(crate) mod processes;
pub(crate) mod receiver;
pub(crate) mod slow_link;
pub(crate) mod sqlite_file;
pub(crate) mod store;
pub(crate) mod template;
pub(crate) mod tokens;
pub(crate) mod workspaces;

/// The local DynamoDB-compatible server's endpoint, from `GATEHOUSE_TEST_DYNAMODB_ENDPOINT`
/// (set by `tests/run`, which starts the server).
///
/// DynamoDB tests are never skipped silently: in CI (`CI` set) a missing endpoint fails the
/// test; elsewhere the skip is printed with its reason so it shows in the output.
pub(crate) fn dynamodb_endpoint(what: &str) -> Option<String> {
    match std::env::var("GATEHOUSE_TEST_DYNAMODB_ENDPOINT") {
        Ok(endpoint) if !endpoint.is_empty() => Some(endpoint),
        _ => {
            assert!(
                std::env::var_os("CI").is_none(),
                "{what}: GATEHOUSE_TEST_DYNAMODB_ENDPOINT is not set in CI; run the tests through tests/run"
            );
            eprintln!(
                "{what}: SKIPPED (GATEHOUSE_TEST_DYNAMODB_ENDPOINT not set; tests/run starts a local server and sets it)"
            );
            None
        }
    }
}

/// `member` of `tenant` creates a connection named `client` with `rights` and `toolset` (a
/// token, through the CLI channel); returns (connection id, token). The member must exist and
/// hold the rights.
pub(crate) async fn connect(
    app: &app::App,
    tenant: &str,
    member: &str,
    rights: BTreeSet<String>,
    toolset: Toolset,
    client: &str,
) -> (String, String) {
    let actor = crate::support::cli_actor(tenant, member);
    let new = identity::NewConnection {
        rights,
        toolset,
        client_name: client.into(),
        approval: mcp_pipeline::ApprovalMode::Client,
    };
    let (connection, token) = app.connections.create_token(&actor, new).await.unwrap();
    (connection.id.into_string(), token)
}

/// Creates a customer with `create_customer` through `client`, which must succeed; its handle.
pub(crate) async fn created_customer(
    client: &mcp_test_client::TestClient,
    name: &str,
    email: &str,
) -> String {
    let answer = client
        .call_tool(
            "create_customer",
            serde_json::json!({"name": name, "email": email}),
        )
        .await;
    assert!(!answer.is_error(), "{}", answer.text());
    answer.structured()["customer"]["customer"]
        .as_str()
        .expect("a customer handle")
        .to_owned()
}

/// A product API token acting as `member` of `tenant` (valid for the default 90 days).
pub(crate) async fn api_token(
    app: &app::App,
    tenant: &str,
    member: &str,
) -> Result<String, accounts::AccountsError> {
    let actor = crate::support::cli_actor(tenant, member);
    Ok(app.api_tokens.create(&actor, None).await?.1)
}

/// Sets `member`'s sign-in password, as the command line does.
pub(crate) async fn set_password(
    app: &app::App,
    tenant: &str,
    member: &str,
    password: &str,
) -> Result<(), accounts::AccountsError> {
    let console = crate::support::cli_actor(tenant, "cli");
    app.members
        .set_password(&console, &::store::MemberId::new(member), password)
        .await
}

/// Every right `member` of `tenant` holds now.
pub(crate) async fn rights_of(app: &app::App, tenant: &str, member: &str) -> BTreeSet<String> {
    use identity::Directory as _;
    app.directory
        .member(
            &::store::TenantId::new(tenant),
            &::store::MemberId::new(member),
        )
        .await
        .unwrap()
        .unwrap()
        .rights
}

/// The rights named, as a connection takes them.
pub(crate) fn rights(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|&r| r.to_owned()).collect()
}

/// Makes `ana` the owner of `acme` and gives her a standard connection that reads bookings,
/// named `client`; returns its MCP token.
pub(crate) async fn owner_connection(app: &app::App, client: &str) -> String {
    app.directory
        .put_member(
            &::store::TenantId::new("acme"),
            &::store::MemberId::new("ana"),
            "owner",
            true,
        )
        .await
        .unwrap();
    let (_, token) = connect(
        app,
        "acme",
        "ana",
        rights(&["bookings:read"]),
        Toolset::Standard,
        client,
    )
    .await;
    token
}

/// Runs an async test body on SQLite and on the local DynamoDB server, as the tests
/// `$name::sqlite` and `$name::dynamodb`; the DynamoDB one is skipped (printed) when no server
/// is available outside CI.
///
/// * `on_every_backend!(name, body)`: `body(World)`, the app on a fresh store
///   ([`crate::world::World::on`]), on 2 worker threads.
/// * `on_every_backend!(name, body, |backend| fixture, threads = n)`: `body(F)`, where
///   `fixture` is an `Option<F>` future made from `backend` (a [`store::Backend`]; `None`:
///   that backend is not available), on `n` worker threads. Paths in `fixture` resolve in
///   the module of the invocation.
macro_rules! on_every_backend {
    ($name:ident, $body:ident) => {
        $crate::support::on_every_backend!(
            $name,
            $body,
            |backend| $crate::world::World::on(backend),
            threads = 2
        );
    };
    ($name:ident, $body:ident, |$backend:ident| $fixture:expr, threads = $threads:tt) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;

            #[tokio::test(flavor = "multi_thread", worker_threads = $threads)]
            async fn sqlite() {
                let $backend = $crate::support::store::Backend::Sqlite;
                super::$body($fixture.await.expect("SQLite is always available")).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = $threads)]
            async fn dynamodb() {
                let $backend = $crate::support::store::Backend::Dynamodb;
                if let Some(fixture) = $fixture.await {
                    super::$body(fixture).await;
                }
            }
        }
    };
}
pub(crate) use on_every_backend;

/// A pipeline configuration on a fresh `MemoryStore`, running on tokio: for tests of the
/// pipeline with their own tools.
pub(crate) fn memory_config() -> mcp_pipeline::ServerConfig {
    let store = std::sync::Arc::new(::store::MemoryStore::new());
    mcp_pipeline::ServerConfig::new(mcp_pipeline::Gates::new(store), mcp_http::tokio_runtime())
}

/// The process's global subscriber in tests: records nothing, but keeps every call site
/// asking. Without it a call site first reached on a thread with no capture is marked as never
/// logged, and a capture installed on another thread at that moment can miss its lines
/// (`tracing` caches each call site's interest across all subscribers).
struct Listening;

impl tracing::Subscriber for Listening {
    fn register_callsite(
        &self,
        _: &'static tracing::Metadata<'static>,
    ) -> tracing::subscriber::Interest {
        tracing::subscriber::Interest::sometimes()
    }

    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        false
    }

    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }

    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}

    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}

    fn event(&self, _: &tracing::Event<'_>) {}

    fn enter(&self, _: &tracing::span::Id) {}

    fn exit(&self, _: &tracing::span::Id) {}
}

/// Log lines written while installed (this thread's `tracing` default), as text.
#[derive(Clone, Default)]
pub(crate) struct LogCapture(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for LogCapture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl LogCapture {
    /// Captures this thread's log lines until the guard is dropped.
    pub(crate) fn install(&self) -> tracing::subscriber::DefaultGuard {
        static LISTENING: std::sync::Once = std::sync::Once::new();
        LISTENING.call_once(|| {
            let _ = tracing::subscriber::set_global_default(Listening);
        });
        let writer = self.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::TRACE)
            .with_ansi(false)
            .with_writer(move || writer.clone())
            .finish();
        tracing::subscriber::set_default(subscriber)
    }

    /// What was captured, a line each.
    pub(crate) fn lines(&self) -> Vec<String> {
        let bytes = self.0.lock().unwrap().clone();
        String::from_utf8_lossy(&bytes)
            .lines()
            .map(str::to_owned)
            .collect()
    }
}

/// An authenticator that panics on its first call and refuses every later one: a message
/// whose handling panics outside a tool's body, and the message after it.
#[derive(Debug, Default)]
pub(crate) struct PanicsOnce(std::sync::atomic::AtomicBool);

impl mcp_pipeline::Authenticator for PanicsOnce {
    fn authenticate<'a>(
        &'a self,
        _headers: &'a mcp_pipeline::Headers,
        _tenant: Option<&'a str>,
        _prefetch: Vec<::store::Key>,
    ) -> futures_util::future::BoxFuture<
        'a,
        Result<mcp_pipeline::Authenticated, mcp_pipeline::Rejection>,
    > {
        let first = !self.0.swap(true, std::sync::atomic::Ordering::SeqCst);
        Box::pin(async move {
            assert!(!first, "injected: the authenticator panicked");
            Err(mcp_pipeline::Rejection::unauthorized("no credential here"))
        })
    }
}

/// Random bytes that count: each fill is the next number (from 0, at most 61) followed by
/// zeros, so the ids made from them sort in the order they were made (`0000…`, `1000…`, …).
#[derive(Debug, Default)]
pub(crate) struct CountingRandomness(std::sync::atomic::AtomicU8);

impl mcp_pipeline::Randomness for CountingRandomness {
    fn fill(&self, bytes: &mut [u8]) {
        bytes.fill(0);
        if let Some(first) = bytes.first_mut() {
            *first = self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    }
}

/// `member` of `tenant` acting from the command line: who the tests' administration acts as.
pub(crate) fn cli_actor(tenant: &str, member: &str) -> identity::Actor {
    identity::Actor {
        tenant: ::store::TenantId::new(tenant),
        member: ::store::MemberId::new(member),
        channel: identity::Channel::Cli,
    }
}

/// The newest `limit` audit rows of `tenant` in `store`, newest first (only `connection`'s,
/// when named).
pub(crate) async fn audit_rows(
    store: &dyn ::store::Store,
    tenant: &str,
    connection: Option<&str>,
    limit: usize,
) -> Vec<identity::AuditEntry> {
    let connection = connection.map(::store::ConnectionId::new);
    let tenant = ::store::TenantId::new(tenant);
    identity::audit::recent(store, &tenant, connection.as_ref(), limit)
        .await
        .unwrap()
}
