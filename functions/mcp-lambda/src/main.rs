//! The MCP endpoint on AWS Lambda: reads its settings from the environment, builds the app
//! once per cold start, and serves every invocation with the same HTTP service that
//! `gatehouse serve` runs.

use std::sync::Arc;

use anyhow::Context as _;
use lambda_http::{Body, Error, Request, Response, service_fn};

mod secrets;

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// The key sealing `requestState`: from the secret named by `GATEHOUSE_STATE_KEY_SECRET_ARN`
/// (the deployment's way), or `GATEHOUSE_STATE_KEY` (local tests of the binary).
async fn state_key() -> anyhow::Result<Vec<u8>> {
    if let Some(key) = env("GATEHOUSE_STATE_KEY") {
        return Ok(key.into_bytes());
    }
    let arn = env("GATEHOUSE_STATE_KEY_SECRET_ARN").context(
        "GATEHOUSE_STATE_KEY_SECRET_ARN must name the requestState sealing key's secret",
    )?;
    let token = env("AWS_SESSION_TOKEN")
        .context("AWS_SESSION_TOKEN is missing; the secrets extension needs it")?;
    Ok(secrets::fetch(secrets::port(), &arn, &token)
        .await?
        .into_bytes())
}

/// OAuth access tokens, when the deployment names an issuer: its resource URL and its keys
/// (public, so they may sit in the environment) must come with it.
fn oauth() -> anyhow::Result<Option<app::OAuth>> {
    let Some(issuer) = env("GATEHOUSE_OAUTH_ISSUER") else {
        return Ok(None);
    };
    let resource = env("GATEHOUSE_OAUTH_RESOURCE")
        .context("GATEHOUSE_OAUTH_RESOURCE must be set with GATEHOUSE_OAUTH_ISSUER")?;
    let jwks = env("GATEHOUSE_OAUTH_JWKS")
        .context("GATEHOUSE_OAUTH_JWKS must hold the issuer's JSON Web Key Set")?;
    let jwks =
        serde_json::from_str(&jwks).context("GATEHOUSE_OAUTH_JWKS is not a JSON Web Key Set")?;
    let tenant_claim = env("GATEHOUSE_OAUTH_TENANT_CLAIM").unwrap_or_else(|| "tenant".into());
    Ok(Some(app::OAuth {
        resource,
        issuer,
        tenant_claim,
        jwks,
    }))
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
    let state_key = state_key().await?;
    let settings = app::Settings {
        backend: "dynamodb".into(),
        allowed_origins,
        state_key: Some(state_key),
        oauth: oauth()?,
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
