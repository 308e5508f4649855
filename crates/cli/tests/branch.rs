//! Branch stacks against perf: the decoded entries of the corpus's LBR/BRS/BRBE files equal
//! `perf script -F brstack`, `culprit report --branch` equals `perf report --branch-stack`
//! row by row (within 0.1 point, same branch counts), and `--call-graph lbr` chains built
//! from the LBR call stack give perf's `--children` numbers on a crafted file.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn corpus(name: &str) -> PathBuf {
    common::repo_root()
        .join("crates/decode/tests/fixtures/real-perf-data")
        .join(name)
}

/// The corpus files with branch stacks.
const BRANCH_FILES: &[&str] = &[
    "google-perf_data_converter/perf.data.branch-4.14",
    "google-perf_data_converter/perf.data.branch_stack_hw_index",
    "google-perf_data_converter/perf.data.branch_stack_spec",
    "google-perf_data_converter/perf.data.callgraph_and_branch-3.4",
    "google-perf_data_converter/perf.data.callgraph_and_branch-3.8",
    "google-perf_data_converter/perf.data.raw_callgraph_branch-3.4",
    "google-autofdo/test.lbr",
    "google-autofdo/propeller_sample_1.perfdata1",
];

/// perf's brstack entry `0xF/0xT/P/-/-/3/TYPE/SPEC` → `0xF/0xT/P/-/-/3` (culprit's
/// `brstack_text` has no type names).
fn brstack_core(entry: &str) -> String {
    entry.split('/').take(6).collect::<Vec<_>>().join("/")
}

