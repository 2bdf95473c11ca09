//! The embedded store's data file read and rewritten directly, beside the store (ADR 29), and
//! a folder whose file holds expired rows.

use std::path::{Path, PathBuf};

use rusqlite::Connection;

use super::created_customer;
use super::processes::{cli_token, start_serve};

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

/// Adds `rows` to the data file's `items` table, as a process of the store would have left
/// them.
pub(crate) fn insert_rows(file: &Path, rows: &[Row]) {
    let mut conn = Connection::open(file).unwrap();
    let txn = conn.transaction().unwrap();
    {
        let mut stmt = txn
            .prepare("INSERT INTO items (pk, sk, expires_at, body) VALUES (?1, ?2, ?3, ?4)")
            .unwrap();
        for (pk, sk, expires_at, body) in rows {
            stmt.execute((pk, sk, expires_at, body)).unwrap();
        }
    }
    txn.commit().unwrap();
}

/// The partition of the expired rows [`WithExpiredRows`] adds.
const EXPIRED_PARTITION: &str = "acme#old";

/// A data folder whose file holds live rows (a customer without an expiry, its write's replay
/// record, still valid) and 10,000 expired rows (more than one step of the sweep looks at).
pub(crate) struct WithExpiredRows {
    pub(crate) data: PathBuf,
    /// An owner's MCP token.
    pub(crate) token: String,
    /// The customer's handle.
    pub(crate) created: String,
    /// Every row before the expired ones were added.
    live: Vec<Row>,
    _dir: tempfile::TempDir,
}

impl WithExpiredRows {
    pub(crate) async fn new() -> WithExpiredRows {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        let token = cli_token(&data);
        let created = {
            let (_server, addr) = start_serve(&data);
            let client = mcp_test_client::TestClient::http(addr)
                .with_header("authorization", &format!("Bearer {token}"));
            created_customer(&client, "Kept", "kept@example.com").await
        };
        let file = data.join("gatehouse.db");
        let live = rows(&file);
        assert!(
            live.iter()
                .any(|(_, _, expires_at, _)| expires_at.is_some())
                && live
                    .iter()
                    .any(|(_, _, expires_at, _)| expires_at.is_none()),
            "live rows with and without an expiry: {live:?}"
        );
        let past = chrono::Utc::now().timestamp() - 120;
        let body = &live[0].3;
        let expired: Vec<Row> = (0..10_000)
            .map(|i| {
                (
                    EXPIRED_PARTITION.into(),
                    format!("{i:05}"),
                    Some(past),
                    body.clone(),
                )
            })
            .collect();
        insert_rows(&file, &expired);
        assert_eq!(expired_left(&rows(&file)), expired.len());
        WithExpiredRows {
            data,
            token,
            created,
            live,
            _dir: dir,
        }
    }

    /// Waits (up to 10 s) until no expired row is left; then checks that every live row is
    /// still there as it was.
    pub(crate) async fn expired_rows_are_deleted(&self) {
        let file = self.data.join("gatehouse.db");
        let mut left = rows(&file);
        for _ in 0..100 {
            if expired_left(&left) == 0 {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            left = rows(&file);
        }
        assert_eq!(expired_left(&left), 0, "expired rows left after 10 s");
        let missing: Vec<_> = self.live.iter().filter(|row| !left.contains(row)).collect();
        assert!(
            missing.is_empty(),
            "live rows deleted or changed: {missing:?}"
        );
    }
}

fn expired_left(rows: &[Row]) -> usize {
    rows.iter()
        .filter(|(pk, ..)| pk == EXPIRED_PARTITION)
        .count()
}
