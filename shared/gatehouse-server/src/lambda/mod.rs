//! The MCP endpoint on AWS Lambda: reads and checks its whole configuration from the environment
//! at cold start ([`Config`], failing fast with a message naming the variable), builds the app
//! once, and serves every invocation with the same HTTP service that `gatehouse serve` runs.
//! Logs and metrics are JSON lines on stdout (`telemetry`). A failed cold start is logged and
//! reported to the Runtime API's `init/error`.

use std::fmt;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context as _;
use lambda_http::{Error, Request, service_fn};

mod runtime_api;
mod settle;
mod telemetry;

// The variables the function reads, named as in `infra/template.json` and `infra/README.md`.
/// The DynamoDB table (required).
const TABLE: &str = "GATEHOUSE_TABLE";
/// An endpoint URL instead of AWS's: a local DynamoDB-compatible server (tests only).
const DYNAMODB_ENDPOINT: &str = "GATEHOUSE_DYNAMODB_ENDPOINT";
/// The Secrets Manager secret holding the sealing key (the deployment's way).
const STATE_KEY_SECRET_ARN: &str = "GATEHOUSE_STATE_KEY_SECRET_ARN";
/// The log filter (default `info`).
const LOG: &str = "GATEHOUSE_LOG";

/// Where the `requestState` sealing key comes from.
#[derive(Clone, PartialEq, Eq)]
enum StateKey {
    /// The key itself (`GATEHOUSE_STATE_KEY`).
    Inline(Vec<u8>),
    /// The secret to read through the secrets extension (`GATEHOUSE_STATE_KEY_SECRET_ARN`).
    Secret { arn: String },
}

impl fmt::Debug for StateKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StateKey::Inline(key) => write!(f, "Inline(<{} bytes, redacted>)", key.len()),
            StateKey::Secret { arn } => f.debug_struct("Secret").field("arn", arn).finish(),
        }
    }
}

/// The function's configuration, read once at cold start.
#[derive(Debug, Clone)]
struct Config {
    table: String,
    dynamodb_endpoint: Option<String>,
    allowed_origins: Vec<String>,
    state_key: StateKey,
    oauth: Option<app::settings::OAuthPlan>,
    log_filter: String,
    max_body_bytes: usize,
    console_base: Option<String>,
}

/// Every missing or malformed variable, each named.
#[derive(Debug, PartialEq, Eq)]
struct ConfigError(Vec<String>);

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid configuration: {}", self.0.join("; "))
    }
}

impl std::error::Error for ConfigError {}

/// Keeps the value, or notes the error.
fn ok<T>(errors: &mut Vec<String>, result: Result<T, String>) -> Option<T> {
    result.map_err(|e| errors.push(e)).ok()
}

use app::settings::{ALLOWED_ORIGINS, CONSOLE_BASE, MAX_BODY_BYTES, STATE_KEY, is_http_url};

fn parse_table(value: Option<String>) -> Result<String, String> {
    let table = value.ok_or_else(|| format!("{TABLE} is missing: it names the DynamoDB table"))?;
    if store_dynamodb::is_valid_table_name(&table) {
        Ok(table)
    } else {
        Err(format!(
            "{TABLE}={table:?} is not a DynamoDB table name (3 to 255 of A-Z a-z 0-9 _ . -)"
        ))
    }
}

fn parse_endpoint(value: Option<String>) -> Result<Option<String>, String> {
    match value {
        Some(url) if !is_http_url(&url) => {
            Err(format!("{DYNAMODB_ENDPOINT}={url:?} is not an http(s) URL"))
        }
        other => Ok(other),
    }
}

