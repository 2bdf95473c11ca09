//! The Lambda function as Lambda runs it: the release `mcp-lambda` binary, started the way
//! Lambda starts a `provided.al2023` bootstrap, polling a Runtime API served here (`next`,
//! `response`, `error`, `init/error`), on the local DynamoDB-compatible server.
//!
//! One function instance gets a Function URL event (cold start), an API Gateway HTTP API event,
//! warm invocations, a tool that panics (test-only, `GATEHOUSE_TEST_PANIC_TOOL=1`) and an
//! oversized body; every answer must be exactly what the handler answers in-process for the same
//! event, and every line the function printed must be JSON (logs and EMF metrics). A second
//! instance with a broken configuration must report it to `init/error` and exit.
//!
//! `tests/run` builds the binary first (`cargo build --release -p mcp-lambda`). The timings
//! printed are for information only; nothing asserts on wall-clock time.

use std::collections::{BTreeMap, VecDeque};
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Condvar, Mutex, mpsc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use http_body_util::BodyExt as _;
use serde_json::{Value, json};

const RUNTIME: &str = "/2018-06-01/runtime";
const FUNCTION_ARN: &str = "arn:aws:lambda:us-east-1:123456789012:function:gatehouse-mcp";
const STATE_KEY: &str = "lambda-runtime-test-state-key-0123456789abcdef";
/// Small, so that an oversized body stays small too.
const MAX_BODY_BYTES: usize = 64 * 1024;
/// How long one invocation may take before the test gives up (a loaded CI machine included).
const INVOCATION_TIMEOUT: Duration = Duration::from_secs(60);

/// Writes straight to stderr, past the test harness's capture, so the numbers show in `tests/run`.
fn report(line: &str) {
    let _ = writeln!(std::io::stderr(), "lambda runtime: {line}");
}

/// The release `mcp-lambda` binary of this target directory.
fn release_binary() -> std::path::PathBuf {
    release_binary_named("mcp-lambda")
}

/// A release binary of this target directory.
fn release_binary_named(name: &str) -> std::path::PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    // target/<profile>/deps/it-<hash> -> target
    let target = exe
        .parent()
        .and_then(|deps| deps.parent())
        .and_then(|profile| profile.parent())
        .expect("target dir");
    let bin = target.join("release").join(name);
    assert!(
        bin.exists(),
        "{} is missing: run `cargo build --release -p {name}` first (tests/run does)",
        bin.display()
    );
    bin
}

// ---- the Runtime API ------------------------------------------------------------------------

/// What the function posted.
#[derive(Debug)]
#[expect(
    dead_code,
    reason = "the fields of unexpected posts are read through Debug, in failure messages"
)]
enum Posted {
    Response {
        id: String,
        payload: Value,
    },
    Error {
        id: String,
        error_type: Option<String>,
        body: Value,
    },
    InitError {
        error_type: Option<String>,
        body: Value,
    },
    Unexpected {
        method: String,
        path: String,
    },
}

#[derive(Debug, Default)]
struct Queue {
    pending: VecDeque<(String, Value)>,
    closed: bool,
    first_poll: Option<Instant>,
}

#[derive(Debug, Default)]
struct Shared {
    queue: Mutex<Queue>,
    ready: Condvar,
    /// A process to stop (SIGSTOP) the moment it posts a response, as Lambda freezes an
    /// instance once its handler has returned.
    freeze_on_response: Mutex<Option<u32>>,
    /// The deadline handed with each event, instead of 30 s from now.
    deadline_ms: Mutex<Option<u128>>,
}

impl Shared {
    /// The next event, waiting for one (long poll); `None` once closed.
    fn next(&self) -> Option<(String, Value)> {
        let mut queue = self.queue.lock().unwrap();
        queue.first_poll.get_or_insert_with(Instant::now);
        loop {
            if queue.closed {
                return None;
            }
            if let Some(next) = queue.pending.pop_front() {
                return Some(next);
            }
            queue = self.ready.wait(queue).unwrap();
        }
    }
}

/// A Runtime API on a local port, on plain threads: one per connection, HTTP/1.1 keep-alive.
struct RuntimeApi {
    addr: SocketAddr,
    shared: Arc<Shared>,
    posted: mpsc::Receiver<Posted>,
    invocations: usize,
}

struct HttpRequest {
    method: String,
    path: String,
    headers: BTreeMap<String, String>,
    body: Vec<u8>,
}

fn read_request(reader: &mut BufReader<TcpStream>) -> Option<HttpRequest> {
    let mut line = String::new();
    if reader.read_line(&mut line).ok()? == 0 {
        return None;
    }
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_owned();
    let path = parts.next()?.to_owned();
    let mut headers = BTreeMap::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).ok()?;
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let (name, value) = line.split_once(':')?;
        headers.insert(name.trim().to_ascii_lowercase(), value.trim().to_owned());
    }
    let mut body = Vec::new();
    if let Some(len) = headers.get("content-length") {
        body.resize(len.parse().ok()?, 0);
        reader.read_exact(&mut body).ok()?;
    } else if headers
        .get("transfer-encoding")
        .is_some_and(|t| t.eq_ignore_ascii_case("chunked"))
    {
        loop {
            let mut size = String::new();
            reader.read_line(&mut size).ok()?;
            let size = usize::from_str_radix(size.trim().split(';').next()?, 16).ok()?;
            if size == 0 {
                // Trailers, then the empty line.
                loop {
                    let mut trailer = String::new();
                    reader.read_line(&mut trailer).ok()?;
                    if trailer.trim().is_empty() {
                        break;
                    }
                }
                break;
            }
            let start = body.len();
            body.resize(start + size, 0);
            reader.read_exact(&mut body[start..]).ok()?;
            let mut crlf = String::new();
            reader.read_line(&mut crlf).ok()?;
        }
    }
    Some(HttpRequest {
        method,
        path,
        headers,
        body,
    })
}

fn respond(stream: &mut TcpStream, status: &str, headers: &[(&str, String)], body: &str) {
    let mut head = format!("HTTP/1.1 {status}\r\ncontent-length: {}\r\n", body.len());
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(body.as_bytes());
    let _ = stream.flush();
}

fn json_body(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(bytes).into_owned()))
}

/// Sends `kill -<name>` to `pid`.
fn signal(pid: u32, name: &str) {
    let sent = Command::new("kill")
        .args([format!("-{name}"), pid.to_string()])
        .status()
        .expect("run kill");
    assert!(sent.success(), "kill -{name} {pid}");
}

