//! Logs that ship (issue 19, in part): the `gatehouse` binary honours `RUST_LOG` when
//! `GATEHOUSE_LOG` is not set, writes no colour codes when stderr is not a terminal, and each
//! call's line carries a request id unique per request (the JSON-RPC id repeats, so it is
//! logged apart as `rpc_id`) and a rounded duration; over HTTP the same id comes back in
//! `x-request-id`.

use std::io::Write as _;
use std::process::{Command, Stdio};

use mcp_test_client::TestClient;
use serde_json::json;

use crate::support::processes::{
    Place, cli_token, gatehouse_binary, plain_get, start_serve_printing,
};

/// Runs `gatehouse stdio` with `env`, sends two identical calls with the same JSON-RPC id, and
/// returns what it wrote to stderr (a pipe, not a terminal).
fn stdio_stderr(env: &[(&str, &str)]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let token = cli_token(dir.path());
    stdio_stderr_in(dir.path(), &token, env)
}

fn stdio_stderr_in(dir: &std::path::Path, token: &str, env: &[(&str, &str)]) -> String {
    let mut command = Command::new(gatehouse_binary());
    command
        .args(["stdio", "--data-dir"])
        .arg(dir)
        .env("GATEHOUSE_TOKEN", token)
        .env_remove("GATEHOUSE_LOG")
        .env_remove("RUST_LOG")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    for (k, v) in env {
        command.env(k, v);
    }
    let mut child = command.spawn().expect("start gatehouse stdio");
    let mut stdin = child.stdin.take().unwrap();
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}});
    let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "get_server_status", "arguments": {}, "_meta": meta}});
    writeln!(stdin, "{call}\n{call}").unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stderr).unwrap()
}

fn field<'l>(line: &'l str, name: &str) -> &'l str {
    line.split(&format!("{name}="))
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no {name} in {line}"))
}

#[test]
fn call_lines_have_unique_request_ids_rounded_durations_and_no_colour() {
    let stderr = stdio_stderr(&[]);
    assert!(
        !stderr.contains('\u{1b}'),
        "colour codes in a pipe: {stderr:?}"
    );
    let calls: Vec<&str> = stderr.lines().filter(|l| l.contains("tool call")).collect();
    assert_eq!(calls.len(), 2, "{stderr}");
    let ids: Vec<&str> = calls.iter().map(|l| field(l, "request_id")).collect();
    assert!(
        ids.iter()
            .all(|id| id.trim_matches('"').starts_with("req_")),
        "{ids:?}"
    );
    assert_ne!(ids[0], ids[1], "the same JSON-RPC id, two requests");
    assert!(calls.iter().all(|l| field(l, "rpc_id") == "7"));
    for line in &calls {
        let duration = field(line, "duration_ms");
        let decimals = duration.split('.').nth(1).map_or(0, str::len);
        assert!(decimals <= 2, "{duration} in {line}");
    }
}

#[test]
fn rust_log_is_honoured_and_gatehouse_log_wins() {
    let quiet = stdio_stderr(&[("RUST_LOG", "warn")]);
    assert!(
        !quiet.contains("tool call"),
        "RUST_LOG=warn hides info lines: {quiet}"
    );
    let loud = stdio_stderr(&[("RUST_LOG", "warn"), ("GATEHOUSE_LOG", "info")]);
    assert!(
        loud.contains("tool call"),
        "GATEHOUSE_LOG comes first: {loud}"
    );
}

/// Over HTTP the answer names its request id, and two answers never share one.
#[tokio::test]
async fn http_answers_carry_their_request_id() {
    let world = crate::world::World::on(crate::support::store::Backend::Sqlite)
        .await
        .unwrap();
    world.member("acme", "ana", "owner").await;
    let (_, token) = world
        .connect("acme", "ana", mcp_pipeline::Toolset::Core)
        .await;
    let client: TestClient = world.client(&token);
    let first = client.request("tools/list", json!({})).await;
    let second = client.request("tools/list", json!({})).await;
    let ids = [&first, &second].map(|r| r.header("x-request-id").unwrap_or_default().to_owned());
    assert!(ids[0].starts_with("req_"), "{ids:?}");
    assert_ne!(ids[0], ids[1]);
}

