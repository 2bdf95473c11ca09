//! Contract tests of the MCP endpoint over raw JSON-RPC: statuses and error codes, the tool
//! model, per-tool decorators, argument handling and result shape.

use std::sync::{Arc, Mutex};

use futures_util::future::BoxFuture;
use mcp_http::{HttpConfig, McpService};
use mcp_pipeline::{
    CallError, EffectClass, ErrorKind, ExceptionHandler, ExecutionContext, Guard, Handle,
    HandleKind, Interceptor, Next, Refusal, Registry, Server, ServerConfig, Success, Tool,
    ToolContext, ToolError, ToolResult, ToolSpec, handle_error,
};
use mcp_test_client::TestClient;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

type Log = Arc<Mutex<Vec<String>>>;

fn push(log: &Log, entry: &str) {
    log.lock().unwrap().push(entry.to_owned());
}

// ===== test tools =====

#[derive(Debug, Clone, Copy, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Status {
    Draft,
    Confirmed,
    Cancelled,
}

struct Booking;
impl HandleKind for Booking {
    const PREFIX: &'static str = "bkg";
    const NOUN: &'static str = "booking";
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct EchoInput {
    /// Some text.
    text: String,
    /// A count.
    count: Option<u32>,
    /// A price.
    amount: Option<f64>,
    /// A flag.
    flag: Option<bool>,
    /// Tags.
    tags: Option<Vec<String>>,
    /// A status.
    status: Option<Status>,
    /// A booking.
    booking: Option<Handle<Booking>>,
}

#[derive(Debug, Serialize, JsonSchema)]
struct EchoOutput {
    echo: Value,
}

struct EchoArgs {
    body_runs: Log,
}

impl Tool for EchoArgs {
    type Input = EchoInput;
    type Output = EchoOutput;
    const NAME: &'static str = "echo_args";
    const TITLE: &'static str = "Echo arguments";
    const DESCRIPTION: &'static str = "Returns the arguments as the server read them.";
    const EFFECT: EffectClass = EffectClass::Read;

    async fn call(
        &self,
        ctx: ToolContext,
        input: EchoInput,
    ) -> Result<Success<EchoOutput>, CallError> {
        push(&self.body_runs, "echo_args");
        ctx.progress(1.0, Some(2.0), Some("half way"));
        ctx.log("info", json!("echoing"));
        ctx.progress(2.0, Some(2.0), None);
        Ok(Success::new(
            "Echoed the arguments.",
            EchoOutput {
                echo: json!({
                    "text": input.text,
                    "count": input.count,
                    "amount": input.amount,
                    "flag": input.flag,
                    "tags": input.tags,
                    "status": input.status,
                    "booking": input.booking.map(|b| b.to_string()),
                }),
            },
        )
        .next_step("call echo_args again"))
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Empty {}

#[derive(Debug, Serialize, JsonSchema)]
struct Done {
    done: bool,
}

/// A tool whose body records that it ran, and fails the way its `mode` says.
struct Recorder {
    name: &'static str,
    log: Log,
    mode: Mode,
}

#[derive(Clone, Copy)]
enum Mode {
    Ok,
    ValueError,
    Unhandled,
    Panic,
}

#[derive(Debug)]
struct ValueError(&'static str);

impl std::fmt::Display for ValueError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "value error: {}", self.0)
    }
}
impl std::error::Error for ValueError {}

#[derive(Debug)]
struct SecretError;
impl std::fmt::Display for SecretError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("database password hunter2 rejected")
    }
}
impl std::error::Error for SecretError {}

macro_rules! recorder_tool {
    ($ty:ident, $name:literal, $effect:expr) => {
        struct $ty(Recorder);
        impl Tool for $ty {
            type Input = Empty;
            type Output = Done;
            const NAME: &'static str = $name;
            const TITLE: &'static str = $name;
            const DESCRIPTION: &'static str = "A test tool.";
            const EFFECT: EffectClass = $effect;
            async fn call(
                &self,
                _ctx: ToolContext,
                _input: Empty,
            ) -> Result<Success<Done>, CallError> {
                push(&self.0.log, &format!("body:{}", self.0.name));
                match self.0.mode {
                    Mode::Ok => Ok(Success::new("Done.", Done { done: true })),
                    Mode::ValueError => Err(ValueError("qty must be positive").into()),
                    Mode::Unhandled => Err(SecretError.into()),
                    Mode::Panic => panic!("boom"),
                }
            }
        }
    };
}

recorder_tool!(GuardedAction, "guarded_action", EffectClass::SilentWrite);
recorder_tool!(OpenAction, "open_action", EffectClass::Read);
recorder_tool!(InterceptedAction, "intercepted_action", EffectClass::Read);
recorder_tool!(FailingAction, "failing_action", EffectClass::Read);
recorder_tool!(UnhandledAction, "unhandled_action", EffectClass::Read);
recorder_tool!(PanickingAction, "panicking_action", EffectClass::Read);
recorder_tool!(NotifyAction, "notify_customer", EffectClass::Notify);
recorder_tool!(DeleteAction, "delete_thing", EffectClass::Delete);

#[derive(Debug, Serialize, JsonSchema)]
struct Choice {
    choice: Value,
    state: Option<String>,
}

/// Asks the user through elicitation, then finishes with the answer.
struct AskUser;

impl Tool for AskUser {
    type Input = Empty;
    type Output = Choice;
    const NAME: &'static str = "ask_user";
    const TITLE: &'static str = "Ask the user";
    const DESCRIPTION: &'static str = "Asks the user to pick a colour, then returns it.";
    const EFFECT: EffectClass = EffectClass::Read;

