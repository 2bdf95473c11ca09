//! A running gatehouse app on a real store, with members and connections, for contract tests
//! that go through authentication.

use mcp_pipeline::Toolset;
use mcp_test_client::TestClient;

use crate::support::store::{Backend, fresh};
use crate::support::{connect, rights_of};

/// An app on a fresh store.
pub(crate) struct World {
    pub(crate) app: app::App,
    pub(crate) backend: Backend,
    _dir: Option<tempfile::TempDir>,
    /// On the edge: the served worker's address and this world's store object. The app here
    /// administers that store (members, connections, switches); calls go to the worker.
    edge: Option<(std::net::SocketAddr, String)>,
}

pub(crate) const ISSUER: &str = "https://auth.example.com";
pub(crate) const RESOURCE: &str = "https://mcp.example.com/mcp";

pub(crate) fn oauth_settings() -> app::OAuth {
    let jwks =
        serde_json::from_str(include_str!("../fixtures/oauth/jwks.json")).expect("test JWKS");
    app::OAuth::new(
        identity::oauth::OAuthConfig {
            issuer: ISSUER.into(),
            audience: RESOURCE.into(),
            tenant_claim: "tenant".into(),
            accept_untyped: false,
        },
        std::sync::Arc::new(identity::oauth::StaticJwks(jwks)),
    )
}

impl World {
    /// A world on `backend`, or `None` (printed) when that backend's server is not available
    /// outside CI.
    pub(crate) async fn on(backend: Backend) -> Option<World> {
        Self::with_settings(backend, Self::settings()).await
    }

    /// [`World::on`] with the server's time standing still: for tests that count calls in a
    /// rate window or wait out a sign-in throttle, which a slow machine must not see turn.
    pub(crate) async fn at_a_fixed_time(backend: Backend) -> Option<World> {
        let settings = app::Settings {
            clock: std::sync::Arc::new(mcp_pipeline::FixedClock::starting_now()),
            ..Self::settings()
        };
        Self::with_settings(backend, settings).await
    }

    /// The settings of [`World::on`]. The store's waits are long: the local DynamoDB server,
    /// shared by every test, can take more than the deployed bound on a loaded machine, and an
    /// answer lost to the bound after its commit would read as a defect of the test's subject.
    /// The bound itself is tested in `store_faults`, under the deployed value.
    pub(crate) fn settings() -> app::Settings {
        app::Settings {
            allowed_origins: vec!["https://app.example.com".into()],
            oauth: Some(oauth_settings()),
            store_wait: std::time::Duration::from_secs(20),
            ..app::Settings::default()
        }
    }

    /// A world on `backend` with `settings` (its backend name set here).
    pub(crate) async fn with_settings(
        backend: Backend,
        mut settings: app::Settings,
    ) -> Option<World> {
        settings.backend = backend.name().into();
        if backend == Backend::Edge {
            return Self::on_edge(settings);
        }
        let (store, dir) = fresh(backend).await?;
        Some(Self::on_store(backend, store, dir, &settings))
    }

    /// A world whose app runs on `store` (a wrapper of a fresh `backend` store, kept in `dir`).
    pub(crate) fn on_store(
        backend: Backend,
        store: std::sync::Arc<dyn store::Store>,
        dir: Option<tempfile::TempDir>,
        settings: &app::Settings,
    ) -> World {
        let app = app::build(settings, store, booking_product::Booking::shared()).unwrap();
        World {
            app,
            backend,
            _dir: dir,
            edge: None,
        }
    }

    /// A world whose calls go over HTTP to the locally served edge worker, on a Durable Object
    /// of its own (no OAuth there: the worker accepts connection tokens only).
    fn on_edge(settings: app::Settings) -> Option<World> {
        let url = crate::support::edge::edge_url("tests on [edge]")?;
        Some(Self::on_edge_at(&url, settings))
    }

    /// A world on the locally served worker at `url`, on objects of its own.
    pub(crate) fn on_edge_at(url: &str, mut settings: app::Settings) -> World {
        let (store, object) = crate::support::edge::fresh_edge_store(url);
        settings.oauth = None;
        let app = app::build(&settings, store, booking_product::Booking::shared()).unwrap();
        World {
            app,
            backend: Backend::Edge,
            _dir: None,
            edge: Some((crate::support::edge::edge_addr(url), object)),
        }
    }

    /// A world on the locally served worker at `url`, on the objects a request without a test
    /// prefix reaches: those the CLI and a browser find (a worker only one test uses).
    pub(crate) fn on_edge_unprefixed(url: &str) -> World {
        let store = crate::support::edge::edge_store(url, None, None);
        let settings = app::Settings {
            oauth: None,
            ..Self::settings()
        };
        let app = app::build(&settings, store, booking_product::Booking::shared()).unwrap();
        World {
            app,
            backend: Backend::Edge,
            _dir: None,
            // No prefix: the worker reads an empty one as none.
            edge: Some((crate::support::edge::edge_addr(url), String::new())),
        }
    }

    /// At the edge: the worker's URL and the prefix of this world's objects' names.
    pub(crate) fn edge_objects(&self) -> Option<(String, &str)> {
        let (addr, prefix) = self.edge.as_ref()?;
        Some((format!("http://{addr}"), prefix.as_str()))
    }

    /// At the edge, waits until the global switch's last flip has reached every workspace's
    /// object (as `gatehouse kill-switch --edge-url` waits, ADR 51); elsewhere the flip is one
    /// write, done when it returns.
    pub(crate) async fn switch_reached_every_workspace(&self) {
        let Some((addr, prefix)) = &self.edge else {
            return;
        };
        let url = format!("http://{addr}");
        let endpoint = crate::support::edge::edge_endpoint(&url, Some(prefix), None);
        crate::support::edge::switch_reached(&endpoint).await;
    }

    /// A client of this world's endpoint: in this process, or over HTTP at the edge.
    fn endpoint(&self) -> TestClient {
        match &self.edge {
            Some((addr, object)) => TestClient::http(*addr)
                .with_routing_header(crate::support::edge::STORE_OBJECT_HEADER, object),
            None => TestClient::in_process(self.app.http.clone()),
        }
    }

    pub(crate) async fn member(&self, tenant: &str, member: &str, role: &str) {
        self.app
            .directory
            .put_member(
                &store::TenantId::new(tenant),
                &store::MemberId::new(member),
                role,
                true,
            )
            .await
            .unwrap();
    }

    pub(crate) async fn deactivate(&self, tenant: &str, member: &str, role: &str) {
        self.app
            .directory
            .put_member(
                &store::TenantId::new(tenant),
                &store::MemberId::new(member),
                role,
                false,
            )
            .await
            .unwrap();
    }

    /// Creates a connection with all of the member's rights; returns (connection id, token).
    pub(crate) async fn connect(
        &self,
        tenant: &str,
        member: &str,
        toolset: Toolset,
    ) -> (String, String) {
        let rights = rights_of(&self.app, tenant, member).await;
        connect(&self.app, tenant, member, rights, toolset, "contract tests").await
    }

    /// A client that sends `token`.
    pub(crate) fn client(&self, token: &str) -> TestClient {
        self.endpoint()
            .with_header("authorization", &format!("Bearer {token}"))
    }

    /// A client without any credential.
    pub(crate) fn anonymous(&self) -> TestClient {
        self.endpoint()
    }
}
