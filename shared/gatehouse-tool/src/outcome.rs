//! What a tool returns, what the model sees, and the rule that text equals structured content.

use serde::Serialize;
use serde_json::{Map, Value};

/// A successful tool answer: a one-line summary, the tool's own output, and the next steps
/// the model may take.
#[derive(Debug, Clone, PartialEq)]
pub struct Success<T> {
    /// One sentence on what happened.
    pub summary: String,
    /// The tool's typed output (an object; its fields follow `summary`).
    pub output: T,
    /// Calls that make sense next.
    pub next_steps: Vec<String>,
}

impl<T> Success<T> {
    /// A success with no next steps.
    pub fn new(summary: impl Into<String>, output: T) -> Self {
        Success {
            summary: summary.into(),
            output,
            next_steps: Vec::new(),
        }
    }

    /// Adds a next step.
    pub fn next_step(mut self, step: impl Into<String>) -> Self {
        self.next_steps.push(step.into());
        self
    }
}

/// Stable codes of model-facing errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The arguments are wrong.
    Validation,
    /// The caller may not do this.
    Forbidden,
    /// The thing named does not exist (or is not visible to the caller).
    NotFound,
    /// The state changed since the caller read it, or a duplicate exists.
    Conflict,
    /// Too many calls; wait.
    RateLimited,
    /// A business rule refuses the request.
    Rejected,
    /// The server failed; the request id lets an operator find the cause.
    Internal,
    /// Something the server depends on (its store) did not answer in time or failed; the same
    /// call may succeed after `retry_after_seconds`. A write that may have landed is answered
    /// by its replay record on the retry.
    Unavailable,
}

impl ErrorKind {
    /// Every kind, in the order error schemas list their codes.
    pub const ALL: [ErrorKind; 8] = [
        ErrorKind::Validation,
        ErrorKind::Forbidden,
        ErrorKind::NotFound,
        ErrorKind::Conflict,
        ErrorKind::RateLimited,
        ErrorKind::Rejected,
        ErrorKind::Internal,
        ErrorKind::Unavailable,
    ];

    /// The stable code an error result carries.
    pub fn code(self) -> &'static str {
        match self {
            ErrorKind::Validation => "validation",
            ErrorKind::Forbidden => "forbidden",
            ErrorKind::NotFound => "not_found",
            ErrorKind::Conflict => "conflict",
            ErrorKind::RateLimited => "rate_limited",
            ErrorKind::Rejected => "rejected",
            ErrorKind::Internal => "internal",
            ErrorKind::Unavailable => "unavailable",
        }
    }
}

/// How long a caller waits before retrying a call the store could not serve.
pub const STORE_RETRY_AFTER_SECONDS: u64 = 5;

/// An error the model can act on: cause, fix, the right next call, and details.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolError {
    /// Stable code.
    pub kind: ErrorKind,
    /// What went wrong, in one sentence.
    pub message: String,
    /// How to fix it.
    pub fix: String,
    /// Extra machine-readable details (merged into the JSON line).
    pub details: Map<String, Value>,
    /// The way on (ADR 18), boxed: most errors are built and dropped on hot paths.
    pub(crate) hints: Option<Box<Hints>>,
}

/// An error's way on: the next call, a handover to the user, the choices.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Hints {
    /// The call to make next, written out.
    pub(crate) next_call: Option<String>,
    /// The same call again with these arguments changed (`null` removes one): the next
    /// call when `next_call` is not set. The pipeline writes it out, since only it knows
    /// the call.
    pub(crate) retry_with: Option<Map<String, Value>>,
    /// What to tell or ask the user, and why, when the model cannot go on alone.
    pub(crate) handover: Option<String>,
    /// The choices the user decides between, each as the same call with some arguments
    /// changed: written out by the pipeline as `options: [{label, call}]`.
    pub(crate) options: Vec<Choice>,
}

/// One choice of an error's `options`: a label for the user and the arguments that change.
#[derive(Debug, Clone, PartialEq)]
pub struct Choice {
    /// What the user is choosing, in their words (`03:30 +02:00, after the gap`).
    pub label: String,
    /// The arguments that differ from the failed call (`null` removes one).
    pub patch: Map<String, Value>,
}

impl Choice {
    /// The choice `label`: the failed call with `field` set to `value`.
    pub fn set(label: impl Into<String>, field: &str, value: impl Into<Value>) -> Self {
        let mut patch = Map::new();
        patch.insert(field.to_owned(), value.into());
        Choice {
            label: label.into(),
            patch,
        }
    }
}

impl ToolError {
    /// The store failed or was too slow: retry the same call in a few seconds.
    pub fn store_unavailable() -> Self {
        ToolError::new(
            ErrorKind::Unavailable,
            "The server could not reach its store",
            "Try the same call again in a few seconds",
        )
        .detail("retry_after_seconds", STORE_RETRY_AFTER_SECONDS)
        // As every other refusal a caller may retry says so.
        .detail("retryable", true)
    }

