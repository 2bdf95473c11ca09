//! Architecture invariants checked over `cargo metadata`.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

use serde_json::Value;

struct Member {
    name: String,
    manifest: String,
    deps: BTreeSet<String>,
    /// The dependencies behind a feature of the member's own (`optional = true`).
    optional_deps: BTreeSet<String>,
    is_lib: bool,
    is_bin_only: bool,
    /// A `cdylib` only: what an edge runtime loads (the Worker's wasm), its deployable.
    is_cdylib_only: bool,
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
                optional_deps: p["dependencies"]
                    .as_array()
                    .expect("deps")
                    .iter()
                    .filter(|d| d["optional"] == true)
                    .map(|d| d["name"].as_str().expect("dep name").to_owned())
                    .collect(),
                is_lib: kinds.contains("lib"),
                is_bin_only: kinds.contains("bin") && !kinds.contains("lib"),
                is_cdylib_only: kinds.iter().all(|k| k == "cdylib"),
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
fn only_the_booking_product_depends_on_booking() {
    // ADR 49: the platform serves any product through one seam; the booking product is built
    // on it like any other. Its own crates (services, tools, binaries, tests, evaluations) may
    // name it; no platform crate and no other product may.
    let own = |m: &Member| {
        ["/products/booking/", "/functions/", "/tests/", "/evals/"]
            .iter()
            .any(|folder| m.manifest.contains(folder))
    };
    let all = members();
    let offenders: Vec<String> = all
        .iter()
        .filter(|m| !own(m))
        .flat_map(|m| {
            m.deps
                .iter()
                .filter(|d| *d == "booking" || *d == "booking-product")
                .map(move |d| format!("{} -> {d}", m.name))
        })
        .collect();
    assert!(
        offenders.is_empty(),
        "crates outside the booking product that depend on it: {offenders:?}"
    );
    let platform = all
        .iter()
        .filter(|m| m.manifest.contains("/shared/"))
        .count();
    assert!(
        platform >= 15,
        "the platform's crates are found: {platform}"
    );
}

/// What a product outside this repository may name of gatehouse (ADR 49): the author crate,
/// the entry-point library (which re-exports the rest of the product surface), and at the
/// edge the Worker library.
const A_PRODUCTS_GATEHOUSE: [&str; 3] = ["gatehouse-tool", "gatehouse-server", "gatehouse-edge"];

#[test]
fn a_product_in_examples_names_only_the_author_crate_and_the_entry_points() {
    let all = members();
    let ours: BTreeSet<&str> = all.iter().map(|m| m.name.as_str()).collect();
    let examples: Vec<&Member> = all
        .iter()
        .filter(|m| m.manifest.contains("/examples/"))
        .collect();
    assert!(examples.len() >= 2, "the helpdesk and its Worker are found");
    let its_own: BTreeSet<&str> = examples.iter().map(|m| m.name.as_str()).collect();
    let offenders: Vec<String> = examples
        .iter()
        .flat_map(|m| {
            m.deps
                .iter()
                .filter(|d| ours.contains(d.as_str()) && !its_own.contains(d.as_str()))
                .filter(|d| !A_PRODUCTS_GATEHOUSE.contains(&d.as_str()))
                .map(move |d| format!("{} -> {d}", m.name))
        })
        .collect();
    assert!(
        offenders.is_empty(),
        "an example product depends on gatehouse crates beyond {A_PRODUCTS_GATEHOUSE:?}: {offenders:?}"
    );
}

#[test]
fn the_scaffolds_product_names_only_the_author_crate_and_the_entry_points() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let template = root.join("shared/gatehouse-server/src/cli/scaffold/Cargo.toml.tmpl");
    let text = std::fs::read_to_string(&template).expect("the scaffold's Cargo.toml template");
    let named: Vec<&str> = text
        .lines()
        .filter(|line| line.contains("{{gatehouse}}/"))
        .filter_map(|line| line.split_once(" = ").map(|(name, _)| name.trim()))
        .collect();
    assert!(named.contains(&"gatehouse-tool"), "{named:?}");
    let beyond: Vec<&&str> = named
        .iter()
        .filter(|name| !A_PRODUCTS_GATEHOUSE.contains(name))
        .collect();
    assert!(
        beyond.is_empty(),
        "the scaffold's product names gatehouse crates beyond {A_PRODUCTS_GATEHOUSE:?}: {beyond:?}"
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
        } else if m.manifest.contains("/products/") {
            "products"
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
        if folder == "products" {
            // products/<product>/<crate>/: a product's own libraries, found by name too.
            assert!(
                m.is_lib && m.manifest.ends_with(&format!("/{}/Cargo.toml", m.name)),
                "{} under products/ must be a library in a folder of its name",
                m.manifest
            );
        }
        if folder == "functions" {
            assert!(
                m.is_bin_only || m.is_cdylib_only,
                "{} under functions/ must be a deployable: a binary, or the cdylib an edge runtime loads",
                m.name
            );
        }
    }
    assert!(
        by_folder.get("shared").is_some_and(|v| v.len() >= 3),
        "{by_folder:?}"
    );
}

/// Files that implement MCP tools (one per tool or a few per file).
fn tool_sources() -> Vec<(std::path::PathBuf, String)> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut out = Vec::new();
    // The platform's tools and every product's: the booking product's, the examples'.
    let mut stack = vec![
        root.join("shared"),
        root.join("products"),
        root.join("examples"),
    ];
    while let Some(dir) = stack.pop() {
        if dir.ends_with("target") || dir.ends_with("build") || dir.ends_with("node_modules") {
            continue;
        }
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                if text.contains("impl Tool for") || text.contains("impl mcp_pipeline::Tool for") {
                    out.push((path, text));
                }
            }
        }
    }
    out
}

