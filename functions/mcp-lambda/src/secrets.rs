//! Reading a secret at cold start through the AWS Parameters and Secrets Lambda Extension,
//! which serves Secrets Manager on localhost. No AWS SDK is needed here (only the store crate
//! links one), and the secret never sits in the function's environment.

use anyhow::{Context as _, bail};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

/// The extension's default port.
const DEFAULT_PORT: u16 = 2773;

fn percent_encode(text: &str) -> String {
    text.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                char::from(b).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// The `SecretString` of the secret `secret_id`, from the extension on `port`, authenticated
/// with the function's session token.
pub(crate) async fn fetch(
    port: u16,
    secret_id: &str,
    session_token: &str,
) -> anyhow::Result<String> {
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .with_context(|| {
            format!("the secrets extension is not listening on port {port}; is its layer attached?")
        })?;
    let request = format!(
        "GET /secretsmanager/get?secretId={} HTTP/1.1\r\nHost: localhost\r\nX-Aws-Parameters-Secrets-Token: {session_token}\r\nConnection: close\r\n\r\n",
        percent_encode(secret_id)
    );
    stream.write_all(request.as_bytes()).await?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).await?;
    let text = String::from_utf8_lossy(&raw);
    let (head, body) = text
        .split_once("\r\n\r\n")
        .context("the secrets extension sent no HTTP response")?;
    let status = head.split_whitespace().nth(1).unwrap_or("?");
    if status != "200" {
        bail!("the secrets extension answered {status} for the requestState key");
    }
    let json: serde_json::Value =
        serde_json::from_str(body.trim()).context("the secrets extension's answer is not JSON")?;
    json.get("SecretString")
        .and_then(serde_json::Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .context("the secret has no SecretString")
}

/// The port from `PARAMETERS_SECRETS_EXTENSION_HTTP_PORT`, else the default.
pub(crate) fn port() -> u16 {
    std::env::var("PARAMETERS_SECRETS_EXTENSION_HTTP_PORT")
        .ok()
        .and_then(|p| p.parse().ok())
        .unwrap_or(DEFAULT_PORT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn reads_the_secret_string_with_the_session_token() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut buf = vec![0u8; 4096];
            let n = socket.read(&mut buf).await.unwrap();
            let request = String::from_utf8_lossy(&buf[..n]).to_string();
            let body = r#"{"Name":"k","SecretString":"sealing-key-123"}"#;
            let response = format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            );
            socket.write_all(response.as_bytes()).await.unwrap();
            request
        });
        let secret = fetch(port, "arn:aws:secretsmanager:eu-west-1:1:secret:k", "tok")
            .await
            .unwrap();
        assert_eq!(secret, "sealing-key-123");
        let request = server.await.unwrap();
        assert!(request.starts_with("GET /secretsmanager/get?secretId=arn%3Aaws%3Asecretsmanager%3Aeu-west-1%3A1%3Asecret%3Ak HTTP/1.1"), "{request}");
        assert!(request.contains("X-Aws-Parameters-Secrets-Token: tok"));
    }

    #[tokio::test]
    async fn a_missing_extension_is_a_clear_error() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        let err = fetch(port, "x", "t").await.unwrap_err();
        assert!(err.to_string().contains("secrets extension"), "{err}");
    }
}
