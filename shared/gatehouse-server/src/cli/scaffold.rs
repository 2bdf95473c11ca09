//! `gatehouse new`: writes a product crate behind gatehouse with one tool of each effect class,
//! its tests, its binaries (the command line, the MCP and web Lambda functions, the outbox
//! dispatcher) and its deployment (gatehouse's `infra/` with this product as the template's
//! `Product`), which builds and passes its tests as written (`tests/run` checks).

use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};

/// The files a new product starts with: where each goes, and its text with placeholders.
const FILES: &[(&str, &str)] = &[
    ("Cargo.toml", include_str!("scaffold/Cargo.toml.tmpl")),
    ("src/main.rs", include_str!("scaffold/main.rs.tmpl")),
    ("src/lib.rs", include_str!("scaffold/lib.rs.tmpl")),
    ("src/notes.rs", include_str!("scaffold/notes.rs.tmpl")),
    ("src/tools.rs", include_str!("scaffold/tools.rs.tmpl")),
    ("tests/product.rs", include_str!("scaffold/tests.rs.tmpl")),
    (
        "tests/deployment.rs",
        include_str!("scaffold/deployment.rs.tmpl"),
    ),
    (
        "src/bin/{{name}}-mcp-lambda.rs",
        include_str!("scaffold/mcp_lambda.rs.tmpl"),
    ),
    (
        "src/bin/{{name}}-web-lambda.rs",
        include_str!("scaffold/web_lambda.rs.tmpl"),
    ),
    (
        "src/bin/outbox-dispatcher.rs",
        include_str!("scaffold/outbox_dispatcher.rs.tmpl"),
    ),
    ("README.md", include_str!("scaffold/README.md.tmpl")),
];

/// What of gatehouse's `infra/` a product's deployment copies as it is.
const INFRA_COPIED: &[&str] = &["bootstrap", "hooks/pre_traffic.py"];

/// A product's name: 2 to 40 lower-case letters, digits and hyphens, starting with a letter
/// (a package name, and a binary's).
fn checked_name(name: &str) -> anyhow::Result<&str> {
    let fits = (2..=40).contains(&name.len())
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && !name.ends_with('-')
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if !fits {
        bail!(
            "--name {name:?} is not a product name: use 2 to 40 lower-case letters, digits and hyphens, starting with a letter (e.g. acme-notes)"
        );
    }
    Ok(name)
}

/// `acme-notes` as a type name: `AcmeNotes`.
fn type_name(name: &str) -> String {
    name.split('-')
        .map(|part| {
            let mut chars = part.chars();
            chars.next().map_or_else(String::new, |first| {
                first.to_ascii_uppercase().to_string() + chars.as_str()
            })
        })
        .collect()
}

/// The gatehouse checkout the new crate depends on: `given`, or the one this program was built
/// from.
fn checkout(given: Option<&Path>) -> anyhow::Result<PathBuf> {
    let built_from = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let root = given.map_or(built_from, Path::to_path_buf);
    let root = root.canonicalize().with_context(|| {
        format!(
            "no gatehouse checkout at {}: pass --gatehouse PATH",
            root.display()
        )
    })?;
    if !root.join("shared/gatehouse-tool/Cargo.toml").is_file() {
        bail!(
            "{} is not a gatehouse checkout (no shared/gatehouse-tool): pass --gatehouse PATH",
            root.display()
        );
    }
    Ok(root)
}

/// Writes a new product named `name` into `dir` (which must not exist, or be empty).
pub(super) fn write(dir: &Path, name: &str, gatehouse: Option<&Path>) -> anyhow::Result<()> {
    let name = checked_name(name)?;
    let root = checkout(gatehouse)?;
    let occupied = dir.exists()
        && std::fs::read_dir(dir)
            .with_context(|| format!("{} is not a folder", dir.display()))?
            .next()
            .is_some();
    if occupied {
        bail!("{} is not empty: give a new folder", dir.display());
    }
    let fill = |text: &str| {
        text.replace("{{name}}", name)
            .replace("{{crate}}", &name.replace('-', "_"))
            .replace("{{Type}}", &type_name(name))
            .replace("{{gatehouse}}", &root.display().to_string())
    };
    for (path, text) in FILES {
        put(&dir.join(fill(path)), &fill(text))?;
    }
    write_infra(dir, name, &root)?;
    println!(
        "wrote {} ({}): `cargo test` in it runs its tests, `cargo run -- serve` serves it",
        dir.display(),
        type_name(name)
    );
    Ok(())
}

fn put(path: &Path, text: &str) -> anyhow::Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

/// The product's deployment: gatehouse's template with `name` as its only product, the
/// Makefile building this crate's binaries, and the files the template uses as they are.
fn write_infra(dir: &Path, name: &str, root: &Path) -> anyhow::Result<()> {
    let infra = root.join("infra");
    let read = |file: &str| {
        std::fs::read_to_string(infra.join(file))
            .with_context(|| format!("reading {}", infra.join(file).display()))
    };
    let mut template: serde_json::Value = serde_json::from_str(&read("template.json")?)?;
    let product = &mut template["Parameters"]["Product"];
    product["Default"] = name.into();
    product["AllowedValues"] = serde_json::json!([name]);
    template["Mappings"]["ProductBinaries"] = serde_json::json!({
        name: {"Mcp": format!("{name}-mcp-lambda"), "Web": format!("{name}-web-lambda")}
    });
    put(
        &dir.join("infra/template.json"),
        &(serde_json::to_string_pretty(&template)? + "\n"),
    )?;
    let makefile = read("Makefile")?
        .lines()
        .map(|line| match line.split_once(" ?= ") {
            Some(("MCP_BINARIES", _)) => format!("MCP_BINARIES ?= {name}-mcp-lambda"),
            Some(("WEB_BINARIES", _)) => format!("WEB_BINARIES ?= {name}-web-lambda"),
            _ => line.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("\n");
    put(&dir.join("infra/Makefile"), &(makefile + "\n"))?;
    for file in INFRA_COPIED {
        std::fs::create_dir_all(dir.join("infra").join(file).parent().unwrap_or(dir))?;
        std::fs::copy(infra.join(file), dir.join("infra").join(file))
            .with_context(|| format!("copying infra/{file}"))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_become_types_and_bad_names_are_refused() {
        assert_eq!(type_name("acme-notes"), "AcmeNotes");
        assert_eq!(type_name("desk2"), "Desk2");
        for bad in ["A", "acme_notes", "1acme", "acme-", "acme notes", ""] {
            assert!(checked_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn every_placeholder_is_one_the_scaffold_fills() {
        for (path, text) in FILES {
            let mut rest = *text;
            while let Some(start) = rest.find("{{") {
                let end = rest[start..]
                    .find("}}")
                    .map_or(rest.len(), |e| start + e + 2);
                let placeholder = &rest[start..end];
                assert!(
                    ["{{name}}", "{{crate}}", "{{Type}}", "{{gatehouse}}"].contains(&placeholder),
                    "{path}: {placeholder}"
                );
                rest = &rest[end..];
            }
        }
    }
}
