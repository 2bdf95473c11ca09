//! `update_customer`: change a customer's details (silent).

use booking::rights;
use booking::{CustomerId, CustomerPatch};
use mcp_pipeline::{CallError, Handle, Policy, Success, Tool, ToolContext, Toolset};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::Services;
use crate::adapter::{CustomerKind, actor, apply, error};
use crate::present::CustomerView;

/// Arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Input {
    /// The customer's handle.
    customer: Handle<CustomerKind>,
    /// The version you read (from get_customer or find_customers).
    version: String,
    /// New name.
    name: Option<String>,
    /// New email.
    email: Option<String>,
    /// New phone.
    phone: Option<String>,
    /// New address.
    address: Option<String>,
}

/// The changed customer.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Output {
    customer: CustomerView,
    /// Who was told: nobody.
    notified: Vec<String>,
}

/// Changes a customer.
#[derive(Debug)]
pub(crate) struct UpdateCustomer {
    pub(crate) services: Services,
}

impl Tool for UpdateCustomer {
    type Input = Input;
    type Output = Output;
    const NAME: &'static str = "update_customer";
    const TITLE: &'static str = "Update a customer";
    const DESCRIPTION: &'static str = "Changes a customer's name, email, phone or address; send the version you read. Fields left out stay as they are. Sends nothing to anyone; create_customer makes new customers. Example: {\"customer\": \"cus_4fK2aZ9qLm3Xt7Bv1NcR\", \"version\": \"3f9a1c2b7d4e\", \"phone\": \"+44 20 7946 0001\"}";
    const CORE_DESCRIPTION: Option<&'static str> = Some(
        "Changes a customer's name, email, phone or address; send the version you read. Sends nothing. Example: {\"customer\": \"cus_4fK2aZ9qLm3Xt7Bv1NcR\", \"version\": \"3f9a1c2b7d4e\", \"phone\": \"+44 20 7946 0001\"}",
    );
    type Effect = mcp_pipeline::effects::SilentWrite;
    const POLICY: Policy = Policy::listed_in(Toolset::Core).requires(&[rights::BOOKINGS_WRITE]);

    async fn call(
        &self,
        ctx: ToolContext<Self::Effect>,
        input: Input,
    ) -> Result<Success<Output>, CallError> {
        let actor = actor(&ctx)?;
        let id = CustomerId::new(input.customer.id());
        let patch = CustomerPatch {
            name: input.name,
            email: input.email,
            phone: input.phone,
            address: input.address,
        };
        let change = self
            .services
            .customers
            .update(&actor, &id, &input.version, patch)
            .await
            .map_err(error)?;
        let customer = apply(&ctx.writes, change);
        let handle = customer.handle();
        Ok(Success::new(
            format!("Updated customer {handle}; nobody was notified."),
            Output {
                customer: CustomerView::new(&customer, &self.services.console_base),
                notified: Vec::new(),
            },
        )
        .next_step(format!("get_customer {{\"customer\": \"{handle}\"}}")))
    }
}
