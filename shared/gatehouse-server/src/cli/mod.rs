//! The `gatehouse` command line for any product: run the MCP server on this machine (HTTP or
//! stdio) and administer it: workspaces, members, operators, connections and tokens, the kill
//! switch. A product's binary is `gatehouse_server::cli::run(MyProduct::shared())`.

// The administration commands answer on stdout; that is their output, not logging. (`stdio`
// writes the protocol through tokio's stdout handle, never through these macros.)
#![allow(clippy::print_stdout)]

mod background;
mod connection_limits;
mod deliveries;
mod demo;
mod dynamo;
mod edge;
mod expiry;
mod metrics;
mod scaffold;
mod shutdown;

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context as _, bail};
use app::Product;
use clap::{Args, CommandFactory as _, FromArgMatches as _, Parser, Subcommand, ValueEnum};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use identity::{Actor, Channel, NewConnection};
use mcp_pipeline::Toolset;
use serde_json::json;
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};

#[derive(Debug, Parser)]
#[command(name = "gatehouse", version, about = "The gatehouse MCP server")]
struct Cli {
    #[command(flatten)]
    store: StoreArgs,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Args)]
struct StoreArgs {
    /// Folder of the embedded store (created on first run). Default: one folder per user,
    /// where the platform keeps application data (on Linux `$XDG_DATA_HOME/gatehouse` or
    /// `~/.local/share/gatehouse`), so that `serve`, `stdio` and the admin commands share it
    /// from whatever folder they are started in.
    #[arg(long, env = "GATEHOUSE_DATA_DIR", global = true)]
    data_dir: Option<PathBuf>,
    /// Use this DynamoDB table instead of the embedded store.
    #[arg(long, env = "GATEHOUSE_TABLE", global = true)]
    dynamodb_table: Option<String>,
    /// DynamoDB endpoint override (a local DynamoDB-compatible server).
    #[arg(long, env = "GATEHOUSE_DYNAMODB_ENDPOINT", global = true)]
    dynamodb_endpoint: Option<String>,
    /// Administer an edge deployment's store (the Worker's URL) instead of the embedded store;
    /// the deployment's admin token comes from GATEHOUSE_EDGE_ADMIN_TOKEN.
    #[arg(
        long,
        env = "GATEHOUSE_EDGE_URL",
        global = true,
        conflicts_with = "dynamodb_table"
    )]
    edge_url: Option<String>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve MCP over HTTP on this machine (POST http://ADDR/mcp).
    Serve(ServeArgs),
    /// Speak newline-delimited JSON-RPC on stdin/stdout; the MCP token comes from GATEHOUSE_TOKEN.
    Stdio,
    /// The outbox: deliver what is due, list the dead letters, requeue one.
    Outbox {
        #[command(subcommand)]
        command: deliveries::OutboxCommand,
    },
    /// Workspaces (tenants): create one with its zone and the product's settings, list them.
    Tenant {
        #[command(subcommand)]
        command: TenantCommand,
    },
    /// Members of a workspace, their passwords and product API tokens.
    Member {
        #[command(subcommand)]
        command: MemberCommand,
    },
    /// Operators: global identities (no tenant) who sign in at /app/operator/login and may
    /// set the global kill switch there.
    Operator {
        #[command(subcommand)]
        command: OperatorCommand,
    },
    /// The demo (the product's demo workspaces and an operator, whose passwords are
    /// published): remove it
    /// from this store so that real workspaces may be made in it.
    Demo {
        #[command(subcommand)]
        command: demo::DemoCommand,
    },
    /// An edge deployment's store objects (--edge-url): export them as JSON Lines, import
    /// them back, or move a deployment made before ADR 51 into one object per workspace.
    Edge {
        #[command(subcommand)]
        command: edge::EdgeCommand,
    },
    /// MCP connections and their tokens.
    Token {
        #[command(subcommand)]
        command: TokenCommand,
    },
    /// The global kill switch: `on` stops every agent call with 503.
    KillSwitch(Flip),
    /// The DynamoDB table: create it (with time-to-live) on a local DynamoDB-compatible server.
    Dynamodb {
        #[command(subcommand)]
        command: DynamodbCommand,
    },
    /// Writes what tools/list returns for each toolset (core, standard, full) with every right.
    Manifest {
        /// Folder for core.json, standard.json and full.json; without it, print them.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Writes a new product crate behind gatehouse into DIR: one tool of each effect class,
    /// its tests and its binary.
    New {
        /// The folder to write (new, or empty).
        dir: PathBuf,
        /// The product's name: lower-case letters, digits and hyphens (e.g. acme-notes).
        #[arg(long)]
        name: String,
        /// The gatehouse checkout it depends on (default: the one this program was built
        /// from).
        #[arg(long, value_name = "PATH")]
        gatehouse: Option<PathBuf>,
    },
    /// Checks tools/list dumps against the tool rules (names, hints, schemas, descriptions).
    CheckManifest {
        /// Dumps to check (a tools/list result or a manifest file).
        files: Vec<PathBuf>,
        /// At most this many tools (use 20 for the core toolset).
        #[arg(long)]
        max_tools: Option<usize>,
        /// Check as the core toolset: at most 20 tools and short descriptions (240
        /// characters); --max-tools still wins.
        #[arg(long)]
        core: bool,
        /// Prove the checker catches each defect class, then exit.
        #[arg(long)]
        self_test: bool,
        /// A name prefix of the product's tools that reach people (beside send_, page_,
        /// reply_ and the other generic ones), e.g. `cancel_`; may be repeated.
        #[arg(long, value_name = "PREFIX")]
        reach_prefix: Vec<String>,
    },
    /// A tenant's agent access (off answers 503 to that tenant's connections).
    AgentAccess {
        /// on or off, or status to print it.
        state: SwitchState,
        /// The workspace (tenant) id, as `tenant list` shows it.
        #[arg(long, value_parser = crate::cli::tenant_id)]
        tenant: store::TenantId,
        /// The member doing it (needs agent_access:manage to change it).
        #[arg(long, value_parser = crate::cli::member_id)]
        member: store::MemberId,
    },
    /// Where a tenant's agents' actions are approved, per effect class: `client` (the client
    /// prompts or elicits) or `product` (only through the approval link). Without a class and
    /// a mode, prints the current modes.
    ApprovalMode {
        /// notify, wake, alerting or delete.
        class: Option<ApprovalClass>,
        /// client or product.
        mode: Option<Approval>,
        /// The workspace (tenant) id, as `tenant list` shows it.
        #[arg(long, value_parser = crate::cli::tenant_id)]
        tenant: store::TenantId,
        /// The member doing it (needs agent_access:manage to change a mode).
        #[arg(long, value_parser = crate::cli::member_id)]
        member: store::MemberId,
    },
}

/// Where a person approves prepared actions (ADR 15).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Approval {
    /// In the client (its prompt on confirm_action, or elicitation).
    Client,
    /// Only in the product, through the approval link.
    Product,
}

impl Approval {
    fn mode(self) -> mcp_pipeline::ApprovalMode {
        match self {
            Approval::Client => mcp_pipeline::ApprovalMode::Client,
            Approval::Product => mcp_pipeline::ApprovalMode::Product,
        }
    }
}

/// The effect classes whose actions are approved before they execute.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ApprovalClass {
    Notify,
    Wake,
    Alerting,
    Delete,
}

