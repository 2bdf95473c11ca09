//! `delete_booking`: prepares deleting a draft or cancelled booking.

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

/// The booking that will be deleted.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Output {
    booking: BookingView,
    /// Who is told: nobody.
    notified: Vec<String>,
}

/// Deletes a booking after confirmation.
#[derive(Debug)]
pub(crate) struct DeleteBooking {
    pub(crate) services: Services,
}

impl Tool for DeleteBooking {
    type Input = Input;
    type Output = Output;
    const NAME: &'static str = "delete_booking";
    const TITLE: &'static str = "Delete a booking";
    const DESCRIPTION: &'static str = "Prepares deleting a draft or cancelled booking; nothing is deleted until confirm_action. A confirmed booking is cancelled first with cancel_booking. Example: {\"booking\": \"bkg_8sJ3kQ1vZx7LmN2pR4tY\", \"version\": \"3f9a1c2b7d4e\"}";
    type Effect = mcp_pipeline::effects::Delete;
    const POLICY: Policy = Policy::listed_in(Toolset::Standard).requires(&[rights::RECORDS_DELETE]);

    async fn call(
        &self,
        ctx: ToolContext<Self::Effect>,
        input: Input,
    ) -> Result<Prepared<Output>, CallError> {
        let actor = actor(&ctx)?;
        let id = BookingId::new(input.booking.id());
        let change = self
            .services
            .bookings
            .delete(&actor, &id, &input.version)
            .await
            .map_err(error)?;
        let b = apply_sending(&ctx.writes, change);
        let preview = ctx.writes.preview(
            format!("Delete booking {} (a {})", b.handle(), b.status.as_str()),
            json!({"booking": b.handle(), "version": b.version}),
        );
        Ok(preview.answer(Success::new(
            format!("Deleted booking {}.", b.handle()),
            Output {
                booking: BookingView::new(
                    &b,
                    &self.services.console_base,
                    crate::adapter::now(&ctx),
                ),
                notified: Vec::new(),
            },
        )))
    }
}
