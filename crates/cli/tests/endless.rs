//! Bounded memory on an endless stream (issue 34): every verb and format that reads `-i -`
//! is fed a valid pipe-mode stream, generated while it runs (samples of a few distinct
//! stacks, without end), and its peak resident memory must not grow with the time it reads.
//!
//! Each verb reads for [`RUN`] (2 verbs at a time: 20 s each would take minutes over the ~30
//! verbs); its peak RSS (VmHWM) after [`EARLY`] and at the end must stay within
//! [`GROWTH`] × the early peak + [`SLACK_KIB`]. Then stdin is closed and the verb must end
//! like a stream that was cut (exit 0 or 1; 2 for the verbs in [`WITHOUT_THEIR_EVENTS`]).

use crate::common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use culprit_collect::perfdata::pipe::PipeWriter;
use culprit_collect::perfdata::{Attr, FileAttr};
use culprit_decode::abi::misc;

/// How long each verb reads: 2 to 12 M samples in a debug build here (20,000 at least).
const RUN: Duration = Duration::from_secs(7);
/// When the early peak is taken (after start-up: symbols loaded, buffers sized).
const EARLY: Duration = Duration::from_secs(2);
/// Allowed growth of the peak from `EARLY` to the end.
const GROWTH: f64 = 1.3;
/// Allowed growth on top (allocator and page-cache noise on a loaded machine).
const SLACK_KIB: u64 = 16 << 10;

/// The verbs reading `-i -`, as (label, arguments before `-i -`); `{dir}` is replaced by a
/// scratch directory of the verb's own.
///
/// `html` kept every sample's time until the stream ended (43 → 91 MB from 3 s to 10 s),
/// `ibs` the whole profile (86 → 256 MB), `sched wakers` too, and `export --format firefox`
/// a column entry per sample (43 → 73 MB); they now sum per bucket, per sampled location
/// and per thread as they read, and the Firefox export spills its samples to an unlinked
/// temporary file. `sched latency`, `sched timehist` and `lock contention` stream (flat at
/// 37, 35 and 38 MB here in a debug build; 109 → 261 MB, 131 → 377 MB and 174 → 410 MB when
/// they read all first).
fn verbs() -> Vec<(&'static str, Vec<&'static str>)> {
    vec![
        ("report", vec!["report"]),
        ("report --children", vec!["report", "--children"]),
        ("report --no-children", vec!["report", "--no-children"]),
        ("report -g caller", vec!["report", "-g", "caller"]),
        ("report --sort dso,sym", vec!["report", "--sort", "dso,sym"]),
        (
            "report --sort comm,pid",
            vec!["report", "--sort", "comm,pid"],
        ),
        ("report json", vec!["report", "--format", "json"]),
        ("report csv", vec!["report", "--format", "csv"]),
        ("report --offenders", vec!["report", "--offenders"]),
        ("script", vec!["script"]),
        ("annotate", vec!["annotate"]),
        ("flamegraph", vec!["flamegraph", "-o", "{dir}/out.svg"]),
        ("export folded", vec!["export", "--format", "folded"]),
        (
            "export pprof",
            vec!["export", "--format", "pprof", "-o", "{dir}/out.pb.gz"],
        ),
        (
            "export speedscope",
            vec!["export", "--format", "speedscope"],
        ),
        ("export chrome", vec!["export", "--format", "chrome"]),
        (
            "export firefox",
            vec!["export", "--format", "firefox", "-o", "{dir}/out.json"],
        ),
        (
            "export parquet",
            vec!["export", "--format", "parquet", "-o", "{dir}/pq"],
        ),
        (
            "trace",
            vec!["trace", "-q", "-e", "pmc:::cpu-clock { @[sym] = count(); }"],
        ),
        ("sched latency", vec!["sched", "latency"]),
        ("sched timehist", vec!["sched", "timehist"]),
        ("lock contention", vec!["lock", "contention"]),
        ("sched wakers", vec!["sched", "wakers"]),
        ("ibs", vec!["ibs"]),
        ("html", vec!["html", "-o", "{dir}/out.html"]),
    ]
}

/// Verbs of [`verbs`] that read tracepoints this cpu-clock stream lacks: they must still
/// read it in bounded memory (holding nothing per sample they skip), and end with exit 2
/// (no such events) instead of 0 or 1.
const WITHOUT_THEIR_EVENTS: [&str; 5] = [
    "sched latency",
    "sched timehist",
    "lock contention",
    "sched wakers",
    "ibs",
];

/// The stream's cpu-clock event.
fn attr() -> Attr {
    common::cpu_clock_chain_attr()
}