    async fn call(&self, ctx: ToolContext, _input: Empty) -> Result<Success<Choice>, CallError> {
        match ctx.input_responses.as_ref().and_then(|r| r.get("colour")) {
            Some(answer) => Ok(Success::new(
                "The user answered.",
                Choice {
                    choice: answer["content"].clone(),
                    state: ctx.request_state.clone(),
                },
            )),
            None => Err(CallError::InputRequired(mcp_pipeline::InputRequired {
                input_requests: Some(json!({"colour": {
                    "method": "elicitation/create",
                    "params": {"message": "Which colour?", "requestedSchema": {"type": "object", "properties": {"colour": {"type": "string"}}}},
                }})),
                request_state: Some("state-1".into()),
            })),
        }
    }
}

struct NamedGuard {
    name: &'static str,
    allow: bool,
    log: Log,
}

#[async_trait::async_trait]
impl Guard for NamedGuard {
    fn name(&self) -> &str {
        self.name
    }

    async fn check(&self, ctx: &ExecutionContext) -> Result<(), Refusal> {
        push(&self.log, &format!("guard:{}", self.name));
        if self.allow {
            Ok(())
        } else {
            Err(Refusal::new(format!(
                "{} refuses {}",
                self.name, ctx.tool_name
            )))
        }
    }
}

/// Refuses unless the tool's `required_role` metadata equals the caller's role header.
struct RoleGuard {
    seen: Log,
}

#[async_trait::async_trait]
impl Guard for RoleGuard {
    async fn check(&self, ctx: &ExecutionContext) -> Result<(), Refusal> {
        let required = ctx
            .metadata("required_role")
            .and_then(Value::as_str)
            .unwrap_or("none")
            .to_owned();
        let app = ctx
            .metadata("app")
            .and_then(Value::as_str)
            .unwrap_or("none")
            .to_owned();
        push(&self.seen, &format!("required={required} app={app}"));
        match ctx.header("x-role") {
            Some(role) if role == required => Ok(()),
            _ => Err(Refusal::new(format!("this tool needs the {required} role"))),
        }
    }
}

struct Onion {
    name: &'static str,
    log: Log,
}

impl Interceptor for Onion {
    fn intercept<'a>(
        &'a self,
        _ctx: &'a ExecutionContext,
        next: Next<'a>,
    ) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            push(&self.log, &format!("{}:before", self.name));
            let mut result = next.run().await;
            push(&self.log, &format!("{}:after", self.name));
            if let Value::Object(obj) = &mut result.structured {
                let seen = obj.entry("seen_by").or_insert_with(|| json!([]));
                seen.as_array_mut().unwrap().push(json!(self.name));
            }
            result
        })
    }
}

struct Declines {
    log: Log,
}

#[async_trait::async_trait]
impl ExceptionHandler for Declines {
    async fn catch(
        &self,
        _error: &(dyn std::error::Error + Send + Sync + 'static),
        _ctx: &ExecutionContext,
    ) -> Option<ToolError> {
        push(&self.log, "handler:declines");
        None
    }
}

struct Fixture {
    service: McpService,
    log: Log,
}

fn fixture() -> Fixture {
    fixture_with(HttpConfig {
        allowed_origins: vec!["https://app.example.com".into()],
        max_body_bytes: 64 * 1024,
        ..HttpConfig::default()
    })
}

fn recorder(name: &'static str, log: &Log, mode: Mode) -> Recorder {
    Recorder {
        name,
        log: log.clone(),
        mode,
    }
}

fn fixture_with(http: HttpConfig) -> Fixture {
    let log: Log = Arc::default();
    let mut registry = Registry::new();
    registry
        .register(
            ToolSpec::new(EchoArgs {
                body_runs: log.clone(),
            })
            .synonym("status", "canceled", "cancelled"),
        )
        .unwrap();
    let g = |name, allow| NamedGuard {
        name,
        allow,
        log: log.clone(),
    };
    registry
        .register(
            ToolSpec::new(GuardedAction(recorder("guarded_action", &log, Mode::Ok)))
                .guard(g("AllowGuard", true))
                .guard(g("DenyGuard", false))
                .guard(g("NeverReachedGuard", true)),
        )
        .unwrap();
    registry
        .register(
            ToolSpec::new(OpenAction(recorder("open_action", &log, Mode::Ok)))
                .metadata("required_role", "admin")
                .guard(RoleGuard { seen: log.clone() }),
        )
        .unwrap();
    registry
        .register(
            ToolSpec::new(InterceptedAction(recorder(
                "intercepted_action",
                &log,
                Mode::Ok,
            )))
            .interceptor(Onion {
                name: "outer",
                log: log.clone(),
            })
            .interceptor(Onion {
                name: "inner",
                log: log.clone(),
            }),
        )
        .unwrap();
    let value_handler = {
        let log = log.clone();
        handle_error::<ValueError, _>(move |e, ctx| {
            push(&log, "handler:value");
            Some(
                ToolError::validation(
                    format!("Invalid input: {}", e.0),
                    "Send a positive quantity",
                )
                .detail("tool", ctx.tool_name.clone()),
            )
        })
    };
    let never_matches = handle_error::<std::io::Error, _>(|_, _| {
        Some(ToolError::new(ErrorKind::Internal, "io", "io"))
    });
    registry
        .register(
            ToolSpec::new(FailingAction(recorder(
                "failing_action",
                &log,
                Mode::ValueError,
            )))
            .interceptor(Onion {
                name: "outer",
                log: log.clone(),
            })
            .exception_handler(never_matches)
            .exception_handler(Declines { log: log.clone() })
            .exception_handler(value_handler),
        )
        .unwrap();
    registry
        .register(
            ToolSpec::new(UnhandledAction(recorder(
                "unhandled_action",
                &log,
                Mode::Unhandled,
            )))
            .exception_handler(Declines { log: log.clone() }),
        )
        .unwrap();
    registry
        .register(ToolSpec::new(PanickingAction(recorder(
            "panicking_action",
            &log,
            Mode::Panic,
        ))))
        .unwrap();
    registry
        .register(ToolSpec::new(NotifyAction(recorder(
            "notify_customer",
            &log,
            Mode::Ok,
        ))))
        .unwrap();
    registry.register(ToolSpec::new(AskUser)).unwrap();
    registry
        .register(ToolSpec::new(DeleteAction(recorder(
            "delete_thing",
            &log,
            Mode::Ok,
        ))))
        .unwrap();
    let mut config = ServerConfig::default();
    config.default_metadata.insert("app".into(), json!("shop"));
    config
        .default_metadata
        .insert("required_role".into(), json!("user"));
    let server = Server::new(config, registry);
    Fixture {
        service: McpService::new(server, http),
        log,
    }
}

fn client(f: &Fixture) -> TestClient {
    TestClient::in_process(f.service.clone())
}

fn entries(log: &Log) -> Vec<String> {
    log.lock().unwrap().clone()
}

fn modern_body(method: &str, params: Value) -> Value {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params})
}

