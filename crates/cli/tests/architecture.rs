//! The layering of docs/architecture.md, checked against the workspace's real dependency graph
//! (`cargo metadata --no-deps`): every dependency between culprit's crates must be an arrow the
//! document allows, or one of its known violations; and every known violation must still
//! exist, so that the list shrinks as the code is fixed. Both the allowed arrows and the known
//! violations are parsed from the document itself, so it and this test cannot drift apart.
//! The document's dev-only crates (the test kit) may be a dev-dependency of any crate and a
//! normal or build dependency of none.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A dependency of one workspace crate on another: (dependent, dependency).
type Arrow = (String, String);

/// What docs/architecture.md says.
#[derive(Debug, Default)]
struct Layering {
    /// For each crate, the crates it may depend on.
    allowed: BTreeMap<String, BTreeSet<String>>,
    /// Forbidden arrows that exist today and are to be removed.
    known_violations: BTreeSet<Arrow>,
    /// Crates any crate may depend on as a dev-dependency, and none otherwise.
    dev_only: BTreeSet<String>,
}

/// The dependencies between the workspace's crates.
#[derive(Debug, Default)]
struct Graph {
    /// Every dependency, of any kind (normal, build, dev).
    arrows: BTreeSet<Arrow>,
    /// The dependencies declared only as dev-dependencies.
    dev_only: BTreeSet<Arrow>,
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The names between backticks in `text`, in order.
fn backticked(text: &str) -> Vec<String> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

/// The lines between `<!-- NAME:begin -->` and `<!-- NAME:end -->`.
fn section<'a>(doc: &'a str, name: &str) -> Result<Vec<&'a str>, String> {
    let begin = format!("<!-- {name}:begin -->");
    let end = format!("<!-- {name}:end -->");
    let mut lines = doc.lines().skip_while(|l| l.trim() != begin);
    if lines.next().is_none() {
        return Err(format!("no `{begin}` marker"));
    }
    let body: Vec<&str> = lines.by_ref().take_while(|l| l.trim() != end).collect();
    if !doc.lines().any(|l| l.trim() == end) {
        return Err(format!("no `{end}` marker"));
    }
    Ok(body)
}

/// Parses the allowed-arrows table and the known-violations list of the document.
fn parse_layering(doc: &str) -> Result<Layering, String> {
    let mut layering = Layering::default();
    for line in section(doc, "allowed-arrows")? {
        let cells: Vec<&str> = line.trim().trim_matches('|').split('|').collect();
        // Header, separator and blank lines carry no crate names.
        let [from, to] = cells.as_slice() else {
            continue;
        };
        let Some(from) = backticked(from).into_iter().next() else {
            continue;
        };
        let targets: BTreeSet<String> = backticked(to).into_iter().collect();
        if layering.allowed.insert(from.clone(), targets).is_some() {
            return Err(format!("`{from}` has two rows in the allowed-arrows table"));
        }
    }
    for line in section(doc, "known-violations")? {
        // Continuation lines of an item are indented; each item starts with "- ".
        let Some(item) = line.strip_prefix("- ") else {
            continue;
        };
        let names = backticked(item);
        if names.len() < 2 || !item.contains('→') {
            return Err(format!("known violation without `from` → `to`: {line:?}"));
        }
        let arrow = (names[0].clone(), names[1].clone());
        if !layering.known_violations.insert(arrow.clone()) {
            return Err(format!("known violation listed twice: {arrow:?}"));
        }
    }
    for line in section(doc, "dev-only")? {
        layering.dev_only.extend(backticked(line));
    }
    if layering.allowed.is_empty() {
        return Err("the allowed-arrows table is empty".to_string());
    }
    Ok(layering)
}

