//! The request pipeline: one function per method, the tool call in the order of the design.

use std::collections::BTreeMap;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex};

use futures_util::FutureExt as _;
use futures_util::future::BoxFuture;
use mcp_protocol::{
    LATEST_VERSION, META_CLIENT_CAPABILITIES, META_LOG_LEVEL, META_PROTOCOL_VERSION,
    META_SERVER_INFO, Message, RpcError, ServerInfo,
};
use serde_json::{Map, Value, json};

use crate::confirm::Phase;
use crate::context::log_rank;
use crate::decorators::Next;
use crate::{
    CallError, ErrorKind, ExecutionContext, Headers, Notifications, Registry, ToolContext,
    ToolError, ToolResult, ToolSpec, args, gates, outcome,
};

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
    /// The store-backed gates (replay, rate limits, loop brake, commits); without them a
    /// server can only run tools that write nothing.
    pub gates: Option<crate::Gates>,
    /// A timer from the runtime, for per-tool deadlines (the pipeline itself has no clock of
    /// its own to wait on, so that it runs on any async runtime). Without one, no deadline.
    pub sleep: Option<Sleep>,
    /// Runs work after the answer (a read's slot release). Without it that work is awaited
    /// before answering.
    pub defer: Option<crate::Defer>,
    /// Names the store items of record handles, so that the records a call names are read
    /// in the credential's batch. Without it, tools read them themselves.
    pub read_ahead: Option<crate::ReadAhead>,
    /// Where people approve actions that move money (`<base>/<confirm_token>`).
    pub approval_url_base: String,
    /// How long a sealed `requestState` stays valid, in seconds.
    pub state_ttl_seconds: i64,
    /// Key sealing `requestState`. Every instance of a deployment must share it (set it from a
    /// secret); the default is random per process, right for one process only.
    pub state_key: Vec<u8>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            info: ServerInfo {
                name: "gatehouse".into(),
                version: env!("CARGO_PKG_VERSION").into(),
                title: "gatehouse".into(),
            },
            instructions: None,
            default_metadata: BTreeMap::new(),
            list_ttl_ms: 60_000,
            gates: None,
            sleep: None,
            defer: None,
            read_ahead: None,
            state_ttl_seconds: crate::state::STATE_TTL_SECONDS,
            approval_url_base: "http://127.0.0.1:8787/app/approvals".into(),
            state_key: {
                use rand::Rng as _;
                let mut key = vec![0u8; 32];
                rand::rng().fill(&mut key[..]);
                key
            },
        }
    }
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
}

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
    registry: Registry,
    tool_list: Vec<Value>,
    /// Whether `confirm_action` and `reject_action` are served (a two-step tool is registered
    /// and the server has a store for pending actions).
    confirmations: bool,
    /// Slot releases sent after an answer and not yet landed.
    releases: gates::Releases,
}

/// How long admission waits, and how often, for a slot whose release is on its way.
const SLOT_WAIT: std::time::Duration = std::time::Duration::from_millis(25);
const SLOT_WAIT_ATTEMPTS: u32 = 6;

fn request_id() -> String {
    use rand::Rng as _;
    let n: u64 = rand::rng().random();
    format!("req_{n:016x}")
}