fn headers(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

const JSON: (&str, &str) = ("content-type", "application/json");
const V: (&str, &str) = ("mcp-protocol-version", "2026-07-28");

async fn post(f: &Fixture, hs: &[(&str, &str)], body: &Value) -> mcp_test_client::RawResponse {
    client(f)
        .send(
            http::Method::POST,
            "/mcp",
            &headers(hs),
            body.to_string().into(),
        )
        .await
}

// ===== HTTP statuses and protocol errors =====

#[tokio::test]
async fn get_and_delete_get_405() {
    let f = fixture();
    for method in [http::Method::GET, http::Method::DELETE] {
        let r = client(&f)
            .send(method.clone(), "/mcp", &headers(&[V]), bytes::Bytes::new())
            .await;
        assert_eq!(r.status, 405, "{method}");
        assert_eq!(r.header("allow"), Some("POST"));
    }
}

#[tokio::test]
async fn a_batch_gets_400_and_one_error() {
    let f = fixture();
    let batch = json!([
        modern_body("tools/list", json!({})),
        modern_body("tools/list", json!({}))
    ]);
    let r = post(&f, &[JSON, V, ("mcp-method", "tools/list")], &batch).await;
    assert_eq!(r.status, 400);
    let body = r.json();
    assert!(body.is_object(), "one error object, not an array: {body}");
    assert_eq!(body["error"]["code"], -32600);
}

#[tokio::test]
async fn a_notification_gets_202_and_no_body() {
    let f = fixture();
    let n = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let r = post(&f, &[JSON, ("mcp-protocol-version", "2025-11-25")], &n).await;
    assert_eq!(r.status, 202);
    assert!(r.body.is_empty());
}

#[tokio::test]
async fn origin_not_on_the_allowlist_gets_403_before_anything_runs() {
    let f = fixture();
    let body = modern_body(
        "tools/call",
        json!({"name": "open_action", "arguments": {}}),
    );
    let hs = [
        JSON,
        V,
        ("mcp-method", "tools/call"),
        ("mcp-name", "open_action"),
        ("x-role", "admin"),
    ];
    let mut bad = hs.to_vec();
    bad.push(("origin", "https://evil.example"));
    let r = post(&f, &bad, &body).await;
    assert_eq!(r.status, 403);
    assert!(
        entries(&f.log).is_empty(),
        "something ran for a forbidden origin: {:?}",
        entries(&f.log)
    );
    // Even a request that is otherwise malformed gets 403 first.
    let r = client(&f)
        .send(
            http::Method::GET,
            "/mcp",
            &headers(&[("origin", "https://evil.example")]),
            bytes::Bytes::new(),
        )
        .await;
    assert_eq!(r.status, 403);
    let mut good = hs.to_vec();
    good.push(("origin", "https://app.example.com"));
    let r = post(&f, &good, &body).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["result"]["isError"], false);
}

#[tokio::test]
async fn a_body_over_the_limit_gets_413() {
    let f = fixture();
    let big = modern_body(
        "tools/call",
        json!({"name": "echo_args", "arguments": {"text": "x".repeat(70 * 1024)}}),
    );
    let r = post(
        &f,
        &[
            JSON,
            V,
            ("mcp-method", "tools/call"),
            ("mcp-name", "echo_args"),
        ],
        &big,
    )
    .await;
    assert_eq!(r.status, 413);
    assert!(
        r.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("exceeds")
    );
    assert!(
        entries(&f.log).is_empty(),
        "the tool ran on an oversized body"
    );
}

#[tokio::test]
async fn wrong_content_type_and_bad_json() {
    let f = fixture();
    let r = client(&f)
        .send(
            http::Method::POST,
            "/mcp",
            &headers(&[("content-type", "text/plain"), V]),
            "{}".into(),
        )
        .await;
    assert_eq!(r.status, 415);
    let r = client(&f)
        .send(
            http::Method::POST,
            "/mcp",
            &headers(&[JSON, V]),
            "{not json".into(),
        )
        .await;
    assert_eq!(r.status, 400);
    assert_eq!(r.error_code(), Some(-32700));
    assert!(r.json()["id"].is_null());
    let r = client(&f)
        .send(
            http::Method::POST,
            "/other",
            &headers(&[JSON, V]),
            "{}".into(),
        )
        .await;
    assert_eq!(r.status, 404);
}

