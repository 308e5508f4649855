//! Integration tests of `culprit record`: record the project's workloads, then read the file
//! with perf (report/script/evlist/annotate must print no warning) and with culprit's own
//! reader; attach (-p), system-wide (-a), Ctrl-C, crashing targets, and the error messages.
//!
//! Every test that opens perf events takes `common::pmu_lock()`.

use crate::common;

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::Value;

/// Units of workloads/shares (about 10 ms each).
const SHARES_UNITS: &str = "30";

/// A private copy of the culprit binary. Other developers' builds relink
/// target/debug/culprit while these tests run (spawning it then fails with ENOENT for a
/// moment), so the tests copy it once, check that the copy runs, and use the copy.
fn culprit() -> Command {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    let bin = BIN.get_or_init(|| {
        let src = Path::new(env!("CARGO_BIN_EXE_culprit"));
        let dir = common::repo_root().join("target/test-tmp/record-bin");
        std::fs::create_dir_all(&dir).unwrap();
        let dst = dir.join(format!("culprit.{}", std::process::id()));
        let start = Instant::now();
        loop {
            let copied = std::fs::copy(src, &dst).is_ok();
            if copied
                && Command::new(&dst)
                    .arg("--version")
                    .output()
                    .is_ok_and(|o| o.status.success())
            {
                return dst;
            }
            assert!(
                start.elapsed() < Duration::from_secs(120),
                "cannot copy a working {}",
                src.display()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    });
    Command::new(bin)
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Runs `culprit record --format json ARGS` and returns (summary, output).
fn record_json(args: &[&str]) -> (Value, Output) {
    let out = common::run_ok(
        culprit()
            .arg("record")
            .arg("--format")
            .arg("json")
            .args(args),
    );
    let text = stdout(&out);
    let line = text.lines().last().unwrap_or_default();
    let v: Value =
        serde_json::from_str(line).unwrap_or_else(|e| panic!("summary is not JSON ({e}): {text}"));
    (v, out)
}

fn perf(args: &[&str]) -> Output {
    common::perf()
        .args(args)
        .env("PAGER", "cat")
        .env("PERF_PAGER", "cat")
        .stdin(Stdio::null())
        .output()
        .expect("run perf")
}

/// Runs perf report/script/evlist (and annotate of `annotate_sym`) on `file`, asserting
/// success and an empty stderr; returns perf script's output.
fn perf_reads_cleanly(file: &Path, annotate_sym: Option<&str>) -> String {
    let f = file.to_str().unwrap();
    let mut cmds: Vec<Vec<&str>> = vec![
        vec!["report", "-i", f, "--stdio"],
        vec!["evlist", "-i", f],
        vec!["script", "-i", f],
    ];
    if let Some(sym) = annotate_sym {
        cmds.push(vec!["annotate", "-i", f, "--stdio", sym]);
    }
    let mut script = String::new();
    for c in cmds {
        let o = perf(&c);
        assert!(o.status.success(), "perf {c:?} failed: {}", stderr(&o));
        assert!(
            stderr(&o).trim().is_empty(),
            "perf {c:?} warned on {f}:\n{}",
            stderr(&o)
        );
        if c[0] == "script" {
            script = stdout(&o);
        }
        if c[0] == "annotate" {
            assert!(
                stdout(&o).contains("Percent"),
                "perf annotate printed no annotation:\n{}",
                stdout(&o)
            );
        }
    }
    script
}

/// Function-level percentages (`--sort sym`) from perf report.
fn perf_report_percent(file: &Path, sym: &str) -> f64 {
    let o = perf(&[
        "report",
        "-i",
        file.to_str().unwrap(),
        "--stdio",
        "--sort",
        "sym",
        "--percent-limit",
        "0",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .find(|l| l.trim_end().ends_with(&format!("] {sym}")))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|p| p.trim_end_matches('%').parse().ok())
        .unwrap_or_else(|| panic!("no {sym} in perf report of {}:\n{text}", file.display()))
}

fn samples_of(v: &Value) -> u64 {
    v["samples"].as_u64().expect("samples")
}

fn event_samples(v: &Value, name: &str) -> u64 {
    v["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == name)
        .unwrap_or_else(|| panic!("no event {name} in {v}"))["samples"]
        .as_u64()
        .unwrap()
}

/// culprit's own reader: the sample count matches the recorder's summary, no warnings.
fn decode_checks(file: &Path, v: &Value) -> culprit_decode::Profile {
    let p = culprit_decode::Reader::open(file)
        .collect()
        .unwrap_or_else(|e| panic!("culprit_decode cannot read {}: {e}", file.display()));
    assert!(p.stopped.is_none(), "reader stopped early: {:?}", p.stopped);
    assert!(p.warnings.is_empty(), "reader warnings: {:?}", p.warnings);
    assert_eq!(
        p.samples.len() as u64,
        samples_of(v),
        "reader vs recorder sample count"
    );
    for (i, e) in v["events"].as_array().unwrap().iter().enumerate() {
        assert_eq!(p.events[i].name, e["name"].as_str().unwrap());
        assert_eq!(p.events[i].samples, e["samples"].as_u64().unwrap());
    }
    p
}

fn path_str(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn test_record_cpu_clock_shares_read_by_perf_and_culprit() {
    let _lock = common::pmu_lock();
    let dir = common::scratch("record-cpu-clock");
    let shares = common::workload("shares");
    let data = dir.join("c.data");
    let (v, out) = record_json(&[
        "-e",
        "cpu-clock",
        "-F",
        "4000",
        "-o",
        path_str(&data),
        "--",
        path_str(&shares),
        SHARES_UNITS,
    ]);
    assert!(
        stdout(&out).contains("sink = "),
        "the workload's own output goes through"
    );
    assert_eq!(v["exit_code"], 0);
    let n = samples_of(&v);
    assert!(n > 200, "only {n} samples");
    assert_eq!(v["lost_samples"], 0);
    assert_eq!(
        v["file_size"].as_u64().unwrap(),
        std::fs::metadata(&data).unwrap().len()
    );
    let p = decode_checks(&data, &v);
    assert_eq!(p.events[0].name, "cpu-clock");
    if !common::require_perf("test_record_cpu_clock_shares_read_by_perf_and_culprit") {
        return;
    }
    let script = perf_reads_cleanly(&data, Some("heavy"));
    let lines = script.lines().filter(|l| l.contains("cpu-clock:")).count() as u64;
    assert_eq!(lines, n, "perf script shows every sample");
    assert!(
        script.contains("heavy+0x"),
        "samples resolve to the workload's symbols"
    );
    // HEADER_BUILD_ID has the workload and the feature header says what perf needs.
    let ids = perf(&["buildid-list", "-i", path_str(&data)]);
    assert!(stdout(&ids).contains(path_str(&shares)), "{}", stdout(&ids));
    let hdr = perf(&["report", "-i", path_str(&data), "--header-only"]);
    let hdr = stdout(&hdr);
    for want in [
        "# hostname :",
        "# os release :",
        "# arch :",
        "# nrcpus online :",
        "# cpuid :",
        "# total memory :",
        "# cmdline :",
        "name = cpu-clock",
        "# pmu mappings:",
        "# time of first sample",
    ] {
        assert!(hdr.contains(want), "header lacks `{want}`:\n{hdr}");
    }
}

#[test]
fn test_record_shares_percentages_match_perf_record() {
    let _lock = common::pmu_lock();
    if !common::require_perf("test_record_shares_percentages_match_perf_record") {
        return;
    }
    let dir = common::scratch("record-shares-vs-perf");
    let shares = common::workload("shares");
    let ours = dir.join("culprit.data");
    let theirs = dir.join("perf.data");
    // Separate runs of the same program: allow further attempts for timer noise.
    let mut last = String::new();
    for _ in 0..3 {
        record_json(&[
            "-e",
            "cpu-clock",
            "-F",
            "4000",
            "-o",
            path_str(&ours),
            "--",
            path_str(&shares),
            "40",
        ]);
        let o = perf(&[
            "record",
            "-q",
            "-e",
            "cpu-clock",
            "-F",
            "4000",
            "-o",
            path_str(&theirs),
            "--",
            path_str(&shares),
            "40",
        ]);
        assert!(o.status.success(), "perf record: {}", stderr(&o));
        // The heavy share of the two functions' samples: samples that land elsewhere (the
        // kernel, start-up, interrupts of a loaded machine: up to 9% on a busy CI) change
        // each function's percentage but not their ratio, which the program's work fixes.
        let share = |file: &Path| {
            let (h, l) = (
                perf_report_percent(file, "heavy"),
                perf_report_percent(file, "light"),
            );
            (100.0 * h / (h + l), h, l)
        };
        let (s1, h1, l1) = share(&ours);
        let (s2, h2, l2) = share(&theirs);
        last = format!(
            "heavy share of heavy+light: culprit {s1:.1}% (heavy {h1}% light {l1}%), perf {s2:.1}% (heavy {h2}% light {l2}%)"
        );
        assert!((s1 - 75.0).abs() < 4.0, "culprit: {last}");
        assert!((s2 - 75.0).abs() < 4.0, "perf: {last}");
        if (s1 - s2).abs() <= 1.5 {
            return;
        }
    }
    panic!("heavy shares differ by more than 1.5 points: {last}");
}

#[test]
fn test_record_several_events_with_period_and_frequency() {
    let _lock = common::pmu_lock();
    let dir = common::scratch("record-several");
    let shares = common::workload("shares");
    let data = dir.join("s.data");
    // -c for both, then a per-event frequency overriding it.
    let (v, _) = record_json(&[
        "-e",
        "cpu-clock,task-clock",
        "-e",
        "page-faults",
        "-c",
        "100000",
        "-o",
        path_str(&data),
        "--",
        path_str(&shares),
        SHARES_UNITS,
    ]);
    let cc = event_samples(&v, "cpu-clock");
    let tc = event_samples(&v, "task-clock");
    assert!(
        cc > 1000 && tc > 1000,
        "cpu-clock {cc}, task-clock {tc} at one sample per 100 us"
    );
    // Both clocks tick at the same period on the same thread.
    assert!(
        (cc as f64 - tc as f64).abs() / (cc as f64) < 0.1,
        "cpu-clock {cc} vs task-clock {tc}"
    );
    assert_eq!(v["events"][0]["rate"]["period"], 100000);
    decode_checks(&data, &v);
    if common::require_perf("test_record_several_events_with_period_and_frequency") {
        let script = perf_reads_cleanly(&data, None);
        let n = |ev: &str| {
            script
                .lines()
                .filter(|l| l.contains(&format!(" {ev}:")))
                .count() as u64
        };
        assert_eq!(n("cpu-clock"), cc);
        assert_eq!(n("task-clock"), tc);
        assert_eq!(n("page-faults"), event_samples(&v, "page-faults"));
        let ev = stdout(&perf(&["evlist", "-i", path_str(&data)]));
        assert_eq!(
            ev.lines().collect::<Vec<_>>(),
            vec!["cpu-clock", "task-clock", "page-faults"]
        );
    }

    let data2 = dir.join("f.data");
    let (v, out) = record_json(&[
        "-e",
        "cpu-clock/freq=1000/",
        "-F",
        "100000000",
        "-e",
        "task-clock",
        "-o",
        path_str(&data2),
        "--",
        path_str(&shares),
        SHARES_UNITS,
    ]);
    assert_eq!(v["events"][0]["rate"]["frequency"], 1000);
    // -F above kernel.perf_event_max_sample_rate is lowered, with a warning.
    let max: u64 = std::fs::read_to_string("/proc/sys/kernel/perf_event_max_sample_rate")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert_eq!(v["events"][1]["rate"]["frequency"], max);
    assert!(
        stderr(&out).contains("above kernel.perf_event_max_sample_rate"),
        "{}",
        stderr(&out)
    );
    let (a, b) = (
        event_samples(&v, "cpu-clock/freq=1000/"),
        event_samples(&v, "task-clock"),
    );
    assert!(
        b > 2 * a,
        "task-clock at {max} Hz ({b}) vs cpu-clock at 1000 Hz ({a})"
    );
    decode_checks(&data2, &v);
}

#[test]
fn test_record_call_graph_fp_and_dwarf() {
    let _lock = common::pmu_lock();
    let dir = common::scratch("record-callgraph");
    let shares = common::workload("shares");
    let fp = dir.join("fp.data");
    let (v, _) = record_json(&[
        "-e",
        "cpu-clock",
        "-g",
        "-o",
        path_str(&fp),
        "--",
        path_str(&shares),
        SHARES_UNITS,
    ]);
    let p = decode_checks(&fp, &v);
    let with_chain = p.samples.iter().filter(|s| s.callchain.len() >= 2).count();
    assert!(
        with_chain * 2 > p.samples.len(),
        "{with_chain} of {} samples have a 2+ frame chain",
        p.samples.len()
    );
    if common::require_perf("test_record_call_graph_fp_and_dwarf") {
        let script = perf_reads_cleanly(&fp, None);
        // frame-pointer chains go from heavy back into libc's start code
        assert!(
            script.contains("__libc_start_call_main"),
            "no caller frames in perf script"
        );
    }

    let dw = dir.join("dwarf.data");
    let (v, _) = record_json(&[
        "-e",
        "cpu-clock",
        "--call-graph",
        "dwarf,4096",
        "-o",
        path_str(&dw),
        "--",
        path_str(&shares),
        SHARES_UNITS,
    ]);
    let p = decode_checks(&dw, &v);
    let user = p
        .samples
        .iter()
        .filter(|s| !s.user_stack.is_empty())
        .count();
    assert!(
        user * 2 > p.samples.len(),
        "{user} of {} samples carry a user stack copy",
        p.samples.len()
    );
    assert!(p.events[0].sample_type & (1 << 12 | 1 << 13) == (1 << 12 | 1 << 13));
    if common::require_perf("test_record_call_graph_fp_and_dwarf") {
        let o = perf(&["report", "-i", path_str(&dw), "--stdio", "--no-children"]);
        assert!(
            stderr(&o).trim().is_empty(),
            "perf report warned: {}",
            stderr(&o)
        );
        assert!(
            stdout(&o).contains("main"),
            "perf's DWARF unwinding finds main:\n{}",
            stdout(&o)
        );
    }
}

#[test]
fn test_record_attach_pid_until_exit() {
    let _lock = common::pmu_lock();
    let dir = common::scratch("record-pid");
    let shares = common::workload("shares");
    // ~2 s of CPU on a Zen 5 VM (60 units, 0.4 s there, left ~25 samples after attaching).
    let mut target = Command::new(&shares)
        .arg("300")
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(50));
    let data = dir.join("p.data");
    let pid = target.id().to_string();
    let t = Instant::now();
    let (v, _) = record_json(&["-e", "cpu-clock", "-p", &pid, "-o", path_str(&data)]);
    // culprit returns once the process is gone: reap it now.
    assert!(target.wait().unwrap().success());
    assert!(t.elapsed() < Duration::from_secs(20));
    assert_eq!(v["exit_code"], Value::Null);
    assert!(samples_of(&v) > 100, "{v}");
    let p = decode_checks(&data, &v);
    assert!(
        p.samples.iter().all(|s| s.pid == target.id() as i32),
        "samples of other processes"
    );
    if common::require_perf("test_record_attach_pid_until_exit") {
        perf_reads_cleanly(&data, None);
        // Synthesized MMAP2 of the running binary: samples resolve to heavy/light.
        let h = perf_report_percent(&data, "heavy");
        let l = perf_report_percent(&data, "light");
        assert!(h > 60.0 && l > 15.0, "heavy {h}% light {l}%");
    }
}

#[test]
fn test_record_system_wide_with_command() {
    let _lock = common::pmu_lock();
    let dir = common::scratch("record-system");
    let data = dir.join("a.data");
    // Two busy programs, so that both CPUs run something: cpu-clock does not sample an idle
    // CPU (perf record neither, on this kernel), so `sleep` alone often left CPU 1 empty.
    let busy = format!(
        "{} 15 & {} 4 4; wait",
        common::workload("shares").display(),
        common::workload("branchy").display()
    );
    let (v, _) = record_json(&[
        "-a",
        "-e",
        "cpu-clock",
        "-F",
        "1000",
        "-o",
        path_str(&data),
        "--",
        "sh",
        "-c",
        &busy,
    ]);
    assert_eq!(v["exit_code"], 0);
    let p = decode_checks(&data, &v);
    let cpus: std::collections::HashSet<u32> = p.samples.iter().map(|s| s.cpu).collect();
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    if online.trim() != "0" {
        assert!(
            cpus.len() > 1,
            "system-wide samples from CPUs {cpus:?} only"
        );
    }
    // Everything on the CPUs is sampled (both programs, other processes), not just one.
    let pids: std::collections::HashSet<i32> = p.samples.iter().map(|s| s.pid).collect();
    assert!(
        pids.len() > 1,
        "system-wide samples from pids {pids:?} only"
    );
    if common::require_perf("test_record_system_wide_with_command") {
        let o = perf(&["report", "-i", path_str(&data), "--stdio", "--sort", "comm"]);
        assert!(stderr(&o).trim().is_empty(), "{}", stderr(&o));
        let comms = stdout(&o)
            .lines()
            .filter(|l| l.trim_start().starts_with(|c: char| c.is_ascii_digit()))
            .count();
        assert!(
            comms > 1,
            "one command only in a system-wide profile:\n{}",
            stdout(&o)
        );
    }
}

#[test]
fn test_record_sigint_finishes_a_valid_file() {
    let _lock = common::pmu_lock();
    let dir = common::scratch("record-sigint");
    let shares = common::workload("shares");
    let data = dir.join("i.data");
    let child = culprit()
        .args([
            "record",
            "--format",
            "json",
            "-e",
            "cpu-clock",
            "-o",
            path_str(&data),
            "--",
        ])
        .arg(&shares)
        .arg("100000")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(600));
    // SAFETY: signalling the child we spawned.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    // The workload died of the forwarded SIGINT: 128 + 2.
    assert_eq!(out.status.code(), Some(130), "stderr: {}", stderr(&out));
    let v: Value = serde_json::from_str(stdout(&out).lines().last().unwrap()).unwrap();
    assert_eq!(v["interrupted"], true);
    assert_eq!(v["signal"], 2);
    assert!(samples_of(&v) > 100);
    decode_checks(&data, &v);
    if common::require_perf("test_record_sigint_finishes_a_valid_file") {
        perf_reads_cleanly(&data, None);
    }
}

#[test]
fn test_record_exit_status_and_crashing_target() {
    let _lock = common::pmu_lock();
    let dir = common::scratch("record-exit");
    let data = dir.join("e.data");
    let out = culprit()
        .args([
            "record",
            "-q",
            "-e",
            "cpu-clock",
            "-o",
            path_str(&data),
            "--",
            "sh",
            "-c",
            "exit 3",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));

    let crash = dir.join("crash.data");
    let out = culprit()
        .args([
            "record",
            "--format",
            "json",
            "-e",
            "cpu-clock",
            "-o",
            path_str(&crash),
            "--",
            "sh",
            "-c",
            "kill -SEGV $$",
        ])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(128 + libc::SIGSEGV),
        "{}",
        stderr(&out)
    );
    let v: Value = serde_json::from_str(stdout(&out).lines().last().unwrap()).unwrap();
    assert_eq!(v["signal"], libc::SIGSEGV);
    decode_checks(&crash, &v);
    if common::require_perf("test_record_exit_status_and_crashing_target") {
        let o = perf(&["report", "-i", path_str(&crash), "--stdio"]);
        assert!(
            o.status.success() && stderr(&o).trim().is_empty(),
            "{}",
            stderr(&o)
        );
    }
}

#[test]
fn test_record_default_event_cycles_or_cpu_clock_fallback() {
    let _lock = common::pmu_lock();
    let dir = common::scratch("record-default");
    let shares = common::workload("shares");
    let data = dir.join("d.data");
    let (v, out) = record_json(&["-o", path_str(&data), "--", path_str(&shares), "10"]);
    assert_eq!(v["events"][0]["rate"]["frequency"], 4000);
    if common::hardware_pmu() {
        assert_eq!(v["events"][0]["name"], "cycles");
    } else {
        assert_eq!(v["events"][0]["name"], "cpu-clock");
        assert!(
            stderr(&out).contains("falling back to cpu-clock"),
            "{}",
            stderr(&out)
        );
    }
    decode_checks(&data, &v);
}

#[test]
fn test_record_hardware_events() {
    let _lock = common::pmu_lock();
    if !common::require_hardware_pmu("test_record_hardware_events") {
        return;
    }
    let dir = common::scratch("record-hw");
    let shares = common::workload("shares");
    let data = dir.join("hw.data");
    let (v, _) = record_json(&[
        "-e",
        "cycles,instructions,branch-misses",
        "-F",
        "4000",
        "-g",
        "-o",
        path_str(&data),
        "--",
        path_str(&shares),
        SHARES_UNITS,
    ]);
    assert!(event_samples(&v, "cycles") > 100, "{v}");
    assert!(event_samples(&v, "instructions") > 100, "{v}");
    assert_eq!(v["lost_samples"], 0, "{v}");
    decode_checks(&data, &v);
    if common::require_perf("test_record_hardware_events") {
        perf_reads_cleanly(&data, Some("heavy"));
        let h = perf_report_percent(&data, "heavy");
        assert!(h > 55.0, "cycles/instructions mostly in heavy: {h}%");
    }
}

#[test]
fn test_record_error_unknown_event() {
    let dir = common::scratch("record-err-event");
    let out = culprit()
        .args(["record", "-e", "cyclez", "-o"])
        .arg(dir.join("x.data"))
        .args(["--", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let e = stderr(&out);
    assert!(e.contains("unknown event `cyclez`"), "{e}");
    // `cycles` is suggested only where it can open: a machine with a core PMU (type 4).
    let core_pmu = std::fs::read_dir("/sys/bus/event_source/devices")
        .map(|d| {
            d.flatten().any(|p| {
                std::fs::read_to_string(p.path().join("type")).is_ok_and(|t| t.trim() == "4")
            })
        })
        .unwrap_or(false);
    assert_eq!(e.contains("did you mean `cycles`"), core_pmu, "{e}");
    assert_eq!(e.lines().count(), 1, "one line: {e}");
    assert!(
        !dir.join("x.data").exists(),
        "nothing is written for a bad event"
    );
}

#[test]
fn test_record_error_command_not_found() {
    let _lock = common::pmu_lock();
    let dir = common::scratch("record-err-cmd");
    let data = dir.join("x.data");
    let out = culprit()
        .args([
            "record",
            "-e",
            "cpu-clock",
            "-o",
            path_str(&data),
            "--",
            "no-such-command-culprit",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let e = stderr(&out);
    assert!(
        e.contains("command not found: 'no-such-command-culprit'"),
        "{e}"
    );
    assert!(!e.contains("panicked"), "{e}");
    assert!(!data.exists(), "a failed recording leaves no file");
}

#[test]
fn test_record_error_output_not_writable() {
    let out = culprit()
        .args([
            "record",
            "-e",
            "cpu-clock",
            "-o",
            "/nonexistent-dir/x.data",
            "--",
            "true",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let e = stderr(&out);
    assert!(
        e.contains("cannot write the output file /nonexistent-dir/x.data"),
        "{e}"
    );
    // The OS error is said once (it was repeated as the error's cause).
    assert_eq!(e.matches("No such file or directory").count(), 1, "{e}");
}

#[test]
fn test_record_error_dead_pid() {
    // A pid that existed and is gone: a reaped child.
    let mut c = Command::new("true").spawn().unwrap();
    c.wait().unwrap();
    let pid = c.id().to_string();
    let dir = common::scratch("record-err-pid");
    let out = culprit()
        .args(["record", "-e", "cpu-clock", "-p", &pid, "-o"])
        .arg(dir.join("x.data"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let e = stderr(&out);
    assert!(e.contains(&format!("no such process: {pid}")), "{e}");
}

#[test]
fn test_record_error_bad_flags() {
    let run = |args: &[&str]| {
        let mut cmd = culprit();
        let o = cmd.arg("record").args(args).output().unwrap_or_else(|e| {
            panic!(
                "spawn {cmd:?}: {e}; exists: {}",
                Path::new(cmd.get_program()).exists()
            )
        });
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        stderr(&o)
    };
    assert!(run(&["-e", "cpu-clock"]).contains("nothing to record"));
    assert!(run(&["-C", "zz", "--", "true"]).contains("-C: `zz` is not a CPU list"));
    assert!(run(&[
        "-C",
        "4096",
        "-e",
        "cpu-clock",
        "-o",
        "/dev/null",
        "--",
        "true"
    ])
    .contains("CPU 4096 is not online"));
    // A failed recording removes its half-written output, but never a device such as -o /dev/null.
    {
        use std::os::unix::fs::FileTypeExt;
        let meta = std::fs::symlink_metadata("/dev/null").unwrap();
        assert!(meta.file_type().is_char_device(), "/dev/null was replaced");
    }
    assert!(run(&["--call-graph", "lbr", "--", "true"]).contains("expected `fp` or `dwarf"));
}

/// `-C` restricts the rings to the listed CPUs.
#[test]
fn test_record_cpu_list() {
    let _lock = common::pmu_lock();
    let dir = common::scratch("record-cpus");
    let data = dir.join("c.data");
    let (v, _) = record_json(&[
        "-a",
        "-C",
        "0",
        "-e",
        "cpu-clock",
        "-F",
        "1000",
        "-o",
        path_str(&data),
        "--",
        "sleep",
        "0.1",
    ]);
    let p = decode_checks(&data, &v);
    assert!(!p.samples.is_empty());
    assert!(
        p.samples.iter().all(|s| s.cpu == 0),
        "samples from other CPUs"
    );
}

/// Runs culprit unprivileged: as `nobody` when the tests run as root, else as the current user.
fn culprit_unprivileged() -> Command {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"]);
        c.arg(culprit().get_program());
        c
    } else {
        culprit()
    }
}

#[test]
fn test_record_unprivileged_paranoid_message_and_user_only_fallback() {
    let _lock = common::pmu_lock();
    let dir = common::scratch("record-unprivileged");
    std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
    let paranoid: i32 = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // System-wide needs perf_event_paranoid <= 0 without privileges.
    let out = culprit_unprivileged()
        .args(["record", "-q", "-a", "-e", "cpu-clock", "-o"])
        .arg(dir.join("a.data"))
        .args(["--", "true"])
        .output()
        .unwrap();
    if paranoid >= 1 {
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        let e = stderr(&out);
        // Refused before anything is opened, with the level, what it allows and the way out.
        assert!(
            e.contains(&format!(
                "-a samples every process, but kernel.perf_event_paranoid = {paranoid} allows"
            )) && e.contains("CAP_PERFMON")
                && e.contains("sysctl -w kernel.perf_event_paranoid=0"),
            "{e}"
        );
    } else {
        assert!(out.status.success(), "{}", stderr(&out));
    }
    // Profiling one's own command works at paranoid 2, user space only, with a warning.
    let shares = common::workload("shares");
    let data = dir.join("u.data");
    let out = culprit_unprivileged()
        .args(["record", "--format", "json", "-e", "cpu-clock", "-o"])
        .arg(&data)
        .arg("--")
        .arg(&shares)
        .arg("10")
        .output()
        .unwrap();
    if paranoid >= 3 {
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        return;
    }
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Value = serde_json::from_str(stdout(&out).lines().last().unwrap()).unwrap();
    assert!(samples_of(&v) > 20, "{v}");
    let p = decode_checks(&data, &v);
    let kernel = p
        .samples
        .iter()
        .filter(|s| s.cpumode == culprit_decode::model::CpuMode::Kernel)
        .count();
    if paranoid >= 2 {
        assert!(
            stderr(&out).contains("sampling user space only (:u)"),
            "{}",
            stderr(&out)
        );
        assert_eq!(kernel, 0, "kernel samples despite the :u fallback");
    }
}

/// The data section is written while the command runs, not at the end.
#[test]
fn test_record_writes_progressively() {
    let _lock = common::pmu_lock();
    let dir = common::scratch("record-progressive");
    let shares = common::workload("shares");
    let data = dir.join("p.data");
    let mut child = culprit()
        .args([
            "record",
            "-q",
            "-e",
            "cpu-clock",
            "-F",
            "4000",
            "-o",
            path_str(&data),
            "--",
        ])
        .arg(&shares)
        .arg("100000")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Header + attrs are a few hundred bytes; half a second of samples is ~100 KB.
    let start = Instant::now();
    let mut grew = 0;
    // 3 s: a recorder that buffered 1 MB before writing would need more than 4 s here.
    while start.elapsed() < Duration::from_secs(3) {
        std::thread::sleep(Duration::from_millis(100));
        grew = std::fs::metadata(&data).map(|m| m.len()).unwrap_or(0);
        if grew > 20_000 {
            break;
        }
    }
    // SAFETY: signalling the child we spawned.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    assert!(
        grew > 20_000,
        "the file had only {grew} bytes while recording"
    );
    assert_eq!(status.code(), Some(130));
    let p = culprit_decode::Reader::open(&data).collect().unwrap();
    assert!(p.samples.len() > 100);
}

/// `-a` without a command records until Ctrl-C, even one that arrives during set-up.
#[test]
fn test_record_system_wide_until_sigint() {
    let _lock = common::pmu_lock();
    let dir = common::scratch("record-system-sigint");
    let data = dir.join("a.data");
    for delay_ms in [150u64, 400] {
        let child = culprit()
            .args([
                "record",
                "--format",
                "json",
                "-a",
                "-e",
                "cpu-clock",
                "-F",
                "500",
                "-o",
                path_str(&data),
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(delay_ms));
        // SAFETY: signalling the child we spawned.
        unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
        let start = Instant::now();
        let out = child.wait_with_output().unwrap();
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "culprit ignored SIGINT for {:?}",
            start.elapsed()
        );
        assert!(out.status.success(), "{}", stderr(&out));
        let v: Value = serde_json::from_str(stdout(&out).lines().last().unwrap()).unwrap();
        assert_eq!(v["interrupted"], true);
        assert_eq!(v["exit_code"], Value::Null);
        decode_checks(&data, &v);
    }
}

/// More event fds than the open-file limit allows: a clear error, no partial file.
#[test]
fn test_record_error_too_many_open_files() {
    let _lock = common::pmu_lock();
    let dir = common::scratch("record-err-emfile");
    let data = dir.join("x.data");
    let bin = culprit().get_program().to_owned();
    // 7 events on every CPU need at least 7 descriptors per CPU; the limit of 10 cannot hold them even on one CPU.
    let script = format!(
        "ulimit -n 10; exec '{}' record -e cpu-clock,task-clock,page-faults,context-switches,cpu-migrations,minor-faults,major-faults -o '{}' -- true",
        Path::new(&bin).display(),
        data.display()
    );
    let out = Command::new("sh").arg("-c").arg(&script).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let e = stderr(&out);
    assert!(
        e.contains("too many open files") && e.contains("ulimit -n"),
        "{e}"
    );
    assert!(!data.exists());
}

/// `culprit report -i INPUT --sort sym` share of `sym` (from stdin when INPUT is `-`).
fn culprit_report_percent(input: &str, stdin: Stdio, sym: &str) -> f64 {
    let o = culprit()
        .args([
            "report",
            "--unknown",
            "address",
            "-i",
            input,
            "--sort",
            "sym",
            "--percent-limit",
            "0",
        ])
        .stdin(stdin)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .find(|l| l.trim_end().ends_with(&format!("] {sym}")))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|p| p.trim_end_matches('%').parse().ok())
        .unwrap_or_else(|| panic!("no {sym} in culprit report of {input}:\n{text}"))
}

#[test]
fn test_record_to_stdout_pipe_mode_read_by_perf_and_culprit() {
    let _lock = common::pmu_lock();
    let dir = common::scratch("record-pipe");
    let shares = common::workload("shares");
    // culprit record -o - … | (saved, then fed to each reader's stdin as a pipe would)
    let out = culprit()
        .args([
            "record",
            "-o",
            "-",
            "-e",
            "cpu-clock",
            "-F",
            "2000",
            "--format",
            "json",
            "--",
        ])
        .arg(&shares)
        .arg("60")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let stream = out.stdout.clone();
    assert_eq!(&stream[..8], b"PERFILE2");
    assert_eq!(u64::from_le_bytes(stream[8..16].try_into().unwrap()), 16);
    // stdout carries only the stream: the summary and the command's own output go to stderr.
    let err = stderr(&out);
    assert!(err.contains("sink = "), "the command's stdout: {err}");
    let summary: Value = err
        .lines()
        .find_map(|l| serde_json::from_str(l).ok())
        .unwrap_or_else(|| panic!("JSON summary on stderr: {err}"));
    assert_eq!(summary["output"], "-");
    assert_eq!(summary["file_size"].as_u64(), Some(stream.len() as u64));
    let file = dir.join("stream.data");
    std::fs::write(&file, &stream).unwrap();

    // culprit's reader: pipe mode, every sample, no warnings.
    let p = culprit_decode::Reader::from_bytes(&stream)
        .collect()
        .unwrap();
    assert!(p.meta.pipe_mode);
    assert!(p.warnings.is_empty(), "{:?}", p.warnings);
    assert!(p.stopped.is_none(), "{:?}", p.stopped);
    assert_eq!(p.samples.len() as u64, samples_of(&summary));
    assert_eq!(p.events[0].name, "cpu-clock");

    let heavy_pipe = culprit_report_percent("-", File::open(&file).unwrap().into(), "heavy");
    let light_pipe = culprit_report_percent("-", File::open(&file).unwrap().into(), "light");

    if common::require_perf("test_record_to_stdout_pipe_mode_read_by_perf_and_culprit") {
        let o = common::perf()
            .args(["report", "-i", "-", "--stdio", "--sort", "sym"])
            .env("PAGER", "cat")
            .stdin(File::open(&file).unwrap())
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(stderr(&o).trim().is_empty(), "perf warned:\n{}", stderr(&o));
        let text = stdout(&o);
        let pct = |sym: &str| -> f64 {
            text.lines()
                .filter(|l| !l.starts_with('#'))
                .find(|l| l.trim_end().ends_with(&format!("] {sym}")))
                .and_then(|l| l.split_whitespace().next())
                .and_then(|p| p.trim_end_matches('%').parse().ok())
                .unwrap_or_else(|| panic!("no {sym} in perf report -i -:\n{text}"))
        };
        // Same shares as culprit's reader of the same stream.
        assert!((pct("heavy") - heavy_pipe).abs() < 0.6, "{text}");
        assert!((pct("light") - light_pipe).abs() < 0.6, "{text}");
    }

    // The same workload recorded to a file gives the same shares (75% / 25% by construction).
    let data = dir.join("file.data");
    record_json(&[
        "-o",
        path_str(&data),
        "-e",
        "cpu-clock",
        "-F",
        "2000",
        "--",
        path_str(&shares),
        "60",
    ]);
    let heavy_file = culprit_report_percent(path_str(&data), Stdio::null(), "heavy");
    for (h, what) in [(heavy_pipe, "pipe"), (heavy_file, "file")] {
        assert!((h - 75.0).abs() < 8.0, "heavy {h}% ({what})");
    }
    assert!((light_pipe - 25.0).abs() < 8.0, "light {light_pipe}%");
    assert!((heavy_pipe - heavy_file).abs() < 8.0);
}

#[test]
fn test_record_summary_json_validates_against_schema() {
    let _lock = common::pmu_lock();
    let dir = common::scratch("record-schema");
    let data = dir.join("s.data");
    let (v, out) = record_json(&["-e", "cpu-clock", "-o", path_str(&data), "--", "true"]);
    assert_eq!(v["schema"], 1);
    common::validate_json_schema("record", stdout(&out).lines().last().unwrap());
    // record's summary has no CSV.
    let o = culprit()
        .args(["record", "--format", "csv", "-o"])
        .arg(&data)
        .args(["--", "true"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("no --format csv"), "{}", stderr(&o));
}

#[test]
fn test_record_quiet_silences_the_cpu_clock_fallback() {
    let _lock = common::pmu_lock();
    let dir = common::scratch("record-quiet");
    let data = dir.join("q.data");
    let o = common::run_ok(
        culprit()
            .args(["record", "-q", "-o"])
            .arg(&data)
            .args(["--", "true"]),
    );
    // Whatever the default event is here, -q prints nothing about it.
    assert!(!stderr(&o).contains("falling back"), "{}", stderr(&o));
    assert!(!stderr(&o).contains("cycles"), "{}", stderr(&o));
    // Without -q the fallback (when there is one) is still said.
    let o = common::run_ok(
        culprit()
            .args(["record", "-o"])
            .arg(&data)
            .args(["--", "true"]),
    );
    assert_eq!(
        stderr(&o).contains("falling back to cpu-clock"),
        !common::hardware_pmu(),
        "{}",
        stderr(&o)
    );
}

#[test]
fn test_record_second_sigint_terminates_the_command_and_exits_130() {
    let _lock = common::pmu_lock();
    let dir = common::scratch("record-sigint-twice");
    let data = dir.join("t.data");
    // The workload ignores SIGINT (the disposition survives exec): only the second Ctrl-C,
    // which culprit turns into SIGTERM, ends it.
    let mut child = culprit()
        .args(["record", "-q", "-e", "cpu-clock", "-o"])
        .arg(&data)
        .args(["--", "sh", "-c", "trap '' INT; exec sleep 30"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id() as i32;
    // The workload: culprit's child, once it has exec'd sleep.
    let start = Instant::now();
    let workload = loop {
        let kids =
            std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap_or_default();
        let sleeping = kids.split_whitespace().find(|k| {
            std::fs::read_to_string(format!("/proc/{k}/comm")).is_ok_and(|c| c.trim() == "sleep")
        });
        if let Some(k) = sleeping {
            break k.parse::<i32>().unwrap();
        }
        assert!(start.elapsed() < Duration::from_secs(20), "no workload");
        std::thread::sleep(Duration::from_millis(20));
    };
    // SAFETY: signalling the child we spawned.
    unsafe { libc::kill(pid, libc::SIGINT) };
    std::thread::sleep(Duration::from_millis(300));
    // SAFETY: as above.
    unsafe { libc::kill(pid, libc::SIGINT) };
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "culprit did not exit after the second SIGINT"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(130));
    // The workload is gone (reaped by culprit: no /proc entry left).
    assert!(
        !Path::new(&format!("/proc/{workload}")).exists(),
        "the workload {workload} outlived culprit"
    );
    // The file is complete and readable.
    common::run_ok(common::culprit().args(["report", "-i"]).arg(&data));
}

#[test]
fn test_record_refuses_a_ring_too_small_for_one_dwarf_sample() {
    let dir = common::scratch("record-dwarf-ring");
    let data = dir.join("m.data");
    let o = culprit()
        .args(["record", "-m", "1", "--call-graph", "dwarf,65528", "-o"])
        .arg(&data)
        .args(["--", "true"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(
        e.contains("cannot hold one sample") && e.contains("-m 32"),
        "{e}"
    );
    assert!(!data.exists());
}

#[test]
fn test_record_keeps_the_previous_file_as_old() {
    let _lock = common::pmu_lock();
    let dir = common::scratch("record-old");
    // The default output, in the current directory, as perf.
    let record = |extra: &[&str]| {
        common::run_ok(
            culprit()
                .current_dir(&dir)
                .args(["record", "-q", "-e", "cpu-clock"])
                .args(extra)
                .args(["--", "true"]),
        )
    };
    record(&[]);
    let first = std::fs::read(dir.join("perf.data")).unwrap();
    record(&["-c", "1000"]);
    assert_eq!(std::fs::read(dir.join("perf.data.old")).unwrap(), first);
    assert!(dir.join("perf.data").exists());
    // Any -o file too.
    record(&["-o", "x.data"]);
    record(&["-o", "x.data"]);
    assert!(dir.join("x.data.old").exists());
}

#[test]
fn test_record_build_id_cache_keeps_symbols_of_a_rebuilt_binary() {
    let _lock = common::pmu_lock();
    let dir = common::scratch("record-buildid-cache");
    let home = dir.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let prog = dir.join("prog");
    std::fs::copy(common::workload("simple_classic"), &prog).unwrap();
    let data = dir.join("b.data");
    common::run_ok(
        culprit()
            .env("HOME", &home)
            .env_remove("PERF_BUILDID_DIR")
            .args(["record", "-q", "-e", "cpu-clock", "-F", "2000", "-o"])
            .arg(&data)
            .arg("--")
            .arg(&prog)
            .arg("300"),
    );
    let report = || {
        let o = common::run_ok(
            common::culprit()
                .env("HOME", &home)
                .env_remove("PERF_BUILDID_DIR")
                .args([
                    "report",
                    "--unknown",
                    "address",
                    "--sort",
                    "sym",
                    "--format",
                    "csv",
                    "-i",
                ])
                .arg(&data),
        );
        stdout(&o)
    };
    let before = report();
    assert!(before.contains("multiply_matrices"), "{before}");
    // "Rebuild" it differently: another program at the same path.
    std::fs::remove_file(&prog).unwrap();
    std::fs::copy(common::workload("branchy"), &prog).unwrap();
    let after = report();
    assert!(
        after.contains("multiply_matrices"),
        "the old symbols are gone: {after}"
    );
    assert!(!after.contains("count_odd"), "{after}");
    // -N: nothing cached.
    let home2 = dir.join("home2");
    std::fs::create_dir_all(&home2).unwrap();
    common::run_ok(
        culprit()
            .env("HOME", &home2)
            .env_remove("PERF_BUILDID_DIR")
            .args(["record", "-q", "-N", "-e", "cpu-clock", "-o"])
            .arg(dir.join("n.data"))
            .args(["--", "true"]),
    );
    assert!(!home2.join(".debug").exists());
}

#[test]
fn test_demo_size_zero_is_refused_up_front() {
    let dir = common::scratch("demo-size-zero");
    let o = culprit()
        .args(["demo", "--size", "0", "--dir"])
        .arg(&dir)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(e.contains("--size 0") && e.contains("at least 1"), "{e}");
    // Nothing was built or recorded.
    assert!(!e.contains("culprit record"), "{e}");
    assert!(!dir.join("perf.data").exists());
}

/// A pre-existing output file (bytes that must survive a failed start) in a fresh directory.
fn precious_file(dir: &Path) -> (PathBuf, Vec<u8>) {
    let data = dir.join("precious.data");
    let bytes = b"PERFILE2 not really, but precious to its owner".to_vec();
    std::fs::write(&data, &bytes).unwrap();
    let _ = std::fs::remove_file(dir.join("precious.data.old"));
    (data, bytes)
}

/// A recording that cannot start (no such command, an event the kernel refuses) leaves the
/// previous file exactly as it was: not removed, not truncated, not renamed.
#[test]
fn test_record_failed_start_leaves_the_previous_file_unchanged() {
    let _lock = common::pmu_lock();
    let dir = common::scratch("record-failed-start");
    for (what, event, cmd) in [
        ("missing command", "cpu-clock", "/nonexistent/cmd"),
        ("event the kernel refuses", "software/config=0x99/", "true"),
    ] {
        let (data, bytes) = precious_file(&dir);
        let out = culprit()
            .args(["record", "-q", "-e", event, "-o"])
            .arg(&data)
            .args(["--", cmd])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{what}: {}", stderr(&out));
        assert_eq!(stderr(&out).lines().count(), 1, "{what}: {}", stderr(&out));
        assert_eq!(
            std::fs::read(&data).ok(),
            Some(bytes),
            "{what}: the previous file changed"
        );
        assert!(
            !dir.join("precious.data.old").exists(),
            "{what}: the previous file was moved"
        );
    }
}

/// The pid a workload wrote to `file` (`sh -c 'echo $$ > FILE; exec …'`).
fn pid_in(file: &Path) -> i32 {
    let text = std::fs::read_to_string(file)
        .unwrap_or_else(|e| panic!("no pid file {}: {e}", file.display()));
    text.trim().parse().unwrap()
}

/// Whether a process exists (and is not a zombie).
fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        s.rsplit_once(") ")
            .is_some_and(|(_, rest)| !rest.starts_with('Z'))
    })
}

/// A small tmpfs mounted for a test, unmounted when dropped.
/// A full disk (a 2 MB tmpfs) mid-recording: the recording stops, the launched command is
/// terminated, the partial file is kept and closed so that culprit (and perf) read its
/// samples, the exit status is non-zero and the error is said once with what was kept.
#[test]
fn test_record_full_disk_keeps_a_readable_partial_file_and_ends_the_command() {
    const TEST: &str = "test_record_full_disk_keeps_a_readable_partial_file_and_ends_the_command";
    let _lock = common::pmu_lock();
    let dir = common::scratch("record-full-disk");
    let Some(disk) = common::SmallDisk::mount(&dir, "2m") else {
        common::skip(TEST, "cannot mount a tmpfs here (not root?)");
        return;
    };
    let mnt = disk.path().to_path_buf();
    let data = mnt.join("full.data");
    let pid_file = dir.join("workload.pid");
    let _ = std::fs::remove_file(&pid_file);
    let shares = common::workload("shares");
    // 8 KB of stack per sample at 4000 Hz: 2 MB fill in well under a second.
    let out = culprit()
        .args([
            "record",
            "-e",
            "cpu-clock",
            "--call-graph",
            "dwarf",
            "-o",
            path_str(&data),
            "--",
            "sh",
            "-c",
            &format!(
                "echo $$ > {}; exec {} 100000",
                pid_file.display(),
                shares.display()
            ),
        ])
        .output()
        .unwrap();
    let e = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{e}");
    assert_eq!(e.matches("No space left on device").count(), 1, "{e}");
    assert!(
        e.contains("keeps what was written") && e.contains("the command was terminated"),
        "{e}"
    );
    let workload = pid_in(&pid_file);
    assert!(!alive(workload), "the workload {workload} outlived culprit");
    // The partial file: a valid perf.data with the samples before the cut.
    let p = culprit_decode::Reader::open(&data)
        .collect()
        .expect("the partial file reads");
    assert!(p.stopped.is_none(), "{:?}", p.stopped);
    assert!(p.samples.len() > 20, "{} samples", p.samples.len());
    assert!(
        e.contains(&format!("({} samples)", p.samples.len())),
        "the message counts the samples kept ({}): {e}",
        p.samples.len()
    );
    let report = common::run_ok(common::culprit().args(["report", "-i"]).arg(&data));
    assert!(stdout(&report).contains("heavy"), "{}", stdout(&report));
    if common::require_perf(TEST) {
        let o = perf(&["report", "-i", path_str(&data), "--stdio"]);
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(stdout(&o).contains("heavy"), "{}", stdout(&o));
    }
}

/// `--off-cpu` on a full disk: whatever the file keeps, the message says it truthfully. If
/// the header's feature sections fit, the off-CPU samples are named (by culprit and perf);
/// if they did not, the message says the tracepoints' formats are missing, and they are.
#[test]
fn test_record_off_cpu_full_disk_message_tells_what_the_file_lacks() {
    const TEST: &str = "test_record_off_cpu_full_disk_message_tells_what_the_file_lacks";
    if !std::path::Path::new("/sys/kernel/tracing/events/sched/sched_switch/id").exists() {
        common::skip(TEST, "no tracefs");
        return;
    }
    let _lock = common::pmu_lock();
    let dir = common::scratch("record-offcpu-full-disk");
    let Some(disk) = common::SmallDisk::mount(&dir, "2m") else {
        common::skip(TEST, "cannot mount a tmpfs here (not root?)");
        return;
    };
    let data = disk.path().join("offcpu.data");
    let shares = common::workload("shares");
    let out = culprit()
        .args([
            "record",
            "--off-cpu",
            "-e",
            "cpu-clock",
            "--call-graph",
            "dwarf",
            "-o",
        ])
        .arg(&data)
        .arg("--")
        .arg(&shares)
        .arg("100000")
        .output()
        .unwrap();
    let e = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{e}");
    assert!(e.contains("keeps what was written"), "{e}");
    let report = common::run_ok(
        common::culprit()
            .args(["report", "--sort", "comm", "-i"])
            .arg(&data),
    );
    let text = stdout(&report);
    if e.contains("tracepoints' formats are missing") {
        assert!(!text.contains("offcpu-time"), "named after all: {text}");
    } else {
        assert!(
            e.contains("readable by culprit report and perf report"),
            "{e}"
        );
        assert!(text.contains("offcpu-time"), "{e}\n{text}");
    }
}

/// `record -o - | head -c 1000`: the reader goes away; culprit exits 141 (as perf, killed by
/// SIGPIPE) with one message, and the command it launched does not run on unrecorded.
#[test]
fn test_record_to_a_closed_pipe_exits_141_and_ends_the_command() {
    use std::io::Read;
    let _lock = common::pmu_lock();
    let dir = common::scratch("record-broken-pipe");
    let shares = common::workload("shares");
    for keep in [1000usize, 100_000] {
        let pid_file = dir.join(format!("workload-{keep}.pid"));
        let _ = std::fs::remove_file(&pid_file);
        let mut child = culprit()
            .args(["record", "-e", "cpu-clock", "-o", "-", "--", "sh", "-c"])
            .arg(format!(
                "echo $$ > {}; exec {} 100000",
                pid_file.display(),
                shares.display()
            ))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stream = child.stdout.take().unwrap();
        let mut got = vec![0u8; keep];
        stream.read_exact(&mut got).unwrap();
        drop(stream);
        let start = Instant::now();
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "culprit kept running after its reader left"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        let mut e = String::new();
        child.stderr.take().unwrap().read_to_string(&mut e).unwrap();
        assert_eq!(status.code(), Some(141), "after {keep} bytes: {e}");
        assert_eq!(e.matches("Broken pipe").count(), 1, "{e}");
        // The launched command (once it ran) was terminated.
        if pid_file.exists() {
            let workload = pid_in(&pid_file);
            assert!(
                !alive(workload),
                "the workload {workload} runs on unrecorded"
            );
        }
    }
}

/// SIGTERM to culprit: forwarded to the command, the file finished, exit 128 + 15.
#[test]
fn test_record_sigterm_exits_143_and_finishes_the_file() {
    let _lock = common::pmu_lock();
    let dir = common::scratch("record-sigterm");
    let shares = common::workload("shares");
    let data = dir.join("t.data");
    let child = culprit()
        .args([
            "record",
            "--format",
            "json",
            "-e",
            "cpu-clock",
            "-o",
            path_str(&data),
            "--",
        ])
        .arg(&shares)
        .arg("100000")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(600));
    // SAFETY: signalling the child we spawned.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(143), "stderr: {}", stderr(&out));
    let v: Value = serde_json::from_str(stdout(&out).lines().last().unwrap()).unwrap();
    assert_eq!(v["interrupted"], true);
    assert_eq!(v["signal"], libc::SIGTERM);
    decode_checks(&data, &v);
}

/// The launched command gets SIGPIPE's default action, as from a shell (culprit, a Rust
/// program, ignores it; an ignored signal would stay ignored across exec).
#[test]
fn test_record_command_runs_with_the_default_sigpipe() {
    let _lock = common::pmu_lock();
    let dir = common::scratch("record-sigpipe-default");
    let out = common::run_ok(
        culprit()
            .args(["record", "-q", "-e", "cpu-clock", "-o"])
            .arg(dir.join("s.data"))
            .args(["--", "cat", "/proc/self/status"]),
    );
    let text = stdout(&out);
    let ignored = text
        .lines()
        .find_map(|l| l.strip_prefix("SigIgn:"))
        .map(|m| u64::from_str_radix(m.trim(), 16).unwrap())
        .expect("SigIgn in /proc/self/status");
    assert_eq!(
        ignored & (1 << (libc::SIGPIPE - 1)),
        0,
        "SIGPIPE is ignored in the command: {ignored:x}"
    );
}

/// At perf_event_paranoid >= 2 an unprivileged `-e cpu-clock:k` is refused with the reason
/// (it recorded 0 samples and exited 0), and so is a `:k,:u` pair (whose empty :k half was
/// blamed on counter scheduling); nothing is written.
#[test]
fn test_record_unprivileged_kernel_only_event_is_refused_with_the_reason() {
    const TEST: &str = "test_record_unprivileged_kernel_only_event_is_refused_with_the_reason";
    let _lock = common::pmu_lock();
    let paranoid: i32 = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    if paranoid < 2 {
        common::skip(
            TEST,
            "kernel.perf_event_paranoid < 2 allows kernel profiling",
        );
        return;
    }
    let can_drop = culprit_unprivileged()
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !can_drop {
        common::skip(TEST, "cannot run culprit as an unprivileged user (setpriv)");
        return;
    }
    let dir = common::scratch("record-unprivileged-k");
    std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
    for events in ["cpu-clock:k", "cpu-clock:k,cpu-clock:u"] {
        let data = dir.join("k.data");
        let _ = std::fs::remove_file(&data);
        let out = culprit_unprivileged()
            .args(["record", "-e", events, "-o"])
            .arg(&data)
            .args(["--", "true"])
            .output()
            .unwrap();
        let e = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{events}: {e}");
        assert!(
            e.contains(&format!(
                "event 'cpu-clock:k' samples the kernel only, but kernel.perf_event_paranoid = {paranoid} allows"
            )) && e.contains("CAP_PERFMON")
                && e.contains("sysctl -w kernel.perf_event_paranoid=1"),
            "{events}: {e}"
        );
        assert!(!e.contains("scheduled"), "{events}: {e}");
        assert!(!data.exists(), "{events}: a refused recording wrote a file");
    }
}

#[test]
fn test_record_multi_line_command_keeps_the_report_header_one_line() {
    let _lock = common::pmu_lock();
    let dir = common::scratch("record-multiline");
    let data = dir.join("ml.data");
    common::run_ok(
        culprit()
            .args(["record", "-q", "-e", "cpu-clock", "-o"])
            .arg(&data)
            .args(["--", "sh", "-c", "true\ntrue"]),
    );
    let o = common::run_ok(common::culprit().args(["report", "-i"]).arg(&data));
    let text = stdout(&o);
    let header: Vec<&str> = text.lines().take_while(|l| l.starts_with('#')).collect();
    let at = header
        .iter()
        .position(|l| l.contains("Command line:"))
        .unwrap_or_else(|| panic!("no command line in\n{text}"));
    // The line may wrap to the width: its continuation lines start with `#   `.
    let cmd: String = std::iter::once(header[at])
        .chain(
            header[at + 1..]
                .iter()
                .copied()
                .take_while(|l| l.starts_with("#   ")),
        )
        .collect::<Vec<_>>()
        .join(" ");
    // The newline is escaped inside the `#` line, not a line break out of the header.
    assert!(cmd.contains("true\\x0atrue"), "{cmd}");
    assert!(!text.lines().any(|l| l == "true"), "{text}");
}
