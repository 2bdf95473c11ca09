//! Per-tool guards, interceptors and exception handlers.
//!
//! They are registered with the tool in one [`crate::ToolSpec`], so none can be dropped by an
//! ordering mistake. HTTP middleware (tower layers) are not guards: they act on the transport
//! and have no way in here.

use std::error::Error as StdError;
use std::sync::Arc;

use futures_util::future::BoxFuture;

use crate::{ExecutionContext, ToolError, ToolResult};

/// Why a guard refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// What the model should know (cause and, where possible, the fix).
    pub reason: String,
}

impl Refusal {
    /// A refusal with a reason.
    pub fn new(reason: impl Into<String>) -> Self {
        Refusal {
            reason: reason.into(),
        }
    }
}

/// A check that runs before the tool; the first refusal wins and the tool body never runs.
#[async_trait::async_trait]
pub trait Guard: Send + Sync + 'static {
    /// The name shown in the refusal's details (defaults to the type's name).
    fn name(&self) -> &str {
        short_type_name::<Self>()
    }

    /// Allows the call, or refuses it.
    async fn check(&self, ctx: &ExecutionContext) -> Result<(), Refusal>;
}

/// The rest of the chain, for an interceptor to run.
pub struct Next<'a> {
    #[doc(hidden)]
    pub rest: &'a [Arc<dyn Interceptor>],
    #[doc(hidden)]
    pub ctx: &'a ExecutionContext,
    #[doc(hidden)]
    pub innermost: &'a (dyn Fn() -> BoxFuture<'a, ToolResult> + Send + Sync),
}

impl std::fmt::Debug for Next<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Next")
            .field("remaining", &self.rest.len())
            .finish()
    }
}

impl<'a> Next<'a> {
    /// Runs the inner interceptors and the tool, and returns their result.
    pub fn run(self) -> BoxFuture<'a, ToolResult> {
        match self.rest.split_first() {
            Some((first, rest)) => {
                let next = Next {
                    rest,
                    ctx: self.ctx,
                    innermost: self.innermost,
                };
                first.intercept(self.ctx, next)
            }
            None => (self.innermost)(),
        }
    }
}

/// Wraps a call: the first registered is outermost (runs first and last). It sees and may
/// change the result.
pub trait Interceptor: Send + Sync + 'static {
    /// Wraps the rest of the chain.
    fn intercept<'a>(
        &'a self,
        ctx: &'a ExecutionContext,
        next: Next<'a>,
    ) -> BoxFuture<'a, ToolResult>;
}

/// The error a tool body returns: one the model can act on, or an unexpected one that
/// exception handlers may translate.
#[derive(Debug)]
pub enum CallError {
    /// Already phrased for the model.
    Tool(ToolError),
    /// Anything else (matched by type by exception handlers, else a generic internal error).
    Other(Box<dyn StdError + Send + Sync + 'static>),
    /// Not a failure: the call needs input from the client first (see [`crate::InputRequired`]).
    InputRequired(crate::InputRequired),
}

impl From<ToolError> for CallError {
    fn from(e: ToolError) -> Self {
        CallError::Tool(e)
    }
}

impl<E: StdError + Send + Sync + 'static> From<E> for CallError {
    fn from(e: E) -> Self {
        CallError::Other(Box::new(e))
    }
}

/// Translates an unexpected error into a model-facing one, or declines (`None`) so the next
/// handler is tried.
#[async_trait::async_trait]
pub trait ExceptionHandler: Send + Sync + 'static {
    /// Handles the error, or passes.
    async fn catch(
        &self,
        error: &(dyn StdError + Send + Sync + 'static),
        ctx: &ExecutionContext,
    ) -> Option<ToolError>;
}

/// An exception handler for one error type, from a closure that may still decline.
pub fn handle_error<E, F>(f: F) -> impl ExceptionHandler
where
    E: StdError + 'static,
    F: Fn(&E, &ExecutionContext) -> Option<ToolError> + Send + Sync + 'static,
{
    TypedHandler {
        f,
        _e: std::marker::PhantomData::<fn(&E)>,
    }
}

struct TypedHandler<E, F> {
    f: F,
    _e: std::marker::PhantomData<fn(&E)>,
}

#[async_trait::async_trait]
impl<E, F> ExceptionHandler for TypedHandler<E, F>
where
    E: StdError + 'static,
    F: Fn(&E, &ExecutionContext) -> Option<ToolError> + Send + Sync + 'static,
{
    async fn catch(
        &self,
        error: &(dyn StdError + Send + Sync + 'static),
        ctx: &ExecutionContext,
    ) -> Option<ToolError> {
        error.downcast_ref::<E>().and_then(|e| (self.f)(e, ctx))
    }
}

pub(crate) fn short_type_name<T: ?Sized>() -> &'static str {
    let full = std::any::type_name::<T>();
    let base = full.split('<').next().unwrap_or(full);
    base.rsplit("::").next().unwrap_or(base)
}
