//! JSON as gatehouse reads a request body: like `serde_json`, except that an object naming the
//! same key twice is refused. Parsers disagree on which of two duplicates wins (the first, the
//! last, an error), so a body with duplicates could mean one thing to a proxy that inspected it
//! and another to gatehouse, and two spellings of one call could digest differently. Integers
//! beyond 64 bits are found before parsing ([`integer_beyond_64_bits`], with where they are): a
//! parser would round them to the nearest double, and two different numbers would become one,
//! so a request holding one is answered by naming it, never acted on. Depth is bounded by
//! `serde_json`'s recursion limit (128): deeper bodies are refused, never a stack overflow.

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// Parses `bytes` as one JSON value, refusing duplicate keys. An integer beyond 64 bits is
/// read as the nearest double: a reader that must not round finds such integers first with
/// [`integer_beyond_64_bits`] (as [`crate::parse_message`] does) and never acts on the value.
pub fn from_slice(bytes: &[u8]) -> Result<Value, serde_json::Error> {
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let value = StrictValue.deserialize(&mut deserializer)?;
    deserializer.end()?;
    Ok(value)
}

/// An integer literal that fits neither `i64` nor `u64`, and where it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BeyondRange {
    /// The integer as written.
    pub integer: String,
    /// Its place from the top.
    pub path: Vec<Segment>,
}

/// One step of a place in a JSON value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Segment {
    /// An object's member.
    Key(String),
    /// An array's element.
    Index(usize),
}

/// A place written as `a.b[2].c` (the form argument errors use); `.` for the top.
pub fn path_text(path: &[Segment]) -> String {
    let mut text = String::new();
    for segment in path {
        match segment {
            Segment::Key(key) if text.is_empty() => text.push_str(key),
            Segment::Key(key) => {
                text.push('.');
                text.push_str(key);
            }
            Segment::Index(index) => text.push_str(&format!("[{index}]")),
        }
    }
    if text.is_empty() {
        ".".to_owned()
    } else {
        text
    }
}

/// One open container while scanning: an object with where its current key is written (read
/// only if an integer is found under it), or an array with its current index.
enum Open {
    Object { key: Option<(usize, usize)> },
    Array { index: usize },
}

/// The first integer literal (outside strings) that fits neither `i64` nor `u64`, with its
/// path. The scan follows only the structure; what is not JSON is left to the parser.
pub fn integer_beyond_64_bits(bytes: &[u8]) -> Option<BeyondRange> {
    let mut open: Vec<Open> = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                let end = string_end(bytes, i)?;
                if let Some(Open::Object { key }) = open.last_mut()
                    && key.is_none()
                {
                    *key = Some((i, end));
                }
                i = end + 1;
                continue;
            }
            b'{' => open.push(Open::Object { key: None }),
            b'[' => open.push(Open::Array { index: 0 }),
            b'}' | b']' => {
                open.pop();
            }
            b',' => match open.last_mut() {
                Some(Open::Object { key }) => *key = None,
                Some(Open::Array { index }) => *index += 1,
                None => {}
            },
            b'-' | b'0'..=b'9' => {
                let start = i;
                while i < bytes.len()
                    && matches!(bytes[i], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')
                {
                    i += 1;
                }
                let token = std::str::from_utf8(&bytes[start..i]).ok()?;
                if beyond_64_bits(token) {
                    return Some(BeyondRange {
                        integer: token.to_owned(),
                        path: open.iter().map(|o| o.segment(bytes)).collect(),
                    });
                }
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    None
}

impl Open {
    fn segment(&self, bytes: &[u8]) -> Segment {
        match self {
            Open::Object { key } => Segment::Key(
                key.and_then(|(start, end)| serde_json::from_slice(&bytes[start..=end]).ok())
                    .unwrap_or_default(),
            ),
            Open::Array { index } => Segment::Index(*index),
        }
    }
}

/// The index of the quote that closes the string opening at `start`.
fn string_end(bytes: &[u8], start: usize) -> Option<usize> {
    let mut i = start + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return Some(i),
            _ => i += 1,
        }
    }
    None
}