#[test]
fn tool_code_has_no_ambient_user_or_policy_helpers() {
    // Tools read the caller from their context and hand it to services; they never look up a
    // current user, ask the member directory, or run a policy check of their own.
    let banned = [
        "current_user",
        "Directory",
        "StoreDirectory",
        ".member(",
        "is_allowed(",
        "authorize(",
    ];
    let sources = tool_sources();
    for product_tool in ["create_booking.rs", "tools.rs"] {
        assert!(
            sources.iter().any(|(p, _)| p.ends_with(product_tool)),
            "the products' tools are read: {product_tool}"
        );
    }
    let mut offenders = Vec::new();
    for (path, text) in &sources {
        for word in banned {
            if text.contains(word) {
                offenders.push(format!("{} uses {word}", path.display()));
            }
        }
    }
    assert!(offenders.is_empty(), "{offenders:?}");
}

#[test]
fn product_tools_never_reach_the_store() {
    // The booking tools are adapters on the booking services; persistence is the services'
    // job, so no tool's file (nor the adapters and presenters they share) names the store. The
    // product's other parts (its records' pages, its API, its demo) commit what the services
    // plan, as the pipeline does for the tools.
    let glue = ["product.rs", "records.rs", "demo.rs"];
    let mut offenders = Vec::new();
    let src = src_of("booking-product");
    for entry in std::fs::read_dir(&src).unwrap().flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if path.is_dir() || glue.contains(&name.as_str()) {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for word in [
            "store::",
            "dyn Store",
            "transact_write",
            ".batch_get(",
            ".commit(",
        ] {
            if text.contains(word) {
                offenders.push(format!("{} uses {word}", path.display()));
            }
        }
    }
    assert!(
        offenders.is_empty() && src.join("create_booking.rs").exists(),
        "{offenders:?}"
    );
}

#[test]
fn the_product_knows_nothing_of_mcp_http_or_aws() {
    let booking = members()
        .into_iter()
        .find(|m| m.name == "booking")
        .expect("the booking crate");
    let offenders: Vec<&String> = booking
        .deps
        .iter()
        .filter(|d| {
            d.starts_with("mcp-")
                || d.starts_with("aws-")
                || d.starts_with("lambda")
                || *d == "http"
                || *d == "hyper"
                || *d == "identity"
        })
        .collect();
    assert!(offenders.is_empty(), "booking depends on {offenders:?}");
}

fn member(name: &str) -> Member {
    members()
        .into_iter()
        .find(|m| m.name == name)
        .unwrap_or_else(|| panic!("the {name} crate"))
}

#[test]
fn identity_does_not_depend_on_the_http_transport() {
    // The pipeline defines who is calling (`Authenticator`); identity implements it for every
    // transport without knowing any.
    let identity = member("identity");
    assert!(
        !identity.deps.contains("mcp-http") && !identity.deps.contains("http"),
        "identity depends on {:?}",
        identity.deps
    );
}

/// Every `.rs` file under `dir`, with its text.
fn sources(dir: &std::path::Path) -> Vec<(std::path::PathBuf, String)> {
    texts(dir, "rs")
}

/// The `src` folder of the workspace's crate `name`, wherever it lives.
fn src_of(name: &str) -> std::path::PathBuf {
    std::path::Path::new(&member(name).manifest).with_file_name("src")
}

#[test]
fn the_product_pages_do_not_use_the_mcp_server() {
    // Approvals reach the pipeline through the `Approvals` port; the pipeline's vocabulary
    // (`Caller`, `Toolset`) may stay.
    let mut offenders = Vec::new();
    for (path, text) in sources(&src_of("web")) {
        for (i, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or_default();
            let names_server = code.contains("mcp_pipeline::Server")
                || code.contains("Arc<Server>")
                || (code.contains("use mcp_pipeline")
                    && code
                        .split(|c: char| !c.is_alphanumeric() && c != '_')
                        .any(|w| w == "Server"));
            if names_server {
                offenders.push(format!("{}:{}", path.display(), i + 1));
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "web uses the MCP Server: {offenders:?}"
    );
}

/// Functions of `text` longer than `max` lines: `(name, first line, lines)`. Counts braces
/// outside strings and line comments, as a reader sees the function.
fn long_functions(text: &str, max: usize) -> Vec<(String, usize, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let code = |line: &str| -> String {
        let mut out = String::new();
        let mut in_string = false;
        let mut chars = line.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '\\' if in_string => {
                    chars.next();
                }
                '"' => in_string = !in_string,
                '/' if !in_string && chars.peek() == Some(&'/') => break,
                '\'' if !in_string && chars.clone().nth(1) == Some('\'') => {
                    chars.next();
                    chars.next();
                }
                _ if !in_string => out.push(c),
                _ => {}
            }
        }
        out
    };
    let mut found = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let trimmed = lines[i].trim_start();
        let head = trimmed
            .trim_start_matches("pub(crate) ")
            .trim_start_matches("pub ")
            .trim_start_matches("async ");
        let Some(rest) = head.strip_prefix("fn ") else {
            i += 1;
            continue;
        };
        let name: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let (mut depth, mut started, mut j) = (0i64, false, i);
        while j < lines.len() {
            let c = code(lines[j]);
            depth += c.matches('{').count() as i64 - c.matches('}').count() as i64;
            started |= c.contains('{');
            if (started && depth <= 0) || (!started && c.trim_end().ends_with(';')) {
                break;
            }
            j += 1;
        }
        if started && j + 1 - i > max {
            found.push((name, i + 1, j + 1 - i));
        }
        i = if started { j + 1 } else { i + 1 };
    }
    found
}

