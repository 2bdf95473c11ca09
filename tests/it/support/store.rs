//! Fresh stores for tests: every test that needs an empty store gets it here.
//!
//! [`fresh`] is the usual entry: an empty store of a [`Backend`] behind `Arc<dyn Store>`.
//! [`fresh_sqlite`] and [`fresh_table`] give the concrete stores underneath, for tests that
//! wrap them (`CountingStore`), pick the file, or hand a table to a binary.

use std::sync::Arc;

use mcp_pipeline::FixedClock;
use store::Store;
use store_dynamodb::DynamoStore;
use store_sqlite::SqliteStore;
use tempfile::TempDir;

/// The store backends tests run on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Backend {
    /// `store::MemoryStore`, in the process.
    Memory,
    /// SQLite in a temporary folder.
    Sqlite,
    /// A new table on the local DynamoDB server (`GATEHOUSE_TEST_DYNAMODB_ENDPOINT`).
    Dynamodb,
    /// A new Durable Object of the locally served edge worker (`GATEHOUSE_TEST_EDGE_URL`).
    Edge,
}

impl Backend {
    /// The name `app::Settings::backend` takes.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Backend::Memory => "memory",
            Backend::Sqlite => "sqlite",
            Backend::Dynamodb => "dynamodb",
            Backend::Edge => "durable-object",
        }
    }
}

/// A fresh, empty store on `backend` and the folder it lives in (SQLite only; keep it as long
/// as the store), or `None` (printed) when DynamoDB is asked for and its server is not
/// available outside CI.
pub(crate) async fn fresh(backend: Backend) -> Option<(Arc<dyn Store>, Option<TempDir>)> {
    match backend {
        Backend::Memory => Some((Arc::new(store::MemoryStore::new()), None)),
        Backend::Sqlite => {
            let (store, dir) = fresh_sqlite("gatehouse.db");
            Some((Arc::new(store), Some(dir)))
        }
        Backend::Dynamodb => {
            let endpoint = super::dynamodb_endpoint("tests on [dynamodb]")?;
            let (store, _table) = fresh_table(&endpoint, "t").await;
            Some((Arc::new(store), None))
        }
        Backend::Edge => {
            let url = super::edge::edge_url("tests on [edge]")?;
            Some((super::edge::fresh_edge_store(&url).0, None))
        }
    }
}

/// A fresh SQLite store in the file `file` (a path relative to a new temporary folder, whose
/// missing folders the store creates), and that folder.
pub(crate) fn fresh_sqlite(file: &str) -> (SqliteStore, TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join(file)).unwrap();
    (store, dir)
}

/// Two handles on one fresh SQLite file, as two processes would hold it: one to write through,
/// one to read through on a fixed clock (what a handle keeps is used for about a second, and a
/// few synced commits on a busy machine may take longer), and the folder.
pub(crate) fn write_and_read_handles() -> (SqliteStore, SqliteStore, Arc<FixedClock>, TempDir) {
    let (writes, dir) = fresh_sqlite("store.db");
    let clock = Arc::new(FixedClock::starting_now());
    let reads = SqliteStore::open(writes.path())
        .unwrap()
        .with_clock(clock.clone());
    (writes, reads, clock, dir)
}

/// A new, empty table on the DynamoDB server at `endpoint`, named `<prefix>-<unique>`, and its
/// name.
pub(crate) async fn fresh_table(endpoint: &str, prefix: &str) -> (DynamoStore, String) {
    let table = format!("{prefix}-{}", unique_suffix());
    let store = DynamoStore::local(endpoint, &table);
    store.create_table().await.expect("create the table");
    (store, table)
}

/// Gives the item at `key` in `table` an attribute of a DynamoDB type the store never writes
/// (a number set), straight through the local server's API: a read of it fails as a store
/// that holds something unreadable does, for tests of how a failure is answered.
pub(crate) async fn spoil_an_item(endpoint: &str, table: &str, key: &store::Key) {
    let body = serde_json::json!({
        "TableName": table,
        "Key": {store::PK: {"S": key.pk}, store::SK: {"S": key.sk}},
        "UpdateExpression": "SET spoiled = :v",
        "ExpressionAttributeValues": {":v": {"NS": ["1", "2"]}},
    });
    let client = http_client::HttpClient::new(std::time::Duration::from_secs(10)).unwrap();
    let headers = [
        ("content-type", "application/x-amz-json-1.0"),
        ("x-amz-target", "DynamoDB_20120810.UpdateItem"),
        (
            "authorization",
            "AWS4-HMAC-SHA256 Credential=test/20260101/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=0",
        ),
    ];
    let answer = client
        .post(endpoint, &headers, body.to_string().into())
        .await
        .unwrap();
    assert_eq!(
        answer.status,
        200,
        "{}",
        String::from_utf8_lossy(&answer.body)
    );
}

