//! `gatehouse serve` for the evals: seeded once into a template data folder, then started on
//! a fresh copy of that folder for every scenario, so each scenario begins from the same
//! freshly seeded demo state. Or an already running server, with its connections file.

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use anyhow::{Context as _, anyhow, bail};
use serde::{Deserialize, Serialize};

/// One demo connection from `demo-connections.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Connection {
    /// Tenant.
    pub tenant: String,
    /// Member.
    pub member: String,
    /// Role.
    pub role: String,
    /// Toolset.
    pub toolset: String,
    /// Connection id.
    pub connection: String,
    /// MCP token.
    pub token: String,
}

/// The demo connections file.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Connections {
    /// The endpoint the server had when it wrote the file.
    #[serde(default)]
    pub endpoint: String,
    /// Every tenant x role x toolset.
    pub connections: Vec<Connection>,
}

impl Connections {
    /// Reads a `demo-connections.json`.
    pub fn read(path: &Path) -> anyhow::Result<Self> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))
    }

    /// The connection of `tenant`'s member with `role` on `toolset`.
    pub fn find(&self, tenant: &str, role: &str, toolset: &str) -> anyhow::Result<&Connection> {
        self.connections
            .iter()
            .find(|c| c.tenant == tenant && c.role == role && c.toolset == toolset)
            .ok_or_else(|| anyhow!("no demo connection {tenant}/{role}/{toolset}"))
    }

    /// A `tenant/role/toolset` label's connection.
    pub fn find_label(&self, label: &str) -> anyhow::Result<&Connection> {
        let parts: Vec<&str> = label.split('/').collect();
        let [tenant, role, toolset] = parts.as_slice() else {
            bail!("connection {label:?} is not tenant/role/toolset");
        };
        self.find(tenant, role, toolset)
    }

    /// Every tenant, sorted.
    pub fn tenants(&self) -> Vec<String> {
        let mut t: Vec<String> = self.connections.iter().map(|c| c.tenant.clone()).collect();
        t.sort();
        t.dedup();
        t
    }
}

/// A server the evals talk to.
#[derive(Debug)]
pub struct Running {
    /// The `/mcp` endpoint.
    pub url: String,
    /// Its demo connections.
    pub connections: Connections,
    child: Option<Child>,
    _dir: Option<tempfile::TempDir>,
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(child) = &mut self.child {
            // Only the process this harness started, by its handle.
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Where servers come from.
#[derive(Debug)]
pub enum Source {
    /// A fresh copy of a seeded template folder per scenario.
    Fresh {
        /// The `gatehouse` binary.
        binary: PathBuf,
        /// The seeded template data folder.
        template: tempfile::TempDir,
    },
    /// An existing server.
    External {
        /// Its endpoint.
        url: String,
        /// Its connections.
        connections: Connections,
    },
}

/// The `gatehouse` binary next to this one, else `gatehouse` on the PATH.
pub fn default_binary() -> PathBuf {
    if let Ok(exe) = std::env::current_exe()
        && let Some(dir) = exe.parent()
    {
        let sibling = dir.join("gatehouse");
        if sibling.exists() {
            return sibling;
        }
    }
    PathBuf::from("gatehouse")
}

impl Source {
    /// Seeds a template folder with `binary` (`gatehouse serve` on an empty folder seeds the
    /// demo tenants and writes `demo-connections.json`), then stops that server.
    pub fn fresh(binary: &Path) -> anyhow::Result<Self> {
        let template = tempfile::Builder::new()
            .prefix("gatehouse-evals-template-")
            .tempdir()?;
        let data = template.path().join("data");
        let (mut child, _url, lines) = spawn(binary, &data)?;
        let file = data.join("demo-connections.json");
        let deadline = std::time::Instant::now() + Duration::from_secs(120);
        loop {
            // The file is complete once the server says where it is.
            match lines.recv_timeout(Duration::from_millis(200)) {
                Ok(line) if line.contains("every demo token") => break,
                Ok(_) => {}
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    bail!("gatehouse serve stopped before seeding the demo tenants");
                }
            }
            if std::time::Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                bail!("gatehouse serve did not seed the demo tenants within 120 s");
            }
        }
        let _ = child.kill();
        let _ = child.wait();
        Connections::read(&file)?;
        Ok(Source::Fresh {
            binary: binary.to_owned(),
            template,
        })
    }

    /// An existing server at `url` with the connections in `file`.
    pub fn external(url: &str, file: &Path) -> anyhow::Result<Self> {
        Ok(Source::External {
            url: url.to_owned(),
            connections: Connections::read(file)?,
        })
    }

    /// A server for one scenario.
    pub fn start(&self) -> anyhow::Result<Running> {
        match self {
            Source::External { url, connections } => Ok(Running {
                url: url.clone(),
                connections: connections.clone(),
                child: None,
                _dir: None,
            }),
            Source::Fresh { binary, template } => {
                let dir = tempfile::Builder::new()
                    .prefix("gatehouse-evals-")
                    .tempdir()?;
                let data = dir.path().join("data");
                copy_dir(&template.path().join("data"), &data)?;
                let connections = Connections::read(&data.join("demo-connections.json"))?;
                let (child, url, lines) = spawn(binary, &data)?;
                // Keep draining stderr so the server never blocks on a full pipe.
                std::thread::spawn(move || for _ in lines {});
                Ok(Running {
                    url,
                    connections,
                    child: Some(child),
                    _dir: Some(dir),
                })
            }
        }
    }
}

fn copy_dir(from: &Path, to: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        if entry.file_type()?.is_file() {
            std::fs::copy(entry.path(), to.join(entry.file_name()))?;
        }
    }
    Ok(())
}

/// The day the demo is seeded as of. The scenarios name its bookings by date (the night the
/// clocks change in March 2055, the heat pump install on 7 June 2055) and make their own in the
/// weeks after, all far enough ahead never to pass (ADR 17); 2055 has 2027's calendar, for
/// which they were first written.
const DEMO_DAY: &str = "2054-12-01";

/// Starts `gatehouse serve --addr 127.0.0.1:0 --demo-as-of DEMO_DAY --data-dir DATA`; returns
/// the child, its URL
/// (from the first stderr line) and the remaining stderr lines.
fn spawn(binary: &Path, data: &Path) -> anyhow::Result<(Child, String, mpsc::Receiver<String>)> {
    let mut child = Command::new(binary)
        .args([
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--demo-as-of",
            DEMO_DAY,
            "--data-dir",
        ])
        .arg(data)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("starting {} serve", binary.display()))?;
    let stderr = child
        .stderr
        .take()
        .ok_or_else(|| anyhow!("no stderr pipe"))?;
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                // Nobody listens any more; keep reading so the pipe never fills.
                continue;
            }
        }
    });
    let Ok(first) = rx.recv_timeout(Duration::from_secs(60)) else {
        let _ = child.kill();
        let _ = child.wait();
        bail!("gatehouse serve printed nothing within 60 s");
    };
    let Some(url) = first
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .map(str::to_owned)
    else {
        let _ = child.kill();
        let _ = child.wait();
        bail!("gatehouse serve's first line has no URL: {first}");
    };
    Ok((child, url, rx))
}
