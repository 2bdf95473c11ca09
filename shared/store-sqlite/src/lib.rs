//! The embedded default backend: the whole store in one SQLite file.
//!
//! One table holds every item as JSON beside its key. Writes run on one connection inside
//! `BEGIN IMMEDIATE`, so read-check-write is atomic within this process and against any other
//! process opening the same file; reads use their own connections, which WAL lets run beside a
//! writer. SQLite is blocking, so every call runs on tokio's blocking pool.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use store::engine::{self, Effect, Failed};
use store::{
    Delete, Invalid, Item, Key, Page, Put, Query, SortCondition, Store, StoreError, TransactOp,
    Update, Value,
};

/// Why the store file could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// The folder for the file could not be created.
    #[error("cannot create the data folder {path}")]
    Folder {
        /// The folder.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// SQLite refused to open or set up the file.
    #[error("cannot open the store file {path}")]
    Sqlite {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: rusqlite::Error,
    },
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS items (
    pk TEXT NOT NULL,
    sk TEXT NOT NULL,
    -- Whole seconds of the item's expiry, only to let a sweep delete expired rows; whether an
    -- item is live is decided from the exact value in `body`.
    expires_at INTEGER,
    body TEXT NOT NULL,
    PRIMARY KEY (pk, sk)
) WITHOUT ROWID;
";

/// A store in one SQLite file.
#[derive(Debug, Clone)]
pub struct SqliteStore {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    path: PathBuf,
    writer: Mutex<Connection>,
    readers: Mutex<Vec<Connection>>,
    /// Decides which items have expired.
    clock: Arc<dyn outside::Clock>,
}

fn open_connection(path: &Path) -> Result<Connection, rusqlite::Error> {
    let conn = Connection::open(path)?;
    conn.busy_timeout(std::time::Duration::from_secs(5))?;
    // WAL lets readers run beside the writer. FULL syncs the log on every commit: a write the
    // store acknowledged survives a power cut, which the replay rules depend on.
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "FULL")?;
    Ok(conn)
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every write is one SQLite transaction, so a panic cannot leave the connection half-way.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

fn unavailable(e: rusqlite::Error) -> StoreError {
    match e {
        rusqlite::Error::SqliteFailure(code, _)
            if matches!(
                code.code,
                rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked
            ) =>
        {
            StoreError::Throttled
        }
        other => StoreError::Unavailable(format!("sqlite: {other}")),
    }
}

fn decode(body: &str) -> Result<Item, StoreError> {
    store::item_from_json(body)
        .map_err(|e| StoreError::Unavailable(format!("corrupt item in store file: {e}")))
}

fn expiry_column(item: &Item) -> Option<i64> {
    match item.get(store::TTL_ATTRIBUTE) {
        Some(Value::N(n)) => {
            let text = n.as_str();
            let whole = text.split('.').next().unwrap_or(text);
            whole.parse::<i64>().ok()
        }
        _ => None,
    }
}

fn read_stored(conn: &Connection, key: &Key) -> Result<Option<Item>, StoreError> {
    let mut stmt = conn
        .prepare_cached("SELECT body FROM items WHERE pk = ?1 AND sk = ?2")
        .map_err(unavailable)?;
    let body: Option<String> = stmt
        .query_row(params![key.pk, key.sk], |row| row.get(0))
        .optional()
        .map_err(unavailable)?;
    body.as_deref().map(decode).transpose()
}

fn write_effect(conn: &Connection, key: &Key, effect: &Effect) -> Result<(), StoreError> {
    match effect {
        Effect::Store(item) => {
            let mut stmt = conn
                .prepare_cached(
                    "INSERT OR REPLACE INTO items (pk, sk, expires_at, body) VALUES (?1, ?2, ?3, ?4)",
                )
                .map_err(unavailable)?;
            stmt.execute(params![
                key.pk,
                key.sk,
                expiry_column(item),
                store::item_to_json(item)
            ])
            .map_err(unavailable)?;
        }
        Effect::Remove => {
            let mut stmt = conn
                .prepare_cached("DELETE FROM items WHERE pk = ?1 AND sk = ?2")
                .map_err(unavailable)?;
            stmt.execute(params![key.pk, key.sk]).map_err(unavailable)?;
        }
        Effect::Keep => {}
    }
    Ok(())
}

/// Upper bound, in byte order, of every string that starts with `prefix`: the highest scalar
/// value sorts after every other continuation. Rows are still filtered exactly afterwards.
fn prefix_upper_bound(prefix: &str) -> String {
    let mut bound = prefix.to_owned();
    bound.extend(std::iter::repeat_n(char::MAX, 8));
    bound
}

/// SQL bounds on the sort key for a query (a superset; rows are then filtered exactly).
fn sort_bounds(sort: Option<&SortCondition>) -> (Option<String>, Option<String>) {
    match sort {
        None => (None, None),
        Some(SortCondition::Eq(v)) => (Some(v.clone()), Some(v.clone())),
        Some(SortCondition::BeginsWith(p)) => (Some(p.clone()), Some(prefix_upper_bound(p))),
        Some(SortCondition::Between(lo, hi)) => (Some(lo.clone()), Some(hi.clone())),
        Some(SortCondition::Lt(v) | SortCondition::Le(v)) => (None, Some(v.clone())),
        Some(SortCondition::Gt(v) | SortCondition::Ge(v)) => (Some(v.clone()), None),
    }
}

impl SqliteStore {
    /// Opens (creating when needed) the store file at `path`, and its folder.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, OpenError> {
        let path = path.as_ref().to_path_buf();
        if let Some(folder) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(folder).map_err(|source| OpenError::Folder {
                path: folder.to_path_buf(),
                source,
            })?;
        }
        let sqlite = |source| OpenError::Sqlite {
            path: path.clone(),
            source,
        };
        let writer = open_connection(&path).map_err(sqlite)?;
        writer.execute_batch(SCHEMA).map_err(sqlite)?;
        Ok(SqliteStore {
            inner: Arc::new(Inner {
                path: path.clone(),
                writer: Mutex::new(writer),
                readers: Mutex::new(Vec::new()),
                clock: Arc::new(outside::SystemClock),
            }),
        })
    }

    /// Decides expiry by `clock` instead of the system's (before the store is shared).
    pub fn with_clock(mut self, clock: Arc<dyn outside::Clock>) -> Self {
        if let Some(inner) = Arc::get_mut(&mut self.inner) {
            inner.clock = clock;
        }
        self
    }

    /// The file this store lives in.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// Deletes rows whose expiry passed more than a second ago. Never needed for correctness
    /// (expired items are invisible); it only gives the space back.
    pub async fn sweep_expired(&self) -> Result<usize, StoreError> {
        let now = self.inner.clock.now();
        self.write(move |conn| {
            conn.execute("DELETE FROM items WHERE expires_at < ?1", params![now - 1])
                .map_err(unavailable)
        })
        .await
    }

    async fn read<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T, StoreError> + Send + 'static,
    {
        let inner = Arc::clone(&self.inner);
        run_blocking(move || {
            let pooled = lock(&inner.readers).pop();
            let mut conn = match pooled {
                Some(conn) => conn,
                None => open_connection(&inner.path).map_err(unavailable)?,
            };
            let result = f(&mut conn);
            lock(&inner.readers).push(conn);
            result
        })
        .await
    }

    async fn write<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&rusqlite::Transaction<'_>) -> Result<T, StoreError> + Send + 'static,
    {
        let inner = Arc::clone(&self.inner);
        run_blocking(move || {
            let mut conn = lock(&inner.writer);
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(unavailable)?;
            // Dropping `tx` on an error rolls back, so a failed condition writes nothing.
            let value = f(&tx)?;
            tx.commit().map_err(unavailable)?;
            Ok(value)
        })
        .await
    }

    async fn write_one(&self, op: TransactOp) -> Result<Option<Item>, StoreError> {
        let now = self.inner.clock.now();
        engine::validate_op(&op)?;
        self.write(move |conn| {
            let stored = read_stored(conn, op.key())?;
            let old = stored.as_ref().filter(|i| engine::is_live(i, now)).cloned();
            match engine::plan(&op, stored.as_ref(), now)? {
                Err(Failed { old }) => Err(StoreError::ConditionFailed { old }),
                Ok(effect) => {
                    write_effect(conn, op.key(), &effect)?;
                    Ok(match effect {
                        Effect::Store(item) => Some(item),
                        Effect::Remove | Effect::Keep => old,
                    })
                }
            }
        })
        .await
    }
}

