//! The global kill switch across store objects (ADR 51): its source is the global object, and
//! every workspace object keeps a copy under the same key, so that a workspace's write checks
//! the switch in its own transaction.
//!
//! - The global object numbers each write of the switch (its version) and then pushes the
//!   news from its alarm to every object that keeps a copy (each asked it once, when it first
//!   read the switch, and was noted then), [`BATCH`] objects per run, retrying those it could
//!   not reach with backoff ([`FanOut`]); `/admin/switch` reports how many have it.
//! - A workspace object keeps the copy with the time it last heard from the global object. A
//!   message that reads or checks the switch when that is more than [`BOUND_SECONDS`] ago first
//!   asks the global object; if that fails too, the switch counts as on until it hears again:
//!   a workspace cut off from the global object stops its agents after the bound.

use serde::{Deserialize, Serialize};
use store::{Item, Key};
use worker::{SqlStorage, SqlStorageValue};

/// How long a workspace object trusts its copy of the switch without hearing from the global
/// object: the longest a cut-off workspace may go on writing after a flip.
pub(crate) const BOUND_SECONDS: i64 = 60;
/// Workspace objects told per alarm run (each a subrequest of that run).
pub(crate) const BATCH: usize = 50;
/// The longest wait before the stragglers are retried.
const MOST_RETRY_SECONDS: i64 = 60;

/// Where the object's own records live (`meta`: name, value).
const VERSION: &str = "switch_version";
const HEARD_AT: &str = "switch_heard_at";
const FAN_OUT: &str = "switch_fan_out";

/// The global switch's key.
pub(crate) fn switch_key() -> Key {
    let (pk, sk) = store::placement::GLOBAL_SWITCH;
    Key::new(pk, sk)
}

/// The switch as the global object has it: its item (JSON) and version.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct News {
    pub(crate) version: i64,
    pub(crate) item: Option<String>,
}

/// The global object's progress in telling the workspace objects of one version.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct FanOut {
    pub(crate) version: i64,
    /// The last object told so far (names in order).
    pub(crate) cursor: Option<String>,
    /// Every object that keeps a copy has been tried once.
    pub(crate) listed_all: bool,
    /// Objects told this version.
    pub(crate) reached: u64,
    /// Objects that could not be told yet.
    pub(crate) stragglers: Vec<String>,
    /// Retries of the stragglers so far.
    pub(crate) attempts: u32,
}

impl FanOut {
    /// Whether every object that keeps a copy has the version.
    pub(crate) fn done(&self) -> bool {
        self.listed_all && self.stragglers.is_empty()
    }

    /// Seconds until the next run, if there is more to do.
    pub(crate) fn next_run_in(&self) -> Option<i64> {
        if !self.listed_all {
            Some(0)
        } else if self.stragglers.is_empty() {
            None
        } else {
            Some((1_i64 << self.attempts.min(6)).min(MOST_RETRY_SECONDS))
        }
    }

    /// Takes the outcome of one run: `told` objects, each with whether it has the version;
    /// `listed`: they were the next in order (not stragglers).
    pub(crate) fn record(&mut self, told: &[(String, bool)], listed: bool) {
        for (name, ok) in told {
            if *ok {
                self.reached += 1;
                if !listed {
                    self.stragglers.retain(|n| n != name);
                }
            } else if listed {
                self.stragglers.push(name.clone());
            }
        }
        if listed {
            if let Some((last, _)) = told.last() {
                self.cursor = Some(last.clone());
            }
            self.listed_all = told.len() < BATCH;
        } else {
            self.attempts += 1;
        }
    }
}

/// What `/admin/switch` answers.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Status {
    pub(crate) version: i64,
    /// Objects that keep a copy of the switch.
    pub(crate) workspaces: u64,
    pub(crate) reached: u64,
    pub(crate) stragglers: Vec<String>,
    pub(crate) done: bool,
    /// How long a workspace object not reached may still trust its copy.
    pub(crate) bound_seconds: i64,
}

impl Status {
    /// The report of `fan_out` (the default: never flipped) to `workspaces` objects that keep
    /// a copy.
    pub(crate) fn of(fan_out: FanOut, workspaces: u64) -> Status {
        Status {
            version: fan_out.version,
            workspaces,
            reached: fan_out.reached,
            done: fan_out.done() || fan_out.version == 0,
            stragglers: fan_out.stragglers,
            bound_seconds: BOUND_SECONDS,
        }
    }
}

fn failed(e: impl std::fmt::Display) -> store::StoreError {
    store::StoreError::Unavailable(format!("the object's own records: {e}"))
}

#[derive(Deserialize)]
struct MetaValue {
    value: String,
}

fn meta(sql: &SqlStorage, name: &str) -> Result<Option<String>, store::StoreError> {
    let rows: Vec<MetaValue> = sql
        .exec(
            "SELECT value FROM meta WHERE name = ?",
            vec![name.to_owned().into()],
        )
        .and_then(|c| c.to_array())
        .map_err(failed)?;
    Ok(rows.into_iter().next().map(|r| r.value))
}