impl ApprovalClass {
    fn effect(self) -> mcp_pipeline::EffectClass {
        match self {
            ApprovalClass::Notify => mcp_pipeline::EffectClass::Notify,
            ApprovalClass::Wake => mcp_pipeline::EffectClass::Wake,
            ApprovalClass::Alerting => mcp_pipeline::EffectClass::Alerting,
            ApprovalClass::Delete => mcp_pipeline::EffectClass::Delete,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum SwitchState {
    On,
    Off,
    Status,
}

#[derive(Debug, Args)]
struct ServeArgs {
    /// Address to listen on (loopback by default: this is a local server).
    #[arg(long, env = "GATEHOUSE_ADDR", default_value = "127.0.0.1:8787", value_parser = an_address)]
    addr: SocketAddr,
    /// The URL clients reach this server at (`http://192.168.1.20:8787`, or an https URL in
    /// front of it): the base of the links in answers (records, approvals) and of what serve
    /// prints. Default: the listening address, or 127.0.0.1 (::1) when it listens on all
    /// addresses. An https URL makes the pages' cookies Secure.
    #[arg(long, env = "GATEHOUSE_PUBLIC_URL", value_parser = a_public_url)]
    public_url: Option<String>,
    /// An Origin allowed to call the endpoint (repeat for more); others get 403.
    #[arg(
        long = "allow-origin",
        env = "GATEHOUSE_ALLOWED_ORIGINS",
        value_delimiter = ',',
        value_parser = an_origin
    )]
    allowed_origins: Vec<String>,
    /// Accept OAuth access tokens from this issuer (with --oauth-resource, and the issuer's keys
    /// by --oauth-jwks-url or --oauth-jwks).
    #[arg(long, env = "GATEHOUSE_OAUTH_ISSUER")]
    oauth_issuer: Option<String>,
    /// This server's resource URL, the audience OAuth tokens must carry.
    #[arg(long, env = "GATEHOUSE_OAUTH_RESOURCE")]
    oauth_resource: Option<String>,
    /// A file with the issuer's JSON Web Key Set.
    #[arg(
        long,
        env = "GATEHOUSE_OAUTH_JWKS_FILE",
        conflicts_with = "oauth_jwks_url"
    )]
    oauth_jwks: Option<PathBuf>,
    /// The issuer's key set URL (its `jwks_uri`): fetched when first needed, kept at most ten
    /// minutes, fetched again (at most once a minute) for a key id it lacks.
    #[arg(long, env = "GATEHOUSE_OAUTH_JWKS_URL")]
    oauth_jwks_url: Option<String>,
    /// The claim that names the tenant.
    #[arg(long, env = "GATEHOUSE_OAUTH_TENANT_CLAIM", default_value = "tenant")]
    oauth_tenant_claim: String,
    /// Also accept access tokens typed `JWT` (or not typed), for an issuer that does not type
    /// them `at+jwt` as RFC 9068 says.
    #[arg(long)]
    oauth_accept_untyped: bool,
    /// Do not seed the demo tenants into an empty store, now or at any later start on this
    /// store (a new data folder seeds again).
    #[arg(long)]
    no_demo: bool,
    /// Seed the demo as it would be seeded on this day (YYYY-MM-DD) instead of today, so that
    /// its records fall on known dates: the evaluations name them by date.
    #[arg(long, value_name = "DAY", conflicts_with = "no_demo", value_parser = a_day_ahead)]
    demo_as_of: Option<chrono::NaiveDate>,
    /// Seconds a client may take to send a request's head, from its first byte; past it the
    /// connection closes.
    #[arg(long, value_name = "SECONDS", default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=600))]
    header_timeout: u64,
    /// Seconds a connection may stay open with no request in progress.
    #[arg(long, value_name = "SECONDS", default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..=3600))]
    idle_timeout: u64,
    /// Connections open at once; further ones wait until one closes.
    #[arg(long, value_name = "N", default_value_t = 512, value_parser = clap::value_parser!(u32).range(1..=65_536))]
    max_connections: u32,
    /// Also answer a Prometheus scrape (`GET /metrics`) on this address, never on the MCP
    /// port: tool calls by tool and outcome, and their durations. Off unless given.
    #[arg(long, env = "GATEHOUSE_METRICS_ADDR", value_name = "ADDR", value_parser = an_address)]
    metrics_addr: Option<SocketAddr>,
    /// Benchmarks only (a build with the `bench` feature): multiply every rate limit (per
    /// connection, per tenant, per object) by this factor. Every gate stays on; windows and
    /// concurrency slots are unchanged. 1 (the default) keeps the normal limits; serve says so
    /// on stderr when it is raised. A release build has no way to raise them (ADR 48).
    #[cfg(feature = "bench")]
    #[arg(long, env = "GATEHOUSE_RATE_LIMIT_SCALE", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    rate_limit_scale: u32,
    /// Benchmarks only: also serve `bench_fixed_1kb`, a read tool returning a fixed 1 KB
    /// payload (for the side-by-side with other MCP SDKs).
    #[arg(long)]
    bench_tool: bool,
    /// Tests only (a build with the `test-tool` feature): also serve `test_panic_tool`, whose
    /// body panics (the launch gate's proof that a server failure fails it).
    #[cfg(feature = "test-tool")]
    #[arg(long, env = "GATEHOUSE_TEST_PANIC_TOOL", hide = true, action = clap::ArgAction::SetTrue, value_parser = clap::builder::BoolishValueParser::new())]
    test_panic_tool: bool,
}

#[derive(Debug, Subcommand)]
enum MemberCommand {
    /// Adds a member to a workspace that exists, or changes their role and active flag
    /// (audited).
    Set {
        /// The workspace (tenant) id, as `tenant list` shows it.
        #[arg(long, value_parser = crate::cli::tenant_id)]
        tenant: store::TenantId,
        /// The member id (who does it, or whose it is).
        #[arg(long, value_parser = crate::cli::member_id)]
        member: store::MemberId,
        /// One of the product's roles (the booking product's: owner, admin, dispatcher or
        /// viewer).
        #[arg(long)]
        role: String,
        /// Deactivate the member (their connections stop working).
        #[arg(long, conflicts_with = "active")]
        inactive: bool,
        /// Activate a deactivated member again. Without either flag, a member keeps what they
        /// are (a new one is active).
        #[arg(long)]
        active: bool,
    },
    /// Sets a member's sign-in password for the product's pages, read from the first line of
    /// stdin so that it stays out of the shell history and the process list (audited).
    Password {
        /// The workspace (tenant) id, as `tenant list` shows it.
        #[arg(long, value_parser = crate::cli::tenant_id)]
        tenant: store::TenantId,
        /// The member id (who does it, or whose it is).
        #[arg(long, value_parser = crate::cli::member_id)]
        member: store::MemberId,
    },
    /// Product API tokens (for /api/..., never accepted at /mcp): create, list, revoke.
    ApiToken {
        #[command(subcommand)]
        command: ApiTokenCommand,
    },
    /// Lets a member whose sign-ins wait after failures sign in again at once (audited); a
    /// new password does the same.
    Unlock {
        /// The workspace (tenant) id, as `tenant list` shows it.
        #[arg(long, value_parser = crate::cli::tenant_id)]
        tenant: store::TenantId,
        /// The member id.
        #[arg(long, value_parser = crate::cli::member_id)]
        member: store::MemberId,
    },
    /// Removes a member: every credential they made (connections, API tokens, sessions)
    /// stops working for good, even if the id is added again (audited).
    Remove {
        /// The workspace (tenant) id, as `tenant list` shows it.
        #[arg(long, value_parser = crate::cli::tenant_id)]
        tenant: store::TenantId,
        /// The member id (who does it, or whose it is).
        #[arg(long, value_parser = crate::cli::member_id)]
        member: store::MemberId,
    },
}

#[derive(Debug, Subcommand)]
enum ApiTokenCommand {
    /// Creates a token acting as the member and prints it once.
    Create {
        /// The workspace (tenant) id, as `tenant list` shows it.
        #[arg(long, value_parser = crate::cli::tenant_id)]
        tenant: store::TenantId,
        /// The member id (who does it, or whose it is).
        #[arg(long, value_parser = crate::cli::member_id)]
        member: store::MemberId,
        /// How long it lasts, in days (1 to 365).
        #[arg(long, default_value_t = accounts::api_tokens::DEFAULT_VALID_DAYS)]
        days: u32,
    },
    /// Lists a workspace's tokens (never their secrets).
    List {
        /// The workspace (tenant) id, as `tenant list` shows it.
        #[arg(long, value_parser = crate::cli::tenant_id)]
        tenant: store::TenantId,
    },
    /// Revokes a token: it stops working on the next request.
    Revoke {
        /// The workspace (tenant) id, as `tenant list` shows it.
        #[arg(long, value_parser = crate::cli::tenant_id)]
        tenant: store::TenantId,
        /// The token's id (`tok_...`).
        id: String,
    },
}

#[derive(Debug, Subcommand)]
enum TenantCommand {
    /// Creates a workspace with its time zone and the settings the product asks for
    /// (audited).
    Create {
        /// The workspace id: 2 to 40 lower-case letters, digits and hyphens.
        id: String,
        /// The company's name.
        #[arg(long)]
        name: String,
        /// IANA time zone, e.g. Europe/Berlin.
        #[arg(long)]
        zone: String,
        /// The product's settings, one flag each (`Product::workspace_settings`), added to
        /// the command when it is built.
        #[arg(skip)]
        settings: BTreeMap<String, String>,
    },
    /// Lists the workspaces.
    List,
}

#[derive(Debug, Subcommand)]
enum OperatorCommand {
    /// Creates an operator with a sign-in password (audited in the global trail).
    Create {
        /// The operator's email (their sign-in name).
        #[arg(long)]
        email: String,
        /// Read the password (at least 8 characters) from the first line of stdin, so that
        /// it stays out of the shell history and the process list.
        #[arg(long)]
        password_stdin: bool,
    },
    /// Sets an operator's password from the first line of stdin; their sessions end
    /// (audited).
    Password {
        /// The operator's email.
        #[arg(long)]
        email: String,
    },
    /// Removes an operator; their sessions end (audited).
    Remove {
        /// The operator's email.
        #[arg(long)]
        email: String,
    },
}

/// `token create`'s arguments.
#[derive(Debug, Args)]
struct NewToken {
    /// The workspace (tenant) id, as `tenant list` shows it.
    #[arg(long, value_parser = crate::cli::tenant_id)]
    tenant: store::TenantId,
    /// The member creating it; the connection never has more rights than they do.
    #[arg(long, value_parser = crate::cli::member_id)]
    member: store::MemberId,
    /// The client it is for ("Claude Desktop on Ana's laptop").
    #[arg(long)]
    client: String,
    /// Rights to grant, comma-separated (default: all of the member's current rights).
    #[arg(long, value_delimiter = ',')]
    rights: Vec<String>,
    /// core, standard or full.
    #[arg(long, default_value = "standard")]
    toolset: String,
    /// Where this connection's actions are approved: `client` (the tenant's modes) or
    /// `product` (every action through the approval link: for clients that never prompt).
    #[arg(long, value_enum, default_value = "client")]
    approval: Approval,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Subcommand)]
