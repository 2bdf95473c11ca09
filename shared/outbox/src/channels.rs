//! Where messages go: the delivery port and its two channels.

use std::time::Duration;

use futures_util::future::BoxFuture;
use hmac::{Hmac, Mac as _};
use outbox_format::Message;
use sha2::Sha256;

/// Why a delivery did not land.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DeliveryError {
    /// Worth another try later (timeout, connection, 408, 429, 5xx).
    #[error("{0}")]
    Retry(String),
    /// Refused for good (another 4xx): retrying would not help.
    #[error("{0}")]
    Refused(String),
}

/// A channel that delivers messages.
pub trait Deliver: std::fmt::Debug + Send + Sync {
    /// Delivers `message`, its `attempt`th try (1 for the first); `Ok` only when the receiver
    /// has it.
    fn deliver<'a>(
        &'a self,
        message: &'a Message,
        attempt: u32,
    ) -> BoxFuture<'a, Result<(), DeliveryError>>;
}

/// Delivery by log line, for local use: the message is "delivered" to the log.
#[derive(Debug, Clone, Copy, Default)]
pub struct LogDelivery;

impl Deliver for LogDelivery {
    fn deliver<'a>(
        &'a self,
        message: &'a Message,
        attempt: u32,
    ) -> BoxFuture<'a, Result<(), DeliveryError>> {
        Box::pin(async move {
            tracing::info!(
                message = %message.idempotency_key(),
                to = %message.to,
                subject = %message.subject,
                attempt,
                "outbox message delivered (log channel)"
            );
            Ok(())
        })
    }
}

/// The signature of a webhook delivery: `t=<unix seconds>,v1=<hex HMAC-SHA256 of
/// "<t>.<body>" under the secret>`. A receiver recomputes it, compares in constant time, and
/// refuses a timestamp too far from its clock.
pub fn signature(secret: &[u8], timestamp: i64, body: &[u8]) -> String {
    let mut mac = <Hmac<Sha256> as hmac::digest::KeyInit>::new_from_slice(secret)
        .expect("HMAC takes any key");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    format!(
        "t={timestamp},v1={}",
        hex::encode(mac.finalize().into_bytes())
    )
}

/// Delivery by webhook: an HTTPS POST of the message as JSON to one URL, with
/// `Idempotency-Key` (the same on every attempt), `Gatehouse-Attempt` and
/// `Gatehouse-Signature` headers.
#[derive(Clone)]
pub struct Webhook {
    client: http_client::HttpClient,
    url: String,
    secret: Vec<u8>,
    clock: std::sync::Arc<dyn outside::Clock>,
}

/// Never the signing secret.
impl std::fmt::Debug for Webhook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Webhook")
            .field("url", &self.url)
            .field("secret", &"(redacted)")
            .finish_non_exhaustive()
    }
}

impl Webhook {
    /// A webhook to `url` signed with `secret`, each request answered within `deadline`.
    pub fn new(
        url: &str,
        secret: &[u8],
        deadline: Duration,
        clock: std::sync::Arc<dyn outside::Clock>,
    ) -> Result<Self, http_client::HttpClientError> {
        Ok(Webhook {
            client: http_client::HttpClient::new(deadline)?,
            url: url.to_owned(),
            secret: secret.to_vec(),
            clock,
        })
    }
}

impl Deliver for Webhook {
    fn deliver<'a>(
        &'a self,
        message: &'a Message,
        attempt: u32,
    ) -> BoxFuture<'a, Result<(), DeliveryError>> {
        Box::pin(async move {
            let key = message.idempotency_key();
            let body = serde_json::json!({
                "id": key,
                "tenant": message.tenant,
                "to": message.to,
                "subject": message.subject,
                "body": message.body,
                "about": message.about,
            })
            .to_string();
            let signed = signature(&self.secret, self.clock.now(), body.as_bytes());
            let attempt = attempt.to_string();
            let headers = [
                ("content-type", "application/json"),
                ("idempotency-key", key.as_str()),
                ("gatehouse-attempt", attempt.as_str()),
                ("gatehouse-signature", signed.as_str()),
            ];
            let answer = self
                .client
                .post(&self.url, &headers, body.into())
                .await
                .map_err(|e| DeliveryError::Retry(e.to_string()))?;
            match answer.status {
                200..=299 => Ok(()),
                408 | 429 | 500..=599 => Err(DeliveryError::Retry(format!(
                    "the receiver answered {}",
                    answer.status
                ))),
                status => Err(DeliveryError::Refused(format!(
                    "the receiver refused the message with {status}"
                ))),
            }
        })
    }
}
