//! `send_quote`: prepares sending a quote; it binds the company to a price, so only a person
//! with the right approves it, in the product's page.

use booking::QuoteId;
use booking::rights;
use mcp_pipeline::{CallError, Handle, Policy, Prepared, Success, Tool, ToolContext, Toolset};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::Services;
use crate::adapter::{QuoteKind, actor, apply_sending, error};
use crate::present::QuoteView;

/// Arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Input {
    /// The draft quote's handle.
    quote: Handle<QuoteKind>,
    /// The version you read.
    version: String,
}

/// The quote and who is told.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Output {
    quote: QuoteView,
    notified: Vec<String>,
}

/// Sends a quote after approval in the product.
#[derive(Debug)]
pub(crate) struct SendQuote {
    pub(crate) services: Services,
}

impl Tool for SendQuote {
    type Input = Input;
    type Output = Output;
    const NAME: &'static str = "send_quote";
    const TITLE: &'static str = "Send a quote to the customer";
    const DESCRIPTION: &'static str = "Prepares emailing a draft quote to its customer and returns an approval link: a quote binds the company to a price, so a person with the quotes:approve right approves it in the product; confirm_action cannot send it. Example: {\"quote\": \"quo_2bX9kL4mQ7vZ1cN8pR3t\", \"version\": \"3f9a1c2b7d4e\"}";
    type Effect = mcp_pipeline::effects::Notify;
    const POLICY: Policy = Policy::listed_in(Toolset::Full)
        // The right the service asks of whoever sends a quote: the approval page asks the
        // person deciding for it too.
        .requires(&[rights::QUOTES_APPROVE])
        .approval_in_product();

    async fn call(
        &self,
        ctx: ToolContext<Self::Effect>,
        input: Input,
    ) -> Result<Prepared<Output>, CallError> {
        let actor = actor(&ctx)?;
        let id = QuoteId::new(input.quote.id());
        let (change, customer) = self
            .services
            .use_cases()
            .send_quote(
                &actor,
                booking::Expected {
                    id: &id,
                    version: &input.version,
                },
            )
            .await
            .map_err(error)?;
        let notified = change.notified.clone();
        let message = crate::present::the_message(&change);
        let q = apply_sending(&ctx.writes, change);
        let preview = ctx.writes.preview(
            format!(
                "Send quote {} ({}) to {}",
                q.handle(),
                q.totals.gross,
                customer.email
            ),
            // Everything a person approves: the recipient, each line, the totals with the tax,
            // and the message that would go out.
            json!({
                "to": customer.email,
                // Each line as results show it: its description wrapped as untrusted text.
                "lines": serde_json::to_value(QuoteView::new(&q, "")).map(|v| v["lines"].clone()).unwrap_or_default(),
                "net": q.totals.net.to_string(),
                "tax": format!("{} ({}%)", q.totals.tax, q.totals.tax_rate),
                "gross": q.totals.gross.to_string(),
                "body": crate::present::message_body(&message.body),
            }),
        );
        Ok(preview.answer(Success::new(
            format!("Sent quote {} to {}.", q.handle(), customer.email),
            Output {
                quote: QuoteView::new(&q, &self.services.console_base),
                notified,
            },
        )))
    }
}
