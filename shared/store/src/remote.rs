//! A store served by another process or object, one JSON message per operation: the edge's
//! Durable Object (ADR 20), and the tests that drive that object over HTTP.
//!
//! [`StoreRequest`] names one [`Store`] operation with its arguments; the server runs it with
//! [`serve`] on its [`Rows`] and answers with a [`StoreAnswer`] or the [`StoreError`].
//! [`RemoteStore`] is the client: every method is one message through a [`Transport`].

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::rows::{self, Rows};
use crate::{Delete, Item, Key, Page, Put, Query, Store, StoreError, TransactOp, Update};

/// One store operation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", content = "args", rename_all = "snake_case")]
pub enum StoreRequest {
    /// [`Store::get`].
    Get(Key),
    /// [`Store::batch_get`].
    BatchGet(Vec<Key>),
    /// [`Store::put`].
    Put(Put),
    /// [`Store::update`].
    Update(Update),
    /// [`Store::delete`].
    Delete(Delete),
    /// [`Store::query`].
    Query(Query),
    /// [`Store::transact_write`].
    TransactWrite(Vec<TransactOp>),
}

/// What a successful operation returns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "value", rename_all = "snake_case")]
pub enum StoreAnswer {
    /// An item or none (get, update, delete).
    Item(Option<Item>),
    /// Items in the order asked (batch get).
    Items(Vec<Option<Item>>),
    /// A page (query).
    Page(Page),
    /// Done (put, transaction).
    Done,
}

/// Runs one request on `rows` at `now` (Unix seconds).
pub fn serve(
    rows: &mut impl Rows,
    request: StoreRequest,
    now: i64,
) -> Result<StoreAnswer, StoreError> {
    Ok(match request {
        StoreRequest::Get(key) => StoreAnswer::Item(rows::get(rows, &key, now)?),
        StoreRequest::BatchGet(keys) => StoreAnswer::Items(rows::batch_get(rows, &keys, now)?),
        StoreRequest::Put(put) => rows::put(rows, put, now).map(|()| StoreAnswer::Done)?,
        StoreRequest::Update(update) => StoreAnswer::Item(Some(rows::update(rows, update, now)?)),
        StoreRequest::Delete(delete) => StoreAnswer::Item(rows::delete(rows, delete, now)?),
        StoreRequest::Query(query) => StoreAnswer::Page(rows::query(rows, &query, now)?),
        StoreRequest::TransactWrite(ops) => {
            rows::transact_write(rows, &ops, now).map(|()| StoreAnswer::Done)?
        }
    })
}

/// Runs one request on any `store` (a router hands a message it received on this way).
pub async fn apply(store: &dyn Store, request: StoreRequest) -> Result<StoreAnswer, StoreError> {
    Ok(match request {
        StoreRequest::Get(key) => StoreAnswer::Item(store.get(&key).await?),
        StoreRequest::BatchGet(keys) => StoreAnswer::Items(store.batch_get(&keys).await?),
        StoreRequest::Put(put) => store.put(put).await.map(|()| StoreAnswer::Done)?,
        StoreRequest::Update(update) => StoreAnswer::Item(Some(store.update(update).await?)),
        StoreRequest::Delete(delete) => StoreAnswer::Item(store.delete(delete).await?),
        StoreRequest::Query(query) => StoreAnswer::Page(store.query(query).await?),
        StoreRequest::TransactWrite(ops) => store
            .transact_write(ops)
            .await
            .map(|()| StoreAnswer::Done)?,
    })
}

/// Whether `request` writes (anything but a read).
pub fn writes(request: &StoreRequest) -> bool {
    !matches!(
        request,
        StoreRequest::Get(_) | StoreRequest::BatchGet(_) | StoreRequest::Query(_)
    )
}

/// The keys `request` addresses (a query: none, it reads a partition).
pub fn keys(request: &StoreRequest) -> Vec<&Key> {
    match request {
        StoreRequest::Get(key) => vec![key],
        StoreRequest::BatchGet(keys) => keys.iter().collect(),
        StoreRequest::Put(put) => vec![&put.key],
        StoreRequest::Update(update) => vec![&update.key],
        StoreRequest::Delete(delete) => vec![&delete.key],
        StoreRequest::Query(_) => Vec::new(),
        StoreRequest::TransactWrite(ops) => ops.iter().map(TransactOp::key).collect(),
    }
}

/// Whether `request` writes the item at `key` (a condition check only reads it).
pub fn writes_key(request: &StoreRequest, key: &Key) -> bool {
    match request {
        StoreRequest::Put(put) => put.key == *key,
        StoreRequest::Update(update) => update.key == *key,
        StoreRequest::Delete(delete) => delete.key == *key,
        StoreRequest::TransactWrite(ops) => ops
            .iter()
            .any(|op| op.key() == key && !matches!(op, TransactOp::Check(_))),
        StoreRequest::Get(_) | StoreRequest::BatchGet(_) | StoreRequest::Query(_) => false,
    }
}

/// One stored item as a backup carries it: its key and all its attributes (`expires_at`
/// included), the item in its JSON form ([`crate::item_to_json`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExportRow {
    /// The partition key.
    pub pk: String,
    /// The sort key.
    pub sk: String,
    /// The item.
    pub item: serde_json::Value,
}

/// What an object is asked for one page of its items, in key order.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ExportAsk {
    /// The key the previous page ended at.
    pub after: Option<(String, String)>,
    /// At most this many items (the object caps it).
    pub limit: u32,
}

