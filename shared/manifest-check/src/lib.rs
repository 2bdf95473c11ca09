//! Checks a `tools/list` dump against the MCP server design rules: names, titles, annotations
//! derived from one effect class, closed input schemas without a tenant parameter, output
//! schemas, descriptions (lead, length, one JSON example, no instructions to the model) and the
//! size of a toolset.
//!
//! [`check`] and [`check_with`] look at one dump; [`check_same_order`] compares two dumps (two
//! runs, or a smaller toolset against a larger one) for a stable tool order. [`self_test`]
//! proves that every [`DefectClass`] is caught.
//!
//! The checker reads JSON only, so it also runs on a dump taken from a deployed server.

mod self_test;

use std::collections::{BTreeSet, HashSet};
use std::fmt;

use serde::Serialize;
use serde_json::{Map, Value};

pub use self_test::self_test;

/// Shortest tool name.
pub const MIN_NAME_CHARS: usize = 3;

/// Longest tool name (the design rule; the connector directory allows 64, the protocol 128).
pub const MAX_NAME_CHARS: usize = 40;

/// Longest first sentence of a description (the text up to the first `". "`), which has to say
/// what the tool does and when to use it.
pub const MAX_LEAD_CHARS: usize = 300;

/// Longest description, in characters. Clients cut long descriptions and every character is
/// paid for in context on every turn.
pub const MAX_DESCRIPTION_CHARS: usize = 1024;

/// A size for the core toolset ("about 20 tools") to pass as [`Options::max_tools`].
pub const CORE_TOOLSET_MAX: usize = 20;

/// The longest description in the core toolset, which exists for small models: one short
/// sentence and the example ([`Options::core`]).
pub const CORE_DESCRIPTION_MAX_CHARS: usize = 240;

/// The text that starts the one JSON example in a description; the example is the JSON object
/// that starts at its `{` and ends at the matching `}`.
pub const EXAMPLE_MARKER: &str = "Example: {";

/// Share of ASCII letters among all letters a description needs (descriptions are English).
pub const MIN_ASCII_LETTER_SHARE: f64 = 0.9;

/// Share of words from [`ENGLISH_FUNCTION_WORDS`] that the prose of a description (the text
/// before the example) needs once it has at least [`MIN_WORDS_FOR_LANGUAGE_CHECK`] words.
/// English prose runs at 20 to 50 percent; other languages written in ASCII fall below 10.
pub const MIN_ENGLISH_WORD_SHARE: f64 = 0.1;

/// Descriptions shorter than this many words skip the function-word share.
pub const MIN_WORDS_FOR_LANGUAGE_CHECK: usize = 4;

/// Common English function words, for the "is this English" heuristic.
pub const ENGLISH_FUNCTION_WORDS: &[&str] = &[
    "a", "an", "the", "of", "to", "and", "or", "with", "for", "from", "by", "is", "are", "it",
    "its", "this", "that", "not", "one", "on", "at", "as", "if", "be", "when", "before", "after",
    "what", "which", "who", "until", "only", "nothing", "each", "every",
];

/// Phrases that tell the model how to behave instead of describing the tool. Descriptions are
/// read by the model as trusted text, so the connector review treats these as prompt-injection
/// patterns; rules that must hold belong in server code, and hints for the next call belong in
/// results (`next_steps`) and errors.
///
/// Matching is case-insensitive, on whitespace-normalised text, at word boundaries: `ignore`
/// matches "Ignore any" but not "ignored".
pub const MODEL_INSTRUCTION_PHRASES: &[&str] = &[
    "you must",
    "you should always",
    "you should never",
    "always call",
    "always use",
    "never call",
    "never tell the user",
    "do not tell the user",
    "don't tell the user",
    "do not mention",
    "don't mention",
    "do not ask",
    "don't ask",
    "without asking",
    "ignore",
    "disregard",
    "previous instructions",
    "system prompt",
    "as an ai",
    "you are an ai",
    "before answering",
    "instead of answering",
];

/// Parts of a property name that mark a tenant parameter (case-insensitive, after removing `_`
/// and `-`): a property containing one of them lets the model choose the tenant.
pub const TENANT_NAME_PARTS: &[&str] = &["tenant", "workspace"];

/// Whole property names (case-insensitive, after removing `_` and `-`) that select a tenant.
pub const TENANT_NAMES: &[&str] = &[
    "account",
    "accountid",
    "org",
    "orgid",
    "organization",
    "organizationid",
    "organisation",
    "organisationid",
];

/// Name prefixes of tools that only read; they must have `readOnlyHint: true`.
pub const READ_PREFIXES: &[&str] = &["get_", "find_", "list_"];

