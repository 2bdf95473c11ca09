//! The tool manifest: what each toolset lists is checked against the tool rules and pinned by
//! committed snapshots, so a change of a name, schema or description is a reviewed change.
//! To re-approve after an intended change: `cargo run -p gatehouse -- manifest --out tests/manifest`.

use mcp_pipeline::Toolset;
use serde_json::Value;

async fn dump(toolset: Toolset) -> Value {
    app::manifest::dump(&app::Settings::default(), toolset)
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
    for (toolset, options) in [
        (Toolset::Core, manifest_check::Options::core()),
        (Toolset::Standard, Default::default()),
        (Toolset::Full, Default::default()),
    ] {
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
