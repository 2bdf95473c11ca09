//! The helpdesk's per-tool decorators (seed 2, ADR 49), registered with the tools they watch:
//! a guard that reads the tool's metadata, an interceptor that adds to a successful answer, and
//! an exception handler that turns the helpdesk's own errors into errors a model can act on.

use gatehouse_tool::{
    ErrorKind, ExceptionHandler, ExecutionContext, Guard, Interceptor, Next, Refusal, ToolError,
    ToolResult,
};

use crate::tickets::HelpdeskError;

/// The metadata key of the longest reply a tool lets out (characters).
pub const MAX_REPLY_CHARS: &str = "helpdesk.example/max_reply_chars";

/// Refuses a reply longer than the tool's [`MAX_REPLY_CHARS`] metadata says: support replies
/// are short, and a long one is more often a model pasting a thread than an answer.
#[derive(Debug)]
pub struct ReplyLength;

#[async_trait::async_trait]
impl Guard for ReplyLength {
    async fn check(&self, ctx: &ExecutionContext) -> Result<(), Refusal> {
        let Some(max) = ctx.metadata(MAX_REPLY_CHARS).and_then(|v| v.as_u64()) else {
            return Ok(());
        };
        let length = ctx
            .arguments
            .get("message")
            .and_then(|m| m.as_str())
            .map_or(0, |m| m.chars().count());
        if u64::try_from(length).unwrap_or(u64::MAX) > max {
            return Err(Refusal::new(format!(
                "A reply has at most {max} characters; this one has {length}. Write a shorter \
                 reply that answers the customer's question"
            )));
        }
        Ok(())
    }
}

/// Tells the model that the customer sees the reply signed by the support team, not by it.
#[derive(Debug)]
pub struct SignedReplies;

/// The note [`SignedReplies`] adds.
pub const SIGNED_NOTE: &str =
    "The customer sees the reply signed by the workspace's support team, not by an agent.";

impl Interceptor for SignedReplies {
    fn intercept<'a>(
        &'a self,
        _ctx: &'a ExecutionContext,
        next: Next<'a>,
    ) -> futures_util::future::BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let mut result = next.run().await;
            if !result.is_error() {
                result.warn(SIGNED_NOTE.to_owned());
            }
            result
        })
    }
}

/// The helpdesk's errors as a model reads them: what is wrong and the call that helps.
#[derive(Debug)]
pub struct HelpdeskErrors;

#[async_trait::async_trait]
impl ExceptionHandler for HelpdeskErrors {
    async fn catch(
        &self,
        error: &(dyn std::error::Error + Send + Sync + 'static),
        _ctx: &ExecutionContext,
    ) -> Option<ToolError> {
        let error = error.downcast_ref::<HelpdeskError>()?;
        Some(match error {
            HelpdeskError::NotFound(handle) => ToolError::new(
                ErrorKind::NotFound,
                format!("There is no ticket {handle} in this workspace"),
                "Find the ticket first",
            )
            .next_call("find_tickets {\"status\": \"all\"}"),
            HelpdeskError::Closed(handle) => ToolError::new(
                ErrorKind::Conflict,
                format!("Ticket {handle} is closed: nothing goes out for a closed ticket"),
                "Tell the user the ticket is closed; open a new ticket if the customer wrote again",
            )
            .handover(format!(
                "Ticket {handle} is closed; ask the user whether to open a new ticket"
            ))
            .detail("ticket", handle.clone()),
            HelpdeskError::Stale {
                handle, current, ..
            } => ToolError::new(
                ErrorKind::Conflict,
                error.to_string(),
                "Read the ticket again and decide with what it says now",
            )
            .next_call(format!("get_ticket {{\"ticket\": \"{handle}\"}}"))
            .detail("current_version", *current),
            HelpdeskError::Store(e) if e.is_retryable() => ToolError::store_unavailable(),
            HelpdeskError::Store(_) => return None,
        })
    }
}
