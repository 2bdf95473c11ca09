//! Gate state (rate buckets, concurrency slots, the loop brake) in a memory-mapped LMDB file
//! beside the data file, `<name>-gates.mdb` (ADR 27, replacing the SQLite gate file of ADR 19).
//!
//! Every admission and every slot release writes gate state, so its cost is paid on every call.
//! LMDB answers a write transaction in place, in microseconds: its write lock is a robust
//! mutex in the lock file that every process on the folder shares (so limits hold across
//! processes), it needs no thread hand-off, and with `NO_SYNC` a commit syncs nothing, since
//! losing gate state in a power cut is harmless. A process killed half-way through a
//! transaction leaves the file as it was before it (copy-on-write pages). A file left unreadable
//! (a power cut with unsynced pages) is replaced by an empty one when the store is opened.
//!
//! Items are kept as their JSON text under the key `<pk> NUL <sk>`, so a partition is one
//! ordered key range, in the byte order SQLite and DynamoDB sort keys in.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex, PoisonError, Weak};

use heed::types::Bytes;
use heed::{Database, Env, EnvFlags, EnvOpenOptions, MdbError, RoTxn, RwTxn, WithoutTls};
use store::engine::{self, Effect};
use store::{Invalid, Item, Key, Page, Query, StoreError, TransactOp};

/// The largest the file may grow (address space reserved, not memory or disk used).
const MAP_SIZE: usize = 1 << 30;

/// One open gate file, shared by every store handle of this process on it (LMDB allows one
/// environment per file and process).
pub(crate) struct GateFile {
    env: Env<WithoutTls>,
    items: Database<Bytes, Bytes>,
    /// The data file's commits (ADR 28, ADR 31): [`BEGUN`], [`DONE`], [`LABELLED`] and the
    /// labels of the groups of partitions (see [`changed_key`]).
    commits: Database<Bytes, Bytes>,
    /// LMDB's longest key, asked once: every gate operation checks its key against it.
    max_key: usize,
    path: PathBuf,
}

/// Data commits that took SQLite's write lock (counted before they write).
const BEGUN: &[u8] = b"begun";
/// The highest count of a data commit that ended (committed or rolled back).
const DONE: &[u8] = b"done";
/// The number of the last data commit counted with the partitions it writes. A gatehouse
/// older than ADR 31 counts its commits in [`BEGUN`] without labelling them; a read that finds
/// this behind `begun` keeps and uses nothing, and the next labelled commit labels every
/// partition.
const LABELLED: &[u8] = b"labelled";
/// The key under which the number of the last data commit that began writing a group of
/// partitions is kept (ADR 31): `changed` and the group's number (two bytes, big-endian), or
/// [`EVERY_GROUP`] for commits that may write any partition. One small value per key, so a
/// commit copies only the few pages of the groups it writes.
fn changed_key(group: u16) -> [u8; 9] {
    let mut key = *b"changed\0\0";
    key[7..].copy_from_slice(&group.to_be_bytes());
    key
}

/// The group number that stands for every partition.
const EVERY_GROUP: u16 = u16::MAX;

/// Partitions fall into this many groups, by a hash of the partition key (ADR 31).
const GROUPS: u64 = 1024;

/// The group of the partition `pk`: FNV-1a, the same in every process and build.
pub(crate) fn group_of(pk: &str) -> u16 {
    let hash = pk.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    });
    u16::try_from(hash % GROUPS).unwrap_or(EVERY_GROUP)
}

/// Which partitions a data commit may write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Touched {
    /// The groups (see [`group_of`]) of the partitions its operations write.
    Groups(BTreeSet<u16>),
    /// Any partition (rows found by something other than their key, like the sweep's).
    Everything,
}

impl Touched {
    /// The groups of the data partitions `ops` may write: a condition check writes nothing
    /// (every MCP write checks both kill switches, which must stay kept), nor does gate state
    /// go to the data file.
    pub(crate) fn writes_of(ops: &[TransactOp]) -> Touched {
        let written = ops
            .iter()
            .filter(|op| !matches!(op, TransactOp::Check(_)))
            .map(TransactOp::key)
            .filter(|key| !store::is_gate_state(&key.pk));
        Touched::Groups(written.map(|key| group_of(&key.pk)).collect())
    }

    /// What this commit and `other` touch together.
    pub(crate) fn add(&mut self, other: &Touched) {
        match (&mut *self, other) {
            (Touched::Groups(mine), Touched::Groups(theirs)) => mine.extend(theirs),
            _ => *self = Touched::Everything,
        }
    }
}

impl std::fmt::Debug for GateFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GateFile")
            .field("path", &self.path)
            .finish()
    }
}

