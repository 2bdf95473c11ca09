//! The tool manifest: what each toolset lists is checked against the tool rules and pinned by
//! committed snapshots, so a change of a name, schema or description is a reviewed change.
//! To re-approve after an intended change: `cargo run -p gatehouse -- manifest --out tests/manifest`.

use mcp_pipeline::Toolset;
use serde_json::Value;

async fn dump(toolset: Toolset) -> Value {
    app::manifest::dump(
        &app::Settings::default(),
        booking_product::Booking::shared(),
        toolset,
    )
    .await
    .unwrap()
}

fn snapshot(toolset: Toolset) -> Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(format!("manifest/{}.json", toolset.as_str()));
    serde_json::from_str(
        &std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())),
    )
    .unwrap()
}

#[tokio::test]
async fn every_toolset_matches_its_committed_snapshot() {
    for toolset in [Toolset::Core, Toolset::Standard, Toolset::Full] {
        assert!(
            dump(toolset).await == snapshot(toolset),
            "the {} toolset drifted from tests/manifest/{}.json; review the change and re-approve with \
             `cargo run -p gatehouse -- manifest --out tests/manifest`",
            toolset.as_str(),
            toolset.as_str()
        );
    }
}

#[tokio::test]
async fn every_toolset_passes_the_manifest_check() {
    let reach_prefixes: Vec<String> = booking_product::REACH_PREFIXES
        .iter()
        .map(|p| (*p).to_owned())
        .collect();
    for (toolset, options) in [
        (Toolset::Core, manifest_check::Options::core()),
        (Toolset::Standard, Default::default()),
        (Toolset::Full, Default::default()),
    ] {
        let options = manifest_check::Options {
            reach_prefixes: reach_prefixes.clone(),
            ..options
        };
        let report = manifest_check::check_with(&dump(toolset).await, options);
        assert!(
            report.is_clean(),
            "{}:\n{}",
            toolset.as_str(),
            report.to_text()
        );
    }
    let (core, full) = (dump(Toolset::Core).await, dump(Toolset::Full).await);
    let order = manifest_check::check_same_order(&core, &full);
    assert!(order.is_clean(), "{}", order.to_text());
}

#[tokio::test]
async fn no_tool_names_a_tool_its_connection_cannot_call() {
    // Every toolset, as every role sees it: a description or schema naming a tool the
    // toolset or the role's rights hide sends a model to a call it cannot make (issue 46).
    let every = dump(Toolset::Full).await;
    let every: Vec<String> = every["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str().map(str::to_owned))
        .collect();
    let every: Vec<&str> = every.iter().map(String::as_str).collect();
    let mut findings = Vec::new();
    for toolset in [Toolset::Core, Toolset::Standard, Toolset::Full] {
        for role in ["owner", "admin", "dispatcher", "viewer"] {
            let rights = booking::rights::for_role(role)
                .iter()
                .map(|r| (*r).to_owned())
                .collect();
            let seen = app::manifest::dump_with_rights(
                &app::Settings::default(),
                booking_product::Booking::shared(),
                toolset,
                rights,
            )
            .await
            .unwrap();
            let report = manifest_check::check_names_listed(&seen, &every);
            if !report.is_clean() {
                findings.push(format!(
                    "{} as {role}:\n{}",
                    toolset.as_str(),
                    report.to_text()
                ));
            }
        }
    }
    assert!(findings.is_empty(), "{}", findings.join("\n"));
}

#[test]
fn the_manifest_checker_catches_every_defect_class() {
    let classes = manifest_check::self_test().unwrap();
    assert!(classes >= 20, "{classes}");
}

/// The core toolset lists short descriptions where the tool has one; the others the full text.
#[tokio::test]
async fn the_core_toolset_has_short_descriptions() {
    let (core, full) = (dump(Toolset::Core).await, dump(Toolset::Full).await);
    let description = |dump: &serde_json::Value, name: &str| {
        dump["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .unwrap()["description"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let (short, long) = (
        description(&core, "create_booking"),
        description(&full, "create_booking"),
    );
    assert!(short.len() < long.len(), "{short}");
    let too_long = manifest_check::check_with(
        &full,
        manifest_check::Options {
            max_tools: None,
            ..manifest_check::Options::core()
        },
    );
    assert!(
        too_long
            .classes()
            .contains(&manifest_check::DefectClass::LongDescription),
        "the full descriptions would not pass as core ones"
    );
}

/// The digest of the held-out evaluation scenarios (every scenario whose `split` is
/// `heldout`, in id order, as canonical JSON).
fn held_out_digest() -> String {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../evals/scenarios");
    let mut held_out = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        let scenarios: Vec<Value> = serde_json::from_str(&text).unwrap();
        held_out.extend(scenarios.into_iter().filter(|s| s["split"] == "heldout"));
    }
    held_out.sort_by_key(|s| s["id"].as_str().unwrap_or_default().to_owned());
    mcp_pipeline::digest(&Value::Array(held_out))
}

const HELD_OUT_DIGEST: &str = "manifest/heldout.sha256";

/// The held-out scenarios are pinned by a digest committed beside the tool-list snapshots, so
/// any change to them is a visible, reviewed change of that file.
#[test]
fn the_held_out_scenarios_match_their_committed_digest() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(HELD_OUT_DIGEST);
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    let actual = held_out_digest();
    assert_eq!(
        committed.split_whitespace().next(),
        Some(actual.as_str()),
        "the held-out scenarios changed: if that is intended (evals/SPLIT.md, rule 3), write \
         `{actual}  evals held-out scenarios` to tests/{HELD_OUT_DIGEST} in a commit that \
         changes no tool-list snapshot"
    );
}

