//! `culprit sched latency` and `culprit sched timehist` against perf 6.1's `perf sched
//! latency` and `perf sched timehist` on the same files: a `perf sched record` fixture with
//! perf's outputs stored beside it (no perf or tracefs needed), and live recordings of the
//! `schedmix` workload by perf and by `culprit sched record` (perf and tracefs needed).

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use serde_json::Value;

fn fixture(name: &str) -> PathBuf {
    common::repo_root()
        .join("crates/cli/tests/fixtures/sched")
        .join(name)
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `culprit sched VERB -i FILE ARGS`, checked; stdout.
fn culprit_sched(verb: &str, file: &Path, args: &[&str]) -> String {
    let o = common::run_ok(
        common::culprit()
            .arg("sched")
            .arg(verb)
            .arg("-i")
            .arg(file)
            .args(args),
    );
    text(&o.stdout)
}

/// `perf sched VERB -i FILE ARGS`, checked; stdout.
fn perf_sched(verb: &str, file: &Path, args: &[&str]) -> String {
    let o = common::run_ok(
        common::perf()
            .arg("sched")
            .arg(verb)
            .arg("-i")
            .arg(file)
            .args(args)
            .env("PAGER", "cat")
            .stdin(Stdio::null()),
    );
    text(&o.stdout)
}

/// The task rows of `perf sched latency` (lines with `| avg:`).
fn latency_rows(out: &str) -> Vec<String> {
    out.lines()
        .filter(|l| l.contains("| avg:"))
        .map(|l| l.trim_end().to_string())
        .collect()
}

/// The event rows of `perf sched timehist` (lines starting with a timestamp).
fn timehist_rows(out: &str) -> Vec<String> {
    out.lines()
        .filter(|l| {
            l.trim_start()
                .split('.')
                .next()
                .is_some_and(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
        })
        .map(|l| l.trim_end().to_string())
        .collect()
}

/// A `perf sched latency` row by task (`comm:tid` or `comm:(N)`): runtime ms, switches,
/// avg ms, max ms, max start, max end.
type PerfRow = (f64, u64, f64, f64, String, String);

fn parse_perf_latency(out: &str) -> BTreeMap<String, PerfRow> {
    let mut rows = BTreeMap::new();
    for line in latency_rows(out) {
        let f: Vec<&str> = line.split('|').map(str::trim).collect();
        let num = |s: &str| -> f64 {
            s.trim_start_matches("avg:")
                .trim_start_matches("max:")
                .trim_end_matches("ms")
                .trim()
                .parse()
                .unwrap_or_else(|_| panic!("a number in {line}"))
        };
        let when = |s: &str, tag: &str| {
            s.trim_start_matches(tag)
                .trim_end_matches('s')
                .trim()
                .to_string()
        };
        rows.insert(
            f[0].to_string(),
            (
                num(f[1]),
                f[2].parse().unwrap(),
                num(f[3]),
                num(f[4]),
                when(f[5], "max start:"),
                when(f[6], "max end:"),
            ),
        );
    }
    rows
}

fn usec(ns: u64) -> String {
    format!("{}.{:06}", ns / 1_000_000_000, (ns % 1_000_000_000) / 1000)
}

/// culprit's latency JSON by perf's task key.
fn culprit_latency(file: &Path, per_thread: bool) -> BTreeMap<String, PerfRow> {
    let mut args = vec!["--format", "json"];
    if per_thread {
        args.push("--pids");
    }
    let json: Value = serde_json::from_str(&culprit_sched("latency", file, &args)).unwrap();
    assert_eq!(json["schema"], 1);
    let mut rows = BTreeMap::new();
    for t in json["tasks"].as_array().unwrap() {
        let threads = t["threads"].as_u64().unwrap();
        let key = if threads > 1 {
            format!("{}:({threads})", t["comm"].as_str().unwrap())
        } else {
            format!("{}:{}", t["comm"].as_str().unwrap(), t["tid"])
        };
        let ms = |k: &str| t[k].as_u64().unwrap() as f64 / 1e6;
        rows.insert(
            key,
            (
                ms("runtime_ns"),
                t["switches"].as_u64().unwrap(),
                ms("avg_delay_ns"),
                ms("max_delay_ns"),
                usec(t["max_delay_start_ns"].as_u64().unwrap()),
                usec(t["max_delay_end_ns"].as_u64().unwrap()),
            ),
        );
    }
    rows
}

/// Every task of perf's table is culprit's with the same switches and times within 1 µs
/// (perf prints milliseconds with three decimals), and no other.
fn assert_latency_matches(perf_out: &str, culprit: &BTreeMap<String, PerfRow>) {
    let perf = parse_perf_latency(perf_out);
    assert!(!perf.is_empty(), "perf printed no task:\n{perf_out}");
    let close = |a: f64, b: f64| (a - b).abs() <= 0.0011;
    for (task, p) in &perf {
        let c = culprit
            .get(task)
            .unwrap_or_else(|| panic!("task {task} of perf is not in culprit's {culprit:?}"));
        assert_eq!(p.1, c.1, "{task}: switches");
        assert!(close(p.0, c.0), "{task}: runtime {} vs {}", p.0, c.0);
        assert!(close(p.2, c.2), "{task}: avg {} vs {}", p.2, c.2);
        assert!(close(p.3, c.3), "{task}: max {} vs {}", p.3, c.3);
        assert_eq!((&p.4, &p.5), (&c.4, &c.5), "{task}: max start/end");
    }
    assert_eq!(
        perf.keys().collect::<Vec<_>>(),
        culprit.keys().collect::<Vec<_>>()
    );
}

#[test]
fn test_sched_latency_of_perf_fixture_is_perfs_row_for_row() {
    let data = fixture("schedmix.data");
    for (args, expected) in [(vec!["--pids"], "latency-p.txt"), (vec![], "latency.txt")] {
        let ours = culprit_sched("latency", &data, &args);
        let perf = std::fs::read_to_string(fixture(expected)).unwrap();
        assert_eq!(latency_rows(&ours), latency_rows(&perf), "{expected}");
    }
    let perf = std::fs::read_to_string(fixture("latency-p.txt")).unwrap();
    assert_latency_matches(&perf, &culprit_latency(&data, true));
}

#[test]
fn test_sched_timehist_of_perf_fixture_is_perfs_line_for_line() {
    let data = fixture("schedmix.data");
    let ours = timehist_rows(&culprit_sched("timehist", &data, &[]));
    let perf = timehist_rows(&std::fs::read_to_string(fixture("timehist.txt")).unwrap());
    assert!(perf.len() > 100, "{} rows", perf.len());
    assert_eq!(ours.len(), perf.len());
    for (o, p) in ours.iter().zip(&perf) {
        assert_eq!(o, p);
    }
}

#[test]
fn test_sched_latency_histogram_and_csv_count_every_switch() {
    let data = fixture("schedmix.data");
    let json: Value =
        serde_json::from_str(&culprit_sched("latency", &data, &["--format", "json"])).unwrap();
    let buckets: u64 = json["histogram"]["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b.as_u64().unwrap())
        .sum();
    assert_eq!(buckets, json["total_switches"].as_u64().unwrap());
    common::validate_json_schema(
        "sched-latency",
        &culprit_sched("latency", &data, &["--format", "json"]),
    );
    common::validate_json_schema(
        "sched-timehist",
        &culprit_sched("timehist", &data, &["--format", "json"]),
    );
    let hist = culprit_sched("latency", &data, &["--histogram"]);
    assert!(hist.contains("Scheduling delay (µs)"), "{hist}");
    let csv = culprit_sched("latency", &data, &["--format", "csv"]);
    let mut lines = csv.lines();
    assert!(lines
        .next()
        .unwrap()
        .starts_with("comm,tid,threads,runtime_ns,switches"));
    assert_eq!(lines.count(), json["tasks"].as_array().unwrap().len());
    let th = culprit_sched("timehist", &data, &["--format", "csv"]);
    assert!(th.starts_with("time_ns,cpu,comm,tid,pid,wait_ns,sch_delay_ns,run_ns"));
}

#[test]
fn test_sched_reports_refuse_a_file_without_sched_switch() {
    let data = common::repo_root().join("crates/cli/tests/fixtures/cpu-clock-ppp.data");
    let o = common::culprit()
        .args(["sched", "latency", "-i"])
        .arg(&data)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("culprit sched record"),
        "{}",
        text(&o.stderr)
    );
}

/// Whether tracepoints can be opened here.
fn require_tracefs(test: &str) -> bool {
    if Path::new("/sys/kernel/tracing/events/sched/sched_switch/id").exists()
        || Path::new("/sys/kernel/debug/tracing/events/sched/sched_switch/id").exists()
    {
        return true;
    }
    common::skip(test, "tracefs is not mounted or not readable")
}

#[test]
fn test_sched_live_perf_and_culprit_recordings_agree_with_perf() {
    let test = "test_sched_live_perf_and_culprit_recordings_agree_with_perf";
    if !common::require_perf(test) || !require_tracefs(test) {
        return;
    }
    let dir = common::scratch("sched-live");
    let prog = common::workload("schedmix");
    let prog = prog.to_str().unwrap();
    let by_perf = dir.join("perf.data");
    common::run_ok(
        common::perf()
            .args(["sched", "record", "-q", "-o"])
            .arg(&by_perf)
            .args(["--", prog, "4", "10"]),
    );
    let by_culprit = dir.join("culprit.data");
    common::run_ok(
        common::culprit()
            .args(["sched", "record", "-q", "-o"])
            .arg(&by_culprit)
            .args(["--", prog, "4", "10"]),
    );
    for file in [&by_perf, &by_culprit] {
        let perf_out = perf_sched("latency", file, &["-p"]);
        assert_latency_matches(&perf_out, &culprit_latency(file, true));
        // The workload's threads waited for a CPU: at least its 4 spinning threads on fewer
        // CPUs (on a busy machine its other threads wait too).
        let ours = culprit_latency(file, true);
        let waited = ours
            .iter()
            .filter(|(k, r)| k.starts_with("schedmix-") && r.1 > 0)
            .count();
        // At least the 4 workers (another schedmix may run at the same time: system-wide).
        assert!(waited >= 4, "{file:?}: {waited} waited: {ours:?}");
        let p = timehist_rows(&perf_sched("timehist", file, &[]));
        let o = timehist_rows(&culprit_sched("timehist", file, &[]));
        assert_eq!(o.len(), p.len(), "{file:?}");
        let differ: Vec<_> = o.iter().zip(&p).filter(|(a, b)| a != b).collect();
        assert!(
            differ.is_empty(),
            "{file:?}: {} of {} rows differ: {differ:?}",
            differ.len(),
            p.len()
        );
    }
}

#[test]
fn test_off_cpu_wakers_names_the_writer_that_wakes_the_reader() {
    let test = "test_off_cpu_wakers_names_the_writer_that_wakes_the_reader";
    if !require_tracefs(test) {
        return;
    }
    let dir = common::scratch("sched-wakers");
    let file = dir.join("perf.data");
    let prog = common::workload("offcpu");
    common::run_ok(
        common::culprit()
            .args(["record", "-q", "--off-cpu=wakers", "-e", "cpu-clock", "-o"])
            .arg(&file)
            .arg("--")
            .arg(&prog)
            .args(["pipe", "20"]),
    );
    let text = culprit_sched("wakers", &file, &["--format", "json"]);
    common::validate_json_schema("sched-wakers", &text);
    let json: Value = serde_json::from_str(&text).unwrap();
    // The reader blocks in read() 20 times (one byte each), each time woken by the writer
    // thread's write(): the waker is offcpu, its stack holds the write.
    let rows = json["rows"].as_array().unwrap();
    let by_writer: u64 = rows
        .iter()
        .filter(|r| r["waker_comm"] == "offcpu")
        .filter(|r| {
            r["waker_stack"]
                .as_array()
                .unwrap()
                .iter()
                .any(|f| f.as_str().unwrap().contains("write"))
        })
        .map(|r| r["count"].as_u64().unwrap())
        .sum();
    assert!(
        (19..=21).contains(&by_writer),
        "{by_writer} wake-ups by write: {json}"
    );
    assert!(json["with_waker"].as_u64().unwrap() >= by_writer);
}
