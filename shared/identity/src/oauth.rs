//! OAuth access tokens: JWTs issued for this server only.
//!
//! Asymmetric algorithms only (RS256, ES256); `none` and HMAC are refused before any key is
//! looked at, so a token "signed" with the public key as an HMAC secret never verifies. The
//! audience must be this server's resource URL, the issuer must be the configured one, and
//! `exp` is required, with a small explicit leeway.

use std::sync::Mutex;
use std::time::Duration;

use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;

/// Algorithms accepted. Everything else, `none` and HS* included, is refused.
pub const ALLOWED_ALGORITHMS: &[Algorithm] = &[Algorithm::RS256, Algorithm::ES256];
/// Clock skew tolerated on `exp` and `nbf`, in seconds.
pub const LEEWAY_SECONDS: u64 = 30;
/// At most one key refresh per this interval, however many unknown `kid`s arrive.
pub const REFRESH_INTERVAL: Duration = Duration::from_secs(60);

/// Where the authorization server's keys come from.
#[async_trait::async_trait]
pub trait JwksSource: std::fmt::Debug + Send + Sync + 'static {
    /// The current key set.
    async fn fetch(&self) -> Result<JwkSet, String>;
}

/// A key set given in configuration.
#[derive(Debug, Clone)]
pub struct StaticJwks(pub JwkSet);

#[async_trait::async_trait]
impl JwksSource for StaticJwks {
    async fn fetch(&self) -> Result<JwkSet, String> {
        Ok(self.0.clone())
    }
}

/// Settings of the OAuth credential.
#[derive(Debug, Clone)]
pub struct OAuthConfig {
    /// The issuer (`iss`) tokens must carry.
    pub issuer: String,
    /// This server's resource URL: the only audience accepted.
    pub audience: String,
    /// The claim naming the tenant.
    pub tenant_claim: String,
}

/// The claims gatehouse uses from a valid token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subject {
    /// `sub`.
    pub subject: String,
    /// The tenant claim.
    pub tenant: String,
}

#[derive(Debug, Deserialize)]
struct Claims {
    sub: String,
    #[serde(flatten)]
    rest: serde_json::Map<String, serde_json::Value>,
}

/// Validates access tokens against a cached key set.
#[derive(Debug)]
pub struct OAuthValidator {
    config: OAuthConfig,
    source: Box<dyn JwksSource>,
    keys: Mutex<Option<JwkSet>>,
    /// When the keys were last fetched (Unix seconds, the caller's clock).
    last_refresh: Mutex<Option<i64>>,
}

impl OAuthValidator {
    /// A validator fetching keys from `source`.
    pub fn new(config: OAuthConfig, source: Box<dyn JwksSource>) -> Self {
        OAuthValidator {
            config,
            source,
            keys: Mutex::new(None),
            last_refresh: Mutex::new(None),
        }
    }

    /// The settings.
    pub fn config(&self) -> &OAuthConfig {
        &self.config
    }

    fn cached_key(&self, kid: Option<&str>) -> Option<DecodingKey> {
        let keys = self
            .keys
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let set = keys.as_ref()?;
        let jwk = match kid {
            Some(kid) => set.find(kid)?,
            None if set.keys.len() == 1 => &set.keys[0],
            None => return None,
        };
        DecodingKey::from_jwk(jwk).ok()
    }

    async fn refresh(&self, force: bool, now: i64) {
        {
            let mut last = self
                .last_refresh
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let interval = i64::try_from(REFRESH_INTERVAL.as_secs()).unwrap_or(i64::MAX);
            let due = last.is_none_or(|t| now.saturating_sub(t) >= interval);
            let empty = self
                .keys
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .is_none();
            if !(due || (empty && force)) {
                return;
            }
            *last = Some(now);
        }
        match self.source.fetch().await {
            Ok(set) => {
                *self
                    .keys
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(set)
            }
            Err(e) => tracing::warn!(error = %e, "could not fetch the authorization server's keys"),
        }
    }

