//! Stopping `serve` without dropping work: on Ctrl-C or SIGTERM it stops accepting, lets each
//! connection finish the request it is serving (an idle keep-alive connection closes at once),
//! and waits for the work sent after answers (slot releases, audit) before it exits, for at
//! most [`GRACE`]. Killed instead, a call's slot waits for its lease and another process on the
//! same folder answers that connection "still running" until then.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::{Notify, watch};

/// How long a stopping server waits for its unfinished work.
pub(crate) const GRACE: Duration = Duration::from_secs(10);

/// The server's work in progress: connections and deferred work, counted, and the signal
/// that tells connections to finish.
pub(crate) struct Work {
    running: AtomicUsize,
    idle: Notify,
    stopping: watch::Sender<bool>,
}

/// One piece of counted work; done when dropped (finished, failed or cancelled alike).
struct Counted(Arc<Work>);

impl Drop for Counted {
    fn drop(&mut self) {
        if self.0.running.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.idle.notify_waiters();
        }
    }
}

impl Work {
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(Work {
            running: AtomicUsize::new(0),
            idle: Notify::new(),
            stopping: watch::channel(false).0,
        })
    }

    /// `work`, counted as running until it ends.
    pub(crate) fn track<F: Future>(
        self: &Arc<Self>,
        work: F,
    ) -> impl Future<Output = F::Output> + use<F> {
        self.running.fetch_add(1, Ordering::AcqRel);
        let counted = Counted(Arc::clone(self));
        async move {
            let out = work.await;
            drop(counted);
            out
        }
    }

    /// Resolves when the server starts stopping.
    pub(crate) fn stopping(&self) -> impl Future<Output = ()> + use<> {
        let mut signal = self.stopping.subscribe();
        async move {
            let _ = signal.wait_for(|stopping| *stopping).await;
        }
    }

    /// Tells connections to finish, then waits for everything counted to end, at most
    /// `within`; returns how many pieces were still running when it gave up.
    pub(crate) async fn stop(&self, within: Duration) -> usize {
        self.stopping.send_replace(true);
        let all_done = async {
            loop {
                let notified = self.idle.notified();
                tokio::pin!(notified);
                notified.as_mut().enable();
                if self.running.load(Ordering::Acquire) == 0 {
                    return;
                }
                notified.await;
            }
        };
        let _ = tokio::time::timeout(within, all_done).await;
        self.running.load(Ordering::Acquire)
    }
}

/// Ctrl-C and SIGTERM (what service managers and `docker stop` send), listened for from the
/// moment this is made: a signal that arrives before anyone waits is kept, not lost to the
/// default action (which ends the process at once).
pub(crate) struct Signals {
    #[cfg(unix)]
    streams: Option<(tokio::signal::unix::Signal, tokio::signal::unix::Signal)>,
}

impl Signals {
    /// Starts listening.
    pub(crate) fn listen() -> Self {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            let streams = signal(SignalKind::interrupt())
                .and_then(|interrupt| Ok((interrupt, signal(SignalKind::terminate())?)))
                .ok();
            Signals { streams }
        }
        #[cfg(not(unix))]
        Signals {}
    }

    /// Resolves on the first signal; says which.
    pub(crate) async fn recv(&mut self) -> &'static str {
        #[cfg(unix)]
        if let Some((interrupt, terminate)) = &mut self.streams {
            return tokio::select! {
                _ = interrupt.recv() => "interrupted",
                _ = terminate.recv() => "terminated",
            };
        }
        let _ = tokio::signal::ctrl_c().await;
        "interrupted"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn stop_waits_for_counted_work_and_no_longer() {
        let work = Work::new();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let tracked = tokio::spawn(work.track(async move {
            let _ = rx.await;
        }));
        let stopping = work.stopping();
        let waiter = {
            let work = Arc::clone(&work);
            tokio::spawn(async move { work.stop(Duration::from_secs(5)).await })
        };
        stopping.await;
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished(), "it waits for the running work");
        tx.send(()).unwrap();
        tracked.await.unwrap();
        assert_eq!(waiter.await.unwrap(), 0);
        let stuck = Work::new();
        let _never = tokio::spawn(stuck.track(std::future::pending::<()>()));
        tokio::task::yield_now().await;
        assert_eq!(stuck.stop(Duration::from_millis(50)).await, 1);
    }
}
