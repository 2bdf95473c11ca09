//! `add_booking_note`: a staff note on a booking (silent).

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
    /// The note (staff only; the customer never sees it).
    note: String,
}

/// The booking with the note.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Output {
    booking: BookingView,
    /// Who was told: nobody.
    notified: Vec<String>,
}

/// Adds a staff note.
#[derive(Debug)]
pub(crate) struct AddBookingNote {
    pub(crate) services: Services,
}

impl Tool for AddBookingNote {
    type Input = Input;
    type Output = Output;
    const NAME: &'static str = "add_booking_note";
    const TITLE: &'static str = "Add a booking note";
    const DESCRIPTION: &'static str = "Adds a staff note to a booking, visible to staff only; the customer is not told. Example: {\"booking\": \"bkg_8sJ3kQ1vZx7LmN2pR4tY\", \"note\": \"Bring the long ladder.\"}";
    type Effect = mcp_pipeline::effects::SilentWrite;
    const POLICY: Policy = Policy::listed_in(Toolset::Standard).requires(&[rights::BOOKINGS_WRITE]);

    async fn call(
        &self,
        ctx: ToolContext<Self::Effect>,
        input: Input,
    ) -> Result<Success<Output>, CallError> {
        let actor = actor(&ctx)?;
        let id = BookingId::new(input.booking.id());
        let change = self
            .services
            .bookings
            .add_note(&actor, &id, &input.note)
            .await
            .map_err(error)?;
        let b = apply(&ctx.writes, change);
        Ok(Success::new(
            format!("Added a note to {}; nobody was told.", b.handle()),
            Output {
                booking: BookingView::new(
                    &b,
                    &self.services.console_base,
                    crate::adapter::now(&ctx),
                ),
                notified: Vec::new(),
            },
        ))
    }
}
