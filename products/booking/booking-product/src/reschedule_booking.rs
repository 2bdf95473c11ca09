//! `reschedule_booking`: prepares moving a confirmed booking and telling the customer.

use booking::BookingId;
use booking::rights;
use mcp_pipeline::{CallError, Handle, Policy, Prepared, Success, Tool, ToolContext, Toolset};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::Services;
use crate::adapter::{BookingKind, actor, apply_sending, error, when};
use crate::present::BookingView;

/// Arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Input {
    /// The confirmed booking's handle.
    booking: Handle<BookingKind>,
    /// The version you read.
    version: String,
    /// New start: local time `YYYY-MM-DD HH:MM` in `zone`, or ISO 8601 with an offset.
    start: String,
    /// IANA zone of the site.
    zone: String,
    /// New length in minutes (default: unchanged).
    duration_minutes: Option<i64>,
}

/// The moved booking and who is told.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Output {
    booking: BookingView,
    notified: Vec<String>,
}

/// Moves a confirmed booking.
#[derive(Debug)]
pub(crate) struct RescheduleBooking {
    pub(crate) services: Services,
}

impl Tool for RescheduleBooking {
    type Input = Input;
    type Output = Output;
    const NAME: &'static str = "reschedule_booking";
    const TITLE: &'static str = "Reschedule a booking";
    const DESCRIPTION: &'static str = "Prepares moving a confirmed booking to a new time and emailing the customer; returns a preview and a confirm_token, nothing changes until confirm_action. Drafts move with update_booking. Example: {\"booking\": \"bkg_8sJ3kQ1vZx7LmN2pR4tY\", \"version\": \"3f9a1c2b7d4e\", \"start\": \"2055-06-10 14:00\", \"zone\": \"Europe/Berlin\"}";
    type Effect = mcp_pipeline::effects::Notify;
    const POLICY: Policy = Policy::listed_in(Toolset::Standard)
        .requires(&[rights::BOOKINGS_WRITE, rights::CUSTOMERS_NOTIFY]);

    async fn call(
        &self,
        ctx: ToolContext<Self::Effect>,
        input: Input,
    ) -> Result<Prepared<Output>, CallError> {
        let actor = actor(&ctx)?;
        let id = BookingId::new(input.booking.id());
        let now = crate::adapter::now(&ctx);
        let moved_to = booking::NewTime {
            start: when(&input.start, &input.zone),
            duration_minutes: input.duration_minutes,
        };
        let change = self
            .services
            .use_cases()
            .reschedule_booking(
                &actor,
                booking::Expected {
                    id: &id,
                    version: &input.version,
                },
                moved_to,
                now,
            )
            .await
            .map_err(error)?;
        let notified = change.notified.clone();
        let message = crate::present::the_message(&change);
        let b = apply_sending(&ctx.writes, change);
        let view = BookingView::new(&b, &self.services.console_base, now);
        let start = booking::time::Moment::new(b.start, b.zone, now);
        let preview = ctx.writes.preview(
            format!(
                "Move booking {} to {} and email {}",
                b.handle(),
                start.spoken(),
                message.to
            ),
            json!({"booking": b.handle(), "start": start.iso, "to": message.to, "body": crate::present::message_body(&message.body)}),
        );
        Ok(preview.answer(Success::new(
            format!("Moved booking {} and emailed {}.", b.handle(), message.to),
            Output {
                booking: view,
                notified,
            },
        )))
    }
}
