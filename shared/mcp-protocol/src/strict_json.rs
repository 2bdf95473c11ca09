//! JSON as gatehouse reads a request body: like `serde_json`, except that an object naming the
//! same key twice is refused. Parsers disagree on which of two duplicates wins (the first, the
//! last, an error), so a body with duplicates could mean one thing to a proxy that inspected it
//! and another to gatehouse, and two spellings of one call could digest differently. Integers
//! beyond 64 bits are refused too: a parser would round them to the nearest double, and two
//! different numbers would become one (send such values as strings). Depth is bounded by
//! `serde_json`'s recursion limit (128): deeper bodies are refused, never a stack overflow.

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// Parses `bytes` as one JSON value, refusing duplicate keys.
pub fn from_slice(bytes: &[u8]) -> Result<Value, serde_json::Error> {
    if let Some(integer) = integer_beyond_64_bits(bytes) {
        return Err(de::Error::custom(format_args!(
            "the integer {integer} does not fit in 64 bits; send it as a string"
        )));
    }
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let value = StrictValue.deserialize(&mut deserializer)?;
    deserializer.end()?;
    Ok(value)
}

/// The first integer literal (outside strings) that fits neither `i64` nor `u64`.
fn integer_beyond_64_bits(bytes: &[u8]) -> Option<String> {
    let mut i = 0;
    let mut in_string = false;
    while i < bytes.len() {
        let b = bytes[i];
        if in_string {
            match b {
                b'\\' => i += 1,
                b'"' => in_string = false,
                _ => {}
            }
            i += 1;
            continue;
        }
        if b == b'"' {
            in_string = true;
        } else if b == b'-' || b.is_ascii_digit() {
            let start = i;
            while i < bytes.len()
                && matches!(bytes[i], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')
            {
                i += 1;
            }
            let token = std::str::from_utf8(&bytes[start..i]).ok()?;
            let digits = token.strip_prefix('-').unwrap_or(token);
            let integer = !digits.is_empty() && digits.bytes().all(|d| d.is_ascii_digit());
            if integer && token.parse::<i64>().is_err() && token.parse::<u64>().is_err() {
                return Some(token.to_owned());
            }
            continue;
        }
        i += 1;
    }
    None
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
            let e = from_slice(text.as_bytes()).unwrap_err();
            assert!(
                e.to_string().contains("does not fit in 64 bits"),
                "{text}: {e}"
            );
        }
        for text in [
            "18446744073709551615",
            "-9223372036854775808",
            "1e300",
            "123456789012345678901234.5",
            r#""18446744073709551616""#,
            r#"{"k\"18446744073709551616":1}"#,
        ] {
            assert!(from_slice(text.as_bytes()).is_ok(), "{text}");
        }
    }

    #[test]
    fn refuses_trailing_text() {
        assert!(from_slice(br#"{"a":1} {"a":2}"#).is_err());
    }
}
