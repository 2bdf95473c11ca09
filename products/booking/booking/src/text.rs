//! Text someone writes into a record (refused when it hides or reorders what readers see) and
//! the versions of records. Third-party text is handed out wrapped as untrusted
//! (`outside::untrusted`, the platform's, re-exported here).

pub use outside::untrusted::{UNTRUSTED_NOTE, UntrustedText, hides_or_reorders, untrusted};

/// Whether a field may hold line breaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lines {
    /// A name, a service, a reason: one line.
    One,
    /// A note, an address, a message: line breaks (and tabs) allowed.
    Many,
}

/// Text someone writes into a record: trimmed, 1 to `max` characters, no control characters
/// (line breaks and tabs only where `lines` allows them) and nothing that hides or reorders
/// what a reader sees. Refused rather than cleaned, so that the sender learns why and what
/// is stored is what every page and answer shows: a name with a zero-width space would
/// otherwise look like another record's, and a bidi override shows other text than it holds.
pub fn written(
    field: &'static str,
    value: &str,
    max: usize,
    lines: Lines,
) -> Result<String, crate::BookingError> {
    let v = value.trim();
    if v.is_empty() || v.chars().count() > max {
        return Err(crate::BookingError::invalid(
            field,
            format!("must be 1 to {max} characters"),
        ));
    }
    let breaks_allowed = |c: char| lines == Lines::Many && (c == '\n' || c == '\t');
    // A soft hyphen shows nothing mid-line: in a name it makes a look-alike of another.
    let unseen = |c: char| lines == Lines::One && c == '\u{00AD}';
    if v.chars()
        .any(|c| (c.is_control() && !breaks_allowed(c)) || unseen(c))
    {
        let what = match lines {
            Lines::One => "must be one line, without control characters or soft hyphens",
            Lines::Many => "must not contain control characters other than line breaks and tabs",
        };
        return Err(crate::BookingError::invalid(field, what));
    }
    if let Some(c) = v.chars().find(|c| hides_or_reorders(*c)) {
        return Err(crate::BookingError::invalid(
            field,
            format!(
                "contains U+{:04X}, a character that hides text or reorders what readers see; \
                 send the text without it",
                u32::from(c)
            ),
        ));
    }
    Ok(v.to_owned())
}

/// A short hash of a value's public content: the version callers send back with changes.
pub fn version_of(value: &serde_json::Value) -> String {
    use sha2::Digest as _;
    let mut text = String::with_capacity(128);
    write_canonical(&mut text, value);
    let digest = sha2::Sha256::digest(text.as_bytes());
    hex::encode(&digest[..6])
}

/// Appends the text a version hashes: objects with their keys sorted, everything else as
/// `serde_json` writes it compactly. Versions already handed out must stay the same, so the
/// text does too (a test holds it to the `format!` spelling it replaced, which cost a string
/// per field on every write).
fn write_canonical(out: &mut String, value: &serde_json::Value) {
    match value {
        serde_json::Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                store::write_json_str(out, key);
                out.push(':');
                write_canonical(out, &map[key]);
            }
            out.push('}');
        }
        serde_json::Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(out, item);
            }
            out.push(']');
        }
        serde_json::Value::String(text) => store::write_json_str(out, text),
        other => out.push_str(&other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_ignores_key_order() {
        let a = serde_json::json!({"a": 1, "b": [1, 2]});
        let b: serde_json::Value = serde_json::from_str(r#"{"b":[1,2],"a":1}"#).unwrap();
        assert_eq!(version_of(&a), version_of(&b));
        assert_eq!(version_of(&a).len(), 12);
    }

    /// The text versions were hashed from before it was written into one buffer.
    fn canonical_as_before(value: &serde_json::Value) -> String {
        match value {
            serde_json::Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                let parts: Vec<String> = keys
                    .iter()
                    .map(|k| {
                        let key = serde_json::Value::String((*k).clone());
                        format!("{key}:{}", canonical_as_before(&map[*k]))
                    })
                    .collect();
                format!("{{{}}}", parts.join(","))
            }
            serde_json::Value::Array(items) => {
                let parts: Vec<String> = items.iter().map(canonical_as_before).collect();
                format!("[{}]", parts.join(","))
            }
            other => other.to_string(),
        }
    }

    #[test]
    fn versions_handed_out_before_stay_the_same() {
        let values = [
            serde_json::json!({"name": "Ann \"A\" O'Neil", "email": "a@b.c", "phone": null,
                "address": "1 Main St\nFlat 2", "notes": "tab\there \u{1} é ✓"}),
            serde_json::json!({"customer": "c1", "lines": [{"qty": 2, "price": "10.50"},
                {"qty": 1.5, "price": "-0"}], "z": [], "a": {}, "b": [true, false, null]}),
            serde_json::json!("just text"),
            serde_json::json!([1, -2, 1e300, 0.1, u64::MAX]),
        ];
        for value in values {
            let mut ours = String::new();
            write_canonical(&mut ours, &value);
            assert_eq!(ours, canonical_as_before(&value));
        }
    }
}
