//! `create_booking`: a draft booking; nobody is told.

use booking::rights;
use booking::{CustomerId, NewBooking, TechnicianId};
use mcp_pipeline::{CallError, Handle, Policy, Success, Tool, ToolContext, Toolset};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::Services;
use crate::adapter::{CustomerKind, TechnicianKind, actor, apply, error, when};
use crate::present::BookingView;

/// Arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Input {
    /// The customer's handle.
    customer: Handle<CustomerKind>,
    /// The technician's handle.
    technician: Handle<TechnicianKind>,
    /// What is done, e.g. "boiler service".
    service: String,
    /// Local start time `YYYY-MM-DD HH:MM` in `zone`, or ISO 8601 with an offset.
    start: String,
    /// IANA time zone of the customer's site, e.g. Europe/Berlin.
    zone: String,
    /// Length in minutes (15 or more).
    duration_minutes: i64,
    /// Create another booking for the same customer, technician and start anyway (needs `reason`).
    separate: Option<bool>,
    /// Why a second such booking is needed.
    reason: Option<String>,
}

/// The draft.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Output {
    booking: BookingView,
    /// Who was told: nobody, drafts send nothing.
    notified: Vec<String>,
}

/// Creates a draft booking.
#[derive(Debug)]
pub(crate) struct CreateBooking {
    pub(crate) services: Services,
}

impl Tool for CreateBooking {
    type Input = Input;
    type Output = Output;
    const NAME: &'static str = "create_booking";
    const TITLE: &'static str = "Create a draft booking";
    const DESCRIPTION: &'static str = "Creates a draft booking of a technician at a customer; the customer is not told until send_booking_confirmation. If the same customer, technician and start exist, the error names that booking; update_booking changes drafts. Example: {\"customer\": \"cus_4fK2aZ9qLm3Xt7Bv1NcR\", \"technician\": \"tec_9dL2mQ7xZk1VbN3cR5tW\", \"service\": \"boiler service\", \"start\": \"2055-06-07 09:00\", \"zone\": \"Europe/Berlin\", \"duration_minutes\": 90}";
    const CORE_DESCRIPTION: Option<&'static str> = Some(
        "Creates a draft booking; nobody is told. Example: {\"customer\": \"cus_4fK2aZ9qLm3Xt7Bv1NcR\", \"technician\": \"tec_9dL2mQ7xZk1VbN3cR5tW\", \"service\": \"boiler service\", \"start\": \"2055-06-07 09:00\", \"zone\": \"Europe/Berlin\", \"duration_minutes\": 90}",
    );
    type Effect = mcp_pipeline::effects::SilentWrite;
    const POLICY: Policy = Policy::listed_in(Toolset::Core).requires(&[rights::BOOKINGS_WRITE]);

    async fn call(
        &self,
        ctx: ToolContext<Self::Effect>,
        input: Input,
    ) -> Result<Success<Output>, CallError> {
        let actor = actor(&ctx)?;
        let reason = crate::adapter::separate_reason(
            input.separate,
            input.reason.as_deref(),
            "a second booking at this slot",
        )?;
        let new = NewBooking {
            customer: CustomerId::new(input.customer.id()),
            technician: TechnicianId::new(input.technician.id()),
            service: input.service,
            start: when(&input.start, &input.zone),
            duration_minutes: input.duration_minutes,
        };
        let now = crate::adapter::now(&ctx);
        let change = self
            .services
            .bookings
            .create_draft(&actor, new, reason, now)
            .await
            .map_err(error)?;
        let b = apply(&ctx.writes, change);
        let view = BookingView::new(&b, &self.services.console_base, now);
        let handle = b.handle();
        Ok(Success::new(
            format!("Created draft booking {handle}; the customer was not told."),
            Output {
                booking: view,
                notified: Vec::new(),
            },
        )
        .next_step(format!(
            "send_booking_confirmation {{\"booking\": \"{handle}\", \"version\": \"{}\"}}",
            b.version
        )))
    }
}
