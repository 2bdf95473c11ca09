//! The `gatehouse` binary as its users run it: administration commands and `serve`
//! processes, on a data folder or on a table of the local DynamoDB server ([`Place`]).

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;

use serde_json::Value;

/// Where a process keeps its store.
#[derive(Debug, Clone)]
pub(crate) enum Place {
    /// The embedded store in this data folder.
    Folder(PathBuf),
    /// A table of the DynamoDB server at `endpoint`.
    Table { table: String, endpoint: String },
}

impl Place {
    /// Points `command` at this place.
    fn apply<'a>(&self, command: &'a mut Command) -> &'a mut Command {
        match self {
            Place::Folder(dir) => command.arg("--data-dir").arg(dir),
            Place::Table { table, endpoint } => command
                .env("GATEHOUSE_TABLE", table)
                .env("GATEHOUSE_DYNAMODB_ENDPOINT", endpoint)
                .env("AWS_ACCESS_KEY_ID", "test")
                .env("AWS_SECRET_ACCESS_KEY", "test")
                .env("AWS_REGION", "us-east-1"),
        }
    }

    /// The store itself, to look at what the processes left.
    pub(crate) fn store(&self) -> Arc<dyn store::Store> {
        match self {
            Place::Folder(dir) => {
                Arc::new(store_sqlite::SqliteStore::open(dir.join("gatehouse.db")).unwrap())
            }
            Place::Table { table, endpoint } => {
                Arc::new(store_dynamodb::DynamoStore::local(endpoint, table))
            }
        }
    }
}

/// The `gatehouse` binary built next to this test binary (tests/run builds it first).
pub(crate) fn gatehouse_binary() -> PathBuf {
    binary("gatehouse")
}

/// The binary `name` (a package's of the same name) built next to this test binary (tests/run
/// builds it first).
pub(crate) fn binary(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    let dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target dir");
    let bin = dir.join(name);
    assert!(
        bin.exists(),
        "{} is missing: run `cargo build -p {name}` first (tests/run does)",
        bin.display()
    );
    bin
}

/// Runs `binary` (a product's program) with `args` on the data folder `data`; returns whether
/// it succeeded, its stdout and its stderr.
pub(crate) fn run_binary(binary: &Path, args: &[&str], data: &Path) -> (bool, String, String) {
    run_program(binary, args, data, "")
}

/// With `binary` (a product's program) on the data folder `data`: the workspace `create`
/// makes (`tenant create ...`), its owner `ana`, and her connection; returns its MCP token.
pub(crate) fn program_token(binary: &Path, data: &Path, create: &[&str]) -> String {
    let tenant = create.get(2).copied().expect("tenant create ID ...");
    let owner = [
        "member", "set", "--tenant", tenant, "--member", "ana", "--role", "owner",
    ];
    let token = [
        "token", "create", "--tenant", tenant, "--member", "ana", "--client", "tests", "--json",
    ];
    let mut out = String::new();
    for args in [create, &owner[..], &token[..]] {
        let (made, stdout, err) = run_binary(binary, args, data);
        assert!(made, "{args:?}: {err}");
        out = stdout;
    }
    let created: Value = serde_json::from_str(&out).expect("token create --json");
    created["token"].as_str().expect("a token").to_owned()
}

/// Starts `binary serve` on a free loopback port on the data folder `data`; returns the
/// process and its address.
pub(crate) fn start_binary_serve(binary: &Path, data: &Path) -> (Running, std::net::SocketAddr) {
    let (running, addr, _) = start_binary_serve_printing(binary, data);
    (running, addr)
}

/// As [`start_binary_serve`], with the lines it printed before it was ready.
pub(crate) fn start_binary_serve_printing(
    binary: &Path,
    data: &Path,
) -> (Running, std::net::SocketAddr, Vec<String>) {
    let place = Place::Folder(data.to_owned());
    start_binary_serve_with(binary, &place, "127.0.0.1:0", &[])
}

