//! `cancel_booking`: prepares cancelling a booking (and telling the customer if it was
//! confirmed); `confirm_action` cancels.

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
    /// The booking's handle.
    booking: Handle<BookingKind>,
    /// The version you read.
    version: String,
}

/// The cancelled booking and who is told.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Output {
    booking: BookingView,
    /// Who gets a message (the customer, if the booking was confirmed).
    notified: Vec<String>,
}

/// Cancels a booking.
#[derive(Debug)]
pub(crate) struct CancelBooking {
    pub(crate) services: Services,
}

impl Tool for CancelBooking {
    type Input = Input;
    type Output = Output;
    const NAME: &'static str = "cancel_booking";
    const TITLE: &'static str = "Cancel a booking";
    const DESCRIPTION: &'static str = "Prepares cancelling one booking; if it was confirmed, the customer is emailed. Returns a preview and a confirm_token; nothing happens until confirm_action. Example: {\"booking\": \"bkg_8sJ3kQ1vZx7LmN2pR4tY\", \"version\": \"3f9a1c2b7d4e\"}";
    type Effect = mcp_pipeline::effects::Notify;
    const POLICY: Policy = Policy::listed_in(Toolset::Standard).requires(&[rights::BOOKINGS_WRITE]);

    async fn call(
        &self,
        ctx: ToolContext<Self::Effect>,
        input: Input,
    ) -> Result<Prepared<Output>, CallError> {
        let actor = actor(&ctx)?;
        let id = BookingId::new(input.booking.id());
        let change = self
            .services
            .use_cases()
            .cancel_booking(
                &actor,
                booking::Expected {
                    id: &id,
                    version: &input.version,
                },
                crate::adapter::now(&ctx),
            )
            .await
            .map_err(error)?;
        let notified = change.notified.clone();
        let message = change.messages.first().cloned();
        let b = apply_sending(&ctx.writes, change);
        let summary = match &message {
            None => format!(
                "Cancel booking {}; nobody is emailed (it was not confirmed).",
                b.handle()
            ),
            Some(m) => format!(
                "Cancel booking {} and email {} the cancellation notice (preview.body)",
                b.handle(),
                m.to
            ),
        };
        let body = message.map(|m| crate::present::message_body(&m.body));
        let preview = ctx.writes.preview(
            summary,
            json!({"booking": b.handle(), "notified": notified, "body": body}),
        );
        Ok(preview.answer(Success::new(
            format!("Cancelled booking {}.", b.handle()),
            Output {
                booking: BookingView::new(
                    &b,
                    &self.services.console_base,
                    crate::adapter::now(&ctx),
                ),
                notified,
            },
        )))
    }
}
