//! `loadgen`: load an MCP server over HTTP from this process.
//!
//! N clients, each on its own keep-alive HTTP/1.1 connection, send one request after another
//! (no pipelining) for a fixed time or a fixed number of calls; every latency is recorded. At the
//! end it prints a table on stderr and one JSON object on stdout: calls/s, p50, p90, p99, max,
//! errors (HTTP status other than 200, a JSON-RPC error, or a tool result with `isError`).
//!
//!   loadgen --url http://127.0.0.1:8787/mcp --token-file tokens.txt --clients 16 \
//!       --duration 60 --tool create_customer \
//!       --args '{"name":"Load {n}","email":"load.{n}@example.com"}'
//!
//! `{n}` in `--args` becomes a value unique to the call (run, client, sequence), so silent writes
//! are never answered from a replay record. Client `i` uses token `i mod tokens`: give each
//! client its own connection token when the server limits concurrent calls per connection.
//! `--rss-pid` samples that process's resident memory while loading (for footprint checks).

// The report is this program's output.
#![allow(clippy::print_stdout)]

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use bytes::Bytes;
use clap::Parser;
use http_body_util::{BodyExt as _, Full};
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};

#[derive(Debug, Parser)]
#[command(
    name = "loadgen",
    about = "Load an MCP server over HTTP and report latencies"
)]
struct Args {
    /// The MCP endpoint (http only).
    #[arg(long, default_value = "http://127.0.0.1:8787/mcp")]
    url: String,
    /// A bearer token (repeat for more; client i uses token i mod count).
    #[arg(long)]
    token: Vec<String>,
    /// A file with one bearer token per line (added to --token).
    #[arg(long)]
    token_file: Option<PathBuf>,
    /// Concurrent clients, each with its own connection.
    #[arg(long, default_value_t = 1)]
    clients: usize,
    /// Seconds to load (after the warm-up).
    #[arg(long, default_value_t = 10.0)]
    duration: f64,
    /// Seconds of warm-up whose calls are not recorded.
    #[arg(long, default_value_t = 1.0)]
    warmup: f64,
    /// Stop after this many recorded calls (across clients), even before --duration.
    #[arg(long)]
    max_calls: Option<u64>,
    /// The JSON-RPC method: tools/call or tools/list.
    #[arg(long, default_value = "tools/call")]
    method: String,
    /// The tool to call (tools/call).
    #[arg(long, default_value = "get_server_status")]
    tool: String,
    /// The tool's arguments as JSON; `{n}` is replaced by a value unique to the call.
    #[arg(long, default_value = "{}")]
    args: String,
    /// MCP-Protocol-Version to send. 2026-07-28 also sends `_meta` and the Mcp-Method/Mcp-Name
    /// headers; earlier revisions are sent without a handshake (stateless servers answer them).
    #[arg(long, default_value = "2025-06-18")]
    protocol: String,
    /// A label for the report.
    #[arg(long, default_value = "")]
    label: String,
    /// Sample this process's VmRSS every --rss-every-ms while loading.
    #[arg(long)]
    rss_pid: Option<u32>,
    /// Sampling interval for --rss-pid.
    #[arg(long, default_value_t = 250)]
    rss_every_ms: u64,
    /// Count a response as an error unless its body contains this text.
    #[arg(long)]
    expect: Option<String>,
    /// The HTTP status that counts as served (default 200, a JSON-RPC answer that is not an
    /// error): 401 measures refusals, whose body is then only checked against --expect.
    #[arg(long)]
    expect_status: Option<u16>,
    /// Take the next token for each call (across clients) instead of one token per client:
    /// spreads one client's calls over many connections and workspaces, to measure latency
    /// below their rate limits.
    #[arg(long)]
    rotate_tokens: bool,
    /// Print the first few failed responses.
    #[arg(long, default_value_t = 3)]
    show_errors: usize,
    /// Print a latency histogram and when the slow calls (over --slow-ms) ended, on stderr:
    /// calls that end together in bursts point at a pause on the server (a checkpoint, a
    /// stalled thread), spread-out ones at queueing.
    #[arg(long)]
    histogram: bool,
    /// A call at least this slow (ms) is listed with the time it ended (--histogram).
    #[arg(long, default_value_t = 5.0)]
    slow_ms: f64,
}

#[derive(Debug)]
struct Target {
    host: String,
    authority: String,
    path: String,
}