/// `unsafe` is denied in every crate; the one place allowed to use it is the opening of the
/// memory-mapped gate file (ADR 27), which LMDB's API marks unsafe.
#[test]
fn unsafe_code_only_where_allowed() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    assert!(
        manifest.contains("unsafe_code = \"deny\""),
        "the workspace denies unsafe code"
    );
    // Spelled in two halves so that this file does not match itself.
    let needle = ["#[allow(", "unsafe_code)]"].concat();
    let mut allowed = Vec::new();
    for top in ["shared", "functions", "tests", "evals"] {
        for (path, text) in sources(&root.join(top)) {
            let count = text.matches(&needle).count();
            if count > 0 {
                let name = path.strip_prefix(&root).unwrap().display().to_string();
                allowed.push((name, count));
            }
        }
    }
    assert_eq!(
        allowed,
        vec![
            ("shared/store-sqlite/src/gate_file.rs".to_owned(), 1),
            ("functions/gatehouse/src/allocator.rs".to_owned(), 1)
        ],
        "unsafe code allowed only where ADR 27 and ADR 33 say"
    );
}

#[test]
fn no_function_in_a_library_crate_is_longer_than_a_screen() {
    let mut offenders = Vec::new();
    // Every crate's code: the platform's, the products', the examples' and the deployables'.
    // The test tools (`tests/loadgen`, `evals`) are not held to it yet: their runners are
    // longer (issue 46 lists them).
    let shipped = |m: &Member| !m.manifest.contains("/tests/") && !m.manifest.contains("/evals/");
    let files = members().into_iter().filter(shipped).flat_map(|m| {
        let src = std::path::Path::new(&m.manifest).with_file_name("src");
        if src.is_dir() {
            sources(&src)
        } else {
            Vec::new()
        }
    });
    for (path, text) in files {
        for (name, line, len) in long_functions(&text, 80) {
            offenders.push(format!("{}:{line} {name} ({len} lines)", path.display()));
        }
    }
    assert!(offenders.is_empty(), "over 80 lines: {offenders:?}");
}

/// Lines of Rust in `dir` outside tests (`tests.rs`, and what follows a file's
/// `#[cfg(test)]`).
fn code_lines(dir: &std::path::Path) -> usize {
    sources(dir)
        .iter()
        .filter(|(path, _)| !path.ends_with("tests.rs"))
        .map(|(_, text)| {
            text.lines()
                .take_while(|line| !line.starts_with("#[cfg(test)]"))
                .count()
        })
        .sum()
}

/// The words of an identifier: `tax_rate` and `TaxRate` are both `tax`, `rate`.
fn identifier_words(name: &str) -> Vec<String> {
    let mut words = Vec::new();
    for part in name.split('_').filter(|p| !p.is_empty()) {
        let mut word = String::new();
        for c in part.chars() {
            if c.is_uppercase() && !word.is_empty() {
                words.push(std::mem::take(&mut word));
            }
            word.push(c.to_ascii_lowercase());
        }
        words.push(word);
    }
    words
}

/// The name a `pub` line declares: an item after its keyword, or a field before its colon.
fn public_name(line: &str) -> Option<&str> {
    let rest = line.trim_start().strip_prefix("pub ")?;
    let keywords = [
        "async fn ",
        "const fn ",
        "fn ",
        "struct ",
        "enum ",
        "const ",
        "static ",
        "type ",
        "trait ",
        "mod ",
    ];
    let rest = keywords
        .iter()
        .find_map(|k| rest.strip_prefix(k))
        .unwrap_or(rest);
    let end = rest.find(|c: char| !(c.is_alphanumeric() || c == '_'))?;
    let name = &rest[..end];
    (!name.is_empty()).then_some(name)
}

/// No platform crate names a booking concept in a public item (ADR 49): the platform serves
/// any product, so none of its types, functions or fields speaks of bookings, quotes,
/// technicians, currencies or tax rates.
#[test]
fn no_platform_crate_names_a_booking_concept_in_a_public_item() {
    let concept = |words: &[String]| {
        words.iter().any(|w| {
            [
                "booking",
                "bookings",
                "quote",
                "quotes",
                "technician",
                "technicians",
                "currency",
            ]
            .contains(&w.as_str())
        }) || words.windows(2).any(|w| w[0] == "tax" && w[1] == "rate")
    };
    assert!(concept(&identifier_words("TaxRate")) && concept(&identifier_words("send_quote")));
    assert!(!concept(&identifier_words("concurrency")));
    let mut offenders = Vec::new();
    for m in members().iter().filter(|m| m.manifest.contains("/shared/")) {
        let src = std::path::Path::new(&m.manifest).with_file_name("src");
        for (path, text) in sources(&src) {
            let code = text.split("\n#[cfg(test)]").next().unwrap_or_default();
            for (i, line) in code.lines().enumerate() {
                if let Some(name) = public_name(line)
                    && concept(&identifier_words(name))
                {
                    offenders.push(format!("{}:{} {name}", path.display(), i + 1));
                }
            }
        }
    }
    assert!(offenders.is_empty(), "{offenders:?}");
}

#[test]
fn library_crates_stay_small_and_function_crates_thin() {
    let mut offenders = Vec::new();
    for m in members() {
        let dir = std::path::Path::new(&m.manifest)
            .parent()
            .unwrap()
            .join("src");
        if !dir.exists() {
            continue; // the test crates keep their code elsewhere
        }
        let lines = code_lines(&dir);
        let is_function = m.manifest.contains("/functions/");
        if is_function && lines > 200 {
            offenders.push(format!(
                "{}: {lines} lines (a function crate is a thin main)",
                m.name
            ));
        } else if m.is_lib && lines > 6_000 {
            offenders.push(format!(
                "{}: {lines} lines (split it along its seams)",
                m.name
            ));
        }
    }
    assert!(offenders.is_empty(), "{offenders:?}");
}

