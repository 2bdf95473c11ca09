//! What every MCP write transaction carries: the switch checks and the audit row.

use mcp_pipeline::{CommitContext, CommitHooks, ErrorKind, ToolError};
use store::TransactOp;

use crate::{AuditEntry, Channel, switch};

/// Adds the kill-switch and agent-access checks and the `mcp` audit row to every write.
#[derive(Debug, Clone, Copy, Default)]
pub struct McpCommitHooks;

impl CommitHooks for McpCommitHooks {
    fn ops(&self, call: &CommitContext<'_>) -> Vec<(TransactOp, ToolError)> {
        let Some(caller) = call.caller else {
            return Vec::new();
        };
        let switched_off = || {
            ToolError::new(
                ErrorKind::Rejected,
                "Agent access was switched off while this call ran; nothing was written",
                "Stop and tell the user; an administrator has paused agent access",
            )
            .handover(
                "An administrator paused agent access for this workspace; nothing was written",
            )
            .detail("switched_off", true)
        };
        let mut ops: Vec<(TransactOp, ToolError)> = switch::write_guards(&caller.tenant)
            .into_iter()
            .map(|op| (op, switched_off()))
            .collect();
        let audit = AuditEntry {
            tenant: caller.tenant.clone(),
            actor: caller.creator.clone(),
            channel: Channel::Mcp {
                connection: caller.connection.as_str().to_owned(),
                client: caller.client_name.clone(),
            },
            action: call.tool.to_owned(),
            outcome: call.outcome.into(),
            approval: call.approval.map(str::to_owned),
            ids: call.ids.to_vec(),
            reason: None,
            at: crate::rfc3339_at(call.now_micros),
        };
        let retry = ToolError::new(
            ErrorKind::Conflict,
            "The change could not be recorded",
            "Send the same call again",
        )
        .detail("retry_after_seconds", 1);
        ops.push((audit.op_keyed(call.request_id), retry));
        ops
    }
}