impl Server {
    /// A server with these tools.
    pub fn new(config: ServerConfig, registry: Registry) -> Arc<Self> {
        let tool_list = registry.iter().map(|t| t.descriptor()).collect();
        let confirmations =
            config.gates.is_some() && registry.iter().any(|t| t.effect.needs_confirmation());
        Arc::new(Server {
            config,
            registry,
            tool_list,
            confirmations,
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
        let mut tools: Vec<Value> = match caller {
            None => self.tool_list.clone(),
            Some(caller) => self
                .registry
                .iter()
                .zip(&self.tool_list)
                .filter(|(spec, _)| spec.hidden_from(caller).is_none())
                .map(|(_, descriptor)| descriptor.clone())
                .collect(),
        };
        // The confirmation tools are listed only for callers who can prepare something.
        let can_prepare = self.registry.iter().any(|spec| {
            spec.effect.needs_confirmation() && caller.is_none_or(|c| spec.hidden_from(c).is_none())
        });
        if self.confirmations && can_prepare {
            tools.extend(crate::confirm::descriptors());
        }
        let mut result = json!({"tools": tools});
        if era == Era::Modern {
            // Private: the visible set depends on the caller's rights.
            result["ttlMs"] = json!(self.config.list_ttl_ms);
            result["cacheScope"] = json!("private");
        }
        Ok(result)
    }

    async fn call_tool(&self, req: Request, era: Era) -> Outcome {
        let msg = &req.message;
        let Some(id) = msg.id.as_ref() else {
            return Outcome::accepted();
        };
        let Some(name) = msg.params.get("name").and_then(Value::as_str) else {
            return Outcome::error(
                Some(id),
                &RpcError::malformed_params("tools/call needs params.name (a string)"),
            );
        };
        if self.confirmations
            && (name == crate::confirm::CONFIRM_ACTION || name == crate::confirm::REJECT_ACTION)
        {
            return self.call_builtin(&req, era, name).await;
        }
        let Some(tool) = self.registry.get(name) else {
            return Outcome::error(
                Some(id),
                &RpcError::invalid_params(format!("Unknown tool: {name}"))
                    .with_data(json!({"name": name})),
            );
        };
        let arguments = match msg.params.get("arguments") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(a)) => a.clone(),
            Some(_) => {
                return Outcome::error(
                    Some(id),
                    &RpcError::malformed_params("params.arguments must be an object"),
                );
            }
        };
        if era == Era::Modern
            && let Some(headers) = &req.headers
            && let Err(e) = check_param_headers(&tool.input_schema, &arguments, headers)
        {
            return Outcome::error(Some(id), &e);
        }
        let notifications = Notifications::default();
        let started = std::time::Instant::now();
        let result = self
            .run_tool(tool, &req, arguments, notifications.clone(), &Phase::Call)
            .await;
        log_call(&req, name, &result, started);
        self.answer(&req, era, result, notifications)
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

    /// Runs the tool through normalization, guards, interceptors, the body and exception
    /// handlers. `Err` carries an `input_required` result (which is not cacheable and not an
    /// error).
    async fn run_tool(
        &self,
        tool: &Arc<ToolSpec>,
        req: &Request,
        arguments: Map<String, Value>,
        notifications: Notifications,
        phase: &Phase,
    ) -> Result<ToolResult, Interrupt> {
        let mut slot = None;
        let outcome = self
            .run_tool_holding(tool, req, arguments, notifications, phase, &mut slot)
            .await;
        // Whatever happened, the concurrency slot this call took is given back. A write gave
        // it back beside its commit; what is left (a read's) goes after the answer, so that
        // the caller does not wait for it. Should that release be lost (an instance frozen
        // or stopped in between), the lease expires a few seconds after the tool's deadline.
        if let (Some(g), Some(slot)) = (self.config.gates.as_ref(), slot) {
            match &self.config.defer {
                Some(defer) => self.releases.release_later(g, slot, defer),
                None => gates::release(Arc::clone(&g.store), slot).await,
            }
        }
        outcome
    }

    /// The gate items a request will read, named from the credential's `claim` before it is
    /// checked, so that the authenticator can read them in its own batch: the loop-brake
    /// item and replay record of a tool call, the pending action and its brake item for a
    /// confirmation. Computed exactly as the call computes them; a request it cannot parse
    /// needs nothing.
    pub fn prefetch_keys(&self, message: &Message, claim: &crate::Claim) -> Vec<store::Key> {
        if message.method != "tools/call" || message.id.is_none() {
            return Vec::new();
        }
        let Some(name) = message.params.get("name").and_then(Value::as_str) else {
            return Vec::new();
        };
        let arguments = match message.params.get("arguments") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(a)) => a.clone(),
            Some(_) => return Vec::new(),
        };
        let (tenant, connection) = (claim.tenant.as_str(), claim.connection.as_str());
        if self.confirmations
            && (name == crate::confirm::CONFIRM_ACTION || name == crate::confirm::REJECT_ACTION)
        {
            let confirming = name == crate::confirm::CONFIRM_ACTION;
            let Ok((token, _)) = crate::confirm::parse_args(&arguments, confirming) else {
                return Vec::new();
            };
            let mut keys = vec![crate::confirm::pending_key(tenant, &token)];
            if confirming {
                keys.push(gates::confirm_brake_key(tenant, connection, &token));
                // The records the prepared call named, which the confirmation reads again.
                if let Some(read_ahead) = &self.config.read_ahead {
                    keys.extend(
                        crate::confirm::token_handles(&token)
                            .filter_map(|handle| (read_ahead.0)(tenant, handle)),
                    );
                }
            }
            return keys;
        }
        let Some(tool) = self.registry.get(name) else {
            return Vec::new();
        };
        let Ok(mut normalized) = args::normalize(&tool.input_schema, arguments, &tool.synonyms)
        else {
            return Vec::new();
        };
        let idempotency_key = if tool.effect == crate::EffectClass::SilentWrite {
            match gates::strip_idempotency_key(&mut normalized.args) {
                Ok(k) => k,
                Err(_) => return Vec::new(),
            }
        } else {
            None
        };
        let records: Vec<store::Key> = self
            .config
            .read_ahead
            .as_ref()
            .map(|r| r.handles(tenant, &normalized.args))
            .unwrap_or_default()
            .into_iter()
            .map(|(_, key)| key)
            .collect();
        let digest = crate::canonical::digest(&Value::Object(normalized.args));
        let mut keys = vec![gates::brake_key(tenant, connection, tool.name, &digest)];
        if tool.effect == crate::EffectClass::SilentWrite {
            let fingerprint = gates::fingerprint(idempotency_key.as_deref(), &digest);
            keys.push(gates::replay_key(
                tenant,
                connection,
                tool.name,
                &fingerprint,
            ));
        }
        keys.extend(records);
        keys
    }

    /// [`Server::run_tool`], noting in `slot` the concurrency slot it took.
    async fn run_tool_holding(
        &self,
        tool: &Arc<ToolSpec>,
        req: &Request,
        arguments: Map<String, Value>,
        notifications: Notifications,
        phase: &Phase,
        slot: &mut Option<gates::Slot>,
    ) -> Result<ToolResult, Interrupt> {
        let msg = &req.message;
        let request_id = request_id();
        let mut metadata = self.config.default_metadata.clone();
        metadata.extend(tool.metadata.iter().map(|(k, v)| (k.clone(), v.clone())));
        let mut exec = ExecutionContext {
            tool_name: tool.name.to_owned(),
            request_id: request_id.clone(),
            protocol_version: msg
                .meta_field(META_PROTOCOL_VERSION)
                .and_then(Value::as_str)
                .unwrap_or(LATEST_VERSION)
                .to_owned(),
            client_capabilities: msg
                .meta_field(META_CLIENT_CAPABILITIES)
                .cloned()
                .unwrap_or_else(|| json!({})),
            headers: req.headers.clone(),
            arguments: Map::new(),
            caller: req.caller.clone(),
            metadata: Arc::new(metadata),
        };
        // 1. Visibility: a tool hidden by the toolset or by rights says so.
        if let Some(hidden) = req.caller.as_ref().and_then(|c| tool.hidden_from(c)) {
            return Ok(ToolResult::error(&hidden_error(tool.name, &hidden)));
        }
        // 2. Arguments: unknown fields refused, tolerant input coerced, then typed.
        let mut normalized = match args::normalize(&tool.input_schema, arguments, &tool.synonyms) {
            Ok(n) => n,
            Err(e) => return Ok(ToolResult::error(&e)),
        };
        // The gate's own argument is not the tool's: take it out before the digest and typing.
        let idempotency_key = if tool.effect == crate::EffectClass::SilentWrite {
            match gates::strip_idempotency_key(&mut normalized.args) {
                Ok(k) => k,
                Err(e) => return Ok(ToolResult::error(&e)),
            }
        } else {
            None
        };
        exec.arguments = normalized.args.clone();
        let normalized_args = normalized.args.clone();
        let args_digest = crate::canonical::digest(&Value::Object(normalized.args.clone()));
        let principal = req
            .caller
            .as_ref()
            .map_or("-", |c| c.connection.as_str())
            .to_owned();
        let parsed = match tool.runner.parse(Value::Object(normalized.args)) {
            Ok(p) => p,
            Err(e) => return Ok(ToolResult::error(&e)),
        };
        // A retried multi round-trip call: the echoed state must be ours, for this caller,
        // this tool and these arguments, and not expired; the tool sees only its own part.
        let request_state: Option<String> = match msg.params.get("requestState") {
            None | Some(Value::Null) => None,
            Some(Value::String(presented)) => {
                match crate::state::open(
                    &self.config.state_key,
                    presented,
                    &principal,
                    tool.name,
                    &args_digest,
                    crate::state::now(),
                ) {
                    Ok(inner) => Some(inner),
                    Err(e) => {
                        return Err(Interrupt::Refused(RpcError::invalid_params(format!(
                            "Invalid requestState: {}",
                            e.reason()
                        ))));
                    }
                }
            }
            Some(_) => {
                return Err(Interrupt::Refused(RpcError::invalid_params(
                    "Invalid requestState: it must be a string",
                )));
            }
        };
        // 3. Guards, in order; the first refusal wins and nothing else runs.
        for guard in &tool.guards {
            if let Err(refusal) = guard.check(&exec).await {
                let error = ToolError::new(
                    ErrorKind::Forbidden,
                    refusal.reason,
                    "This call is not allowed as made; do not retry it unchanged",
                )
                .detail("type", "FORBIDDEN")
                .detail("guard", guard.name());
                return Ok(ToolResult::error(&error));
            }
        }
        // 4. Replay, loop brake and rate buckets, when the deployment has a store for them.
        let gates = self.config.gates.as_ref();
        let caller = req.caller.as_ref();
        let now = crate::state::now();
        let (tenant, connection) = gates::scope(caller);
        let fingerprint = gates::fingerprint(idempotency_key.as_deref(), &args_digest);
        let replay_key = (tool.effect == crate::EffectClass::SilentWrite)
            .then(|| gates::replay_key(&tenant, &connection, tool.name, &fingerprint));
        let brake_key = match phase {
            Phase::Confirm(pending) => {
                gates::confirm_brake_key(&tenant, &connection, &pending.token)
            }
            Phase::Call => gates::brake_key(&tenant, &connection, tool.name, &args_digest),
        };
        if let Some(g) = gates {
            let mut keys = vec![brake_key.clone()];
            keys.extend(replay_key.clone());
            // Read ahead with the credential when the transport could; else one batch here.
            let items = match req.prefetched.all(&keys) {
                Some(items) => Ok(items),
                None => g.store.batch_get(&keys).await,
            };
            match items {
                Ok(items) => {
                    if let Some(replay) = items
                        .get(1)
                        .and_then(Option::as_ref)
                        .and_then(gates::read_replay)
                    {
                        if replay.digest != args_digest {
                            let key = idempotency_key.as_deref().unwrap_or_default();
                            return Ok(ToolResult::error(&gates::key_reused(
                                key,
                                &replay.args,
                                &normalized_args,
                            )));
                        }
                        // Visibility and guards ran above: a caller who may no longer call the
                        // tool never gets here.
                        return Ok(gates::replayed_result(replay.structured));
                    }
                    if gates::braked(items[0].as_ref()) {
                        return Ok(ToolResult::error(&gates::brake_error(tool.name)));
                    }
                }
                Err(e) => return Ok(ToolResult::error(&internal_error(&exec, &e.to_string()))),
            }
        }
        // What a two-step tool needs to ask for approval in the client, or to finish it.
        let approval = crate::confirm::Approval {
            state: request_state.clone(),
            responses: msg.params.get("inputResponses").cloned(),
            elicitation: msg.meta_field(META_PROTOCOL_VERSION).is_some()
                && exec.client_capabilities.get("elicitation").is_some(),
            args_digest: args_digest.clone(),
            principal: principal.clone(),
        };
        // 5. Interceptors around the body and the exception handlers.
        let writes = crate::Writes::default();
        let ctx = ToolContext {
            exec: exec.clone(),
            input_responses: msg.params.get("inputResponses").cloned(),
            request_state,
            writes: writes.clone(),
            progress_token: msg.meta_field("progressToken").cloned(),
            log_level: msg
                .meta_field(META_LOG_LEVEL)
                .and_then(Value::as_str)
                .and_then(log_rank),
            progress_sent: Arc::new(Mutex::new(f64::MIN)),
            notifications,
        };
        let input_required: Arc<Mutex<Option<Value>>> = Arc::default();
        let parsed = Mutex::new(Some(parsed));
        let warnings = normalized.warnings;
        let innermost = || -> BoxFuture<'_, ToolResult> {
            let input = parsed
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .take();
            let ctx = ctx.clone();
            let exec = &exec;
            let input_required = Arc::clone(&input_required);
            let warnings = warnings.clone();
            Box::pin(async move {
                let Some(input) = input else {
                    return ToolResult::error(&internal_error(
                        exec,
                        "an interceptor ran the tool twice",
                    ));
                };
                let outcome = AssertUnwindSafe(tool.runner.run(ctx, input))
                    .catch_unwind()
                    .await;
                match outcome {
                    Ok(Ok(success)) => match outcome::shape_success(&success, &warnings) {
                        Ok(structured) => ToolResult::success(structured),
                        Err(e) => ToolResult::error(&internal_error(exec, &e.to_string())),
                    },
                    Ok(Err(CallError::Tool(e))) => ToolResult::error(&e),
                    Ok(Err(CallError::InputRequired(ir))) => {
                        let mut result = json!({"resultType": "input_required"});
                        if let Some(requests) = ir.input_requests {
                            result["inputRequests"] = requests;
                        }
                        if let Some(state) = ir.request_state {
                            result["requestState"] = json!(state);
                        }
                        *input_required
                            .lock()
                            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(result);
                        ToolResult::success(json!({}))
                    }
                    Ok(Err(CallError::Other(error))) => {
                        for handler in &tool.handlers {
                            if let Some(translated) = handler.catch(error.as_ref(), exec).await {
                                return ToolResult::error(&translated);
                            }
                        }
                        internal(exec, &format!("{error:#?}"))
                    }
                    Err(panic) => {
                        let text = panic
                            .downcast_ref::<&str>()
                            .map(|s| (*s).to_owned())
                            .or_else(|| panic.downcast_ref::<String>().cloned())
                            .unwrap_or_else(|| "panic".to_owned());
                        internal(exec, &format!("panic: {text}"))
                    }
                }
            })
        };
        let next = Next {
            rest: &tool.interceptors,
            ctx: &exec,
            innermost: &innermost,
        };
        // The deadline: a body that runs too long is dropped, and nothing it planned commits.
        let body = async {
            match &self.config.sleep {
                None => Ok(next.run().await),
                Some(sleep) => {
                    let body = next.run();
                    let timer = (sleep.0)(tool.deadline);
                    match futures_util::future::select(body, timer).await {
                        futures_util::future::Either::Left((result, _)) => Ok(result),
                        futures_util::future::Either::Right(((), _)) => Err(ToolResult::error(&ToolError::new(
                            ErrorKind::Internal,
                            format!("{} took longer than its deadline of {} seconds; nothing was done", tool.name, tool.deadline.as_secs()),
                            "Try again later, or narrow the request",
                        )
                        .detail("deadline_seconds", tool.deadline.as_secs()))),
                    }
                }
            }
        };
        // The records the call names, read in the credential's batch, are served to the body's
        // reads. Looked up by the keys named from the authenticated caller: an item read for
        // another claim is not found here.
        let ahead: store::read_ahead::ReadAheadItems = match (&self.config.read_ahead, caller) {
            (Some(read_ahead), Some(caller)) => read_ahead
                .handles(&caller.tenant, &normalized_args)
                .into_iter()
                .filter_map(|(_, key)| req.prefetched.one(&key).map(|item| (key, item)))
                .collect(),
            _ => Default::default(),
        };
        let body = store::read_ahead::scope(Arc::new(ahead), body);
        // Admission (rate buckets and a concurrency slot, one transaction) goes out beside the
        // body instead of before it: a body only reads and plans its writes, so running it
        // before admission is known changes nothing, and a refusal drops everything it
        // planned. The caller waits for one round trip instead of two.
        let admission = async {
            match (gates, caller) {
                (Some(g), Some(caller)) => {
                    // Leases outlive the deadline a little, so a crashed instance frees its slot.
                    let lease = i64::try_from(tool.deadline.as_secs()).unwrap_or(60) + 5;
                    self.releases.settle(caller).await;
                    let mut waited = 0;
                    loop {
                        let admitted = gates::admit(
                            g,
                            caller,
                            tool.effect,
                            tool.expensive,
                            &exec.request_id,
                            lease,
                            now,
                        )
                        .await;
                        // A slot can still be held by the call before this one, when that
                        // call ran on another instance and its release is still on its way
                        // (a read gives its slot back after its answer). Wait a little for it
                        // before telling the caller its other calls are still running; a
                        // refused attempt counted nothing.
                        let busy = matches!(&admitted, Ok(Err(refusal))
                            if refusal.details.get("concurrency") == Some(&json!(true)));
                        match &self.config.sleep {
                            Some(sleep) if busy && waited < SLOT_WAIT_ATTEMPTS => {
                                waited += 1;
                                (sleep.0)(SLOT_WAIT).await;
                            }
                            _ => break Some(admitted),
                        }
                    }
                }
                _ => None,
            }
        };
        let (admitted, ran) = futures_util::future::join(admission, body).await;
        match admitted {
            Some(Ok(Ok(held))) => *slot = Some(held),
            Some(Ok(Err(refusal))) => {
                ctx.notifications.take();
                return Ok(ToolResult::error(&refusal));
            }
            Some(Err(e)) => {
                ctx.notifications.take();
                return Ok(ToolResult::error(&e));
            }
            None => {}
        }
        let result = match ran {
            Ok(result) => result,
            Err(timed_out) => return Ok(timed_out),
        };
        let pending = input_required
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        match pending {
            Some(mut ir) => {
                if let Some(state) = ir.get("requestState").and_then(Value::as_str) {
                    let sealed = crate::state::seal(
                        &self.config.state_key,
                        state,
                        &principal,
                        tool.name,
                        &args_digest,
                        crate::state::now(),
                        self.config.state_ttl_seconds,
                    );
                    ir["requestState"] = json!(sealed);
                }
                ir["_meta"] = json!({META_SERVER_INFO: self.config.info.to_json()});
                Err(Interrupt::InputRequired(ir))
            }
            None => {
                self.finish_call(
                    tool,
                    &exec,
                    result,
                    &writes,
                    replay_key,
                    &args_digest,
                    &normalized_args,
                    brake_key,
                    now,
                    phase,
                    &approval,
                    slot,
                )
                .await
            }
        }
    }

    /// After the body: counts failures for the brake, and commits a successful call's writes
    /// with its replay record and the hooks' operations.
    #[allow(clippy::too_many_arguments)]
    async fn finish_call(
        &self,
        tool: &ToolSpec,
        exec: &ExecutionContext,
        result: ToolResult,
        writes: &crate::Writes,
        replay_key: Option<store::Key>,
        args_digest: &str,
        args: &Map<String, Value>,
        brake_key: store::Key,
        now: i64,
        phase: &Phase,
        approval: &crate::confirm::Approval,
        slot: &mut Option<gates::Slot>,
    ) -> Result<ToolResult, Interrupt> {
        let gates = self.config.gates.as_ref();
        let planned = writes.take();
        if result.is_error() {
            if let Some(g) = gates {
                gates::count_failure(g, brake_key, now).await;
            }
            return Ok(result);
        }
        if tool.effect == crate::EffectClass::Read {
            if !planned.ops.is_empty() {
                return Ok(ToolResult::error(&internal_error(
                    exec,
                    "a read tool planned writes",
                )));
            }
            return Ok(result);
        }
        let Some(g) = gates else {
            if planned.ops.is_empty() {
                return Ok(result);
            }
            return Ok(ToolResult::error(&internal_error(
                exec,
                "a write tool ran on a server without a store",
            )));
        };
        if tool.effect.needs_confirmation() {
            return self
                .two_step(
                    g, tool, exec, result, planned, args, now, phase, approval, slot,
                )
                .await;
        }
        let ids = planned.ids.clone();
        let call = gates::CommitContext {
            caller: exec.caller.as_ref(),
            tool: tool.name,
            ids: &ids,
            request_id: &exec.request_id,
        };
        let replay = replay_key.map(|key| (key, &result.structured, args_digest, args));
        match gates::commit(g, &call, planned, replay, now, slot.take()).await {
            gates::Committed::Done => Ok(result),
            gates::Committed::Replayed(first) => Ok(first),
            gates::Committed::Refused(error) => Ok(ToolResult::error(&error)),
        }
    }
}