#[tokio::test]
async fn unknown_method_gets_404_and_32601() {
    let f = fixture();
    let r = client(&f).request("resources/list", json!({})).await;
    assert_eq!(r.status, 404);
    assert_eq!(r.error_code(), Some(-32601));
    // `ping` and `initialize` do not exist in 2026-07-28.
    let r = client(&f).request("ping", json!({})).await;
    assert_eq!((r.status, r.error_code()), (404, Some(-32601)));
    let r = client(&f).request("initialize", json!({})).await;
    assert_eq!((r.status, r.error_code()), (404, Some(-32601)));
    assert!(
        r.json()["error"]["data"]["supported"]
            .as_array()
            .is_some_and(|s| !s.is_empty())
    );
}

#[tokio::test]
async fn mcp_headers_must_be_present_and_match_the_body() {
    let f = fixture();
    let body = modern_body(
        "tools/call",
        json!({"name": "open_action", "arguments": {}}),
    );
    let cases: Vec<(&str, Vec<(&str, &str)>)> = vec![
        (
            "no version header",
            vec![
                JSON,
                ("mcp-method", "tools/call"),
                ("mcp-name", "open_action"),
            ],
        ),
        (
            "no method header",
            vec![JSON, V, ("mcp-name", "open_action")],
        ),
        (
            "no name header",
            vec![JSON, V, ("mcp-method", "tools/call")],
        ),
        (
            "method differs",
            vec![
                JSON,
                V,
                ("mcp-method", "tools/list"),
                ("mcp-name", "open_action"),
            ],
        ),
        (
            "name differs",
            vec![
                JSON,
                V,
                ("mcp-method", "tools/call"),
                ("mcp-name", "guarded_action"),
            ],
        ),
        (
            "bad base64",
            vec![
                JSON,
                V,
                ("mcp-method", "tools/call"),
                ("mcp-name", "=?base64?***?="),
            ],
        ),
    ];
    for (what, hs) in cases {
        let r = post(&f, &hs, &body).await;
        assert_eq!(
            (r.status, r.error_code()),
            (400, Some(-32020)),
            "{what}: {:?}",
            r.json()
        );
    }
    // The body's _meta version must equal the header.
    let mut other = body.clone();
    other["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("2025-11-25");
    let r = post(
        &f,
        &[
            JSON,
            V,
            ("mcp-method", "tools/call"),
            ("mcp-name", "open_action"),
        ],
        &other,
    )
    .await;
    assert_eq!((r.status, r.error_code()), (400, Some(-32020)));
    assert!(
        entries(&f.log).is_empty(),
        "a tool ran despite bad headers: {:?}",
        entries(&f.log)
    );
}

#[tokio::test]
async fn mcp_name_in_base64_form_is_decoded() {
    let f = fixture();
    let body = modern_body(
        "tools/call",
        json!({"name": "echo_args", "arguments": {"text": "hi"}}),
    );
    let encoded = mcp_test_client::encode_header(" echo_args");
    assert!(encoded.starts_with("=?base64?"));
    // The decoded value " echo_args" differs from the body, so this is a mismatch...
    let r = post(
        &f,
        &[
            JSON,
            V,
            ("mcp-method", "tools/call"),
            ("mcp-name", &encoded),
        ],
        &body,
    )
    .await;
    assert_eq!(r.error_code(), Some(-32020));
    // ...while the base64 form of the right name matches.
    let r = post(
        &f,
        &[
            JSON,
            V,
            ("mcp-method", "tools/call"),
            ("mcp-name", "=?base64?ZWNob19hcmdz?="),
        ],
        &body,
    )
    .await;
    assert_eq!(r.status, 200, "{:?}", r.json());
}

#[tokio::test]
async fn unsupported_version_gets_400_with_the_supported_list() {
    let f = fixture();
    let body = modern_body("tools/list", json!({}));
    let r = post(
        &f,
        &[
            JSON,
            ("mcp-protocol-version", "1900-01-01"),
            ("mcp-method", "tools/list"),
        ],
        &body,
    )
    .await;
    assert_eq!((r.status, r.error_code()), (400, Some(-32022)));
    let data = &r.json()["error"]["data"];
    assert_eq!(data["requested"], "1900-01-01");
    assert_eq!(data["supported"], json!(mcp_protocol::SUPPORTED_VERSIONS));
}

#[tokio::test]
async fn missing_meta_fields_get_400_and_32602() {
    let f = fixture();
    for missing in [
        "io.modelcontextprotocol/clientCapabilities",
        "io.modelcontextprotocol/protocolVersion",
    ] {
        let mut body = modern_body("tools/list", json!({}));
        body["params"]["_meta"]
            .as_object_mut()
            .unwrap()
            .remove(missing);
        let hs = [JSON, V, ("mcp-method", "tools/list")];
        let r = post(&f, &hs, &body).await;
        assert_eq!(
            (r.status, r.error_code()),
            (400, Some(-32602)),
            "{missing}: {:?}",
            r.json()
        );
        assert!(
            r.json()["error"]["message"]
                .as_str()
                .unwrap()
                .contains(missing)
        );
    }
}

#[tokio::test]
async fn sessions_are_ignored_and_never_minted() {
    let f = fixture();
    let c = client(&f)
        .with_header("mcp-session-id", "abc123")
        .with_header("last-event-id", "42");
    let r = c.request("tools/list", json!({})).await;
    assert_eq!(r.status, 200);
    assert!(r.header("mcp-session-id").is_none());
    let legacy = TestClient::in_process(f.service.clone()).legacy("2025-06-18");
    let r = legacy
        .request("initialize", json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}))
        .await;
    assert_eq!(r.status, 200);
    assert!(
        r.header("mcp-session-id").is_none(),
        "initialize minted a session"
    );
    let result = &r.json()["result"];
    assert_eq!(result["protocolVersion"], "2025-06-18");
    assert_eq!(result["capabilities"]["tools"]["listChanged"], false);
    assert_eq!(result["serverInfo"]["name"], "gatehouse");
}

