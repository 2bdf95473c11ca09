//! `find_quotes`: a customer's quotes, or all, by state.

use booking::CustomerId;
use booking::rights;
use mcp_pipeline::{CallError, Handle, Policy, Success, Tool, ToolContext, Toolset};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::Services;
use crate::adapter::{CustomerKind, actor, error};
use crate::present::QuoteView;

/// A quote's state.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum StateArg {
    /// Not sent yet.
    Draft,
    /// Sent to the customer.
    Sent,
}

/// Arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Input {
    /// Only this customer's quotes.
    customer: Option<Handle<CustomerKind>>,
    /// Only quotes in this state.
    state: Option<StateArg>,
    /// At most this many (1 to 50, default 20).
    #[schemars(range(min = 1, max = 50))]
    limit: Option<u32>,
}

/// The quotes found.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Output {
    quotes: Vec<QuoteView>,
    /// Whether more quotes match than are shown.
    more: bool,
}

/// Finds quotes.
#[derive(Debug)]
pub(crate) struct FindQuotes {
    pub(crate) services: Services,
}

impl Tool for FindQuotes {
    type Input = Input;
    type Output = Output;
    const NAME: &'static str = "find_quotes";
    const TITLE: &'static str = "Find quotes";
    const DESCRIPTION: &'static str = "Finds quotes, a customer's or all, by state (draft or sent), with their handles, versions and totals. Use it to get a quote's handle. Changes nothing; get_quote reads one. Example: {\"customer\": \"cus_4fK2aZ9qLm3Xt7Bv1NcR\", \"state\": \"draft\"}";
    type Effect = mcp_pipeline::effects::Read;
    const POLICY: Policy = Policy::listed_in(Toolset::Standard).requires(&[rights::BOOKINGS_READ]);

    async fn call(
        &self,
        ctx: ToolContext<Self::Effect>,
        input: Input,
    ) -> Result<Success<Output>, CallError> {
        let actor = actor(&ctx)?;
        let limit = crate::present::search_limit(input.limit, 20)?;
        let state = input.state.map(|s| match s {
            StateArg::Draft => "draft",
            StateArg::Sent => "sent",
        });
        let customer = input.customer.map(|h| CustomerId::new(h.id()));
        let found = self
            .services
            .quotes
            .find(&actor, customer.as_ref(), state, limit + 1)
            .await
            .map_err(error)?;
        let (found, more) = crate::present::page(found, limit);
        let quotes: Vec<QuoteView> = found
            .iter()
            .map(|q| QuoteView::new(q, &self.services.console_base))
            .collect();
        let summary = crate::present::matched(quotes.len(), more, "quote", "quotes");
        let mut success = Success::new(summary, Output { quotes, more });
        if let Some(first) = found.first() {
            success = success.next_step(format!("get_quote {{\"quote\": \"{}\"}}", first.handle()));
        }
        Ok(success)
    }
}
