//! One writer thread per database file, with group commit: the transactions waiting when the
//! thread is free run together inside one SQLite transaction, each inside its own savepoint,
//! and share one commit (one sync of the log). Each is answered only after that commit, so a
//! write is acknowledged only once it is durable, and a transaction whose condition failed
//! rolls back to its savepoint without touching the others. Every shared transaction is
//! counted in the gate file, with the partitions it writes, before it writes and after it
//! ends, so that reads can tell whether what they kept is still what the file holds (ADR 28,
//! ADR 31).

use std::path::Path;
use std::sync::{Arc, Weak, mpsc};

use rusqlite::Connection;
use store::StoreError;
use tokio::sync::oneshot;

use crate::checkpoints::{Checkpoints, Copies};
use crate::gate_file::{GateFile, Touched};

/// Most transactions that share one commit.
const MAX_GROUP: usize = 64;

/// A transaction waiting for the writer thread.
trait Job: Send {
    /// Runs inside the shared transaction; whether it succeeded (its writes are kept).
    fn run(&mut self, conn: &Connection) -> bool;
    /// Answers the caller once the shared transaction ended (`Some`: it did not commit).
    fn answer(self: Box<Self>, commit_failed: Option<StoreError>);
    /// The partitions it may write (counted before the shared transaction writes, ADR 31).
    fn touched(&self) -> &Touched;
}

struct Pending<T, F> {
    touched: Touched,
    work: Option<F>,
    result: Option<Result<T, StoreError>>,
    reply: oneshot::Sender<Result<T, StoreError>>,
}

impl<T, F> Job for Pending<T, F>
where
    T: Send,
    F: FnOnce(&Connection) -> Result<T, StoreError> + Send,
{
    fn run(&mut self, conn: &Connection) -> bool {
        let Some(work) = self.work.take() else {
            return false;
        };
        // A panic is this transaction's failure, not the end of the writer thread.
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(conn)))
            .unwrap_or_else(|_| Err(StoreError::Unavailable("a store write panicked".into())));
        let ok = result.is_ok();
        self.result = Some(result);
        ok
    }

    fn answer(self: Box<Self>, commit_failed: Option<StoreError>) {
        let result = match commit_failed {
            Some(error) => Err(error),
            None => self
                .result
                .unwrap_or_else(|| Err(StoreError::Unavailable("the write did not run".into()))),
        };
        let _ = self.reply.send(result);
    }

    fn touched(&self) -> &Touched {
        &self.touched
    }
}

/// The handle to a writer thread.
#[derive(Debug)]
pub(crate) struct Writer {
    jobs: mpsc::Sender<Box<dyn Job>>,
    /// How often its log was copied back, and by whom.
    pub(crate) copies: Arc<Copies>,
    /// Joined when the handle is dropped.
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Writer {
    /// Stops the thread and waits until it has closed its connections (its own and the
    /// checkpoint thread's): a connection closing later would delete the log and shared-memory
    /// files by name, and a new store may be at that path by then.
    fn drop(&mut self) {
        let (stopped, _) = mpsc::channel();
        drop(std::mem::replace(&mut self.jobs, stopped));
        if let Some(thread) = self.thread.take()
            && thread.thread().id() != std::thread::current().id()
        {
            let _ = thread.join();
        }
    }
}

impl std::fmt::Debug for dyn Job {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Job")
    }
}

impl Writer {
    /// Starts the writer thread that owns `conn` (a connection to the file at `path`),
    /// counting its commits in `gates`, and the thread that copies its log back. The thread
    /// does not keep the gate file open: the store's last handle closes it when dropped, so a
    /// process can open it afresh at once; dropping this handle waits for the thread to end.
    pub(crate) fn start(
        conn: Connection,
        path: &Path,
        name: &str,
        gates: Weak<GateFile>,
    ) -> std::io::Result<Writer> {
        let (jobs, queue) = mpsc::channel::<Box<dyn Job>>();
        let (path, thread) = (path.to_path_buf(), name.to_owned());
        let copies = Arc::new(Copies::default());
        let counted = Arc::clone(&copies);
        let thread = std::thread::Builder::new()
            .name(format!("sqlite-{name}"))
            .spawn(move || {
                let checkpoints = Checkpoints::start(&conn, &path, &thread, counted);
                serve(&conn, &gates, &queue, &checkpoints);
                // The checkpoint thread ends (and closes its connection) before this one's.
                drop(checkpoints);
            })?;
        Ok(Writer {
            jobs,
            copies,
            thread: Some(thread),
        })
    }

