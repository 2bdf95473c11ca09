//! `/api/customers`: list, create (`create_customer`), change (`update_customer`) and delete
//! (`delete_customer`).

use booking::ids::Kind;
use http::StatusCode;
use serde_json::{Value, json};

use super::{Answer, Body, commit, error, no_route, path_id};
use crate::{Web, json_response};

pub(crate) fn customer_json(c: &booking::Customer) -> Value {
    json!({"customer": c.handle(), "version": c.version, "name": c.name, "email": c.email, "phone": c.phone, "address": c.address})
}

pub(super) async fn route(
    web: &Web,
    actor: &booking::Actor,
    method: &str,
    rest: &[&str],
    body: &[u8],
) -> Answer {
    let customers = &web.customers;
    match (method, rest) {
        ("GET", []) => {
            let list = customers.find(actor, "", 50).await.map_err(error)?;
            Ok(json_response(
                StatusCode::OK,
                &json!({"customers": list.iter().map(customer_json).collect::<Vec<_>>()}),
            ))
        }
        ("POST", []) => {
            let b = Body::parse(body, &["name", "email", "phone", "address"])?;
            let new = booking::NewCustomer {
                name: b.opt_string("name")?.unwrap_or_default(),
                email: b.opt_string("email")?.unwrap_or_default(),
                phone: b.opt_string("phone")?,
                address: b.opt_string("address")?,
                notes: None,
            };
            let change = customers.create(actor, new, None).map_err(error)?;
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
