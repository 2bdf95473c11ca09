//! The same service through every way it runs: Lambda events, `gatehouse serve` over real
//! HTTP, and `gatehouse stdio`.

use std::io::Write as _;
use std::process::{Command, Stdio};

use crate::support::processes::{
    ACME, Place, cli_token, gatehouse, gatehouse_binary, printed_commands, start_serve,
    start_serve_after, start_serve_printing, start_serve_printing_on, start_serve_with_open_files,
    succeed,
};

use http_body_util::BodyExt as _;
use mcp_test_client::TestClient;
use serde_json::{Value, json};

/// An app on the memory store with one owner and a connection; returns it and the token.
async fn app_with_token() -> (app::App, String) {
    let (store, _) = crate::support::store::fresh(crate::support::store::Backend::Memory)
        .await
        .unwrap();
    let app = app::build(
        &app::Settings::default(),
        store,
        booking_product::Booking::shared(),
    )
    .expect("app");
    let token = crate::support::owner_connection(&app, "lambda test").await;
    (app, token)
}

async fn lambda_roundtrip(event: &str) -> (u16, Value) {
    let (app, token) = app_with_token().await;
    // The recorded event plus the credential every request carries.
    let mut event: Value = serde_json::from_str(event).unwrap();
    event["headers"]["authorization"] = json!(format!("Bearer {token}"));
    let request = lambda_http::request::from_str(&event.to_string()).expect("a valid Lambda event");
    // The same call the Lambda function makes for each invocation.
    let response = app.http.handle(request).await;
    let status = response.status().as_u16();
    let body = response
        .into_body()
        .collect()
        .await
        .expect("body")
        .to_bytes();
    (status, serde_json::from_slice(&body).expect("JSON body"))
}

#[tokio::test]
async fn lambda_event_without_credential_gets_401() {
    let (app, _) = app_with_token().await;
    let event = include_str!("../fixtures/apigw_v2_http_api_event.json");
    let request = lambda_http::request::from_str(event).unwrap();
    let response = app.http.handle(request).await;
    assert_eq!(response.status(), 401);
    assert!(response.headers().contains_key("www-authenticate"));
}

#[tokio::test]
async fn api_gateway_http_api_event() {
    let (status, body) =
        lambda_roundtrip(include_str!("../fixtures/apigw_v2_http_api_event.json")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["id"], 1);
    assert_eq!(body["result"]["isError"], false);
    assert_eq!(
        body["result"]["structuredContent"]["store_backend"],
        "memory"
    );
}

#[tokio::test]
async fn lambda_function_url_event_with_a_base64_body() {
    let (status, body) =
        lambda_roundtrip(include_str!("../fixtures/lambda_function_url_event.json")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["id"], "list-1");
    assert!(
        body["result"]["tools"]
            .as_array()
            .is_some_and(|t| !t.is_empty())
    );
}

#[tokio::test]
async fn gatehouse_serve_over_real_http_on_the_embedded_store() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("fresh/data");
    let (server, addr) = start_serve(&data);
    assert!(
        data.join("gatehouse.db").exists(),
        "the data folder and store file are created on first run"
    );
    let anonymous = TestClient::http(addr)
        .request("tools/list", json!({}))
        .await;
    assert_eq!(anonymous.status, 401, "every request needs a credential");
    drop(server);
    let token = cli_token(&data);
    let (_server, addr) = start_serve(&data);
    let bearer = format!("Bearer {token}");
    let client = TestClient::http(addr).with_header("authorization", &bearer);
    let list = client.list_tools().await;
    assert!(
        list["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "get_server_status")
    );
    let call = client.call_tool("get_server_status", json!({})).await;
    assert!(!call.is_error());
    assert_eq!(call.structured()["store_backend"], "sqlite");
    let legacy = TestClient::http(addr)
        .legacy("2025-06-18")
        .with_header("authorization", &bearer);
    let call = legacy.call_tool("get_server_status", json!({})).await;
    assert!(!call.is_error());
    let r = client
        .send(http::Method::GET, "/mcp", &[], bytes::Bytes::new())
        .await;
    assert_eq!(r.status, 405);
}

