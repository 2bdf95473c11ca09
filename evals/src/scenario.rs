//! Scenarios (what a dispatcher asks, on which connection, and what must and must not be true
//! afterwards) and recordings (a scripted model's tool calls), as stored under `evals/`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Which set a scenario belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Split {
    /// Descriptions and prompts may be tuned on these.
    Dev,
    /// Never used for tuning; the launch gate runs on these.
    Heldout,
}

impl Split {
    /// The name used in files and flags.
    pub fn as_str(self) -> &'static str {
        match self {
            Split::Dev => "dev",
            Split::Heldout => "heldout",
        }
    }
}

/// How the simulated user answers a request for approval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Approval {
    /// "Yes, go ahead."
    Approve,
    /// "No, don't."
    Reject,
    /// No answer at all: the conversation ends.
    #[default]
    Never,
}

/// The simulated user.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SimulatedUser {
    /// The answer to a prepared action's preview.
    #[serde(default)]
    pub approval: Approval,
    /// Answers, in order, when the model hands the turn back with nothing to approve.
    #[serde(default)]
    pub info: Vec<String>,
}

/// One step: a tool call or a text turn (setup steps and recordings share the shape).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Step {
    /// Run only if the user's latest reply was of this kind (`approved`, `rejected`,
    /// `answered`); recordings only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when: Option<String>,
    /// The tool to call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call: Option<String>,
    /// Its arguments; strings may hold `{{...}}` references.
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub args: Value,
    /// A name for the result's structured content, for later references.
    #[serde(rename = "as", default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Text the model says to the user, ending its turn (recordings only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub say: Option<String>,
    /// Setup only: confirm the preview the call returns at once.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub confirm: bool,
    /// Setup only: the role whose full-toolset connection runs the step (default: the
    /// scenario's own connection).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub via: Option<String>,
    /// Recordings only: `tenant/role/toolset` of another demo connection for this call (a
    /// scripted model misusing a credential it should not hold; failure recordings use it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connection: Option<String>,
}

/// A check on the final state or on the conversation.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Check {
    /// `customers`, `bookings`, `quotes` (final objects of the scenario's tenant),
    /// `effects` (executed notify/wake/alerting/delete actions, from the audit trail),
    /// `changes` (every audited change), `calls` (the model's tool calls as observed:
    /// `tool`, `arguments`, `error`, `status`, `approval`), `unchanged` (objects equal
    /// before and after),
    /// `asked_user` (the user was consulted), `final_text` (what the model said).
    pub what: String,
    /// Conditions on fields (dotted paths); a plain value must be equal, an object may use
    /// `contains`, `not`, `in`, `exists`, `starts_with`.
    #[serde(rename = "where", default)]
    pub filter: Map<String, Value>,
    /// Exactly this many match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u64>,
    /// At least this many match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<u64>,
    /// At most this many match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<u64>,
    /// `unchanged`: which kinds.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kinds: Vec<String>,
    /// `asked_user`: whether the user must (true) or must not (false) have been consulted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<bool>,
    /// `final_text`: groups of alternatives; each group needs one (case-insensitive) match.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub contains_all: Vec<Vec<String>>,
    /// `final_text`: texts that must not appear (case-insensitive).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub contains_none: Vec<String>,
    /// Why the check exists, for the report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// An external effect the task may cause.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AllowedEffect {
    /// The tool whose action executed (the audit row's `action`).
    pub action: String,
    /// A condition on the row's `ids` (as in `where`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ids: Option<Value>,
    /// How many such rows are allowed (default 1).
    #[serde(default = "one")]
    pub count: u64,
}

fn one() -> u64 {
    1
}

/// One task.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Unique id (also the file name of its good recording).
    pub id: String,
    /// `dev` or `heldout`.
    pub split: Split,
    /// A short title.
    pub title: String,
    /// Coverage tags (`revision`, `message`, `paging`, ...).
    #[serde(default)]
    pub tags: Vec<String>,
    /// The tenant of the connection.
    pub tenant: String,
    /// The role of the connection's member.
    pub role: String,
    /// The connection's toolset.
    pub toolset: String,
    /// Starting fixture beyond the demo seed, run before the model starts (through the
    /// scenario's connection, so it shows in its recent changes, unless `via` says otherwise).
    #[serde(default)]
    pub setup: Vec<Step>,
    /// The user's words; may hold `{{...}}` references.
    pub user: String,
    /// How the simulated user answers.
    #[serde(default)]
    pub simulated_user: SimulatedUser,
    /// Checks that make the task a success.
    #[serde(default)]
    pub expect: Vec<Check>,
    /// External effects the task may cause; any other executed effect is unwanted.
    #[serde(default)]
    pub allowed_effects: Vec<AllowedEffect>,
    /// Revision scenarios: at most this many new objects per kind (`customers`, `bookings`,
    /// `quotes`); more count as duplicates.
    #[serde(default)]
    pub max_created: BTreeMap<String, u64>,
    /// Anything a reader should know.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notes: Option<String>,
}

