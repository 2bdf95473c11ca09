//! A model that does exactly what it is told: it makes a starting call, then follows every
//! next call, next step and option an answer names, verbatim, and keeps count of what it met.
//!
//! It fails (by recording a finding) on a suggestion that names a tool the connection does
//! not list, on arguments the tool's input schema rejects, on a placeholder value, on an
//! error answer whose suggestion leads back into the same error (a loop), and on an error
//! answer that neither suggests a call that works, nor says how long to wait
//! (`retry_after_seconds`), nor hands over to the user with the reason (`handover`).

use std::collections::{BTreeMap, BTreeSet};

/// What no answer may ever carry: MCP and product API tokens, password hashes, and the canary
/// the seeded customers' portal passwords are made of (`booking_tools::CANARY_SECRET`).
pub(crate) const SECRETS: [&str; 4] = ["ghm_", "gha_", "argon2", "BAIT-SECRET-7f3a9c"];

use mcp_test_client::{TestClient, ToolCall};
use serde_json::{Map, Value};

/// How deep the follower goes from one starting call.
const MAX_DEPTH: usize = 4;

/// What the follower counted.
#[derive(Debug, Default)]
pub(crate) struct Counts {
    pub(crate) starts: usize,
    /// Starting calls to tools the connection lists (the others test the refusal).
    pub(crate) starts_listed: usize,
    pub(crate) calls: usize,
    pub(crate) errors: usize,
    pub(crate) followed: usize,
    pub(crate) handovers: usize,
    pub(crate) leading_on: usize,
    pub(crate) dead_ends: usize,
    pub(crate) invalid: usize,
    pub(crate) placeholders: usize,
    pub(crate) loops: usize,
}

/// The follower for one connection.
pub(crate) struct Follower<'a> {
    client: &'a TestClient,
    /// The input schema of every tool the connection lists.
    tools: BTreeMap<String, Value>,
    /// Calls already made, with whether they led somewhere: a success, or an error that
    /// leads on (each is made once: following a suggestion twice would only repeat what is
    /// known, and the state it meets may have moved on, as a duplicate's does).
    seen: BTreeMap<String, bool>,
    pub(crate) counts: Counts,
    pub(crate) findings: Vec<String>,
}

/// A suggestion read as a call.
#[derive(Debug, Clone)]
struct Suggested {
    tool: String,
    args: Map<String, Value>,
}

impl Suggested {
    fn key(&self) -> String {
        format!("{} {}", self.tool, Value::Object(self.args.clone()))
    }
}

