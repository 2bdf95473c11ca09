//! `find_customers`: search customers by name or email.

use booking::rights;
use mcp_pipeline::{CallError, Policy, Success, Tool, ToolContext, Toolset};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::Services;
use crate::adapter::{actor, error};
use crate::present::CustomerView;

/// Arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Input {
    /// Part of the name or email; empty lists the first customers.
    #[serde(default)]
    query: String,
    /// At most this many (1 to 50, default 10).
    #[schemars(range(min = 1, max = 50))]
    limit: Option<u32>,
}

/// Matches.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Output {
    /// The matching customers.
    customers: Vec<CustomerView>,
    /// Whether more customers match than are shown.
    more: bool,
}

/// Searches customers.
#[derive(Debug)]
pub(crate) struct FindCustomers {
    pub(crate) services: Services,
}

impl Tool for FindCustomers {
    type Input = Input;
    type Output = Output;
    const NAME: &'static str = "find_customers";
    const TITLE: &'static str = "Find customers";
    const DESCRIPTION: &'static str = "Finds customers whose name or email contains the query, with their handles and versions. Use it to get a customer's handle before reading or changing it. Changes nothing; get_customer reads one customer. Example: {\"query\": \"ada\"}";
    type Effect = mcp_pipeline::effects::Read;
    const POLICY: Policy = Policy::listed_in(Toolset::Core).requires(&[rights::BOOKINGS_READ]);

    async fn call(
        &self,
        ctx: ToolContext<Self::Effect>,
        input: Input,
    ) -> Result<Success<Output>, CallError> {
        let actor = actor(&ctx)?;
        let limit = crate::present::search_limit(input.limit, 10)?;
        let found = self
            .services
            .customers
            .find(&actor, &input.query, limit + 1)
            .await
            .map_err(error)?;
        let (found, more) = crate::present::page(found, limit);
        let customers: Vec<CustomerView> = found
            .iter()
            .map(|c| CustomerView::new(c, &self.services.console_base))
            .collect();
        let summary = match customers.len() {
            0 => format!("No customer matches {:?}.", input.query),
            n => crate::present::matched(n, more, "customer", "customers"),
        };
        let mut success = Success::new(summary, Output { customers, more });
        if let Some(first) = found.first() {
            success = success.next_step(format!(
                "get_customer {{\"customer\": \"{}\"}}",
                first.handle()
            ));
        }
        Ok(success)
    }
}
