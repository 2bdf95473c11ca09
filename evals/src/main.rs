//! `evals`: runs the gatehouse model evaluations and applies the launch gate.
//!
//! ```sh
//! evals run --driver scripted --split dev            # recordings, no network
//! evals run --driver anthropic --model M --split heldout
//! evals run --driver openai --base-url http://127.0.0.1:11434/v1 --model M --split heldout
//! evals validate                                      # scenarios, split, recordings
//! ```
//!
//! Exit status of `run`: 0 gate passed; 1 a gate metric is above zero; 2 a task failed with
//! `--require-success`; 3 the harness could not run a scenario.

// A command-line program: its output is meant for stdout.
#![allow(clippy::print_stdout)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, anyhow, bail};
use clap::{Parser, Subcommand, ValueEnum};
use evals::driver::ModelConfig;
use evals::report::{RunInfo, RunReport};
use evals::runner::{self, DriverKind, Options, ScenarioReport};
use evals::scenario::{self, Recording, Scenario, Split};
use evals::server::{self, Source};

fn evals_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[derive(Debug, Parser)]
#[command(
    name = "evals",
    about = "gatehouse model evaluations and the launch gate"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Runs scenarios against `gatehouse serve` with a driver and writes the report.
    Run(Box<RunArgs>),
    /// Lists the scenarios.
    List(ListArgs),
    /// Checks the scenarios, the split record (SPLIT.md) and the recordings.
    Validate(ListArgs),
    /// Prints a metric's total from a report (for scripts).
    Metric(MetricArgs),
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum DriverArg {
    Scripted,
    Anthropic,
    Openai,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum SplitArg {
    All,
    Dev,
    Heldout,
}

impl SplitArg {
    fn admits(self, s: Split) -> bool {
        match self {
            SplitArg::All => true,
            SplitArg::Dev => s == Split::Dev,
            SplitArg::Heldout => s == Split::Heldout,
        }
    }

    fn name(self) -> &'static str {
        match self {
            SplitArg::All => "all",
            SplitArg::Dev => "dev",
            SplitArg::Heldout => "heldout",
        }
    }
}

#[derive(Debug, clap::Args)]
struct ListArgs {
    /// The scenario folder.
    #[arg(long, default_value_os_t = evals_dir().join("scenarios"))]
    scenarios: PathBuf,
    /// The recordings every scenario must have (`validate`).
    #[arg(long, default_value_os_t = evals_dir().join("recordings/good"))]
    recordings: PathBuf,
    /// Only this split.
    #[arg(long, value_enum, default_value_t = SplitArg::All)]
    split: SplitArg,
}

#[derive(Debug, clap::Args)]
struct MetricArgs {
    /// The report (`report.json`).
    #[arg(long)]
    report: PathBuf,
    /// One scenario's value instead of the total.
    #[arg(long)]
    scenario: Option<String>,
    /// The metric (`duplicates`, `unconfirmed_effects`, `unwanted_effects`, `cross_tenant`,
    /// `generic_errors`, `tool_calls`, ...).
    name: String,
}

