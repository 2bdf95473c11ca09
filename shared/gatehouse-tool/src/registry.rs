//! Registration: a tool and all its decorators in one value, listed in a fixed order.

use std::any::Any;
use std::collections::BTreeMap;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde_json::{Map, Value, json};

use crate::args::Synonym;
use crate::{
    CallContext, CallError, Effect, EffectClass, ErrorKind, ExceptionHandler, Guard, Interceptor,
    Success, Tool, ToolError,
};

/// Why a tool cannot be registered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegistryError {
    /// The name breaks the naming rule.
    #[error(
        "tool name {0:?} must be snake_case verb_object, 3 to 40 characters (or the registry's limit)"
    )]
    BadName(String),
    /// Two tools share a name.
    #[error("tool {0:?} is registered twice")]
    Duplicate(String),
    /// The input schema is not an object schema.
    #[error("tool {0:?}: the input type must be a struct (its schema must be an object)")]
    InputNotObject(String),
    /// The output schema is not an object schema.
    #[error("tool {0:?}: the output type must be a struct (its schema must be an object)")]
    OutputNotObject(String),
    /// Title or description missing.
    #[error("tool {0:?}: title and description must not be empty")]
    MissingText(String),
    /// A product tool takes a name the platform's own tools have.
    #[error("tool {0:?}: the name is the platform's own (confirm_action, reject_action)")]
    Reserved(String),
    /// Approval in the product asked of a tool that has nothing to approve.
    #[error(
        "tool {0:?}: approval in the product applies to two-step tools (notify, wake, alerting, delete); a read or a silent write has nothing to approve"
    )]
    ApprovalWithoutTwoSteps(String),
    /// What the product hands the platform beside its tools cannot be used.
    #[error("the product: {0}")]
    Product(String),
}

/// The names of the platform's confirmation tools, which no product tool may take.
pub const RESERVED_NAMES: [&str; 2] = ["confirm_action", "reject_action"];

/// A tool's arguments parsed into its input type, before its body runs.
pub type Parsed = Box<dyn Any + Send>;

/// A registered tool with its input type erased, as the pipeline calls it.
pub trait Runner: Send + Sync {
    /// Parses the arguments into the tool's input type.
    fn parse(&self, args: Value) -> Result<Parsed, ToolError>;
    /// Runs the tool's body on parsed arguments.
    fn run(
        &self,
        ctx: CallContext,
        input: Parsed,
    ) -> BoxFuture<'_, Result<Success<Value>, CallError>>;
}

struct TypedRunner<T>(T);

impl<T: Tool> Runner for TypedRunner<T> {
    fn parse(&self, args: Value) -> Result<Parsed, ToolError> {
        let input: T::Input = serde_path_to_error::deserialize(args).map_err(|e| {
            let path = e.path().to_string();
            let inner = e.into_inner().to_string();
            let message = if path == "." {
                inner
            } else {
                format!("`{path}`: {inner}")
            };
            ToolError::validation(
                format!("Invalid arguments: {message}"),
                "Correct the argument as described and call again",
            )
            .detail("field", path)
        })?;
        Ok(Box::new(input))
    }

    fn run(
        &self,
        ctx: CallContext,
        input: Parsed,
    ) -> BoxFuture<'_, Result<Success<Value>, CallError>> {
        Box::pin(async move {
            let Ok(input) = input.downcast::<T::Input>() else {
                return Err(CallError::Other(
                    "arguments of the wrong type reached the tool".into(),
                ));
            };
            let answer = self.0.call(ctx.typed::<T::Effect>(), *input).await?;
            let success = <T::Effect as Effect>::success(answer);
            let output =
                serde_json::to_value(&success.output).map_err(|e| CallError::Other(Box::new(e)))?;
            Ok(Success {
                summary: success.summary,
                output,
                next_steps: success.next_steps,
            })
        })
    }
}

