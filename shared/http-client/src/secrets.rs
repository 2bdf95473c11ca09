//! Reading a secret at cold start through the AWS Parameters and Secrets Lambda Extension,
//! which serves Secrets Manager on localhost and authenticates with the function's session
//! token. The secret never sits in the function's environment.

use crate::{HttpClient, HttpClientError};

/// The extension's port unless `PARAMETERS_SECRETS_EXTENSION_HTTP_PORT` says otherwise.
pub const SECRETS_EXTENSION_PORT: u16 = 2773;

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

/// The `SecretString` of `secret_id` from the extension on `port`, authenticated with
/// `session_token` (the function's `AWS_SESSION_TOKEN`).
pub async fn lambda_secret(
    client: &HttpClient,
    port: u16,
    secret_id: &str,
    session_token: &str,
) -> Result<String, HttpClientError> {
    let path = format!("/secretsmanager/get?secretId={}", percent_encode(secret_id));
    let json = extension_get(client, port, &path, secret_id, session_token).await?;
    json.get("SecretString")
        .and_then(serde_json::Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .ok_or_else(|| HttpClientError::Connection(format!("{secret_id} has no SecretString")))
}

/// The value of the Systems Manager parameter `name` from the extension on `port`.
pub async fn lambda_parameter(
    client: &HttpClient,
    port: u16,
    name: &str,
    session_token: &str,
) -> Result<String, HttpClientError> {
    let path = format!(
        "/systemsmanager/parameters/get?name={}",
        percent_encode(name)
    );
    let json = extension_get(client, port, &path, name, session_token).await?;
    json.pointer("/Parameter/Value")
        .and_then(serde_json::Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .ok_or_else(|| HttpClientError::Connection(format!("{name} has no value")))
}

/// The extension's JSON answer for `path` (about `what`).
async fn extension_get(
    client: &HttpClient,
    port: u16,
    path: &str,
    what: &str,
    session_token: &str,
) -> Result<serde_json::Value, HttpClientError> {
    let url = format!("http://127.0.0.1:{port}{path}");
    let answer = client
        .get(&url, &[("x-aws-parameters-secrets-token", session_token)])
        .await
        .map_err(|e| match e {
            HttpClientError::Connection(why) => HttpClientError::Connection(format!(
                "the secrets extension is not answering on port {port} (is its layer attached?): {why}"
            )),
            other => other,
        })?;
    if answer.status != 200 {
        return Err(HttpClientError::Connection(format!(
            "the secrets extension answered {} for {what}",
            answer.status
        )));
    }
    serde_json::from_slice(&answer.body).map_err(|_| {
        HttpClientError::Connection("the secrets extension's answer is not JSON".into())
    })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

    use super::*;

    /// The extension on a free port, answering one request with `body`; the port, and the
    /// request it got.
    async fn extension_answering(body: &'static str) -> (u16, tokio::task::JoinHandle<String>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut buf = vec![0u8; 4096];
            let n = socket.read(&mut buf).await.unwrap();
            let request = String::from_utf8_lossy(&buf[..n]).to_string();
            let response = format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            );
            socket.write_all(response.as_bytes()).await.unwrap();
            request
        });
        (port, server)
    }

    #[tokio::test]
    async fn reads_the_secret_string_with_the_session_token() {
        let (port, server) =
            extension_answering(r#"{"Name":"k","SecretString":"sealing-key-123"}"#).await;
        let client = HttpClient::new(Duration::from_secs(5)).unwrap();
        let secret = lambda_secret(
            &client,
            port,
            "arn:aws:secretsmanager:eu-west-1:1:secret:k",
            "tok",
        )
        .await
        .unwrap();
        assert_eq!(secret, "sealing-key-123");
        let request = server.await.unwrap().to_lowercase();
        assert!(
            request.starts_with(
                "get /secretsmanager/get?secretid=arn%3aaws%3asecretsmanager%3aeu-west-1%3a1%3asecret%3ak http/1.1"
            ),
            "{request}"
        );
        assert!(request.contains("x-aws-parameters-secrets-token: tok"));
    }

    #[tokio::test]
    async fn reads_a_parameter_value() {
        let (port, server) = extension_answering(
            r#"{"Parameter":{"Name":"/g/s/mcp-endpoint","Value":"https://x.lambda-url.eu-west-1.on.aws/mcp"}}"#,
        )
        .await;
        let client = HttpClient::new(Duration::from_secs(5)).unwrap();
        let value = lambda_parameter(&client, port, "/g/s/mcp-endpoint", "tok")
            .await
            .unwrap();
        assert_eq!(value, "https://x.lambda-url.eu-west-1.on.aws/mcp");
        let request = server.await.unwrap().to_lowercase();
        assert!(
            request.starts_with(
                "get /systemsmanager/parameters/get?name=%2fg%2fs%2fmcp-endpoint http/1.1"
            ),
            "{request}"
        );
    }

    #[tokio::test]
    async fn a_missing_extension_is_a_clear_error() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        let client = HttpClient::new(Duration::from_secs(5)).unwrap();
        let err = lambda_secret(&client, port, "x", "t").await.unwrap_err();
        assert!(err.to_string().contains("secrets extension"), "{err}");
    }
}