async fn run_blocking<T, F>(f: F) -> Result<T, StoreError>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T, StoreError> + Send + 'static,
{
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| StoreError::Unavailable(format!("store task failed: {e}")))?
}

#[async_trait::async_trait]
impl Store for SqliteStore {
    async fn get(&self, key: &Key) -> Result<Option<Item>, StoreError> {
        let now = self.inner.clock.now();
        engine::validate_key(key)?;
        let key = key.clone();
        self.read(move |conn| Ok(read_stored(conn, &key)?.filter(|i| engine::is_live(i, now))))
            .await
    }

    async fn batch_get(&self, keys: &[Key]) -> Result<Vec<Option<Item>>, StoreError> {
        let now = self.inner.clock.now();
        engine::validate_batch(keys)?;
        let keys = keys.to_vec();
        self.read(move |conn| {
            // One read transaction, so the answer is one snapshot.
            let tx = conn.transaction().map_err(unavailable)?;
            let items = keys
                .iter()
                .map(|k| Ok(read_stored(&tx, k)?.filter(|i| engine::is_live(i, now))))
                .collect::<Result<Vec<_>, StoreError>>()?;
            tx.finish().map_err(unavailable)?;
            Ok(items)
        })
        .await
    }

    async fn put(&self, put: Put) -> Result<(), StoreError> {
        self.write_one(TransactOp::Put(put)).await.map(|_| ())
    }