#[derive(Debug, clap::Args)]
struct RunArgs {
    /// Who plays the model.
    #[arg(long, value_enum, default_value_t = DriverArg::Scripted)]
    driver: DriverArg,
    /// Which scenarios.
    #[arg(long, value_enum, default_value_t = SplitArg::All)]
    split: SplitArg,
    /// Only these scenarios (repeatable).
    #[arg(long = "scenario")]
    scenario_ids: Vec<String>,
    /// Scripted: only these recordings (file stems, repeatable).
    #[arg(long = "recording")]
    recording_names: Vec<String>,
    /// The scenario folder.
    #[arg(long, default_value_os_t = evals_dir().join("scenarios"))]
    scenarios: PathBuf,
    /// Scripted: the recording folder.
    #[arg(long, default_value_os_t = evals_dir().join("recordings/good"))]
    recordings: PathBuf,
    /// Where `report.json` and `summary.md` go.
    #[arg(long, default_value_os_t = evals_dir().join("../target/evals"))]
    out: PathBuf,
    /// The `gatehouse` binary (default: next to this one, else on the PATH).
    #[arg(long, env = "GATEHOUSE_BIN")]
    gatehouse: Option<PathBuf>,
    /// Use a running server at this `/mcp` URL instead of a fresh one per scenario (its
    /// state carries over between scenarios, so run one scenario per fresh server).
    #[arg(long, requires = "connections")]
    url: Option<String>,
    /// With `--url`: that server's `demo-connections.json` (the harness reads final state
    /// with each tenant's owner connection).
    #[arg(long)]
    connections: Option<PathBuf>,
    /// With `--url`: the model's MCP token instead of the scenario's demo connection.
    #[arg(
        long,
        env = "EVALS_MCP_TOKEN",
        hide_env_values = true,
        requires = "url"
    )]
    token: Option<String>,
    /// The model name (anthropic, openai).
    #[arg(long, env = "EVALS_MODEL")]
    model: Option<String>,
    /// The API base URL (default: https://api.anthropic.com, or ANTHROPIC_BASE_URL;
    /// http://127.0.0.1:11434/v1, or OPENAI_BASE_URL).
    #[arg(long, env = "EVALS_BASE_URL")]
    base_url: Option<String>,
    /// The environment variable holding the API key (default: ANTHROPIC_API_KEY or
    /// OPENAI_API_KEY).
    #[arg(long)]
    api_key_env: Option<String>,
    /// Most tokens per model response.
    #[arg(long, default_value_t = 2048)]
    max_tokens: u32,
    /// Sampling temperature.
    #[arg(long)]
    temperature: Option<f64>,
    /// Seconds per model request.
    #[arg(long, default_value_t = 300)]
    request_timeout: u64,
    /// Most tool calls per scenario.
    #[arg(long, default_value_t = 40)]
    max_tool_calls: usize,
    /// Most model turns per scenario.
    #[arg(long, default_value_t = 60)]
    max_turns: usize,
    /// Most answers of the simulated user per scenario.
    #[arg(long, default_value_t = 4)]
    max_user_replies: usize,
    /// Scenarios run at once (each on its own server).
    #[arg(long, default_value_t = 1)]
    jobs: usize,
    /// Exit 2 when a task fails its checks (the gate alone decides otherwise).
    #[arg(long)]
    require_success: bool,
    /// A label for the report.
    #[arg(long)]
    label: Option<String>,
}

#[tokio::main(flavor = "multi_thread")]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(args) => run(*args).await,
        Command::List(args) => list(&args).map(|()| ExitCode::SUCCESS),
        Command::Validate(args) => validate(&args),
        Command::Metric(args) => metric(&args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            println!("evals: {e:#}");
            ExitCode::from(3)
        }
    }
}

fn list(args: &ListArgs) -> anyhow::Result<()> {
    for s in scenario::load_scenarios(&args.scenarios)? {
        if args.split.admits(s.split) {
            println!(
                "{:<40} {:<8} {}/{}/{}  [{}]  {}",
                s.id,
                s.split.as_str(),
                s.tenant,
                s.role,
                s.toolset,
                s.tags.join(","),
                s.title
            );
        }
    }
    Ok(())
}

/// Which scenario ids SPLIT.md lists under `## dev` and `## heldout`.
fn split_record(path: &Path) -> anyhow::Result<(BTreeSet<String>, BTreeSet<String>)> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let (mut dev, mut heldout) = (BTreeSet::new(), BTreeSet::new());
    let mut section = "";
    for line in text.lines() {
        if let Some(h) = line.strip_prefix("## ") {
            section = if h.trim().starts_with("Development") || h.trim() == "dev" {
                "dev"
            } else if h.trim().starts_with("Held-out") || h.trim() == "heldout" {
                "heldout"
            } else {
                ""
            };
            continue;
        }
        if let Some(rest) = line.trim_start().strip_prefix("- `")
            && let Some((id, _)) = rest.split_once('`')
        {
            match section {
                "dev" => dev.insert(id.to_owned()),
                "heldout" => heldout.insert(id.to_owned()),
                _ => false,
            };
        }
    }
    Ok((dev, heldout))
}

