//! The server: its settings, its tools and what every call shares (the slot releases, the
//! clock and randomness, the approval link); the methods are answered in `dispatch`, a tool
//! call's stages run in `call`.

use std::collections::BTreeMap;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use mcp_protocol::{Message, RpcError, ServerInfo};
use serde_json::Value;

use crate::{Headers, Registry, ToolResult, ToolSpec, Toolset, gates};

/// Server-wide settings.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Name and version placed in every result.
    pub info: ServerInfo,
    /// Guidance for models, returned by `server/discover` and `initialize`.
    pub instructions: Option<String>,
    /// Metadata every tool sees unless it sets its own value.
    pub default_metadata: BTreeMap<String, Value>,
    /// How long a client may cache `tools/list` and `server/discover`.
    pub list_ttl_ms: u64,
    /// The store-backed gates (replay, rate limits, loop brake, pending actions, commits).
    /// Every server has them: tests give them a `MemoryStore`.
    pub gates: crate::Gates,
    /// The async runtime's timer and its way to run work after the answer.
    pub runtime: Runtime,
    /// Names the store items of record handles, so that the records a call names are read
    /// in the credential's batch ([`crate::ReadAhead::none`] for a product without handles).
    pub read_ahead: crate::ReadAhead,
    /// Where people approve actions (`<base>/<id>`, the id being the confirm token's SHA-256).
    pub approval_url_base: String,
    /// How long a sealed `requestState` stays valid, in seconds.
    pub state_ttl_seconds: i64,
    /// Key sealing `requestState`. Every instance of a deployment must share it (set it from a
    /// secret); the default is random per process, right for one process only.
    pub state_key: Vec<u8>,
    /// Where the pipeline reads the time (expiries, windows, leases).
    pub clock: Arc<dyn crate::Clock>,
    /// Where the pipeline draws request ids and confirmation tokens from.
    pub randomness: Arc<dyn crate::Randomness>,
    /// Resolves names where handles belong (`None`: handles only).
    pub names: Option<Arc<dyn crate::NameResolver>>,
}

impl ServerConfig {
    /// A configuration with the parts every server needs and defaults for the rest.
    pub fn new(gates: crate::Gates, runtime: Runtime) -> Self {
        ServerConfig {
            info: ServerInfo {
                name: "gatehouse".into(),
                version: env!("CARGO_PKG_VERSION").into(),
                title: "gatehouse".into(),
            },
            instructions: None,
            default_metadata: BTreeMap::new(),
            list_ttl_ms: 60_000,
            gates,
            runtime,
            read_ahead: crate::ReadAhead::none(),
            state_ttl_seconds: crate::state::STATE_TTL_SECONDS,
            approval_url_base: "http://127.0.0.1:8787/app/approvals".into(),
            state_key: {
                let mut key = vec![0u8; 32];
                crate::Randomness::fill(&crate::SystemRandomness, &mut key);
                key
            },
            clock: Arc::new(crate::SystemClock),
            randomness: Arc::new(crate::SystemRandomness),
            names: None,
        }
    }
}

/// What the pipeline needs of the async runtime it runs on (it has no timer or executor of its
/// own, so that it runs on any).
#[derive(Debug, Clone)]
pub struct Runtime {
    /// A timer, for per-tool deadlines and the wait for a late slot release.
    pub sleep: Sleep,
    /// Runs work after the answer (a read's slot release).
    pub defer: crate::Defer,
    /// Whether deferred work is awaited before the answer goes out (Lambda, ADR 25): then
    /// nothing is deferred that only tidies up long after (the second give-back of an
    /// admission whose outcome is unknown, which the slot's lease covers).
    pub answer_waits_for_deferred: bool,
}

/// A runtime's timer: a future that completes after the duration.
#[derive(Clone)]
pub struct Sleep(pub Arc<dyn Fn(std::time::Duration) -> BoxFuture<'static, ()> + Send + Sync>);

impl std::fmt::Debug for Sleep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Sleep")
    }
}

/// One incoming message with what its transport knows.
#[derive(Debug, Clone)]
pub struct Request {
    /// The JSON-RPC message.
    pub message: Message,
    /// HTTP headers (lower-case names), absent over stdio.
    pub headers: Option<Arc<Headers>>,
    /// The `MCP-Protocol-Version` header, already checked against the body by the transport.
    pub version_header: Option<String>,
    /// The connection the transport bound from the credential (`None` when the transport
    /// does not authenticate, as in the conformance fixture).
    pub caller: Option<crate::Caller>,
    /// Gate items the authenticator read in its own batch ([`Server::prefetch_keys`]).
    pub prefetched: crate::Prefetched,
    /// The call's plan, when the transport made it to name those items ([`Server::plan`]);
    /// `None`: the pipeline makes it.
    pub plan: Option<Planned>,
    /// This request's id, unique per request (the JSON-RPC id repeats across sessions): in
    /// every log line, in an internal error's text, and in the HTTP answer's `x-request-id`.
    /// `None`: the pipeline makes one ([`Server::new_request_id`]).
    pub request_id: Option<String>,
}