/// Name prefixes of tools that delete; they must have `destructiveHint: true`.
pub const DELETE_PREFIXES: &[&str] = &["delete_"];

/// Name prefixes of tools that reach people outside the product, whatever the product: verbs
/// whose object is a person or the public. They must have `openWorldHint: true`. A product adds
/// its own ([`Options::reach_prefixes`]: the booking product's `cancel_` and `reschedule_` tell
/// the customer).
pub const REACH_PREFIXES: &[&str] = &[
    "send_",
    "notify_",
    "page_",
    "email_",
    "message_",
    "reply_",
    "escalate_",
    "remind_",
    "invite_",
    "publish_",
];

/// Built-in tools of the confirmation flow. `confirm_action` executes whatever a notify, wake,
/// alerting or delete tool prepared, so its hints are the union of those classes rather than
/// one class; both are exempt from the effect-class table (all other checks apply).
pub const BUILT_IN_TOOLS: &[&str] = &["confirm_action", "reject_action"];

/// The annotation hints every tool states explicitly, in the order of [`EFFECT_CLASS_HINTS`].
pub const HINTS: [&str; 4] = [
    "readOnlyHint",
    "destructiveHint",
    "idempotentHint",
    "openWorldHint",
];

/// The hints each effect class derives (`readOnlyHint`, `destructiveHint`, `idempotentHint`,
/// `openWorldHint`). Mirrors `mcp_pipeline::EffectClass::annotations`; a tool whose hints match
/// no row was not derived from one effect class.
pub const EFFECT_CLASS_HINTS: &[(&str, [bool; 4])] = &[
    ("read", [true, false, true, false]),
    ("silent_write", [false, false, true, false]),
    ("notify", [false, false, false, true]),
    ("wake", [false, false, false, true]),
    ("alerting", [false, true, false, true]),
    ("delete", [false, true, false, false]),
];

/// What is wrong. Each rule has its own class so a report can be filtered and counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DefectClass {
    /// The input is not a `tools/list` result or a tool array, or an entry is not an object.
    Malformed,
    /// The name is missing or not snake_case `verb_object` of 3 to 40 characters.
    Name,
    /// Two tools share a name.
    DuplicateName,
    /// Two dumps list their common tools in a different order.
    OrderChanged,
    /// A tool's description or schemas name a tool this dump does not list (the connection's
    /// toolset or rights hide it): a model told to call it cannot.
    NamesUnlisted,
    /// No non-empty title (top-level `title` or `annotations.title`).
    MissingTitle,
    /// No annotations, or one of the four hints is not an explicit boolean.
    MissingAnnotations,
    /// `readOnlyHint: true` together with `destructiveHint: true`.
    ReadOnlyDestructive,
    /// A `get_`, `find_` or `list_` tool without `readOnlyHint: true`.
    ReadNotReadOnly,
    /// A `delete_` tool without `destructiveHint: true`.
    DeleteNotDestructive,
    /// A `send_`, `page_`, `cancel_` or `reschedule_` tool without `openWorldHint: true`.
    ReachNotOpenWorld,
    /// The four hints match no effect class in [`EFFECT_CLASS_HINTS`].
    NoEffectClass,
    /// An input property names a tenant (`tenant_id`, `workspace`, `org_id`, ...).
    TenantParameter,
    /// The input schema is missing, not `type: object`, or lacks `additionalProperties: false`.
    InputSchema,
    /// The output schema is missing or not `type: object`.
    OutputSchema,
    /// No description, or an empty one.
    MissingDescription,
    /// The description is not English (mostly non-ASCII letters, or no English function words).
    NonEnglishDescription,
    /// The first sentence is longer than [`MAX_LEAD_CHARS`].
    LongLead,
    /// The description is longer than [`MAX_DESCRIPTION_CHARS`].
    LongDescription,
    /// The description has no `Example: {...}`.
    MissingExample,
    /// The example is not one valid JSON object, or there is more than one example.
    InvalidExample,
    /// The example uses a property that the input schema does not declare.
    ExampleUnknownProperty,
    /// The description tells the model how to behave ([`MODEL_INSTRUCTION_PHRASES`]).
    ModelInstruction,
    /// More tools than [`Options::max_tools`].
    TooManyTools,
    /// A tool that is destructive or reaches outside executes at once (its output schema
    /// declares no `PREVIEW`) without `_meta["anthropic/requiresUserInteraction"]: true`, so
    /// a prompting client is not made to ask its user (ADR 15).
    UnmarkedExternalEffect,
}