/// The workspace's crates and the dependencies between them (any kind: normal, build, dev),
/// from `cargo metadata --no-deps` output.
fn workspace_graph(metadata: &serde_json::Value) -> (BTreeSet<String>, Graph) {
    let packages = metadata["packages"].as_array().cloned().unwrap_or_default();
    let crates: BTreeSet<String> = packages
        .iter()
        .filter_map(|p| p["name"].as_str().map(str::to_string))
        .collect();
    let mut arrows = BTreeSet::new();
    let mut not_dev = BTreeSet::new();
    for package in &packages {
        let Some(from) = package["name"].as_str() else {
            continue;
        };
        let dependencies = package["dependencies"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        for dependency in dependencies {
            // `name` is the package's own name even when the dependency is renamed.
            if let Some(to) = dependency["name"].as_str().filter(|n| crates.contains(*n)) {
                let arrow = (from.to_string(), to.to_string());
                // `kind` is null for a normal dependency, "build" or "dev" otherwise.
                if dependency["kind"].as_str() != Some("dev") {
                    not_dev.insert(arrow.clone());
                }
                arrows.insert(arrow);
            }
        }
    }
    let dev_only = arrows.difference(&not_dev).cloned().collect();
    (crates, Graph { arrows, dev_only })
}

/// Every way in which the graph and the document disagree, one message each.
fn check(layering: &Layering, crates: &BTreeSet<String>, graph: &Graph) -> Vec<String> {
    let mut errors = Vec::new();
    for name in crates {
        if !layering.allowed.contains_key(name) {
            errors.push(format!(
                "crate `{name}` has no row in docs/architecture.md's table"
            ));
        }
    }
    for name in layering.allowed.keys() {
        if !crates.contains(name) {
            errors.push(format!(
                "docs/architecture.md names `{name}`, not a workspace crate"
            ));
        }
    }
    for name in &layering.dev_only {
        if !crates.contains(name) {
            errors.push(format!(
                "docs/architecture.md's dev-only `{name}` is not a workspace crate"
            ));
        }
    }
    let is_allowed =
        |(from, to): &Arrow| layering.allowed.get(from).is_some_and(|a| a.contains(to));
    for arrow in &graph.arrows {
        let dev_kit = layering.dev_only.contains(&arrow.1);
        if dev_kit && !graph.dev_only.contains(arrow) {
            errors.push(format!(
                "`{}` depends on `{}` outside [dev-dependencies]: it is a dev-only crate",
                arrow.0, arrow.1
            ));
        } else if !dev_kit && !is_allowed(arrow) && !layering.known_violations.contains(arrow) {
            errors.push(format!(
                "`{}` depends on `{}`: the layering of docs/architecture.md forbids it",
                arrow.0, arrow.1
            ));
        }
    }
    for arrow in &layering.known_violations {
        if is_allowed(arrow) {
            errors.push(format!(
                "known violation `{}` → `{}` is an allowed arrow: remove it from the list",
                arrow.0, arrow.1
            ));
        } else if !graph.arrows.contains(arrow) {
            errors.push(format!(
                "known violation `{}` → `{}` no longer exists: remove it from docs/architecture.md",
                arrow.0, arrow.1
            ));
        }
    }
    errors
}

fn cargo_metadata() -> serde_json::Value {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let output = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .arg("--manifest-path")
        .arg(repo_root().join("Cargo.toml"))
        .output()
        .expect("run cargo metadata");
    assert!(
        output.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("cargo metadata prints JSON")
}

#[test]
fn workspace_dependencies_follow_the_documented_layering() {
    let doc = std::fs::read_to_string(repo_root().join("docs/architecture.md"))
        .expect("read docs/architecture.md");
    let layering = parse_layering(&doc).unwrap_or_else(|e| panic!("docs/architecture.md: {e}"));
    let (crates, graph) = workspace_graph(&cargo_metadata());
    assert!(
        crates.contains("culprit-cli") && crates.contains("culprit-decode"),
        "{crates:?}"
    );
    let errors = check(&layering, &crates, &graph);
    assert!(errors.is_empty(), "layering:\n  {}", errors.join("\n  "));
}

/// A small document and graph crafted for the checker's own tests.
fn crafted() -> (Layering, BTreeSet<String>) {
    let doc = "intro `not-a-row`\n\
        <!-- allowed-arrows:begin -->\n\
        | crate | may depend on |\n\
        | --- | --- |\n\
        | `low` | (none) |\n\
        | `mid` | `low` |\n\
        | `top` | `low`, `mid` |\n\
        | `kit` | (none) |\n\
        <!-- allowed-arrows:end -->\n\
        <!-- known-violations:begin -->\n\
        - `low` → `mid`: a reason,\n\
          continued on a second line with `code`.\n\
        <!-- known-violations:end -->\n\
        <!-- dev-only:begin -->\n\
        - `kit`: the test kit\n\
        <!-- dev-only:end -->\n";
    let layering = parse_layering(doc).expect("crafted document parses");
    let crates = ["low", "mid", "top", "kit"].map(String::from).into();
    (layering, crates)
}

fn arrows(pairs: &[(&str, &str)]) -> BTreeSet<Arrow> {
    pairs
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

/// A graph of normal dependencies only.
fn normal(pairs: &[(&str, &str)]) -> Graph {
    Graph {
        arrows: arrows(pairs),
        dev_only: BTreeSet::new(),
    }
}

#[test]
fn the_document_parser_reads_the_table_and_the_list() {
    let (layering, _) = crafted();
    assert_eq!(layering.allowed.len(), 4);
    assert!(layering.allowed["low"].is_empty());
    assert_eq!(
        layering.allowed["top"],
        ["low", "mid"].map(String::from).into()
    );
    assert_eq!(layering.known_violations, arrows(&[("low", "mid")]));
    assert_eq!(layering.dev_only, ["kit"].map(String::from).into());
    assert!(parse_layering("no markers").is_err());
    let bad_item = "<!-- allowed-arrows:begin -->\n| `a` | |\n<!-- allowed-arrows:end -->\n\
        <!-- known-violations:begin -->\n- `a` depends on things\n<!-- known-violations:end -->";
    assert!(parse_layering(bad_item).is_err());
}

#[test]
fn the_checker_accepts_allowed_and_known_arrows() {
    let (layering, crates) = crafted();
    let graph = normal(&[("mid", "low"), ("top", "mid"), ("low", "mid")]);
    assert_eq!(check(&layering, &crates, &graph), Vec::<String>::new());
}

#[test]
fn the_checker_refuses_a_forbidden_arrow() {
    let (layering, crates) = crafted();
    let graph = normal(&[("low", "mid"), ("mid", "top")]);
    let errors = check(&layering, &crates, &graph);
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].contains("`mid` depends on `top`"), "{errors:?}");
}

#[test]
fn the_checker_refuses_a_known_violation_that_was_fixed() {
    let (layering, crates) = crafted();
    let errors = check(&layering, &crates, &normal(&[("mid", "low")]));
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].contains("no longer exists"), "{errors:?}");
}

