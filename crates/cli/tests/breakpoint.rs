//! Hardware breakpoints (`-e mem:ADDR:rw`, PERF_TYPE_BREAKPOINT) on this VM, which has no PMU:
//! a live, real-hardware test of de-skid. A data breakpoint traps *after* the accessing
//! instruction, so every sample's IP is the next instruction; `annotate --deskid` must put
//! the samples back on the access.
//!
//! The watched address comes from the workload itself (`WORKLOAD_PRINT_WATCH` prints it) run
//! under `setarch -R` (no address randomization), so that the recorded run has the same
//! address. Oracles: perf reads culprit's file (`perf evlist -v`, `perf script`), objdump
//! disassembles the workload, and the workloads' structure gives exact hit counts (the
//! pointer chase walks one cycle through every node: node 0 is read every `n` steps).

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// Pointer-chase size (MiB: 131072 nodes) and steps: node 0 is read ceil(steps / nodes)
/// times, and written once while the cycle is built.
const CHASE_MIB: u64 = 1;
const CHASE_STEPS: u64 = 30_000_000;
/// Matrix size: b[0][0] is read once per row of the result, written once at initialization.
const MATRIX_N: u64 = 200;

/// The watched address the workload prints under `setarch -R` with these arguments.
fn watch_address(bin: &Path, args: &[String]) -> String {
    let out = common::run_ok(
        Command::new("setarch")
            .arg("-R")
            .arg(bin)
            .args(args)
            .env("WORKLOAD_PRINT_WATCH", "1"),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    err.lines()
        .find_map(|l| l.strip_prefix("watch: "))
        .unwrap_or_else(|| panic!("{} printed no watch address: {err}", bin.display()))
        .trim()
        .to_string()
}

/// Records a data breakpoint on the workload's watched address; returns (file, address).
fn record(test: &str, workload: &str, args: &[String]) -> (PathBuf, String) {
    let bin = common::workload(workload);
    let addr = watch_address(&bin, args);
    let dir = common::scratch(test);
    let file = dir.join("bp.data");
    common::run_ok(
        common::culprit()
            .args(["record", "-q", "-e"])
            .arg(format!("mem:{addr}:rw"))
            .arg("-o")
            .arg(&file)
            .args(["--", "setarch", "-R"])
            .arg(&bin)
            .args(args),
    );
    (file, addr)
}

/// perf's view of the file: its event line from `perf evlist -v`, and the offsets in `func`
/// of the workload's samples there (`perf script -F comm,ip,sym,symoff`).
fn perf_view(file: &Path, comm: &str, func: &str) -> (String, Vec<u64>) {
    let ev = common::run_ok(common::perf().args(["evlist", "-v", "-i"]).arg(file));
    let evlist = String::from_utf8_lossy(&ev.stdout).to_string();
    let out = common::run_ok(
        common::perf()
            .args(["script", "-F", "comm,ip,sym,symoff", "-i"])
            .arg(file),
    );
    let prefix = format!("{func}+0x");
    let offsets = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            let off = w.get(2)?.strip_prefix(&prefix)?;
            (w.len() == 3 && w[0] == comm)
                .then(|| u64::from_str_radix(off, 16).ok())
                .flatten()
        })
        .collect();
    (evlist, offsets)
}

/// `culprit annotate --deskid --format json FUNC`: per instruction address, (raw, de-skidded)
/// samples of the one event, and the function's event class and estimate flag.
fn annotate(file: &Path, func: &str) -> (Vec<(u64, u64, u64)>, Value) {
    let out = common::run_ok(
        common::culprit()
            .args(["annotate", "--deskid", "--format", "json", "-i"])
            .arg(file)
            .arg(func),
    );
    let doc: Value = serde_json::from_slice(&out.stdout).expect("annotate JSON");
    let rows = doc["instructions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            let ip = u64::from_str_radix(i["ip"].as_str().unwrap().trim_start_matches("0x"), 16)
                .unwrap();
            let one = |v: &Value| {
                v.as_object()
                    .unwrap()
                    .values()
                    .next()
                    .unwrap()
                    .as_u64()
                    .unwrap()
            };
            (ip, one(&i["samples"]), one(&i["deskid"]))
        })
        .collect();
    (rows, doc)
}

