//! Argon2id password hashes.

use argon2::Argon2;
use argon2::password_hash::{PasswordHash, PasswordHasher as _, PasswordVerifier as _, SaltString};

use crate::AccountsError;

/// The shortest password accepted.
pub const MIN_PASSWORD_CHARS: usize = 8;

/// A hash checked when there is no account, so that timing does not tell accounts apart.
pub(crate) const DUMMY_HASH: &str =
    "$argon2id$v=19$m=19456,t=2,p=1$c29tZXNhbHQ$RdescudvJCsgt3ub+b+dWRWJTmaaJObG";

/// Hashes a password with Argon2id and a salt drawn from `outside`, after checking its
/// length.
pub fn hash(
    password: &str,
    outside: &outside::ClockAndRandomness,
) -> Result<String, AccountsError> {
    if password.chars().count() < MIN_PASSWORD_CHARS {
        return Err(AccountsError::Invalid(format!(
            "passwords have at least {MIN_PASSWORD_CHARS} characters"
        )));
    }
    let mut bytes = [0u8; 16];
    outside.fill(&mut bytes);
    let salt = SaltString::encode_b64(&bytes)
        .map_err(|e| AccountsError::Invalid(format!("cannot make a salt: {e}")))?;
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| AccountsError::Invalid(format!("cannot hash the password: {e}")))
}

/// Whether `password` matches the stored hash.
pub fn verify(password: &str, hash: &str) -> bool {
    PasswordHash::new(hash).is_ok_and(|parsed| {
        Argon2::default()
            .verify_password(password.as_bytes(), &parsed)
            .is_ok()
    })
}

/// [`verify`] away from the threads that serve requests: on tokio's blocking threads, at most
/// `checks_at_once_limit()` at a time, so that a burst of sign-ins queues instead of taking every
/// core from the MCP calls beside it. Without tokio (the edge) it runs in place.
pub async fn verify_aside(password: &str, hash: &str) -> bool {
    #[cfg(feature = "tokio")]
    if let Ok(runtime) = tokio::runtime::Handle::try_current() {
        let Ok(_permit) = checks_at_once().acquire().await else {
            return false;
        };
        let (password, hash) = (password.to_owned(), hash.to_owned());
        return runtime
            .spawn_blocking(move || verify(&password, &hash))
            .await
            .unwrap_or(false);
    }
    verify(password, hash)
}

/// How many password checks run at once: all cores but one, at least one.
#[cfg(feature = "tokio")]
pub fn checks_at_once_limit() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().saturating_sub(1).max(1))
}

#[cfg(feature = "tokio")]
fn checks_at_once() -> &'static tokio::sync::Semaphore {
    static CHECKS: std::sync::OnceLock<tokio::sync::Semaphore> = std::sync::OnceLock::new();
    CHECKS.get_or_init(|| tokio::sync::Semaphore::new(checks_at_once_limit()))
}

/// What a session remembers of the password it was started with: a digest of its hash, so
/// that a new password (a new hash, with a new salt) ends every session started before it.
pub fn credential_tag(hash: &str) -> String {
    use sha2::Digest as _;
    hex::encode(&sha2::Sha256::digest(hash.as_bytes())[..16])
}
