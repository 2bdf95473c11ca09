//! The workspace's one HTTP client, for everything gatehouse sends over HTTP itself (webhook
//! deliveries today). It is `hyper-util`'s pooled client over `hyper-rustls` with the system's
//! root certificates: the same stack the AWS SDK already compiles, so it adds no TLS library.
//! Every request has a deadline; a request that misses it is dropped and reported as such.
//!
//! [`lambda_secret`] reads a secret through the AWS Parameters and Secrets Lambda Extension
//! with it, so that no function needs the Secrets Manager SDK.

mod retry;
mod secrets;

pub use retry::RetryPolicy;
pub use secrets::{SECRETS_EXTENSION_PORT, lambda_parameter, lambda_secret};

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

/// Why a request got no answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HttpClientError {
    /// The URL or a header could not be used.
    #[error("bad request: {0}")]
    Request(String),
    /// The system's root certificates could not be loaded.
    #[error("no TLS roots: {0}")]
    Roots(String),
    /// No answer within the deadline.
    #[error("no answer within {0:?}")]
    Timeout(Duration),
    /// The connection failed (refused, reset, TLS).
    #[error("connection failed: {0}")]
    Connection(String),
}

/// An answer: its status, headers and body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// The HTTP status.
    pub status: u16,
    /// The headers (`Retry-After` among them).
    pub headers: http::HeaderMap,
    /// The body.
    pub body: Bytes,
}

/// The HTTP client.
#[derive(Debug, Clone)]
pub struct HttpClient {
    client: Client<HttpsConnector<HttpConnector>, Full<Bytes>>,
    deadline: Duration,
}

impl HttpClient {
    /// A client whose every request must be answered within `deadline`.
    pub fn new(deadline: Duration) -> Result<Self, HttpClientError> {
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_native_roots()
            .map_err(|e| HttpClientError::Roots(e.to_string()))?
            .https_or_http()
            .enable_http1()
            .build();
        Ok(HttpClient {
            client: Client::builder(TokioExecutor::new()).build(https),
            deadline,
        })
    }

    /// POSTs `body` to `url` with `headers`; the whole answer, or why there is none.
    pub async fn post(
        &self,
        url: &str,
        headers: &[(&str, &str)],
        body: Bytes,
    ) -> Result<Answer, HttpClientError> {
        self.send(http::Method::POST, url, headers, body).await
    }

    /// GETs `url` with `headers`.
    pub async fn get(
        &self,
        url: &str,
        headers: &[(&str, &str)],
    ) -> Result<Answer, HttpClientError> {
        self.send(http::Method::GET, url, headers, Bytes::new())
            .await
    }

    /// Sends `method` to `url` with `headers` and `body`; the whole answer, or why there is
    /// none.
    pub async fn send(
        &self,
        method: http::Method,
        url: &str,
        headers: &[(&str, &str)],
        body: Bytes,
    ) -> Result<Answer, HttpClientError> {
        let mut request = http::Request::builder().method(method).uri(url);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let request = request
            .body(Full::new(body))
            .map_err(|e| HttpClientError::Request(e.to_string()))?;
        let exchange = async {
            let response = self
                .client
                .request(request)
                .await
                .map_err(|e| HttpClientError::Connection(describe(&e)))?;
            let status = response.status().as_u16();
            let headers = response.headers().clone();
            let body = response
                .into_body()
                .collect()
                .await
                .map_err(|e| HttpClientError::Connection(e.to_string()))?
                .to_bytes();
            Ok(Answer {
                status,
                headers,
                body,
            })
        };
        tokio::time::timeout(self.deadline, exchange)
            .await
            .map_err(|_| HttpClientError::Timeout(self.deadline))?
    }
}

/// The error with its causes, which carry what actually went wrong.
fn describe(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    text
}
