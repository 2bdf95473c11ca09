//! Claims, delivers and records: the dispatcher's three steps, and the sweep that re-drives
//! what is due.

use std::sync::Arc;

use futures_util::StreamExt as _;
use outbox_format::{self as format, Due, Message, Status};
use serde_json::{Value, json};
use store::{Key, Store, StoreError, TransactOp};

use crate::{Deliver, DeliveryError, OutboxError};

/// How deliveries are retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    /// How long a claim holds before another delivery may take the message over (longer than
    /// any delivery's deadline).
    pub lease_seconds: i64,
    /// Failed deliveries after which a message is dead.
    pub max_attempts: u32,
    /// The wait after the first failure; it doubles with each failure.
    pub first_retry_seconds: i64,
    /// The longest wait between two attempts.
    pub max_retry_seconds: i64,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            lease_seconds: 300,
            max_attempts: 8,
            first_retry_seconds: 30,
            max_retry_seconds: 3600,
        }
    }
}

impl Policy {
    /// When the next attempt is due after the `attempt`th failure at `now` (`None`: dead).
    fn next_attempt(&self, attempt: u32, now: i64) -> Option<i64> {
        if attempt >= self.max_attempts {
            return None;
        }
        let doublings = attempt.saturating_sub(1).min(20);
        let wait = self.first_retry_seconds.saturating_mul(1 << doublings);
        Some(now + wait.min(self.max_retry_seconds))
    }
}

/// What one delivery did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The receiver has it.
    Delivered,
    /// It failed; retried at this time (Unix seconds).
    Retrying(i64),
    /// It failed for good: a dead letter now.
    Dead,
    /// Another delivery has it, it was sent, or it is not due.
    NotClaimed,
}

/// What a sweep did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Swept {
    /// Messages delivered.
    pub delivered: usize,
    /// Messages that failed and wait for a retry.
    pub retrying: usize,
    /// Messages that became dead letters.
    pub dead: usize,
    /// Messages another delivery had, or not due yet.
    pub skipped: usize,
}

impl Swept {
    /// Writes what the sweep did as one log line.
    pub fn log(&self) {
        tracing::info!(
            delivered = self.delivered,
            retrying = self.retrying,
            dead = self.dead,
            skipped = self.skipped,
            "outbox sweep done"
        );
    }
}

/// The dispatcher.
#[derive(Debug, Clone)]
pub struct Dispatcher {
    store: Arc<dyn Store>,
    deliver: Arc<dyn Deliver>,
    clock: Arc<dyn outside::Clock>,
    randomness: Arc<dyn outside::Randomness>,
    policy: Policy,
}

/// Deliveries a sweep runs at once.
const SWEEP_CONCURRENCY: usize = 8;

/// Messages one sweep takes on at most, oldest due first, so that a sweep of slow receivers
/// ends well inside its function's timeout (5 rounds of 8 at a 10-second deadline); the rest
/// wait for the next sweep.
pub const MAX_PER_SWEEP: usize = 40;

impl Dispatcher {
    /// A dispatcher over `store` delivering through `deliver`.
    pub fn new(store: Arc<dyn Store>, deliver: Arc<dyn Deliver>) -> Self {
        Dispatcher {
            store,
            deliver,
            clock: Arc::new(outside::SystemClock),
            randomness: Arc::new(outside::SystemRandomness),
            policy: Policy::default(),
        }
    }

