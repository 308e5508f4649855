//! Memory and output bounded by what is asked, not by the input (issue 22): streams and
//! devices are checked before they are read and read as they come, script and annotate
//! stream their samples, call-graph JSON does not grow with the depth of the chains, stdin
//! and the same bytes in a file give the same output, and a closed stdout ends every verb
//! quietly.

use crate::common;

use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};

use culprit_collect::perfdata::pipe::PipeWriter;
use culprit_collect::perfdata::{FileAttr, PerfDataWriter};
use culprit_decode::abi::{attr_flag, misc, record_type, sample_type};

fn fixture(name: &str) -> PathBuf {
    common::repo_root()
        .join("crates/decode/tests/fixtures")
        .join(name)
}

/// The reading verbs, as `(verb and its arguments before -i)`.
fn reading_verbs() -> Vec<Vec<&'static str>> {
    vec![
        vec!["report"],
        vec!["report", "--no-children"],
        vec!["script"],
        vec!["annotate"],
        vec!["trace", "-q", "-e", "pmc:::cpu-clock { @n = count(); }"],
    ]
}

#[test]
fn test_stdin_that_is_no_perf_data_fails_after_its_first_bytes() {
    // Before: `head -c 300M /dev/zero | culprit report -i -` buffered all 300 MB, then said
    // "bad magic".
    const OFFERED: usize = 300 << 20;
    for verb in reading_verbs() {
        let mut child = common::culprit()
            .args(&verb)
            .args(["-i", "-"])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let writer = std::thread::spawn(move || {
            let chunk = vec![0u8; 1 << 16];
            let mut written = 0;
            while written < OFFERED {
                match stdin.write(&chunk) {
                    Ok(n) => written += n,
                    Err(_) => break,
                }
            }
            written
        });
        let mut err = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        let status = child.wait().unwrap();
        let written = writer.join().unwrap();
        assert_eq!(status.code(), Some(2), "{verb:?}: {err}");
        assert!(err.contains("bad magic"), "{verb:?}: {err}");
        // What the pipe held when culprit exited, not the stream.
        assert!(written < 16 << 20, "{verb:?}: {written} bytes read");
    }
}

