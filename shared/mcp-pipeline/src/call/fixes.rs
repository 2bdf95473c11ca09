//! An error's way on, from what the server knows about the call: a validation error names
//! the call that fixes it (a missing version: the re-read; a handle that is a name or
//! missing: the search; a value outside an enum: the one meant, or the choices; a missing
//! value nobody can guess: a handover to the user who knows it).

use serde_json::{Map, Value};

use super::Call;
use crate::Choice;
use crate::{ErrorKind, ToolError};

/// At most this many enum values are offered as choices.
const MAX_CHOICES: usize = 8;

impl Call<'_> {
    /// `error` with a way on: the one it has, or one made from the call and its schema.
    pub(crate) fn lead_on(&self, error: ToolError) -> ToolError {
        if error.leads_on() || error.details.contains_key("retry_after_seconds") {
            return error;
        }
        // No blanket handover here: an error that knows no way on says so where it is
        // made, with its reason, and the hint follower test finds the ones that do not.
        match error.kind {
            ErrorKind::Validation => self.fix_argument(error),
            ErrorKind::Conflict => self.reread(error),
            _ => error,
        }
    }

    /// A conflict without a next call: read the record again.
    fn reread(&self, error: ToolError) -> ToolError {
        match self.read_call() {
            Some(call) => error.next_call(call),
            None => error,
        }
    }

    /// The call that reads the first record this call names.
    fn read_call(&self) -> Option<String> {
        let resolver = self.server.config().names.as_ref()?;
        let args = self.arguments();
        self.plan
            .spec
            .handle_fields()
            .iter()
            .find_map(|(field, noun)| {
                let handle = args.get(field)?.as_str()?;
                resolver.read_call(noun, handle)
            })
    }

    /// The arguments as normalized, or as sent when they could not be.
    fn arguments(&self) -> Map<String, Value> {
        match &self.plan.args {
            Ok(args) => args.clone(),
            Err(_) => match self.req.message.params.get("arguments") {
                Some(Value::Object(args)) => args.clone(),
                _ => Map::new(),
            },
        }
    }

    fn fix_argument(&self, error: ToolError) -> ToolError {
        let field = error
            .details
            .get("field")
            .and_then(Value::as_str)
            .unwrap_or(".")
            .to_owned();
        if let Some(missing) = missing_field(&error.message) {
            return self.fix_missing(error, &missing);
        }
        let top = field
            .split(['.', '['])
            .next()
            .unwrap_or_default()
            .to_owned();
        if top == field
            && let Some(text) = self.text_inside(&top)
        {
            return error.retry_with(&top, text);
        }
        if let Some(noun) = self.noun_of(&top) {
            let sent = self
                .arguments()
                .get(&top)
                .and_then(Value::as_str)
                .map(str::to_owned);
            return match self.search(&noun, sent.as_deref().unwrap_or_default()) {
                Some(call) => error.next_call(call),
                None => error.handover(format!(
                    "`{top}` takes a {noun} handle; ask the user which {noun} they mean"
                )),
            };
        }
        let enums = self.enum_values(&top);
        if !enums.is_empty() && top == field {
            return self.fix_enum(error, &top, &enums);
        }
        if error.message.contains("expected a string")
            && let Some(fixed) = self.numbers_as_text(&top)
        {
            return error.retry_with(&top, fixed);
        }
        // A value of the wrong kind that nothing converts: only the user knows what was meant.
        error.handover(format!(
            "`{field}` could not be read as sent; it takes {}; ask the user for it if the conversation does not make it clear",
            self.what_it_takes(&top)
        ))
    }

    /// The text a result's wrapper (`{"untrusted_text": ...}`) or a one-member object holds,
    /// sent where `field` takes text: what the model meant to send.
    fn text_inside(&self, field: &str) -> Option<String> {
        let schema = crate::resolve(self.plan.spec.input_schema(), self.property(field)?);
        if kind_of(schema) != Some("string") {
            return None;
        }
        let Value::Object(sent) = self.arguments().remove(field)? else {
            return None;
        };
        if let Some(Value::String(text)) = sent.get("untrusted_text") {
            return Some(text.clone());
        }
        match sent.values().collect::<Vec<_>>().as_slice() {
            [Value::String(text)] => Some(text.clone()),
            _ => None,
        }
    }

    /// What `field` takes, for a person to be asked: its type, its description and its
    /// default, from the tool's schema.
    fn what_it_takes(&self, field: &str) -> String {
        let Some(property) = self.property(field) else {
            return "another kind of value".to_owned();
        };
        let schema = crate::resolve(self.plan.spec.input_schema(), property);
        let kind = match kind_of(schema) {
            Some("integer") => "a whole number",
            Some("number") => "a number",
            Some("boolean") => "true or false",
            Some("array") => "a list",
            Some("object") => "an object",
            _ => "text",
        };
        let mut text = kind.to_owned();
        let about = property
            .get("description")
            .or_else(|| schema.get("description"));
        if let Some(about) = about.and_then(Value::as_str) {
            text.push_str(&format!(" ({})", about.trim_end_matches('.')));
        }
        if let Some(default) = property.get("default").or_else(|| schema.get("default")) {
            text.push_str(&format!(", {default} when left out"));
        }
        text
    }

    /// A missing argument: the search for a missing handle, the re-read for a missing
    /// version, otherwise the user is asked for it.
    fn fix_missing(&self, error: ToolError, missing: &str) -> ToolError {
        if let Some(noun) = self.noun_of(missing)
            && let Some(call) = self.search(&noun, "")
        {
            return error.next_call(call);
        }
        if missing == "version"
            && let Some(call) = self.read_call()
        {
            return error.next_call(call);
        }
        error.handover(format!(
            "`{missing}` is required: it takes {}; ask the user for it if the conversation does not say",
            self.what_it_takes(missing)
        ))
    }

    /// A value outside an enum: the value it most likely means, or every value as a choice.
    fn fix_enum(&self, error: ToolError, field: &str, values: &[String]) -> ToolError {
        let sent = self
            .arguments()
            .get(field)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_ascii_lowercase();
        let near: Vec<&String> = values
            .iter()
            .filter(|v| edit_distance(&v.to_ascii_lowercase(), &sent) <= 2)
            .collect();
        if let [one] = near.as_slice() {
            return error.retry_with(field, one.as_str());
        }
        let mut error = error.handover(format!(
            "Ask the user which `{field}` they mean: {}",
            values.join(", ")
        ));
        for value in values.iter().take(MAX_CHOICES) {
            error = error.option(Choice::set(value.clone(), field, value.as_str()));
        }
        error
    }

    /// A number where text belongs (amounts, quantities): `field` with every such number
    /// as its own digits in text, which is what was written.
    fn numbers_as_text(&self, field: &str) -> Option<Value> {
        let mut value = self.arguments().get(field)?.clone();
        let root = &self.plan.spec.input_schema();
        let changed = numbers_to_text(root, self.property(field)?, &mut value);
        changed.then_some(value)
    }

    fn search(&self, noun: &str, text: &str) -> Option<String> {
        let resolver = self.server.config().names.as_ref()?;
        resolver.search_call(noun, text)
    }

    fn noun_of(&self, field: &str) -> Option<String> {
        self.plan
            .spec
            .handle_fields()
            .iter()
            .find(|(f, _)| f == field)
            .map(|(_, noun)| noun.clone())
    }

    fn property(&self, field: &str) -> Option<&Value> {
        self.plan.spec.input_schema().get("properties")?.get(field)
    }

    /// The enum values `field` takes (through `$ref` and `anyOf`).
    fn enum_values(&self, field: &str) -> Vec<String> {
        let root = &self.plan.spec.input_schema();
        let Some(property) = self.property(field) else {
            return Vec::new();
        };
        let mut values = Vec::new();
        collect_enum(root, property, &mut values);
        values
    }
}

