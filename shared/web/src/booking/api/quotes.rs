//! `/api/quotes`: draft quotes (`create_quote`, `update_quote`) and `POST .../send`
//! (`send_quote`), which the API checks but never performs.
//!
//! Sending a quote binds a price to a customer. For agents it is approved only on the
//! product's approval page (`approval_in_product`); an API token is a bearer credential that
//! scripts hold, so the API does not send quotes either. It runs the same service check as the
//! tool, so a wrong input is refused for the same reason, and a valid one is answered 403
//! `approval_required` with nothing written.

use booking::ids::Kind;
use booking::{Actor, LineInput, Quote};
use http::StatusCode;
use serde_json::{Value, json};

use super::{Answer, Body, commit, error, invalid, no_route, path_id};
use crate::booking::BookingApi;
use crate::{WebResponse, json_response};

fn quote_json(q: &Quote) -> Value {
    json!({
        "quote": q.handle(),
        "version": q.version,
        "status": q.status,
        "customer": Kind::Customer.handle(&q.customer),
        "gross": q.totals.gross.to_string(),
    })
}

/// The `lines` of a body: objects with decimal strings, as the tools take them.
fn lines(b: &Body) -> Result<Vec<LineInput>, WebResponse> {
    let Some(Value::Array(items)) = b.0.get("lines") else {
        return Err(invalid("lines", "is required: a list of lines"));
    };
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        let line = Body::parse(
            item.to_string().as_bytes(),
            &["description", "quantity", "unit_price"],
        )?;
        out.push(LineInput {
            description: line.string("description")?,
            quantity: line.string("quantity")?,
            unit_price: line.string("unit_price")?,
        });
    }
    Ok(out)
}

pub(super) async fn route(
    web: &BookingApi<'_>,
    actor: &Actor,
    method: &str,
    rest: &[&str],
    body: &[u8],
) -> Answer {
    let quotes = &web.quotes;
    match (method, rest) {
        ("POST", []) => {
            let b = Body::parse(body, &["customer", "lines", "separate", "reason"])?;
            let customer = b.handle("customer", Kind::Customer)?;
            let reason = b.separate_reason()?;
            let change = quotes
                .create(actor, &customer, &lines(&b)?, reason.as_deref())
                .await
                .map_err(error)?;
            let q = commit(web, actor, "create_quote", change).await?;
            Ok(json_response(StatusCode::CREATED, &quote_json(&q)))
        }
        ("PATCH", [handle]) => {
            let id = path_id(handle, Kind::Quote)?;
            let b = Body::parse(body, &["version", "lines"])?;
            let change = quotes
                .update(actor, &id, &b.string("version")?, &lines(&b)?)
                .await
                .map_err(error)?;
            let q = commit(web, actor, "update_quote", change).await?;
            Ok(json_response(StatusCode::OK, &quote_json(&q)))
        }
        ("POST", [handle, "send"]) => {
            let id = path_id(handle, Kind::Quote)?;
            let b = Body::parse(body, &["version"])?;
            // The same use case as send_quote, for its checks; the planned change is dropped,
            // never committed.
            let (checked, _) = web
                .use_cases()
                .send_quote(actor, (&id, &b.string("version")?))
                .await
                .map_err(error)?;
            Ok(json_response(
                StatusCode::FORBIDDEN,
                &json!({
                    "error": "approval_required",
                    "reason": "sending a quote binds a price; the API does not send quotes: a person approves it on the product's approval page (the approval_url send_quote returns)",
                    "quote": checked.value.handle(),
                }),
            ))
        }
        _ => Err(no_route()),
    }
}