fn beyond_64_bits(token: &str) -> bool {
    let digits = token.strip_prefix('-').unwrap_or(token);
    let integer = !digits.is_empty() && digits.bytes().all(|d| d.is_ascii_digit());
    integer && token.parse::<i64>().is_err() && token.parse::<u64>().is_err()
}

struct StrictValue;

impl<'de> DeserializeSeed<'de> for StrictValue {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for StrictValue {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        Number::from_f64(v)
            .map(Value::Number)
            .ok_or_else(|| E::custom("a number that is not finite"))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1024));
        while let Some(item) = seq.next_element_seed(StrictValue)? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            // One lookup per key: the entry found is the one filled.
            match object.entry(key) {
                serde_json::map::Entry::Occupied(taken) => {
                    return Err(de::Error::custom(format_args!(
                        "the key {:?} appears twice in one object",
                        taken.key()
                    )));
                }
                serde_json::map::Entry::Vacant(free) => {
                    free.insert(map.next_value_seed(StrictValue)?);
                }
            }
        }
        Ok(Value::Object(object))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_what_serde_json_reads() {
        let text = r#"{"a":[1,-2,3.5,"x",null,true,{"b":{}}],"big":18446744073709551615}"#;
        let strict = from_slice(text.as_bytes()).unwrap();
        let loose: Value = serde_json::from_str(text).unwrap();
        assert_eq!(strict, loose);
    }

    #[test]
    fn refuses_a_key_twice_at_any_depth() {
        for text in [
            r#"{"a":1,"a":2}"#,
            r#"{"params":{"arguments":{"x":1,"x":1}}}"#,
            r#"[{"k":1},{"k":2,"k":3}]"#,
            r#"{"a":1,"\u0061":2}"#,
        ] {
            let e = from_slice(text.as_bytes()).unwrap_err();
            assert!(e.to_string().contains("appears twice"), "{text}: {e}");
        }
        assert!(
            from_slice(br#"{"a":{"a":1}}"#).is_ok(),
            "nesting is not duplication"
        );
    }

    #[test]
    fn refuses_deep_nesting_without_overflowing() {
        let deep = "[".repeat(100_000) + &"]".repeat(100_000);
        assert!(from_slice(deep.as_bytes()).is_err());
    }

    #[test]
    fn refuses_integers_beyond_64_bits_and_only_those() {
        for text in [
            "18446744073709551616",
            "-9223372036854775809",
            r#"{"a":[1,100000000000000000000]}"#,
        ] {
            assert!(integer_beyond_64_bits(text.as_bytes()).is_some(), "{text}");
        }
        for text in [
            "18446744073709551615",
            "-9223372036854775808",
            "1e300",
            "123456789012345678901234.5",
            r#""18446744073709551616""#,
            r#"{"k\"18446744073709551616":1}"#,
        ] {
            assert!(integer_beyond_64_bits(text.as_bytes()).is_none(), "{text}");
            assert!(from_slice(text.as_bytes()).is_ok(), "{text}");
        }
    }

    #[test]
    fn says_where_an_integer_beyond_64_bits_is() {
        let found =
            |text: &str| integer_beyond_64_bits(text.as_bytes()).map(|b| path_text(&b.path));
        assert_eq!(found("18446744073709551616").as_deref(), Some("."));
        assert_eq!(
            found(r#"{"id":1,"params":{"arguments":{"n":1180591620717411303424}}}"#).as_deref(),
            Some("params.arguments.n")
        );
        assert_eq!(
            found(r#"{"a":{"x":"}","y":[1,2,{"z":-99999999999999999999}]}}"#).as_deref(),
            Some("a.y[2].z")
        );
        assert_eq!(
            found(r#"{"k\"1":[0],"m":[[5],[6,77777777777777777777]]}"#).as_deref(),
            Some("m[1][1]")
        );
        assert_eq!(found(r#"{"a":"18446744073709551616"}"#), None);
        let rounded = from_slice(br#"{"n":1180591620717411303424}"#).unwrap();
        assert!(rounded["n"].is_f64());
    }

    #[test]
    fn refuses_trailing_text() {
        assert!(from_slice(br#"{"a":1} {"a":2}"#).is_err());
    }
}
