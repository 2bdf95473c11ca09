//! The protocol's methods: one function per JSON-RPC method, and the entry of a tool call
//! (its plan, then the call's stages in `call`).

use std::sync::Arc;

use mcp_protocol::{
    LATEST_VERSION, META_CLIENT_CAPABILITIES, META_PROTOCOL_VERSION, META_SERVER_INFO, Message,
    RpcError,
};
use serde_json::{Map, Value, json};

use crate::call::Call;
use crate::confirm::Phase;
use crate::plan::CallPlan;
use crate::server::{Body, Interrupt, Outcome, Planned, Request, Server, log_call};
use crate::{Notifications, ToolError, ToolResult, Toolset};

/// Which era of the protocol a request belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Era {
    /// 2026-07-28: stateless, `_meta` on every request.
    Modern,
    /// 2025-06-18 / 2025-11-25: `initialize`, no `resultType`.
    Legacy,
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
            body: Some(Body::Json(mcp_protocol::error_response(id, error))),
            notifications: Vec::new(),
        }
    }
}

impl Server {
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
        if msg.method == "tools/call" {
            // The call owns its request from here: no copy of the arguments.
            return self.call_tool(req, era).await;
        }
        let result = match (era, msg.method.as_str()) {
            (Era::Modern, "server/discover") => Ok(self.discover()),
            (Era::Legacy, "initialize") => self.initialize(msg),
            (Era::Legacy, "ping") => Ok(json!({})),
            (_, "tools/list") => return self.list_tools(id, msg, era, req.caller.as_ref()),
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
                body: Some(Body::Json(mcp_protocol::response(
                    id,
                    self.finish(result, era),
                ))),
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
            meta[META_SERVER_INFO] = self.config().info.to_json();
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
            "serverInfo": self.config().info.to_json(),
            "ttlMs": self.config().list_ttl_ms,
            "cacheScope": "public",
        });
        if let Some(instructions) = &self.config().instructions {
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
            "serverInfo": self.config().info.to_json(),
        });
        if let Some(instructions) = &self.config().instructions {
            result["instructions"] = json!(instructions);
        }
        Ok(result)
    }

    /// `tools/list`: the descriptors the caller may see (rights cut live on every call),
    /// joined from their text serialized at start-up.
    fn list_tools(
        &self,
        id: &mcp_protocol::RequestId,
        msg: &Message,
        era: Era,
        caller: Option<&crate::Caller>,
    ) -> Outcome {
        if let Some(cursor) = msg.params.get("cursor") {
            // Every tool fits on one page, so no cursor was ever issued.
            let e = RpcError::invalid_params(format!(
                "Invalid cursor {cursor}: tools/list has a single page"
            ));
            return Outcome::error(Some(id), &e);
        }
        let mut rest = json!({});
        if era == Era::Modern {
            // Private: the visible set depends on the caller's rights.
            rest["ttlMs"] = json!(self.config().list_ttl_ms);
            rest["cacheScope"] = json!("private");
        }
        let rest = self.finish(rest, era);
        // Room for every descriptor of the widest toolset (with its comma), so the ~120 KB
        // text is written into one allocation, never grown and copied part-way.
        let widest: usize = self
            .tool_list
            .iter()
            .map(|[core, other]| core.len().max(other.len()) + 1)
            .sum();
        let text = list_response_text(id, widest + 256, &rest, |text| {
            self.push_visible_tools(text, caller);
        });
        Outcome {
            status: 200,
            // The descriptors go straight into the answer: one copy, not two.
            body: Some(Body::Text(text)),
            notifications: Vec::new(),
        }
    }

    /// Appends the JSON array of the descriptors `caller` may see, from their serialized text.
    fn push_visible_tools(&self, out: &mut String, caller: Option<&crate::Caller>) {
        out.push('[');
        let mut first = true;
        for (spec, [core, other]) in self.registry().iter().zip(&self.tool_list) {
            if caller.is_some_and(|c| self.hidden_from(spec, c).is_some()) {
                continue;
            }
            if !std::mem::take(&mut first) {
                out.push(',');
            }
            out.push_str(match caller.map(|c| c.toolset) {
                Some(Toolset::Core) => core,
                _ => other,
            });
        }
        out.push(']');
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
                check_param_headers(plan.spec.input_schema(), arguments(&req.message), headers)
        {
            return Outcome::error(Some(&id), &e);
        }
        let started = self.config().clock.now_micros();
        // One id for the call's log line, its execution context and its errors.
        if req.request_id.is_none() {
            req.request_id = Some(self.new_request_id());
        }
        let (name, effect) = (plan.spec.name(), plan.spec.effect());
        let (result, notifications) = Call::new(self, &req, plan, Phase::Call).run().await;
        log_call(&req, name, effect, &result, self.took_ms(started));
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
            .gate_keys(&claim.tenant, &claim.connection, &self.config().read_ahead)
    }

    fn plan_call(&self, message: &Message) -> Result<Arc<CallPlan>, RpcError> {
        let Some(name) = message.params.get("name").and_then(Value::as_str) else {
            return Err(RpcError::malformed_params(
                "tools/call needs params.name (a string)",
            ));
        };
        let Some(spec) = self.registry().get(name) else {
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
        let read_ahead = &self.config().read_ahead;
        let mut plan = CallPlan::new(Arc::clone(spec), arguments, read_ahead);
        if let Some(beyond) = &message.beyond_64_bits {
            plan.args = Err(beyond_64_bits(beyond));
        }
        Ok(Arc::new(plan))
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
            // Serialized in one pass, into room for a small result at once (the benchmark's
            // 1 KB payload makes a 2.3 KB response; a larger one grows the text).
            Ok(result) => Body::Text(result_response_text(id, 4 * 1024, |out| {
                result.write_fields(out);
                push_more_fields(out, &self.finish(json!({}), era));
            })),
            Err(Interrupt::Refused(error)) => return Outcome::error(Some(id), &error),
            Err(Interrupt::InputRequired(input_required)) => {
                let declared = msg.meta_field(META_CLIENT_CAPABILITIES);
                if let Some(missing) = missing_capabilities(&input_required, declared) {
                    return Outcome::error(Some(id), &RpcError::missing_capability(missing));
                }
                Body::Json(mcp_protocol::response(id, input_required))
            }
        };
        Outcome {
            status: 200,
            body: Some(body),
            notifications: notifications.take(),
        }
    }
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
        let (capability, needed) = match request.get("method").and_then(Value::as_str) {
            // Every elicitation the server asks is a form.
            Some("elicitation/create") => ("elicitation", json!({"form": {}})),
            Some("sampling/createMessage") => ("sampling", json!({})),
            Some("roots/list") => ("roots", json!({})),
            _ => continue,
        };
        let has = declared.is_some_and(|d| match capability {
            "elicitation" => mcp_protocol::elicits_forms(d),
            _ => d.get(capability).is_some(),
        });
        if !has {
            missing.insert(capability.to_owned(), needed);
        }
    }
    (!missing.is_empty()).then_some(Value::Object(missing))
}