/// Writes an endless pipe-mode stream to `out` until `until` or until the reader is gone:
/// process 100 running `bin` (mapped at 0x400000), samples 100,003 ns apart in runs of 1,000
/// of one of 5 stacks (8 frames among the instructions `code`). Returns the samples written.
///
/// The records of one cycle of the 5 stacks are made once; each round after is that block
/// with its samples' times moved on, so that the writer costs the machine little beside the
/// verb (building every record anew took about as much CPU as the verb reading it).
fn write_endless(out: impl Write, bin: &Path, code: &[u64], until: Instant) -> u64 {
    const BASE: u64 = 0x40_0000;
    const DEPTH: u64 = 8;
    const PERIOD: u64 = 100_003;
    const RUN_LEN: u64 = 1000;
    const STACKS: u64 = 5;
    /// Where a sample's time is: after the record header and the id, IP and pid/tid words.
    const TIME_AT: usize = 8 + 3 * 8;
    let attr = attr();
    let attrs = vec![FileAttr {
        attr,
        name: "cpu-clock".into(),
        ids: vec![1],
    }];
    let Ok(mut stream) = PipeWriter::new(std::io::BufWriter::new(out), &attrs, &Default::default())
    else {
        return 0;
    };
    let mut first = Vec::new();
    common::push_process(&mut first, &attr, b"endless", bin, BASE);
    if stream.write_data(&first).is_err() {
        return 0;
    }
    let at = |k: u64| BASE + code[(k % code.len() as u64) as usize];
    let mut block = Vec::new();
    let mut times_at = Vec::new();
    for i in 0..RUN_LEN * STACKS {
        let stack = i / RUN_LEN;
        times_at.push(block.len() + TIME_AT);
        let mut words = vec![1, at(stack * 7), 100 | 100 << 32, 0, PERIOD, DEPTH + 1];
        words.push(0xffff_ffff_ffff_fe00);
        words.extend((0..DEPTH).map(|f| at(stack * 7 + f + 1)));
        common::push_sample(&mut block, misc::USER, &words);
    }
    culprit_collect::perfdata::records::push_finished_round(&mut block);
    let mut n = 0u64;
    while Instant::now() < until {
        for (i, &offset) in times_at.iter().enumerate() {
            let time = 10 + (n + i as u64) * PERIOD;
            block[offset..offset + 8].copy_from_slice(&time.to_le_bytes());
        }
        if stream.write_data(&block).is_err() {
            return n;
        }
        n += times_at.len() as u64;
    }
    let _ = stream.finish(&[]);
    n
}

/// A field of /proc/PID/status in KiB (0 once the process is gone).
fn status_kib(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// What one verb did on the endless stream.
#[derive(Debug)]
struct Measured {
    label: &'static str,
    early_kib: u64,
    end_kib: u64,
    samples: u64,
    exit: Option<i32>,
}

/// Runs one verb on the endless stream for [`RUN`], then closes its stdin.
fn measure(label: &'static str, args: &[&str], dir: &Path, bin: &Path, code: &[u64]) -> Measured {
    let dir_text = dir.display().to_string();
    let args: Vec<String> = args.iter().map(|a| a.replace("{dir}", &dir_text)).collect();
    let mut child: Child = common::culprit()
        .args(&args)
        .args(["-i", "-"])
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let stdin = child.stdin.take().unwrap();
    let start = Instant::now();
    let (bin, code) = (bin.to_path_buf(), code.to_vec());
    let writer = std::thread::spawn(move || write_endless(stdin, &bin, &code, start + RUN));
    std::thread::sleep(EARLY);
    let early_kib = status_kib(pid, "VmHWM");
    // Just before the stream ends: the peak while reading, not what ending it costs.
    std::thread::sleep(RUN.saturating_sub(start.elapsed() + Duration::from_millis(200)));
    let end_kib = status_kib(pid, "VmHWM");
    let samples = writer.join().unwrap_or(0);
    let exit = child.wait().ok().and_then(|s| s.code());
    Measured {
        label,
        early_kib,
        end_kib,
        samples,
        exit,
    }
}

fn scratch_for(label: &str) -> PathBuf {
    let name: String = label
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    common::scratch(&format!("endless-{name}"))
}

#[test]
fn test_every_verb_reads_an_endless_stdin_stream_in_bounded_memory() {
    let bin = common::workload("simple_classic");
    let code: Vec<u64> = common::objdump_function(&bin, "multiply_matrices")
        .iter()
        .map(|i| i.addr)
        .collect();
    let mut results = Vec::new();
    // Two at a time: the machine's two cores, the writers sharing them.
    for pair in verbs().chunks(2) {
        let handles: Vec<_> = pair
            .iter()
            .map(|(label, args)| {
                let (label, args) = (*label, args.clone());
                let (bin, code) = (bin.clone(), code.clone());
                std::thread::spawn(move || measure(label, &args, &scratch_for(label), &bin, &code))
            })
            .collect();
        results.extend(handles.into_iter().map(|h| h.join().unwrap()));
    }
    let mut failures = Vec::new();
    for m in &results {
        eprintln!(
            "{:<24} {:>7.1} MB at {}s, {:>7.1} MB at {}s, {} samples, exit {:?}",
            m.label,
            m.early_kib as f64 / 1024.0,
            EARLY.as_secs(),
            m.end_kib as f64 / 1024.0,
            RUN.as_secs(),
            m.samples,
            m.exit
        );
        let bound = (m.early_kib as f64 * GROWTH) as u64 + SLACK_KIB;
        // A verb reading events this stream lacks says so (exit 2) once it has read it all.
        let lacks_events = WITHOUT_THEIR_EVENTS.contains(&m.label) && m.exit == Some(2);
        let exit_ok = matches!(m.exit, Some(0 | 1)) || lacks_events;
        if m.end_kib > bound || !exit_ok || m.samples < 20_000 {
            failures.push(format!("{m:?} (bound {bound} KiB)"));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}