/// Running out of file descriptors fails the connections that arrive meanwhile, not the server:
/// once they close, `serve` accepts and answers again.
#[tokio::test]
async fn serve_keeps_accepting_after_running_out_of_file_descriptors() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let token = cli_token(&data);
    let place = Place::Folder(data.clone());
    let (mut server, addr) = start_serve_with_open_files(&place, 64);
    // More connections than the process may hold open: the kernel completes them, and the
    // server's accepts fail with "too many open files" until they close.
    let flood: Vec<std::net::TcpStream> = (0..96)
        .filter_map(|_| std::net::TcpStream::connect(addr).ok())
        .collect();
    assert!(
        flood.len() > 64,
        "the flood opened {} connections",
        flood.len()
    );
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert!(
        server.0.try_wait().unwrap().is_none(),
        "serve exited when it could not accept"
    );
    drop(flood);
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert!(
        server.0.try_wait().unwrap().is_none(),
        "serve is still running"
    );
    let client = TestClient::http(addr).with_header("authorization", &format!("Bearer {token}"));
    let list = client.request("tools/list", json!({})).await;
    assert_eq!(
        list.status, 200,
        "serve answers again once the connections closed"
    );
}

/// A message whose handling panics over stdio (outside a tool's body, where nothing else
/// catches it) is answered with an internal error under its id, and the session goes on: the
/// next message is answered as usual.
#[tokio::test]
async fn a_panic_over_stdio_answers_that_message_and_the_session_goes_on() {
    let registry = mcp_pipeline::Registry::new();
    let server = mcp_pipeline::Server::new(crate::support::memory_config(), registry);
    let authenticator = crate::support::PanicsOnce::default();
    let headers = mcp_pipeline::Headers::new();
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}});
    let line = |id: u32| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/list", "params": {"_meta": meta}})
            .to_string()
    };
    let first = mcp_http::stdio::reply(&server, &authenticator, &headers, &line(7)).await;
    let first: Value = serde_json::from_str(&first[0]).unwrap();
    assert_eq!(
        (&first["id"], &first["error"]["code"]),
        (&json!(7), &json!(-32603)),
        "{first}"
    );
    let next = mcp_http::stdio::reply(&server, &authenticator, &headers, &line(8)).await;
    let next: Value = serde_json::from_str(&next[0]).unwrap();
    assert_eq!(
        (&next["id"], &next["error"]["code"]),
        (&json!(8), &json!(mcp_http::stdio::CREDENTIAL_REFUSED)),
        "{next}"
    );
}

#[test]
fn gatehouse_stdio_speaks_newline_delimited_json_rpc() {
    let dir = tempfile::tempdir().unwrap();
    let token = cli_token(dir.path());
    let mut child = crate::support::processes::stdio_child(dir.path(), &token);
    let mut stdin = child.stdin.take().unwrap();
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}});
    let messages = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"_meta": meta}}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "get_server_status", "arguments": {}, "_meta": meta}}),
    ];
    for m in &messages {
        writeln!(stdin, "{m}").unwrap();
    }
    writeln!(stdin, "[1,2]").unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let replies: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        replies.len(),
        4,
        "one reply per request, none for the notification: {replies:?}"
    );
    assert_eq!(replies[0]["result"]["protocolVersion"], "2025-11-25");
    assert_eq!(replies[1]["result"]["resultType"], "complete");
    assert_eq!(
        replies[2]["result"]["structuredContent"]["store_backend"],
        "sqlite"
    );
    mcp_test_client::assert_text_matches_structured(&replies[2]["result"]);
    assert_eq!(replies[3]["error"]["code"], -32600);
}

