//! JSON text written straight into an answer, byte for byte as `serde_json` writes it compactly,
//! but with strings escaped by [`store::write_json_str`], which scans many bytes at a time.
//!
//! Every tool result is written twice (its structured content, then that text again as the
//! text block's string), so the result's strings are scanned for characters to escape twice per
//! call. `serde_json` looks each byte up in a table; a profile of reads returning 1 KB put that
//! scan at about a tenth of the server's instructions per call. The tests below hold the output
//! to `serde_json`'s.

use std::fmt::Write as _;

use serde_json::{Map, Value};
pub(crate) use store::write_json_str as write_str;

/// Appends `value` as compact JSON text: exactly what `serde_json::to_string(value)` returns.
pub(crate) fn write_value(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        // `Number`'s `Display` is its JSON text (itoa and ryu, as serialization uses).
        Value::Number(n) => {
            let _ = write!(out, "{n}");
        }
        Value::String(s) => write_str(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(out, item);
            }
            out.push(']');
        }
        Value::Object(fields) => write_object(out, fields),
    }
}

/// Appends `fields` as a JSON object, as [`write_value`] writes `Value::Object(fields)`.
fn write_object(out: &mut String, fields: &Map<String, Value>) {
    out.push('{');
    for (i, (name, item)) in fields.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_str(out, name);
        out.push(':');
        write_value(out, item);
    }
    out.push('}');
}

/// `fields` as compact JSON text, without building a `Value` around them.
pub fn object_text(fields: &Map<String, Value>) -> String {
    let mut out = String::new();
    write_object(&mut out, fields);
    out
}

/// `value` as compact JSON text.
pub fn to_text(value: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, value);
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn values_are_written_as_serde_json_writes_them() {
        let values = [
            json!(null),
            json!(true),
            json!([]),
            json!({}),
            json!({"b": 1, "a": [1.5, -0.0, 1e300, 0.1, -7, u64::MAX, i64::MIN], "c": {"d\n": "\"q\""}}),
            json!([{"summary": "A fixed 1 KB payload.", "payload": "x".repeat(1024), "warnings": [], "next_steps": []}]),
            json!({"nested": [[[]], [{}], null, false, "\u{1}"]}),
        ];
        for value in values {
            assert_eq!(
                to_text(&value),
                serde_json::to_string(&value).unwrap_or_default()
            );
            if let Value::Object(fields) = &value {
                assert_eq!(object_text(fields), to_text(&value));
            }
        }
    }
}
