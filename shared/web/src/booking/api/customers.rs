//! `/api/customers`: list, create (`create_customer`), change (`update_customer`) and delete
//! (`delete_customer`).

use booking::ids::Kind;
use http::StatusCode;
use serde_json::{Value, json};

use super::{Answer, Body, commit, error, no_route, path_id};
use crate::booking::BookingApi;
use crate::json_response;

pub(crate) fn customer_json(c: &booking::Customer) -> Value {
    json!({"customer": c.handle(), "version": c.version, "name": c.name, "email": c.email, "phone": c.phone, "address": c.address})
}

/// One request to `/api/customers`.
pub(super) struct Request<'a> {
    pub(super) method: &'a str,
    /// The path after `/api/customers`.
    pub(super) rest: &'a [&'a str],
    /// The query string's fields (`query`: what to search for).
    pub(super) query: &'a std::collections::BTreeMap<String, String>,
    pub(super) body: &'a [u8],
}

pub(super) async fn route(
    web: &BookingApi<'_>,
    actor: &booking::Actor,
    request: Request<'_>,
) -> Answer {
    let customers = &web.customers;
    let Request {
        method,
        rest,
        query,
        body,
    } = request;
    match (method, rest) {
        ("GET", []) => {
            let search = query.get("query").map_or("", String::as_str);
            let list = customers.find(actor, search, 50).await.map_err(error)?;
            Ok(json_response(
                StatusCode::OK,
                &json!({"customers": list.iter().map(customer_json).collect::<Vec<_>>()}),
            ))
        }
        ("POST", []) => {
            let b = Body::parse(
                body,
                &["name", "email", "phone", "address", "separate", "reason"],
            )?;
            let reason = b.separate_reason()?;
            let new = booking::NewCustomer {
                name: b.opt_string("name")?.unwrap_or_default(),
                email: b.opt_string("email")?.unwrap_or_default(),
                phone: b.opt_string("phone")?,
                address: b.opt_string("address")?,
                notes: None,
            };
            let change = customers
                .create(actor, new, reason.as_deref())
                .map_err(error)?;
            let c = commit(web, actor, "create_customer", change).await?;
            Ok(json_response(StatusCode::CREATED, &customer_json(&c)))
        }
        ("PATCH", [handle]) => {
            let id = path_id(handle, Kind::Customer)?;
            let b = Body::parse(body, &["version", "name", "email", "phone", "address"])?;
            let patch = booking::CustomerPatch {
                name: b.opt_string("name")?,
                email: b.opt_string("email")?,
                phone: b.opt_string("phone")?,
                address: b.opt_string("address")?,
            };
            let change = customers
                .update(actor, &id, &b.string("version")?, patch)
                .await
                .map_err(error)?;
            let c = commit(web, actor, "update_customer", change).await?;
            Ok(json_response(StatusCode::OK, &customer_json(&c)))
        }
        ("DELETE", [handle]) => {
            let id = path_id(handle, Kind::Customer)?;
            Body::parse(body, &[])?;
            // A person's token with records:delete deletes at once; an agent's delete_customer
            // only prepares and waits for confirm_action.
            let change = customers.delete(actor, &id).await.map_err(error)?;
            let c = commit(web, actor, "delete_customer", change).await?;
            Ok(json_response(
                StatusCode::OK,
                &json!({"deleted": customer_json(&c)}),
            ))
        }
        _ => Err(no_route()),
    }
}
