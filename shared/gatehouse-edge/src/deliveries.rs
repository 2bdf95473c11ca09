//! The outbox at the edge (ADR 51): each workspace object delivers its own workspace's
//! messages from its alarm, by the `outbox` crate's rules (a claim with a lease before each
//! delivery, retries with a doubling backoff, a dead letter after the last attempt) and with
//! the same signed post as every other deployment, sent with the runtime's `fetch`. A commit
//! that queues a message sets the object's alarm at once; each sweep sets it again for the
//! next message due.
//!
//! Configuration, as for `gatehouse serve`: `GATEHOUSE_WEBHOOK_URL` and the secret
//! `GATEHOUSE_WEBHOOK_SECRET`; without a URL, messages are delivered to the log.

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::{BoxFuture, Either};
use outbox::{Deliver, DeliveryError, Dispatcher, WebhookPost, WebhookSettings};
use outbox_format::Message;
use outside::Clock as _;
use store::StoreError;
use store::remote::{StoreRequest, Transport};
use wasm_bindgen::JsValue;
use worker::send::{SendFuture, SendWrapper};
use worker::{Delay, Env, Fetch, Headers, Method, Request, RequestInit};

use crate::env::setting;

/// How long a receiver has to answer (as on Lambda).
const DEADLINE: Duration = Duration::from_secs(10);
/// When a sweep looks again at a message another delivery still holds (its lease is longer).
const CLAIMED_AGAIN_IN: i64 = 60;
/// When a sweep looks again after the store or the configuration failed it.
const FAILED_AGAIN_IN: i64 = 600;

/// Whether `request` queues a message: it writes the outbox's due index.
pub(crate) fn queues(request: &StoreRequest) -> bool {
    store::remote::writes(request)
        && store::remote::keys(request)
            .iter()
            .any(|key| key.pk == outbox_format::keys::OUTBOX_DUE)
}

/// Whether the deployment's webhook settings are usable (`/healthz` says so).
pub(crate) fn check(env: &Env) -> Result<(), String> {
    channel(env).map(|_| ())
}

/// Delivers what is due among the messages of the object whose storage is `storage`; the
/// seconds until its next sweep is due, if a message waits.
pub(crate) async fn sweep(storage: worker::Storage, env: &Env) -> Option<i64> {
    let channel = match channel(env) {
        Ok(channel) => channel,
        Err(problem) => {
            tracing::error!("misconfigured: {problem}; outbox messages wait");
            return Some(FAILED_AGAIN_IN);
        }
    };
    let transport = ObjectTransport {
        storage: SendWrapper::new(storage),
    };
    let store = store::remote::RemoteStore::new(Arc::new(transport));
    let dispatcher = Dispatcher::new(Arc::new(store), channel).with_policy(policy(env));
    let swept = match dispatcher.sweep().await {
        Ok(swept) => swept,
        Err(e) => {
            tracing::error!(error = %e, "the outbox sweep failed");
            return Some(FAILED_AGAIN_IN);
        }
    };
    if swept != outbox::Swept::default() {
        swept.log();
    }
    let next = dispatcher.next_due().await.ok().flatten()?;
    let now = outside::SystemClock.now();
    Some(match next - now {
        wait if wait > 0 => wait,
        // Still due: held by a delivery under way, or more than one sweep takes.
        _ if swept.skipped > 0 => CLAIMED_AGAIN_IN,
        _ => 0,
    })
}

/// The channel the deployment's settings name: its webhook, or the log.
fn channel(env: &Env) -> Result<Arc<dyn Deliver>, String> {
    let webhook = WebhookSettings::from_variables(
        setting(env, "GATEHOUSE_WEBHOOK_URL"),
        setting(env, "GATEHOUSE_WEBHOOK_SECRET"),
    )?;
    Ok(match webhook {
        Some(settings) => Arc::new(FetchWebhook { settings }),
        None => Arc::new(outbox::LogDelivery),
    })
}

/// The retries: the `outbox` crate's, or in the test build quick ones
/// (`GATEHOUSE_TEST_OUTBOX_RETRY_SECONDS`: three attempts that many seconds apart).
fn policy(env: &Env) -> outbox::Policy {
    #[cfg(feature = "test-routes")]
    if let Some(seconds) =
        setting(env, "GATEHOUSE_TEST_OUTBOX_RETRY_SECONDS").and_then(|s| s.parse().ok())
    {
        return outbox::Policy {
            max_attempts: 3,
            first_retry_seconds: seconds,
            max_retry_seconds: seconds,
            ..outbox::Policy::default()
        };
    }
    let _ = env;
    outbox::Policy::default()
}

/// The store operations of the dispatcher, each run in the object's own storage, alone and
/// atomic (the alarm's awaits let the object's other requests in between them).
struct ObjectTransport {
    storage: SendWrapper<worker::Storage>,
}

impl std::fmt::Debug for ObjectTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ObjectTransport")
    }
}

#[async_trait::async_trait]
impl Transport for ObjectTransport {
    async fn send(&self, request: String) -> Result<String, StoreError> {
        let served = crate::transaction::parse(&request).and_then(|request| {
            crate::transaction::serve(&self.storage, request, None, |_| Ok(()))
        });
        Ok(store::remote::encode_outcome(&served))
    }
}

/// The deployment's webhook, posted to with the runtime's `fetch`.
#[derive(Debug)]
struct FetchWebhook {
    settings: WebhookSettings,
}

impl Deliver for FetchWebhook {
    fn deliver<'a>(
        &'a self,
        message: &'a Message,
        attempt: u32,
    ) -> BoxFuture<'a, Result<(), DeliveryError>> {
        let now = outside::SystemClock.now();
        let post = WebhookPost::of(message, attempt, &self.settings.secret, now);
        let url = self.settings.url.clone();
        Box::pin(SendFuture::new(async move {
            let posting = std::pin::pin!(post_once(&url, post));
            let deadline = std::pin::pin!(Delay::from(DEADLINE));
            match futures_util::future::select(posting, deadline).await {
                Either::Left((outcome, _)) => outcome,
                Either::Right(((), _)) => Err(DeliveryError::Retry(format!(
                    "{url}: no answer within {} s",
                    DEADLINE.as_secs()
                ))),
            }
        }))
    }
}

async fn post_once(url: &str, post: WebhookPost) -> Result<(), DeliveryError> {
    let retry = |e: worker::Error| DeliveryError::Retry(format!("{url}: {e}"));
    let headers = Headers::new();
    for (name, value) in &post.headers {
        headers.set(name, value).map_err(retry)?;
    }
    let mut init = RequestInit::new();
    init.with_method(Method::Post)
        .with_headers(headers)
        .with_body(Some(JsValue::from_str(&post.body)));
    let request = Request::new_with_init(url, &init).map_err(retry)?;
    let response = Fetch::Request(request).send().await.map_err(retry)?;
    outbox::webhook_outcome(response.status_code())
}