fn parse_url(url: &str) -> anyhow::Result<Target> {
    let uri: http::Uri = url.parse().context("--url is not a URI")?;
    if uri.scheme_str() != Some("http") {
        bail!("--url must be http://");
    }
    let authority = uri.authority().context("--url needs a host")?.to_string();
    let host = if uri.port().is_some() {
        authority.clone()
    } else {
        format!("{authority}:80")
    };
    let path = uri
        .path_and_query()
        .map_or("/".into(), |p| p.as_str().to_owned());
    Ok(Target {
        host,
        authority,
        path,
    })
}

#[derive(Debug)]
struct Shared {
    args: Args,
    target: Target,
    tokens: Vec<String>,
    run: String,
    recording: AtomicBool,
    stop: AtomicBool,
    recorded: AtomicU64,
    shown_errors: AtomicU64,
    /// The process's start: slow calls are timed from it.
    epoch: Instant,
}

#[derive(Debug, Default)]
struct ClientReport {
    latencies_us: Vec<u32>,
    /// When each slow call ended (ms since loadgen started, warm-up included) and its latency (µs).
    slow: Vec<(u64, u32)>,
    errors: u64,
    error_kinds: std::collections::BTreeMap<String, u64>,
    reconnects: u64,
}

fn request_body(shared: &Shared, client: usize, seq: u64) -> anyhow::Result<(Value, String)> {
    let id = seq;
    let mut params = if shared.args.method == "tools/call" {
        let unique = format!("{}-{client}-{seq}", shared.run);
        let text = shared.args.args.replace("{n}", &unique);
        let arguments: Value = serde_json::from_str(&text).context("--args is not JSON")?;
        json!({"name": shared.args.tool, "arguments": arguments})
    } else {
        json!({})
    };
    if shared.args.protocol.as_str() >= "2026" {
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": shared.args.protocol,
            "io.modelcontextprotocol/clientCapabilities": {}
        });
    }
    Ok((
        json!({"jsonrpc": "2.0", "id": id, "method": shared.args.method, "params": params}),
        tool_name_header(shared),
    ))
}

fn tool_name_header(shared: &Shared) -> String {
    if shared.args.method == "tools/call" {
        shared.args.tool.clone()
    } else {
        String::new()
    }
}

/// The parts of a JSON response that say whether it failed. Everything else is scanned and
/// skipped, not built into a tree: a `tools/list` answer is about 100 KB, and the generator
/// must not be what limits the server it measures.
#[derive(serde::Deserialize)]
struct Head {
    error: Option<serde::de::IgnoredAny>,
    result: Option<ResultHead>,
}

#[derive(serde::Deserialize)]
struct ResultHead {
    #[serde(rename = "isError", default)]
    is_error: bool,
}

/// Why a response counts as an error, or `None`.
fn judge(status: http::StatusCode, content_type: &str, body: &[u8]) -> Option<String> {
    if status != http::StatusCode::OK {
        return Some(format!("http {}", status.as_u16()));
    }
    let sse = content_type.starts_with("text/event-stream");
    if !sse {
        match serde_json::from_slice::<Head>(body) {
            Err(_) => return Some("body is not JSON".into()),
            // Only a failure is read whole, for its code.
            Ok(head)
                if head.error.is_none() && !head.result.as_ref().is_some_and(|r| r.is_error) =>
            {
                return None;
            }
            Ok(_) => {}
        }
    }
    let json: Value = if sse {
        // The last `data:` line carrying a JSON-RPC response.
        let text = String::from_utf8_lossy(body);
        let found = text
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
            .rfind(|v| v.get("result").is_some() || v.get("error").is_some());
        match found {
            Some(v) => v,
            None => return Some("sse without a response".into()),
        }
    } else {
        match serde_json::from_slice(body) {
            Ok(v) => v,
            Err(_) => return Some("body is not JSON".into()),
        }
    };
    if let Some(e) = json.get("error") {
        return Some(format!("json-rpc error {}", e["code"]));
    }
    let result = json.get("result")?;
    if result.get("isError").and_then(Value::as_bool) == Some(true) {
        let structured = &result["structuredContent"];
        let kind = structured["code"]
            .as_str()
            .or_else(|| structured["type"].as_str())
            .unwrap_or("tool error");
        return Some(format!("isError {kind}"));
    }
    None
}

