//! Settings read from the environment, shared by the entry points that read them the same way
//! (the Lambda function and the edge Worker): the messages name the variables.

use std::sync::Arc;

/// The authorization server whose access tokens are accepted; empty: MCP tokens only.
pub const OAUTH_ISSUER: &str = "GATEHOUSE_OAUTH_ISSUER";
/// This server's resource URL, the tokens' audience (with the issuer).
pub const OAUTH_RESOURCE: &str = "GATEHOUSE_OAUTH_RESOURCE";
/// The issuer's JSON Web Key Set itself (with the issuer; or [`OAUTH_JWKS_URL`]).
pub const OAUTH_JWKS: &str = "GATEHOUSE_OAUTH_JWKS";
/// The URL of the issuer's JSON Web Key Set, its `jwks_uri` (with the issuer; or [`OAUTH_JWKS`]).
pub const OAUTH_JWKS_URL: &str = "GATEHOUSE_OAUTH_JWKS_URL";
/// The access-token claim naming the tenant (default `tenant`).
pub const OAUTH_TENANT_CLAIM: &str = "GATEHOUSE_OAUTH_TENANT_CLAIM";
/// `1`: accept access tokens typed `JWT` (or not typed) beside `at+jwt`, for an issuer that
/// does not type them as RFC 9068 says.
pub const OAUTH_ACCEPT_UNTYPED: &str = "GATEHOUSE_OAUTH_ACCEPT_UNTYPED";

/// Comma-separated browser origins allowed to call.
pub const ALLOWED_ORIGINS: &str = "GATEHOUSE_ALLOWED_ORIGINS";
/// The `requestState` sealing key itself (the edge's secret; on Lambda, local tests only).
pub const STATE_KEY: &str = "GATEHOUSE_STATE_KEY";
/// The largest accepted request body (default 1 MiB).
pub const MAX_BODY_BYTES: &str = "GATEHOUSE_MAX_BODY_BYTES";
/// Where the product's pages are (their URL, ending in `/app`): approval links and console
/// links in tool results point there. Unset: links point at a local `gatehouse serve`.
pub const CONSOLE_BASE: &str = "GATEHOUSE_CONSOLE_BASE";

/// Every instance seals with the same key; shorter keys are refused (a short HMAC key can be
/// guessed offline from one sealed state).
pub const MIN_STATE_KEY_BYTES: usize = 32;
/// The body limit's bounds: a useful floor, and Lambda's 6 MB payload limit.
pub const BODY_BYTES_RANGE: std::ops::RangeInclusive<usize> = 1024..=6 * 1024 * 1024;

/// The sealing key, refused when shorter than [`MIN_STATE_KEY_BYTES`] (its value is never
/// echoed).
pub fn state_key(key: String) -> Result<Vec<u8>, String> {
    if key.len() < MIN_STATE_KEY_BYTES {
        return Err(format!(
            "{STATE_KEY} is too short ({} bytes; at least {MIN_STATE_KEY_BYTES})",
            key.len()
        ));
    }
    Ok(key.into_bytes())
}

/// The allowed browser origins: `scheme://host[:port]`, comma-separated, blanks skipped; a
/// path (a trailing `/` too) is refused, since no browser sends one and the entry would match
/// nothing.
pub fn origins(value: Option<String>) -> Result<Vec<String>, String> {
    let Some(list) = value else {
        return Ok(Vec::new());
    };
    let origins: Vec<String> = list
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect();
    let bad: Vec<&String> = origins
        .iter()
        .filter(|o| !is_http_url(o) || o.split_once("://").is_some_and(|(_, h)| h.contains('/')))
        .collect();
    if bad.is_empty() {
        Ok(origins)
    } else {
        Err(format!(
            "{ALLOWED_ORIGINS}: {bad:?} is not a list of origins (scheme://host[:port], no path, comma-separated)"
        ))
    }
}