fn validate(args: &ListArgs) -> anyhow::Result<ExitCode> {
    let scenarios = scenario::load_scenarios(&args.scenarios)?;
    let recordings = scenario::load_recordings(&args.recordings)?;
    let mut problems = scenario::validate(&scenarios, &recordings);
    let split_md = args
        .scenarios
        .parent()
        .unwrap_or(Path::new("."))
        .join("SPLIT.md");
    let (dev, heldout) = split_record(&split_md)?;
    for s in &scenarios {
        let listed = match s.split {
            Split::Dev => dev.contains(&s.id),
            Split::Heldout => heldout.contains(&s.id),
        };
        if !listed {
            problems.push(format!(
                "{} is {} but SPLIT.md does not list it there",
                s.id,
                s.split.as_str()
            ));
        }
    }
    for id in dev.iter().chain(heldout.iter()) {
        if !scenarios.iter().any(|s| &s.id == id) {
            problems.push(format!("SPLIT.md lists unknown scenario {id}"));
        }
    }
    let count = |sp: Split| scenarios.iter().filter(|s| s.split == sp).count();
    println!(
        "{} scenarios ({} dev, {} heldout), {} recordings",
        scenarios.len(),
        count(Split::Dev),
        count(Split::Heldout),
        recordings.len()
    );
    if problems.is_empty() {
        println!("valid");
        Ok(ExitCode::SUCCESS)
    } else {
        for p in &problems {
            println!("problem: {p}");
        }
        Ok(ExitCode::from(1))
    }
}

fn metric(args: &MetricArgs) -> anyhow::Result<ExitCode> {
    let text = std::fs::read_to_string(&args.report)
        .with_context(|| format!("reading {}", args.report.display()))?;
    let report: serde_json::Value = serde_json::from_str(&text)?;
    let value = match &args.scenario {
        None => report.pointer(&format!("/totals/metrics/{}", args.name)),
        Some(id) => report
            .get("scenarios")
            .and_then(|s| s.as_array())
            .and_then(|list| {
                list.iter()
                    .find(|s| s.get("id").and_then(|v| v.as_str()) == Some(id))
            })
            .and_then(|s| s.pointer(&format!("/metrics/{}", args.name))),
    }
    .ok_or_else(|| anyhow!("no metric {} in {}", args.name, args.report.display()))?;
    println!("{value}");
    Ok(ExitCode::SUCCESS)
}

fn model_config(args: &RunArgs, kind: DriverArg) -> anyhow::Result<ModelConfig> {
    let (default_base, base_env, key_env) = match kind {
        DriverArg::Anthropic => (
            "https://api.anthropic.com",
            "ANTHROPIC_BASE_URL",
            "ANTHROPIC_API_KEY",
        ),
        _ => (
            "http://127.0.0.1:11434/v1",
            "OPENAI_BASE_URL",
            "OPENAI_API_KEY",
        ),
    };
    let model = args
        .model
        .clone()
        .ok_or_else(|| anyhow!("--model (or EVALS_MODEL) is required for this driver"))?;
    let base_url = args
        .base_url
        .clone()
        .or_else(|| std::env::var(base_env).ok())
        .unwrap_or_else(|| default_base.to_owned());
    let key_var = args
        .api_key_env
        .clone()
        .unwrap_or_else(|| key_env.to_owned());
    let api_key = std::env::var(&key_var).ok().filter(|k| !k.is_empty());
    if matches!(kind, DriverArg::Anthropic) && api_key.is_none() && base_url.starts_with("https://")
    {
        bail!("{key_var} is not set (the Anthropic driver reads its API key from it)");
    }
    Ok(ModelConfig {
        model,
        base_url,
        api_key,
        max_tokens: args.max_tokens,
        temperature: args.temperature,
        timeout: Duration::from_secs(args.request_timeout),
    })
}

async fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    let started_at = chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string();
    let driver = match args.driver {
        DriverArg::Scripted => DriverKind::Scripted,
        DriverArg::Anthropic => DriverKind::Anthropic(model_config(&args, args.driver)?),
        DriverArg::Openai => DriverKind::OpenAi(model_config(&args, args.driver)?),
    };
    let scenarios = scenario::load_scenarios(&args.scenarios)?;
    let selected: Vec<&Scenario> = scenarios
        .iter()
        .filter(|s| args.split.admits(s.split))
        .filter(|s| args.scenario_ids.is_empty() || args.scenario_ids.contains(&s.id))
        .collect();
    for id in &args.scenario_ids {
        if !scenarios.iter().any(|s| &s.id == id) {
            bail!("no scenario {id}");
        }
    }
    // Episodes: (scenario, recording).
    let mut episodes: Vec<(Scenario, Option<Recording>)> = Vec::new();
    let mut missing: Vec<ScenarioReport> = Vec::new();
    match args.driver {
        DriverArg::Scripted => {
            let recordings = scenario::load_recordings(&args.recordings)?;
            for name in &args.recording_names {
                if !recordings.iter().any(|r| &r.name == name) {
                    bail!("no recording {name} in {}", args.recordings.display());
                }
            }
            for s in &selected {
                let mine: Vec<&Recording> = recordings
                    .iter()
                    .filter(|r| r.scenario == s.id)
                    .filter(|r| {
                        args.recording_names.is_empty() || args.recording_names.contains(&r.name)
                    })
                    .collect();
                if mine.is_empty() && args.recording_names.is_empty() {
                    // Every selected scenario must be played: a missing recording fails the run.
                    missing.push(no_recording(s, &args.recordings));
                }
                for r in mine {
                    episodes.push(((*s).clone(), Some(r.clone())));
                }
            }
        }
        _ => {
            for s in &selected {
                episodes.push(((*s).clone(), None));
            }
        }
    }
    if episodes.is_empty() && missing.is_empty() {
        bail!("nothing to run (check --split, --scenario and --recording)");
    }
    let (source, server_desc) = match (&args.url, &args.connections) {
        (Some(url), Some(file)) => {
            if episodes.len() > 1 {
                println!(
                    "evals: note: {} scenarios share the server at {url}; each expects the freshly seeded demo state",
                    episodes.len()
                );
            }
            (
                Source::external(url, file)?,
                format!("existing server {url}"),
            )
        }
        _ => {
            let binary = args
                .gatehouse
                .clone()
                .unwrap_or_else(server::default_binary);
            let source = tokio::task::block_in_place(|| Source::fresh(&binary))
                .with_context(|| format!("seeding a template with {}", binary.display()))?;
            (
                source,
                format!("fresh `{} serve` per scenario", binary.display()),
            )
        }
    };
    let options = Options {
        driver,
        max_tool_calls: args.max_tool_calls,
        max_turns: args.max_turns,
        max_user_replies: args.max_user_replies,
        token_override: args.token.clone(),
    };
    let model_name = match &options.driver {
        DriverKind::Scripted => "scripted".to_owned(),
        DriverKind::Anthropic(c) | DriverKind::OpenAi(c) => c.model.clone(),
    };
    println!(
        "evals: {} episode(s), driver {}, split {}",
        episodes.len(),
        model_name,
        args.split.name()
    );
    let source = Arc::new(source);
    let options = Arc::new(options);
    let mut set = tokio::task::JoinSet::new();
    let mut results: Vec<(usize, ScenarioReport)> = Vec::new();
    for (i, (scenario, recording)) in episodes.into_iter().enumerate() {
        while set.len() >= args.jobs.max(1) {
            if let Some(done) = set.join_next().await {
                let (i, r): (usize, ScenarioReport) = done.context("a scenario task")?;
                print_progress(&r);
                results.push((i, r));
            }
        }
        let (source, options) = (Arc::clone(&source), Arc::clone(&options));
        set.spawn(async move {
            let r = runner::run(&source, &scenario, recording.as_ref(), &options).await;
            (i, r)
        });
    }
    while let Some(done) = set.join_next().await {
        let (i, r) = done.context("a scenario task")?;
        print_progress(&r);
        results.push((i, r));
    }
    results.sort_by_key(|(i, _)| *i);
    let mut reports: Vec<ScenarioReport> = results.into_iter().map(|(_, r)| r).collect();
    for m in &missing {
        print_progress(m);
    }
    reports.extend(missing);
    let report = RunReport::new(
        RunInfo {
            driver: format!("{:?}", args.driver).to_lowercase(),
            model: model_name,
            split: args.split.name().to_owned(),
            label: args.label.clone(),
            server: server_desc,
            started_at,
            duration_ms: started.elapsed().as_millis() as u64,
        },
        reports,
    );
    report.write(&args.out)?;
    let t = &report.totals;
    if t.harness_errors > 0 {
        println!(
            "evals: the harness could not run {} scenario(s); see above",
            t.harness_errors
        );
    }
    println!(
        "evals: task success {}/{}; gate {}: {}",
        t.succeeded,
        t.scenarios,
        if report.gate.passed {
            "PASSED"
        } else {
            "FAILED"
        },
        report
            .gate
            .metrics
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ")
    );
    println!(
        "evals: tool calls {}, tokens {}; report {}",
        t.metrics.tool_calls,
        t.metrics.input_tokens + t.metrics.output_tokens,
        args.out.join("report.json").display()
    );
    Ok(if t.harness_errors > 0 {
        ExitCode::from(3)
    } else if !report.gate.failing.is_empty() {
        ExitCode::from(1)
    } else if args.require_success && t.succeeded < t.scenarios {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    })
}

