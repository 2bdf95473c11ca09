//! The deployment's variables and secrets, as every part of the Worker reads them.

use worker::Env;

/// A variable or secret, when set and not empty.
pub(crate) fn setting(env: &Env, name: &str) -> Option<String> {
    let value = env
        .secret(name)
        .map(|s| s.to_string())
        .or_else(|_| env.var(name).map(|v| v.to_string()))
        .ok()?;
    // As on Lambda: surrounding blanks are not part of a value, and a blank value is unset.
    let value = value.trim();
    (!value.is_empty()).then(|| value.to_owned())
}
