//! JIT code named from JIT dumps (`jit-PID.dump`) and perf maps, against `perf inject --jit`
//! followed by `perf report` on the same recording: the same names, shares within 0.1 point.
//!
//! The first test runs workloads/jit_dump.c, a minimal JIT whose shares are known by
//! construction; the others run real runtimes (Node, CPython) when they are installed and
//! skip loudly otherwise.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The files a runtime writes in `/tmp` for its own pid (CPython's `-X perf` and Node's and
/// the JVM's perf maps, CPython's `-X perf_jit` dump) and those `perf inject --jit` writes
/// beside such a dump, removed when the test ends, passing or not: outside CI's private
/// `/tmp` they would outlive the suite.
struct RuntimeTmpFiles(BTreeSet<u32>);

/// The pid in a runtime's `/tmp` file name (`perf-PID.map`, `jit-PID.dump`, `jitted-PID-N.so`).
fn runtime_tmp_pid(name: &str) -> Option<u32> {
    let rest = name
        .strip_prefix("perf-")
        .and_then(|r| r.strip_suffix(".map"))
        .or_else(|| {
            name.strip_prefix("jit-")
                .and_then(|r| r.strip_suffix(".dump"))
        })
        .or_else(|| {
            name.strip_prefix("jitted-")
                .and_then(|r| r.strip_suffix(".so"))
                .and_then(|r| r.split_once('-').map(|(pid, _)| pid))
        })?;
    rest.parse().ok()
}

/// The pids that have runtime files in `/tmp` now.
fn runtime_tmp_pids() -> BTreeSet<u32> {
    std::fs::read_dir("/tmp")
        .into_iter()
        .flatten()
        .filter_map(|e| runtime_tmp_pid(&e.ok()?.file_name().to_string_lossy()))
        .collect()
}

impl RuntimeTmpFiles {
    /// Removes the files now and asserts that the runtime wrote some and none is left.
    fn assert_removed(self, what: &str) {
        let pids = self.0.clone();
        assert!(
            !pids.is_empty(),
            "{what}: no runtime file in /tmp was found"
        );
        drop(self);
        let left: Vec<u32> = runtime_tmp_pids().intersection(&pids).copied().collect();
        assert!(
            left.is_empty(),
            "{what}: runtime files left in /tmp for {left:?}"
        );
    }
}