fn parse_state_key(key: Option<String>, arn: Option<String>) -> Result<StateKey, String> {
    match (key, arn) {
        (Some(_), Some(_)) => Err(format!(
            "{STATE_KEY} and {STATE_KEY_SECRET_ARN} are both set: set only one (the secret's ARN in a deployment)"
        )),
        // The key's value is never echoed.
        (Some(key), None) => app::settings::state_key(key).map(StateKey::Inline),
        (None, Some(arn)) if arn.starts_with("arn:") && arn.contains(":secretsmanager:") => {
            Ok(StateKey::Secret { arn })
        }
        (None, Some(arn)) => Err(format!(
            "{STATE_KEY_SECRET_ARN}={arn:?} is not a Secrets Manager secret ARN"
        )),
        (None, None) => Err(format!(
            "{STATE_KEY_SECRET_ARN} is missing: it names the secret holding the requestState \
             sealing key (or set {STATE_KEY} to the key itself, for local tests)"
        )),
    }
}

fn parse_log(value: Option<String>) -> Result<String, String> {
    let filter = value.unwrap_or_else(|| "info".to_owned());
    tracing_subscriber::EnvFilter::try_new(&filter)
        .map(|_| filter.clone())
        .map_err(|e| format!("{LOG}={filter:?} is not a log filter (e.g. info, or warn,store_dynamodb=debug): {e}"))
}

impl Config {
    /// From the process environment.
    fn from_env() -> Result<Config, ConfigError> {
        Config::from_lookup(|name| std::env::var(name).ok())
    }

    /// From `get` (a variable's value by name); empty or blank values count as unset.
    fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Config, ConfigError> {
        let var = |name: &str| {
            get(name)
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty())
        };
        let mut errors = Vec::new();
        let table = ok(&mut errors, parse_table(var(TABLE)));
        let dynamodb_endpoint = ok(&mut errors, parse_endpoint(var(DYNAMODB_ENDPOINT)));
        let allowed_origins = ok(&mut errors, app::settings::origins(var(ALLOWED_ORIGINS)));
        let state_key = ok(
            &mut errors,
            parse_state_key(var(STATE_KEY), var(STATE_KEY_SECRET_ARN)),
        );
        let oauth = ok(
            &mut errors,
            app::settings::oauth(app::settings::OAuthVariables::read(var)),
        );
        let log_filter = ok(&mut errors, parse_log(var(LOG)));
        let max_body_bytes = ok(&mut errors, app::settings::max_body(var(MAX_BODY_BYTES)));
        let console_base = ok(&mut errors, app::settings::console_base(var(CONSOLE_BASE)));
        let (
            Some(table),
            Some(dynamodb_endpoint),
            Some(allowed_origins),
            Some(state_key),
            Some(oauth),
            Some(log_filter),
            Some(max_body_bytes),
            Some(console_base),
            true,
        ) = (
            table,
            dynamodb_endpoint,
            allowed_origins,
            state_key,
            oauth,
            log_filter,
            max_body_bytes,
            console_base,
            errors.is_empty(),
        )
        else {
            return Err(ConfigError(errors));
        };
        Ok(Config {
            table,
            dynamodb_endpoint,
            allowed_origins,
            state_key,
            oauth,
            log_filter,
            max_body_bytes,
            console_base,
        })
    }

    /// The app's settings, with the sealing key once read.
    fn settings(&self, state_key: Vec<u8>) -> app::Settings {
        app::Settings {
            backend: "dynamodb".into(),
            allowed_origins: self.allowed_origins.clone(),
            max_body_bytes: self.max_body_bytes,
            oauth: self
                .oauth
                .clone()
                .map(|plan| plan.into_oauth(app::key_set_url::fetcher)),
            state_key: Some(state_key),
            console_base: self
                .console_base
                .clone()
                .unwrap_or_else(|| app::Settings::default().console_base),
            defer: Some(settle::defer()),
            answer_waits_for_deferred: true,
            ..app::Settings::default()
        }
    }
}