/// Starts `binary serve` (gatehouse's, or a product's own program) on `addr` on `place` with
/// `extra` arguments; returns the process, its address and the lines it printed before it was
/// ready.
pub(crate) fn start_binary_serve_with(
    binary: &Path,
    place: &Place,
    addr: &str,
    extra: &[&str],
) -> (Running, std::net::SocketAddr, Vec<String>) {
    let mut command = Command::new(binary);
    command.args(["serve", "--addr", addr]).args(extra);
    spawn_serve_printing(place, &mut command)
}

/// A child process killed when dropped.
pub(crate) struct Running(pub(crate) Child);

impl Running {
    /// Stops the process as service managers do (SIGTERM) and waits until it exits.
    pub(crate) fn terminate(mut self) -> std::process::ExitStatus {
        let pid = self.0.id().to_string();
        let sent = Command::new("kill").args(["-TERM", &pid]).status();
        assert!(sent.is_ok_and(|s| s.success()), "kill -TERM {pid}");
        self.0.wait().expect("wait for the process")
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The command that creates the workspace `acme`.
pub(crate) const ACME: [&str; 11] = [
    "tenant",
    "create",
    "acme",
    "--name",
    "Acme",
    "--zone",
    "Europe/Berlin",
    "--currency",
    "EUR",
    "--tax-rate",
    "19",
];

/// `tenant create` of a workspace named otherwise than the demo's.
pub(crate) const MYCOMPANY: [&str; 11] = [
    "tenant",
    "create",
    "mycompany",
    "--name",
    "My Company",
    "--zone",
    "Europe/Berlin",
    "--currency",
    "EUR",
    "--tax-rate",
    "19",
];

/// Runs `command` (a `gatehouse` command whose arguments are `args`), which must succeed;
/// returns its stdout.
pub(crate) fn succeed(command: &mut Command, args: &[&str]) -> String {
    let out = command.output().expect("run gatehouse");
    assert!(
        out.status.success(),
        "gatehouse {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Runs a `gatehouse` administration command on the data folder and returns its stdout.
pub(crate) fn gatehouse(args: &[&str], data_dir: &Path) -> String {
    gatehouse_on(args, &Place::Folder(data_dir.to_owned()))
}

/// Runs a `gatehouse` administration command on `place` and returns its stdout.
pub(crate) fn gatehouse_on(args: &[&str], place: &Place) -> String {
    let mut command = Command::new(gatehouse_binary());
    command.args(args);
    succeed(place.apply(&mut command), args)
}

/// Adds an owner and creates a connection with the CLI on the data folder; returns the token.
pub(crate) fn cli_token(data_dir: &Path) -> String {
    cli_token_on(&Place::Folder(data_dir.to_owned()))
}

/// Adds an owner and creates a connection with the CLI on `place`; returns the token.
pub(crate) fn cli_token_on(place: &Place) -> String {
    // The workspace, unless the demo seeding made it already (a folder without a store has
    // none: commands other than set-up ones refuse to run there).
    let no_store = matches!(place, Place::Folder(dir) if !dir.join("gatehouse.db").exists());
    if no_store || !gatehouse_on(&["tenant", "list"], place).contains("acme\t") {
        gatehouse_on(&ACME, place);
    }
    let owner = [
        "member", "set", "--tenant", "acme", "--member", "ana", "--role", "owner",
    ];
    gatehouse_on(&owner, place);
    let create = [
        "token",
        "create",
        "--tenant",
        "acme",
        "--member",
        "ana",
        "--client",
        "transport tests",
        "--json",
    ];
    let created: Value = serde_json::from_str(&gatehouse_on(&create, place)).unwrap();
    created["token"].as_str().unwrap().to_owned()
}

/// Starts `gatehouse serve` on a free port on the data folder; returns the process and its
/// address.
pub(crate) fn start_serve(data_dir: &Path) -> (Running, std::net::SocketAddr) {
    start_serve_on(&Place::Folder(data_dir.to_owned()))
}

/// Starts `gatehouse serve` on a free port on `place`; returns the process and its address.
pub(crate) fn start_serve_on(place: &Place) -> (Running, std::net::SocketAddr) {
    start_serve_with(place, "127.0.0.1:0", &[])
}

/// Starts `gatehouse serve` on `addr` on `place` with `extra` arguments; returns the process
/// and its address.
pub(crate) fn start_serve_with(
    place: &Place,
    addr: &str,
    extra: &[&str],
) -> (Running, std::net::SocketAddr) {
    let (running, addr, _) = start_binary_serve_with(&gatehouse_binary(), place, addr, extra);
    (running, addr)
}

/// Starts `gatehouse serve` on a free port on `place`, allowed at most `limit` open files (as
/// `ulimit -n` sets it); returns the process and its address.
pub(crate) fn start_serve_with_open_files(
    place: &Place,
    limit: u32,
) -> (Running, std::net::SocketAddr) {
    start_serve_after(place, &format!("ulimit -n {limit}"))
}

/// Starts `gatehouse serve` on a free port on `place` from a shell that runs `setup` first
/// (`umask 022`, `ulimit -n 64`); returns the process and its address.
pub(crate) fn start_serve_after(place: &Place, setup: &str) -> (Running, std::net::SocketAddr) {
    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg(format!("{setup} && exec \"$@\""))
        .arg("sh")
        .arg(gatehouse_binary())
        .args(["serve", "--addr", "127.0.0.1:0"]);
    spawn_serve(place, &mut command)
}

/// Spawns `command` (a `serve`) on `place` and waits until it says it is ready.
fn spawn_serve(place: &Place, command: &mut Command) -> (Running, std::net::SocketAddr) {
    let (running, addr, _) = spawn_serve_printing(place, command);
    (running, addr)
}

/// Starts `gatehouse serve` on a free port of loopback on `place` with `extra` arguments;
/// returns the process, its address and the lines it printed before it was ready.
pub(crate) fn start_serve_printing(
    place: &Place,
    extra: &[&str],
) -> (Running, std::net::SocketAddr, Vec<String>) {
    start_serve_printing_on(place, "127.0.0.1:0", extra)
}

/// As [`start_serve_printing`], listening on `addr`; the address returned is the one `serve`
/// printed for clients.
pub(crate) fn start_serve_printing_on(
    place: &Place,
    addr: &str,
    extra: &[&str],
) -> (Running, std::net::SocketAddr, Vec<String>) {
    start_binary_serve_with(&gatehouse_binary(), place, addr, extra)
}

/// Spawns `command` (a `serve`) on `place`; returns it, where it serves and what it printed
/// until it said it is ready.
fn spawn_serve_printing(
    place: &Place,
    command: &mut Command,
) -> (Running, std::net::SocketAddr, Vec<String>) {
    let mut child = place
        .apply(command)
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("start gatehouse serve");
    let stderr = child.stderr.take().expect("stderr");
    let mut lines = BufReader::new(stderr).lines();
    let mut printed = Vec::new();
    let mut addr = None;
    loop {
        let line = lines
            .next()
            .unwrap_or_else(|| panic!("serve stopped before it was ready: {printed:#?}"))
            .expect("readable");
        let url = line.split_whitespace().find(|w| w.starts_with("http://"));
        if let (None, Some(url)) = (addr, url) {
            let host = url.trim_start_matches("http://").trim_end_matches("/mcp");
            addr = Some(host.parse().expect("an address"));
        }
        let ready = line.starts_with("gatehouse: ready");
        printed.push(line);
        if ready {
            break;
        }
    }
    // Keep draining stderr so the server never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    (
        Running(child),
        addr.expect("serve said where it serves"),
        printed,
    )
}

/// The commands a `serve` printed for its user to paste (indented lines that begin with
/// `gatehouse`),
/// each split into its words as a shell would.
pub(crate) fn printed_commands(printed: &[String]) -> Vec<Vec<String>> {
    printed_commands_of(printed, "gatehouse")
}

/// The commands a `serve` of `program` printed for its user to paste (indented lines that begin
/// with the program's name), each split into its words after the name.
pub(crate) fn printed_commands_of(printed: &[String], program: &str) -> Vec<Vec<String>> {
    let start = format!("    {program} ");
    printed
        .iter()
        .filter(|line| line.starts_with(&start))
        .map(|line| shell_words(line.trim())[1..].to_vec())
        .collect()
}

/// `line` split into words: blanks separate them, single or double quotes keep blanks in, and
/// a backslash outside quotes keeps the next character as it is.
fn shell_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let (mut word, mut quote, mut started) = (String::new(), None, false);
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (None, '\\') => {
                word.extend(chars.next());
                started = true;
            }
            (Some(_), c) => word.push(c),
            (None, '"' | '\'') => (quote, started) = (Some(c), true),
            (None, c) if c.is_whitespace() => {
                if started {
                    words.push(std::mem::take(&mut word));
                }
                started = false;
            }
            (None, c) => {
                word.push(c);
                started = true;
            }
        }
    }
    if started {
        words.push(word);
    }
    words
}

