//! Work the pipeline defers past the answer (a read's slot release) finishes before the
//! invocation returns (ADR 25): Lambda may freeze the instance the moment the handler returns,
//! and a frozen instance may be stopped without ever running what was left.
//!
//! The deferred work of one invocation is collected in a task-local list and awaited after the
//! answer is built; the round trips per call do not change, a read's answer waits for its
//! release.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex, PoisonError};

use futures_util::FutureExt as _;
use futures_util::future::{BoxFuture, join_all};

tokio::task_local! {
    /// The work the running invocation deferred.
    static DEFERRED: Mutex<Vec<BoxFuture<'static, ()>>>;
}

/// The `Defer` of the function: inside [`invocation`], the work waits for the invocation's
/// end; outside one (never, today) it runs as a task of its own.
pub(crate) fn defer() -> mcp_pipeline::Defer {
    mcp_pipeline::Defer(Arc::new(|work| {
        let mut work = Some(work);
        let _ = DEFERRED.try_with(|deferred| {
            if let Some(work) = work.take() {
                lock(deferred).push(work);
            }
        });
        if let Some(work) = work
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            runtime.spawn(work);
        }
    }))
}

/// Runs `handler`, then everything it deferred (and anything that deferred in turn), and only
/// then gives its output back.
pub(crate) async fn invocation<T>(handler: impl Future<Output = T>) -> T {
    DEFERRED
        .scope(Mutex::new(Vec::new()), async {
            let out = handler.await;
            loop {
                let work = DEFERRED.with(|deferred| std::mem::take(&mut *lock(deferred)));
                if work.is_empty() {
                    return out;
                }
                // Work that panics is its own failure: the answer is built and goes out.
                let caught = work.into_iter().map(|w| AssertUnwindSafe(w).catch_unwind());
                let panics = join_all(caught).await.into_iter().filter(Result::is_err);
                let panics = panics.count();
                if panics > 0 {
                    tracing::error!(panics, "work deferred past the answer panicked");
                }
            }
        })
        .await
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[tokio::test]
    async fn deferred_work_finishes_before_the_invocation_returns() {
        let done = Arc::new(AtomicUsize::new(0));
        let defer = defer();
        let seen = Arc::clone(&done);
        let out = invocation(async {
            let inner = Arc::clone(&seen);
            let again = defer.clone();
            (defer.0)(Box::pin(async move {
                tokio::task::yield_now().await;
                inner.fetch_add(1, Ordering::SeqCst);
                // Work deferred by deferred work is waited for too.
                let last = Arc::clone(&inner);
                (again.0)(Box::pin(async move {
                    last.fetch_add(1, Ordering::SeqCst);
                }));
            }));
            assert_eq!(seen.load(Ordering::SeqCst), 0, "deferred, not run at once");
            "answer"
        })
        .await;
        assert_eq!(out, "answer");
        assert_eq!(done.load(Ordering::SeqCst), 2);
    }

    /// Deferred work that panics does not take the built answer with it, nor the other work.
    #[tokio::test]
    async fn deferred_work_that_panics_leaves_the_answer_and_the_rest() {
        let done = Arc::new(AtomicUsize::new(0));
        let defer = defer();
        let seen = Arc::clone(&done);
        let out = invocation(async {
            (defer.0)(Box::pin(async {
                panic!("injected: deferred work panicked")
            }));
            (defer.0)(Box::pin(async move {
                seen.fetch_add(1, Ordering::SeqCst);
            }));
            "answer"
        })
        .await;
        assert_eq!(out, "answer");
        assert_eq!(done.load(Ordering::SeqCst), 1);
    }
}
