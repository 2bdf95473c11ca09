//! The Streamable HTTP transport as one transport-neutral tower service.
//!
//! `http::Request` in, `http::Response` out: the Lambda function, the local server and the
//! in-process test client all run this same service. It owns what belongs to HTTP (path,
//! method, Origin, content type, size, the MCP headers and their match with the body, status
//! codes, JSON or SSE framing) and hands one parsed message to [`mcp_pipeline::Server`].

pub mod stdio;

/// The pipeline's runtime parts on tokio: its timer, and `tokio::spawn` for work after the
/// answer (on Lambda a spawned task keeps running while the runtime posts the answer).
#[cfg(feature = "tokio")]
pub fn tokio_runtime() -> mcp_pipeline::Runtime {
    mcp_pipeline::Runtime {
        sleep: mcp_pipeline::Sleep(Arc::new(|d| Box::pin(tokio::time::sleep(d)))),
        defer: mcp_pipeline::Defer(Arc::new(|work| {
            // Outside a runtime (a call dropped while the runtime shuts down) there is nothing
            // to run it on; the slot's lease frees it.
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                runtime.spawn(work);
            }
        })),
        answer_waits_for_deferred: false,
    }
}

use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, Response, StatusCode, header};
use http_body_util::{BodyExt as _, Full, Limited};
use mcp_pipeline::{Authenticator, Headers, Outcome, Rejection, Request, Server};
use mcp_protocol::{
    Incoming, LATEST_VERSION, META_PROTOCOL_VERSION, RpcError, decode_header_value, parse_message,
};
use serde_json::Value;

/// Any error a request body may fail with.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The response type of the service.
pub type HttpResponse = Response<Full<Bytes>>;

/// What this server publishes as an OAuth protected resource (RFC 9728).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtectedResource {
    /// This server's resource URL (the audience of its access tokens), e.g.
    /// `https://mcp.example.com/mcp`.
    pub resource: String,
    /// Authorization servers that issue tokens for it.
    pub authorization_servers: Vec<String>,
    /// Scopes it understands.
    pub scopes: Vec<String>,
}

impl ProtectedResource {
    /// The metadata URL clients are pointed to.
    pub fn metadata_url(&self) -> String {
        let (origin, path) = split_url(&self.resource);
        format!("{origin}/.well-known/oauth-protected-resource{path}")
    }
}

fn split_url(url: &str) -> (&str, &str) {
    let after_scheme = url.find("://").map_or(0, |i| i + 3);
    match url[after_scheme..].find('/') {
        Some(i) => url.split_at(after_scheme + i),
        None => (url, ""),
    }
}

/// Transport settings.
#[derive(Debug, Clone)]
pub struct HttpConfig {
    /// The one endpoint path.
    pub endpoint_path: String,
    /// Origins allowed to call (exact `scheme://host[:port]`). A request without `Origin`
    /// (every non-browser client) is allowed; one with an Origin not listed gets 403.
    pub allowed_origins: Vec<String>,
    /// Largest accepted body.
    pub max_body_bytes: usize,
    /// OAuth protected resource metadata, served at the well-known paths when set.
    pub protected_resource: Option<ProtectedResource>,
}

impl Default for HttpConfig {
    fn default() -> Self {
        HttpConfig {
            endpoint_path: "/mcp".into(),
            allowed_origins: Vec::new(),
            max_body_bytes: 1024 * 1024,
            protected_resource: None,
        }
    }
}

/// The MCP endpoint as a tower service.
#[derive(Debug, Clone)]
pub struct McpService {
    server: Arc<Server>,
    config: Arc<HttpConfig>,
    authenticator: Option<Arc<dyn Authenticator>>,
}

fn respond(status: StatusCode, content_type: &str, body: impl Into<Bytes>) -> HttpResponse {
    let mut response = Response::new(Full::new(body.into()));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_str(content_type).unwrap_or(HeaderValue::from_static("application/json")),
    );
    // Answers depend on the credential; no shared cache may keep them.
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

fn rpc_error(id: Option<&mcp_protocol::RequestId>, error: &RpcError) -> HttpResponse {
    let status = StatusCode::from_u16(error.http_status).unwrap_or(StatusCode::BAD_REQUEST);
    respond(
        status,
        "application/json",
        mcp_protocol::error_response(id, error).to_string(),
    )
}