/// `gatehouse serve` on a new data folder, with a client holding a token made by the CLI.
pub(crate) struct ServedFolder {
    /// The data folder (inside a temporary directory kept as long as this).
    pub(crate) data: PathBuf,
    /// The running `serve` (killed when dropped).
    pub(crate) server: Running,
    /// A client of it with the token's `Authorization` header.
    pub(crate) client: mcp_test_client::TestClient,
    _dir: tempfile::TempDir,
}

/// Starts `gatehouse serve` on a new data folder with an owner's connection (see [`cli_token`]).
pub(crate) fn serve_new_folder() -> ServedFolder {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let token = cli_token(&data);
    let (server, addr) = start_serve(&data);
    let client = mcp_test_client::TestClient::http(addr)
        .with_header("authorization", &format!("Bearer {token}"));
    ServedFolder {
        data,
        server,
        client,
        _dir: dir,
    }
}

/// `gatehouse stdio` on the data folder `dir` with `GATEHOUSE_TOKEN=token`, its standard
/// streams piped.
pub(crate) fn stdio_child(dir: &Path, token: &str) -> Child {
    Command::new(gatehouse_binary())
        .args(["stdio", "--data-dir"])
        .arg(dir)
        .env("GATEHOUSE_TOKEN", token)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start gatehouse stdio")
}

