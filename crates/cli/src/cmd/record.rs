//! `culprit record`: flags (perf's spellings) → `culprit_collect::record::RecordOptions`, then
//! the end-of-run summary (text on stderr, or JSON on stdout with `--format json`; on stderr
//! when the recording itself goes to stdout with `-o -`).
//!
//! Exit status: the recorded command's (128 + signal if it was killed); 128 + the signal
//! when a SIGINT/SIGTERM interrupted the recording of a command; 0 for `-p`/`-a` without a
//! command; 0 when `--duration`/`--max-size` ended the recording (and the command culprit
//! terminated then); 141 when the output pipe was closed; 2 when recording failed.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Context};
use culprit_collect::events::{self, SampleRate};
use culprit_collect::modes::{self, Notice, RecordModes, StopReason};
use culprit_collect::record::{
    self, CallGraph, Output, RecordOptions, RecordSummary, StreamOutput,
};
use serde::Serialize;

use crate::args::{ColorArg, Format, OutputArgs, TargetArgs};

/// Arguments of `culprit record`.
#[derive(clap::Args, Debug)]
#[command(
    about = "Sample a command, processes (-p) or the whole system (-a) into a perf.data file",
    after_help = crate::help::layout("EXAMPLES:\n  culprit record -- ./prog args            cycles at 4000 Hz (cpu-clock without a PMU)\n  culprit record -e cpu-clock,page-faults -c 100000 -g -- ./prog\n  culprit record -e cycles,instructions -g -- ./prog   (needs a PMU)\n  culprit record -e cpu-clock -F 999 -p 1234     attach until Ctrl-C or the process exits\n  culprit record -a -o sys.data -- sleep 2       all CPUs while `sleep 2` runs\n\nThe file is read by `culprit report` and by perf (perf report/script/annotate -i FILE)."),
    trailing_var_arg = true
)]
pub struct RecordArgs {
    /// Print every perf_event_attr before it is opened, and each open, in perf's `-vv`
    /// layout (repeat: `-vv`).
    #[arg(short = 'v', long = "verbose", action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// Event(s) to sample, comma-separated, repeatable (`culprit list` shows them):
    /// cycles, instructions, cpu-clock, r1a0, cpu/event=0x76/, cycles:u, cycles/period=100000/ …
    #[arg(short = 'e', long = "event", value_name = "EVENTS")]
    pub events: Vec<String>,
    /// Sample every PERIOD events (for events without their own period/freq).
    #[arg(
        short = 'c',
        long = "count",
        value_name = "PERIOD",
        conflicts_with = "freq"
    )]
    pub count: Option<u64>,
    /// Sample at about HZ samples per second (default 4000; lowered to
    /// kernel.perf_event_max_sample_rate if above it).
    #[arg(short = 'F', long = "freq", value_name = "HZ")]
    pub freq: Option<u64>,
    /// Record call chains with frame pointers (same as --call-graph fp).
    #[arg(short = 'g')]
    pub g: bool,
    /// Call chains: `fp` (frame pointers) or `dwarf[,SIZE]` (user registers + SIZE bytes of
    /// stack per sample, default 8192, for DWARF unwinding).
    #[arg(long = "call-graph", value_name = "fp|dwarf[,SIZE]")]
    pub call_graph: Option<String>,
    /// Output file; `-` writes a pipe-mode stream to stdout (as `perf record -o -`), e.g.
    /// `culprit record -o - -- ./prog | perf report -i -`.
    #[arg(
        short = 'o',
        long = "output",
        value_name = "FILE",
        default_value = "perf.data"
    )]
    pub output: PathBuf,
    /// Ring buffer size per CPU in pages (a power of two; default 128 = 512 KiB).
    #[arg(short = 'm', long = "mmap-pages", value_name = "PAGES", default_value_t = record::DEFAULT_MMAP_PAGES)]
    pub mmap_pages: usize,
    /// Don't print the summary nor information such as the cpu-clock fallback (warnings
    /// that matter and errors still go to stderr).
    #[arg(short = 'q', long = "quiet")]
    pub quiet: bool,
    /// Summary format: text (stderr) or json (stdout; stderr with `-o -`).
    #[arg(long = "format", value_enum, value_name = "FORMAT", default_value_t = Format::Text)]
    pub format: Format,
    /// Don't store the sampled objects in the build-id cache (perf's -N).
    #[arg(short = 'N', long = "no-buildid-cache")]
    pub no_buildid_cache: bool,
    /// The build-id cache directory (perf's buildid.dir). Default: $PERF_BUILDID_DIR, else
    /// ~/.debug. Reports find a rebuilt binary's old symbols there.
    #[arg(
        long = "buildid-dir",
        value_name = "DIR",
        conflicts_with = "no_buildid_cache"
    )]
    pub buildid_dir: Option<PathBuf>,
    /// AMD IBS: sample ops, fetches or both (`op`, `fetch`, `op,fetch`), with every sample's
    /// decoded registers (read them with `culprit script` and `culprit ibs`).
    #[arg(long = "ibs", value_name = "op|fetch|op,fetch")]
    pub ibs: Option<String>,
    /// IBS period: cycles (or ops with --ibs-count ops) / fetches between samples; a multiple
    /// of 16 (op ≥ 144, fetch ≥ 16).
    #[arg(long = "ibs-period", value_name = "N", requires = "ibs")]
    pub ibs_period: Option<u64>,
    /// IBS op counting mode: `ops` counts dispatched micro-ops (default: cycles).
    #[arg(long = "ibs-count", value_name = "ops|cycles", requires = "ibs")]
    pub ibs_count: Option<String>,
    /// IBS: keep only samples that missed the L3 (Zen 4+; the period then cannot be
    /// reconstructed).
    #[arg(long = "l3-miss-only", requires = "ibs")]
    pub l3_miss_only: bool,
    /// IBS op load-latency filter: only loads whose DC-miss latency exceeds N cycles (Zen 5,
    /// 128..2048; implies --l3-miss-only).
    #[arg(long = "ldlat", value_name = "N", requires = "ibs")]
    pub ldlat: Option<u64>,
    /// IBS fetch: randomize the low bits of the fetch counter.
    #[arg(long = "rand", requires = "ibs")]
    pub rand: bool,
    /// Sample the Top-Down level-1 events (AMD Zen 4/5, Intel Skylake class) for
    /// `culprit report --topdown`, a per-function estimate (see docs/stat.md).
    #[arg(long = "topdown", conflicts_with_all = ["events", "ibs"])]
    pub topdown: bool,
    /// Also record off-CPU time: where the target's threads block (sleep, I/O, locks) and
    /// for how long, as samples of the event `offcpu-time` weighted by the nanoseconds off
    /// the CPU, with the stack where they blocked (sched:sched_switch with call chains and
    /// context-switch records; docs/record.md, "Off-CPU").
    /// `--off-cpu=wakers` also records `sched:sched_waking` with the waker's stack, so
    /// that `culprit sched wakers` shows who woke each blocked stack and from where.
    #[arg(
        long = "off-cpu",
        conflicts_with = "overwrite",
        value_name = "wakers",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = ""
    )]
    pub off_cpu: Option<String>,
    /// Also record context switches (PERF_RECORD_SWITCH), for `culprit report --latency`:
    /// the wall-clock Latency column and the parallelism of each sample (perf 6.15's
    /// `--latency`; docs/wall-clock.md).
    #[arg(long = "latency")]
    pub latency: bool,
    /// Compress the records with zstd, level 1 (perf's -z): perf and culprit read the file.
    #[arg(short = 'z')]
    pub z: bool,
    /// Compress the records with zstd at level N, 1 (fastest) to 22 (smallest).
    #[arg(long = "compression-level", value_name = "N", value_parser = clap::value_parser!(u32).range(1..=22))]
    pub compression_level: Option<u32>,
    /// Stop after SECONDS (decimals allowed); a launched command gets SIGTERM.
    #[arg(long = "duration", value_name = "SECONDS")]
    pub duration: Option<f64>,
    /// Stop cleanly when the file reaches SIZE (B, K, M, G: `500M`); the samples read
    /// after it are counted as dropped.
    #[arg(long = "max-size", value_name = "SIZE")]
    pub max_size: Option<String>,
    /// Rotate to FILE.<timestamp> files, each complete: on SIGUSR2 (`signal`, the
    /// default), at a size (`100M`: B, K, M, G) or every TIME (`30s`: s, m, h, d).
    #[arg(
        long = "switch-output",
        value_name = "signal|SIZE|TIME",
        num_args = 0..=1,
        default_missing_value = "signal"
    )]
    pub switch_output: Option<String>,
    /// With --switch-output: keep only the newest N files (the one being written counts).
    #[arg(long = "switch-max-files", value_name = "N")]
    pub switch_max_files: Option<usize>,
    /// Flight recorder: the ring buffers (-m) keep only the newest data, written on SIGUSR2
    /// (to FILE.<timestamp>) and at the end.
    #[arg(long = "overwrite")]
    pub overwrite: bool,
    /// What to record.
    #[command(flatten)]
    pub target: TargetArgs,
}