impl<'a> Follower<'a> {
    /// A follower for `client`, which lists its tools once.
    pub(crate) async fn new(client: &'a TestClient) -> Follower<'a> {
        let listed = client.list_tools().await;
        let tools = listed["tools"]
            .as_array()
            .expect("tools/list has tools")
            .iter()
            .map(|t| {
                (
                    t["name"].as_str().unwrap().to_owned(),
                    t["inputSchema"].clone(),
                )
            })
            .collect();
        Follower {
            client,
            tools,
            seen: BTreeMap::new(),
            counts: Counts::default(),
            findings: Vec::new(),
        }
    }

    /// Makes a starting call and follows everything its answer suggests.
    pub(crate) async fn start(&mut self, tool: &str, args: Value) {
        self.counts.starts += 1;
        self.counts.starts_listed += usize::from(self.tools.contains_key(tool));
        let Value::Object(args) = args else {
            panic!("a starting call's arguments are an object");
        };
        let call = Suggested {
            tool: tool.to_owned(),
            args,
        };
        let chain = vec![call.key()];
        Box::pin(self.visit(call, chain)).await;
    }

    /// Makes `call` (unless made before) and follows its answer; returns whether it works:
    /// a success, or an error that leads on.
    async fn visit(&mut self, call: Suggested, chain: Vec<String>) -> bool {
        let key = call.key();
        if let Some(works) = self.seen.get(&key) {
            return *works;
        }
        let answer = self
            .client
            .call_tool(&call.tool, Value::Object(call.args.clone()))
            .await;
        self.counts.calls += 1;
        let shown = answer.result.to_string();
        for secret in SECRETS.iter().filter(|s| shown.contains(*s)) {
            self.findings
                .push(format!("secret: {key} answered with {secret:?}"));
        }
        let is_error = answer.is_error() || answer.result.get("structuredContent").is_none();
        // Until judged, a call met again on its own path counts as not working.
        self.seen.insert(key.clone(), !is_error);
        let suggestions = self.suggestions(&key, &answer);
        if is_error {
            self.counts.errors += 1;
        }
        let mut works = false;
        if chain.len() <= MAX_DEPTH {
            for next in suggestions {
                if is_error && chain.contains(&next.key()) {
                    self.counts.loops += 1;
                    self.findings
                        .push(format!("loop: {key} suggests {} again", next.key()));
                    continue;
                }
                let mut deeper = chain.clone();
                deeper.push(next.key());
                self.counts.followed += 1;
                works |= Box::pin(self.visit(next, deeper)).await;
            }
        } else {
            works = true; // deep enough: what it names was checked for form above
        }
        if is_error {
            let leads_on = self.judge_error(&key, &answer, works);
            self.seen.insert(key, leads_on);
            return leads_on;
        }
        true
    }

    /// An error answer must lead on: a suggested call that works, a wait, or a handover.
    fn judge_error(&mut self, key: &str, answer: &ToolCall, works: bool) -> bool {
        let s = answer.structured();
        let handover = s.get("handover").and_then(Value::as_str).is_some();
        let waits = s.get("retry_after_seconds").is_some_and(Value::is_number);
        if handover {
            self.counts.handovers += 1;
            self.judge_handover(key, s);
        }
        if works || waits {
            self.counts.leading_on += 1;
        }
        if !(handover || works || waits) {
            self.counts.dead_ends += 1;
            self.findings
                .push(format!("dead end: {key} answered {}", answer.text()));
            return false;
        }
        true
    }

    /// A handover about an argument names it (what to ask the user, not a generic "ask"), or
    /// offers the choices to ask about as calls.
    fn judge_handover(&mut self, key: &str, s: &Value) {
        let text = s["handover"].as_str().unwrap_or_default();
        if s.get("options")
            .and_then(Value::as_array)
            .is_some_and(|o| !o.is_empty())
        {
            return;
        }
        let field = s.get("field").and_then(Value::as_str).unwrap_or(".");
        let named = if field == "." {
            // A missing argument: the message names it.
            s["message"]
                .as_str()
                .and_then(|m| m.split("missing field `").nth(1))
                .and_then(|rest| rest.split('`').next())
        } else {
            field.split(['.', '[']).next()
        };
        let Some(argument) = named.filter(|a| !a.is_empty()) else {
            return;
        };
        if !text.to_lowercase().contains(&argument.replace('_', " ")) && !text.contains(argument) {
            self.findings.push(format!(
                "vague handover: {key} answered about `{argument}` with {text:?}"
            ));
        }
        // Where the server read no more than the arguments' types (a parse error), the
        // handover says what the argument is: its description from the schema.
        let tool = key.split(' ').next().unwrap_or_default();
        let about = self
            .tools
            .get(tool)
            .and_then(|schema| schema["properties"][argument]["description"].as_str());
        let read_types_only = s["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("Invalid arguments:"));
        if read_types_only
            && let Some(about) = about
            && !text.contains(about.trim_end_matches('.'))
        {
            self.findings.push(format!(
                "handover without what `{argument}` is ({about:?}): {key} answered {text:?}"
            ));
        }
    }

    /// Every call an answer suggests, checked for form; malformed ones are findings.
    fn suggestions(&mut self, from: &str, answer: &ToolCall) -> Vec<Suggested> {
        let s = answer.structured();
        let mut texts: Vec<String> = Vec::new();
        texts.extend(
            s.get("next_call")
                .and_then(Value::as_str)
                .map(str::to_owned),
        );
        for list in ["next_steps", "options"] {
            for item in s.get(list).and_then(Value::as_array).into_iter().flatten() {
                let text = item.as_str().or_else(|| item.get("call")?.as_str());
                texts.extend(text.map(str::to_owned));
            }
        }
        let mut calls = Vec::new();
        for text in texts {
            match self.check(&text) {
                Ok(call) => calls.push(call),
                Err((kind, why)) => {
                    match kind {
                        Finding::Placeholder => self.counts.placeholders += 1,
                        Finding::Invalid => self.counts.invalid += 1,
                    }
                    self.findings
                        .push(format!("{why}: \"{text}\" (answer of {from})"));
                }
            }
        }
        calls
    }

    /// Reads a suggestion as a call to a listed tool with arguments its schema accepts.
    fn check(&self, text: &str) -> Result<Suggested, (Finding, String)> {
        let invalid = |why: String| (Finding::Invalid, why);
        let call = parse(text).ok_or_else(|| invalid("not a call".into()))?;
        let schema = self
            .tools
            .get(&call.tool)
            .ok_or_else(|| invalid(format!("{} is not listed", call.tool)))?;
        if let Some(value) = placeholder(&Value::Object(call.args.clone())) {
            return Err((Finding::Placeholder, format!("placeholder {value}")));
        }
        let mut problems = Vec::new();
        check_schema(
            schema,
            schema,
            &Value::Object(call.args.clone()),
            "",
            &mut problems,
        );
        if !problems.is_empty() {
            return Err(invalid(format!(
                "schema rejects it ({})",
                problems.join("; ")
            )));
        }
        Ok(call)
    }
}

enum Finding {
    Invalid,
    Placeholder,
}

/// `tool {json}`, possibly after a lead-in that ends with `: `.
fn parse(text: &str) -> Option<Suggested> {
    let text = text.trim().trim_end_matches('.');
    let (head, json) = match text.find('{') {
        Some(at) => (&text[..at], &text[at..]),
        // Without arguments, a call is the tool's name alone.
        None if !text.contains(' ') => (text, "{}"),
        None => return None,
    };
    let tool = head.split_whitespace().last()?;
    if !tool.bytes().all(|b| b.is_ascii_lowercase() || b == b'_') {
        return None;
    }
    match serde_json::from_str(json).ok()? {
        Value::Object(args) => Some(Suggested {
            tool: tool.to_owned(),
            args,
        }),
        _ => None,
    }
}

/// A value a model could not send as it is: an ellipsis, angle brackets, a template slot.
fn placeholder(value: &Value) -> Option<String> {
    match value {
        // A record's handle is random letters and digits, which may spell anything.
        Value::String(s) if looks_like_handle(s) => None,
        Value::String(s) => {
            let lower = s.to_ascii_lowercase();
            let marked = s.contains("...")
                || s.contains('…')
                || (s.contains('<') && s.contains('>'))
                || (s.contains("{{") || s.starts_with('{') && s.ends_with('}'))
                || ["todo", "placeholder", "your_", "xxx", "handle_here"]
                    .iter()
                    .any(|m| lower.contains(m));
            marked.then(|| format!("\"{s}\""))
        }
        Value::Array(items) => items.iter().find_map(placeholder),
        Value::Object(obj) => obj.values().find_map(placeholder),
        _ => None,
    }
}

/// A handle or a token: `cus_`, `cfm_` and the like followed by random letters and digits
/// (a confirm token also names its record after a dot).
fn looks_like_handle(s: &str) -> bool {
    s.split_once('_').is_some_and(|(prefix, id)| {
        (1..=8).contains(&prefix.len())
            && prefix.bytes().all(|b| b.is_ascii_lowercase())
            && id.len() >= 20
            && id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_')
    })
}

/// A small JSON Schema check, independent of the server's own reading: types, required
/// properties, unknown properties, enums and constants, `$ref`, `anyOf`/`oneOf`, items.
fn check_schema(root: &Value, schema: &Value, value: &Value, at: &str, problems: &mut Vec<String>) {
    if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
        let name = reference.rsplit('/').next().unwrap_or_default();
        let target = root
            .get("$defs")
            .or_else(|| root.get("definitions"))
            .and_then(|d| d.get(name));
        if let Some(target) = target {
            check_schema(root, target, value, at, problems);
        }
        return;
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(options)) = schema.get(key) {
            let fits = options.iter().any(|o| {
                let mut inner = Vec::new();
                check_schema(root, o, value, at, &mut inner);
                inner.is_empty()
            });
            if !fits {
                problems.push(format!("{at}: fits no {key} option"));
            }
        }
    }
    if let Some(types) = schema.get("type") {
        let types: BTreeSet<&str> = match types {
            Value::String(t) => [t.as_str()].into(),
            Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
            _ => BTreeSet::new(),
        };
        if !types.is_empty() && !types.iter().any(|t| is_type(value, t)) {
            problems.push(format!("{at}: {value} is not {types:?}"));
            return;
        }
    }
    if let Some(Value::Array(allowed)) = schema.get("enum")
        && !allowed.contains(value)
    {
        problems.push(format!("{at}: {value} is not one of {allowed:?}"));
    }
    if let Some(c) = schema.get("const")
        && c != value
    {
        problems.push(format!("{at}: {value} is not {c}"));
    }
    if let (Value::Array(items), Some(item_schema)) = (value, schema.get("items")) {
        for (i, item) in items.iter().enumerate() {
            check_schema(root, item_schema, item, &format!("{at}[{i}]"), problems);
        }
    }
    if let Value::Object(obj) = value {
        check_object(root, schema, obj, at, problems);
    }
}