impl DefectClass {
    /// Every class, in report order.
    pub const ALL: [DefectClass; 25] = [
        DefectClass::Malformed,
        DefectClass::Name,
        DefectClass::DuplicateName,
        DefectClass::OrderChanged,
        DefectClass::NamesUnlisted,
        DefectClass::MissingTitle,
        DefectClass::MissingAnnotations,
        DefectClass::ReadOnlyDestructive,
        DefectClass::ReadNotReadOnly,
        DefectClass::DeleteNotDestructive,
        DefectClass::ReachNotOpenWorld,
        DefectClass::NoEffectClass,
        DefectClass::TenantParameter,
        DefectClass::InputSchema,
        DefectClass::OutputSchema,
        DefectClass::MissingDescription,
        DefectClass::NonEnglishDescription,
        DefectClass::LongLead,
        DefectClass::LongDescription,
        DefectClass::MissingExample,
        DefectClass::InvalidExample,
        DefectClass::ExampleUnknownProperty,
        DefectClass::ModelInstruction,
        DefectClass::TooManyTools,
        DefectClass::UnmarkedExternalEffect,
    ];

    /// The snake_case name, as serialised.
    pub fn as_str(self) -> &'static str {
        match self {
            DefectClass::Malformed => "malformed",
            DefectClass::Name => "name",
            DefectClass::DuplicateName => "duplicate_name",
            DefectClass::OrderChanged => "order_changed",
            DefectClass::NamesUnlisted => "names_unlisted",
            DefectClass::MissingTitle => "missing_title",
            DefectClass::MissingAnnotations => "missing_annotations",
            DefectClass::ReadOnlyDestructive => "read_only_destructive",
            DefectClass::ReadNotReadOnly => "read_not_read_only",
            DefectClass::DeleteNotDestructive => "delete_not_destructive",
            DefectClass::ReachNotOpenWorld => "reach_not_open_world",
            DefectClass::NoEffectClass => "no_effect_class",
            DefectClass::TenantParameter => "tenant_parameter",
            DefectClass::InputSchema => "input_schema",
            DefectClass::OutputSchema => "output_schema",
            DefectClass::MissingDescription => "missing_description",
            DefectClass::NonEnglishDescription => "non_english_description",
            DefectClass::LongLead => "long_lead",
            DefectClass::LongDescription => "long_description",
            DefectClass::MissingExample => "missing_example",
            DefectClass::InvalidExample => "invalid_example",
            DefectClass::ExampleUnknownProperty => "example_unknown_property",
            DefectClass::ModelInstruction => "model_instruction",
            DefectClass::TooManyTools => "too_many_tools",
            DefectClass::UnmarkedExternalEffect => "unmarked_external_effect",
        }
    }
}

impl fmt::Display for DefectClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One finding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Defect {
    /// The tool's name; `None` for findings about the whole dump or a tool without a name.
    pub tool: Option<String>,
    /// Which rule is broken.
    pub class: DefectClass,
    /// What is wrong and how to fix it.
    pub message: String,
}

/// Every finding, in the order of the tools in the dump; findings about the whole dump last.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Report {
    /// The findings.
    pub defects: Vec<Defect>,
}

impl Report {
    /// Whether nothing was found.
    pub fn is_clean(&self) -> bool {
        self.defects.is_empty()
    }

    /// The distinct classes found.
    pub fn classes(&self) -> BTreeSet<DefectClass> {
        self.defects.iter().map(|d| d.class).collect()
    }

    /// One line per defect, `tool [class] message`, after a count line.
    pub fn to_text(&self) -> String {
        if self.is_clean() {
            return "manifest check: clean\n".to_owned();
        }
        let mut out = format!("manifest check: {} defect(s)\n", self.defects.len());
        for d in &self.defects {
            let tool = d.tool.as_deref().unwrap_or("(manifest)");
            out.push_str(&format!("- {tool} [{}] {}\n", d.class, d.message));
        }
        out
    }

    fn push(&mut self, tool: Option<&str>, class: DefectClass, message: impl Into<String>) {
        self.defects.push(Defect {
            tool: tool.map(str::to_owned),
            class,
            message: message.into(),
        });
    }
}

/// Settings for [`check_with`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Options {
    /// The product's own name prefixes of tools that reach people, beside [`REACH_PREFIXES`]
    /// (`check-manifest --reach-prefix cancel_`).
    pub reach_prefixes: Vec<String>,
    /// The most tools the dump may list (for the core toolset: about [`CORE_TOOLSET_MAX`]).
    pub max_tools: Option<usize>,
    /// The longest description allowed (default [`MAX_DESCRIPTION_CHARS`]).
    pub max_description_chars: Option<usize>,
}

