//! `delete_customer`: prepares deleting a customer; `confirm_action` deletes.

use booking::CustomerId;
use booking::rights;
use mcp_pipeline::{CallError, Handle, Policy, Prepared, Success, Tool, ToolContext, Toolset};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::Services;
use crate::adapter::{CustomerKind, actor, apply_sending, error};
use crate::present::CustomerView;

/// Arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Input {
    /// The customer's handle.
    customer: Handle<CustomerKind>,
}

/// The customer that will be deleted.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Output {
    customer: CustomerView,
    /// Who is told: nobody.
    notified: Vec<String>,
}

/// Deletes a customer after confirmation.
#[derive(Debug)]
pub(crate) struct DeleteCustomer {
    pub(crate) services: Services,
}

impl Tool for DeleteCustomer {
    type Input = Input;
    type Output = Output;
    const NAME: &'static str = "delete_customer";
    const TITLE: &'static str = "Delete a customer";
    const DESCRIPTION: &'static str = "Prepares deleting a customer record and returns a preview with a confirm_token; nothing is deleted until confirm_action. Refused while the customer has open bookings: cancel those first. Example: {\"customer\": \"cus_4fK2aZ9qLm3Xt7Bv1NcR\"}";
    type Effect = mcp_pipeline::effects::Delete;
    const POLICY: Policy = Policy::listed_in(Toolset::Standard).requires(&[rights::RECORDS_DELETE]);

    async fn call(
        &self,
        ctx: ToolContext<Self::Effect>,
        input: Input,
    ) -> Result<Prepared<Output>, CallError> {
        let actor = actor(&ctx)?;
        let id = CustomerId::new(input.customer.id());
        let change = self
            .services
            .customers
            .delete(&actor, &id)
            .await
            .map_err(error)?;
        let customer = apply_sending(&ctx.writes, change);
        let handle = customer.handle();
        let preview = ctx.writes.preview(
            format!("Delete customer {handle} ({}).", customer.email),
            json!({"customer": handle, "version": customer.version}),
        );
        Ok(preview.answer(Success::new(
            format!("Deleted customer {handle}."),
            Output {
                customer: CustomerView::new(&customer, &self.services.console_base),
                notified: Vec::new(),
            },
        )))
    }
}