    /// An error of `kind` with a message and a fix.
    pub fn new(kind: ErrorKind, message: impl Into<String>, fix: impl Into<String>) -> Self {
        ToolError {
            kind,
            message: message.into(),
            fix: fix.into(),
            details: Map::new(),
            hints: None,
        }
    }

    /// Invalid arguments.
    pub fn validation(message: impl Into<String>, fix: impl Into<String>) -> Self {
        Self::new(ErrorKind::Validation, message, fix)
    }

    /// Names the next call.
    pub fn next_call(mut self, call: impl Into<String>) -> Self {
        self.hints_mut().next_call = Some(call.into());
        self
    }

    /// Names the same call with `field` set to `value` as the next call.
    pub fn retry_with(mut self, field: &str, value: impl Into<Value>) -> Self {
        self.hints_mut()
            .retry_with
            .get_or_insert_with(Map::new)
            .insert(field.to_owned(), value.into());
        self
    }

    /// Hands over to the user: what to tell or ask them, and why.
    pub fn handover(mut self, text: impl Into<String>) -> Self {
        self.hints_mut().handover = Some(text.into());
        self
    }

    /// Adds a choice for the user (see [`Choice`]).
    pub fn option(mut self, choice: Choice) -> Self {
        self.hints_mut().options.push(choice);
        self
    }

    /// Whether the error leads on: a next call (named or to be written out) or a handover.
    pub fn leads_on(&self) -> bool {
        self.hints.as_ref().is_some_and(|h| {
            h.next_call.is_some() || h.retry_with.is_some() || h.handover.is_some()
        })
    }

    /// The next call, when it is written out already.
    pub fn next_call_text(&self) -> Option<&str> {
        self.hints.as_ref()?.next_call.as_deref()
    }

    /// What to tell or ask the user, if the error hands over.
    pub fn handover_text(&self) -> Option<&str> {
        self.hints.as_ref()?.handover.as_deref()
    }

    fn hints_mut(&mut self) -> &mut Hints {
        self.hints.get_or_insert_with(Box::default)
    }

    /// Adds a detail.
    pub fn detail(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.details.insert(key.to_owned(), value.into());
        self
    }

    fn kind_text(&self) -> &'static str {
        self.kind.code()
    }

    /// The structured content of the error result.
    pub fn to_structured(&self) -> Value {
        let mut obj = Map::new();
        obj.insert("error".into(), Value::Bool(true));
        obj.insert("code".into(), self.kind_text().into());
        obj.insert("message".into(), self.message.clone().into());
        obj.insert("fix".into(), self.fix.clone().into());
        if let Some(next) = self.next_call_text() {
            obj.insert("next_call".into(), next.into());
        }
        if let Some(handover) = self.handover_text() {
            obj.insert("handover".into(), handover.into());
        }
        for (k, v) in &self.details {
            obj.entry(k.clone()).or_insert_with(|| v.clone());
        }
        Value::Object(obj)
    }

    /// The headline text: `Error:` cause, fix and next call.
    pub fn headline(&self) -> String {
        let mut text = format!("Error: {} {}", sentence(&self.message), sentence(&self.fix));
        if let Some(next) = self.next_call_text() {
            text.push_str(&format!(" Next call: {next}."));
        }
        if let Some(handover) = self.handover_text() {
            text.push_str(&format!(" Tell the user: {}", sentence(handover)));
        }
        text
    }
}

fn sentence(text: &str) -> String {
    let t = text.trim();
    if t.ends_with(['.', '!', '?']) {
        t.to_owned()
    } else {
        format!("{t}.")
    }
}

/// What the model receives for one tool call. Built only here, so the text block always
/// carries exactly the structured content (the whole text on success, the last line on error).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResult {
    /// The structured content.
    pub structured: Value,
    /// `Some(headline)` for an error result.
    pub error_headline: Option<String>,
    /// Extra content blocks after the text (images, links).
    pub extra_content: Vec<Value>,
    /// An error's calls still to be written out from the failed call (see
    /// [`ToolError::retry_with`] and its options).
    #[doc(hidden)]
    pub unwritten: Option<Box<Unwritten>>,
    /// The error this result was made from, until the pipeline has given it its way on.
    #[doc(hidden)]
    pub source: Option<Box<ToolError>>,
}

/// An error's calls given as changes to the failed call.
#[derive(Debug, Clone, PartialEq)]
pub struct Unwritten {
    /// The arguments to change for the one call that would succeed.
    pub retry_with: Option<Map<String, Value>>,
    /// The calls the model may choose between.
    pub options: Vec<Choice>,
}

impl ToolResult {
    /// A successful result from already-shaped structured content.
    pub fn success(structured: Value) -> Self {
        ToolResult {
            structured,
            error_headline: None,
            extra_content: Vec::new(),
            unwritten: None,
            source: None,
        }
    }

