//! The outbox dispatcher: delivers every message the product queued, exactly once to the
//! receiver.
//!
//! - A delivery first *claims* its message with a conditional write that holds for a lease;
//!   a second dispatcher (a redelivered stream record, the sweep, another instance) finds it
//!   claimed and leaves it alone.
//! - A failed delivery releases the claim and schedules a retry with a doubling backoff; after
//!   [`Policy::max_attempts`] failures, or a refusal for good (a 4xx other than 408 and 429),
//!   the message is *dead*: it waits in the dead letters for an operator, and a log line feeds
//!   the deployment's alarm.
//! - The *sweep* (scheduled) re-drives what is due: failed messages whose retry time came,
//!   messages whose delivery crashed (lease lapsed), and queued ones the stream missed.
//! - Every attempt of a message carries the same idempotency key, so that a receiver drops the
//!   repeat a lapsed lease can cause (a delivery that succeeded but could not record it).
//!
//! Channels sit behind [`Deliver`]: [`Webhook`] (HTTPS POST, signed with HMAC-SHA256 over the
//! timestamp and body) and [`LogDelivery`] (a log line, for local use).

mod channels;
mod dispatcher;

#[cfg(feature = "webhook")]
pub use channels::Webhook;
pub use channels::{
    Deliver, DeliveryError, LogDelivery, WebhookPost, WebhookSettings, signature, webhook_outcome,
};
pub use dispatcher::{Dispatcher, MAX_PER_SWEEP, Outcome, Policy, Swept};

/// What went wrong in the dispatcher itself (not in a delivery).
#[derive(Debug, thiserror::Error)]
pub enum OutboxError {
    /// The store failed.
    #[error("store error: {0}")]
    Store(#[from] store::StoreError),
    /// No such message, or not in the state the operation needs.
    #[error("{0}")]
    NotFound(String),
}