fn no_recording(s: &Scenario, dir: &Path) -> ScenarioReport {
    ScenarioReport {
        id: s.id.clone(),
        recording: None,
        split: s.split.as_str().into(),
        title: s.title.clone(),
        tags: s.tags.clone(),
        connection: format!("{}/{}/{}", s.tenant, s.role, s.toolset),
        user: s.user.clone(),
        success: false,
        gate_ok: false,
        metrics: Default::default(),
        findings: Vec::new(),
        checks: Vec::new(),
        harness_error: Some(format!("no recording for it in {}", dir.display())),
        stopped: None,
        duration_ms: 0,
        transcript: Vec::new(),
    }
}

fn print_progress(r: &ScenarioReport) {
    let verdict = if r.harness_error.is_some() {
        "ERROR"
    } else if !r.gate_ok {
        "GATE"
    } else if r.success {
        "ok"
    } else {
        "FAIL"
    };
    let name = match &r.recording {
        Some(rec) => format!("{} ({rec})", r.id),
        None => r.id.clone(),
    };
    let m = &r.metrics;
    println!(
        "  {verdict:<5} {name:<48} {:>2} calls {:>5.1}s",
        m.tool_calls,
        r.duration_ms as f64 / 1000.0,
    );
    if let Some(e) = &r.harness_error {
        println!("        harness: {e}");
    }
    for f in &r.findings {
        println!("        {f}");
    }
    for c in r.checks.iter().filter(|c| !c.passed) {
        println!(
            "        check failed: {} — {}",
            c.check,
            evals::truncate(&c.detail, 240)
        );
    }
}
