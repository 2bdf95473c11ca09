//! Argument normalization: unknown fields refused, tolerant input coerced and reported.
//!
//! Works from the tool's derived input schema, so a new tool gets the same treatment by
//! declaring its types. Coercions are top-level only: what a model sends as `"true"`, `"5"`,
//! `"[1,2]"` or `"Canceled"` where the schema wants a boolean, a number, an array or an enum.

use serde_json::{Map, Value};

use crate::ToolError;

/// An enum synonym for one field: `from` is read as `to`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Synonym {
    /// The argument.
    pub field: String,
    /// What a model might send.
    pub from: String,
    /// The enum value it means.
    pub to: String,
}

/// Normalized arguments and the coercions made.
#[derive(Debug, Clone, PartialEq)]
pub struct Normalized {
    /// The arguments after coercion.
    pub args: Map<String, Value>,
    /// One warning per coercion.
    pub warnings: Vec<String>,
}

/// Every JSON type the property accepts, and its enum values if it is an enum.
fn describe(root: &Value, schema: &Value, types: &mut Vec<String>, enums: &mut Vec<String>) {
    let schema = crate::schema::resolve(root, schema);
    match schema.get("type") {
        Some(Value::String(t)) => types.push(t.clone()),
        Some(Value::Array(ts)) => {
            types.extend(ts.iter().filter_map(Value::as_str).map(str::to_owned))
        }
        _ => {}
    }
    if let Some(Value::Array(values)) = schema.get("enum") {
        enums.extend(values.iter().filter_map(Value::as_str).map(str::to_owned));
    }
    if let Some(Value::String(c)) = schema.get("const") {
        enums.push(c.clone());
        types.push("string".into());
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(Value::Array(options)) = schema.get(key) {
            for option in options {
                describe(root, option, types, enums);
            }
        }
    }
}

fn squash(text: &str) -> String {
    text.trim().to_ascii_lowercase().replace(['-', ' '], "_")
}

/// What a field's schema accepts.
struct Accepts<'a> {
    field: &'a str,
    types: &'a [String],
    enums: &'a [String],
}

impl Accepts<'_> {
    fn kind(&self, t: &str) -> bool {
        self.types.iter().any(|x| x == t)
    }
}

/// A coerced value and the warning that says so.
type Coerced = Option<(Value, String)>;

fn coerce(
    field: &str,
    value: &Value,
    types: &[String],
    enums: &[String],
    synonyms: &[Synonym],
) -> Coerced {
    let to = Accepts {
        field,
        types,
        enums,
    };
    match value {
        Value::String(s) if !enums.is_empty() && !enums.contains(s) => {
            enum_member(&to, s, synonyms)
        }
        Value::String(s) if !to.kind("string") => text_as_value(&to, s),
        Value::Number(n)
            if to.kind("string")
                && !to.kind("number")
                && !to.kind("integer")
                && enums.is_empty() =>
        {
            Some((
                Value::String(n.to_string()),
                format!("`{field}`: read the number {n} as the text \"{n}\""),
            ))
        }
        Value::Bool(b) if to.kind("string") && !to.kind("boolean") && enums.is_empty() => Some((
            Value::String(b.to_string()),
            format!("`{field}`: read the boolean {b} as the text \"{b}\""),
        )),
        _ => None,
    }
}

/// An enum value written differently: a registered synonym, or the one member that matches
/// ignoring case, spaces and dashes.
fn enum_member(to: &Accepts<'_>, s: &str, synonyms: &[Synonym]) -> Coerced {
    let target = synonyms
        .iter()
        .find(|syn| syn.field == to.field && squash(&syn.from) == squash(s))
        .map(|syn| syn.to.clone())
        .or_else(|| {
            let matches: Vec<&String> =
                to.enums.iter().filter(|e| squash(e) == squash(s)).collect();
            (matches.len() == 1).then(|| matches[0].clone())
        })?;
    let note = format!("`{}`: read \"{s}\" as \"{target}\"", to.field);
    Some((Value::String(target), note))
}

/// Text where the schema wants a boolean, a number, an array or an object.
fn text_as_value(to: &Accepts<'_>, s: &str) -> Coerced {
    let field = to.field;
    let t = s.trim();
    if to.kind("boolean") {
        let b = match t.to_ascii_lowercase().as_str() {
            "true" | "yes" => Some(true),
            "false" | "no" => Some(false),
            _ => None,
        };
        if let Some(b) = b {
            let note = format!("`{field}`: read the text \"{s}\" as the boolean {b}");
            return Some((Value::Bool(b), note));
        }
    }
    if to.kind("integer")
        && let Ok(n) = t.parse::<i64>()
    {
        let note = format!("`{field}`: read the text \"{s}\" as the number {n}");
        return Some((Value::from(n), note));
    }
    if to.kind("number")
        && let Ok(n) = t.parse::<f64>()
        && let Some(num) = serde_json::Number::from_f64(n)
    {
        let note = format!("`{field}`: read the text \"{s}\" as the number {n}");
        return Some((Value::Number(num), note));
    }
    json_text(to, t)
}

/// A JSON array or object sent as text.
fn json_text(to: &Accepts<'_>, t: &str) -> Coerced {
    let wanted =
        (to.kind("array") && t.starts_with("[")) || (to.kind("object") && t.starts_with("{"));
    if !wanted {
        return None;
    }
    let parsed = serde_json::from_str::<Value>(t).ok()?;
    let kind = match &parsed {
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
        _ => return None,
    };
    Some((
        parsed,
        format!("`{}`: read a JSON text as {kind}", to.field),
    ))
}

