//! The product's own pages (`/app`) and JSON API (`/api`) on AWS Lambda, on the same table as
//! the MCP function. It is a separate function so that people's sessions and API tokens never
//! share a process or an HTTP front with agents' credentials, and so each side scales, deploys
//! and rolls back on its own.
//!
//! It needs no `requestState` key: approvals run the stored pending action through the
//! confirmation service, which seals nothing.

use std::process::ExitCode;
use std::sync::Arc;

use lambda_http::{Body, Error, Request, Response, service_fn};

/// The DynamoDB table (required; the MCP function's table).
const TABLE: &str = "GATEHOUSE_TABLE";
/// An endpoint URL instead of AWS's: a local DynamoDB-compatible server (tests only).
const DYNAMODB_ENDPOINT: &str = "GATEHOUSE_DYNAMODB_ENDPOINT";
/// The log filter (default `info`).
const LOG: &str = "GATEHOUSE_LOG";
/// The MCP endpoint's URL itself, shown in new connections' client configurations (local
/// tests of the binary).
const MCP_URL: &str = "GATEHOUSE_MCP_URL";
/// The Systems Manager parameter holding the MCP endpoint's URL (the deployment's way: the
/// template cannot pass the URL itself without a dependency cycle between the two functions).
const MCP_URL_PARAMETER: &str = "GATEHOUSE_MCP_URL_PARAMETER";

/// The pages' public URL itself, ending in `/app` (local tests of the binary).
const CONSOLE_BASE: &str = app::settings::CONSOLE_BASE;
/// The Systems Manager parameter holding the pages' public URL (the deployment's way: the
/// function's environment cannot name its own Function URL).
const CONSOLE_BASE_PARAMETER: &str = "GATEHOUSE_CONSOLE_BASE_PARAMETER";

/// Reads the configuration: every problem named, none echoed beyond its variable.
fn config(
    lookup: impl Fn(&str) -> Option<String>,
) -> Result<(String, Option<String>), Vec<String>> {
    let mut problems = Vec::new();
    let table = lookup(TABLE).filter(|t| !t.is_empty());
    let table = match table {
        Some(t) if store_dynamodb::is_valid_table_name(&t) => Some(t),
        Some(t) => {
            problems.push(format!(
                "{TABLE}={t:?} is not a DynamoDB table name (3 to 255 of A-Z a-z 0-9 _ . -)"
            ));
            None
        }
        None => {
            problems.push(format!("{TABLE} is missing: it names the DynamoDB table"));
            None
        }
    };
    let endpoint = lookup(DYNAMODB_ENDPOINT).filter(|e| !e.is_empty());
    if let Some(e) = &endpoint
        && !(e.starts_with("http://") || e.starts_with("https://"))
    {
        problems.push(format!("{DYNAMODB_ENDPOINT}={e:?} is not an http(s) URL"));
    }
    match table {
        Some(table) if problems.is_empty() => Ok((table, endpoint)),
        _ => Err(problems),
    }
}

/// A URL given in the variable `direct`, or read from the parameter `parameter` names through
/// the Parameters and Secrets extension; `Ok(None)` when neither is set.
async fn url_setting(
    lookup: &impl Fn(&str) -> Option<String>,
    direct: &str,
    parameter: &str,
) -> Result<Option<String>, String> {
    let set = |name: &str| lookup(name).filter(|v| !v.trim().is_empty());
    if let Some(url) = set(direct) {
        return Ok(Some(url));
    }
    let Some(name) = set(parameter) else {
        return Ok(None);
    };
    let token = set("AWS_SESSION_TOKEN").unwrap_or_default();
    let port = set("PARAMETERS_SECRETS_EXTENSION_HTTP_PORT")
        .and_then(|p| p.parse().ok())
        .unwrap_or(http_client::SECRETS_EXTENSION_PORT);
    let read = async {
        let client = http_client::HttpClient::new(std::time::Duration::from_secs(3))?;
        http_client::lambda_parameter(&client, port, &name, &token).await
    };
    read.await
        .map(Some)
        .map_err(|e| format!("could not read the parameter {name}: {e}"))
}

/// The MCP endpoint's URL for the pages. Without it the pages still work and show a
/// placeholder, so a failure is logged, not fatal.
async fn mcp_url(lookup: &impl Fn(&str) -> Option<String>) -> Option<String> {
    match url_setting(lookup, MCP_URL, MCP_URL_PARAMETER).await {
        Ok(url) => url,
        Err(e) => {
            tracing::warn!(error = %e, "no MCP endpoint URL; pages show a placeholder");
            None
        }
    }
}

