//! Giving back the space of the data file's expired rows. Every read and every condition
//! ignores an expired item already; nothing depends on its deletion.
//!
//! The file is walked by rowid in steps of [`STEP`] rows: each step is one short read, then,
//! when some of its rows expired, one short write transaction that deletes them, so the sweep
//! never holds the write lock for long whatever the file's size.

use rusqlite::{Connection, params};
use store::StoreError;

use crate::unavailable;

/// Rows looked at per step.
pub(crate) const STEP: usize = 4096;

/// The highest rowid of the data file's items (0 when there are none).
pub(crate) fn last_rowid(conn: &Connection) -> Result<i64, StoreError> {
    conn.query_row("SELECT coalesce(max(rowid), 0) FROM items", [], |r| {
        r.get(0)
    })
    .map_err(unavailable)
}

/// The rowids from `from` (inclusive, [`STEP`] of them) whose expiry passed more than a
/// second before `now`, the margin every expiry check of the store allows.
pub(crate) fn expired_rowids(
    conn: &Connection,
    from: i64,
    now: i64,
) -> Result<Vec<i64>, StoreError> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT rowid FROM items WHERE rowid >= ?1 AND rowid < ?2 AND expires_at < ?3",
        )
        .map_err(unavailable)?;
    let until = from.saturating_add(STEP as i64);
    let rows = stmt
        .query_map(params![from, until, now - 1], |r| r.get(0))
        .map_err(unavailable)?;
    rows.collect::<Result<_, _>>().map_err(unavailable)
}

/// Deletes those of `rowids` that are still expired (a row may have been written again since
/// it was found); how many.
pub(crate) fn delete_expired(
    conn: &Connection,
    rowids: &[i64],
    now: i64,
) -> Result<usize, StoreError> {
    let mut stmt = conn
        .prepare_cached("DELETE FROM items WHERE rowid = ?1 AND expires_at < ?2")
        .map_err(unavailable)?;
    let mut deleted = 0;
    for rowid in rowids {
        deleted += stmt.execute(params![rowid, now - 1]).map_err(unavailable)?;
    }
    Ok(deleted)
}

#[cfg(test)]
mod tests {
    use rusqlite::{Connection, params};

    use super::{STEP, delete_expired, expired_rowids, last_rowid};

    fn with_rows(expiries: &[Option<i64>]) -> Connection {
        let mut conn = Connection::open_in_memory().unwrap();
        crate::layout::prepare(&mut conn).unwrap();
        for (i, expires_at) in expiries.iter().enumerate() {
            conn.execute(
                "INSERT INTO items (pk, sk, expires_at, body) VALUES ('p', ?1, ?2, '{}')",
                params![format!("{i:05}"), expires_at],
            )
            .unwrap();
        }
        conn
    }

    #[test]
    fn a_step_finds_only_rows_expired_more_than_a_second_ago_in_its_range() {
        let now = 1_000;
        let mut expiries = vec![Some(now - 2); STEP + 2];
        expiries[1] = None;
        expiries[2] = Some(now - 1);
        expiries[3] = Some(now + 60);
        let conn = with_rows(&expiries);
        assert_eq!(last_rowid(&conn).unwrap(), (STEP + 2) as i64);
        let first = expired_rowids(&conn, 0, now).unwrap();
        assert_eq!(
            first.len(),
            STEP - 1 - 3,
            "rowid 0 is unused; 2, 3 and 4 are live"
        );
        assert!(!first.contains(&2) && !first.contains(&3) && !first.contains(&4));
        let second = expired_rowids(&conn, STEP as i64, now).unwrap();
        assert_eq!(second, [STEP as i64, STEP as i64 + 1, STEP as i64 + 2]);
    }

    #[test]
    fn a_row_written_again_after_it_was_found_is_not_deleted() {
        let now = 1_000;
        let conn = with_rows(&[Some(now - 5), Some(now - 5)]);
        let found = expired_rowids(&conn, 0, now).unwrap();
        assert_eq!(found, [1, 2]);
        conn.execute(
            "UPDATE items SET expires_at = ?1 WHERE rowid = 2",
            [now + 60],
        )
        .unwrap();
        assert_eq!(delete_expired(&conn, &found, now).unwrap(), 1);
        let left: Vec<i64> = conn
            .prepare("SELECT rowid FROM items")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(left, [2]);
    }
}