/// The recording modes of the flags (`-z`, `--duration`, `--max-size`, `--switch-output`,
/// `--switch-max-files`, `--overwrite`).
fn modes(args: &RecordArgs) -> anyhow::Result<RecordModes> {
    let duration = match args.duration {
        None => None,
        Some(s) if s.is_finite() && s > 0.0 && s < 1e9 => Some(Duration::from_secs_f64(s)),
        Some(s) => bail!("--duration {s}: expected a number of seconds > 0"),
    };
    let max_size = args
        .max_size
        .as_deref()
        .map(modes::parse_size)
        .transpose()
        .map_err(|e| anyhow::anyhow!("--max-size {e}"))?;
    let switch_output = args
        .switch_output
        .as_deref()
        .map(modes::parse_switch_output)
        .transpose()
        .map_err(|e| anyhow::anyhow!(e))?;
    Ok(RecordModes {
        compression_level: args.compression_level.or(args.z.then_some(1)),
        duration,
        max_size,
        switch_output,
        switch_max_files: args.switch_max_files,
        overwrite: args.overwrite,
    })
}

/// The `ibs_op`/`ibs_fetch` events of `--ibs` and its companion flags, validated against
/// this machine's PMUs and kernel (see `culprit_collect::ibs`).
fn ibs_specs(args: &RecordArgs) -> anyhow::Result<Vec<culprit_collect::events::EventSpec>> {
    use culprit_collect::ibs::{self as cibs, IbsHost, IbsRequest};
    let Some(kinds) = &args.ibs else {
        return Ok(Vec::new());
    };
    let (op, fetch) = cibs::parse_kinds(kinds)?;
    let count_ops = match args.ibs_count.as_deref() {
        None | Some("cycles") => false,
        Some("ops") => true,
        Some(other) => bail!("--ibs-count `{other}`: expected ops or cycles"),
    };
    let req = IbsRequest {
        op,
        fetch,
        period: args.ibs_period,
        count_ops,
        l3_miss_only: args.l3_miss_only,
        ldlat: args.ldlat,
        rand: args.rand,
    };
    let host = IbsHost::current(!args.target.all_cpus);
    Ok(cibs::ibs_specs(
        &culprit_collect::sysfs::Sysfs::system(),
        &req,
        &host,
    )?)
}