/// A header's one value, decoded. Sent twice it is refused: a proxy that read the other
/// copy would route or check a different call than the one that runs.
fn header_text(headers: &HeaderMap, name: &str) -> Result<Option<String>, RpcError> {
    let mut values = headers.get_all(name).iter();
    let (first, second) = (values.next(), values.next());
    if second.is_some() {
        return Err(RpcError::header_mismatch(format!(
            "header {name} is sent more than once; send it once"
        )));
    }
    match first {
        None => Ok(None),
        Some(v) => {
            let raw = v.to_str().map_err(|_| {
                RpcError::header_mismatch(format!("header {name} has invalid characters"))
            })?;
            decode_header_value(raw).map(Some).ok_or_else(|| {
                RpcError::header_mismatch(format!("header {name} has an invalid base64 value"))
            })
        }
    }
}

/// Checks the MCP headers against the body. Returns the protocol version header.
fn check_headers(
    headers: &HeaderMap,
    msg: &mcp_protocol::Message,
) -> Result<Option<String>, RpcError> {
    let version = header_text(headers, "mcp-protocol-version")?;
    let body_version = msg
        .meta_field(META_PROTOCOL_VERSION)
        .and_then(Value::as_str);
    let Some(version) = version else {
        if body_version.is_some() {
            return Err(RpcError::header_mismatch(
                "the MCP-Protocol-Version header is required",
            ));
        }
        // A legacy client that sends no header at all (before 2025-06-18 it was optional).
        return Ok(None);
    };
    if !mcp_protocol::is_supported(&version) {
        return Err(RpcError::unsupported_version(&version));
    }
    // A version in the body must equal the header whichever version the header names: a
    // request cannot be legacy by its header and 2026-07-28 by its body.
    if let Some(body_version) = body_version
        && body_version != version
    {
        return Err(RpcError::header_mismatch(format!(
            "MCP-Protocol-Version header {version} differs from _meta protocolVersion {body_version}"
        )));
    }
    if version != LATEST_VERSION {
        return Ok(Some(version));
    }
    match header_text(headers, "mcp-method")? {
        None => {
            return Err(RpcError::header_mismatch(format!(
                "the Mcp-Method header is required: it repeats the body's method \
                 (Mcp-Method: {})",
                echoable(&msg.method).unwrap_or("<the body's method>")
            )));
        }
        Some(m) if m != msg.method => {
            return Err(RpcError::header_mismatch(format!(
                "Mcp-Method header {} differs from the body's method {}",
                shown(&m),
                shown(&msg.method)
            )));
        }
        Some(_) => {}
    }
    if matches!(
        msg.method.as_str(),
        "tools/call" | "resources/read" | "prompts/get"
    ) {
        let body_name = msg.target_name();
        match (header_text(headers, "mcp-name")?, body_name) {
            (None, name) => {
                return Err(RpcError::header_mismatch(format!(
                    "the Mcp-Name header is required for {}: it repeats the body's name \
                     (Mcp-Name: {})",
                    echoable(&msg.method).unwrap_or("this method"),
                    name.and_then(echoable).unwrap_or("<the body's name>")
                )));
            }
            (Some(h), Some(b)) if h == b => {}
            (Some(h), b) => {
                return Err(RpcError::header_mismatch(format!(
                    "Mcp-Name header {} differs from the body's name {}",
                    shown(&h),
                    b.map_or("(none)", shown)
                )));
            }
        }
    }
    Ok(Some(version))
}

/// `text` when it can be shown in an error as it is: a short name of letters, digits and
/// `/_.-`, as method and tool names are (nothing long or odd a client sent is echoed).
fn echoable(text: &str) -> Option<&str> {
    let plain = |c: char| c.is_ascii_alphanumeric() || "/_.-".contains(c);
    (!text.is_empty() && text.len() <= 128 && text.chars().all(plain)).then_some(text)
}

/// `text` as an error shows it: as it is when [`echoable`], else not at all.
fn shown(text: &str) -> &str {
    echoable(text).unwrap_or("(not shown: long or not a plain name)")
}