impl Drop for RuntimeTmpFiles {
    fn drop(&mut self) {
        for entry in std::fs::read_dir("/tmp").into_iter().flatten().flatten() {
            let name = entry.file_name();
            if runtime_tmp_pid(&name.to_string_lossy()).is_some_and(|p| self.0.contains(&p)) {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
}

/// `perf record -k mono` (the clock JIT dumps use, which `perf inject --jit` needs) of `cmd`
/// run in `dir`, into `dir/perf.data`, with the runtime files the recorded processes left in
/// `/tmp` (those of pids that are new there and sampled in the recording: nobody else's).
fn record_in(dir: &Path, args: &[&str], cmd: &[&str]) -> (PathBuf, RuntimeTmpFiles) {
    let file = dir.join("perf.data");
    let _lock = common::pmu_lock();
    let before = runtime_tmp_pids();
    common::run_ok(
        common::perf()
            .current_dir(dir)
            .args(["record", "-q", "-k", "mono", "-e", "cpu-clock", "-o"])
            .arg(&file)
            .args(args)
            .arg("--")
            .args(cmd),
    );
    let fresh: BTreeSet<u32> = runtime_tmp_pids().difference(&before).copied().collect();
    let mut ours = BTreeSet::new();
    if !fresh.is_empty() {
        let pids = stdout_of(
            common::perf()
                .args(["script", "-F", "pid", "-i"])
                .arg(&file),
        );
        ours = pids
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .filter(|p| fresh.contains(p))
            .collect();
    }
    (file, RuntimeTmpFiles(ours))
}

/// perf's `--sort sym` shares (self, or children with `--children`) by symbol name.
fn perf_shares(file: &Path, children: bool) -> BTreeMap<String, f64> {
    let mode = if children {
        "--children"
    } else {
        "--no-children"
    };
    let out = common::run_ok(common::perf().arg("report").arg("-i").arg(file).args([
        "--stdio",
        "-g",
        "none",
        "--percent-limit",
        "0",
        "--sort",
        "sym",
        mode,
    ]));
    let mut shares = BTreeMap::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        // `  82.20%  [.] name` or, with children, `  90.00%  82.20%  [.] name`.
        let Some((left, name)) = line.split_once("] ") else {
            continue;
        };
        let Some(pct) = left
            .split_whitespace()
            .next()
            .and_then(|p| p.trim_end_matches('%').parse::<f64>().ok())
        else {
            continue;
        };
        *shares.entry(name.trim_end().to_string()).or_insert(0.0) += pct;
    }
    shares
}

/// culprit's `--sort sym` shares (self, or children) by symbol name, with its stderr.
fn culprit_shares(file: &Path, children: bool) -> (BTreeMap<String, f64>, String) {
    let mode = if children {
        "--children"
    } else {
        "--no-children"
    };
    let out = common::run_ok(
        common::culprit()
            .args(["report", "--unknown", "address"])
            .arg("-i")
            .arg(file)
            .args(["--format", "json", "--sort", "sym", mode]),
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let key = if children {
        "children_percent"
    } else {
        "percent"
    };
    let mut shares = BTreeMap::new();
    for row in json["rows"].as_array().unwrap() {
        let name = row["keys"]["sym"].as_str().unwrap_or("").to_string();
        let pct = row[key]["cpu-clock"]
            .as_f64()
            .unwrap_or_else(|| panic!("no {key} in {row}"));
        *shares.entry(name).or_insert(0.0) += pct;
    }
    (shares, String::from_utf8_lossy(&out.stderr).into_owned())
}

/// Asserts culprit's rows named by `is_jit` equal perf's within 0.1 point each (a name one of
/// them lacks counts 0 there: a frame holding one startup sample, 0.07 % of 1,400, may be
/// named by one tool's view of the JIT dump and not by the other's) and returns culprit's,
/// hottest first.
fn assert_jit_rows_match(
    what: &str,
    perf: &BTreeMap<String, f64>,
    ours: &BTreeMap<String, f64>,
    is_jit: &dyn Fn(&str) -> bool,
) -> Vec<(String, f64)> {
    let pick = |m: &BTreeMap<String, f64>| -> BTreeMap<String, f64> {
        m.iter()
            .filter(|(n, p)| is_jit(n) && **p >= 0.05)
            .map(|(n, p)| (n.clone(), *p))
            .collect()
    };
    let (p, o) = (pick(perf), pick(ours));
    assert!(!p.is_empty(), "{what}: perf names no JIT frame: {perf:?}");
    for name in p.keys().chain(o.keys()) {
        let (theirs, mine) = (
            p.get(name).copied().unwrap_or(0.0),
            o.get(name).copied().unwrap_or(0.0),
        );
        assert!(
            (theirs - mine).abs() <= 0.1,
            "{what}: {name}: perf {theirs}%, culprit {mine}%\nperf: {p:?}\nculprit: {o:?}"
        );
    }
    let mut rows: Vec<(String, f64)> = o.into_iter().collect();
    rows.sort_by(|a, b| b.1.total_cmp(&a.1));
    rows
}

/// `perf inject --jit` of a recording, next to it.
fn perf_inject(file: &Path) -> PathBuf {
    let injected = file.with_extension("jit.data");
    common::run_ok(
        common::perf()
            .current_dir(file.parent().unwrap())
            .args(["inject", "--jit", "-i"])
            .arg(file)
            .arg("-o")
            .arg(&injected),
    );
    injected
}

fn stdout_of(cmd: &mut Command) -> String {
    String::from_utf8_lossy(&common::run_ok(cmd).stdout).into_owned()
}

const HOT: &str = "js:hot_loop hot.js:10";
const COLD: &str = "js:cold_loop cold.js:20";

#[test]
fn test_jitdump_workload_matches_perf_inject_in_every_view() {
    if !common::require_perf("test_jitdump_workload_matches_perf_inject_in_every_view") {
        return;
    }
    let bin = common::workload("jit_dump");
    let dir = common::scratch("jit-workload");
    let (file, _tmp) = record_in(&dir, &[], &[bin.to_str().unwrap(), "12"]);
    let injected = perf_inject(&file);
    let is_jit = |n: &str| n.starts_with("js:");
    let (ours, _) = culprit_shares(&file, false);
    let rows = assert_jit_rows_match("report", &perf_shares(&injected, false), &ours, &is_jit);
    assert_eq!(rows[0].0, HOT, "{rows:?}");
    assert!(rows[0].1 > 2.0 * rows[1].1 && rows[1].0 == COLD, "{rows:?}");

    // annotate: the dump's code bytes disassembled, with the dump's source lines.
    let ann = stdout_of(
        common::culprit()
            .args(["annotate", "--source", "-i"])
            .arg(&file)
            .arg(HOT),
    );
    assert!(
        ann.contains("dec %rax") && ann.contains("hot.js:11"),
        "{ann}"
    );
    assert!(!ann.contains("code not available"), "{ann}");
    // srcline from the dump's debug-info records.
    let src = stdout_of(
        common::culprit()
            .args(["report", "--sort", "srcline", "-i"])
            .arg(&file),
    );
    assert!(
        src.contains("hot.js:12") && src.contains("cold.js:22"),
        "{src}"
    );
    // script, flame graph, folded stacks, speedscope and HTML name the JIT frames.
    let script = stdout_of(common::culprit().args(["script", "-i"]).arg(&file));
    assert!(script.contains(HOT), "script");
    let svg = stdout_of(common::culprit().args(["flamegraph", "-i"]).arg(&file));
    assert!(svg.contains("js:hot_loop"), "flamegraph");
    for format in ["folded", "speedscope"] {
        let out = stdout_of(
            common::culprit()
                .args(["export", "-f", format, "-o", "-", "-i"])
                .arg(&file),
        );
        assert!(out.contains(HOT), "export {format}");
    }
    let html = dir.join("report.html");
    common::run_ok(
        common::culprit()
            .args(["html", "-i"])
            .arg(&file)
            .arg("-o")
            .arg(&html),
    );
    assert!(std::fs::read_to_string(&html).unwrap().contains("hot_loop"));
}

#[test]
fn test_jitdump_next_to_moved_recording_and_damaged_dump() {
    if !common::require_perf("test_jitdump_next_to_moved_recording_and_damaged_dump") {
        return;
    }
    let bin = common::workload("jit_dump");
    let dir = common::scratch("jit-moved");
    let (file, _tmp) = record_in(&dir, &[], &[bin.to_str().unwrap(), "4"]);
    let dump = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "dump"))
        .expect("the workload wrote its dump");
    let bytes = std::fs::read(&dump).unwrap();
    // The recording and its dump copied elsewhere, the original dump gone.
    let other = common::scratch("jit-moved-elsewhere");
    let moved = other.join("perf.data");
    std::fs::copy(&file, &moved).unwrap();
    std::fs::write(other.join(dump.file_name().unwrap()), &bytes).unwrap();
    std::fs::remove_file(&dump).unwrap();
    let (before, _) = culprit_shares(&file, false);
    assert!(!before.contains_key(HOT), "no dump, no name: {before:?}");
    let (after, _) = culprit_shares(&moved, false);
    assert!(after.get(HOT).is_some_and(|p| *p > 50.0), "{after:?}");
    // Cut inside the second code load: one clear warning, the first function still named,
    // the rest of the report unchanged.
    let cut = bytes.len() - 30;
    let damaged = other.join(dump.file_name().unwrap());
    std::fs::write(&damaged, &bytes[..cut]).unwrap();
    let (cut_shares, stderr) = culprit_shares(&moved, false);
    assert!(
        stderr.contains("truncated") && stderr.contains("jit-"),
        "{stderr}"
    );
    assert_eq!(cut_shares.get(HOT), after.get(HOT), "{cut_shares:?}");
    assert!(!cut_shares.contains_key(COLD));
    for (name, share) in &after {
        if !name.starts_with("js:") {
            assert_eq!(cut_shares.get(name), Some(share), "{name}");
        }
    }
}

/// The JIT function of `jit_dump UNITS unwind`, with its `.eh_frame` in the dump.
const FRAMED: &str = "js:framed_loop frame.js:30";

#[test]
fn test_jitdump_unwinding_records_unwind_jit_frames_as_perf_inject() {
    let test = "test_jitdump_unwinding_records_unwind_jit_frames_as_perf_inject";
    if !common::require_perf(test) {
        return;
    }
    let bin = common::workload("jit_dump");
    let dir = common::scratch("jit-unwinding");
    let (file, _tmp) = record_in(
        &dir,
        &["--call-graph", "dwarf"],
        &[bin.to_str().unwrap(), "8", "unwind"],
    );
    let injected = perf_inject(&file);
    // The JIT function keeps no frame pointer: only its .eh_frame (the dump's unwinding
    // record) finds its caller, call_framed; a frame-pointer walk skips it to main.
    let wanted = |n: &str| n == FRAMED || n == "call_framed" || n == "main";
    let perf = perf_shares(&injected, true);
    let (ours, _) = culprit_shares(&file, true);
    let rows = assert_jit_rows_match("children", &perf, &ours, &wanted);
    let share = |name: &str| rows.iter().find(|r| r.0 == name).map_or(0.0, |r| r.1);
    assert!(share(FRAMED) > 80.0, "{rows:?}");
    assert!(share("call_framed") >= share(FRAMED), "{rows:?}");
}

/// A Node program whose hot function is `fib`.
const FIB_JS: &str = "function fib(n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }\n\
    let t = Date.now(), s = 0;\n\
    while (Date.now() - t < 1500) s += fib(22);\n\
    console.log(s);\n";

fn node_available(test: &str) -> bool {
    let node = common::runs("node", &["--version"]);
    common::need(test, node, "node is not installed (apt-get install nodejs)")
}

#[test]
fn test_node_perf_prof_jitdump_matches_perf_inject() {
    let test = "test_node_perf_prof_jitdump_matches_perf_inject";
    if !common::require_perf(test) || !node_available(test) {
        return;
    }
    let dir = common::scratch("jit-node-prof");
    std::fs::write(dir.join("fib.js"), FIB_JS).unwrap();
    let (file, _tmp) = record_in(
        &dir,
        &["-F", "999"],
        &[
            "node",
            "--perf-prof",
            "--interpreted-frames-native-stack",
            "fib.js",
        ],
    );
    let injected = perf_inject(&file);
    let is_js = |n: &str| n.starts_with("JS:");
    let (ours, _) = culprit_shares(&file, false);
    let rows = assert_jit_rows_match("node", &perf_shares(&injected, false), &ours, &is_js);
    assert!(
        rows[0].0.starts_with("JS:*fib ") && rows[0].1 > 50.0,
        "{rows:?}"
    );
}

/// The JS frames of each sample's call chain (a set: what children shares count), by
/// timestamp, from `script` text with `-F time,ip,sym`; and whether the chain reached the
/// process's entry point (`_start`), i.e. its unwinding did not give up.
fn js_frames_per_sample(script: &str) -> BTreeMap<String, (BTreeSet<String>, bool)> {
    let mut samples = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in script.lines() {
        if line.trim().is_empty() {
            current = None;
        } else if !line.starts_with([' ', '\t']) || line.trim_end().ends_with(':') {
            let time = line.trim().trim_end_matches(':').to_string();
            samples.insert(time.clone(), (BTreeSet::new(), false));
            current = Some(time);
        } else if let Some(entry) = current.as_ref().and_then(|t| samples.get_mut(t)) {
            // `ADDR NAME+0xOFF (DSO)` or `ADDR NAME (DSO)`.
            let name = line.trim().split_once(' ').map_or("", |(_, rest)| rest);
            let name = name.rsplit_once(" (").map_or(name, |(n, _)| n);
            let name = name.rsplit_once("+0x").map_or(name, |(n, _)| n);
            if name.starts_with("JS:") {
                entry.0.insert(name.to_string());
            }
            entry.1 |= name == "_start";
        }
    }
    samples
}

#[test]
fn test_node_perf_prof_unwinding_info_dwarf_chains_match_perf_inject() {
    let test = "test_node_perf_prof_unwinding_info_dwarf_chains_match_perf_inject";
    if !common::require_perf(test) || !node_available(test) {
        return;
    }
    let dir = common::scratch("jit-node-unwinding");
    std::fs::write(dir.join("fib.js"), FIB_JS).unwrap();
    let (file, _tmp) = record_in(
        &dir,
        &["-F", "499", "--call-graph", "dwarf"],
        &[
            "node",
            "--perf-prof",
            "--perf-prof-unwinding-info",
            "--interpreted-frames-native-stack",
            "fib.js",
        ],
    );
    let injected = perf_inject(&file);
    // Sample by sample: the JS frames of culprit's DWARF chains (the dump's unwinding
    // records, read at report time) equal those perf's unwinder finds in the ELF files
    // `perf inject --jit` wrote. Where perf's unwinding gave up before the entry point
    // (libdw fails on a few V8 frames), its chain is a prefix and is not compared. V8 gives
    // some code (bytecode handlers) an unwinding record without rules; perf's unwinder then
    // takes its own way and culprit the mapped file's rules or frame pointers: up to 1 % of
    // the samples may differ there.
    let fields = ["-F", "time,ip,sym"];
    let theirs = js_frames_per_sample(&stdout_of(
        common::perf()
            .args(["script", "-i"])
            .arg(&injected)
            .args(fields),
    ));
    let ours = js_frames_per_sample(&stdout_of(
        common::culprit()
            .args(["script", "-i"])
            .arg(&file)
            .args(fields),
    ));
    assert_eq!(theirs.len(), ours.len(), "sample counts");
    let mut compared = 0;
    let mut differ = Vec::new();
    for (time, (frames, complete)) in &theirs {
        let (mine, _) = ours
            .get(time)
            .unwrap_or_else(|| panic!("no sample at {time}"));
        if *complete {
            compared += 1;
            if frames != mine {
                differ.push((time, frames.symmetric_difference(mine).collect::<Vec<_>>()));
            }
        }
    }
    assert!(
        compared * 100 >= theirs.len() * 98,
        "perf unwound only {compared} of {} samples to _start",
        theirs.len()
    );
    assert!(
        differ.len() * 100 <= compared,
        "{} of {compared} samples differ: {differ:?}",
        differ.len()
    );
    // fib is the hottest JS function, and holds most samples with its callers.
    let is_js = |n: &str| n.starts_with("JS:");
    let (flat, _) = culprit_shares(&file, false);
    let hottest = flat
        .iter()
        .filter(|(n, _)| is_js(n))
        .max_by(|a, b| a.1.total_cmp(b.1))
        .map(|(n, _)| n.clone());
    assert!(
        hottest
            .as_deref()
            .is_some_and(|n| n.starts_with("JS:*fib ")),
        "{flat:?}"
    );
    let (children, _) = culprit_shares(&file, true);
    assert!(children[hottest.as_deref().unwrap()] > 50.0, "{children:?}");
}

#[test]
fn test_node_perf_basic_prof_map_matches_perf() {
    let test = "test_node_perf_basic_prof_map_matches_perf";
    if !common::require_perf(test) || !node_available(test) {
        return;
    }
    let dir = common::scratch("jit-node-map");
    std::fs::write(dir.join("fib.js"), FIB_JS).unwrap();
    let (file, tmp) = record_in(
        &dir,
        &["-F", "999"],
        &["node", "--perf-basic-prof", "fib.js"],
    );
    let is_js = |n: &str| n.starts_with("JS:");
    let (ours, _) = culprit_shares(&file, false);
    let rows = assert_jit_rows_match("node map", &perf_shares(&file, false), &ours, &is_js);
    assert!(
        rows[0].0.starts_with("JS:*fib ") && rows[0].1 > 50.0,
        "{rows:?}"
    );
    tmp.assert_removed("node map");
}

/// A Java program whose hot method is `Fib.fib`.
const FIB_JAVA: &str = "public class Fib {\n\
    static int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }\n\
    public static void main(String[] args) {\n\
        long start = System.nanoTime();\n\
        long sum = 0;\n\
        while (System.nanoTime() - start < 1_500_000_000L) sum += fib(24);\n\
        System.out.println(sum);\n\
    }\n\
}\n";

/// The JVM (HotSpot) writing its perf map at exit (`-XX:+DumpPerfMapAtExit`): the Java
/// method names (`int Fib.fib(int)`) rank first and equal perf's shares.
#[test]
fn test_jvm_perf_map_at_exit_matches_perf() {
    let test = "test_jvm_perf_map_at_exit_matches_perf";
    if !common::require_perf(test) {
        return;
    }
    let jdk = common::runs("javac", &["-version"]);
    if !common::need(
        test,
        jdk,
        "no JDK (apt-get install openjdk-17-jdk-headless)",
    ) {
        return;
    }
    let dir = common::scratch("jit-jvm");
    std::fs::write(dir.join("Fib.java"), FIB_JAVA).unwrap();
    common::run_ok(Command::new("javac").current_dir(&dir).arg("Fib.java"));
    let (file, _tmp) = record_in(
        &dir,
        &["-F", "999"],
        &[
            "java",
            "-XX:+UnlockDiagnosticVMOptions",
            "-XX:+DumpPerfMapAtExit",
            "-cp",
            ".",
            "Fib",
        ],
    );
    let is_java = |n: &str| n.contains("Fib.");
    let (ours, _) = culprit_shares(&file, false);
    let rows = assert_jit_rows_match("jvm map", &perf_shares(&file, false), &ours, &is_java);
    assert!(
        rows[0].0 == "int Fib.fib(int)" && rows[0].1 > 50.0,
        "{rows:?}"
    );
}

/// A Python program whose hot function is `fib`.
const FIB_PY: &str = "import time\n\
def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\n\
def main():\n    t = time.time()\n    while time.time() - t < 1.5:\n        fib(18)\n\
main()\n";

/// A CPython `3.MINOR` interpreter: `python3.MINOR` on PATH, else pyenv's.
fn python(minor: u32, test: &str) -> Option<PathBuf> {
    let name = format!("python3.{minor}");
    let works = |p: &Path| {
        Command::new(p)
            .arg("-c")
            .arg("import sys")
            .output()
            .is_ok_and(|o| o.status.success())
    };
    let on_path: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).map(|d| d.join(&name)).collect())
        .unwrap_or_default();
    let pyenv = std::env::var_os("PYENV_ROOT")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".pyenv")))
        .and_then(|root| std::fs::read_dir(root.join("versions")).ok())
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok())
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with(&format!("3.{minor}."))
        })
        .map(|e| e.path().join("bin").join(&name));
    let found = on_path.into_iter().chain(pyenv).find(|p| works(p));
    if found.is_none() {
        common::skip(test, &format!("no {name} interpreter (PATH, pyenv)"));
    }
    found
}