    async fn update(&self, update: Update) -> Result<Item, StoreError> {
        self.write_one(TransactOp::Update(update))
            .await
            .map(Option::unwrap_or_default)
    }

    async fn delete(&self, delete: Delete) -> Result<Option<Item>, StoreError> {
        self.write_one(TransactOp::Delete(delete)).await
    }

    async fn query(&self, query: Query) -> Result<Page, StoreError> {
        let now = self.inner.clock.now();
        if query.limit == Some(0) {
            return Err(Invalid::ZeroLimit.into());
        }
        if query.pk.is_empty() {
            return Err(Invalid::EmptyKey.into());
        }
        let after = query
            .cursor
            .as_ref()
            .map(|c| engine::decode_cursor(c, &query.pk))
            .transpose()?;
        self.read(move |conn| {
            let (mut lo, mut hi) = sort_bounds(query.sort.as_ref());
            // The cursor narrows the range on the side the query moves towards.
            if let Some(after) = after.clone() {
                if query.descending {
                    hi = Some(hi.map_or(after.clone(), |h| h.min(after)));
                } else {
                    lo = Some(lo.map_or(after.clone(), |l| l.max(after)));
                }
            }
            let order = if query.descending { "DESC" } else { "ASC" };
            let sql = format!(
                "SELECT sk, body FROM items WHERE pk = ?1 \
                 AND (?2 IS NULL OR sk >= ?2) AND (?3 IS NULL OR sk <= ?3) ORDER BY sk {order}"
            );
            let mut stmt = conn.prepare_cached(&sql).map_err(unavailable)?;
            let mut rows = stmt.query(params![query.pk, lo, hi]).map_err(unavailable)?;
            let limit = query.limit.map_or(usize::MAX, |l| l as usize);
            let mut items = Vec::new();
            let mut more = false;
            while let Some(row) = rows.next().map_err(unavailable)? {
                let sk: String = row.get(0).map_err(unavailable)?;
                if let Some(after) = &after
                    && sk == *after
                {
                    continue;
                }
                if !query.sort.as_ref().is_none_or(|c| c.matches(&sk)) {
                    continue;
                }
                let body: String = row.get(1).map_err(unavailable)?;
                let item = decode(&body)?;
                if !engine::is_live(&item, now) {
                    continue;
                }
                if items.len() == limit {
                    more = true;
                    break;
                }
                items.push((Key::new(query.pk.clone(), sk), item));
            }
            let next = if more {
                items.last().map(|(k, _)| engine::encode_cursor(k))
            } else {
                None
            };
            Ok(Page { items, next })
        })
        .await
    }

    async fn transact_write(&self, ops: Vec<TransactOp>) -> Result<(), StoreError> {
        let now = self.inner.clock.now();
        engine::validate_transaction(&ops)?;
        self.write(move |conn| {
            let mut effects = Vec::with_capacity(ops.len());
            let mut failures = Vec::with_capacity(ops.len());
            for op in &ops {
                let stored = read_stored(conn, op.key())?;
                match engine::plan(op, stored.as_ref(), now)? {
                    Ok(effect) => {
                        effects.push(effect);
                        failures.push(None);
                    }
                    Err(failed) => failures.push(Some(failed)),
                }
            }
            if failures.iter().any(Option::is_some) {
                return Err(engine::cancelled(failures));
            }
            for (op, effect) in ops.iter().zip(&effects) {
                write_effect(conn, op.key(), effect)?;
            }
            Ok(())
        })
        .await
    }
}
