//! `culprit stat` end to end.
//!
//! - software counters (work everywhere, also on PMU-less VMs): text, JSON, CSV, `-r`, `-I`,
//!   inheritance to children, `-p`, `-a`, exit status, error messages;
//! - hardware (gated with `require_hardware_pmu`): Top-Down level 1 against a hand
//!   computation from `perf stat -x,` raw counts of the same events (the independent oracle),
//!   the expected shapes on branchy and pointer_chase, multiplexed vs `--no-multiplex`.

use crate::common;

use std::process::{Command, Output};

use common::{culprit, pmu_lock, require_hardware_pmu, require_perf, run_ok, workload};
use serde_json::Value;

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn json(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("bad JSON ({e}):\n{}\nstderr:\n{}", stdout(o), stderr(o)))
}

/// Runs `culprit stat --format json -o FILE ARGS -- CMD` (the JSON goes to a file so the
/// command's own stdout does not mix with it) and parses FILE.
fn stat_json(args: &[&str], cmd: &[&str]) -> Value {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = common::repo_root().join("target/test-tmp/stat-json");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join(format!(
        "{}-{}.json",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    ));
    let o = run_ok(
        culprit()
            .args(["stat", "--format", "json", "-o"])
            .arg(&file)
            .args(args)
            .arg("--")
            .args(cmd),
    );
    let text = std::fs::read_to_string(&file).unwrap();
    let _ = std::fs::remove_file(&file);
    serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("bad JSON ({e}):\n{text}\nstderr:\n{}", stderr(&o)))
}

fn event<'a>(j: &'a Value, name: &str) -> &'a Value {
    j["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == name)
        .unwrap_or_else(|| panic!("no event {name} in {j}"))
}

/// The task-clock (ns) culprit counts for a command, from JSON.
fn task_clock_ns(cmd: &[&str]) -> f64 {
    event(&stat_json(&["-e", "task-clock"], cmd), "task-clock")["scaled"]
        .as_f64()
        .unwrap()
}

const SW: &str = "task-clock,page-faults,context-switches";

#[test]
fn test_stat_software_counters_text() {
    let _l = pmu_lock();
    let shares = workload("shares");
    let o = run_ok(culprit().args(["stat", "-e", SW, "--"]).arg(&shares));
    let err = stderr(&o);
    assert!(err.contains("Performance counter stats for"), "{err}");
    assert!(err.contains("seconds time elapsed"), "{err}");
    let line = |name: &str| {
        err.lines()
            .find(|l| l.split_whitespace().any(|w| w == name))
            .unwrap_or_else(|| panic!("no {name} line in\n{err}"))
            .to_string()
    };
    // shares burns a few hundred ms of CPU: task-clock in msec, far above zero.
    let tc = line("task-clock");
    let msec: f64 = tc.split_whitespace().next().unwrap().parse().unwrap();
    assert!(msec > 50.0, "{tc}");
    assert!(tc.contains("msec") && tc.contains("CPUs utilized"), "{tc}");
    let pf: u64 = line("page-faults")
        .split_whitespace()
        .next()
        .unwrap()
        .replace(',', "")
        .parse()
        .unwrap();
    assert!(pf > 10, "{pf}");
    line("context-switches");
    // The command's own output still reaches stdout.
    assert!(stdout(&o).contains("sink"), "{}", stdout(&o));
}

#[test]
fn test_stat_json_repeats_mean_and_stddev() {
    let _l = pmu_lock();
    let shares = workload("shares");
    let j = stat_json(&["-r", "3", "-e", SW], &[shares.to_str().unwrap()]);
    assert_eq!(j["runs"], 3);
    assert_eq!(j["exit_code"], 0);
    assert_eq!(j["events"].as_array().unwrap().len(), 3);
    for name in ["task-clock", "page-faults", "context-switches"] {
        let e = event(&j, name);
        let (value, scaled) = (e["value"].as_u64().unwrap(), e["scaled"].as_f64().unwrap());
        let (ena, run) = (
            e["enabled_ns"].as_u64().unwrap(),
            e["running_ns"].as_u64().unwrap(),
        );
        assert!(run <= ena && ena > 0, "{e}");
        // Software events never multiplex: scaled = raw (up to rounding of the mean).
        assert!((scaled - value as f64).abs() <= 1.0, "{e}");
        assert!(e["stddev"].as_f64().is_some(), "3 runs give a stddev: {e}");
        assert_eq!(e["running_pct"].as_f64(), Some(100.0));
    }
    let tc = event(&j, "task-clock")["scaled"].as_f64().unwrap();
    assert!(tc > 50e6, "task-clock {tc} ns");
    let elapsed = j["elapsed_ns"].as_f64().unwrap();
    let cpus = j["metrics"]["cpus_utilized"]["value"].as_f64().unwrap();
    // Single-threaded: at most one CPU (and task-clock / wall-clock is exactly that).
    assert!(cpus > 0.2 && cpus <= 1.05, "cpus_utilized {cpus}");
    assert!(
        (cpus - tc / elapsed).abs() < 0.01,
        "{cpus} vs {}",
        tc / elapsed
    );
    assert!(j["elapsed_stddev_ns"].as_f64().is_some());
    assert!(j["topdown"].is_null());
    assert_eq!(j["schema"], 1);
    common::validate_json_schema("stat", &j.to_string());
}