async fn connect(target: &Target) -> anyhow::Result<http1::SendRequest<Full<Bytes>>> {
    let stream = tokio::net::TcpStream::connect(&target.host)
        .await
        .with_context(|| format!("connecting to {}", target.host))?;
    stream.set_nodelay(true)?;
    let (sender, conn) = http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(sender)
}

async fn client(shared: Arc<Shared>, index: usize) -> anyhow::Result<ClientReport> {
    let mut report = ClientReport::default();
    let mut sender = connect(&shared.target).await?;
    let mut seq: u64 = 0;
    while !shared.stop.load(Ordering::Relaxed) {
        seq += 1;
        let turn = if shared.args.rotate_tokens {
            index + usize::try_from(seq).unwrap_or(0) * shared.args.clients
        } else {
            index
        };
        let token = shared.tokens.get(turn % shared.tokens.len().max(1));
        let (body, name) = request_body(&shared, index, seq)?;
        let mut request = http::Request::builder()
            .method(http::Method::POST)
            .uri(&shared.target.path)
            .header(http::header::HOST, &shared.target.authority)
            .header(http::header::CONTENT_TYPE, "application/json")
            .header(http::header::ACCEPT, "application/json, text/event-stream")
            .header("mcp-protocol-version", &shared.args.protocol);
        if shared.args.protocol.as_str() >= "2026" {
            request = request.header("mcp-method", &shared.args.method);
            if !name.is_empty() {
                request = request.header("mcp-name", &name);
            }
        }
        if let Some(token) = &token {
            request = request.header(http::header::AUTHORIZATION, format!("Bearer {token}"));
        }
        let request = request.body(Full::new(Bytes::from(body.to_string())))?;
        let recording = shared.recording.load(Ordering::Relaxed);
        let started = Instant::now();
        let outcome = async {
            sender.ready().await?;
            let response = sender.send_request(request).await?;
            let status = response.status();
            let content_type = response
                .headers()
                .get(http::header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_owned();
            let body = response.into_body().collect().await?.to_bytes();
            Ok::<_, anyhow::Error>((status, content_type, body))
        }
        .await;
        let elapsed = started.elapsed();
        let failure = match &outcome {
            Ok((status, content_type, body)) => match shared.args.expect_status {
                Some(wanted) if status.as_u16() == wanted => None,
                Some(wanted) => Some(format!("http {} (not {wanted})", status.as_u16())),
                None => judge(*status, content_type, body),
            }
            .or_else(|| {
                let expected = shared.args.expect.as_deref()?;
                (!contains(body, expected.as_bytes())).then(|| "expected text missing".to_owned())
            })
            .map(|why| (why, body.clone())),
            Err(e) => Some((format!("transport: {e}"), Bytes::new())),
        };
        if outcome.is_err() {
            // The connection is gone: open a new one (counted) and go on.
            report.reconnects += 1;
            sender = connect(&shared.target).await?;
        }
        if !recording {
            if let Some((why, _)) = &failure {
                *report
                    .error_kinds
                    .entry(format!("warm-up: {why}"))
                    .or_default() += 1;
            }
            continue;
        }
        if let Some((why, body)) = failure {
            report.errors += 1;
            *report.error_kinds.entry(why.clone()).or_default() += 1;
            if shared.shown_errors.fetch_add(1, Ordering::Relaxed) < shared.args.show_errors as u64
            {
                let text = String::from_utf8_lossy(&body);
                let text: String = text.chars().take(600).collect();
                eprintln!("loadgen: client {index} call {seq}: {why}: {text}");
            }
        } else {
            let micros = u32::try_from(elapsed.as_micros()).unwrap_or(u32::MAX);
            report.latencies_us.push(micros);
            if elapsed.as_secs_f64() * 1000.0 >= shared.args.slow_ms {
                let ended = shared.epoch.elapsed().as_millis() as u64;
                report.slow.push((ended, micros));
            }
        }
        let done = shared.recorded.fetch_add(1, Ordering::Relaxed) + 1;
        if shared.args.max_calls.is_some_and(|max| done >= max) {
            shared.stop.store(true, Ordering::Relaxed);
        }
    }
    Ok(report)
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    needle.is_empty() || haystack.windows(needle.len()).any(|w| w == needle)
}

fn read_status_kb(pid: u32, field: &str) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
}