#[tokio::test]
async fn legacy_clients_get_ping_list_and_call_without_a_session() {
    let f = fixture();
    for version in ["2025-06-18", "2025-11-25"] {
        let c = TestClient::in_process(f.service.clone()).legacy(version);
        let r = c.request("ping", json!({})).await;
        assert_eq!(r.json()["result"], json!({}), "{version}");
        let list = c.list_tools().await;
        assert!(list["tools"].as_array().unwrap().len() >= 5);
        assert!(list.get("resultType").is_none());
        let call = c.call_tool("echo_args", json!({"text": "hello"})).await;
        assert!(!call.is_error(), "{version}: {}", call.result);
    }
    // A legacy client with no version header at all is served too.
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    let r = post(&f, &[JSON], &body).await;
    assert_eq!(r.status, 200);
}

#[tokio::test]
async fn discover_and_list_carry_cache_hints_and_server_info() {
    let f = fixture();
    let r = client(&f).request("server/discover", json!({})).await;
    let result = &r.json()["result"];
    assert_eq!(result["resultType"], "complete");
    assert_eq!(
        result["supportedVersions"],
        json!(mcp_protocol::SUPPORTED_VERSIONS)
    );
    assert!(result["ttlMs"].as_u64().is_some());
    assert_eq!(result["cacheScope"], "public");
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "gatehouse"
    );
    let list = client(&f).list_tools().await;
    assert_eq!(list["resultType"], "complete");
    assert_eq!(
        list["cacheScope"], "private",
        "the tool list depends on who asks"
    );
    assert!(list["ttlMs"].as_u64().is_some());
    assert!(list.get("nextCursor").is_none(), "one page");
    assert_eq!(
        list["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "gatehouse"
    );
    let r = client(&f)
        .request("tools/list", json!({"cursor": "abc"}))
        .await;
    assert_eq!(r.error_code(), Some(-32602));
}

#[tokio::test]
async fn unknown_tool_is_a_protocol_error() {
    let f = fixture();
    let r = client(&f)
        .request(
            "tools/call",
            json!({"name": "no_such_tool", "arguments": {}}),
        )
        .await;
    assert_eq!(r.error_code(), Some(-32602));
    assert!(
        r.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no_such_tool")
    );
}

// ===== the tool model =====

#[tokio::test]
async fn tools_are_listed_in_registration_order_with_derived_schemas_and_annotations() {
    let f = fixture();
    let list = client(&f).list_tools().await;
    let tools = list["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "echo_args",
            "guarded_action",
            "open_action",
            "intercepted_action",
            "failing_action",
            "unhandled_action",
            "panicking_action",
            "notify_customer",
            "ask_user",
            "delete_thing"
        ]
    );
    for tool in tools {
        let name = tool["name"].as_str().unwrap();
        assert!(name.len() <= 40);
        assert_eq!(tool["inputSchema"]["type"], "object", "{name}");
        assert_eq!(tool["inputSchema"]["additionalProperties"], false, "{name}");
        let any_of = tool["outputSchema"]["anyOf"]
            .as_array()
            .unwrap_or_else(|| panic!("{name}: outputSchema covers success and error"));
        assert_eq!(any_of.len(), 2);
        assert_eq!(any_of[1]["properties"]["error"]["const"], true);
        assert!(tool["title"].is_string() && tool["description"].is_string());
    }
    let by_name = |n: &str| tools.iter().find(|t| t["name"] == n).unwrap()["annotations"].clone();
    assert_eq!(by_name("echo_args")["readOnlyHint"], true);
    assert_eq!(by_name("guarded_action")["readOnlyHint"], false);
    assert_eq!(by_name("guarded_action")["idempotentHint"], true);
    assert_eq!(by_name("notify_customer")["openWorldHint"], true);
    assert_eq!(by_name("delete_thing")["destructiveHint"], true);
    let echo = tools.iter().find(|t| t["name"] == "echo_args").unwrap();
    assert_eq!(echo["inputSchema"]["required"], json!(["text"]));
}

#[test]
fn annotations_come_from_the_effect_class_alone() {
    for class in [
        EffectClass::Read,
        EffectClass::SilentWrite,
        EffectClass::Notify,
        EffectClass::Wake,
        EffectClass::Alerting,
        EffectClass::Delete,
    ] {
        let a = class.annotations("t");
        assert_eq!(a["readOnlyHint"], class == EffectClass::Read);
        assert_eq!(
            a["destructiveHint"],
            matches!(class, EffectClass::Alerting | EffectClass::Delete)
        );
        assert_eq!(
            class.needs_confirmation(),
            !matches!(class, EffectClass::Read | EffectClass::SilentWrite)
        );
    }
}

