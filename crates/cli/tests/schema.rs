//! The JSON schemas of docs/schemas: every verb that writes JSON has one, every schema is a
//! valid JSON Schema (draft 2020-12) that requires the integer `schema` version, and every
//! schema is exercised: some test validates a real output against it.

use crate::common;

use std::collections::BTreeSet;
use std::process::Command;

use common::{culprit, repo_root};

/// The verbs of `culprit --help`.
fn verbs() -> Vec<String> {
    let out = culprit().arg("--help").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    text.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|v| *v != "help")
        .map(str::to_string)
        .collect()
}

/// The schema names (file stems without `.schema`) in docs/schemas.
fn schema_names() -> BTreeSet<String> {
    std::fs::read_dir(repo_root().join("docs/schemas"))
        .unwrap()
        .filter_map(|e| {
            let name = e.ok()?.file_name().to_string_lossy().to_string();
            name.strip_suffix(".schema.json").map(str::to_string)
        })
        .collect()
}

#[test]
fn test_every_verb_with_json_output_has_a_schema() {
    let schemas = schema_names();
    let verbs = verbs();
    assert!(verbs.len() >= 8, "verbs from --help: {verbs:?}");
    let mut missing = Vec::new();
    for v in &verbs {
        let help = culprit().args([v.as_str(), "--help"]).output().unwrap();
        let help = String::from_utf8_lossy(&help.stdout);
        let has_json = help.contains("--format") && help.contains("json");
        if has_json
            && !schemas
                .iter()
                .any(|s| s == v || s.starts_with(&format!("{v}-")))
        {
            missing.push(v.clone());
        }
    }
    assert!(
        missing.is_empty(),
        "verbs with --format json but no docs/schemas/VERB.schema.json: {missing:?}"
    );
}

#[test]
fn test_every_schema_is_valid_requires_its_version_and_is_exercised() {
    let root = repo_root();
    // Which schemas some test validates real output against.
    let mut tested = BTreeSet::new();
    // Test sources, in subdirectories too (shared modules such as `browser/`).
    let mut files = Vec::new();
    let mut dirs = vec![root.join("crates/cli/tests")];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
            } else {
                files.push(p);
            }
        }
    }
    for p in files {
        if p.extension().is_some_and(|x| x == "rs") {
            let text = std::fs::read_to_string(&p).unwrap();
            // `validate_json_schema("name", …)`, the name maybe on the next line.
            for part in text.split("validate_json_schema(").skip(1) {
                if let Some(rest) = part.trim_start().strip_prefix('"') {
                    if let Some(name) = rest.split('"').next() {
                        tested.insert(name.to_string());
                    }
                }
            }
        }
    }
    for name in schema_names() {
        let path = root.join(format!("docs/schemas/{name}.schema.json"));
        let check = r#"
import json, sys
import jsonschema
s = json.load(open(sys.argv[1]))
jsonschema.Draft202012Validator.check_schema(s)
assert s.get("$schema", "").startswith("https://json-schema.org/draft/2020-12"), "not draft 2020-12"
assert "schema" in s.get("required", []), "the top-level object must require `schema`"
t = s.get("properties", {}).get("schema", {})
assert t.get("type") == "integer" or "const" in t, "`schema` must be an integer version"
"#;
        let out = Command::new("python3")
            .args(["-c", check])
            .arg(&path)
            .output()
            .expect("run python3");
        assert!(
            out.status.success(),
            "{}: {}",
            path.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            tested.contains(&name),
            "no test validates real output against docs/schemas/{name}.schema.json"
        );
    }
}

#[test]
fn test_report_json_on_fixtures_validates() {
    let fixtures = repo_root().join("crates/decode/tests/fixtures");
    for f in [
        "cpu-clock-g.data",
        "two-events.data",
        "pipe-g.data",
        "dwarf.data",
    ] {
        let out = culprit()
            .args(["report", "--format", "json", "-i"])
            .arg(fixtures.join(f))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{f}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        common::validate_json_schema("report", &String::from_utf8_lossy(&out.stdout));
    }
}

#[test]
fn test_diff_json_on_fixtures_validates() {
    let fixtures = repo_root().join("crates/decode/tests/fixtures");
    // The same file (every row in both), two programs (new and vanished rows), and a file
    // with an event the other lacks (only_in_baseline).
    for (a, b) in [
        ("cpu-clock-g.data", "cpu-clock-g.data"),
        ("cpu-clock-g.data", "pipe-g.data"),
        ("two-events.data", "cpu-clock-g.data"),
    ] {
        let out = culprit()
            .args(["diff", "--format", "json"])
            .arg(fixtures.join(a))
            .arg(fixtures.join(b))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{a} {b}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        common::validate_json_schema("diff", &String::from_utf8_lossy(&out.stdout));
    }
}
