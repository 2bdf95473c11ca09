//! The `Tool` trait: typed input and output, derived schemas, one effect class.

use std::future::Future;

use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::{CallError, Effect, ToolContext, Toolset};

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
    /// What calling it does to the world: one of [`effects`](crate::effects). The body's
    /// context and answer follow from it.
    type Effect: Effect;
    /// Who may call it and where it is listed, stated beside the tool's code.
    const POLICY: Policy = Policy::CORE;
    /// A shorter description for the core toolset (small models): one sentence and the
    /// example. `None`: the core toolset shows [`Tool::DESCRIPTION`].
    const CORE_DESCRIPTION: Option<&'static str> = None;

    /// Runs the tool: a `Success` for a read or a silent write, a
    /// [`Prepared`](crate::Prepared) (made from its preview) for a two-step class.
    fn call(
        &self,
        ctx: ToolContext<Self::Effect>,
        input: Self::Input,
    ) -> impl Future<Output = Result<<Self::Effect as Effect>::Answer<Self::Output>, CallError>> + Send;
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

/// A tool's policy: the rights a caller needs (the tool is hidden without them), the smallest
/// toolset that lists it, whether it counts as an expensive read, and whether only a person in
/// the product may approve it (money, binding steps).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    /// Rights the caller must hold.
    pub rights: &'static [&'static str],
    /// The smallest toolset that lists the tool.
    pub toolset: Toolset,
    /// Counted in the smaller bucket of expensive reads (searches that scan).
    pub expensive: bool,
    /// Approved only in the product, never by the client.
    pub approval_in_product: bool,
}

impl Policy {
    /// Listed everywhere, no rights needed.
    pub const CORE: Policy = Policy::listed_in(Toolset::Core);

    /// Listed from `toolset` up, no rights needed.
    pub const fn listed_in(toolset: Toolset) -> Policy {
        Policy {
            rights: &[],
            toolset,
            expensive: false,
            approval_in_product: false,
        }
    }

    /// The same, needing `rights`.
    pub const fn requires(self, rights: &'static [&'static str]) -> Policy {
        Policy { rights, ..self }
    }

    /// The same, counted as an expensive read.
    pub const fn expensive(self) -> Policy {
        Policy {
            expensive: true,
            ..self
        }
    }

    /// The same, approved only in the product.
    pub const fn approval_in_product(self) -> Policy {
        Policy {
            approval_in_product: true,
            ..self
        }
    }
}