/// A refused or empty `GATEHOUSE_TOKEN` is named as such over stdio, with an
/// application-defined code outside JSON-RPC's reserved range (review of 2026-12-05: it said
/// "the Authorization header must be `Bearer <token>`" under the legacy code -32001).
#[test]
fn a_refused_stdio_token_is_named_as_gatehouse_token() {
    let dir = tempfile::tempdir().unwrap();
    cli_token(dir.path());
    let run = |token: &str| {
        let mut child = crate::support::processes::stdio_child(dir.path(), token);
        let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}});
        let list =
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta}});
        let mut stdin = child.stdin.take().unwrap();
        writeln!(stdin, "{list}").unwrap();
        drop(stdin);
        child.wait_with_output().unwrap()
    };
    let refused = run("ghm_not.a_token");
    let reply: Value = serde_json::from_slice(&refused.stdout).unwrap();
    assert_eq!(
        reply["error"]["code"],
        json!(mcp_http::stdio::CREDENTIAL_REFUSED)
    );
    let message = reply["error"]["message"].as_str().unwrap();
    assert!(message.contains("GATEHOUSE_TOKEN"), "{message}");
    assert!(!message.contains("Authorization"), "{message}");
    for empty in ["", "  "] {
        let out = run(empty);
        assert!(!out.status.success(), "started with {empty:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("set GATEHOUSE_TOKEN"), "{stderr}");
    }
}

/// Without `--data-dir`, every command uses the user's data folder (here `$HOME/.local/share/
/// gatehouse`), whatever folder it starts in: a token made with the CLI in one folder works over
/// stdio started in another, and no `data` folder appears where they ran.
#[test]
fn commands_without_a_data_dir_share_the_users_data_folder() {
    let home = tempfile::tempdir().unwrap();
    let (admin_cwd, client_cwd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let command = |cwd: &std::path::Path| {
        let mut c = Command::new(gatehouse_binary());
        c.current_dir(cwd)
            .env("HOME", home.path())
            .env_remove("XDG_DATA_HOME")
            .env_remove("GATEHOUSE_DATA_DIR");
        c
    };
    let run = |args: &[&str]| succeed(command(admin_cwd.path()).args(args), args);
    run(&ACME);
    run(&[
        "member", "set", "--tenant", "acme", "--member", "ana", "--role", "owner",
    ]);
    let created: Value = serde_json::from_str(&run(&[
        "token", "create", "--tenant", "acme", "--member", "ana", "--client", "desktop", "--json",
    ]))
    .unwrap();
    let mut child = command(client_cwd.path())
        .arg("stdio")
        .env("GATEHOUSE_TOKEN", created["token"].as_str().unwrap())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}});
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "get_server_status", "arguments": {}, "_meta": meta}});
    writeln!(child.stdin.take().unwrap(), "{call}").unwrap();
    let out = child.wait_with_output().unwrap();
    let reply: Value = serde_json::from_slice(&out.stdout).expect("one reply");
    assert_eq!(reply["result"]["isError"], false, "{reply}");
    let folder = home.path().join(".local/share/gatehouse");
    assert!(
        folder.join("gatehouse.db").exists(),
        "the store lives in the user's folder"
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(&folder.display().to_string()),
        "stdio says which store it opened: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    for cwd in [admin_cwd.path(), client_cwd.path()] {
        assert!(
            !cwd.join("data").exists(),
            "no data folder in {}",
            cwd.display()
        );
    }
}