/// Records `fib.py` with call chains under CPython with `flag`, and compares its `py::`
/// rows (`--children`) with perf's on `oracle` of the recording.
fn python_matches_perf(test: &str, python: &Path, flag: &str, inject: bool) {
    let dir = common::scratch(test);
    std::fs::write(dir.join("fib.py"), FIB_PY).unwrap();
    let (file, tmp) = record_in(
        &dir,
        &["-F", "999", "-g"],
        &[python.to_str().unwrap(), "-X", flag, "fib.py"],
    );
    let oracle = if inject {
        perf_inject(&file)
    } else {
        file.clone()
    };
    let is_py = |n: &str| n.starts_with("py::");
    let (ours, _) = culprit_shares(&file, true);
    let rows = assert_jit_rows_match(test, &perf_shares(&oracle, true), &ours, &is_py);
    assert!(
        rows.iter().any(|(n, _)| n.starts_with("py::fib:")),
        "{rows:?}"
    );
    tmp.assert_removed(test);
}

#[test]
fn test_python312_perf_map_matches_perf() {
    let test = "test_python312_perf_map_matches_perf";
    if !common::require_perf(test) {
        return;
    }
    if let Some(py) = python(12, test) {
        python_matches_perf("jit-py312", &py, "perf", false);
    }
}

#[test]
fn test_python313_perf_jit_dump_matches_perf_inject() {
    let test = "test_python313_perf_jit_dump_matches_perf_inject";
    if !common::require_perf(test) {
        return;
    }
    if let Some(py) = python(13, test) {
        python_matches_perf("jit-py313", &py, "perf_jit", true);
    }
}
