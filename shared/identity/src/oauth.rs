//! OAuth access tokens: JWTs issued for this server only.
//!
//! Asymmetric algorithms only (RS256, ES256); `none` and HMAC are refused before any key is
//! looked at, so a token "signed" with the public key as an HMAC secret never verifies. The
//! token must be typed as an access token (`typ: at+jwt`, RFC 9068; `JWT` only where the
//! deployment says its issuer sends that), and the key must be published for signatures with
//! the token's algorithm. The
//! audience must be this server's resource URL, the issuer must be the configured one, and
//! `exp` is required, with a small explicit leeway.

use std::sync::Arc;

use jsonwebtoken::{Algorithm, Validation};
use serde::Deserialize;

pub use crate::jwks::{
    FIRST_FETCH_RETRY, JwksSource, KEYS_MAX_AGE, KeyCache, REFRESH_COOL_DOWN, StaticJwks,
};

/// Algorithms accepted. Everything else, `none` and HS* included, is refused.
pub const ALLOWED_ALGORITHMS: &[Algorithm] = &[Algorithm::RS256, Algorithm::ES256];
/// Clock skew tolerated on `exp` and `nbf`, in seconds.
pub const LEEWAY_SECONDS: u64 = 30;

/// Settings of the OAuth credential.
#[derive(Debug, Clone)]
pub struct OAuthConfig {
    /// The issuer (`iss`) tokens must carry.
    pub issuer: String,
    /// This server's resource URL: the only audience accepted.
    pub audience: String,
    /// The claim naming the tenant.
    pub tenant_claim: String,
    /// Whether a token typed `JWT` (or not typed) is accepted beside `at+jwt`, for issuers
    /// that do not type access tokens as RFC 9068 says; off by default.
    pub accept_untyped: bool,
}

/// The token types an access token may declare (`typ`, RFC 9068), compared without case.
const ACCESS_TOKEN_TYPES: [&str; 2] = ["at+jwt", "application/at+jwt"];

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
    keys: KeyCache,
}

impl OAuthValidator {
    /// A validator fetching keys from `source`.
    pub fn new(config: OAuthConfig, source: Arc<dyn JwksSource>) -> Self {
        OAuthValidator {
            config,
            keys: KeyCache::new(source),
        }
    }

    /// The settings.
    pub fn config(&self) -> &OAuthConfig {
        &self.config
    }

    /// Whether the issuer's keys were ever fetched (else no token can be checked now).
    pub fn has_keys(&self) -> bool {
        self.keys.has_keys()
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
        let typed = header
            .typ
            .as_deref()
            .is_some_and(|t| ACCESS_TOKEN_TYPES.iter().any(|a| t.eq_ignore_ascii_case(a)));
        let untyped = header
            .typ
            .as_deref()
            .is_none_or(|t| t.eq_ignore_ascii_case("JWT"));
        if !(typed || (self.config.accept_untyped && untyped)) {
            return Err(format!(
                "the token is not an access token (typ {:?}; at+jwt expected)",
                header.typ.as_deref().unwrap_or("")
            ));
        }
        let key = self
            .keys
            .key(header.kid.as_deref(), header.alg, now)
            .await
            .ok_or_else(|| "the access token's signing key is unknown".to_owned())?;
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