/// DynamoDB mode proves its table before it serves or changes anything, and every setup error
/// names the table and the fix in a line; `gatehouse dynamodb create-table` makes the table on
/// a local DynamoDB-compatible server.
#[test]
fn dynamodb_setup_errors_name_the_table_and_the_fix() {
    let Some(endpoint) = crate::support::dynamodb_endpoint("dynamodb setup [dynamodb]") else {
        return;
    };
    let home = tempfile::tempdir().unwrap();
    let table = format!("setup-{}", crate::support::store::unique_suffix());
    let run = |args: &[&str], credentials: bool| {
        let mut c = Command::new(gatehouse_binary());
        c.args(args)
            .args(["--dynamodb-table", &table, "--dynamodb-endpoint", &endpoint])
            .env_clear()
            .env("HOME", home.path())
            .env("AWS_REGION", "us-east-1")
            .env("AWS_EC2_METADATA_DISABLED", "true");
        if credentials {
            c.env("AWS_ACCESS_KEY_ID", "test")
                .env("AWS_SECRET_ACCESS_KEY", "test");
        }
        let out = c.output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            err,
        )
    };
    let (ok, _, err) = run(&["tenant", "list"], true);
    assert!(!ok);
    assert!(
        err.contains(&format!("DynamoDB table {table} does not exist"))
            && err.contains("gatehouse dynamodb create-table"),
        "{err}"
    );
    assert!(
        err.len() < 600,
        "one clear line, not the SDK's chain: {err}"
    );
    let (ok, out, err) = run(&["serve", "--addr", "127.0.0.1:0"], true);
    assert!(
        !ok && !err.contains("serving MCP at") && !out.contains("serving"),
        "{err}"
    );
    let (ok, _, err) = run(&["tenant", "list"], false);
    assert!(!ok);
    assert!(
        err.contains("no AWS credentials") && err.contains(&table),
        "{err}"
    );
    assert!(err.len() < 600, "{err}");
    let (ok, out, err) = run(&["dynamodb", "create-table"], true);
    assert!(ok, "{err}");
    assert!(
        out.contains(&format!("DynamoDB table {table} is ready")),
        "{out}"
    );
    let (ok, _, err) = run(&["dynamodb", "create-table"], true);
    assert!(ok, "creating it again leaves it as it is: {err}");
    let (ok, _, err) = run(&ACME, true);
    assert!(ok, "the table serves now: {err}");
}

#[tokio::test]
async fn token_commands_work_on_dynamodb_too() {
    let Some(endpoint) = crate::support::dynamodb_endpoint("token commands [dynamodb]") else {
        return;
    };
    let (_, table) = crate::support::store::fresh_table(&endpoint, "cli").await;
    let run = |args: &[&str]| {
        let mut command = Command::new(gatehouse_binary());
        command
            .args(args)
            .args(["--dynamodb-table", &table, "--dynamodb-endpoint", &endpoint])
            // Local-server credentials; the SDK reads them like any AWS credentials.
            .env("AWS_ACCESS_KEY_ID", "test")
            .env("AWS_SECRET_ACCESS_KEY", "test")
            .env("AWS_REGION", "us-east-1");
        succeed(&mut command, args)
    };
    run(&ACME);
    run(&[
        "member", "set", "--tenant", "acme", "--member", "ana", "--role", "owner",
    ]);
    let created: Value = serde_json::from_str(&run(&[
        "token",
        "create",
        "--tenant",
        "acme",
        "--member",
        "ana",
        "--client",
        "dynamo",
        "--toolset",
        "core",
        "--json",
    ]))
    .unwrap();
    let connection = created["connection"].as_str().unwrap().to_owned();
    assert!(created["token"].as_str().unwrap().starts_with("ghm_"));
    let listed: Value =
        serde_json::from_str(&run(&["token", "list", "--tenant", "acme", "--json"])).unwrap();
    assert_eq!(listed[0]["connection"], connection.as_str());
    assert!(
        listed[0].get("token").is_none(),
        "a list never shows tokens"
    );
    let revoked: Value = serde_json::from_str(&run(&[
        "token",
        "revoke",
        "--tenant",
        "acme",
        "--member",
        "ana",
        &connection,
        "--json",
    ]))
    .unwrap();
    assert_eq!(revoked["revoked"], true);
    let status = run(&["kill-switch", "status", "--json"]);
    assert_eq!(
        serde_json::from_str::<Value>(&status).unwrap()["kill_switch"],
        "off"
    );
}

