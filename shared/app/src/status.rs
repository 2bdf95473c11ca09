//! `get_server_status`: what this server is and which protocol revisions it speaks.

use mcp_pipeline::{CallError, Success, Tool, ToolContext};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// No arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct StatusInput {}

/// The server's self-description.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct StatusOutput {
    /// The server's version.
    pub(crate) version: String,
    /// The store backend of this deployment.
    pub(crate) store_backend: String,
    /// Protocol revisions answered.
    pub(crate) protocol_versions: Vec<String>,
}

/// Reports the server version, store backend and protocol revisions.
#[derive(Debug)]
pub(crate) struct GetServerStatus {
    /// The store backend's name.
    pub(crate) backend: String,
}

impl Tool for GetServerStatus {
    type Input = StatusInput;
    type Output = StatusOutput;
    const NAME: &'static str = "get_server_status";
    const TITLE: &'static str = "Server status";
    const DESCRIPTION: &'static str = "Returns this gatehouse server's version, its store backend and the MCP \
        protocol revisions it answers. Takes no arguments and changes nothing; use it to check the \
        connection works. Example: {}";
    type Effect = mcp_pipeline::effects::Read;

    async fn call(
        &self,
        _ctx: ToolContext<Self::Effect>,
        _input: StatusInput,
    ) -> Result<Success<StatusOutput>, CallError> {
        Ok(Success::new(
            format!(
                "gatehouse {} is running on the {} store.",
                env!("CARGO_PKG_VERSION"),
                self.backend
            ),
            StatusOutput {
                version: env!("CARGO_PKG_VERSION").into(),
                store_backend: self.backend.clone(),
                protocol_versions: mcp_protocol::SUPPORTED_VERSIONS
                    .iter()
                    .map(|v| (*v).to_owned())
                    .collect(),
            },
        ))
    }
}
