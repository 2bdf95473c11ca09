//! The outbox dispatcher as an AWS Lambda function (feature `outbox-lambda`; ADR 49: it needs
//! no product, so every product's deployment runs the same one): delivers outbox messages from the table's stream as they
//! are written, and, invoked on a schedule, sweeps what is due (retries after a failure,
//! deliveries whose lease lapsed, anything the stream missed). The delivery rules are the
//! `outbox` crate's; this file reads the configuration and routes the two kinds of event.
//!
//! Configuration: `GATEHOUSE_TABLE`; for webhook delivery `GATEHOUSE_WEBHOOK_URL` and the
//! signing secret, from Secrets Manager (`GATEHOUSE_WEBHOOK_SECRET_ARN`, read through the
//! secrets extension) or, for local use, `GATEHOUSE_WEBHOOK_SECRET`. Without a URL, messages
//! are delivered to the log.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, bail};
use lambda_runtime::{Error, LambdaEvent, service_fn};
use serde_json::{Value, json};

/// How long a webhook receiver has to answer.
const WEBHOOK_DEADLINE: Duration = Duration::from_secs(10);

/// What an event asks for.
#[derive(Debug, PartialEq, Eq)]
enum Work {
    /// A batch of the table's stream.
    Stream,
    /// The scheduled sweep.
    Sweep,
    /// Anything else (ignored, logged).
    Unknown,
}

fn work_of(event: &Value) -> Work {
    if event.get("Records").is_some() {
        Work::Stream
    } else if event["source"] == "aws.events" || event["detail-type"] == "Scheduled Event" {
        Work::Sweep
    } else {
        Work::Unknown
    }
}

/// The signing secret: from Secrets Manager in a deployment, or given directly locally.
async fn webhook_secret() -> anyhow::Result<Vec<u8>> {
    if let Ok(arn) = std::env::var("GATEHOUSE_WEBHOOK_SECRET_ARN") {
        let token = std::env::var("AWS_SESSION_TOKEN")
            .context("AWS_SESSION_TOKEN is missing; the secrets extension needs it")?;
        let port = std::env::var("PARAMETERS_SECRETS_EXTENSION_HTTP_PORT")
            .ok()
            .and_then(|p| p.parse().ok())
            .unwrap_or(http_client::SECRETS_EXTENSION_PORT);
        let client = http_client::HttpClient::new(Duration::from_secs(5))?;
        let secret = http_client::lambda_secret(&client, port, &arn, &token)
            .await
            .with_context(|| format!("reading the webhook secret from {arn}"))?;
        return Ok(secret.into_bytes());
    }
    match std::env::var("GATEHOUSE_WEBHOOK_SECRET") {
        Ok(secret) if secret.len() >= 32 => Ok(secret.into_bytes()),
        Ok(_) => bail!("GATEHOUSE_WEBHOOK_SECRET must have at least 32 characters"),
        Err(_) => bail!(
            "GATEHOUSE_WEBHOOK_URL is set: set GATEHOUSE_WEBHOOK_SECRET_ARN (or GATEHOUSE_WEBHOOK_SECRET) too"
        ),
    }
}

/// The delivery channel the configuration names.
async fn channel() -> anyhow::Result<Arc<dyn outbox::Deliver>> {
    let Ok(url) = std::env::var("GATEHOUSE_WEBHOOK_URL") else {
        tracing::warn!("GATEHOUSE_WEBHOOK_URL is not set: messages are delivered to the log only");
        return Ok(Arc::new(outbox::LogDelivery));
    };
    if !url.starts_with("https://") {
        bail!("GATEHOUSE_WEBHOOK_URL must be an https:// URL, not {url:?}");
    }
    let secret = webhook_secret().await?;
    let clock: Arc<dyn outside::Clock> = Arc::new(outside::SystemClock);
    Ok(Arc::new(outbox::Webhook::new(
        &url,
        &secret,
        WEBHOOK_DEADLINE,
        clock,
    )?))
}

async fn handle(dispatcher: &outbox::Dispatcher, event: &Value) -> Result<Value, Error> {
    match work_of(event) {
        Work::Stream => Ok(dispatcher.on_stream(event).await),
        Work::Sweep => {
            let swept = dispatcher.sweep().await?;
            swept.log();
            Ok(
                json!({"delivered": swept.delivered, "retrying": swept.retrying, "dead": swept.dead}),
            )
        }
        Work::Unknown => {
            tracing::warn!("an event that is neither a stream batch nor the schedule; ignored");
            Ok(json!({}))
        }
    }
}

/// Runs the dispatcher on the Lambda runtime API until the runtime stops it: the whole `main`
/// of a deployment's `outbox-dispatcher` binary.
pub fn run() -> std::process::ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("outbox dispatcher: cannot start the runtime: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    match runtime.block_on(serve()) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("outbox dispatcher: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn serve() -> Result<(), Error> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("GATEHOUSE_LOG")
                .or_else(|_| tracing_subscriber::EnvFilter::try_from_default_env())
                .unwrap_or_else(|_| "info".into()),
        )
        .with_ansi(false)
        .without_time()
        .init();
    let table =
        std::env::var("GATEHOUSE_TABLE").context("GATEHOUSE_TABLE must name the DynamoDB table")?;
    let store: Arc<dyn store::Store> = Arc::new(
        store_dynamodb::DynamoStore::from_env(store_dynamodb::DynamoConfig {
            table,
            endpoint: None,
            region: None,
        })
        .await,
    );
    let dispatcher = Arc::new(outbox::Dispatcher::new(store, channel().await?));
    lambda_runtime::run(service_fn(move |event: LambdaEvent<Value>| {
        let dispatcher = Arc::clone(&dispatcher);
        async move { handle(&dispatcher, &event.payload).await }
    }))
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_told_apart() {
        assert_eq!(work_of(&json!({"Records": []})), Work::Stream);
        assert_eq!(
            work_of(&json!({"source": "aws.events", "detail-type": "Scheduled Event"})),
            Work::Sweep
        );
        assert_eq!(work_of(&json!({"hello": 1})), Work::Unknown);
    }
}