/// A tool with its guards, interceptors, exception handlers, metadata and enum synonyms.
/// Everything that changes how one tool is called is stated here, next to the tool.
#[must_use = "a ToolSpec does nothing until it is registered"]
pub struct ToolSpec {
    pub(crate) name: &'static str,
    pub(crate) title: &'static str,
    pub(crate) description: &'static str,
    pub(crate) core_description: Option<&'static str>,
    pub(crate) effect: EffectClass,
    pub(crate) input_schema: Value,
    pub(crate) output_schema: Value,
    pub(crate) runner: Arc<dyn Runner>,
    pub(crate) guards: Vec<Arc<dyn Guard>>,
    pub(crate) interceptors: Vec<Arc<dyn Interceptor>>,
    pub(crate) handlers: Vec<Arc<dyn ExceptionHandler>>,
    pub(crate) metadata: BTreeMap<String, Value>,
    pub(crate) synonyms: Vec<Synonym>,
    pub(crate) required_rights: Vec<&'static str>,
    pub(crate) toolset: crate::Toolset,
    pub(crate) approval_in_product: bool,
    pub(crate) expensive: bool,
    pub(crate) deadline: std::time::Duration,
    /// The arguments that take a record's handle, with the record's noun (from the input
    /// schema's `<noun>Handle` definitions): where a name may stand instead.
    pub(crate) handle_fields: Vec<(String, String)>,
    /// For `confirm_action` and `reject_action`: the step the pipeline runs in place of a body.
    pub(crate) builtin: Option<Builtin>,
}

/// The confirmation tools' steps, run by the pipeline after every gate like any tool's body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Builtin {
    /// Execute a pending action.
    Confirm,
    /// Discard a pending action.
    Reject,
}

impl std::fmt::Debug for ToolSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolSpec")
            .field("name", &self.name)
            .field("effect", &self.effect)
            .field("guards", &self.guards.len())
            .field("interceptors", &self.interceptors.len())
            .field("handlers", &self.handlers.len())
            .finish()
    }
}

fn schema_value<T: schemars::JsonSchema>() -> Value {
    serde_json::to_value(schemars::schema_for!(T)).unwrap_or_else(|_| json!({"type": "object"}))
}

fn error_schema() -> Value {
    json!({
        "type": "object",
        "description": "An error result: `error` is true; `code` is stable; `message` and `fix` say what went wrong; `next_call` is the call that fixes it, or `handover` says what to tell or ask the user (with `options`, the calls to choose from).",
        "properties": {
            "error": {"const": true},
            // Every code an error result can carry, from the one list (a code missing here
            // would make a schema-checking client refuse a real answer).
            "code": {"type": "string", "enum": ErrorKind::ALL.map(ErrorKind::code)},
            "message": {"type": "string"},
            "fix": {"type": "string"},
            "next_call": {"type": "string", "description": "The call to make next, exactly as written."},
            "handover": {"type": "string", "description": "What to tell or ask the user, and why, when the model cannot go on alone."},
            "options": {"type": "array", "description": "The choices the user decides between, each with its exact call.", "items": {"type": "object", "properties": {"label": {"type": "string"}, "call": {"type": "string"}}, "required": ["label", "call"]}}
        },
        "required": ["error", "code", "message", "fix"]
    })
}

/// The output schema: the tool's success shape (summary, its fields, warnings, next steps) or
/// the error shape.
fn output_schema(mut success: Value) -> Option<Value> {
    let obj = success.as_object_mut()?;
    if obj.get("type").and_then(Value::as_str) != Some("object") {
        return None;
    }
    let defs = obj.remove("$defs");
    let dialect = obj.remove("$schema");
    obj.remove("title");
    let props = obj.entry("properties").or_insert_with(|| json!({}));
    let props = props.as_object_mut()?;
    let mut ordered = Map::new();
    ordered.insert(
        "summary".into(),
        json!({"type": "string", "description": "One sentence on what happened."}),
    );
    for (k, v) in std::mem::take(props) {
        ordered.insert(k, v);
    }
    ordered.insert(
        "warnings".into(),
        json!({"type": "array", "items": {"type": "string"}}),
    );
    ordered.insert(
        "next_steps".into(),
        json!({"type": "array", "items": {"type": "string"}}),
    );
    *props = ordered;
    let required = obj.entry("required").or_insert_with(|| json!([]));
    if let Value::Array(list) = required {
        for name in ["summary", "warnings", "next_steps"] {
            list.push(name.into());
        }
    }
    obj.remove("additionalProperties");
    let mut root = json!({"type": "object", "anyOf": [success, error_schema()]});
    if let Some(dialect) = dialect {
        root["$schema"] = dialect;
    }
    if let Some(defs) = defs {
        root["$defs"] = defs;
    }
    Some(root)
}

