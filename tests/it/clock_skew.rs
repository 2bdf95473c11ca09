//! Instances whose clocks disagree by up to five seconds share one store (catalogue C06): a
//! prepared action is confirmed on an instance running behind, on one running ahead, and on
//! one on time, around its expiry. Acceptance never extends past the expiry plus the skew of
//! the instance that checks; once that has passed, no instance executes it, and a refusal
//! leaves the record untouched. On SQLite and the local DynamoDB server.

use std::sync::Arc;

use mcp_pipeline::{Clock, FixedClock, Toolset};
use serde_json::{Value, json};
use store_dynamodb::DynamoStore;
use store_sqlite::SqliteStore;

use crate::support::clocks::SkewedClock;
use crate::support::on_every_backend;
use crate::support::store::{Backend, fresh_table};
use crate::world::World;

/// The largest disagreement between instances the case names.
const SKEW: i64 = 5;
/// How long a prepared action stays confirmable.
const TTL: i64 = 15 * 60;

/// Three instances on one store: on time, `SKEW` behind, `SKEW` ahead; the true time; the
/// owner's token (the same on every instance).
struct Fleet {
    on_time: World,
    behind: World,
    ahead: World,
    truth: Arc<FixedClock>,
    token: String,
    _shared: Shared,
}

/// One store as an instance sees it: its own handle on the shared file or table, reading
/// expiry with the instance's clock (each instance's store client has its host's clock).
enum Shared {
    File(tempfile::TempDir),
    Table(String, String),
}

impl Shared {
    async fn new(backend: Backend) -> Option<Shared> {
        match backend {
            Backend::Sqlite => Some(Shared::File(tempfile::tempdir().unwrap())),
            Backend::Dynamodb => {
                let endpoint = crate::support::dynamodb_endpoint("clock skew [dynamodb]")?;
                let (_, table) = fresh_table(&endpoint, "skew").await;
                Some(Shared::Table(endpoint, table))
            }
            _ => None,
        }
    }

    fn handle(&self, clock: Arc<dyn Clock>) -> Arc<dyn store::Store> {
        match self {
            Shared::File(dir) => {
                let file = dir.path().join("gatehouse.db");
                Arc::new(SqliteStore::open(file).unwrap().with_clock(clock))
            }
            Shared::Table(endpoint, table) => {
                Arc::new(DynamoStore::local(endpoint, table).with_clock(clock))
            }
        }
    }
}

async fn fleet(backend: Backend) -> Option<Fleet> {
    let shared = Shared::new(backend).await?;
    let truth = Arc::new(FixedClock::starting_now());
    let instance = |skew: i64| {
        let clock: Arc<dyn Clock> = Arc::new(SkewedClock {
            truth: Arc::clone(&truth),
            skew,
        });
        let settings = app::Settings {
            backend: backend.name().into(),
            clock: Arc::clone(&clock),
            ..app::Settings::default()
        };
        World::on_store(backend, shared.handle(clock), None, &settings)
    };
    let (on_time, behind, ahead) = (instance(0), instance(-SKEW), instance(SKEW));
    on_time.member("acme", "ana", "owner").await;
    let (_, token) = on_time.connect("acme", "ana", Toolset::Full).await;
    Some(Fleet {
        on_time,
        behind,
        ahead,
        truth,
        token,
        _shared: shared,
    })
}

/// A customer created and her deletion prepared on the on-time instance: the confirmation's
/// arguments and the customer's handle.
async fn prepared_deletion(f: &Fleet, n: usize) -> (Value, String) {
    let client = f.on_time.client(&f.token);
    let email = format!("grace-{n}@example.com");
    let prepared = crate::support::deletion::prepare(&client, &email).await;
    assert_eq!(prepared.preview["expires_in_seconds"], TTL);
    (prepared.confirm_arguments, prepared.customer)
}

/// Whether the customer is still stored (a deletion executed removes it).
async fn exists(f: &Fleet, customer: &str) -> bool {
    let client = f.on_time.client(&f.token);
    let got = client
        .call_tool("get_customer", json!({"customer": customer}))
        .await;
    !got.is_error()
}

/// Confirms on `instance`; returns the error code, or `None` when it executed.
async fn confirm(f: &Fleet, instance: &World, arguments: &Value) -> Option<String> {
    let got = instance
        .client(&f.token)
        .call_tool("confirm_action", arguments.clone())
        .await;
    got.is_error()
        .then(|| got.structured()["code"].as_str().unwrap_or("?").to_owned())
}

async fn acceptance_ends_by_the_expiry_plus_the_skew(f: Fleet) {
    let (early, early_customer) = prepared_deletion(&f, 1).await;
    let (late, late_customer) = prepared_deletion(&f, 2).await;
    let (gone, gone_customer) = prepared_deletion(&f, 3).await;

    // Four seconds before the expiry: the instance ahead reads it as past and refuses.
    f.truth.advance(TTL - SKEW + 1);
    assert_eq!(
        confirm(&f, &f.ahead, &early).await.as_deref(),
        Some("not_found")
    );
    assert!(
        exists(&f, &early_customer).await,
        "a refusal changes nothing"
    );

    // Just past the expiry: the on-time instance refuses; the one behind still reads it as
    // unexpired and executes it, inside the bound.
    f.truth.advance(SKEW);
    assert_eq!(
        confirm(&f, &f.on_time, &late).await.as_deref(),
        Some("not_found")
    );
    assert!(exists(&f, &late_customer).await);
    assert_eq!(confirm(&f, &f.behind, &late).await, None);
    assert!(!exists(&f, &late_customer).await, "executed once");

    // Past the expiry plus the skew: no instance executes it.
    f.truth.advance(SKEW);
    for instance in [&f.behind, &f.on_time, &f.ahead] {
        assert_eq!(
            confirm(&f, instance, &gone).await.as_deref(),
            Some("not_found")
        );
        assert_eq!(
            confirm(&f, instance, &early).await.as_deref(),
            Some("not_found")
        );
    }
    assert!(exists(&f, &gone_customer).await && exists(&f, &early_customer).await);
}
on_every_backend!(
    skewed_instances,
    acceptance_ends_by_the_expiry_plus_the_skew,
    |backend| fleet(backend),
    threads = 2
);