    /// An error result.
    pub fn error(error: &ToolError) -> Self {
        let unwritten = error.hints.as_ref().and_then(|h| {
            let retry_with = h.retry_with.clone().filter(|_| h.next_call.is_none());
            (retry_with.is_some() || !h.options.is_empty()).then(|| {
                Box::new(Unwritten {
                    retry_with,
                    options: h.options.clone(),
                })
            })
        });
        ToolResult {
            structured: error.to_structured(),
            error_headline: Some(error.headline()),
            extra_content: Vec::new(),
            unwritten,
            source: Some(Box::new(error.clone())),
        }
    }

    /// Whether this is an error result.
    pub fn is_error(&self) -> bool {
        self.error_headline.is_some()
    }

    /// Adds a warning to a successful result (errors carry none).
    pub fn warn(&mut self, warning: String) {
        if let Value::Object(obj) = &mut self.structured
            && let Some(Value::Array(list)) = obj.get_mut("warnings")
        {
            list.push(warning.into());
        }
    }

    /// The `CallToolResult` object (without `resultType` and `_meta`), as a tree: what
    /// [`ToolResult::write_fields`] writes, read back.
    pub fn to_json(&self) -> Value {
        let mut text = String::from("{");
        self.write_fields(&mut text);
        text.push('}');
        serde_json::from_str(&text).unwrap_or(Value::Null)
    }

    /// The fields of the `CallToolResult` object (without `resultType` and `_meta`) as JSON
    /// text, written in one pass: the structured content is serialized once, and that text is
    /// both the text block (after an error's headline) and the `structuredContent`. The one
    /// place a result's text is made from its structured content.
    pub fn write_fields(&self, out: &mut String) {
        let json_line = crate::json_text::to_text(&self.structured);
        out.push_str(r#""content":[{"type":"text","text":"#);
        crate::json_text::write_str(out, &self.text(&json_line));
        out.push('}');
        for block in &self.extra_content {
            out.push(',');
            crate::json_text::write_value(out, block);
        }
        out.push_str(r#"],"structuredContent":"#);
        out.push_str(&json_line);
        out.push_str(if self.is_error() {
            r#","isError":true"#
        } else {
            r#","isError":false"#
        });
    }

    /// The text block: the structured content's JSON line, after the headline of an error.
    fn text<'a>(&self, json_line: &'a str) -> std::borrow::Cow<'a, str> {
        match &self.error_headline {
            Some(headline) => format!("{headline}\n{json_line}").into(),
            None => json_line.into(),
        }
    }
}

/// Shapes a success into structured content: `summary`, the output's fields, `warnings`,
/// `next_steps`, in that order.
pub fn shape_success<T: Serialize>(
    success: &Success<T>,
    warnings: &[String],
) -> Result<Value, serde_json::Error> {
    let mut obj = Map::new();
    obj.insert("summary".into(), success.summary.clone().into());
    match serde_json::to_value(&success.output)? {
        Value::Object(fields) => {
            for (k, v) in fields {
                obj.insert(k, v);
            }
        }
        Value::Null => {}
        other => {
            obj.insert("result".into(), other);
        }
    }
    obj.insert("warnings".into(), warnings.to_vec().into());
    obj.insert("next_steps".into(), success.next_steps.clone().into());
    Ok(Value::Object(obj))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Results with text to escape, an error's headline and extra content blocks.
    fn results() -> Vec<ToolResult> {
        let tricky = json!({"summary": "quote \" slash \\ line\nend é \u{1}", "n": 1.5, "list": [1, {"a": null}]});
        let mut with_blocks = ToolResult::success(tricky.clone());
        with_blocks.extra_content = vec![
            json!({"type": "image", "data": "AA=="}),
            json!({"type": "text", "text": "\"x\""}),
        ];
        let error = ToolError::new(
            ErrorKind::Conflict,
            "It \"changed\"\nmeanwhile",
            "Read it again",
        );
        vec![
            ToolResult::success(tricky),
            ToolResult::success(json!({})),
            with_blocks,
            ToolResult::error(&error),
        ]
    }

    /// The result object as a tree, built the way responses were built before they were
    /// written in one pass.
    fn as_tree(result: &ToolResult) -> Value {
        let json_line = result.structured.to_string();
        let text = match &result.error_headline {
            Some(headline) => format!("{headline}\n{json_line}"),
            None => json_line,
        };
        let mut content = vec![json!({"type": "text", "text": text})];
        content.extend(result.extra_content.iter().cloned());
        json!({
            "content": content,
            "structuredContent": result.structured,
            "isError": result.is_error(),
        })
    }

    #[test]
    fn the_fields_written_in_one_pass_are_the_bytes_of_the_tree() {
        for result in results() {
            let mut fields = String::from("{");
            result.write_fields(&mut fields);
            fields.push('}');
            assert_eq!(fields, as_tree(&result).to_string());
            assert_eq!(result.to_json(), as_tree(&result));
        }
    }
}
