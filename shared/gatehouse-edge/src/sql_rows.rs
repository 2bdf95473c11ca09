//! The store's rows in a Durable Object's SQLite database.
//!
//! One table, `items (pk, sk, item, expires_at)`, keyed by `(pk, sk)`; the item is its JSON
//! form (`store::item_to_json`), `expires_at` its expiry in seconds, indexed so that the alarm
//! deletes what expired ([`delete_expired`]). Reads never depend on that: the store's rules
//! treat an expired item as absent wherever it is read.

use serde::Deserialize;
use store::{Item, Key, StoreError};
use worker::{SqlStorage, SqlStorageValue};

/// Whether the object's tables exist (made by its first write).
pub(crate) fn exist(sql: &SqlStorage) -> worker::Result<bool> {
    let found: Vec<serde_json::Value> = sql
        .exec(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'items'",
            None,
        )?
        .to_array()?;
    Ok(!found.is_empty())
}

/// Creates the tables and the index (idempotent; run before the object's first write).
pub(crate) fn create(sql: &SqlStorage) -> worker::Result<()> {
    sql.exec(
        "CREATE TABLE IF NOT EXISTS items (pk TEXT NOT NULL, sk TEXT NOT NULL, item TEXT NOT NULL, \
         expires_at INTEGER, PRIMARY KEY (pk, sk)) WITHOUT ROWID",
        None,
    )?;
    sql.exec(
        "CREATE INDEX IF NOT EXISTS items_by_expiry ON items (expires_at) WHERE expires_at IS NOT NULL",
        None,
    )?;
    // The object's own records (crate::mirror), never a store item.
    sql.exec(
        "CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID",
        None,
    )?;
    // In the global object: the objects that keep a copy of the switch.
    sql.exec(
        "CREATE TABLE IF NOT EXISTS copies (name TEXT PRIMARY KEY) WITHOUT ROWID",
        None,
    )?;
    Ok(())
}

/// Deletes the items whose expiry is at or before `now`; returns how many.
pub(crate) fn delete_expired(sql: &SqlStorage, now: i64) -> worker::Result<usize> {
    let cursor = sql.exec(
        "DELETE FROM items WHERE expires_at IS NOT NULL AND expires_at <= ?",
        vec![SqlStorageValue::Integer(now)],
    )?;
    // The cursor runs the statement as it is read.
    let _ = cursor.to_array::<serde_json::Value>()?;
    Ok(cursor.rows_written())
}

/// The most items one export page holds.
pub(crate) const MOST_EXPORTED: u32 = 500;

/// One page of the object's items in key order, after `ask.after` (expired items too: a
/// backup keeps what is stored, `expires_at` with it).
pub(crate) fn export(
    sql: &SqlStorage,
    ask: &store::remote::ExportAsk,
) -> Result<store::remote::ExportPage, StoreError> {
    let limit = ask.limit.clamp(1, MOST_EXPORTED);
    let (pk, sk) = ask.after.clone().unwrap_or_default();
    let rows: Vec<Row> = sql
        .exec(
            "SELECT pk, sk, item FROM items WHERE pk > ? OR (pk = ? AND sk > ?) \
             ORDER BY pk, sk LIMIT ?",
            vec![
                pk.clone().into(),
                pk.into(),
                sk.into(),
                SqlStorageValue::Integer(i64::from(limit)),
            ],
        )
        .and_then(|c| c.to_array())
        .map_err(failed)?;
    let next = (rows.len() == limit as usize)
        .then(|| rows.last().map(|r| (r.pk.clone(), r.sk.clone())))
        .flatten();
    let rows = rows
        .into_iter()
        .map(|r| {
            let item = serde_json::from_str(&r.item).map_err(failed)?;
            Ok(store::remote::ExportRow {
                pk: r.pk,
                sk: r.sk,
                item,
            })
        })
        .collect::<Result<Vec<_>, StoreError>>()?;
    Ok(store::remote::ExportPage { rows, next })
}

/// The rows of one store operation.
pub(crate) struct SqlRows<'a> {
    pub(crate) sql: &'a SqlStorage,
    /// What the global switch reads as instead of the stored item: in a workspace object
    /// that could not confirm its copy within its bound, the switch on (`crate::mirror`).
    pub(crate) switch_override: Option<Item>,
}

#[derive(Deserialize)]
struct Row {
    pk: String,
    sk: String,
    item: String,
}

fn failed(e: impl std::fmt::Display) -> StoreError {
    StoreError::Unavailable(format!("the Durable Object's SQLite failed: {e}"))
}

fn decode(text: &str) -> Result<Item, StoreError> {
    store::item_from_json(text).map_err(failed)
}

impl store::rows::Rows for SqlRows<'_> {
    fn get(&self, key: &Key) -> Result<Option<Item>, StoreError> {
        if let Some(item) = &self.switch_override
            && (key.pk.as_str(), key.sk.as_str()) == store::placement::GLOBAL_SWITCH
        {
            return Ok(Some(item.clone()));
        }
        let rows: Vec<Row> = self
            .sql
            .exec(
                "SELECT pk, sk, item FROM items WHERE pk = ? AND sk = ?",
                vec![key.pk.clone().into(), key.sk.clone().into()],
            )
            .and_then(|c| c.to_array())
            .map_err(failed)?;
        rows.first().map(|r| decode(&r.item)).transpose()
    }

    fn set(&mut self, key: &Key, item: &Item) -> Result<(), StoreError> {
        let expiry =
            store::rows::expiry(item).map_or(SqlStorageValue::Null, SqlStorageValue::Integer);
        let text = store::item_to_json(item);
        self.sql
            .exec(
                "INSERT INTO items (pk, sk, item, expires_at) VALUES (?, ?, ?, ?) \
                 ON CONFLICT (pk, sk) DO UPDATE SET item = excluded.item, expires_at = excluded.expires_at",
                vec![key.pk.clone().into(), key.sk.clone().into(), text.into(), expiry],
            )
            .and_then(|c| c.to_array::<serde_json::Value>())
            .map(|_| ())
            .map_err(failed)
    }

    fn remove(&mut self, key: &Key) -> Result<(), StoreError> {
        self.sql
            .exec(
                "DELETE FROM items WHERE pk = ? AND sk = ?",
                vec![key.pk.clone().into(), key.sk.clone().into()],
            )
            .and_then(|c| c.to_array::<serde_json::Value>())
            .map(|_| ())
            .map_err(failed)
    }

    fn scan<'a>(
        &'a self,
        pk: &str,
        after: Option<&str>,
        descending: bool,
    ) -> Result<store::rows::Scan<'a>, StoreError> {
        let (compare, order) = if descending {
            ("<", "DESC")
        } else {
            (">", "ASC")
        };
        let mut bindings: Vec<SqlStorageValue> = vec![pk.to_owned().into()];
        let bound = match after {
            Some(sk) => {
                bindings.push(sk.to_owned().into());
                format!("AND sk {compare} ?")
            }
            None => String::new(),
        };
        let query =
            format!("SELECT pk, sk, item FROM items WHERE pk = ? {bound} ORDER BY sk {order}");
        // The cursor reads rows as they are asked for, so a page stops reading at its limit.
        let cursor = self.sql.exec(&query, bindings).map_err(failed)?;
        Ok(Box::new(cursor.next::<Row>().map(|row| {
            let row = row.map_err(failed)?;
            Ok((Key::new(row.pk, row.sk), decode(&row.item)?))
        })))
    }
}