/// The gate files open in this process, by path.
type OpenFiles = Vec<(PathBuf, Weak<GateFile>)>;
static OPEN: LazyLock<Mutex<OpenFiles>> = LazyLock::new(Mutex::default);

fn failed(e: heed::Error) -> StoreError {
    StoreError::Unavailable(format!("gate file: {e}"))
}

/// The partition `pk` as a key prefix: `<pk> NUL`.
fn partition_prefix(pk: &str) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(pk.len() + 1);
    bytes.extend_from_slice(pk.as_bytes());
    bytes.push(0);
    bytes
}

/// Room for the longest key LMDB takes in its default build (511 bytes); keys are held to the
/// smaller of this and the `max_key` the file reports.
const KEY_ROOM: usize = 512;

/// The item key `<pk> NUL <sk>`, written into `room` (every gate operation makes one, so on
/// the stack); `None` when it does not fit.
fn key_bytes<'r>(key: &Key, room: &'r mut [u8; KEY_ROOM]) -> Option<&'r [u8]> {
    let (pk, sk) = (key.pk.as_bytes(), key.sk.as_bytes());
    let len = pk.len() + 1 + sk.len();
    let bytes = room.get_mut(..len)?;
    bytes[..pk.len()].copy_from_slice(pk);
    bytes[pk.len()] = 0;
    bytes[pk.len() + 1..].copy_from_slice(sk);
    Some(bytes)
}

fn decode(body: &[u8]) -> Result<Item, StoreError> {
    std::str::from_utf8(body)
        .ok()
        .and_then(|text| store::item_from_json(text).ok())
        .ok_or_else(|| StoreError::Unavailable("corrupt item in the gate file".into()))
}

impl GateFile {
    /// The gate file at `path`, opened once per process; opening it sweeps what expired by
    /// `now` (the store's clock).
    pub(crate) fn open(path: &Path, now: i64) -> Result<Arc<GateFile>, heed::Error> {
        let path = canonical(path)?;
        let mut open = OPEN.lock().unwrap_or_else(PoisonError::into_inner);
        open.retain(|(_, file)| file.strong_count() > 0);
        if let Some(file) = open
            .iter()
            .find(|(p, _)| *p == path)
            .and_then(|(_, f)| f.upgrade())
        {
            return Ok(file);
        }
        let file = match Self::open_or_replace(&path) {
            // The last handle of this process on it is still closing it.
            Err(heed::Error::EnvAlreadyOpened) => {
                if let Some(closing) = heed::env_closing_event(&path) {
                    closing.wait();
                }
                Self::open_or_replace(&path)
            }
            other => other,
        };
        let file = Arc::new(file?);
        // Nothing needs these for correctness, but without them the file would only grow: the
        // reader slots of processes killed during a read pin old pages, and expired items stay.
        if let Err(e) = file.env.clear_stale_readers() {
            tracing::warn!(error = %e, "could not clear the gate file's stale readers");
        }
        if let Err(e) = file.sweep(now) {
            tracing::warn!(error = %e, "could not sweep the gate file");
        }
        open.push((path, Arc::downgrade(&file)));
        Ok(file)
    }

    /// Opens the file; one that LMDB cannot read is gate state lost, so it starts empty.
    fn open_or_replace(path: &Path) -> Result<GateFile, heed::Error> {
        match Self::open_env(path) {
            Err(heed::Error::Mdb(
                MdbError::Invalid | MdbError::Corrupted | MdbError::VersionMismatch,
            )) => {
                tracing::warn!(
                    file = %path.display(),
                    "the gate file could not be read; starting it empty (rate counts and slots only)"
                );
                for file in [path.to_path_buf(), lock_path(path)] {
                    let _ = std::fs::remove_file(file);
                }
                Self::open_env(path)
            }
            other => other,
        }
    }

    #[allow(unsafe_code)]
    fn open_env(path: &Path) -> Result<GateFile, heed::Error> {
        let mut options = EnvOpenOptions::new().read_txn_without_tls();
        options.map_size(MAP_SIZE).max_dbs(2);
        // SAFETY: NO_SYNC only gives up durability in a power cut, which gate state does not
        // need (see the module docs); WRITE_MAP writes pages in the map instead of with a
        // system call per page, and this code writes the map only through LMDB's calls; the
        // file is used through LMDB's own locks only.
        unsafe { options.flags(EnvFlags::NO_SUB_DIR | EnvFlags::NO_SYNC | EnvFlags::WRITE_MAP) };
        // SAFETY: the file is only opened through this function, once per process (`OPEN`),
        // and never modified except through LMDB.
        let env = unsafe { options.open(path)? };
        let mut txn = env.write_txn()?;
        let items = env.create_database(&mut txn, Some("items"))?;
        let commits = env.create_database(&mut txn, Some("commits"))?;
        txn.commit()?;
        let max_key = env.max_key_size();
        Ok(GateFile {
            env,
            items,
            commits,
            max_key,
            path: path.to_path_buf(),
        })
    }

