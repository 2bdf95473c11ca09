//! MCP tokens and the classification of bearer credentials.
//!
//! An MCP token is `ghm_` + a locator + `.` + 43 random characters. The locator names the
//! tenant, the creating member and the connection (base64url), so that authentication can
//! read the credential, both kill switches, the creator's live rights and the call's gate
//! items in one batched round trip instead of reading the credential first to learn where
//! the rest is. The locator grants nothing: the stored hash covers the whole token (a changed
//! locator is an unknown token), and authentication checks that the connection found by the
//! hash is the one the locator names. It is not secret either: the tenant and member ids are
//! shown to the people who hold the token anyway.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

/// Prefix of MCP tokens. Distinct from [`API_TOKEN_PREFIX`] so each side can refuse the other's.
pub const MCP_TOKEN_PREFIX: &str = "ghm_";
/// Prefix of the product's own API tokens (refused at the MCP endpoint).
pub const API_TOKEN_PREFIX: &str = "gha_";
/// Name of the product's session cookie (refused at the MCP endpoint).
pub const SESSION_COOKIE: &str = "gh_session";
/// Random characters in a token: 43 of 62 give about 256 bits.
const SECRET_LEN: usize = 43;

/// A freshly made MCP token: the secret (shown once) and its hash (stored). Its `Debug` shows
/// the hash only, so a logged value never carries the credential.
#[derive(Clone, PartialEq, Eq)]
pub struct NewToken {
    /// The token as the client will send it. Never stored.
    pub secret: String,
    /// Hex SHA-256 of the secret.
    pub hash: String,
}

impl std::fmt::Debug for NewToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NewToken")
            .field("secret", &"(redacted)")
            .field("hash", &self.hash)
            .finish()
    }
}

/// Where a token's connection lives, as its locator says (unverified until the hash matches).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Locator {
    /// The tenant.
    pub tenant: store::TenantId,
    /// The member who created the connection.
    pub creator: store::MemberId,
    /// The connection id.
    pub connection: store::ConnectionId,
}

/// Separates the locator's fields; ids never contain it.
const FIELD_SEPARATOR: char = '\u{1f}';
/// Longest tenant, member or connection id a locator may name.
const MAX_LOCATOR_FIELD: usize = 128;
/// Room for a decoded locator: three fields, two separators, and the decoder's margin.
const LOCATOR_ROOM: usize = 3 * MAX_LOCATOR_FIELD + 2 + 4;

/// Makes a new MCP token for the connection `locator` names, its secret drawn from
/// `randomness`.
pub fn generate(locator: &Locator, randomness: &dyn outside::Randomness) -> NewToken {
    let fields = [
        locator.tenant.as_str(),
        locator.creator.as_str(),
        locator.connection.as_str(),
    ];
    located(MCP_TOKEN_PREFIX, &fields, randomness)
}

/// The locator of an MCP token, if it has one (tokens made before locators have none and are
/// authenticated in two round trips).
pub fn locator(token: &str) -> Option<Locator> {
    let mut room = [0u8; LOCATOR_ROOM];
    let [tenant, creator, connection] = fields(MCP_TOKEN_PREFIX, token, &mut room)?;
    Some(Locator {
        tenant: store::TenantId::new(tenant),
        creator: store::MemberId::new(creator),
        connection: store::ConnectionId::new(connection),
    })
}

/// Where a member's product API token or sign-in session is kept: its workspace, as its text
/// says (unverified until the hash matches), so that finding it asks that workspace alone
/// (ADR 53).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberLocator {
    /// The workspace.
    pub tenant: store::TenantId,
    /// The member.
    pub member: store::MemberId,
}

impl MemberLocator {
    fn fields(&self) -> [&str; 2] {
        [self.tenant.as_str(), self.member.as_str()]
    }

    fn read(text: &str, prefix: &str) -> Option<MemberLocator> {
        let mut room = [0u8; LOCATOR_ROOM];
        let [tenant, member] = fields(prefix, text, &mut room)?;
        Some(MemberLocator {
            tenant: store::TenantId::new(tenant),
            member: store::MemberId::new(member),
        })
    }
}

/// Makes a new product API token (`gha_` + locator + `.` + 43 random characters) for the
/// member `locator` names.
pub fn generate_api(locator: &MemberLocator, randomness: &dyn outside::Randomness) -> NewToken {
    located(API_TOKEN_PREFIX, &locator.fields(), randomness)
}

/// The locator of a product API token, if it has one (tokens made before ADR 53 have none and
/// are found by their hash alone, in the deployment's partition).
pub fn api_locator(token: &str) -> Option<MemberLocator> {
    MemberLocator::read(token, API_TOKEN_PREFIX)
}

/// Makes a new sign-in session id (the cookie's value: locator + `.` + 43 random characters)
/// for the member `locator` names; returns it with its hash.
pub fn generate_session(locator: &MemberLocator, randomness: &dyn outside::Randomness) -> NewToken {
    located("", &locator.fields(), randomness)
}

/// The locator of a session id, if it has one (operators' sessions and sessions made before
/// ADR 53 have none).
pub fn session_locator(id: &str) -> Option<MemberLocator> {
    MemberLocator::read(id, "")
}

/// `prefix`, the locator of `fields`, `.` and a fresh secret, with its hash.
fn located(prefix: &str, fields: &[&str], randomness: &dyn outside::Randomness) -> NewToken {
    let joined = fields.join(&FIELD_SEPARATOR.to_string());
    let secret = format!(
        "{prefix}{}.{}",
        URL_SAFE_NO_PAD.encode(joined),
        outside::random_text(randomness, SECRET_LEN)
    );
    let hash = hash(&secret);
    NewToken { secret, hash }
}

