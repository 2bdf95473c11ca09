//! `update_quote`: replace a draft quote's lines (silent).

use booking::QuoteId;
use booking::rights;
use mcp_pipeline::{CallError, Handle, Policy, Success, Tool, ToolContext, Toolset};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::Services;
use crate::adapter::{QuoteKind, actor, apply, error};
use crate::present::QuoteView;
use crate::quote_lines::{LineArg, lines};

/// Arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Input {
    /// The quote's handle.
    quote: Handle<QuoteKind>,
    /// The version you read.
    version: String,
    /// The new lines (all of them).
    lines: Vec<LineArg>,
}

/// The changed quote.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Output {
    quote: QuoteView,
    /// Who was told: nobody.
    notified: Vec<String>,
}

/// Changes a draft quote.
#[derive(Debug)]
pub(crate) struct UpdateQuote {
    pub(crate) services: Services,
}

impl Tool for UpdateQuote {
    type Input = Input;
    type Output = Output;
    const NAME: &'static str = "update_quote";
    const TITLE: &'static str = "Update a draft quote";
    const DESCRIPTION: &'static str = "Replaces all lines of a draft quote; send the version you read. The server recomputes totals. Nobody is told. Example: {\"quote\": \"quo_2bX9kL4mQ7vZ1cN8pR3t\", \"version\": \"3f9a1c2b7d4e\", \"lines\": [{\"description\": \"Filter\", \"quantity\": \"2\", \"unit_price\": \"19.99\"}]}";
    type Effect = mcp_pipeline::effects::SilentWrite;
    const POLICY: Policy = Policy::listed_in(Toolset::Standard).requires(&[rights::BOOKINGS_WRITE]);

    async fn call(
        &self,
        ctx: ToolContext<Self::Effect>,
        input: Input,
    ) -> Result<Success<Output>, CallError> {
        let actor = actor(&ctx)?;
        let id = QuoteId::new(input.quote.id());
        let change = self
            .services
            .quotes
            .update(&actor, &id, &input.version, &lines(input.lines))
            .await
            .map_err(error)?;
        let q = apply(&ctx.writes, change);
        Ok(Success::new(
            format!("Updated draft quote {}; nobody was told.", q.handle()),
            Output {
                quote: QuoteView::new(&q, &self.services.console_base),
                notified: Vec::new(),
            },
        ))
    }
}
