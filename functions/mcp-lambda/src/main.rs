//! The MCP endpoint on AWS Lambda: reads its settings from the environment, builds the app
//! once per cold start, and serves every invocation with the same HTTP service that
//! `gatehouse serve` runs.

use std::sync::Arc;

use anyhow::Context as _;
use lambda_http::{Body, Error, Request, Response, service_fn};

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
    let allowed_origins = std::env::var("GATEHOUSE_ALLOWED_ORIGINS")
        .map(|v| {
            v.split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    let store = store_dynamodb::DynamoStore::from_env(store_dynamodb::DynamoConfig {
        table,
        endpoint: std::env::var("GATEHOUSE_DYNAMODB_ENDPOINT").ok(),
        region: None,
    })
    .await;
    // Every instance must seal and open `requestState` with the same key.
    let state_key = std::env::var("GATEHOUSE_STATE_KEY")
        .context("GATEHOUSE_STATE_KEY must hold the requestState sealing key (from the deployment's secret)")?
        .into_bytes();
    let settings = app::Settings {
        backend: "dynamodb".into(),
        allowed_origins,
        state_key: Some(state_key),
        ..app::Settings::default()
    };
    let app = app::build(&settings, Arc::new(store))?;
    lambda_http::run(service_fn(move |req: Request| {
        let http = app.http.clone();
        async move {
            let response = http.handle(req).await;
            let (parts, body) = response.into_parts();
            let bytes = http_body_util_collect(body).await;
            Ok::<_, Error>(Response::from_parts(parts, Body::from(bytes)))
        }
    }))
    .await
}

/// The service's body is already complete in memory; take its bytes.
async fn http_body_util_collect(body: app::HttpBody) -> Vec<u8> {
    app::body_bytes(body).await
}
