//! The product's own adapters beside MCP, on the same services: server-rendered pages for
//! people (sign-in, approvals, connections, agent access, recent agent activity) and a small
//! JSON API. Pages take a session cookie, the API a product API token; an MCP token is refused
//! on every route here, as product credentials are refused at the MCP endpoint.

mod agent_access;
pub mod api;
mod approvals;
mod connections;
mod form;
mod html;
mod operator;
mod pages;
mod records;
mod session;
mod sign_in;
mod site;

pub use api::{ApiCall, ApiCaller, ApiRoute, ApiTool, ProductApi};
pub use site::Site;

use std::sync::Arc;

use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode, header};
use http_body_util::{BodyExt as _, Full, Limited};
use store::Store;

/// Everything the pages and the API act on.
#[derive(Debug, Clone)]
pub struct Web {
    /// The store (sessions, API tokens, switches).
    pub store: Arc<dyn Store>,
    /// Pending actions of agents, approved or rejected on the approval page.
    pub approvals: Arc<dyn mcp_pipeline::Approvals>,
    /// Members and their rights.
    pub directory: Arc<identity::StoreDirectory>,
    /// Connections.
    pub connections: identity::ConnectionService,
    /// Switches.
    pub switches: identity::SwitchService,
    /// What the product's API routes take from each registered tool: its effect class and
    /// the rights it requires.
    pub api_tools: Arc<std::collections::BTreeMap<&'static str, api::ApiTool>>,
    /// The product's records, whose pages tool results link to (ADR 49).
    pub records: Option<Arc<dyn mcp_pipeline::records::Records>>,
    /// The product's JSON API, when it has one (ADR 49).
    pub api: Option<Arc<dyn ProductApi>>,
    /// Members and their passwords.
    pub members: accounts::Members,
    /// Product API tokens.
    pub api_tokens: accounts::ApiTokens,
    /// The sign-in throttle.
    pub throttle: accounts::Throttle,
    /// The gates whose rate buckets the JSON API shares with MCP.
    pub gates: mcp_pipeline::Gates,
    /// The clock (rate windows, the times pages show): the server's, so that tests can set it.
    pub clock: Arc<dyn mcp_pipeline::Clock>,
    /// The randomness forms' one-time ids and request ids come from (the server's).
    pub randomness: Arc<dyn mcp_pipeline::Randomness>,
    /// Whether cookies carry `Secure` (everywhere but plain local HTTP).
    pub secure_cookies: bool,
    /// The MCP endpoint people connect clients to, when this deployment knows it (`serve`
    /// does); the client configurations shown with a new token use it.
    pub mcp_url: Option<String>,
    /// What `gatehouse stdio` needs to open this deployment's store on this machine (`serve`
    /// knows it); `None`: no local store, so no stdio configurations are shown.
    pub stdio_args: Option<Vec<String>>,
    /// The hosts and origin the pages and the API answer (ADR 48).
    pub site: Site,
}

/// `value` as one word of a shell command: as it is when it holds nothing a shell reads
/// specially, else in single quotes (the commands the pages and `serve` print to paste).
pub fn shell_word(value: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "/._-:=@+,".contains(c);
    if !value.is_empty() && value.chars().all(plain) {
        value.to_owned()
    } else {
        format!("'{}'", value.replace('\'', "'\\''"))
    }
}

/// The client's network address, put in a request's extensions by the transport that knows
/// it (the local server's peer, Lambda's `sourceIp`); the sign-in throttle counts by it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientAddress(pub String);

/// The response type.
pub type WebResponse = Response<Full<Bytes>>;