    /// Validates a token at `now` (Unix seconds, the server's clock); the error is a reason
    /// safe to show (never the token). The times are checked here rather than by
    /// `jsonwebtoken`, which would read the system clock (absent at the edge).
    pub async fn validate(&self, token: &str, now: i64) -> Result<Subject, String> {
        let header = jsonwebtoken::decode_header(token)
            .map_err(|_| "the access token is malformed".to_owned())?;
        if !ALLOWED_ALGORITHMS.contains(&header.alg) {
            return Err(format!(
                "access tokens signed with {:?} are not accepted",
                header.alg
            ));
        }
        let kid = header.kid.as_deref();
        let key = match self.cached_key(kid) {
            Some(key) => key,
            None => {
                // An unknown key id may mean the server rotated its keys: refresh, at most
                // once per interval, then try again.
                let first_load = self
                    .keys
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .is_none();
                self.refresh(first_load, now).await;
                self.cached_key(kid)
                    .ok_or_else(|| "the access token's signing key is unknown".to_owned())?
            }
        };
        let mut validation = Validation::new(header.alg);
        validation.algorithms = vec![header.alg];
        validation.set_audience(&[self.config.audience.as_str()]);
        validation.set_issuer(&[self.config.issuer.as_str()]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        validation.leeway = LEEWAY_SECONDS;
        validation.validate_exp = false;
        validation.validate_nbf = false;
        let data = jsonwebtoken::decode::<Claims>(token, &key, &validation).map_err(|e| {
            use jsonwebtoken::errors::ErrorKind;
            match e.kind() {
                ErrorKind::ExpiredSignature => "the access token has expired".to_owned(),
                ErrorKind::InvalidAudience => {
                    "the access token was issued for another audience".to_owned()
                }
                ErrorKind::InvalidIssuer => {
                    "the access token's issuer is not trusted here".to_owned()
                }
                ErrorKind::MissingRequiredClaim(claim) => {
                    format!("the access token lacks the {claim} claim")
                }
                ErrorKind::InvalidSignature => "the access token's signature is invalid".to_owned(),
                _ => "the access token is not valid".to_owned(),
            }
        })?;
        check_times(&data.claims.rest, now)?;
        let tenant = data
            .claims
            .rest
            .get(&self.config.tenant_claim)
            .and_then(serde_json::Value::as_str)
            .filter(|t| !t.is_empty())
            .ok_or_else(|| {
                format!(
                    "the access token lacks the {} claim",
                    self.config.tenant_claim
                )
            })?;
        Ok(Subject {
            subject: data.claims.sub,
            tenant: tenant.to_owned(),
        })
    }
}

/// `exp` (required) and `nbf` (when present) against `now`, with [`LEEWAY_SECONDS`] either way:
/// expired once `exp` is more than the leeway behind `now`, not yet valid while `nbf` is more
/// than the leeway ahead.
fn check_times(
    claims: &serde_json::Map<String, serde_json::Value>,
    now: i64,
) -> Result<(), String> {
    // NumericDate may carry a fraction; seconds as f64 compare exactly for any real date.
    #[allow(clippy::cast_precision_loss)]
    let (now, leeway) = (now as f64, LEEWAY_SECONDS as f64);
    let seconds = |name: &str| claims.get(name).map(serde_json::Value::as_f64);
    match seconds("exp") {
        Some(Some(exp)) if exp < now - leeway => {
            return Err("the access token has expired".to_owned());
        }
        Some(Some(_)) => {}
        _ => return Err("the access token lacks the exp claim".to_owned()),
    }
    match seconds("nbf") {
        None => Ok(()),
        Some(Some(nbf)) if nbf <= now + leeway => Ok(()),
        Some(Some(_)) => Err("the access token is not valid yet".to_owned()),
        Some(None) => Err("the access token is not valid".to_owned()),
    }
}
