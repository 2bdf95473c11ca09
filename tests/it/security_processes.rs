//! The findings of issue 44 (ADR 48) that live in the `gatehouse` process itself: where the
//! demo may be, `serve`'s bounds on what one client holds, and where the CLI sends secrets.

use std::time::Duration;

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use crate::support::processes::{Place, run_on_folder, start_serve_printing_on};

/// `serve` on every address does not seed the demo (its passwords are published) and says
/// why; a store that holds the demo is not served there at all, and refuses a real workspace
/// until `gatehouse demo remove` (refused while a server holds the folder) empties it for good.
#[tokio::test]
async fn the_demo_stays_where_nothing_else_reaches_it() {
    let dir = tempfile::tempdir().unwrap();
    let wide = dir.path().join("wide");
    let (server, _, printed) =
        start_serve_printing_on(&Place::Folder(wide.clone()), "0.0.0.0:0", &[]);
    assert!(
        printed.iter().any(|l| l.contains("no demo:")),
        "{printed:#?}"
    );
    drop(server);
    let (_, listed, _) = run_on_folder(&["tenant", "list"], &wide, "");
    assert!(listed.is_empty(), "nothing seeded: {listed}");
    assert!(!wide.join("demo-connections.json").exists());

    let data = dir.path().join("demo");
    let place = Place::Folder(data.clone());
    let (server, _, _) = start_serve_printing_on(&place, "127.0.0.1:0", &[]);
    let (ok, _, err) = run_on_folder(&crate::support::processes::MYCOMPANY, &data, "");
    assert!(!ok && err.contains("gatehouse demo remove"), "{err}");
    let (ok, _, err) = run_on_folder(&["demo", "remove"], &data, "");
    assert!(
        !ok && err.contains("stop it"),
        "a running server holds it: {err}"
    );
    drop(server);
    let (ok, _, err) = run_on_folder(&["serve", "--addr", "0.0.0.0:0"], &data, "");
    assert!(!ok && err.contains("holds the demo"), "{err}");
    let (ok, out, err) = run_on_folder(&["demo", "remove"], &data, "");
    assert!(ok, "{err}");
    assert!(out.contains("removed the demo"), "{out}");
    assert!(!data.join("demo-connections.json").exists());
    let (ok, _, err) = run_on_folder(&crate::support::processes::MYCOMPANY, &data, "");
    assert!(ok, "a real workspace now: {err}");
    let (server, _, printed) = start_serve_printing_on(&place, "127.0.0.1:0", &[]);
    assert!(
        !printed.iter().any(|l| l.contains("acme")),
        "never seeded again: {printed:#?}"
    );
    drop(server);
    let (_, listed, _) = run_on_folder(&["tenant", "list"], &data, "");
    assert_eq!(listed.lines().count(), 1, "{listed}");
    let (ok, _, err) = run_on_folder(&["demo", "remove"], &data, "");
    assert!(!ok && err.contains("holds no demo"), "{err}");
}

/// Operators can be given a new password and removed from the command line (before, the demo
/// operator could never be removed).
#[tokio::test]
async fn operators_are_removed_and_get_new_passwords() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let email = "ops@example.com";
    let create = ["operator", "create", "--email", email, "--password-stdin"];
    let (ok, _, err) = run_on_folder(&create, &data, "first password\n");
    assert!(ok, "{err}");
    let (ok, _, err) = run_on_folder(
        &["operator", "password", "--email", email],
        &data,
        "second password\n",
    );
    assert!(ok, "{err}");
    let store = Place::Folder(data.clone()).store();
    let checked = accounts::operators::check_password(store.as_ref(), email, "second password");
    assert!(checked.await.unwrap().is_some());
    let (ok, _, err) = run_on_folder(&["operator", "remove", "--email", email], &data, "");
    assert!(ok, "{err}");
    assert!(!accounts::operators::any(store.as_ref()).await.unwrap());
    let (ok, _, err) = run_on_folder(&["operator", "remove", "--email", email], &data, "");
    assert!(!ok && err.contains("not an operator"), "{err}");
}

/// Reads until the server closes the connection or `within` passes; whether it closed.
async fn closed_within(stream: &mut tokio::net::TcpStream, within: Duration) -> bool {
    let mut buf = [0u8; 1024];
    let ended = tokio::time::timeout(within, async {
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    });
    ended.await.is_ok()
}

/// A head sent halfway is closed after the header timeout, an idle connection after the idle
/// timeout, and past the cap a connection is not served until another closes; answers go on
/// meanwhile. Before, 50 half-sent requests were all open after 35 s.
#[tokio::test]
async fn serve_bounds_what_one_client_holds() {
    let dir = tempfile::tempdir().unwrap();
    let place = Place::Folder(dir.path().join("data"));
    let flags = [
        "--no-demo",
        "--header-timeout",
        "1",
        "--idle-timeout",
        "3",
        "--max-connections",
        "8",
    ];
    let (_server, addr, _) = start_serve_printing_on(&place, "127.0.0.1:0", &flags);
    let mut half = Vec::new();
    for _ in 0..6 {
        let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
        s.write_all(b"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-")
            .await
            .unwrap();
        half.push(s);
    }
    let mut idle = tokio::net::TcpStream::connect(addr).await.unwrap();
    for s in &mut half {
        assert!(
            closed_within(s, Duration::from_secs(10)).await,
            "a half-sent head stayed open"
        );
    }
    assert!(
        closed_within(&mut idle, Duration::from_secs(10)).await,
        "an idle connection stayed open"
    );
    // Eight open connections fill the cap: a ninth is not answered until one closes.
    let mut held = Vec::new();
    for _ in 0..8 {
        held.push(tokio::net::TcpStream::connect(addr).await.unwrap());
    }
    let ninth = mcp_test_client::TestClient::http(addr);
    let waiting = tokio::time::timeout(
        Duration::from_millis(500),
        ninth.send(http::Method::GET, "/healthz", &[], bytes::Bytes::new()),
    );
    assert!(waiting.await.is_err(), "served past the cap");
    drop(held);
    let answered = ninth
        .send(http::Method::GET, "/healthz", &[], bytes::Bytes::new())
        .await;
    assert_eq!(answered.status, 200);
}

/// A webhook URL's plain-HTTP exception is for this machine's exact names, not a prefix.
#[test]
fn a_webhook_is_plain_http_only_to_this_machine() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    run_on_folder(&crate::support::processes::MYCOMPANY, &data, "");
    let secret = "0123456789abcdef0123456789abcdef";
    for url in [
        "http://127.0.0.1.attacker.example/hook",
        "http://localhost:80@attacker.example/",
    ] {
        let out = std::process::Command::new(crate::support::processes::gatehouse_binary())
            .args(["outbox", "dispatch", "--data-dir"])
            .arg(&data)
            .env("GATEHOUSE_WEBHOOK_URL", url)
            .env("GATEHOUSE_WEBHOOK_SECRET", secret)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && err.contains("GATEHOUSE_WEBHOOK_URL"),
            "{url}: {err}"
        );
    }
}

/// `--edge-url` sends the deployment's admin token over https, or plain http only to this
/// machine: another host is refused before anything is sent.
#[test]
fn the_admin_token_never_travels_in_the_clear() {
    let out = std::process::Command::new(crate::support::processes::gatehouse_binary())
        .args([
            "tenant",
            "list",
            "--edge-url",
            "http://gatehouse.example.com",
        ])
        .env(
            "GATEHOUSE_EDGE_ADMIN_TOKEN",
            "a-token-0123456789abcdef0123456789",
        )
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("in the clear"),
        "{err}"
    );
}
