//! The request pipeline: one function per method, the tool call in the order of the design.

use std::collections::BTreeMap;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use mcp_protocol::{
    LATEST_VERSION, META_CLIENT_CAPABILITIES, META_PROTOCOL_VERSION, META_SERVER_INFO, Message,
    RpcError, ServerInfo,
};
use serde_json::{Map, Value, json};

use crate::call::{Call, CallPlan};
use crate::confirm::Phase;
use crate::{Headers, Notifications, Registry, ToolResult, ToolSpec, Toolset, gates};

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
    /// Where people approve actions that move money (`<base>/<confirm_token>`).
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
    pub headers: Option<Headers>,
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
}

/// A `tools/call` planned before authentication ([`Server::plan`]): its arguments normalized
/// and digested once, for the batched read and for the call.
#[derive(Debug, Clone)]
pub struct Planned(pub(crate) Arc<crate::call::CallPlan>);

/// What to answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// HTTP status (202 for an accepted notification).
    pub status: u16,
    /// The JSON-RPC response; `None` for a notification.
    pub body: Option<Value>,
    /// Request-scoped notifications to send before the response.
    pub notifications: Vec<Value>,
}

impl Outcome {
    fn accepted() -> Self {
        Outcome {
            status: 202,
            body: None,
            notifications: Vec::new(),
        }
    }

    fn error(id: Option<&mcp_protocol::RequestId>, error: &RpcError) -> Self {
        Outcome {
            status: error.http_status,
            body: Some(mcp_protocol::error_response(id, error)),
            notifications: Vec::new(),
        }
    }
}

/// Which era of the protocol a request belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Era {
    /// 2026-07-28: stateless, `_meta` on every request.
    Modern,
    /// 2025-06-18 / 2025-11-25: `initialize`, no `resultType`.
    Legacy,
}

/// The MCP server: configuration and tools. Stateless: every request stands alone.
#[derive(Debug)]
pub struct Server {
    config: ServerConfig,
    /// Every tool, with `confirm_action` and `reject_action` when a two-step tool is
    /// registered and the server keeps pending actions.
    registry: Registry,
    /// Each tool's descriptor as the core toolset lists it, and as the others do.
    tool_list: Vec<[Value; 2]>,
    /// Slot releases sent after an answer and not yet landed.
    releases: gates::Releases,
}

impl Server {
    /// A server with these tools.
    pub fn new(config: ServerConfig, mut registry: Registry) -> Arc<Self> {
        let two_step = registry.iter().any(|t| t.effect.needs_confirmation());
        if two_step {
            for spec in crate::confirm::tools() {
                if let Err(e) = registry.register(spec) {
                    tracing::error!(error = %e, "a confirmation tool could not be registered");
                }
            }
        }
        let tool_list = registry
            .iter()
            .map(|t| [t.descriptor(Toolset::Core), t.descriptor(Toolset::Full)])
            .collect();
        Arc::new(Server {
            config,
            registry,
            tool_list,
            releases: gates::Releases::default(),
        })
    }

    /// The configuration.
    pub fn config(&self) -> &ServerConfig {
        &self.config
    }

    fn era(&self, req: &Request) -> Era {
        match req.version_header.as_deref() {
            Some(v) if v == LATEST_VERSION => Era::Modern,
            Some(_) => Era::Legacy,
            // Without a header (stdio, or a client that omits it), `_meta` decides.
            None if req.message.meta_field(META_PROTOCOL_VERSION).is_some() => Era::Modern,
            None => Era::Legacy,
        }
    }

    /// Handles one message.
    pub async fn handle(&self, req: Request) -> Outcome {
        let era = self.era(&req);
        let msg = &req.message;
        let Some(id) = msg.id.clone() else {
            // Notifications: nothing to do in a stateless server (`initialized`, `cancelled`).
            return Outcome::accepted();
        };
        let id = &id;
        if era == Era::Modern
            && let Err(e) = check_meta(msg)
        {
            return Outcome::error(Some(id), &e);
        }
        let result = match (era, msg.method.as_str()) {
            (Era::Modern, "server/discover") => Ok(self.discover()),
            (Era::Legacy, "initialize") => self.initialize(msg),
            (Era::Legacy, "ping") => Ok(json!({})),
            (_, "tools/list") => self.list_tools(msg, era, req.caller.as_ref()),
            (_, "tools/call") => return self.call_tool(req.clone(), era).await,
            (Era::Modern, "initialize") => Err(RpcError::method_not_found("initialize").with_data(json!({
                "method": "initialize",
                "supported": mcp_protocol::SUPPORTED_VERSIONS,
                "hint": "2026-07-28 has no initialize; send requests with _meta, or use MCP-Protocol-Version 2025-11-25 for the handshake",
            }))),
            (_, method) => Err(RpcError::method_not_found(method)),
        };
        match result {
            Ok(result) => Outcome {
                status: 200,
                body: Some(mcp_protocol::response(id, self.finish(result, era))),
                notifications: Vec::new(),
            },
            Err(e) => Outcome::error(Some(id), &e),
        }
    }

