//! What ships is free of test switches and holds its secrets as secrets (ADR 48), and the
//! advisories the lock file is known to carry are recorded, each with its reason, and still
//! true of `Cargo.lock`.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn read(relative: &str) -> String {
    std::fs::read_to_string(root().join(relative)).unwrap_or_else(|e| panic!("{relative}: {e}"))
}

/// The lines of the TOML `[section]` of `text` (up to the next header), trimmed.
fn section<'a>(text: &'a str, header: &str) -> Vec<&'a str> {
    text.lines()
        .skip_while(|l| l.trim() != header)
        .skip(1)
        .take_while(|l| !l.trim_start().starts_with('['))
        .map(str::trim)
        .collect()
}

/// The string value of `key = "value"` in `lines`.
fn value<'a>(lines: &[&'a str], key: &str) -> Option<&'a str> {
    lines.iter().find_map(|l| {
        let (k, v) = l.split_once('=')?;
        (k.trim() == key).then(|| v.trim().trim_matches('"'))
    })
}

/// The command line's code (`gatehouse_server::cli`), which serves the test tool when built
/// with its feature.
const CLI: &str = "shared/gatehouse-server/src/cli/mod.rs";

/// The test-only tool exists only under a feature no default turns on, and every line that
/// names it in `gatehouse` is under that feature; the Lambda function has none at all.
#[test]
fn the_test_tool_is_only_in_test_builds() {
    for manifest in [
        "functions/gatehouse/Cargo.toml",
        "shared/gatehouse-server/Cargo.toml",
        "shared/app/Cargo.toml",
    ] {
        let text = read(manifest);
        let features = section(&text, "[features]");
        let default = value(&features, "default").unwrap_or_default();
        assert!(!default.contains("test-tool"), "{manifest}: {default}");
        assert!(!default.contains("bench"), "{manifest}: {default}");
    }
    assert!(
        read("shared/app/src/lib.rs")
            .contains("#[cfg(feature = \"test-tool\")]\npub mod test_tool;"),
        "the module is compiled only with the feature"
    );
    let main = read(CLI);
    let lines: Vec<&str> = main.lines().collect();
    // What weakens a check (a panicking tool, raised rate limits) is compiled only under a
    // feature no default turns on, never behind a variable alone.
    let gated_names = [
        ("test_panic_tool", "test-tool"),
        ("test_tool::", "test-tool"),
        ("rate_limit_scale", "bench"),
    ];
    for (i, line) in lines.iter().enumerate() {
        let code = line.trim_start();
        if code.starts_with("//") {
            continue;
        }
        for (name, feature) in gated_names {
            if !code.contains(name) {
                continue;
            }
            let attribute = format!("#[cfg(feature = \"{feature}\")]");
            let gated = lines[..i]
                .iter()
                .rev()
                .take(6)
                .any(|l| l.contains(&attribute));
            assert!(gated, "{CLI}:{}: {line}", i + 1);
        }
    }
    for file in [
        "shared/gatehouse-server/src/lambda/mod.rs",
        "shared/gatehouse-server/src/web_lambda.rs",
        "functions/mcp-lambda/src/main.rs",
        "functions/mcp-worker/src/lib.rs",
        "shared/gatehouse-edge/src/assembly.rs",
    ] {
        assert!(
            !read(file).contains("test_tool"),
            "{file} names the test tool"
        );
    }
    assert!(!read("functions/mcp-lambda/Cargo.toml").contains("test-tool"));
}

/// The worker's test route lives behind the `test-routes` feature only: no variable names it,
/// and the release build (`tests/edge.sh`'s `build/`) is built without it.
#[test]
fn the_edge_test_routes_are_a_feature_not_a_variable() {
    for file in [
        "functions/mcp-worker/src/lib.rs",
        "shared/gatehouse-edge/src/lib.rs",
        "shared/gatehouse-edge/src/assembly.rs",
        "shared/gatehouse-edge/src/admin.rs",
        "shared/gatehouse-edge/src/env.rs",
    ] {
        assert!(
            !read(file).contains("GATEHOUSE_TEST_ROUTES"),
            "{file} reads a variable that opens test routes"
        );
    }
    let script = read("tests/edge.sh");
    assert!(
        script.contains("build_one build\n"),
        "the release build has no feature"
    );
    assert!(script.contains("build_one build-test --features test-routes"));
}

/// `wrangler.toml` keeps no secret among its plain variables: at run time a Worker cannot tell
/// a secret from a variable, so this is where "the admin token is a secret" is held.
#[test]
fn wrangler_keeps_secrets_out_of_its_variables() {
    const SECRETS: [&str; 3] = [
        "GATEHOUSE_ADMIN_TOKEN",
        "GATEHOUSE_STATE_KEY",
        "GATEHOUSE_WEBHOOK_SECRET",
    ];
    for file in [
        "functions/mcp-worker/wrangler.toml",
        "examples/helpdesk-worker/wrangler.toml",
    ] {
        let config = read(file);
        let vars = section(&config, "[vars]");
        for secret in SECRETS {
            let plain = value(&vars, secret);
            assert!(plain.is_none(), "{secret} is a plain variable in {file}");
        }
        let base = value(&vars, "GATEHOUSE_CONSOLE_BASE");
        assert!(base.is_some(), "the public URL is configured in {file}");
    }
}

/// Every advisory recorded in `tests/advisories.toml` names a crate `Cargo.lock` holds at a
/// version the record names, gives a reason, and is the one `deny.toml` ignores; a crate that
/// left the lock file must leave the record too.
#[test]
fn recorded_advisories_hold_for_the_lock_file() {
    let lock = read("Cargo.lock");
    let locked: Vec<(&str, &str)> = lock
        .split("[[package]]")
        .skip(1)
        .filter_map(|p| {
            let lines: Vec<&str> = p.lines().map(str::trim).collect();
            Some((value(&lines, "name")?, value(&lines, "version")?))
        })
        .collect();
    let deny = read("deny.toml");
    let mut ignored: Vec<&str> = deny
        .lines()
        .filter_map(|l| l.trim().strip_prefix("{ id = \""))
        .filter_map(|l| l.split('"').next())
        .collect();
    let record = read("tests/advisories.toml");
    let mut ids = Vec::new();
    for entry in record.split("[[advisory]]").skip(1) {
        let lines: Vec<&str> = entry.lines().map(str::trim).collect();
        let id = value(&lines, "id").expect("an id");
        let krate = value(&lines, "crate").expect("a crate");
        let prefix = value(&lines, "versions").expect("versions");
        let reason = value(&lines, "reason").unwrap_or_default();
        assert!(reason.len() > 80, "{id}: a reason of its own");
        assert!(
            locked
                .iter()
                .any(|(n, v)| *n == krate && v.starts_with(prefix)),
            "{id}: {krate} {prefix}* is no longer in Cargo.lock: drop the record"
        );
        ids.push(id);
    }
    assert!(!ids.is_empty(), "the record lists the known advisories");
    ids.sort_unstable();
    ignored.sort_unstable();
    assert_eq!(
        ids, ignored,
        "deny.toml ignores exactly the recorded advisories"
    );
}
