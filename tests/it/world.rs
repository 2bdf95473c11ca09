//! A running gatehouse app on a real store, with members and connections, for contract tests
//! that go through authentication.

use std::sync::Arc;

use identity::{Actor, Channel, NewConnection};
use mcp_pipeline::Toolset;
use mcp_test_client::TestClient;

/// The backends the identity and product tests run on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Backend {
    Sqlite,
    Dynamodb,
}

/// An app on a fresh store.
pub(crate) struct World {
    pub(crate) app: app::App,
    pub(crate) backend: Backend,
    _dir: Option<tempfile::TempDir>,
}

pub(crate) const ISSUER: &str = "https://auth.example.com";
pub(crate) const RESOURCE: &str = "https://mcp.example.com/mcp";

pub(crate) fn oauth_settings() -> app::OAuth {
    let jwks =
        serde_json::from_str(include_str!("../fixtures/oauth/jwks.json")).expect("test JWKS");
    app::OAuth {
        resource: RESOURCE.into(),
        issuer: ISSUER.into(),
        tenant_claim: "tenant".into(),
        jwks,
    }
}

/// A fresh store on `backend` (and the folder it lives in), or `None` (printed) when that
/// backend's server is not available outside CI.
pub(crate) async fn fresh_store(
    backend: Backend,
) -> Option<(Arc<dyn store::Store>, Option<tempfile::TempDir>)> {
    match backend {
        Backend::Sqlite => {
            let dir = tempfile::tempdir().unwrap();
            let store = store_sqlite::SqliteStore::open(dir.path().join("gatehouse.db")).unwrap();
            Some((Arc::new(store), Some(dir)))
        }
        Backend::Dynamodb => {
            let endpoint = crate::support::dynamodb_endpoint("tests on [dynamodb]")?;
            let table = format!("t-{}", rand_suffix());
            let store = store_dynamodb::DynamoStore::local(&endpoint, &table);
            store.create_table().await.unwrap();
            Some((Arc::new(store), None))
        }
    }
}

impl World {
    /// A world on `backend`, or `None` (printed) when that backend's server is not available
    /// outside CI.
    pub(crate) async fn on(backend: Backend) -> Option<World> {
        let settings = app::Settings {
            backend: match backend {
                Backend::Sqlite => "sqlite".into(),
                Backend::Dynamodb => "dynamodb".into(),
            },
            allowed_origins: vec!["https://app.example.com".into()],
            oauth: Some(oauth_settings()),
            ..app::Settings::default()
        };
        let (store, dir): (Arc<dyn store::Store>, _) = match backend {
            Backend::Sqlite => {
                let dir = tempfile::tempdir().unwrap();
                let store =
                    store_sqlite::SqliteStore::open(dir.path().join("gatehouse.db")).unwrap();
                (Arc::new(store), Some(dir))
            }
            Backend::Dynamodb => {
                let endpoint = crate::support::dynamodb_endpoint("identity tests [dynamodb]")?;
                let table = format!(
                    "world-{}",
                    identity::now_rfc3339().replace([':', '.', '+'], "-")
                );
                let store = store_dynamodb::DynamoStore::local(
                    &endpoint,
                    &format!("{table}-{}", rand_suffix()),
                );
                store.create_table().await.unwrap();
                (Arc::new(store), None)
            }
        };
        let app = app::build(&settings, store).unwrap();
        Some(World {
            app,
            backend,
            _dir: dir,
        })
    }

    pub(crate) async fn member(&self, tenant: &str, member: &str, role: &str) {
        self.app
            .directory
            .put_member(tenant, member, role, true)
            .await
            .unwrap();
    }

    pub(crate) async fn deactivate(&self, tenant: &str, member: &str, role: &str) {
        self.app
            .directory
            .put_member(tenant, member, role, false)
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
        use identity::Directory as _;
        let rights = self
            .app
            .directory
            .member(tenant, member)
            .await
            .unwrap()
            .unwrap()
            .rights;
        let actor = Actor {
            tenant: tenant.into(),
            member: member.into(),
            channel: Channel::Cli,
        };
        let (connection, token) = self
            .app
            .connections
            .create_token(
                &actor,
                NewConnection {
                    rights,
                    toolset,
                    client_name: "contract tests".into(),
                },
            )
            .await
            .unwrap();
        (connection.id, token)
    }

    /// A client that sends `token`.
    pub(crate) fn client(&self, token: &str) -> TestClient {
        TestClient::in_process(self.app.http.clone())
            .with_header("authorization", &format!("Bearer {token}"))
    }

    /// A client without any credential.
    pub(crate) fn anonymous(&self) -> TestClient {
        TestClient::in_process(self.app.http.clone())
    }
}

fn rand_suffix() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    format!(
        "{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// Runs an async test body on SQLite and on the local DynamoDB server.
macro_rules! on_every_backend {
    ($name:ident, $body:ident) => {
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                let world = crate::world::World::on(crate::world::Backend::Sqlite)
                    .await
                    .unwrap();
                super::$body(world).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn dynamodb() {
                if let Some(world) = crate::world::World::on(crate::world::Backend::Dynamodb).await
                {
                    super::$body(world).await;
                }
            }
        }
    };
}
pub(crate) use on_every_backend;