fn parse_call_graph(g: bool, spec: Option<&str>) -> anyhow::Result<CallGraph> {
    let Some(spec) = spec else {
        return Ok(if g { CallGraph::Fp } else { CallGraph::None });
    };
    let (mode, size) = match spec.split_once(',') {
        Some((m, s)) => (m, Some(s)),
        None => (spec, None),
    };
    match (mode, size) {
        ("fp", None) => Ok(CallGraph::Fp),
        ("dwarf", None) => Ok(CallGraph::Dwarf(record::DEFAULT_DWARF_STACK)),
        ("dwarf", Some(s)) => {
            let n: u32 = s
                .parse()
                .with_context(|| format!("--call-graph dwarf,SIZE: `{s}` is not a number"))?;
            if n == 0 || n & 7 != 0 || n > 65528 {
                bail!("--call-graph dwarf,SIZE: SIZE must be a multiple of 8 between 8 and 65528, not {n}");
            }
            Ok(CallGraph::Dwarf(n))
        }
        _ => bail!("--call-graph `{spec}`: expected `fp` or `dwarf[,SIZE]` (lbr is not supported)"),
    }
}

/// Turns the flags into recording options (no side effects besides reading sysfs for events).
pub fn options(args: &RecordArgs) -> anyhow::Result<RecordOptions> {
    // First: a command read as --switch-output's value is the mistake to name.
    let modes = modes(args)?;
    let mut specs = Vec::new();
    for list in &args.events {
        specs.extend(events::parse_event_list(list)?);
    }
    let ibs = ibs_specs(args)?;
    for s in &ibs {
        // The kernel allows one event per IBS PMU (a second gets ENOSPC).
        if let Some(dup) = specs.iter().find(|e| e.pmu == s.pmu) {
            bail!(
                "--ibs and -e {} both use the {} PMU, which takes one event at a time",
                dup.name,
                s.pmu.as_deref().unwrap_or("IBS")
            );
        }
    }
    specs.extend(ibs);
    if args.topdown {
        specs = culprit_verbs::stat::topdown::sampling_specs()?;
    }
    let rate = crate::args::sample_rate(args.count, args.freq)?;
    let call_graph = parse_call_graph(args.g, args.call_graph.as_deref())?;
    let choice = args.target.choice("record", false)?;
    if !args.mmap_pages.is_power_of_two() {
        bail!(
            "-m: the number of pages must be a power of two, not {}",
            args.mmap_pages
        );
    }
    Ok(RecordOptions {
        events: specs,
        rate,
        call_graph,
        target: choice.target,
        cpus: choice.cpus,
        output: if args.output.as_os_str() == "-" {
            Output::Stream(StreamOutput::stdout())
        } else {
            Output::File(args.output.clone())
        },
        mmap_pages: args.mmap_pages,
        cmdline: std::env::args().collect(),
        tool_version: format!("culprit {}", env!("CARGO_PKG_VERSION")),
        stop: None,
        off_cpu: args.off_cpu.is_some(),
        off_cpu_wakers: match args.off_cpu.as_deref() {
            None | Some("") => false,
            Some("wakers") => true,
            Some(other) => bail!("--off-cpu={other}: expected --off-cpu or --off-cpu=wakers"),
        },
        context_switches: args.latency,
        modes,
    })
}

