//! The AWS Parameters and Secrets Lambda Extension as a function sees it: Systems Manager
//! parameters served on 127.0.0.1, every request remembered (path and session token).

use std::io::{BufReader, Write as _};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

/// The extension.
pub(crate) struct ParameterExtension {
    pub(crate) port: u16,
    asked: Arc<Mutex<Vec<String>>>,
}

impl ParameterExtension {
    /// Serves each `(name, value)`; any other name is 400, as the extension answers.
    pub(crate) fn serving(parameters: &[(&str, &str)]) -> ParameterExtension {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let asked = Arc::new(Mutex::new(Vec::new()));
        let parameters: Vec<(String, String)> = parameters
            .iter()
            .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
            .collect();
        let log = Arc::clone(&asked);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                let Some((path, token)) = read_head(&mut BufReader::new(&stream)) else {
                    continue;
                };
                log.lock().unwrap().push(format!("{path} with {token}"));
                let found = parameters
                    .iter()
                    .find(|(name, _)| path.ends_with(&encode(name)));
                let (status, body) = match found {
                    Some((name, value)) => (
                        "200 OK",
                        serde_json::json!({"Parameter": {"Name": name, "Value": value}})
                            .to_string(),
                    ),
                    None => ("400 Bad Request", String::new()),
                };
                let _ = write!(
                    stream,
                    "HTTP/1.1 {status}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
            }
        });
        ParameterExtension { port, asked }
    }

    /// Every request so far, as `<path> with <session token>`.
    pub(crate) fn asked(&self) -> Vec<String> {
        self.asked.lock().unwrap().clone()
    }
}

/// The request's path and its `x-aws-parameters-secrets-token`.
fn read_head(reader: &mut impl std::io::BufRead) -> Option<(String, String)> {
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let path = line.split_whitespace().nth(1)?.to_owned();
    let mut token = String::new();
    loop {
        line.clear();
        reader.read_line(&mut line).ok()?;
        let header = line.trim_end();
        if header.is_empty() {
            return Some((path, token));
        }
        if let Some((k, v)) = header.split_once(':')
            && k.eq_ignore_ascii_case("x-aws-parameters-secrets-token")
        {
            token = v.trim().to_owned();
        }
    }
}

fn encode(name: &str) -> String {
    name.replace('/', "%2F")
}