#[test]
fn test_stat_counts_children_and_threads() {
    let _l = pmu_lock();
    let shares = workload("shares");
    let one = task_clock_ns(&[shares.to_str().unwrap()]);
    // The same work done twice by grandchildren of a shell: only inheritance counts it.
    let cmd = format!("{0} >/dev/null & {0} >/dev/null; wait", shares.display());
    let two = task_clock_ns(&["sh", "-c", &cmd]);
    assert!(two > 1.6 * one && two < 2.6 * one, "one {one} two {two}");
}

#[test]
fn test_stat_intervals_sum_to_total() {
    let _l = pmu_lock();
    let shares = workload("shares");
    let j = stat_json(
        &["-I", "100", "-e", "task-clock,page-faults"],
        &[shares.to_str().unwrap()],
    );
    common::validate_json_schema("stat", &j.to_string());
    let ivs = j["intervals"].as_array().unwrap();
    assert!(ivs.len() >= 3, "{} intervals", ivs.len());
    let times: Vec<f64> = ivs.iter().map(|i| i["time_s"].as_f64().unwrap()).collect();
    assert!(times.windows(2).all(|w| w[1] > w[0]), "{times:?}");
    // Ticks every 100 ms (give the scheduler 50 ms).
    assert!((times[0] - 0.1).abs() < 0.05, "{times:?}");
    for name in ["task-clock", "page-faults"] {
        let sum: u64 = ivs
            .iter()
            .map(|i| {
                i["events"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|e| e["name"] == name)
                    .unwrap()["value"]
                    .as_u64()
                    .unwrap()
            })
            .sum();
        assert_eq!(sum, event(&j, name)["value"].as_u64().unwrap(), "{name}");
    }
    // Text form: perf's header and one line per event per interval.
    let o = run_ok(
        culprit()
            .args(["stat", "-I", "100", "-e", "task-clock", "--"])
            .arg(&shares),
    );
    let err = stderr(&o);
    assert!(
        err.contains("#           time             counts unit events"),
        "{err}"
    );
    let lines = err.lines().filter(|l| l.contains("task-clock")).count();
    assert!(lines >= 3, "{err}");
}

#[test]
fn test_stat_csv_fields() {
    let _l = pmu_lock();
    for (args, sep) in [
        (vec!["-x", ";"], ";"),
        (vec!["-x,"], ","),
        (vec!["--format", "csv"], ","),
    ] {
        let o = run_ok(culprit().arg("stat").args(&args).args([
            "-e",
            SW,
            "--",
            "sh",
            "-c",
            "echo hi >/dev/null",
        ]));
        let out = stdout(&o);
        let rows: Vec<Vec<&str>> = out.lines().map(|l| l.split(sep).collect()).collect();
        assert_eq!(rows.len(), 3, "{args:?}: {out}");
        for (row, name) in rows
            .iter()
            .zip(["task-clock", "page-faults", "context-switches"])
        {
            assert_eq!(row.len(), 7, "{row:?}");
            assert_eq!(row[2], name);
            assert!(row[0].parse::<f64>().is_ok(), "{row:?}");
            assert_eq!(row[4], "100.00");
        }
        assert_eq!(rows[0][1], "msec");
        assert_eq!(rows[0][6], "CPUs utilized");
    }
}