/// JSON form of the summary (docs/schemas/record.schema.json).
#[derive(Serialize)]
struct JsonSummary<'a> {
    schema: u32,
    output: String,
    file_size: u64,
    data_size: u64,
    duration_ms: f64,
    events: Vec<JsonEvent<'a>>,
    samples: u64,
    lost_records: u64,
    lost_samples: u64,
    throttle_records: u64,
    unthrottle_records: u64,
    exit_code: Option<i32>,
    signal: Option<i32>,
    interrupted: bool,
    stop_reason: Option<StopReason>,
    dropped_samples: u64,
    compression: Option<JsonCompression>,
    files: Vec<JsonFile>,
}

#[derive(Serialize)]
struct JsonCompression {
    level: u32,
    raw_bytes: u64,
    compressed_bytes: u64,
}

#[derive(Serialize)]
struct JsonFile {
    path: String,
    size: u64,
    samples: u64,
    /// Still on disk (not removed by --switch-max-files).
    kept: bool,
}

#[derive(Serialize)]
struct JsonEvent<'a> {
    name: &'a str,
    samples: u64,
    lost: u64,
    throttled: u64,
    rate: SampleRate,
}

fn rate_text(r: SampleRate) -> String {
    match r {
        SampleRate::Period(p) => format!("period {p}"),
        SampleRate::Frequency(f) => format!("{f} Hz"),
    }
}