    /// Adds `resultType` and `serverInfo` to a modern result.
    fn finish(&self, mut result: Value, era: Era) -> Value {
        if era == Era::Modern
            && let Value::Object(obj) = &mut result
        {
            obj.entry("resultType").or_insert_with(|| json!("complete"));
            let meta = obj.entry("_meta").or_insert_with(|| json!({}));
            meta[META_SERVER_INFO] = self.config.info.to_json();
        }
        result
    }

    fn capabilities(&self) -> Value {
        json!({"tools": {"listChanged": false}})
    }

    fn discover(&self) -> Value {
        let mut result = json!({
            "supportedVersions": mcp_protocol::SUPPORTED_VERSIONS,
            "capabilities": self.capabilities(),
            "serverInfo": self.config.info.to_json(),
            "ttlMs": self.config.list_ttl_ms,
            "cacheScope": "public",
        });
        if let Some(instructions) = &self.config.instructions {
            result["instructions"] = json!(instructions);
        }
        result
    }

    fn initialize(&self, msg: &Message) -> Result<Value, RpcError> {
        let requested = msg
            .params
            .get("protocolVersion")
            .and_then(Value::as_str)
            .unwrap_or_default();
        // Answer in the client's legacy version when we speak it, else our newest legacy one;
        // the client decides whether it can continue. No session is created or named.
        let version = if mcp_protocol::is_legacy(requested) {
            requested
        } else {
            mcp_protocol::LEGACY_VERSIONS[0]
        };
        let mut result = json!({
            "protocolVersion": version,
            "capabilities": self.capabilities(),
            "serverInfo": self.config.info.to_json(),
        });
        if let Some(instructions) = &self.config.instructions {
            result["instructions"] = json!(instructions);
        }
        Ok(result)
    }

    fn list_tools(
        &self,
        msg: &Message,
        era: Era,
        caller: Option<&crate::Caller>,
    ) -> Result<Value, RpcError> {
        if let Some(cursor) = msg.params.get("cursor") {
            // Every tool fits on one page, so no cursor was ever issued.
            return Err(RpcError::invalid_params(format!(
                "Invalid cursor {cursor}: tools/list has a single page"
            )));
        }
        let tools: Vec<Value> = self
            .registry
            .iter()
            .zip(&self.tool_list)
            .filter(|(spec, _)| caller.is_none_or(|c| self.hidden_from(spec, c).is_none()))
            .map(|(_, [core, other])| match caller.map(|c| c.toolset) {
                Some(Toolset::Core) => core.clone(),
                _ => other.clone(),
            })
            .collect();
        let mut result = json!({"tools": tools});
        if era == Era::Modern {
            // Private: the visible set depends on the caller's rights.
            result["ttlMs"] = json!(self.config.list_ttl_ms);
            result["cacheScope"] = json!("private");
        }
        Ok(result)
    }

    async fn call_tool(&self, mut req: Request, era: Era) -> Outcome {
        let Some(id) = req.message.id.clone() else {
            return Outcome::accepted();
        };
        let plan = match req.plan.take() {
            Some(Planned(plan)) => plan,
            None => match self.plan_call(&req.message) {
                Ok(plan) => plan,
                Err(e) => return Outcome::error(Some(&id), &e),
            },
        };
        if era == Era::Modern
            && let Some(headers) = &req.headers
            && let Err(e) =
                check_param_headers(&plan.spec.input_schema, arguments(&req.message), headers)
        {
            return Outcome::error(Some(&id), &e);
        }
        let started = self.config.clock.now_micros();
        let name = plan.spec.name;
        let (result, notifications) = Call::new(self, &req, plan, Phase::Call).run().await;
        log_call(&req, name, &result, self.took_ms(started));
        self.answer(&req, era, result, notifications)
    }