pub(crate) fn respond(
    status: StatusCode,
    content_type: &str,
    body: impl Into<Bytes>,
) -> WebResponse {
    let mut r = Response::new(Full::new(body.into()));
    *r.status_mut() = status;
    if let Ok(v) = HeaderValue::from_str(content_type) {
        r.headers_mut().insert(header::CONTENT_TYPE, v);
    }
    r.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r.headers_mut()
        .insert("x-frame-options", HeaderValue::from_static("DENY"));
    r.headers_mut().insert(
        "content-security-policy",
        HeaderValue::from_static("default-src 'self'; style-src 'unsafe-inline'"),
    );
    r.headers_mut().insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    // Links out of the pages (a record's page, an approval link) carry no path of ours.
    r.headers_mut()
        .insert("referrer-policy", HeaderValue::from_static("same-origin"));
    r
}

pub(crate) fn json_response(status: StatusCode, body: &serde_json::Value) -> WebResponse {
    respond(status, "application/json", body.to_string())
}

/// The answer to a request refused by the site's checks: 421 for a host this site is not,
/// 403 for a change from another origin; as JSON on the API.
fn refused_before_reading(refusal: site::Refusal, api: bool) -> WebResponse {
    let (status, text) = match refusal {
        site::Refusal::Host => (
            StatusCode::MISDIRECTED_REQUEST,
            "This server does not serve that host name: open it at its own address.",
        ),
        site::Refusal::Origin => (
            StatusCode::FORBIDDEN,
            "This change did not come from this server's own pages: open the page here and retry.",
        ),
    };
    if api {
        return json_response(status, &serde_json::json!({"error": text}));
    }
    respond(status, "text/plain; charset=utf-8", format!("{text}\n"))
}

/// Whether a path belongs to the product (pages or API).
pub fn is_product_path(path: &str) -> bool {
    path == "/app" || path.starts_with("/app/") || path.starts_with("/api/")
}

impl Web {
    /// Now, from the server's clock.
    pub fn now(&self) -> chrono::DateTime<chrono::Utc> {
        chrono::DateTime::from_timestamp_micros(self.clock.now_micros()).unwrap_or_default()
    }

    /// The server's clock and randomness together, for the services that stamp and draw.
    pub fn outside(&self) -> outside::ClockAndRandomness {
        outside::ClockAndRandomness::new(Arc::clone(&self.clock), Arc::clone(&self.randomness))
    }

    /// `len` random letters and digits, from the server's randomness.
    pub fn random_text(&self, len: usize) -> String {
        outside::random_text(self.randomness.as_ref(), len)
    }

    /// Handles one request to `/app/...` or `/api/...`.
    pub async fn handle<B>(&self, req: http::Request<B>) -> WebResponse
    where
        B: http_body::Body,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let (parts, body) = req.into_parts();
        let path = parts.uri.path().to_owned();
        let has_cookie = session::cookie_value(&parts).is_some();
        if let Err(refusal) = self.site.check(&parts, has_cookie) {
            return refused_before_reading(refusal, path.starts_with("/api/"));
        }
        // MCP credentials never open a product route.
        if let Some(auth) = parts
            .headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
        {
            let bearer = auth.strip_prefix("Bearer ").unwrap_or(auth).trim();
            if identity::token::classify(bearer) == identity::token::BearerKind::Mcp {
                return json_response(
                    StatusCode::UNAUTHORIZED,
                    &serde_json::json!({"error": "MCP tokens are not accepted here; sign in or use a product API token"}),
                );
            }
        }
        let bytes = match Limited::new(body, 64 * 1024).collect().await {
            Ok(c) => c.to_bytes(),
            Err(_) => {
                return respond(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "text/plain",
                    "request too large\n",
                );
            }
        };
        if path.starts_with("/api/") {
            return match &self.api {
                Some(api) => api::handle(self, api, &parts, &path, &bytes).await,
                None => api::no_such_route(),
            };
        }
        if parts.method == http::Method::POST && !form::well_formed(&bytes) {
            // Nothing is read from a body that is not a form: no sign-in attempt, no change.
            return html::message(
                StatusCode::BAD_REQUEST,
                "Unreadable form",
                "This form's data could not be read. Open the page again and retry.",
            );
        }
        pages::handle(self, &parts, &path, &bytes).await
    }
}