impl Server {
    /// A two-step tool after its body ran: store the preparation as a pending action, or,
    /// when confirming, execute it if the content is unchanged.
    #[allow(clippy::too_many_arguments)]
    async fn two_step(
        &self,
        g: &crate::Gates,
        tool: &ToolSpec,
        exec: &ExecutionContext,
        result: ToolResult,
        mut planned: crate::writes::WriteSet,
        args: &Map<String, Value>,
        now: i64,
        phase: &Phase,
        approval: &crate::confirm::Approval,
        slot: &mut Option<gates::Slot>,
    ) -> Result<ToolResult, Interrupt> {
        use crate::confirm::{Pending, consume_op, new_token, preview_result, store_op};
        // The retry of an approval asked in the client: the sealed state names the pending
        // action (the pipeline verified the seal: this connection, tool and arguments).
        if let (Phase::Call, Some(token)) = (phase, approval.state.as_deref()) {
            let Some(caller) = exec.caller.as_ref() else {
                return Ok(ToolResult::error(&internal_error(
                    exec,
                    "approval without a connection",
                )));
            };
            let stored = match g
                .store
                .get(&crate::confirm::pending_key(&caller.tenant, token))
                .await
            {
                Ok(item) => item.and_then(|i| crate::confirm::read_pending(token, &i)),
                Err(e) => return Ok(ToolResult::error(&internal_error(exec, &e.to_string()))),
            };
            let pending = match crate::confirm::check(stored, caller, None) {
                Ok(p) => p,
                Err(e) => return Ok(ToolResult::error(&e)),
            };
            if !crate::confirm::approved(approval.responses.as_ref()) {
                return Ok(
                    match g
                        .store
                        .update(consume_op(&caller.tenant, token, "rejected"))
                        .await
                    {
                        Ok(_) => ToolResult::success(json!({
                            "summary": "The user did not approve; nothing was done.",
                            "status": "DECLINED",
                            "warnings": [],
                            "next_steps": [],
                        })),
                        Err(_) => ToolResult::error(&ToolError::new(
                            ErrorKind::Conflict,
                            "This action is no longer pending",
                            "Nothing was done",
                        )),
                    },
                );
            }
            let confirm = Phase::Confirm(Box::new(pending));
            let no_more = crate::confirm::Approval {
                state: None,
                ..approval.clone()
            };
            return Box::pin(self.two_step(
                g, tool, exec, result, planned, args, now, &confirm, &no_more, slot,
            ))
            .await;
        }
        let Some(caller) = exec.caller.as_ref() else {
            return Ok(ToolResult::error(&ToolError::new(
                ErrorKind::Forbidden,
                "This tool prepares actions for a person to confirm, which needs an authenticated connection",
                "Call it through a connection",
            )));
        };
        let Some((summary, content)) = planned.preview.take() else {
            return Ok(ToolResult::error(&internal_error(
                exec,
                "a two-step tool prepared no preview",
            )));
        };
        let content_hash = crate::canonical::digest(&content);
        let fresh = Pending {
            token: new_token(
                &self
                    .config
                    .read_ahead
                    .as_ref()
                    .map(|r| r.handles(&caller.tenant, args))
                    .unwrap_or_default()
                    .into_iter()
                    .map(|(handle, _)| handle)
                    .collect::<Vec<_>>(),
            ),
            connection: caller.connection.clone(),
            tool: tool.name.to_owned(),
            args: args.clone(),
            content_hash: content_hash.clone(),
            summary,
            status: "pending".into(),
        };
        match phase {
            Phase::Call => {
                let stored = gates::beside_release(
                    g,
                    slot.take(),
                    g.store.put(store_op(&caller.tenant, &fresh, now)),
                )
                .await;
                if let Err(e) = stored {
                    return Ok(ToolResult::error(&internal_error(exec, &e.to_string())));
                }
                if approval.elicitation && !tool.approval_in_product {
                    // The client can ask its user: ask for approval of the server-written
                    // summary; the sealed state names the pending action.
                    let sealed = crate::state::seal(
                        &self.config.state_key,
                        &fresh.token,
                        &approval.principal,
                        tool.name,
                        &approval.args_digest,
                        now,
                        self.config.state_ttl_seconds,
                    );
                    return Err(Interrupt::InputRequired(json!({
                        "resultType": "input_required",
                        "inputRequests": {"approval": crate::confirm::approval_request(&fresh.summary)},
                        "requestState": sealed,
                        "_meta": {META_SERVER_INFO: self.config.info.to_json()},
                    })));
                }
                let mut preview = preview_result(result.structured, &fresh, &content);
                if tool.approval_in_product {
                    // Money: only a person with the right approves, in the product's page.
                    let url = format!("{}/{}", self.config.approval_url_base, fresh.token);
                    if let Value::Object(obj) = &mut preview {
                        obj.insert("summary".into(), json!(format!("Prepared, not done yet: {} A person with the right must approve it in the product.", fresh.summary)));
                        obj.insert("approval_url".into(), json!(url));
                        obj.insert(
                            "next_steps".into(),
                            json!([
                                format!(
                                    "Give the user this link to approve it in the product: {url}"
                                ),
                                format!(
                                    "If the user declines: {} {}",
                                    crate::confirm::REJECT_ACTION,
                                    json!({"confirm_token": fresh.token})
                                ),
                            ]),
                        );
                    }
                }
                Ok(ToolResult::success(preview))
            }
            Phase::Confirm(old) if old.content_hash != content_hash => {
                // What would go out changed since the person approved it: the old token dies
                // and a new preview is shown instead of executing.
                let ops = vec![
                    consume_op(&caller.tenant, &old.token, "superseded").into(),
                    store_op(&caller.tenant, &fresh, now).into(),
                ];
                if let Err(e) = g.store.transact_write(ops).await {
                    tracing::info!(error = %e, "a pending action changed state during confirmation");
                    return Ok(ToolResult::error(
                        &crate::confirm::check(None, caller, None)
                            .err()
                            .unwrap_or_else(|| internal_error(exec, "pending action vanished")),
                    ));
                }
                let preview = preview_result(json!({}), &fresh, &content);
                let mut error = ToolError::new(
                    ErrorKind::Conflict,
                    "What this action would do changed since the preview; nothing was executed and the old confirm_token is dead",
                    "Show the user the new confirm_summary and confirm with the new confirm_token if they approve",
                )
                .detail("changed_since_preview", true)
                .detail("confirm_token", fresh.token.clone())
                .detail("confirm_summary", fresh.summary.clone());
                error
                    .details
                    .insert("preview".into(), preview["preview"].clone());
                Ok(ToolResult::error(&error))
            }
            Phase::Confirm(old) => {
                if tool.effect == crate::EffectClass::Notify {
                    let buckets = gates::object_buckets(g, &caller.tenant, &planned.ids, now);
                    planned.ops.extend(buckets);
                }
                planned.ops.push(crate::writes::Planned {
                    op: consume_op(&caller.tenant, &old.token, "used").into(),
                    on_conflict: Some(Box::new(|_| {
                        ToolError::new(
                            ErrorKind::Conflict,
                            "This action was already confirmed, rejected or replaced",
                            "Do not confirm it again",
                        )
                    })),
                });
                let ids = planned.ids.clone();
                let call = gates::CommitContext {
                    caller: Some(caller),
                    tool: tool.name,
                    ids: &ids,
                    request_id: &exec.request_id,
                };
                match gates::commit(g, &call, planned, None, now, slot.take()).await {
                    gates::Committed::Done | gates::Committed::Replayed(_) => {
                        let mut done = result;
                        if let Value::Object(obj) = &mut done.structured {
                            obj.insert("status".into(), json!("DONE"));
                            obj.insert("confirm_token".into(), json!(old.token));
                        }
                        Ok(done)
                    }
                    gates::Committed::Refused(error) => Ok(ToolResult::error(&error)),
                }
            }
        }
    }