/// Over stdio a refused credential is said in the log the client shows, with the store that
/// was opened, so that a token made for another data folder is not a mystery.
#[test]
fn stdio_says_which_store_it_opened_and_why_a_credential_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let stderr = stdio_stderr_in(dir.path(), "ghm_not-a-token", &[]);
    let store = dir.path().join("gatehouse.db");
    assert!(stderr.contains(&store.display().to_string()), "{stderr}");
    assert!(
        stderr.contains("was refused") && stderr.contains("status=401"),
        "{stderr}"
    );
}

/// `serve --metrics-addr` answers a Prometheus scrape on an address of its own (ADR 54): each
/// tool call counted by tool and outcome (an error under its code) with its duration, and
/// nothing that says who called. The MCP port does not serve it, and without the flag `serve`
/// opens no scrape address.
#[tokio::test]
async fn serve_answers_a_metrics_scrape_on_its_own_address_only_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let token = cli_token(dir.path());
    let place = Place::Folder(dir.path().to_owned());
    let (server, addr, printed) = start_serve_printing(&place, &["--metrics-addr", "127.0.0.1:0"]);
    let scrape = printed
        .iter()
        .find_map(|l| l.trim().strip_prefix("metrics at http://"))
        .and_then(|rest| rest.split('/').next())
        .unwrap_or_else(|| panic!("serve says where the scrape is: {printed:#?}"))
        .to_owned();
    let client = TestClient::http(addr).with_header("authorization", &format!("Bearer {token}"));
    for _ in 0..2 {
        assert!(
            !client
                .call_tool("get_server_status", json!({}))
                .await
                .is_error()
        );
    }
    let missing = client
        .call_tool("get_customer", json!({"customer": "cus_none"}))
        .await;
    assert!(missing.is_error(), "{missing:?}");

    // A two-step action previewed and confirmed by the client.
    let created = client
        .call_tool(
            "create_customer",
            json!({"name": "Ada Lovelace", "email": "ada@example.com"}),
        )
        .await;
    let customer = created.structured()["customer"]["customer"].clone();
    let preview = client
        .call_tool("delete_customer", json!({"customer": customer}))
        .await;
    assert_eq!(
        preview.structured()["status"],
        "PREVIEW",
        "{}",
        preview.text()
    );
    let confirm = json!({"confirm_token": preview.structured()["confirm_token"], "confirm_summary": preview.structured()["confirm_summary"]});
    let done = client.call_tool("confirm_action", confirm).await;
    assert!(!done.is_error(), "{}", done.text());

    let (status, text) = plain_get(&scrape, "/metrics");
    assert!(status.contains(" 200 "), "{status}");
    assert!(
        text.contains(
            "gatehouse_calls_total{tool=\"get_server_status\",effect_class=\"read\",outcome=\"ok\"} 2\n"
        ),
        "{text}"
    );
    let status_calls = "gen_ai_tool_name=\"get_server_status\",outcome=\"ok\"";
    assert!(
        text.contains(&format!(
            "mcp_server_operation_duration_seconds_bucket{{mcp_method_name=\"tools/call\",{status_calls},le=\"+Inf\"}} 2\n"
        )),
        "{text}"
    );
    let refused = text
        .lines()
        .find(|l| l.starts_with("gatehouse_calls_total{tool=\"get_customer\""))
        .unwrap_or_else(|| panic!("the failed call is counted: {text}"));
    assert!(
        !refused.contains("outcome=\"ok\"") && refused.ends_with(" 1"),
        "{refused}"
    );
    let store_reads = text
        .lines()
        .find_map(|l| {
            l.strip_prefix(
                "gatehouse_store_operation_duration_seconds_count{operation=\"batch_get\"} ",
            )
        })
        .and_then(|n| n.parse::<u64>().ok());
    assert!(store_reads.is_some_and(|n| n >= 3), "{text}");
    assert!(
        text.contains("gatehouse_confirmations_total{path=\"client\",decision=\"confirmed\"} 1\n"),
        "{text}"
    );
    assert!(
        text.contains("gatehouse_confirmation_wait_seconds_count{path=\"client\"} 1\n"),
        "{text}"
    );
    for who in ["acme", "ana", "Ada", token.as_str()] {
        assert!(!text.contains(who), "the scrape names {who}: {text}");
    }
    let (status, body) = plain_get(&addr.to_string(), "/metrics");
    assert!(!body.contains("gatehouse_calls_total"), "{status}: {body}");
    drop(server);

    let (_plain, _, printed) = start_serve_printing(&place, &[]);
    assert!(
        !printed.iter().any(|l| l.contains("metrics at")),
        "{printed:#?}"
    );
}