#[test]
fn test_stat_exit_status_and_errors() {
    let _l = pmu_lock();
    let o = culprit()
        .args(["stat", "-e", "task-clock", "--", "sh", "-c", "exit 5"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(5), "{}", stderr(&o));
    let o = culprit()
        .args(["stat", "-e", "task-clock", "--", "no-such-command-xyz"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("command not found: 'no-such-command-xyz'"),
        "{}",
        stderr(&o)
    );
    let o = culprit()
        .args(["stat", "-e", "task-clock"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("nothing to stat"), "{}", stderr(&o));
    let o = culprit()
        .args(["stat", "-e", "task-clock", "-p", "2147483000"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("no such process"), "{}", stderr(&o));
    let o = culprit()
        .args(["stat", "-e", "no-such-event-xyz", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("unknown event `no-such-event-xyz`"),
        "{}",
        stderr(&o)
    );
    // Flag rules.
    for bad in [
        vec!["stat", "--level", "2", "--", "true"],
        vec!["stat", "--topdown", "--level", "3", "--", "true"],
        vec!["stat", "-r", "2", "-I", "100", "--", "true"],
        vec!["stat", "-r", "0", "--", "true"],
        vec!["stat", "--topdown", "--no-multiplex", "-p", "1"],
    ] {
        let o = culprit().args(&bad).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{bad:?}");
    }
}

#[test]
fn test_stat_pid_and_system_wide() {
    let _l = pmu_lock();
    let mut child = Command::new("sh")
        .args(["-c", "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done"])
        .spawn()
        .unwrap();
    let o = run_ok(culprit().args([
        "stat",
        "--format",
        "json",
        "-e",
        "task-clock",
        "-p",
        &child.id().to_string(),
    ]));
    child.wait().unwrap();
    let j = json(&o);
    assert!(j["target"].as_str().unwrap().contains("process id"), "{j}");
    // Attached while it spun: it ran until it exited.
    assert!(
        event(&j, "task-clock")["value"].as_u64().unwrap() > 10_000_000,
        "{j}"
    );
    let o = run_ok(culprit().args([
        "stat",
        "--format",
        "json",
        "-a",
        "-e",
        "task-clock",
        "--",
        "sleep",
        "0.2",
    ]));
    let j = json(&o);
    // Every online CPU's clock ticks system-wide, busy or idle.
    let cpus = culprit_collect::procfs::online_cpus().len() as f64;
    let tc = event(&j, "task-clock")["value"].as_f64().unwrap();
    assert!(tc > 0.15e9 * cpus, "{tc} ns on {cpus} CPUs");
}

#[test]
fn test_stat_hardware_events_without_pmu_say_so() {
    let _l = pmu_lock();
    let cycles = culprit()
        .args(["stat", "--format", "json", "-e", "cycles", "--", "true"])
        .output()
        .unwrap();
    let td = culprit()
        .args(["stat", "--topdown", "--", "true"])
        .output()
        .unwrap();
    if common::hardware_pmu() {
        // With a PMU, cycles counts (the Top-Down run is tested by the hardware tests).
        let j = json(&cycles);
        assert!(event(&j, "cycles")["value"].as_u64().unwrap() > 0, "{j}");
    } else {
        assert_eq!(cycles.status.code(), Some(2));
        let e = stderr(&cycles);
        assert!(
            e.contains("'cycles' is not supported here") && e.contains("no hardware PMU"),
            "{e}"
        );
        assert_eq!(td.status.code(), Some(2));
        let e = stderr(&td);
        assert!(e.contains("--topdown needs a hardware PMU"), "{e}");
        assert!(e.contains("culprit stat -e task-clock"), "{e}");
    }
}

#[test]
fn test_stat_default_events_not_supported_rows_as_perf() {
    let _l = pmu_lock();
    // The default set always lists the hardware events; without a PMU they are
    // `<not supported>` rows (as perf stat), never silently dropped.
    let j = stat_json(&[], &["true"]);
    common::validate_json_schema("stat", &j.to_string());
    let names: Vec<&str> = j["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "task-clock",
            "context-switches",
            "cpu-migrations",
            "page-faults",
            "cycles",
            "instructions",
            "branches",
            "branch-misses"
        ]
    );
    let pmu = common::hardware_pmu();
    let cycles = event(&j, "cycles");
    assert_eq!(cycles["supported"], pmu, "{cycles}");
    assert_eq!(event(&j, "task-clock")["supported"], true);
    if pmu {
        return;
    }
    assert!(cycles["scaled"].is_null(), "{cycles}");
    // Text: perf's `<not supported>` rows.
    let o = run_ok(culprit().args(["stat", "--", "true"]));
    let err = stderr(&o);
    for name in ["cycles", "instructions", "branches", "branch-misses"] {
        assert!(
            err.lines()
                .any(|l| l.contains("<not supported>") && l.trim_end().ends_with(name)),
            "no <not supported> {name} row in\n{err}"
        );
    }
    // CSV: `<not supported>` in the value field, as `perf stat -x,`.
    let o = run_ok(culprit().args(["stat", "-x,", "--", "true"]));
    let out = stdout(&o);
    assert!(
        out.lines()
            .any(|l| l == "<not supported>,,cycles,0,100.00,,"),
        "{out}"
    );
}

#[test]
fn test_help_examples_work_without_a_pmu() {
    // Every example that needs hardware events says so.
    for verb in [&[][..], &["record"], &["stat"]] {
        let o = run_ok(culprit().args(verb).arg("--help"));
        let text = stdout(&o);
        let examples = text.split("EXAMPLES:").nth(1).unwrap_or("");
        for line in examples.lines().take_while(|l| !l.trim().is_empty()) {
            let hardware = [
                "cycles",
                "instructions",
                "branch",
                "cache-misses",
                "--topdown",
            ]
            .iter()
            .any(|h| line.contains(h));
            assert!(
                !hardware || line.contains("needs a PMU") || line.contains("without a PMU"),
                "{verb:?} --help: `{line}` needs a PMU and does not say so"
            );
        }
    }
}

// ---------------------------------------------------------------------------------------
// Hardware: Top-Down.

fn topdown_json(extra: &[&str], cmd: &[&str]) -> Value {
    let mut args = vec!["--topdown"];
    args.extend(extra);
    let j = stat_json(&args, cmd);
    common::validate_json_schema("stat", &j.to_string());
    j
}

fn l1(j: &Value, name: &str) -> f64 {
    j["topdown"]["level1"][name].as_f64().unwrap()
}

fn node<'a>(tree: &'a Value, name: &str) -> Option<&'a Value> {
    for n in tree.as_array()? {
        if n["name"] == name {
            return Some(n);
        }
        if let Some(c) = node(&n["children"], name) {
            return Some(c);
        }
    }
    None
}

const LEVEL1: [&str; 5] = [
    "frontend_bound",
    "bad_speculation",
    "backend_bound",
    "retiring",
    "smt_contention",
];

/// Parses `perf stat -x,` lines: (event, value) in order; panics on not counted/supported.
fn perf_csv(text: &str) -> Vec<(String, f64)> {
    text.lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .filter_map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            if f.len() < 3 {
                return None;
            }
            let v: f64 = f[0]
                .parse()
                .unwrap_or_else(|_| panic!("perf could not count: {l}"));
            Some((f[2].to_string(), v))
        })
        .collect()
}