/// The product pages' base URL, without a trailing `/`.
pub fn console_base(value: Option<String>) -> Result<Option<String>, String> {
    match value {
        Some(url) if !is_http_url(&url) => Err(format!(
            "{CONSOLE_BASE}={url:?} is not an http(s) URL (the product pages' base, ending in /app)"
        )),
        Some(url) => Ok(Some(url.trim_end_matches('/').to_owned())),
        None => Ok(None),
    }
}

/// The body limit, within [`BODY_BYTES_RANGE`]; unset: the default.
pub fn max_body(value: Option<String>) -> Result<usize, String> {
    let Some(text) = value else {
        return Ok(crate::Settings::default().max_body_bytes);
    };
    match text.parse::<usize>() {
        Ok(n) if BODY_BYTES_RANGE.contains(&n) => Ok(n),
        _ => Err(format!(
            "{MAX_BODY_BYTES}={text:?} is not a number of bytes from {} to {}",
            BODY_BYTES_RANGE.start(),
            BODY_BYTES_RANGE.end()
        )),
    }
}

/// Whether `text` is an http(s) URL with something after the scheme and no whitespace.
pub fn is_http_url(text: &str) -> bool {
    let rest = text
        .strip_prefix("https://")
        .or_else(|| text.strip_prefix("http://"));
    rest.is_some_and(|r| !r.is_empty() && !r.contains(char::is_whitespace))
}

/// How OAuth access tokens are accepted, read from the environment: the checks a token must
/// pass and where the issuer's keys come from. An entry point turns it into [`crate::OAuth`]
/// with the way it fetches URLs ([`OAuthPlan::into_oauth`]).
#[derive(Debug, Clone)]
pub struct OAuthPlan {
    /// Issuer, audience and tenant claim.
    pub config: identity::oauth::OAuthConfig,
    /// The issuer's keys.
    pub keys: KeysFrom,
}

/// Where the issuer's signing keys come from.
#[derive(Debug, Clone)]
pub enum KeysFrom {
    /// A key set given in configuration.
    Inline(jsonwebtoken::jwk::JwkSet),
    /// The issuer's `jwks_uri`, fetched and cached (see `identity::oauth::KeyCache`).
    Url(String),
}

impl OAuthPlan {
    /// The OAuth settings, fetching a key set URL with `fetcher`.
    pub fn into_oauth(
        self,
        fetcher: impl FnOnce(String) -> Arc<dyn identity::oauth::JwksSource>,
    ) -> crate::OAuth {
        let source: Arc<dyn identity::oauth::JwksSource> = match self.keys {
            KeysFrom::Inline(set) => Arc::new(identity::oauth::StaticJwks(set)),
            KeysFrom::Url(url) => fetcher(url),
        };
        crate::OAuth::new(self.config, source)
    }
}

/// The five OAuth variables' values.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OAuthVariables {
    /// [`OAUTH_ISSUER`].
    pub issuer: Option<String>,
    /// [`OAUTH_RESOURCE`].
    pub resource: Option<String>,
    /// [`OAUTH_JWKS`].
    pub jwks: Option<String>,
    /// [`OAUTH_JWKS_URL`].
    pub jwks_url: Option<String>,
    /// [`OAUTH_TENANT_CLAIM`].
    pub tenant_claim: Option<String>,
    /// [`OAUTH_ACCEPT_UNTYPED`].
    pub accept_untyped: Option<String>,
}

impl OAuthVariables {
    /// The variables from `read` (a name to its value when set).
    pub fn read(read: impl Fn(&str) -> Option<String>) -> Self {
        OAuthVariables {
            issuer: read(OAUTH_ISSUER),
            resource: read(OAUTH_RESOURCE),
            jwks: read(OAUTH_JWKS),
            jwks_url: read(OAUTH_JWKS_URL),
            tenant_claim: read(OAUTH_TENANT_CLAIM),
            accept_untyped: read(OAUTH_ACCEPT_UNTYPED),
        }
    }
}

