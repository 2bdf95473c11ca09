//! JSON text written straight into an answer, byte for byte as `serde_json` writes it compactly,
//! but with strings scanned eight bytes at a time.
//!
//! Every tool result is written twice (its structured content, then that text again as the
//! text block's string), so the result's strings are scanned for characters to escape twice per
//! call. `serde_json` looks each byte up in a table; a profile of reads returning 1 KB put that
//! scan at about a tenth of the server's instructions per call. Most text needs no escape, so
//! checking a word of eight bytes at once and copying clean runs whole does the same work in a
//! fraction of the steps. The tests below hold the output to `serde_json`'s.

use std::fmt::Write as _;

use serde_json::Value;

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
        Value::Object(fields) => {
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
    }
}

/// `value` as compact JSON text.
pub(crate) fn to_text(value: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, value);
    out
}

/// Appends `text` as a JSON string, quoted and escaped as `serde_json` escapes it.
pub(crate) fn write_str(out: &mut String, text: &str) {
    out.reserve(text.len() + 2);
    out.push('"');
    let bytes = text.as_bytes();
    // Escapes are ASCII, so every index where one starts or ends is a char boundary.
    let mut clean_from = 0;
    let mut at = 0;
    while at < bytes.len() {
        if let Some(block) = bytes.get(at..at + BLOCK)
            && !block
                .iter()
                .fold(false, |found, &byte| found | to_escape(byte))
        {
            at += BLOCK;
            continue;
        }
        let end = (at + 8).min(bytes.len());
        let word = &bytes[at..end];
        if let Ok(word) = <[u8; 8]>::try_from(word)
            && !any_to_escape(u64::from_le_bytes(word))
        {
            at = end;
            continue;
        }
        for (offset, &byte) in word.iter().enumerate() {
            if let Some(escape) = escape_of(byte) {
                let position = at + offset;
                out.push_str(&text[clean_from..position]);
                push_escape(out, byte, escape);
                clean_from = position + 1;
            }
        }
        at = end;
    }
    out.push_str(&text[clean_from..]);
    out.push('"');
}

/// Bytes checked at once before falling back to words: a fold over a fixed block, without
/// early exit, which the compiler turns into vector compares (SSE2 on x86-64), several times
/// fewer instructions per byte than the word test on long clean text.
const BLOCK: usize = 32;

/// Whether `serde_json` escapes `byte` (as [`any_to_escape`] asks of eight at once).
fn to_escape(byte: u8) -> bool {
    (byte < 0x20) | (byte == b'"') | (byte == b'\\')
}

/// Whether any of the eight bytes of `word` is `"`, `\` or a control character below 0x20.
/// Exact as a yes or no (the classic zero-byte and less-than tests on a word).
fn any_to_escape(word: u64) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let zero_byte = |x: u64| x.wrapping_sub(ONES) & !x & HIGH;
    let below_space = word.wrapping_sub(ONES * 0x20) & !word & HIGH;
    let quote = zero_byte(word ^ (ONES * u64::from(b'"')));
    let backslash = zero_byte(word ^ (ONES * u64::from(b'\\')));
    (below_space | quote | backslash) != 0
}

/// How `serde_json` escapes `byte`: a short escape's letter, `u` for `\u00XX`, or nothing.
fn escape_of(byte: u8) -> Option<u8> {
    match byte {
        b'"' => Some(b'"'),
        b'\\' => Some(b'\\'),
        0x08 => Some(b'b'),
        0x0C => Some(b'f'),
        b'\n' => Some(b'n'),
        b'\r' => Some(b'r'),
        b'\t' => Some(b't'),
        0x00..=0x1F => Some(b'u'),
        _ => None,
    }
}

fn push_escape(out: &mut String, byte: u8, escape: u8) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push('\\');
    out.push(char::from(escape));
    if escape == b'u' {
        out.push_str("00");
        out.push(char::from(HEX[usize::from(byte >> 4)]));
        out.push(char::from(HEX[usize::from(byte & 0xF)]));
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// Every byte value in every position of a word, beside text that needs no escape and
    /// text that is not ASCII: the same as `serde_json`.
    #[test]
    fn strings_are_written_as_serde_json_writes_them() {
        let mut texts: Vec<String> = vec![
            String::new(),
            "plain".into(),
            "x".repeat(1024),
            "héllo wörld — ✓ 🚀 tail".into(),
            "\u{7f}\u{80}\u{ff}".into(),
        ];
        for c in (0u8..0x80).map(char::from) {
            // Past two blocks, and on each side of every block and word boundary.
            for position in 0..70 {
                let mut text = "ab".repeat(position / 2 + 20);
                text.insert(position, c);
                texts.push(text);
            }
        }
        texts.push("\"\\\n\r\t\u{8}\u{c}\u{0}\u{1f}".repeat(9));
        for text in texts {
            let mut ours = String::new();
            write_str(&mut ours, &text);
            assert_eq!(
                ours,
                serde_json::to_string(&text).unwrap_or_default(),
                "{text:?}"
            );
        }
    }

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
        }
    }
}