    /// The file.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    fn check_key<'r>(
        &self,
        key: &Key,
        room: &'r mut [u8; KEY_ROOM],
    ) -> Result<&'r [u8], StoreError> {
        let limit = self.max_key.min(KEY_ROOM);
        match key_bytes(key, room) {
            Some(bytes) if bytes.len() <= limit => Ok(bytes),
            _ => Err(StoreError::Invalid(Invalid::KeyTooLong {
                size: key.pk.len() + 1 + key.sk.len(),
                limit,
            })),
        }
    }

    /// The stored item at `key` in `txn`, expired or not (the caller decides).
    pub(crate) fn stored(&self, txn: &RoTxn<'_>, key: &Key) -> Result<Option<Item>, StoreError> {
        let mut room = [0; KEY_ROOM];
        let bytes = self.check_key(key, &mut room)?;
        self.items
            .get(txn, bytes)
            .map_err(failed)?
            .map(decode)
            .transpose()
    }

    /// Applies a planned effect at `key` in `txn`.
    pub(crate) fn apply(
        &self,
        txn: &mut RwTxn<'_>,
        key: &Key,
        effect: &Effect,
    ) -> Result<(), StoreError> {
        let mut room = [0; KEY_ROOM];
        let bytes = self.check_key(key, &mut room)?;
        match effect {
            Effect::Store(item) => {
                let body = store::item_to_json(item);
                self.items.put(txn, bytes, body.as_bytes()).map_err(failed)
            }
            Effect::Remove => self.items.delete(txn, bytes).map(|_| ()).map_err(failed),
            Effect::Keep => Ok(()),
        }
    }

    fn count(&self, txn: &RoTxn<'_>, name: &[u8]) -> Result<u64, StoreError> {
        let bytes = self.commits.get(txn, name).map_err(failed)?;
        Ok(bytes
            .and_then(|b| <[u8; 8]>::try_from(b).ok())
            .map_or(0, u64::from_le_bytes))
    }

    fn set_count(&self, txn: &mut RwTxn<'_>, name: &[u8], value: u64) -> Result<(), StoreError> {
        let bytes = value.to_le_bytes();
        self.commits.put(txn, name, &bytes).map_err(failed)
    }

    /// The commit labels of data partitions in `txn`'s snapshot (ADR 28, ADR 31).
    pub(crate) fn labels<'t>(&'t self, txn: &'t RoTxn<'_>) -> Result<Labels<'t>, StoreError> {
        let begun = self.count(txn, BEGUN)?;
        let done = self.count(txn, DONE)?;
        Ok(Labels {
            file: self,
            txn,
            under_way: (begun != done).then_some(begun),
            unlabelled: self.count(txn, LABELLED)? != begun,
            everything: self.count(txn, &changed_key(EVERY_GROUP))?,
        })
    }

    /// Counts a data commit about to write the partitions `touched`, called with SQLite's
    /// write lock held; its number.
    pub(crate) fn begin_commit(&self, touched: &Touched) -> Result<u64, StoreError> {
        self.write(|txn| {
            let begun = self.count(txn, BEGUN)?;
            let number = begun + 1;
            self.set_count(txn, BEGUN, number)?;
            // A commit of an older gatehouse since the last labelled one: its partitions are
            // unknown, so this commit stands for all of them.
            let touched = match self.count(txn, LABELLED)? == begun {
                true => touched,
                false => &Touched::Everything,
            };
            self.set_count(txn, LABELLED, number)?;
            match touched {
                Touched::Everything => self.set_count(txn, &changed_key(EVERY_GROUP), number)?,
                Touched::Groups(groups) => {
                    for &group in groups {
                        self.set_count(txn, &changed_key(group), number)?;
                    }
                }
            }
            Ok(number)
        })
    }

    /// Counts a whole data commit as a gatehouse older than ADR 31 does: begun and ended,
    /// with no partitions named.
    #[cfg(test)]
    pub(crate) fn count_unlabelled_commit(&self) -> Result<(), StoreError> {
        self.write(|txn| {
            let number = self.count(txn, BEGUN)? + 1;
            self.set_count(txn, BEGUN, number)?;
            self.set_count(txn, DONE, number)
        })
    }

    /// Records that the data commit `number` ended (committed or rolled back).
    pub(crate) fn end_commit(&self, number: u64) -> Result<(), StoreError> {
        self.write(|txn| {
            // A later commit may have begun (and even ended) since this one let go of the lock.
            let done = self.count(txn, DONE)?.max(number);
            self.set_count(txn, DONE, done)
        })
    }

    /// Runs `f` on one read transaction (one snapshot).
    pub(crate) fn read<T>(
        &self,
        f: impl FnOnce(&RoTxn<'_>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let txn = self.env.read_txn().map_err(failed)?;
        f(&txn)
    }

    /// Runs `f` as one write transaction, committed when it returns `Ok` (dropped, and so
    /// rolled back, otherwise).
    pub(crate) fn write<T>(
        &self,
        f: impl FnOnce(&mut RwTxn<'_>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let mut txn = self.env.write_txn().map_err(failed)?;
        let value = f(&mut txn)?;
        txn.commit().map_err(failed)?;
        Ok(value)
    }

    /// The rows of `query`'s partition in its order, as `(sort key, item)`, after its cursor.
    pub(crate) fn query(
        &self,
        query: &Query,
        after: Option<&str>,
        now: i64,
    ) -> Result<Page, StoreError> {
        let prefix = partition_prefix(&query.pk);
        self.read(|txn| {
            let rows = if query.descending {
                Box::new(self.items.rev_prefix_iter(txn, &prefix).map_err(failed)?)
                    as Box<dyn Iterator<Item = heed::Result<(&[u8], &[u8])>>>
            } else {
                Box::new(self.items.prefix_iter(txn, &prefix).map_err(failed)?)
            };
            let rows = rows.map(|row| {
                let (key, body) = row.map_err(failed)?;
                let sk = std::str::from_utf8(&key[prefix.len()..])
                    .map_err(|_| StoreError::Unavailable("corrupt key in the gate file".into()))?;
                Ok((sk.to_owned(), decode(body)?))
            });
            let past =
                |sk: &str| after.is_none_or(|a| if query.descending { sk < a } else { sk > a });
            crate::page_of(
                query,
                rows.filter(|row| row.as_ref().map_or(true, |(sk, _)| past(sk))),
                now,
            )
        })
    }

    /// Deletes items whose expiry passed more than a second ago; how many.
    pub(crate) fn sweep(&self, now: i64) -> Result<usize, StoreError> {
        let expired = |body: &[u8]| decode(body).is_ok_and(|item| !engine::is_live(&item, now - 1));
        // Found under a read transaction, which no process waits for...
        let found: Vec<Vec<u8>> = self.read(|txn| {
            let mut found = Vec::new();
            for row in self.items.iter(txn).map_err(failed)? {
                let (key, body) = row.map_err(failed)?;
                if expired(body) {
                    found.push(key.to_vec());
                }
            }
            Ok(found)
        })?;
        // ...and deleted a step at a time: every admission of every process on the folder
        // waits for the write lock, so no step holds it for long. A key taken again since it
        // was found (a slot, a new window's bucket) is live and stays.
        let mut deleted = 0;
        for step in found.chunks(SWEEP_STEP) {
            deleted += self.write(|txn| {
                let mut in_step = 0;
                for key in step {
                    let still_expired = self
                        .items
                        .get(txn, key)
                        .map_err(failed)?
                        .is_some_and(expired);
                    if still_expired && self.items.delete(txn, key).map_err(failed)? {
                        in_step += 1;
                    }
                }
                Ok(in_step)
            })?;
        }
        Ok(deleted)
    }
}

/// What a read needs to label data items (ADR 31): the commit under way, if any, the last
/// commit that may have written every partition, and the file to look up each group in.
pub(crate) struct Labels<'t> {
    file: &'t GateFile,
    txn: &'t RoTxn<'t>,
    under_way: Option<u64>,
    /// A commit not labelled with its partitions (an older gatehouse's) came last.
    unlabelled: bool,
    everything: u64,
}

impl Labels<'_> {
    /// The label of the partition `pk`: the number of the last commit that began writing it
    /// (or every partition); `None` while that commit is still under way, when nothing read
    /// from the partition may be kept or answered from what was.
    pub(crate) fn of(&self, pk: &str) -> Result<Option<u64>, StoreError> {
        if self.unlabelled {
            return Ok(None);
        }
        let group = self.file.count(self.txn, &changed_key(group_of(pk)))?;
        let label = self.everything.max(group);
        Ok((self.under_way != Some(label)).then_some(label))
    }
}

/// Expired gate items deleted by one write transaction of the sweep.
const SWEEP_STEP: usize = 256;

/// `path` with its folder's canonical name (the file itself may not exist yet), so that one
/// file is one entry in [`OPEN`] however it was named.
fn canonical(path: &Path) -> Result<PathBuf, heed::Error> {
    let folder = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let name = path.file_name().unwrap_or(path.as_os_str());
    Ok(std::fs::canonicalize(folder)?.join(name))
}

/// The LMDB lock file of the gate file at `path`.
fn lock_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push("-lock");
    PathBuf::from(name)
}