/// perf's spelling of a planned event.
fn perf_event(e: &Value) -> String {
    let config = e["config"].as_str().unwrap().trim_start_matches("0x");
    match (e["attr_type"].as_u64().unwrap(), config) {
        (0, "0") => "cycles".to_string(),
        (0, "1") => "instructions".to_string(),
        (4, c) => format!("r{c}"),
        other => panic!("unexpected event encoding {other:?}"),
    }
}

#[test]
fn test_topdown_level1_matches_perf_stat_oracle() {
    if !require_hardware_pmu("test_topdown_level1_matches_perf_stat_oracle")
        || !require_perf("test_topdown_level1_matches_perf_stat_oracle")
    {
        return;
    }
    let _l = pmu_lock();
    let branchy = workload("branchy");
    let cmd = [branchy.to_str().unwrap(), "8", "10"];
    let j = topdown_json(&["--no-multiplex"], &cmd);
    let td = &j["topdown"];
    let sum: f64 = LEVEL1.iter().map(|n| l1(&j, n)).sum();
    assert!((sum - 1.0).abs() <= 0.01, "level-1 sum {sum}: {td}");
    let model = td["model"].as_str().unwrap();
    assert!(
        model.starts_with("AMD"),
        "the perf oracle is written for AMD Zen (got {model})"
    );
    // The same groups counted by perf stat -x, (one perf run per group, as --no-multiplex).
    let width = td["slots_per_cycle"].as_f64().unwrap();
    let mut groups: Vec<Vec<(String, f64)>> = Vec::new();
    for g in td["groups"].as_array().unwrap() {
        let g = g.as_array().unwrap();
        let spec = format!(
            "{{{}}}",
            g.iter().map(perf_event).collect::<Vec<_>>().join(",")
        );
        let o = common::perf()
            .args(["stat", "-x,", "-e", &spec, "--"])
            .args(cmd)
            .output()
            .unwrap();
        assert!(o.status.success(), "perf stat -e {spec}: {}", stderr(&o));
        let rows = perf_csv(&stderr(&o));
        assert_eq!(rows.len(), g.len(), "{}", stderr(&o));
        // perf prints the events in the order given; name them by culprit's names.
        groups.push(
            g.iter()
                .zip(rows)
                .map(|(e, (_, v))| (e["name"].as_str().unwrap().to_string(), v))
                .collect(),
        );
    }
    // Hand computation (topdown.md section 1) inside the first group holding the events.
    let frac = |num: &[&str], minus: &[&str]| -> f64 {
        let g = groups
            .iter()
            .find(|g| {
                num.iter()
                    .chain(minus)
                    .all(|n| g.iter().any(|(x, _)| x == n))
            })
            .unwrap_or_else(|| panic!("no group holds {num:?} {minus:?}"));
        let v = |n: &str| g.iter().find(|(x, _)| x == n).unwrap().1;
        let cycles = g[0].1;
        let top: f64 =
            num.iter().map(|n| v(n)).sum::<f64>() - minus.iter().map(|n| v(n)).sum::<f64>();
        top / (width * cycles)
    };
    let want = [
        (
            "frontend_bound",
            frac(&["de_no_dispatch_per_slot.no_ops_from_frontend"], &[]),
        ),
        (
            "backend_bound",
            frac(&["de_no_dispatch_per_slot.backend_stalls"], &[]),
        ),
        (
            "smt_contention",
            frac(&["de_no_dispatch_per_slot.smt_contention"], &[]),
        ),
        ("retiring", frac(&["ex_ret_ops"], &[])),
        (
            "bad_speculation",
            frac(&["de_src_op_disp.all"], &["ex_ret_ops"]),
        ),
    ];
    for (name, want) in want {
        let got = l1(&j, name);
        assert!(
            (got - want).abs() <= 0.03,
            "{name}: culprit {got} vs perf {want}"
        );
    }
}

