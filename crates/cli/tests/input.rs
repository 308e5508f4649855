//! The input every reading verb shares (`-i FILE|-`, `--symfs`, `--debug-dir`): its I/O
//! errors, reading stdin, where recorded files are looked up, and the one rule by which `-e`
//! names a recorded event.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

/// A culprit-decode fixture (recorded by perf; see its README).
fn decode_fixture(name: &str) -> PathBuf {
    common::repo_root()
        .join("crates/decode/tests/fixtures")
        .join(name)
}

/// A fixture of these tests (see crates/cli/tests/fixtures/README.md).
fn own_fixture(name: &str) -> PathBuf {
    common::repo_root()
        .join("crates/cli/tests/fixtures")
        .join(name)
}

/// The verbs that read a perf.data file, each with what it needs besides `-i`.
const READING_VERBS: &[(&str, &[&str])] = &[
    ("report", &[]),
    ("annotate", &[]),
    ("script", &[]),
    ("ibs", &[]),
    ("trace", &["-e", "END { exit(0); }"]),
];

fn run(cmd: &mut Command) -> Output {
    cmd.output().expect("run culprit")
}

#[test]
fn test_missing_input_names_the_file_and_the_reason_once() {
    // Before: `cannot read x: cannot read x: No such file or directory (os error 2): No such
    // file or directory (os error 2)` (the verb's context, the decoder's message with its
    // source, and the source again).
    let dir = common::scratch("input-missing");
    let missing = dir.join("nosuch.data");
    let reason = std::io::Error::from_raw_os_error(libc_enoent()).to_string();
    for (verb, extra) in READING_VERBS {
        let out = run(common::culprit()
            .arg(verb)
            .arg("-i")
            .arg(&missing)
            .args(*extra));
        assert_eq!(out.status.code(), Some(2), "{verb}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            err.trim_end(),
            format!(
                "culprit: error: cannot read {}: {reason}",
                missing.display()
            ),
            "{verb}"
        );
    }
}

/// ENOENT (the same number on every Linux architecture).
fn libc_enoent() -> i32 {
    2
}

#[test]
fn test_stdin_input_for_every_reading_verb() {
    // `-i -` reads a stream from stdin: a pipe-mode recording, and a file-mode one.
    let cases: &[(&str, &[&str], &str)] = &[
        ("report", &["--sort", "comm"], "pipe-g.data"),
        (
            "report",
            &["--sort", "comm", "--no-children"],
            "cpu-clock-g.data",
        ),
        ("report", &["--offenders"], "cpu-clock-g.data"),
        ("script", &[], "pipe-g.data"),
        ("ibs", &[], "ibs-fam19h_m11_zen4.data"),
        (
            "trace",
            &["-e", "pmc:::cpu-clock { @n = count(); }"],
            "pipe-g.data",
        ),
    ];
    for (verb, extra, name) in cases {
        let data = std::fs::read(decode_fixture(name)).unwrap();
        let from_file = run(common::culprit()
            .arg(verb)
            .arg("-i")
            .arg(decode_fixture(name))
            .args(*extra));
        let mut child = common::culprit()
            .arg(verb)
            .args(["-i", "-"])
            .args(*extra)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run culprit");
        let mut stdin = child.stdin.take().unwrap();
        let writer = std::thread::spawn(move || {
            use std::io::Write;
            let _ = stdin.write_all(&data);
        });
        let from_stdin = child.wait_with_output().unwrap();
        writer.join().unwrap();
        let what = format!("{verb} {extra:?} on {name}");
        assert!(from_file.status.success(), "{what}: {from_file:?}");
        assert!(
            from_stdin.status.success(),
            "{what} from stdin: {from_stdin:?}"
        );
        // The same output, but for the input's name (`-`).
        let path = decode_fixture(name).display().to_string();
        assert_eq!(
            String::from_utf8_lossy(&from_file.stdout).replace(&path, "-"),
            String::from_utf8_lossy(&from_stdin.stdout),
            "{what}"
        );
    }
}

fn report_json(file: &Path, extra: &[&str]) -> Result<Value, String> {
    let out = run(common::culprit()
        .arg("report")
        .arg("-i")
        .arg(file)
        .args(["--format", "json"])
        .args(extra));
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    Ok(serde_json::from_slice(&out.stdout).expect("JSON"))
}