#[test]
fn registration_refuses_bad_names_and_duplicates() {
    let log: Log = Arc::default();
    let mut registry = Registry::new();
    registry
        .register(ToolSpec::new(OpenAction(recorder(
            "open_action",
            &log,
            Mode::Ok,
        ))))
        .unwrap();
    let again = registry.register(ToolSpec::new(OpenAction(recorder(
        "open_action",
        &log,
        Mode::Ok,
    ))));
    assert_eq!(
        again,
        Err(mcp_pipeline::RegistryError::Duplicate("open_action".into()))
    );
    struct BadName;
    impl Tool for BadName {
        type Input = Empty;
        type Output = Done;
        const NAME: &'static str = "BadName";
        const TITLE: &'static str = "x";
        const DESCRIPTION: &'static str = "x";
        const EFFECT: EffectClass = EffectClass::Read;
        async fn call(&self, _: ToolContext, _: Empty) -> Result<Success<Done>, CallError> {
            Ok(Success::new("x", Done { done: true }))
        }
    }
    assert!(matches!(
        registry.register(ToolSpec::new(BadName)),
        Err(mcp_pipeline::RegistryError::BadName(_))
    ));
}

#[tokio::test]
async fn success_results_lead_with_summary_then_output_warnings_next_steps() {
    let f = fixture();
    let call = client(&f)
        .call_tool("echo_args", json!({"text": "hi"}))
        .await;
    assert!(!call.is_error());
    let keys: Vec<&String> = call.structured().as_object().unwrap().keys().collect();
    assert_eq!(keys, ["summary", "echo", "warnings", "next_steps"]);
    assert_eq!(
        call.structured()["next_steps"],
        json!(["call echo_args again"])
    );
    assert_eq!(call.result["resultType"], "complete");
}

// ===== arguments =====

#[tokio::test]
async fn unknown_fields_are_refused_with_the_allowed_list_and_nothing_runs() {
    let f = fixture();
    let call = client(&f)
        .call_tool("echo_args", json!({"text": "hi", "colour": "red"}))
        .await;
    assert!(call.is_error());
    assert!(
        call.text().starts_with("Error: Unknown argument `colour`."),
        "{}",
        call.text()
    );
    let s = call.structured();
    assert_eq!(s["code"], "validation");
    assert_eq!(s["unknown"], json!(["colour"]));
    assert_eq!(
        s["allowed"],
        json!([
            "text", "count", "amount", "flag", "tags", "status", "booking"
        ])
    );
    assert!(
        entries(&f.log).is_empty(),
        "the body ran: {:?}",
        entries(&f.log)
    );
}

#[tokio::test]
async fn tolerant_input_is_coerced_and_every_coercion_is_reported() {
    let f = fixture();
    let call = client(&f)
        .call_tool(
            "echo_args",
            json!({"text": 42, "count": "5", "amount": "12.5", "flag": "true", "tags": "[\"a\",\"b\"]", "status": "Canceled"}),
        )
        .await;
    assert!(!call.is_error(), "{}", call.text());
    let echo = &call.structured()["echo"];
    assert_eq!(echo["text"], "42");
    assert_eq!(echo["count"], 5);
    assert_eq!(echo["amount"], 12.5);
    assert_eq!(echo["flag"], true);
    assert_eq!(echo["tags"], json!(["a", "b"]));
    assert_eq!(echo["status"], "cancelled");
    let warnings = call.structured()["warnings"].as_array().unwrap();
    assert_eq!(warnings.len(), 6, "{warnings:?}");
    for field in ["text", "count", "amount", "flag", "tags", "status"] {
        assert!(
            warnings
                .iter()
                .any(|w| w.as_str().unwrap().starts_with(&format!("`{field}`"))),
            "{field}: {warnings:?}"
        );
    }
    // Enum by case alone.
    let call = client(&f)
        .call_tool("echo_args", json!({"text": "x", "status": "CONFIRMED"}))
        .await;
    assert_eq!(call.structured()["echo"]["status"], "confirmed");
    // Well-typed input gets no warnings.
    let call = client(&f)
        .call_tool("echo_args", json!({"text": "x", "count": 3, "flag": false}))
        .await;
    assert_eq!(call.structured()["warnings"], json!([]));
}

#[tokio::test]
async fn invalid_values_are_validation_errors_naming_the_field() {
    let f = fixture();
    for (args, field) in [
        (json!({"text": "x", "count": "many"}), "count"),
        (json!({"text": "x", "status": "maybe"}), "status"),
        (json!({"text": "x", "flag": "perhaps"}), "flag"),
        (json!({}), "text"),
    ] {
        let call = client(&f).call_tool("echo_args", args.clone()).await;
        assert!(call.is_error(), "{args}");
        assert_eq!(call.structured()["code"], "validation");
        assert!(call.text().contains(field), "{field}: {}", call.text());
    }
    assert!(entries(&f.log).is_empty());
}

#[tokio::test]
async fn handles_are_accepted_in_every_form_and_wrong_kinds_are_named() {
    let f = fixture();
    let h = Handle::<Booking>::generate();
    for form in [
        h.to_string(),
        h.id().to_owned(),
        format!("https://app.example.com/bookings/{h}"),
    ] {
        let call = client(&f)
            .call_tool("echo_args", json!({"text": "x", "booking": form}))
            .await;
        assert!(!call.is_error(), "{form}: {}", call.text());
        assert_eq!(call.structured()["echo"]["booking"], h.to_string());
    }
    let call = client(&f)
        .call_tool("echo_args", json!({"text": "x", "booking": "cus_4f9Xk2"}))
        .await;
    assert!(call.is_error());
    assert!(
        call.text().contains("cus_")
            && call.text().contains("booking")
            && call.text().contains("bkg_"),
        "{}",
        call.text()
    );
}

