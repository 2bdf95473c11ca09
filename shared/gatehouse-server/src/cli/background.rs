//! Work a serving process repeats in the background (the outbox's deliveries, the embedded
//! store's sweep of expired items). Each round runs as a task of its own, so a round that
//! panics is that round's failure: it is logged and the next round runs as planned. A
//! background service does not stop silently while the process goes on answering.

use std::future::Future;
use std::time::Duration;

/// Runs `round` after `first_wait`, then again `every` after each round ends, for as long as
/// the process runs; `what` names it in the log.
pub(crate) fn repeat<F, Fut>(what: &'static str, first_wait: Duration, every: Duration, round: F)
where
    F: Fn() -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    tokio::spawn(async move {
        tokio::time::sleep(first_wait).await;
        loop {
            if let Err(e) = tokio::spawn(round()).await
                && e.is_panic()
            {
                tracing::error!(
                    what,
                    "a background round panicked; the next runs as planned"
                );
            }
            tokio::time::sleep(every).await;
        }
    });
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Instant;

    use super::*;

    #[tokio::test]
    async fn a_round_that_panics_does_not_stop_the_next() {
        let rounds = Arc::new(AtomicUsize::new(0));
        let seen = Arc::clone(&rounds);
        repeat(
            "test",
            Duration::ZERO,
            Duration::from_millis(5),
            move || {
                let round = seen.fetch_add(1, Ordering::SeqCst);
                async move { assert_ne!(round, 0, "injected: the first round panics") }
            },
        );
        let deadline = Instant::now() + Duration::from_secs(5);
        while rounds.load(Ordering::SeqCst) < 3 {
            assert!(
                Instant::now() < deadline,
                "the rounds stopped after the panic"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
}