/// The `N` fields of the locator of `text` (`prefix`, locator, `.`, secret), decoded into
/// `room`, when every one is plausible.
fn fields<'r, const N: usize>(
    prefix: &str,
    text: &str,
    room: &'r mut [u8; LOCATOR_ROOM],
) -> Option<[&'r str; N]> {
    let rest = text.strip_prefix(prefix)?;
    let (encoded, secret) = rest.split_once('.')?;
    if secret.len() != SECRET_LEN {
        return None;
    }
    // Decoded on the stack (every request reads its locator): what does not fit has a field
    // longer than any a locator may name, and is refused below anyway.
    let len = URL_SAFE_NO_PAD.decode_slice(encoded, room).ok()?;
    let decoded = std::str::from_utf8(room.get(..len)?).ok()?;
    let mut parts = decoded.split(FIELD_SEPARATOR);
    let mut out = [""; N];
    for field in &mut out {
        *field = parts.next()?;
    }
    // A field that could not be part of a real key (empty, long, a key separator or a control
    // character) makes the locator unreadable: the credential is then looked up by its hash
    // alone, so a forged locator can never make a key the store refuses.
    let plausible = |p: &str| {
        (1..=MAX_LOCATOR_FIELD).contains(&p.len()) && !p.chars().any(|c| c == '#' || c.is_control())
    };
    if parts.next().is_some() || !out.iter().all(|p| plausible(p)) {
        return None;
    }
    Some(out)
}

/// Hex SHA-256 of a token.
pub fn hash(secret: &str) -> String {
    mcp_pipeline::sha256_hex(secret.as_bytes())
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
        let at = Locator {
            tenant: store::TenantId::new("acme"),
            creator: store::MemberId::new("olivia"),
            connection: store::ConnectionId::new("con_1"),
        };
        let a = generate(&at, &outside::SystemRandomness);
        let b = generate(&at, &outside::SystemRandomness);
        assert!(a.secret.starts_with(MCP_TOKEN_PREFIX));
        let random = a.secret.rsplit_once('.').unwrap().1;
        assert_eq!(random.len(), SECRET_LEN);
        assert_ne!(a.secret, b.secret);
        assert_eq!(a.hash, hash(&a.secret));
        assert_eq!(a.hash.len(), 64);
        assert!(!a.hash.contains(random));
        let shown = format!("{a:?}");
        assert!(
            !shown.contains(random) && shown.contains(&a.hash),
            "{shown}"
        );
        assert_eq!(locator(&a.secret), Some(at));
        assert_eq!(
            locator("ghm_abc"),
            None,
            "tokens without a locator have none"
        );
        assert_eq!(locator(&format!("ghm_%%.{random}")), None);
        assert_eq!(classify(&a.secret), BearerKind::Mcp);
        assert_eq!(classify("gha_abc"), BearerKind::ProductApi);
        assert_eq!(classify("a.b.c"), BearerKind::Jwt);
        assert_eq!(classify("opaque"), BearerKind::Unknown);
    }

    #[test]
    fn a_locator_is_read_up_to_its_longest_fields_and_not_past_them() {
        let fields = |lengths: [usize; 3]| Locator {
            tenant: store::TenantId::new("t".repeat(lengths[0])),
            creator: store::MemberId::new("c".repeat(lengths[1])),
            connection: store::ConnectionId::new("n".repeat(lengths[2])),
        };
        let longest = fields([MAX_LOCATOR_FIELD; 3]);
        assert_eq!(
            locator(&generate(&longest, &outside::SystemRandomness).secret),
            Some(longest.clone())
        );
        for field in 0..3 {
            let mut lengths = [MAX_LOCATOR_FIELD; 3];
            lengths[field] += 1;
            let long = fields(lengths);
            assert_eq!(
                locator(&generate(&long, &outside::SystemRandomness).secret),
                None,
                "field {field}"
            );
        }
    }

    #[test]
    fn api_tokens_and_sessions_name_their_workspace_and_member() {
        let at = MemberLocator {
            tenant: store::TenantId::new("acme"),
            member: store::MemberId::new("ana"),
        };
        let api = generate_api(&at, &outside::SystemRandomness);
        assert!(api.secret.starts_with(API_TOKEN_PREFIX));
        assert_eq!(classify(&api.secret), BearerKind::ProductApi);
        assert_eq!(api_locator(&api.secret), Some(at.clone()));
        assert_eq!(api.hash, hash(&api.secret));
        let session = generate_session(&at, &outside::SystemRandomness);
        assert_eq!(session_locator(&session.secret), Some(at.clone()));
        // Each kind reads only its own: an API token is no session id, nor an MCP token's
        // locator (three fields) a member's (two).
        assert_eq!(session_locator(&api.secret), None);
        assert_eq!(api_locator(&session.secret), None);
        let mcp = generate(
            &Locator {
                tenant: at.tenant.clone(),
                creator: at.member.clone(),
                connection: store::ConnectionId::new("con_1"),
            },
            &outside::SystemRandomness,
        );
        assert_eq!(api_locator(&mcp.secret.replacen("ghm_", "gha_", 1)), None);
        assert_eq!(locator(&api.secret.replacen("gha_", "ghm_", 1)), None);
        // Sessions and tokens made before ADR 53 have none.
        assert_eq!(session_locator(&"s".repeat(43)), None);
        assert_eq!(api_locator(&format!("gha_{}", "x".repeat(43))), None);
    }
}