/// The checks common to both workloads: perf reads the breakpoint as recorded; the raw
/// column puts ≥ 95 % of the function's samples on one instruction, the one after a memory
/// access (objdump), and de-skid puts ≥ 95 % on that access, marked exact.
fn check_deskid(file: &Path, addr: &str, bin: &Path, comm: &str, func: &str, expected_hits: u64) {
    let (evlist, perf_offsets) = perf_view(file, comm, func);
    let want = format!("bp_type: 3, {{ bp_addr, config1 }}: {addr}, {{ bp_len, config2 }}: 0x4");
    assert!(
        evlist.contains(&format!("mem:{addr}:rw")) && evlist.contains(&want),
        "perf evlist -v: {evlist}"
    );
    assert_eq!(
        perf_offsets.len() as u64,
        expected_hits,
        "perf script samples in {func}"
    );

    let (rows, doc) = annotate(file, func);
    assert_eq!(doc["event_info"][0]["class"], "data_breakpoint", "{doc}");
    assert_eq!(
        doc["deskid_is_estimate"], false,
        "data breakpoints are exact"
    );
    let total: u64 = rows.iter().map(|r| r.1).sum();
    assert_eq!(total, expected_hits, "{func}: annotate's samples");

    let code = common::objdump_function(bin, func);
    let (raw_at, raw) = rows.iter().map(|r| (r.0, r.1)).max_by_key(|r| r.1).unwrap();
    let (fixed_at, fixed) = rows.iter().map(|r| (r.0, r.2)).max_by_key(|r| r.1).unwrap();
    assert!(
        raw * 100 >= total * 95,
        "{func}: raw {raw} of {total} at {raw_at:#x}"
    );
    assert!(
        fixed * 100 >= total * 95,
        "{func}: de-skid {fixed} of {total} at {fixed_at:#x}"
    );
    // The trap IP is the instruction after the access, in objdump's disassembly too.
    let k = code
        .iter()
        .position(|i| i.addr == raw_at)
        .unwrap_or_else(|| panic!("{raw_at:#x} is not an instruction of {func}: {code:?}"));
    assert!(k > 0, "{func}: samples on the first instruction");
    let access = &code[k - 1];
    assert_eq!(
        fixed_at, access.addr,
        "{func}: de-skid target vs objdump {access:?}"
    );
    assert!(
        access.ops.contains('(') && !access.mnem.starts_with("lea"),
        "{func}: the culprit {access:?} accesses memory"
    );
    // perf agrees on the raw column: all but the few samples the raw column may have
    // elsewhere are at the trap IP's offset in the function.
    let at_trap = perf_offsets
        .iter()
        .filter(|&&o| o == raw_at - code[0].addr)
        .count() as u64;
    assert_eq!(
        at_trap, raw,
        "perf script offsets {perf_offsets:x?} vs {raw_at:#x}"
    );
}

#[test]
fn test_breakpoint_on_a_pointer_chase_node_deskids_to_the_load() {
    if !common::require_perf("test_breakpoint_on_a_pointer_chase_node_deskids_to_the_load") {
        return;
    }
    let args = vec![CHASE_MIB.to_string(), CHASE_STEPS.to_string()];
    let (file, addr) = record("bp-chase", "pointer_chase", &args);
    let nodes = CHASE_MIB * 1024 * 1024 / 8;
    let reads = CHASE_STEPS.div_ceil(nodes);
    let bin = common::workload("pointer_chase");
    check_deskid(&file, &addr, &bin, "pointer_chase", "chase", reads);
}

#[test]
fn test_breakpoint_on_a_matrix_element_deskids_to_the_load() {
    if !common::require_perf("test_breakpoint_on_a_matrix_element_deskids_to_the_load") {
        return;
    }
    let args = vec![MATRIX_N.to_string()];
    let (file, addr) = record("bp-matrix", "simple_classic", &args);
    let bin = common::workload("simple_classic");
    check_deskid(
        &file,
        &addr,
        &bin,
        "simple_classic",
        "multiply_matrices",
        MATRIX_N,
    );
}

/// Entries of a trace aggregation as (first key, value).
fn entries(doc: &Value, name: &str) -> Vec<(String, i64)> {
    let agg = doc["aggregations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == name)
        .unwrap_or_else(|| panic!("no @{name} in {doc}"));
    agg["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let key = match &e["keys"][0] {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            (key, e["value"].as_i64().unwrap())
        })
        .collect()
}

