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

fn resolve<'a>(root: &'a Value, schema: &'a Value) -> &'a Value {
    let mut current = schema;
    for _ in 0..8 {
        let Some(reference) = current.get("$ref").and_then(Value::as_str) else {
            break;
        };
        let Some(name) = reference.strip_prefix("#/$defs/") else {
            break;
        };
        match root.get("$defs").and_then(|d| d.get(name)) {
            Some(target) => current = target,
            None => break,
        }
    }
    current
}

/// Every JSON type the property accepts, and its enum values if it is an enum.
fn describe(root: &Value, schema: &Value, types: &mut Vec<String>, enums: &mut Vec<String>) {
    let schema = resolve(root, schema);
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

fn coerce(
    field: &str,
    value: &Value,
    types: &[String],
    enums: &[String],
    synonyms: &[Synonym],
) -> Option<(Value, String)> {
    let accepts = |t: &str| types.iter().any(|x| x == t);
    match value {
        Value::String(s) if !enums.is_empty() && !enums.contains(s) => {
            let target = synonyms
                .iter()
                .find(|syn| syn.field == field && squash(&syn.from) == squash(s))
                .map(|syn| syn.to.clone())
                .or_else(|| {
                    let matches: Vec<&String> =
                        enums.iter().filter(|e| squash(e) == squash(s)).collect();
                    (matches.len() == 1).then(|| matches[0].clone())
                })?;
            let note = format!("`{field}`: read \"{s}\" as \"{target}\"");
            Some((Value::String(target), note))
        }
        Value::String(s) if !accepts("string") => {
            let t = s.trim();
            if accepts("boolean") {
                let b = match t.to_ascii_lowercase().as_str() {
                    "true" | "yes" => Some(true),
                    "false" | "no" => Some(false),
                    _ => None,
                };
                if let Some(b) = b {
                    return Some((
                        Value::Bool(b),
                        format!("`{field}`: read the text \"{s}\" as the boolean {b}"),
                    ));
                }
            }
            if accepts("integer")
                && let Ok(n) = t.parse::<i64>()
            {
                return Some((
                    Value::from(n),
                    format!("`{field}`: read the text \"{s}\" as the number {n}"),
                ));
            }
            if accepts("number")
                && let Ok(n) = t.parse::<f64>()
                && let Some(num) = serde_json::Number::from_f64(n)
            {
                return Some((
                    Value::Number(num),
                    format!("`{field}`: read the text \"{s}\" as the number {n}"),
                ));
            }
            if ((accepts("array") && t.starts_with('['))
                || (accepts("object") && t.starts_with('{')))
                && let Ok(parsed) = serde_json::from_str::<Value>(t)
                && (parsed.is_array() || parsed.is_object())
            {
                let kind = if parsed.is_array() {
                    "an array"
                } else {
                    "an object"
                };
                return Some((parsed, format!("`{field}`: read a JSON text as {kind}")));
            }
            None
        }
        Value::Number(n)
            if accepts("string")
                && !accepts("number")
                && !accepts("integer")
                && enums.is_empty() =>
        {
            Some((
                Value::String(n.to_string()),
                format!("`{field}`: read the number {n} as the text \"{n}\""),
            ))
        }
        Value::Bool(b) if accepts("string") && !accepts("boolean") && enums.is_empty() => Some((
            Value::String(b.to_string()),
            format!("`{field}`: read the boolean {b} as the text \"{b}\""),
        )),
        _ => None,
    }
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