/// What the edge's admin route is asked for a page of one object's items: the object's name
/// within the deployment (`global`, `t:<tenant>`, or `store`, the one object of a deployment
/// made before ADR 51) and the page.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ExportFrom {
    /// The object.
    pub object: String,
    /// The page.
    #[serde(flatten)]
    pub ask: ExportAsk,
}

/// Items to import, each into the object its key belongs in.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ImportRows {
    /// The items.
    pub rows: Vec<ExportRow>,
}

/// The most items one import message carries (each is one write to its object; a Worker
/// invocation on the free plan makes at most 50 subrequests).
pub const MOST_IMPORTED: usize = 40;

/// One page of an object's items.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ExportPage {
    /// The items, in key order.
    pub rows: Vec<ExportRow>,
    /// Where the next page starts, if there is one.
    pub next: Option<(String, String)>,
}

/// What an import did: items written, and items left as they were because their key held
/// one already.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Imported {
    /// Items written.
    pub written: u64,
    /// Items whose key held one already (left unchanged).
    pub present: u64,
}

/// Writes each of `rows` into `store` where no item is at its key; counts both.
///
/// # Errors
///
/// A row whose item is unreadable, or a store that fails.
pub async fn import(store: &dyn Store, rows: Vec<ExportRow>) -> Result<Imported, StoreError> {
    let mut imported = Imported::default();
    for row in rows {
        let item = crate::item_from_json(&row.item.to_string()).map_err(|e| {
            StoreError::Unavailable(format!("an unreadable item at {}/{}: {e}", row.pk, row.sk))
        })?;
        let put =
            Put::new(Key::new(row.pk, row.sk), item).when(crate::Condition::item_not_exists());
        match store.put(put).await {
            Ok(()) => imported.written += 1,
            Err(StoreError::ConditionFailed { .. }) => imported.present += 1,
            Err(e) => return Err(e),
        }
    }
    Ok(imported)
}

/// Encodes the outcome of [`serve`] for the wire.
pub fn encode_outcome(outcome: &Result<StoreAnswer, StoreError>) -> String {
    serde_json::to_string(outcome).unwrap_or_else(|e| {
        let failed: Result<StoreAnswer, StoreError> = Err(StoreError::Unavailable(format!(
            "the store could not encode its answer: {e}"
        )));
        serde_json::to_string(&failed).unwrap_or_default()
    })
}

/// Carries one encoded request to the store and brings back its encoded outcome.
#[async_trait::async_trait]
pub trait Transport: Send + Sync + std::fmt::Debug + 'static {
    /// Sends `request` (JSON); returns the outcome (JSON) or why it never arrived.
    async fn send(&self, request: String) -> Result<String, StoreError>;
}

/// A [`Store`] whose every operation is one message through a [`Transport`].
#[derive(Debug, Clone)]
pub struct RemoteStore {
    transport: Arc<dyn Transport>,
}

impl RemoteStore {
    /// A store reached through `transport`.
    pub fn new(transport: Arc<dyn Transport>) -> Self {
        RemoteStore { transport }
    }

    async fn call(&self, request: &StoreRequest) -> Result<StoreAnswer, StoreError> {
        let body = serde_json::to_string(request).map_err(|e| {
            StoreError::Unavailable(format!("could not encode a store request: {e}"))
        })?;
        let answer = self.transport.send(body).await?;
        serde_json::from_str::<Result<StoreAnswer, StoreError>>(&answer).map_err(|e| {
            StoreError::Unavailable(format!("the store answered something unreadable: {e}"))
        })?
    }
}

fn unexpected(answer: &StoreAnswer) -> StoreError {
    StoreError::Unavailable(format!("the store answered the wrong kind: {answer:?}"))
}

#[async_trait::async_trait]
impl Store for RemoteStore {
    async fn get(&self, key: &Key) -> Result<Option<Item>, StoreError> {
        match self.call(&StoreRequest::Get(key.clone())).await? {
            StoreAnswer::Item(item) => Ok(item),
            other => Err(unexpected(&other)),
        }
    }

    async fn batch_get(&self, keys: &[Key]) -> Result<Vec<Option<Item>>, StoreError> {
        match self.call(&StoreRequest::BatchGet(keys.to_vec())).await? {
            StoreAnswer::Items(items) => Ok(items),
            other => Err(unexpected(&other)),
        }
    }

    async fn put(&self, put: Put) -> Result<(), StoreError> {
        match self.call(&StoreRequest::Put(put)).await? {
            StoreAnswer::Done => Ok(()),
            other => Err(unexpected(&other)),
        }
    }

    async fn update(&self, update: Update) -> Result<Item, StoreError> {
        match self.call(&StoreRequest::Update(update)).await? {
            StoreAnswer::Item(item) => Ok(item.unwrap_or_default()),
            other => Err(unexpected(&other)),
        }
    }

    async fn delete(&self, delete: Delete) -> Result<Option<Item>, StoreError> {
        match self.call(&StoreRequest::Delete(delete)).await? {
            StoreAnswer::Item(item) => Ok(item),
            other => Err(unexpected(&other)),
        }
    }

    async fn query(&self, query: Query) -> Result<Page, StoreError> {
        match self.call(&StoreRequest::Query(query)).await? {
            StoreAnswer::Page(page) => Ok(page),
            other => Err(unexpected(&other)),
        }
    }

    async fn transact_write(&self, ops: Vec<TransactOp>) -> Result<(), StoreError> {
        match self.call(&StoreRequest::TransactWrite(ops)).await? {
            StoreAnswer::Done => Ok(()),
            other => Err(unexpected(&other)),
        }
    }
}
