//! The one Runtime API call the function makes itself: reporting a failed cold start to
//! `POST /2018-06-01/runtime/init/error`, so Lambda shows the reason (a missing or malformed
//! variable, an unreadable secret) as the init error instead of a bare exit. Everything else
//! (`next`, `response`, `error`) is `lambda_runtime`'s.

use anyhow::{Context as _, bail};

/// Posts `{"errorMessage", "errorType"}` to the Runtime API at `api` (`host:port`, the value of
/// `AWS_LAMBDA_RUNTIME_API`), with the workspace's one HTTP client.
pub(crate) async fn report_init_error(
    api: &str,
    error_type: &str,
    message: &str,
) -> anyhow::Result<()> {
    let body = serde_json::json!({"errorMessage": message, "errorType": error_type}).to_string();
    let client = http_client::HttpClient::new(std::time::Duration::from_secs(5))?;
    let kind = format!("Runtime.{error_type}");
    let answer = client
        .post(
            &format!("http://{api}/2018-06-01/runtime/init/error"),
            &[
                ("lambda-runtime-function-error-type", kind.as_str()),
                ("content-type", "application/json"),
            ],
            body.into(),
        )
        .await
        .with_context(|| format!("the Runtime API at {api} is not reachable"))?;
    if !(200..300).contains(&answer.status) {
        bail!(
            "the Runtime API answered {} to the init error",
            answer.status
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

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
                        .find_map(|l| {
                            l.to_lowercase()
                                .strip_prefix("content-length: ")
                                .map(str::to_owned)
                        })
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
        assert!(
            request
                .to_lowercase()
                .contains("lambda-runtime-function-error-type: runtime.configerror\r\n"),
            "{request}"
        );
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