fn epoch_ms() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis()
}

fn serve_connection(stream: TcpStream, shared: &Shared, posted: &mpsc::Sender<Posted>) {
    let Ok(mut writer) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(stream);
    while let Some(request) = read_request(&mut reader) {
        let error_type = request
            .headers
            .get("lambda-runtime-function-error-type")
            .cloned();
        let accepted = |writer: &mut TcpStream| {
            respond(
                writer,
                "202 Accepted",
                &[("content-type", "application/json".into())],
                "{\"status\":\"OK\"}",
            );
        };
        let invocation = request.path.strip_prefix(&format!("{RUNTIME}/invocation/"));
        match (request.method.as_str(), invocation) {
            ("GET", Some("next")) => {
                let Some((id, event)) = shared.next() else {
                    return;
                };
                let deadline = shared
                    .deadline_ms
                    .lock()
                    .unwrap()
                    .unwrap_or_else(|| epoch_ms() + 30_000);
                respond(
                    &mut writer,
                    "200 OK",
                    &[
                        ("content-type", "application/json".into()),
                        ("lambda-runtime-aws-request-id", id.clone()),
                        ("lambda-runtime-deadline-ms", deadline.to_string()),
                        ("lambda-runtime-invoked-function-arn", FUNCTION_ARN.into()),
                        (
                            "lambda-runtime-trace-id",
                            format!("Root=1-6749a3b2-{id};Parent=53995c3f42cd8ad8;Sampled=0"),
                        ),
                    ],
                    &event.to_string(),
                );
            }
            ("POST", Some(rest)) if rest.ends_with("/response") => {
                let id = rest.trim_end_matches("/response").to_owned();
                if let Some(pid) = *shared.freeze_on_response.lock().unwrap() {
                    signal(pid, "STOP");
                }
                let _ = posted.send(Posted::Response {
                    id,
                    payload: json_body(&request.body),
                });
                accepted(&mut writer);
            }
            ("POST", Some(rest)) if rest.ends_with("/error") => {
                let id = rest.trim_end_matches("/error").to_owned();
                let _ = posted.send(Posted::Error {
                    id,
                    error_type,
                    body: json_body(&request.body),
                });
                accepted(&mut writer);
            }
            ("POST", None) if request.path == format!("{RUNTIME}/init/error") => {
                let _ = posted.send(Posted::InitError {
                    error_type,
                    body: json_body(&request.body),
                });
                accepted(&mut writer);
            }
            _ => {
                let _ = posted.send(Posted::Unexpected {
                    method: request.method.clone(),
                    path: request.path.clone(),
                });
                respond(&mut writer, "404 Not Found", &[], "");
            }
        }
        if request
            .headers
            .get("connection")
            .is_some_and(|c| c.eq_ignore_ascii_case("close"))
        {
            return;
        }
    }
}

impl RuntimeApi {
    fn start() -> RuntimeApi {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the Runtime API");
        let addr = listener.local_addr().unwrap();
        let shared = Arc::new(Shared::default());
        let (tx, posted) = mpsc::channel();
        let accept_shared = Arc::clone(&shared);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if accept_shared.queue.lock().unwrap().closed {
                    return;
                }
                let Ok(stream) = stream else { continue };
                let shared = Arc::clone(&accept_shared);
                let tx = tx.clone();
                std::thread::spawn(move || serve_connection(stream, &shared, &tx));
            }
        });
        RuntimeApi {
            addr,
            shared,
            posted,
            invocations: 0,
        }
    }

    /// Queues one event; returns its request id.
    fn queue(&mut self, event: &Value) -> String {
        self.invocations += 1;
        let id = format!("inv-{}-{:08x}", self.invocations, rand_u32());
        let mut queue = self.shared.queue.lock().unwrap();
        queue.pending.push_back((id.clone(), event.clone()));
        self.shared.ready.notify_all();
        id
    }

    fn next_posted(&self) -> Posted {
        self.posted
            .recv_timeout(INVOCATION_TIMEOUT)
            .expect("the function posted nothing in time")
    }

    /// Runs one invocation; returns its request id, the function's response payload and the
    /// time from queueing to the response.
    fn invoke(&mut self, event: &Value) -> (String, Value, Duration) {
        let started = Instant::now();
        let id = self.queue(event);
        match self.next_posted() {
            Posted::Response { id: got, payload } => {
                assert_eq!(got, id, "the response names its invocation");
                (id, payload, started.elapsed())
            }
            other => panic!("invocation {id}: expected a response, got {other:?}"),
        }
    }

    fn first_poll(&self) -> Option<Instant> {
        self.shared.queue.lock().unwrap().first_poll
    }
}

impl Drop for RuntimeApi {
    fn drop(&mut self) {
        self.shared.queue.lock().unwrap().closed = true;
        self.shared.ready.notify_all();
        // Wake the accept loop so its thread ends.
        let _ = TcpStream::connect(self.addr);
    }
}

fn rand_u32() -> u32 {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    nanos ^ std::process::id().rotate_left(16)
}

// ---- the function's process ---------------------------------------------------------------

/// The running function; killed on drop. Its stdout and stderr lines are collected.
struct Function {
    child: Child,
    started: Instant,
    stdout: Option<JoinHandle<Vec<String>>>,
    stderr: Option<JoinHandle<Vec<String>>>,
}

fn collect_lines(pipe: impl std::io::Read + Send + 'static) -> JoinHandle<Vec<String>> {
    std::thread::spawn(move || BufReader::new(pipe).lines().map_while(Result::ok).collect())
}

impl Function {
    /// Starts the binary as Lambda does: the Runtime API's address and the function's identity
    /// in the environment, and nothing else of this process's environment.
    fn start(api: &RuntimeApi, vars: &[(&str, &str)]) -> Function {
        Function::start_binary(&release_binary(), api, vars)
    }

    fn start_binary(binary: &std::path::Path, api: &RuntimeApi, vars: &[(&str, &str)]) -> Function {
        let mut command = Command::new(binary);
        command
            .env_clear()
            .env("AWS_LAMBDA_RUNTIME_API", api.addr.to_string())
            .env("AWS_LAMBDA_FUNCTION_NAME", "gatehouse-mcp")
            .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "512")
            .env("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
            .env("AWS_LAMBDA_LOG_GROUP_NAME", "/gatehouse/test/mcp-lambda")
            .env(
                "AWS_LAMBDA_LOG_STREAM_NAME",
                "2026/11/30/[$LATEST]0123456789abcdef",
            )
            .env("AWS_REGION", "us-east-1")
            .env("AWS_EC2_METADATA_DISABLED", "true")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (name, value) in vars {
            command.env(name, value);
        }
        let started = Instant::now();
        let mut child = command.spawn().expect("start mcp-lambda");
        let stdout = collect_lines(child.stdout.take().expect("stdout"));
        let stderr = collect_lines(child.stderr.take().expect("stderr"));
        Function {
            child,
            started,
            stdout: Some(stdout),
            stderr: Some(stderr),
        }
    }