/// A `tools/call` planned before authentication ([`Server::plan`]): its arguments normalized
/// and digested once, for the batched read and for the call.
#[derive(Debug, Clone)]
pub struct Planned(pub(crate) Arc<crate::plan::CallPlan>);

/// What to answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// HTTP status (202 for an accepted notification).
    pub status: u16,
    /// The JSON-RPC response; `None` for a notification.
    pub body: Option<Body>,
    /// Request-scoped notifications to send before the response.
    pub notifications: Vec<Value>,
}

/// A JSON-RPC response, as a value or already serialized.
#[derive(Debug, Clone, PartialEq)]
pub enum Body {
    /// A response to serialize.
    Json(Value),
    /// A response serialized already: `tools/list`, joined from descriptors serialized once
    /// at start-up, so that listing costs no tree building and no serializing per call; and a
    /// tool's result, written in one pass (`ToolResult::write_fields`).
    Text(String),
}

impl Body {
    /// The response as a value (parsed, when it is text).
    pub fn into_value(self) -> Value {
        match self {
            Body::Json(value) => value,
            Body::Text(text) => serde_json::from_str(&text).unwrap_or(Value::Null),
        }
    }

    /// The response as JSON text.
    pub fn into_text(self) -> String {
        match self {
            Body::Json(value) => value.to_string(),
            Body::Text(text) => text,
        }
    }
}

/// The MCP server: configuration and tools. Stateless: every request stands alone.
#[derive(Debug)]
pub struct Server {
    config: ServerConfig,
    /// Every tool, with `confirm_action` and `reject_action` when a two-step tool is
    /// registered and the server keeps pending actions.
    registry: Registry,
    /// Each tool's descriptor as the core toolset lists it, and as the others do, serialized.
    pub(crate) tool_list: Vec<[String; 2]>,
    /// Each tool's metadata over the server-wide defaults, merged once.
    metadata: crate::FastMap<&'static str, Arc<BTreeMap<String, Value>>>,
    /// Slot releases sent after an answer and not yet landed.
    releases: crate::releases::Releases,
}

impl Server {
    /// A server with these tools.
    pub fn new(config: ServerConfig, mut registry: Registry) -> Arc<Self> {
        let two_step = registry.iter().any(|t| t.effect().needs_confirmation());
        if two_step {
            for spec in crate::confirm::tools() {
                if let Err(e) = registry.register(spec) {
                    tracing::error!(error = %e, "a confirmation tool could not be registered");
                }
            }
        }
        let metadata: crate::FastMap<&'static str, Arc<BTreeMap<String, Value>>> = registry
            .iter()
            .map(|t| (t.name(), Arc::new(merged_metadata(&config, t))))
            .collect();
        let tool_list = registry
            .iter()
            .map(|t| {
                let shown = metadata.get(t.name()).map(Arc::as_ref);
                [Toolset::Core, Toolset::Full].map(|set| {
                    t.descriptor(set, shown.unwrap_or(&BTreeMap::new()))
                        .to_string()
                })
            })
            .collect();
        Arc::new(Server {
            config,
            registry,
            tool_list,
            metadata,
            releases: crate::releases::Releases::default(),
        })
    }