/// The headers as the pipeline sees them: lower-case names, repeated headers joined (cookies
/// with `; `, others with `, `, as HTTP allows), values that are not text kept lossily so that
/// a check of them fails rather than finding nothing.
fn lowercase_headers(headers: &HeaderMap) -> Headers {
    let mut out = Headers::new();
    for (name, value) in headers {
        let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
        let separator = if name == header::COOKIE { "; " } else { ", " };
        out.entry(name.as_str().to_ascii_lowercase())
            .and_modify(|v: &mut String| {
                v.push_str(separator);
                v.push_str(&value);
            })
            .or_insert(value);
    }
    out
}

/// A text answer of `content_type` (a metrics scrape, a plain refusal), never cached.
pub fn text(status: StatusCode, content_type: &str, body: String) -> HttpResponse {
    respond(status, content_type, body)
}

/// A `303 See Other` to `location` (where a person who opens the server's address lands).
pub fn see_other(location: &str) -> HttpResponse {
    let mut r = respond(StatusCode::SEE_OTHER, "text/plain; charset=utf-8", "");
    if let Ok(value) = HeaderValue::from_str(location) {
        r.headers_mut().insert(header::LOCATION, value);
    }
    r
}

/// The path a load balancer polls; it answers `200 ok` without a credential.
pub const HEALTH_PATH: &str = "/healthz";

fn render(outcome: Outcome) -> HttpResponse {
    let Some(body) = outcome.body else {
        let mut r = respond(StatusCode::ACCEPTED, "application/json", Bytes::new());
        r.headers_mut().remove(header::CONTENT_TYPE);
        return r;
    };
    let status = StatusCode::from_u16(outcome.status).unwrap_or(StatusCode::OK);
    if outcome.notifications.is_empty() {
        return respond(status, "application/json", body.into_text());
    }
    // The request asked for progress or log messages: an SSE stream scoped to this request,
    // the notifications first and the response last.
    let mut stream = String::new();
    let last = body.into_text();
    let messages = outcome.notifications.iter().map(Value::to_string);
    for message in messages.chain(std::iter::once(last)) {
        stream.push_str("event: message\ndata: ");
        stream.push_str(&message);
        stream.push_str("\n\n");
    }
    let mut r = respond(status, "text/event-stream", stream);
    r.headers_mut()
        .insert("x-accel-buffering", HeaderValue::from_static("no"));
    r
}

impl McpService {
    /// The service for `server` with these transport settings.
    pub fn new(server: Arc<Server>, config: HttpConfig) -> Self {
        McpService {
            server,
            config: Arc::new(config),
            authenticator: None,
        }
    }

    /// Requires every request to carry a credential this authenticator accepts.
    pub fn with_authenticator(mut self, authenticator: Arc<dyn Authenticator>) -> Self {
        self.authenticator = Some(authenticator);
        self
    }

