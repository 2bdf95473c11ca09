//! The outbox dispatcher: a Lambda function on the table's stream that delivers each outbox
//! message once. Messages are written in the same transaction as the change that causes them;
//! this function claims an entry with a conditional update (queued -> sending), delivers it,
//! and marks it sent. A retried batch finds the entry claimed or sent and skips it, so a
//! stream redelivery never sends twice.

use std::sync::Arc;

use anyhow::Context as _;
use lambda_runtime::{Error, LambdaEvent, service_fn};
use serde_json::{Value, json};
use store::{CmpOp, Condition, Item, Key, Store, StoreError, Update, UpdateAction};

/// How long a claim holds before another attempt may take the entry over (a crashed
/// delivery).
const CLAIM_SECONDS: i64 = 300;

/// Where messages go.
#[async_trait::async_trait]
trait Deliver: Send + Sync {
    /// Delivers one message; an error leaves it for a retry.
    async fn deliver(&self, id: &str, message: &Item) -> anyhow::Result<()>;
}

/// Delivery by log line: the provider integration (email, SMS) plugs in here.
struct LogDelivery;

#[async_trait::async_trait]
impl Deliver for LogDelivery {
    async fn deliver(&self, id: &str, message: &Item) -> anyhow::Result<()> {
        let to = message
            .get("to")
            .and_then(store::Value::as_s)
            .unwrap_or("?");
        tracing::info!(message = id, to, "outbox message delivered");
        Ok(())
    }
}

fn now() -> i64 {
    outside::Clock::now(&outside::SystemClock)
}

