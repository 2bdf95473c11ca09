//! The product's JSON API under `/api`, authenticated by product API tokens (`gha_`). Every
//! route calls the same booking service function as the matching MCP tool, with the token's
//! member as the actor and their live rights, and commits the planned change with an audit row
//! (channel `api`). The API is the product's own adapter: a person's token, so actions that a
//! tool only prepares (notify, wake, alerting, delete) run at once for a member holding the
//! right; sending a quote binds a price and is never done here (see `quotes`).
//!
//! Answers: 2xx with the record; 400 `{"error": "validation", "field", "reason"}` for a wrong
//! input (the service's reason, the same the tools report), 403 for a missing right, 404 for an
//! unknown record, 409 for a duplicate or a stale version, 422 when a business rule refuses.

mod bookings;
mod customers;
mod quotes;

use http::request::Parts;
use http::{StatusCode, header};
use mcp_pipeline::EffectClass;
use serde_json::{Map, Value, json};

use booking::ids::Kind;

use crate::booking::BookingApi;
use crate::{WebResponse, json_response};

/// What a route answers: the response, or the error response to send instead.
type Answer = Result<WebResponse, WebResponse>;

/// The API's answer for a service error: the same cause the tools report.
pub(crate) fn error(e: booking::BookingError) -> WebResponse {
    use booking::BookingError as E;
    let (status, body) = match &e {
        E::NotFound { kind, id } => (
            StatusCode::NOT_FOUND,
            json!({"error": "not_found", "kind": kind, "id": id, "reason": e.to_string()}),
        ),
        E::Invalid { field, reason } => (
            StatusCode::BAD_REQUEST,
            json!({"error": "validation", "field": field, "reason": reason}),
        ),
        E::Duplicate { existing, .. } => (
            StatusCode::CONFLICT,
            json!({"error": "duplicate", "existing": existing, "reason": e.to_string()}),
        ),
        E::Stale { current, .. } => (
            StatusCode::CONFLICT,
            json!({"error": "conflict", "reason": e.to_string(), "current": current}),
        ),
        E::Forbidden { right } => (
            StatusCode::FORBIDDEN,
            json!({"error": "forbidden", "right": right, "reason": e.to_string()}),
        ),
        E::Time { field, error } => (
            StatusCode::BAD_REQUEST,
            json!({"error": "validation", "field": field, "reason": error.to_string()}),
        ),
        E::Money { field, error } => (
            StatusCode::BAD_REQUEST,
            json!({"error": "validation", "field": field, "reason": error.to_string()}),
        ),
        E::CountMismatch { matches, .. } => (
            StatusCode::UNPROCESSABLE_ENTITY,
            json!({"error": "rejected", "reason": e.to_string(), "matches": matches}),
        ),
        E::Past { field, start, .. } => (
            StatusCode::UNPROCESSABLE_ENTITY,
            json!({"error": "rejected", "field": field, "reason": e.to_string(), "start": start}),
        ),
        E::Busy { other, .. } => (
            StatusCode::CONFLICT,
            json!({"error": "conflict", "existing": other, "reason": e.to_string()}),
        ),
        E::Rejected(reason) => (
            StatusCode::UNPROCESSABLE_ENTITY,
            json!({"error": "rejected", "reason": reason}),
        ),
        // A request the store can never take (too many writes at once, an item too large):
        // a retry would only repeat it. Anything else (an outage, a concurrent write) may pass
        // when tried again.
        E::Store(store::StoreError::Invalid(_)) => (
            StatusCode::UNPROCESSABLE_ENTITY,
            json!({"error": "rejected", "reason": "the change is too large to make at once; make it smaller"}),
        ),
        E::Store(_) => (
            StatusCode::SERVICE_UNAVAILABLE,
            json!({"error": "unavailable"}),
        ),
    };
    json_response(status, &body)
}

fn invalid(field: &str, reason: &str) -> WebResponse {
    json_response(
        StatusCode::BAD_REQUEST,
        &json!({"error": "validation", "field": field, "reason": reason}),
    )
}