impl Options {
    /// The core toolset's limits: [`CORE_TOOLSET_MAX`] tools, descriptions of at most
    /// [`CORE_DESCRIPTION_MAX_CHARS`].
    pub fn core() -> Self {
        Options {
            max_tools: Some(CORE_TOOLSET_MAX),
            max_description_chars: Some(CORE_DESCRIPTION_MAX_CHARS),
            reach_prefixes: Vec::new(),
        }
    }
}

/// Checks one dump: a `tools/list` result (`{"tools": [...]}`), the whole JSON-RPC response
/// (`{"result": {"tools": [...]}}`) or a bare array of tool descriptors.
pub fn check(tools_list: &Value) -> Report {
    check_with(tools_list, Options::default())
}

/// [`check`] with options.
pub fn check_with(tools_list: &Value, options: Options) -> Report {
    let mut report = Report::default();
    let tools = match tools_of(tools_list) {
        Ok(tools) => tools,
        Err(message) => {
            report.push(None, DefectClass::Malformed, message);
            return report;
        }
    };
    let mut seen = HashSet::new();
    for (index, tool) in tools.iter().enumerate() {
        check_tool(&mut report, index, tool, &mut seen, &options);
    }
    if let Some(max) = options.max_tools
        && tools.len() > max
    {
        report.push(
            None,
            DefectClass::TooManyTools,
            format!(
                "the dump lists {} tools, more than the {max} allowed for this toolset; move \
                 tools to a larger toolset",
                tools.len()
            ),
        );
    }
    report
}

/// Checks that a dump's descriptions and schemas name only tools it lists, out of
/// `every_tool` (all the tools the product has).
pub fn check_names_listed(dump: &Value, every_tool: &[&str]) -> Report {
    let mut report = Report::default();
    let listed = match names_of(dump) {
        Ok(names) => names.into_iter().collect::<HashSet<&str>>(),
        Err(message) => {
            report.push(None, DefectClass::Malformed, message);
            return report;
        }
    };
    for tool in tools_of(dump).map(Vec::as_slice).unwrap_or_default() {
        let name = tool.get("name").and_then(Value::as_str).unwrap_or_default();
        let text = [
            tool.get("description"),
            tool.get("inputSchema"),
            tool.get("outputSchema"),
        ]
        .into_iter()
        .flatten()
        .map(Value::to_string)
        .collect::<Vec<_>>()
        .join(" ");
        for unlisted in every_tool.iter().filter(|t| !listed.contains(*t)) {
            if names_word(&text, unlisted) {
                report.push(
                    Some(name),
                    DefectClass::NamesUnlisted,
                    format!(
                        "names `{unlisted}`, which this dump does not list: a connection that sees `{name}` cannot call it; name only tools listed beside it"
                    ),
                );
            }
        }
    }
    report
}

/// Whether `word` appears in `text` as a whole word (not inside a longer name).
fn names_word(text: &str, word: &str) -> bool {
    let is_name_char = |c: char| c.is_ascii_alphanumeric() || c == '_';
    text.match_indices(word).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + word.len()..].chars().next();
        !before.is_some_and(is_name_char) && !after.is_some_and(is_name_char)
    })
}

/// Compares the order of two dumps of the same server: the tools present in both must appear
/// in the same relative order (so a core dump can be compared with a full one). Each dump may
/// be in any form [`check`] accepts.
pub fn check_same_order(a: &Value, b: &Value) -> Report {
    let mut report = Report::default();
    let (names_a, names_b) = match (names_of(a), names_of(b)) {
        (Ok(na), Ok(nb)) => (na, nb),
        (Err(message), _) | (_, Err(message)) => {
            report.push(None, DefectClass::Malformed, message);
            return report;
        }
    };
    let set_a: HashSet<&str> = names_a.iter().copied().collect();
    let set_b: HashSet<&str> = names_b.iter().copied().collect();
    let common_a: Vec<&str> = names_a.into_iter().filter(|n| set_b.contains(n)).collect();
    let common_b: Vec<&str> = names_b.into_iter().filter(|n| set_a.contains(n)).collect();
    if let Some((position, (x, y))) = common_a
        .iter()
        .zip(&common_b)
        .enumerate()
        .find(|(_, (x, y))| x != y)
    {
        report.push(
            Some(x),
            DefectClass::OrderChanged,
            format!(
                "the tools both dumps list come in a different order: at common position \
                 {position} the first has `{x}`, the second `{y}`; tools/list must return tools \
                 in a fixed order"
            ),
        );
    }
    report
}