#[tokio::test]
async fn serve_seeds_demo_tenants_into_an_empty_store() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("share").join("demo");
    let (_server, addr) = start_serve_after(&Place::Folder(data.clone()), "umask 022");
    // The seed runs before the server accepts connections, so the file is there once the
    // first request is answered.
    let probe = TestClient::http(addr)
        .request("tools/list", json!({}))
        .await;
    assert_eq!(probe.status, 401);
    let file = data.join("demo-connections.json");
    let demo: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode =
            |path: &std::path::Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&file), 0o600, "owner-readable only");
        // The store holds customers, password hashes and session secrets: its folder and files
        // are the owner's whatever the umask (they were 0755 and 0644 under umask 022).
        assert_eq!(mode(&data), 0o700, "the data folder");
        let parent = data.parent().unwrap();
        assert_eq!(
            mode(parent),
            0o755,
            "a parent it made is made as any folder is"
        );
        for name in ["gatehouse.db", "gatehouse.db-wal", "gatehouse.db-shm"] {
            assert_eq!(mode(&data.join(name)), 0o600, "{name}");
        }
    }
    let connections = demo["connections"].as_array().unwrap();
    assert_eq!(
        connections.len(),
        2 * 4 * 3,
        "one per tenant, role and toolset"
    );
    let token = |tenant: &str, role: &str, toolset: &str| {
        connections
            .iter()
            .find(|c| c["tenant"] == tenant && c["role"] == role && c["toolset"] == toolset)
            .map(|c| format!("Bearer {}", c["token"].as_str().unwrap()))
            .unwrap()
    };
    let acme = TestClient::http(addr)
        .with_header("authorization", &token("acme", "dispatcher", "standard"));
    let found = acme
        .call_tool("find_customers", json!({"query": "ada"}))
        .await;
    let ada = found.structured()["customers"][0]["customer"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(ada.starts_with("cus_"));
    let globex =
        TestClient::http(addr).with_header("authorization", &token("globex", "owner", "full"));
    let other = globex
        .call_tool("get_customer", json!({"customer": ada}))
        .await;
    assert_eq!(
        other.structured()["code"],
        "not_found",
        "another tenant's handle is not found"
    );
    let viewer =
        TestClient::http(addr).with_header("authorization", &token("acme", "viewer", "core"));
    let list = viewer.list_tools().await;
    let names: Vec<&str> = list["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"find_customers") && !names.contains(&"create_customer"),
        "{names:?}"
    );
}

/// A person who opens the server's address lands on the product's pages; a load balancer's
/// health check answers without a credential; the pages fit a phone's width.
#[tokio::test]
async fn serve_answers_people_and_load_balancers() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let (_server, addr) = start_serve(&data);
    let client = TestClient::http(addr);
    let root = client
        .send(http::Method::GET, "/", &[], bytes::Bytes::new())
        .await;
    assert_eq!(root.status, 303);
    assert_eq!(root.header("location"), Some("/app/"));
    let health = client
        .send(
            http::Method::GET,
            mcp_http::HEALTH_PATH,
            &[],
            bytes::Bytes::new(),
        )
        .await;
    assert_eq!(health.status, 200);
    let login = client
        .send(http::Method::GET, "/app/login", &[], bytes::Bytes::new())
        .await;
    let page = String::from_utf8_lossy(&login.body);
    assert!(
        page.contains("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"),
        "{page}"
    );
}

