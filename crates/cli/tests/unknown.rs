//! Unnamed code (a stripped DSO): `report` groups its addresses into one `[unknown]` row per
//! DSO whose share equals the sum of perf's per-address rows, says once which DSOs have no
//! symbols and how to get them, and `--unknown address` gives perf's per-address rows.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::common;

/// The stripped DSO's short name.
const STRIPPED: &str = "shares-stripped";

/// A stripped copy of the `shares` workload recorded by perf with cpu-clock, in the
/// test's scratch directory; `None` (skipped) without perf.
fn stripped_recording(test: &str) -> Option<PathBuf> {
    if !common::require_perf(test) {
        return None;
    }
    let dir = common::scratch(test);
    let exe = dir.join(STRIPPED);
    std::fs::copy(common::workload("shares"), &exe).unwrap();
    // No build id either: nothing (a build-id cache, /usr/lib/debug) can find its symbols.
    common::run_ok(
        Command::new("strip")
            .arg("--remove-section=.note.gnu.build-id")
            .arg(&exe),
    );
    let file = dir.join("perf.data");
    let _lock = common::pmu_lock();
    common::run_ok(
        common::perf()
            .args(["record", "-q", "-N", "-e", "cpu-clock", "-o"])
            .arg(&file)
            .arg("--")
            .arg(&exe)
            .arg("20"),
    );
    Some(file)
}

/// perf's `--sort dso,sym` self rows of `dso` whose symbol is an address (`[.] 0x…`):
/// address -> samples; and the event's total samples.
fn perf_unknown_rows(file: &Path, dso: &str) -> (BTreeMap<String, u64>, u64) {
    let out = common::run_ok(
        common::perf()
            .args(["report", "--stdio", "--no-children", "-g", "none"])
            .args(["--sort", "dso,sym", "--show-nr-samples", "-t", "|", "-i"])
            .arg(file),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let mut rows = BTreeMap::new();
    let mut total = 0;
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let f: Vec<&str> = line.split('|').map(str::trim).collect();
        let [_, samples, d, sym] = f[..] else {
            continue;
        };
        let Ok(samples) = samples.parse::<u64>() else {
            continue;
        };
        total += samples;
        if d == dso {
            if let Some(addr) = sym.strip_prefix("[.] 0x") {
                *rows.entry(addr.to_string()).or_default() += samples;
            }
        }
    }
    (rows, total)
}

fn culprit_report(file: &Path, extra: &[&str]) -> String {
    let out = common::run_ok(
        common::culprit()
            .args(["report", "--no-children", "--width", "0", "-i"])
            .arg(file)
            .args(extra),
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The JSON rows whose `sym` is `[unknown]` in DSO `dso`.
fn unknown_rows<'a>(json: &'a Value, dso: &str) -> Vec<&'a Value> {
    json["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["keys"]["sym"] == "[unknown]" && r["keys"]["dso"] == dso)
        .collect()
}

#[test]
fn test_report_groups_a_stripped_dsos_addresses_into_one_row_with_perfs_sum() {
    let test = "test_report_groups_a_stripped_dsos_addresses_into_one_row_with_perfs_sum";
    let Some(file) = stripped_recording(test) else {
        return;
    };
    let (perf_rows, perf_total) = perf_unknown_rows(&file, STRIPPED);
    let perf_sum: u64 = perf_rows.values().sum();
    assert!(
        perf_rows.len() > 1 && perf_sum * 2 > perf_total,
        "perf scatters the stripped loop over several addresses: {perf_rows:?} of {perf_total}"
    );

    // The default: one row for the DSO, with the sum of perf's rows.
    let json: Value = serde_json::from_str(&culprit_report(
        &file,
        &["--sort", "dso,sym", "--format", "json"],
    ))
    .unwrap();
    let ours = unknown_rows(&json, STRIPPED);
    assert_eq!(ours.len(), 1, "one [unknown] row for {STRIPPED}: {ours:?}");
    let row = ours[0];
    assert_eq!(row["samples"]["cpu-clock"], perf_sum, "{row}");
    assert_eq!(json["events"][0]["samples"], perf_total);
    let share = perf_sum as f64 * 100.0 / perf_total as f64;
    let pct = row["percent"]["cpu-clock"].as_f64().unwrap();
    assert!((pct - share).abs() < 0.01, "{pct} vs perf's {share}");
    assert!(row["keys"]["sym_addr"].is_null(), "{row}");
    // Said once in JSON: which DSO and how to name it.
    let u = &json["unsymbolized"];
    assert_eq!(u["rows"], "dso");
    assert!(u["hint"].as_str().unwrap().contains("DEBUGINFOD_URLS"));
    let d = &u["dsos"][0];
    assert_eq!(d["dso"], STRIPPED, "{u}");
    assert_eq!(d["samples"]["cpu-clock"], perf_sum, "{u}");
    common::validate_json_schema(
        "report",
        &culprit_report(&file, &["--sort", "dso,sym", "--format", "json"]),
    );

    // Text: the row and one note under the table.
    let text = culprit_report(&file, &[]);
    let rows: Vec<&str> = text
        .lines()
        .filter(|l| l.contains(STRIPPED) && l.contains("[.] [unknown]"))
        .collect();
    assert_eq!(rows.len(), 1, "{text}");
    let notes: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("# Samples without symbols in: "))
        .collect();
    assert_eq!(notes.len(), 1, "{text}");
    for want in [
        STRIPPED,
        "--unknown address",
        "DEBUGINFOD_URLS",
        "--symfs",
        "-dbgsym",
    ] {
        assert!(notes[0].contains(want), "{want} not in {}", notes[0]);
    }
    // `--sort sym` without a dso column names the DSO in the row.
    let by_sym = culprit_report(&file, &["--sort", "sym"]);
    assert!(
        by_sym
            .lines()
            .any(|l| l.ends_with(&format!("[.] [unknown] {STRIPPED}"))),
        "{by_sym}"
    );
    // CSV: one row too.
    let csv = culprit_report(&file, &["--sort", "dso,sym", "--format", "csv"]);
    let csv_rows = csv
        .lines()
        .filter(|l| l.contains(STRIPPED) && l.contains("[unknown]"))
        .count();
    assert_eq!(csv_rows, 1, "{csv}");
}