/// Checks the `_meta` fields every 2026-07-28 request must carry. A request missing some is
/// told all of them at once, with the `_meta` that would be accepted.
fn check_meta(msg: &Message) -> Result<(), RpcError> {
    let version = msg.meta_field(META_PROTOCOL_VERSION);
    // A version named is checked first: a client of another version is told which are
    // supported, whatever else it left out.
    if let Some(version) = version {
        let Some(version) = version.as_str() else {
            return Err(RpcError::malformed_params(format!(
                "params._meta[\"{META_PROTOCOL_VERSION}\"] must be a string"
            )));
        };
        if version != LATEST_VERSION {
            return Err(RpcError::unsupported_version(version));
        }
    }
    let capabilities = msg.meta_field(META_CLIENT_CAPABILITIES);
    let missing: Vec<&str> = [
        (version.is_none(), META_PROTOCOL_VERSION),
        (capabilities.is_none(), META_CLIENT_CAPABILITIES),
    ]
    .into_iter()
    .filter_map(|(absent, name)| absent.then_some(name))
    .collect();
    if !missing.is_empty() {
        return Err(missing_meta(&missing));
    }
    if !matches!(capabilities, Some(Value::Object(_))) {
        return Err(RpcError::malformed_params(format!(
            "params._meta[\"{META_CLIENT_CAPABILITIES}\"] must be an object ({{}} declares none)"
        )));
    }
    check_optional_meta(msg)
}

