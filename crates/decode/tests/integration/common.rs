//! Helpers: fixture paths, the perf gate, the machine-wide perf-event lock, and a parser for
//! `perf script` output used as the oracle.

use std::path::{Path, PathBuf};
use std::process::Command;

use culprit_decode::model::{DsoKind, Profile};

// The PMU lock, the skip rules and the workload builder every crate's tests share.
pub use culprit_testkit::{pmu_lock, require_perf, workload};

pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `perf` with `$HOME` at target/test-home and no `$PERF_BUILDID_DIR`: its build-id cache
/// (which `perf record` fills) is the suite's own, never the user's `~/.debug`.
pub fn perf() -> Command {
    let home = repo_root().join("target/test-home");
    let _ = std::fs::create_dir_all(&home);
    let mut c = Command::new("perf");
    c.env("HOME", home).env_remove("PERF_BUILDID_DIR");
    c
}

/// A fresh scratch directory under target/test-tmp/decode-NAME.
pub fn scratch(name: &str) -> PathBuf {
    let dir = repo_root()
        .join("target/test-tmp")
        .join(format!("decode-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// One sample as `perf script -F event,comm,tid,time,ip,dso,period --ns` prints it.
#[derive(Debug, Clone, PartialEq)]
pub struct PerfSample {
    pub comm: String,
    pub tid: i32,
    pub time: u64,
    pub period: u64,
    pub event: String,
    /// Sample IP and DSO (only printed on the sample line when there is no call chain).
    pub ip: Option<(u64, String)>,
    /// Call-chain frames: address as perf prints it (map-relative for user DSOs) and DSO.
    pub frames: Vec<(u64, String)>,
}

pub fn perf_script(path: &Path) -> Vec<PerfSample> {
    let out = perf()
        .args([
            "script",
            "-F",
            "event,comm,tid,time,ip,dso,period",
            "--ns",
            "-i",
        ])
        .arg(path)
        .output()
        .expect("run perf script");
    assert!(
        out.status.success(),
        "perf script failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    parse_perf_script(&String::from_utf8_lossy(&out.stdout))
}

fn parse_addr_dso(s: &str) -> Option<(u64, String)> {
    let s = s.trim();
    let (addr, rest) = s.split_once(char::is_whitespace)?;
    // perf sometimes prints a symbol between address and DSO; the DSO is the last "(...)",
    // which may hold parentheses itself (`(/memfd:sealed-x (deleted))`): find its opening
    // one by nesting depth.
    let rest = rest.trim().strip_suffix(')')?;
    let mut depth = 0usize;
    let open = rest.char_indices().rev().find_map(|(i, c)| match c {
        ')' => {
            depth += 1;
            None
        }
        '(' if depth == 0 => Some(i),
        '(' => {
            depth -= 1;
            None
        }
        _ => None,
    })?;
    let dso = &rest[open + 1..];
    Some((u64::from_str_radix(addr, 16).ok()?, dso.to_string()))
}

pub fn parse_perf_script(text: &str) -> Vec<PerfSample> {
    let mut out: Vec<PerfSample> = Vec::new();
    for line in text.lines() {
        if line.trim().is_empty() {
            continue;
        }
        if line.starts_with('\t') {
            let f = parse_addr_dso(line).unwrap_or_else(|| panic!("frame line {line:?}"));
            if f.1 == "inlined" {
                continue; // perf's inline expansion, not a recorded frame
            }
            out.last_mut().expect("frame before sample").frames.push(f);
            continue;
        }
        let toks: Vec<&str> = line.split_whitespace().collect();
        let ti = toks
            .iter()
            .position(|t| {
                t.ends_with(':')
                    && t.trim_end_matches(':')
                        .split_once('.')
                        .is_some_and(|(a, b)| {
                            !a.is_empty()
                                && b.len() == 9
                                && a.bytes().all(|c| c.is_ascii_digit())
                                && b.bytes().all(|c| c.is_ascii_digit())
                        })
            })
            .unwrap_or_else(|| panic!("no time in {line:?}"));
        let (secs, ns) = toks[ti].trim_end_matches(':').split_once('.').unwrap();
        let time = secs.parse::<u64>().unwrap() * 1_000_000_000 + ns.parse::<u64>().unwrap();
        let tid: i32 = toks[ti - 1].parse().unwrap();
        let comm = toks[..ti - 1].join(" ");
        let period: u64 = toks[ti + 1].parse().unwrap();
        let event = toks[ti + 2].trim_end_matches(':').to_string();
        let rest = toks[ti + 3..].join(" ");
        let ip = if rest.is_empty() {
            None
        } else {
            Some(parse_addr_dso(&rest).unwrap_or_else(|| panic!("ip in {line:?}")))
        };
        out.push(PerfSample {
            comm,
            tid,
            time,
            period,
            event,
            ip,
            frames: Vec::new(),
        });
    }
    out
}

/// How perf script would print a location: DSO path (`[unknown]` when unmapped) and the
/// address it shows for a call-chain frame.
fn perf_view(p: &Profile, addr: u64, loc: &culprit_decode::model::Location) -> (u64, String) {
    match p.dso(loc) {
        None => (addr, "[unknown]".to_string()),
        Some(d) if d.kind == DsoKind::Kernel => (addr, d.path.clone()),
        Some(d) => (loc.file_offset, d.path.clone()),
    }
}

/// Whether the file was recorded on another kernel than the one running here. perf then
/// resolves kernel addresses past the recorded kernel map with the running kernel's layout
/// (its module areas), so it may print `[unknown]` where the recording machine's perf, and
/// culprit (which reads only the file), say `[kernel.kallsyms]`.
fn foreign_kernel(p: &Profile) -> bool {
    let running = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    p.meta
        .os_release
        .as_deref()
        .is_some_and(|r| r.trim() != running.trim())
}

/// perf's view with the one environment-dependent difference of [`foreign_kernel`] files
/// removed: perf's `[unknown]` for a kernel-space address culprit puts in the kernel.
fn perf_dso_here(foreign: bool, addr: u64, ours: &str, perfs: &str) -> String {
    if foreign && perfs == "[unknown]" && ours == "[kernel.kallsyms]" && addr >> 63 == 1 {
        return ours.to_string();
    }
    perfs.to_string()
}

/// Asserts that culprit's samples are perf script's samples: same order, thread, time,
/// event, period, comm, IP and DSO, and the same call-chain frames.
pub fn assert_matches_perf(p: &Profile, perf: &[PerfSample], what: &str) {
    let foreign = foreign_kernel(p);
    assert_eq!(
        p.samples.len(),
        perf.len(),
        "{what}: sample count differs from perf script"
    );
    for (i, (s, q)) in p.samples.iter().zip(perf).enumerate() {
        let ctx = || format!("{what}: sample #{i} (perf: {q:?}, culprit: {s:?})");
        assert_eq!(s.tid, q.tid, "{}", ctx());
        assert_eq!(s.time, q.time, "{}", ctx());
        assert_eq!(s.period, q.period, "{}", ctx());
        let ev = &p.events[s.event as usize].name;
        assert_eq!(ev, &q.event, "{}", ctx());
        // perf script pads/truncates nothing in comm, but collapses nothing either; compare
        // with whitespace normalized as our parser split it.
        let comm = p
            .str(s.comm)
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        assert_eq!(comm, q.comm, "{}", ctx());
        if let Some((ip, dso)) = &q.ip {
            assert_eq!(s.ip, *ip, "{}", ctx());
            let ours = p.dso(&s.location).map_or("[unknown]", |d| d.path.as_str());
            assert_eq!(ours, perf_dso_here(foreign, *ip, ours, dso), "{}", ctx());
        }
        // perf script unwinds --call-graph dwarf samples itself; culprit-decode only keeps
        // their registers and stack (unwinding is the symbolizer's job).
        let dwarf = p.events[s.event as usize].sample_type & (1 << 13) != 0;
        if !dwarf {
            let ours: Vec<(u64, String)> = p
                .callchain(s)
                .iter()
                .map(|f| perf_view(p, f.addr, &f.location))
                .collect();
            let theirs: Vec<(u64, String)> = q
                .frames
                .iter()
                .zip(
                    ours.iter()
                        .map(|o| o.1.as_str())
                        .chain(std::iter::repeat("")),
                )
                .map(|((a, d), o)| (*a, perf_dso_here(foreign, *a, o, d)))
                .collect();
            assert_eq!(ours, theirs, "{}", ctx());
        }
    }
}

/// The DSO of a `perf script` line is its last parenthesized group, parentheses inside it
/// included (a deleted memfd mapping of a system-wide recording broke the parse).
#[test]
fn perf_script_dso_with_parentheses() {
    assert_eq!(
        parse_addr_dso("7f00 (/memfd:sealed-1 (deleted))"),
        Some((0x7f00, "/memfd:sealed-1 (deleted)".to_string()))
    );
    assert_eq!(
        parse_addr_dso("ffff81 foo (bar) ([kernel.kallsyms])"),
        Some((0xffff81, "[kernel.kallsyms]".to_string()))
    );
}
