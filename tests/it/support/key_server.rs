//! An authorization server's key endpoint on 127.0.0.1 for the key-set tests: it serves the
//! key set it currently holds (or an error status), each answer after a set delay, and counts
//! and keeps the requests it got (their heads: line and headers).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

#[derive(Debug)]
struct Serving {
    status: u16,
    body: String,
    delay: Duration,
}

/// The key endpoint.
#[derive(Clone)]
pub(crate) struct KeyServer {
    pub(crate) url: String,
    serving: Arc<Mutex<Serving>>,
    requests: Arc<AtomicUsize>,
    heads: Arc<Mutex<Vec<String>>>,
}

impl KeyServer {
    /// An endpoint serving `keys`, each answer after `delay`.
    pub(crate) async fn start(keys: &Value, delay: Duration) -> KeyServer {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let server = KeyServer {
            url: format!("http://{}/jwks.json", listener.local_addr().unwrap()),
            serving: Arc::new(Mutex::new(Serving {
                status: 200,
                body: keys.to_string(),
                delay,
            })),
            requests: Arc::default(),
            heads: Arc::default(),
        };
        let answering = server.clone();
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                let answering = answering.clone();
                tokio::spawn(async move { answering.answer(socket).await });
            }
        });
        server
    }

    /// Serves `keys` from now on (the issuer rotated).
    pub(crate) fn serve(&self, keys: &Value) {
        let mut serving = self.serving.lock().unwrap();
        serving.status = 200;
        serving.body = keys.to_string();
    }

    /// Answers `status` with no key set from now on (the issuer's endpoint is down).
    pub(crate) fn fail(&self, status: u16) {
        self.serving.lock().unwrap().status = status;
    }

    /// Requests answered or being answered so far.
    pub(crate) fn requests(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }

    /// The heads (request line and headers) of every request so far.
    pub(crate) fn heads(&self) -> Vec<String> {
        self.heads.lock().unwrap().clone()
    }

    async fn answer(&self, mut socket: tokio::net::TcpStream) {
        let mut head = Vec::new();
        let mut buf = [0u8; 1024];
        while !head.windows(4).any(|w| w == b"\r\n\r\n") {
            match socket.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => head.extend_from_slice(&buf[..n]),
            }
        }
        self.requests.fetch_add(1, Ordering::SeqCst);
        let text = String::from_utf8_lossy(&head).into_owned();
        self.heads.lock().unwrap().push(text);
        let (status, body, delay) = {
            let s = self.serving.lock().unwrap();
            (s.status, s.body.clone(), s.delay)
        };
        tokio::time::sleep(delay).await;
        let body = if status == 200 { body } else { String::new() };
        let response = format!(
            "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
        let _ = socket.write_all(response.as_bytes()).await;
    }
}
