//! The JSON form of an item, for backends without a native type system (the embedded store's
//! data and gate files): `{"name":{"S":"text"},"count":{"N":"3"}}`, exactly as `serde_json`
//! writes [`Item`].
//!
//! Every admission reads and writes gate items (a rate bucket, a slot) in this form, so it is
//! written and read here without `serde_json` when an item is flat: every value a string, a
//! number or a boolean, and no text that needs escaping. Anything else (nested values, bytes,
//! escapes, whitespace) takes `serde_json`'s path, so the text and its meaning never depend on
//! which path ran: the tests hold both to the same bytes and the same items.

use crate::{Item, Number, Value};

/// Serializes an item to its JSON form.
pub fn item_to_json(item: &Item) -> String {
    flat_text(item).unwrap_or_else(|| {
        // Serializing a map of plain data cannot fail.
        serde_json::to_string(item).unwrap_or_default()
    })
}

/// Reads an item back from [`item_to_json`].
pub fn item_from_json(text: &str) -> Result<Item, serde_json::Error> {
    match flat_item(text) {
        Some(item) => Ok(item),
        None => serde_json::from_str(text),
    }
}

/// Whether `text` is written by `serde_json` as it is, between quotes: no quote, backslash or
/// control character.
fn plain(text: &str) -> bool {
    !text.bytes().any(|b| b == b'"' || b == b'\\' || b < 0x20)
}

/// The text of a flat item, `None` when it is not flat.
fn flat_text(item: &Item) -> Option<String> {
    let mut out = String::with_capacity(64);
    out.push('{');
    for (i, (name, value)) in item.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let (tag, text) = match value {
            Value::S(s) => ("S", s.as_str()),
            Value::N(n) => ("N", n.as_str()),
            Value::Bool(true) => ("BOOL", "true"),
            Value::Bool(false) => ("BOOL", "false"),
            _ => return None,
        };
        if !plain(name) || !plain(text) {
            return None;
        }
        for part in ["\"", name, "\":{\"", tag, "\":"] {
            out.push_str(part);
        }
        match value {
            Value::Bool(_) => out.push_str(text),
            _ => {
                out.push('"');
                out.push_str(text);
                out.push('"');
            }
        }
        out.push('}');
    }
    out.push('}');
    Some(out)
}

/// The item `text` holds when it is flat text as [`flat_text`] writes it; `None` for anything
/// else, which `serde_json` then reads (or refuses).
fn flat_item(text: &str) -> Option<Item> {
    let mut rest = text.strip_prefix('{')?.strip_suffix('}')?;
    let mut item = Item::new();
    while !rest.is_empty() {
        let (name, after) = quoted(rest)?;
        let after = after.strip_prefix(":{\"")?;
        let (tag, after) = after.split_once("\":")?;
        let (value, after) = match tag {
            "S" => {
                let (s, after) = quoted(after)?;
                (Value::S(s.to_owned()), after)
            }
            "N" => {
                let (n, after) = quoted(after)?;
                (Value::N(Number::parse(n).ok()?), after)
            }
            "BOOL" => match after.strip_prefix("true") {
                Some(after) => (Value::Bool(true), after),
                None => (Value::Bool(false), after.strip_prefix("false")?),
            },
            _ => return None,
        };
        let after = after.strip_prefix('}')?;
        rest = match after.strip_prefix(',') {
            Some(more) if !more.is_empty() => more,
            Some(_) => return None,
            None if after.is_empty() => after,
            None => return None,
        };
        // A name given twice: `serde_json` keeps the last, as inserting does.
        item.insert(name.to_owned(), value);
    }
    Some(item)
}

/// The plain text between the quotes `text` starts with, and what follows the closing quote.
fn quoted(text: &str) -> Option<(&str, &str)> {
    let body = text.strip_prefix('"')?;
    // One pass: the first byte that ends plain text must be the closing quote.
    let end = body
        .bytes()
        .position(|b| b == b'"' || b == b'\\' || b < 0x20)?;
    // The quote is ASCII, so `end` and `end + 1` are char boundaries.
    (body.as_bytes()[end] == b'"').then(|| (&body[..end], &body[end + 1..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn serde_text(item: &Item) -> String {
        serde_json::to_string(item).unwrap()
    }

    fn items() -> Vec<Item> {
        let n = |text: &str| Value::N(Number::parse(text).unwrap());
        let mut all = vec![Item::new()];
        let names = [
            "count",
            "expires_at",
            "é",
            "a b",
            "quo\"te",
            "back\\slash",
            "tab\t",
        ];
        let values = [
            Value::s("req_0123456789abcdef"),
            Value::s(""),
            Value::s("naïve ☃"),
            Value::s("line\nbreak"),
            Value::s("say \"hi\""),
            Value::s("\u{1f}"),
            n("0"),
            n("-12.5"),
            n("1e3"),
            Value::Bool(true),
            Value::Bool(false),
            Value::Null,
            Value::B(vec![0, 1, 255]),
            Value::L(vec![n("1"), Value::s("x")]),
            Value::M(Item::from([("inner".to_owned(), n("2"))])),
            Value::Ss(["a".to_owned(), "b".to_owned()].into()),
        ];
        for name in names {
            for value in &values {
                all.push(Item::from([(name.to_owned(), value.clone())]));
                all.push(Item::from([
                    (name.to_owned(), value.clone()),
                    ("count".to_owned(), n("7")),
                    ("zz".to_owned(), Value::s("last")),
                ]));
            }
        }
        all
    }

    #[test]
    fn an_item_is_written_as_serde_json_writes_it_and_read_back_the_same() {
        let mut flat = 0;
        for item in items() {
            let text = item_to_json(&item);
            assert_eq!(text, serde_text(&item), "{item:?}");
            assert_eq!(item_from_json(&text).unwrap(), item, "{text}");
            flat += usize::from(flat_item(&text).is_some());
        }
        assert!(flat > 20, "the flat path ran ({flat} items)");
    }

    #[test]
    fn text_the_flat_reader_does_not_take_is_read_or_refused_as_serde_json_does() {
        let texts = [
            r#"{"count":{"N":"3"},"count":{"N":"4"}}"#,
            r#"{ "count":{"N":"3"}}"#,
            r#"{"count":{"N":"3"},}"#,
            r#"{"count":{"N":"3"}"#,
            r#"{"count":{"N":"x"}}"#,
            r#"{"count":{"N":3}}"#,
            r#"{"a":{"S":"x\"y"}}"#,
            r#"{"a":{"S":"x\u0041"}}"#,
            r#"{"a":{"BOOL":tru}}"#,
            r#"{"a":{"BOOL":true,"S":"x"}}"#,
            r#"{"a":{"X":"1"}}"#,
            r#"{"a":"NULL"}"#,
            r#"{"a":{"S":"x"}}trailing"#,
            "{}",
            "",
            "{",
            "[]",
        ];
        for text in texts {
            let ours = item_from_json(text).ok();
            let theirs = serde_json::from_str::<Item>(text).ok();
            assert_eq!(ours, theirs, "{text}");
        }
    }
}