/// A tool that prepares answers a preview first: say so in its output schema, so that clients
/// and the manifest checker can tell a preparing tool from one that executes at once.
fn add_preview_branch(root: &mut Value) {
    let preview = json!({
        "type": "object",
        "description": "A preview: nothing was done yet. confirm_action executes it (or a person approves it at approval_url, when there is one); reject_action discards it.",
        "properties": {
            "summary": {"type": "string"},
            "status": {"const": "PREVIEW"},
            "confirm_token": {"type": "string"},
            "confirm_summary": {"type": "string"},
            "preview": {"type": "object"},
            "if_confirmed": {"type": "object", "description": "What the tool would return once executed; nothing of it has happened yet."},
            "expires_in_seconds": {"type": "integer"},
            "approval_url": {"type": "string", "description": "Present when a person approves this action in the product; give it to the user."},
            "handover": {"type": "string", "description": "What to tell the user (with approval_url: where they approve it)."},
            "warnings": {"type": "array", "items": {"type": "string"}},
            "next_steps": {"type": "array", "items": {"type": "string"}}
        },
        "required": ["summary", "status", "confirm_token", "confirm_summary", "preview", "expires_in_seconds", "warnings", "next_steps"]
    });
    if let Some(branches) = root.get_mut("anyOf").and_then(Value::as_array_mut) {
        branches.insert(1, preview);
    }
}

/// The top-level properties whose schema is a `<noun>Handle` definition, with the noun.
fn handle_fields(input_schema: &Value) -> Vec<(String, String)> {
    let Some(props) = input_schema.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    props
        .iter()
        .filter_map(|(field, p)| {
            // `Option<Handle>` is `anyOf: [{$ref}, {type: null}]`.
            let reference = p.get("$ref").and_then(Value::as_str).or_else(|| {
                p.get("anyOf")?
                    .as_array()?
                    .iter()
                    .find_map(|o| o.get("$ref")?.as_str())
            })?;
            let noun = reference.strip_prefix("#/$defs/")?.strip_suffix("Handle")?;
            Some((field.clone(), noun.replace('_', " ")))
        })
        .collect()
}

impl ToolSpec {
    /// Starts the registration of `tool`.
    pub fn new<T: Tool>(tool: T) -> Self {
        let mut input_schema = schema_value::<T::Input>();
        if let Some(obj) = input_schema.as_object_mut() {
            obj.remove("title");
            // Unknown fields are refused by the pipeline, so say so in the schema too.
            obj.insert("additionalProperties".into(), Value::Bool(false));
        }
        crate::lengths::state_limits(&mut input_schema);
        if <T::Effect as Effect>::CLASS == EffectClass::SilentWrite
            && let Some(props) = input_schema
                .as_object_mut()
                .map(|o| o.entry("properties").or_insert_with(|| json!({})))
            && let Some(props) = props.as_object_mut()
        {
            props.insert(IDEMPOTENCY_KEY.into(), idempotency_property());
        }
        let mut output_schema = output_schema(schema_value::<T::Output>()).unwrap_or(Value::Null);
        if <T::Effect as Effect>::CLASS.needs_confirmation() {
            add_preview_branch(&mut output_schema);
        }
        let handle_fields = handle_fields(&input_schema);
        ToolSpec {
            name: T::NAME,
            title: T::TITLE,
            description: T::DESCRIPTION,
            core_description: T::CORE_DESCRIPTION,
            effect: <T::Effect as Effect>::CLASS,
            input_schema,
            output_schema,
            runner: Arc::new(TypedRunner(tool)),
            guards: Vec::new(),
            interceptors: Vec::new(),
            handlers: Vec::new(),
            metadata: BTreeMap::new(),
            synonyms: Vec::new(),
            required_rights: T::POLICY.rights.to_vec(),
            toolset: T::POLICY.toolset,
            approval_in_product: T::POLICY.approval_in_product,
            expensive: T::POLICY.expensive,
            deadline: DEFAULT_DEADLINE,
            handle_fields,
            builtin: None,
        }
    }

    /// A confirmation tool: spends the write bucket, has no replay record of its own (the
    /// action it executes commits once, guarded by the pending action's status).
    #[doc(hidden)]
    pub fn builtin<T: Tool>(tool: T, step: Builtin) -> Self {
        let mut spec = ToolSpec::new(tool);
        if let Some(props) = spec
            .input_schema
            .get_mut("properties")
            .and_then(Value::as_object_mut)
        {
            props.remove(IDEMPOTENCY_KEY);
        }
        spec.builtin = Some(step);
        spec
    }

    /// Adds a guard; guards run in the order added and the first refusal wins.
    pub fn guard(mut self, guard: impl Guard) -> Self {
        self.guards.push(Arc::new(guard));
        self
    }