    /// Runs `work`, which writes at most the partitions `touched`, as one transaction (sharing
    /// the commit with others waiting), and answers after the commit.
    pub(crate) async fn write<T, F>(&self, touched: Touched, work: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
    {
        let (reply, answer) = oneshot::channel();
        let job = Box::new(Pending {
            touched,
            work: Some(work),
            result: None,
            reply,
        });
        self.jobs
            .send(job)
            .map_err(|_| StoreError::Unavailable("the store's writer stopped".into()))?;
        answer
            .await
            .map_err(|_| StoreError::Unavailable("the store's writer stopped".into()))?
    }
}

/// The thread's loop: take what is waiting, run it as one transaction, commit once, answer;
/// then see to the log (between groups, so that no answer waits for it).
fn serve(
    conn: &Connection,
    gates: &Weak<GateFile>,
    queue: &mpsc::Receiver<Box<dyn Job>>,
    checkpoints: &Checkpoints,
) {
    while let Ok(first) = queue.recv() {
        let mut group = vec![first];
        while group.len() < MAX_GROUP {
            match queue.try_recv() {
                Ok(job) => group.push(job),
                Err(_) => break,
            }
        }
        let failed = match gates.upgrade() {
            Some(gates) => run_group(conn, &gates, &mut group).err(),
            // Only jobs whose callers gave up are left once the store is gone.
            None => Some(StoreError::Unavailable("the store was closed".into())),
        };
        for job in group {
            job.answer(failed.clone());
        }
        checkpoints.after_group(conn);
    }
}

/// Runs one statement of transaction control, prepared once per connection (parsing them
/// on every transaction showed in the profile).
pub(crate) fn control(conn: &Connection, sql: &str) -> Result<(), StoreError> {
    conn.prepare_cached(sql)
        .and_then(|mut stmt| stmt.execute([]))
        .map(|_| ())
        .map_err(crate::unavailable)
}

fn run_group(
    conn: &Connection,
    gates: &GateFile,
    group: &mut [Box<dyn Job>],
) -> Result<(), StoreError> {
    // IMMEDIATE: the write lock is taken before anything is read, so read-check-write is
    // atomic against other processes on the same file too.
    control(conn, "BEGIN IMMEDIATE")?;
    // Counted, with the partitions it writes, while the lock is held and before anything is
    // written: a read that then sees a partition's label settled knows that every commit that
    // wrote the partition up to that label is in the file.
    let mut touched = Touched::Groups(Default::default());
    for job in group.iter() {
        touched.add(job.touched());
    }
    let number = gates.begin_commit(&touched).inspect_err(|_| {
        let _ = control(conn, "ROLLBACK");
    })?;
    let outcome = run_jobs(conn, group);
    if let Err(e) = gates.end_commit(number) {
        // Reads then keep nothing of its partitions until the next commit begins: slower,
        // never stale.
        tracing::warn!(error = %e, "could not count the end of a data commit");
    }
    outcome
}

/// Runs each job in its savepoint and commits them together (inside `BEGIN IMMEDIATE`).
fn run_jobs(conn: &Connection, group: &mut [Box<dyn Job>]) -> Result<(), StoreError> {
    for job in group.iter_mut() {
        let step = control(conn, "SAVEPOINT job").and_then(|()| {
            if !job.run(conn) {
                control(conn, "ROLLBACK TO job")?;
            }
            control(conn, "RELEASE job")
        });
        if let Err(e) = step {
            let _ = control(conn, "ROLLBACK");
            return Err(e);
        }
    }
    control(conn, "COMMIT").inspect_err(|_| {
        let _ = control(conn, "ROLLBACK");
    })
}
