//! HTTP for the evaluations (the MCP server, local and hosted model endpoints), through the
//! workspace's one HTTP client (`shared/http-client`: hyper with rustls, `http://` and
//! `https://` alike). Errors are returned, never panicked.

use std::time::Duration;

/// A response as received.
#[derive(Debug, Clone)]
pub struct Response {
    /// Status code.
    pub status: u16,
    /// Headers, names lower-cased (`retry-after` among them).
    pub headers: Vec<(String, String)>,
    /// Body bytes.
    pub body: Vec<u8>,
}

impl Response {
    /// A header's value.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The body as text (lossy).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// POSTs `body` to `url` with `headers`, waiting at most `timeout` for the whole answer.
pub async fn post(
    url: &str,
    headers: &[(String, String)],
    body: &[u8],
    timeout: Duration,
) -> anyhow::Result<Response> {
    post_with(url, headers, body, timeout, None).await
}

/// As [`post`], tried again by `policy` on a connection failure, 429 and 5xx (honouring
/// `Retry-After`); the last answer when every try was refused.
pub async fn post_with_retries(
    url: &str,
    headers: &[(String, String)],
    body: &[u8],
    timeout: Duration,
    policy: http_client::RetryPolicy,
) -> anyhow::Result<Response> {
    post_with(url, headers, body, timeout, Some(policy)).await
}

async fn post_with(
    url: &str,
    headers: &[(String, String)],
    body: &[u8],
    timeout: Duration,
    policy: Option<http_client::RetryPolicy>,
) -> anyhow::Result<Response> {
    let client = http_client::HttpClient::new(timeout)?;
    let headers: Vec<(&str, &str)> = headers
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let body = bytes::Bytes::from(body.to_vec());
    let answer = match policy {
        Some(policy) => {
            client
                .send_with_retries(http::Method::POST, url, &headers, body, policy)
                .await
        }
        None => client.post(url, &headers, body).await,
    }
    .map_err(|e| anyhow::anyhow!("POST {url}: {e}"))?;
    Ok(Response {
        status: answer.status,
        headers: answer
            .headers
            .iter()
            .filter_map(|(k, v)| Some((k.as_str().to_owned(), v.to_str().ok()?.to_owned())))
            .collect(),
        body: answer.body.to_vec(),
    })
}