    fn reject(&self, rejection: &Rejection) -> HttpResponse {
        let code = rejection.oauth_error.unwrap_or(match rejection.status {
            401 => "unauthorized",
            403 => "forbidden",
            _ => "unavailable",
        });
        let body = serde_json::json!({"error": code, "error_description": rejection.message});
        let status = StatusCode::from_u16(rejection.status).unwrap_or(StatusCode::UNAUTHORIZED);
        let mut r = respond(status, "application/json", body.to_string());
        if rejection.status == 401 {
            let mut params = Vec::new();
            if let Some(resource) = &self.config.protected_resource {
                params.push(format!("resource_metadata=\"{}\"", resource.metadata_url()));
                if !resource.scopes.is_empty() {
                    params.push(format!("scope=\"{}\"", resource.scopes.join(" ")));
                }
            }
            if let Some(error) = rejection.oauth_error {
                params.push(format!("error=\"{error}\""));
            }
            let challenge = if params.is_empty() {
                "Bearer".to_owned()
            } else {
                format!("Bearer {}", params.join(", "))
            };
            if let Ok(v) = HeaderValue::from_str(&challenge) {
                r.headers_mut().insert(header::WWW_AUTHENTICATE, v);
            }
        }
        if let Some(seconds) = rejection.retry_after {
            r.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        r
    }

    /// The protected resource metadata document, for the well-known paths.
    fn resource_metadata(&self, path: &str) -> Option<HttpResponse> {
        let resource = self.config.protected_resource.as_ref()?;
        let suffix = path.strip_prefix("/.well-known/oauth-protected-resource")?;
        if !suffix.is_empty() && suffix != self.config.endpoint_path {
            return None;
        }
        let doc = serde_json::json!({
            "resource": resource.resource,
            "authorization_servers": resource.authorization_servers,
            "scopes_supported": resource.scopes,
            "bearer_methods_supported": ["header"],
        });
        Some(respond(StatusCode::OK, "application/json", doc.to_string()))
    }

    /// The tenant named by the path for `/t/{tenant}/mcp`, `Some(None)` for the plain
    /// endpoint, `None` when the path is no MCP endpoint.
    fn endpoint_tenant<'p>(&self, path: &'p str) -> Option<Option<&'p str>> {
        if path == self.config.endpoint_path {
            return Some(None);
        }
        let rest = path.strip_prefix("/t/")?;
        let (tenant, tail) = rest.split_once('/')?;
        let matches =
            self.config.endpoint_path.strip_prefix('/') == Some(tail) && !tenant.is_empty();
        matches.then_some(Some(tenant))
    }

    /// Handles one HTTP request.
    pub async fn handle<B>(&self, req: http::Request<B>) -> HttpResponse
    where
        B: http_body::Body,
        B::Error: Into<BoxError>,
    {
        // Unique per request (JSON-RPC ids repeat across sessions): in the log line and in
        // the answer, so that a person can quote it.
        let request_id = self.server.new_request_id();
        let mut response = self.answer(req, &request_id).await;
        if let Ok(value) = HeaderValue::from_str(&request_id) {
            response.headers_mut().insert("x-request-id", value);
        }
        response
    }

    async fn answer<B>(&self, req: http::Request<B>, request_id: &str) -> HttpResponse
    where
        B: http_body::Body,
        B::Error: Into<BoxError>,
    {
        let (parts, body) = req.into_parts();
        let path_tenant = match self.route(&parts) {
            Ok(tenant) => tenant,
            Err(answer) => return answer,
        };
        let bytes = match self.read_body(&parts, body).await {
            Ok(bytes) => bytes,
            Err(answer) => return answer,
        };
        // Parsed before authentication so that the gate items the call will read can be read
        // in the credential's batch; a parse error is still answered only after it.
        let parsed = parse_message(&bytes);
        let headers = lowercase_headers(&parts.headers);
        let admitted = match self.admit(&headers, path_tenant, &parsed).await {
            Ok(admitted) => admitted,
            Err(answer) => return answer,
        };
        let (caller, prefetched, plan) = match admitted {
            None => (None, mcp_pipeline::Prefetched::default(), None),
            Some(a) => (
                Some(a.authenticated.caller),
                a.authenticated.prefetched,
                a.plan,
            ),
        };
        let message = match parsed {
            Ok(Incoming::Message(m)) => m,
            Ok(Incoming::Response(id)) => {
                return rpc_error(
                    id.as_ref(),
                    &RpcError::invalid_request(
                        "Invalid Request: this server sends no requests, so it accepts no responses",
                    ),
                );
            }
            Err(e) => return rpc_error(e.id.as_ref(), &e.error),
        };
        let version_header = match check_headers(&parts.headers, &message) {
            Ok(v) => v,
            Err(e) => return rpc_error(message.id.as_ref(), &e),
        };
        let request = Request {
            message,
            headers: Some(Arc::new(headers)),
            version_header,
            caller,
            prefetched,
            plan,
            request_id: Some(request_id.to_owned()),
        };
        render(self.server.handle(request).await)
    }

    /// What is checked before the body is read: Origin first (a page on another site gets
    /// nothing, not even a parse error), the routes that are no MCP call (metadata, health),
    /// the endpoint, the method and the content type. The endpoint's tenant from the path.
    fn route<'p>(&self, parts: &'p http::request::Parts) -> Result<Option<&'p str>, HttpResponse> {
        if let Some(origin) = parts.headers.get(header::ORIGIN) {
            let allowed = origin
                .to_str()
                .is_ok_and(|o| self.config.allowed_origins.iter().any(|a| a == o));
            if !allowed {
                return Err(rpc_error(
                    None,
                    &RpcError::invalid_request("Forbidden: Origin not allowed").with_http(403),
                ));
            }
        }
        if parts.method == Method::GET
            && let Some(doc) = self.resource_metadata(parts.uri.path())
        {
            return Err(doc);
        }
        if parts.uri.path() == HEALTH_PATH && matches!(parts.method, Method::GET | Method::HEAD) {
            // For load balancers: the process answers. It reads nothing and needs no
            // credential, so it tells nobody anything.
            return Err(respond(StatusCode::OK, "text/plain; charset=utf-8", "ok\n"));
        }
        let Some(path_tenant) = self.endpoint_tenant(parts.uri.path()) else {
            return Err(respond(
                StatusCode::NOT_FOUND,
                "text/plain; charset=utf-8",
                "not found\n",
            ));
        };
        if parts.method != Method::POST {
            let mut r = respond(
                StatusCode::METHOD_NOT_ALLOWED,
                "text/plain; charset=utf-8",
                "the MCP endpoint accepts POST only\n",
            );
            r.headers_mut()
                .insert(header::ALLOW, HeaderValue::from_static("POST"));
            return Err(r);
        }
        let content_type = parts
            .headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        if !content_type
            .split(';')
            .next()
            .is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json"))
        {
            return Err(rpc_error(
                None,
                &RpcError::invalid_request("Content-Type must be application/json").with_http(415),
            ));
        }
        Ok(path_tenant)
    }

    /// The body, refused with 413 when it declares or turns out larger than the limit.
    async fn read_body<B>(
        &self,
        parts: &http::request::Parts,
        body: B,
    ) -> Result<Bytes, HttpResponse>
    where
        B: http_body::Body,
        B::Error: Into<BoxError>,
    {
        let too_large = || {
            rpc_error(
                None,
                &RpcError::invalid_request(format!(
                    "Request body exceeds {} bytes",
                    self.config.max_body_bytes
                ))
                .with_http(413),
            )
        };
        let declared = parts
            .headers
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<usize>().ok());
        if declared.is_some_and(|n| n > self.config.max_body_bytes) {
            return Err(too_large());
        }
        let bytes = match Limited::new(body, self.config.max_body_bytes)
            .collect()
            .await
        {
            Ok(collected) => collected.to_bytes(),
            Err(e) if e.is::<http_body_util::LengthLimitError>() => return Err(too_large()),
            Err(e) => {
                return Err(rpc_error(
                    None,
                    &RpcError::invalid_request(format!("could not read the body: {e}")),
                ));
            }
        };
        Ok(bytes)
    }

    /// Authenticates the message with the credential (none without an authenticator).
    async fn admit(
        &self,
        headers: &Headers,
        path_tenant: Option<&str>,
        parsed: &Result<Incoming, mcp_protocol::ParseError>,
    ) -> Result<Option<mcp_pipeline::Admitted>, HttpResponse> {
        let Some(authenticator) = &self.authenticator else {
            return Ok(None);
        };
        let message = match parsed {
            Ok(Incoming::Message(message)) => Some(message),
            _ => None,
        };
        self.server
            .authenticate(authenticator.as_ref(), headers, path_tenant, message)
            .await
            .map(Some)
            .map_err(|rejection| self.reject(&rejection))
    }
}

trait WithHttp {
    fn with_http(self, status: u16) -> Self;
}

impl WithHttp for RpcError {
    fn with_http(mut self, status: u16) -> Self {
        self.http_status = status;
        self
    }
}

impl<B> tower_service::Service<http::Request<B>> for McpService
where
    B: http_body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
    type Response = HttpResponse;
    type Error = Infallible;
    type Future = std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<HttpResponse, Infallible>> + Send>,
    >;

    fn poll_ready(
        &mut self,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Infallible>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<B>) -> Self::Future {
        let this = self.clone();
        Box::pin(async move { Ok(this.handle(req).await) })
    }
}