// ===== decorators =====

#[tokio::test]
async fn guards_run_in_order_and_the_first_refusal_wins() {
    let f = fixture();
    let call = client(&f).call_tool("guarded_action", json!({})).await;
    assert!(call.is_error());
    assert!(
        call.text()
            .starts_with("Error: DenyGuard refuses guarded_action."),
        "{}",
        call.text()
    );
    let s = call.structured();
    assert_eq!(s["type"], "FORBIDDEN");
    assert_eq!(s["guard"], "DenyGuard");
    assert_eq!(s["code"], "forbidden");
    assert_eq!(
        entries(&f.log),
        ["guard:AllowGuard", "guard:DenyGuard"],
        "later guards and the body must not run"
    );
}

#[tokio::test]
async fn guards_read_metadata_with_the_tools_value_winning() {
    let f = fixture();
    let call = client(&f).call_tool("open_action", json!({})).await;
    assert!(call.is_error());
    assert_eq!(call.structured()["guard"], "RoleGuard");
    assert_eq!(entries(&f.log), ["required=admin app=shop"]);
    let admin = client(&f).with_header("x-role", "admin");
    let call = admin.call_tool("open_action", json!({})).await;
    assert!(!call.is_error(), "{}", call.text());
    assert_eq!(entries(&f.log).last().unwrap(), "body:open_action");
}

#[tokio::test]
async fn guard_on_one_tool_does_not_affect_others() {
    let f = fixture();
    let call = client(&f).call_tool("intercepted_action", json!({})).await;
    assert!(!call.is_error());
    assert!(!entries(&f.log).iter().any(|e| e.starts_with("guard:")));
}

#[tokio::test]
async fn interceptors_wrap_like_an_onion_and_may_change_the_result() {
    let f = fixture();
    let call = client(&f).call_tool("intercepted_action", json!({})).await;
    assert_eq!(
        entries(&f.log),
        [
            "outer:before",
            "inner:before",
            "body:intercepted_action",
            "inner:after",
            "outer:after"
        ]
    );
    assert_eq!(call.structured()["seen_by"], json!(["inner", "outer"]));
}

#[tokio::test]
async fn exception_handlers_chain_in_order_and_declining_passes_on() {
    let f = fixture();
    let call = client(&f).call_tool("failing_action", json!({})).await;
    assert!(call.is_error());
    assert!(
        call.text()
            .starts_with("Error: Invalid input: qty must be positive."),
        "{}",
        call.text()
    );
    assert_eq!(call.structured()["code"], "validation");
    assert_eq!(call.structured()["tool"], "failing_action");
    assert_eq!(
        entries(&f.log),
        [
            "outer:before",
            "body:failing_action",
            "handler:declines",
            "handler:value",
            "outer:after"
        ],
        "handlers run inside the interceptors, in order"
    );
}

#[tokio::test]
async fn an_error_no_handler_takes_is_generic_with_a_request_id_and_no_cause() {
    let f = fixture();
    for tool in ["unhandled_action", "panicking_action"] {
        let call = client(&f).call_tool(tool, json!({})).await;
        assert!(call.is_error());
        let s = call.structured();
        assert_eq!(s["code"], "internal");
        let request_id = s["request_id"].as_str().unwrap();
        assert!(request_id.starts_with("req_"));
        assert!(call.text().contains(request_id));
        assert!(
            !call.text().contains("hunter2") && !call.text().contains("boom"),
            "the cause leaked: {}",
            call.text()
        );
    }
}

#[tokio::test]
async fn progress_and_logs_come_as_sse_only_when_asked_for() {
    let f = fixture();
    let plain = client(&f)
        .call_tool("echo_args", json!({"text": "x"}))
        .await;
    assert!(!plain.response.is_sse(), "no progress was asked for");
    let params = json!({
        "name": "echo_args",
        "arguments": {"text": "x"},
        "_meta": {"progressToken": "tok-1", "io.modelcontextprotocol/logLevel": "info"},
    });
    let call = client(&f).call_tool_with("echo_args", params).await;
    assert!(call.response.is_sse());
    assert_eq!(call.response.header("x-accel-buffering"), Some("no"));
    let messages = call.response.sse_messages();
    let methods: Vec<&str> = messages
        .iter()
        .filter_map(|m| m["method"].as_str())
        .collect();
    assert_eq!(
        methods,
        [
            "notifications/progress",
            "notifications/message",
            "notifications/progress"
        ]
    );
    assert_eq!(messages[0]["params"]["progressToken"], "tok-1");
    assert_eq!(
        messages.last().unwrap()["result"]["isError"],
        false,
        "the response comes last"
    );
}

#[tokio::test]
async fn an_error_result_is_built_from_tool_error_fields() {
    let e = ToolError::new(
        ErrorKind::Conflict,
        "The booking changed since you read it",
        "Read it again",
    )
    .next_call("get_booking")
    .detail("current_version", "v2");
    let r = ToolResult::error(&e).to_json();
    mcp_test_client::assert_text_matches_structured(&r);
    let text = r["content"][0]["text"].as_str().unwrap();
    assert!(
        text.starts_with(
            "Error: The booking changed since you read it. Read it again. Next call: get_booking.\n"
        ),
        "{text}"
    );
    assert_eq!(r["structuredContent"]["next_call"], "get_booking");
    assert_eq!(r["structuredContent"]["current_version"], "v2");
}

// ===== multi round-trip requests =====