#[test]
fn test_report_unknown_address_gives_perfs_per_address_rows() {
    let test = "test_report_unknown_address_gives_perfs_per_address_rows";
    let Some(file) = stripped_recording(test) else {
        return;
    };
    let (perf_rows, _) = perf_unknown_rows(&file, STRIPPED);
    let json: Value = serde_json::from_str(&culprit_report(
        &file,
        &[
            "--sort",
            "dso,sym",
            "--format",
            "json",
            "--unknown",
            "address",
        ],
    ))
    .unwrap();
    let ours: BTreeMap<String, u64> = unknown_rows(&json, STRIPPED)
        .iter()
        .map(|r| {
            let addr = r["keys"]["sym_addr"].as_str().unwrap();
            let addr = u64::from_str_radix(addr.trim_start_matches("0x"), 16).unwrap();
            (
                format!("{addr:016x}"),
                r["samples"]["cpu-clock"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(ours, perf_rows);
    assert_eq!(json["unsymbolized"]["rows"], "address");
}

fn hex(v: &Value) -> u64 {
    u64::from_str_radix(v.as_str().unwrap().trim_start_matches("0x"), 16).unwrap()
}

#[test]
fn test_annotate_disassembles_a_stripped_hot_range_with_report_ip_counts() {
    let test = "test_annotate_disassembles_a_stripped_hot_range_with_report_ip_counts";
    let Some(file) = stripped_recording(test) else {
        return;
    };
    // report's per-instruction counts of the stripped DSO (`--sort dso,ip`: SVMAs).
    let report: Value = serde_json::from_str(&culprit_report(
        &file,
        &["--sort", "dso,ip", "--format", "json"],
    ))
    .unwrap();
    let by_ip: BTreeMap<u64, u64> = report["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["keys"]["dso"] == STRIPPED)
        .map(|r| {
            (
                hex(&r["keys"]["ip"]),
                r["samples"]["cpu-clock"].as_u64().unwrap(),
            )
        })
        .collect();
    let dso_total: u64 = by_ip.values().sum();

    let out = common::run_ok(
        common::culprit()
            .args(["annotate", "--format", "json", "--top", "1", "-i"])
            .arg(&file),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let f: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    common::validate_json_schema("annotate", &text);
    assert_eq!(f["dso"], STRIPPED, "{f}");
    assert!(f["disassembled"].as_bool().unwrap(), "{f}");
    let sym = f["symbol"].as_str().unwrap();
    assert!(
        sym.starts_with(&format!("[unknown] {STRIPPED}+0x")),
        "{sym}"
    );
    let why = f["unnamed"].as_str().unwrap();
    assert!(
        why.contains("DEBUGINFOD_URLS") && why.contains("--symfs"),
        "{why}"
    );
    let (start, end) = (hex(&f["start"]), hex(&f["end"]));
    let insns = f["instructions"].as_array().unwrap();
    assert!(insns.len() > 3, "a loop, disassembled: {f}");
    assert!(
        insns.iter().all(|i| !i["asm"].as_str().unwrap().is_empty()),
        "{f}"
    );
    let ours: BTreeMap<u64, u64> = insns
        .iter()
        .map(|i| (hex(&i["ip"]), i["samples"]["cpu-clock"].as_u64().unwrap()))
        .filter(|&(_, n)| n > 0)
        .collect();
    let theirs: BTreeMap<u64, u64> = by_ip.range(start..end).map(|(&a, &n)| (a, n)).collect();
    assert_eq!(
        ours, theirs,
        "per-instruction samples of {start:#x}-{end:#x}"
    );
    // The hot range is where the stripped loop's time is.
    let sum: u64 = ours.values().sum();
    assert!(sum * 2 > dso_total, "{sum} of {dso_total}");

    // The name report prints (`DSO+0xOFFSET`) annotates the same range; text says why.
    let out = common::run_ok(
        common::culprit()
            .args(["annotate", "--addr"])
            .arg(sym.trim_start_matches("[unknown] "))
            .arg("-i")
            .arg(&file),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!("Function: {sym} in {STRIPPED}")),
        "{text}"
    );
    assert!(
        text.contains(&format!("No symbols for {STRIPPED}")),
        "{text}"
    );
}