    /// Plans a `tools/call` before authentication, so that the transport can name the items
    /// it reads ([`Server::prefetch_keys`]) and hand the plan on in [`Request::plan`]. `None`
    /// for any other message, or one the pipeline will refuse as malformed.
    pub fn plan(&self, message: &Message) -> Option<Planned> {
        if message.method != "tools/call" || message.id.is_none() {
            return None;
        }
        self.plan_call(message).ok().map(Planned)
    }

    /// The gate items a planned call reads, named from the credential's `claim` before it is
    /// checked: its loop brake and replay record, the pending action a confirmation names,
    /// and the records its arguments name. The pipeline names them again from the
    /// authenticated caller and uses only what matches.
    pub fn prefetch_keys(&self, planned: &Planned, claim: &crate::Claim) -> Vec<store::Key> {
        planned
            .0
            .gate_keys(&claim.tenant, &claim.connection, &self.config.read_ahead)
    }

    fn plan_call(&self, message: &Message) -> Result<Arc<CallPlan>, RpcError> {
        let Some(name) = message.params.get("name").and_then(Value::as_str) else {
            return Err(RpcError::malformed_params(
                "tools/call needs params.name (a string)",
            ));
        };
        let Some(spec) = self.registry.get(name) else {
            return Err(RpcError::invalid_params(format!("Unknown tool: {name}"))
                .with_data(json!({"name": name})));
        };
        let arguments = match message.params.get("arguments") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(a)) => a.clone(),
            Some(_) => {
                return Err(RpcError::malformed_params(
                    "params.arguments must be an object",
                ));
            }
        };
        let read_ahead = &self.config.read_ahead;
        Ok(Arc::new(CallPlan::new(
            Arc::clone(spec),
            arguments,
            read_ahead,
        )))
    }

    /// Why `spec` is hidden from `caller`: its toolset or rights; the confirmation tools are
    /// listed only for callers who can prepare something.
    pub(crate) fn hidden_from(
        &self,
        spec: &ToolSpec,
        caller: &crate::Caller,
    ) -> Option<crate::Hidden> {
        if spec.builtin.is_none() {
            return spec.hidden_from(caller);
        }
        let mut first_hidden = None;
        for tool in self
            .registry
            .iter()
            .filter(|t| t.effect.needs_confirmation())
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
    pub(crate) fn releases(&self) -> &gates::Releases {
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

    /// A new request id.
    pub(crate) fn new_request_id(&self) -> String {
        let mut bytes = [0u8; 8];
        self.config.randomness.fill(&mut bytes);
        format!("req_{:016x}", u64::from_be_bytes(bytes))
    }

    /// Milliseconds since `started` (microseconds from the server's clock).
    pub(crate) fn took_ms(&self, started: i64) -> f64 {
        let micros = self.config.clock.now_micros().saturating_sub(started);
        // Exact below 2^52 microseconds (142 years).
        #[allow(clippy::cast_precision_loss)]
        let ms = micros as f64 / 1000.0;
        ms
    }

    /// Where a person approves the pending action `token` in the product.
    pub(crate) fn approval_url(&self, token: &str) -> String {
        format!("{}/{}", self.config.approval_url_base, token)
    }

    /// Turns a run's ending into the response.
    fn answer(
        &self,
        req: &Request,
        era: Era,
        result: Result<ToolResult, Interrupt>,
        notifications: Notifications,
    ) -> Outcome {
        let msg = &req.message;
        let Some(id) = msg.id.as_ref() else {
            return Outcome::accepted();
        };
        let body = match result {
            Ok(result) => self.finish(result.to_json(), era),
            Err(Interrupt::Refused(error)) => return Outcome::error(Some(id), &error),
            Err(Interrupt::InputRequired(input_required)) => {
                let declared = msg.meta_field(META_CLIENT_CAPABILITIES);
                if let Some(missing) = missing_capabilities(&input_required, declared) {
                    return Outcome::error(Some(id), &RpcError::missing_capability(missing));
                }
                input_required
            }
        };
        Outcome {
            status: 200,
            body: Some(mcp_protocol::response(id, body)),
            notifications: notifications.take(),
        }
    }
}

/// One structured line per tool call, for logs and metrics: who, which tool, how it ended and
/// how long it took. Never arguments or results.
pub(crate) fn log_call(
    req: &Request,
    tool: &str,
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
    let request = req
        .message
        .id
        .as_ref()
        .map(ToString::to_string)
        .unwrap_or_default();
    tracing::info!(
        target: "gatehouse::call",
        request_id = %request,
        tenant,
        connection,
        tool,
        outcome = %outcome,
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

/// Checks `Mcp-Param-*` headers against the arguments for properties marked `x-mcp-header`:
/// an argument in the body needs its header with an equal value, and a header needs its
/// argument.
fn check_param_headers(
    schema: &Value,
    arguments: &Map<String, Value>,
    headers: &crate::Headers,
) -> Result<(), RpcError> {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return Ok(());
    };
    for (field, property) in properties {
        let Some(name) = property.get("x-mcp-header").and_then(Value::as_str) else {
            continue;
        };
        let header_name = format!("mcp-param-{}", name.to_ascii_lowercase());
        let header = headers.get(&header_name);
        let body = arguments.get(field).filter(|v| !v.is_null());
        match (body, header) {
            (None, None) => {}
            (Some(_), None) => {
                return Err(RpcError::header_mismatch(format!(
                    "the Mcp-Param-{name} header is required when `{field}` is given"
                )));
            }
            (None, Some(_)) => {
                return Err(RpcError::header_mismatch(format!(
                    "the Mcp-Param-{name} header is sent but `{field}` is not"
                )));
            }
            (Some(value), Some(raw)) => {
                let decoded = mcp_protocol::decode_header_value(raw).ok_or_else(|| {
                    RpcError::header_mismatch(format!(
                        "the Mcp-Param-{name} header has an invalid base64 value"
                    ))
                })?;
                let matches = match value {
                    Value::String(s) => *s == decoded,
                    Value::Bool(b) => decoded == b.to_string(),
                    Value::Number(n) => match (n.as_i64(), decoded.trim().parse::<i64>()) {
                        (Some(a), Ok(b)) => a == b,
                        _ => n
                            .as_f64()
                            .zip(decoded.trim().parse::<f64>().ok())
                            .is_some_and(|(a, b)| a == b),
                    },
                    _ => false,
                };
                if !matches {
                    return Err(RpcError::header_mismatch(format!(
                        "the Mcp-Param-{name} header differs from `{field}` in the body"
                    )));
                }
            }
        }
    }
    Ok(())
}

/// The client capabilities an `input_required` result needs that the request did not declare:
/// a server must not send an input request the client cannot answer.
fn missing_capabilities(result: &Value, declared: Option<&Value>) -> Option<Value> {
    let requests = result.get("inputRequests")?.as_object()?;
    let mut missing = Map::new();
    for request in requests.values() {
        let capability = match request.get("method").and_then(Value::as_str) {
            Some("elicitation/create") => "elicitation",
            Some("sampling/createMessage") => "sampling",
            Some("roots/list") => "roots",
            _ => continue,
        };
        if declared.and_then(|d| d.get(capability)).is_none() {
            missing.insert(capability.to_owned(), json!({}));
        }
    }
    (!missing.is_empty()).then_some(Value::Object(missing))
}

/// Checks the `_meta` fields every 2026-07-28 request must carry.
fn check_meta(msg: &Message) -> Result<(), RpcError> {
    let Some(version) = msg.meta_field(META_PROTOCOL_VERSION) else {
        return Err(RpcError::malformed_params(format!(
            "params._meta[\"{META_PROTOCOL_VERSION}\"] is required"
        )));
    };
    let Some(version) = version.as_str() else {
        return Err(RpcError::malformed_params(format!(
            "params._meta[\"{META_PROTOCOL_VERSION}\"] must be a string"
        )));
    };
    if version != LATEST_VERSION {
        return Err(RpcError::unsupported_version(version));
    }
    match msg.meta_field(META_CLIENT_CAPABILITIES) {
        Some(Value::Object(_)) => Ok(()),
        Some(_) => Err(RpcError::malformed_params(format!(
            "params._meta[\"{META_CLIENT_CAPABILITIES}\"] must be an object"
        ))),
        None => Err(RpcError::malformed_params(format!(
            "params._meta[\"{META_CLIENT_CAPABILITIES}\"] is required"
        ))),
    }
}

/// The `arguments` of a `tools/call` (empty when absent or not an object).
fn arguments(message: &Message) -> &Map<String, Value> {
    static EMPTY: std::sync::LazyLock<Map<String, Value>> = std::sync::LazyLock::new(Map::new);
    message
        .params
        .get("arguments")
        .and_then(Value::as_object)
        .unwrap_or(&EMPTY)
}