#[tokio::test]
async fn input_required_asks_only_for_declared_capabilities_and_the_retry_completes() {
    let f = fixture();
    let with_elicitation =
        json!({"io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}});
    let call = client(&f)
        .call_tool_with(
            "ask_user",
            json!({"name": "ask_user", "arguments": {}, "_meta": with_elicitation}),
        )
        .await;
    assert_eq!(call.result["resultType"], "input_required");
    assert_eq!(
        call.result["inputRequests"]["colour"]["method"],
        "elicitation/create"
    );
    assert!(call.result.get("content").is_none() && call.result.get("ttlMs").is_none());
    // The tool's state travels sealed: the client never sees it in clear.
    let sealed = call.result["requestState"].as_str().unwrap().to_owned();
    assert!(
        sealed.starts_with("s1.") && !sealed.contains("state-1"),
        "{sealed}"
    );
    let retry = |state: &str, arguments: Value| {
        json!({
            "name": "ask_user",
            "arguments": arguments,
            "inputResponses": {"colour": {"action": "accept", "content": {"colour": "teal"}}},
            "requestState": state,
            "_meta": with_elicitation,
        })
    };
    let call = client(&f)
        .call_tool_with("ask_user", retry(&sealed, json!({})))
        .await;
    assert_eq!(call.result["resultType"], "complete");
    assert_eq!(call.structured()["choice"]["colour"], "teal");
    assert_eq!(
        call.structured()["state"],
        "state-1",
        "the tool gets its own state back"
    );
    // Altered in one character, or made up: refused before the tool runs.
    let mut tampered = sealed.clone();
    let last = tampered.pop().unwrap();
    tampered.push(if last == 'A' { 'B' } else { 'A' });
    for bad in [tampered.as_str(), "state-1", ""] {
        let r = client(&f)
            .request("tools/call", retry(bad, json!({})))
            .await;
        assert_eq!(r.error_code(), Some(-32602), "{bad:?}: {:?}", r.json());
        assert!(
            r.json()["error"]["message"]
                .as_str()
                .unwrap()
                .starts_with("Invalid requestState")
        );
    }
    // A client that did not declare elicitation gets -32021, not a request it cannot answer.
    let r = client(&f)
        .request("tools/call", json!({"name": "ask_user", "arguments": {}}))
        .await;
    assert_eq!((r.status, r.error_code()), (400, Some(-32021)));
    assert!(r.json()["error"]["data"]["requiredCapabilities"]["elicitation"].is_object());
}

// ===== x-mcp-header =====

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)] // Read by serde and the schema only: the test is about the headers.
struct RegionInput {
    /// The region, mirrored in the Mcp-Param-Region header.
    #[schemars(extend("x-mcp-header" = "Region"))]
    region: Option<String>,
    /// A count, mirrored in Mcp-Param-Count.
    #[schemars(extend("x-mcp-header" = "Count"))]
    count: Option<i64>,
}

struct RegionTool;

impl Tool for RegionTool {
    type Input = RegionInput;
    type Output = Done;
    const NAME: &'static str = "get_region";
    const TITLE: &'static str = "Region";
    const DESCRIPTION: &'static str = "Echoes nothing; checks headers.";
    const EFFECT: EffectClass = EffectClass::Read;

    async fn call(
        &self,
        _ctx: ToolContext,
        _input: RegionInput,
    ) -> Result<Success<Done>, CallError> {
        Ok(Success::new("Done.", Done { done: true }))
    }
}

#[tokio::test]
async fn parameters_marked_x_mcp_header_must_match_their_headers() {
    let mut registry = Registry::new();
    registry.register(ToolSpec::new(RegionTool)).unwrap();
    let service = McpService::new(
        Server::new(ServerConfig::default(), registry),
        HttpConfig::default(),
    );
    let c = |headers: &[(&str, &str)]| {
        let mut client = TestClient::in_process(service.clone());
        for (k, v) in headers {
            client = client.with_header(k, v);
        }
        client
    };
    let args = json!({"region": "eu-west-1", "count": 3});
    let ok = c(&[("mcp-param-region", "eu-west-1"), ("mcp-param-count", "3")])
        .call_tool("get_region", args.clone())
        .await;
    assert!(!ok.is_error());
    let encoded = c(&[
        ("mcp-param-region", "=?base64?ZXUtd2VzdC0x?="),
        ("mcp-param-count", "03"),
    ])
    .call_tool("get_region", args.clone())
    .await;
    assert!(
        !encoded.is_error(),
        "base64 form decoded, integers compared as numbers"
    );
    for (what, headers) in [
        ("missing header", vec![("mcp-param-count", "3")]),
        (
            "different value",
            vec![("mcp-param-region", "us-east-1"), ("mcp-param-count", "3")],
        ),
        (
            "bad base64",
            vec![
                ("mcp-param-region", "=?base64?%%%?="),
                ("mcp-param-count", "3"),
            ],
        ),
        (
            "different number",
            vec![("mcp-param-region", "eu-west-1"), ("mcp-param-count", "4")],
        ),
    ] {
        let r = c(&headers)
            .request(
                "tools/call",
                json!({"name": "get_region", "arguments": args}),
            )
            .await;
        assert_eq!((r.status, r.error_code()), (400, Some(-32020)), "{what}");
    }
    let r = c(&[("mcp-param-region", "eu-west-1")])
        .request("tools/call", json!({"name": "get_region", "arguments": {}}))
        .await;
    assert_eq!(
        (r.status, r.error_code()),
        (400, Some(-32020)),
        "a header without its argument"
    );
    let schema = &c(&[]).list_tools().await["tools"][0]["inputSchema"]["properties"]["region"];
    assert_eq!(schema["x-mcp-header"], "Region");
}