    /// Adds an interceptor; the first added is outermost.
    pub fn interceptor(mut self, interceptor: impl Interceptor) -> Self {
        self.interceptors.push(Arc::new(interceptor));
        self
    }

    /// Adds an exception handler; handlers are tried in the order added.
    pub fn exception_handler(mut self, handler: impl ExceptionHandler) -> Self {
        self.handlers.push(Arc::new(handler));
        self
    }

    /// Sets a metadata value for this tool (it wins over the server-wide default).
    pub fn metadata(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.metadata.insert(key.to_owned(), value.into());
        self
    }

    /// Reads `from` as the enum value `to` in argument `field` (reported as a warning).
    pub fn synonym(mut self, field: &str, from: &str, to: &str) -> Self {
        self.synonyms.push(Synonym {
            field: field.into(),
            from: from.into(),
            to: to.into(),
        });
        self
    }

    /// Requires a right of the caller (the tool is hidden without it).
    pub fn requires(mut self, right: &'static str) -> Self {
        self.required_rights.push(right);
        self
    }

    /// For steps that move money or are legally binding: never ask for approval in the client
    /// (elicitation); only a person in the product's own page may approve.
    pub fn approval_in_product(mut self) -> Self {
        self.approval_in_product = true;
        self
    }

    /// Counts the tool in the smaller bucket of expensive reads (searches that scan).
    pub fn expensive(mut self) -> Self {
        self.expensive = true;
        self
    }

    /// How long the body may run before it is dropped (nothing it planned commits).
    pub fn deadline(mut self, deadline: std::time::Duration) -> Self {
        self.deadline = deadline;
        self
    }

    /// The smallest toolset that lists this tool (default: core, so every toolset has it).
    pub fn toolset(mut self, toolset: crate::Toolset) -> Self {
        self.toolset = toolset;
        self
    }

    /// Why the tool is hidden from `caller`, if it is. Missing rights are named first: a
    /// larger toolset would not let the caller use the tool, so pointing to one leads nowhere.
    pub fn hidden_from(&self, caller: &crate::Caller) -> Option<crate::Hidden> {
        let missing: Vec<String> = self
            .required_rights
            .iter()
            .filter(|r| !caller.rights.contains(**r))
            .map(|r| (*r).to_owned())
            .collect();
        if !missing.is_empty() {
            return Some(crate::Hidden::Rights(missing));
        }
        (self.toolset > caller.toolset).then_some(crate::Hidden::Toolset {
            needs: self.toolset,
            has: caller.toolset,
        })
    }

    /// The rights this tool requires.
    pub fn required_rights(&self) -> &[&'static str] {
        &self.required_rights
    }

    /// The class a client is told of: confirming executes what was prepared, with the
    /// external effect that brings.
    fn shown_effect(&self) -> EffectClass {
        match self.builtin {
            Some(Builtin::Confirm) => EffectClass::Alerting,
            _ => self.effect,
        }
    }

    /// The effect class.
    pub fn effect(&self) -> crate::EffectClass {
        self.effect
    }

    /// The tool's name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Whether a call executes an external effect at once (it does not prepare first): then
    /// its descriptor asks the client to prompt its user on every call (ADR 15). Every tool
    /// of a class above silent write prepares, so here that is `confirm_action`.
    pub fn executes_in_one_step(&self) -> bool {
        self.shown_effect().needs_confirmation() && !self.effect.needs_confirmation()
    }

    /// The `tools/list` entry for a connection of `toolset`: the core toolset gets the short
    /// description where the tool has one; `metadata` (the tool's own over the server's
    /// defaults) is its `_meta`.
    pub fn descriptor(&self, toolset: crate::Toolset, metadata: &BTreeMap<String, Value>) -> Value {
        let description = match (toolset, self.core_description) {
            (crate::Toolset::Core, Some(short)) => short,
            _ => self.description,
        };
        let mut descriptor = json!({
            "name": self.name,
            "title": self.title,
            "description": description,
            "inputSchema": self.input_schema,
            "outputSchema": self.output_schema,
            "annotations": self.shown_effect().annotations(self.title),
        });
        let mut meta: Map<String, Value> = metadata
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        if self.executes_in_one_step() {
            meta.insert(crate::META_REQUIRES_USER_INTERACTION.into(), json!(true));
        }
        if !meta.is_empty() {
            descriptor["_meta"] = Value::Object(meta);
        }
        descriptor
    }
}

/// How long a tool body may run unless its registration says otherwise.
pub const DEFAULT_DEADLINE: std::time::Duration = std::time::Duration::from_secs(20);