fn event_names(report: &Value) -> Vec<String> {
    report["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn test_event_name_without_modifiers_selects_the_recorded_event() {
    // Before: `report -e cpu-clock` failed on a file whose event is `cpu-clock:ppp` ("no
    // event 'cpu-clock' in the file"), while trace's probes matched it.
    let ppp = own_fixture("cpu-clock-ppp.data");
    for wanted in ["cpu-clock", "cpu-clock:ppp"] {
        let r = report_json(&ppp, &["-e", wanted, "--sort", "comm"]).expect(wanted);
        assert_eq!(event_names(&r), ["cpu-clock:ppp"], "-e {wanted}");
    }
    // Term lists: `task-clock/period=100000/` is task-clock, `ibs_op//` is ibs_op.
    let two = decode_fixture("two-events.data");
    let r = report_json(&two, &["-e", "task-clock", "--sort", "comm"]).unwrap();
    assert_eq!(event_names(&r), ["task-clock/period=100000/"]);
    let ibs = decode_fixture("ibs-fam19h_m11_zen4.data");
    let r = report_json(&ibs, &["-e", "ibs_op", "--sort", "comm"]).unwrap();
    assert_eq!(event_names(&r), ["ibs_op//"]);
    // Offenders and annotate take the same names (annotate may then find no function it
    // can name on this machine: only the event is checked here).
    let out = run(common::culprit().arg("report").arg("-i").arg(&ppp).args([
        "--offenders",
        "-e",
        "cpu-clock",
    ]));
    assert!(out.status.success(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("# Event 'cpu-clock:ppp'"));
    let out = run(common::culprit()
        .arg("annotate")
        .arg("-i")
        .arg(&ppp)
        .args(["-e", "cpu-clock"]));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("no event"), "{err}");
    // Trace's probes use the same rule.
    let out = run(common::culprit().arg("trace").arg("-i").arg(&ppp).args([
        "-q",
        "-e",
        "pmc:::cpu-clock { @n = count(); }",
    ]));
    assert!(out.status.success(), "{out:?}");
    // As many as the report counts.
    let r = report_json(&ppp, &["--sort", "comm"]).unwrap();
    let samples = r["events"][0]["samples"].as_u64().unwrap();
    assert!(samples > 0);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        samples.to_string()
    );
}