/// The sealing key: as configured, or from its secret through the secrets extension (which
/// authenticates with the function's session token).
async fn read_state_key(key: &StateKey) -> anyhow::Result<Vec<u8>> {
    match key {
        StateKey::Inline(key) => Ok(key.clone()),
        StateKey::Secret { arn } => {
            let token = std::env::var("AWS_SESSION_TOKEN")
                .ok()
                .filter(|t| !t.is_empty())
                .context("AWS_SESSION_TOKEN is missing; the secrets extension needs it")?;
            let port = std::env::var("PARAMETERS_SECRETS_EXTENSION_HTTP_PORT")
                .ok()
                .and_then(|p| p.parse().ok())
                .unwrap_or(http_client::SECRETS_EXTENSION_PORT);
            let client = http_client::HttpClient::new(std::time::Duration::from_secs(5))?;
            let key = http_client::lambda_secret(&client, port, arn, &token)
                .await
                .with_context(|| format!("reading the requestState key from {arn}"))?;
            Ok(key.into_bytes())
        }
    }
}

/// Everything a cold start does after reading the configuration.
async fn start(config: &Config, product: Arc<dyn app::Product>) -> anyhow::Result<app::App> {
    // Every instance must seal and open `requestState` with the same key.
    let state_key = read_state_key(&config.state_key).await?;
    let store = store_dynamodb::DynamoStore::from_env(store_dynamodb::DynamoConfig {
        table: config.table.clone(),
        endpoint: config.dynamodb_endpoint.clone(),
        region: None,
    })
    .await;
    let store: Arc<dyn store::Store> = Arc::new(store);
    let settings = config.settings(state_key);
    let app = app::build(&settings, store, product)?;
    tracing::info!(
        table = %config.table,
        oauth = config.oauth.is_some(),
        allowed_origins = config.allowed_origins.len(),
        max_body_bytes = config.max_body_bytes,
        "cold start: ready"
    );
    Ok(app)
}

/// Logs why the cold start failed, reports it to the Runtime API, and exits non-zero.
async fn fail(error_type: &str, error: &anyhow::Error) -> ExitCode {
    let message = format!("{error:#}");
    tracing::error!(error_type, "cold start failed: {message}");
    if let Ok(api) = std::env::var("AWS_LAMBDA_RUNTIME_API")
        && let Err(e) = runtime_api::report_init_error(&api, error_type, &message).await
    {
        tracing::error!("could not report the init error: {e:#}");
    }
    ExitCode::FAILURE
}

