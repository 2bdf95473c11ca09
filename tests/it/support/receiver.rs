//! A webhook receiver on 127.0.0.1 for the outbox tests: it answers each request as its
//! script says (a status, or no answer for a while), then 200, and keeps every request it got.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

/// How the receiver answers one request.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Answer {
    /// This status.
    Status(u16),
    /// Nothing for this long (then 200, too late for a short deadline).
    Hang(Duration),
    /// This status with `Retry-After` in seconds.
    Busy(u16, u64),
}

/// A request the receiver got: its headers (lower-case names) and body.
#[derive(Debug, Clone)]
pub(crate) struct Received {
    pub(crate) headers: BTreeMap<String, String>,
    pub(crate) body: String,
}

impl Received {
    /// Whether the request is signed with `secret`, as a receiver checks it: the HMAC over its
    /// signature's timestamp and its body.
    pub(crate) fn is_signed_with(&self, secret: &[u8]) -> bool {
        let signed = &self.headers["gatehouse-signature"];
        let t: i64 = signed
            .split(',')
            .next()
            .and_then(|p| p.strip_prefix("t="))
            .and_then(|t| t.parse().ok())
            .expect("a signature with its time");
        *signed == outbox::signature(secret, t, self.body.as_bytes())
    }
}

/// The receiver.
#[derive(Clone)]
pub(crate) struct Receiver {
    pub(crate) url: String,
    script: Arc<Mutex<VecDeque<Answer>>>,
    got: Arc<Mutex<Vec<Received>>>,
}

impl Receiver {
    /// A receiver answering by `script`, then 200.
    pub(crate) async fn start(script: Vec<Answer>) -> Receiver {
        Self::start_at(0, script).await
    }

    /// [`Receiver::start`] on `port` of 127.0.0.1 (0: any free one), for a sender configured
    /// before the test (the edge's worker, `tests/edge.sh`).
    pub(crate) async fn start_at(port: u16, script: Vec<Answer>) -> Receiver {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
            .await
            .unwrap_or_else(|e| panic!("the webhook receiver cannot listen on port {port}: {e}"));
        let url = format!("http://{}/hooks/gatehouse", listener.local_addr().unwrap());
        let receiver = Receiver {
            url,
            script: Arc::new(Mutex::new(script.into())),
            got: Arc::default(),
        };
        let serving = receiver.clone();
        tokio::spawn(async move {
            loop {
                let Ok((socket, _)) = listener.accept().await else {
                    return;
                };
                let serving = serving.clone();
                tokio::spawn(async move { serving.answer(socket).await });
            }
        });
        receiver
    }

    /// Every request so far.
    pub(crate) fn received(&self) -> Vec<Received> {
        self.got.lock().unwrap().clone()
    }

    /// Answers the next requests by `script`, then 200.
    pub(crate) fn answer_next(&self, script: Vec<Answer>) {
        *self.script.lock().unwrap() = script.into();
    }

    /// Answers 200 from now on.
    pub(crate) fn recover(&self) {
        self.script.lock().unwrap().clear();
    }

    async fn answer(&self, mut socket: tokio::net::TcpStream) {
        let Some(request) = read_request(&mut socket).await else {
            return;
        };
        self.got.lock().unwrap().push(request);
        let next = self.script.lock().unwrap().pop_front();
        let (status, extra) = match next {
            Some(Answer::Status(status)) => (status, String::new()),
            Some(Answer::Hang(how_long)) => {
                tokio::time::sleep(how_long).await;
                (200, String::new())
            }
            Some(Answer::Busy(status, seconds)) => (status, format!("retry-after: {seconds}\r\n")),
            None => (200, String::new()),
        };
        let response =
            format!("HTTP/1.1 {status} X\r\n{extra}content-length: 0\r\nconnection: close\r\n\r\n");
        let _ = socket.write_all(response.as_bytes()).await;
    }
}

async fn read_request(socket: &mut tokio::net::TcpStream) -> Option<Received> {
    let mut raw = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = socket.read(&mut buf).await.ok()?;
        if n == 0 {
            return None;
        }
        raw.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&raw).to_string();
        let Some((head, body)) = text.split_once("\r\n\r\n") else {
            continue;
        };
        let headers: BTreeMap<String, String> = head
            .lines()
            .skip(1)
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_lowercase(), v.trim().to_owned()))
            .collect();
        let length: usize = headers
            .get("content-length")
            .and_then(|l| l.parse().ok())
            .unwrap_or(0);
        if body.len() >= length {
            return Some(Received {
                headers,
                body: body.to_owned(),
            });
        }
    }
}
