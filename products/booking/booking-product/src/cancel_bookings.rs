//! `cancel_bookings`: prepares cancelling several bookings matched by a filter, only when the
//! match count is what the caller expects.

use booking::rights;
use booking::{CustomerId, TechnicianId};
use mcp_pipeline::{CallError, Handle, Policy, Prepared, Success, Tool, ToolContext, Toolset};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::Services;
use crate::adapter::{CustomerKind, TechnicianKind, actor, apply_sending, error};
use crate::present::BookingView;

/// Arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Input {
    /// Only this customer's bookings.
    customer: Option<Handle<CustomerKind>>,
    /// Only this technician's bookings.
    technician: Option<Handle<TechnicianKind>>,
    /// How many open bookings you expect the filter to match (1 to 19).
    // Optional to serde but required in the schema: when it is left out, the answer lists
    // the matches and offers the call with their count, instead of a bare "missing field".
    #[serde(default)]
    #[schemars(required)]
    expected_count: Option<u32>,
}

/// The cancelled bookings and who is told.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Output {
    bookings: Vec<BookingView>,
    notified: Vec<String>,
}

/// Cancels several bookings.
#[derive(Debug)]
pub(crate) struct CancelBookings {
    pub(crate) services: Services,
}

impl Tool for CancelBookings {
    type Input = Input;
    type Output = Output;
    const NAME: &'static str = "cancel_bookings";
    const TITLE: &'static str = "Cancel several bookings";
    const DESCRIPTION: &'static str = "Prepares cancelling every open booking of a customer or technician; the customers of confirmed ones are emailed. If the filter matches a different number than expected_count, it lists the matches and does nothing. Waits for confirm_action. Example: {\"technician\": \"tec_9dL2mQ7xZk1VbN3cR5tW\", \"expected_count\": 3}";
    type Effect = mcp_pipeline::effects::Notify;
    const POLICY: Policy = Policy::listed_in(Toolset::Full).requires(&[rights::BOOKINGS_WRITE]);

    async fn call(
        &self,
        ctx: ToolContext<Self::Effect>,
        input: Input,
    ) -> Result<Prepared<Output>, CallError> {
        let actor = actor(&ctx)?;
        let customer = input.customer.map(|h| CustomerId::new(h.id()));
        let technician = input.technician.map(|h| TechnicianId::new(h.id()));
        let changes = self
            .services
            .use_cases()
            .cancel_bookings(
                &actor,
                customer,
                technician,
                input.expected_count,
                crate::adapter::now(&ctx),
            )
            .await
            .map_err(error)?;
        let now = crate::adapter::now(&ctx);
        let mut views = Vec::with_capacity(changes.len());
        let mut notified = Vec::new();
        let mut messages = Vec::new();
        for change in changes {
            notified.extend(change.notified.clone());
            // What each customer will read, for the person approving the batch.
            messages.extend(
                change
                    .messages
                    .iter()
                    .map(|m| json!({"to": m.to, "body": crate::present::message_body(&m.body)})),
            );
            let cancelled = apply_sending(&ctx.writes, change);
            views.push(BookingView::new(
                &cancelled,
                &self.services.console_base,
                now,
            ));
        }
        let handles: Vec<String> = views.iter().map(BookingView::handle).collect();
        let preview = ctx.writes.preview(
            format!(
                "Cancel {} bookings ({}) and email {}",
                handles.len(),
                handles.join(", "),
                if notified.is_empty() {
                    "nobody".to_owned()
                } else {
                    notified.join(", ")
                }
            ),
            json!({"bookings": handles, "notified": notified, "messages": messages}),
        );
        Ok(preview.answer(Success::new(
            format!("Cancelled {} bookings.", views.len()),
            Output {
                bookings: views,
                notified,
            },
        )))
    }
}