fn check_object(
    root: &Value,
    schema: &Value,
    obj: &Map<String, Value>,
    at: &str,
    problems: &mut Vec<String>,
) {
    let props = schema.get("properties").and_then(Value::as_object);
    for required in schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        if !obj.contains_key(required) {
            problems.push(format!("{at}.{required} is missing"));
        }
    }
    for (name, value) in obj {
        match props.and_then(|p| p.get(name)) {
            Some(prop) => check_schema(root, prop, value, &format!("{at}.{name}"), problems),
            None if schema.get("additionalProperties") == Some(&Value::Bool(false)) => {
                problems.push(format!("{at}.{name} is not a property"));
            }
            None => {}
        }
    }
}

fn is_type(value: &Value, t: &str) -> bool {
    match t {
        "string" => value.is_string(),
        "integer" => value.is_i64() || value.is_u64(),
        "number" => value.is_number(),
        "boolean" => value.is_boolean(),
        "array" => value.is_array(),
        "object" => value.is_object(),
        "null" => value.is_null(),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn suggestions_are_read_with_or_without_a_lead_in() {
        let call =
            parse("After the user approves: confirm_action {\"confirm_token\": \"t\"}").unwrap();
        assert_eq!(call.tool, "confirm_action");
        assert_eq!(call.args["confirm_token"], "t");
        assert_eq!(parse("list_technicians").unwrap().tool, "list_technicians");
        assert!(parse("Ask the user which one they mean").is_none());
    }

    #[test]
    fn placeholders_and_schema_violations_are_caught() {
        assert!(placeholder(&json!({"query": "..."})).is_some());
        assert!(placeholder(&json!({"customer": "<handle>"})).is_some());
        assert!(placeholder(&json!({"customer": "cus_4fK2aZ9qLm3Xt7Bv1NcR"})).is_none());
        // Random ids may spell a marker word; a handle is never a placeholder.
        assert!(placeholder(&json!({"booking": "bkg_TODOxxxQ1lQLC2z8Z5sJ"})).is_none());
        let token = "cfm_bJ8lqfhj2KMsz0QDxxxAXt4.bkg_A2g0V1HmPFppA0NdSI6y";
        assert!(placeholder(&json!({"confirm_token": token})).is_none());
        let schema = json!({"type": "object", "additionalProperties": false,
            "properties": {"status": {"enum": ["draft", "confirmed"]}, "limit": {"type": "integer"}},
            "required": ["status"]});
        let mut problems = Vec::new();
        check_schema(
            &schema,
            &schema,
            &json!({"limit": "5", "x": 1}),
            "",
            &mut problems,
        );
        assert_eq!(problems.len(), 3, "{problems:?}");
    }
}
