//! `find_bookings`: bookings by customer, technician or status.

use booking::rights;
use booking::{BookingFilter, CustomerId, Status, TechnicianId};
use mcp_pipeline::{CallError, Handle, Policy, Success, Tool, ToolContext, Toolset};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::Services;
use crate::adapter::{CustomerKind, TechnicianKind, actor, error};
use crate::present::BookingView;

/// A booking status.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum StatusArg {
    Draft,
    Confirmed,
    Cancelled,
    Completed,
}

/// Arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Input {
    /// Only this customer's bookings.
    customer: Option<Handle<CustomerKind>>,
    /// Only this technician's bookings.
    technician: Option<Handle<TechnicianKind>>,
    /// Only bookings in this status.
    status: Option<StatusArg>,
    /// Only bookings starting on or after this day (YYYY-MM-DD, in each booking's own zone):
    /// today's date finds the coming visits past a long history.
    from: Option<String>,
    /// At most this many (1 to 50, default 20).
    #[schemars(range(min = 1, max = 50))]
    limit: Option<u32>,
}

/// Matches, earliest first.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Output {
    bookings: Vec<BookingView>,
    /// Whether more bookings match than are shown.
    more: bool,
}

/// Finds bookings.
#[derive(Debug)]
pub(crate) struct FindBookings {
    pub(crate) services: Services,
}

impl Tool for FindBookings {
    type Input = Input;
    type Output = Output;
    const NAME: &'static str = "find_bookings";
    const TITLE: &'static str = "Find bookings";
    const DESCRIPTION: &'static str = "Finds bookings by customer, technician, status or first day, earliest first, with times shown as weekday, local time with zone, UTC and distance from now. Changes nothing; get_booking reads one. Example: {\"customer\": \"cus_4fK2aZ9qLm3Xt7Bv1NcR\", \"status\": \"draft\"}";
    const CORE_DESCRIPTION: Option<&'static str> = Some(
        "Finds bookings by customer, technician or status, earliest first. Changes nothing. Example: {\"customer\": \"cus_4fK2aZ9qLm3Xt7Bv1NcR\", \"status\": \"draft\"}",
    );
    type Effect = mcp_pipeline::effects::Read;
    const POLICY: Policy = Policy::listed_in(Toolset::Core).requires(&[rights::BOOKINGS_READ]);

    async fn call(
        &self,
        ctx: ToolContext<Self::Effect>,
        input: Input,
    ) -> Result<Success<Output>, CallError> {
        let actor = actor(&ctx)?;
        let from = input.from.as_deref().map(day).transpose()?;
        let filter = BookingFilter {
            customer: input.customer.map(|h| CustomerId::new(h.id())),
            technician: input.technician.map(|h| TechnicianId::new(h.id())),
            status: input.status.map(|s| match s {
                StatusArg::Draft => Status::Draft,
                StatusArg::Confirmed => Status::Confirmed,
                StatusArg::Cancelled => Status::Cancelled,
                StatusArg::Completed => Status::Completed,
            }),
            from,
        };
        let limit = crate::present::search_limit(input.limit, 20)?;
        let found = self
            .services
            .bookings
            .find(&actor, &filter, limit + 1)
            .await
            .map_err(error)?;
        let (found, more) = crate::present::page(found, limit);
        let now = crate::adapter::now(&ctx);
        let bookings: Vec<BookingView> = found
            .iter()
            .map(|b| BookingView::new(b, &self.services.console_base, now))
            .collect();
        let summary = crate::present::matched(bookings.len(), more, "booking", "bookings");
        let mut success = Success::new(summary, Output { bookings, more });
        if let Some(first) = found.first() {
            success = success.next_step(format!(
                "get_booking {{\"booking\": \"{}\"}}",
                first.handle()
            ));
        }
        Ok(success)
    }
}

/// A `from` day: `YYYY-MM-DD`.
fn day(text: &str) -> Result<chrono::NaiveDate, mcp_pipeline::ToolError> {
    chrono::NaiveDate::parse_from_str(text.trim(), "%Y-%m-%d").map_err(|_| {
        mcp_pipeline::ToolError::validation(
            format!("`from` must be a day written YYYY-MM-DD, not {text:?}"),
            "Send a day such as 2055-06-07, or leave `from` out",
        )
        .detail("field", "from")
    })
}