fn no_route() -> WebResponse {
    json_response(
        StatusCode::NOT_FOUND,
        &json!({"error": "no such API route"}),
    )
}

/// The token's member with their live rights, and the token's id.
async fn actor(
    web: &BookingApi<'_>,
    parts: &Parts,
) -> Result<(booking::Actor, String), WebResponse> {
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
    let actor = booking::Actor {
        tenant,
        member,
        rights,
    };
    Ok((actor, token))
}

/// The effect class of an API route, as its tool's: reads, silent writes, messages to
/// customers (notify), paging (wake), muting alerts (alerting), deletions.
fn class_of(method: &str, segments: &[&str]) -> EffectClass {
    match (method, segments) {
        ("GET", _) => EffectClass::Read,
        ("DELETE", _) => EffectClass::Delete,
        (_, ["technicians", _, "pages"]) => EffectClass::Wake,
        (_, ["bookings", _, "mute"]) => EffectClass::Alerting,
        (_, ["bookings", "cancellations"] | ["quotes", _, "send"])
        | (
            _,
            [
                "bookings",
                _,
                "confirmation" | "cancellation" | "reschedule",
            ],
        ) => EffectClass::Notify,
        _ => EffectClass::SilentWrite,
    }
}

/// Counts the call in its token's and its tenant's buckets (shared with MCP); 429 with
/// `Retry-After` when one is full, before anything is done.
async fn admit(
    web: &BookingApi<'_>,
    (tenant, token): (&str, &str),
    class: EffectClass,
) -> Result<(), WebResponse> {
    let request = outside::random_text(&outside::SystemRandomness, 16);
    let now = web.clock.now();
    let Err(refused) = web
        .gates
        .admit_product_call((tenant, token), class, &request, now)
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

/// A JSON object body, with only the fields a route takes (like the tools, which refuse
/// unknown arguments with the allowed list).
pub(crate) struct Body(Map<String, Value>);

impl Body {
    fn parse(bytes: &[u8], allowed: &[&str]) -> Result<Body, WebResponse> {
        let value = if bytes.iter().all(u8::is_ascii_whitespace) {
            Value::Object(Map::new())
        } else {
            serde_json::from_slice::<Value>(bytes).unwrap_or(Value::Null)
        };
        let Value::Object(map) = value else {
            return Err(json_response(
                StatusCode::BAD_REQUEST,
                &json!({"error": "the body must be a JSON object"}),
            ));
        };
        if let Some(unknown) = map.keys().find(|k| !allowed.contains(&k.as_str())) {
            return Err(json_response(
                StatusCode::BAD_REQUEST,
                &json!({"error": "validation", "field": unknown, "reason": "unknown field", "allowed": allowed}),
            ));
        }
        Ok(Body(map))
    }

    fn opt_string(&self, field: &str) -> Result<Option<String>, WebResponse> {
        match self.0.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(invalid(field, "must be a string")),
        }
    }

    fn string(&self, field: &str) -> Result<String, WebResponse> {
        self.opt_string(field)?
            .ok_or_else(|| invalid(field, "is required"))
    }

    fn opt_int(&self, field: &str) -> Result<Option<i64>, WebResponse> {
        match self.0.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => v
                .as_i64()
                .map(Some)
                .ok_or_else(|| invalid(field, "must be a whole number")),
        }
    }

    fn int(&self, field: &str) -> Result<i64, WebResponse> {
        self.opt_int(field)?
            .ok_or_else(|| invalid(field, "is required"))
    }

    /// The id part of a handle of `kind` in the body (`cus_...` for a customer).
    fn opt_handle(&self, field: &str, kind: Kind) -> Result<Option<String>, WebResponse> {
        match self.opt_string(field)? {
            None => Ok(None),
            Some(h) => id_of(&h, kind).map(Some).ok_or_else(|| {
                invalid(
                    field,
                    &format!("must be a {} handle ({}_...)", kind.noun(), kind.prefix()),
                )
            }),
        }
    }

    /// The reason a create is a deliberate duplicate: `separate: true` needs a `reason`, as
    /// the tools ask (`None`: not separate).
    fn separate_reason(&self) -> Result<Option<String>, WebResponse> {
        let separate = match self.0.get("separate") {
            None | Some(Value::Null) | Some(Value::Bool(false)) => false,
            Some(Value::Bool(true)) => true,
            Some(_) => return Err(invalid("separate", "must be true or false")),
        };
        let reason = self.opt_string("reason")?.filter(|r| !r.trim().is_empty());
        match (separate, reason) {
            (true, None) => Err(invalid("reason", "`separate` needs a `reason`")),
            (true, reason) => Ok(reason),
            (false, None) => Ok(None),
            // Refused rather than ignored, as over MCP: the caller may have meant a duplicate.
            (false, Some(_)) => Err(invalid(
                "reason",
                "is read only with `separate: true`; leave it out, or send `separate: true` with it",
            )),
        }
    }

    fn handle(&self, field: &str, kind: Kind) -> Result<String, WebResponse> {
        self.opt_handle(field, kind)?
            .ok_or_else(|| invalid(field, "is required"))
    }
}

