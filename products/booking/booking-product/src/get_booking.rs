//! `get_booking`: one booking.

use booking::BookingId;
use booking::rights;
use mcp_pipeline::{CallError, Handle, Policy, Success, Tool, ToolContext, Toolset};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::Services;
use crate::adapter::{BookingKind, actor, error};
use crate::present::BookingView;

/// Arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Input {
    /// The booking's handle (`bkg_...`).
    booking: Handle<BookingKind>,
}

/// The booking.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Output {
    booking: BookingView,
}

/// Reads one booking.
#[derive(Debug)]
pub(crate) struct GetBooking {
    pub(crate) services: Services,
}

impl Tool for GetBooking {
    type Input = Input;
    type Output = Output;
    const NAME: &'static str = "get_booking";
    const TITLE: &'static str = "Get a booking";
    const DESCRIPTION: &'static str = "Returns one booking with handle, version, state, customer, technician and times. Changes nothing; find_bookings searches. Example: {\"booking\": \"bkg_8sJ3kQ1vZx7LmN2pR4tY\"}";
    type Effect = mcp_pipeline::effects::Read;
    const POLICY: Policy = Policy::listed_in(Toolset::Core).requires(&[rights::BOOKINGS_READ]);

    async fn call(
        &self,
        ctx: ToolContext<Self::Effect>,
        input: Input,
    ) -> Result<Success<Output>, CallError> {
        let actor = actor(&ctx)?;
        let id = BookingId::new(input.booking.id());
        let b = self
            .services
            .bookings
            .get(&actor, &id)
            .await
            .map_err(error)?;
        let handle = b.handle();
        let next = if b.status == booking::Status::Draft {
            format!(
                "send_booking_confirmation {{\"booking\": \"{handle}\", \"version\": \"{}\"}}",
                b.version
            )
        } else {
            format!(
                "find_bookings {{\"customer\": \"{}\"}}",
                b.customer.handle()
            )
        };
        Ok(Success::new(
            format!("Booking {handle} is {}.", b.status.as_str()),
            Output {
                booking: BookingView::new(
                    &b,
                    &self.services.console_base,
                    crate::adapter::now(&ctx),
                ),
            },
        )
        .next_step(next))
    }
}