enum TokenCommand {
    /// Creates a connection and prints its MCP token once.
    Create(NewToken),
    /// Lists a tenant's connections (never their tokens).
    List {
        /// The workspace (tenant) id, as `tenant list` shows it.
        #[arg(long, value_parser = crate::cli::tenant_id)]
        tenant: store::TenantId,
        #[arg(long)]
        json: bool,
    },
    /// Revokes a connection: its token stops working on the next request.
    Revoke {
        /// The workspace (tenant) id, as `tenant list` shows it.
        #[arg(long, value_parser = crate::cli::tenant_id)]
        tenant: store::TenantId,
        /// The member revoking it (needs connections:manage).
        #[arg(long, value_parser = crate::cli::member_id)]
        member: store::MemberId,
        /// The connection id (`con_...`).
        #[arg(value_parser = crate::cli::connection_id)]
        connection: store::ConnectionId,
        #[arg(long)]
        json: bool,
    },
}

impl StoreArgs {
    /// The embedded store's folder: the one given, or the user's default.
    fn data_dir(&self) -> PathBuf {
        self.data_dir.clone().unwrap_or_else(default_data_dir)
    }

    /// The options that name this store, as a command line repeats them (none for the default
    /// folder): what printed commands and stdio configurations carry to act on the same store.
    fn args(&self) -> Vec<String> {
        let mut args = Vec::new();
        let mut add = |name: &str, value: String| args.extend([format!("--{name}"), value]);
        if let Some(url) = &self.edge_url {
            add("edge-url", url.clone());
        } else if let Some(table) = &self.dynamodb_table {
            add("dynamodb-table", table.clone());
            if let Some(endpoint) = &self.dynamodb_endpoint {
                add("dynamodb-endpoint", endpoint.clone());
            }
        } else if let Some(dir) = &self.data_dir {
            add("data-dir", dir.display().to_string());
        }
        args
    }
}

/// Options as words of a shell command, each after a blank.
fn flags_of(args: &[String]) -> String {
    args.iter()
        .map(|a| format!(" {}", web::shell_word(a)))
        .collect()
}

/// Where a client on this machine reaches a server listening on `local`: the address itself,
/// or loopback when it listens on every address (0.0.0.0 is nowhere to connect to).
fn reachable_base(local: SocketAddr) -> String {
    match local.ip() {
        std::net::IpAddr::V4(ip) if ip.is_unspecified() => {
            format!("http://127.0.0.1:{}", local.port())
        }
        std::net::IpAddr::V6(ip) if ip.is_unspecified() => format!("http://[::1]:{}", local.port()),
        _ => format!("http://{local}"),
    }
}

/// `--addr`: an address and port (`127.0.0.1:8787`, `[::1]:8787`) or a host name and port
/// (`localhost:8787`), taken at its first address.
fn an_address(text: &str) -> Result<SocketAddr, String> {
    use std::net::ToSocketAddrs as _;
    if let Ok(addr) = text.parse() {
        return Ok(addr);
    }
    let not_one =
        || format!("{text:?} is not an address and port like 127.0.0.1:8787 or localhost:8787");
    text.to_socket_addrs()
        .map_err(|_| not_one())?
        .next()
        .ok_or_else(not_one)
}

/// `--allow-origin`: `scheme://host[:port]`, checked as Lambda and the edge check theirs.
fn an_origin(text: &str) -> Result<String, String> {
    match app::settings::origins(Some(text.to_owned()))?.as_slice() {
        [origin] => Ok(origin.clone()),
        _ => Err(format!("{text:?} is not an origin (scheme://host[:port])")),
    }
}

/// `--public-url`: an http(s) URL of a host (and port), no path; a trailing `/` is dropped.
fn a_public_url(text: &str) -> Result<String, String> {
    let url = text.trim().trim_end_matches('/');
    let host = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))
        .filter(|h| {
            !h.is_empty() && !h.contains(['/', '?', '#']) && !h.contains(char::is_whitespace)
        });
    match host {
        Some(_) => Ok(url.to_owned()),
        None => Err(format!(
            "{text:?} is not a URL like http://192.168.1.20:8787 or https://gatehouse.example.com (scheme and host, no path)"
        )),
    }
}

/// The per-user folder for application data, following the platform's convention; `data` in
/// the working folder only where the platform names none (no home folder).
fn default_data_dir() -> PathBuf {
    let env = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let base = if cfg!(target_os = "windows") {
        env("APPDATA")
    } else if cfg!(target_os = "macos") {
        env("HOME").map(|h| h.join("Library/Application Support"))
    } else {
        env("XDG_DATA_HOME").or_else(|| env("HOME").map(|h| h.join(".local/share")))
    };
    // Each product's program keeps its own folder: `gatehouse` in `.../gatehouse`, a team's
    // `helpdesk` in `.../helpdesk`, so two products on one machine never share a store.
    base.map_or_else(|| PathBuf::from("data"), |b| b.join(program()))
}

/// The name this program was started as (`gatehouse`, or a product's own binary), for the
/// commands it prints and its data folder.
fn program() -> String {
    std::env::args_os()
        .next()
        .map(PathBuf::from)
        .and_then(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| "gatehouse".to_owned())
}

#[derive(Debug, Subcommand)]
enum DynamodbCommand {
    /// Creates the table named by --dynamodb-table (keys pk and sk, on-demand, time-to-live on
    /// expires_at) and waits until it is active; an existing table is left as it is. For a local
    /// server: on AWS the table comes from infra/template.json.
    CreateTable,
}

/// `gatehouse dynamodb create-table`.
async fn dynamodb(args: &StoreArgs, command: &DynamodbCommand) -> anyhow::Result<()> {
    let DynamodbCommand::CreateTable = command;
    let table = args
        .dynamodb_table
        .clone()
        .context("name the table: --dynamodb-table NAME (or GATEHOUSE_TABLE)")?;
    dynamo::create_table(&table, args.dynamodb_endpoint.clone()).await?;
    println!("DynamoDB table {table} is ready (time-to-live on expires_at)");
    Ok(())
}

/// The store a command works on.
struct OpenedStore {
    store: Arc<dyn store::Store>,
    /// Which store, in words for the log.
    described: String,
    /// The embedded store's own handle (the same store as `store`), for its upkeep.
    embedded: Option<store_sqlite::SqliteStore>,
    /// The edge deployment the store is reached through, for what only it answers (how far a
    /// flip of the global switch has reached its workspaces' objects).
    edge: Option<store_http::Endpoint>,
}

/// Whether `command` may start a new embedded store: the server, and the commands that set
/// one up. Every other command changes or reads a store that exists; run where none is (a
/// mistyped `--data-dir`, `sudo` with another home), it would make an empty one and report
/// success while the running server saw nothing.
fn may_make_a_store(command: &Command) -> bool {
    matches!(
        command,
        Command::Serve(_)
            | Command::Stdio
            | Command::Tenant {
                command: TenantCommand::Create { .. }
            }
            | Command::Operator {
                command: OperatorCommand::Create { .. }
            }
    )
}

/// The workspace `command` acts in, when it names one with `--tenant`. Every such command is
/// checked against the workspaces before it runs: a mistyped id would otherwise list nothing,
/// show the default approval modes as if they were that workspace's, or answer "not a
/// member", none of which says what is wrong.
fn named_workspace(command: &Command) -> Option<&store::TenantId> {
    let tenant = match command {
        Command::Member { command } => match command {
            MemberCommand::Set { tenant, .. }
            | MemberCommand::Password { tenant, .. }
            | MemberCommand::Unlock { tenant, .. }
            | MemberCommand::Remove { tenant, .. } => tenant,
            MemberCommand::ApiToken { command } => match command {
                ApiTokenCommand::Create { tenant, .. }
                | ApiTokenCommand::List { tenant }
                | ApiTokenCommand::Revoke { tenant, .. } => tenant,
            },
        },
        Command::Token { command } => match command {
            TokenCommand::Create(NewToken { tenant, .. })
            | TokenCommand::List { tenant, .. }
            | TokenCommand::Revoke { tenant, .. } => tenant,
        },
        Command::AgentAccess { tenant, .. } | Command::ApprovalMode { tenant, .. } => tenant,
        Command::Outbox { command } => command.tenant()?,
        _ => return None,
    };
    Some(tenant)
}

async fn open_store(args: &StoreArgs, may_make: bool) -> anyhow::Result<OpenedStore> {
    anyhow::ensure!(
        args.dynamodb_endpoint.is_none() || args.dynamodb_table.is_some(),
        "--dynamodb-endpoint names the server of a table: pass --dynamodb-table too"
    );
    if let Some(url) = &args.edge_url {
        let admin_token = std::env::var("GATEHOUSE_EDGE_ADMIN_TOKEN")
            .ok()
            .filter(|t| !t.is_empty());
        anyhow::ensure!(
            admin_token.is_some(),
            "--edge-url needs the deployment's admin token in GATEHOUSE_EDGE_ADMIN_TOKEN \
             (the GATEHOUSE_ADMIN_TOKEN secret of the Worker: wrangler secret put GATEHOUSE_ADMIN_TOKEN)"
        );
        let endpoint = store_http::Endpoint {
            url: url.clone(),
            admin_token,
            test_object: None,
            test_pin: None,
        };
        let store = store_http::connect(endpoint.clone())?;
        return Ok(OpenedStore {
            store: Arc::new(store),
            described: format!("the edge store of {url}"),
            embedded: None,
            edge: Some(endpoint),
        });
    }
    if let Some(table) = &args.dynamodb_table {
        let store = dynamo::open(table, args.dynamodb_endpoint.clone()).await?;
        return Ok(OpenedStore {
            store,
            described: format!("DynamoDB table {table}"),
            embedded: None,
            edge: None,
        });
    }
    let file = args.data_dir().join("gatehouse.db");
    anyhow::ensure!(
        may_make || file.exists(),
        "no gatehouse data at {}: this command works on an existing store. Pass --data-dir (or \
         GATEHOUSE_DATA_DIR) with the folder your server uses, or set one up with `gatehouse \
         serve` or `gatehouse tenant create`",
        file.display()
    );
    let store = store_sqlite::SqliteStore::open(&file)
        .with_context(|| format!("opening {}", file.display()))?;
    let described = format!(
        "SQLite file {} (gate state beside it in {})",
        file.display(),
        store.gates_path().display()
    );
    Ok(OpenedStore {
        store: Arc::new(store.clone()),
        described,
        embedded: Some(store),
        edge: None,
    })
}

