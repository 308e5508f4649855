//! `culprit lock record` and `culprit lock contention`: the kernel table against perf 6.1's
//! `perf lock contention` (tracepoint mode) on the same `perf lock record` file, and the
//! user-lock table on `workloads/mutex` (one contended pthread mutex) against the futex
//! waits `perf script` shows in the same file.

use crate::common;

use std::collections::HashMap;
use std::path::Path;
use std::process::Stdio;

use serde_json::Value;

fn require_tracefs(test: &str) -> bool {
    if Path::new("/sys/kernel/tracing/events/lock/contention_begin/id").exists()
        || Path::new("/sys/kernel/debug/tracing/events/lock/contention_begin/id").exists()
    {
        return true;
    }
    common::skip(test, "tracefs (lock:contention_begin) is not readable")
}

/// The rows of perf's kernel table (`contended total max avg type caller`), as
/// (caller, contended, total ns), sorted.
fn kernel_rows(text: &str) -> Vec<(String, u64, f64)> {
    let unit = |u: &str| match u {
        "ns" => 1.0,
        "us" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        "m" => 60e9,
        _ => 3600e9,
    };
    let mut rows: Vec<(String, u64, f64)> = text
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("contended"))
        .skip(1)
        .take_while(|l| !l.trim_start().starts_with("waits"))
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            if f.len() < 9 {
                return None;
            }
            Some((
                f[8..].join(" "),
                f[0].parse().ok()?,
                f[1].parse::<f64>().ok()? * unit(f[2]),
            ))
        })
        .collect();
    rows.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(&b.1)).then(a.2.total_cmp(&b.2)));
    rows
}

#[test]
fn test_lock_contention_kernel_table_is_perfs() {
    let test = "test_lock_contention_kernel_table_is_perfs";
    if !common::require_perf(test) || !require_tracefs(test) {
        return;
    }
    let dir = common::scratch("lock-kernel");
    let file = dir.join("perf.data");
    let prog = common::workload("mutex");
    common::run_ok(
        common::perf()
            .args(["lock", "record", "-q", "-a", "-o"])
            .arg(&file)
            .arg("--")
            .arg(&prog)
            .args(["4", "200"]),
    );
    let perf = common::run_ok(
        common::perf()
            .args(["lock", "contention", "-i"])
            .arg(&file)
            .env("PAGER", "cat")
            .stdin(Stdio::null()),
    );
    // perf prints its table on stderr.
    let perf = kernel_rows(&String::from_utf8_lossy(&perf.stderr));
    let ours = common::run_ok(
        common::culprit()
            .args(["lock", "contention", "-i"])
            .arg(&file),
    );
    let ours = kernel_rows(&String::from_utf8_lossy(&ours.stdout));
    assert!(!perf.is_empty(), "perf found no kernel lock contention");
    assert_eq!(
        perf.iter().map(|r| (&r.0, r.1)).collect::<Vec<_>>(),
        ours.iter().map(|r| (&r.0, r.1)).collect::<Vec<_>>(),
        "call sites and contention counts"
    );
    for (p, o) in perf.iter().zip(&ours) {
        // perf prints two decimals of the largest unit.
        assert!((p.2 - o.2).abs() <= p.2 * 0.01 + 10.0, "{p:?} vs {o:?}");
    }
}

#[test]
fn test_lock_contention_finds_the_contended_mutex_and_its_call_site() {
    let test = "test_lock_contention_finds_the_contended_mutex_and_its_call_site";
    if !common::require_perf(test) || !require_tracefs(test) {
        return;
    }
    let dir = common::scratch("lock-mutex");
    let file = dir.join("perf.data");
    let prog = common::workload("mutex");
    let rec = common::run_ok(
        common::culprit()
            .args(["lock", "record", "-q", "-o"])
            .arg(&file)
            .arg("--")
            .arg(&prog),
    );
    let stdout = String::from_utf8_lossy(&rec.stdout);
    let mutex = stdout
        .split("counter_lock at ")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .expect("the workload prints its mutex's address")
        .to_string();
    let o = common::run_ok(
        common::culprit()
            .args(["lock", "contention", "--format", "json", "-i"])
            .arg(&file),
    );
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    common::validate_json_schema("lock", &text);
    let json: Value = serde_json::from_str(&text).unwrap();
    let first = &json["futex"][0];
    assert_eq!(first["address"], mutex.as_str(), "{first}");
    assert_eq!(first["call_site"], "add_under_lock", "{first}");
    let ours: u64 = json["futex"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["address"] == mutex.as_str())
        .map(|r| r["total_ns"].as_u64().unwrap())
        .sum();
    // The oracle: perf script's futex enters on the mutex (FUTEX_WAIT) to each thread's
    // next exit.
    let script = common::run_ok(
        common::perf()
            .args(["script", "-F", "tid,time,event,trace", "-i"])
            .arg(&file)
            .env("PAGER", "cat")
            .stdin(Stdio::null()),
    );
    let mut open: HashMap<u64, f64> = HashMap::new();
    let mut total_s = 0.0;
    let mut waits = 0;
    for line in String::from_utf8_lossy(&script.stdout).lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 3 {
            continue;
        }
        let (Ok(tid), Ok(time)) = (
            f[0].parse::<u64>(),
            f[1].trim_end_matches(':').parse::<f64>(),
        ) else {
            continue;
        };
        if f[2].starts_with("syscalls:sys_enter_futex") {
            let uaddr = line
                .split("uaddr: ")
                .nth(1)
                .and_then(|s| s.split(',').next());
            let op = line
                .split("op: ")
                .nth(1)
                .and_then(|s| s.split(',').next())
                .and_then(|s| u64::from_str_radix(s.trim_start_matches("0x"), 16).ok());
            if uaddr == Some(mutex.as_str()) && op.is_some_and(|op| op & 127 == 0) {
                open.insert(tid, time);
            } else {
                open.remove(&tid);
            }
        } else if f[2].starts_with("syscalls:sys_exit_futex") {
            if let Some(t0) = open.remove(&tid) {
                total_s += time - t0;
                waits += 1;
            }
        }
    }
    assert!(waits > 0, "perf script shows no wait on {mutex}");
    let oracle = total_s * 1e9;
    // perf script prints microseconds: one µs per wait at most.
    assert!(
        (ours as f64 - oracle).abs() <= 2000.0 * f64::from(waits),
        "culprit {ours} ns vs perf script {oracle} ns over {waits} waits"
    );
}