fn set_meta(sql: &SqlStorage, name: &str, value: &str) -> Result<(), store::StoreError> {
    sql.exec(
        "INSERT INTO meta (name, value) VALUES (?, ?) \
         ON CONFLICT (name) DO UPDATE SET value = excluded.value",
        vec![name.to_owned().into(), value.to_owned().into()],
    )
    .and_then(|c| c.to_array::<serde_json::Value>())
    .map(|_| ())
    .map_err(failed)
}

fn number(sql: &SqlStorage, name: &str) -> Result<Option<i64>, store::StoreError> {
    Ok(meta(sql, name)?.and_then(|v| v.parse().ok()))
}

/// The switch's version in this object (0 before any).
fn version(sql: &SqlStorage) -> Result<i64, store::StoreError> {
    Ok(number(sql, VERSION)?.unwrap_or(0))
}

/// When a workspace object last heard from the global object (never: `None`).
pub(crate) fn heard_at(sql: &SqlStorage) -> Result<Option<i64>, store::StoreError> {
    number(sql, HEARD_AT)
}

/// A workspace object takes `news` (unless it has a later version) and notes that it heard
/// from the global object at `now`.
pub(crate) fn take(
    rows: &mut crate::sql_rows::SqlRows<'_>,
    news: &News,
    now: i64,
) -> Result<(), store::StoreError> {
    use store::rows::Rows as _;
    let sql = rows.sql;
    if news.version >= version(sql)? {
        match &news.item {
            Some(text) => rows.set(&switch_key(), &store::item_from_json(text).map_err(failed)?)?,
            None => rows.remove(&switch_key())?,
        }
        set_meta(sql, VERSION, &news.version.to_string())?;
    }
    set_meta(sql, HEARD_AT, &now.to_string())
}

/// The global object's news of the switch.
pub(crate) fn news(rows: &crate::sql_rows::SqlRows<'_>) -> Result<News, store::StoreError> {
    use store::rows::Rows as _;
    let item = rows.get(&switch_key())?;
    Ok(News {
        version: version(rows.sql)?,
        item: item.as_ref().map(store::item_to_json),
    })
}

/// The global object numbers a write of the switch and starts telling the workspace objects
/// (in the same transaction as the write).
pub(crate) fn written(sql: &SqlStorage) -> Result<(), store::StoreError> {
    let version = version(sql)? + 1;
    set_meta(sql, VERSION, &version.to_string())?;
    save(
        sql,
        &FanOut {
            version,
            ..FanOut::default()
        },
    )
}

/// The fan-out in progress or last done, if the switch was ever written here.
pub(crate) fn fan_out(sql: &SqlStorage) -> Result<Option<FanOut>, store::StoreError> {
    meta(sql, FAN_OUT)?
        .map(|text| serde_json::from_str(&text).map_err(failed))
        .transpose()
}

/// Keeps the fan-out's progress.
pub(crate) fn save(sql: &SqlStorage, fan_out: &FanOut) -> Result<(), store::StoreError> {
    let text = serde_json::to_string(fan_out).map_err(failed)?;
    set_meta(sql, FAN_OUT, &text)
}

/// The global object notes that the object `name` keeps a copy (it asked for the news).
pub(crate) fn note_copy(sql: &SqlStorage, name: &str) -> Result<(), store::StoreError> {
    sql.exec(
        "INSERT OR IGNORE INTO copies (name) VALUES (?)",
        vec![name.to_owned().into()],
    )
    .and_then(|c| c.to_array::<serde_json::Value>())
    .map(|_| ())
    .map_err(failed)
}

#[derive(Deserialize)]
struct Name {
    name: String,
}

/// The next [`BATCH`] objects that keep a copy, after `cursor`.
pub(crate) fn copies_after(
    sql: &SqlStorage,
    cursor: Option<&str>,
) -> Result<Vec<String>, store::StoreError> {
    let rows: Vec<Name> = sql
        .exec(
            "SELECT name FROM copies WHERE name > ? ORDER BY name LIMIT ?",
            vec![
                cursor.unwrap_or_default().to_owned().into(),
                SqlStorageValue::Integer(BATCH as i64),
            ],
        )
        .and_then(|c| c.to_array())
        .map_err(failed)?;
    Ok(rows.into_iter().map(|r| r.name).collect())
}

#[derive(Deserialize)]
struct Count {
    n: i64,
}

/// How many objects keep a copy.
pub(crate) fn copies(sql: &SqlStorage) -> Result<u64, store::StoreError> {
    let rows: Vec<Count> = sql
        .exec("SELECT COUNT(*) AS n FROM copies", None)
        .and_then(|c| c.to_array())
        .map_err(failed)?;
    Ok(rows.first().map_or(0, |r| r.n.max(0) as u64))
}

/// The switch's item while a workspace object cannot confirm it: on, with the reason.
pub(crate) fn unconfirmed() -> Item {
    let mut item = Item::new();
    item.insert("on".into(), store::Value::Bool(true));
    item.insert(
        "reason".into(),
        store::Value::s(
            "this workspace's store could not confirm the global kill switch for longer than \
             its bound; agents are stopped until it can",
        ),
    );
    item
}