    /// The same dispatcher telling time by `clock`.
    pub fn with_clock(mut self, clock: Arc<dyn outside::Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// The same dispatcher retrying by `policy`.
    pub fn with_policy(mut self, policy: Policy) -> Self {
        self.policy = policy;
        self
    }

    /// Claims, delivers and records the message at `key`.
    pub async fn deliver(&self, key: &Key) -> Result<Outcome, OutboxError> {
        let claim = outside::random_text(self.randomness.as_ref(), 24);
        let now = self.clock.now();
        let claiming = format::claim(key, &claim, now, now - self.policy.lease_seconds);
        let message = match self.store.update(claiming).await {
            Ok(item) => Message::read(key, &item)
                .ok_or_else(|| OutboxError::NotFound(format!("{} is no message", key.sk)))?,
            Err(StoreError::ConditionFailed { .. }) => return Ok(Outcome::NotClaimed),
            Err(e) => return Err(e.into()),
        };
        let attempt = message.attempts + 1;
        let delivered = self.deliver.deliver(&message, attempt).await;
        let now = self.clock.now();
        match delivered {
            Ok(()) => self.record_sent(&message, &claim, now).await,
            Err(DeliveryError::Retry(why)) => match self.policy.next_attempt(attempt, now) {
                Some(at) => {
                    tracing::warn!(message = %message.idempotency_key(), attempt, error = %why, retry_at = at, "outbox delivery failed; retried later");
                    self.record(format::failed(&message, &claim, Some(at), &why))
                        .await?;
                    Ok(Outcome::Retrying(at))
                }
                None => self.dead(&message, &claim, &why).await,
            },
            Err(DeliveryError::Refused(why)) => self.dead(&message, &claim, &why).await,
        }
    }

    async fn record_sent(
        &self,
        message: &Message,
        claim: &str,
        now: i64,
    ) -> Result<Outcome, OutboxError> {
        if let Err(e) = self.record(format::sent(message, claim, now)).await {
            // The receiver has it; if our claim lapsed meanwhile, another delivery may send
            // it again under the same idempotency key, which the receiver drops.
            tracing::warn!(message = %message.idempotency_key(), error = %e, "delivered, but could not record it");
        }
        Ok(Outcome::Delivered)
    }

    async fn dead(
        &self,
        message: &Message,
        claim: &str,
        why: &str,
    ) -> Result<Outcome, OutboxError> {
        // The alarm on dead letters counts this line (infra/template.json).
        tracing::warn!(message = %message.idempotency_key(), attempts = message.attempts + 1, error = %why, "outbox message dead-lettered");
        self.record(format::failed(message, claim, None, why))
            .await?;
        Ok(Outcome::Dead)
    }

    async fn record(&self, ops: Vec<TransactOp>) -> Result<(), OutboxError> {
        Ok(self.store.transact_write(ops).await?)
    }

    /// Handles one batch of the table's stream: delivers every inserted outbox message. A
    /// record whose delivery could not even be recorded is reported back, so that the stream
    /// retries it; a failed delivery is the sweep's to retry.
    pub async fn on_stream(&self, event: &Value) -> Value {
        let mut failures = Vec::new();
        for record in event["Records"].as_array().into_iter().flatten() {
            if record["eventName"] != "INSERT" {
                continue;
            }
            let keys = &record["dynamodb"]["Keys"];
            let (Some(pk), Some(sk)) = (keys["pk"]["S"].as_str(), keys["sk"]["S"].as_str()) else {
                continue;
            };
            let key = Key::new(pk, sk);
            if outbox_format::keys::outbox_tenant(pk).is_none() {
                continue;
            }
            if let Err(e) = self.deliver(&key).await {
                tracing::warn!(message = sk, error = %e, "could not deliver; the stream will retry");
                let sequence = record["dynamodb"]["SequenceNumber"]
                    .as_str()
                    .unwrap_or_default();
                failures.push(json!({"itemIdentifier": sequence}));
            }
        }
        json!({"batchItemFailures": failures})
    }

    /// Delivers every message that is due: failed ones whose retry time came, ones whose
    /// delivery crashed (lease lapsed), and queued ones the stream missed.
    pub async fn sweep(&self) -> Result<Swept, OutboxError> {
        let now = self.clock.now();
        let mut due: Vec<Due> = self
            .index()
            .await?
            .into_iter()
            .filter(|d| !d.dead && d.at <= now)
            .collect();
        due.sort_by_key(|d| d.at);
        let due: Vec<Key> = due
            .into_iter()
            .take(MAX_PER_SWEEP)
            .map(|d| d.message)
            .collect();
        let outcomes: Vec<Result<Outcome, OutboxError>> = futures_util::stream::iter(due)
            .map(|key| async move { self.deliver(&key).await })
            .buffer_unordered(SWEEP_CONCURRENCY)
            .collect()
            .await;
        let mut swept = Swept::default();
        for outcome in outcomes {
            match outcome? {
                Outcome::Delivered => swept.delivered += 1,
                Outcome::Retrying(_) => swept.retrying += 1,
                Outcome::Dead => swept.dead += 1,
                Outcome::NotClaimed => swept.skipped += 1,
            }
        }
        Ok(swept)
    }

    /// When the earliest message that is not dead is due (Unix seconds), if any: when a
    /// scheduler that no stream wakes (the edge's object alarm) runs the next sweep.
    pub async fn next_due(&self) -> Result<Option<i64>, OutboxError> {
        let due = self.index().await?;
        Ok(due.into_iter().filter(|d| !d.dead).map(|d| d.at).min())
    }

    async fn index(&self) -> Result<Vec<Due>, OutboxError> {
        let items = self
            .whole(outbox_format::keys::OUTBOX_DUE.to_owned())
            .await?;
        Ok(items.iter().filter_map(|(k, i)| Due::read(k, i)).collect())
    }

    /// Every live item of `partition`, page after page.
    async fn whole(&self, partition: String) -> Result<Vec<(Key, store::Item)>, OutboxError> {
        let mut out = Vec::new();
        let mut cursor = None;
        loop {
            let query = store::Query::partition(partition.clone()).after(cursor);
            let page = self.store.query(query).await?;
            out.extend(page.items);
            match page.next {
                Some(next) => cursor = Some(next),
                None => return Ok(out),
            }
        }
    }

    /// The dead letters: messages that failed for good, waiting for an operator.
    pub async fn dead_letters(&self) -> Result<Vec<Message>, OutboxError> {
        let keys: Vec<Key> = self
            .index()
            .await?
            .into_iter()
            .filter(|d| d.dead)
            .map(|d| d.message)
            .collect();
        let mut out = Vec::with_capacity(keys.len());
        for chunk in keys.chunks(store::MAX_BATCH_GET) {
            let items = self.store.batch_get(chunk).await?;
            out.extend(
                chunk
                    .iter()
                    .zip(items)
                    .filter_map(|(k, i)| Message::read(k, &i?)),
            );
        }
        Ok(out)
    }

    /// One workspace's dead letters, read from its own messages rather than the deployment's
    /// due index (at the edge each workspace object holds its own, and none holds them all).
    pub async fn dead_letters_of(
        &self,
        tenant: &store::TenantId,
    ) -> Result<Vec<Message>, OutboxError> {
        let partition = outbox_format::keys::outbox_partition(tenant);
        let items = self.whole(partition).await?;
        let messages = items.iter().filter_map(|(k, i)| Message::read(k, i));
        Ok(messages.filter(|m| m.status == Status::Dead).collect())
    }

    /// Puts a dead message back in the queue, with `extra` operations (its audit row) in the
    /// same transaction; the next sweep delivers it.
    pub async fn retry(
        &self,
        tenant: &store::TenantId,
        id: &str,
        extra: Vec<TransactOp>,
    ) -> Result<(), OutboxError> {
        let key = outbox_format::keys::outbox(tenant, id);
        let message = self
            .store
            .get(&key)
            .await?
            .and_then(|i| Message::read(&key, &i))
            .filter(|m| m.status == Status::Dead)
            .ok_or_else(|| OutboxError::NotFound(format!("{tenant}/{id} is not a dead letter")))?;
        let mut ops = format::requeue(&message);
        ops.extend(extra);
        match self.store.transact_write(ops).await {
            Err(StoreError::TransactionCancelled { .. }) => Err(OutboxError::NotFound(format!(
                "{tenant}/{id} changed meanwhile"
            ))),
            other => Ok(other?),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Policy;

    #[test]
    fn retries_double_then_stop() {
        let p = Policy::default();
        assert_eq!(p.next_attempt(1, 0), Some(30));
        assert_eq!(p.next_attempt(2, 0), Some(60));
        assert_eq!(p.next_attempt(7, 0), Some(1920));
        assert_eq!(p.next_attempt(8, 0), None);
    }
}
