//! The embedded default backend: the whole store in one SQLite file, and gate state beside it.
//!
//! One table holds every item as JSON, found through an index on its key ([`layout`], ADR 29).
//! Items of gate-state partitions (rate buckets, concurrency slots, the loop brake:
//! [`store::GATE_STATE_KINDS`]) live in an LMDB file next to it (`<name>-gates.mdb`,
//! [`gate_file`]) that is never synced, since losing them in a power cut is harmless, and whose
//! transactions run in place in microseconds; everything else is synced before a write is
//! acknowledged (ADR 19, ADR 27). Every process that opens the same file opens the same gate
//! file, so limits hold across processes.
//!
//! Data writes go to one writer thread per file, which runs the transactions waiting together
//! in one SQLite transaction (`BEGIN IMMEDIATE`, one savepoint each) and commits them with one
//! sync (group commit): read-check-write stays atomic within this process and against any
//! other process on the same files. A transaction that touches both files (rare: a
//! confirmation with its per-object buckets) runs on the writer thread and holds the gate
//! file's write lock while it runs. Reads use their own connections, which WAL lets run beside
//! a writer, and run where they are called: a read from SQLite's page cache takes
//! microseconds, less than a hand-off to another thread would. Items a point read found are
//! kept for the next reads of the same handle, and used only while no data commit has begun
//! writing their partition since (counted in the gate file, shared by every process; ADR 28,
//! ADR 31).

mod checkpoints;
mod gate_file;
mod layout;
mod read_cache;
mod sweep;
#[cfg(test)]
mod tests;
mod writer;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use gate_file::{GateFile, Touched};
use read_cache::{DerivedCache, ReadCache};
use rusqlite::{Connection, OptionalExtension, params};
use store::engine::{self, Effect, Failed};
use store::{
    Delete, Derivation, Derived, Item, Key, Page, Put, Query, SortCondition, Store, StoreError,
    TransactOp, Update, Value,
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
    /// The data file could not be created.
    #[error("cannot create the data file {path}")]
    File {
        /// The file.
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
    /// LMDB refused to open or set up the gate file.
    #[error("cannot open the gate file {path}")]
    Gates {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: heed::Error,
    },
}

/// A store in one SQLite file (and its gate-state file).
#[derive(Debug, Clone)]
pub struct SqliteStore {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    path: PathBuf,
    /// The data: synced on every commit.
    durable: Writer,
    /// Gate state, shared with every store on the same folder.
    gates: Arc<GateFile>,
    /// Connections for reads.
    readers: Mutex<Vec<Connection>>,
    /// Items point reads found, for the next ones (ADR 28).
    kept: ReadCache,
    /// Values derived from items read, for the next derivations of the same (ADR 32).
    derived: DerivedCache,
    /// Reads that went to the data file.
    file_reads: AtomicU64,
    /// Decides which items have expired.
    clock: Arc<dyn outside::Clock>,
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

/// Makes `folder` if missing, its owner's only (0700 on Unix): the data file holds customers'
/// names and addresses, password hashes and session secrets. Missing parents are made as any
/// folder is (`~/.local/share` on a fresh home is not the store's to close), and a folder that
/// exists keeps its mode: where it lives is the user's choice.
fn private_folder(folder: &Path) -> std::io::Result<()> {
    if folder.is_dir() {
        return Ok(());
    }
    if let Some(parent) = folder.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)?;
    }
    let mut builder = std::fs::DirBuilder::new();
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt as _;
        builder.mode(0o700);
    }
    match builder.create(folder) {
        // Made meanwhile by another process starting on the same folder.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && folder.is_dir() => Ok(()),
        done => done,
    }
}

/// Creates the data file empty and readable by its owner only (0600 on Unix) when it does not
/// exist yet, before SQLite opens it: SQLite gives its log and shared-memory files the data
/// file's mode, so all three stay private whatever the process's umask. An existing one is
/// made private if it is not ([`tighten`]).
fn private_file(path: &Path) -> std::io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600);
    }
    match options.open(path) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            tighten(path);
            Ok(())
        }
        Err(e) => Err(e),
    }
}

