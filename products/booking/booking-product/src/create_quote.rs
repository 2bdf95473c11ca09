//! `create_quote`: a draft quote (silent).

use booking::CustomerId;
use booking::rights;
use mcp_pipeline::{CallError, Handle, Policy, Success, Tool, ToolContext, Toolset};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::Services;
use crate::adapter::{CustomerKind, actor, apply, error};
use crate::present::QuoteView;
use crate::quote_lines::{LineArg, lines};

/// Arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Input {
    /// The customer's handle.
    customer: Handle<CustomerKind>,
    /// The lines (1 to 100).
    lines: Vec<LineArg>,
    /// Create another quote with the same customer and lines anyway (needs `reason`).
    separate: Option<bool>,
    /// Why a second identical quote is meant (with `separate`).
    reason: Option<String>,
}

/// The draft quote with totals computed by the server.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Output {
    quote: QuoteView,
    /// Who was told: nobody.
    notified: Vec<String>,
}

/// Creates a draft quote.
#[derive(Debug)]
pub(crate) struct CreateQuote {
    pub(crate) services: Services,
}

impl Tool for CreateQuote {
    type Input = Input;
    type Output = Output;
    const NAME: &'static str = "create_quote";
    const TITLE: &'static str = "Create a draft quote";
    const DESCRIPTION: &'static str = "Creates a draft quote for a customer in the workspace's currency and tax rate; the server computes line totals, tax and total. The same customer with the same lines is one quote: the error names it. The customer is not told; sending it is a separate step a person approves in the product. Example: {\"customer\": \"cus_4fK2aZ9qLm3Xt7Bv1NcR\", \"lines\": [{\"description\": \"Filter\", \"quantity\": \"3\", \"unit_price\": \"19.99\"}]}";
    type Effect = mcp_pipeline::effects::SilentWrite;
    const POLICY: Policy = Policy::listed_in(Toolset::Standard).requires(&[rights::BOOKINGS_WRITE]);

    async fn call(
        &self,
        ctx: ToolContext<Self::Effect>,
        input: Input,
    ) -> Result<Success<Output>, CallError> {
        let actor = actor(&ctx)?;
        let customer = CustomerId::new(input.customer.id());
        let reason = crate::adapter::separate_reason(
            input.separate,
            input.reason.as_deref(),
            "a second quote with the same customer and lines",
        )?;
        let change = self
            .services
            .quotes
            .create(&actor, &customer, &lines(input.lines), reason)
            .await
            .map_err(error)?;
        let q = apply(&ctx.writes, change);
        let view = QuoteView::new(&q, &self.services.console_base);
        Ok(Success::new(
            format!(
                "Created draft quote {} over {}; the customer was not told.",
                q.handle(),
                q.totals.gross
            ),
            Output {
                quote: view,
                notified: Vec::new(),
            },
        )
        .next_step(format!("get_quote {{\"quote\": \"{}\"}}", q.handle())))
    }
}
