//! `/api/customers`: list (`find_customers`), create (`create_customer`), change
//! (`update_customer`) and delete (`delete_customer`).

use booking::ids::Kind;
use http::StatusCode;
use serde_json::{Value, json};

use super::{Answer, Route, error, json_response, path_id};

pub(crate) fn customer_json(c: &booking::Customer) -> Value {
    json!({"customer": c.handle(), "version": c.version, "name": c.name, "email": c.email, "phone": c.phone, "address": c.address})
}

/// `GET /api/customers?query=...`: searches; without a query it lists.
pub(super) async fn find(r: &Route<'_>) -> Answer {
    let search = r.call.query.get("query").map_or("", String::as_str);
    let list = r
        .services
        .customers
        .find(&r.actor, search, 50)
        .await
        .map_err(error)?;
    Ok(json_response(
        StatusCode::OK,
        &json!({"customers": list.iter().map(customer_json).collect::<Vec<_>>()}),
    ))
}

/// `POST /api/customers`.
pub(super) async fn create(r: &Route<'_>) -> Answer {
    let b = r.body(&["name", "email", "phone", "address", "separate", "reason"])?;
    let reason = b.separate_reason()?;
    let new = booking::NewCustomer {
        name: b.opt_string("name")?.unwrap_or_default(),
        email: b.opt_string("email")?.unwrap_or_default(),
        phone: b.opt_string("phone")?,
        address: b.opt_string("address")?,
        notes: None,
    };
    let change = r
        .services
        .customers
        .create(&r.actor, new, reason.as_deref())
        .map_err(error)?;
    let c = r.commit(change).await?;
    Ok(json_response(StatusCode::CREATED, &customer_json(&c)))
}

/// `PATCH /api/customers/{handle}`.
pub(super) async fn update(r: &Route<'_>) -> Answer {
    let id = booking::CustomerId::new(path_id(r.handle(), Kind::Customer)?);
    let b = r.body(&["version", "name", "email", "phone", "address"])?;
    let patch = booking::CustomerPatch {
        name: b.opt_string("name")?,
        email: b.opt_string("email")?,
        phone: b.opt_string("phone")?,
        address: b.opt_string("address")?,
    };
    let change = r
        .services
        .customers
        .update(&r.actor, &id, &b.string("version")?, patch)
        .await
        .map_err(error)?;
    let c = r.commit(change).await?;
    Ok(json_response(StatusCode::OK, &customer_json(&c)))
}

/// `DELETE /api/customers/{handle}`: a person's token with `records:delete` deletes at once;
/// an agent's `delete_customer` only prepares and waits for `confirm_action`.
pub(super) async fn delete(r: &Route<'_>) -> Answer {
    let id = booking::CustomerId::new(path_id(r.handle(), Kind::Customer)?);
    r.body(&[])?;
    let change = r
        .services
        .customers
        .delete(&r.actor, &id)
        .await
        .map_err(error)?;
    let c = r.commit(change).await?;
    Ok(json_response(
        StatusCode::OK,
        &json!({"deleted": customer_json(&c)}),
    ))
}
