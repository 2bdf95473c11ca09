//! `send_booking_confirmation`: prepares confirming a draft to the customer by email;
//! `confirm_action` sends.

use booking::BookingId;
use booking::rights;
use mcp_pipeline::{CallError, Handle, Policy, Prepared, Success, Tool, ToolContext, Toolset};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::Services;
use crate::adapter::{BookingKind, actor, apply_sending, error};
use crate::present::BookingView;

/// Arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Input {
    /// The draft booking's handle.
    booking: Handle<BookingKind>,
    /// The version you read.
    version: String,
}

/// The confirmed booking and who is told.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Output {
    booking: BookingView,
    /// Who gets the message.
    notified: Vec<String>,
}

/// Confirms a draft to the customer.
#[derive(Debug)]
pub(crate) struct SendBookingConfirmation {
    pub(crate) services: Services,
}

impl Tool for SendBookingConfirmation {
    type Input = Input;
    type Output = Output;
    const NAME: &'static str = "send_booking_confirmation";
    const TITLE: &'static str = "Confirm a booking to the customer";
    const DESCRIPTION: &'static str = "Prepares confirming a draft booking and emailing the customer the date, time and technician; returns a preview with the exact message and a confirm_token. Nothing is sent until confirm_action. Example: {\"booking\": \"bkg_8sJ3kQ1vZx7LmN2pR4tY\", \"version\": \"3f9a1c2b7d4e\"}";
    const CORE_DESCRIPTION: Option<&'static str> = Some(
        "Prepares emailing the customer the booking's confirmation; nothing is sent until confirm_action. Example: {\"booking\": \"bkg_8sJ3kQ1vZx7LmN2pR4tY\", \"version\": \"3f9a1c2b7d4e\"}",
    );
    type Effect = mcp_pipeline::effects::Notify;
    const POLICY: Policy = Policy::listed_in(Toolset::Core)
        .requires(&[rights::BOOKINGS_WRITE, rights::CUSTOMERS_NOTIFY]);

    async fn call(
        &self,
        ctx: ToolContext<Self::Effect>,
        input: Input,
    ) -> Result<Prepared<Output>, CallError> {
        let actor = actor(&ctx)?;
        let id = BookingId::new(input.booking.id());
        let now = crate::adapter::now(&ctx);
        let change = self
            .services
            .use_cases()
            .send_booking_confirmation(
                &actor,
                booking::Expected {
                    id: &id,
                    version: &input.version,
                },
                now,
            )
            .await
            .map_err(error)?;
        let notified = change.notified.clone();
        let message = crate::present::the_message(&change);
        let b = apply_sending(&ctx.writes, change);
        // The server wrote the message; the model cannot put words in it.
        let start = booking::time::Moment::new(b.start, b.zone, now);
        let preview = ctx.writes.preview(
            format!(
                "Confirm booking {} for {} and email {} the confirmation (preview.body)",
                b.handle(),
                start.spoken(),
                message.to
            ),
            json!({"to": message.to, "subject": message.subject, "body": crate::present::message_body(&message.body), "booking": b.handle()}),
        );
        Ok(preview.answer(Success::new(
            format!(
                "Confirmed booking {} and emailed {}.",
                b.handle(),
                message.to
            ),
            Output {
                booking: BookingView::new(&b, &self.services.console_base, now),
                notified,
            },
        )))
    }
}
