//! Sealing `requestState` for multi round-trip requests.
//!
//! A client echoes `requestState` on its retry, so the server must treat it as attacker
//! input. The pipeline seals a tool's state with HMAC-SHA256 together with the principal
//! (connection), the tool, a digest of the arguments and an expiry, and verifies all of them
//! before the tool sees the state again. A state presented by another connection, for another
//! tool or other arguments, after expiry, or altered in any byte, is refused. (Single use, for
//! states that must be consumed once, is enforced in the store by the confirmation gates.)

use base64::Engine as _;
use hmac::{Hmac, Mac as _};
use serde::{Deserialize, Serialize};
use sha2::Sha256;

/// How long a sealed state stays valid unless the server is configured otherwise.
pub(crate) const STATE_TTL_SECONDS: i64 = 600;
const VERSION: &str = "s1";

#[derive(Debug, Serialize, Deserialize)]
struct Sealed {
    /// The tool's own state.
    s: String,
    /// Principal: the connection, or `-` without one.
    p: String,
    /// Tool name.
    t: String,
    /// Digest of the normalized arguments.
    a: String,
    /// Expiry, seconds since the epoch.
    e: i64,
}

/// Why a presented state was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StateError {
    Malformed,
    BadSignature,
    Expired,
    WrongPrincipal,
    WrongTool,
    WrongArguments,
}

impl StateError {
    pub(crate) fn reason(self) -> &'static str {
        match self {
            StateError::Malformed => "requestState is malformed",
            StateError::BadSignature => "requestState failed verification",
            StateError::Expired => "requestState has expired; call the tool again without it",
            StateError::WrongPrincipal => "requestState belongs to another connection",
            StateError::WrongTool => "requestState belongs to another tool",
            StateError::WrongArguments => "requestState was issued for other arguments",
        }
    }
}

fn mac(key: &[u8], payload: &str) -> Vec<u8> {
    // HMAC accepts keys of any length, so this cannot fail.
    let mut mac = Hmac::<Sha256>::new_from_slice(key)
        .unwrap_or_else(|_| unreachable!("HMAC takes any key length"));
    mac.update(VERSION.as_bytes());
    mac.update(b".");
    mac.update(payload.as_bytes());
    mac.finalize().into_bytes().to_vec()
}

/// Seals a tool's state.
pub(crate) fn seal(
    key: &[u8],
    state: &str,
    principal: &str,
    tool: &str,
    args_digest: &str,
    now: i64,
    ttl: i64,
) -> String {
    let sealed = Sealed {
        s: state.into(),
        p: principal.into(),
        t: tool.into(),
        a: args_digest.into(),
        e: now + ttl,
    };
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let payload = b64.encode(serde_json::to_vec(&sealed).unwrap_or_default());
    let tag = b64.encode(mac(key, &payload));
    format!("{VERSION}.{payload}.{tag}")
}

/// Verifies a presented state and returns the tool's own state.
pub(crate) fn open(
    key: &[u8],
    presented: &str,
    principal: &str,
    tool: &str,
    args_digest: &str,
    now: i64,
) -> Result<String, StateError> {
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let mut parts = presented.split('.');
    let (Some(VERSION), Some(payload), Some(tag), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(StateError::Malformed);
    };
    let tag = b64.decode(tag).map_err(|_| StateError::Malformed)?;
    let mut check = Hmac::<Sha256>::new_from_slice(key)
        .unwrap_or_else(|_| unreachable!("HMAC takes any key length"));
    check.update(VERSION.as_bytes());
    check.update(b".");
    check.update(payload.as_bytes());
    // Constant-time comparison.
    check
        .verify_slice(&tag)
        .map_err(|_| StateError::BadSignature)?;
    let sealed: Sealed = b64
        .decode(payload)
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .ok_or(StateError::Malformed)?;
    if sealed.e <= now {
        return Err(StateError::Expired);
    }
    if sealed.p != principal {
        return Err(StateError::WrongPrincipal);
    }
    if sealed.t != tool {
        return Err(StateError::WrongTool);
    }
    if sealed.a != args_digest {
        return Err(StateError::WrongArguments);
    }
    Ok(sealed.s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sealed_state_opens_only_for_the_same_call() {
        let key = b"0123456789abcdef0123456789abcdef";
        let sealed = seal(
            key,
            "round=1",
            "con_a",
            "ask",
            "d1",
            1000,
            STATE_TTL_SECONDS,
        );
        assert_eq!(
            open(key, &sealed, "con_a", "ask", "d1", 1001),
            Ok("round=1".into())
        );
        assert_eq!(
            open(key, &sealed, "con_b", "ask", "d1", 1001),
            Err(StateError::WrongPrincipal)
        );
        assert_eq!(
            open(key, &sealed, "con_a", "other", "d1", 1001),
            Err(StateError::WrongTool)
        );
        assert_eq!(
            open(key, &sealed, "con_a", "ask", "d2", 1001),
            Err(StateError::WrongArguments)
        );
        assert_eq!(
            open(key, &sealed, "con_a", "ask", "d1", 1000 + STATE_TTL_SECONDS),
            Err(StateError::Expired)
        );
        assert_eq!(
            open(b"another key", &sealed, "con_a", "ask", "d1", 1001),
            Err(StateError::BadSignature)
        );
        let mut tampered = sealed.clone();
        let flip = if tampered.ends_with('A') { 'B' } else { 'A' };
        tampered.pop();
        tampered.push(flip);
        assert_eq!(
            open(key, &tampered, "con_a", "ask", "d1", 1001),
            Err(StateError::BadSignature)
        );
        assert_eq!(
            open(key, "garbage", "con_a", "ask", "d1", 1001),
            Err(StateError::Malformed)
        );
    }
}
