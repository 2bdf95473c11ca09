//! The embedded store's data file read and rewritten directly, beside the store (ADR 29).

use std::path::Path;

use rusqlite::Connection;

/// Every row of the data file's `items` table, `(pk, sk, expires_at, body)`, in key order.
pub(crate) type Row = (String, String, Option<i64>, String);

pub(crate) fn rows(file: &Path) -> Vec<Row> {
    let conn = Connection::open(file).unwrap();
    let mut stmt = conn
        .prepare("SELECT pk, sk, expires_at, body FROM items ORDER BY pk, sk")
        .unwrap();
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

/// The statements that made the `items` table and its indexes, as SQLite keeps them.
pub(crate) fn layout(file: &Path) -> Vec<String> {
    let conn = Connection::open(file).unwrap();
    let mut stmt = conn
        .prepare("SELECT sql FROM sqlite_master WHERE tbl_name = 'items' AND sql IS NOT NULL ORDER BY type DESC, name")
        .unwrap();
    stmt.query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

/// Rewrites the data file in the layout gatehouse used before ADR 29: one `WITHOUT ROWID`
/// table keyed by `(pk, sk)`, holding the body.
pub(crate) fn rewrite_in_earlier_layout(file: &Path) {
    let conn = Connection::open(file).unwrap();
    conn.execute_batch(
        "BEGIN IMMEDIATE;
         CREATE TABLE earlier (
             pk TEXT NOT NULL,
             sk TEXT NOT NULL,
             expires_at INTEGER,
             body TEXT NOT NULL,
             PRIMARY KEY (pk, sk)
         ) WITHOUT ROWID;
         INSERT INTO earlier SELECT pk, sk, expires_at, body FROM items;
         DROP TABLE items;
         ALTER TABLE earlier RENAME TO items;
         COMMIT;",
    )
    .unwrap();
}
