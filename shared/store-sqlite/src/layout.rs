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

/// Moves an earlier-layout `items` table aside, so that [`TABLES`] creates the current one,
/// into which [`REFILL`] then copies every row.
const SET_ASIDE: &str = "ALTER TABLE main.items RENAME TO items_earlier;";

/// Copies every row of the table set aside into the current one and drops it. Expired rows
/// are copied too: expiry is decided when an item is read.
const REFILL: &str = "
INSERT INTO items (pk, sk, expires_at, body)
    SELECT pk, sk, expires_at, body FROM items_earlier ORDER BY pk, sk;
DROP TABLE items_earlier;
";

/// Makes sure the file at `conn` has the current layout: creates it in a new file, converts a
/// file of the earlier layout, all under SQLite's write lock, so that two processes opening one
/// file at once do it once.
pub(crate) fn prepare(conn: &mut Connection) -> Result<(), rusqlite::Error> {
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    let earlier = is_earlier_layout(&tx)?;
    if earlier {
        tx.execute_batch(SET_ASIDE)?;
    }
    tx.execute_batch(TABLES)?;
    if earlier {
        tx.execute_batch(REFILL)?;
        tracing::info!("converted the data file to a rowid table with a key index (ADR 29)");
    }
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
