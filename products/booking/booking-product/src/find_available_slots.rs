//! `find_available_slots`: free times of a technician on a day.

use booking::TechnicianId;
use booking::rights;
use booking::time::{self, TimeRange};
use booking::{BookingFilter, Status};
use mcp_pipeline::{CallError, Handle, Policy, Success, Tool, ToolContext, ToolError, Toolset};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::Services;
use crate::adapter::{TechnicianKind, actor, error};
use crate::present::TimeView;

/// Arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Input {
    /// The technician's handle.
    technician: Handle<TechnicianKind>,
    /// The day, `YYYY-MM-DD`, in the technician's time zone.
    date: String,
    /// How long the visit takes, in minutes (15 to 600).
    duration_minutes: i64,
}

/// One free slot.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Slot {
    start: TimeView,
    /// The start time to book (with the `zone`).
    start_iso: String,
}

/// Free slots, earliest first (at most 10).
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Output {
    slots: Vec<Slot>,
    /// The technician's zone.
    zone: String,
}

/// Finds free slots.
#[derive(Debug)]
pub(crate) struct FindAvailableSlots {
    pub(crate) services: Services,
}

impl Tool for FindAvailableSlots {
    type Input = Input;
    type Output = Output;
    const NAME: &'static str = "find_available_slots";
    const TITLE: &'static str = "Find free slots";
    const DESCRIPTION: &'static str = "Lists up to 10 free start times for a technician on one day, within their working hours and around their open bookings, in half-hour steps. Changes nothing; each start can be booked. Example: {\"technician\": \"tec_9dL2mQ7xZk1VbN3cR5tW\", \"date\": \"2055-06-07\", \"duration_minutes\": 90}";
    const CORE_DESCRIPTION: Option<&'static str> = Some(
        "Lists free start times of a technician on one day. Changes nothing. Example: {\"technician\": \"tec_9dL2mQ7xZk1VbN3cR5tW\", \"date\": \"2055-06-07\", \"duration_minutes\": 90}",
    );
    type Effect = mcp_pipeline::effects::Read;
    const POLICY: Policy = Policy::listed_in(Toolset::Core)
        .requires(&[rights::BOOKINGS_READ])
        .expensive();

    async fn call(
        &self,
        ctx: ToolContext<Self::Effect>,
        input: Input,
    ) -> Result<Success<Output>, CallError> {
        let actor = actor(&ctx)?;
        let id = TechnicianId::new(input.technician.id());
        if !(15..=booking::time::LONGEST_SEARCHED_VISIT_MINUTES).contains(&input.duration_minutes) {
            return Err(ToolError::validation(
                "`duration_minutes` must be 15 to 600",
                "Send the visit's length in minutes",
            )
            .handover("Ask the user how long the visit takes, in minutes (15 to 600)")
            .into());
        }
        let date =
            chrono::NaiveDate::parse_from_str(input.date.trim(), "%Y-%m-%d").map_err(|_| {
                ToolError::validation(
                    format!("`date` {:?} is not a day like 2055-06-07", input.date),
                    "Send the day as YYYY-MM-DD",
                )
                .handover(format!("Ask the user which day \"{}\" means, if the conversation does not make it clear; send it as YYYY-MM-DD", input.date.trim()))
            })?;
        let technician = self
            .services
            .technicians
            .get(&actor, &id)
            .await
            .map_err(error)?;
        let (from, to) = working_hours(&technician.working_hours)?;
        let filter = BookingFilter {
            technician: Some(technician.id.clone()),
            ..BookingFilter::default()
        };
        let busy: Vec<TimeRange> = self
            .services
            .bookings
            // Every booking of the technician: one cut to the first by start would leave the
            // day's bookings out once the history is long, and offer booked times as free.
            .find(&actor, &filter, usize::MAX)
            .await
            .map_err(error)?
            .into_iter()
            .filter(|b| matches!(b.status, Status::Draft | Status::Confirmed))
            .filter_map(|b| TimeRange::new(b.start, b.end).ok())
            .collect();
        let now = crate::adapter::now(&ctx);
        let (first, end) = (date.and_time(from), date.and_time(to));
        let minutes = input.duration_minutes;
        let slots = free_slots(first, end, &technician.zone, minutes, &busy, now);
        let summary = format!(
            "{} free slots for {} on {}.",
            slots.len(),
            technician.name,
            input.date
        );
        Ok(Success::new(
            summary,
            Output {
                slots,
                zone: technician.zone,
            },
        ))
    }
}

/// A technician's working hours, `HH:MM-HH:MM` (08:00 to 17:00 when not set).
fn working_hours(text: &str) -> Result<(chrono::NaiveTime, chrono::NaiveTime), ToolError> {
    let (from, to) = text.split_once('-').unwrap_or(("08:00", "17:00"));
    let parse = |t: &str| chrono::NaiveTime::parse_from_str(t, "%H:%M").ok();
    match (parse(from), parse(to)) {
        (Some(from), Some(to)) => Ok((from, to)),
        _ => Err(ToolError::validation(
            "The technician's working hours are unreadable",
            "Fix them in the product",
        )
        .handover("The technician's working hours need fixing in the product by an administrator")),
    }
}

/// Up to 10 starts, every half hour of the working `day` in `zone`, that exist (not in a DST
/// gap), lie ahead of `now` and leave `minutes` free of every `busy` range.
fn free_slots(
    first: chrono::NaiveDateTime,
    end: chrono::NaiveDateTime,
    zone: &str,
    minutes: i64,
    busy: &[TimeRange],
    now: chrono::DateTime<chrono::Utc>,
) -> Vec<Slot> {
    let mut slots = Vec::new();
    let mut local = first;
    let last_start = end - chrono::Duration::minutes(minutes);
    while local <= last_start && slots.len() < 10 {
        let text = local.format("%Y-%m-%d %H:%M").to_string();
        if let Ok(start) = time::parse_local(&text, zone, now)
            && let Ok(range) = TimeRange::from_minutes(start.instant, minutes)
            && start.instant > now
            && !busy.iter().any(|b| b.overlaps(&range))
        {
            let moment = start.moment(now);
            slots.push(Slot {
                start_iso: moment.iso.clone(),
                start: moment.into(),
            });
        }
        local += chrono::Duration::minutes(30);
    }
    slots
}
