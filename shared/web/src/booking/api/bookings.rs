//! `/api/bookings` and `/api/technicians`: drafts (`create_booking`, `update_booking`), notes
//! (`add_booking_note`), confirmation, cancellation and rescheduling with the customer's message
//! (`send_booking_confirmation`, `cancel_booking`, `cancel_bookings`, `reschedule_booking`),
//! muting reminders (`mute_booking_alerts`), deletion (`delete_booking`) and paging a technician
//! (`page_technician`).
//!
//! The tools only prepare the notify, wake, alerting and delete actions and wait for a
//! confirmation; here a person's token acts, so the action runs at once for a member holding
//! the right, with the message the server writes (`booking::messages`), as the tool's would.

use booking::ids::Kind;
use booking::{Actor, Booking, When};
use http::StatusCode;
use serde_json::{Value, json};

use super::{Answer, Body, commit, error, no_route, path_id};
use crate::booking::BookingApi;
use crate::json_response;

fn booking_json(b: &Booking) -> Value {
    json!({
        "booking": b.handle(),
        "version": b.version,
        "status": b.status.as_str(),
        "service": b.service,
        "customer": Kind::Customer.handle(&b.customer),
        "technician": Kind::Technician.handle(&b.technician),
        "start": b.start.to_rfc3339(),
        "end": b.end.to_rfc3339(),
        "zone": b.zone.name(),
        "notes": b.notes,
    })
}

fn ok(status: StatusCode, body: &Value) -> Answer {
    Ok(json_response(status, body))
}

/// What every booking route gets: who calls, the body, and the time it started.
struct Route<'a> {
    web: &'a BookingApi<'a>,
    actor: &'a Actor,
    body: &'a [u8],
    now: chrono::DateTime<chrono::Utc>,
}

pub(super) async fn route(
    web: &BookingApi<'_>,
    actor: &Actor,
    method: &str,
    rest: &[&str],
    body: &[u8],
) -> Answer {
    let r = Route {
        web,
        actor,
        body,
        now: chrono::DateTime::from_timestamp_micros(web.clock.now_micros()).unwrap_or_default(),
    };
    match (method, rest) {
        ("POST", []) => create(&r).await,
        ("POST", ["cancellations"]) => cancel_many(&r).await,
        ("PATCH", [handle]) => update(&r, handle).await,
        ("DELETE", [handle]) => delete(&r, handle).await,
        ("POST", [handle, "notes"]) => add_note(&r, handle).await,
        ("POST", [handle, "confirmation"]) => confirm(&r, handle).await,
        ("POST", [handle, "cancellation"]) => cancel(&r, handle).await,
        ("POST", [handle, "reschedule"]) => reschedule(&r, handle).await,
        ("POST", [handle, "mute"]) => mute(&r, handle).await,
        _ => Err(no_route()),
    }
}

/// `POST /api/bookings`: `create_booking`.
async fn create(r: &Route<'_>) -> Answer {
    let (web, actor, body, now) = (r.web, r.actor, r.body, r.now);
    let bookings = &web.bookings;
    let b = Body::parse(
        body,
        &[
            "customer",
            "technician",
            "service",
            "start",
            "zone",
            "duration_minutes",
            "separate",
            "reason",
        ],
    )?;
    let reason = b.separate_reason()?;
    let new = booking::NewBooking {
        customer: b.handle("customer", Kind::Customer)?,
        technician: b.handle("technician", Kind::Technician)?,
        service: b.string("service")?,
        start: When::from_input(&b.string("start")?, &b.string("zone")?),
        duration_minutes: b.int("duration_minutes")?,
    };
    let change = bookings
        .create_draft(actor, new, reason.as_deref(), now)
        .await
        .map_err(error)?;
    let created = commit(web, actor, "create_booking", change).await?;
    ok(StatusCode::CREATED, &booking_json(&created))
}

/// `POST /api/bookings/cancellations`: `cancel_bookings`.
async fn cancel_many(r: &Route<'_>) -> Answer {
    let (web, actor, body) = (r.web, r.actor, r.body);
    let b = Body::parse(body, &["customer", "technician", "expected_count"])?;
    let expected = u32::try_from(b.int("expected_count")?).unwrap_or(0);
    let filter = (
        b.opt_handle("customer", Kind::Customer)?,
        b.opt_handle("technician", Kind::Technician)?,
    );
    let changes = web
        .use_cases()
        .cancel_bookings(actor, filter, Some(expected), r.now)
        .await
        .map_err(error)?;
    // One transaction: a batch is never half done.
    let change = booking::Change::merge(changes);
    let notified = change.notified.clone();
    let cancelled = commit(web, actor, "cancel_bookings", change).await?;
    ok(
        StatusCode::OK,
        &json!({"bookings": cancelled.iter().map(booking_json).collect::<Vec<_>>(), "notified": notified}),
    )
}

/// `PATCH /api/bookings/{handle}`: `update_booking`.
async fn update(r: &Route<'_>, handle: &str) -> Answer {
    let (web, actor, body, now) = (r.web, r.actor, r.body, r.now);
    let bookings = &web.bookings;
    let id = path_id(handle, Kind::Booking)?;
    let b = Body::parse(
        body,
        &["version", "service", "start", "zone", "duration_minutes"],
    )?;
    let start = When::from_optional(
        b.opt_string("start")?.as_deref(),
        b.opt_string("zone")?.as_deref(),
    )
    .map_err(error)?;
    let change = bookings
        .update_draft(
            actor,
            &id,
            &b.string("version")?,
            b.opt_string("service")?,
            start,
            b.opt_int("duration_minutes")?,
            now,
        )
        .await
        .map_err(error)?;
    let updated = commit(web, actor, "update_booking", change).await?;
    ok(StatusCode::OK, &booking_json(&updated))
}

