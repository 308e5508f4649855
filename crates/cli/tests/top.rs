//! `culprit top` in plain-text mode (stdout is not a terminal): refreshing blocks of the
//! hottest functions with percentages, the offenders panel, a launched command and `-p`.
//! cpu-clock only, so these run without a hardware PMU.

use crate::common;

use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::process::{Command, ExitStatus, Stdio};
use std::time::Duration;

/// Splits plain-text output into refresh blocks (each starts with "culprit top:").
fn blocks(text: &str) -> Vec<Vec<&str>> {
    let mut out: Vec<Vec<&str>> = Vec::new();
    for l in text.lines() {
        if l.starts_with("culprit top:") {
            out.push(Vec::new());
        }
        if let Some(b) = out.last_mut() {
            b.push(l);
        }
    }
    out
}

/// The percentage of the first column of the row naming `sym`.
fn percent_of(block: &[&str], sym: &str) -> Option<f64> {
    block.iter().find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.last() == Some(&sym) && f.first()?.ends_with('%') {
            f[0].trim_end_matches('%').parse().ok()
        } else {
            None
        }
    })
}

#[test]
fn plain_text_refreshes_with_function_percentages_and_offenders() {
    let _lock = common::pmu_lock();
    let shares = common::workload("shares");
    let out = common::run_ok(
        common::culprit()
            .args([
                "top",
                "-e",
                "cpu-clock",
                "-F",
                "1000",
                "-d",
                "0.5",
                "--offenders",
                "--",
            ])
            .arg(&shares)
            .arg("120")
            .stdout(Stdio::piped()),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    eprintln!("{text}");
    let b = blocks(&text);
    assert!(b.len() >= 2, "several refreshes: {}", b.len());
    let last = b.last().unwrap();
    assert!(
        last[1].contains("cpu-clock*"),
        "sorted by cpu-clock: {}",
        last[1]
    );
    let heavy = percent_of(last, "heavy").expect("heavy row");
    let light = percent_of(last, "light").expect("light row");
    // shares.c: heavy does 3x the work of light (75% / 25% of the process's time).
    assert!((heavy - 75.0).abs() < 10.0, "heavy {heavy}%");
    assert!((light - 25.0).abs() < 10.0, "light {light}%");
    assert!(heavy > light);
    // Sorted: percentages do not increase down the table.
    let pcts: Vec<f64> = last[2..]
        .iter()
        .take_while(|l| !l.is_empty())
        .filter_map(|l| {
            l.split_whitespace()
                .next()?
                .trim_end_matches('%')
                .parse()
                .ok()
        })
        .collect();
    assert!(pcts.windows(2).all(|w| w[0] >= w[1]), "{pcts:?}");
    // The offenders panel names a confirmed address in heavy (75% of the samples).
    let panel: Vec<&&str> = last
        .iter()
        .skip_while(|l| !l.starts_with("# Offenders of cpu-clock"))
        .collect();
    assert!(!panel.is_empty(), "offenders panel");
    assert!(
        panel
            .iter()
            .any(|l| l.contains("shares") && l.contains("0x") && l.ends_with("heavy")),
        "{panel:?}"
    );
    // The sample counts grow from block to block.
    let count = |blk: &[&str]| -> u64 {
        blk[0]
            .split(", ")
            .nth(1)
            .and_then(|s| s.split(' ').next()?.parse().ok())
            .unwrap()
    };
    assert!(count(last) > count(&b[0]));
    // The target ended on its own: the final refresh counted every recorded sample exactly
    // once (the live stream delivers each sample once; allow 0.2% for nothing but safety).
    let err = String::from_utf8_lossy(&out.stderr);
    let line = err
        .lines()
        .find(|l| l.contains("samples recorded"))
        .expect("summary line");
    let nums: Vec<u64> = line
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|w| w.parse().ok())
        .collect();
    assert_eq!(nums.len(), 2, "{line}");
    assert!(nums[1] <= nums[0], "never counted twice: {line}");
    assert!(nums[1] + nums[0] / 500 >= nums[0], "{line}");
    assert_eq!(nums[1], count(last), "{line}");
}

