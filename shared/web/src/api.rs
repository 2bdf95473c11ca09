//! The product's JSON API: `/api/customers` over the same customer service as the MCP tools,
//! authenticated by product API tokens.

use http::request::Parts;
use http::{StatusCode, header};
use identity::Directory as _;
use serde_json::{Value, json};

use crate::{Web, WebResponse, json_response};

/// The API's answer for a service error: the same cause the tools report.
fn error(e: booking::BookingError) -> WebResponse {
    use booking::BookingError as E;
    let (status, body) = match &e {
        E::NotFound { kind, id } => (
            StatusCode::NOT_FOUND,
            json!({"error": "not_found", "kind": kind, "id": id}),
        ),
        E::Invalid { field, reason } => (
            StatusCode::BAD_REQUEST,
            json!({"error": "validation", "field": field, "reason": reason}),
        ),
        E::Duplicate { existing, .. } => (
            StatusCode::CONFLICT,
            json!({"error": "duplicate", "existing": existing}),
        ),
        E::Stale { .. } => (StatusCode::CONFLICT, json!({"error": "conflict"})),
        E::Forbidden { right } => (
            StatusCode::FORBIDDEN,
            json!({"error": "forbidden", "right": right}),
        ),
        E::Time { field, error } => (
            StatusCode::BAD_REQUEST,
            json!({"error": "validation", "field": field, "reason": error.to_string()}),
        ),
        E::Money { field, error } => (
            StatusCode::BAD_REQUEST,
            json!({"error": "validation", "field": field, "reason": error.to_string()}),
        ),
        E::Rejected(reason) => (
            StatusCode::UNPROCESSABLE_ENTITY,
            json!({"error": "rejected", "reason": reason}),
        ),
        E::Store(_) => (
            StatusCode::SERVICE_UNAVAILABLE,
            json!({"error": "unavailable"}),
        ),
    };
    json_response(status, &body)
}

async fn actor(web: &Web, parts: &Parts) -> Result<booking::Actor, WebResponse> {
    let unauthorized = |m: &str| json_response(StatusCode::UNAUTHORIZED, &json!({"error": m}));
    let bearer = parts
        .headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .ok_or_else(|| {
            unauthorized("a product API token is required (Authorization: Bearer gha_...)")
        })?;
    let Ok(Some((tenant, member))) =
        identity::product::api_token(web.store.as_ref(), bearer.trim()).await
    else {
        return Err(unauthorized("the product API token is unknown"));
    };
    let Ok(Some(m)) = web.directory.member(&tenant, &member).await else {
        return Err(unauthorized("the token's member no longer has access"));
    };
    if !m.active {
        return Err(unauthorized("the token's member no longer has access"));
    }
    Ok(booking::Actor {
        tenant,
        member,
        rights: m.rights,
    })
}

fn customer_json(c: &booking::Customer) -> Value {
    json!({"customer": c.handle(), "version": c.version, "name": c.name, "email": c.email, "phone": c.phone, "address": c.address})
}

pub(crate) async fn handle(web: &Web, parts: &Parts, path: &str, body: &[u8]) -> WebResponse {
    let actor = match actor(web, parts).await {
        Ok(a) => a,
        Err(r) => return r,
    };
    match (parts.method.as_str(), path) {
        ("GET", "/api/customers") => match web.customers.find(&actor, "", 50).await {
            Ok(list) => json_response(
                StatusCode::OK,
                &json!({"customers": list.iter().map(customer_json).collect::<Vec<_>>()}),
            ),
            Err(e) => error(e),
        },
        ("POST", "/api/customers") => {
            let Ok(input) = serde_json::from_slice::<Value>(body) else {
                return json_response(
                    StatusCode::BAD_REQUEST,
                    &json!({"error": "the body must be a JSON object"}),
                );
            };
            let allowed = ["name", "email", "phone", "address"];
            if let Some(unknown) = input
                .as_object()
                .and_then(|o| o.keys().find(|k| !allowed.contains(&k.as_str())))
            {
                return json_response(
                    StatusCode::BAD_REQUEST,
                    &json!({"error": "validation", "field": unknown, "reason": "unknown field", "allowed": allowed}),
                );
            }
            let s = |k: &str| input.get(k).and_then(Value::as_str).map(str::to_owned);
            let new = booking::NewCustomer {
                name: s("name").unwrap_or_default(),
                email: s("email").unwrap_or_default(),
                phone: s("phone"),
                address: s("address"),
                notes: None,
            };
            let change = match web.customers.create(&actor, new, None) {
                Ok(c) => c,
                Err(e) => return error(e),
            };
            let audit = identity::AuditEntry {
                tenant: actor.tenant.clone(),
                actor: actor.member.clone(),
                channel: identity::Channel::Api,
                action: "api.create_customer".into(),
                outcome: "ok".into(),
                ids: change.ids.clone(),
                at: identity::now_rfc3339(),
            };
            match change.commit(web.store.as_ref(), vec![audit.op()]).await {
                Ok(c) => json_response(StatusCode::CREATED, &customer_json(&c)),
                Err(e) => error(e),
            }
        }
        _ => json_response(
            StatusCode::NOT_FOUND,
            &json!({"error": "no such API route"}),
        ),
    }
}
