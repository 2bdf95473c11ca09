//! `list_recent_changes`: what this connection (or, with the right, the tenant) changed lately.

use std::sync::Arc;

use mcp_pipeline::{CallError, ErrorKind, Policy, Success, Tool, ToolContext, ToolError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use store::Store;

/// Whose changes to list.
#[derive(Debug, Clone, Copy, Default, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Scope {
    /// Only this connection's changes.
    #[default]
    Connection,
    /// Every change in the workspace (needs the audit:read right).
    Tenant,
}

/// Arguments of `list_recent_changes`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RecentInput {
    /// `connection` (default) or `tenant`.
    #[serde(default)]
    scope: Scope,
    /// How many changes, newest first (1 to 50, default 20).
    #[schemars(range(min = 1, max = 50))]
    limit: Option<u32>,
}

/// One change.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Change {
    /// When (UTC, RFC 3339).
    at: String,
    /// What was done.
    action: String,
    /// How it ended.
    outcome: String,
    /// Public ids of the objects concerned.
    ids: Vec<String>,
    /// `mcp`, `web`, `api` or `cli`.
    channel: String,
    /// The connection, for MCP changes.
    connection: Option<String>,
    /// How an executed action was approved: `client_prompt` (the client called
    /// confirm_action), `elicitation` (the client asked its user) or `product_page:<member>`;
    /// null for changes that needed no approval.
    approval: Option<String>,
}

/// The changes.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct RecentOutput {
    /// Newest first.
    changes: Vec<Change>,
    /// Whether older changes exist than are shown.
    more: bool,
}

/// Lists recent changes from the audit trail.
#[derive(Debug)]
pub(crate) struct ListRecentChanges {
    pub(crate) store: Arc<dyn Store>,
}

impl Tool for ListRecentChanges {
    type Input = RecentInput;
    type Output = RecentOutput;
    const NAME: &'static str = "list_recent_changes";
    const TITLE: &'static str = "Recent changes";
    const DESCRIPTION: &'static str = "Lists what this connection changed recently, newest first, from the audit \
        trail; with scope \"tenant\" and the audit:read right, every change in the workspace. Use it \
        before creating something to find work done earlier. Changes nothing. Example: {\"limit\": 10}";
    const CORE_DESCRIPTION: Option<&'static str> = Some(
        "Lists what this connection changed recently, newest first. Changes nothing. Example: {\"limit\": 10}",
    );
    type Effect = mcp_pipeline::effects::Read;
    // The audit trail names the product's objects, so reading it needs the product's read right.
    const POLICY: Policy = Policy::CORE;

    async fn call(
        &self,
        ctx: ToolContext<Self::Effect>,
        input: RecentInput,
    ) -> Result<Success<RecentOutput>, CallError> {
        let Some(caller) = ctx.exec.caller.as_ref() else {
            return Err(ToolError::new(
                ErrorKind::Forbidden,
                "No connection is bound to this request",
                "Call through an authenticated connection",
            )
            .handover("The client is not connected to a workspace; the user connects it with an MCP token")
            .into());
        };
        let limit = mcp_pipeline::search_limit(input.limit, 20)?;
        let connection = match input.scope {
            Scope::Connection => Some(&caller.connection),
            Scope::Tenant if caller.rights.contains(identity::audit::AUDIT_READ) => None,
            Scope::Tenant => {
                return Err(ToolError::new(
                    ErrorKind::Forbidden,
                    "Listing every change in the workspace needs the audit:read right",
                    "List this connection's changes instead",
                )
                .next_call("list_recent_changes {\"scope\": \"connection\"}")
                .into());
            }
        };
        let entries =
            identity::audit::recent(self.store.as_ref(), &caller.tenant, connection, limit + 1)
                .await
                .map_err(|e| CallError::Other(Box::new(e)))?;
        let more = entries.len() > limit;
        let changes: Vec<Change> = entries
            .into_iter()
            .take(limit)
            .map(|e| {
                let connection = match &e.channel {
                    identity::Channel::Mcp { connection, .. } => Some(connection.clone()),
                    _ => None,
                };
                Change {
                    at: e.at,
                    action: e.action,
                    outcome: e.outcome,
                    ids: e.ids,
                    channel: e.channel.name().into(),
                    connection,
                    approval: e.approval,
                }
            })
            .collect();
        let summary = match (changes.len(), input.scope) {
            (0, Scope::Connection) => "This connection has changed nothing yet.".to_owned(),
            (0, Scope::Tenant) => "Nothing has changed in this workspace yet.".to_owned(),
            (1, _) if !more => "1 change.".to_owned(),
            (n, _) if more => format!(
                "The {n} most recent changes, newest first; older ones exist (raise limit, at most 50)."
            ),
            (n, _) => format!("{n} changes, newest first."),
        };
        Ok(Success::new(summary, RecentOutput { changes, more }))
    }
}
