//! Reading the tools' own JSON Schemas: following `$ref`s into `$defs`.

use serde_json::Value;

/// The schema `schema` stands for in `root`: `$ref`s to `#/$defs/...` followed (at most eight,
/// so a cycle ends).
pub fn resolve<'a>(root: &'a Value, schema: &'a Value) -> &'a Value {
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
