//! The log copied back into the data file beside the writes, not inside one of them (ADR 52).
//!
//! SQLite's automatic checkpoint runs inside the commit that fills the log: every write
//! waiting on that commit also waited for the whole checkpoint (about 35 ms every 0.4 s under
//! silent writes at 16 clients: the writes' p99). Here a commit only notes how many pages the
//! log holds. Past [`CHECKPOINT_PAGES`] a thread with a connection of its own copies the log
//! back (`PASSIVE`: it takes neither the write lock nor a reader's), while the writer goes on.
//! Once it is done the writer copies, between two groups, the little that was committed during
//! the pass: the log is then wholly in the file, so the next commit starts it over from its
//! beginning instead of growing it. If the log still grows past [`INLINE_PAGES`] (the thread
//! cannot keep up, or cannot open the file), the writer checkpoints inline as SQLite would.
//! Durability does not change: every commit still syncs the log before its answer.

use std::cell::Cell;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::sync::mpsc;

use rusqlite::Connection;
use rusqlite::hooks::Wal;

/// Pages the log holds before it is copied back (SQLite's default is 1,000, about 4 MiB).
/// Pages written again and again (index leaves, the table's last page) are copied once per
/// checkpoint however often they changed (ADR 36). The log grows to about 40 MiB on disk.
pub(crate) const CHECKPOINT_PAGES: i32 = if cfg!(test) { 64 } else { 10_000 };

/// Pages past which the writer copies the log back itself, in its commit: a bound on the
/// log's size if the checkpoint thread falls behind (or a reader holds an old snapshot for
/// long).
pub(crate) const INLINE_PAGES: i32 = 4 * CHECKPOINT_PAGES;

/// No pass running.
const IDLE: u8 = 0;
/// The thread is copying.
const COPYING: u8 = 1;
/// The thread's pass ended: the writer copies what came meanwhile.
const COPIED: u8 = 2;

thread_local! {
    /// The log's pages after this thread's last commit (set by [`note_log_pages`]).
    static LOG_PAGES: Cell<i32> = const { Cell::new(0) };
}

/// SQLite's hook after each commit in WAL mode: keep the log's size for [`Checkpoints`]. It
/// replaces SQLite's automatic checkpoint on the connection it is set on.
fn note_log_pages(_: &Wal, pages: std::ffi::c_int) -> rusqlite::Result<()> {
    LOG_PAGES.set(pages);
    Ok(())
}

/// How often the log was copied back, and by whom (for tests and operators' questions).
#[derive(Debug, Default)]
pub(crate) struct Copies {
    /// Passes of the checkpoint thread.
    pub(crate) by_thread: AtomicU64,
    /// Copies by the writer: the rest after a pass, or inline past [`INLINE_PAGES`].
    pub(crate) by_writer: AtomicU64,
}

/// The writer's side: decides after each group when the log is copied, and by whom.
#[derive(Debug)]
pub(crate) struct Checkpoints {
    state: Arc<AtomicU8>,
    copies: Arc<Copies>,
    /// Wakes the thread; `None` when it could not be started (the writer then copies inline).
    wake: Option<mpsc::SyncSender<()>>,
    /// Joined when the writer's side is dropped, so that its connection is closed by then.
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Checkpoints {
    fn drop(&mut self) {
        // Without its sender the thread's wait ends, and so does the thread.
        self.wake = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Checkpoints {
    /// Takes SQLite's automatic checkpoint off `writer` and starts the thread that copies the
    /// log of the file at `path` back instead. The thread ends when this is dropped.
    pub(crate) fn start(
        writer: &Connection,
        path: &Path,
        name: &str,
        copies: Arc<Copies>,
    ) -> Checkpoints {
        writer.wal_hook(Some(note_log_pages));
        let state = Arc::new(AtomicU8::new(IDLE));
        let (wake, woken) = mpsc::sync_channel::<()>(1);
        let (copier, counted) = (Arc::clone(&state), Arc::clone(&copies));
        let started = crate::open_connection(path).map(|conn| {
            std::thread::Builder::new()
                .name(format!("sqlite-{name}-checkpoint"))
                .spawn(move || copy_when_woken(&conn, &copier, &counted, &woken))
        });
        let (wake, thread) = match started {
            Ok(Ok(thread)) => (Some(wake), Some(thread)),
            Ok(Err(error)) => {
                tracing::warn!(%error, "no checkpoint thread: the writer copies the log itself");
                (None, None)
            }
            Err(error) => {
                tracing::warn!(%error, "no checkpoint connection: the writer copies the log itself");
                (None, None)
            }
        };
        Checkpoints {
            state,
            copies,
            wake,
            thread,
        }
    }

    /// After a group's commit and its answers: copy what came during the thread's pass once
    /// it ended, copy inline when the log outgrew [`INLINE_PAGES`] (or there is no thread),
    /// else wake the thread when the log is full.
    pub(crate) fn after_group(&self, writer: &Connection) {
        let pages = LOG_PAGES.get();
        let state = self.state.load(Ordering::Acquire);
        if state == COPIED {
            self.copy_here(writer);
            self.state.store(IDLE, Ordering::Release);
        } else if pages >= INLINE_PAGES || (self.wake.is_none() && pages >= CHECKPOINT_PAGES) {
            self.copy_here(writer);
        } else if let Some(wake) = self.wake.as_ref().filter(|_| state == IDLE)
            && pages >= CHECKPOINT_PAGES
        {
            self.state.store(COPYING, Ordering::Release);
            if wake.try_send(()).is_err() {
                self.state.store(IDLE, Ordering::Release);
            }
        }
    }

    /// Copies the log back on the writer's own connection, between two groups.
    fn copy_here(&self, writer: &Connection) {
        let _ = copy(writer);
        self.copies.by_writer.fetch_add(1, Ordering::Relaxed);
        LOG_PAGES.set(0);
    }
}

/// The thread's loop. Each wake-up runs passes until one finds little new in the log (the
/// frames committed during the pass before it): what the writer then copies itself, between
/// two groups, is the little committed during that last short pass.
fn copy_when_woken(
    conn: &Connection,
    state: &AtomicU8,
    copies: &Copies,
    woken: &mpsc::Receiver<()>,
) {
    let pass = || {
        copies.by_thread.fetch_add(1, Ordering::Relaxed);
        copy(conn)
    };
    while woken.recv().is_ok() {
        let mut last = pass();
        for _ in 1..MAX_PASSES {
            let now = pass();
            let (Some(before), Some(after)) = (last, now) else {
                break;
            };
            last = now;
            if after - before <= HANDOVER_FRAMES {
                break;
            }
        }
        state.store(COPIED, Ordering::Release);
    }
}

/// Passes per wake-up at most (a log that keeps growing faster than a pass copies is left
/// to the writer's inline bound).
const MAX_PASSES: usize = 4;

/// Frames committed during a pass below which the writer copies the rest: about a
/// millisecond's copying.
const HANDOVER_FRAMES: i64 = 256;

/// One `PASSIVE` checkpoint on `conn`: it copies what no reader still needs from the log and
/// waits for no lock; the log's frames when it began (`None` when it could not run: another
/// process's checkpoint running now is not a failure).
fn copy(conn: &Connection) -> Option<i64> {
    let result = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |row| {
        Ok((row.get::<_, i64>(0)?, row.get::<_, i64>(1)?))
    });
    match result {
        Ok((0, frames)) => Some(frames),
        Ok(_) => None,
        Err(error) => {
            tracing::warn!(%error, "could not copy the data file's log back; the next commit tries again");
            None
        }
    }
}
