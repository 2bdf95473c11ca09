//! The `Tool` trait: typed input and output, derived schemas, one effect class.

use std::future::Future;

use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::{CallError, EffectClass, Success, ToolContext};

/// One MCP tool. Input and output are types; their JSON Schemas are derived, never written.
///
/// The input type should carry `#[serde(deny_unknown_fields)]`; the pipeline rejects unknown
/// fields with the list of allowed ones before the body runs either way.
pub trait Tool: Send + Sync + 'static {
    /// The arguments.
    type Input: DeserializeOwned + JsonSchema + Send + 'static;
    /// The output fields placed after `summary` in a successful result (an object).
    type Output: Serialize + JsonSchema + Send + 'static;

    /// `verb_object`, snake_case, at most 40 characters.
    const NAME: &'static str;
    /// A short human title.
    const TITLE: &'static str;
    /// What the tool does, when to use it, and what it will not do.
    const DESCRIPTION: &'static str;
    /// What calling it does to the world.
    const EFFECT: EffectClass;

    /// Runs the tool.
    fn call(
        &self,
        ctx: ToolContext,
        input: Self::Input,
    ) -> impl Future<Output = Result<Success<Self::Output>, CallError>> + Send;
}

/// Asks the client for input before the call can finish (a multi round-trip request): the
/// client retries the same call with `inputResponses` and the echoed `requestState`.
#[derive(Debug, Clone, PartialEq)]
pub struct InputRequired {
    /// Requests keyed by name (`elicitation/create`, `sampling/createMessage`, `roots/list`).
    pub input_requests: Option<Value>,
    /// Opaque state the client must echo (integrity-protected by whoever sets it).
    pub request_state: Option<String>,
}
