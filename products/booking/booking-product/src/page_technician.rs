//! `page_technician`: prepares paging a technician by text message.

use booking::TechnicianId;
use booking::rights;
use mcp_pipeline::{CallError, Handle, Policy, Prepared, Success, Tool, ToolContext, Toolset};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::Services;
use crate::adapter::{TechnicianKind, actor, apply_sending, error};
use crate::present::TechnicianView;

/// Arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Input {
    /// The technician's handle.
    technician: Handle<TechnicianKind>,
    /// The text to send (1 to 300 characters).
    message: String,
}

/// The paged technician.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Output {
    technician: TechnicianView,
    /// Who is paged (by handle; the number stays private).
    notified: Vec<String>,
}

/// Pages a technician.
#[derive(Debug)]
pub(crate) struct PageTechnician {
    pub(crate) services: Services,
}

impl Tool for PageTechnician {
    type Input = Input;
    type Output = Output;
    const NAME: &'static str = "page_technician";
    const TITLE: &'static str = "Page a technician";
    const DESCRIPTION: &'static str = "Prepares paging a technician with a text message to their private phone, which may wake them; returns a preview and a confirm_token, nothing is sent until confirm_action. Example: {\"technician\": \"tec_9dL2mQ7xZk1VbN3cR5tW\", \"message\": \"Burst pipe at Hauptstr. 1, please call.\"}";
    type Effect = mcp_pipeline::effects::Wake;
    const POLICY: Policy =
        Policy::listed_in(Toolset::Standard).requires(&[rights::TECHNICIANS_PAGE]);

    async fn call(
        &self,
        ctx: ToolContext<Self::Effect>,
        input: Input,
    ) -> Result<Prepared<Output>, CallError> {
        let actor = actor(&ctx)?;
        let id = TechnicianId::new(input.technician.id());
        let change = self
            .services
            .technicians
            .page(&actor, &id, &input.message)
            .await
            .map_err(error)?;
        let notified = change.notified.clone();
        let t = apply_sending(&ctx.writes, change);
        let preview = ctx.writes.preview(
            format!(
                "Page {} ({}): \"{}\"",
                t.name,
                t.handle(),
                input.message.trim()
            ),
            json!({"technician": t.handle(), "message": input.message.trim()}),
        );
        Ok(preview.answer(Success::new(
            format!("Paged {}.", t.name),
            Output {
                technician: TechnicianView::new(&t, &self.services.console_base),
                notified,
            },
        )))
    }
}
