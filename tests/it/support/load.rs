//! What the load and soak tests need around the app: a tenant with several connections on a
//! fault-injecting store, a small random generator whose seed is printed, the whole of a
//! partition, and answers sorted by kind.

use std::sync::Arc;
use std::time::Duration;

use mcp_pipeline::{ClassLimits, Clock, Limits, Toolset};
use mcp_test_client::{RawResponse, ToolCall};
use store::{Item, Key, Query, Store as _};

use super::faults::FaultyStore;
use super::store::{Backend, fresh};
use crate::world::World;

/// Limits no test of load reaches (60,000 calls of every class a window, per connection and
/// per tenant): what it checks is what is stored and served, not refusals.
pub(crate) fn roomy_limits() -> Limits {
    let roomy = ClassLimits {
        read: 60_000,
        expensive_read: 60_000,
        write: 60_000,
        notify: 60_000,
        wake: 60_000,
    };
    Limits {
        per_connection: roomy,
        per_tenant: roomy,
        ..Limits::default()
    }
}

/// `acme`'s owner `ana` with `connections` full connections, on a fresh store behind a
/// fault-injecting wrapper, the server reading the time from `clock`.
pub(crate) struct Tenant {
    pub(crate) world: World,
    pub(crate) store: Arc<FaultyStore>,
    /// (connection id, token) of each connection.
    pub(crate) connections: Vec<(String, String)>,
}

impl Tenant {
    /// A tenant whose store calls are bounded at 1.5 s, so that a load test meets the bound.
    pub(crate) async fn on(
        backend: Backend,
        limits: Limits,
        connections: usize,
        clock: Arc<dyn Clock>,
    ) -> Option<Self> {
        let bound = Duration::from_millis(1500);
        Self::waiting(backend, limits, bound, connections, clock).await
    }

    /// A tenant whose store calls are bounded at `store_wait`: a test that needs every call
    /// served gives it room, since the local DynamoDB server is slow on a loaded machine.
    pub(crate) async fn waiting(
        backend: Backend,
        limits: Limits,
        store_wait: Duration,
        connections: usize,
        clock: Arc<dyn Clock>,
    ) -> Option<Self> {
        let (inner, dir) = fresh(backend).await?;
        let store = FaultyStore::new(inner);
        let settings = app::Settings {
            clock,
            backend: backend.name().into(),
            limits,
            store_wait,
            ..app::Settings::default()
        };
        // The set-up runs under the default bound on store calls: the local DynamoDB server,
        // which every test shares, can take longer than the short bound the test runs under.
        let patient = app::Settings {
            store_wait: app::STORE_WAIT,
            ..settings.clone()
        };
        let setup = World::on_store(backend, store.clone(), None, &patient);
        setup.member("acme", "ana", "owner").await;
        let mut made = Vec::new();
        for _ in 0..connections {
            made.push(setup.connect("acme", "ana", Toolset::Full).await);
        }
        let world = World::on_store(backend, store.clone(), dir, &settings);
        Some(Tenant {
            world,
            store,
            connections: made,
        })
    }

    /// Every live item of partition `pk`, past the faults.
    pub(crate) async fn partition(&self, pk: &str) -> Vec<(Key, Item)> {
        let mut items = Vec::new();
        let mut cursor = None;
        loop {
            let query = Query::partition(pk).after(cursor);
            let page = self.store.inner().query(query).await.expect("query");
            items.extend(page.items);
            cursor = page.next;
            if cursor.is_none() {
                return items;
            }
        }
    }

    /// Audit rows of `action` with `outcome`, the whole trail (`identity::audit::recent` reads
    /// at most 500 rows, fewer than a soak writes).
    pub(crate) async fn audited(&self, action: &str, outcome: &str) -> usize {
        let rows = self
            .partition(&identity::keys::audit_partition(&store::TenantId::new(
                "acme",
            )))
            .await;
        let text =
            |item: &Item, k: &str| item.get(k).and_then(store::Value::as_s).map(str::to_owned);
        rows.iter()
            .filter(|(_, i)| text(i, "action").as_deref() == Some(action))
            .filter(|(_, i)| text(i, "outcome").as_deref() == Some(outcome))
            .count()
    }
}

/// A xorshift generator: enough to vary a load, and its seed printed so a run can be repeated.
#[derive(Debug, Clone)]
pub(crate) struct Dice(u64);

impl Dice {
    /// A generator seeded from `GATEHOUSE_TEST_SEED`, or the time (printed either way).
    pub(crate) fn seeded(what: &str) -> Dice {
        let seed = std::env::var("GATEHOUSE_TEST_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
                now.map_or(1, |d| d.as_nanos() as u64) | 1
            });
        eprintln!("{what}: GATEHOUSE_TEST_SEED={seed}");
        Dice(seed)
    }

    /// A generator of its own for worker `n`.
    pub(crate) fn fork(&self, n: u64) -> Dice {
        Dice((self.0 ^ n.wrapping_mul(0x9E37_79B9_7F4A_7C15)) | 1)
    }

    /// A number below `n`.
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// How a call ended, as a client sorts it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Ended {
    /// A successful tool result.
    Done,
    /// A tool error telling the caller to wait (`rate_limited`, `unavailable`, or another
    /// retryable code with a wait), with its code.
    Wait(String),
    /// HTTP 503 or 429 with `Retry-After`: the endpoint cannot serve now.
    Door(u16),
    /// A tool error of another code.
    Refused(String),
}

/// Sorts a `tools/call` answer; panics on anything a client should never see under load: a 5xx
/// other than 503, a wait without its `Retry-After`, a JSON-RPC error, the code `internal`, or
/// a result whose text does not carry its structured content.
pub(crate) fn sort(answer: &RawResponse) -> Ended {
    if answer.status == 503 || answer.status == 429 {
        assert!(answer.header("retry-after").is_some(), "{answer:?}");
        return Ended::Door(answer.status);
    }
    let body = answer.json();
    assert_eq!(answer.status, 200, "{body}");
    let result = body.get("result").cloned();
    let result = result.unwrap_or_else(|| panic!("a tool result: {body}"));
    mcp_test_client::assert_text_matches_structured(&result);
    let call = ToolCall {
        response: answer.clone(),
        result,
    };
    if !call.is_error() {
        return Ended::Done;
    }
    let details = call.structured();
    let code = details["code"].as_str().unwrap_or("?").to_owned();
    assert_ne!(code, "internal", "{body}");
    if details["retry_after_seconds"]
        .as_i64()
        .is_some_and(|s| s > 0)
    {
        Ended::Wait(code)
    } else {
        Ended::Refused(code)
    }
}