/// Unique in this process and, by the time, across runs against the same server.
pub(crate) fn unique_suffix() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let millis = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis();
    format!(
        "{millis}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// A transport that serves each message in this process on a map, through the same encoding
/// and [`store::remote::serve`] the edge's Durable Object uses: the wire format proven on
/// every value type, without the edge runtime.
#[derive(Debug, Default)]
pub(crate) struct LoopbackTransport {
    rows: std::sync::Mutex<std::collections::BTreeMap<store::Key, store::Item>>,
}

#[async_trait::async_trait]
impl store::remote::Transport for LoopbackTransport {
    async fn send(&self, request: String) -> Result<String, store::StoreError> {
        let request: store::remote::StoreRequest = serde_json::from_str(&request)
            .map_err(|e| store::StoreError::Unavailable(format!("bad request: {e}")))?;
        let now = mcp_pipeline::Clock::now(&mcp_pipeline::SystemClock);
        let mut rows = self.rows.lock().unwrap();
        Ok(store::remote::encode_outcome(&store::remote::serve(
            &mut *rows, request, now,
        )))
    }
}

/// Two handles on one embedded store file, as two processes on one data folder use it: every
/// read through `reads`, every write through `writes`. Each handle keeps what it read (ADR 28),
/// so a read that missed the other handle's commit would answer what was kept before it.
#[derive(Debug)]
pub(crate) struct TwoHandles {
    pub(crate) reads: SqliteStore,
    pub(crate) writes: SqliteStore,
}

impl TwoHandles {
    /// Two handles on a new file.
    pub(crate) fn fresh() -> (TwoHandles, TempDir) {
        let (reads, dir) = fresh_sqlite("store.db");
        let writes = SqliteStore::open(reads.path()).unwrap();
        (TwoHandles { reads, writes }, dir)
    }
}

#[async_trait::async_trait]
impl Store for TwoHandles {
    async fn get(&self, key: &store::Key) -> Result<Option<store::Item>, store::StoreError> {
        self.reads.get(key).await
    }

    async fn batch_get(
        &self,
        keys: &[store::Key],
    ) -> Result<Vec<Option<store::Item>>, store::StoreError> {
        self.reads.batch_get(keys).await
    }

    async fn put(&self, put: store::Put) -> Result<(), store::StoreError> {
        self.writes.put(put).await
    }

    async fn update(&self, update: store::Update) -> Result<store::Item, store::StoreError> {
        self.writes.update(update).await
    }

    async fn delete(
        &self,
        delete: store::Delete,
    ) -> Result<Option<store::Item>, store::StoreError> {
        self.writes.delete(delete).await
    }

    async fn query(&self, query: store::Query) -> Result<store::Page, store::StoreError> {
        self.reads.query(query).await
    }

    async fn transact_write(&self, ops: Vec<store::TransactOp>) -> Result<(), store::StoreError> {
        self.writes.transact_write(ops).await
    }

    async fn batch_get_derived(
        &self,
        keys: &[store::Key],
        more: &[store::Key],
        derivation: store::Derivation<'_>,
    ) -> Result<(store::Derived, Vec<Option<store::Item>>), store::StoreError> {
        self.reads.batch_get_derived(keys, more, derivation).await
    }
}

/// How many bookings `tenant` holds: the items of its bookings' partition but the technicians'
/// schedule revisions kept there (`!schedule#…`, ADR 46).
pub(crate) async fn bookings_held(store: &dyn Store, tenant: &str) -> usize {
    let partition =
        booking::keys::partition(&store::TenantId::new(tenant), booking::ids::Kind::Booking);
    let page = store
        .query(store::Query::partition(partition))
        .await
        .unwrap();
    assert!(page.next.is_none(), "the bookings fit one page here");
    page.items
        .iter()
        .filter(|(key, _)| !key.sk.starts_with('!'))
        .count()
}
