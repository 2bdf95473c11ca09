//! The embedded store's expired items deleted by the processes that serve calls (`serve` and
//! `stdio`): once at start and then every hour, as DynamoDB's time-to-live and the edge
//! object's alarm do for theirs. Expired items are invisible to every read already; without
//! this the data file would only grow (a write's replay record stays a day), and so would the
//! gate file while a process runs (a rate count per connection, class and minute), up to the
//! size its map allows.

use std::time::Duration;

/// How often a serving process sweeps after its first sweep.
const SWEEP_EVERY: Duration = Duration::from_secs(3600);

/// Sweeps `embedded` in the background, when the store is the embedded one.
pub(crate) fn spawn_sweeps(embedded: Option<store_sqlite::SqliteStore>) {
    let Some(store) = embedded else { return };
    super::background::repeat("expiry sweep", Duration::ZERO, SWEEP_EVERY, move || {
        let store = store.clone();
        async move {
            match store.sweep_expired().await {
                Ok(0) => {}
                Ok(deleted) => tracing::info!(deleted, "expired items deleted"),
                Err(e) => {
                    tracing::warn!(error = %e, "could not delete expired items; trying again in an hour")
                }
            }
        }
    });
}
