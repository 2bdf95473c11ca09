//! Settings read from the environment, shared by the entry points that read them the same way
//! (the Lambda function and the edge Worker): the messages name the variables.

/// The authorization server whose access tokens are accepted; empty: MCP tokens only.
pub const OAUTH_ISSUER: &str = "GATEHOUSE_OAUTH_ISSUER";
/// This server's resource URL, the tokens' audience (with the issuer).
pub const OAUTH_RESOURCE: &str = "GATEHOUSE_OAUTH_RESOURCE";
/// The issuer's JSON Web Key Set (with the issuer).
pub const OAUTH_JWKS: &str = "GATEHOUSE_OAUTH_JWKS";
/// The access-token claim naming the tenant (default `tenant`).
pub const OAUTH_TENANT_CLAIM: &str = "GATEHOUSE_OAUTH_TENANT_CLAIM";

/// Whether `text` is an http(s) URL with something after the scheme and no whitespace.
pub fn is_http_url(text: &str) -> bool {
    let rest = text
        .strip_prefix("https://")
        .or_else(|| text.strip_prefix("http://"));
    rest.is_some_and(|r| !r.is_empty() && !r.contains(char::is_whitespace))
}

/// How OAuth access tokens are accepted, from the four variables' values: `None` when none of
/// issuer, resource and key set is given; every problem named at once otherwise.
pub fn oauth(
    issuer: Option<String>,
    resource: Option<String>,
    jwks: Option<String>,
    tenant_claim: Option<String>,
) -> Result<Option<crate::OAuth>, String> {
    let Some(issuer) = issuer else {
        return match (resource, jwks) {
            (None, None) => Ok(None),
            (resource, _) => Err(format!(
                "{} is set but {OAUTH_ISSUER} is not: set the issuer too, or neither",
                if resource.is_some() {
                    OAUTH_RESOURCE
                } else {
                    OAUTH_JWKS
                }
            )),
        };
    };
    let mut errors = Vec::new();
    if !is_http_url(&issuer) {
        errors.push(format!("{OAUTH_ISSUER}={issuer:?} is not a URL"));
    }
    let resource = match resource {
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
    };
    // The type is `crate::OAuth`'s, inferred below.
    let jwks = match jwks {
        Some(text) => match serde_json::from_str(&text) {
            Ok(set) => Some(set),
            Err(e) => {
                errors.push(format!("{OAUTH_JWKS} is not a JSON Web Key Set: {e}"));
                None
            }
        },
        None => {
            errors.push(format!(
                "{OAUTH_JWKS} is missing: with {OAUTH_ISSUER} it must hold the issuer's JSON Web Key Set"
            ));
            None
        }
    };
    let tenant_claim = tenant_claim.unwrap_or_else(|| "tenant".to_owned());
    let (Some(resource), Some(jwks), true) = (resource, jwks, errors.is_empty()) else {
        return Err(errors.join("; "));
    };
    let oauth = crate::OAuth {
        resource,
        issuer,
        tenant_claim,
        jwks,
    };
    if oauth.jwks.keys.is_empty() {
        return Err(format!(
            "{OAUTH_JWKS} holds no key: every access token would be refused"
        ));
    }
    Ok(Some(oauth))
}