#[test]
fn the_checker_refuses_an_undocumented_crate() {
    let (layering, mut crates) = crafted();
    crates.insert("new".to_string());
    let errors = check(&layering, &crates, &normal(&[("low", "mid")]));
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].contains("`new` has no row"), "{errors:?}");
}

#[test]
fn the_checker_accepts_a_dev_only_crate_as_a_dev_dependency() {
    let (layering, crates) = crafted();
    let dev = arrows(&[("low", "kit"), ("top", "kit")]);
    let mut graph = normal(&[("low", "mid")]);
    graph.arrows.extend(dev.iter().cloned());
    graph.dev_only = dev;
    assert_eq!(check(&layering, &crates, &graph), Vec::<String>::new());
}

#[test]
fn the_checker_refuses_a_dev_only_crate_as_a_normal_dependency() {
    let (layering, crates) = crafted();
    let errors = check(
        &layering,
        &crates,
        &normal(&[("low", "mid"), ("mid", "kit")]),
    );
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].contains("`mid` depends on `kit` outside [dev-dependencies]"),
        "{errors:?}"
    );
}

#[test]
fn the_checker_refuses_a_forbidden_arrow_beside_dev_only_ones() {
    let (layering, crates) = crafted();
    // A dev-dependency between ordinary crates is held to the table like any other.
    let forbidden = arrows(&[("low", "top")]);
    let mut graph = normal(&[("low", "mid"), ("mid", "top")]);
    graph.arrows.extend(forbidden.iter().cloned());
    graph.dev_only = forbidden;
    let errors = check(&layering, &crates, &graph);
    assert_eq!(errors.len(), 2, "{errors:?}");
    assert!(errors[0].contains("`low` depends on `top`"), "{errors:?}");
    assert!(errors[1].contains("`mid` depends on `top`"), "{errors:?}");
}

#[test]
fn the_graph_reader_tells_dev_only_dependencies_apart() {
    let metadata = serde_json::json!({"packages": [
        {"name": "low", "dependencies": [
            {"name": "kit", "kind": "dev"},
            {"name": "serde", "kind": null},
        ]},
        {"name": "mid", "dependencies": [
            {"name": "low", "kind": null},
            {"name": "low", "kind": "dev"},
            {"name": "kit", "kind": "build"},
        ]},
        {"name": "kit", "dependencies": []},
    ]});
    let (crates, graph) = workspace_graph(&metadata);
    assert_eq!(crates, ["kit", "low", "mid"].map(String::from).into());
    assert_eq!(
        graph.arrows,
        arrows(&[("low", "kit"), ("mid", "low"), ("mid", "kit")])
    );
    assert_eq!(graph.dev_only, arrows(&[("low", "kit")]));
}
