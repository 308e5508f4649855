//! Files recorded now by `perf record` (software events, so this runs on any machine with
//! perf) in several modes, read by culprit-decode and compared sample by sample with
//! `perf script` and with `perf report`'s totals.

use std::path::Path;
use std::process::Stdio;

use crate::common::*;

fn record(out: &Path, args: &[&str], workload: &Path, pipe: bool) {
    let mut cmd = crate::common::perf();
    cmd.arg("record").arg("-q").args(args);
    if pipe {
        cmd.args(["-o", "-"]);
        cmd.stdout(Stdio::from(std::fs::File::create(out).unwrap()));
    } else {
        cmd.arg("-o").arg(out).stdout(Stdio::null());
    }
    cmd.arg("--").arg(workload).arg("5");
    let st = cmd.stderr(Stdio::null()).status().expect("run perf record");
    assert!(st.success(), "perf record {args:?} failed");
}

/// `# Samples: N  of event 'NAME'` and `# Event count (approx.): P` lines of perf report.
fn perf_report_totals(path: &Path) -> Vec<(String, Option<u64>, u64)> {
    let out = crate::common::perf()
        .args(["report", "--stdio", "--sort", "comm", "-i"])
        .arg(path)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let mut v = Vec::new();
    let mut pending: Option<(String, Option<u64>)> = None;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# Samples: ") {
            let (n, name) = rest.split_once("of event '").unwrap();
            // perf abbreviates large counts ("1K"): those are not compared exactly.
            let n: Option<u64> = n.trim().parse().ok();
            pending = Some((name.trim_end_matches('\'').to_string(), n));
        } else if let Some(rest) = line.strip_prefix("# Event count (approx.): ") {
            let (name, n) = pending.take().unwrap();
            v.push((name, n, rest.trim().parse().unwrap()));
        }
    }
    v
}

#[test]
fn test_read_file_live_recordings_match_perf() {
    if !require_perf("decode::test_read_file_live_recordings_match_perf") {
        return;
    }
    let shares = workload("shares");
    let dir = scratch("live");
    let modes: &[(&str, &[&str], bool)] = &[
        ("fp", &["-e", "cpu-clock", "-F", "2000", "-g"], false),
        ("period", &["-e", "task-clock", "-c", "200000"], false),
        (
            "two",
            &["-e", "cpu-clock,page-faults", "-c", "50000"],
            false,
        ),
        ("pipe", &["-e", "cpu-clock", "-F", "2000", "-g"], true),
        (
            "zstd",
            &["-z", "-e", "cpu-clock", "-F", "2000", "-g"],
            false,
        ),
        ("zstd-pipe", &["-z", "-e", "cpu-clock", "-F", "2000"], true),
        (
            "syswide",
            &["-e", "cpu-clock", "-F", "500", "-a", "-g"],
            false,
        ),
    ];
    let _lock = pmu_lock();
    for (name, args, pipe) in modes {
        let out = dir.join(format!("{name}.data"));
        record(&out, args, &shares, *pipe);
        let p = culprit_decode::Reader::open(&out)
            .collect()
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(p.stopped.is_none(), "{name}: {:?}", p.stopped);
        assert_eq!(p.meta.pipe_mode, *pipe, "{name}");
        assert!(!p.samples.is_empty(), "{name}");
        let mut perf = perf_script(&out);
        if *name == "syswide" {
            // Every process is in a system-wide recording; other processes' mappings (a
            // concurrent build's deleted memfd code) are named as perf's own corner cases
            // decide. Sample by sample, compare the workload's samples, which this test
            // controls; the totals below still cover every sample.
            let mut p = p.clone();
            let samples = std::mem::take(&mut p.samples);
            p.samples = samples
                .into_iter()
                .filter(|s| p_comm(&p, s) == "shares")
                .collect();
            perf.retain(|q| q.comm == "shares");
            assert!(!p.samples.is_empty(), "{name}: no sample of the workload");
            assert_matches_perf(&p, &perf, name);
        } else {
            assert_matches_perf(&p, &perf, name);
        }
        for (ev, n, period) in perf_report_totals(&out) {
            let e = p
                .events
                .iter()
                .find(|e| e.name == ev)
                .unwrap_or_else(|| panic!("{name}: no event {ev}"));
            assert_eq!(e.period, period, "{name}: {ev}");
            if let Some(n) = n {
                assert_eq!(e.samples, n, "{name}: {ev}");
            }
        }
    }
}

/// A sample's command, whitespace-normalized as perf script prints it.
fn p_comm(p: &culprit_decode::Profile, s: &culprit_decode::model::Sample) -> String {
    p.str(s.comm)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}