/// Runs `gatehouse` with `args` on the data folder `data`, `stdin` on its standard input;
/// returns whether it succeeded, its stdout and its stderr (for commands that must fail).
pub(crate) fn run_on_folder(args: &[&str], data: &Path, stdin: &str) -> (bool, String, String) {
    run_program(&gatehouse_binary(), args, data, stdin)
}

/// Runs `binary` with `args` on the data folder `data`, `stdin` on its standard input; returns
/// whether it succeeded, its stdout and its stderr.
fn run_program(binary: &Path, args: &[&str], data: &Path, stdin: &str) -> (bool, String, String) {
    use std::io::Write as _;
    let mut child = Command::new(binary)
        .args(args)
        .arg("--data-dir")
        .arg(data)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run gatehouse");
    let _ = child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin.as_bytes());
    let out = child.wait_with_output().expect("gatehouse ran");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The status line and body of `GET path` at `addr`, over a plain connection that closes after
/// the answer (for the addresses `serve` opens beside the MCP one).
pub(crate) fn plain_get(addr: &str, path: &str) -> (String, String) {
    use std::io::{Read as _, Write as _};
    let mut stream = std::net::TcpStream::connect(addr).expect("connect");
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
    let status = head.lines().next().unwrap_or_default().to_owned();
    (status, body.to_owned())
}