/// Claims a queued message (or one whose claim lapsed). `None`: someone else has it or it
/// was sent.
async fn claim(store: &dyn Store, key: &Key) -> Result<Option<Item>, StoreError> {
    let queued = Condition::eq("status", store::Value::s("queued"));
    let lapsed = Condition::eq("status", store::Value::s("sending")).and(Condition::Cmp(
        "claimed_at".into(),
        CmpOp::Lt,
        store::Value::n(now() - CLAIM_SECONDS),
    ));
    let update = Update::new(
        key.clone(),
        vec![
            UpdateAction::Set("status".into(), store::Value::s("sending")),
            UpdateAction::Set("claimed_at".into(), store::Value::n(now())),
        ],
    )
    .when(Condition::item_exists().and(queued.or(lapsed)));
    match store.update(update).await {
        Ok(item) => Ok(Some(item)),
        Err(StoreError::ConditionFailed { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

async fn mark_sent(store: &dyn Store, key: &Key) -> Result<(), StoreError> {
    let update = Update::new(
        key.clone(),
        vec![
            UpdateAction::Set("status".into(), store::Value::s("sent")),
            UpdateAction::Set("delivered_at".into(), store::Value::n(now())),
        ],
    )
    .when(Condition::eq("status", store::Value::s("sending")));
    store.update(update).await.map(|_| ())
}

/// Handles one stream batch; returns the partial batch failures.
async fn handle(store: &dyn Store, deliver: &dyn Deliver, event: &Value) -> Value {
    let mut failures = Vec::new();
    for record in event["Records"].as_array().into_iter().flatten() {
        if record["eventName"] != "INSERT" {
            continue;
        }
        let keys = &record["dynamodb"]["Keys"];
        let (Some(pk), Some(sk)) = (keys["pk"]["S"].as_str(), keys["sk"]["S"].as_str()) else {
            continue;
        };
        if !pk.ends_with("#outbox") {
            continue;
        }
        let key = Key::new(pk, sk);
        let outcome: anyhow::Result<()> = async {
            let Some(message) = claim(store, &key).await? else {
                tracing::debug!(message = sk, "already claimed or sent; skipped");
                return Ok(());
            };
            deliver.deliver(sk, &message).await?;
            mark_sent(store, &key).await?;
            Ok(())
        }
        .await;
        if let Err(e) = outcome {
            tracing::warn!(message = sk, error = %e, "delivery failed; the stream will retry it");
            let sequence = record["dynamodb"]["SequenceNumber"]
                .as_str()
                .unwrap_or_default();
            failures.push(json!({"itemIdentifier": sequence}));
        }
    }
    json!({"batchItemFailures": failures})
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("GATEHOUSE_LOG")
                .unwrap_or_else(|_| "info".into()),
        )
        .with_ansi(false)
        .without_time()
        .init();
    let table =
        std::env::var("GATEHOUSE_TABLE").context("GATEHOUSE_TABLE must name the DynamoDB table")?;
    let store: Arc<dyn Store> = Arc::new(
        store_dynamodb::DynamoStore::from_env(store_dynamodb::DynamoConfig {
            table,
            endpoint: None,
            region: None,
        })
        .await,
    );
    lambda_runtime::run(service_fn(move |event: LambdaEvent<Value>| {
        let store = Arc::clone(&store);
        async move { Ok::<_, Error>(handle(store.as_ref(), &LogDelivery, &event.payload).await) }
    }))
    .await
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    #[derive(Default)]
    struct Recording {
        sent: Mutex<Vec<String>>,
        fail_next: Mutex<bool>,
    }

    #[async_trait::async_trait]
    impl Deliver for Recording {
        async fn deliver(&self, id: &str, _message: &Item) -> anyhow::Result<()> {
            let mut fail = self.fail_next.lock().unwrap();
            if *fail {
                *fail = false;
                anyhow::bail!("provider down");
            }
            self.sent.lock().unwrap().push(id.to_owned());
            Ok(())
        }
    }

    fn insert(pk: &str, sk: &str, seq: &str) -> Value {
        json!({"eventName": "INSERT", "dynamodb": {"Keys": {"pk": {"S": pk}, "sk": {"S": sk}}, "SequenceNumber": seq}})
    }

    async fn queued(store: &dyn Store, pk: &str, sk: &str) {
        let mut item = Item::new();
        item.insert("to".into(), store::Value::s("ada@example.com"));
        item.insert("status".into(), store::Value::s("queued"));
        store
            .put(store::Put::new(Key::new(pk, sk), item))
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn delivers_each_entry_once_even_when_the_stream_repeats_it() {
        let store = store::MemoryStore::new();
        queued(&store, "acme#outbox", "m1").await;
        let deliver = Recording::default();
        let event = json!({"Records": [insert("acme#outbox", "m1", "1"), insert("acme#booking", "b1", "2")]});
        let first = handle(&store, &deliver, &event).await;
        assert_eq!(first["batchItemFailures"], json!([]));
        let again = handle(&store, &deliver, &event).await;
        assert_eq!(again["batchItemFailures"], json!([]));
        assert_eq!(
            *deliver.sent.lock().unwrap(),
            ["m1"],
            "delivered once; other records ignored"
        );
        let stored = store
            .get(&Key::new("acme#outbox", "m1"))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(stored["status"], store::Value::s("sent"));
    }

    #[tokio::test]
    async fn a_failed_delivery_is_reported_for_retry() {
        let store = store::MemoryStore::new();
        queued(&store, "acme#outbox", "m2").await;
        let deliver = Recording::default();
        *deliver.fail_next.lock().unwrap() = true;
        let event = json!({"Records": [insert("acme#outbox", "m2", "42")]});
        let failed = handle(&store, &deliver, &event).await;
        assert_eq!(
            failed["batchItemFailures"],
            json!([{"itemIdentifier": "42"}])
        );
        assert!(deliver.sent.lock().unwrap().is_empty());
        // The claim holds until it lapses, so an immediate retry does not double-send.
        let retry = handle(&store, &deliver, &event).await;
        assert_eq!(retry["batchItemFailures"], json!([]));
        assert!(deliver.sent.lock().unwrap().is_empty());
    }
}