/// `DELETE /api/bookings/{handle}`: `delete_booking`.
async fn delete(r: &Route<'_>, handle: &str) -> Answer {
    let (web, actor, body) = (r.web, r.actor, r.body);
    let bookings = &web.bookings;
    let id = path_id(handle, Kind::Booking)?;
    let b = Body::parse(body, &["version"])?;
    let change = bookings
        .delete(actor, &id, &b.string("version")?)
        .await
        .map_err(error)?;
    let deleted = commit(web, actor, "delete_booking", change).await?;
    ok(StatusCode::OK, &json!({"deleted": booking_json(&deleted)}))
}

/// `POST /api/bookings/{handle}/notes`: `add_booking_note`.
async fn add_note(r: &Route<'_>, handle: &str) -> Answer {
    let (web, actor, body) = (r.web, r.actor, r.body);
    let bookings = &web.bookings;
    let id = path_id(handle, Kind::Booking)?;
    let b = Body::parse(body, &["note"])?;
    let change = bookings
        .add_note(actor, &id, &b.string("note")?)
        .await
        .map_err(error)?;
    let noted = commit(web, actor, "add_booking_note", change).await?;
    ok(StatusCode::CREATED, &booking_json(&noted))
}

/// `POST /api/bookings/{handle}/confirmation`: `send_booking_confirmation`.
async fn confirm(r: &Route<'_>, handle: &str) -> Answer {
    let (web, actor, body, now) = (r.web, r.actor, r.body, r.now);
    let id = path_id(handle, Kind::Booking)?;
    let b = Body::parse(body, &["version"])?;
    let change = web
        .use_cases()
        .send_booking_confirmation(actor, (&id, &b.string("version")?), now)
        .await
        .map_err(error)?;
    let notified = change.notified.clone();
    let confirmed = commit(web, actor, "send_booking_confirmation", change).await?;
    ok(
        StatusCode::OK,
        &json!({"booking": booking_json(&confirmed), "notified": notified}),
    )
}

/// `POST /api/bookings/{handle}/cancellation`: `cancel_booking`.
async fn cancel(r: &Route<'_>, handle: &str) -> Answer {
    let (web, actor, body) = (r.web, r.actor, r.body);
    let id = path_id(handle, Kind::Booking)?;
    let b = Body::parse(body, &["version"])?;
    let change = web
        .use_cases()
        .cancel_booking(actor, (&id, &b.string("version")?), r.now)
        .await
        .map_err(error)?;
    let notified = change.notified.clone();
    let cancelled = commit(web, actor, "cancel_booking", change).await?;
    ok(
        StatusCode::OK,
        &json!({"booking": booking_json(&cancelled), "notified": notified}),
    )
}

/// `POST /api/bookings/{handle}/reschedule`: `reschedule_booking`.
async fn reschedule(r: &Route<'_>, handle: &str) -> Answer {
    let (web, actor, body, now) = (r.web, r.actor, r.body, r.now);
    let id = path_id(handle, Kind::Booking)?;
    let b = Body::parse(body, &["version", "start", "zone", "duration_minutes"])?;
    let moved_to = (
        When::from_input(&b.string("start")?, &b.string("zone")?),
        b.opt_int("duration_minutes")?,
    );
    let change = web
        .use_cases()
        .reschedule_booking(actor, (&id, &b.string("version")?), moved_to, now)
        .await
        .map_err(error)?;
    let notified = change.notified.clone();
    let moved = commit(web, actor, "reschedule_booking", change).await?;
    ok(
        StatusCode::OK,
        &json!({"booking": booking_json(&moved), "notified": notified}),
    )
}

/// `POST /api/bookings/{handle}/mute`: `mute_booking_alerts`.
async fn mute(r: &Route<'_>, handle: &str) -> Answer {
    let (web, actor, body, now) = (r.web, r.actor, r.body, r.now);
    let id = path_id(handle, Kind::Booking)?;
    let b = Body::parse(body, &["hours"])?;
    let change = web
        .alerts
        .mute(actor, &id, b.int("hours")?, now)
        .await
        .map_err(error)?;
    let rule = commit(web, actor, "mute_booking_alerts", change).await?;
    ok(
        StatusCode::OK,
        &json!({"booking": Kind::Booking.handle(&id), "muted_until": rule.muted_until.map(|t| t.to_rfc3339())}),
    )
}

/// `POST /api/technicians/{handle}/pages`: `page_technician`.
pub(super) async fn technicians(
    web: &BookingApi<'_>,
    actor: &Actor,
    method: &str,
    rest: &[&str],
    body: &[u8],
) -> Answer {
    let ("POST", [handle, "pages"]) = (method, rest) else {
        return Err(no_route());
    };
    let id = path_id(handle, Kind::Technician)?;
    let b = Body::parse(body, &["message"])?;
    let change = web
        .technicians
        .page(actor, &id, &b.string("message")?)
        .await
        .map_err(error)?;
    let notified = change.notified.clone();
    let paged = commit(web, actor, "page_technician", change).await?;
    ok(
        StatusCode::CREATED,
        &json!({"technician": paged.handle(), "notified": notified}),
    )
}
