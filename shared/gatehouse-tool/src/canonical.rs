//! Canonical JSON: one byte string per meaning, for digests of arguments.
//!
//! Object keys are sorted at every level and numbers are written in one form (integers as
//! integers, other numbers in their shortest round-trip form, `1.0` as `1`), so two calls that
//! mean the same thing hash the same whatever key order or number spelling the client used.
//! `-0` is `0`. Strings are kept as sent: `é` precomposed and decomposed are different
//! arguments (no Unicode normalisation, as RFC 8785). Integers beyond 64 bits, which JSON
//! parsers would round, never get here: the request parser refuses them
//! (`mcp_protocol::strict_json`), so two different arguments never share a digest.

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
                crate::json_text::write_str(out, key);
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
            // Matches -0 as well (float patterns compare as `==`).
            (None, None, Some(0.0)) => out.push('0'),
            (None, None, Some(f)) if f.fract() == 0.0 && f.abs() < 9.0e15 => {
                // Whole numbers written as floats (`5.0`) mean the same as integers.
                out.push_str(&format!("{f:.0}"));
            }
            _ => out.push_str(&n.to_string()),
        },
        // Strings, booleans and null: as `serde_json` writes them.
        other => crate::json_text::write_value(out, other),
    }
}

/// Hex SHA-256 of the canonical text.
pub fn digest(value: &Value) -> String {
    sha256_hex(canonical_json(value).as_bytes())
}

/// Lower-case hex SHA-256 of `bytes`, written in one step (`hex::encode` pushes a character
/// at a time, which costs more than the hash on every call that digests a token or arguments).
pub fn sha256_hex(bytes: &[u8]) -> String {
    let mut text = [0u8; 64];
    // Cannot fail: 32 bytes fill 64 digits exactly.
    let _ = hex::encode_to_slice(Sha256::digest(bytes), &mut text);
    String::from_utf8(text.to_vec()).unwrap_or_default()
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

    fn parsed(text: &str) -> Value {
        serde_json::from_str(text).unwrap()
    }

    #[test]
    fn golden_vectors() {
        // Equal meaning, equal digest.
        for (a, b) in [
            ("1.0", "1"),
            ("-0", "0"),
            ("-0.0", "0"),
            ("1e2", "100"),
            ("1E+2", "100"),
            ("0.5e1", "5"),
            (r#""\u0041""#, r#""A""#),
            (r#"{"b":1,"a":2}"#, r#"{ "a" : 2 , "b" : 1 }"#),
            ("9007199254740993", "9007199254740993"),
        ] {
            assert_eq!(digest(&parsed(a)), digest(&parsed(b)), "{a} vs {b}");
        }
        // Different meaning, different digest.
        for (a, b) in [
            ("9007199254740993", "9007199254740992"),
            ("18446744073709551615", "18446744073709551614"),
            ("-9223372036854775808", "-9223372036854775807"),
            (r#""\u00e9""#, r#""e\u0301""#),
            ("[1,2]", "[2,1]"),
            (r#"{"a":null}"#, "{}"),
            ("1", r#""1""#),
            ("0.1", "0.10000000000000002"),
        ] {
            assert_ne!(digest(&parsed(a)), digest(&parsed(b)), "{a} vs {b}");
        }
        assert_eq!(
            canonical_json(&parsed(r#"{"é":1,"a":[true,null]}"#)),
            r#"{"a":[true,null],"é":1}"#
        );
    }

    mod properties {
        use super::*;
        use proptest::prelude::*;

        fn json() -> impl Strategy<Value = Value> {
            let leaf = prop_oneof![
                Just(Value::Null),
                any::<bool>().prop_map(Value::Bool),
                any::<i64>().prop_map(Value::from),
                any::<u64>().prop_map(Value::from),
                any::<f64>()
                    .prop_filter("finite", |f| f.is_finite())
                    .prop_map(Value::from),
                "\\PC{0,12}".prop_map(Value::String),
            ];
            leaf.prop_recursive(4, 48, 6, |inner| {
                prop_oneof![
                    prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                    prop::collection::btree_map("\\PC{0,6}", inner, 0..6)
                        .prop_map(|m| Value::Object(m.into_iter().collect())),
                ]
            })
        }

        /// The value with every object's keys in reverse order and whole numbers respelled as
        /// floats: the same meaning, sent differently.
        fn respelled(value: &Value) -> String {
            match value {
                Value::Object(map) => {
                    let parts: Vec<String> = map
                        .iter()
                        .rev()
                        .map(|(k, v)| format!("{}:{}", Value::String(k.clone()), respelled(v)))
                        .collect();
                    format!("{{{}}}", parts.join(","))
                }
                Value::Array(items) => {
                    let parts: Vec<String> = items.iter().map(respelled).collect();
                    format!("[{}]", parts.join(","))
                }
                Value::Number(n) if n.as_i64().is_some_and(|i| i.abs() < (1 << 52)) => {
                    format!("{}.0", n)
                }
                other => other.to_string(),
            }
        }

        proptest! {
            #[test]
            fn canonical_text_is_a_fixed_point(value in json()) {
                let once = canonical_json(&value);
                let reparsed: Value = serde_json::from_str(&once).unwrap();
                prop_assert_eq!(canonical_json(&reparsed), once);
            }

            #[test]
            fn spelling_does_not_change_the_digest(value in json()) {
                let respelled: Value = serde_json::from_str(&respelled(&value)).unwrap();
                prop_assert_eq!(digest(&respelled), digest(&value));
            }

            #[test]
            fn different_values_have_different_digests(a in json(), b in json()) {
                let same_meaning = canonical_json(&a) == canonical_json(&b);
                prop_assert_eq!(digest(&a) == digest(&b), same_meaning);
            }
        }
    }
}
