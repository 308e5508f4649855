//! What a new user sees first: `culprit demo` shows each command it runs above that
//! command's output; record's fallback note on a PMU-less machine is in words.

use crate::common;

use common::{culprit, run_ok};

#[test]
fn test_demo_prints_the_commands_whose_output_it_shows() {
    let _lock = common::pmu_lock();
    let dir = common::scratch("demo-commands");
    let o = run_ok(
        culprit()
            .args(["demo", "--size", "96", "-e", "cpu-clock", "--dir"])
            .arg(&dir),
    );
    let out = String::from_utf8_lossy(&o.stdout);
    let data = dir.join("perf.data");
    let report_cmd = format!(
        "$ culprit report -i {} --sort comm,dso,sym --no-children --top 15",
        data.display()
    );
    let lines: Vec<&str> = out.lines().collect();
    let at = lines
        .iter()
        .position(|l| *l == report_cmd)
        .unwrap_or_else(|| panic!("no line {report_cmd:?} in\n{out}"));
    // The report follows its command, and the record command comes first.
    assert!(
        lines[at + 1..].iter().any(|l| l.contains("matmul")),
        "{out}"
    );
    assert!(
        lines[..at]
            .iter()
            .any(|l| l.starts_with("$ culprit record -e cpu-clock -g -o ")),
        "{out}"
    );
    // The command shown is the command run: typed again, it prints the same report.
    let again = run_ok(culprit().args(report_cmd.split_whitespace().skip(2)));
    let again = String::from_utf8_lossy(&again.stdout);
    assert!(out.contains(again.trim_end()), "{again}\nvs\n{out}");
}

/// Without a hardware PMU, record's fallback note says why in words, without a raw
/// `(os error N)` (with a PMU there is no note at all).
#[test]
fn test_record_fallback_note_has_no_raw_os_error() {
    let _lock = common::pmu_lock();
    let dir = common::scratch("record-fallback-note");
    let o = run_ok(
        culprit()
            .args(["record", "-o"])
            .arg(dir.join("x.data"))
            .args(["--", "true"]),
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains("os error"), "{err}");
    if !common::hardware_pmu() {
        assert!(
            err.contains("falling back to cpu-clock") && err.contains("no hardware PMU"),
            "{err}"
        );
    }
}
