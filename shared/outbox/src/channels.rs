//! Where messages go: the delivery port and its two channels.

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

/// Where a deployment's webhook posts and the secret it signs with.
#[derive(Clone, PartialEq, Eq)]
pub struct WebhookSettings {
    /// `https://`, or `http://` to a loopback address (a receiver on the same machine).
    pub url: String,
    /// 32 bytes or more.
    pub secret: Vec<u8>,
}

/// Never the secret.
impl std::fmt::Debug for WebhookSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookSettings")
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

impl WebhookSettings {
    /// The webhook that `GATEHOUSE_WEBHOOK_URL` (`url`) and `GATEHOUSE_WEBHOOK_SECRET`
    /// (`secret`) name: none without a URL (messages go to the log), and why not when they
    /// are wrong.
    pub fn from_variables(
        url: Option<String>,
        secret: Option<String>,
    ) -> Result<Option<WebhookSettings>, String> {
        let Some(url) = url else {
            return Ok(None);
        };
        if !outside::destination::is_secure_or_loopback(&url) {
            return Err(format!(
                "GATEHOUSE_WEBHOOK_URL must be https:// (or http:// to 127.0.0.1, localhost or [::1]), not {url:?}"
            ));
        }
        match secret {
            Some(secret) if secret.len() >= 32 => Ok(Some(WebhookSettings {
                url,
                secret: secret.into_bytes(),
            })),
            Some(_) => Err("GATEHOUSE_WEBHOOK_SECRET must have at least 32 characters".into()),
            None => Err(
                "GATEHOUSE_WEBHOOK_URL is set: set GATEHOUSE_WEBHOOK_SECRET (32 characters or more) too"
                    .into(),
            ),
        }
    }
}

/// What a webhook delivery posts: the message as JSON and its headers, `Idempotency-Key` (the
/// same on every attempt), `Gatehouse-Attempt` and `Gatehouse-Signature`. Every channel that
/// posts (the native [`Webhook`], the edge's `fetch`) sends exactly this.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookPost {
    /// The JSON body.
    pub body: String,
    /// The headers, lower-case names.
    pub headers: Vec<(&'static str, String)>,
}

impl WebhookPost {
    /// The post of `message`'s `attempt`th try, signed with `secret` at `now` (Unix seconds).
    pub fn of(message: &Message, attempt: u32, secret: &[u8], now: i64) -> Self {
        let body = serde_json::json!({
            "id": message.idempotency_key(),
            "tenant": message.tenant,
            "to": message.to,
            "subject": message.subject,
            "body": message.body,
            "about": message.about,
        })
        .to_string();
        let headers = vec![
            ("content-type", "application/json".to_owned()),
            ("idempotency-key", message.idempotency_key()),
            ("gatehouse-attempt", attempt.to_string()),
            (
                "gatehouse-signature",
                signature(secret, now, body.as_bytes()),
            ),
        ];
        WebhookPost { body, headers }
    }
}

/// What the receiver's answer `status` means: delivered (2xx), worth another try (408, 429,
/// 5xx), or refused for good (any other).
pub fn webhook_outcome(status: u16) -> Result<(), DeliveryError> {
    match status {
        200..=299 => Ok(()),
        408 | 429 | 500..=599 => Err(DeliveryError::Retry(format!(
            "the receiver answered {status}"
        ))),
        status => Err(DeliveryError::Refused(format!(
            "the receiver refused the message with {status}"
        ))),
    }
}

/// Delivery by webhook: an HTTPS POST of [`WebhookPost`] to one URL (feature `webhook`: the
/// native HTTP client; the edge posts with the runtime's `fetch`).
#[cfg(feature = "webhook")]
#[derive(Clone)]
pub struct Webhook {
    client: http_client::HttpClient,
    url: String,
    secret: Vec<u8>,
    clock: std::sync::Arc<dyn outside::Clock>,
}

/// Never the signing secret.
#[cfg(feature = "webhook")]
impl std::fmt::Debug for Webhook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Webhook")
            .field("url", &self.url)
            .field("secret", &"(redacted)")
            .finish_non_exhaustive()
    }
}

#[cfg(feature = "webhook")]
impl Webhook {
    /// A webhook to `url` signed with `secret`, each request answered within `deadline`.
    pub fn new(
        url: &str,
        secret: &[u8],
        deadline: std::time::Duration,
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

#[cfg(feature = "webhook")]
impl Deliver for Webhook {
    fn deliver<'a>(
        &'a self,
        message: &'a Message,
        attempt: u32,
    ) -> BoxFuture<'a, Result<(), DeliveryError>> {
        Box::pin(async move {
            let post = WebhookPost::of(message, attempt, &self.secret, self.clock.now());
            let headers: Vec<(&str, &str)> =
                post.headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
            let answer = self
                .client
                .post(&self.url, &headers, post.body.into())
                .await
                .map_err(|e| DeliveryError::Retry(e.to_string()))?;
            webhook_outcome(answer.status)
        })
    }
}