/// Longest tool name by the naming rule.
pub const MAX_NAME_LEN: usize = 40;

/// What the pipeline reads of a registered tool. Read-only: a spec's class, schema and
/// decorators are fixed when it is built.
#[doc(hidden)]
impl ToolSpec {
    pub fn input_schema(&self) -> &Value {
        &self.input_schema
    }

    pub fn runner(&self) -> &Arc<dyn Runner> {
        &self.runner
    }

    pub fn guards(&self) -> &[Arc<dyn Guard>] {
        &self.guards
    }

    pub fn interceptors(&self) -> &[Arc<dyn Interceptor>] {
        &self.interceptors
    }

    pub fn handlers(&self) -> &[Arc<dyn ExceptionHandler>] {
        &self.handlers
    }

    pub fn metadata_map(&self) -> &BTreeMap<String, Value> {
        &self.metadata
    }

    pub fn synonyms(&self) -> &[Synonym] {
        &self.synonyms
    }

    pub fn approves_in_product(&self) -> bool {
        self.approval_in_product
    }

    pub fn is_expensive(&self) -> bool {
        self.expensive
    }

    pub fn time_limit(&self) -> std::time::Duration {
        self.deadline
    }

    pub fn handle_fields(&self) -> &[(String, String)] {
        &self.handle_fields
    }

    pub fn builtin_step(&self) -> Option<Builtin> {
        self.builtin
    }
}

fn valid_name(name: &str, max_len: usize) -> bool {
    let parts: Vec<&str> = name.split('_').collect();
    (3..=max_len).contains(&name.len())
        && parts.len() >= 2
        && parts.iter().all(|p| {
            !p.is_empty()
                && p.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        })
        && name.as_bytes()[0].is_ascii_lowercase()
}

/// Every registered tool, in registration order (the order of `tools/list`).
#[derive(Debug)]
pub struct Registry {
    pub(crate) tools: Vec<Arc<ToolSpec>>,
    by_name: crate::FastMap<&'static str, usize>,
    max_name_len: usize,
}

impl Default for Registry {
    fn default() -> Self {
        Registry {
            tools: Vec::new(),
            by_name: crate::FastMap::default(),
            max_name_len: MAX_NAME_LEN,
        }
    }
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Allows names up to `max_len` characters (the protocol allows 128). Only for tools whose
    /// names are fixed elsewhere, such as the conformance suite's fixture; product tools keep
    /// the 40-character rule.
    pub fn with_max_name_len(mut self, max_len: usize) -> Self {
        self.max_name_len = max_len.min(128);
        self
    }

    /// Registers a tool with its decorators.
    pub fn register(&mut self, spec: ToolSpec) -> Result<(), RegistryError> {
        let name = spec.name;
        if !valid_name(name, self.max_name_len) {
            return Err(RegistryError::BadName(name.into()));
        }
        if self.by_name.contains_key(name) {
            return Err(RegistryError::Duplicate(name.into()));
        }
        if spec.builtin.is_none() && RESERVED_NAMES.contains(&name) {
            return Err(RegistryError::Reserved(name.into()));
        }
        if spec.approval_in_product && !spec.effect.needs_confirmation() {
            return Err(RegistryError::ApprovalWithoutTwoSteps(name.into()));
        }
        if spec.input_schema.get("type").and_then(Value::as_str) != Some("object") {
            return Err(RegistryError::InputNotObject(name.into()));
        }
        if spec.output_schema.is_null() {
            return Err(RegistryError::OutputNotObject(name.into()));
        }
        if spec.title.trim().is_empty() || spec.description.trim().is_empty() {
            return Err(RegistryError::MissingText(name.into()));
        }
        self.by_name.insert(name, self.tools.len());
        self.tools.push(Arc::new(spec));
        Ok(())
    }

    /// A tool by name.
    pub fn get(&self, name: &str) -> Option<&Arc<ToolSpec>> {
        self.by_name.get(name).map(|i| &self.tools[*i])
    }

    /// The tools in order.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<ToolSpec>> {
        self.tools.iter()
    }
}

/// The argument every silent write accepts for client-chosen idempotency.
pub const IDEMPOTENCY_KEY: &str = "idempotency_key";

/// The schema of [`IDEMPOTENCY_KEY`].
fn idempotency_property() -> Value {
    json!({
        "type": "string",
        "maxLength": 128,
        "description": "Optional. A key of your choice for this change; repeating the call with the same key and arguments returns the first result instead of writing again."
    })
}