#[test]
fn test_topdown_branchy_bad_speculation() {
    if !require_hardware_pmu("test_topdown_branchy_bad_speculation") {
        return;
    }
    let _l = pmu_lock();
    let branchy = workload("branchy");
    let j = topdown_json(&["--level", "2"], &[branchy.to_str().unwrap(), "8", "10"]);
    let bs = l1(&j, "bad_speculation");
    assert!(bs >= 0.15, "bad_speculation {bs}: {}", j["topdown"]);
    let sum: f64 = LEVEL1.iter().map(|n| l1(&j, n)).sum();
    assert!((sum - 1.0).abs() <= 0.01, "sum {sum}");
    let n = node(&j["topdown"]["tree"], "bad_speculation").unwrap();
    assert_eq!(n["flagged"], true);
    let r = n["reliability"].as_f64().unwrap();
    assert!((0.0..=1.0).contains(&r));
}

#[test]
fn test_topdown_pointer_chase_memory_bound() {
    if !require_hardware_pmu("test_topdown_pointer_chase_memory_bound") {
        return;
    }
    let _l = pmu_lock();
    let chase = workload("pointer_chase");
    let j = topdown_json(
        &["--level", "2", "--no-multiplex"],
        // 64 MiB (past the L3) and many steps, so the chase dominates the setup.
        &[chase.to_str().unwrap(), "64", "40000000"],
    );
    let be = l1(&j, "backend_bound");
    assert!(be >= 0.8, "backend_bound {be}: {}", j["topdown"]);
    let tree = &j["topdown"]["tree"];
    let (mem, core) = match (node(tree, "memory"), node(tree, "memory_bound")) {
        (Some(m), _) => (m, node(tree, "cpu").unwrap()),
        (None, Some(m)) => (m, node(tree, "core_bound").unwrap()),
        _ => panic!("no memory node: {tree}"),
    };
    assert!(
        mem["value"].as_f64().unwrap() > core["value"].as_f64().unwrap(),
        "{mem} vs {core}"
    );
    assert!(
        j["topdown"]["bottleneck"]
            .as_str()
            .unwrap()
            .contains("memory"),
        "{}",
        j["topdown"]
    );
}

