//! `culprit script`: names from the file escaped in text and JSON, the width rule (cut on a
//! terminal or with --width N, never in a pipe, like perf script), and the JSON lines
//! against docs/schemas/script.schema.json. (IBS and PEBS decoding: tests/ibs.rs.)

mod common;

use std::path::PathBuf;

fn fixture(name: &str) -> PathBuf {
    common::repo_root()
        .join("crates/decode/tests/fixtures")
        .join(name)
}

fn script(args: &[&str]) -> String {
    let out = common::run_ok(
        common::culprit()
            .env_remove("COLUMNS")
            .arg("script")
            .args(args),
    );
    String::from_utf8(out.stdout).expect("UTF-8")
}

#[test]
fn test_script_escapes_a_comm_with_a_comma_and_a_terminal_escape() {
    let _lock = common::pmu_lock();
    let dir = common::scratch("script-odd-names");
    let file = dir.join("odd.data");
    common::run_ok(
        common::culprit()
            .args(["record", "-q", "-e", "cpu-clock", "-c", "250000", "-o"])
            .arg(&file)
            .arg("--")
            .arg(common::workload("odd_names"))
            .arg("200"),
    );
    let f = file.to_str().unwrap();
    let text = script(&["-i", f]);
    assert!(text.contains("a,b\\x1b[31m "), "{text}");
    assert!(!text.contains('\x1b'), "a raw escape reached the terminal");

    let json = script(&["-i", f, "--format", "json"]);
    let comms: Vec<String> = json
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            v["comm"].as_str().unwrap().to_string()
        })
        .collect();
    assert!(comms.iter().any(|c| c == "a,b\x1b[31m"), "{comms:?}");
    assert!(!json.contains('\x1b'), "JSON escapes control characters");
    common::validate_json_schema("script", &json);
}

#[test]
fn test_script_width_rule_and_schema_on_fixtures() {
    for name in [
        "two-events.data",
        "cpu-clock-g.data",
        "ibs-fam17h_m31_zen2.data",
        "ibs-fam19h_m11_zen4.data",
    ] {
        let f = fixture(name);
        let f = f.to_str().unwrap();
        // Into a pipe: whole lines (perf's IBS lines verbatim, with their tabs).
        let whole = script(&["-i", f]);
        assert!(whole.lines().any(|l| l.chars().count() > 80), "{name}");
        // --width 80: every line fits, the cut ones end with '…'.
        let cut = script(&["-i", f, "--width", "80"]);
        assert_eq!(cut.lines().count(), whole.lines().count(), "{name}");
        for l in cut.lines() {
            assert!(
                l.chars().count() <= 80 && !l.contains('\t'),
                "{name}: {l:?}"
            );
        }
        assert!(cut.contains('…'), "{name}");
        common::validate_json_schema("script", &script(&["-i", f, "--format", "json"]));
    }
    let out = common::culprit()
        .args(["script", "--format", "csv", "-i"])
        .arg(fixture("two-events.data"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("script has no --format csv"));
}
