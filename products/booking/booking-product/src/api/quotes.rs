//! `/api/quotes`: draft quotes (`create_quote`, `update_quote`) and `POST .../send`
//! (`send_quote`), which the API checks but never performs.
//!
//! Sending a quote binds a price to a customer. For agents it is approved only on the
//! product's approval page (`approval_in_product`); an API token is a bearer credential that
//! scripts hold, so the API does not send quotes either. It runs the same service check as the
//! tool, so a wrong input is refused for the same reason, and a valid one is answered 403
//! `approval_required` with nothing written.

use booking::ids::Kind;
use booking::{CustomerId, LineInput, Quote, QuoteId};
use http::StatusCode;
use serde_json::{Value, json};
use web::WebResponse;

use super::{Answer, Body, Route, error, invalid, json_response, path_id};

fn quote_json(q: &Quote) -> Value {
    json!({
        "quote": q.handle(),
        "version": q.version,
        "status": q.status,
        "customer": q.customer.handle(),
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

/// `POST /api/quotes`: `create_quote`.
pub(super) async fn create(r: &Route<'_>) -> Answer {
    let b = r.body(&["customer", "lines", "separate", "reason"])?;
    let customer = CustomerId::new(b.handle("customer", Kind::Customer)?);
    let reason = b.separate_reason()?;
    let change = r
        .services
        .quotes
        .create(&r.actor, &customer, &lines(&b)?, reason.as_deref())
        .await
        .map_err(error)?;
    let q = r.commit(change).await?;
    Ok(json_response(StatusCode::CREATED, &quote_json(&q)))
}

/// `PATCH /api/quotes/{handle}`: `update_quote`.
pub(super) async fn update(r: &Route<'_>) -> Answer {
    let id = QuoteId::new(path_id(r.handle(), Kind::Quote)?);
    let b = r.body(&["version", "lines"])?;
    let change = r
        .services
        .quotes
        .update(&r.actor, &id, &b.string("version")?, &lines(&b)?)
        .await
        .map_err(error)?;
    let q = r.commit(change).await?;
    Ok(json_response(StatusCode::OK, &quote_json(&q)))
}

/// `POST /api/quotes/{handle}/send`: checked as `send_quote` checks, never performed.
pub(super) async fn send(r: &Route<'_>) -> Answer {
    let id = QuoteId::new(path_id(r.handle(), Kind::Quote)?);
    let b = r.body(&["version"])?;
    // The same use case as send_quote, for its checks; the planned change is dropped, never
    // committed.
    let version = b.string("version")?;
    let expected = booking::Expected {
        id: &id,
        version: &version,
    };
    let (checked, _) = r
        .services
        .use_cases()
        .send_quote(&r.actor, expected)
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
