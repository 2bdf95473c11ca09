//! OAuth at the edge: the settings read once per isolate, so that the key cache (and the keys
//! fetched from the issuer's `jwks_uri` with the runtime's `fetch`) outlives the request that
//! filled it. The app itself is built per request (see `assembly`).

use std::cell::RefCell;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::Either;

use identity::oauth::JwksSource;
use jsonwebtoken::jwk::JwkSet;
use worker::send::SendFuture;
use worker::{Delay, Env, Fetch, Method, Request, RequestInit};

thread_local! {
    /// The variables read and the OAuth settings made from them (isolates are single-threaded).
    static CACHED: RefCell<Option<(app::settings::OAuthVariables, Option<app::OAuth>)>> =
        const { RefCell::new(None) };
}

/// The deployment's OAuth settings, made once per isolate and again only if its variables
/// change.
pub(crate) fn oauth(env: &Env) -> worker::Result<Option<app::OAuth>> {
    let vars = app::settings::OAuthVariables::read(|name| crate::env::setting(env, name));
    if let Some(oauth) = CACHED.with_borrow(|cached| {
        cached
            .as_ref()
            .filter(|(seen, _)| *seen == vars)
            .map(|(_, oauth)| oauth.clone())
    }) {
        return Ok(oauth);
    }
    let plan = app::settings::oauth(vars.clone())
        .map_err(|e| worker::Error::RustError(format!("invalid configuration: {e}")))?;
    let oauth = plan.map(|plan| plan.into_oauth(|url| Arc::new(FetchedKeys { url })));
    CACHED.set(Some((vars, oauth.clone())));
    Ok(oauth)
}

/// The issuer's key set, fetched with the runtime's `fetch`.
#[derive(Debug)]
struct FetchedKeys {
    url: String,
}

/// How long one fetch of the key set may take (natively: `app::key_set_url::FETCH_DEADLINE`).
/// The isolate's refreshes wait for one another, so a stalled issuer must not hold them for
/// as long as the request lives.
const FETCH_DEADLINE: Duration = Duration::from_secs(5);

#[async_trait::async_trait]
impl JwksSource for FetchedKeys {
    async fn fetch(&self) -> Result<JwkSet, String> {
        let url = self.url.clone();
        SendFuture::new(async move {
            let fetching = std::pin::pin!(key_set(&url));
            let deadline = std::pin::pin!(Delay::from(FETCH_DEADLINE));
            match futures_util::future::select(fetching, deadline).await {
                Either::Left((fetched, _)) => fetched,
                Either::Right(((), _)) => Err(format!(
                    "{url}: no answer within {} s",
                    FETCH_DEADLINE.as_secs()
                )),
            }
        })
        .await
    }
}

/// The key set at `url`, fetched with the runtime's `fetch`.
async fn key_set(url: &str) -> Result<JwkSet, String> {
    let request = Request::new_with_init(url, RequestInit::new().with_method(Method::Get))
        .map_err(|e| format!("{url}: {e}"))?;
    let mut response = Fetch::Request(request)
        .send()
        .await
        .map_err(|e| format!("{url}: {e}"))?;
    if response.status_code() != 200 {
        return Err(format!("{url}: HTTP {}", response.status_code()));
    }
    let body = response.bytes().await.map_err(|e| format!("{url}: {e}"))?;
    serde_json::from_slice(&body).map_err(|e| format!("{url}: not a JSON Web Key Set: {e}"))
}