#[test]
fn test_branch_entries_equal_perf_script_brstack() {
    if !common::require_perf("test_branch_entries_equal_perf_script_brstack") {
        return;
    }
    for name in BRANCH_FILES {
        let file = corpus(name);
        let out = common::run_ok(
            Command::new("perf")
                .args(["script", "-F", "brstack", "-i"])
                .arg(&file),
        );
        let theirs: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| {
                l.split_whitespace()
                    .map(brstack_core)
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .filter(|l| !l.is_empty())
            .collect();
        let p = culprit_decode::read_file(&file).unwrap();
        let ours: Vec<String> = p
            .samples
            .iter()
            .map(|s| {
                assert_eq!(s.branch_count as usize, p.branches(s).len(), "{name}");
                culprit_analysis::branches::brstack_text(p.branches(s))
                    .trim_end()
                    .to_string()
            })
            .filter(|l| !l.is_empty())
            .collect();
        assert!(!ours.is_empty(), "{name}: no branch entries decoded");
        assert_eq!(
            ours.len(),
            theirs.len(),
            "{name}: samples with branch stacks"
        );
        for (i, (a, b)) in ours.iter().zip(&theirs).enumerate() {
            assert_eq!(a, b, "{name}: sample {i}");
        }
        // HW_INDEX is kept where the attr records it (the arm64 BRBE-style file).
        let hw = p
            .events
            .iter()
            .any(|e| e.branch_sample_type & (1 << 17) != 0);
        let with_index = p.samples.iter().filter(|s| s.branch_hw_index.is_some());
        assert_eq!(with_index.count() > 0, hw, "{name}: hw_index");
    }
}

/// Percentages per event, per key (the key columns joined with a tab).
type Table = BTreeMap<String, BTreeMap<String, f64>>;

/// A symbol cell: perf's `[k] 0xffffffff81000000` / `[.] 0x000000000001a5c2` /
/// `[H] 0000000000000000` / `[.] name` → `[k] 0xffffffff81000000` / `[.] name`.
fn normalize_sym(cell: &str) -> String {
    let cell = cell.trim();
    let (tag, rest) = cell.split_at(cell.find("] ").map_or(0, |i| i + 1));
    let rest = rest.trim();
    let hex = rest.strip_prefix("0x").unwrap_or(rest);
    match u64::from_str_radix(hex, 16) {
        Ok(v) if hex.len() >= 8 => format!("{tag} {v:#x}"),
        _ => format!("{tag} {rest}"),
    }
}

/// The key joined with tabs, with the symbol of a `[vdso]` end (known from its `dso_*`
/// key) replaced by `[vdso]`: perf symbolizes a recorded file's vDSO with the vDSO of the
/// machine it runs on (it copies its own), which says nothing about the recorded one.
fn collapse_vdso(keys: &[&str], mut key: Vec<String>) -> String {
    for (i, k) in keys.iter().enumerate() {
        if let Some(side) = k.strip_prefix("symbol_") {
            let dso = keys.iter().position(|d| *d == format!("dso_{side}"));
            if dso.is_some_and(|d| key[d] == "[vdso]") {
                key[i] = "[.] [vdso]".to_string();
            }
        }
    }
    key.join("\t")
}

/// An empty kallsyms file for perf.
fn empty_kallsyms() -> PathBuf {
    static PATH: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    PATH.get_or_init(|| {
        let p = common::scratch("branch-kallsyms").join("kallsyms");
        std::fs::write(&p, "").unwrap();
        p
    })
    .clone()
}

/// `perf report --branch-stack -t '|'` → table, and the branch count of each event.
fn perf_branch_table(file: &Path, sort: &str) -> (Table, BTreeMap<String, u64>) {
    let out = common::run_ok(
        Command::new("perf")
            // `-F overhead,KEYS` sorts by KEYS like `--sort KEYS` but without the IPC column,
            // on which perf 6.1 crashes (SIGSEGV) for branches into unmapped addresses.
            .args(["report", "--stdio", "--branch-stack", "-t", "|", "-F"])
            .arg(format!("overhead,{sort}"))
            // None of the recorded kernels is this machine's: perf would name the addresses of
            // files without a kernel build-id (perf 3.x) with the running kernel's symbols,
            // culprit leaves them unresolved. An empty kallsyms makes perf do the same.
            .arg("--kallsyms")
            .arg(empty_kallsyms())
            .arg("-i")
            .arg(file),
    );
    let keys: Vec<&str> = sort.split(',').collect();
    let mut table = Table::new();
    let mut counts = BTreeMap::new();
    let mut event = String::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        if let Some(rest) = line.strip_prefix("# Samples: ") {
            let i = rest.find("of event '").unwrap();
            event = rest[i + 10..].trim_end_matches('\'').to_string();
            continue;
        }
        // The exact count (`# Samples:` abbreviates to `14K`): each entry has period 1.
        if let Some(rest) = line.strip_prefix("# Event count (approx.): ") {
            counts.insert(event.clone(), rest.trim().parse::<u64>().unwrap());
            continue;
        }
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let cells: Vec<&str> = line.split('|').collect();
        let pct: f64 = cells[0].trim().trim_end_matches('%').parse().unwrap();
        let key: Vec<String> = keys
            .iter()
            .enumerate()
            .map(|(i, k)| {
                let c = cells[i + 1].trim();
                if k.starts_with("symbol_") {
                    normalize_sym(c)
                } else if k.starts_with("dso_") && c.starts_with("[JIT] tid ") {
                    // perf's name for an anonymous executable mapping; culprit keeps the
                    // recorded `//anon` (as in the hotspot report).
                    "//anon".to_string()
                } else if *k == "cycles" {
                    // perf prints the 16-bit count with `%hd`: 42141 shows as -23395.
                    match c.parse::<i16>() {
                        Ok(v) => (v as u16).to_string(),
                        Err(_) => c.to_string(),
                    }
                } else {
                    c.to_string()
                }
            })
            .collect();
        *table
            .entry(event.clone())
            .or_default()
            .entry(collapse_vdso(&keys, key))
            .or_default() += pct;
    }
    (table, counts)
}

/// `culprit report --branch --format json` → the same shape.
fn culprit_branch_table(file: &Path, sort: &str) -> (Table, BTreeMap<String, u64>) {
    let out = common::run_ok(
        common::culprit()
            .args(["report", "--branch", "--format", "json", "--sort", sort])
            .arg("-i")
            .arg(file),
    );
    let j: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["mode"], "branch");
    let keys: Vec<&str> = sort.split(',').collect();
    let mut table = Table::new();
    for row in j["rows"].as_array().unwrap() {
        let k = &row["keys"];
        let key: Vec<String> = keys
            .iter()
            .map(|name| {
                let text = k[*name].as_str().unwrap().to_string();
                if name.starts_with("symbol_") {
                    let tag = k[format!("{name}_level")].as_str().unwrap();
                    // Unresolved: perf shows the address in the DSO.
                    let shown = match k[format!("{name}_addr")].as_str() {
                        Some(a) => a.to_string(),
                        None => text,
                    };
                    format!("{tag} {shown}")
                } else {
                    text
                }
            })
            .collect();
        for (ev, p) in row["percent"].as_object().unwrap() {
            if row["samples"][ev].as_u64() == Some(0) {
                continue;
            }
            *table
                .entry(ev.clone())
                .or_default()
                .entry(collapse_vdso(&keys, key.clone()))
                .or_default() += p.as_f64().unwrap();
        }
    }
    let counts = j["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["name"].as_str().unwrap().to_string(),
                e["samples"].as_u64().unwrap(),
            )
        })
        .collect();
    (table, counts)
}