/// Normalizes `args` against the tool's input schema.
pub fn normalize(
    schema: &Value,
    args: Map<String, Value>,
    synonyms: &[Synonym],
) -> Result<Normalized, ToolError> {
    let properties = schema.get("properties").and_then(Value::as_object);
    let allowed: Vec<String> = properties
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default();
    let unknown: Vec<&String> = args.keys().filter(|k| !allowed.contains(k)).collect();
    if !unknown.is_empty() {
        let names = unknown
            .iter()
            .map(|k| format!("`{k}`"))
            .collect::<Vec<_>>()
            .join(", ");
        let fix = if allowed.is_empty() {
            "This tool takes no arguments; call it with {}".to_owned()
        } else {
            format!("Use only these arguments: {}", allowed.join(", "))
        };
        return Err(
            ToolError::validation(format!("Unknown argument {names}"), fix)
                .detail(
                    "unknown",
                    unknown
                        .iter()
                        .map(|k| Value::String((*k).clone()))
                        .collect::<Vec<_>>(),
                )
                .detail("allowed", allowed.clone()),
        );
    }
    // Before anything reads a value: none is longer than its schema allows.
    crate::lengths::check(schema, &args)?;
    let mut out = Map::new();
    let mut warnings = Vec::new();
    for (field, value) in args {
        let Some(property) = properties.and_then(|p| p.get(&field)) else {
            continue;
        };
        let (mut types, mut enums) = (Vec::new(), Vec::new());
        describe(schema, property, &mut types, &mut enums);
        match coerce(&field, &value, &types, &enums, synonyms) {
            Some((coerced, note)) => {
                warnings.push(note);
                out.insert(field, coerced);
            }
            None => {
                out.insert(field, value);
            }
        }
    }
    Ok(Normalized {
        args: out,
        warnings,
    })
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;

    /// A tool's input schema as schemars derives it: a number, an integer, a boolean, an enum,
    /// a text and a list of integers.
    fn schema() -> Value {
        json!({"type": "object", "properties": {
            "amount": {"type": "number"},
            "count": {"type": "integer"},
            "flag": {"type": "boolean"},
            "status": {"type": "string", "enum": ["open", "in_progress", "done"]},
            "note": {"type": "string", "maxLength": 200},
            "ids": {"type": "array", "items": {"type": "integer"}}
        }})
    }

    /// Arguments of the right types: a subset of the fields.
    fn typed() -> impl Strategy<Value = Map<String, Value>> {
        (
            prop::option::of(-1.0e6..1.0e6f64),
            prop::option::of(any::<i32>()),
            prop::option::of(any::<bool>()),
            prop::option::of(prop::sample::select(vec!["open", "in_progress", "done"])),
            prop::option::of("[a-z ]{0,20}"),
            prop::option::of(prop::collection::vec(any::<i16>(), 0..4)),
        )
            .prop_map(|(amount, count, flag, status, note, ids)| {
                let mut args = Map::new();
                let mut put = |k: &str, v: Option<Value>| {
                    if let Some(v) = v {
                        args.insert(k.into(), v);
                    }
                };
                put("amount", amount.map(Value::from));
                put("count", count.map(Value::from));
                put("flag", flag.map(Value::from));
                put("status", status.map(Value::from));
                put("note", note.map(Value::from));
                put("ids", ids.map(Value::from));
                args
            })
    }

    /// The same arguments as a model might spell them: numbers, booleans and lists as text,
    /// enum members in another case or with dashes.
    fn loosely(args: &Map<String, Value>) -> Map<String, Value> {
        args.iter()
            .map(|(k, v)| {
                let loose = match (k.as_str(), v) {
                    ("amount" | "count" | "flag" | "ids", v) => Value::String(v.to_string()),
                    ("status", Value::String(s)) => {
                        Value::String(s.to_uppercase().replace('_', "-"))
                    }
                    (_, v) => v.clone(),
                };
                (k.clone(), loose)
            })
            .collect()
    }

    proptest! {
        #[test]
        fn well_typed_arguments_pass_unchanged(args in typed()) {
            let out = normalize(&schema(), args.clone(), &[]).unwrap();
            prop_assert_eq!(out.args, args);
            prop_assert!(out.warnings.is_empty());
        }

        #[test]
        fn loose_spellings_normalize_to_the_same_call(args in typed()) {
            let out = normalize(&schema(), loosely(&args), &[]).unwrap();
            prop_assert_eq!(
                crate::digest(&Value::Object(out.args.clone())),
                crate::digest(&Value::Object(args.clone())),
                "{:?} from {:?}", out.args, loosely(&args)
            );
            let again = normalize(&schema(), out.args.clone(), &[]).unwrap();
            prop_assert_eq!(again.args, out.args, "normalizing twice changes nothing");
            prop_assert!(again.warnings.is_empty());
        }

        #[test]
        fn an_unknown_argument_is_always_refused(args in typed(), name in "[a-z]{1,8}") {
            prop_assume!(schema()["properties"].get(&name).is_none());
            let mut args = args;
            args.insert(name, json!(1));
            prop_assert!(normalize(&schema(), args, &[]).is_err());
        }
    }
}
