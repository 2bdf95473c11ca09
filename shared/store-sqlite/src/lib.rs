//! The embedded default backend: the whole store in one SQLite file, and gate state beside it.
//!
//! One table holds every item as JSON beside its key. Items of gate-state partitions (rate
//! buckets, concurrency slots, the loop brake: [`store::GATE_STATE_KINDS`]) live in a second
//! file next to the first (`<name>-gates.db`) that is not synced on every commit, since losing
//! them in a power cut is harmless; everything else is synced before a write is acknowledged
//! (ADR 19). Every process that opens the same file opens the same gate file, so limits hold
//! across processes.
//!
//! Writes go to one writer thread per file, which runs the transactions waiting together in
//! one SQLite transaction (`BEGIN IMMEDIATE`, one savepoint each) and commits them with one
//! sync (group commit): read-check-write stays atomic within this process and against any
//! other process on the same files. A transaction that touches both files (rare: a
//! confirmation with its per-object buckets) runs on a connection with both attached. Reads
//! use their own connections, which WAL lets run beside a writer, and run where they are
//! called: a read from SQLite's page cache takes microseconds, less than a hand-off to
//! another thread would.

mod writer;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use store::engine::{self, Effect, Failed};
use store::{
    Delete, Item, Key, Page, Put, Query, SortCondition, Store, StoreError, TransactOp, Update,
    Value,
};
use writer::Writer;

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
    /// The store's writer thread could not be started.
    #[error("cannot start the store's writer thread")]
    Thread {
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
CREATE TABLE IF NOT EXISTS main.items (
    pk TEXT NOT NULL,
    sk TEXT NOT NULL,
    -- Whole seconds of the item's expiry, only to let a sweep delete expired rows; whether an
    -- item is live is decided from the exact value in `body`.
    expires_at INTEGER,
    body TEXT NOT NULL,
    PRIMARY KEY (pk, sk)
) WITHOUT ROWID;
";

/// A store in one SQLite file (and its gate-state file).
#[derive(Debug, Clone)]
pub struct SqliteStore {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    path: PathBuf,
    gates_path: PathBuf,
    /// The data: synced on every commit.
    durable: Writer,
    /// Gate state: not synced on every commit. (Running its transactions in place under a
    /// mutex instead measured no faster: the two runtime threads then contend for it.)
    gates: Writer,
    /// Both files attached, for a transaction that touches both.
    both: Mutex<Connection>,
    /// Connections with both files attached, for reads.
    readers: Mutex<Vec<Connection>>,
    /// Decides which items have expired.
    clock: Arc<dyn outside::Clock>,
}

/// How a connection sees the two files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Layout {
    /// One file: its table is `main.items`.
    Single,
    /// The data file with the gate file attached as `gates`.
    Attached,
}

impl Layout {
    /// The table that holds the items of partition `pk`.
    fn table(self, pk: &str) -> &'static str {
        match self {
            Layout::Attached if store::is_gate_state(pk) => "gates.items",
            _ => "main.items",
        }
    }
}

/// Which file a set of writes touches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Files {
    Data,
    Gates,
    Both,
}

fn files_of<'k>(keys: impl IntoIterator<Item = &'k Key>) -> Files {
    let (mut data, mut gates) = (false, false);
    for key in keys {
        if store::is_gate_state(&key.pk) {
            gates = true;
        } else {
            data = true;
        }
    }
    match (data, gates) {
        (true, true) => Files::Both,
        (false, true) => Files::Gates,
        _ => Files::Data,
    }
}

/// Opens one file. FULL syncs the log on every commit, so a write the store acknowledged
/// survives a power cut, which the replay rules depend on; the gate file is OFF (ADR 19).
fn open_connection(path: &Path, synced: bool) -> Result<Connection, rusqlite::Error> {
    let conn = Connection::open(path)?;
    conn.busy_timeout(std::time::Duration::from_secs(5))?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", if synced { "FULL" } else { "OFF" })?;
    Ok(conn)
}