/// Runs `cmd` with its address space limited to `limit` bytes: a reader that buffers a
/// device whole fails to allocate instead of filling the machine.
fn run_limited(cmd: &mut Command, limit: u64) -> (ExitStatus, String) {
    // SAFETY: setrlimit is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            let lim = libc::rlimit {
                rlim_cur: limit,
                rlim_max: limit,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let out = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .output()
        .unwrap();
    (
        out.status,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn test_devices_fail_at_once_without_reading_them_whole() {
    // Before: `-i /dev/zero` and `trace -s /dev/zero` read until memory ran out.
    const LIMIT: u64 = 3 << 30;
    for verb in reading_verbs() {
        let (status, err) = run_limited(
            common::culprit().args(&verb).args(["-i", "/dev/zero"]),
            LIMIT,
        );
        assert_eq!(status.code(), Some(2), "{verb:?}: {err}");
        assert!(
            err.contains("/dev/zero") && err.contains("bad magic"),
            "{verb:?}: {err}"
        );
    }
    let cpu = fixture("cpu-clock-g.data");
    let (status, err) = run_limited(
        common::culprit()
            .args(["trace", "-s", "/dev/zero", "-i"])
            .arg(&cpu),
        LIMIT,
    );
    assert_eq!(status.code(), Some(2), "{err}");
    assert!(err.contains("/dev/zero") && err.contains("16 MiB"), "{err}");
}

/// `data` with a copy of its first SAMPLE record put right after the 16-byte pipe header,
/// before any HEADER_ATTR.
fn sample_before_attrs(data: &[u8]) -> Vec<u8> {
    let mut off = 16;
    while off + 8 <= data.len() {
        let ty = u32::from_le_bytes(data[off..off + 4].try_into().unwrap());
        let size = usize::from(u16::from_le_bytes(
            data[off + 6..off + 8].try_into().unwrap(),
        ));
        assert!(size >= 8, "record at {off}");
        if ty == record_type::SAMPLE {
            let mut out = data[..16].to_vec();
            out.extend_from_slice(&data[off..off + size]);
            out.extend_from_slice(&data[16..]);
            return out;
        }
        off += size;
    }
    panic!("no sample");
}

#[test]
fn test_stdin_and_file_agree_on_a_stream_with_a_sample_before_its_attrs() {
    // Before: from stdin the stream was rejected ("a sample record before any HEADER_ATTR",
    // exit 2, no output) while the same bytes in a file were read (the stray sample skipped
    // with a warning).
    let dir = common::scratch("bounded-stray-sample");
    let bytes = sample_before_attrs(&std::fs::read(fixture("pipe-g.data")).unwrap());
    let file = dir.join("stray.data");
    std::fs::write(&file, &bytes).unwrap();
    // pipe-g.data recorded no build-id: its binary is found by path, in the fixtures' symfs.
    let symfs = common::fixture_symfs();
    for verb in reading_verbs() {
        let from_file = common::culprit()
            .args(&verb)
            .arg("--symfs")
            .arg(&symfs)
            .arg("-i")
            .arg(&file)
            .output()
            .unwrap();
        let mut child = common::culprit()
            .args(&verb)
            .arg("--symfs")
            .arg(&symfs)
            .args(["-i", "-"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let input = bytes.clone();
        let writer = std::thread::spawn(move || stdin.write_all(&input));
        let from_stdin = child.wait_with_output().unwrap();
        writer.join().unwrap().unwrap();
        let err = String::from_utf8_lossy(&from_stdin.stderr);
        assert_eq!(
            from_stdin.status.code(),
            from_file.status.code(),
            "{verb:?}: {err}"
        );
        assert!(from_file.status.success(), "{verb:?}: {from_file:?}");
        assert!(!from_stdin.stdout.is_empty(), "{verb:?}");
        // Verbs that print the reader's warnings print this one either way.
        let warned = "before any HEADER_ATTR";
        let file_err = String::from_utf8_lossy(&from_file.stderr);
        assert_eq!(
            err.contains(warned),
            file_err.contains(warned),
            "{verb:?}: {err}"
        );
        if verb[0] == "report" {
            assert!(err.contains(warned), "{verb:?}: {err}");
        }
        // The same output, but for the input's name in headers.
        let name = file.display().to_string();
        let file_text = String::from_utf8_lossy(&from_file.stdout).replace(&name, "-");
        let stdin_text =
            String::from_utf8_lossy(&from_stdin.stdout).replace("perf.data from stdin", "-");
        assert_eq!(stdin_text, file_text, "{verb:?}");
    }
}

#[test]
fn test_a_closed_stdout_ends_every_verb_and_format_quietly() {
    // Before: `report --format json | head` printed "error: Broken pipe" and exited 2
    // while text and CSV exited 0.
    let cpu = fixture("cpu-clock-g.data");
    let cases: Vec<Vec<&str>> = vec![
        vec!["report", "--format", "json"],
        vec!["report", "--format", "text"],
        vec!["report", "--format", "csv"],
        vec!["report", "-g", "caller", "--format", "json"],
        vec!["report", "--offenders", "--format", "json"],
        vec!["script", "--format", "json"],
        vec!["script"],
        vec!["annotate", "--format", "json"],
        vec!["annotate"],
        vec![
            "trace",
            "-q",
            "--format",
            "json",
            "-e",
            "pmc:::cpu-clock { @[execname] = count(); }",
        ],
        vec!["trace", "-e", "pmc:::cpu-clock { printf(\"%d\\n\", pid); }"],
    ];
    for args in cases {
        let (reader, writer) = std::io::pipe().unwrap();
        // Nobody reads: every write to stdout fails with EPIPE.
        drop(reader);
        let out = common::culprit()
            .args(&args)
            .arg("-i")
            .arg(&cpu)
            .stdout(writer)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {err}");
        assert!(
            !err.contains("error") && !err.contains("Broken pipe"),
            "{args:?}: {err}"
        );
    }
}

/// Writes a file-mode perf.data of `samples` cpu-clock samples of process 100, each with a
/// user call chain of `depth` distinct unmapped frames (a damaged or runaway stack).
fn write_deep_chains(path: &Path, samples: u64, depth: u64) {
    let attr = common::cpu_clock_attr(sample_type::CALLCHAIN, attr_flag::COMM);
    let attrs = vec![FileAttr {
        attr,
        name: "cpu-clock".into(),
        ids: vec![1],
    }];
    let mut buf = Vec::new();
    let sid = culprit_collect::perfdata::records::SampleId {
        pid: 100,
        tid: 100,
        time: 1,
        id: 1,
        cpu: 0,
    };
    culprit_collect::perfdata::records::push_comm(&mut buf, &attr, 100, 100, b"deep", true, &sid);
    for n in 0..samples {
        // PERF_CONTEXT_USER, then the frames.
        let mut words = vec![1, 0x1000, 100 | 100 << 32, 10 + n, 100_003, depth + 1];
        words.push(0xffff_ffff_ffff_fe00);
        words.extend((0..depth).map(|f| 0x1000 + 0x10 * f));
        common::push_sample(&mut buf, misc::USER, &words);
    }
    let file = std::fs::File::create(path).unwrap();
    let mut w = PerfDataWriter::new(file, attrs).unwrap();
    w.write_data(&buf).unwrap();
    w.finish(&Default::default()).unwrap();
}

/// `json` without the whitespace between tokens, and its deepest nesting of objects and
/// arrays (parsed by hand: serde_json refuses more than 128 levels).
fn minify(json: &str) -> (String, usize) {
    let (mut out, mut depth, mut deepest) = (String::new(), 0usize, 0usize);
    let (mut in_string, mut escaped) = (false, false);
    for c in json.chars() {
        if in_string {
            out.push(c);
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '{' | '[' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            '}' | ']' => depth -= 1,
            c if c.is_whitespace() => continue,
            _ => {}
        }
        out.push(c);
    }
    (out, deepest)
}

#[test]
fn test_call_graph_json_of_deep_chains_is_bounded() {
    // Before: a damaged 35 KB file with 430-deep chains gave 998 MB of JSON (indentation
    // growing with the depth, every chain whole).
    let dir = common::scratch("bounded-deep-chains");
    let file = dir.join("deep.data");
    write_deep_chains(&file, 2, 300);
    let out = common::culprit()
        .args(["report", "-g", "caller", "--format", "json", "-i"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    let (compact, deepest) = minify(&text);
    assert!(
        text.len() < compact.len() + compact.len() / 4,
        "{} bytes, {} compact",
        text.len(),
        compact.len()
    );
    // Document, rows, row, call_graph, the row's node, then per frame a children array
    // and a node (at most perf's --max-stack, 127), and the last node's empty children.
    assert_eq!(deepest, 5 + 2 * 127 + 1, "nesting");
    let warnings = text
        .lines()
        .find(|l| l.contains("deeper than"))
        .unwrap_or_default();
    assert!(warnings.contains("deeper than 127 frames"), "no warning");
    // One space between its words (a lost line continuation once put fourteen there).
    assert!(warnings.contains("paths were cut there"), "{warnings}");
}

/// Writes `samples` samples with 8-frame chains of process 100 running `bin` mapped at
/// `base`, at the instructions `code` (SVMAs), as a file-mode perf.data at `path` and the
/// same records as a pipe-mode stream at `pipe`.
fn write_many_samples(path: &Path, pipe: &Path, samples: u64, bin: &Path, code: &[u64]) {
    const BASE: u64 = 0x40_0000;
    let attr = common::cpu_clock_chain_attr();
    let attrs = vec![FileAttr {
        attr,
        name: "cpu-clock".into(),
        ids: vec![1],
    }];
    let mut file =
        PerfDataWriter::new(std::fs::File::create(path).unwrap(), attrs.clone()).unwrap();
    let mut stream = PipeWriter::new(
        std::io::BufWriter::new(std::fs::File::create(pipe).unwrap()),
        &attrs,
        &Default::default(),
    )
    .unwrap();
    let mut buf = Vec::new();
    common::push_process(&mut buf, &attr, b"many", bin, BASE);
    const DEPTH: u64 = 8;
    let at = |k: u64| BASE + code[(k % code.len() as u64) as usize];
    for n in 0..samples {
        let mut words = vec![1, at(n), 100 | 100 << 32, 10 + n, 100_003, DEPTH + 1];
        words.push(0xffff_ffff_ffff_fe00);
        words.extend((0..DEPTH).map(|f| at(n + f + 1)));
        common::push_sample(&mut buf, misc::USER, &words);
        if n % 4096 == 4095 {
            culprit_collect::perfdata::records::push_finished_round(&mut buf);
            file.write_data(&buf).unwrap();
            stream.write_data(&buf).unwrap();
            buf.clear();
        }
    }
    file.write_data(&buf).unwrap();
    stream.write_data(&buf).unwrap();
    file.finish(&Default::default()).unwrap();
    stream.finish(&[]).unwrap();
}

/// Measures the peak RSS of the command it is given (its children's, in KiB) and prints
/// `STATUS KIB`. A process started by the test binary itself would not do: Linux carries
/// the old address space's peak into `ru_maxrss` at exec, so a child of this process reports
/// at least this process's own peak (the whole test harness's, with the other tests' data),
/// which made the bound fail when tests ran side by side. Python's own peak is not counted
/// (RUSAGE_CHILDREN), and its small address space is what its child starts from.
const PEAK_RSS: &str = "import resource, subprocess, sys\n\
r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n\
print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n";

/// Peak resident memory (KiB) of `culprit ARGS`, its output discarded; the input from
/// `stdin` when given.
fn peak_rss_kib(args: &[&str], input: &Path, stdin: Option<&Path>) -> i64 {
    let mut cmd = Command::new("python3");
    common::in_test_home(&mut cmd);
    cmd.args(["-c", PEAK_RSS])
        .arg(env!("CARGO_BIN_EXE_culprit"))
        .args(args);
    match stdin {
        Some(p) => {
            cmd.args(["-i", "-"]).stdin(std::fs::File::open(p).unwrap());
        }
        None => {
            cmd.arg("-i").arg(input).stdin(Stdio::null());
        }
    }
    let out = common::run_ok(&mut cmd);
    let text = String::from_utf8_lossy(&out.stdout);
    let (status, kib) = text.trim().split_once(' ').unwrap_or(("?", "?"));
    assert_eq!(status, "0", "{args:?}: exit status {status}");
    kib.parse()
        .unwrap_or_else(|_| panic!("{args:?}: no peak RSS in {text:?}"))
}

#[test]
fn test_script_annotate_and_stdin_memory_does_not_grow_with_the_samples() {
    // Before: script and annotate kept every sample (6 GB on a 1.75 GB file), and `-i -`
    // buffered the stream whole. Goal: within 2x of `report --no-children` on the same file.
    let dir = common::scratch("bounded-many-samples");
    let file = dir.join("many.data");
    let pipe = dir.join("many.pipe");
    let bin = common::workload("simple_classic");
    let code: Vec<u64> = common::objdump_function(&bin, "multiply_matrices")
        .iter()
        .map(|i| i.addr)
        .collect();
    write_many_samples(&file, &pipe, 400_000, &bin, &code);
    let base = peak_rss_kib(&["report", "--no-children"], &file, None);
    for (args, stdin) in [
        (&["script"][..], None),
        (&["annotate"][..], None),
        (&["script"][..], Some(pipe.as_path())),
        (&["annotate"][..], Some(pipe.as_path())),
        (&["report"][..], Some(pipe.as_path())),
        (&["report", "--no-children"][..], Some(pipe.as_path())),
    ] {
        let rss = peak_rss_kib(args, &file, stdin);
        assert!(
            rss < 2 * base,
            "{args:?} (stdin: {}): {rss} KiB, report --no-children {base} KiB",
            stdin.is_some()
        );
    }
}