/// Makes an existing data file, and its log and shared-memory files, readable by their owner
/// only, if others could read them (files made before the store made them private). A file
/// this user may not change is left as it is: the store still opens.
fn tighten(path: &Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mut names = vec![path.to_path_buf()];
        for suffix in ["-wal", "-shm"] {
            let mut name = path.as_os_str().to_owned();
            name.push(suffix);
            names.push(PathBuf::from(name));
        }
        for name in names {
            let Ok(meta) = std::fs::metadata(&name) else {
                continue;
            };
            if meta.permissions().mode() & 0o077 != 0 {
                let private = std::fs::Permissions::from_mode(0o600);
                match std::fs::set_permissions(&name, private) {
                    Ok(()) => {
                        tracing::warn!(file = %name.display(), "the data file was readable by other users; it is now its owner's only")
                    }
                    Err(error) => {
                        tracing::warn!(file = %name.display(), %error, "the data file is readable by other users and could not be made private")
                    }
                }
            }
        }
    }
    #[cfg(not(unix))]
    let _ = path;
}

/// Opens the data file. FULL syncs the log on every commit, so a write the store acknowledged
/// survives a power cut, which the replay rules depend on. Each connection caches at most
/// [`PAGE_CACHE_KIB`] of the file. The writer's connection copies its log back beside its
/// commits ([`checkpoints`]); any other that writes does so in the commit that fills the log.
pub(crate) fn open_connection(path: &Path) -> Result<Connection, rusqlite::Error> {
    let conn = Connection::open(path)?;
    conn.busy_timeout(std::time::Duration::from_secs(5))?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "FULL")?;
    conn.pragma_update(None, "cache_size", -PAGE_CACHE_KIB)?;
    conn.pragma_update(None, "wal_autocheckpoint", checkpoints::CHECKPOINT_PAGES)?;
    Ok(conn)
}

/// The writer's page cache, in KiB. Its own commits never drop it (only another connection's
/// do), and the pages a write touches (index leaves all over the file) outgrew the readers'
/// 512 KiB, so each write read pages back from the file (ADR 36).
const WRITER_CACHE_KIB: i64 = 4096;

/// A connection's page cache, in KiB (SQLite's default is about 2 MiB). In WAL mode a
/// connection drops its cache whenever another one has committed, so under writes a large one
/// is refilled only to be dropped; without writes, what a handle keeps (ADR 28) answers most
/// reads first. Paired runs showed no loss of writes and 1–1.5 MiB less peak memory.
const PAGE_CACHE_KIB: i64 = 512;

/// The gate file that belongs to the data file `path`: `<stem>-gates.mdb` beside it.
fn gates_path(path: &Path) -> PathBuf {
    let stem = path
        .file_stem()
        .map_or_else(|| "store".into(), |s| s.to_string_lossy().into_owned());
    path.with_file_name(format!("{stem}-gates.mdb"))
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
        Effect::Store(item) => store_item(conn, key, item),
        Effect::Remove => {
            let mut stmt = conn
                .prepare_cached("DELETE FROM items WHERE pk = ?1 AND sk = ?2")
                .map_err(unavailable)?;
            stmt.execute(params![key.pk, key.sk]).map_err(unavailable)?;
            Ok(())
        }
        Effect::Keep => Ok(()),
    }
}

/// Writes `item` at `key`, over whatever row holds the key.
fn store_item(conn: &Connection, key: &Key, item: &Item) -> Result<(), StoreError> {
    insert_row(conn, key, item, OVERWRITE).map(|_| ())
}

/// Inserts the row of `item` at `key` with `sql` ([`OVERWRITE`] or [`ONLY_WHERE_ABSENT`]);
/// whether a row was written.
fn insert_row(conn: &Connection, key: &Key, item: &Item, sql: &str) -> Result<bool, StoreError> {
    let mut stmt = conn.prepare_cached(sql).map_err(unavailable)?;
    let written = stmt
        .execute(params![
            key.pk,
            key.sk,
            expiry_column(item),
            store::item_to_json(item)
        ])
        .map_err(unavailable)?;
    Ok(written == 1)
}

/// A row's insert that replaces the row already at its key.
const OVERWRITE: &str = "INSERT INTO items (pk, sk, expires_at, body) VALUES (?1, ?2, ?3, ?4) \
     ON CONFLICT (pk, sk) DO UPDATE SET expires_at = excluded.expires_at, body = excluded.body";

/// A row's insert that writes nothing when a row (live or expired) is at its key.
const ONLY_WHERE_ABSENT: &str = "INSERT INTO items (pk, sk, expires_at, body) \
     VALUES (?1, ?2, ?3, ?4) ON CONFLICT (pk, sk) DO NOTHING";

