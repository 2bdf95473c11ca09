//! `cancel_bookings`: prepares cancelling several bookings matched by a filter, only when the
//! match count is what the caller expects.

use booking::rights;
use mcp_pipeline::{CallError, EffectClass, Handle, Policy, Success, Tool, ToolContext, Toolset};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::Services;
use crate::adapter::{CustomerKind, TechnicianKind, actor, apply, error};
use crate::present::BookingView;

/// Arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Input {
    /// Only this customer's bookings.
    customer: Option<Handle<CustomerKind>>,
    /// Only this technician's bookings.
    technician: Option<Handle<TechnicianKind>>,
    /// How many open bookings you expect the filter to match (1 to 25).
    expected_count: u32,
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
    const EFFECT: EffectClass = EffectClass::Notify;
    const POLICY: Policy = Policy::listed_in(Toolset::Full).requires(&[rights::BOOKINGS_WRITE]);

    async fn call(&self, ctx: ToolContext, input: Input) -> Result<Success<Output>, CallError> {
        let actor = actor(&ctx)?;
        let open = self
            .services
            .bookings
            .open_matching(
                &actor,
                input.customer.map(|h| h.id().to_owned()),
                input.technician.map(|h| h.id().to_owned()),
                input.expected_count,
            )
            .await
            .map_err(error)?;
        let handles: Vec<String> = open.iter().map(booking::Booking::handle).collect();
        let now = crate::adapter::now(&ctx);
        let mut views = Vec::new();
        let mut notified = Vec::new();
        // Each booking's customer, read at once (the same customer once).
        let mut wanted: Vec<&str> = open.iter().map(|b| b.customer.as_str()).collect();
        wanted.sort_unstable();
        wanted.dedup();
        let found = futures_util::future::join_all(
            wanted
                .iter()
                .map(|id| self.services.customers.get(&actor, id)),
        )
        .await;
        let mut customers = std::collections::HashMap::new();
        for (id, customer) in wanted.into_iter().zip(found) {
            customers.insert(id, customer.map_err(error)?);
        }
        for b in &open {
            let customer = &customers[b.customer.as_str()];
            let text = booking::messages::booking_cancelled(customer, b);
            let change = self
                .services
                .bookings
                .cancel_read(&actor, b.clone(), &customer.email, &text)
                .map_err(error)?;
            notified.extend(change.notified.clone());
            let cancelled = apply(&ctx, change);
            views.push(BookingView::new(
                &cancelled,
                &self.services.console_base,
                now,
            ));
        }
        ctx.writes.preview(
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
            json!({"bookings": handles, "notified": notified}),
        );
        Ok(Success::new(
            format!("Cancelled {} bookings.", views.len()),
            Output {
                bookings: views,
                notified,
            },
        ))
    }
}