/// `gatehouse` as a newcomer pastes it from what `serve` printed: the printed words, on the
/// printed store, with a home folder of its own (so that a command missing the store's flag
/// acts on another store and the test sees it). Returns stdout.
fn run_printed(words: &[String], home: &std::path::Path) -> String {
    let out = Command::new(gatehouse_binary())
        .args(words)
        .env_remove("GATEHOUSE_DATA_DIR")
        .env("HOME", home)
        .env("XDG_DATA_HOME", home.join("share"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{words:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The token `token create` printed.
fn printed_token(out: &str) -> String {
    let line = out
        .lines()
        .find(|l| l.starts_with("token "))
        .unwrap_or_else(|| panic!("no token in {out}"));
    line.rsplit(' ').next().unwrap().to_owned()
}

/// Whether the store at `place` has the demo operator, with its published password.
async fn has_demo_operator(place: &Place) -> bool {
    let (email, password) = (app::demo::DEMO_OPERATOR, app::demo::DEMO_PASSWORD);
    let store = place.store();
    accounts::operators::check_password(store.as_ref(), email, password)
        .await
        .unwrap()
        .is_some()
}

/// `serve` printed no demo seed, and the store at `data` holds only the workspace `mycompany`.
fn no_demo_beside_mycompany(printed: &[String], data: &std::path::Path) {
    assert!(
        !printed.iter().any(|l| l.contains("seeded the demo")),
        "{printed:#?}"
    );
    let listed = gatehouse(&["tenant", "list"], data);
    assert!(
        listed.lines().count() == 1 && listed.starts_with("mycompany"),
        "{listed}"
    );
}

/// A store that already holds a workspace gets no demo (no made-up workspaces, no demo
/// operator with its published password), and the commands `serve` prints for a first
/// connection work when pasted, on the store it serves (review of 2026-12-05: they named a
/// workspace that did not exist and dropped `--data-dir`).
#[tokio::test]
async fn a_store_in_use_gets_no_demo_and_its_printed_steps_work() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("my data");
    let place = Place::Folder(data.clone());
    // acme's settings under another name.
    let mine: Vec<&str> = ACME
        .iter()
        .map(|a| match *a {
            "acme" => "mycompany",
            "Acme" => "Mine",
            other => other,
        })
        .collect();
    gatehouse(&mine, &data);
    gatehouse(
        &[
            "member",
            "set",
            "--tenant",
            "mycompany",
            "--member",
            "ana",
            "--role",
            "owner",
        ],
        &data,
    );
    let (_server, addr, printed) = start_serve_printing(&place, &[]);
    no_demo_beside_mycompany(&printed, &data);
    assert!(!has_demo_operator(&place).await, "no demo operator");
    let commands = printed_commands(&printed);
    let [create] = commands.as_slice() else {
        panic!("one command to paste: {printed:#?}")
    };
    let create: Vec<String> = create
        .iter()
        .map(|w| w.replace("<member>", "ana"))
        .collect();
    let token = printed_token(&run_printed(&create, dir.path()));
    let client = TestClient::http(addr).with_header("authorization", &format!("Bearer {token}"));
    assert_eq!(client.request("tools/list", json!({})).await.status, 200);
}

/// `serve --no-demo` on an empty folder prints the commands that make a workspace, a member
/// and a token, and they work when pasted; a later start without the flag still seeds
/// nothing: the folder was declined, not forgotten.
#[tokio::test]
async fn a_declined_demo_stays_declined_and_its_printed_steps_work() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("it's mine");
    let place = Place::Folder(data.clone());
    let (server, addr, printed) = start_serve_printing(&place, &["--no-demo"]);
    let commands = printed_commands(&printed);
    assert_eq!(commands.len(), 3, "{printed:#?}");
    let outputs: Vec<String> = commands
        .iter()
        .map(|c| run_printed(c, dir.path()))
        .collect();
    let token = printed_token(&outputs[2]);
    let client = TestClient::http(addr).with_header("authorization", &format!("Bearer {token}"));
    assert_eq!(client.request("tools/list", json!({})).await.status, 200);
    drop(server);
    let (_again, _, printed) = start_serve_printing(&place, &["--demo-as-of", "2055-06-01"]);
    let ignored = "--demo-as-of applies to the first seed of an empty store only";
    assert!(printed.iter().any(|l| l.contains(ignored)), "{printed:#?}");
    no_demo_beside_mycompany(&printed, &data);
}

/// A port nothing listens on now.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The link of a customer the connection of `token` makes at `addr` (named `name`).
async fn a_customer_link(addr: std::net::SocketAddr, token: &str, name: &str) -> String {
    let client = TestClient::http(addr).with_header("authorization", &format!("Bearer {token}"));
    let email = format!("{}@example.com", name.to_lowercase().replace(' ', "."));
    let made = client
        .call_tool("create_customer", json!({"name": name, "email": email}))
        .await;
    made.structured()["customer"]["link"]
        .as_str()
        .unwrap_or_else(|| panic!("{}", made.text()))
        .to_owned()
}

/// A server listening on every address hands out links a client can open: loopback by
/// default, with a note on how to name the address other machines use, or the URL given with
/// `--public-url` (review of 2026-12-05: links and the printed configuration said
/// http://0.0.0.0:PORT); a URL that is no URL is refused before anything starts.
#[tokio::test]
async fn links_point_where_clients_reach_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let place = Place::Folder(data.clone());
    let port = free_port();
    let token = cli_token(&data);
    let (server, addr, printed) = start_serve_printing_on(&place, &format!("0.0.0.0:{port}"), &[]);
    assert_eq!(
        addr.to_string(),
        format!("127.0.0.1:{port}"),
        "{printed:#?}"
    );
    assert!(
        printed.iter().any(|l| l.contains("--public-url")),
        "{printed:#?}"
    );
    let config = format!("gatehouse http://127.0.0.1:{port}/mcp");
    assert!(printed.iter().any(|l| l.contains(&config)), "{printed:#?}");
    let link = a_customer_link(addr, &token, "Ada Lovelace").await;
    assert!(
        link.starts_with(&format!("http://127.0.0.1:{port}/app/")),
        "{link}"
    );
    // Stopped as a service manager stops it: its calls' slots are given back.
    assert!(server.terminate().success());
    let port = free_port();
    let public = format!("http://127.0.0.2:{port}");
    let (_server, addr, printed) = start_serve_printing_on(
        &place,
        &format!("0.0.0.0:{port}"),
        &["--public-url", &format!("{public}/")],
    );
    assert_eq!(
        addr.to_string(),
        format!("127.0.0.2:{port}"),
        "{printed:#?}"
    );
    let link = a_customer_link(addr, &token, "Grace Hopper").await;
    assert!(link.starts_with(&format!("{public}/app/")), "{link}");
    assert!(
        printed
            .iter()
            .any(|l| l.contains(&format!("{public}/app/"))),
        "the printed pages' address: {printed:#?}"
    );
    let out = Command::new(gatehouse_binary())
        .args([
            "serve",
            "--no-demo",
            "--public-url",
            "gatehouse.example.com",
        ])
        .arg("--data-dir")
        .arg(&data)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a URL like"));
}

/// Stopped with SIGTERM (what service managers and `docker stop` send), `serve` answers the
/// request it is in the middle of, exits cleanly, and leaves no concurrency slot taken: a new
/// server on the same folder serves the same connection at once (review of 2026-12-05: the
/// process died at once, the call was lost, and its slot blocked the connection until its
/// lease ran out).
#[tokio::test]
async fn a_terminated_server_finishes_its_calls() {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let place = Place::Folder(data.clone());
    let token = cli_token(&data);
    let (server, addr, _) = start_serve_printing(&place, &[]);
    let client = TestClient::http(addr).with_header("authorization", &format!("Bearer {token}"));
    let params = json!({"name": "get_server_status", "arguments": {}});
    let (body, headers) = client.build("tools/call", params);
    let body = body.to_string();
    let mut head = format!(
        "POST /mcp HTTP/1.1\r\nhost: {addr}\r\ncontent-length: {}\r\nconnection: close\r\n",
        body.len()
    );
    for (name, value) in &headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    let (first, rest) = body.split_at(body.len() / 2);
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(first.as_bytes()).await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let stopped = tokio::task::spawn_blocking(move || server.terminate());
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    stream.write_all(rest.as_bytes()).await.unwrap();
    let mut answer = String::new();
    let read = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        stream.read_to_string(&mut answer),
    )
    .await;
    assert!(matches!(read, Ok(Ok(_))), "{read:?}");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains("store_backend"), "{answer}");
    let exited = stopped.await.unwrap();
    assert!(exited.success(), "{exited:?}");
    let (_again, addr, _) = start_serve_printing(&place, &[]);
    let client = TestClient::http(addr).with_header("authorization", &format!("Bearer {token}"));
    let status = client.call_tool("get_server_status", json!({})).await;
    assert!(!status.is_error(), "{}", status.text());
}