    /// `confirm_action` and `reject_action`.
    async fn call_builtin(&self, req: &Request, era: Era, name: &str) -> Outcome {
        use crate::confirm::{
            CONFIRM_ACTION, check, consume_op, parse_args, pending_key, read_pending,
        };
        let started = std::time::Instant::now();
        let notifications = Notifications::default();
        let result = async {
            let Some(caller) = req.caller.as_ref() else {
                return Ok(ToolResult::error(&ToolError::new(
                    ErrorKind::Forbidden,
                    "Confirming needs an authenticated connection",
                    "Call it through a connection",
                )));
            };
            let Some(g) = self.config.gates.as_ref() else {
                return Ok(ToolResult::error(&ToolError::new(
                    ErrorKind::Internal,
                    "This server keeps no pending actions",
                    "Nothing to confirm",
                )));
            };
            let arguments = req
                .message
                .params
                .get("arguments")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            let confirming = name == CONFIRM_ACTION;
            let (token, summary) = match parse_args(&arguments, confirming) {
                Ok(parsed) => parsed,
                Err(e) => return Ok(ToolResult::error(&e)),
            };
            let key = pending_key(&caller.tenant, &token);
            let item = match req.prefetched.one(&key) {
                Some(item) => Ok(item),
                None => g.store.get(&key).await,
            };
            let stored = match item {
                Ok(item) => item.and_then(|i| read_pending(&token, &i)),
                Err(e) => {
                    return Ok(ToolResult::error(&ToolError::new(
                        ErrorKind::Internal,
                        format!("The store failed: {e}"),
                        "Try again",
                    )));
                }
            };
            let pending = match check(stored, caller, summary.as_deref()) {
                Ok(p) => p,
                Err(e) => return Ok(ToolResult::error(&e)),
            };
            if !confirming {
                return match g
                    .store
                    .update(consume_op(&caller.tenant, &token, "rejected"))
                    .await
                {
                    Ok(_) => Ok(ToolResult::success(json!({
                        "summary": "Rejected; nothing was done.",
                        "confirm_token": token,
                        "status": "REJECTED",
                        "warnings": [],
                        "next_steps": [],
                    }))),
                    Err(_) => Ok(ToolResult::error(&ToolError::new(
                        ErrorKind::Conflict,
                        "This action is no longer pending",
                        "Nothing to reject",
                    ))),
                };
            }
            let Some(tool) = self.registry.get(&pending.tool) else {
                return Ok(ToolResult::error(&ToolError::new(
                    ErrorKind::NotFound,
                    "The prepared tool no longer exists",
                    "Prepare the action again",
                )));
            };
            if tool.approval_in_product {
                let url = format!("{}/{}", self.config.approval_url_base, pending.token);
                return Ok(ToolResult::error(
                    &ToolError::new(
                        ErrorKind::Forbidden,
                        "This action moves money or binds the company, so it is approved only in the product, by a person with the right",
                        format!("Give the user the approval link: {url}"),
                    )
                    .detail("approval_url", url),
                ));
            }
            // Re-run the original tool with the stored arguments: live rights, guards and a
            // fresh preparation all apply again.
            let mut params = Map::new();
            params.insert("name".into(), json!(pending.tool));
            params.insert("arguments".into(), Value::Object(pending.args.clone()));
            if let Some(meta) = req.message.params.get("_meta") {
                params.insert("_meta".into(), meta.clone());
            }
            let rerun = Request {
                message: Message {
                    id: req.message.id.clone(),
                    method: "tools/call".into(),
                    params,
                },
                headers: req.headers.clone(),
                version_header: req.version_header.clone(),
                caller: req.caller.clone(),
                prefetched: req.prefetched.clone(),
            };
            let args = pending.args.clone();
            self.run_tool(
                tool,
                &rerun,
                args,
                notifications.clone(),
                &Phase::Confirm(Box::new(pending)),
            )
            .await
        }
        .await;
        log_call(req, name, &result, started);
        self.answer(req, era, result, notifications)
    }
}