/// Held-out scenarios and tool descriptions are never changed in one commit: tuning the
/// descriptions against the held-out set would leave exactly that trace.
#[test]
fn no_commit_changes_held_out_scenarios_and_tool_descriptions_together() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let log = std::process::Command::new("git")
        .args([
            "log",
            "--format=commit %H",
            "--name-only",
            "--",
            "tests/manifest",
        ])
        .current_dir(&root)
        .output();
    let Some(log) = log.ok().filter(|o| o.status.success()) else {
        eprintln!("not a git checkout: the history check is skipped");
        return;
    };
    let text = String::from_utf8_lossy(&log.stdout).into_owned();
    for commit in text.split("commit ").filter(|c| !c.trim().is_empty()) {
        let mut lines = commit.lines();
        let id = lines.next().unwrap_or_default();
        let files: Vec<&str> = lines.filter(|l| !l.is_empty()).collect();
        let digest = files.iter().any(|f| f.ends_with("heldout.sha256"));
        let snapshots = files
            .iter()
            .any(|f| f.starts_with("tests/manifest/") && f.ends_with(".json"));
        assert!(
            !(digest && snapshots),
            "commit {id} changes the held-out scenarios' digest and a tool-list snapshot together"
        );
    }
}

/// Every code an error result can carry is one its tool's output schema lists: a client that
/// checks answers against the schema must not refuse a real error (an outage's `unavailable`
/// was missing).
#[tokio::test]
async fn every_error_code_is_in_every_tools_output_schema() {
    let listed = dump(Toolset::Full).await;
    for tool in listed["tools"].as_array().unwrap() {
        let branches = tool["outputSchema"]["anyOf"].as_array().unwrap();
        let error = branches
            .iter()
            .find(|b| b["properties"]["error"]["const"] == true)
            .unwrap_or_else(|| panic!("{}: no error branch", tool["name"]));
        let codes = error["properties"]["code"]["enum"].as_array().unwrap();
        for kind in mcp_pipeline::ErrorKind::ALL {
            assert!(
                codes.iter().any(|c| c == kind.code()),
                "{}: the schema lacks {}",
                tool["name"],
                kind.code()
            );
        }
    }
}
