//! Canonical JSON: one byte string per meaning, for digests of arguments.
//!
//! Object keys are sorted at every level and numbers are written in one form (integers as
//! integers, other numbers in their shortest round-trip form, `1.0` as `1`), so two calls that
//! mean the same thing hash the same whatever key order or number spelling the client used.

use serde_json::Value;
use sha2::{Digest as _, Sha256};

/// The canonical text of a value.
pub fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write(value, &mut out);
    out
}

fn write(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                write(&map[key], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write(item, out);
            }
            out.push(']');
        }
        Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => out.push_str(&i.to_string()),
            (None, Some(u), _) => out.push_str(&u.to_string()),
            (None, None, Some(f)) if f.fract() == 0.0 && f.abs() < 9.0e15 => {
                // Whole numbers written as floats (`5.0`) mean the same as integers.
                out.push_str(&format!("{f:.0}"));
            }
            _ => out.push_str(&n.to_string()),
        },
        other => out.push_str(&other.to_string()),
    }
}

/// Hex SHA-256 of the canonical text.
pub fn digest(value: &Value) -> String {
    let hash = Sha256::digest(canonical_json(value).as_bytes());
    hash.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn key_order_and_number_spelling_do_not_matter() {
        let a = json!({"b": 1, "a": {"y": [1, 2.0], "x": "é"}});
        let b: Value = serde_json::from_str(r#"{"a":{"x":"é","y":[1.0,2]},"b":1.0}"#).unwrap();
        assert_eq!(canonical_json(&a), r#"{"a":{"x":"é","y":[1,2]},"b":1}"#);
        assert_eq!(digest(&a), digest(&b));
        assert_ne!(
            digest(&a),
            digest(&json!({"b": 2, "a": {"y": [1, 2], "x": "é"}}))
        );
        assert_eq!(canonical_json(&json!(0.5)), "0.5");
    }
}