/// The pages' public URL (ending in `/app`): the only host the pages answer (ADR 48), so the
/// function does not start without it.
async fn console_base(lookup: &impl Fn(&str) -> Option<String>) -> Result<String, String> {
    let url = url_setting(lookup, CONSOLE_BASE, CONSOLE_BASE_PARAMETER)
        .await?
        .ok_or_else(|| {
            format!(
                "{CONSOLE_BASE_PARAMETER} (or {CONSOLE_BASE}) is missing: it names the pages' \
                 public URL, the only host they answer"
            )
        })?;
    app::settings::console_base(Some(url))?.ok_or_else(|| format!("{CONSOLE_BASE} is empty"))
}

/// The caller's address as the Function URL saw it (for the sign-in throttle).
fn source_ip(req: &Request) -> Option<String> {
    use lambda_http::RequestExt as _;
    match req.request_context_ref()? {
        lambda_http::request::RequestContext::ApiGatewayV2(ctx) => ctx.http.source_ip.clone(),
        _ => None,
    }
}

/// Runs `product`'s pages and JSON API as an AWS Lambda function until the runtime stops it;
/// a product's `main` returns the exit code.
#[tokio::main]
pub async fn run(product: Arc<dyn app::Product>) -> ExitCode {
    let filter = std::env::var(LOG).unwrap_or_else(|_| "info".into());
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
        .with_ansi(false)
        .with_writer(std::io::stderr)
        .init();
    let (table, endpoint) = match config(|name| std::env::var(name).ok()) {
        Ok(c) => c,
        Err(problems) => {
            tracing::error!("invalid configuration: {}", problems.join("; "));
            return ExitCode::FAILURE;
        }
    };
    let store = store_dynamodb::DynamoStore::from_env(store_dynamodb::DynamoConfig {
        table,
        endpoint,
        region: None,
    })
    .await;
    let store: Arc<dyn store::Store> = Arc::new(store);
    let env = |name: &str| std::env::var(name).ok();
    let console_base = match console_base(&env).await {
        Ok(base) => base,
        Err(problem) => {
            tracing::error!("invalid configuration: {problem}");
            return ExitCode::FAILURE;
        }
    };
    let settings = app::Settings {
        backend: "dynamodb".into(),
        secure_cookies: true,
        console_base,
        mcp_url: mcp_url(&env).await,
        ..app::Settings::default()
    };
    let app = match app::build(&settings, store, product) {
        Ok(app) => app,
        Err(e) => {
            tracing::error!("cold start failed: {e}");
            return ExitCode::FAILURE;
        }
    };
    let web = app.web.clone();
    let served = lambda_http::run(service_fn(move |req: Request| {
        let web = web.clone();
        async move {
            // Only the product's paths live here; anything else is not found.
            if !web::is_product_path(req.uri().path()) {
                let mut missing = Response::new(Body::from("not found\n"));
                *missing.status_mut() = lambda_http::http::StatusCode::NOT_FOUND;
                return Ok::<_, Error>(missing);
            }
            let mut req = req;
            if let Some(address) = source_ip(&req) {
                req.extensions_mut().insert(web::ClientAddress(address));
            }
            let (parts, body) = web.handle(req).await.into_parts();
            Ok(Response::from_parts(
                parts,
                Body::from(app::body_bytes(body).await),
            ))
        }
    }))
    .await;
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("the Lambda runtime stopped: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(vars: &[(&str, &str)]) -> Result<(String, Option<String>), Vec<String>> {
        config(|name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        })
    }

    #[test]
    fn the_table_is_required_and_checked() {
        assert_eq!(
            with(&[(TABLE, "gatehouse-Table-1")]),
            Ok(("gatehouse-Table-1".into(), None))
        );
        let missing = with(&[]).unwrap_err();
        assert!(
            missing[0].contains("GATEHOUSE_TABLE is missing"),
            "{missing:?}"
        );
        let bad = with(&[(TABLE, "a b")]).unwrap_err();
        assert!(bad[0].contains("not a DynamoDB table name"), "{bad:?}");
        let endpoint = with(&[(TABLE, "t-1"), (DYNAMODB_ENDPOINT, "localhost")]).unwrap_err();
        assert!(
            endpoint[0].contains("GATEHOUSE_DYNAMODB_ENDPOINT"),
            "{endpoint:?}"
        );
    }
}
