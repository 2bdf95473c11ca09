//! `create_customer`: a new customer (silent: nobody is told).

use booking::NewCustomer;
use booking::rights;
use mcp_pipeline::{CallError, Policy, Success, Tool, ToolContext, Toolset};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::Services;
use crate::adapter::{actor, apply, error};
use crate::present::CustomerView;

/// Arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Input {
    /// Full name.
    name: String,
    /// Email address; one customer per address.
    email: String,
    /// Phone number.
    phone: Option<String>,
    /// Postal address.
    address: Option<String>,
    /// Create a second customer with this email anyway (needs `reason`).
    separate: Option<bool>,
    /// Why a second customer with this email is needed.
    reason: Option<String>,
}

/// The new customer.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Output {
    customer: CustomerView,
    /// Who was told: nobody, this tool sends nothing.
    notified: Vec<String>,
}

/// Creates a customer.
#[derive(Debug)]
pub(crate) struct CreateCustomer {
    pub(crate) services: Services,
}

impl Tool for CreateCustomer {
    type Input = Input;
    type Output = Output;
    const NAME: &'static str = "create_customer";
    const TITLE: &'static str = "Create a customer";
    const DESCRIPTION: &'static str = "Creates a customer record. Use it for a person who is not a customer yet; if one exists with the email, the error names it and update_customer changes it. Sends nothing to anyone. Example: {\"name\": \"Ada Lovelace\", \"email\": \"ada@example.com\", \"phone\": \"+44 20 7946 0000\"}";
    const CORE_DESCRIPTION: Option<&'static str> = Some(
        "Creates a customer; if one has the email, the error names it. Sends nothing. Example: {\"name\": \"Ada Lovelace\", \"email\": \"ada@example.com\"}",
    );
    type Effect = mcp_pipeline::effects::SilentWrite;
    const POLICY: Policy = Policy::listed_in(Toolset::Core).requires(&[rights::BOOKINGS_WRITE]);

    async fn call(
        &self,
        ctx: ToolContext<Self::Effect>,
        input: Input,
    ) -> Result<Success<Output>, CallError> {
        let actor = actor(&ctx)?;
        let reason = crate::adapter::separate_reason(
            input.separate,
            input.reason.as_deref(),
            "a second customer with this email",
        )?;
        let new = NewCustomer {
            name: input.name,
            email: input.email,
            phone: input.phone,
            address: input.address,
            notes: None,
        };
        let change = self
            .services
            .customers
            .create(&actor, new, reason)
            .map_err(error)?;
        let customer = apply(&ctx.writes, change);
        let handle = customer.handle();
        Ok(Success::new(
            format!("Created customer {handle}; nobody was notified."),
            Output {
                customer: CustomerView::new(&customer, &self.services.console_base),
                notified: Vec::new(),
            },
        )
        .next_step(format!("get_customer {{\"customer\": \"{handle}\"}}")))
    }
}
