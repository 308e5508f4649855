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
    // Kernel lock contention is the machine's, not the workload's: where one recording has
    // none (a quiet moment), another, longer one is made.
    let mut perf = Vec::new();
    for rounds in ["200", "400", "800"] {
        common::run_ok(
            common::perf()
                .args(["lock", "record", "-q", "-a", "-o"])
                .arg(&file)
                .arg("--")
                .arg(&prog)
                .args(["4", rounds]),
        );
        let out = common::run_ok(
            common::perf()
                .args(["lock", "contention", "-i"])
                .arg(&file)
                .env("PAGER", "cat")
                .stdin(Stdio::null()),
        );
        // perf prints its table on stderr. perf 6.1 also prints call sites whose waits
        // never ended in the file (a `contention_end` perf cannot pair, e.g. of tid -1), at
        // 0 ns; perf 6.2 and later leave rows of no wait out, as culprit does.
        perf = kernel_rows(&String::from_utf8_lossy(&out.stderr))
            .into_iter()
            .filter(|r| r.2 > 0.0)
            .collect();
        if !perf.is_empty() {
            break;
        }
    }
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

/// A futex wait by perf's own account: `perf script --ns`'s `sys_enter_futex` with a waiting
/// operation to the same thread's next `sys_exit_futex`.
struct FutexWait {
    tid: u64,
    uaddr: String,
    op: u64,
    start_ns: u64,
    end_ns: u64,
}

/// The futex waits of `file` (the oracle of the lock tests).
fn perf_futex_waits(file: &Path) -> Vec<FutexWait> {
    let script = common::run_ok(
        common::perf()
            .args(["script", "--ns", "-F", "tid,time,event,trace", "-i"])
            .arg(file)
            .env("PAGER", "cat")
            .stdin(Stdio::null()),
    );
    let ns = |t: &str| -> Option<u64> {
        let (s, frac) = t.trim_end_matches(':').split_once('.')?;
        Some(s.parse::<u64>().ok()? * 1_000_000_000 + frac.parse::<u64>().ok()?)
    };
    let field = |line: &str, name: &str| {
        line.split(name)
            .nth(1)
            .and_then(|s| s.split(',').next())
            .map(str::to_string)
    };
    let mut open: HashMap<u64, (String, u64, u64)> = HashMap::new();
    let mut waits = Vec::new();
    for line in String::from_utf8_lossy(&script.stdout).lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let (Some(tid), Some(time)) = (
            f.first().and_then(|t| t.parse::<u64>().ok()),
            f.get(1).and_then(|t| ns(t)),
        ) else {
            continue;
        };
        let event = f.get(2).copied().unwrap_or("");
        if event.starts_with("syscalls:sys_enter_futex") {
            let op = field(line, "op: ")
                .and_then(|s| u64::from_str_radix(s.trim_start_matches("0x"), 16).ok());
            match (op, field(line, "uaddr: ")) {
                // FUTEX_WAIT, LOCK_PI, WAIT_BITSET, WAIT_REQUEUE_PI, LOCK_PI2.
                (Some(op), Some(uaddr)) if matches!(op & 127, 0 | 6 | 9 | 11 | 13) => {
                    open.insert(tid, (uaddr, op, time));
                }
                _ => {
                    open.remove(&tid);
                }
            }
        } else if event.starts_with("syscalls:sys_exit_futex") {
            if let Some((uaddr, op, start_ns)) = open.remove(&tid) {
                waits.push(FutexWait {
                    tid,
                    uaddr,
                    op,
                    start_ns,
                    end_ns: time,
                });
            }
        }
    }
    waits
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
    let on_mutex: Vec<FutexWait> = perf_futex_waits(&file)
        .into_iter()
        .filter(|w| w.uaddr == mutex && w.op & 127 == 0)
        .collect();
    let waits = on_mutex.len();
    let total_ns: u64 = on_mutex.iter().map(|w| w.end_ns - w.start_ns).sum();
    assert!(waits > 0, "perf script shows no wait on {mutex}");
    assert_eq!(
        ours, total_ns,
        "culprit's total wait vs perf script's (ns) over {waits} waits"
    );
}

/// On the HTML timeline of a recording with scheduler and futex events, the mutex
/// workload's threads spend time in the `lock` state, and a blocked interval is in it
/// exactly when the thread left the CPU inside one of its futex waits (perf script's
/// FUTEX_WAIT enters to the thread's next exit, in ns).
#[test]
fn test_html_timeline_shows_futex_waits_as_the_lock_state() {
    let test = "test_html_timeline_shows_futex_waits_as_the_lock_state";
    if !common::require_perf(test) || !require_tracefs(test) {
        return;
    }
    let dir = common::scratch("lock-html-states");
    let file = dir.join("perf.data");
    // `lock record --states`: the lock events, the scheduler's, system-wide.
    common::run_ok(
        common::culprit()
            .args(["lock", "record", "-q", "--states", "-o"])
            .arg(&file)
            .arg("--")
            .arg(common::workload("mutex"))
            .args(["3", "200"]),
    );
    let page = dir.join("page.html");
    common::run_ok(
        common::culprit()
            .args(["html", "-i"])
            .arg(&file)
            .arg("-o")
            .arg(&page),
    );
    let data = crate::browser::page_data(&page);
    let tl = &data["timeline"];
    let names = tl["state_names"].as_array().unwrap();
    let lock = names
        .iter()
        .position(|n| n == "lock")
        .expect("a lock state") as u64;
    // The oracle's futex waits per thread.
    let mut waits: HashMap<u64, Vec<(u64, u64)>> = HashMap::new();
    for w in perf_futex_waits(&file) {
        waits.entry(w.tid).or_default().push((w.start_ns, w.end_ns));
    }
    let (mut lock_ns, mut checked) = (0u64, 0);
    for (i, th) in tl["threads"].as_array().unwrap().iter().enumerate() {
        if th["comm"] != "mutex" {
            continue;
        }
        let tid = th["tid"].as_u64().unwrap();
        let spans = waits.get(&tid).cloned().unwrap_or_default();
        for iv in tl["states"][i]["blocked"].as_array().unwrap() {
            let [a, b, state] = [0, 1, 2].map(|k| iv[k].as_u64().unwrap());
            if state <= 1 {
                continue; // running or runnable: never a lock state
            }
            let in_wait = spans.iter().any(|&(s, e)| s <= a && a < e);
            assert_eq!(
                state == lock,
                in_wait,
                "thread {tid}: interval {iv} (left the CPU at {a}) against its futex waits"
            );
            checked += 1;
            if state == lock {
                lock_ns += b - a;
            }
        }
    }
    assert!(
        checked > 10,
        "{checked} blocked intervals of the mutex threads"
    );
    assert!(lock_ns > 0, "no lock state in the mutex threads");
}