#[test]
fn the_length_check_finds_a_long_function() {
    let body = "    let x = 1;\n".repeat(81);
    let text = format!("fn short() {{\n}}\n\npub(crate) async fn long() {{\n{body}}}\n");
    assert_eq!(
        long_functions(&text, 80),
        [("long".to_owned(), 4, 83)],
        "a function of 83 lines is found, a short one is not"
    );
}

/// The parameter lists of the functions in `text`, each with the line its `fn` is on.
fn parameter_lists(text: &str) -> Vec<(usize, String)> {
    let bytes = text.as_bytes();
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(at) = text[from..].find("fn ") {
        let start = from + at;
        from = start + 3;
        let word_before =
            start > 0 && (bytes[start - 1].is_ascii_alphanumeric() || bytes[start - 1] == b'_');
        if word_before {
            continue;
        }
        // The name, its generics (angle brackets balanced, `->` inside ignored), then `(`.
        let mut i = from;
        while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
            i += 1;
        }
        if i == from {
            continue;
        }
        if bytes.get(i) == Some(&b'<') {
            let mut depth = 0;
            while i < bytes.len() {
                match bytes[i] {
                    b'<' => depth += 1,
                    b'>' if bytes[i - 1] != b'-' => depth -= 1,
                    _ => {}
                }
                i += 1;
                if depth == 0 {
                    break;
                }
            }
        }
        if bytes.get(i) != Some(&b'(') {
            continue;
        }
        let (mut depth, mut j) = (0, i);
        while j < bytes.len() {
            match bytes[j] {
                b'(' | b'[' | b'{' => depth += 1,
                b')' | b']' | b'}' => depth -= 1,
                _ => {}
            }
            j += 1;
            if depth == 0 {
                break;
            }
        }
        let line = text[..start].matches('\n').count() + 1;
        found.push((line, text[i + 1..j.saturating_sub(1)].to_owned()));
    }
    found
}