/// Logs to stderr, and (when `serve` was asked for a scrape) the metrics layer beside them.
fn init_tracing(metrics: bool) {
    use std::io::IsTerminal as _;
    use tracing_subscriber::Layer as _;
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    // Logs go to stderr: over stdio, stdout carries the protocol and nothing else. The filter
    // is `GATEHOUSE_LOG`, else the usual `RUST_LOG`, else `info`; colours only on a terminal,
    // so that a log file or a log shipper gets plain text.
    let filter = tracing_subscriber::EnvFilter::try_from_env("GATEHOUSE_LOG")
        .or_else(|_| tracing_subscriber::EnvFilter::try_from_default_env())
        // The AWS SDK's own warnings (instance metadata it cannot reach) are noise on a
        // laptop: the store says what is wrong in one line instead.
        .unwrap_or_else(|_| "info,aws_config=error".into());
    if !metrics {
        tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_ansi(std::io::stderr().is_terminal())
            .with_writer(std::io::stderr)
            .init();
        return;
    }
    // The counter has a filter of its own, so that `GATEHOUSE_LOG=warn` quiets the logs but
    // not the metrics.
    let logs = tracing_subscriber::fmt::layer()
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr)
        .with_filter(filter);
    let calls = tracing_subscriber::filter::Targets::new()
        .with_target("gatehouse::call", tracing::Level::INFO)
        .with_target("gatehouse::confirmation", tracing::Level::INFO);
    tracing_subscriber::registry()
        .with(logs)
        .with(metrics::CallCounter::new().with_filter(calls))
        .init();
}

/// The flag of a product's workspace setting: `tax_rate` is `--tax-rate`.
fn setting_flag(name: &str) -> String {
    name.replace('_', "-")
}

/// The command line, with a flag of `tenant create` for each of the product's workspace
/// settings.
fn parse(product: &dyn Product) -> Cli {
    let settings = product.workspace_settings();
    let mut command = Cli::command()
        .name(program())
        .mut_subcommand("tenant", |tenant| {
            tenant.mut_subcommand("create", |create| {
                settings.iter().fold(create, |create, setting| {
                    create.arg(
                        clap::Arg::new(setting.name)
                            .long(setting_flag(setting.name))
                            .value_name("VALUE")
                            .help(setting.help),
                    )
                })
            })
        });
    let matches = command.get_matches_mut();
    let mut cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    let create = matches
        .subcommand_matches("tenant")
        .and_then(|tenant| tenant.subcommand_matches("create"));
    if let (
        Some(create),
        Command::Tenant {
            command: TenantCommand::Create {
                settings: given, ..
            },
        },
    ) = (create, &mut cli.command)
    {
        for setting in settings {
            if let Some(value) = create.get_one::<String>(setting.name) {
                given.insert(setting.name.to_owned(), value.clone());
            }
        }
    }
    cli
}

/// Runs the `gatehouse` command line for `product`: parses the arguments, runs the command,
/// and returns its outcome (a product's `main` returns it).
///
/// # Errors
///
/// The command's failure, worded for the person who typed it.
#[tokio::main]
pub async fn run(product: Arc<dyn Product>) -> anyhow::Result<()> {
    let cli = parse(product.as_ref());
    init_tracing(matches!(&cli.command, Command::Serve(args) if args.metrics_addr.is_some()));
    let product = &product;
    // Commands about the tool manifest need no store: run them without opening one.
    match &cli.command {
        Command::Manifest { out } => manifest(product, out.clone()).await,
        Command::Dynamodb { command } => dynamodb(&cli.store, command).await,
        Command::Demo { command } => demo::run(&cli.store, command).await,
        Command::CheckManifest {
            files,
            max_tools,
            core,
            self_test,
            reach_prefix,
        } => check_manifest(
            files,
            manifest_options(*max_tools, *core, reach_prefix),
            *self_test,
        ),
        Command::New {
            dir,
            name,
            gatehouse,
        } => scaffold::write(dir, name, gatehouse.as_deref()),
        _ => {
            let opened = open_store(&cli.store, may_make_a_store(&cli.command)).await?;
            if let Some(tenant) = named_workspace(&cli.command) {
                accounts::workspaces::require(opened.store.as_ref(), tenant).await?;
            }
            with_store(product, cli, opened).await
        }
    }
}

/// Runs a command on the store it names.
async fn with_store(
    product: &Arc<dyn Product>,
    cli: Cli,
    opened: OpenedStore,
) -> anyhow::Result<()> {
    let OpenedStore {
        store,
        described,
        embedded,
        edge,
    } = opened;
    let backend = if cli.store.edge_url.is_some() {
        "durable-object"
    } else if cli.store.dynamodb_table.is_some() {
        "dynamodb"
    } else {
        "sqlite"
    };
    // A running server holds its data folder, so that `demo remove` cannot empty it.
    let _folder = match (&cli.command, &embedded) {
        (Command::Serve(_) | Command::Stdio, Some(_)) => Some(demo::hold(&cli.store.data_dir())?),
        _ => None,
    };
    match cli.command {
        Command::Serve(args) => {
            let place = Place {
                data_dir: cli.store.data_dir(),
                args: cli.store.args(),
                embedded: embedded.is_some(),
            };
            expiry::spawn_sweeps(embedded);
            serve(product, store, backend, &described, &place, args).await
        }
        Command::Stdio => {
            expiry::spawn_sweeps(embedded);
            stdio(product, store, backend, &described).await
        }
        Command::Tenant { command } => tenant(product, store, command).await,
        Command::Outbox { command } => deliveries::run(store, command, edge.is_some()).await,
        Command::Member { command } => member(product, store, command).await,
        Command::Operator { command } => operator(store, command).await,
        Command::Token { command } => token(product, store, command).await,
        Command::Edge { command } => edge::run(edge.as_ref(), store, command).await,
        Command::KillSwitch(flip) => kill_switch(product, store, flip, edge.as_ref()).await,
        Command::AgentAccess {
            state,
            tenant,
            member,
        } => agent_access(product, store, state, &tenant, &member).await,
        Command::ApprovalMode {
            class,
            mode,
            tenant,
            member,
        } => approval_mode(product, store, class, mode, &tenant, &member).await,
        Command::Manifest { out } => manifest(product, out).await,
        Command::Dynamodb { command } => dynamodb(&cli.store, &command).await,
        Command::Demo { command } => demo::run(&cli.store, &command).await,
        Command::CheckManifest {
            files,
            max_tools,
            core,
            self_test,
            reach_prefix,
        } => check_manifest(
            &files,
            manifest_options(max_tools, core, &reach_prefix),
            self_test,
        ),
        Command::New {
            dir,
            name,
            gatehouse,
        } => scaffold::write(&dir, &name, gatehouse.as_deref()),
    }
}

fn build(
    product: &Arc<dyn Product>,
    store: Arc<dyn store::Store>,
    settings: app::Settings,
) -> anyhow::Result<app::App> {
    Ok(app::build(&settings, store, Arc::clone(product))?)
}

/// The clock and randomness of a command run from a terminal: the host's.
fn system() -> outside::ClockAndRandomness {
    outside::ClockAndRandomness::system()
}

fn cli_actor(tenant: &store::TenantId, member: &store::MemberId) -> Actor {
    Actor {
        tenant: tenant.clone(),
        member: member.clone(),
        channel: Channel::Cli,
    }
}

/// A workspace id as typed on the command line (checked where it is used: a workspace that
/// does not exist is refused by name).
pub(crate) fn tenant_id(text: &str) -> Result<store::TenantId, std::convert::Infallible> {
    Ok(store::TenantId::new(text))
}

/// A member id as typed on the command line.
pub(crate) fn member_id(text: &str) -> Result<store::MemberId, std::convert::Infallible> {
    Ok(store::MemberId::new(text))
}

/// A connection id as typed on the command line (`con_...`).
pub(crate) fn connection_id(text: &str) -> Result<store::ConnectionId, std::convert::Infallible> {
    Ok(store::ConnectionId::new(text))
}

/// OAuth from the serve flags: the key set read from its file, or fetched by URL.
fn oauth_settings(args: &ServeArgs) -> anyhow::Result<Option<app::OAuth>> {
    let jwks = match &args.oauth_jwks {
        Some(path) => Some(
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?,
        ),
        None => None,
    };
    let plan = app::settings::oauth(app::settings::OAuthVariables {
        issuer: args.oauth_issuer.clone(),
        resource: args.oauth_resource.clone(),
        jwks,
        jwks_url: args.oauth_jwks_url.clone(),
        tenant_claim: Some(args.oauth_tenant_claim.clone()),
        accept_untyped: args.oauth_accept_untyped.then(|| "1".to_owned()),
    })
    .map_err(|e| anyhow::anyhow!("OAuth settings: {}", as_flags(&e)))?;
    Ok(plan.map(|plan| plan.into_oauth(app::key_set_url::fetcher)))
}