#[test]
fn attach_to_pid_for_a_duration() {
    let _lock = common::pmu_lock();
    let mut child = Command::new(common::workload("shares"))
        .arg("100000")
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let out = common::culprit()
        .args(["top", "-e", "cpu-clock", "--stdio", "--duration", "2", "-p"])
        .arg(child.id().to_string())
        .output()
        .unwrap();
    let _ = child.kill();
    let _ = child.wait();
    let text = String::from_utf8_lossy(&out.stdout);
    eprintln!("{text}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success());
    let b = blocks(&text);
    assert!(
        (1..=4).contains(&b.len()),
        "about 2 s of 1 s refreshes: {}",
        b.len()
    );
    let heavy = percent_of(b.last().unwrap(), "heavy").expect("heavy row");
    assert!(heavy > 50.0, "heavy {heavy}%");
}

#[test]
fn without_a_target_watches_the_whole_system() {
    let _lock = common::pmu_lock();
    // A busy process culprit did not start and was not told about.
    let mut child = Command::new(common::workload("shares"))
        .arg("100000")
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let out = common::culprit()
        .args([
            "top",
            "--stdio",
            "-e",
            "cpu-clock",
            "-d",
            "0.5",
            "--duration",
            "1.5",
        ])
        .output()
        .unwrap();
    let _ = child.kill();
    let _ = child.wait();
    let text = String::from_utf8_lossy(&out.stdout);
    let err = String::from_utf8_lossy(&out.stderr);
    eprintln!("{text}\n{err}");
    assert!(out.status.success(), "{err}");
    let b = blocks(&text);
    assert!(!b.is_empty(), "{text}");
    // As `perf top`: system-wide, so the other process's functions are there.
    assert!(
        b.iter().any(|blk| percent_of(blk, "heavy").is_some()),
        "{text}"
    );
    // A recording that fails (no such process) prints its error and no empty table.
    let out = common::culprit()
        .args(["top", "--stdio", "-e", "cpu-clock", "-p", "999999"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("no such process"));
    // Formats top does not write are refused.
    let out = common::culprit()
        .args(["top", "--format", "csv", "-e", "cpu-clock", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("top has no --format csv"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The end column (exclusive) of every whitespace-separated field of a line.
fn field_ends(line: &str) -> Vec<usize> {
    let mut ends = Vec::new();
    let mut in_field = false;
    for (i, c) in line.char_indices() {
        if c != ' ' && !in_field {
            in_field = true;
        } else if c == ' ' && in_field {
            in_field = false;
            ends.push(i);
        }
    }
    if in_field {
        ends.push(line.len());
    }
    ends
}

#[test]
fn two_event_columns_line_up_with_their_headers() {
    let _lock = common::pmu_lock();
    let out = common::run_ok(
        common::culprit()
            .args([
                "top",
                "--stdio",
                "-e",
                "cpu-clock,task-clock",
                "-d",
                "0.5",
                "--",
            ])
            .arg(common::workload("shares"))
            .arg("60")
            .stdout(Stdio::piped()),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    eprintln!("{text}");
    let b = blocks(&text);
    let last = b.last().expect("a block");
    let header = last[1];
    assert!(
        header.contains("cpu-clock*") && header.contains("task-clock"),
        "{header}"
    );
    // The header's fields, past its `#`: the two event names and `Shared` of `Shared Object`.
    let head = field_ends(header);
    let row = last
        .iter()
        .find(|l| l.ends_with(" heavy"))
        .expect("heavy row");
    let cells = field_ends(row);
    // The percentages end where their event names end, and the DSO starts where `Shared
    // Object` starts.
    assert_eq!(head[1], cells[0], "cpu-clock:\n{header}\n{row}");
    assert_eq!(head[2], cells[1], "task-clock:\n{header}\n{row}");
    let dso_at = header.find("Shared Object").unwrap();
    assert_eq!(
        &row[dso_at..dso_at + "shares".len()],
        "shares",
        "\n{header}\n{row}"
    );
}

#[test]
fn json_lines_one_object_per_refresh() {
    let _lock = common::pmu_lock();
    let out = common::run_ok(
        common::culprit()
            .args([
                "top",
                "--format",
                "json",
                "--offenders",
                "-e",
                "cpu-clock",
                "-d",
                "0.5",
                "--",
            ])
            .arg(common::workload("shares"))
            // ~1.5 s here (80 units ran 0.49 s on a fast CPU: one refresh only).
            .arg("250"),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    // shares prints its own line to the same stdout (the launched command's output is not
    // redirected, as with perf record).
    let objs: Vec<serde_json::Value> = text
        .lines()
        .filter(|l| !l.starts_with("sink ="))
        .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
        .collect();
    assert!(objs.len() >= 2, "{text}");
    let lines: String = text
        .lines()
        .filter(|l| !l.starts_with("sink ="))
        .map(|l| format!("{l}\n"))
        .collect();
    common::validate_json_schema("top", &lines);
    let last = objs.last().unwrap();
    assert_eq!(last["schema"], 1);
    assert_eq!(last["events"][0], "cpu-clock");
    let f = last["functions"].as_array().unwrap();
    assert_eq!(f[0]["symbol"], "heavy", "{last:#}");
    let pct = f[0]["percent"]["cpu-clock"].as_f64().unwrap();
    assert!((pct - 75.0).abs() < 10.0, "heavy {pct}%");
    let sum: u64 = f.iter().map(|r| r["samples"].as_u64().unwrap()).sum();
    assert!(sum <= last["samples"].as_u64().unwrap());
    let o = last["offenders"].as_array().unwrap();
    assert!(
        o.iter()
            .any(|x| x["symbol"] == "heavy" && x["ip"].as_str().unwrap().starts_with("0x")),
        "{last:#}"
    );
    // Samples only grow.
    let s: Vec<u64> = objs
        .iter()
        .map(|o| o["samples"].as_u64().unwrap())
        .collect();
    assert!(s.windows(2).all(|w| w[0] <= w[1]), "{s:?}");
}

/// Resident set size of a process in kB (VmRSS).
fn rss_kb(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    s.lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// Fixed memory: the live stream is decoded as it arrives (no file, no re-reads), so the RSS
/// after 4 s is about the RSS after 1 s.
#[test]
fn live_memory_stays_flat() {
    let _lock = common::pmu_lock();
    let child = common::culprit()
        .args([
            "top",
            "--stdio",
            "-e",
            "cpu-clock",
            "-F",
            "4000",
            "-d",
            "0.5",
            "--duration",
            "5",
            "--",
        ])
        .arg(common::workload("shares"))
        .arg("100000")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    std::thread::sleep(Duration::from_secs(1));
    let early = rss_kb(pid).expect("culprit top runs after 1 s");
    std::thread::sleep(Duration::from_secs(3));
    let late = rss_kb(pid).expect("culprit top runs after 4 s");
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    eprintln!("RSS {early} kB after 1 s, {late} kB after 4 s\n{err}");
    assert!(out.status.success(), "{err}");
    // 3 s at 4000 Hz is 12000 more samples; a growing store of them or of the stream would
    // show. The bound is generous: allocator noise and symbol tables loaded late.
    assert!(late < early + 8 * 1024, "RSS {early} kB -> {late} kB");
    // No temporary recording anywhere.
    assert!(!std::env::temp_dir()
        .join(format!("culprit-top-{pid}.data"))
        .exists());
}

/// `s` without SGR colour sequences (`ESC [ … m`).
fn strip_colours(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find("\x1b[") {
        out.push_str(&rest[..i]);
        let tail = &rest[i + 2..];
        match tail.find(|c: char| !(c.is_ascii_digit() || c == ';')) {
            Some(j) if tail[j..].starts_with('m') => rest = &tail[j + 1..],
            _ => {
                out.push_str("\x1b[");
                rest = tail;
            }
        }
    }
    out.push_str(rest);
    out
}

/// Runs `cmd` with a pseudo-terminal (120x40) as its stdin, stdout and stderr, and returns
/// its exit status and everything it wrote to the terminal.
fn run_in_pty(mut cmd: Command) -> (ExitStatus, String) {
    let (mut master, mut slave) = (0, 0);
    let ws = libc::winsize {
        ws_row: 40,
        ws_col: 120,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: openpty writes two new descriptors; name and termios may be null.
    let rc = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            &ws,
        )
    };
    assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
    // SAFETY: both descriptors are new and ours.
    let (master, slave) = unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
    // SAFETY: fcntl on a descriptor we own: the child must not hold the master.
    unsafe { libc::fcntl(master.as_raw_fd(), libc::F_SETFD, libc::FD_CLOEXEC) };
    cmd.stdin(Stdio::from(slave.try_clone().unwrap()))
        .stdout(Stdio::from(slave.try_clone().unwrap()))
        .stderr(Stdio::from(slave));
    let mut child = cmd.spawn().expect("spawn in a pty");
    // The command keeps its copies of the slave until dropped: the reader sees EOF (EIO)
    // only when every slave descriptor is closed.
    drop(cmd);
    let reader = std::thread::spawn(move || {
        let mut f = std::fs::File::from(master);
        let mut out = Vec::new();
        let mut buf = [0u8; 65536];
        // EIO once the last slave descriptor is closed.
        while let Ok(n) = f.read(&mut buf) {
            if n == 0 {
                break;
            }
            out.extend_from_slice(&buf[..n]);
        }
        out
    });
    let status = child.wait().unwrap();
    let out = reader.join().unwrap();
    (status, String::from_utf8_lossy(&out).into_owned())
}

/// The full-screen view owns the terminal while it is up: a warning of the recording waits
/// until the view has left the alternate screen, and the last table stays on the terminal
/// when the watched command exits.
#[test]
fn full_screen_view_prints_warnings_and_the_last_table_after_leaving() {
    let _lock = common::pmu_lock();
    let max_rate: u64 = std::fs::read_to_string("/proc/sys/kernel/perf_event_max_sample_rate")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(100_000);
    let mut cmd = common::culprit();
    // Sampling at the kernel's limit slows the workload down a lot: bounded by --duration.
    cmd.args([
        "top",
        "-e",
        "cpu-clock",
        "-d",
        "0.2",
        "--duration",
        "3",
        "-F",
    ])
    // Above the kernel's limit: the recorder warns that it lowers the rate.
    .arg((max_rate + 1).to_string())
    .arg("--")
    .arg(common::workload("shares"))
    .arg("20");
    let (status, out) = run_in_pty(cmd);
    let out = strip_colours(&out);
    assert!(status.success(), "{out:?}");
    // crossterm's LeaveAlternateScreen.
    let leave = out
        .find("\x1b[?1049l")
        .unwrap_or_else(|| panic!("the view never left the alternate screen: {out:?}"));
    let enter = out
        .find("\x1b[?1049h")
        .expect("the view entered the alternate screen");
    assert!(enter < leave);
    let warning = out
        .find("perf_event_max_sample_rate")
        .unwrap_or_else(|| panic!("no rate warning: {out:?}"));
    assert!(
        warning > leave,
        "the warning was written into the full-screen view: {out:?}"
    );
    let after = &out[leave..];
    assert!(after.contains("culprit top: "), "no last table: {after:?}");
    let table = after
        .lines()
        .find(|l| l.contains("cpu-clock*"))
        .unwrap_or_else(|| panic!("no last table: {after:?}"));
    assert!(table.starts_with("# cpu-clock*"), "{table:?}");
    // The last table has rows (which functions lead depends on the machine: at the kernel's
    // highest rate a busy one spends most samples in its softirqs).
    let rows = after
        .lines()
        .skip_while(|l| !l.contains("cpu-clock*"))
        .skip(1)
        .take_while(|l| l.contains('%'))
        .count();
    assert!(rows > 0, "the last table has no rows: {after:?}");
}

/// System-wide, rows are per process (command and PID columns, `command`/`pid` in JSON)
/// and culprit's own samples are hidden, counted in `hidden_samples`; `--include-self`
/// shows them.
#[test]
fn system_wide_rows_name_the_process_and_hide_culprit_itself() {
    let _lock = common::pmu_lock();
    let run = |extra: &[&str]| -> (u32, Vec<serde_json::Value>) {
        let child = common::culprit()
            .args([
                "top",
                "--format",
                "json",
                "-a",
                "-e",
                "cpu-clock",
                "-d",
                "0.5",
            ])
            .args(extra)
            .arg("--")
            .arg(common::workload("shares"))
            .arg("150")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run culprit top -a");
        let pid = child.id();
        let out = child.wait_with_output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        if !out.status.success() {
            panic!("top -a: {}", String::from_utf8_lossy(&out.stderr));
        }
        let objs = text
            .lines()
            .filter(|l| l.starts_with('{'))
            .map(|l| serde_json::from_str(l).expect("JSON"))
            .collect();
        (pid, objs)
    };
    let (pid, objs) = run(&[]);
    let last = objs.last().expect("a refresh");
    let lines: String = objs.iter().map(|o| format!("{o}\n")).collect();
    common::validate_json_schema("top", &lines);
    let f = last["functions"].as_array().unwrap();
    assert!(!f.is_empty(), "{last:#}");
    assert!(
        f.iter()
            .all(|r| r["pid"].is_i64() && r["command"].is_string()),
        "{last:#}"
    );
    let heavy = f
        .iter()
        .find(|r| r["symbol"] == "heavy")
        .expect("heavy row");
    assert_eq!(heavy["command"], "shares", "{heavy}");
    assert!(
        f.iter().all(|r| r["pid"].as_i64() != Some(i64::from(pid))),
        "culprit's own rows shown: {last:#}"
    );
    assert!(last["hidden_samples"].is_u64(), "{last:#}");
    let (_, objs) = run(&["--include-self"]);
    assert!(objs.last().unwrap().get("hidden_samples").is_none());
}
