//! `gatehouse`: run the MCP server on this machine (HTTP or stdio) on the embedded store.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context as _;
use clap::{Parser, Subcommand};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use mcp_pipeline::Request;
use mcp_protocol::{Incoming, parse_message};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};

#[derive(Debug, Parser)]
#[command(name = "gatehouse", version, about = "The gatehouse MCP server")]
struct Cli {
    /// Folder of the embedded store (created on first run).
    #[arg(
        long,
        env = "GATEHOUSE_DATA_DIR",
        default_value = "data",
        global = true
    )]
    data_dir: PathBuf,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve MCP over HTTP on this machine (POST http://ADDR/mcp).
    Serve {
        /// Address to listen on (loopback by default: this is a local development server).
        #[arg(long, env = "GATEHOUSE_ADDR", default_value = "127.0.0.1:8787")]
        addr: SocketAddr,
        /// An Origin allowed to call the endpoint (repeat for more); others get 403.
        #[arg(
            long = "allow-origin",
            env = "GATEHOUSE_ALLOWED_ORIGINS",
            value_delimiter = ','
        )]
        allowed_origins: Vec<String>,
    },
    /// Speak newline-delimited JSON-RPC on stdin/stdout (for desktop clients).
    Stdio,
}

fn open_store(data_dir: &std::path::Path) -> anyhow::Result<(Arc<dyn store::Store>, PathBuf)> {
    let file = data_dir.join("gatehouse.db");
    let store = store_sqlite::SqliteStore::open(&file)
        .with_context(|| format!("opening {}", file.display()))?;
    Ok((Arc::new(store), file))
}

fn init_tracing() {
    // Logs go to stderr: over stdio, stdout carries the protocol and nothing else.
    let filter = tracing_subscriber::EnvFilter::try_from_env("GATEHOUSE_LOG")
        .unwrap_or_else(|_| "info".into());
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    init_tracing();
    match cli.command {
        Command::Serve {
            addr,
            allowed_origins,
        } => serve(&cli.data_dir, addr, allowed_origins).await,
        Command::Stdio => stdio(&cli.data_dir).await,
    }
}

async fn serve(
    data_dir: &std::path::Path,
    addr: SocketAddr,
    allowed_origins: Vec<String>,
) -> anyhow::Result<()> {
    let (store, file) = open_store(data_dir)?;
    let settings = app::Settings {
        backend: "sqlite".into(),
        allowed_origins,
        ..app::Settings::default()
    };
    let app = app::build(&settings, store)?;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("binding {addr}"))?;
    let local = listener.local_addr()?;
    eprintln!(
        "gatehouse {} serving MCP at http://{local}/mcp",
        env!("CARGO_PKG_VERSION")
    );
    eprintln!("  store: SQLite file {}", file.display());
    eprintln!(
        "  connect a client with:  claude mcp add --transport http gatehouse http://{local}/mcp"
    );
    eprintln!(
        "  or try:  curl -s http://{local}/mcp -H 'content-type: application/json' -H 'mcp-protocol-version: 2025-11-25' \\"
    );
    eprintln!("             -d '{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}}'");
    loop {
        let (stream, _) = tokio::select! {
            accepted = listener.accept() => accepted?,
            _ = tokio::signal::ctrl_c() => {
                eprintln!("gatehouse: stopping");
                return Ok(());
            }
        };
        let http = app.http.clone();
        tokio::spawn(async move {
            let service = service_fn(move |req| {
                let http = http.clone();
                async move { Ok::<_, std::convert::Infallible>(http.handle(req).await) }
            });
            if let Err(e) = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await
            {
                tracing::debug!(error = %e, "connection ended with an error");
            }
        });
    }
}

async fn stdio(data_dir: &std::path::Path) -> anyhow::Result<()> {
    let (store, _) = open_store(data_dir)?;
    let settings = app::Settings {
        backend: "sqlite".into(),
        ..app::Settings::default()
    };
    let app = app::build(&settings, store)?;
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    let mut stdout = tokio::io::stdout();
    while let Some(line) = lines.next_line().await? {
        if line.trim().is_empty() {
            continue;
        }
        let replies: Vec<serde_json::Value> = match parse_message(line.as_bytes()) {
            Ok(Incoming::Message(message)) => {
                let outcome = app
                    .server
                    .handle(Request {
                        message,
                        headers: None,
                        version_header: None,
                    })
                    .await;
                outcome
                    .notifications
                    .into_iter()
                    .chain(outcome.body)
                    .collect()
            }
            // A response from the client: this server sends no requests, so there is nothing
            // to match it with.
            Ok(Incoming::Response(_)) => Vec::new(),
            Err(e) => vec![mcp_protocol::error_response(e.id.as_ref(), &e.error)],
        };
        for reply in replies {
            stdout.write_all(reply.to_string().as_bytes()).await?;
            stdout.write_all(b"\n").await?;
        }
        stdout.flush().await?;
    }
    Ok(())
}