fn tools_of(value: &Value) -> Result<&Vec<Value>, String> {
    if let Some(tools) = value.as_array() {
        return Ok(tools);
    }
    let result = value.get("result").unwrap_or(value);
    result
        .get("tools")
        .and_then(Value::as_array)
        .ok_or_else(|| {
            "the input is neither a tools/list result with a `tools` array nor an array of tool \
             descriptors"
                .to_owned()
        })
}

fn names_of(value: &Value) -> Result<Vec<&str>, String> {
    Ok(tools_of(value)?
        .iter()
        .filter_map(|t| t.get("name").and_then(Value::as_str))
        .collect())
}

fn check_tool<'a>(
    report: &mut Report,
    index: usize,
    tool: &'a Value,
    seen: &mut HashSet<&'a str>,
    options: &Options,
) {
    let Some(obj) = tool.as_object() else {
        report.push(
            None,
            DefectClass::Malformed,
            format!("tools[{index}] is not an object"),
        );
        return;
    };
    let name = obj.get("name").and_then(Value::as_str);
    match name {
        None => report.push(
            None,
            DefectClass::Name,
            format!("tools[{index}] has no string `name`"),
        ),
        Some(n) if !valid_name(n) => report.push(
            name,
            DefectClass::Name,
            format!(
                "`{n}` is not a snake_case verb_object name of {MIN_NAME_CHARS} to \
                 {MAX_NAME_CHARS} characters (lowercase letters and digits, words joined by `_`, \
                 starting with the verb)"
            ),
        ),
        Some(_) => {}
    }
    if let Some(n) = name
        && !seen.insert(n)
    {
        report.push(
            name,
            DefectClass::DuplicateName,
            format!("`{n}` is listed more than once; tool names must be unique"),
        );
    }
    let label = name.map_or_else(|| format!("tools[{index}]"), |n| format!("`{n}`"));

    let has_title = |v: Option<&Value>| {
        v.and_then(Value::as_str)
            .is_some_and(|t| !t.trim().is_empty())
    };
    if !has_title(obj.get("title"))
        && !has_title(obj.get("annotations").and_then(|a| a.get("title")))
    {
        report.push(
            name,
            DefectClass::MissingTitle,
            format!("{label} has no title; set a short human-readable `title`"),
        );
    }

    check_annotations(report, name, &label, obj, &options.reach_prefixes);
    let props = check_input_schema(report, name, &label, obj);
    check_output_schema(report, name, &label, obj);
    check_user_interaction(report, name, &label, obj);
    let max_chars = options
        .max_description_chars
        .unwrap_or(MAX_DESCRIPTION_CHARS);
    check_description(report, name, &label, obj, props, max_chars);
}

/// The `_meta` key that makes a prompting client ask its user on every call.
pub const REQUIRES_USER_INTERACTION: &str = "anthropic/requiresUserInteraction";

/// A tool that is destructive or reaches outside, and does not prepare first, must ask the
/// client to prompt its user on every call.
fn check_user_interaction(
    report: &mut Report,
    name: Option<&str>,
    label: &str,
    obj: &Map<String, Value>,
) {
    let hint = |key: &str| {
        obj.get("annotations")
            .and_then(|a| a.get(key))
            .and_then(Value::as_bool)
    };
    let external = hint("readOnlyHint") == Some(false)
        && (hint("destructiveHint") == Some(true) || hint("openWorldHint") == Some(true));
    let prepares = obj
        .get("outputSchema")
        .and_then(|o| o.get("anyOf"))
        .and_then(Value::as_array)
        .is_some_and(|branches| {
            branches.iter().any(|b| {
                b.pointer("/properties/status/const")
                    .and_then(Value::as_str)
                    == Some("PREVIEW")
            })
        });
    let marked = obj
        .get("_meta")
        .and_then(|m| m.get(REQUIRES_USER_INTERACTION))
        .and_then(Value::as_bool)
        == Some(true);
    if external && !prepares && !marked {
        report.push(
            name,
            DefectClass::UnmarkedExternalEffect,
            format!(
                "{label} is destructive or reaches outside and executes at once (its output \
                 schema declares no PREVIEW), but lacks `_meta[\"{REQUIRES_USER_INTERACTION}\"]: \
                 true`; mark it so a prompting client asks its user, or make it prepare first"
            ),
        );
    }
}

fn valid_name(name: &str) -> bool {
    let len = name.chars().count();
    (MIN_NAME_CHARS..=MAX_NAME_CHARS).contains(&len)
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name.split('_').count() >= 2
        && name.split('_').all(|part| {
            !part.is_empty()
                && part
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        })
}

fn has_prefix<P: AsRef<str>>(name: Option<&str>, prefixes: &[P]) -> bool {
    name.is_some_and(|n| prefixes.iter().any(|p| n.starts_with(p.as_ref())))
}

