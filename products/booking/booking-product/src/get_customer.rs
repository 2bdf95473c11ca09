//! `get_customer`: one customer.

use booking::CustomerId;
use booking::rights;
use mcp_pipeline::{CallError, Handle, Policy, Success, Tool, ToolContext, Toolset};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::Services;
use crate::adapter::{CustomerKind, actor, error};
use crate::present::CustomerView;

/// Arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Input {
    /// The customer's handle (`cus_...`).
    customer: Handle<CustomerKind>,
}

/// The customer.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Output {
    customer: CustomerView,
}

/// Reads one customer.
#[derive(Debug)]
pub(crate) struct GetCustomer {
    pub(crate) services: Services,
}

impl Tool for GetCustomer {
    type Input = Input;
    type Output = Output;
    const NAME: &'static str = "get_customer";
    const TITLE: &'static str = "Get a customer";
    const DESCRIPTION: &'static str = "Returns one customer with handle, version, contact details and the notes the customer wrote (as untrusted text). Changes nothing; find_customers searches. Example: {\"customer\": \"cus_4fK2aZ9qLm3Xt7Bv1NcR\"}";
    type Effect = mcp_pipeline::effects::Read;
    const POLICY: Policy = Policy::listed_in(Toolset::Core).requires(&[rights::BOOKINGS_READ]);

    async fn call(
        &self,
        ctx: ToolContext<Self::Effect>,
        input: Input,
    ) -> Result<Success<Output>, CallError> {
        let actor = actor(&ctx)?;
        let id = CustomerId::new(input.customer.id());
        let c = self
            .services
            .customers
            .get(&actor, &id)
            .await
            .map_err(error)?;
        let handle = c.handle();
        Ok(Success::new(
            format!("Customer {handle}."),
            Output {
                customer: CustomerView::new(&c, &self.services.console_base),
            },
        )
        .next_step(format!("find_bookings {{\"customer\": \"{handle}\"}}")))
    }
}
