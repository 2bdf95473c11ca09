//! Architecture invariants checked over `cargo metadata`.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

use serde_json::Value;

struct Member {
    name: String,
    manifest: String,
    deps: BTreeSet<String>,
    is_lib: bool,
    is_bin_only: bool,
}

fn members() -> Vec<Member> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run cargo metadata");
    assert!(
        out.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: Value = serde_json::from_slice(&out.stdout).expect("metadata json");
    meta["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .map(|p| {
            let kinds: BTreeSet<String> = p["targets"]
                .as_array()
                .expect("targets")
                .iter()
                .flat_map(|t| t["kind"].as_array().cloned().unwrap_or_default())
                .filter_map(|k| k.as_str().map(str::to_owned))
                .collect();
            Member {
                name: p["name"].as_str().expect("name").to_owned(),
                manifest: p["manifest_path"].as_str().expect("manifest").to_owned(),
                deps: p["dependencies"]
                    .as_array()
                    .expect("deps")
                    .iter()
                    .map(|d| d["name"].as_str().expect("dep name").to_owned())
                    .collect(),
                is_lib: kinds.contains("lib"),
                is_bin_only: kinds.contains("bin") && !kinds.contains("lib"),
            }
        })
        .collect()
}

#[test]
fn only_the_dynamodb_crate_depends_on_the_aws_sdk() {
    let offenders: Vec<String> = members()
        .iter()
        .filter(|m| m.name != "store-dynamodb")
        .flat_map(|m| {
            m.deps
                .iter()
                .filter(|d| {
                    d.starts_with("aws-sdk-")
                        || d.starts_with("aws-config")
                        || d.starts_with("aws-smithy")
                })
                .map(move |d| format!("{} depends on {d}", m.name))
        })
        .collect();
    assert!(
        offenders.is_empty(),
        "AWS SDK outside store-dynamodb: {offenders:?}"
    );
}

#[test]
fn library_crates_do_not_depend_on_binary_crates() {
    let all = members();
    let binaries: BTreeSet<&str> = all
        .iter()
        .filter(|m| m.is_bin_only)
        .map(|m| m.name.as_str())
        .collect();
    assert!(
        binaries.contains("gatehouse"),
        "the gatehouse binary crate should be found"
    );
    let offenders: Vec<String> = all
        .iter()
        .filter(|m| m.is_lib)
        .flat_map(|m| {
            m.deps
                .iter()
                .filter(|d| binaries.contains(d.as_str()))
                .map(move |d| format!("{} -> {d}", m.name))
        })
        .collect();
    assert!(
        offenders.is_empty(),
        "library crates depending on binaries: {offenders:?}"
    );
}

#[test]
fn crates_live_where_the_layout_says() {
    let mut by_folder: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    let all = members();
    for m in &all {
        let folder = if m.manifest.contains("/shared/") {
            "shared"
        } else if m.manifest.contains("/functions/") {
            "functions"
        } else {
            "other"
        };
        by_folder.entry(folder).or_default().push(m.name.clone());
        if folder == "shared" {
            assert!(
                m.is_lib && !m.is_bin_only,
                "{} under shared/ must be a library",
                m.name
            );
            // Folder name equals package name, so a crate is found where its name says.
            assert!(
                m.manifest
                    .ends_with(&format!("/shared/{}/Cargo.toml", m.name)),
                "{}",
                m.manifest
            );
        }
        if folder == "functions" {
            assert!(
                m.is_bin_only,
                "{} under functions/ must be a binary",
                m.name
            );
        }
    }
    assert!(
        by_folder.get("shared").is_some_and(|v| v.len() >= 3),
        "{by_folder:?}"
    );
}