fn check_annotations(
    report: &mut Report,
    name: Option<&str>,
    label: &str,
    obj: &Map<String, Value>,
    reach_prefixes: &[String],
) {
    let Some(annotations) = obj.get("annotations").and_then(Value::as_object) else {
        report.push(
            name,
            DefectClass::MissingAnnotations,
            format!(
                "{label} has no `annotations` object; derive readOnlyHint, destructiveHint, \
                 idempotentHint and openWorldHint from the tool's effect class"
            ),
        );
        return;
    };
    let hint = |key: &str| annotations.get(key).and_then(Value::as_bool);
    let missing: Vec<&str> = HINTS
        .iter()
        .copied()
        .filter(|h| hint(h).is_none())
        .collect();
    if !missing.is_empty() {
        report.push(
            name,
            DefectClass::MissingAnnotations,
            format!(
                "{label} does not state {} as explicit booleans (the protocol defaults are the \
                 unsafe ones)",
                missing.join(", ")
            ),
        );
    }
    let hints = StatedHints {
        read_only: hint("readOnlyHint"),
        destructive: hint("destructiveHint"),
        open_world: hint("openWorldHint"),
    };
    let specific = check_hints_against_name(report, name, label, hints, reach_prefixes);
    let built_in = name.is_some_and(|n| BUILT_IN_TOOLS.contains(&n));
    if missing.is_empty() && !specific && !built_in {
        let hints = HINTS.map(|h| hint(h).unwrap_or_default());
        if !EFFECT_CLASS_HINTS.iter().any(|(_, row)| *row == hints) {
            let [r, d, i, o] = hints;
            report.push(
                name,
                DefectClass::NoEffectClass,
                format!(
                    "{label} has readOnlyHint {r}, destructiveHint {d}, idempotentHint {i}, \
                     openWorldHint {o}, which matches no effect class (read, silent_write, \
                     notify, wake, alerting, delete); derive the hints from the one effect class"
                ),
            );
        }
    }
}

/// The annotation hints a tool states, each `None` where it is absent or not a boolean.
#[derive(Clone, Copy)]
struct StatedHints {
    read_only: Option<bool>,
    destructive: Option<bool>,
    open_world: Option<bool>,
}

/// The hints a tool's name implies (reads are read-only, deletes destructive, tools that reach
/// people open-world) and the one contradiction no name excuses; whether any fired.
fn check_hints_against_name(
    report: &mut Report,
    name: Option<&str>,
    label: &str,
    hints: StatedHints,
    reach_prefixes: &[String],
) -> bool {
    let StatedHints {
        read_only,
        destructive,
        open_world,
    } = hints;
    let mut specific = false;
    if read_only == Some(true) && destructive == Some(true) {
        specific = true;
        report.push(
            name,
            DefectClass::ReadOnlyDestructive,
            format!("{label} claims readOnlyHint and destructiveHint at once; a read-only tool is never destructive"),
        );
    }
    if has_prefix(name, READ_PREFIXES) && read_only == Some(false) {
        specific = true;
        report.push(
            name,
            DefectClass::ReadNotReadOnly,
            format!(
                "{label} is named like a read (get_/find_/list_) but has readOnlyHint false; \
                 make it read only or rename it after its effect"
            ),
        );
    }
    if has_prefix(name, DELETE_PREFIXES) && destructive == Some(false) {
        specific = true;
        report.push(
            name,
            DefectClass::DeleteNotDestructive,
            format!("{label} deletes but has destructiveHint false; use the delete effect class"),
        );
    }
    let reaches = has_prefix(name, REACH_PREFIXES) || has_prefix(name, reach_prefixes);
    if reaches && open_world == Some(false) {
        specific = true;
        report.push(
            name,
            DefectClass::ReachNotOpenWorld,
            format!(
                "{label} is named like a tool that reaches people (send_, page_, reply_, ... or \
                 the product's own) but has openWorldHint false; use the notify or wake effect \
                 class"
            ),
        );
    }
    specific
}

