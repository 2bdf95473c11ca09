//! Argon2id password hashes.

use argon2::Argon2;
use argon2::password_hash::{PasswordHash, PasswordHasher as _, PasswordVerifier as _, SaltString};

use crate::AccountsError;

/// The shortest password accepted.
pub const MIN_PASSWORD_CHARS: usize = 8;

/// A hash checked when there is no account, so that timing does not tell accounts apart.
pub(crate) const DUMMY_HASH: &str =
    "$argon2id$v=19$m=19456,t=2,p=1$c29tZXNhbHQ$RdescudvJCsgt3ub+b+dWRWJTmaaJObG";

/// Hashes a password with Argon2id and a random salt, after checking its length.
pub fn hash(password: &str) -> Result<String, AccountsError> {
    if password.chars().count() < MIN_PASSWORD_CHARS {
        return Err(AccountsError::Invalid(format!(
            "passwords have at least {MIN_PASSWORD_CHARS} characters"
        )));
    }
    let mut bytes = [0u8; 16];
    outside::Randomness::fill(&outside::SystemRandomness, &mut bytes);
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