/// A schema's JSON type; for an optional field's `["integer", "null"]`, the one not null.
fn kind_of(schema: &Value) -> Option<&str> {
    match schema.get("type")? {
        Value::Array(kinds) => kinds
            .iter()
            .filter_map(Value::as_str)
            .find(|k| *k != "null"),
        other => other.as_str(),
    }
}

fn collect_enum(root: &Value, schema: &Value, values: &mut Vec<String>) {
    let schema = crate::resolve(root, schema);
    if let Some(Value::Array(list)) = schema.get("enum") {
        values.extend(list.iter().filter_map(Value::as_str).map(str::to_owned));
    }
    // A documented enum is `oneOf` constants.
    if let Some(Value::String(c)) = schema.get("const") {
        values.push(c.clone());
    }
    for key in ["anyOf", "oneOf"] {
        for option in schema
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            collect_enum(root, option, values);
        }
    }
}

/// Turns numbers where `schema` wants text into their digits; whether any was.
fn numbers_to_text(root: &Value, schema: &Value, value: &mut Value) -> bool {
    let schema = crate::resolve(root, schema);
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(options)) = schema.get(key) {
            return options.iter().any(|o| numbers_to_text(root, o, value));
        }
    }
    match value {
        Value::Number(n) if schema.get("type") == Some(&Value::from("string")) => {
            *value = Value::String(n.to_string());
            true
        }
        Value::Array(items) => match schema.get("items") {
            Some(item) => items
                .iter_mut()
                .fold(false, |any, v| numbers_to_text(root, item, v) | any),
            None => false,
        },
        Value::Object(obj) => {
            let props = schema.get("properties");
            obj.iter_mut().fold(false, |any, (k, v)| {
                props
                    .and_then(|p| p.get(k))
                    .is_some_and(|p| numbers_to_text(root, p, v))
                    | any
            })
        }
        _ => false,
    }
}

/// The field a "missing field `x`" message names.
fn missing_field(message: &str) -> Option<String> {
    let rest = message.split("missing field `").nth(1)?;
    Some(rest.split('`').next()?.to_owned())
}

/// Levenshtein distance, for telling a misspelled enum value from a different one.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut previous = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substituted = previous + usize::from(ca != *cb);
            previous = row[j + 1];
            row[j + 1] = substituted.min(row[j] + 1).min(previous + 1);
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::{edit_distance, missing_field, numbers_to_text};
    use serde_json::json;

    #[test]
    fn misspellings_are_near_and_other_words_are_not() {
        assert_eq!(edit_distance("canceled", "cancelled"), 1);
        assert!(edit_distance("archived", "cancelled") > 2);
        assert_eq!(
            missing_field("Invalid arguments: missing field `version`").as_deref(),
            Some("version")
        );
        let schema = json!({"type": "array", "items": {"type": "object", "properties": {
            "quantity": {"type": "string"}, "unit_price": {"type": "string"}, "n": {"type": "integer"}}}});
        let mut lines = json!([{"quantity": 2, "unit_price": 19.99, "n": 1}]);
        assert!(numbers_to_text(&schema, &schema, &mut lines));
        assert_eq!(
            lines,
            json!([{"quantity": "2", "unit_price": "19.99", "n": 1}])
        );
    }
}
