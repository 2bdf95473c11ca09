//! `mute_booking_alerts`: prepares muting a booking's reminders for a while.

use booking::BookingId;
use booking::rights;
use mcp_pipeline::{CallError, Handle, Policy, Prepared, Success, Tool, ToolContext, Toolset};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::Services;
use crate::adapter::{BookingKind, actor, apply_sending, error};

/// Arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Input {
    /// The booking's handle.
    booking: Handle<BookingKind>,
    /// For how many hours (1 to 168).
    hours: i64,
}

/// The muted rule.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Output {
    /// The booking.
    booking: String,
    /// Muted until (UTC).
    muted_until: String,
    /// Who is told: nobody; the reminders stop.
    notified: Vec<String>,
}

/// Mutes a booking's reminders.
#[derive(Debug)]
pub(crate) struct MuteBookingAlerts {
    pub(crate) services: Services,
}

impl Tool for MuteBookingAlerts {
    type Input = Input;
    type Output = Output;
    const NAME: &'static str = "mute_booking_alerts";
    const TITLE: &'static str = "Mute a booking's reminders";
    const DESCRIPTION: &'static str = "Prepares muting the reminders of one booking for 1 to 168 hours; nobody is told and the reminders stop, so it waits for confirm_action. Example: {\"booking\": \"bkg_8sJ3kQ1vZx7LmN2pR4tY\", \"hours\": 24}";
    type Effect = mcp_pipeline::effects::Alerting;
    const POLICY: Policy = Policy::listed_in(Toolset::Full).requires(&[rights::ALERTS_MANAGE]);

    async fn call(
        &self,
        ctx: ToolContext<Self::Effect>,
        input: Input,
    ) -> Result<Prepared<Output>, CallError> {
        let actor = actor(&ctx)?;
        let id = BookingId::new(input.booking.id());
        let change = self
            .services
            .alerts
            .mute(&actor, &id, input.hours, crate::adapter::now(&ctx))
            .await
            .map_err(error)?;
        let rule = apply_sending(&ctx.writes, change);
        let handle = input.booking.to_string();
        let preview = ctx.writes.preview(
            format!(
                "Mute the reminders of booking {handle} for {} hours",
                input.hours
            ),
            json!({"booking": handle, "hours": input.hours}),
        );
        let until = rule.muted_until.map(|t| t.to_rfc3339()).unwrap_or_default();
        Ok(preview.answer(Success::new(
            format!("Muted the reminders of {handle} until {until}."),
            Output {
                booking: handle,
                muted_until: until,
                notified: Vec::new(),
            },
        )))
    }
}