    fn is_running(&mut self) -> bool {
        self.child.try_wait().expect("try_wait").is_none()
    }

    /// Waits for the process to exit on its own; returns its exit status.
    fn wait_exit(&mut self, within: Duration) -> std::process::ExitStatus {
        let until = Instant::now() + within;
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                return status;
            }
            assert!(Instant::now() < until, "the function did not exit");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Stops the process; returns its stdout and stderr lines.
    fn stop(mut self) -> (Vec<String>, Vec<String>) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let out = self
            .stdout
            .take()
            .map(|h| h.join().unwrap())
            .unwrap_or_default();
        let err = self
            .stderr
            .take()
            .map(|h| h.join().unwrap())
            .unwrap_or_default();
        (out, err)
    }
}

impl Drop for Function {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

// ---- events and expected answers ----------------------------------------------------------

/// A recorded event with the credential every request carries.
fn with_token(fixture: &str, token: &str) -> Value {
    let mut event: Value = serde_json::from_str(fixture).unwrap();
    event["headers"]["authorization"] = json!(format!("Bearer {token}"));
    event
}

fn function_url_event(token: &str) -> Value {
    with_token(
        include_str!("../fixtures/lambda_function_url_event.json"),
        token,
    )
}

fn api_gateway_event(token: &str) -> Value {
    with_token(
        include_str!("../fixtures/apigw_v2_http_api_event.json"),
        token,
    )
}

/// The API Gateway event calling `tool` with `arguments` (JSON-RPC id `id`).
fn api_gateway_call(token: &str, id: u64, tool: &str, arguments: &Value) -> Value {
    let mut event = api_gateway_event(token);
    let body = json!({
        "jsonrpc": "2.0",
        "id": id,
        "method": "tools/call",
        "params": {
            "name": tool,
            "arguments": arguments,
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {}
            }
        }
    })
    .to_string();
    event["headers"]["mcp-name"] = json!(tool);
    event["headers"]["content-length"] = json!(body.len().to_string());
    event["body"] = json!(body);
    event
}

/// An HTTP answer: status, headers, JSON body.
#[derive(Debug, PartialEq)]
struct Answer {
    status: u16,
    headers: BTreeMap<String, String>,
    body: Value,
}

/// Takes the answer's `x-request-id` out of its headers (unique per request, so two answers
/// never share it) after checking its form.
fn without_request_id(mut headers: BTreeMap<String, String>) -> BTreeMap<String, String> {
    let id = headers
        .remove("x-request-id")
        .expect("an x-request-id header");
    assert!(id.starts_with("req_") && id.len() == 20, "{id}");
    headers
}

/// What the handler answers in-process to `event` (the call the function makes).
fn in_process(rt: &tokio::runtime::Runtime, app: &app::App, event: &Value) -> Answer {
    let request = lambda_http::request::from_str(&event.to_string()).expect("a valid event");
    rt.block_on(async {
        let response = app.http.handle(request).await;
        let status = response.status().as_u16();
        let headers = without_request_id(
            response
                .headers()
                .iter()
                .map(|(k, v)| (k.as_str().to_owned(), v.to_str().unwrap().to_owned()))
                .collect(),
        );
        let body = response.into_body().collect().await.unwrap().to_bytes();
        Answer {
            status,
            headers,
            body: serde_json::from_slice(&body).expect("a JSON body"),
        }
    })
}

/// The function's response payload (payload format 2.0) as an answer.
fn from_lambda(payload: &Value) -> Answer {
    let status = payload["statusCode"]
        .as_u64()
        .unwrap_or_else(|| panic!("no statusCode: {payload}"));
    assert_eq!(
        payload["cookies"],
        json!([]),
        "no cookies are set: {payload}"
    );
    let headers = without_request_id(
        payload["headers"]
            .as_object()
            .unwrap_or_else(|| panic!("no headers: {payload}"))
            .iter()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_owned()))
            .collect(),
    );
    let text = payload["body"].as_str().expect("a body");
    let body = if payload["isBase64Encoded"] == true {
        base64::engine::general_purpose::STANDARD
            .decode(text)
            .expect("base64 body")
    } else {
        text.as_bytes().to_vec()
    };
    Answer {
        status: u16::try_from(status).unwrap(),
        headers,
        body: serde_json::from_slice(&body)
            .unwrap_or_else(|e| panic!("body not JSON ({e}): {text}")),
    }
}

/// The environment of a function on `table` of the local DynamoDB-compatible server.
fn table_env<'a>(table: &'a str, endpoint: &'a str) -> Vec<(&'a str, &'a str)> {
    vec![
        ("AWS_ACCESS_KEY_ID", "test"),
        ("AWS_SECRET_ACCESS_KEY", "test"),
        ("GATEHOUSE_TABLE", table),
        ("GATEHOUSE_DYNAMODB_ENDPOINT", endpoint),
    ]
}

