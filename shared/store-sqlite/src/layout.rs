//! The data file's tables (ADR 29): items in an ordinary rowid table, found through a unique
//! index on their key, and the one-time conversion of a file in the earlier layout.
//!
//! The earlier layout kept each item inside its key's b-tree (`WITHOUT ROWID`). SQLite keeps
//! only about a quarter of a page of such a cell on the page, and reads a cell's overflow pages
//! whenever a search compares a key with it, so every lookup paid for the large items it
//! passed. Index cells now hold only the key and a row id.

use rusqlite::{Connection, OptionalExtension};

/// Creates the tables of a new file (does nothing to one that has them).
const TABLES: &str = "
CREATE TABLE IF NOT EXISTS main.items (
    pk TEXT NOT NULL,
    sk TEXT NOT NULL,
    -- Whole seconds of the item's expiry, only to let a sweep delete expired rows; whether an
    -- item is live is decided from the exact value in `body`.
    expires_at INTEGER,
    body TEXT NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS main.items_key ON items (pk, sk);
";

/// Copies every row of an earlier-layout `items` table into the new layout and puts it in its
/// place. Expired rows are copied too: expiry is decided when an item is read.
const CONVERT: &str = "
CREATE TABLE main.items_converted (
    pk TEXT NOT NULL,
    sk TEXT NOT NULL,
    expires_at INTEGER,
    body TEXT NOT NULL
);
INSERT INTO items_converted (pk, sk, expires_at, body)
    SELECT pk, sk, expires_at, body FROM items ORDER BY pk, sk;
DROP TABLE items;
ALTER TABLE items_converted RENAME TO items;
";

/// Makes sure the file at `conn` has the current layout: creates it in a new file, converts a
/// file of the earlier layout, all under SQLite's write lock, so that two processes opening one
/// file at once do it once.
pub(crate) fn prepare(conn: &mut Connection) -> Result<(), rusqlite::Error> {
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    if is_earlier_layout(&tx)? {
        tx.execute_batch(CONVERT)?;
        tracing::info!("converted the data file to a rowid table with a key index (ADR 29)");
    }
    tx.execute_batch(TABLES)?;
    tx.commit()
}

/// Whether `items` is the earlier `WITHOUT ROWID` table.
fn is_earlier_layout(conn: &Connection) -> Result<bool, rusqlite::Error> {
    let sql: Option<String> = conn
        .query_row(
            "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'items'",
            [],
            |row| row.get(0),
        )
        .optional()?;
    Ok(sql.is_some_and(|sql| sql.to_ascii_uppercase().contains("WITHOUT ROWID")))
}
