//! Effect classes and the one function that derives a tool's annotations from its class.

use serde::Serialize;
use serde_json::{Value, json};

/// What calling a tool does to the world. Every tool has exactly one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EffectClass {
    /// Reads only.
    Read,
    /// Writes state nobody is told about (no message, no page, no alarm).
    SilentWrite,
    /// Sends a message to a person outside (a customer, a technician).
    Notify,
    /// Wakes someone up (pages an on-call person).
    Wake,
    /// Raises or silences an alert.
    Alerting,
    /// Deletes something.
    Delete,
}

impl EffectClass {
    /// Whether the class runs only after a confirmation (prepare first, `confirm_action`
    /// executes).
    pub fn needs_confirmation(self) -> bool {
        matches!(
            self,
            EffectClass::Notify | EffectClass::Wake | EffectClass::Alerting | EffectClass::Delete
        )
    }

    /// The tool annotations, derived here and nowhere else.
    ///
    /// `idempotentHint` is true for silent writes because the pipeline replays an identical
    /// call instead of running it twice; `openWorldHint` is true where the effect reaches
    /// people outside the product.
    pub fn annotations(self, title: &str) -> Value {
        let (read_only, destructive, idempotent, open_world) = match self {
            EffectClass::Read => (true, false, true, false),
            EffectClass::SilentWrite => (false, false, true, false),
            EffectClass::Notify => (false, false, false, true),
            EffectClass::Wake => (false, false, false, true),
            EffectClass::Alerting => (false, true, false, true),
            EffectClass::Delete => (false, true, false, false),
        };
        json!({
            "title": title,
            "readOnlyHint": read_only,
            "destructiveHint": destructive,
            "idempotentHint": idempotent,
            "openWorldHint": open_world,
        })
    }
}
