//! The booking product's JSON API under `/api` (ADR 49). The platform authenticates the product
//! API token (`gha_`) and admits the call with the effect class of the tool each route names in
//! [`ROUTES`]; the route calls the same booking service function as that tool, with the token's
//! member as the actor and their live rights, and commits the planned change with the call's
//! audit row (channel `api`). The API is the product's own adapter: a person's token, so actions that a
//! tool only prepares (notify, wake, alerting, delete) run at once for a member holding the
//! right; sending a quote binds a price and is never done here (see `quotes`).
//!
//! Answers: 2xx with the record; 400 `{"error": "validation", "field", "reason"}` for a wrong
//! input (the service's reason, the same the tools report), 403 for a missing right, 404 for an
//! unknown record, 409 for a duplicate or a stale version, 422 when a business rule refuses.

mod bookings;
mod customers;
mod quotes;

use std::sync::Arc;

use booking::ids::Kind;
use http::StatusCode;
use serde_json::{Map, Value, json};
use web::api::answer as json_response;
use web::{ApiCall, ApiRoute, WebResponse};

/// Each route: its method, its path after `/api/`, and the tool whose work it does (and whose
/// effect class it takes).
pub(crate) const ROUTES: &[ApiRoute] = &[
    route("GET", &["customers"], "find_customers"),
    route("POST", &["customers"], "create_customer"),
    route("PATCH", &["customers", "{handle}"], "update_customer"),
    route("DELETE", &["customers", "{handle}"], "delete_customer"),
    route("POST", &["bookings"], "create_booking"),
    route("POST", &["bookings", "cancellations"], "cancel_bookings"),
    route("PATCH", &["bookings", "{handle}"], "update_booking"),
    route("DELETE", &["bookings", "{handle}"], "delete_booking"),
    route(
        "POST",
        &["bookings", "{handle}", "notes"],
        "add_booking_note",
    ),
    route(
        "POST",
        &["bookings", "{handle}", "confirmation"],
        "send_booking_confirmation",
    ),
    route(
        "POST",
        &["bookings", "{handle}", "cancellation"],
        "cancel_booking",
    ),
    route(
        "POST",
        &["bookings", "{handle}", "reschedule"],
        "reschedule_booking",
    ),
    route(
        "POST",
        &["bookings", "{handle}", "mute"],
        "mute_booking_alerts",
    ),
    route(
        "POST",
        &["technicians", "{handle}", "pages"],
        "page_technician",
    ),
    route("POST", &["quotes"], "create_quote"),
    route("PATCH", &["quotes", "{handle}"], "update_quote"),
    route("POST", &["quotes", "{handle}", "send"], "send_quote"),
];

const fn route(
    method: &'static str,
    path: &'static [&'static str],
    tool: &'static str,
) -> ApiRoute {
    ApiRoute { method, path, tool }
}

/// The booking product's JSON API: the services, and the store their changes are committed
/// to.
#[derive(Debug, Clone)]
pub(crate) struct BookingApi {
    pub(crate) store: Arc<dyn store::Store>,
    pub(crate) services: crate::Services,
}

impl web::ProductApi for BookingApi {
    fn routes(&self) -> &'static [ApiRoute] {
        ROUTES
    }

    fn handle<'a>(&'a self, call: ApiCall<'a>) -> futures_util::future::BoxFuture<'a, WebResponse> {
        Box::pin(handle(self, call))
    }
}

/// One admitted call: the services, the token's member as the actor, and the call.
pub(crate) struct Route<'a> {
    pub(crate) api: &'a BookingApi,
    pub(crate) services: &'a crate::Services,
    pub(crate) actor: booking::Actor,
    pub(crate) call: ApiCall<'a>,
}

impl Route<'_> {
    /// The handle in the route's path (its second segment).
    fn handle(&self) -> &str {
        self.call.route.get(1).copied().unwrap_or_default()
    }

    /// The body, with only the fields the route takes.
    fn body(&self, allowed: &[&str]) -> Result<Body, WebResponse> {
        Body::parse(self.call.body, allowed)
    }

    /// The call's time.
    fn now(&self) -> chrono::DateTime<chrono::Utc> {
        self.call.now
    }

    /// Commits a planned change with the call's audit row, in one transaction.
    async fn commit<T>(&self, change: booking::Change<T>) -> Result<T, WebResponse> {
        let audit = self.call.audit(change.ids.clone());
        change
            .commit(self.api.store.as_ref(), vec![audit])
            .await
            .map_err(error)
    }
}

/// Answers an admitted call through the route of its tool.
pub(crate) async fn handle(api: &BookingApi, call: ApiCall<'_>) -> WebResponse {
    let actor = booking::Actor {
        tenant: call.caller.tenant.clone(),
        member: call.caller.member.clone(),
        rights: call.caller.rights.clone(),
    };
    let r = Route {
        api,
        services: &api.services,
        actor,
        call,
    };
    let answer = match r.call.tool {
        "find_customers" => customers::find(&r).await,
        "create_customer" => customers::create(&r).await,
        "update_customer" => customers::update(&r).await,
        "delete_customer" => customers::delete(&r).await,
        "create_booking" => bookings::create(&r).await,
        "cancel_bookings" => bookings::cancel_many(&r).await,
        "update_booking" => bookings::update(&r).await,
        "delete_booking" => bookings::delete(&r).await,
        "add_booking_note" => bookings::add_note(&r).await,
        "send_booking_confirmation" => bookings::confirm(&r).await,
        "cancel_booking" => bookings::cancel(&r).await,
        "reschedule_booking" => bookings::reschedule(&r).await,
        "mute_booking_alerts" => bookings::mute(&r).await,
        "page_technician" => bookings::page(&r).await,
        "create_quote" => quotes::create(&r).await,
        "update_quote" => quotes::update(&r).await,
        "send_quote" => quotes::send(&r).await,
        _ => Err(web::api::no_such_route()),
    };
    answer.unwrap_or_else(|e| e)
}

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

/// A JSON object body, with only the fields a route takes (like the tools, which refuse
/// unknown arguments with the allowed list).
pub(crate) struct Body(pub(crate) Map<String, Value>);

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