/// Checks the input schema and its property names; returns its top-level `properties`.
fn check_input_schema<'a>(
    report: &mut Report,
    name: Option<&str>,
    label: &str,
    obj: &'a Map<String, Value>,
) -> Option<&'a Map<String, Value>> {
    let Some(schema) = obj.get("inputSchema") else {
        report.push(
            name,
            DefectClass::InputSchema,
            format!("{label} has no inputSchema"),
        );
        return None;
    };
    let Some(schema_obj) = schema.as_object() else {
        report.push(
            name,
            DefectClass::InputSchema,
            format!("{label}: inputSchema is not a JSON object"),
        );
        return None;
    };
    if schema_obj.get("type").and_then(Value::as_str) != Some("object") {
        report.push(
            name,
            DefectClass::InputSchema,
            format!("{label}: inputSchema must have `type: \"object\"`"),
        );
    }
    if schema_obj.get("additionalProperties") != Some(&Value::Bool(false)) {
        report.push(
            name,
            DefectClass::InputSchema,
            format!(
                "{label}: inputSchema must have `additionalProperties: false` (the server \
                 rejects unknown fields, so the schema says so)"
            ),
        );
    }
    let mut tenant = Vec::new();
    tenant_properties(schema, "", &mut tenant);
    if !tenant.is_empty() {
        report.push(
            name,
            DefectClass::TenantParameter,
            format!(
                "{label} takes {}, which selects a tenant; the tenant is bound to the connection, \
                 remove the parameter",
                tenant.join(", ")
            ),
        );
    }
    schema_obj.get("properties").and_then(Value::as_object)
}

fn is_tenant_name(property: &str) -> bool {
    let folded: String = property
        .chars()
        .filter(|c| *c != '_' && *c != '-')
        .flat_map(char::to_lowercase)
        .collect();
    TENANT_NAME_PARTS.iter().any(|p| folded.contains(p)) || TENANT_NAMES.contains(&folded.as_str())
}