/// Runs `product`'s MCP endpoint as an AWS Lambda function until the runtime stops it; a
/// product's `main` returns the exit code.
#[tokio::main]
pub async fn run(product: Arc<dyn app::Product>) -> ExitCode {
    let config = Config::from_env();
    telemetry::init(config.as_ref().map_or("info", |c| c.log_filter.as_str()));
    let config = match config {
        Ok(config) => config,
        Err(e) => return fail("ConfigError", &e.into()).await,
    };
    let app = match start(&config, product).await {
        Ok(app) => app,
        Err(e) => return fail("InitError", &e).await,
    };
    let http = app.http.clone();
    let served = lambda_http::run(service_fn(move |req: Request| {
        let http = http.clone();
        async move { Ok::<_, Error>(settle::invocation(http.handle(req)).await) }
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
    use std::collections::HashMap;

    use super::*;
    use app::settings::{
        KeysFrom, OAUTH_ISSUER, OAUTH_JWKS, OAUTH_JWKS_URL, OAUTH_RESOURCE, OAUTH_TENANT_CLAIM,
    };

    const SECRET_ARN: &str = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:StateKey-AbCd";

    fn parse(vars: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        Config::from_lookup(|name| map.get(name).cloned())
    }

    fn problems(vars: &[(&str, &str)]) -> Vec<String> {
        parse(vars).expect_err("a configuration error").0
    }

    fn with_base<'a>(extra: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
        let mut vars = vec![
            (TABLE, "gatehouse-Table-1ABC"),
            (STATE_KEY_SECRET_ARN, SECRET_ARN),
        ];
        vars.extend_from_slice(extra);
        vars
    }

    const JWKS: &str = r#"{"keys":[{"kty":"EC","crv":"P-256","kid":"k1","alg":"ES256","use":"sig","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}]}"#;

    #[test]
    fn the_templates_environment_with_its_empty_defaults() {
        // What infra/template.json sets with every parameter left at its default.
        let config = parse(&[
            (TABLE, "gatehouse-Table-1ABC"),
            (ALLOWED_ORIGINS, ""),
            (OAUTH_ISSUER, ""),
            (OAUTH_RESOURCE, ""),
            (OAUTH_TENANT_CLAIM, "tenant"),
            (STATE_KEY_SECRET_ARN, SECRET_ARN),
            (LOG, "info"),
            (OAUTH_JWKS, ""),
            (MAX_BODY_BYTES, "1048576"),
            (CONSOLE_BASE, "https://abc.lambda-url.eu-west-1.on.aws/app"),
        ])
        .unwrap();
        assert_eq!(config.table, "gatehouse-Table-1ABC");
        assert_eq!(
            config.settings(vec![0; 32]).console_base,
            "https://abc.lambda-url.eu-west-1.on.aws/app"
        );
        assert_eq!(config.dynamodb_endpoint, None);
        assert!(config.allowed_origins.is_empty());
        assert_eq!(
            config.state_key,
            StateKey::Secret {
                arn: SECRET_ARN.into()
            }
        );
        assert!(config.oauth.is_none());
        assert_eq!(config.log_filter, "info");
        assert_eq!(config.max_body_bytes, 1024 * 1024);
    }

    #[test]
    fn a_console_base_that_is_not_a_url_is_refused() {
        let problems = problems(&with_base(&[(CONSOLE_BASE, "pages.example.com/app")]));
        assert!(
            problems.iter().any(|p| p.contains(CONSOLE_BASE)),
            "{problems:?}"
        );
    }

    #[test]
    fn defaults_when_optional_variables_are_unset() {
        let config = parse(&with_base(&[])).unwrap();
        assert_eq!(config.log_filter, "info");
        assert_eq!(
            config.max_body_bytes,
            app::Settings::default().max_body_bytes
        );
        let settings = config.settings(b"k".to_vec());
        assert_eq!(settings.backend, "dynamodb");
        assert_eq!(settings.state_key.as_deref(), Some(&b"k"[..]));
    }

    #[test]
    fn every_missing_required_variable_is_named_at_once() {
        let errors = problems(&[(LOG, "info")]);
        assert_eq!(errors.len(), 2, "{errors:?}");
        assert!(
            errors[0].starts_with("GATEHOUSE_TABLE is missing"),
            "{errors:?}"
        );
        assert!(
            errors[1].starts_with("GATEHOUSE_STATE_KEY_SECRET_ARN is missing"),
            "{errors:?}"
        );
        let message = ConfigError(errors).to_string();
        assert!(message.starts_with("invalid configuration: GATEHOUSE_TABLE is missing"));
    }

    #[test]
    fn blank_values_count_as_unset() {
        let errors = problems(&[(TABLE, "  "), (STATE_KEY_SECRET_ARN, SECRET_ARN)]);
        assert!(
            errors[0].starts_with("GATEHOUSE_TABLE is missing"),
            "{errors:?}"
        );
    }

    #[test]
    fn malformed_values_are_named_with_the_variable() {
        let cases = [
            (
                TABLE,
                "my table",
                "GATEHOUSE_TABLE=\"my table\" is not a DynamoDB table name",
            ),
            (
                TABLE,
                "ab",
                "GATEHOUSE_TABLE=\"ab\" is not a DynamoDB table name",
            ),
            (
                DYNAMODB_ENDPOINT,
                "localhost:8000",
                "GATEHOUSE_DYNAMODB_ENDPOINT=\"localhost:8000\" is not an http(s) URL",
            ),
            (
                MAX_BODY_BYTES,
                "1MB",
                "GATEHOUSE_MAX_BODY_BYTES=\"1MB\" is not a number of bytes",
            ),
            (
                MAX_BODY_BYTES,
                "10",
                "GATEHOUSE_MAX_BODY_BYTES=\"10\" is not a number of bytes",
            ),
            (
                MAX_BODY_BYTES,
                "7000000",
                "GATEHOUSE_MAX_BODY_BYTES=\"7000000\" is not a number of bytes",
            ),
            (
                LOG,
                "info,foo=loud",
                "GATEHOUSE_LOG=\"info,foo=loud\" is not a log filter",
            ),
            (
                ALLOWED_ORIGINS,
                "https://a.example,https://b.example/app",
                "GATEHOUSE_ALLOWED_ORIGINS: [\"https://b.example/app\"] is not a list of origins",
            ),
            (
                ALLOWED_ORIGINS,
                "a.example",
                "GATEHOUSE_ALLOWED_ORIGINS: [\"a.example\"]",
            ),
        ];
        for (name, value, expected) in cases {
            let mut vars = with_base(&[]);
            vars.retain(|(n, _)| *n != name);
            vars.push((name, value));
            let errors = problems(&vars);
            assert_eq!(errors.len(), 1, "{name}={value}: {errors:?}");
            assert!(
                errors[0].starts_with(expected),
                "{name}={value}: {:?} should start with {expected:?}",
                errors[0]
            );
        }
    }

    #[test]
    fn origins_are_a_trimmed_comma_separated_list() {
        let config = parse(&with_base(&[(
            ALLOWED_ORIGINS,
            " https://app.example.com , http://localhost:5173,",
        )]))
        .unwrap();
        assert_eq!(
            config.allowed_origins,
            ["https://app.example.com", "http://localhost:5173"]
        );
    }

    #[test]
    fn the_state_key_comes_from_one_place_and_is_never_shown() {
        let key = "k".repeat(40);
        let config = parse(&[(TABLE, "t-1"), (STATE_KEY, &key)]).unwrap();
        assert_eq!(config.state_key, StateKey::Inline(key.clone().into_bytes()));
        let shown = format!("{config:?}");
        assert!(!shown.contains(&key), "{shown}");
        assert!(shown.contains("40 bytes, redacted"), "{shown}");

        let errors = problems(&[(TABLE, "t-1"), (STATE_KEY, "short-key-value")]);
        assert_eq!(
            errors,
            ["GATEHOUSE_STATE_KEY is too short (15 bytes; at least 32)"]
        );
        let errors = problems(&[
            (TABLE, "t-1"),
            (STATE_KEY, &key),
            (STATE_KEY_SECRET_ARN, SECRET_ARN),
        ]);
        assert!(errors[0].contains("are both set"), "{errors:?}");
        let errors = problems(&[(TABLE, "t-1"), (STATE_KEY_SECRET_ARN, "my-secret")]);
        assert!(
            errors[0].starts_with(
                "GATEHOUSE_STATE_KEY_SECRET_ARN=\"my-secret\" is not a Secrets Manager secret ARN"
            ),
            "{errors:?}"
        );
    }

    #[test]
    fn oauth_needs_issuer_resource_and_keys_together() {
        let config = parse(&with_base(&[
            (OAUTH_ISSUER, "https://auth.example.com"),
            (OAUTH_RESOURCE, "https://mcp.example.com/mcp"),
            (OAUTH_JWKS, JWKS),
        ]))
        .unwrap();
        let oauth = config.oauth.expect("oauth");
        assert_eq!(oauth.config.issuer, "https://auth.example.com");
        assert_eq!(oauth.config.audience, "https://mcp.example.com/mcp");
        assert_eq!(oauth.config.tenant_claim, "tenant");
        assert!(matches!(&oauth.keys, KeysFrom::Inline(set) if set.keys.len() == 1));

        let config = parse(&with_base(&[
            (OAUTH_ISSUER, "https://auth.example.com"),
            (OAUTH_RESOURCE, "https://mcp.example.com/mcp"),
            (
                OAUTH_JWKS_URL,
                "https://auth.example.com/.well-known/jwks.json",
            ),
        ]))
        .unwrap();
        assert!(matches!(
            config.oauth.expect("oauth").keys,
            KeysFrom::Url(url) if url == "https://auth.example.com/.well-known/jwks.json"
        ));
        for (url, ok) in [
            ("http://auth.example.com/jwks.json", false),
            ("http://127.0.0.1:9000/jwks.json", true),
            ("http://localhost/jwks.json", true),
            ("http://localhost.example.com/jwks.json", false),
            ("ftp://auth.example.com/jwks.json", false),
        ] {
            let parsed = parse(&with_base(&[
                (OAUTH_ISSUER, "https://auth.example.com"),
                (OAUTH_RESOURCE, "https://mcp.example.com/mcp"),
                (OAUTH_JWKS_URL, url),
            ]));
            assert_eq!(parsed.is_ok(), ok, "{url}: {:?}", parsed.err());
        }
    }

    #[test]
    fn oauth_settings_that_do_not_fit_are_named() {
        let errors = problems(&with_base(&[
            (OAUTH_ISSUER, "https://auth.example.com"),
            (OAUTH_RESOURCE, "https://mcp.example.com/mcp"),
            (OAUTH_JWKS, JWKS),
            (OAUTH_JWKS_URL, "https://auth.example.com/jwks.json"),
        ]));
        assert!(errors[0].contains("give the keys one way"), "{errors:?}");

        let errors = problems(&with_base(&[(OAUTH_ISSUER, "https://auth.example.com")]));
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(
            errors[0].contains("GATEHOUSE_OAUTH_RESOURCE is missing"),
            "{errors:?}"
        );
        assert!(
            errors[0].contains("GATEHOUSE_OAUTH_JWKS_URL (the issuer's jwks_uri) or GATEHOUSE_OAUTH_JWKS (the key set itself) is missing"),
            "{errors:?}"
        );

        let errors = problems(&with_base(&[
            (OAUTH_ISSUER, "https://auth.example.com"),
            (OAUTH_RESOURCE, "https://mcp.example.com/mcp"),
            (OAUTH_JWKS, "{\"kty\":\"EC\"}"),
        ]));
        assert!(
            errors[0].starts_with("GATEHOUSE_OAUTH_JWKS is not a JSON Web Key Set"),
            "{errors:?}"
        );

        let errors = problems(&with_base(&[
            (OAUTH_ISSUER, "https://auth.example.com"),
            (OAUTH_RESOURCE, "https://mcp.example.com/mcp"),
            (OAUTH_JWKS, "{\"keys\":[]}"),
        ]));
        assert!(
            errors[0].starts_with("GATEHOUSE_OAUTH_JWKS holds no key"),
            "{errors:?}"
        );

        let errors = problems(&with_base(&[(
            OAUTH_RESOURCE,
            "https://mcp.example.com/mcp",
        )]));
        assert_eq!(
            errors,
            [
                "GATEHOUSE_OAUTH_RESOURCE is set but GATEHOUSE_OAUTH_ISSUER is not: set the issuer too, or neither"
            ]
        );

        let config = parse(&with_base(&[
            (OAUTH_ISSUER, "https://auth.example.com"),
            (OAUTH_RESOURCE, "https://mcp.example.com/mcp"),
            (OAUTH_JWKS, JWKS),
            (OAUTH_TENANT_CLAIM, "org_id"),
        ]))
        .unwrap();
        assert_eq!(config.oauth.unwrap().config.tenant_claim, "org_id");
    }
}
