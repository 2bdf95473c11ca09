//! The official MCP conformance suite against the product itself (catalogue O05): `gatehouse
//! serve` on a fresh data folder, a workspace with its owner and a connection, reached through
//! `tests/conformance-proxy.js`, which adds the connection's token to every request (the suite
//! cannot send one) and maps its own address to the server's. Every scenario that calls none of
//! the suite's fixture tools runs, for each protocol version the server speaks; the others
//! (and these again) run against the conformance fixture in `tests/conformance.sh`.
//!
//! Needs the suite `tests/conformance.sh --install-only` installs (tests/run does; in CI its
//! absence fails the test). About 20 s: one Node process per scenario.

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::support::processes::{
    Place, Running, binary, cli_token_on, program_token, start_binary_serve_with, start_serve_with,
};

/// The scenarios that need no fixture tool, per protocol version (the others call tools named
/// by the suite, such as `test_simple_text`, which the product does not have).
const SCENARIOS: &[(&str, &[&str])] = &[
    ("2025-03-26", &["server-session-lifecycle"]),
    (
        "2025-06-18",
        &[
            "server-initialize",
            "server-session-lifecycle",
            "ping",
            "tools-list",
        ],
    ),
    (
        "2025-11-25",
        &[
            "server-initialize",
            "server-session-lifecycle",
            "ping",
            "tools-list",
            "dns-rebinding-protection",
            "server-sse-multiple-streams",
            "server-sse-polling",
        ],
    ),
    (
        "2026-07-28",
        &[
            "server-stateless",
            "tools-list",
            "dns-rebinding-protection",
            "http-header-validation",
            "caching",
            "server-sse-multiple-streams",
        ],
    ),
];

/// Checks of applicable scenarios that probe what a tools-only server has none of
/// (`scenario:check`), as `tests/conformance.sh` lists them in `NA_CHECKS`.
fn not_applicable() -> Vec<String> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("conformance.sh");
    let text = std::fs::read_to_string(script).expect("tests/conformance.sh");
    let list = text
        .split_once("NA_CHECKS=(")
        .and_then(|(_, rest)| rest.split_once(')'))
        .expect("NA_CHECKS in tests/conformance.sh")
        .0;
    let checks: Vec<String> = list.split_whitespace().map(str::to_owned).collect();
    assert!(!checks.is_empty(), "NA_CHECKS lists the caching checks");
    checks
}

/// The installed conformance suite: the Node binary and the suite's entry point.
struct Suite {
    node: PathBuf,
    entry: PathBuf,
}

/// The suite, from `tests/conformance.sh --install-only`.
fn suite() -> Option<Suite> {
    let node = std::env::var_os("GATEHOUSE_CONFORMANCE_NODE");
    let suite = std::env::var_os("GATEHOUSE_CONFORMANCE_SUITE");
    if let (Some(node), Some(suite)) = (node, suite) {
        return Some(Suite {
            node: node.into(),
            entry: suite.into(),
        });
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "the conformance test needs tests/conformance.sh --install-only's environment in CI"
    );
    eprintln!(
        "conformance against the product: SKIPPED (run `eval \"$(tests/conformance.sh --install-only)\"` first; tests/run does)"
    );
    None
}

/// A port free a moment ago: `serve` must know its port before it starts, to allow the
/// browser origins of its own address.
fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    listener.local_addr().unwrap().port()
}

/// Starts the proxy to `target` adding `token`; returns it and the URL it prints.
fn start_proxy(node: &Path, target: &str, token: &str) -> (Running, String) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("conformance-proxy.js");
    let mut child = Command::new(node)
        .arg(script)
        .env("TARGET", target)
        .env("TOKEN", token)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start the proxy");
    let stdout = child.stdout.take().expect("stdout");
    let mut url = String::new();
    BufReader::new(stdout)
        .read_line(&mut url)
        .expect("the proxy's URL");
    (Running(child), url.trim().to_owned())
}

/// Runs one scenario against `url`; returns its failed checks (those not applicable to this
/// server, and those the suite marks untestable without one of its fixture tools, excepted).
fn failures(
    suite: &Suite,
    url: &str,
    version: &str,
    scenario: &str,
    not_applicable: &[String],
) -> Vec<String> {
    let out = tempfile::tempdir().unwrap();
    let ran = Command::new(&suite.node)
        .arg(&suite.entry)
        .args([
            "server",
            "--url",
            url,
            "--scenario",
            scenario,
            "--spec-version",
            version,
        ])
        .arg("-o")
        .arg(out.path())
        .output()
        .expect("run the suite");
    let results = std::fs::read_dir(out.path())
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path().join("checks.json"))
        .find(|p| p.exists())
        .unwrap_or_else(|| panic!("{scenario} {version} left no checks: {ran:?}"));
    let checks: Vec<Value> = serde_json::from_slice(&std::fs::read(results).unwrap()).unwrap();
    assert!(!checks.is_empty(), "{scenario} {version}: no checks ran");
    checks
        .iter()
        .filter(|c| c["status"] == "FAILURE")
        .filter(|c| {
            let id = format!("{scenario}:{}", c["id"].as_str().unwrap_or(""));
            !not_applicable.contains(&id)
        })
        .filter(|c| c["details"]["untestable"] != Value::Bool(true))
        .map(|c| format!("{version} {scenario} {}: {}", c["id"], c["errorMessage"]))
        .collect()
}

#[test]
fn the_official_suite_passes_against_the_product() {
    let Some(suite) = suite() else { return };
    let dir = tempfile::tempdir().unwrap();
    let place = Place::Folder(dir.path().join("data"));
    let token = cli_token_on(&place);
    let port = free_port();
    let origins = format!("http://127.0.0.1:{port},http://localhost:{port}");
    let addr = format!("127.0.0.1:{port}");
    let (_serve, _) = start_serve_with(&place, &addr, &["--allow-origin", &origins]);
    let (_proxy, url) = start_proxy(&suite.node, &format!("http://{addr}"), &token);
    every_scenario_passes(&suite, &url, "the product");
}

/// Runs every scenario of [`SCENARIOS`] against `url` and fails with the checks that failed.
fn every_scenario_passes(suite: &Suite, url: &str, what: &str) {
    let not_applicable = not_applicable();
    let mut failed = Vec::new();
    let mut passed = 0;
    for (version, scenarios) in SCENARIOS {
        for scenario in *scenarios {
            let found = failures(suite, url, version, scenario, &not_applicable);
            passed += usize::from(found.is_empty());
            failed.extend(found);
        }
    }
    eprintln!("conformance against {what}: {passed} scenarios passed");
    assert!(failed.is_empty(), "{failed:#?}");
}

/// The same suite against a second product (ADR 49): the helpdesk's own `serve`, set up with
/// its own command line.
#[test]
fn the_official_suite_passes_against_the_helpdesk() {
    let Some(suite) = suite() else { return };
    let helpdesk = binary("helpdesk");
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let workspace = [
        "tenant",
        "create",
        "desk",
        "--name",
        "Desk",
        "--zone",
        "Europe/Berlin",
    ];
    let token = program_token(&helpdesk, &data, &workspace);
    let port = free_port();
    let origins = format!("http://127.0.0.1:{port},http://localhost:{port}");
    let addr = format!("127.0.0.1:{port}");
    let (_serve, _, _) = start_binary_serve_with(
        &helpdesk,
        &Place::Folder(data),
        &addr,
        &["--allow-origin", &origins],
    );
    let (_proxy, url) = start_proxy(&suite.node, &format!("http://{addr}"), &token);
    every_scenario_passes(&suite, &url, "the helpdesk");
}