/// Collects every property name, at any depth of the schema, that selects a tenant.
fn tenant_properties(schema: &Value, path: &str, found: &mut Vec<String>) {
    match schema {
        Value::Object(map) => {
            for (key, sub) in map {
                match key.as_str() {
                    "properties" | "patternProperties" => {
                        if let Some(props) = sub.as_object() {
                            for (prop, prop_schema) in props {
                                let here = if path.is_empty() {
                                    prop.clone()
                                } else {
                                    format!("{path}.{prop}")
                                };
                                if is_tenant_name(prop) {
                                    found.push(format!("`{here}`"));
                                }
                                tenant_properties(prop_schema, &here, found);
                            }
                        }
                    }
                    // Values of these keywords are data, not schemas.
                    "const" | "enum" | "default" | "examples" | "description" | "title"
                    | "required" => {}
                    _ => tenant_properties(sub, path, found),
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                tenant_properties(item, path, found);
            }
        }
        _ => {}
    }
}

fn check_output_schema(
    report: &mut Report,
    name: Option<&str>,
    label: &str,
    obj: &Map<String, Value>,
) {
    let problem = match obj.get("outputSchema") {
        None | Some(Value::Null) => Some("has no outputSchema; declare the structured result"),
        Some(Value::Object(schema)) => (schema.get("type").and_then(Value::as_str)
            != Some("object"))
        .then_some("has an outputSchema whose `type` is not \"object\""),
        Some(_) => Some("has an outputSchema that is not a JSON object"),
    };
    if let Some(problem) = problem {
        report.push(
            name,
            DefectClass::OutputSchema,
            format!("{label} {problem}"),
        );
    }
}

fn check_description(
    report: &mut Report,
    name: Option<&str>,
    label: &str,
    obj: &Map<String, Value>,
    input_properties: Option<&Map<String, Value>>,
    max_chars: usize,
) {
    let Some(description) = obj
        .get("description")
        .and_then(Value::as_str)
        .filter(|d| !d.trim().is_empty())
    else {
        report.push(
            name,
            DefectClass::MissingDescription,
            format!("{label} has no description; say what the tool does and when to use it"),
        );
        return;
    };
    let description = description.trim();
    let prose = description
        .find(EXAMPLE_MARKER)
        .map_or(description, |i| &description[..i]);

    if let Some(why) = not_english(description, prose) {
        report.push(
            name,
            DefectClass::NonEnglishDescription,
            format!("{label}: the description does not read as English ({why})"),
        );
    }

    let lead = description
        .find(". ")
        .map_or(description, |i| &description[..=i]);
    let lead_chars = lead.chars().count();
    if lead_chars > MAX_LEAD_CHARS {
        report.push(
            name,
            DefectClass::LongLead,
            format!(
                "{label}: the first sentence has {lead_chars} characters, more than \
                 {MAX_LEAD_CHARS}; lead with what the tool does and when, in one short sentence"
            ),
        );
    }

    let chars = description.chars().count();
    if chars > max_chars {
        report.push(
            name,
            DefectClass::LongDescription,
            format!("{label}: the description has {chars} characters, more than {max_chars}"),
        );
    }

    check_example(report, name, label, description, input_properties);

    let phrases = instruction_phrases(description);
    if !phrases.is_empty() {
        report.push(
            name,
            DefectClass::ModelInstruction,
            format!(
                "{label}: the description instructs the model ({}); describe the tool and let \
                 the server enforce rules",
                phrases
                    .iter()
                    .map(|p| format!("\"{p}\""))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        );
    }
}

fn not_english(description: &str, prose: &str) -> Option<String> {
    let letters = description.chars().filter(|c| c.is_alphabetic()).count();
    let ascii = description
        .chars()
        .filter(|c| c.is_ascii_alphabetic())
        .count();
    if letters > 0 {
        let share = ascii as f64 / letters as f64;
        if share < MIN_ASCII_LETTER_SHARE {
            return Some(format!(
                "{:.0}% of its letters are ASCII, at least {:.0}% expected",
                share * 100.0,
                MIN_ASCII_LETTER_SHARE * 100.0
            ));
        }
    }
    let words: Vec<String> = prose
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    if words.len() >= MIN_WORDS_FOR_LANGUAGE_CHECK {
        let hits = words
            .iter()
            .filter(|w| ENGLISH_FUNCTION_WORDS.contains(&w.as_str()))
            .count();
        let share = hits as f64 / words.len() as f64;
        if share < MIN_ENGLISH_WORD_SHARE {
            return Some(format!(
                "{hits} of {} words are English function words such as \"the\", \"to\", \"and\"",
                words.len()
            ));
        }
    }
    None
}

fn check_example(
    report: &mut Report,
    name: Option<&str>,
    label: &str,
    description: &str,
    input_properties: Option<&Map<String, Value>>,
) {
    let Some(start) = description.find(EXAMPLE_MARKER) else {
        report.push(
            name,
            DefectClass::MissingExample,
            format!(
                "{label}: the description has no JSON example; end it with `Example: {{...}}` \
                 using the tool's real arguments (`Example: {{}}` for none)"
            ),
        );
        return;
    };
    if description.matches("Example:").count() > 1 {
        report.push(
            name,
            DefectClass::InvalidExample,
            format!("{label}: the description has more than one `Example:`; keep one"),
        );
        return;
    }
    let text = &description[start + EXAMPLE_MARKER.len() - 1..];
    let example = match example_object(text) {
        Ok(example) => example,
        Err(why) => {
            report.push(
                name,
                DefectClass::InvalidExample,
                format!("{label}: the example is not a valid JSON object ({why})"),
            );
            return;
        }
    };
    let unknown: Vec<&str> = example
        .keys()
        .map(String::as_str)
        .filter(|k| !input_properties.is_some_and(|p| p.contains_key(*k)))
        .collect();
    if !unknown.is_empty() {
        let allowed: Vec<&str> = input_properties
            .map(|p| p.keys().map(String::as_str).collect())
            .unwrap_or_default();
        report.push(
            name,
            DefectClass::ExampleUnknownProperty,
            format!(
                "{label}: the example uses {} which the inputSchema does not declare (declared: \
                 {})",
                unknown
                    .iter()
                    .map(|k| format!("`{k}`"))
                    .collect::<Vec<_>>()
                    .join(", "),
                if allowed.is_empty() {
                    "none".to_owned()
                } else {
                    allowed.join(", ")
                }
            ),
        );
    }
}

/// Parses the JSON object at the start of `text` (which starts with `{`) up to its matching
/// brace.
fn example_object(text: &str) -> Result<Map<String, Value>, String> {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    let mut end = None;
    for (i, c) in text.char_indices() {
        if in_string {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '{' => depth += 1,
            '}' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    end = Some(i + 1);
                    break;
                }
            }
            _ => {}
        }
    }
    let end = end.ok_or_else(|| "its braces never close".to_owned())?;
    match serde_json::from_str::<Value>(&text[..end]) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err("not an object".to_owned()),
        Err(e) => Err(format!("{e} in `{}`", &text[..end])),
    }
}

/// The phrases of [`MODEL_INSTRUCTION_PHRASES`] in `description`.
fn instruction_phrases(description: &str) -> Vec<&'static str> {
    let text = description
        .replace(['\u{2019}', '\u{2018}'], "'")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase();
    MODEL_INSTRUCTION_PHRASES
        .iter()
        .copied()
        .filter(|phrase| contains_phrase(&text, phrase))
        .collect()
}

fn contains_phrase(text: &str, phrase: &str) -> bool {
    text.match_indices(phrase).any(|(i, m)| {
        let before = text[..i].chars().next_back();
        let after = text[i + m.len()..].chars().next();
        !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric)
    })
}

#[cfg(test)]
mod tests;