/// How OAuth access tokens are accepted: `None` when none of issuer, resource and keys is
/// given; every problem named at once otherwise.
pub fn oauth(vars: OAuthVariables) -> Result<Option<OAuthPlan>, String> {
    let Some(issuer) = vars.issuer else {
        let named = [
            (OAUTH_RESOURCE, vars.resource.is_some()),
            (OAUTH_JWKS, vars.jwks.is_some()),
            (OAUTH_JWKS_URL, vars.jwks_url.is_some()),
        ];
        return match named.iter().find(|(_, set)| *set) {
            None => Ok(None),
            Some((name, _)) => Err(format!(
                "{name} is set but {OAUTH_ISSUER} is not: set the issuer too, or neither"
            )),
        };
    };
    let mut errors = Vec::new();
    if !is_http_url(&issuer) {
        errors.push(format!("{OAUTH_ISSUER}={issuer:?} is not a URL"));
    }
    let accept_untyped = match vars.accept_untyped.as_deref() {
        None | Some("" | "0") => false,
        Some("1") => true,
        Some(other) => {
            errors.push(format!(
                "{OAUTH_ACCEPT_UNTYPED}={other:?}: must be 1, 0 or unset"
            ));
            false
        }
    };
    let resource = resource(vars.resource, &mut errors);
    let keys = keys(vars.jwks, vars.jwks_url, &mut errors);
    let (Some(resource), Some(keys), true) = (resource, keys, errors.is_empty()) else {
        return Err(errors.join("; "));
    };
    Ok(Some(OAuthPlan {
        config: identity::oauth::OAuthConfig {
            issuer,
            audience: resource,
            tenant_claim: vars.tenant_claim.unwrap_or_else(|| "tenant".to_owned()),
            accept_untyped,
        },
        keys,
    }))
}

fn resource(value: Option<String>, errors: &mut Vec<String>) -> Option<String> {
    match value {
        Some(r) if is_http_url(&r) => Some(r),
        Some(r) => {
            errors.push(format!("{OAUTH_RESOURCE}={r:?} is not a URL"));
            None
        }
        None => {
            errors.push(format!(
                "{OAUTH_RESOURCE} is missing: with {OAUTH_ISSUER} it must name this server's resource URL (the tokens' audience)"
            ));
            None
        }
    }
}

fn keys(inline: Option<String>, url: Option<String>, errors: &mut Vec<String>) -> Option<KeysFrom> {
    match (inline, url) {
        (Some(_), Some(_)) => {
            errors.push(format!(
                "both {OAUTH_JWKS} and {OAUTH_JWKS_URL} are set: give the keys one way"
            ));
            None
        }
        (None, Some(url)) if is_key_set_url(&url) => Some(KeysFrom::Url(url)),
        (None, Some(url)) => {
            errors.push(format!(
                "{OAUTH_JWKS_URL}={url:?} is not an https URL (plain http only on localhost)"
            ));
            None
        }
        (Some(text), None) => match serde_json::from_str::<jsonwebtoken::jwk::JwkSet>(&text) {
            Ok(set) if set.keys.is_empty() => {
                errors.push(format!(
                    "{OAUTH_JWKS} holds no key: every access token would be refused"
                ));
                None
            }
            Ok(set) => Some(KeysFrom::Inline(set)),
            Err(e) => {
                errors.push(format!("{OAUTH_JWKS} is not a JSON Web Key Set: {e}"));
                None
            }
        },
        (None, None) => {
            errors.push(format!(
                "{OAUTH_JWKS_URL} (the issuer's jwks_uri) or {OAUTH_JWKS} (the key set itself) is missing: with {OAUTH_ISSUER} one must give the issuer's keys"
            ));
            None
        }
    }
}

/// Keys travel over https; plain http is accepted only to this machine (local tests).
fn is_key_set_url(url: &str) -> bool {
    outside::destination::is_secure_or_loopback(url) && is_http_url(url)
}