#[test]
fn test_report_branch_matches_perf_branch_stack() {
    if !common::require_perf("test_report_branch_matches_perf_branch_stack") {
        return;
    }
    for name in BRANCH_FILES {
        let file = corpus(name);
        // perf's default keys where no branch touches the vDSO (see collapse_vdso, which
        // needs the dso_* keys), and all the branch keys.
        let has_vdso = String::from_utf8_lossy(
            &common::run_ok(
                Command::new("perf")
                    .args([
                        "report",
                        "--stdio",
                        "--branch-stack",
                        "-F",
                        "overhead,dso_from,dso_to",
                        "-i",
                    ])
                    .arg(&file),
            )
            .stdout,
        )
        .contains("[vdso]");
        let default_keys = if has_vdso {
            "comm,dso_from,symbol_from,dso_to,symbol_to,cycles"
        } else {
            "comm,dso_from,symbol_from,symbol_to,cycles"
        };
        for sort in [
            default_keys,
            "dso_from,symbol_from,dso_to,symbol_to,mispredict,in_tx,abort",
        ] {
            let (perf, perf_counts) = perf_branch_table(&file, sort);
            let (ours, our_counts) = culprit_branch_table(&file, sort);
            let what = format!("{name} --sort {sort}");
            let keys: Vec<&str> = sort.split(',').collect();
            assert!(!perf.is_empty(), "{what}: perf printed no rows");
            assert_eq!(
                perf.keys().collect::<Vec<_>>(),
                ours.keys().collect::<Vec<_>>(),
                "{what}"
            );
            for ev in perf.keys() {
                assert_eq!(
                    perf_counts.get(ev),
                    our_counts.get(ev),
                    "{what}: branch count of {ev}"
                );
            }
            let mut problems = Vec::new();
            for (ev, prow) in &perf {
                let orow = &ours[ev];
                // perf cuts a value to its column's width when the column was sized before
                // the value grew (a comm replaced by a longer one: `perf-exec` as `perf-ex`):
                // such a row is the one culprit row absent from perf whose key parts each
                // start with perf's.
                let mut by_prefix = Vec::new();
                for (k, p) in prow {
                    let key = if orow.contains_key(k) {
                        k.clone()
                    } else {
                        let parts: Vec<&str> = k.split('\t').collect();
                        let found: Vec<&String> = orow
                            .keys()
                            .filter(|o| {
                                let op: Vec<&str> = o.split('\t').collect();
                                !prow.contains_key(*o)
                                    && op.len() == parts.len()
                                    && op.iter().zip(&parts).zip(&keys).all(|((a, b), k)| {
                                        // Only names are cut, not numbers or addresses.
                                        if *k == "comm" || k.starts_with("dso_") {
                                            a.starts_with(b)
                                        } else {
                                            a == b
                                        }
                                    })
                            })
                            .collect();
                        match found[..] {
                            [one] => {
                                by_prefix.push(one.clone());
                                one.clone()
                            }
                            _ => k.clone(),
                        }
                    };
                    match orow.get(&key) {
                        None => problems.push(format!("[{ev}] perf row missing: {k:?} {p}")),
                        Some(o) if (p - o).abs() > 0.1 => {
                            problems.push(format!("[{ev}] {k:?}: perf {p} culprit {o}"))
                        }
                        Some(_) => {}
                    }
                }
                for (k, o) in orow {
                    if !prow.contains_key(k) && !by_prefix.contains(k) {
                        problems.push(format!("[{ev}] culprit row not in perf: {k:?} {o}"));
                    }
                }
            }
            assert!(
                problems.is_empty(),
                "{what}: {} mismatches:\n{}",
                problems.len(),
                problems
                    .iter()
                    .take(30)
                    .cloned()
                    .collect::<Vec<_>>()
                    .join("\n")
            );
        }
    }
}