#[test]
fn test_event_name_of_no_event_lists_the_files_events() {
    let ppp = own_fixture("cpu-clock-ppp.data");
    let want = "no event 'cycles' in the file (events: cpu-clock:ppp)";
    for (verb, extra) in [
        ("report", &["-e", "cycles"][..]),
        // A second name that selects nothing is an error too (it was ignored).
        ("report", &["-e", "cpu-clock,cycles"][..]),
        ("report", &["--offenders", "-e", "cycles"][..]),
        ("annotate", &["-e", "cycles"][..]),
    ] {
        let out = run(common::culprit().arg(verb).arg("-i").arg(&ppp).args(extra));
        assert_eq!(out.status.code(), Some(2), "{verb} {extra:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(want), "{verb} {extra:?}: {err}");
    }
}

/// The hottest function names of `culprit report --sort sym` of `file`.
fn symbols(file: &Path, extra: &[&str]) -> Vec<String> {
    let r = report_json(
        file,
        &[&["--sort", "sym", "--no-children"][..], extra].concat(),
    )
    .unwrap_or_else(|e| panic!("report: {e}"));
    r["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| row["keys"]["sym"].as_str().unwrap_or("").to_string())
        .collect()
}

/// Records the calltree workload run from `exe` (a copy of it) into `dir/perf.data`.
fn record_calltree(dir: &Path, exe: &Path) -> PathBuf {
    let file = dir.join("perf.data");
    let _lock = common::pmu_lock();
    common::run_ok(
        common::culprit()
            .args(["record", "-q", "-e", "cpu-clock", "-F", "2000", "-o"])
            .arg(&file)
            .arg("--")
            .arg(exe)
            .arg("100"),
    );
    file
}

#[test]
fn test_symfs_looks_recorded_files_up_under_the_directory() {
    let dir = common::scratch("input-symfs");
    let exe = dir.join("bin").join("calltree");
    std::fs::create_dir_all(exe.parent().unwrap()).unwrap();
    std::fs::copy(common::workload("calltree"), &exe).unwrap();
    let file = record_calltree(&dir, &exe);
    // The binary moves to a copy of the recording machine's tree.
    let symfs = dir.join("symfs");
    let under = symfs.join(exe.strip_prefix("/").unwrap());
    std::fs::create_dir_all(under.parent().unwrap()).unwrap();
    std::fs::rename(&exe, &under).unwrap();
    // An empty build-id cache, so that only --symfs can find the binary.
    let empty = dir.join("empty-cache");
    std::fs::create_dir_all(&empty).unwrap();
    let cache = ["--debug-dir", empty.to_str().unwrap()];
    let without = symbols(&file, &cache);
    assert!(
        !without.iter().any(|s| s == "c" || s == "e"),
        "named without the binary: {without:?}"
    );
    let with = symbols(
        &file,
        &[&cache[..], &["--symfs", symfs.to_str().unwrap()]].concat(),
    );
    assert!(
        with.iter().any(|s| s == "c") && with.iter().any(|s| s == "e"),
        "--symfs: {with:?}"
    );
}

#[test]
fn test_debug_dir_is_the_build_id_cache() {
    let dir = common::scratch("input-debug-dir");
    let exe = dir.join("calltree");
    std::fs::copy(common::workload("calltree"), &exe).unwrap();
    let file = record_calltree(&dir, &exe);
    let profile = culprit_decode::Reader::open(&file).collect().unwrap();
    let exe_name = exe.display().to_string();
    let build_id = profile
        .dsos
        .iter()
        .find(|d| d.path == exe_name)
        .and_then(|d| d.build_id.clone())
        .expect("the recording has the binary's build-id");
    let hex: String = build_id.iter().map(|b| format!("{b:02x}")).collect();
    // The cache as perf itself fills it (`perf buildid-cache -a`: DIR/PATH/BUILD-ID/elf and
    // the DIR/.build-id/xx/rest link to it), with the binary then gone.
    let perf_cache = dir.join("perf-cache");
    common::run_ok(
        common::perf()
            .arg("--buildid-dir")
            .arg(&perf_cache)
            .args(["buildid-cache", "-a"])
            .arg(&exe),
    );
    assert!(perf_cache
        .join(".build-id")
        .join(&hex[..2])
        .join(&hex[2..])
        .exists());
    // perf's cache layout: DIR/.build-id/xx/rest/elf.
    let cache = dir.join("cache");
    let entry = cache.join(".build-id").join(&hex[..2]).join(&hex[2..]);
    std::fs::create_dir_all(&entry).unwrap();
    std::fs::rename(&exe, entry.join("elf")).unwrap();
    let empty = dir.join("empty-cache");
    std::fs::create_dir_all(&empty).unwrap();
    let without = symbols(&file, &["--debug-dir", empty.to_str().unwrap()]);
    assert!(
        !without.iter().any(|s| s == "c"),
        "named without the binary: {without:?}"
    );
    let with = symbols(&file, &["--debug-dir", cache.to_str().unwrap()]);
    assert!(with.iter().any(|s| s == "c"), "--debug-dir: {with:?}");
    let with_perfs = symbols(&file, &["--debug-dir", perf_cache.to_str().unwrap()]);
    assert_eq!(with_perfs, with, "--debug-dir on perf's own cache");
}

#[test]
fn test_input_flags_are_on_every_reading_verb() {
    for (verb, _) in READING_VERBS {
        let out = run(common::culprit().arg(verb).arg("--help"));
        let help = String::from_utf8_lossy(&out.stdout);
        for flag in [
            "--input",
            "--kallsyms",
            "--vmlinux",
            "--symfs",
            "--debug-dir",
        ] {
            assert!(help.contains(flag), "{verb} --help lacks {flag}");
        }
    }
}

/// MiniDebugInfo (`.gnu_debugdata`, as Fedora ships binaries): a stripped program whose
/// static functions are only in that xz-compressed section. culprit names them from it with
/// the shares perf gives when it reads the unstripped program (perf 6.1 does not read the
/// section: on the stripped file it shows bare addresses).
#[test]
fn test_report_names_static_functions_from_mini_debuginfo_as_perf_with_symbols() {
    let test = "test_report_names_static_functions_from_mini_debuginfo_as_perf_with_symbols";
    if !common::require_perf(test) {
        return;
    }
    let tools = ["gcc", "nm", "objcopy", "strip", "xz"]
        .iter()
        .all(|t| common::runs(t, &["--version"]));
    if !common::need(test, tools, "gcc, binutils or xz missing") {
        return;
    }
    let dir = common::scratch("input-minidebuginfo");
    std::fs::write(
        dir.join("w.c"),
        "#include <stdlib.h>\n\
         static volatile unsigned sink;\n\
         static __attribute__((noinline)) void hot_minidebug_fn(unsigned n)\n\
         { for (unsigned i = 0; i < n; i++) sink += i * 7; }\n\
         static __attribute__((noinline)) void warm_minidebug_fn(unsigned n)\n\
         { for (unsigned i = 0; i < n; i++) sink += i * 5; }\n\
         int main(int argc, char **argv) {\n\
         \x20   unsigned n = argc > 1 ? (unsigned)atoi(argv[1]) : 100000000u;\n\
         \x20   hot_minidebug_fn(3 * n);\n\
         \x20   warm_minidebug_fn(n);\n\
         \x20   return 0;\n\
         }\n",
    )
    .unwrap();
    // Fedora's recipe (find-debuginfo's add_minidebug): the functions .dynsym lacks go into
    // an xz-compressed .symtab-only ELF in .gnu_debugdata, then the program is stripped.
    // `w.full` keeps the unstripped program (the same build-id) for perf.
    let recipe = "gcc -O1 -g -o w w.c && cp w w.full && \
        nm -D w --format=posix --defined-only | awk '{print $1}' | sort > dynsyms && \
        nm w --format=posix --defined-only | awk '{ if ($2 == \"T\" || $2 == \"t\") print $1 }' | sort > funcsyms && \
        comm -13 dynsyms funcsyms > keep_symbols && \
        objcopy --only-keep-debug w w.dbg && \
        objcopy -S --remove-section .gdb_index --remove-section .comment --keep-symbols=keep_symbols w.dbg mini && \
        xz -f mini && strip --strip-all -R .comment w && \
        objcopy --add-section .gnu_debugdata=mini.xz w";
    common::run_ok(Command::new("sh").args(["-c", recipe]).current_dir(&dir));
    let exe = dir.join("w");
    let file = dir.join("f.data");
    {
        let _lock = common::pmu_lock();
        common::run_ok(
            common::culprit()
                .args(["record", "-q", "-e", "cpu-clock", "-o"])
                .arg(&file)
                .arg("--")
                .arg(&exe)
                .arg("60000000"),
        );
    }
    // perf, with the unstripped program under --symfs: user rows only (kernel names need
    // kallsyms, which --symfs moves).
    let symfs = dir.join("symfs");
    let under = symfs.join(exe.strip_prefix("/").unwrap());
    std::fs::create_dir_all(under.parent().unwrap()).unwrap();
    std::fs::copy(dir.join("w.full"), &under).unwrap();
    let out = common::run_ok(
        common::perf()
            .args(["report", "--stdio", "--sort", "sym", "--symfs"])
            .arg(&symfs)
            .arg("-i")
            .arg(&file),
    );
    let share = |text: &str, name: &str| -> f64 {
        text.lines()
            .find(|l| l.trim_end().ends_with(&format!("[.] {name}")))
            .and_then(|l| l.split_whitespace().next())
            .and_then(|p| p.trim_end_matches('%').parse().ok())
            .unwrap_or(0.0)
    };
    let perf_text = String::from_utf8_lossy(&out.stdout).to_string();
    let ours = common::run_ok(
        common::culprit()
            .args(["report", "--sort", "sym", "--width", "0", "-i"])
            .arg(&file),
    );
    let ours = String::from_utf8_lossy(&ours.stdout).to_string();
    for name in ["hot_minidebug_fn", "warm_minidebug_fn"] {
        let (p, o) = (share(&perf_text, name), share(&ours, name));
        assert!(p > 5.0, "perf does not name {name}:\n{perf_text}");
        assert!(
            (p - o).abs() <= 0.1,
            "{name}: perf {p} %, culprit {o} %\n{ours}"
        );
    }
    // The stripped program has no .symtab: the names came from .gnu_debugdata alone.
    let plain = common::run_ok(
        common::perf()
            .args(["report", "--stdio", "--sort", "sym", "-i"])
            .arg(&file),
    );
    let plain = String::from_utf8_lossy(&plain.stdout);
    assert_eq!(share(&plain, "hot_minidebug_fn"), 0.0, "{plain}");
}
