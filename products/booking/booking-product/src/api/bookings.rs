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
use booking::{Booking, BookingId, CustomerId, TechnicianId, When};
use http::StatusCode;
use serde_json::{Value, json};

use super::{Answer, Route, error, json_response, path_id};

fn booking_json(b: &Booking) -> Value {
    json!({
        "booking": b.handle(),
        "version": b.version,
        "status": b.status.as_str(),
        "service": b.service,
        "customer": b.customer.handle(),
        "technician": b.technician.handle(),
        "start": b.start.to_rfc3339(),
        "end": b.end.to_rfc3339(),
        "zone": b.zone.name(),
        "notes": b.notes,
    })
}

fn ok(status: StatusCode, body: &Value) -> Answer {
    Ok(json_response(status, body))
}

/// `POST /api/bookings`: `create_booking`.
pub(super) async fn create(r: &Route<'_>) -> Answer {
    let bookings = &r.services.bookings;
    let b = r.body(&[
        "customer",
        "technician",
        "service",
        "start",
        "zone",
        "duration_minutes",
        "separate",
        "reason",
    ])?;
    let reason = b.separate_reason()?;
    let new = booking::NewBooking {
        customer: CustomerId::new(b.handle("customer", Kind::Customer)?),
        technician: TechnicianId::new(b.handle("technician", Kind::Technician)?),
        service: b.string("service")?,
        start: When::from_input(&b.string("start")?, &b.string("zone")?),
        duration_minutes: b.int("duration_minutes")?,
    };
    let change = bookings
        .create_draft(&r.actor, new, reason.as_deref(), r.now())
        .await
        .map_err(error)?;
    let created = r.commit(change).await?;
    ok(StatusCode::CREATED, &booking_json(&created))
}

/// `POST /api/bookings/cancellations`: `cancel_bookings`.
pub(super) async fn cancel_many(r: &Route<'_>) -> Answer {
    let b = r.body(&["customer", "technician", "expected_count"])?;
    let expected = u32::try_from(b.int("expected_count")?).unwrap_or(0);
    let customer = b
        .opt_handle("customer", Kind::Customer)?
        .map(CustomerId::new);
    let technician = b
        .opt_handle("technician", Kind::Technician)?
        .map(TechnicianId::new);
    let changes = r
        .services
        .use_cases()
        .cancel_bookings(&r.actor, customer, technician, Some(expected), r.now())
        .await
        .map_err(error)?;
    // One transaction: a batch is never half done.
    let change = booking::Change::merge(changes);
    let notified = change.notified.clone();
    let cancelled = r.commit(change).await?;
    ok(
        StatusCode::OK,
        &json!({"bookings": cancelled.iter().map(booking_json).collect::<Vec<_>>(), "notified": notified}),
    )
}

/// `PATCH /api/bookings/{handle}`: `update_booking`.
pub(super) async fn update(r: &Route<'_>) -> Answer {
    let bookings = &r.services.bookings;
    let id = BookingId::new(path_id(r.handle(), Kind::Booking)?);
    let b = r.body(&["version", "service", "start", "zone", "duration_minutes"])?;
    let start = When::from_optional(
        b.opt_string("start")?.as_deref(),
        b.opt_string("zone")?.as_deref(),
    )
    .map_err(error)?;
    let change = bookings
        .update_draft(
            &r.actor,
            &id,
            &b.string("version")?,
            b.opt_string("service")?,
            start,
            b.opt_int("duration_minutes")?,
            r.now(),
        )
        .await
        .map_err(error)?;
    let updated = r.commit(change).await?;
    ok(StatusCode::OK, &booking_json(&updated))
}

/// `DELETE /api/bookings/{handle}`: `delete_booking`.
pub(super) async fn delete(r: &Route<'_>) -> Answer {
    let bookings = &r.services.bookings;
    let id = BookingId::new(path_id(r.handle(), Kind::Booking)?);
    let b = r.body(&["version"])?;
    let change = bookings
        .delete(&r.actor, &id, &b.string("version")?)
        .await
        .map_err(error)?;
    let deleted = r.commit(change).await?;
    ok(StatusCode::OK, &json!({"deleted": booking_json(&deleted)}))
}