/// A pending action as the product's approval page shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct PendingView {
    /// The token.
    pub token: String,
    /// The tool that prepared it.
    pub tool: String,
    /// The server-written summary.
    pub summary: String,
    /// `pending`, `used`, `rejected` or `superseded`.
    pub status: String,
    /// The connection that asked.
    pub connection: String,
    /// Whether the tool is approved only in the product (money).
    pub approval_in_product: bool,
}

impl Server {
    /// A pending action of `tenant`, for the approval page (`None`: unknown or expired).
    pub async fn pending_action(&self, tenant: &str, token: &str) -> Option<PendingView> {
        let g = self.config.gates.as_ref()?;
        let item = g
            .store
            .get(&crate::confirm::pending_key(tenant, token))
            .await
            .ok()??;
        let p = crate::confirm::read_pending(token, &item)?;
        let approval_in_product = self
            .registry
            .get(&p.tool)
            .is_some_and(|t| t.approval_in_product);
        Some(PendingView {
            token: p.token,
            tool: p.tool,
            summary: p.summary,
            status: p.status,
            connection: p.connection,
            approval_in_product,
        })
    }

    /// Approves a pending action from the product's page: the same checks as `confirm_action`
    /// (unused, unexpired, a fresh preparation with unchanged content, exactly once), with the
    /// approving member's live rights standing in for the connection's. `approver` carries the
    /// pending action's connection and the member's rights.
    pub async fn approve(&self, tenant: &str, token: &str, approver: crate::Caller) -> ToolResult {
        let Some(g) = self.config.gates.as_ref() else {
            return ToolResult::error(&ToolError::new(
                ErrorKind::Internal,
                "This server keeps no pending actions",
                "Nothing to approve",
            ));
        };
        let stored = match g
            .store
            .get(&crate::confirm::pending_key(tenant, token))
            .await
        {
            Ok(item) => item.and_then(|i| crate::confirm::read_pending(token, &i)),
            Err(e) => {
                return ToolResult::error(&ToolError::new(
                    ErrorKind::Internal,
                    format!("The store failed: {e}"),
                    "Try again",
                ));
            }
        };
        let pending = match crate::confirm::check(stored, &approver, None) {
            Ok(p) => p,
            Err(e) => return ToolResult::error(&e),
        };
        let Some(tool) = self.registry.get(&pending.tool) else {
            return ToolResult::error(&ToolError::new(
                ErrorKind::NotFound,
                "The prepared tool no longer exists",
                "Prepare the action again",
            ));
        };
        let mut params = Map::new();
        params.insert("name".into(), json!(pending.tool));
        params.insert("arguments".into(), Value::Object(pending.args.clone()));
        let request = Request {
            message: Message {
                id: Some(mcp_protocol::RequestId::String(format!("approval-{token}"))),
                method: "tools/call".into(),
                params,
            },
            headers: None,
            version_header: None,
            caller: Some(approver),
            prefetched: Default::default(),
        };
        let args = pending.args.clone();
        let result = self
            .run_tool(
                tool,
                &request,
                args,
                Notifications::default(),
                &Phase::Confirm(Box::new(pending)),
            )
            .await;
        log_call(&request, "approve", &result, std::time::Instant::now());
        match result {
            Ok(r) => r,
            Err(Interrupt::Refused(e)) => ToolResult::error(&ToolError::new(
                ErrorKind::Rejected,
                e.message,
                "Prepare the action again",
            )),
            Err(Interrupt::InputRequired(_)) => ToolResult::error(&ToolError::new(
                ErrorKind::Internal,
                "The action asked for more input",
                "Prepare it again",
            )),
        }
    }