/// Writes `ops` without reading their items first, when each is a put that overwrites whatever
/// is stored or writes only where no row is (the creates of a silent write), or a condition
/// check (read, as it must be): each insert then looks its key up in the index once, not twice,
/// and no item is copied to be planned. `false`, with nothing written, when a check failed, a
/// row was in the way (live or expired: the planned path then decides, and names every failed
/// condition), or an operation is of another kind.
fn write_unread(conn: &Connection, ops: &[TransactOp], now: i64) -> Result<bool, StoreError> {
    let Some(unread) = ops.iter().map(unread_op).collect::<Option<Vec<_>>>() else {
        return Ok(false);
    };
    for op in ops.iter().filter(|op| matches!(op, TransactOp::Check(_))) {
        let stored = read_stored(conn, op.key())?;
        if !matches!(engine::plan(op, stored.as_ref(), now), Ok(Ok(Effect::Keep))) {
            return Ok(false);
        }
    }
    writer::control(conn, "SAVEPOINT unread")?;
    for op in unread {
        let written = match op {
            Unread::Check => true,
            Unread::Overwrite(put) => store_item(conn, &put.key, &put.item).map(|()| true)?,
            Unread::Create(put) => insert_row(conn, &put.key, &put.item, ONLY_WHERE_ABSENT)?,
        };
        if !written {
            writer::control(conn, "ROLLBACK TO unread")?;
            writer::control(conn, "RELEASE unread")?;
            return Ok(false);
        }
    }
    writer::control(conn, "RELEASE unread")?;
    Ok(true)
}

/// How [`write_unread`] writes one operation.
enum Unread<'o> {
    /// A condition check: read, and written nothing.
    Check,
    /// A put without a condition.
    Overwrite(&'o Put),
    /// A put on condition that no item is there.
    Create(&'o Put),
}

/// How `op` is written without reading it first, if it can be.
fn unread_op(op: &TransactOp) -> Option<Unread<'_>> {
    match op {
        TransactOp::Check(_) => Some(Unread::Check),
        TransactOp::Put(put) => match &put.condition {
            None => Some(Unread::Overwrite(put)),
            Some(condition) if *condition == store::Condition::item_not_exists() => {
                Some(Unread::Create(put))
            }
            Some(_) => None,
        },
        TransactOp::Update(_) | TransactOp::Delete(_) => None,
    }
}

