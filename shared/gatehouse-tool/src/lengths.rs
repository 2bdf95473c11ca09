//! Every string argument has a maximum length, stated in the tool's schema and enforced before
//! anything reads the value; a refusal quotes only a short prefix, so an oversized argument is
//! never echoed back.

use serde_json::{Map, Value};

use crate::ToolError;

/// The longest text a string argument takes when its type states no limit of its own.
pub const DEFAULT_MAX_LENGTH: u64 = 4000;
/// How much of a refused value an error quotes.
const QUOTED: usize = 40;

/// Gives every string in `schema` (properties, array items, `$defs`) a `maxLength` unless it
/// has one.
pub(crate) fn state_limits(schema: &mut Value) {
    match schema {
        Value::Object(obj) => {
            let is_string = match obj.get("type") {
                Some(Value::String(t)) => t == "string",
                Some(Value::Array(ts)) => ts.iter().any(|t| t == "string"),
                _ => false,
            };
            if is_string && !obj.contains_key("maxLength") && !obj.contains_key("enum") {
                obj.insert("maxLength".into(), DEFAULT_MAX_LENGTH.into());
            }
            obj.values_mut().for_each(state_limits);
        }
        Value::Array(items) => items.iter_mut().for_each(state_limits),
        _ => {}
    }
}

/// The first argument value longer than its schema allows, as a validation error.
pub(crate) fn check(root: &Value, args: &Map<String, Value>) -> Result<(), ToolError> {
    let properties = root.get("properties").and_then(Value::as_object);
    for (field, value) in args {
        if let Some(property) = properties.and_then(|p| p.get(field)) {
            check_value(root, property, value, field)?;
        }
    }
    Ok(())
}

fn check_value(root: &Value, schema: &Value, value: &Value, path: &str) -> Result<(), ToolError> {
    let schema = crate::schema::resolve(root, schema);
    match value {
        Value::String(text) => {
            let limit = max_length(root, schema).unwrap_or(DEFAULT_MAX_LENGTH);
            let length = text.chars().count();
            if u64::try_from(length).unwrap_or(u64::MAX) > limit {
                return Err(too_long(path, text, length, limit));
            }
        }
        Value::Array(items) => {
            let item_schema = schema.get("items").unwrap_or(&Value::Null);
            for (i, item) in items.iter().enumerate() {
                check_value(root, item_schema, item, &format!("{path}[{i}]"))?;
            }
        }
        Value::Object(fields) => {
            let properties = schema.get("properties").and_then(Value::as_object);
            for (name, item) in fields {
                let item_schema = properties.and_then(|p| p.get(name)).unwrap_or(&Value::Null);
                check_value(root, item_schema, item, &format!("{path}.{name}"))?;
            }
        }
        _ => {}
    }
    Ok(())
}

/// The `maxLength` a schema states, directly or in one of its `anyOf`/`oneOf` options.
fn max_length(root: &Value, schema: &Value) -> Option<u64> {
    if let Some(n) = schema.get("maxLength").and_then(Value::as_u64) {
        return Some(n);
    }
    ["anyOf", "oneOf"]
        .iter()
        .filter_map(|k| schema.get(*k).and_then(Value::as_array))
        .flatten()
        .filter_map(|option| max_length(root, crate::schema::resolve(root, option)))
        .max()
}

fn too_long(path: &str, text: &str, length: usize, limit: u64) -> ToolError {
    let prefix: String = text.chars().take(QUOTED).collect();
    ToolError::validation(
        format!(
            "`{path}` is {length} characters long; it takes at most {limit} (it starts {prefix:?})"
        ),
        format!("Send `{path}` with at most {limit} characters"),
    )
    // Cutting the text is the user's choice: what to leave out changes what it says.
    .handover(format!(
        "`{path}` is too long; ask the user for a text of at most {limit} characters"
    ))
    .detail("field", path)
    .detail("max_length", limit)
}