    /// `spec`'s metadata over the server-wide defaults.
    pub(crate) fn metadata_of(&self, spec: &ToolSpec) -> Arc<BTreeMap<String, Value>> {
        match self.metadata.get(spec.name()) {
            Some(merged) => Arc::clone(merged),
            None => Arc::new(merged_metadata(&self.config, spec)),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &ServerConfig {
        &self.config
    }

    /// Why `spec` is hidden from `caller`: its toolset or rights; the confirmation tools are
    /// listed only for callers who can prepare something.
    pub(crate) fn hidden_from(
        &self,
        spec: &ToolSpec,
        caller: &crate::Caller,
    ) -> Option<crate::Hidden> {
        if spec.builtin_step().is_none() {
            return spec.hidden_from(caller);
        }
        let mut first_hidden = None;
        for tool in self
            .registry
            .iter()
            .filter(|t| t.effect().needs_confirmation())
        {
            match tool.hidden_from(caller) {
                None => return None,
                Some(hidden) => {
                    first_hidden.get_or_insert(hidden);
                }
            }
        }
        first_hidden
    }

    /// Every tool, with the confirmation tools.
    pub(crate) fn registry(&self) -> &Registry {
        &self.registry
    }

    /// Releases sent after an answer and not yet landed.
    pub(crate) fn releases(&self) -> &crate::releases::Releases {
        &self.releases
    }

    /// Gives `slot` back. A write gave it back beside its commit; what is left (a read's)
    /// goes after the answer when the runtime can run work then (see the slot-release ADR).
    pub(crate) fn give_back(&self, slot: Option<gates::Slot>) {
        if let Some(slot) = slot {
            let config = &self.config;
            self.releases
                .release_later(&config.gates, slot, &config.runtime.defer);
        }
    }

    /// The runtime's timer.
    pub(crate) fn sleep(&self, duration: std::time::Duration) -> BoxFuture<'static, ()> {
        (self.config.runtime.sleep.0)(duration)
    }

    /// Randomness for tokens.
    pub(crate) fn randomness(&self) -> &dyn crate::Randomness {
        self.config.randomness.as_ref()
    }

    /// A new request id (`req_` and 16 hex digits from the server's randomness).
    pub fn new_request_id(&self) -> String {
        let mut bytes = [0u8; 8];
        self.config.randomness.fill(&mut bytes);
        let mut digits = [0u8; 16];
        // Cannot fail: 8 bytes fill 16 digits exactly. The same text as `{:016x}` of the bytes
        // read big-endian, without a formatter on every call.
        let _ = hex::encode_to_slice(bytes, &mut digits);
        let mut id = String::with_capacity(20);
        id.push_str("req_");
        id.extend(digits.iter().copied().map(char::from));
        id
    }

    /// Milliseconds since `started` (microseconds from the server's clock), to two decimals
    /// (`1.2`, never `1.2033770000000001`).
    pub(crate) fn took_ms(&self, started: i64) -> f64 {
        let micros = self.config.clock.now_micros().saturating_sub(started);
        // Exact below 2^52 microseconds (142 years).
        #[allow(clippy::cast_precision_loss)]
        let hundredths = (micros as f64 / 10.0).round();
        hundredths / 100.0
    }

    /// The product's page for a pending action: named by the token's id, so that the link a
    /// person is handed (and the browser's history) never carries a token that would confirm.
    pub(crate) fn approval_url(&self, token: &str) -> String {
        let id = crate::keys::token_id(token);
        format!("{}/{}", self.config.approval_url_base, id)
    }
}

/// One structured line per tool call, for logs and metrics: who, which tool of which effect
/// class, how it ended and how long it took. Never arguments or results.
pub(crate) fn log_call(
    req: &Request,
    tool: &str,
    effect: crate::EffectClass,
    result: &Result<ToolResult, Interrupt>,
    duration_ms: f64,
) {
    let outcome = match result {
        Ok(r) if r.is_error() => r
            .structured
            .get("code")
            .and_then(Value::as_str)
            .unwrap_or("error")
            .to_owned(),
        Ok(r) if r.structured.get("replayed") == Some(&Value::Bool(true)) => "replayed".to_owned(),
        Ok(r) => r
            .structured
            .get("status")
            .and_then(Value::as_str)
            .map_or("ok".to_owned(), str::to_lowercase),
        Err(Interrupt::InputRequired(_)) => "input_required".to_owned(),
        Err(Interrupt::Refused(_)) => "refused".to_owned(),
    };
    let (tenant, connection) = req
        .caller
        .as_ref()
        .map_or(("-", "-"), |c| (c.tenant.as_str(), c.connection.as_str()));
    let rpc_id = req
        .message
        .id
        .as_ref()
        .map(ToString::to_string)
        .unwrap_or_default();
    // A refused call names what was refused by its digest, never its values (they may hold
    // third-party text or personal data): the record of a denial.
    let refused =
        matches!(result, Ok(r) if r.is_error()) || matches!(result, Err(Interrupt::Refused(_)));
    let args_digest = if refused {
        let args = req
            .message
            .params
            .get("arguments")
            .cloned()
            .unwrap_or(Value::Null);
        crate::digest(&args)
    } else {
        String::new()
    };
    tracing::info!(
        target: "gatehouse::call",
        request_id = req.request_id.as_deref().unwrap_or("-"),
        rpc_id = %rpc_id,
        tenant,
        connection,
        tool,
        effect = gatehouse_tool::class_name(effect),
        outcome = %outcome,
        args_digest = %args_digest,
        duration_ms,
        "tool call"
    );
}

/// Why a tool call ended without a `CallToolResult`.
pub(crate) enum Interrupt {
    /// The tool needs client input first (an `input_required` result).
    InputRequired(Value),
    /// The request itself is refused (a JSON-RPC error).
    Refused(RpcError),
}

/// `spec`'s metadata over the server-wide defaults (the tool's own value wins).
fn merged_metadata(config: &ServerConfig, spec: &ToolSpec) -> BTreeMap<String, Value> {
    let mut metadata = config.default_metadata.clone();
    metadata.extend(
        spec.metadata_map()
            .iter()
            .map(|(k, v)| (k.clone(), v.clone())),
    );
    metadata
}