/// A scripted model's tool calls for one scenario.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Recording {
    /// The scenario it plays.
    pub scenario: String,
    /// What the recording shows.
    #[serde(default)]
    pub description: String,
    /// The steps.
    pub steps: Vec<Step>,
    /// The file stem (set when loaded).
    #[serde(skip)]
    pub name: String,
}

/// The tags every split must cover.
pub const REQUIRED_TAGS: &[&str] = &[
    "revision",
    "message",
    "paging",
    "muting",
    "deletion",
    "batch",
    "money",
    "time",
    "ask",
    "injection",
    "cross-tenant",
];

fn json_files(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    Ok(files)
}

/// Loads every scenario under `dir` (a file holds one scenario or an array of them).
pub fn load_scenarios(dir: &Path) -> anyhow::Result<Vec<Scenario>> {
    let mut out: Vec<Scenario> = Vec::new();
    for file in json_files(dir)? {
        let text = std::fs::read_to_string(&file)?;
        let value: Value =
            serde_json::from_str(&text).with_context(|| format!("parsing {}", file.display()))?;
        let items = match value {
            Value::Array(items) => items,
            other => vec![other],
        };
        for item in items {
            let s: Scenario = serde_json::from_value(item)
                .with_context(|| format!("a scenario in {}", file.display()))?;
            out.push(s);
        }
    }
    let mut seen = BTreeSet::new();
    for s in &out {
        if !seen.insert(s.id.clone()) {
            bail!("scenario id {} appears twice", s.id);
        }
    }
    out.sort_by(|a, b| a.id.cmp(&b.id));
    Ok(out)
}

/// Loads every recording under `dir`.
pub fn load_recordings(dir: &Path) -> anyhow::Result<Vec<Recording>> {
    let mut out = Vec::new();
    for file in json_files(dir)? {
        let text = std::fs::read_to_string(&file)?;
        let mut r: Recording =
            serde_json::from_str(&text).with_context(|| format!("parsing {}", file.display()))?;
        r.name = file
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        out.push(r);
    }
    Ok(out)
}

/// Problems with the scenario set (empty when it is sound).
pub fn validate(scenarios: &[Scenario], recordings: &[Recording]) -> Vec<String> {
    let mut problems = Vec::new();
    if scenarios.len() < 40 {
        problems.push(format!(
            "{} scenarios; at least 40 are needed",
            scenarios.len()
        ));
    }
    for split in [Split::Dev, Split::Heldout] {
        let tags: BTreeSet<&str> = scenarios
            .iter()
            .filter(|s| s.split == split)
            .flat_map(|s| s.tags.iter().map(String::as_str))
            .collect();
        for tag in REQUIRED_TAGS {
            if !tags.contains(tag) {
                problems.push(format!("no {} scenario tagged {tag}", split.as_str()));
            }
        }
    }
    let ids: BTreeSet<&str> = scenarios.iter().map(|s| s.id.as_str()).collect();
    for r in recordings {
        if !ids.contains(r.scenario.as_str()) {
            problems.push(format!(
                "recording {} plays unknown scenario {}",
                r.name, r.scenario
            ));
        }
    }
    for s in scenarios {
        if !recordings.iter().any(|r| r.scenario == s.id) {
            problems.push(format!("scenario {} has no recording", s.id));
        }
        for step in &s.setup {
            if step.call.is_none() {
                problems.push(format!("scenario {}: a setup step without `call`", s.id));
            }
        }
        for c in &s.expect {
            let known = [
                "customers",
                "bookings",
                "quotes",
                "effects",
                "changes",
                "calls",
                "unchanged",
                "asked_user",
                "final_text",
            ];
            if !known.contains(&c.what.as_str()) {
                problems.push(format!("scenario {}: unknown check {}", s.id, c.what));
            }
        }
        if s.expect.is_empty() {
            problems.push(format!("scenario {} checks nothing", s.id));
        }
    }
    problems
}
