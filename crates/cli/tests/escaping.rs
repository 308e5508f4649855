//! Names from a file never reach the terminal raw (issue 22, output safety): a recording of a
//! process whose name holds a comma and a terminal escape (`a,b\x1b[31m`, workloads/odd_names.c)
//! is shown escaped in every text and CSV output — report (flat, -g), CSV, trace's printf and
//! aggregations, warnings — and kept exact in JSON.

use crate::common;

use std::path::{Path, PathBuf};

const RAW: &str = "a,b\x1b[31m";
const ESCAPED: &str = "a,b\\x1b[31m";

fn recording() -> PathBuf {
    let _lock = common::pmu_lock();
    let dir = common::scratch("escaping-odd-names");
    let file = dir.join("odd.data");
    common::run_ok(
        common::culprit()
            .args([
                "record",
                "-q",
                "-e",
                "cpu-clock",
                "-c",
                "250000",
                "-g",
                "-o",
            ])
            .arg(&file)
            .arg("--")
            .arg(common::workload("odd_names"))
            .arg("200"),
    );
    file
}

fn culprit(file: &Path, args: &[&str]) -> (String, String) {
    let out = common::run_ok(common::culprit().args(args).arg("-i").arg(file));
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn test_names_with_control_characters_are_escaped_in_text_and_csv() {
    let file = recording();
    for args in [
        &["report", "--sort", "comm,sym", "--width", "0"][..],
        &["report", "--sort", "comm", "-g", "caller", "--width", "0"],
        &["report", "--sort", "comm", "--format", "csv"],
        &[
            "trace",
            "-q",
            "-e",
            "pmc:::cpu-clock { printf(\"%s\\n\", execname); }",
        ],
        &[
            "trace",
            "-q",
            "-e",
            "pmc:::cpu-clock { @[execname] = count(); }",
        ],
        &[
            "trace",
            "-q",
            "-e",
            "pmc:::cpu-clock { @[execname] = count(); } END { printa(\"%s %@d\\n\", @); }",
        ],
    ] {
        let (out, err) = culprit(&file, args);
        assert!(out.contains(ESCAPED), "{args:?}: no escaped name in\n{out}");
        assert!(
            !out.contains('\x1b'),
            "{args:?}: a raw escape in stdout:\n{out:?}"
        );
        assert!(
            !err.contains('\x1b'),
            "{args:?}: a raw escape in stderr:\n{err:?}"
        );
    }
    // JSON keeps the name exact (escaped as JSON escapes).
    let (json, _) = culprit(&file, &["report", "--sort", "comm", "--format", "json"]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let comms: Vec<&str> = v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["keys"]["comm"].as_str())
        .collect();
    assert!(comms.contains(&RAW), "{comms:?}");
    assert!(!json.contains('\x1b'));
}
