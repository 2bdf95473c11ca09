//! Probe tools: test tools, guards, interceptors and exception handlers that record what ran
//! (in a [`Log`]) and fail on demand, and the MCP service that serves them ([`fixture`]), for
//! the contract tests of the endpoint (`crate::endpoint`). No store, no authentication.

use std::sync::{Arc, Mutex};

use futures_util::future::BoxFuture;
use mcp_http::{HttpConfig, McpService};
use mcp_pipeline::{
    CallError, ErrorKind, ExceptionHandler, ExecutionContext, Guard, Handle, HandleKind,
    Interceptor, Next, Prepared, Refusal, Registry, Server, Success, Tool, ToolContext, ToolError,
    ToolResult, ToolSpec, handle_error,
};
use mcp_test_client::TestClient;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// What ran, in order: guards, interceptors, handlers and tool bodies write here.
pub(crate) type Log = Arc<Mutex<Vec<String>>>;

fn push(log: &Log, entry: &str) {
    log.lock().unwrap().push(entry.to_owned());
}

// ===== tools =====

#[derive(Debug, Clone, Copy, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Status {
    Draft,
    Confirmed,
    Cancelled,
}

pub(crate) struct Booking;
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
    type Effect = mcp_pipeline::effects::Read;

    async fn call(
        &self,
        ctx: ToolContext<Self::Effect>,
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
pub(crate) struct Empty {}

#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Done {
    pub(crate) done: bool,
}

/// A tool whose body records that it ran, and fails the way its `mode` says.
pub(crate) struct Recorder {
    name: &'static str,
    log: Log,
    mode: Mode,
}

#[derive(Clone, Copy)]
pub(crate) enum Mode {
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
    ($ty:ident, $name:literal, $effect:ident) => {
        recorder_tool!(
            $ty,
            $name,
            $effect,
            Success,
            |_ctx: &ToolContext<Self::Effect>, done| done
        );
    };
    ($ty:ident, $name:literal, two_step $effect:ident) => {
        recorder_tool!(
            $ty,
            $name,
            $effect,
            Prepared,
            |ctx: &ToolContext<Self::Effect>, done| {
                ctx.writes.preview("Do it.", json!({})).answer(done)
            }
        );
    };
    ($ty:ident, $name:literal, $effect:ident, $answer:ident, $answered:expr) => {
        pub(crate) struct $ty(pub(crate) Recorder);
        impl Tool for $ty {
            type Input = Empty;
            type Output = Done;
            const NAME: &'static str = $name;
            const TITLE: &'static str = $name;
            const DESCRIPTION: &'static str = "A test tool.";
            type Effect = mcp_pipeline::effects::$effect;
            async fn call(
                &self,
                ctx: ToolContext<Self::Effect>,
                _input: Empty,
            ) -> Result<$answer<Done>, CallError> {
                push(&self.0.log, &format!("body:{}", self.0.name));
                match self.0.mode {
                    Mode::Ok => Ok($answered(&ctx, Success::new("Done.", Done { done: true }))),
                    Mode::ValueError => Err(ValueError("qty must be positive").into()),
                    Mode::Unhandled => Err(SecretError.into()),
                    Mode::Panic => panic!("boom"),
                }
            }
        }
    };
}

recorder_tool!(GuardedAction, "guarded_action", SilentWrite);
recorder_tool!(OpenAction, "open_action", Read);
recorder_tool!(InterceptedAction, "intercepted_action", Read);
recorder_tool!(FailingAction, "failing_action", Read);
recorder_tool!(UnhandledAction, "unhandled_action", Read);
recorder_tool!(PanickingAction, "panicking_action", Read);
recorder_tool!(NotifyAction, "notify_customer", two_step Notify);
recorder_tool!(DeleteAction, "delete_thing", two_step Delete);

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
    type Effect = mcp_pipeline::effects::Read;

    async fn call(
        &self,
        ctx: ToolContext<Self::Effect>,
        _input: Empty,
    ) -> Result<Success<Choice>, CallError> {
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

// ===== the server =====

/// An MCP service over the probe tools (`echo_args`, `guarded_action`, `open_action`,
/// `intercepted_action`, `failing_action`, `unhandled_action`, `panicking_action`,
/// `notify_customer`, `ask_user`, `delete_thing`, in this order), and the log they write to.
pub(crate) struct Fixture {
    pub(crate) service: McpService,
    /// What ran, in order.
    pub(crate) log: Log,
}

pub(crate) fn fixture() -> Fixture {
    fixture_with(HttpConfig {
        allowed_origins: vec!["https://app.example.com".into()],
        max_body_bytes: 64 * 1024,
        ..HttpConfig::default()
    })
}

pub(crate) fn recorder(name: &'static str, log: &Log, mode: Mode) -> Recorder {
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
    let mut config = crate::support::memory_config();
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

pub(crate) fn client(f: &Fixture) -> TestClient {
    TestClient::in_process(f.service.clone())
}

pub(crate) fn entries(log: &Log) -> Vec<String> {
    log.lock().unwrap().clone()
}

// ===== x-mcp-header =====

/// The arguments of [`RegionTool`].
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)] // Read by serde and the schema only: the test is about the headers.
pub(crate) struct RegionInput {
    /// The region, mirrored in the Mcp-Param-Region header.
    #[schemars(extend("x-mcp-header" = "Region"))]
    region: Option<String>,
    /// A count, mirrored in Mcp-Param-Count.
    #[schemars(extend("x-mcp-header" = "Count"))]
    count: Option<i64>,
}

/// A tool whose arguments are mirrored in `Mcp-Param-*` headers; served on its own.
pub(crate) struct RegionTool;

impl Tool for RegionTool {
    type Input = RegionInput;
    type Output = Done;
    const NAME: &'static str = "get_region";
    const TITLE: &'static str = "Region";
    const DESCRIPTION: &'static str = "Echoes nothing; checks headers.";
    type Effect = mcp_pipeline::effects::Read;

    async fn call(
        &self,
        _ctx: ToolContext<Self::Effect>,
        _input: RegionInput,
    ) -> Result<Success<Done>, CallError> {
        Ok(Success::new("Done.", Done { done: true }))
    }
}
