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

/// The effect classes as types. A tool names one as its [`Tool::Effect`](crate::Tool::Effect),
/// and the compiler then holds its body to what the class may do: a read's context has no way
/// to plan a write, only a two-step class can preview, and a two-step body must return its
/// preview ([`Prepared`](crate::Prepared)).
pub mod effects {
    /// Reads only: the body plans nothing ([`NoWrites`](crate::NoWrites)).
    #[derive(Debug, Clone, Copy)]
    pub struct Read;
    /// Writes state nobody is told about: the body plans writes ([`Writes`](crate::Writes)).
    #[derive(Debug, Clone, Copy)]
    pub struct SilentWrite;
    /// Sends a message to a person outside: two steps ([`TwoStepWrites`](crate::TwoStepWrites)).
    #[derive(Debug, Clone, Copy)]
    pub struct Notify;
    /// Wakes someone up: two steps.
    #[derive(Debug, Clone, Copy)]
    pub struct Wake;
    /// Raises or silences an alert: two steps.
    #[derive(Debug, Clone, Copy)]
    pub struct Alerting;
    /// Deletes something: two steps.
    #[derive(Debug, Clone, Copy)]
    pub struct Delete;
}

mod sealed {
    pub trait Sealed {}
}

/// An effect class as a type (one of [`effects`]): what the body's context lets it plan and
/// what it must return. Sealed: the six classes are the platform's.
pub trait Effect: sealed::Sealed + Send + Sync + 'static {
    /// The class.
    const CLASS: EffectClass;
    /// What the body plans through (`ctx.writes`).
    type Plan: Clone + std::fmt::Debug + Send + Sync + 'static;
    /// What the body returns on success.
    type Answer<O>;
    #[doc(hidden)]
    fn plan(writes: crate::Writes) -> Self::Plan;
    #[doc(hidden)]
    fn success<O>(answer: Self::Answer<O>) -> crate::Success<O>;
}

macro_rules! effect {
    ($marker:ident, $class:ident, $plan:ty, $answer:ident, $plan_of:expr, $success_of:expr) => {
        impl sealed::Sealed for effects::$marker {}
        impl Effect for effects::$marker {
            const CLASS: EffectClass = EffectClass::$class;
            type Plan = $plan;
            type Answer<O> = crate::$answer<O>;
            fn plan(writes: crate::Writes) -> $plan {
                $plan_of(writes)
            }
            fn success<O>(answer: crate::$answer<O>) -> crate::Success<O> {
                $success_of(answer)
            }
        }
    };
}

effect!(
    Read,
    Read,
    crate::NoWrites,
    Success,
    |_| crate::NoWrites,
    |s| s
);
effect!(
    SilentWrite,
    SilentWrite,
    crate::Writes,
    Success,
    |w| w,
    |s| s
);
effect!(
    Notify,
    Notify,
    crate::TwoStepWrites,
    Prepared,
    crate::TwoStepWrites,
    crate::Prepared::into_success
);
effect!(
    Wake,
    Wake,
    crate::TwoStepWrites,
    Prepared,
    crate::TwoStepWrites,
    crate::Prepared::into_success
);
effect!(
    Alerting,
    Alerting,
    crate::TwoStepWrites,
    Prepared,
    crate::TwoStepWrites,
    crate::Prepared::into_success
);
effect!(
    Delete,
    Delete,
    crate::TwoStepWrites,
    Prepared,
    crate::TwoStepWrites,
    crate::Prepared::into_success
);