/// A settings message with the variables' names turned into this command's flags.
fn as_flags(message: &str) -> String {
    use app::settings::{OAUTH_ISSUER, OAUTH_JWKS, OAUTH_JWKS_URL, OAUTH_RESOURCE};
    // The URL's name first: the key set's name is its prefix.
    [
        (OAUTH_JWKS_URL, "--oauth-jwks-url"),
        (OAUTH_JWKS, "--oauth-jwks"),
        (OAUTH_ISSUER, "--oauth-issuer"),
        (OAUTH_RESOURCE, "--oauth-resource"),
    ]
    .iter()
    .fold(message.to_owned(), |text, (name, flag)| {
        text.replace(name, flag)
    })
}

/// A failed `accept` costs the connection it was for, never the server. A connection that
/// went away before it was taken is simply skipped; anything else (above all, no file
/// descriptor left) is logged and retried after a pause, since retrying at once would spin
/// until connections close.
async fn wait_after_failed_accept(error: &std::io::Error) {
    use std::io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};
    if matches!(
        error.kind(),
        ConnectionAborted | ConnectionRefused | ConnectionReset
    ) {
        return;
    }
    tracing::warn!(%error, "could not accept a connection; retrying shortly");
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
}

/// Where `serve` keeps its store: the data folder, the options naming the store, and whether
/// it is the embedded one.
struct Place {
    data_dir: PathBuf,
    args: Vec<String>,
    embedded: bool,
}

async fn serve(
    product: &Arc<dyn Product>,
    store: Arc<dyn store::Store>,
    backend: &str,
    described: &str,
    place: &Place,
    args: ServeArgs,
) -> anyhow::Result<()> {
    let work = shutdown::Work::new();
    // Timed only when the scrape was asked for: otherwise the store is used as it is.
    let store: Arc<dyn store::Store> = match metrics::Metrics::active() {
        Some(counted) if args.metrics_addr.is_some() => {
            Arc::new(metrics::TimedStore::new(store, counted))
        }
        _ => store,
    };
    let listener = tokio::net::TcpListener::bind(args.addr)
        .await
        .with_context(|| {
            format!(
                "cannot listen on {} (is another gatehouse, or another program, using it? pick another address with --addr 127.0.0.1:PORT)",
                args.addr
            )
        })?;
    let local = listener.local_addr()?;
    let no_demo_here = demo::why_not_seeded(place.embedded, local, args.public_url.as_deref());
    demo::refuse_demo_reachable(store.as_ref(), no_demo_here.as_deref()).await?;
    let base = args
        .public_url
        .clone()
        .unwrap_or_else(|| reachable_base(local));
    let served = Served {
        backend,
        place,
        local,
        base: &base,
    };
    let app = served_app(product, store, &served, &args, &work)?;
    deliveries::spawn_sweeps(deliveries::dispatcher(Arc::clone(&app.store))?);
    announce(&served, described, &args);
    if let Some(addr) = args.metrics_addr {
        serve_metrics(addr).await?;
    }
    let seeded = seed_demo(&app, &args, no_demo_here.as_deref()).await?;
    tell_first_steps(&app, place, &format!("{base}/mcp"), seeded).await?;
    let signals = shutdown::Signals::listen();
    eprintln!("gatehouse: ready (Ctrl-C stops)");
    let limits = connection_limits::Limits {
        header: std::time::Duration::from_secs(args.header_timeout),
        idle: std::time::Duration::from_secs(args.idle_timeout),
        request: REQUEST_TIMEOUT,
    };
    let open = Arc::new(tokio::sync::Semaphore::new(args.max_connections as usize));
    let why = accept_until_stopped(&listener, &app, &work, limits, open, signals).await;
    drop(listener);
    eprintln!("gatehouse: {why}; finishing the calls in progress");
    match work.stop(shutdown::GRACE).await {
        0 => eprintln!("gatehouse: stopped"),
        left => eprintln!(
            "gatehouse: stopped with {left} pieces of work unfinished after {} s; their concurrency slots wait for their leases",
            shutdown::GRACE.as_secs()
        ),
    }
    Ok(())
}

/// Starts answering the metrics scrape on `addr` and says where.
async fn serve_metrics(addr: SocketAddr) -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen for --metrics-addr on {addr} (pick another)"))?;
    eprintln!(
        "  metrics at http://{}/metrics (Prometheus text)",
        listener.local_addr()?
    );
    tokio::spawn(metrics::serve(listener, metrics::Metrics::installed()));
    Ok(())
}

/// Where `serve` serves: its store's kind and folder, the address it listens on and the base
/// URL clients reach it at.
struct Served<'a> {
    backend: &'a str,
    place: &'a Place,
    local: SocketAddr,
    base: &'a str,
}

/// The app `serve` runs: the product, with the benchmark and test tools when asked for.
fn served_app(
    product: &Arc<dyn Product>,
    store: Arc<dyn store::Store>,
    served: &Served<'_>,
    args: &ServeArgs,
    work: &Arc<shutdown::Work>,
) -> anyhow::Result<app::App> {
    let (base, local) = (served.base, served.local);
    // Links point at where clients reach this server; cookies are Secure only behind https.
    let settings = app::Settings {
        backend: served.backend.into(),
        allowed_origins: args.allowed_origins.clone(),
        oauth: oauth_settings(args)?,
        console_base: format!("{base}/app"),
        // On loopback (or every address, loopback among them) the pages also answer to the
        // loopback names: never to another host name (ADR 48).
        loopback_port: (local.ip().is_loopback() || local.ip().is_unspecified())
            .then_some(local.port()),
        mcp_url: Some(format!("{base}/mcp")),
        stdio_args: Some(served.place.args.clone()),
        secure_cookies: base.starts_with("https://"),
        limits: limits(args),
        defer: Some(counted_defer(work)),
        ..app::Settings::default()
    };
    let bench_tool = args.bench_tool;
    #[cfg(feature = "test-tool")]
    let test_panic_tool = args.test_panic_tool;
    Ok(app::build_adding(
        &settings,
        store,
        Arc::clone(product),
        |tools| {
            if bench_tool {
                tools.register(mcp_pipeline::ToolSpec::new(app::bench::BenchFixed1Kb))?;
            }
            #[cfg(feature = "test-tool")]
            if test_panic_tool {
                tools.register(mcp_pipeline::ToolSpec::new(app::test_tool::TestPanicTool))?;
            }
            Ok(())
        },
    )?)
}

/// Says on stderr where `serve` serves and what it serves beyond the product.
fn announce(served: &Served<'_>, described: &str, args: &ServeArgs) {
    let (base, local) = (served.base, served.local);
    eprintln!(
        "gatehouse {} serving MCP at {base}/mcp",
        env!("CARGO_PKG_VERSION")
    );
    if base != format!("http://{local}") {
        eprintln!("  listening on {local}");
    }
    if local.ip().is_unspecified() && args.public_url.is_none() {
        eprintln!(
            "  links in answers point at {base}; for clients on other machines, pass --public-url http://<this machine's address>:{}",
            local.port()
        );
    }
    #[cfg(feature = "bench")]
    if args.rate_limit_scale > 1 {
        eprintln!(
            "  BENCHMARK: rate limits raised {}x (every gate still on)",
            args.rate_limit_scale
        );
    }
    if args.bench_tool {
        eprintln!("  BENCHMARK: serving {}", app::bench::FIXED_TOOL);
    }
    #[cfg(feature = "test-tool")]
    if args.test_panic_tool {
        eprintln!(
            "  TEST ONLY: serving test_panic_tool ({}=1); never set this outside tests",
            app::test_tool::VAR
        );
    }
    eprintln!("  store: {described}");
    eprintln!("  product pages (sign-in, approvals, connections): {base}/app/");
}

/// Seeds the product's demo into an empty store, unless declined or not allowed here (`None`
/// then).
async fn seed_demo(
    app: &app::App,
    args: &ServeArgs,
    no_demo_here: Option<&str>,
) -> anyhow::Result<Option<app::demo::Seeded>> {
    let seeded = if args.no_demo {
        app::demo::decline(app)
            .await
            .map_err(|e| anyhow::anyhow!(e))?;
        None
    } else if let Some(why) = no_demo_here {
        eprintln!("  no demo: {why}");
        None
    } else {
        Some(
            app::demo::seed_if_empty(app, demo_day(args.demo_as_of))
                .await
                .map_err(|e| anyhow::anyhow!(e))?,
        )
    };
    if args.demo_as_of.is_some() && !matches!(seeded, Some(app::demo::Seeded::Now(_))) {
        eprintln!(
            "  --demo-as-of applies to the first seed of an empty store only: nothing was seeded now"
        );
    }
    Ok(seeded)
}