/// Checks the optional `_meta` fields a request may carry: a log level MCP defines, and a
/// progress token that is a string or an integer.
fn check_optional_meta(msg: &Message) -> Result<(), RpcError> {
    if let Some(level) = msg.meta_field(mcp_protocol::META_LOG_LEVEL)
        && !level
            .as_str()
            .is_some_and(|l| crate::LOG_LEVELS.contains(&l))
    {
        return Err(RpcError::malformed_params(format!(
            "params._meta[\"{}\"] must be one of {}",
            mcp_protocol::META_LOG_LEVEL,
            crate::LOG_LEVELS.join(", ")
        )));
    }
    if let Some(token) = msg.meta_field("progressToken")
        && !(token.is_string() || token.is_i64() || token.is_u64())
    {
        return Err(RpcError::malformed_params(
            "params._meta.progressToken must be a string or an integer",
        ));
    }
    Ok(())
}

/// The error for a request whose `_meta` lacks the fields named in `missing`.
fn missing_meta(missing: &[&str]) -> RpcError {
    let named: Vec<String> = missing
        .iter()
        .map(|m| format!("params._meta[\"{m}\"]"))
        .collect();
    let verb = if missing.len() == 1 { "is" } else { "are" };
    RpcError::malformed_params(format!("{} {verb} required", named.join(" and "))).with_data(
        json!({
            "missing": missing,
            "_meta": {
                META_PROTOCOL_VERSION: LATEST_VERSION,
                META_CLIENT_CAPABILITIES: {},
            },
        }),
    )
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

/// A JSON-RPC response whose result object's fields `push_fields` writes as text, with room
/// for `capacity` bytes at once.
fn result_response_text(
    id: &mcp_protocol::RequestId,
    capacity: usize,
    push_fields: impl FnOnce(&mut String),
) -> String {
    let id = serde_json::to_string(id).unwrap_or_else(|_| "null".into());
    let mut text = String::with_capacity(capacity + id.len());
    text.push_str(r#"{"jsonrpc":"2.0","id":"#);
    text.push_str(&id);
    text.push_str(r#","result":{"#);
    push_fields(&mut text);
    text.push_str("}}");
    text
}

/// Appends the fields of the object `fields` as `,"name":value` (nothing when it has none).
fn push_more_fields(out: &mut String, fields: &Value) {
    let text = crate::to_text(fields);
    if let Some(inner) = text.strip_prefix('{').and_then(|t| t.strip_suffix('}'))
        && !inner.is_empty()
    {
        out.push(',');
        out.push_str(inner);
    }
}

/// The `tools/list` response as text: the tools array, then the result's other fields
/// (`rest`, an object), in a JSON-RPC envelope.
fn list_response_text(
    id: &mcp_protocol::RequestId,
    capacity: usize,
    rest: &Value,
    push_tools: impl FnOnce(&mut String),
) -> String {
    result_response_text(id, capacity, |out| {
        out.push_str(r#""tools":"#);
        push_tools(out);
        push_more_fields(out, rest);
    })
}

/// An argument holding an integer beyond 64 bits: the body was valid JSON, so the call is
/// answered as a tool error naming the field; the rounded value it was read as is never used.
fn beyond_64_bits(beyond: &mcp_protocol::strict_json::BeyondRange) -> ToolError {
    let field = mcp_protocol::strict_json::path_text(&beyond.path);
    ToolError::validation(
        format!(
            "Invalid arguments: `{field}`: the integer {} does not fit in 64 bits",
            beyond.integer
        ),
        "Send a number between -9223372036854775808 and 18446744073709551615, or the value as a string where the field takes text",
    )
    .detail("field", field)
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_protocol::{Incoming, parse_message};

    fn checked(meta: Value) -> Result<(), RpcError> {
        let line =
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta}});
        let Ok(Incoming::Message(message)) = parse_message(line.to_string().as_bytes()) else {
            panic!("a request");
        };
        check_meta(&message)
    }

    /// A client naming another version is told which are supported before anything else it
    /// left out; one naming none is told every missing field at once.
    #[test]
    fn a_version_named_is_checked_before_missing_fields() {
        let other = checked(json!({META_PROTOCOL_VERSION: "1900-01-01"})).unwrap_err();
        assert_eq!(other.code.code(), -32022, "{other:?}");
        let none = checked(json!({})).unwrap_err();
        assert_eq!(none.code.code(), -32602, "{none:?}");
        assert_eq!(none.data.unwrap()["missing"].as_array().unwrap().len(), 2);
        let fine = json!({META_PROTOCOL_VERSION: LATEST_VERSION, META_CLIENT_CAPABILITIES: {}});
        assert!(checked(fine).is_ok());
    }
}
