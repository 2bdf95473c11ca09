//! Time errors as the model should see them: the call that fixes one where the server can
//! tell what was meant (a zone in the wrong letter case), the choices where only the user
//! can (a time the clocks skip or repeat, a date in the past), and the reason otherwise.

use booking::time::{Moment, TimeError};
use mcp_pipeline::{Choice, ToolError};

/// A start, zone or duration the product could not read.
pub(crate) fn lead_on(field: &'static str, error: TimeError) -> ToolError {
    let details = serde_json::to_value(&error).unwrap_or_default();
    let base = ToolError::validation(
        format!("`{field}`: {error}"),
        format!("Send `{field}` again as described"),
    )
    .detail("field", field)
    .detail("time_error", details);
    match error {
        TimeError::UnknownZone {
            suggestion: Some(zone),
            ..
        } => base.retry_with("zone", zone),
        TimeError::Nonexistent {
            local,
            zone,
            options,
            ..
        } => choose(base, field, &options).handover(format!(
            "{local} does not exist in {zone} (the clocks skip it): ask the user which of the options they mean, or for another time"
        )),
        TimeError::Ambiguous {
            local,
            zone,
            options,
        } => choose(base, field, &options).handover(format!(
            "{local} happens twice in {zone} (the clocks go back): ask the user which of the options they mean"
        )),
        TimeError::RangeOrOffset { text, .. } => base.handover(format!(
            "`{field}` {text:?} may be a time range or a time with an offset: ask the user for the start time and the length, unless the conversation makes both clear"
        )),
        other => base.handover(format!(
            "The server cannot read `{field}` ({other}); ask the user for it if the conversation does not make it clear"
        )),
    }
}

/// One choice per instant, sent with its offset.
fn choose(mut error: ToolError, field: &str, options: &[Moment]) -> ToolError {
    for m in options {
        let label = format!("{} {} {} ({})", m.weekday, m.local, m.offset, m.from_now);
        error = error.option(Choice::set(label, field, m.iso.clone()));
    }
    error
}

/// A start in the past: refused (ADR 17), with the same date ahead as a choice when the
/// caller sent a local time, since a mistyped year is the usual cause.
pub(crate) fn past(field: &str, start: &Moment, next_year: Option<String>) -> ToolError {
    let when = format!(
        "{} {} {} ({})",
        start.weekday, start.local, start.zone, start.from_now
    );
    let error = ToolError::new(
        mcp_pipeline::ErrorKind::Rejected,
        format!("{when} is in the past; bookings are for visits ahead, and nothing was done"),
        "Check the date with the user; a past visit is not booked, moved to, or confirmed to a customer",
    )
    .detail("field", field)
    .detail("start", serde_json::to_value(start).unwrap_or_default());
    match next_year {
        Some(ahead) => error
            .handover(format!(
                "The start {when} has passed: ask the user for the right date (the option is the same date ahead)"
            ))
            .option(Choice::set(format!("{ahead} {}", start.zone), field, ahead)),
        None => error.handover(format!(
            "The start {when} has passed: tell the user; only a time ahead can be booked"
        )),
    }
}
