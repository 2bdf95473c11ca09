//! The one Runtime API call the function makes itself: reporting a failed cold start to
//! `POST /2018-06-01/runtime/init/error`, so Lambda shows the reason (a missing or malformed
//! variable, an unreadable secret) as the init error instead of a bare exit. Everything else
//! (`next`, `response`, `error`) is `lambda_runtime`'s.

use anyhow::{Context as _, bail};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _};

/// Posts `{"errorMessage", "errorType"}` to the Runtime API at `api` (`host:port`, the value of
/// `AWS_LAMBDA_RUNTIME_API`).
pub(crate) async fn report_init_error(
    api: &str,
    error_type: &str,
    message: &str,
) -> anyhow::Result<()> {
    let body = serde_json::json!({"errorMessage": message, "errorType": error_type}).to_string();
    let mut stream = tokio::net::TcpStream::connect(api)
        .await
        .with_context(|| format!("the Runtime API at {api} is not reachable"))?;
    let request = format!(
        "POST /2018-06-01/runtime/init/error HTTP/1.1\r\nHost: {api}\r\n\
         Lambda-Runtime-Function-Error-Type: Runtime.{error_type}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await?;
    // The status line is all that matters; the process exits next, whether or not the server
    // closes the connection.
    let mut status_line = String::new();
    tokio::io::BufReader::new(stream)
        .read_line(&mut status_line)
        .await?;
    let status = status_line.split_whitespace().nth(1).unwrap_or("?");
    if !status.starts_with('2') {
        bail!("the Runtime API answered {status} to the init error");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncReadExt as _;

    use super::*;

    #[tokio::test]
    async fn posts_the_error_as_lambda_expects() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let server = tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut raw = Vec::new();
            let mut buf = [0u8; 4096];
            // Read until the declared body is complete.
            loop {
                let n = socket.read(&mut buf).await.unwrap();
                raw.extend_from_slice(&buf[..n]);
                let text = String::from_utf8_lossy(&raw).to_string();
                if let Some((head, body)) = text.split_once("\r\n\r\n") {
                    let len: usize = head
                        .lines()
                        .find_map(|l| l.strip_prefix("Content-Length: "))
                        .unwrap()
                        .parse()
                        .unwrap();
                    if body.len() >= len {
                        break;
                    }
                }
            }
            socket
                .write_all(
                    b"HTTP/1.1 202 Accepted\r\nContent-Length: 16\r\n\r\n{\"status\":\"OK\"}\n",
                )
                .await
                .unwrap();
            String::from_utf8(raw).unwrap()
        });
        report_init_error(&addr, "ConfigError", "GATEHOUSE_TABLE is missing")
            .await
            .unwrap();
        let request = server.await.unwrap();
        assert!(
            request.starts_with("POST /2018-06-01/runtime/init/error HTTP/1.1\r\n"),
            "{request}"
        );
        assert!(request.contains("Lambda-Runtime-Function-Error-Type: Runtime.ConfigError\r\n"));
        let body: serde_json::Value =
            serde_json::from_str(request.split_once("\r\n\r\n").unwrap().1).unwrap();
        assert_eq!(
            body,
            serde_json::json!({"errorMessage": "GATEHOUSE_TABLE is missing", "errorType": "ConfigError"})
        );
    }

    #[tokio::test]
    async fn an_unreachable_api_is_an_error() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        drop(listener);
        let err = report_init_error(&addr, "ConfigError", "x")
            .await
            .unwrap_err();
        assert!(err.to_string().contains("Runtime API"), "{err}");
    }
}