/// A page of `query` from its partition's rows in order (already past its cursor, and a
/// superset of its sort condition): the live ones matching it, up to its limit.
pub(crate) fn page_of(
    query: &Query,
    rows: impl Iterator<Item = Result<(String, Item), StoreError>>,
    now: i64,
) -> Result<Page, StoreError> {
    let limit = query.limit.map_or(usize::MAX, |l| l as usize);
    let mut items = Vec::new();
    let mut more = false;
    for row in rows {
        let (sk, item) = row?;
        if !query.sort.as_ref().is_none_or(|c| c.matches(&sk)) || !engine::is_live(&item, now) {
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
            private_folder(folder).map_err(|source| OpenError::Folder {
                path: folder.to_path_buf(),
                source,
            })?;
        }
        let sqlite = |source| OpenError::Sqlite {
            path: path.clone(),
            source,
        };
        private_file(&path).map_err(|source| OpenError::File {
            path: path.clone(),
            source,
        })?;
        let mut durable = open_connection(&path).map_err(sqlite)?;
        layout::prepare(&mut durable).map_err(sqlite)?;
        durable
            .pragma_update(None, "cache_size", -WRITER_CACHE_KIB)
            .map_err(sqlite)?;
        // The system's clock until `with_clock` gives another: the one default a store has.
        let clock: Arc<dyn outside::Clock> = Arc::new(outside::SystemClock);
        let gates_path = gates_path(&path);
        let gates =
            GateFile::open(&gates_path, clock.now()).map_err(|source| OpenError::Gates {
                path: gates_path.clone(),
                source,
            })?;
        let durable = Writer::start(durable, &path, "data", Arc::downgrade(&gates))
            .map_err(|source| OpenError::Thread { source })?;
        Ok(SqliteStore {
            inner: Arc::new(Inner {
                path,
                durable,
                gates,
                readers: Mutex::new(Vec::new()),
                kept: ReadCache::default(),
                derived: DerivedCache::default(),
                file_reads: AtomicU64::new(0),
                clock,
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
        self.inner.gates.path()
    }

    /// How many reads of this handle went to the data file (the others were answered from
    /// items kept since an earlier read, ADR 28).
    pub fn file_reads(&self) -> u64 {
        self.inner.file_reads.load(Ordering::Relaxed)
    }

    /// How often the data file's log was copied back into it since this handle opened it: by
    /// the checkpoint thread (passes), and by the writer between two groups (ADR 52).
    pub fn log_copies(&self) -> (u64, u64) {
        let copies = &self.inner.durable.copies;
        (
            copies.by_thread.load(Ordering::Relaxed),
            copies.by_writer.load(Ordering::Relaxed),
        )
    }

    /// Deletes rows whose expiry passed more than a second ago, in both files; how many.
    /// Never needed for correctness (expired items are invisible); it gives the space back,
    /// a step at a time (see `sweep`).
    pub async fn sweep_expired(&self) -> Result<usize, StoreError> {
        let now = self.inner.clock.now();
        let last = self.read(|conn| sweep::last_rowid(conn))?;
        let mut deleted = 0;
        for from in (0..=last).step_by(sweep::STEP) {
            let expired = self.read(|conn| sweep::expired_rowids(conn, from, now))?;
            if !expired.is_empty() {
                deleted += self
                    .inner
                    .durable
                    .write(Touched::Everything, move |conn| {
                        sweep::delete_expired(conn, &expired, now)
                    })
                    .await?;
            }
        }
        Ok(deleted + self.inner.gates.sweep(now)?)
    }

    /// Runs `f` on a reading connection of the data file, here: see the module docs.
    fn read<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        F: FnOnce(&mut Connection) -> Result<T, StoreError>,
    {
        let inner = &self.inner;
        inner.file_reads.fetch_add(1, Ordering::Relaxed);
        let pooled = lock(&inner.readers).pop();
        let mut conn = match pooled {
            Some(conn) => conn,
            None => open_connection(&inner.path).map_err(unavailable)?,
        };
        let result = f(&mut conn);
        lock(&inner.readers).push(conn);
        result
    }

    /// The live items at `keys`: gate state and the data partitions' commit labels in one
    /// read transaction of the gate file, then data items from what was kept or from the file.
    fn read_items(&self, keys: &[Key]) -> Result<Vec<Option<Item>>, StoreError> {
        self.read_and_label(keys, &[], Keep::Items)
            .map(|(items, _)| items)
    }

    /// The live items at `keys`, and the labels of the partitions of `to_label` (as
    /// [`label_each`]) looked up in the same gate-file transaction, before any data item is
    /// read; data items read from the file are kept as `keep` says.
    fn read_and_label(
        &self,
        keys: &[Key],
        to_label: &[Key],
        keep: Keep,
    ) -> Result<(Vec<Option<Item>>, Labelled), StoreError> {
        let now = self.inner.clock.now();
        let mut items: Vec<Option<Item>> = vec![None; keys.len()];
        let (gate, data): (Vec<usize>, Vec<usize>) =
            (0..keys.len()).partition(|&i| store::is_gate_state(&keys[i].pk));
        let gates = &self.inner.gates;
        let (labelled, labels) = gates.read(|txn| {
            for &i in &gate {
                items[i] = gates.stored(txn, &keys[i])?;
            }
            if data.is_empty() && to_label.is_empty() {
                return Ok((Vec::new(), Vec::new()));
            }
            let labels = gates.labels(txn)?;
            let labelled = data
                .iter()
                .map(|&i| Ok((i, labels.of(&keys[i].pk)?)))
                .collect::<Result<_, StoreError>>()?;
            Ok((labelled, label_each(&labels, to_label)?))
        })?;
        if !labelled.is_empty() {
            self.read_data(now, keys, labelled, &mut items, keep)?;
        }
        for item in &mut items {
            if item.as_ref().is_some_and(|i| !engine::is_live(i, now)) {
                *item = None;
            }
        }
        Ok((items, labels))
    }

    /// Reads the data items at positions `wanted` of `keys` into `items` (each with its
    /// partition's label): what was kept under the same label, the rest from the file, kept
    /// in turn when `keep` says so.
    fn read_data(
        &self,
        now: i64,
        keys: &[Key],
        wanted: Vec<(usize, Option<u64>)>,
        items: &mut [Option<Item>],
        keep: Keep,
    ) -> Result<(), StoreError> {
        let kept = &self.inner.kept;
        let missing = kept.fill(now, keys, wanted, items);
        match missing.as_slice() {
            [] => return Ok(()),
            [(one, _)] => items[*one] = self.read(|conn| read_stored(conn, &keys[*one]))?,
            _ => self.read(|conn| {
                let tx = conn.transaction().map_err(unavailable)?;
                for &(i, _) in &missing {
                    items[i] = read_stored(&tx, &keys[i])?;
                }
                tx.finish().map_err(unavailable)
            })?,
        }
        if keep == Keep::Nothing {
            return Ok(());
        }
        kept.keep(
            now,
            missing
                .iter()
                .map(|&(i, label)| (&keys[i], label, &items[i])),
        );
        Ok(())
    }

    /// Plans `ops` against what is stored and applies their effects, as one transaction on
    /// the file(s) they touch: gate state in place, data on the writer thread (with the gate
    /// file's write lock held throughout when both are touched).
    async fn apply(&self, ops: Vec<TransactOp>, now: i64) -> Result<(), StoreError> {
        let gates = Arc::clone(&self.inner.gates);
        match files_of(ops.iter().map(TransactOp::key)) {
            Files::Gates => gates.write(|txn| {
                let effects = engine::plan_all(&ops, |key| gates.stored(txn, key), now)?;
                for (op, effect) in ops.iter().zip(&effects) {
                    gates.apply(txn, op.key(), effect)?;
                }
                Ok(())
            }),
            Files::Data => {
                let touched = Touched::writes_of(&ops);
                self.inner
                    .durable
                    .write(touched, move |conn| {
                        if write_unread(conn, &ops, now)? {
                            return Ok(());
                        }
                        let effects = engine::plan_all(&ops, |key| read_stored(conn, key), now)?;
                        for (op, effect) in ops.iter().zip(&effects) {
                            write_effect(conn, op.key(), effect)?;
                        }
                        Ok(())
                    })
                    .await
            }
            Files::Both => {
                let touched = Touched::writes_of(&ops);
                self.inner
                    .durable
                    .write(touched, move |conn| {
                        gates.write(|txn| apply_both(conn, &gates, txn, &ops, now))
                    })
                    .await
            }
        }
    }

    async fn write_one(&self, op: TransactOp) -> Result<Option<Item>, StoreError> {
        let now = self.inner.clock.now();
        engine::validate_op(&op)?;
        if store::is_gate_state(&op.key().pk) {
            let gates = &self.inner.gates;
            return gates.write(|txn| {
                let stored = gates.stored(txn, op.key())?;
                write_planned(&op, stored, now, |effect| {
                    gates.apply(txn, op.key(), effect)
                })
            });
        }
        self.inner
            .durable
            .write(Touched::writes_of(std::slice::from_ref(&op)), move |conn| {
                let stored = read_stored(conn, op.key())?;
                write_planned(&op, stored, now, |effect| {
                    write_effect(conn, op.key(), effect)
                })
            })
            .await
    }
}

/// Plans one operation against its stored item and writes its effect with `write`: the item
/// it leaves (or, for a delete, the one it removed), or the failed condition.
fn write_planned(
    op: &TransactOp,
    stored: Option<Item>,
    now: i64,
    write: impl FnOnce(&Effect) -> Result<(), StoreError>,
) -> Result<Option<Item>, StoreError> {
    match engine::plan(op, stored.as_ref(), now)? {
        Err(Failed { old }) => Err(StoreError::ConditionFailed { old }),
        Ok(effect) => {
            write(&effect)?;
            Ok(match effect {
                Effect::Store(item) => Some(item),
                // The item as it was, moved out rather than copied before planning.
                Effect::Remove | Effect::Keep => stored.filter(|i| engine::is_live(i, now)),
            })
        }
    }
}

/// A transaction over both files: every condition checked against the file its item lives
/// in, then every effect written. The gate file commits first (when this returns), the data
/// with its group: a data commit that then fails leaves only a gate count too many.
fn apply_both(
    conn: &Connection,
    gates: &GateFile,
    txn: &mut heed::RwTxn<'_>,
    ops: &[TransactOp],
    now: i64,
) -> Result<(), StoreError> {
    let effects = engine::plan_all(
        ops,
        |key| {
            if store::is_gate_state(&key.pk) {
                gates.stored(txn, key)
            } else {
                read_stored(conn, key)
            }
        },
        now,
    )?;
    for (op, effect) in ops.iter().zip(&effects) {
        if store::is_gate_state(&op.key().pk) {
            gates.apply(txn, op.key(), effect)?;
        } else {
            write_effect(conn, op.key(), effect)?;
        }
    }
    Ok(())
}

#[async_trait::async_trait]
impl Store for SqliteStore {
    async fn get(&self, key: &Key) -> Result<Option<Item>, StoreError> {
        engine::validate_key(key)?;
        let item = self.read_items(std::slice::from_ref(key))?.pop();
        Ok(item.flatten())
    }

    async fn batch_get(&self, keys: &[Key]) -> Result<Vec<Option<Item>>, StoreError> {
        engine::validate_batch(keys)?;
        self.read_items(keys)
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
        if store::is_gate_state(&query.pk) {
            return self.inner.gates.query(&query, after.as_deref(), now);
        }
        self.read(|conn| query_data(conn, &query, after, now))
    }

    async fn transact_write(&self, ops: Vec<TransactOp>) -> Result<(), StoreError> {
        let now = self.inner.clock.now();
        engine::validate_transaction(&ops)?;
        self.apply(ops, now).await
    }

    /// The value derived before from the same items, while their partitions' labels have not
    /// moved (ADR 32); else derived from the items read now, and kept.
    async fn batch_get_derived(
        &self,
        keys: &[Key],
        more: &[Key],
        derivation: Derivation<'_>,
    ) -> Result<(Derived, Vec<Option<Item>>), StoreError> {
        engine::validate_split_batch(keys, more)?;
        let now = self.inner.clock.now();
        // The labels before the items are read: a commit begun after that makes what is kept
        // unusable.
        let (rest, labels) = self.read_and_label(more, keys, Keep::Items)?;
        let derived = &self.inner.derived;
        if let Some(value) = derived.find(now, derivation.name, keys, &labels) {
            return Ok((value, rest));
        }
        // The value stands for its items: keeping both would hold them twice.
        let (items, _) = self.read_and_label(keys, &[], Keep::Nothing)?;
        let value = (derivation.derive)(&items);
        derived.keep(now, derivation.name, keys, &labels, &items, &value);
        Ok((value, rest))
    }
}

/// Whether a read keeps the data items it read from the file for later reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Keep {
    Items,
    Nothing,
}

/// Commit labels of partitions, in the order of the keys asked (`None`: not to be kept).
type Labelled = Vec<Option<u64>>;

/// The commit label of each key's partition (`None` for gate state, which is never kept, and
/// while a commit writing the partition is under way).
fn label_each(labels: &gate_file::Labels<'_>, keys: &[Key]) -> Result<Labelled, StoreError> {
    keys.iter()
        .map(|key| match store::is_gate_state(&key.pk) {
            true => Ok(None),
            false => labels.of(&key.pk),
        })
        .collect()
}

/// A query on the data file: the partition's rows within the sort condition's bounds, past
/// the cursor, in order; then exactly filtered by [`page_of`].
fn query_data(
    conn: &Connection,
    query: &Query,
    after: Option<String>,
    now: i64,
) -> Result<Page, StoreError> {
    let (mut lo, mut hi) = sort_bounds(query.sort.as_ref());
    // The cursor narrows the range on the side the query moves towards.
    if let Some(after) = after.clone() {
        if query.descending {
            hi = Some(hi.map_or(after.clone(), |h| h.min(after)));
        } else {
            lo = Some(lo.map_or(after.clone(), |l| l.max(after)));
        }
    }
    let sql = if query.descending {
        "SELECT sk, body FROM items WHERE pk = ?1 \
         AND (?2 IS NULL OR sk >= ?2) AND (?3 IS NULL OR sk <= ?3) ORDER BY sk DESC"
    } else {
        "SELECT sk, body FROM items WHERE pk = ?1 \
         AND (?2 IS NULL OR sk >= ?2) AND (?3 IS NULL OR sk <= ?3) ORDER BY sk ASC"
    };
    let mut stmt = conn.prepare_cached(sql).map_err(unavailable)?;
    let rows = stmt
        .query_map(params![query.pk, lo, hi], |row| {
            Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?))
        })
        .map_err(unavailable)?
        .filter(|row| !matches!((row, &after), (Ok((sk, _)), Some(a)) if sk == a))
        .map(|row| {
            let (sk, body) = row.map_err(unavailable)?;
            Ok((sk, decode(&body)?))
        });
    page_of(query, rows, now)
}
