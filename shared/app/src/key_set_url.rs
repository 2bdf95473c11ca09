//! The issuer's key set fetched by URL with the workspace's HTTP client (native entry points;
//! the edge fetches with the Workers runtime's `fetch`).

use std::sync::Arc;
use std::time::Duration;

use identity::oauth::JwksSource;
use jsonwebtoken::jwk::JwkSet;

/// How long one fetch of the key set may take.
pub const FETCH_DEADLINE: Duration = Duration::from_secs(5);

/// Keys fetched from the issuer's `jwks_uri`.
#[derive(Debug)]
pub struct KeySetUrl {
    url: String,
    client: http_client::HttpClient,
}

/// A key source for `url`, fetched with a client whose requests end within [`FETCH_DEADLINE`].
pub fn fetcher(url: String) -> Arc<dyn JwksSource> {
    match http_client::HttpClient::new(FETCH_DEADLINE) {
        Ok(client) => Arc::new(KeySetUrl { url, client }),
        // No TLS roots on this machine: every fetch reports it, and no token is accepted.
        Err(e) => Arc::new(Unreachable(format!("{url}: {e}"))),
    }
}

#[async_trait::async_trait]
impl JwksSource for KeySetUrl {
    /// The request runs as a task of its own, so that it goes on (and its deadline runs) while
    /// no caller is waiting: the key cache keeps a fetch whose caller left for the next one.
    async fn fetch(&self) -> Result<JwkSet, String> {
        let request = fetch_key_set(self.client.clone(), self.url.clone());
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => runtime
                .spawn(request)
                .await
                .unwrap_or_else(|e| Err(format!("{}: the fetch stopped: {e}", self.url))),
            Err(_) => request.await,
        }
    }
}

/// The key set at `url`.
async fn fetch_key_set(client: http_client::HttpClient, url: String) -> Result<JwkSet, String> {
    let answer = client
        .get(&url, &[("accept", "application/json")])
        .await
        .map_err(|e| format!("{url}: {e}"))?;
    if answer.status != 200 {
        return Err(format!("{url}: HTTP {}", answer.status));
    }
    serde_json::from_slice(&answer.body).map_err(|e| format!("{url}: not a JSON Web Key Set: {e}"))
}

#[derive(Debug)]
struct Unreachable(String);

#[async_trait::async_trait]
impl JwksSource for Unreachable {
    async fn fetch(&self) -> Result<JwkSet, String> {
        Err(self.0.clone())
    }
}