#[test]
fn test_topdown_multiplexed_vs_no_multiplex() {
    if !require_hardware_pmu("test_topdown_multiplexed_vs_no_multiplex") {
        return;
    }
    let _l = pmu_lock();
    let branchy = workload("branchy");
    let cmd = [branchy.to_str().unwrap(), "8", "10"];
    // Level 2 needs more events than counters: forced multiplexing.
    let mux = topdown_json(&["--level", "2"], &cmd);
    let solo = topdown_json(&["--level", "2", "--no-multiplex"], &cmd);
    assert_eq!(mux["topdown"]["mode"], "multiplexed", "{}", mux["topdown"]);
    assert_eq!(solo["topdown"]["mode"], "no_multiplex");
    for name in LEVEL1 {
        let (a, b) = (l1(&mux, name), l1(&solo, name));
        assert!(
            (a - b).abs() <= 0.05,
            "{name}: multiplexed {a} vs no-multiplex {b}"
        );
    }
    let rel = |j: &Value, n: &str| {
        node(&j["topdown"]["tree"], n).unwrap()["reliability"]
            .as_f64()
            .unwrap()
    };
    for name in [
        "frontend_bound",
        "backend_bound",
        "bad_speculation",
        "retiring",
    ] {
        assert!(rel(&solo, name) > 0.99, "{name} no-multiplex reliability");
        assert!(
            rel(&mux, name) < rel(&solo, name),
            "{name}: multiplexed reliability {} should drop",
            rel(&mux, name)
        );
    }
}

// ---------------------------------------------------------------------------------------
// Per-function Top-Down (record --topdown, report --topdown).

/// A PERF_RECORD_SAMPLE for sample_type IDENTIFIER|IP|TID|TIME|CPU|PERIOD.
fn sample_bytes(id: u64, ip: u64, pid: u32, time: u64, period: u64) -> Vec<u8> {
    let mut r = Vec::with_capacity(56);
    r.extend_from_slice(&9u32.to_le_bytes());
    r.extend_from_slice(&2u16.to_le_bytes()); // PERF_RECORD_MISC_USER
    r.extend_from_slice(&56u16.to_le_bytes());
    for v in [id, ip] {
        r.extend_from_slice(&v.to_le_bytes());
    }
    r.extend_from_slice(&pid.to_le_bytes());
    r.extend_from_slice(&pid.to_le_bytes());
    r.extend_from_slice(&time.to_le_bytes());
    r.extend_from_slice(&0u64.to_le_bytes()); // cpu, res
    r.extend_from_slice(&period.to_le_bytes());
    r
}

/// Writes a Zen 5 `record --topdown`-shaped file: the six level-1 events (raw configs from
/// topdown.md), two processes, `per_comm` = (comm, [(sample count, period) per event]).
fn write_topdown_file(path: &std::path::Path, cpuid: &str, per_comm: &[(&str, [(u64, u64); 6])]) {
    use culprit_collect::perfdata::records::{self, SampleId};
    use culprit_collect::perfdata::{Attr, Features, FileAttr, PerfDataWriter};
    use culprit_decode::abi::{attr_flag, read_format, sample_type};
    let configs: [(&str, u64); 6] = [
        ("ls_not_halted_cyc", 0x76),
        ("de_no_dispatch_per_slot.no_ops_from_frontend", 0x1000001A0),
        ("de_no_dispatch_per_slot.backend_stalls", 0x100001EA0),
        ("de_no_dispatch_per_slot.smt_contention", 0x1000060A0),
        ("de_src_op_disp.all", 0x7AA),
        ("ex_ret_ops", 0xC1),
    ];
    let st = sample_type::IDENTIFIER
        | sample_type::IP
        | sample_type::TID
        | sample_type::TIME
        | sample_type::CPU
        | sample_type::PERIOD;
    let attrs: Vec<FileAttr> = configs
        .iter()
        .enumerate()
        .map(|(i, (name, config))| FileAttr {
            attr: Attr {
                attr_type: 4,
                config: *config,
                sample_period_or_freq: 1_000_000,
                sample_type: st,
                read_format: read_format::ID,
                flags: attr_flag::DISABLED
                    | attr_flag::SAMPLE_ID_ALL
                    | if i == 0 { attr_flag::COMM } else { 0 },
                ..Attr::default()
            },
            name: name.to_string(),
            ids: vec![100 + i as u64],
        })
        .collect();
    let a0 = attrs[0].attr;
    let mut w = PerfDataWriter::new(std::fs::File::create(path).unwrap(), attrs).unwrap();
    let mut time = 1000;
    for (pi, (comm, evs)) in per_comm.iter().enumerate() {
        let pid = 500 + pi as u32;
        let mut buf = Vec::new();
        let sid = SampleId {
            pid,
            tid: pid,
            time,
            id: 100,
            cpu: 0,
        };
        records::push_comm(&mut buf, &a0, pid, pid, comm.as_bytes(), true, &sid);
        w.write_data(&buf).unwrap();
        for (ei, (n, period)) in evs.iter().enumerate() {
            for _ in 0..*n {
                time += 10;
                w.write_data(&sample_bytes(100 + ei as u64, 0x401000, pid, time, *period))
                    .unwrap();
            }
        }
    }
    let features = Features {
        arch: Some("x86_64".into()),
        cpuid: Some(cpuid.into()),
        nrcpus: Some((2, 2)),
        ..Features::default()
    };
    w.finish(&features).unwrap();
}

