//! Tenant ids: the first segment of every tenant-owned partition (`<tenant>#<kind>`), so one
//! rule for all of them. A tenant id is 2 to 40 lower-case letters, digits and hyphens,
//! starting with a letter or digit, and is none of the words that begin the partitions no
//! tenant owns (the global switch and audit trail, credential indexes, sessions, operators),
//! so that no tenant's key can ever land in one of those.

/// First segments of partitions that belong to no tenant. Every crate that keeps such a
/// partition names its first segment here (a workspace test checks).
pub const RESERVED: &[&str] = &[
    "system", "operator", "session", "mcptoken", "apitoken", "signin", "tenants", "outbox",
];

/// Why `id` is not a tenant id, if it is not.
pub fn check(id: &str) -> Result<(), String> {
    let shape = (2..=40).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && id.as_bytes()[0] != b'-';
    if !shape {
        return Err(format!(
            "{id:?} is not a workspace id: 2 to 40 lower-case letters, digits and hyphens, not starting with a hyphen"
        ));
    }
    if RESERVED.contains(&id) {
        return Err(format!("{id:?} is reserved; choose another workspace id"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::check;

    #[test]
    fn ids_are_checked() {
        assert!(check("acme").is_ok());
        assert!(check("acme-2").is_ok());
        for bad in [
            "system", "a", "Acme", "ac me", "ac#me", "-acme", "operator", "",
        ] {
            assert!(check(bad).is_err(), "{bad}");
        }
    }
}