#[test]
fn test_trace_breakpoint_probe_live_and_offline() {
    let bin = common::workload("pointer_chase");
    let args = vec![CHASE_MIB.to_string(), CHASE_STEPS.to_string()];
    let addr = watch_address(&bin, &args);
    let reads = CHASE_STEPS.div_ceil(CHASE_MIB * 1024 * 1024 / 8) as i64;
    // Per function hits, and per thread the running count kept in a thread-local.
    let program = format!(
        "mem:::{addr}:rw /execname == \"pointer_chase\"/ {{ @hits[sym] = count(); self->n++; @most[tid] = max(self->n); }}"
    );
    let out = common::run_ok(
        common::culprit()
            .args([
                "trace", "--format", "json", "-e", &program, "--", "setarch", "-R",
            ])
            .arg(&bin)
            .args(&args),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let doc: Value = serde_json::from_str(text.lines().last().expect("a JSON line")).unwrap();
    common::validate_json_schema("trace", text.lines().last().unwrap());
    let hits = entries(&doc, "hits");
    assert!(hits.contains(&("chase".to_string(), reads)), "{hits:?}");
    assert!(hits.contains(&("main".to_string(), 1)), "{hits:?}");
    let most = entries(&doc, "most");
    assert_eq!(most.len(), 1, "one thread: {most:?}");
    assert_eq!(
        most[0].1,
        reads + 1,
        "self->n counts every hit of the thread"
    );

    // Offline, over culprit's recording: the probe matches the file's breakpoint by
    // address, with or without its access letters; another address is an error.
    let (file, addr) = record("bp-trace", "pointer_chase", &args);
    for probe in [format!("mem:::{addr}"), format!("mem:::{addr}:rw")] {
        let out = common::run_ok(
            common::culprit()
                .args(["trace", "--format", "json", "-i"])
                .arg(&file)
                .args(["-e", &format!("{probe} {{ @[sym] = count(); }}")]),
        );
        let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(
            entries(&doc, "").contains(&("chase".to_string(), reads)),
            "{probe}: {doc}"
        );
    }
    let out = common::culprit()
        .args(["trace", "-i"])
        .arg(&file)
        .args(["-e", "mem:::0x1000 { @ = count(); }"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no such event") && err.contains(&format!("mem:{addr}:rw")),
        "{err}"
    );
}

#[test]
fn test_breakpoint_counts_in_stat_and_refuses_what_x86_cannot_watch() {
    let bin = common::workload("pointer_chase");
    let args = vec![CHASE_MIB.to_string(), CHASE_STEPS.to_string()];
    let addr = watch_address(&bin, &args);
    let reads = CHASE_STEPS.div_ceil(CHASE_MIB * 1024 * 1024 / 8);
    let out = common::run_ok(
        common::culprit()
            .args(["stat", "--format", "json", "-e"])
            .arg(format!("mem:{addr}:rw"))
            .args(["--", "setarch", "-R"])
            .arg(&bin)
            .args(&args),
    );
    // The workload's own output comes first on stdout, then the JSON object.
    let text = String::from_utf8_lossy(&out.stdout);
    let doc: Value = serde_json::from_str(&text[text.find('{').expect("JSON")..]).unwrap();
    let ev = &doc["events"][0];
    assert_eq!(ev["name"], format!("mem:{addr}:rw"), "{doc}");
    // Every read of the node plus the write that built the cycle.
    assert_eq!(ev["value"].as_u64(), Some(reads + 1), "{doc}");
    for (bad, says) in [
        ("mem:0x1000:r", "cannot watch reads alone"),
        ("mem:0x1002/4", "not aligned"),
        ("mem:0x1000/3", "1, 2, 4 or 8"),
        ("mem:zz", "not an address"),
    ] {
        let out = common::culprit()
            .args(["record", "-q", "-o", "/dev/null", "-e", bad, "--", "true"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{bad}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says), "{bad}: {err}");
    }
}

/// Samples in a perf.data file, as `perf script` lists them.
fn perf_script_samples(file: &Path) -> usize {
    let out = common::run_ok(
        Command::new("perf")
            .args(["script", "-F", "ip", "-i"])
            .arg(file),
    );
    String::from_utf8_lossy(&out.stdout).lines().count()
}

#[test]
fn test_breakpoint_takes_the_period_of_c_as_perf_does() {
    if !common::require_perf("test_breakpoint_takes_the_period_of_c_as_perf_does") {
        return;
    }
    // b[0][0] is read MATRIX_N times and written about once: with -c 10 both tools sample
    // every tenth hit (culprit used to ignore -c on breakpoints and sample every hit).
    let bin = common::workload("simple_classic");
    let args = vec![MATRIX_N.to_string()];
    let addr = watch_address(&bin, &args);
    let dir = common::scratch("bp-period");
    let record = |tool: &mut Command, file: &Path| {
        common::run_ok(
            tool.args(["record", "-q", "-c", "10", "-e"])
                .arg(format!("mem:{addr}:rw"))
                .arg("-o")
                .arg(file)
                .args(["--", "setarch", "-R"])
                .arg(&bin)
                .args(&args),
        );
    };
    let (ours, theirs) = (dir.join("culprit.data"), dir.join("perf.data"));
    record(&mut common::culprit(), &ours);
    record(Command::new("perf").arg("--no-pager"), &theirs);
    let (n_ours, n_theirs) = (perf_script_samples(&ours), perf_script_samples(&theirs));
    // The writes to b[0][0] vary by one between runs (so do perf's own counts): equal within 1.
    assert!(
        n_ours.abs_diff(n_theirs) <= 1,
        "samples with -c 10: culprit {n_ours}, perf {n_theirs}"
    );
    let expected = MATRIX_N / 10;
    assert!(
        (expected - 1..=expected + 1).contains(&(n_ours as u64)),
        "{n_ours} samples, expected about {expected}"
    );
}
