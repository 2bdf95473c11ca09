//! The documents a newcomer reads stay short enough to read, and the decision records stay
//! indexed with their status.

fn root() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn read(path: &str) -> String {
    std::fs::read_to_string(root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn the_readme_the_architecture_and_the_guide_keep_their_size() {
    for (path, most) in [
        ("README.md", 14 * 1024),
        ("ARCHITECTURE.md", 20 * 1024),
        ("docs/your-product.md", 15 * 1024),
    ] {
        let size = read(path).len();
        assert!(size <= most, "{path} is {size} bytes, at most {most}");
    }
    assert!(
        read("README.md").contains("(docs/your-product.md)"),
        "the README links the guide"
    );
    // A reference, not a diary: the current figures, the machine and the commands.
    let lines = read("docs/performance.md").lines().count();
    assert!(
        lines <= 400,
        "docs/performance.md has {lines} lines, at most 400"
    );
}

#[test]
fn every_decision_record_has_a_status_and_is_in_the_index() {
    let index = read("docs/adr/README.md");
    let mut files: Vec<_> = std::fs::read_dir(root().join("docs/adr"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with('0') && name.ends_with(".md"))
        .collect();
    files.sort();
    assert!(files.len() >= 49, "{files:?}");
    for file in files {
        let text = read(&format!("docs/adr/{file}"));
        let status = text
            .lines()
            .find_map(|l| l.strip_prefix("Status: "))
            .unwrap_or_else(|| panic!("{file} has no `Status:` line"));
        let status = status.trim_end_matches('.');
        let row = index
            .lines()
            .find(|l| l.contains(&format!("]({file})")))
            .unwrap_or_else(|| panic!("{file} is not in docs/adr/README.md"));
        let word = status.split([',', ';', ' ']).next().unwrap_or_default();
        assert!(
            ["accepted", "superseded", "amended", "proposed"].contains(&word),
            "{file}: status {status:?}"
        );
        assert!(
            row.contains(word),
            "{file}: the index shows another status: {row}"
        );
    }
}
