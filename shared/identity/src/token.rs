//! MCP tokens and the classification of bearer credentials.

use sha2::{Digest as _, Sha256};

/// Prefix of MCP tokens. Distinct from [`API_TOKEN_PREFIX`] so each side can refuse the other's.
pub const MCP_TOKEN_PREFIX: &str = "ghm_";
/// Prefix of the product's own API tokens (refused at the MCP endpoint).
pub const API_TOKEN_PREFIX: &str = "gha_";
/// Name of the product's session cookie (refused at the MCP endpoint).
pub const SESSION_COOKIE: &str = "gh_session";
/// Random characters in a token: 43 of 62 give about 256 bits.
const SECRET_LEN: usize = 43;

/// A freshly made MCP token: the secret (shown once) and its hash (stored).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewToken {
    /// The token as the client will send it. Never stored.
    pub secret: String,
    /// Hex SHA-256 of the secret.
    pub hash: String,
}

/// Makes a new MCP token.
pub fn generate() -> NewToken {
    let secret = format!("{MCP_TOKEN_PREFIX}{}", crate::random_id(SECRET_LEN));
    let hash = hash(&secret);
    NewToken { secret, hash }
}

/// Hex SHA-256 of a token.
pub fn hash(secret: &str) -> String {
    hex::encode(Sha256::digest(secret.as_bytes()))
}

/// What kind of credential a bearer value is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BearerKind {
    /// An MCP token.
    Mcp,
    /// A product API token.
    ProductApi,
    /// Looks like a JWT (three dot-separated parts).
    Jwt,
    /// Anything else.
    Unknown,
}

/// Classifies a bearer value by its shape.
pub fn classify(bearer: &str) -> BearerKind {
    if bearer.starts_with(MCP_TOKEN_PREFIX) {
        BearerKind::Mcp
    } else if bearer.starts_with(API_TOKEN_PREFIX) {
        BearerKind::ProductApi
    } else if bearer.split('.').count() == 3 {
        BearerKind::Jwt
    } else {
        BearerKind::Unknown
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_prefixed_random_and_hashed() {
        let a = generate();
        let b = generate();
        assert!(a.secret.starts_with(MCP_TOKEN_PREFIX));
        assert_eq!(a.secret.len(), MCP_TOKEN_PREFIX.len() + SECRET_LEN);
        assert_ne!(a.secret, b.secret);
        assert_eq!(a.hash, hash(&a.secret));
        assert_eq!(a.hash.len(), 64);
        assert!(!a.hash.contains(&a.secret[4..]));
        assert_eq!(classify(&a.secret), BearerKind::Mcp);
        assert_eq!(classify("gha_abc"), BearerKind::ProductApi);
        assert_eq!(classify("a.b.c"), BearerKind::Jwt);
        assert_eq!(classify("opaque"), BearerKind::Unknown);
    }
}