fn print_summary(args: &RecordArgs, s: &RecordSummary) -> anyhow::Result<()> {
    let total: u64 = s.events.iter().map(|e| e.samples).sum();
    if args.format == Format::Json {
        let (exit_code, signal) = match s.exit {
            Some(culprit_collect::launch::ChildExit::Exited(c)) => (Some(c), None),
            Some(culprit_collect::launch::ChildExit::Signaled(sig)) => (None, Some(sig)),
            None => (None, None),
        };
        let j = JsonSummary {
            schema: 1,
            output: args.output.display().to_string(),
            file_size: s.file_size,
            data_size: s.data_size,
            duration_ms: s.duration.as_secs_f64() * 1e3,
            events: s
                .events
                .iter()
                .map(|e| JsonEvent {
                    name: &e.name,
                    samples: e.samples,
                    lost: e.lost,
                    throttled: e.throttled,
                    rate: e.rate,
                })
                .collect(),
            samples: total,
            lost_records: s.lost_records,
            lost_samples: s.lost_samples,
            throttle_records: s.throttle_records,
            unthrottle_records: s.unthrottle_records,
            exit_code,
            signal,
            interrupted: s.interrupted,
            stop_reason: s.stop_reason,
            dropped_samples: s.dropped_samples,
            compression: s.compression.map(|c| JsonCompression {
                level: c.level,
                raw_bytes: c.raw_bytes,
                compressed_bytes: c.compressed_bytes,
            }),
            files: s
                .recorded
                .iter()
                .map(|f| JsonFile {
                    path: f.path.display().to_string(),
                    size: f.size,
                    samples: f.samples,
                    kept: s.files.contains(&f.path),
                })
                .collect(),
        };
        if args.output.as_os_str() == "-" {
            // stdout carries the recording.
            culprit_output::json::write_line(&mut std::io::stderr(), &j)?;
        } else {
            culprit_output::json::write_line(&mut std::io::stdout(), &j)?;
        }
        return Ok(());
    }
    if args.quiet {
        return Ok(());
    }
    let mb = |b: u64| b as f64 / (1024.0 * 1024.0);
    let compressed = match s.compression {
        Some(c) if c.compressed_bytes > 0 => format!(
            ", compressed (original {:.3} MB, ratio is {:.3})",
            mb(c.raw_bytes),
            c.raw_bytes as f64 / c.compressed_bytes as f64
        ),
        _ => String::new(),
    };
    if args.switch_output.is_some() || s.recorded.len() > 1 {
        let bytes: u64 = s.recorded.iter().map(|f| f.size).sum();
        eprintln!(
            "[ culprit record: Captured and wrote {:.3} MB in {} files ({} samples){compressed}; {} kept, {} removed ]",
            mb(bytes),
            s.recorded.len(),
            total,
            s.files.len(),
            s.removed_files.len()
        );
    } else {
        eprintln!(
            "[ culprit record: Captured and wrote {:.3} MB {} ({} samples){compressed} ]",
            mb(s.file_size),
            culprit_output::text::escape(&args.output.display().to_string()),
            total
        );
    }
    for e in &s.events {
        eprintln!(
            "[ culprit record: {:>8} samples  {}  ({}){} ]",
            e.samples,
            e.name,
            if e.read_by_leader {
                "read by the group leader's samples".to_string()
            } else {
                rate_text(e.rate)
            },
            if e.lost > 0 {
                format!(", {} lost", e.lost)
            } else {
                String::new()
            }
        );
    }
    eprintln!(
        "[ culprit record: {} lost samples ({} LOST records), {} throttle / {} unthrottle events ]",
        s.lost_samples, s.lost_records, s.throttle_records, s.unthrottle_records
    );
    if s.dropped_samples > 0 {
        eprintln!(
            "[ culprit record: {} samples dropped after the size limit (the file's LOST_SAMPLES record counts them) ]",
            s.dropped_samples
        );
    }
    Ok(())
}