/// `POST /api/bookings/{handle}/notes`: `add_booking_note`.
pub(super) async fn add_note(r: &Route<'_>) -> Answer {
    let bookings = &r.services.bookings;
    let id = BookingId::new(path_id(r.handle(), Kind::Booking)?);
    let b = r.body(&["note"])?;
    let change = bookings
        .add_note(&r.actor, &id, &b.string("note")?)
        .await
        .map_err(error)?;
    let noted = r.commit(change).await?;
    ok(StatusCode::CREATED, &booking_json(&noted))
}

/// `POST /api/bookings/{handle}/confirmation`: `send_booking_confirmation`.
pub(super) async fn confirm(r: &Route<'_>) -> Answer {
    let id = BookingId::new(path_id(r.handle(), Kind::Booking)?);
    let b = r.body(&["version"])?;
    let version = b.string("version")?;
    let expected = booking::Expected {
        id: &id,
        version: &version,
    };
    let change = r
        .services
        .use_cases()
        .send_booking_confirmation(&r.actor, expected, r.now())
        .await
        .map_err(error)?;
    let notified = change.notified.clone();
    let confirmed = r.commit(change).await?;
    ok(
        StatusCode::OK,
        &json!({"booking": booking_json(&confirmed), "notified": notified}),
    )
}

/// `POST /api/bookings/{handle}/cancellation`: `cancel_booking`.
pub(super) async fn cancel(r: &Route<'_>) -> Answer {
    let id = BookingId::new(path_id(r.handle(), Kind::Booking)?);
    let b = r.body(&["version"])?;
    let version = b.string("version")?;
    let expected = booking::Expected {
        id: &id,
        version: &version,
    };
    let change = r
        .services
        .use_cases()
        .cancel_booking(&r.actor, expected, r.now())
        .await
        .map_err(error)?;
    let notified = change.notified.clone();
    let cancelled = r.commit(change).await?;
    ok(
        StatusCode::OK,
        &json!({"booking": booking_json(&cancelled), "notified": notified}),
    )
}

/// `POST /api/bookings/{handle}/reschedule`: `reschedule_booking`.
pub(super) async fn reschedule(r: &Route<'_>) -> Answer {
    let id = BookingId::new(path_id(r.handle(), Kind::Booking)?);
    let b = r.body(&["version", "start", "zone", "duration_minutes"])?;
    let moved_to = booking::NewTime {
        start: When::from_input(&b.string("start")?, &b.string("zone")?),
        duration_minutes: b.opt_int("duration_minutes")?,
    };
    let version = b.string("version")?;
    let expected = booking::Expected {
        id: &id,
        version: &version,
    };
    let change = r
        .services
        .use_cases()
        .reschedule_booking(&r.actor, expected, moved_to, r.now())
        .await
        .map_err(error)?;
    let notified = change.notified.clone();
    let moved = r.commit(change).await?;
    ok(
        StatusCode::OK,
        &json!({"booking": booking_json(&moved), "notified": notified}),
    )
}

/// `POST /api/bookings/{handle}/mute`: `mute_booking_alerts`.
pub(super) async fn mute(r: &Route<'_>) -> Answer {
    let id = BookingId::new(path_id(r.handle(), Kind::Booking)?);
    let b = r.body(&["hours"])?;
    let change = r
        .services
        .alerts
        .mute(&r.actor, &id, b.int("hours")?, r.now())
        .await
        .map_err(error)?;
    let rule = r.commit(change).await?;
    ok(
        StatusCode::OK,
        &json!({"booking": id.handle(), "muted_until": rule.muted_until.map(|t| t.to_rfc3339())}),
    )
}

/// `POST /api/technicians/{handle}/pages`: `page_technician`.
pub(super) async fn page(r: &Route<'_>) -> Answer {
    let id = TechnicianId::new(path_id(r.handle(), Kind::Technician)?);
    let b = r.body(&["message"])?;
    let change = r
        .services
        .technicians
        .page(&r.actor, &id, &b.string("message")?)
        .await
        .map_err(error)?;
    let notified = change.notified.clone();
    let paged = r.commit(change).await?;
    ok(
        StatusCode::CREATED,
        &json!({"technician": paged.handle(), "notified": notified}),
    )
}
