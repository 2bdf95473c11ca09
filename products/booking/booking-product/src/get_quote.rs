//! `get_quote`: one quote with its totals.

use booking::QuoteId;
use booking::rights;
use mcp_pipeline::{CallError, Handle, Policy, Success, Tool, ToolContext, Toolset};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::Services;
use crate::adapter::{QuoteKind, actor, error};
use crate::present::QuoteView;

/// Arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Input {
    /// The quote's handle (`quo_...`).
    quote: Handle<QuoteKind>,
}

/// The quote.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Output {
    quote: QuoteView,
}

/// Reads one quote.
#[derive(Debug)]
pub(crate) struct GetQuote {
    pub(crate) services: Services,
}

impl Tool for GetQuote {
    type Input = Input;
    type Output = Output;
    const NAME: &'static str = "get_quote";
    const TITLE: &'static str = "Get a quote";
    const DESCRIPTION: &'static str = "Returns one quote with its lines, tax and totals as exact decimal strings. Changes nothing. Example: {\"quote\": \"quo_2bX9kL4mQ7vZ1cN8pR3t\"}";
    type Effect = mcp_pipeline::effects::Read;
    const POLICY: Policy = Policy::listed_in(Toolset::Standard).requires(&[rights::BOOKINGS_READ]);

    async fn call(
        &self,
        ctx: ToolContext<Self::Effect>,
        input: Input,
    ) -> Result<Success<Output>, CallError> {
        let actor = actor(&ctx)?;
        let id = QuoteId::new(input.quote.id());
        let q = self.services.quotes.get(&actor, &id).await.map_err(error)?;
        Ok(Success::new(
            format!(
                "Quote {} is {} over {}.",
                q.handle(),
                q.status,
                q.totals.gross
            ),
            Output {
                quote: QuoteView::new(&q, &self.services.console_base),
            },
        ))
    }
}
