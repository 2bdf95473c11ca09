//! The JSON form of an item, for backends without a native type system (the embedded store's
//! data and gate files): `{"name":{"S":"text"},"count":{"N":"3"}}`, exactly as `serde_json`
//! writes [`Item`].
//!
//! Every admission reads and writes gate items (a rate bucket, a slot) in this form, and every
//! write stores items whose strings hold JSON (a replay record's result) or lists (an audit
//! row's ids), so an item is written here without `serde_json` unless it holds bytes, its
//! strings escaped by [`crate::write_json_str`]; it is read here when it is flat (every value a
//! string, a number or a boolean) and its text needs no escape. Anything else (bytes when
//! written; nested values, escapes or whitespace when read) takes `serde_json`'s path, so the
//! text and its meaning never depend on which path ran: the tests hold both to the same bytes
//! and the same items.

use crate::{Item, Number, Value};

/// Serializes an item to its JSON form.
pub fn item_to_json(item: &Item) -> String {
    written_text(item).unwrap_or_else(|| {
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

/// The text of an item as `serde_json` writes it; `None` when it holds bytes (base64, left to
/// `serde_json`).
fn written_text(item: &Item) -> Option<String> {
    let mut out = String::with_capacity(64);
    write_map(&mut out, item)?;
    Some(out)
}

fn write_map(out: &mut String, map: &Item) -> Option<()> {
    out.push('{');
    for (i, (name, value)) in map.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        crate::write_json_str(out, name);
        out.push(':');
        write_value(out, value)?;
    }
    out.push('}');
    Some(())
}

/// A value as `serde_json` writes the enum: `{"TAG":...}`, and the unit variant `"NULL"`.
fn write_value(out: &mut String, value: &Value) -> Option<()> {
    match value {
        Value::S(s) => {
            out.push_str("{\"S\":");
            crate::write_json_str(out, s);
        }
        // A number's text is digits, a sign, a point and an exponent: nothing to escape.
        Value::N(n) => {
            out.push_str("{\"N\":\"");
            out.push_str(n.as_str());
            out.push('"');
        }
        Value::Bool(true) => out.push_str("{\"BOOL\":true"),
        Value::Bool(false) => out.push_str("{\"BOOL\":false"),
        Value::Null => {
            out.push_str("\"NULL\"");
            return Some(());
        }
        Value::L(items) => {
            out.push_str("{\"L\":[");
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(out, item)?;
            }
            out.push(']');
        }
        Value::M(map) => {
            out.push_str("{\"M\":");
            write_map(out, map)?;
        }
        Value::Ss(set) => {
            out.push_str("{\"SS\":[");
            for (i, text) in set.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                crate::write_json_str(out, text);
            }
            out.push(']');
        }
        Value::B(_) => return None,
    }
    out.push('}');
    Some(())
}

/// The item `text` holds when it is flat text as [`written_text`] writes it; `None` for anything
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
            Value::Ss(["q\"".to_owned(), "é\n".to_owned()].into()),
            Value::L(vec![]),
            Value::M(Item::new()),
            Value::L(vec![
                Value::Null,
                Value::M(Item::from([(
                    "q\"".to_owned(),
                    Value::L(vec![Value::s("x\n"), Value::Bool(false)]),
                )])),
            ]),
            Value::L(vec![Value::s("x"), Value::B(vec![7])]),
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
        let (mut written_flat, mut read_flat) = (0, 0);
        for item in items() {
            let text = item_to_json(&item);
            assert_eq!(text, serde_text(&item), "{item:?}");
            assert_eq!(item_from_json(&text).unwrap(), item, "{text}");
            written_flat += usize::from(written_text(&item).is_some());
            read_flat += usize::from(flat_item(&text).is_some());
        }
        assert!(read_flat > 20, "the flat reader ran ({read_flat} items)");
        // Escapes, lists, maps, sets and nulls are written here too, and read by `serde_json`.
        assert!(
            written_flat > read_flat + 100,
            "the writer took more than flat items ({written_flat} items)"
        );
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