/// Tells the person who started `serve` how to connect: the demo's connections, or how to
/// make a token.
async fn tell_first_steps(
    app: &app::App,
    place: &Place,
    endpoint: &str,
    seeded: Option<app::demo::Seeded>,
) -> anyhow::Result<()> {
    let data_dir = &place.data_dir;
    let store_flags = flags_of(&place.args);
    match seeded {
        Some(app::demo::Seeded::Now(demo)) => {
            if let Some(shown) = app.product.demo() {
                print_demo(&shown, &demo, data_dir, endpoint)?;
            }
        }
        Some(app::demo::Seeded::Unfinished { started_at }) => eprintln!(
            "  the demo seed begun at {started_at} did not finish (that start was stopped, or another gatehouse is seeding now), so its workspaces may be incomplete; to seed it afresh, stop gatehouse and start it on an empty data folder (not {})",
            data_dir.display()
        ),
        Some(app::demo::Seeded::Before) => {
            let file = data_dir.join("demo-connections.json");
            if file.exists() {
                eprintln!(
                    "  the demo's tokens (seeded at the first start): {}",
                    file.display()
                );
            }
            print_first_steps(app, &store_flags, endpoint).await?;
        }
        Some(
            app::demo::Seeded::NotEmpty
            | app::demo::Seeded::Declined
            | app::demo::Seeded::Removed
            | app::demo::Seeded::NoDemo,
        )
        | None => {
            print_first_steps(app, &store_flags, endpoint).await?;
        }
    }
    Ok(())
}

/// Work sent after answers (slot releases, audit) runs on tokio, counted in `work`, so that
/// stopping waits for it.
fn counted_defer(work: &Arc<shutdown::Work>) -> mcp_pipeline::Defer {
    let work = Arc::clone(work);
    mcp_pipeline::Defer(Arc::new(move |job| {
        // Outside a runtime (a call dropped while it shuts down) nothing can run it; the
        // slot's lease frees it.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(work.track(job));
        }
    }))
}

/// The rate limits: the defaults, raised only by a benchmark build's `--rate-limit-scale`.
fn limits(args: &ServeArgs) -> mcp_pipeline::Limits {
    #[cfg(feature = "bench")]
    return app::bench::scaled_limits(mcp_pipeline::Limits::default(), args.rate_limit_scale);
    #[cfg(not(feature = "bench"))]
    {
        let _ = args;
        mcp_pipeline::Limits::default()
    }
}

/// The longest a request may take from its head to its answer, its body included: past the
/// longest call (26.2 s, ADR 22), short of a client that trickles a body for good.
const REQUEST_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// Accepts connections and serves each on a task of its own, counted in `work`, until a
/// signal to stop; returns what stopped it. At most `open`'s permits are served at once: at
/// the cap, the next connection waits in the backlog until one closes.
async fn accept_until_stopped(
    listener: &tokio::net::TcpListener,
    app: &app::App,
    work: &Arc<shutdown::Work>,
    limits: connection_limits::Limits,
    open: Arc<tokio::sync::Semaphore>,
    mut signals: shutdown::Signals,
) -> &'static str {
    // Shared by every connection: cloning the pages' services per request cost about 1% of a
    // read's CPU (issue 17).
    let web = Arc::new(app.web.clone());
    loop {
        let permit = tokio::select! {
            permit = Arc::clone(&open).acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => return "stopped",
            },
            why = signals.recv() => return why,
        };
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    wait_after_failed_accept(&e).await;
                    continue;
                }
            },
            why = signals.recv() => return why,
        };
        // Answers are written whole; nothing is gained by holding a small one back.
        let _ = stream.set_nodelay(true);
        let connection = serve_connection(
            stream,
            peer.ip(),
            app.http.clone(),
            Arc::clone(&web),
            limits,
            work.stopping(),
        );
        tokio::spawn(work.track(async move {
            connection.await;
            drop(permit);
        }));
    }
}

/// Serves one connection: the product's pages and API beside the MCP endpoint, each with its
/// own credentials. When `stopping` resolves, the request in progress is answered and the
/// connection closes (an idle one at once); a connection that passes one of `limits` (a head
/// sent too slowly, too long idle, a request past its timeout) is closed.
async fn serve_connection(
    stream: tokio::net::TcpStream,
    peer: std::net::IpAddr,
    http: mcp_http::McpService,
    web: Arc<web::Web>,
    limits: connection_limits::Limits,
    stopping: impl std::future::Future<Output = ()>,
) {
    let activity = connection_limits::Activity::new();
    let watched = Arc::clone(&activity);
    let service = service_fn(move |mut req: http::Request<hyper::body::Incoming>| {
        let (http, web, activity) = (http.clone(), Arc::clone(&web), Arc::clone(&watched));
        activity.started();
        // The answer is awaited in place: a future bound to a name and awaited later is moved
        // (and its state kept twice), which cost a read 6% more instructions.
        async move {
            let response = if req.uri().path() == "/" {
                // A person who opens the server's address lands on the product's pages.
                mcp_http::see_other("/app/")
            } else if web::is_product_path(req.uri().path()) {
                // Only the pages use the address (the sign-in throttle): an MCP call does not
                // pay for writing it down.
                req.extensions_mut()
                    .insert(web::ClientAddress(peer.to_string()));
                web.handle(req).await
            } else {
                http.handle(req).await
            };
            activity.ended();
            Ok::<_, std::convert::Infallible>(response)
        }
    });
    let io = TokioIo::new(connection_limits::Watched::new(
        stream,
        Arc::clone(&activity),
    ));
    let connection = http1::Builder::new().serve_connection(io, service);
    let overdue = connection_limits::overdue(activity, limits);
    tokio::pin!(connection, stopping, overdue);
    let ended = tokio::select! {
        ended = connection.as_mut() => ended,
        () = &mut stopping => {
            connection.as_mut().graceful_shutdown();
            connection.await
        }
        // Closed at once: a graceful close would wait for the head or body a slow client never
        // finishes; a request cut past its timeout gives its slot back (ADR 26).
        () = &mut overdue => return,
    };
    if let Err(e) = ended {
        tracing::debug!(error = %e, "connection ended with an error");
    }
}

/// A day (YYYY-MM-DD) that is today or later: a demo seeded as of a past day would hold bookings
/// in the past, which the product never makes.
fn a_day_ahead(text: &str) -> Result<chrono::NaiveDate, String> {
    let day: chrono::NaiveDate = text
        .parse()
        .map_err(|_| format!("{text:?} is not a day like 2055-06-07"))?;
    let today = chrono::Utc::now().date_naive();
    if day < today {
        return Err(format!(
            "{day} is past; give today ({today}) or a later day"
        ));
    }
    Ok(day)
}

/// When the demo is seeded: now, or noon (UTC) of the day asked for.
fn demo_day(as_of: Option<chrono::NaiveDate>) -> chrono::DateTime<chrono::Utc> {
    as_of
        .and_then(|day| day.and_hms_opt(12, 0, 0))
        .map_or_else(chrono::Utc::now, |noon| noon.and_utc())
}

/// Prints one token per demo tenant with a client configuration, and writes every demo
/// token to `demo-connections.json` (owner-readable only) for scripts.
/// How to make a first connection, as commands to paste: for the store's first workspace, or
/// with a workspace to make first; every command names the store this server uses.
async fn print_first_steps(app: &app::App, flags: &str, endpoint: &str) -> anyhow::Result<()> {
    let workspaces = accounts::workspaces::list(&app.store).await?;
    let program = program();
    // The product's settings, each with a value that works, so the command runs as pasted.
    let settings: String = app
        .product
        .workspace_settings()
        .iter()
        .map(|s| format!(" --{} {}", setting_flag(s.name), s.example))
        .collect();
    eprintln!("  every request needs an MCP token; make one with:");
    let tenant = match workspaces.first() {
        Some((id, _)) => id.clone(),
        None => {
            eprintln!(
                "    {program}{flags} tenant create mycompany --name \"My Company\" --zone Europe/Berlin{settings}"
            );
            eprintln!(
                "    {program}{flags} member set --tenant mycompany --member ana --role owner"
            );
            "mycompany".to_owned()
        }
    };
    let member = if workspaces.is_empty() {
        "ana"
    } else {
        "<member>"
    };
    eprintln!(
        "    {program}{flags} token create --tenant {tenant} --member {member} --client \"my laptop\""
    );
    if !workspaces.is_empty() {
        eprintln!(
            "    (<member>: one of {tenant}'s members; add one with {program}{flags} member set --tenant {tenant} --member NAME --role owner)"
        );
    }
    eprintln!("  then connect a client, e.g.:");
    eprintln!(
        "    claude mcp add --transport http gatehouse {endpoint} --header \"Authorization: Bearer <token>\""
    );
    Ok(())
}

