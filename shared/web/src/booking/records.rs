//! Read-only pages for the records that tool results link to (`link` in every presenter):
//! `/app/customers/{handle}`, `/app/technicians/{handle}`, `/app/bookings/{handle}` and
//! `/app/quotes/{handle}`. They read through the same services as the tools, with the signed-in
//! member's live rights, so a page shows exactly what that person may see, and another
//! tenant's handle is not found.

use accounts::Session;
use booking::ids::Kind;
use http::StatusCode;

use crate::html::{html, message};
use crate::session::rights;
use crate::{Web, WebResponse};

/// Label and value rows of one record.
type Rows = Vec<(&'static str, String)>;

pub(crate) async fn page(web: &Web, s: &Session, path: &str) -> WebResponse {
    let Some((kind, handle)) = path
        .strip_prefix("/app/")
        .and_then(|rest| rest.split_once('/'))
    else {
        return not_found();
    };
    let kinds = [
        ("customers", Kind::Customer),
        ("technicians", Kind::Technician),
        ("bookings", Kind::Booking),
        ("quotes", Kind::Quote),
    ];
    // The id part of a handle of the page's kind (`cus_...` on /customers/).
    let Some(id) = kinds
        .iter()
        .find(|(name, _)| *name == kind)
        .and_then(|(_, k)| handle.strip_prefix(k.prefix())?.strip_prefix('_'))
        .filter(|id| !id.is_empty() && id.chars().all(|c| c.is_ascii_alphanumeric()))
    else {
        return not_found();
    };
    let actor = booking::Actor {
        tenant: s.tenant.clone(),
        member: s.member.clone(),
        rights: rights(web, s).await,
    };
    let store = web.store.clone();
    let found: Result<(&str, Rows), booking::BookingError> = match kind {
        "customers" => booking::Customers::new(store)
            .get(&actor, id)
            .await
            .map(|c| ("Customer", customer(&c))),
        "technicians" => booking::Technicians::new(store)
            .get(&actor, id)
            .await
            .map(|t| ("Technician", technician(&t))),
        "bookings" => booking::Bookings::new(store)
            .get(&actor, id)
            .await
            .map(|b| ("Booking", booking_rows(&b))),
        "quotes" => booking::Quotes::new(store)
            .get(&actor, id)
            .await
            .map(|q| ("Quote", quote(&q))),
        _ => return not_found(),
    };
    match found {
        Ok((title, rows)) => html(
            StatusCode::OK,
            &format!("{title} {handle}"),
            maud::html! { div.scroll { table {
                @for (label, value) in &rows { tr { th { (label) } td { (value) } } }
            } } },
        ),
        Err(booking::BookingError::Forbidden { right }) => html(
            StatusCode::FORBIDDEN,
            "Not allowed",
            maud::html! { p { "Seeing this needs the right " code { (right) } "." } },
        ),
        Err(_) => not_found(),
    }
}

fn not_found() -> WebResponse {
    message(
        StatusCode::NOT_FOUND,
        "Not found",
        "There is no such record in this workspace.",
    )
}

fn customer(c: &booking::Customer) -> Rows {
    vec![
        ("Name", c.name.clone()),
        ("Email", c.email.clone()),
        ("Phone", c.phone.clone().unwrap_or_default()),
        ("Address", c.address.clone().unwrap_or_default()),
        (
            "Notes (written by the customer)",
            c.notes
                .as_ref()
                .map(|n| n.untrusted_text.clone())
                .unwrap_or_default(),
        ),
    ]
}

fn technician(t: &booking::Technician) -> Rows {
    vec![
        ("Name", t.name.clone()),
        ("Skills", t.skills.join(", ")),
        ("Working hours", format!("{} ({})", t.working_hours, t.zone)),
        ("On call", if t.on_call { "yes" } else { "no" }.into()),
    ]
}

fn booking_rows(b: &booking::Booking) -> Rows {
    let local = |t: chrono::DateTime<chrono::Utc>| {
        t.with_timezone(&b.zone)
            .format("%a %Y-%m-%d %H:%M %Z")
            .to_string()
    };
    vec![
        ("Service", b.service.clone()),
        ("Status", b.status.as_str().into()),
        ("Start", local(b.start)),
        ("End", local(b.end)),
        ("Zone", b.zone.name().into()),
        ("Customer", Kind::Customer.handle(&b.customer)),
        ("Technician", Kind::Technician.handle(&b.technician)),
        ("Notes", b.notes.join("\n")),
    ]
}

fn quote(q: &booking::Quote) -> Rows {
    let mut rows: Rows = vec![
        ("Status", q.status.clone()),
        ("Customer", Kind::Customer.handle(&q.customer)),
    ];
    for (line, total) in q.lines.iter().zip(&q.totals.line_totals) {
        rows.push((
            "Line",
            format!(
                "{} × {} at {} = {total}",
                line.quantity, line.description, line.unit_price
            ),
        ));
    }
    rows.push(("Net", q.totals.net.to_string()));
    rows.push(("Tax", q.totals.tax.to_string()));
    rows.push(("Total", q.totals.gross.to_string()));
    rows
}