fn percentile(sorted: &[u32], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    // Nearest rank.
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    f64::from(sorted[rank.clamp(1, sorted.len()) - 1]) / 1000.0
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let target = parse_url(&args.url)?;
    let mut tokens = args.token.clone();
    if let Some(file) = &args.token_file {
        let text =
            std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
        tokens.extend(
            text.lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .map(str::to_owned),
        );
    }
    if args.clients == 0 {
        bail!("--clients must be at least 1");
    }
    // Unique across loadgen processes started together (the same token through several
    // servers): the clock in nanoseconds and this process's id.
    let run = format!(
        "{:x}p{}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)?
            .as_nanos(),
        std::process::id()
    );
    let shared = Arc::new(Shared {
        target,
        tokens,
        run,
        recording: AtomicBool::new(args.warmup <= 0.0),
        stop: AtomicBool::new(false),
        recorded: AtomicU64::new(0),
        shown_errors: AtomicU64::new(0),
        epoch: Instant::now(),
        args,
    });
    let handles: Vec<_> = (0..shared.args.clients)
        .map(|i| tokio::spawn(client(Arc::clone(&shared), i)))
        .collect();

    if shared.args.warmup > 0.0 {
        tokio::time::sleep(Duration::from_secs_f64(shared.args.warmup)).await;
        shared.recording.store(true, Ordering::Relaxed);
    }
    let started = Instant::now();
    let deadline = started + Duration::from_secs_f64(shared.args.duration);
    // Samples of (recorded calls, VmRSS kB) while loading.
    let mut rss_samples: Vec<(u64, u64)> = Vec::new();
    let tick = Duration::from_millis(shared.args.rss_every_ms.max(10));
    while Instant::now() < deadline && !shared.stop.load(Ordering::Relaxed) {
        tokio::time::sleep(tick.min(deadline.saturating_duration_since(Instant::now()))).await;
        if let Some(pid) = shared.args.rss_pid
            && let Some(rss) = read_status_kb(pid, "VmRSS:")
        {
            rss_samples.push((shared.recorded.load(Ordering::Relaxed), rss));
        }
    }
    shared.stop.store(true, Ordering::Relaxed);
    let elapsed = started.elapsed().as_secs_f64();

    let mut latencies: Vec<u32> = Vec::new();
    let mut slow: Vec<(u64, u32)> = Vec::new();
    let mut errors = 0;
    let mut reconnects = 0;
    let mut kinds: std::collections::BTreeMap<String, u64> = Default::default();
    for handle in handles {
        let report = handle.await??;
        latencies.extend(report.latencies_us);
        slow.extend(report.slow);
        errors += report.errors;
        reconnects += report.reconnects;
        for (k, v) in report.error_kinds {
            *kinds.entry(k).or_default() += v;
        }
    }
    latencies.sort_unstable();
    let ok = latencies.len() as u64;
    let calls = ok + errors;
    let mean = if latencies.is_empty() {
        0.0
    } else {
        latencies.iter().map(|&l| f64::from(l)).sum::<f64>() / latencies.len() as f64 / 1000.0
    };
    let a = &shared.args;
    let mut report = json!({
        "label": a.label,
        "url": a.url,
        "method": a.method,
        "tool": if a.method == "tools/call" { json!(a.tool) } else { Value::Null },
        "protocol": a.protocol,
        "clients": a.clients,
        "connections": shared.tokens.len().min(a.clients),
        "seconds": (elapsed * 100.0).round() / 100.0,
        "calls": calls,
        "ok": ok,
        "errors": errors,
        "error_kinds": kinds,
        "reconnects": reconnects,
        "calls_per_s": ((calls as f64 / elapsed) * 10.0).round() / 10.0,
        "ok_per_s": ((ok as f64 / elapsed) * 10.0).round() / 10.0,
        "latency_ms": {
            "mean": (mean * 1000.0).round() / 1000.0,
            "p50": percentile(&latencies, 50.0),
            "p90": percentile(&latencies, 90.0),
            "p99": percentile(&latencies, 99.0),
            "max": percentile(&latencies, 100.0),
        },
    });
    if let Some(pid) = a.rss_pid {
        let first_10k = rss_samples
            .iter()
            .find(|(n, _)| *n >= 10_000)
            .map(|(_, r)| *r);
        report["rss"] = json!({
            "pid": pid,
            "samples": rss_samples.len(),
            "first_kb": rss_samples.first().map(|(_, r)| *r),
            "at_10000_calls_kb": first_10k,
            "last_kb": rss_samples.last().map(|(_, r)| *r),
            "max_sampled_kb": rss_samples.iter().map(|(_, r)| *r).max(),
            "vm_hwm_kb": read_status_kb(pid, "VmHWM:"),
        });
    }
    eprintln!(
        "{:<28} {:>7} {:>9} {:>9} {:>9} {:>9} {:>7}",
        "run", "clients", "calls", "calls/s", "p50 ms", "p99 ms", "errors"
    );
    eprintln!(
        "{:<28} {:>7} {:>9} {:>9.1} {:>9.3} {:>9.3} {:>7}",
        if a.label.is_empty() {
            &a.tool
        } else {
            &a.label
        },
        a.clients,
        calls,
        calls as f64 / elapsed,
        percentile(&latencies, 50.0),
        percentile(&latencies, 99.0),
        errors
    );
    if a.histogram {
        print_histogram(&latencies);
        print_slow_bursts(&mut slow, a.slow_ms);
    }
    println!("{report}");
    Ok(())
}