    /// Rejects a pending action from the product's page.
    pub async fn reject_pending(
        &self,
        tenant: &str,
        token: &str,
        rejecter: &crate::Caller,
    ) -> ToolResult {
        let Some(g) = self.config.gates.as_ref() else {
            return ToolResult::error(&ToolError::new(
                ErrorKind::Internal,
                "This server keeps no pending actions",
                "Nothing to reject",
            ));
        };
        let stored = g
            .store
            .get(&crate::confirm::pending_key(tenant, token))
            .await
            .ok()
            .flatten()
            .and_then(|i| crate::confirm::read_pending(token, &i));
        if let Err(e) = crate::confirm::check(stored, rejecter, None) {
            return ToolResult::error(&e);
        }
        match g
            .store
            .update(crate::confirm::consume_op(tenant, token, "rejected"))
            .await
        {
            Ok(_) => ToolResult::success(
                json!({"summary": "Rejected; nothing was done.", "status": "REJECTED", "warnings": [], "next_steps": []}),
            ),
            Err(_) => ToolResult::error(&ToolError::new(
                ErrorKind::Conflict,
                "This action is no longer pending",
                "Nothing to reject",
            )),
        }
    }
}

/// One structured line per tool call, for logs and metrics: who, which tool, how it ended and
/// how long it took. Never arguments or results.
fn log_call(
    req: &Request,
    tool: &str,
    result: &Result<ToolResult, Interrupt>,
    started: std::time::Instant,
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
        duration_ms = started.elapsed().as_secs_f64() * 1000.0,
        "tool call"
    );
}