#[test]
fn test_report_topdown_per_row_estimate_from_sampled_periods() {
    let dir = common::scratch("stat-report-topdown");
    let file = dir.join("td.data");
    // "branchy": 1000 cycle samples of 1e6 (1e9 cycles, 8e9 slots); frontend 0.8e9,
    // backend 1.6e9, dispatched 5.6e9, retired 3.2e9 -> FE 0.10, BE 0.20, BS 0.30, RET 0.40.
    // "chase": 500 cycle samples (5e8 cycles, 4e9 slots); BE 3.4e9 -> 0.85.
    write_topdown_file(
        &file,
        "AuthenticAMD,26,2,1",
        &[
            (
                "branchy",
                [
                    (1000, 1_000_000),
                    (200, 4_000_000),
                    (400, 4_000_000),
                    (0, 4_000_000),
                    (1400, 4_000_000),
                    (800, 4_000_000),
                ],
            ),
            (
                "chase",
                [
                    (500, 1_000_000),
                    (20, 4_000_000),
                    (850, 4_000_000),
                    (10, 4_000_000),
                    (60, 4_000_000),
                    (40, 4_000_000),
                ],
            ),
        ],
    );
    let o = run_ok(
        culprit()
            .args([
                "report",
                "--topdown",
                "--sort",
                "comm",
                "--format",
                "json",
                "-i",
            ])
            .arg(&file),
    );
    let j: Value = serde_json::from_slice(&o.stdout).unwrap();
    let td = &j["topdown"];
    assert_eq!(td["model"], "AMD Zen 5");
    assert_eq!(td["estimate"], true);
    let rows = td["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "{td}");
    let row = |comm: &str| rows.iter().find(|r| r["keys"]["comm"] == comm).unwrap();
    let b = &row("branchy")["level1"];
    for (k, want) in [
        ("frontend_bound", 0.10),
        ("backend_bound", 0.20),
        ("bad_speculation", 0.30),
        ("retiring", 0.40),
        ("smt_contention", 0.0),
    ] {
        assert!(
            (b[k].as_f64().unwrap() - want).abs() < 1e-9,
            "branchy {k}: {b}"
        );
    }
    assert_eq!(row("branchy")["samples"], 3800);
    assert_eq!(row("branchy")["min_samples"], 0);
    let c = &row("chase")["level1"];
    assert!(
        (c["backend_bound"].as_f64().unwrap() - 0.85).abs() < 1e-9,
        "{c}"
    );
    assert!(
        (c["bad_speculation"].as_f64().unwrap() - 0.02).abs() < 1e-9,
        "{c}"
    );
    assert_eq!(row("chase")["min_samples"], 10);
    // Text: says it is an estimate and how many samples back each row.
    let o = run_ok(
        culprit()
            .args(["report", "--topdown", "--sort", "comm", "-i"])
            .arg(&file),
    );
    let text = stdout(&o);
    assert!(text.contains("estimate from sampled slot counts"), "{text}");
    let line = text.lines().find(|l| l.ends_with("branchy")).unwrap();
    assert!(line.contains("30.00%") && line.contains("3800"), "{line}");
    common::validate_json_schema(
        "report-topdown",
        &stdout(&run_ok(
            culprit()
                .args(["report", "--topdown", "--format", "json", "-i"])
                .arg(&file),
        )),
    );

    // Not a Top-Down CPU / not a Top-Down file: clear errors.
    let other = dir.join("other.data");
    write_topdown_file(&other, "AuthenticAMD,23,49,0", &[("x", [(1, 1); 6])]);
    let o = culprit()
        .args(["report", "--topdown", "-i"])
        .arg(&other)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("Top-Down is not supported on this CPU"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn test_report_topdown_without_topdown_events_says_so() {
    let _l = pmu_lock();
    let dir = common::scratch("stat-report-topdown-none");
    let file = dir.join("clock.data");
    run_ok(
        culprit()
            .args(["record", "-q", "-e", "cpu-clock", "-o"])
            .arg(&file)
            .args(["--", "true"]),
    );
    let o = culprit()
        .args(["report", "--topdown", "-i"])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    // The file is the problem, not the CPU.
    assert!(e.contains("no Top-Down events"), "{e}");
    assert!(e.contains("culprit record --topdown"), "{e}");
    assert!(!e.contains("not supported on this CPU"), "{e}");
}

#[test]
fn test_record_topdown_then_report() {
    let _l = pmu_lock();
    let dir = common::scratch("stat-record-topdown");
    let data = dir.join("td.data");
    let branchy = workload("branchy");
    let o = culprit()
        .args(["record", "--topdown", "-o"])
        .arg(&data)
        .arg("--")
        .args([branchy.to_str().unwrap(), "8", "10"])
        .output()
        .unwrap();
    if !common::hardware_pmu() {
        // Without a PMU the refusal must say why.
        assert_eq!(o.status.code(), Some(2));
        assert!(
            stderr(&o).contains("needs a hardware PMU"),
            "{}",
            stderr(&o)
        );
    }
    if !require_hardware_pmu("test_record_topdown_then_report") {
        return;
    }
    assert!(o.status.success(), "{}", stderr(&o));
    let o = run_ok(
        culprit()
            .args([
                "report",
                "--topdown",
                "--sort",
                "sym",
                "--format",
                "json",
                "-i",
            ])
            .arg(&data),
    );
    let j: Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows = j["topdown"]["rows"].as_array().unwrap();
    let count_odd = rows
        .iter()
        .find(|r| r["keys"]["sym"] == "count_odd")
        .unwrap_or_else(|| panic!("no count_odd row: {j}"));
    // The mispredicting loop: its sampled bad speculation is high.
    let bs = count_odd["level1"]["bad_speculation"].as_f64().unwrap();
    assert!(bs >= 0.15, "count_odd bad_speculation {bs}: {count_odd}");
    assert!(count_odd["samples"].as_u64().unwrap() > 100);
}

/// An event this machine cannot count is `<not supported>`, the run goes on, and a line says
/// why (on a machine without a hardware PMU: that there is none); JSON carries it as `why`.
#[test]
fn test_not_supported_events_say_why() {
    let out = common::culprit()
        .args(["stat", "-e", "cycles,task-clock", "--", "true"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("task-clock"), "{err}");
    if err.contains("<not supported>       cycles") {
        assert!(err.contains("`cycles` not counted: "), "{err}");
    } else {
        assert!(!err.contains("not counted"), "{err}");
    }
    let out = common::culprit()
        .args([
            "stat",
            "--format",
            "json",
            "-e",
            "cycles,task-clock",
            "--",
            "true",
        ])
        .output()
        .unwrap();
    let json = String::from_utf8_lossy(&out.stdout);
    common::validate_json_schema("stat", &json);
    let v: serde_json::Value = serde_json::from_str(json.trim()).unwrap();
    for e in v["events"].as_array().unwrap() {
        assert_eq!(e["supported"] == false, e["why"].is_string(), "{e}");
    }
}

/// A PMU that rejects the guest/host filters (x86's `msr`: EINVAL while exclude_guest is
/// set) counts after perf's fallback ("switching off exclude_guest, exclude_host"); its
/// system-wide TSC count over 0.2 s is a rate of cycles a second, not zero.
#[test]
fn test_stat_msr_counts_after_the_guest_filter_fallback() {
    let test = "test_stat_msr_counts_after_the_guest_filter_fallback";
    if !std::path::Path::new("/sys/bus/event_source/devices/msr/events/tsc").exists() {
        common::skip(test, "no msr PMU with a tsc event on this machine");
        return;
    }
    if std::env::var("CI").is_err() && !nix_is_root() {
        common::skip(test, "system-wide counting needs root");
        return;
    }
    let j = stat_json(&["-a", "-e", "msr/tsc/,task-clock"], &["sleep", "0.2"]);
    let tsc = event(&j, "msr/tsc/");
    assert_eq!(tsc["supported"], true, "{j}");
    let per_second = tsc["scaled"].as_f64().unwrap() / 0.2;
    // Any TSC ticks at hundreds of MHz at least.
    assert!(per_second > 1e8, "{j}");
    let out = culprit()
        .args(["stat", "-vv", "-a", "-e", "msr/tsc/", "--", "true"])
        .output()
        .unwrap();
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    // The note is perf's: culprit falls back where perf does on this kernel.
    let note = "switching off exclude_guest, exclude_host";
    if require_perf(test) {
        let perf = Command::new("perf")
            .args(["stat", "-vv", "-a", "-e", "msr/tsc/", "--", "true"])
            .output()
            .unwrap();
        assert_eq!(
            err.contains(note),
            stderr(&perf).contains(note),
            "culprit:\n{err}\nperf:\n{}",
            stderr(&perf)
        );
    }
}

fn nix_is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(1).map(|u| u == "0"))
        })
        .unwrap_or(false)
}