/// The parameters of `list` whose pattern or type is an anonymous tuple (a trait object's
/// parentheses, `&(dyn ...)`, and the unit type are not).
fn tuple_parameters(list: &str) -> Vec<String> {
    let mut parameters = Vec::new();
    let (mut depth, mut current) = (0i32, String::new());
    let chars: Vec<char> = list.chars().collect();
    for (k, &c) in chars.iter().enumerate() {
        match c {
            '(' | '[' | '{' | '<' => depth += 1,
            ')' | ']' | '}' => depth -= 1,
            '>' if k > 0 && chars[k - 1] != '-' && chars[k - 1] != '=' => depth -= 1,
            ',' if depth == 0 => {
                parameters.push(std::mem::take(&mut current));
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    parameters.push(current);
    parameters
        .into_iter()
        .map(|p| {
            p.lines()
                .map(|l| l.split("//").next().unwrap_or_default().trim())
                .filter(|l| !l.is_empty())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .filter(|p| {
            let Some((pattern, ty)) = p.split_once(':') else {
                return false;
            };
            let ty = ty.trim().trim_start_matches('&');
            let ty = match ty.strip_prefix('\'') {
                Some(lifetime) => lifetime.split_once(' ').map_or("", |(_, rest)| rest),
                None => ty,
            };
            let ty = ty.trim_start_matches("mut ").trim();
            let pattern = pattern.trim().trim_start_matches("mut ");
            pattern.starts_with('(')
                || (ty.starts_with('(') && !ty.starts_with("(dyn ") && ty != "()")
        })
        .collect()
}

/// Parameters say what they are: none is an anonymous tuple bundled to stay under clippy's
/// argument limit (`(id, version): (&str, &str)`); a function takes its values one by one or
/// a named type. Every crate's code, tests and tools included.
#[test]
fn no_function_takes_an_anonymous_tuple() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut offenders = Vec::new();
    let tops = [
        "shared",
        "products",
        "examples",
        "functions",
        "tests",
        "evals",
    ];
    let code = tops.iter().flat_map(|top| sources(&root.join(top)));
    // The scaffold's templates too: the product `gatehouse new` writes is read as an example.
    let templates = texts(
        &root.join("shared/gatehouse-server/src/cli/scaffold"),
        "tmpl",
    );
    for (path, text) in code.chain(templates) {
        for (line, list) in parameter_lists(&text) {
            for parameter in tuple_parameters(&list) {
                let name = path.strip_prefix(&root).unwrap_or(&path).display();
                offenders.push(format!("{name}:{line} {parameter}"));
            }
        }
    }
    assert!(offenders.is_empty(), "tuple parameters: {offenders:#?}");
}

/// The parameters of `list` that name a tenant, member or connection but take it as text.
fn untyped_ids(list: &str) -> Vec<String> {
    const IDS: &[&str] = &[
        "tenant",
        "tenant_id",
        "member",
        "member_id",
        "connection",
        "connection_id",
        "creator",
    ];
    const TEXT: &[&str] = &[
        "&str",
        "String",
        "&String",
        "Option<&str>",
        "Option<String>",
    ];
    let mut found = Vec::new();
    let (mut depth, mut current) = (0i32, String::new());
    for c in list.chars().chain([',']) {
        match c {
            '(' | '[' | '{' | '<' => depth += 1,
            ')' | ']' | '}' | '>' => depth -= 1,
            ',' if depth == 0 => {
                let parameter = std::mem::take(&mut current);
                let parameter = parameter.split_whitespace().collect::<Vec<_>>().join(" ");
                if let Some((name, ty)) = parameter.split_once(':')
                    && IDS.contains(&name.trim())
                    && TEXT.contains(&ty.trim())
                {
                    found.push(parameter.clone());
                }
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    found
}

/// Ids are types at every public function of the crates that hold them (ADR 50): a tenant,
/// member or connection is a `TenantId`, `MemberId` or `ConnectionId`, never text, so that a
/// swapped argument does not compile. Tests inside a file (after `#[cfg(test)]`) may use text.
#[test]
fn public_functions_take_ids_as_types() {
    let mut offenders = Vec::new();
    for dir in [
        "store",
        "gatehouse-tool",
        "mcp-pipeline",
        "identity",
        "accounts",
        "outbox-format",
        "web",
        "app",
        "booking",
        "booking-product",
        "helpdesk",
    ] {
        for (path, text) in sources(&src_of(dir)) {
            let shipped = text.split("#[cfg(test)]").next().unwrap_or_default();
            let lines: Vec<&str> = shipped.lines().collect();
            for (line, list) in parameter_lists(shipped) {
                let public = lines
                    .get(line - 1)
                    .is_some_and(|l| l.trim_start().starts_with("pub"));
                for parameter in untyped_ids(&list).into_iter().filter(|_| public) {
                    offenders.push(format!("{}:{line} {parameter}", path.display()));
                }
            }
        }
    }
    assert!(offenders.is_empty(), "ids taken as text: {offenders:#?}");
}

#[test]
fn the_id_check_finds_an_id_taken_as_text() {
    assert_eq!(
        untyped_ids("tenant: &TenantId, member: &str, id: &str, connection: Option<String>"),
        ["member: &str", "connection: Option<String>"],
        "a member and a connection as text are found; a typed tenant and a record id are not"
    );
}

#[test]
fn the_tuple_check_finds_a_tuple_parameter() {
    // `{f}` for `fn`, so that this file's own check does not find the sample.
    let f = "fn";
    let text = format!(
        "{f} apart(id: &str, version: &str) {{}}\n\
         pub(crate) async {f} bundled<T: Into<String>>(\n    world: &World,\n    (id, version): (&str, &str),\n) -> T {{}}\n\
         {f} typed(pair: &'a (u16, String), error: &(dyn Error + 'static), unit: ()) {{}}\n"
    );
    let found: Vec<(usize, Vec<String>)> = parameter_lists(&text)
        .into_iter()
        .map(|(line, list)| (line, tuple_parameters(&list)))
        .filter(|(_, tuples)| !tuples.is_empty())
        .collect();
    assert_eq!(
        found,
        [
            (2, vec!["(id, version): (&str, &str)".to_owned()]),
            (6, vec!["pair: &'a (u16, String)".to_owned()]),
        ],
        "a tuple's pattern and a tuple's type are found; separate values, a trait object and the unit type are not"
    );
}

#[test]
fn the_crates_a_call_passes_through_read_no_system_clock_or_generator() {
    // The time and randomness come from the injected `Clock` and `Randomness` (the `outside`
    // crate, which is their one system source; tests set them, an edge runtime passes its
    // own). Every crate a request passes through, MCP or the pages and API; the CLI may read
    // the system clock.
    let mut offenders = Vec::new();
    for dir in [
        "gatehouse-tool",
        "mcp-protocol",
        "mcp-pipeline",
        "mcp-http",
        "identity",
        "accounts",
        "web",
        "app",
        "outbox-format",
        "store",
        "store-sqlite",
        "store-dynamodb",
        "store-http",
        "gatehouse-edge",
        "booking",
        "booking-product",
        "helpdesk",
    ] {
        for (path, text) in sources(&src_of(dir)) {
            for (i, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or_default();
                let clock = code.contains("SystemTime::now")
                    || code.contains("Utc::now(")
                    || code.contains("Instant::now(");
                // Timing a benchmark's round trips, and waiting for a table being created
                // (CLI and tests): never on a call's path.
                let not_a_call = path.ends_with("store/src/counting.rs")
                    || (path.ends_with("store-dynamodb/src/lib.rs") && code.contains("started"));
                if (clock && !not_a_call) || code.contains("rand::") {
                    offenders.push(format!("{}:{}", path.display(), i + 1));
                }
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "the system clock is read at {offenders:?}"
    );
}

#[test]
fn the_pages_and_the_transport_use_the_servers_clock_and_randomness() {
    // Crates with no default of their own to give: they take the server's clock and
    // randomness (the `Web` and `Settings` fields, identity's and accounts' services'
    // `ClockAndRandomness`), never the system's directly. Their unit tests may.
    let mut offenders = Vec::new();
    for dir in [
        "mcp-protocol",
        "mcp-http",
        "identity",
        "accounts",
        "web",
        "store-http",
        "outbox-format",
        "booking-product",
        "helpdesk",
    ] {
        for (path, text) in sources(&src_of(dir)) {
            let shipped = text.split("#[cfg(test)]").next().unwrap_or_default();
            for (i, line) in shipped.lines().enumerate() {
                let code = line.split("//").next().unwrap_or_default();
                if code.contains("SystemClock") || code.contains("SystemRandomness") {
                    offenders.push(format!("{}:{}", path.display(), i + 1));
                }
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "the system's clock or randomness is used directly at {offenders:?}"
    );
}

/// The top-level modules a file refers to through `crate::<module>` paths (in `use` lines, with
/// braces, and inline).
fn modules_referred(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    // Comments name modules without depending on them.
    let code: String = text
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
    let text = code.as_str();
    for (i, _) in text.match_indices("crate::") {
        let rest = &text[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            // `use crate::{a, b::c, D}`: every first segment in the group.
            let inner = &group[..group.find('}').unwrap_or(group.len())];
            for part in inner.split(',') {
                let first: String = part
                    .trim()
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                if part.trim()[first.len()..].starts_with("::") {
                    out.insert(first);
                }
            }
            continue;
        }
        let first: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if rest[first.len()..].starts_with("::") {
            out.insert(first);
        }
    }
    out
}

/// A cycle among a crate's top-level modules, if there is one.
fn module_cycle(edges: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(start) = path.iter().position(|p| p == node) {
            return Some(path[start..].to_vec());
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_owned());
        for next in edges.get(node).into_iter().flatten() {
            if let Some(cycle) = visit(next, edges, path, done) {
                return Some(cycle);
            }
        }
        path.pop();
        done.insert(node.to_owned());
        None
    }
    let mut done = BTreeSet::new();
    edges
        .keys()
        .find_map(|n| visit(n, edges, &mut Vec::new(), &mut done))
}

/// No import circles: within every library crate, no top-level module reaches itself through
/// the modules it refers to (crates themselves cannot form one: cargo refuses it).
#[test]
fn no_crate_has_an_import_circle() {
    let mut checked = 0;
    // Every crate of the workspace: the platform's, the products', the examples' and the
    // deployables under functions/.
    for member in members() {
        let crate_dir = std::path::PathBuf::from(&member.manifest);
        let crate_dir = crate_dir.parent().expect("the crate's folder");
        let src = crate_dir.join("src");
        if !src.is_dir() {
            continue;
        }
        let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (path, text) in sources(&src) {
            let relative = path.strip_prefix(&src).expect("under src");
            let module = relative
                .components()
                .next()
                .and_then(|c| c.as_os_str().to_str())
                .unwrap_or_default()
                .trim_end_matches(".rs")
                .to_owned();
            if module == "lib" || module == "main" || module == "tests" {
                continue;
            }
            let referred = modules_referred(&text);
            edges
                .entry(module.clone())
                .or_default()
                .extend(referred.into_iter().filter(|m| *m != module));
        }
        checked += 1;
        assert_eq!(
            module_cycle(&edges),
            None,
            "{}: its modules refer to each other in a circle",
            crate_dir.display()
        );
    }
    assert!(checked >= 25, "{checked}");
    let mut circle = BTreeMap::new();
    circle.insert("a".to_owned(), BTreeSet::from(["b".to_owned()]));
    circle.insert("b".to_owned(), BTreeSet::from(["a".to_owned()]));
    assert!(module_cycle(&circle).is_some(), "the check finds a circle");
}

/// The crates the edge function (Cloudflare Workers) is built from: each must build for
/// `wasm32-unknown-unknown` (ADR 20).
const EDGE_CRATES: &[&str] = &[
    "mcp-protocol",
    "outside",
    "store",
    "gatehouse-tool",
    "mcp-pipeline",
    "identity",
    "gatehouse-edge",
    "booking",
    "booking-product",
    "outbox-format",
    "outbox",
];

const EDGE_TARGET: &str = "wasm32-unknown-unknown";

/// Whether rustup has the edge target's standard library installed.
fn edge_target_installed() -> bool {
    Command::new("rustup")
        .args(["target", "list", "--installed"])
        .output()
        .is_ok_and(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .any(|l| l.trim() == EDGE_TARGET)
        })
}

#[test]
fn the_shared_crates_build_for_the_edge() {
    if !edge_target_installed() {
        assert!(
            std::env::var_os("CI").is_none(),
            "the {EDGE_TARGET} target is not installed in CI; tests/run installs it with rustup"
        );
        eprintln!(
            "edge build check: SKIPPED ({EDGE_TARGET} not installed: rustup target add {EDGE_TARGET})"
        );
        return;
    }
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut command = Command::new(cargo);
    command
        .args(["check", "--locked", "--quiet", "--target", EDGE_TARGET])
        // Its own target directory: this test runs while `cargo test` holds the main one's
        // artifacts, and the edge build's flags (.cargo/config.toml) would rebuild them.
        .arg("--target-dir")
        .arg(root.join("target/edge-check"))
        .current_dir(&root);
    for name in EDGE_CRATES {
        command.args(["-p", name]);
    }
    let out = command.output().expect("run cargo check");
    assert!(
        out.status.success(),
        "the edge crates no longer build for {EDGE_TARGET}:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_edge_crates_depend_on_no_native_only_crate() {
    // What cannot run in a Worker: threads and sockets (tokio's runtime), C libraries (SQLite,
    // aws-lc), the AWS SDK, files.
    let native = [
        "tokio",
        "rusqlite",
        "aws-sdk-dynamodb",
        "store-sqlite",
        "store-dynamodb",
        "hyper",
        "http-client",
        "mimalloc",
    ];
    for m in members()
        .iter()
        .filter(|m| EDGE_CRATES.contains(&m.name.as_str()))
    {
        // An optional one (the outbox's native webhook) is behind a feature the edge does not
        // turn on; the build check above would catch one that it did.
        for dep in m.deps.difference(&m.optional_deps) {
            assert!(
                !native.contains(&dep.as_str()),
                "{} depends on {dep}, which does not run at the edge",
                m.name
            );
        }
    }
}

/// Every allow, deny and replay decision reads the table strongly consistently: the DynamoDB
/// store issues each read (`get_item`, `batch_get_item`'s keys, `query`) with
/// `consistent_read(true)`, never scans, and never reads an index (the table has none:
/// `infra::the_table_agrees_with_the_store_schema`). Index reads and streams are only ever
/// eventually consistent.
#[test]
fn every_dynamodb_read_is_strongly_consistent() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let source =
        std::fs::read_to_string(root.join("shared/store-dynamodb/src/lib.rs")).expect("the store");
    let code: String = source
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
    let reads = [".get_item()", ".query()", "KeysAndAttributes::builder()"]
        .iter()
        .map(|call| code.matches(call).count())
        .sum::<usize>();
    assert_eq!(reads, 3, "one get, one batch get, one query");
    assert_eq!(
        code.matches(".consistent_read(true)").count(),
        reads,
        "every read is strongly consistent"
    );
    for forbidden in [".scan()", ".index_name(", "consistent_read(false)"] {
        assert!(
            !code.contains(forbidden),
            "{forbidden} in the DynamoDB store"
        );
    }
}

/// The ids of the reliability catalogue's cases (section 3), by family.
fn catalogue_ids() -> BTreeSet<String> {
    [
        ("R", 21),
        ("C", 11),
        ("D", 7),
        ("L", 5),
        ("Q", 5),
        ("K", 4),
        ("A", 5),
        ("J", 9),
        ("O", 5),
        ("U", 6),
        ("S", 5),
        ("I", 8),
    ]
    .iter()
    .flat_map(|(family, count)| (1..=*count).map(move |n| format!("{family}{n:02}")))
    .collect()
}

/// `x::{a,b}` as `x::a` and `x::b`.
fn expand(name: &str) -> Vec<String> {
    let Some((head, rest)) = name.split_once('{') else {
        return vec![name.to_owned()];
    };
    let (choices, tail) = rest.split_once('}').expect("a closed brace");
    choices
        .split(',')
        .map(|c| format!("{head}{c}{tail}"))
        .collect()
}

/// The tests of this binary, by the names `cargo test` prints.
fn integration_tests() -> BTreeSet<String> {
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--list", "--format", "terse"])
        .output()
        .expect("list this binary's tests");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.strip_suffix(": test"))
        .map(str::to_owned)
        .collect()
}

/// Whether a unit test `crate::path::name` exists: the crate is a member and a function of that
/// name is in its sources.
fn unit_test_exists(name: &str, members: &[Member]) -> bool {
    let (krate, _) = name.split_once("::").unwrap_or((name, ""));
    let function = name.rsplit("::").next().unwrap_or_default();
    let Some(member) = members.iter().find(|m| m.name.replace('-', "_") == krate) else {
        return false;
    };
    let dir = std::path::Path::new(&member.manifest)
        .parent()
        .unwrap()
        .join("src");
    let needle = format!("fn {function}(");
    rust_files(&dir)
        .iter()
        .any(|f| std::fs::read_to_string(f).is_ok_and(|text| text.contains(&needle)))
}

fn rust_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    files
}

/// `tests/CATALOGUE.md` names, for every case of the reliability catalogue, tests that exist
/// (or the reason the case is not proven), once per case.
#[test]
fn the_catalogue_names_tests_that_exist() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join("CATALOGUE.md")).expect("tests/CATALOGUE.md");
    let (here, members) = (integration_tests(), members());
    let mut seen = BTreeSet::new();
    let mut proven = 0;
    for row in text
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| ID"))
    {
        let cells: Vec<&str> = row.trim_matches('|').split(" | ").map(str::trim).collect();
        let [id, status, tests, note] = cells[..] else {
            panic!("a row of four cells: {row}");
        };
        assert!(seen.insert(id.to_owned()), "{id} appears twice");
        let names: Vec<String> = tests
            .split('`')
            .skip(1)
            .step_by(2)
            .flat_map(expand)
            .collect();
        for name in &names {
            assert!(
                here.contains(name) || unit_test_exists(name, &members),
                "{id} names {name}, which does not exist"
            );
        }
        match status {
            "proven" => {
                assert!(!names.is_empty(), "{id} is proven by no test");
                proven += 1;
            }
            "partial" | "missing" | "n/a" => {
                assert!(note.len() > 30, "{id} is {status} without a reason")
            }
            other => panic!("{id}: unknown status {other}"),
        }
    }
    assert_eq!(seen, catalogue_ids(), "every case once, and no other");
    let counted = format!("Counts: {proven} proven");
    assert!(text.contains(&counted), "the counts line says: {counted}");
}

/// The option number `gatehouse` sets as it loads (ADR 33) is `mi_option_arena_eager_commit` in
/// the mimalloc that `libmimalloc-sys`, as locked, compiles: its bindings name no constant for
/// it, so an upgrade that renumbered the options would silently set another one.
#[test]
fn the_allocator_option_set_at_load_is_arena_eager_commit() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        // Not `--offline`: the full graph names crates of other targets (the edge's wasm32),
        // which a machine that has only built this one has not downloaded.
        .args(["metadata", "--format-version", "1", "--locked"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run cargo metadata");
    assert!(
        out.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: Value = serde_json::from_slice(&out.stdout).expect("metadata json");
    let sys = meta["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .find(|p| p["name"] == "libmimalloc-sys")
        .expect("libmimalloc-sys is locked");
    let manifest = std::path::Path::new(sys["manifest_path"].as_str().expect("manifest path"));
    // mimalloc 3, the crate's default (its `v2` feature is not enabled).
    let header = manifest.with_file_name("c_src/mimalloc/v3/include/mimalloc.h");
    let header = std::fs::read_to_string(&header).expect("mimalloc.h beside the crate");
    let options = &header[header
        .find("typedef enum mi_option_e {")
        .expect("the options")..];
    let options = &options[..options.find('}').expect("the options' end")];
    let position = options
        .lines()
        .map(str::trim)
        .filter(|line| line.starts_with("mi_option_"))
        .position(|line| line.starts_with("mi_option_arena_eager_commit,"))
        .expect("arena_eager_commit among the options");
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let allocator = std::fs::read_to_string(root.join("functions/gatehouse/src/allocator.rs"))
        .expect("allocator.rs");
    let set = format!("ARENA_EAGER_COMMIT: std::ffi::c_int = {position};");
    assert!(
        allocator.contains(&set),
        "allocator.rs must set option {position}"
    );
}

/// Every file under `dir` whose name ends in `ext`, with its text.
fn texts(dir: &std::path::Path, ext: &str) -> Vec<(std::path::PathBuf, String)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == ext) {
                out.push((path.clone(), std::fs::read_to_string(&path).unwrap()));
            }
        }
    }
    out
}

/// The dates written in `text`, each as the last day it may stand for: ISO (`2055-06-07`, also
/// with `/`), in words (`7 June 2055`, `June 7, 2055`, `June 2055`: the month's last day), and
/// a year that starts a date with placeholders (`2055-03-{day:02}`: the year's last day).
fn dates_in(text: &str) -> Vec<chrono::NaiveDate> {
    const MONTHS: [&str; 12] = [
        "January",
        "February",
        "March",
        "April",
        "May",
        "June",
        "July",
        "August",
        "September",
        "October",
        "November",
        "December",
    ];
    let bytes = text.as_bytes();
    let digits = |at: usize, n: usize| {
        bytes
            .get(at..at + n)
            .filter(|d| d.iter().all(u8::is_ascii_digit))
            .and_then(|d| std::str::from_utf8(d).ok()?.parse::<u32>().ok())
    };
    let last_of_month = |year: i32, month: u32| {
        let next = if month == 12 {
            (year + 1, 1)
        } else {
            (year, month + 1)
        };
        chrono::NaiveDate::from_ymd_opt(next.0, next.1, 1).map(|d| d.pred_opt().unwrap())
    };
    let mut out = Vec::new();
    for at in 0..bytes.len() {
        let alone = (at == 0 || !bytes[at - 1].is_ascii_digit())
            && !bytes.get(at + 4).is_some_and(u8::is_ascii_digit);
        let Some(year) = digits(at, 4).filter(|y| alone && (2000..2100).contains(y)) else {
            continue;
        };
        let year = year as i32;
        let separator = bytes.get(at + 4).copied();
        let dated =
            matches!(separator, Some(b'-' | b'/')) && bytes.get(at + 7) == separator.as_ref();
        if dated && let (Some(m), Some(d)) = (digits(at + 5, 2), digits(at + 8, 2)) {
            out.extend(chrono::NaiveDate::from_ymd_opt(year, m, d));
            continue;
        }
        let before = &text[..at];
        let month_day = MONTHS.iter().enumerate().find_map(|(i, month)| {
            // `June 2055`, `7 June 2055`, `June 7, 2055`.
            let day_before = |rest: &str| {
                let day: String = rest
                    .chars()
                    .rev()
                    .skip(1)
                    .take_while(char::is_ascii_digit)
                    .collect();
                day.chars().rev().collect::<String>().parse::<u32>().ok()
            };
            if let Some(rest) = before.strip_suffix(&format!("{month} ")) {
                return Some((i as u32 + 1, day_before(rest)));
            }
            let rest = before.strip_suffix(", ")?;
            let day: String = rest
                .chars()
                .rev()
                .take_while(char::is_ascii_digit)
                .collect();
            let day: String = day.chars().rev().collect();
            rest.strip_suffix(&day)?
                .strip_suffix(&format!("{month} "))
                .map(|_| (i as u32 + 1, day.parse().ok()))
        });
        let date = match month_day {
            Some((month, Some(day))) => chrono::NaiveDate::from_ymd_opt(year, month, day),
            Some((month, None)) => last_of_month(year, month),
            // A date with placeholders; a number alone (`2048`, `SC2034`) is no date.
            None if separator.is_some_and(|s| s == b'-' || s == b'/') => {
                chrono::NaiveDate::from_ymd_opt(year, 12, 31)
            }
            None => None,
        };
        out.extend(date);
    }
    out
}

/// No test or evaluation depends on the calendar standing still (ADR 17): a date it writes
/// down is either past, for what is about the past or only parsed, or after 2050, a lifetime
/// beyond this code. A date in between would turn into a past date one day and fail the run
/// with nothing changed; dates a test needs soon are computed (`support::dates`).
#[test]
fn no_test_or_evaluation_expires_with_the_calendar() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    use chrono::Datelike as _;
    let today = chrono::Utc::now().date_naive();
    let horizon = chrono::NaiveDate::from_ymd_opt(2050, 1, 1).unwrap();
    // Tests, benchmarks, the evaluations and what they run on, and the tools' descriptions (a
    // model copies their examples). Unit tests elsewhere pass their own fixed instants.
    let mut files = texts(&root.join("tests/it"), "rs");
    files.extend(texts(&root.join("tests/benches"), "rs"));
    files.extend(texts(&root.join("evals/src"), "rs"));
    files.extend(texts(&root.join("evals/scenarios"), "json"));
    files.extend(texts(&root.join("evals/recordings"), "json"));
    // The products' code (their tools' descriptions, their demos); unit tests there pass their
    // own fixed instants to pure functions.
    for name in ["booking-product", "booking", "helpdesk"] {
        files.extend(texts(&src_of(name), "rs").into_iter().map(|(path, text)| {
            let code = text
                .split("#[cfg(test)]")
                .next()
                .unwrap_or_default()
                .to_owned();
            (path, code)
        }));
    }
    let expiring: Vec<String> = files
        .iter()
        .flat_map(|(path, text)| {
            dates_in(text)
                .into_iter()
                .filter(|d| *d > today && *d < horizon)
                .map(move |d| format!("{}: {d}", path.display()))
        })
        .collect();
    assert!(expiring.is_empty(), "dates that will pass: {expiring:#?}");
    // The reader itself, on text made here so that this file holds no such date.
    let soon = today.year() + 1;
    let sample = format!(
        "on 7 June 2055 and {soon}-05-06, May {soon}, June 7, {soon}, {soon}/02/03, \
         {soon}-03-{{day:02}}, in {soon}, 1{soon}-01-01 {soon}0"
    );
    let ymd = |y, m, d| chrono::NaiveDate::from_ymd_opt(y, m, d).unwrap();
    assert_eq!(
        dates_in(&sample),
        [
            ymd(2055, 6, 7),
            ymd(soon, 5, 6),
            ymd(soon, 5, 31),
            ymd(soon, 6, 7),
            ymd(soon, 2, 3),
            ymd(soon, 12, 31),
        ]
    );
}
