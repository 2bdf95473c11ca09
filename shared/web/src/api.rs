//! The front of a product's JSON API under `/api` (ADR 49). The platform authenticates the
//! product API token (`gha_`: its member, active, with their live rights), asks the product
//! which of its tools a route does the work of, takes that tool's effect class from the
//! registered tool (never restated by the route), admits the call in the token's and the
//! tenant's buckets (shared with MCP), and only then hands it to the product's route.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use futures_util::future::BoxFuture;
use http::request::Parts;
use http::{StatusCode, header};
use serde_json::{Value, json};
use store::TransactOp;

use crate::{Web, WebResponse, json_response};

/// The member a product API token acts for, with their rights now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiCaller {
    /// The workspace.
    pub tenant: store::TenantId,
    /// The member.
    pub member: store::MemberId,
    /// Their rights now.
    pub rights: BTreeSet<String>,
    /// The token's id (its rate bucket).
    pub token: String,
}

/// One admitted API call, handed to the product's route.
#[derive(Debug)]
pub struct ApiCall<'a> {
    /// Who calls.
    pub caller: ApiCaller,
    /// The method (`POST`).
    pub method: &'a str,
    /// The path's segments after `/api/` (`["customers", "cus_..."]`): what the route's
    /// braced segments stood for.
    pub route: &'a [&'a str],
    /// The query string's fields.
    pub query: BTreeMap<String, String>,
    /// The body.
    pub body: &'a [u8],
    /// The tool whose work the route does ([`ApiRoute::tool`]).
    pub tool: &'static str,
    /// When the call came, by the platform's clock.
    pub now: chrono::DateTime<chrono::Utc>,
    /// The call's id, from the server's randomness: its rate buckets' request and its audit
    /// row's suffix.
    pub request_id: String,
}

impl ApiCall<'_> {
    /// The audit row of this call's change (`api.<tool>`, channel `api`), to commit with it.
    pub fn audit(&self, ids: Vec<String>) -> TransactOp {
        identity::AuditEntry {
            tenant: self.caller.tenant.clone(),
            actor: self.caller.member.clone(),
            channel: identity::Channel::Api,
            action: format!("api.{}", self.tool),
            outcome: "ok".into(),
            approval: None,
            ids,
            reason: None,
            at: identity::rfc3339_at(self.now.timestamp_micros()),
        }
        .op_keyed(&self.request_id)
    }
}

/// One route of a product's API: a method and a path after `/api/`, doing one tool's work (and
/// taking its effect class). A segment in braces (`{handle}`) stands for any one segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ApiRoute {
    /// The method (`PATCH`).
    pub method: &'static str,
    /// The path's segments (`["customers", "{handle}"]`).
    pub path: &'static [&'static str],
    /// The registered tool whose work it does (`update_customer`).
    pub tool: &'static str,
}

impl ApiRoute {
    /// Whether `method` on `route` is this route.
    fn matches(&self, method: &str, route: &[&str]) -> bool {
        let any = |p: &str| p.starts_with('{') && p.ends_with('}');
        self.method == method
            && self.path.len() == route.len()
            && self
                .path
                .iter()
                .zip(route)
                .all(|(p, r)| p == r || (any(p) && !r.is_empty()))
    }
}

/// A product's JSON API: its routes, each doing one of its tools' work.
pub trait ProductApi: std::fmt::Debug + Send + Sync {
    /// The routes; the first that matches a request is its route. Every route's tool must be
    /// registered (checked when the app is built).
    fn routes(&self) -> &'static [ApiRoute];

    /// Answers an admitted call.
    fn handle<'a>(&'a self, call: ApiCall<'a>) -> BoxFuture<'a, WebResponse>;
}

/// What an API route takes from the tool it names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiTool {
    /// Its effect class: the rate bucket and the switches the route is admitted by.
    pub effect: mcp_pipeline::EffectClass,
    /// The rights it requires, which the route's caller must hold.
    pub rights: Vec<&'static str>,
}