/// The id part of `handle` if it is a handle of `kind`.
fn id_of(handle: &str, kind: Kind) -> Option<String> {
    handle
        .strip_prefix(kind.prefix())?
        .strip_prefix('_')
        .filter(|id| !id.is_empty() && id.chars().all(|c| c.is_ascii_alphanumeric()))
        .map(str::to_owned)
}

/// The id of a handle in the path; another kind's or a malformed handle is not found, as on
/// the record pages.
fn path_id(handle: &str, kind: Kind) -> Result<String, WebResponse> {
    id_of(handle, kind).ok_or_else(|| {
        error(booking::BookingError::NotFound {
            kind: kind.noun(),
            id: handle.to_owned(),
        })
    })
}

/// Commits a planned change with its audit row (`api.<tool name>`), in one transaction.
async fn commit<T>(
    web: &BookingApi<'_>,
    actor: &booking::Actor,
    tool: &str,
    change: booking::Change<T>,
) -> Result<T, WebResponse> {
    let audit = identity::AuditEntry {
        tenant: actor.tenant.clone(),
        actor: actor.member.clone(),
        channel: identity::Channel::Api,
        action: format!("api.{tool}"),
        outcome: "ok".into(),
        approval: None,
        ids: change.ids.clone(),
        reason: None,
        at: identity::now_rfc3339(),
    };
    change
        .commit(web.store.as_ref(), vec![audit.op()])
        .await
        .map_err(error)
}

pub(crate) async fn handle(
    web: &BookingApi<'_>,
    parts: &Parts,
    path: &str,
    body: &[u8],
) -> WebResponse {
    let (actor, token) = match actor(web, parts).await {
        Ok(a) => a,
        Err(r) => return r,
    };
    let segments: Vec<&str> = path
        .trim_start_matches("/api/")
        .trim_end_matches('/')
        .split('/')
        .collect();
    let method = parts.method.as_str();
    let class = class_of(method, &segments);
    if let Err(refused) = admit(web, (&actor.tenant, &token), class).await {
        return refused;
    }
    let answer = match segments.split_first() {
        Some((&"customers", rest)) => {
            let query = crate::form::parse(parts.uri.query().unwrap_or_default().as_bytes());
            let request = customers::Request {
                method,
                rest,
                query: &query,
                body,
            };
            customers::route(web, &actor, request).await
        }
        Some((&"bookings", rest)) => bookings::route(web, &actor, method, rest, body).await,
        Some((&"technicians", rest)) => {
            bookings::technicians(web, &actor, method, rest, body).await
        }
        Some((&"quotes", rest)) => quotes::route(web, &actor, method, rest, body).await,
        _ => Err(no_route()),
    };
    answer.unwrap_or_else(|e| e)
}
