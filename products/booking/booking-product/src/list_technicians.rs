//! `list_technicians`: every technician of the workspace.

use booking::rights;
use mcp_pipeline::{CallError, Policy, Success, Tool, ToolContext, Toolset};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::Services;
use crate::adapter::{actor, error};
use crate::present::TechnicianView;

/// No arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Input {}

/// The technicians.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Output {
    technicians: Vec<TechnicianView>,
}

/// Lists technicians.
#[derive(Debug)]
pub(crate) struct ListTechnicians {
    pub(crate) services: Services,
}

impl Tool for ListTechnicians {
    type Input = Input;
    type Output = Output;
    const NAME: &'static str = "list_technicians";
    const TITLE: &'static str = "List technicians";
    const DESCRIPTION: &'static str = "Lists the workspace's technicians with handles, skills, working hours, time zone and on-call state. Use it to pick a technician for a booking. Changes nothing. Example: {}";
    type Effect = mcp_pipeline::effects::Read;
    const POLICY: Policy = Policy::listed_in(Toolset::Core).requires(&[rights::BOOKINGS_READ]);

    async fn call(
        &self,
        ctx: ToolContext<Self::Effect>,
        _input: Input,
    ) -> Result<Success<Output>, CallError> {
        let actor = actor(&ctx)?;
        let list = self
            .services
            .technicians
            .list(&actor)
            .await
            .map_err(error)?;
        let technicians: Vec<TechnicianView> = list
            .iter()
            .map(|t| TechnicianView::new(t, &self.services.console_base))
            .collect();
        Ok(Success::new(
            match technicians.len() {
                0 => "This workspace has no technicians.".to_owned(),
                1 => "1 technician.".to_owned(),
                n => format!("{n} technicians."),
            },
            Output { technicians },
        ))
    }
}