/// A store whose only record is an operator is in use too: no demo, and no demo operator with
/// the published password beside the real one, at the first start or any later one (second
/// review of 2026-12-05).
#[tokio::test]
async fn a_store_with_only_an_operator_gets_no_demo() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let place = Place::Folder(data.clone());
    let mut create = Command::new(gatehouse_binary());
    create
        .args([
            "operator",
            "create",
            "--email",
            "admin@company.example",
            "--password-stdin",
        ])
        .arg("--data-dir")
        .arg(&data)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = create.spawn().unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"a long enough password\n")
        .unwrap();
    assert!(child.wait().unwrap().success());
    for _ in 0..2 {
        let (server, _, printed) = start_serve_printing(&place, &[]);
        assert!(
            !printed.iter().any(|l| l.contains("seeded the demo")),
            "{printed:#?}"
        );
        assert!(server.terminate().success());
    }
    assert!(!has_demo_operator(&place).await, "no demo operator");
}

/// A data file made readable by others before the store made its files private (an install
/// from before, or a copy) is made its owner's again when a server opens it (second review of
/// 2026-12-05).
#[cfg(unix)]
#[tokio::test]
async fn a_data_file_readable_by_others_is_made_private() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let place = Place::Folder(data.clone());
    let (server, _, _) = start_serve_printing(&place, &[]);
    assert!(server.terminate().success());
    let names = ["gatehouse.db", "gatehouse.db-wal", "gatehouse.db-shm"];
    let open_to_all = std::fs::Permissions::from_mode(0o644);
    for name in names {
        let path = data.join(name);
        if path.exists() {
            std::fs::set_permissions(&path, open_to_all.clone()).unwrap();
        }
    }
    let (_again, _, _) = start_serve_printing(&place, &[]);
    for name in names {
        let mode = std::fs::metadata(data.join(name))
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(mode, 0o600, "{name}");
    }
}