/// What a long recording does as it happens, in perf's `[ perf record: … ]` style.
fn print_notice(n: &Notice) {
    let name =
        |p: &std::path::Path| culprit_output::text::escape(&p.display().to_string()).into_owned();
    match n {
        Notice::Dumped(f) => eprintln!(
            "[ culprit record: Dump {} ({:.3} MB, {} samples) ]",
            name(&f.path),
            f.size as f64 / (1024.0 * 1024.0),
            f.samples
        ),
        Notice::Removed(p) => {
            eprintln!(
                "[ culprit record: Removed {} (--switch-max-files) ]",
                name(p)
            )
        }
        Notice::SizeLimit(bytes) => eprintln!(
            "[ culprit record: size limit reached ({} KB), stopping ]",
            bytes >> 10
        ),
        Notice::DurationReached(d) => eprintln!(
            "[ culprit record: duration of {:.3} s reached, stopping ]",
            d.as_secs_f64()
        ),
    }
}

fn print_warnings(s: &RecordSummary) {
    if s.lost_samples > 0 {
        eprintln!(
            "culprit: warning: {} samples were lost (the ring buffer overflowed): use a bigger buffer \
             (-m {}) or a lower rate (-F/-c)",
            s.lost_samples,
            record::DEFAULT_MMAP_PAGES * 4
        );
    }
    if s.throttle_records > 0 {
        eprintln!(
            "culprit: warning: the kernel throttled sampling {} times (too many interrupts): \
             samples are missing in those periods; lower the rate (-F/-c)",
            s.throttle_records
        );
    }
    let any = s.events.iter().any(|e| e.samples > 0);
    // A leader-sampled member never samples itself.
    for e in s
        .events
        .iter()
        .filter(|e| e.samples == 0 && any && !e.read_by_leader)
        // A tracepoint that did not fire, or a target that never blocked: nothing missed.
        .filter(|e| {
            e.name != culprit_collect::offcpu::EVENT_NAME
                && culprit_collect::tracefs::split_tracepoint(&e.name).is_none()
        })
    {
        eprintln!(
            "culprit: warning: event '{}' recorded no samples while others did: it did not occur, or \
             its counter was never scheduled (keep hardware events to 5 or fewer)",
            e.name
        );
    }
}