fn print_demo(
    shown: &app::demo::Demo,
    demo: &[app::demo::DemoConnection],
    data_dir: &std::path::Path,
    endpoint: &str,
) -> anyhow::Result<()> {
    let tenants: Vec<String> = shown
        .workspaces
        .iter()
        .map(|w| format!("{} ({})", w.id, w.zone))
        .collect();
    eprintln!("  seeded the demo tenants {}:", tenants.join(" and "));
    let role = shown.shown_role;
    let printed = |c: &&app::demo::DemoConnection| c.role == role && c.toolset == "standard";
    for c in demo.iter().filter(printed) {
        eprintln!("    {} {role} {} token: {}", c.tenant, c.member, c.token);
    }
    if let Some(first) = demo.iter().find(printed) {
        let config = json!({"mcpServers": {"gatehouse": {"type": "http", "url": endpoint, "headers": {"Authorization": format!("Bearer {}", first.token)}}}});
        eprintln!(
            "  connect a client as the {} {role}: Claude Code with `claude mcp add --transport http gatehouse {endpoint} --header \"Authorization: Bearer {}\"`, or this in a client's mcpServers file (Cursor's .cursor/mcp.json, a project's .mcp.json):",
            first.tenant, first.token
        );
        eprintln!("    {config}");
    }
    std::fs::create_dir_all(data_dir)?;
    let file = data_dir.join("demo-connections.json");
    let body = serde_json::to_string_pretty(&json!({"endpoint": endpoint, "connections": demo}))?;
    write_private(&file, body.as_bytes())?;
    eprintln!(
        "  every demo token (tenant x role x toolset): {}",
        file.display()
    );
    let workspaces: Vec<&str> = shown.workspaces.iter().map(|w| w.id).collect();
    let members: Vec<String> = shown
        .members
        .iter()
        .map(|(member, role)| format!("{member} ({role})"))
        .collect();
    eprintln!(
        "  demo sign-in on the pages: workspace {}, member {}, password {}",
        workspaces.join(" or "),
        members.join(", "),
        app::demo::DEMO_PASSWORD
    );
    eprintln!(
        "  demo operator (global kill switch) at /app/operator/login: {}, password {}",
        app::demo::DEMO_OPERATOR,
        app::demo::DEMO_PASSWORD
    );
    Ok(())
}

/// Writes a file only its owner can read.
fn write_private(path: &std::path::Path, bytes: &[u8]) -> anyhow::Result<()> {
    use std::io::Write as _;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600);
    }
    let mut file = options
        .open(path)
        .with_context(|| format!("writing {}", path.display()))?;
    file.write_all(bytes)?;
    Ok(())
}

async fn manifest(product: &Arc<dyn Product>, out: Option<PathBuf>) -> anyhow::Result<()> {
    for toolset in [Toolset::Core, Toolset::Standard, Toolset::Full] {
        let dump =
            app::manifest::dump(&app::Settings::default(), Arc::clone(product), toolset).await?;
        let text = serde_json::to_string_pretty(&dump)? + "\n";
        match &out {
            Some(dir) => {
                std::fs::create_dir_all(dir)?;
                std::fs::write(dir.join(format!("{}.json", toolset.as_str())), text)?;
            }
            None => print!("{text}"),
        }
    }
    Ok(())
}

/// The checker's limits from the command line.
fn manifest_options(
    max_tools: Option<usize>,
    core: bool,
    reach_prefixes: &[String],
) -> manifest_check::Options {
    let base = if core {
        manifest_check::Options::core()
    } else {
        manifest_check::Options::default()
    };
    manifest_check::Options {
        max_tools: max_tools.or(base.max_tools),
        reach_prefixes: reach_prefixes.to_vec(),
        ..base
    }
}

fn check_manifest(
    files: &[PathBuf],
    options: manifest_check::Options,
    self_test: bool,
) -> anyhow::Result<()> {
    if self_test {
        let classes =
            manifest_check::self_test().map_err(|e| anyhow::anyhow!("self-test failed: {e}"))?;
        println!("check-manifest self-test: every one of {classes} defect classes is caught");
        return Ok(());
    }
    if files.is_empty() {
        bail!("name the dumps to check, or use --self-test");
    }
    let mut defects = 0;
    for file in files {
        let text =
            std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
        let dump: serde_json::Value = serde_json::from_str(&text)
            .with_context(|| format!("{} is not JSON", file.display()))?;
        let report = manifest_check::check_with(&dump, options.clone());
        if report.is_clean() {
            println!("{}: ok", file.display());
        } else {
            defects += report.defects.len();
            println!("{}: {} defects", file.display(), report.defects.len());
            print!("{}", report.to_text());
        }
    }
    if defects > 0 {
        bail!("{defects} defects");
    }
    Ok(())
}

async fn stdio(
    product: &Arc<dyn Product>,
    store: Arc<dyn store::Store>,
    backend: &str,
    described: &str,
) -> anyhow::Result<()> {
    // The client shows stderr in its log: name the store, so that a token made for another
    // data folder is not a mystery.
    tracing::info!(
        store = described,
        "gatehouse stdio: reading JSON-RPC on stdin"
    );
    let app = build(
        product,
        Arc::clone(&store),
        app::Settings {
            backend: backend.into(),
            ..app::Settings::default()
        },
    )?;
    let token = std::env::var("GATEHOUSE_TOKEN")
        .ok()
        .filter(|t| !t.trim().is_empty())
        .context("set GATEHOUSE_TOKEN to an MCP token (gatehouse token create ...)")?;
    let headers =
        mcp_pipeline::Headers::from([("authorization".to_owned(), format!("Bearer {token}"))]);
    // On the app's store, whose calls are bounded in time (ADR 22), as every other entry
    // point's authenticator is: one stalled read must not hang the session.
    // The server's clock, as `serve`'s authenticator has it.
    let clock = Arc::clone(&app.web.clock);
    let authenticator =
        identity::McpAuthenticator::new(Arc::clone(&app.store), app.directory.clone(), clock);
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    let mut stdout = tokio::io::stdout();
    while let Some(line) = lines.next_line().await? {
        if line.trim().is_empty() {
            continue;
        }
        let replies = mcp_http::stdio::reply(&app.server, &authenticator, &headers, &line).await;
        for reply in replies {
            stdout.write_all(reply.as_bytes()).await?;
            stdout.write_all(b"\n").await?;
        }
        stdout.flush().await?;
    }
    Ok(())
}

/// Who acts at the command line: whoever holds the deployment's shell, recorded as `cli`.
fn console(tenant: &store::TenantId) -> Actor {
    cli_actor(tenant, &store::MemberId::new("cli"))
}

/// The first line of stdin, without its line break.
fn read_stdin_line(what: &str) -> anyhow::Result<String> {
    let mut line = String::new();
    std::io::stdin()
        .read_line(&mut line)
        .with_context(|| format!("reading {what} from stdin"))?;
    Ok(line.trim_end_matches(['\r', '\n']).to_owned())
}

async fn tenant(
    product: &Arc<dyn Product>,
    store: Arc<dyn store::Store>,
    command: TenantCommand,
) -> anyhow::Result<()> {
    match command {
        TenantCommand::Create {
            id,
            name,
            zone,
            settings,
        } => {
            let workspace = accounts::workspaces::Workspace {
                id: id.clone(),
                name,
                zone,
            };
            let tenant = store::TenantId::new(id.as_str());
            let ops = product.new_workspace(&tenant, &settings).map_err(|e| {
                // The product names its settings; the person typed them as flags.
                let flags = product.workspace_settings().iter().fold(e, |e, s| {
                    e.replace(s.name, &format!("--{}", setting_flag(s.name)))
                });
                anyhow::anyhow!(flags)
            })?;
            accounts::workspaces::create(&store, &system(), &console(&tenant), &workspace, ops)
                .await?;
            println!(
                "workspace {id} created; add its first member with `{} member set --tenant {id} --member NAME --role owner`",
                program()
            );
        }
        TenantCommand::List => {
            for (id, name) in accounts::workspaces::list(&store).await? {
                println!("{id}\t{name}");
            }
        }
    }
    Ok(())
}

async fn member(
    product: &Arc<dyn Product>,
    store: Arc<dyn store::Store>,
    command: MemberCommand,
) -> anyhow::Result<()> {
    let app = build(product, Arc::clone(&store), app::Settings::default())?;
    match command {
        MemberCommand::Set {
            tenant,
            member,
            role,
            inactive,
            active,
        } => {
            let wanted = (active || inactive).then_some(active);
            let (set, active) = app
                .members
                .set(&console(&tenant), &member, &role, wanted)
                .await?;
            let state = if active { "an active" } else { "an inactive" };
            let verb = match set {
                accounts::members::Set::Added => "added",
                accounts::members::Set::Changed => "changed",
            };
            println!("{member} ({verb}) is {state} {role} of {tenant}");
        }
        MemberCommand::Password { tenant, member } => {
            let password = read_stdin_line("the password")?;
            app.members
                .set_password(&console(&tenant), &member, &password)
                .await?;
            println!("password of {member} in {tenant} set");
        }
        MemberCommand::Unlock { tenant, member } => {
            app.members.unlock(&console(&tenant), &member).await?;
            println!("{member} of {tenant} may sign in again");
        }
        MemberCommand::ApiToken { command } => api_token(&app, command).await?,
        MemberCommand::Remove { tenant, member } => {
            app.members.remove(&console(&tenant), &member).await?;
            println!(
                "{member} is no longer a member of {tenant}; their credentials no longer work"
            );
        }
    }
    Ok(())
}

async fn api_token(app: &app::App, command: ApiTokenCommand) -> anyhow::Result<()> {
    match command {
        ApiTokenCommand::Create {
            tenant,
            member,
            days,
        } => {
            let (token, secret) = app
                .api_tokens
                .create(&cli_actor(&tenant, &member), Some(days))
                .await?;
            println!(
                "product API token {} of {member}, valid until {} (shown once):",
                token.id, token.expires_at
            );
            println!("{secret}");
        }
        ApiTokenCommand::List { tenant } => {
            for t in app.api_tokens.list(&tenant).await? {
                let state = if t.revoked { "revoked" } else { "active" };
                println!(
                    "{}\t{}\t{state}\tcreated {}\tuntil {}",
                    t.id, t.member, t.created_at, t.expires_at
                );
            }
        }
        ApiTokenCommand::Revoke { tenant, id } => {
            app.api_tokens.revoke(&console(&tenant), &id).await?;
            println!("API token {id} revoked");
        }
    }
    Ok(())
}