/// The runtime the tests drive the in-process app and the local DynamoDB server with.
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn millis(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

/// A new DynamoDB table named `<prefix>-...`, with an owner and a connection; the app on it (as
/// the function builds it, minus the test-only tool), the table's name and the connection's
/// token.
fn setup(rt: &tokio::runtime::Runtime, endpoint: &str, prefix: &str) -> (app::App, String, String) {
    rt.block_on(async {
        let (store, table) = crate::support::store::fresh_table(endpoint, prefix).await;
        let settings = app::Settings {
            backend: "dynamodb".into(),
            max_body_bytes: MAX_BODY_BYTES,
            state_key: Some(STATE_KEY.as_bytes().to_vec()),
            ..app::Settings::default()
        };
        let app = app::build(
            &settings,
            std::sync::Arc::new(store),
            booking_product::Booking::shared(),
        )
        .expect("app");
        let token = crate::support::owner_connection(&app, "lambda runtime test").await;
        (app, table, token)
    })
}

#[test]
fn the_release_binary_serves_the_lambda_runtime_api() {
    let Some(endpoint) = crate::support::dynamodb_endpoint("lambda runtime [dynamodb]") else {
        return;
    };
    let binary = release_binary();
    let size = std::fs::metadata(&binary).unwrap().len();
    let mib = size as f64 / (1024.0 * 1024.0);
    report(&format!(
        "release binary {} is {size} bytes ({mib:.1} MiB, {} {})",
        binary.display(),
        std::env::consts::OS,
        std::env::consts::ARCH
    ));

    let rt = runtime();
    let (app, table, token) = setup(&rt, &endpoint, "gatehouse-lambda");
    let spoiled = rt.block_on(async {
        let seed = booking::Actor {
            tenant: store::TenantId::new("acme"),
            member: store::MemberId::new("seed"),
            rights: booking::rights::ALL
                .iter()
                .map(|r| (*r).to_owned())
                .collect(),
        };
        let new = booking::NewCustomer {
            name: "Spoiled Item".into(),
            email: "spoiled@example.com".into(),
            phone: None,
            address: None,
            notes: None,
        };
        let change = booking::Customers::new(app.store.clone())
            .create(&seed, new, None)
            .unwrap();
        change
            .commit(app.store.as_ref(), vec![])
            .await
            .unwrap()
            .handle()
    });

    let mut api = RuntimeApi::start();
    let max_body = MAX_BODY_BYTES.to_string();
    let mut vars = table_env(&table, &endpoint);
    vars.extend([
        ("GATEHOUSE_STATE_KEY", STATE_KEY),
        ("GATEHOUSE_MAX_BODY_BYTES", &max_body),
        ("GATEHOUSE_LOG", "info"),
        // Every test variable a build has ever read: the release build serves nothing for
        // them (ADR 48).
        ("GATEHOUSE_TEST_PANIC_TOOL", "1"),
        ("GATEHOUSE_TEST_ROUTES", "1"),
    ]);
    let mut function = Function::start(&api, &vars);
    // Ids of the invocations that call a tool, with the tool.
    let mut calls: Vec<(String, &str)> = Vec::new();

    // Cold start: a Function URL event (tools/list, base64 body), queued before the process
    // polls, so the time covers start-up, the first poll and the first answer.
    let event = function_url_event(&token);
    let (_, payload, _) = api.invoke(&event);
    let cold = function.started.elapsed();
    let init = api
        .first_poll()
        .map(|t| t.duration_since(function.started))
        .expect("the function polled");
    report(&format!(
        "cold start: {} from process start to the first poll of invocation/next, {} to the first response",
        millis(init),
        millis(cold)
    ));
    let got = from_lambda(&payload);
    let mut want = in_process(&rt, &app, &event);
    assert_eq!(got.status, 200, "{payload}");
    assert_eq!(got.body["id"], "list-1");
    // The release build has no test tool, whatever its variables: it lists what the app lists.
    let tools = got.body["result"]["tools"].as_array().expect("tools");
    assert!(
        !tools.iter().any(|t| t["name"] == "test_panic_tool"),
        "a release build lists a test tool"
    );
    want.body["result"]["tools"].as_array_mut().unwrap();
    assert_eq!(got, want, "the Function URL answer");

    // An API Gateway HTTP API event (tools/call get_server_status).
    let event = api_gateway_event(&token);
    let (id, payload, first_call) = api.invoke(&event);
    calls.push((id, "get_server_status"));
    let got = from_lambda(&payload);
    assert_eq!(got.status, 200, "{payload}");
    assert_eq!(
        got.body["result"]["structuredContent"]["store_backend"],
        "dynamodb"
    );
    assert_eq!(got, in_process(&rt, &app, &event), "the API Gateway answer");

    // Warm invocations.
    let mut warm = vec![first_call];
    for n in 0..5 {
        let event = api_gateway_call(&token, 100 + n, "get_server_status", &json!({}));
        let (id, payload, took) = api.invoke(&event);
        calls.push((id, "get_server_status"));
        warm.push(took);
        assert_eq!(from_lambda(&payload), in_process(&rt, &app, &event));
    }
    warm.sort();
    report(&format!(
        "warm tools/call get_server_status, {} invocations: min {}, median {}, max {}",
        warm.len(),
        millis(warm[0]),
        millis(warm[warm.len() / 2]),
        millis(warm[warm.len() - 1])
    ));

    // A tool that fails (an item of the store it cannot read, put there behind the app's
    // back): a generic error result with a request id, the cause only in the log, and the
    // function serves on.
    let marker = format!("argument-never-logged-{:08x}", rand_u32());
    rt.block_on(crate::support::store::spoil_an_item(
        &endpoint,
        &table,
        &booking::keys::of_handle(&store::TenantId::new("acme"), &spoiled)
            .expect("a customer's key"),
    ));
    let event = api_gateway_call(&token, 7, "find_customers", &json!({"query": marker}));
    let (id, payload, _) = api.invoke(&event);
    calls.push((id, "find_customers"));
    let got = from_lambda(&payload);
    assert_eq!(got.status, 200, "a tool error is a result: {payload}");
    assert_eq!(got.body["id"], 7);
    let result = &got.body["result"];
    assert_eq!(result["isError"], true, "{result}");
    let failed_request_id = result["structuredContent"]["request_id"]
        .as_str()
        .unwrap_or_else(|| panic!("a request id in the details: {result}"))
        .to_owned();
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(
        text.starts_with(&format!(
            "Error: The server failed while running find_customers (request {failed_request_id})"
        )),
        "{text}"
    );
    assert!(
        !text.contains("WrongType"),
        "the cause stays in the logs: {text}"
    );
    assert!(
        function.is_running(),
        "a failing tool does not stop the function"
    );
    let event = api_gateway_call(&token, 8, "get_server_status", &json!({}));
    let (id, payload, _) = api.invoke(&event);
    calls.push((id, "get_server_status"));
    assert_eq!(from_lambda(&payload), in_process(&rt, &app, &event));

    // An oversized body (no Content-Length: the body itself is measured): 413.
    let mut event = api_gateway_call(
        &token,
        9,
        "get_server_status",
        &json!({"pad": "x".repeat(MAX_BODY_BYTES + 1)}),
    );
    event["headers"]
        .as_object_mut()
        .unwrap()
        .remove("content-length");
    let (_, payload, _) = api.invoke(&event);
    let got = from_lambda(&payload);
    assert_eq!(got.status, 413, "{}", got.body);
    assert_eq!(got, in_process(&rt, &app, &event), "the 413 answer");
    let event = function_url_event(&token);
    let (_, payload, _) = api.invoke(&event);
    assert_eq!(from_lambda(&payload).status, 200, "serving after a 413");

    // Nothing else was posted: no invocation error, no init error, no unknown path.
    assert!(
        api.posted.try_recv().is_err(),
        "every invocation was answered through invocation/{{id}}/response"
    );
    assert!(function.is_running());
    let (stdout, stderr) = function.stop();
    drop(api);
    check_logs(&stdout, &stderr, &calls, &marker, &failed_request_id);
}

/// Every line is JSON; one log line and one EMF object per tool call, with the call's Lambda
/// request id and without its arguments.
fn check_logs(
    stdout: &[String],
    stderr: &[String],
    calls: &[(String, &str)],
    marker: &str,
    failed_request_id: &str,
) {
    let nonempty = |lines: &[String]| -> Vec<Value> {
        lines
            .iter()
            .filter(|l| !l.trim().is_empty())
            .map(|l| {
                serde_json::from_str::<Value>(l)
                    .ok()
                    .filter(Value::is_object)
                    .unwrap_or_else(|| panic!("a line that is not a JSON object: {l}"))
            })
            .collect()
    };
    let lines = nonempty(stdout);
    let errors = nonempty(stderr);
    assert!(errors.is_empty(), "nothing on stderr: {stderr:?}");
    for line in stdout.iter().chain(stderr) {
        assert!(
            !line.contains(marker),
            "an argument reached the logs: {line}"
        );
    }
    let (metrics, logs): (Vec<&Value>, Vec<&Value>) =
        lines.iter().partition(|l| l.get("_aws").is_some());
    for log in &logs {
        for key in ["timestamp", "level", "target", "message", "fields"] {
            assert!(log.get(key).is_some(), "{key} missing: {log}");
        }
    }
    assert!(
        logs.iter().any(|l| l["message"] == "cold start: ready"),
        "{logs:?}"
    );

    let call_lines: Vec<&&Value> = logs
        .iter()
        .filter(|l| l["target"] == "gatehouse::call")
        .collect();
    assert_eq!(call_lines.len(), calls.len(), "{call_lines:?}");
    for (line, (id, tool)) in call_lines.iter().zip(calls) {
        assert_eq!(line["aws_request_id"], json!(id), "{line}");
        let fields = line["fields"].as_object().unwrap();
        let names: Vec<&str> = fields.keys().map(String::as_str).collect();
        assert_eq!(
            names,
            [
                "request_id",
                "tenant",
                "connection",
                "tool",
                "effect",
                "outcome",
                "duration_ms"
            ],
            "{line}"
        );
        assert_eq!(fields["tool"], json!(tool));
        assert_eq!(fields["tenant"], "acme");
        assert!(fields["connection"].as_str().unwrap().starts_with("con_"));
        assert!(fields["duration_ms"].is_number());
    }
    assert_eq!(metrics.len(), calls.len(), "one EMF object per call");
    for (emf, line) in metrics.iter().zip(&call_lines) {
        assert_eq!(
            emf["_aws"]["CloudWatchMetrics"],
            json!([{
                "Namespace": "gatehouse",
                "Dimensions": [["tool", "outcome"]],
                "Metrics": [
                    {"Name": "calls", "Unit": "Count"},
                    {"Name": "duration_ms", "Unit": "Milliseconds"}
                ]
            }]),
        );
        assert!(emf["_aws"]["Timestamp"].is_i64());
        assert_eq!(emf["tool"], line["fields"]["tool"]);
        assert_eq!(emf["outcome"], line["fields"]["outcome"]);
        assert_eq!(emf["calls"], 1);
        assert_eq!(emf["duration_ms"], line["fields"]["duration_ms"]);
    }
    let outcomes: Vec<&str> = call_lines
        .iter()
        .map(|l| l["fields"]["outcome"].as_str().unwrap_or("?"))
        .collect();
    report(&format!("tool call outcomes logged: {outcomes:?}"));

    // The pipeline's "tool failed" line with the request id the client was given.
    assert!(
        logs.iter().any(|l| l["level"] == "ERROR"
            && l["message"] == "tool failed"
            && l["fields"]["request_id"] == failed_request_id),
        "the client's request id finds the failure in the logs: {logs:?}"
    );
}

/// The artifact infra/Makefile builds for a function of the template (`tests/run` builds it
/// natively into `target/sam/<function>`): every product's binary and the `bootstrap` that runs
/// the one the function's Handler names.
fn sam_artifact(function: &str) -> std::path::PathBuf {
    let dir = release_binary_named("mcp-lambda")
        .parent()
        .and_then(|release| release.parent())
        .expect("target dir")
        .join("sam")
        .join(function);
    assert!(
        dir.join("bootstrap").exists(),
        "{} is missing: run `make -C infra build-{function} ARTIFACTS_DIR=...` first (tests/run does)",
        dir.display()
    );
    dir
}

#[test]
fn the_template_runs_the_product_its_parameter_names() {
    // Product=helpdesk sets the MCP function's Handler to `helpdesk-mcp-lambda` (the template's
    // ProductBinaries mapping): the same artifact and bootstrap then serve the helpdesk.
    let Some(endpoint) = crate::support::dynamodb_endpoint("lambda runtime [helpdesk]") else {
        return;
    };
    let artifact = sam_artifact("McpFunction");
    let rt = runtime();
    let (table, token) = rt.block_on(async {
        let (store, table) =
            crate::support::store::fresh_table(&endpoint, "gatehouse-helpdesk").await;
        let settings = app::Settings {
            backend: "dynamodb".into(),
            ..app::Settings::default()
        };
        let shared = helpdesk::Helpdesk::shared();
        let app = app::build(&settings, std::sync::Arc::new(store), shared).expect("app");
        app.directory
            .put_member(
                &store::TenantId::new("acme"),
                &store::MemberId::new("ana"),
                "owner",
                true,
            )
            .await
            .unwrap();
        let rights = crate::support::rights(&[helpdesk::rights::TICKETS_READ]);
        let (_, token) = crate::support::connect(
            &app,
            "acme",
            "ana",
            rights,
            mcp_pipeline::Toolset::Full,
            "lambda",
        )
        .await;
        (table, token)
    });
    let mut api = RuntimeApi::start();
    let task_root = artifact.display().to_string();
    let mut vars = table_env(&table, &endpoint);
    vars.extend([
        ("GATEHOUSE_STATE_KEY", STATE_KEY),
        ("LAMBDA_TASK_ROOT", task_root.as_str()),
        ("_HANDLER", "helpdesk-mcp-lambda"),
    ]);
    let function = Function::start_binary(&artifact.join("bootstrap"), &api, &vars);
    let (_, payload, _) = api.invoke(&function_url_event(&token));
    let (_, stderr) = function.stop();
    let answer = from_lambda(&payload);
    assert_eq!(answer.status, 200, "{payload} {stderr:?}");
    let names: Vec<&str> = answer.body["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("tools/list answered: {}", answer.body))
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(names.contains(&"get_ticket"), "{names:?}");
    assert!(!names.iter().any(|n| n.contains("booking")), "{names:?}");

    // A Handler naming no binary of the artifact starts nothing.
    let mut vars = table_env(&table, &endpoint);
    vars.extend([
        ("LAMBDA_TASK_ROOT", task_root.as_str()),
        ("_HANDLER", "../mcp-lambda"),
    ]);
    let mut refused = Function::start_binary(&artifact.join("bootstrap"), &api, &vars);
    assert!(!refused.wait_exit(INVOCATION_TIMEOUT).success());
    let (_, stderr) = refused.stop();
    assert!(
        stderr
            .iter()
            .any(|l| l.contains("must name one of its binaries")),
        "{stderr:?}"
    );
}

#[test]
fn a_broken_configuration_is_reported_to_init_error() {
    let mut api = RuntimeApi::start();
    let mut function = Function::start(
        &api,
        &[
            ("GATEHOUSE_STATE_KEY", STATE_KEY),
            ("GATEHOUSE_MAX_BODY_BYTES", "lots"),
        ],
    );
    // Lambda would send no event before init succeeds; one queued anyway must not be taken.
    api.queue(&json!({}));
    match api.next_posted() {
        Posted::InitError { error_type, body } => {
            assert_eq!(error_type.as_deref(), Some("Runtime.ConfigError"));
            assert_eq!(body["errorType"], "ConfigError");
            let message = body["errorMessage"].as_str().unwrap();
            assert!(
                message.starts_with("invalid configuration: GATEHOUSE_TABLE is missing"),
                "{message}"
            );
            assert!(
                message.contains("GATEHOUSE_MAX_BODY_BYTES=\"lots\" is not a number of bytes"),
                "{message}"
            );
            assert!(!message.contains(STATE_KEY), "{message}");
        }
        other => panic!("expected an init error, got {other:?}"),
    }
    let status = function.wait_exit(Duration::from_secs(30));
    assert!(!status.success(), "a failed cold start exits non-zero");
    assert!(
        api.first_poll().is_none(),
        "no event is polled before init succeeds"
    );
    let (stdout, stderr) = function.stop();
    assert!(stderr.is_empty(), "{stderr:?}");
    let line: Value = serde_json::from_str(stdout.last().expect("a log line")).unwrap();
    assert_eq!(line["level"], "ERROR");
    assert!(
        line["message"]
            .as_str()
            .unwrap()
            .starts_with("cold start failed: invalid configuration: GATEHOUSE_TABLE is missing"),
        "{line}"
    );
}

// ---- the product's web function ------------------------------------------------------------

/// A Function URL event for the pages: `method` on `path` with a form body.
/// The host of the test's Function URL event, which the web function's public URL names.
const PAGES_HOST: &str = "x7k2p9q4r1s8t3u6v5w0y2z4a1b3c5d7.lambda-url.eu-west-1.on.aws";

fn page_event(method: &str, path: &str, query: &str, body: &str, cookie: Option<&str>) -> Value {
    let mut event: Value =
        serde_json::from_str(include_str!("../fixtures/lambda_function_url_event.json")).unwrap();
    let headers = event["headers"].as_object_mut().unwrap();
    headers.retain(|k, _| !k.starts_with("mcp-"));
    headers.insert("accept".into(), json!("text/html"));
    headers.insert(
        "content-type".into(),
        json!("application/x-www-form-urlencoded"),
    );
    event["rawPath"] = json!(path);
    event["rawQueryString"] = json!(query);
    event["requestContext"]["http"]["method"] = json!(method);
    event["requestContext"]["http"]["path"] = json!(path);
    event["body"] = json!(body);
    event["isBase64Encoded"] = json!(false);
    if let Some(cookie) = cookie {
        event["cookies"] = json!([cookie]);
    }
    if method != "GET" {
        event["headers"]["origin"] = json!(format!("https://{PAGES_HOST}"));
    }
    event
}

/// The status, headers, cookies and text body a function posted.
fn page_answer(payload: &Value) -> (u64, Value, Vec<String>, String) {
    let text = payload["body"].as_str().unwrap_or_default();
    let body = if payload["isBase64Encoded"] == true {
        String::from_utf8(
            base64::engine::general_purpose::STANDARD
                .decode(text)
                .expect("base64 body"),
        )
        .expect("UTF-8 page")
    } else {
        text.to_owned()
    };
    let cookies = payload["cookies"]
        .as_array()
        .map(|c| {
            c.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    (
        payload["statusCode"].as_u64().unwrap_or_default(),
        payload["headers"].clone(),
        cookies,
        body,
    )
}

#[test]
fn the_release_web_function_serves_the_pages_on_the_runtime_api() {
    let Some(endpoint) = crate::support::dynamodb_endpoint("lambda runtime web [dynamodb]") else {
        return;
    };
    let rt = runtime();
    let (app, table, mcp_token) = setup(&rt, &endpoint, "gatehouse-web");
    rt.block_on(crate::support::set_password(
        &app,
        "acme",
        "ana",
        "correct horse battery",
    ))
    .unwrap();

    let extension = crate::support::lambda_extension::ParameterExtension::serving(&[
        (
            "/gatehouse/test/mcp-endpoint",
            "https://abc.lambda-url.eu-west-1.on.aws/mcp",
        ),
        (
            "/gatehouse/test/pages-url",
            &format!("https://{PAGES_HOST}/app"),
        ),
    ]);
    let port = extension.port.to_string();
    let mut env = table_env(&table, &endpoint);
    env.extend([
        (
            "GATEHOUSE_MCP_URL_PARAMETER",
            "/gatehouse/test/mcp-endpoint",
        ),
        ("PARAMETERS_SECRETS_EXTENSION_HTTP_PORT", port.as_str()),
        ("AWS_SESSION_TOKEN", "session-token"),
    ]);
    // Without its public URL the function does not start (ADR 48): it would not know the one
    // host its pages answer.
    let mut api = RuntimeApi::start();
    let mut refused = Function::start_binary(&release_binary_named("web-lambda"), &api, &env);
    assert!(!refused.wait_exit(Duration::from_secs(20)).success());
    let (out, err) = refused.stop();
    assert!(
        out.iter()
            .chain(&err)
            .any(|l| l.contains("GATEHOUSE_CONSOLE_BASE_PARAMETER")),
        "{out:?} {err:?}"
    );
    env.push((
        "GATEHOUSE_CONSOLE_BASE_PARAMETER",
        "/gatehouse/test/pages-url",
    ));
    let function = Function::start_binary(&release_binary_named("web-lambda"), &api, &env);
    // A host the pages are not served as (a name rebound to this address) reaches nothing.
    let mut rebound = page_event("GET", "/app/login", "", "", None);
    rebound["headers"]["host"] = json!("attacker.example");
    let (_, payload, _) = api.invoke(&rebound);
    assert_eq!(page_answer(&payload).0, 421, "{payload}");

    let (_, payload, _) = api.invoke(&page_event("GET", "/app/login", "", "", None));
    let (status, headers, _, body) = page_answer(&payload);
    assert_eq!(status, 200, "{payload}");
    assert!(body.contains("<form"), "the sign-in page: {body}");
    assert_eq!(headers["x-frame-options"], "DENY");

    // A wrong password signs nobody in and sets no cookie.
    let (_, payload, _) = api.invoke(&page_event(
        "POST",
        "/app/login",
        "",
        "tenant=acme&member=ana&password=wrong-password",
        None,
    ));
    let (status, _, cookies, _) = page_answer(&payload);
    assert_ne!(status, 303, "{payload}");
    assert!(cookies.is_empty(), "{cookies:?}");

    // The right one: a session cookie that is HttpOnly, Secure and SameSite=Strict.
    let (_, payload, _) = api.invoke(&page_event(
        "POST",
        "/app/login",
        "",
        "tenant=acme&member=ana&password=correct+horse+battery",
        None,
    ));
    let (status, _, cookies, _) = page_answer(&payload);
    assert_eq!(status, 303, "{payload}");
    let session = cookies
        .first()
        .unwrap_or_else(|| panic!("no cookie: {payload}"));
    for flag in ["HttpOnly", "Secure", "SameSite=Strict"] {
        assert!(session.contains(flag), "{flag} missing: {session}");
    }
    let pair = session.split(';').next().unwrap().to_owned();
    let (_, payload, _) = api.invoke(&page_event("GET", "/app/connections", "", "", Some(&pair)));
    let (status, _, _, body) = page_answer(&payload);
    assert_eq!(status, 200, "{payload}");
    assert!(
        body.contains("lambda runtime test"),
        "the connection is listed: {body}"
    );
    // The MCP endpoint's URL, read from its parameter through the extension at cold start.
    assert!(
        body.contains("https://abc.lambda-url.eu-west-1.on.aws/mcp"),
        "the endpoint is named: {body}"
    );
    assert_eq!(
        extension.asked(),
        [
            "/systemsmanager/parameters/get?name=%2Fgatehouse%2Ftest%2Fpages-url with session-token",
            "/systemsmanager/parameters/get?name=%2Fgatehouse%2Ftest%2Fmcp-endpoint with session-token"
        ]
    );

    // An MCP token opens no page, and the MCP endpoint is not served here.
    let mut with_mcp = page_event("GET", "/app/connections", "", "", None);
    with_mcp["headers"]["authorization"] = json!(format!("Bearer {mcp_token}"));
    let (_, payload, _) = api.invoke(&with_mcp);
    assert_eq!(page_answer(&payload).0, 401, "{payload}");
    let (_, payload, _) = api.invoke(&function_url_event(&mcp_token));
    assert_eq!(page_answer(&payload).0, 404, "{payload}");

    let (out, err) = function.stop();
    assert!(
        !out.iter().chain(&err).any(|l| l.contains("correct horse")),
        "a password reached the logs"
    );
}

// ---- the pre-traffic hook's checks -----------------------------------------------------------

/// Runs a snippet of Python with the hook module (`infra/hooks/pre_traffic.py`) imported as
/// `h`, `input` on its stdin; returns what it printed, as JSON.
fn hook_python(snippet: &str, input: &Value) -> Value {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut child = Command::new("python3")
        .args([
            "-c",
            &format!("import json, sys; sys.path.insert(0, 'infra/hooks'); import pre_traffic as h; {snippet}"),
        ])
        .current_dir(root)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3 runs (the hook is Python)");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("the snippet prints JSON")
}

/// The hook's checks, run against the release binary: the failures the hook would report.
fn hook_failures(api: &mut RuntimeApi, token: Option<&str>) -> Vec<String> {
    let calls = hook_python(
        "print(json.dumps(h.smoke_calls(json.load(sys.stdin))))",
        &json!(token),
    );
    let answered: Vec<Value> = calls
        .as_array()
        .expect("[[label, event], ...]")
        .iter()
        .map(|call| json!([call[0], api.invoke(&call[1]).1]))
        .collect();
    let expected = if token.is_some() { 3 } else { 1 };
    assert_eq!(answered.len(), expected, "{calls}");
    let failures = hook_python(
        "print(json.dumps([r for r in (h.judge(l, p) for l, p in json.load(sys.stdin)) if r]))",
        &json!(answered),
    );
    serde_json::from_value(failures).expect("a list of reasons")
}

/// The events `infra/hooks/pre_traffic.py` sends a new version are answered as the hook expects
/// by the release binary (so a good release is not rolled back), and a credential the version
/// does not accept fails the hook (so the check can fail).
#[test]
fn the_pre_traffic_hook_passes_a_good_version_and_fails_a_refused_credential() {
    let Some(endpoint) = crate::support::dynamodb_endpoint("lambda runtime hook [dynamodb]") else {
        return;
    };
    let rt = runtime();
    let (_app, table, token) = setup(&rt, &endpoint, "gatehouse-hook");
    let mut api = RuntimeApi::start();
    let mut vars = table_env(&table, &endpoint);
    vars.push(("GATEHOUSE_STATE_KEY", STATE_KEY));
    let function = Function::start(&api, &vars);
    assert_eq!(hook_failures(&mut api, Some(&token)), Vec::<String>::new());
    assert_eq!(hook_failures(&mut api, None), Vec::<String>::new());
    let refused = hook_failures(&mut api, Some("gh_not_a_connection_of_this_table"));
    assert_eq!(refused.len(), 2, "{refused:?}");
    assert!(
        refused.iter().all(|r| r.contains("expected 200")),
        "{refused:?}"
    );
    drop(function);
}

// ---- what an invocation leaves behind ---------------------------------------------------------

/// A function of the release binary on a fresh table, whose owner `ana` of `acme` has a full
/// connection: (app on the same table, function, connection id, token).
fn full_connection_function(
    rt: &tokio::runtime::Runtime,
    api: &RuntimeApi,
    endpoint: &str,
    function_endpoint: &str,
    prefix: &str,
) -> (app::App, Function, String, String) {
    let (app, table, _) = setup(rt, endpoint, prefix);
    let (connection, token) = rt.block_on(async {
        let rights = crate::support::rights_of(&app, "acme", "ana").await;
        let full = mcp_pipeline::Toolset::Full;
        crate::support::connect(&app, "acme", "ana", rights, full, "settle test").await
    });
    let mut vars = table_env(&table, function_endpoint);
    vars.push(("GATEHOUSE_STATE_KEY", STATE_KEY));
    let function = Function::start(api, &vars);
    (app, function, connection, token)
}

/// The items of partition `pk` (read from the test's side of the table).
fn partition(rt: &tokio::runtime::Runtime, app: &app::App, pk: &str) -> Vec<store::Item> {
    let page = rt.block_on(app.store.query(store::Query::partition(pk)));
    let page = page.expect("query the table");
    page.items.into_iter().map(|(_, item)| item).collect()
}

/// A successful tool result of the invocation's payload.
fn tool_result(payload: &Value) -> Value {
    let got = from_lambda(payload);
    assert_eq!(got.status, 200, "{payload}");
    let result = got.body["result"].clone();
    assert_ne!(result["isError"], json!(true), "{result}");
    result
}

/// Lambda may freeze an instance the moment its handler returns, and stop it frozen (catalogue
/// S05): here the process is stopped (SIGSTOP) as it posts each response, and the table must
/// already hold all the call leaves: no concurrency slot still taken (a read's release is not
/// left for later, ADR 25), the write's customer and its audit row. The function reaches the
/// table through a link that holds each request 150 ms, so that work left running after the
/// answer would still be in flight when the process stops.
#[test]
fn nothing_is_left_running_when_the_function_answers() {
    let Some(endpoint) = crate::support::dynamodb_endpoint("lambda settle [dynamodb]") else {
        return;
    };
    let rt = runtime();
    let mut api = RuntimeApi::start();
    let upstream = endpoint
        .trim_start_matches("http://")
        .parse()
        .expect("host:port");
    let slow = crate::support::slow_link::start(upstream, Duration::from_millis(150));
    let slow = format!("http://{slow}");
    let (app, function, connection, token) =
        full_connection_function(&rt, &api, &endpoint, &slow, "gatehouse-settle");
    let pid = function.child.id();
    *api.shared.freeze_on_response.lock().unwrap() = Some(pid);
    let slots = mcp_pipeline::keys::slots(
        &store::TenantId::new("acme"),
        &store::ConnectionId::new(connection.as_str()),
    );
    let grace = json!({"name": "Grace Hopper", "email": "grace@example.com"});
    let calls = [
        ("get_server_status", json!({})),
        ("create_customer", grace),
        ("list_customers", json!({})),
        ("get_server_status", json!({})),
    ];
    for (n, (tool, arguments)) in calls.iter().enumerate() {
        let event = api_gateway_call(&token, n as u64, tool, arguments);
        let (_, payload, _) = api.invoke(&event);
        // The process is stopped now: only what it finished before answering is in the table.
        tool_result(&payload);
        let held = partition(&rt, &app, &slots);
        assert!(held.is_empty(), "after {tool}, slots still held: {held:?}");
        signal(pid, "CONT");
    }
    assert_eq!(partition(&rt, &app, "acme#customer").len(), 1);
    let audit = rt.block_on(identity::audit::recent(
        app.store.as_ref(),
        &store::TenantId::new("acme"),
        None,
        10,
    ));
    let created: Vec<_> = audit
        .expect("the audit trail")
        .into_iter()
        .filter(|e| e.action == "create_customer" && e.outcome == "ok")
        .collect();
    assert_eq!(created.len(), 1, "{created:?}");
    *api.shared.freeze_on_response.lock().unwrap() = None;
    function.stop();
}

/// An event whose deadline has already passed (remaining time 0, catalogue R15): the function
/// derives no lease from it. The calls are served; the replay record and the pending action
/// they write expire in the future (a positive lease from the function's own constants), and
/// no slot is left taken.
#[test]
fn a_deadline_already_past_still_gives_positive_leases() {
    let Some(endpoint) = crate::support::dynamodb_endpoint("lambda deadline [dynamodb]") else {
        return;
    };
    let rt = runtime();
    let mut api = RuntimeApi::start();
    let (app, function, connection, token) =
        full_connection_function(&rt, &api, &endpoint, &endpoint, "gatehouse-deadline");
    let now = epoch_ms();
    for deadline in [0, now - 1_000, now] {
        *api.shared.deadline_ms.lock().unwrap() = Some(deadline);
        let email = format!("grace-{deadline}@example.com");
        let event = api_gateway_call(
            &token,
            1,
            "create_customer",
            &json!({"name": "Grace Hopper", "email": email}),
        );
        let (_, payload, _) = api.invoke(&event);
        let created = tool_result(&payload);
        let customer = created["structuredContent"]["customer"]["customer"].clone();
        let event = api_gateway_call(&token, 2, "delete_customer", &json!({"customer": customer}));
        let (_, payload, _) = api.invoke(&event);
        let preview = tool_result(&payload);
        assert_eq!(
            preview["structuredContent"]["status"], "PREVIEW",
            "{preview}"
        );
    }
    let now_s = i64::try_from(epoch_ms() / 1000).unwrap();
    let replay = partition(&rt, &app, &format!("acme#replay#{connection}"));
    let pending = partition(&rt, &app, "acme#pending");
    assert_eq!((replay.len(), pending.len()), (3, 3));
    for item in replay.iter().chain(&pending) {
        let expires = item
            .get(store::TTL_ATTRIBUTE)
            .and_then(store::Value::as_n)
            .and_then(|n| n.as_str().parse::<i64>().ok())
            .unwrap_or_else(|| panic!("an expiry: {item:?}"));
        assert!(expires > now_s + 60, "a lease in the future: {item:?}");
    }
    let slots = mcp_pipeline::keys::slots(
        &store::TenantId::new("acme"),
        &store::ConnectionId::new(connection.as_str()),
    );
    assert!(partition(&rt, &app, &slots).is_empty());
    function.stop();
}