/// Runs `culprit record`.
pub fn run(args: RecordArgs) -> anyhow::Result<ExitCode> {
    culprit_collect::verbose::set_level(args.verbose);
    // First thing: a Ctrl-C from now on is seen by the recording loop (and not lost while
    // events are parsed and opened).
    culprit_collect::launch::install_sigint_handler();
    OutputArgs {
        format: args.format,
        output: None,
        color: ColorArg::Auto,
        width: None,
        no_pager: true,
    }
    .require("record's summary", &[Format::Text, Format::Json])?;
    let mut opts = options(&args)?;
    if opts.events.is_empty() {
        // The default event, and (information, silenced by -q) why it is cpu-clock here.
        let (spec, fallback) = record::default_event(&opts);
        if let Some(why) = fallback {
            let note = culprit_output::Note {
                kind: culprit_output::NoteKind::Info,
                text: why,
            };
            culprit_output::text::write_notes(&mut std::io::stderr(), &[note], args.quiet)?;
        }
        opts.events.push(spec);
    }
    let mut warn = |w: String| eprintln!("culprit: warning: {}", culprit_output::text::escape(&w));
    let quiet = args.quiet;
    let mut notice = |n: Notice| {
        if !quiet {
            print_notice(&n);
        }
    };
    let summary = match record::record_with_notices(&opts, &mut warn, &mut notice) {
        Ok(summary) => summary,
        Err(e) => {
            // Printed here, once, with its own status: a closed pipe is a failure of
            // `record` (perf exits 141), not the quiet end of a report piped into `head`.
            eprintln!("culprit: error: {e}");
            return Ok(ExitCode::from(if e.is_broken_pipe() { 141 } else { 2 }));
        }
    };
    if !args.no_buildid_cache && args.output.as_os_str() != "-" {
        let dir = args
            .buildid_dir
            .clone()
            .or_else(culprit_collect::buildid_cache::default_dir);
        if let Some(dir) = dir {
            let r = culprit_collect::buildid_cache::add(&dir, &summary.build_ids);
            if let Some(first) = r.failed.first() {
                eprintln!(
                    "culprit: warning: the build-id cache {} did not take {} object(s) ({first}); \
                     reports of this file need the binaries unchanged",
                    dir.display(),
                    r.failed.len()
                );
            }
        }
    }
    print_summary(&args, &summary)?;
    print_warnings(&summary);
    // Interrupted while recording a command: 128 + the signal, as perf (which re-raises it).
    let interrupted_by = summary
        .interrupt_signal
        .filter(|_| opts.target.command().is_some())
        .map(|sig| ExitCode::from((128 + sig).clamp(0, 255) as u8));
    if summary.forced {
        if !args.quiet {
            eprintln!(
                "culprit: interrupted twice: the command was terminated; the file is complete"
            );
        }
        return Ok(interrupted_by.unwrap_or(ExitCode::from(130)));
    }
    if let Some(code) = interrupted_by {
        return Ok(code);
    }
    // --duration or --max-size ended the recording as asked: a command culprit ended then
    // is no failure.
    if summary.stop_reason.is_some()
        && matches!(
            summary.exit,
            Some(culprit_collect::launch::ChildExit::Signaled(
                libc::SIGTERM | libc::SIGKILL
            ))
        )
    {
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(e) = summary.exit {
        if let culprit_collect::launch::ChildExit::Signaled(sig) = e {
            if !args.quiet && sig != libc::SIGINT {
                eprintln!("culprit: the command was killed by signal {sig}; the file is complete");
            }
        }
        return Ok(ExitCode::from(e.code().clamp(0, 255) as u8));
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct T {
        #[command(flatten)]
        r: RecordArgs,
    }

    fn parse(args: &[&str]) -> Result<RecordArgs, clap::Error> {
        T::try_parse_from(std::iter::once("record").chain(args.iter().copied())).map(|t| t.r)
    }

    #[test]
    fn test_record_args_spellings() {
        let a = parse(&[
            "-e",
            "cpu-clock",
            "-e",
            "task-clock,page-faults",
            "-c",
            "1000",
            "-g",
            "-o",
            "x.data",
            "--",
            "prog",
            "-v",
        ])
        .unwrap();
        assert_eq!(a.events, vec!["cpu-clock", "task-clock,page-faults"]);
        assert_eq!(a.count, Some(1000));
        assert!(a.g);
        assert_eq!(a.output, PathBuf::from("x.data"));
        assert_eq!(a.target.command, vec!["prog", "-v"]);
        let a = parse(&[
            "--event=cpu-clock",
            "--freq=999",
            "--call-graph",
            "dwarf,4096",
            "prog",
        ])
        .unwrap();
        assert_eq!(a.freq, Some(999));
        assert_eq!(
            parse_call_graph(a.g, a.call_graph.as_deref()).unwrap(),
            CallGraph::Dwarf(4096)
        );
        let a = parse(&["-p", "12,34"]).unwrap();
        assert_eq!(
            a.target.choice("record", false).unwrap().target,
            culprit_collect::record::Target::Pids(vec![12, 34])
        );
        // the command's own flags are not culprit's
        let a = parse(&["sleep", "-c", "1"]).unwrap();
        assert_eq!(a.target.command, vec!["sleep", "-c", "1"]);
        assert_eq!(a.count, None);
    }

    #[test]
    fn test_record_mode_flags_as_perf_spells_them() {
        let m = modes(&parse(&["-z", "prog"]).unwrap()).unwrap();
        assert_eq!(m.compression_level, Some(1));
        let a = parse(&["--compression-level", "7", "prog"]).unwrap();
        assert_eq!(modes(&a).unwrap().compression_level, Some(7));
        assert!(parse(&["--compression-level=0", "prog"]).is_err());
        // --switch-output takes an optional value: signal when none is given.
        let a = parse(&["--switch-output", "--", "prog", "-x"]).unwrap();
        assert_eq!(
            modes(&a).unwrap().switch_output,
            Some(modes::SwitchOutput::Signal)
        );
        assert_eq!(a.target.command, vec!["prog", "-x"]);
        let a = parse(&["--switch-output", "100M", "--switch-max-files", "4", "prog"]).unwrap();
        let m = modes(&a).unwrap();
        assert_eq!(m.switch_output, Some(modes::SwitchOutput::Size(100 << 20)));
        assert_eq!(m.switch_max_files, Some(4));
        assert_eq!(a.target.command, vec!["prog"]);
        let a = parse(&["--switch-output=30s", "prog"]).unwrap();
        assert_eq!(
            modes(&a).unwrap().switch_output,
            Some(modes::SwitchOutput::Time(Duration::from_secs(30)))
        );
        // A command right after --switch-output is read as its value: the error says so.
        let e = modes(&parse(&["--switch-output", "prog"]).unwrap()).unwrap_err();
        assert!(e.to_string().contains("`--`"), "{e}");
        let a = parse(&[
            "--duration",
            "1.5",
            "--max-size",
            "2M",
            "--overwrite",
            "prog",
        ])
        .unwrap();
        let m = modes(&a).unwrap();
        assert_eq!(m.duration, Some(Duration::from_millis(1500)));
        assert_eq!(m.max_size, Some(2 << 20));
        assert!(m.overwrite && m.dumps_on_signal());
        assert!(modes(&parse(&["--duration=-1", "prog"]).unwrap()).is_err());
        assert!(modes(&parse(&["--max-size", "lots", "prog"]).unwrap()).is_err());
    }

    #[test]
    fn test_record_args_conflicts_and_errors() {
        assert!(parse(&["-c", "10", "-F", "10", "prog"]).is_err());
        assert!(parse(&["-p", "1", "-a"]).is_err());
        assert!(parse_call_graph(false, Some("lbr")).is_err());
        assert!(parse_call_graph(false, Some("dwarf,7")).is_err());
        assert_eq!(parse_call_graph(true, None).unwrap(), CallGraph::Fp);
        assert_eq!(parse_call_graph(false, None).unwrap(), CallGraph::None);
        let a = parse(&[]).unwrap();
        assert!(options(&a)
            .unwrap_err()
            .to_string()
            .contains("nothing to record"));
    }
}

/// The flags of a preset recorder (`sched record`, `lock record`) that are `record`'s own.
#[derive(clap::Args, Debug)]
pub struct PresetArgs {
    /// Output file.
    #[arg(
        short = 'o',
        long = "output",
        value_name = "FILE",
        default_value = "perf.data"
    )]
    pub output: PathBuf,
    /// Ring buffer size per CPU in pages (a power of two): tracepoint events are many.
    #[arg(
        short = 'm',
        long = "mmap-pages",
        value_name = "PAGES",
        default_value_t = 1024
    )]
    pub mmap_pages: usize,
    /// Don't print the summary.
    #[arg(short = 'q', long = "quiet")]
    pub quiet: bool,
}

/// Records as `culprit record FLAGS… [-- COMMAND]` would, with `flags` (a preset's events
/// and modes) and the preset's own `-o`, `-m` and `-q`: as perf's `perf sched record` and
/// `perf lock record` run `perf record` with theirs.
pub fn run_preset(
    flags: &[&str],
    preset: &PresetArgs,
    command: &[String],
) -> anyhow::Result<ExitCode> {
    #[derive(clap::Parser, Debug)]
    struct RecordCli {
        #[command(flatten)]
        args: RecordArgs,
    }
    let mut argv: Vec<String> = std::iter::once("record")
        .chain(flags.iter().copied())
        .map(String::from)
        .collect();
    argv.extend(["-m".into(), preset.mmap_pages.to_string()]);
    argv.extend(["-o".into(), preset.output.display().to_string()]);
    if preset.quiet {
        argv.push("-q".into());
    }
    if !command.is_empty() {
        argv.push("--".into());
        argv.extend(command.iter().cloned());
    }
    let cli =
        <RecordCli as clap::Parser>::try_parse_from(&argv).map_err(|e| anyhow::anyhow!("{e}"))?;
    run(cli.args)
}