/// Why a tool call ended without a `CallToolResult`.
enum Interrupt {
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

fn hidden_error(tool: &str, hidden: &crate::Hidden) -> ToolError {
    match hidden {
        crate::Hidden::Toolset { needs, has } => ToolError::new(
            ErrorKind::Forbidden,
            format!("The tool {tool} is not in this connection's {} toolset (it is in {})", has.as_str(), needs.as_str()),
            "Use the tools this connection lists, or ask the person who manages connections for one with a larger toolset",
        )
        .detail("hidden_by", "toolset")
        .detail("toolset", has.as_str()),
        crate::Hidden::Rights(missing) => ToolError::new(
            ErrorKind::Forbidden,
            format!("The tool {tool} needs the right {} which this connection does not have now", missing.join(", ")),
            "Ask a person with that right to do this, or to grant the right to the member who created this connection",
        )
        .detail("hidden_by", "rights")
        .detail("missing_rights", missing.clone()),
    }
}

fn internal_error(exec: &ExecutionContext, cause: &str) -> ToolError {
    tracing::error!(request_id = %exec.request_id, tool = %exec.tool_name, cause, "tool failed");
    ToolError::new(
        ErrorKind::Internal,
        format!("The server failed while running {} (request {})", exec.tool_name, exec.request_id),
        "Nothing suggests your arguments were wrong; try again later, and quote the request id if it keeps failing",
    )
    .detail("request_id", exec.request_id.clone())
}

/// An error no handler took: logged with its cause, shown as a generic error with the
/// request id.
fn internal(exec: &ExecutionContext, cause: &str) -> ToolResult {
    ToolResult::error(&internal_error(exec, cause))
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