/// An API answer: `status` with `body` as JSON (for the product's routes).
pub fn answer(status: StatusCode, body: &Value) -> WebResponse {
    json_response(status, body)
}

/// Answers a request to `/api/...` with the product's API.
pub(crate) async fn handle(
    web: &Web,
    api: &Arc<dyn ProductApi>,
    parts: &Parts,
    path: &str,
    body: &[u8],
) -> WebResponse {
    let caller = match caller(web, parts).await {
        Ok(c) => c,
        Err(r) => return r,
    };
    let route: Vec<&str> = path
        .trim_start_matches("/api/")
        .trim_end_matches('/')
        .split('/')
        .collect();
    let method = parts.method.as_str();
    let Some(tool) = api
        .routes()
        .iter()
        .find(|r| r.matches(method, &route))
        .map(|r| r.tool)
    else {
        return no_such_route();
    };
    let Some(registered) = web.api_tools.get(tool) else {
        tracing::error!(tool, "an API route names a tool that is not registered");
        return no_such_route();
    };
    // A route does what its tool does, so it needs what the tool needs, whatever the product
    // checks itself.
    if let Some(missing) = registered
        .rights
        .iter()
        .find(|r| !caller.rights.contains(**r))
    {
        let body = json!({"error": "forbidden", "right": missing, "reason": format!("this needs the right {missing}")});
        return json_response(StatusCode::FORBIDDEN, &body);
    }
    let request_id = web.random_text(16);
    if let Err(refused) = admit(web, &caller, registered.effect, &request_id).await {
        return refused;
    }
    let query = crate::form::parse(parts.uri.query().unwrap_or_default().as_bytes());
    let call = ApiCall {
        caller,
        method,
        route: &route,
        query,
        body,
        tool,
        now: web.now(),
        request_id,
    };
    api.handle(call).await
}

/// 404 for a route the product does not have.
pub fn no_such_route() -> WebResponse {
    json_response(
        StatusCode::NOT_FOUND,
        &json!({"error": "no such API route"}),
    )
}

/// The token's member with their live rights, and the token's id.
async fn caller(web: &Web, parts: &Parts) -> Result<ApiCaller, WebResponse> {
    let unauthorized = |m: &str| json_response(StatusCode::UNAUTHORIZED, &json!({"error": m}));
    let bearer = parts
        .headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .ok_or_else(|| {
            unauthorized("a product API token is required (Authorization: Bearer gha_...)")
        })?;
    // The token's member, active, the same person, with their live rights: read once, by the
    // token service.
    let Ok(Some(accounts::Bearer {
        tenant,
        member,
        token,
        rights,
    })) = web.api_tokens.authenticate(bearer.trim()).await
    else {
        return Err(unauthorized(
            "the product API token is unknown, expired or revoked, or its member has left",
        ));
    };
    Ok(ApiCaller {
        tenant,
        member,
        rights,
        token,
    })
}

/// Counts the call in its token's and its tenant's buckets (shared with MCP); 429 with
/// `Retry-After` when one is full, before anything is done.
async fn admit(
    web: &Web,
    caller: &ApiCaller,
    class: mcp_pipeline::EffectClass,
    request: &str,
) -> Result<(), WebResponse> {
    let now = web.clock.now();
    let Err(refused) = web
        .gates
        .admit_product_call(&caller.tenant, &caller.token, class, request, now)
        .await
    else {
        return Ok(());
    };
    let retry = refused
        .details
        .get("retry_after_seconds")
        .and_then(Value::as_i64)
        .unwrap_or(60);
    let mut r = json_response(
        StatusCode::TOO_MANY_REQUESTS,
        &json!({"error": "rate_limited", "reason": refused.message, "retry_after_seconds": retry}),
    );
    if let Ok(v) = http::HeaderValue::from_str(&retry.to_string()) {
        r.headers_mut().insert(header::RETRY_AFTER, v);
    }
    Err(r)
}