async fn operator(store: Arc<dyn store::Store>, command: OperatorCommand) -> anyhow::Result<()> {
    match command {
        OperatorCommand::Create {
            email,
            password_stdin,
        } => {
            if !password_stdin {
                bail!("pass the password on stdin with --password-stdin");
            }
            let password = read_stdin_line("the password")?;
            let email = accounts::operators::create(
                store.as_ref(),
                &system(),
                &cli_actor(&identity::system(), &store::MemberId::new("cli")),
                &email,
                &password,
            )
            .await?;
            println!("{email} is an operator; sign in at /app/operator/login");
        }
        OperatorCommand::Password { email } => {
            let password = read_stdin_line("the password")?;
            let actor = cli_actor(&identity::system(), &store::MemberId::new("cli"));
            accounts::operators::set_password(store.as_ref(), &system(), &actor, &email, &password)
                .await?;
            println!("password of operator {email} set; their earlier sessions have ended");
        }
        OperatorCommand::Remove { email } => {
            let actor = cli_actor(&identity::system(), &store::MemberId::new("cli"));
            accounts::operators::remove(store.as_ref(), &system(), &actor, &email).await?;
            println!("{email} is no longer an operator; their sessions have ended");
        }
    }
    Ok(())
}

/// Where a connection's actions are approved, in `--approval`'s words: `product` when pinned
/// there, else `client` (the workspace's modes decide).
fn approval_word(c: &identity::Connection) -> &'static str {
    if c.approval_pinned {
        "product"
    } else {
        "client"
    }
}

fn connection_json(c: &identity::Connection) -> serde_json::Value {
    json!({
        "connection": c.id,
        "tenant": c.tenant,
        "creator": c.creator,
        "client": c.client_name,
        "rights": c.rights,
        "toolset": c.toolset.as_str(),
        "created_at": c.created_at,
        "revoked": c.revoked,
        // The words `token create --approval` takes.
        "approval": approval_word(c),
    })
}

async fn token(
    product: &Arc<dyn Product>,
    store: Arc<dyn store::Store>,
    command: TokenCommand,
) -> anyhow::Result<()> {
    let app = build(product, store, app::Settings::default())?;
    match command {
        TokenCommand::Create(new) => create_token(&app, new).await?,
        TokenCommand::List { tenant, json } => {
            let list = app.connections.list(&tenant).await?;
            if json {
                println!(
                    "{}",
                    serde_json::Value::Array(list.iter().map(connection_json).collect())
                );
            } else {
                for c in &list {
                    let state = if c.revoked { "revoked" } else { "active" };
                    println!(
                        "{}  {state:7}  {}  by {}  toolset {}  approval {}  {}",
                        c.id,
                        c.client_name,
                        c.creator,
                        c.toolset.as_str(),
                        approval_word(c),
                        c.created_at
                    );
                }
            }
        }
        TokenCommand::Revoke {
            tenant,
            member,
            connection,
            json,
        } => {
            let revoked = app
                .connections
                .revoke(&cli_actor(&tenant, &member), &connection)
                .await?;
            if json {
                println!("{}", connection_json(&revoked));
            } else {
                println!("connection {} revoked", revoked.id);
            }
        }
    }
    Ok(())
}

/// `token create`: a connection with the member's rights (or fewer), its token printed once.
async fn create_token(app: &app::App, new: NewToken) -> anyhow::Result<()> {
    let NewToken {
        tenant,
        member,
        client,
        rights,
        toolset,
        approval,
        json,
    } = new;
    let Some(toolset) = Toolset::parse(&toolset) else {
        bail!("unknown toolset {toolset:?}: use core, standard or full")
    };
    let rights: BTreeSet<String> = if rights.is_empty() {
        use identity::Directory as _;
        let m = app
            .directory
            .member(&tenant, &member)
            .await?
            .with_context(|| format!("{member} is not a member of {tenant}"))?;
        m.rights
    } else {
        rights
            .into_iter()
            .map(|r| r.trim().to_owned())
            .filter(|r| !r.is_empty())
            .collect()
    };
    let (connection, secret) = app
        .connections
        .create_token(
            &cli_actor(&tenant, &member),
            NewConnection {
                rights,
                toolset,
                client_name: client,
                approval: approval.mode(),
            },
        )
        .await?;
    if json {
        let mut out = connection_json(&connection);
        out["token"] = json!(secret);
        println!("{out}");
    } else {
        println!(
            "connection {} for {} in {}",
            connection.id, connection.client_name, connection.tenant
        );
        println!(
            "rights: {}",
            connection
                .rights
                .iter()
                .cloned()
                .collect::<Vec<_>>()
                .join(", ")
        );
        println!("token (shown once, store it now): {secret}");
    }
    Ok(())
}

/// What `kill-switch` is asked.
#[derive(Debug, clap::Args)]
struct Flip {
    /// on, off or status.
    state: SwitchState,
    /// Why (required for on and off; audited).
    #[arg(long)]
    reason: Option<String>,
    /// Who flips it (audited).
    #[arg(long, default_value = "operator")]
    operator: String,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

async fn kill_switch(
    product: &Arc<dyn Product>,
    store: Arc<dyn store::Store>,
    flip: Flip,
    edge: Option<&store_http::Endpoint>,
) -> anyhow::Result<()> {
    let app = build(product, Arc::clone(&store), app::Settings::default())?;
    let flipped = matches!(flip.state, SwitchState::On | SwitchState::Off);
    if flipped {
        let reason = flip.reason.context("--reason is required")?;
        // The command line holds the store's own credential: it is the deployment's
        // administrator, audited under the name given (ADR 48).
        let on = flip.state == SwitchState::On;
        app.switches
            .set_global(
                &cli_actor(&identity::system(), &store::MemberId::new(&flip.operator)),
                on,
                &reason,
            )
            .await?;
    }
    let on = app.switches.global_on().await?;
    // At the edge a flip reaches each workspace's object from the global one (ADR 51).
    let reached = match edge {
        Some(endpoint) => Some(edge_switch_reached(endpoint, flipped).await?),
        None => None,
    };
    if flip.json {
        let mut answer = json!({"kill_switch": if on { "on" } else { "off" }});
        if let Some(status) = &reached {
            answer["workspace_objects"] = json!({
                "reached": status.reached,
                "of": status.workspaces,
                "stragglers": status.stragglers,
            });
        }
        println!("{answer}");
        return Ok(());
    }
    if on {
        println!("kill switch is ON: every MCP call answers 503");
    } else {
        println!("kill switch is off");
    }
    if let Some(status) = reached {
        println!(
            "the switch reached {} of {} workspace objects",
            status.reached, status.workspaces
        );
        if !status.stragglers.is_empty() {
            println!(
                "not reached yet (retried by the deployment; each stops its agents within {} s \
                 of losing touch): {}",
                status.bound_seconds,
                status.stragglers.join(", ")
            );
        }
    }
    Ok(())
}

/// How long the command waits for a flip to reach every workspace object.
const EDGE_SWITCH_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// How far the last flip has reached the edge deployment's workspace objects; after a flip,
/// waits (up to [`EDGE_SWITCH_WAIT`]) for it to reach them all.
async fn edge_switch_reached(
    endpoint: &store_http::Endpoint,
    flipped: bool,
) -> anyhow::Result<store_http::SwitchStatus> {
    let admin = store_http::Admin::new(endpoint.clone())?;
    let started = std::time::Instant::now();
    loop {
        let status = admin.switch_status().await?;
        if !flipped || status.done || started.elapsed() > EDGE_SWITCH_WAIT {
            return Ok(status);
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
}

async fn approval_mode(
    product: &Arc<dyn Product>,
    store: Arc<dyn store::Store>,
    class: Option<ApprovalClass>,
    mode: Option<Approval>,
    tenant: &store::TenantId,
    member: &store::MemberId,
) -> anyhow::Result<()> {
    let app = build(product, Arc::clone(&store), app::Settings::default())?;
    match (class, mode) {
        (None, None) => {}
        (Some(class), Some(mode)) => {
            // The switch service checks the member's right (ADR 48).
            app.switches
                .set_approval_mode(&cli_actor(tenant, member), class.effect(), mode.mode())
                .await?;
        }
        _ => bail!(
            "give both a class (notify, wake, alerting, delete) and a mode (client, product), or neither to see the modes"
        ),
    }
    let modes = app.switches.approval_modes(tenant).await?;
    for class in mcp_pipeline::APPROVAL_CLASSES {
        println!(
            "{:<9} {}",
            mcp_pipeline::class_name(class),
            modes.mode(class).as_str()
        );
    }
    Ok(())
}

async fn agent_access(
    product: &Arc<dyn Product>,
    store: Arc<dyn store::Store>,
    state: SwitchState,
    tenant: &store::TenantId,
    member: &store::MemberId,
) -> anyhow::Result<()> {
    let app = build(product, Arc::clone(&store), app::Settings::default())?;
    let on = match state {
        // Reading it changes nothing: any member may.
        SwitchState::Status => app.switches.agent_access(tenant).await?,
        SwitchState::On | SwitchState::Off => {
            // The switch service checks the member's right (ADR 48).
            let on = state == SwitchState::On;
            app.switches
                .set_agent_access(&cli_actor(tenant, member), on)
                .await?;
            on
        }
    };
    println!(
        "agent access in {tenant} is {}",
        if on { "on" } else { "off" }
    );
    Ok(())
}
