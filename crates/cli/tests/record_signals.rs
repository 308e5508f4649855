//! Issue 34 (reliability, round two): `culprit record` against signals and races — SIGUSR2
//! neither kills it nor stops the profiling, a SIGKILLed recorder takes its command with it,
//! and two recordings of one output do not both write it.
//! Every test that opens perf events takes `common::pmu_lock()`.

use crate::common;

use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

/// A command that runs about `secs` seconds on the CPU (no workload build needed).
fn busy(secs: u32) -> Vec<String> {
    vec![
        "sh".into(),
        "-c".into(),
        format!("end=$(($(date +%s) + {secs})); while [ $(date +%s) -lt $end ]; do :; done"),
    ]
}

fn spawn_record(out: &Path, extra: &[&str], cmd: &[String]) -> Child {
    let mut c = common::culprit();
    c.args(["record", "-q", "-e", "cpu-clock", "-o"])
        .arg(out)
        .args(extra)
        .arg("--")
        .args(cmd)
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    common::in_test_home(&mut c).spawn().unwrap()
}

/// The pids of `pid`'s children (all its threads').
fn children(pid: u32) -> Vec<i32> {
    let mut out = Vec::new();
    if let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) {
        for t in tasks.flatten() {
            let text = std::fs::read_to_string(t.path().join("children")).unwrap_or_default();
            out.extend(
                text.split_whitespace()
                    .filter_map(|p| p.parse::<i32>().ok()),
            );
        }
    }
    out
}

/// Waits (up to 10 s) until `pid` has a child running `comm`; its pid.
fn wait_for_child(pid: u32, comm: &str) -> i32 {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(10) {
        for c in children(pid) {
            let name = std::fs::read_to_string(format!("/proc/{c}/comm")).unwrap_or_default();
            if name.trim() == comm {
                return c;
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("no child '{comm}' of {pid}");
}

/// Whether `pid` still runs (not gone, not a zombie).
fn running(pid: i32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // The state follows the parenthesized command name.
    let state = stat.rsplit_once(") ").and_then(|(_, s)| s.chars().next());
    matches!(state, Some(s) if s != 'Z' && s != 'X')
}

fn samples_of(file: &Path) -> u64 {
    let out = common::run_ok(common::in_test_home(
        common::culprit()
            .args(["report", "--format", "json", "-i"])
            .arg(file),
    ));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    json["events"]
        .as_array()
        .map(|e| e.iter().filter_map(|e| e["samples"].as_u64()).sum())
        .unwrap_or(0)
}

#[test]
fn test_sigusr2_neither_kills_record_nor_stops_profiling() {
    if !common::require_perf("test_sigusr2_neither_kills_record_nor_stops_profiling") {
        return;
    }
    let _lock = common::pmu_lock();
    let dir = common::scratch("record-sigusr2");
    // The plain mode and a size rotation: neither dumps on SIGUSR2; both must ignore it.
    for (name, extra) in [("plain", vec![]), ("size", vec!["--switch-output=1G"])] {
        let out = dir.join(format!("{name}.data"));
        let mut child = spawn_record(&out, &extra, &busy(3));
        wait_for_child(child.id(), "sh");
        std::thread::sleep(Duration::from_millis(300));
        // SAFETY: kill on the recorder this test started.
        unsafe { libc::kill(child.id() as i32, libc::SIGUSR2) };
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(0), "{name}: {status:?}");
        // With --switch-output the data is in FILE.<timestamp> files.
        let files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with(name))
            .collect();
        let total: u64 = files.iter().map(|f| samples_of(f)).sum();
        // At most 1,200 samples (0.3 s at the default 4000 Hz) come before the signal; 3 s
        // of a busy command give far more even on a loaded machine: profiling went on.
        assert!(total > 2000, "{name}: {total} samples in {files:?}");
    }
}

#[test]
fn test_sigkilled_record_ends_its_command() {
    if !common::require_perf("test_sigkilled_record_ends_its_command") {
        return;
    }
    let _lock = common::pmu_lock();
    let dir = common::scratch("record-pdeathsig");
    let sleep = vec!["sleep".to_string(), "30".to_string()];
    let mut child = spawn_record(&dir.join("k.data"), &[], &sleep);
    let workload = wait_for_child(child.id(), "sleep");
    child.kill().unwrap();
    child.wait().unwrap();
    let start = Instant::now();
    while running(workload) && start.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let alive = running(workload);
    if alive {
        // SAFETY: ends the workload this test started, not to leave it behind.
        unsafe { libc::kill(workload, libc::SIGKILL) };
    }
    assert!(!alive, "the command outlived its SIGKILLed recorder");
}

#[test]
fn test_two_recordings_of_one_output_the_second_refused() {
    if !common::require_perf("test_two_recordings_of_one_output_the_second_refused") {
        return;
    }
    let _lock = common::pmu_lock();
    let dir = common::scratch("record-same-output");
    let out = dir.join("same.data");
    std::fs::write(&out, b"the previous recording").unwrap();
    let sleep = vec!["sleep".to_string(), "2".to_string()];
    let mut first = spawn_record(&out, &[], &sleep);
    wait_for_child(first.id(), "sleep");
    let second = common::in_test_home(
        common::culprit()
            .args(["record", "-q", "-e", "cpu-clock", "-o"])
            .arg(&out)
            .args(["--", "true"]),
    )
    .output()
    .unwrap();
    let err = String::from_utf8_lossy(&second.stderr);
    assert!(!second.status.success(), "{err}");
    assert!(
        err.contains("is being written by another recording"),
        "{err}"
    );
    let status = first.wait().unwrap();
    assert!(status.success(), "{status:?}");
    // The previous file is kept, once, and the first recording's file is whole.
    let old = dir.join("same.data.old");
    assert_eq!(std::fs::read(&old).unwrap(), b"the previous recording");
    let report = common::culprit()
        .args(["report", "-i"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        report.status.success(),
        "{}",
        String::from_utf8_lossy(&report.stderr)
    );
}

/// A small tmpfs mounted for a test, unmounted when dropped.
/// A full disk in a --switch-output rotation: the message counts the samples of the last
/// file, the one it names, not the whole recording's.
#[test]
fn test_switch_output_full_disk_counts_the_last_files_samples() {
    const TEST: &str = "test_switch_output_full_disk_counts_the_last_files_samples";
    let _lock = common::pmu_lock();
    let dir = common::scratch("record-switch-full-disk");
    let Some(disk) = common::SmallDisk::mount(&dir, "2m") else {
        common::skip(TEST, "cannot mount a tmpfs here (not root?)");
        return;
    };
    let mnt = disk.path().to_path_buf();
    let data = mnt.join("full.data");
    let shares = common::workload("shares");
    // 8 KB of stack per sample: files of 600 KB rotate, the third fills the disk.
    let out = common::culprit()
        .args(["record", "-e", "cpu-clock", "--call-graph", "dwarf"])
        .arg("--switch-output=600K")
        .arg("-o")
        .arg(&data)
        .arg("--")
        .arg(&shares)
        .arg("100000")
        .output()
        .unwrap();
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(e.contains("No space left on device"), "{e}");
    let p = culprit_decode::Reader::open(&data)
        .collect()
        .expect("the last file reads");
    assert!(p.samples.len() > 5, "{} samples", p.samples.len());
    assert!(
        e.contains(&format!("({} samples)", p.samples.len())),
        "the message counts the samples kept in {} ({}): {e}",
        data.display(),
        p.samples.len()
    );
}