/// Opens the data file with the gate file attached as `gates`.
fn open_attached(path: &Path, gates: &Path) -> Result<Connection, rusqlite::Error> {
    let conn = open_connection(path, true)?;
    conn.execute(
        "ATTACH DATABASE ?1 AS gates",
        params![gates.to_string_lossy()],
    )?;
    conn.pragma_update(Some("gates"), "journal_mode", "WAL")?;
    conn.pragma_update(Some("gates"), "synchronous", "OFF")?;
    Ok(conn)
}

/// The gate file that belongs to the data file `path`: `<stem>-gates.db` beside it.
fn gates_path(path: &Path) -> PathBuf {
    let stem = path
        .file_stem()
        .map_or_else(|| "store".into(), |s| s.to_string_lossy().into_owned());
    path.with_file_name(format!("{stem}-gates.db"))
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every write is one SQLite transaction, so a panic cannot leave the connection half-way.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

pub(crate) fn unavailable(e: rusqlite::Error) -> StoreError {
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

fn read_stored(conn: &Connection, layout: Layout, key: &Key) -> Result<Option<Item>, StoreError> {
    let sql = match layout.table(&key.pk) {
        "gates.items" => "SELECT body FROM gates.items WHERE pk = ?1 AND sk = ?2",
        _ => "SELECT body FROM main.items WHERE pk = ?1 AND sk = ?2",
    };
    let mut stmt = conn.prepare_cached(sql).map_err(unavailable)?;
    let body: Option<String> = stmt
        .query_row(params![key.pk, key.sk], |row| row.get(0))
        .optional()
        .map_err(unavailable)?;
    body.as_deref().map(decode).transpose()
}

fn write_effect(
    conn: &Connection,
    layout: Layout,
    key: &Key,
    effect: &Effect,
) -> Result<(), StoreError> {
    let table = layout.table(&key.pk);
    match effect {
        Effect::Store(item) => {
            let sql = match table {
                "gates.items" => {
                    "INSERT OR REPLACE INTO gates.items (pk, sk, expires_at, body) VALUES (?1, ?2, ?3, ?4)"
                }
                _ => {
                    "INSERT OR REPLACE INTO main.items (pk, sk, expires_at, body) VALUES (?1, ?2, ?3, ?4)"
                }
            };
            let mut stmt = conn.prepare_cached(sql).map_err(unavailable)?;
            stmt.execute(params![
                key.pk,
                key.sk,
                expiry_column(item),
                store::item_to_json(item)
            ])
            .map_err(unavailable)?;
        }
        Effect::Remove => {
            let sql = match table {
                "gates.items" => "DELETE FROM gates.items WHERE pk = ?1 AND sk = ?2",
                _ => "DELETE FROM main.items WHERE pk = ?1 AND sk = ?2",
            };
            let mut stmt = conn.prepare_cached(sql).map_err(unavailable)?;
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
    /// Opens (creating when needed) the store file at `path`, its gate file beside it, and
    /// their folder.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, OpenError> {
        let path = path.as_ref().to_path_buf();
        if let Some(folder) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(folder).map_err(|source| OpenError::Folder {
                path: folder.to_path_buf(),
                source,
            })?;
        }
        let gates = gates_path(&path);
        let sqlite = |path: &Path| {
            let path = path.to_path_buf();
            move |source| OpenError::Sqlite { path, source }
        };
        let durable = open_connection(&path, true).map_err(sqlite(&path))?;
        durable.execute_batch(SCHEMA).map_err(sqlite(&path))?;
        let gate_writer = open_connection(&gates, false).map_err(sqlite(&gates))?;
        gate_writer.execute_batch(SCHEMA).map_err(sqlite(&gates))?;
        let both = open_attached(&path, &gates).map_err(sqlite(&path))?;
        let thread = |source| OpenError::Thread { source };
        Ok(SqliteStore {
            inner: Arc::new(Inner {
                path: path.clone(),
                gates_path: gates,
                durable: Writer::start(durable, "data").map_err(thread)?,
                gates: Writer::start(gate_writer, "gates").map_err(thread)?,
                both: Mutex::new(both),
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

    /// The file this store's data lives in.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// The file beside it that holds gate state.
    pub fn gates_path(&self) -> &Path {
        &self.inner.gates_path
    }

    /// Deletes rows whose expiry passed more than a second ago, in both files. Never needed
    /// for correctness (expired items are invisible); it only gives the space back.
    pub async fn sweep_expired(&self) -> Result<usize, StoreError> {
        let now = self.inner.clock.now();
        let sweep = move |conn: &Connection| {
            conn.execute(
                "DELETE FROM main.items WHERE expires_at < ?1",
                params![now - 1],
            )
            .map_err(unavailable)
        };
        let data = self.inner.durable.write(sweep).await?;
        let gates = self.inner.gates.write(sweep).await?;
        Ok(data + gates)
    }

    /// Runs `f` on a reading connection (both files attached), here: see the module docs.
    fn read<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        F: FnOnce(&mut Connection) -> Result<T, StoreError>,
    {
        let inner = &self.inner;
        let pooled = lock(&inner.readers).pop();
        let mut conn = match pooled {
            Some(conn) => conn,
            None => open_attached(&inner.path, &inner.gates_path).map_err(unavailable)?,
        };
        let result = f(&mut conn);
        lock(&inner.readers).push(conn);
        result
    }

    /// Runs `f` as one transaction on the file(s) `files`, with the layout it sees them in.
    async fn write<T, F>(&self, files: Files, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection, Layout) -> Result<T, StoreError> + Send + 'static,
    {
        match files {
            Files::Data => {
                self.inner
                    .durable
                    .write(move |c| f(c, Layout::Single))
                    .await
            }
            Files::Gates => self.inner.gates.write(move |c| f(c, Layout::Single)).await,
            Files::Both => {
                let inner = Arc::clone(&self.inner);
                run_blocking(move || {
                    let mut conn = lock(&inner.both);
                    let tx = conn
                        .transaction_with_behavior(TransactionBehavior::Immediate)
                        .map_err(unavailable)?;
                    // Dropping `tx` on an error rolls back, so a failed condition writes nothing.
                    let value = f(&tx, Layout::Attached)?;
                    tx.commit().map_err(unavailable)?;
                    Ok(value)
                })
                .await
            }
        }
    }

    async fn write_one(&self, op: TransactOp) -> Result<Option<Item>, StoreError> {
        let now = self.inner.clock.now();
        engine::validate_op(&op)?;
        let files = files_of([op.key()]);
        self.write(files, move |conn, layout| {
            let stored = read_stored(conn, layout, op.key())?;
            let old = stored.as_ref().filter(|i| engine::is_live(i, now)).cloned();
            match engine::plan(&op, stored.as_ref(), now)? {
                Err(Failed { old }) => Err(StoreError::ConditionFailed { old }),
                Ok(effect) => {
                    write_effect(conn, layout, op.key(), &effect)?;
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
        self.read(|conn| {
            Ok(read_stored(conn, Layout::Attached, key)?.filter(|i| engine::is_live(i, now)))
        })
    }

    async fn batch_get(&self, keys: &[Key]) -> Result<Vec<Option<Item>>, StoreError> {
        let now = self.inner.clock.now();
        engine::validate_batch(keys)?;
        self.read(|conn| {
            // One read transaction, so the answer is one snapshot of each file.
            let tx = conn.transaction().map_err(unavailable)?;
            let items = keys
                .iter()
                .map(|k| {
                    Ok(read_stored(&tx, Layout::Attached, k)?.filter(|i| engine::is_live(i, now)))
                })
                .collect::<Result<Vec<_>, StoreError>>()?;
            tx.finish().map_err(unavailable)?;
            Ok(items)
        })
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
        let after = engine::validate_query(&query)?;
        self.read(|conn| {
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
            let table = Layout::Attached.table(&query.pk);
            let sql = format!(
                "SELECT sk, body FROM {table} WHERE pk = ?1 \
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
    }

    async fn transact_write(&self, ops: Vec<TransactOp>) -> Result<(), StoreError> {
        let now = self.inner.clock.now();
        engine::validate_transaction(&ops)?;
        let files = files_of(ops.iter().map(TransactOp::key));
        self.write(files, move |conn, layout| {
            let effects = engine::plan_all(&ops, |key| read_stored(conn, layout, key), now)?;
            for (op, effect) in ops.iter().zip(&effects) {
                write_effect(conn, layout, op.key(), effect)?;
            }
            Ok(())
        })
        .await
    }
}
