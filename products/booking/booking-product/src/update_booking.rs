//! `update_booking`: change a draft booking (silent).

use booking::BookingId;
use booking::rights;
use mcp_pipeline::{CallError, Handle, Policy, Success, Tool, ToolContext, Toolset};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::Services;
use crate::adapter::{BookingKind, actor, apply, error};
use crate::present::BookingView;

/// Arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Input {
    /// The booking's handle.
    booking: Handle<BookingKind>,
    /// The version you read.
    version: String,
    /// New service text.
    service: Option<String>,
    /// New start (local time in `zone`, or ISO 8601 with an offset).
    start: Option<String>,
    /// IANA zone for `start` (required with `start`).
    zone: Option<String>,
    /// New length in minutes.
    duration_minutes: Option<i64>,
}

/// The changed draft.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Output {
    booking: BookingView,
    /// Who was told: nobody.
    notified: Vec<String>,
}

/// Changes a draft booking.
#[derive(Debug)]
pub(crate) struct UpdateBooking {
    pub(crate) services: Services,
}

impl Tool for UpdateBooking {
    type Input = Input;
    type Output = Output;
    const NAME: &'static str = "update_booking";
    const TITLE: &'static str = "Update a draft booking";
    const DESCRIPTION: &'static str = "Changes a draft booking's service, start or length; send the version you read. Only drafts: nobody is told. Example: {\"booking\": \"bkg_8sJ3kQ1vZx7LmN2pR4tY\", \"version\": \"3f9a1c2b7d4e\", \"start\": \"2055-06-10 14:00\", \"zone\": \"Europe/Berlin\"}";
    type Effect = mcp_pipeline::effects::SilentWrite;
    const POLICY: Policy = Policy::listed_in(Toolset::Core).requires(&[rights::BOOKINGS_WRITE]);

    async fn call(
        &self,
        ctx: ToolContext<Self::Effect>,
        input: Input,
    ) -> Result<Success<Output>, CallError> {
        let actor = actor(&ctx)?;
        let id = BookingId::new(input.booking.id());
        let start = booking::When::from_optional(input.start.as_deref(), input.zone.as_deref())
            .map_err(error)?;
        let now = crate::adapter::now(&ctx);
        // A confirmed booking moves with a message to its customer: the same move, as that call.
        let move_instead = input.start.as_ref().map(|start| {
            let mut args = serde_json::json!({"booking": input.booking.to_string(), "version": input.version, "start": start});
            if let Some(zone) = &input.zone {
                args["zone"] = zone.clone().into();
            }
            if let Some(minutes) = input.duration_minutes {
                args["duration_minutes"] = minutes.into();
            }
            format!("reschedule_booking {args}")
        });
        let change = self
            .services
            .bookings
            .update_draft(
                &actor,
                &id,
                &input.version,
                input.service,
                start,
                input.duration_minutes,
                now,
            )
            .await
            .map_err(|e| match (e, move_instead) {
                (booking::BookingError::Rejected(why), Some(call))
                    if why.contains(" is confirmed") =>
                {
                    match error(booking::BookingError::Rejected(why)) {
                        CallError::Tool(t) => CallError::Tool(t.next_call(call)),
                        other => other,
                    }
                }
                (e, _) => error(e),
            })?;
        let b = apply(&ctx.writes, change);
        let handle = b.handle();
        Ok(Success::new(
            format!("Updated draft {handle}; nobody was told."),
            Output {
                booking: BookingView::new(&b, &self.services.console_base, now),
                notified: Vec::new(),
            },
        )
        .next_step(format!("get_booking {{\"booking\": \"{handle}\"}}")))
    }
}