/// Calls per latency band (powers of two from 0.25 ms), on stderr.
fn print_histogram(sorted: &[u32]) {
    let mut upper_us = 250_u32;
    let mut from = 0;
    eprintln!("latency histogram (calls ending at most at each bound):");
    while from < sorted.len() {
        let to = sorted.partition_point(|&l| l <= upper_us);
        let share = (to - from) as f64 * 100.0 / sorted.len() as f64;
        eprintln!(
            "  <= {:>8.2} ms {:>9} {:>6.2}%",
            f64::from(upper_us) / 1000.0,
            to - from,
            share
        );
        from = to;
        upper_us = upper_us.saturating_mul(2);
    }
}

/// Slow calls grouped into bursts (ending within 20 ms of each other), on stderr: how many,
/// how far apart, and how slow, so that periodic pauses show.
fn print_slow_bursts(slow: &mut [(u64, u32)], slow_ms: f64) {
    slow.sort_unstable();
    let mut bursts: Vec<(u64, usize, u32)> = Vec::new();
    for &(ended, micros) in slow.iter() {
        match bursts.last_mut() {
            Some((last, count, worst)) if ended - *last <= 20 => {
                *last = ended;
                *count += 1;
                *worst = (*worst).max(micros);
            }
            _ => bursts.push((ended, 1, micros)),
        }
    }
    eprintln!(
        "{} calls over {slow_ms} ms, in {} bursts:",
        slow.len(),
        bursts.len()
    );
    let mut previous: Option<u64> = None;
    for (ended, count, worst) in bursts.iter().take(40) {
        let gap = previous.map_or(String::new(), |p| format!(" (+{} ms)", ended - p));
        eprintln!(
            "  at {ended:>7} ms: {count:>4} calls, worst {:.1} ms{gap}",
            f64::from(*worst) / 1000.0
        );
        previous = Some(*ended);
    }
}

#[cfg(test)]
mod tests {
    use super::judge;

    fn json(body: &str) -> Option<String> {
        judge(http::StatusCode::OK, "application/json", body.as_bytes())
    }

    /// Only the head of a response is read on success, but every failure is still one.
    #[test]
    fn a_response_is_judged_by_its_error_and_is_error_fields() {
        let ok = r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"{}"}],"structuredContent":{"isError":true},"isError":false}}"#;
        assert_eq!(json(ok), None);
        assert_eq!(
            json(r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}"#),
            None
        );
        let tool_error = r#"{"jsonrpc":"2.0","id":1,"result":{"structuredContent":{"code":"rate_limited"},"isError":true}}"#;
        assert_eq!(json(tool_error).as_deref(), Some("isError rate_limited"));
        let rpc_error = r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"bad"}}"#;
        assert_eq!(json(rpc_error).as_deref(), Some("json-rpc error -32602"));
        assert_eq!(json("not json").as_deref(), Some("body is not JSON"));
        assert_eq!(
            judge(
                http::StatusCode::TOO_MANY_REQUESTS,
                "application/json",
                b"{}"
            )
            .as_deref(),
            Some("http 429")
        );
        let sse = "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"isError\":true,\"structuredContent\":{\"code\":\"x\"}}}\n\n";
        assert_eq!(
            judge(http::StatusCode::OK, "text/event-stream", sse.as_bytes()).as_deref(),
            Some("isError x")
        );
    }
}