/// The stdio configuration the connections page shows with a new token works as pasted: it
/// names the data folder this server uses, so `gatehouse stdio` opens the same store (review
/// of 2026-12-05: it left the folder out, and the token was "unknown or revoked").
#[tokio::test]
async fn the_pages_stdio_configuration_works_as_shown() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("my data");
    let (_server, addr, _) = start_serve_printing(&Place::Folder(data.clone()), &[]);
    let (cookie, csrf) = crate::support::pages::form_login(addr, "olivia").await;
    let pages = TestClient::http(addr);
    let form = crate::support::pages::form_headers(addr, &cookie);
    let body = format!("client=desktop&toolset=core&form=f-stdio&csrf={csrf}");
    let made = pages
        .send(http::Method::POST, "/app/connections", &form, body.into())
        .await;
    let page = String::from_utf8_lossy(&made.body).into_owned();
    assert_eq!(made.status, 200, "{page}");
    let config = page
        .split("{&quot;mcpServers&quot;: {&quot;gatehouse&quot;: {&quot;command&quot;")
        .nth(1)
        .and_then(|rest| rest.split("</pre>").next())
        .unwrap_or_else(|| panic!("no stdio configuration: {page}"));
    let config = format!(
        "{{\"mcpServers\": {{\"gatehouse\": {{\"command\"{}",
        config.replace("&quot;", "\"")
    );
    let config: Value = serde_json::from_str(&config).unwrap();
    let server = &config["mcpServers"]["gatehouse"];
    let args: Vec<String> = serde_json::from_value(server["args"].clone()).unwrap();
    let token = server["env"]["GATEHOUSE_TOKEN"].as_str().unwrap();
    let mut child = Command::new(gatehouse_binary())
        .args(&args)
        .env("GATEHOUSE_TOKEN", token)
        .env_remove("GATEHOUSE_DATA_DIR")
        .env("HOME", dir.path())
        .env("XDG_DATA_HOME", dir.path().join("share"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let line = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}});
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, "{line}").unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    let answer = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(answer.contains("\"tools\""), "{args:?}: {answer}");
}

/// `--addr` takes a host name as well as an address (review of 2026-12-05: `localhost:PORT`
/// was refused as "invalid socket address syntax").
#[tokio::test]
async fn serve_listens_on_a_named_host() {
    let dir = tempfile::tempdir().unwrap();
    let place = Place::Folder(dir.path().join("data"));
    let (_server, addr, _) = start_serve_printing_on(&place, "localhost:0", &["--no-demo"]);
    assert!(addr.ip().is_loopback(), "{addr}");
    let answer = TestClient::http(addr)
        .request("tools/list", json!({}))
        .await;
    assert_eq!(answer.status, 401, "served, and asks for a credential");
}
