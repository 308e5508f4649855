//! `culprit trace`: DTrace-style probes, predicates and aggregations over samples, on a
//! perf.data file (`-i`) or live (`-p`, `-a`, `-- CMD`). The language is culprit-script's;
//! this module only reads inputs, records live, and prints.
//!
//! Live mode streams: the recorder runs on a thread and the program sees every sample as it
//! is recorded (`crate::live`); `printf` output appears while the target runs, `tick-N`
//! probes fire on wall time (on sample time offline), END runs when the recording ends
//! (Ctrl-C, the command or the processes exit) or after `exit()`, which also stops the
//! recording and terminates a launched command.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use culprit_collect::live::events::{probe_event_specs, EventRequest};
use culprit_collect::live::{self, LiveOptions};
use culprit_collect::record;
use culprit_decode::model::{Profile, Sample};
use culprit_script::probe::Probe;
use culprit_script::{Options, Program, Runner, SymbolSource};
use culprit_symbols::{KernelSymbols, ProfileInput, ReadPlan, Symbolizer};
use serde::Serialize;

use crate::args::{Format, InputArgs, OutputArgs, TargetArgs};

/// Arguments of `culprit trace`.
#[derive(clap::Args, Debug)]
#[command(
    about = "DTrace-style probes, predicates and aggregations over samples (files or live)",
    after_help = "EXAMPLES:\n  culprit trace -i perf.data -e 'pmc:::cpu-clock { @[sym] = count(); }'\n  culprit trace -e 'profile:::hz-999 /execname == \"prog\"/ { @[sym] = count(); }' -- ./prog\n  culprit trace -s examples/trace/dcache-misses-per-exec.d -i ibs.data\n  culprit trace -e 'ibs-exec-2000 { @[execname] = sum(args[0]->IbsOpData3.bit.IbsDcMiss); }' -a -- sleep 5\n\nThe language (probes, built-ins, args[0] fields, aggregations) is described in docs/trace.md."
)]
pub struct TraceArgs {
    /// The program text.
    #[arg(
        short = 'e',
        long = "expr",
        value_name = "PROGRAM",
        conflicts_with = "script"
    )]
    pub program: Option<String>,
    /// A program file (a `#!` first line is ignored).
    #[arg(short = 's', long = "script", value_name = "FILE")]
    pub script: Option<PathBuf>,
    /// Run over the samples of a perf.data file (`-i FILE`; `-` reads a pipe-mode stream
    /// from stdin) instead of recording live, with where its symbols are found.
    #[command(flatten)]
    pub input: InputArgs,
    /// Live: what to record (`-p PID…`, `-a`, `-C CPUS`, `-- COMMAND…`).
    #[command(flatten)]
    pub target: TargetArgs,
    /// `--format text|json` (json: one object, schema in docs/schemas/trace.schema.json),
    /// `-o FILE`.
    #[command(flatten)]
    pub output: OutputArgs,
    /// Quiet: only what the program prints (like `#pragma D option quiet`).
    #[arg(short = 'q', long = "quiet")]
    pub quiet: bool,
    /// Distinct keys kept per aggregation (and thread-local variables); more are dropped and
    /// counted in a note.
    #[arg(long = "max-keys", value_name = "N", default_value_t = 100_000)]
    pub max_keys: usize,
    /// Print timing to stderr; offline, reads the file into memory first so that the
    /// evaluation is timed alone (samples per second).
    #[arg(long = "stats")]
    pub stats: bool,
    /// Live: ring buffer size per CPU in pages (a power of two).
    #[arg(short = 'm', long = "mmap-pages", value_name = "PAGES", default_value_t = record::DEFAULT_MMAP_PAGES)]
    pub mmap_pages: usize,
}

/// The largest trace program file read (`-s`): far beyond any program, and small enough
/// that `-s /dev/zero` fails at once instead of filling memory.
const MAX_PROGRAM_BYTES: u64 = 16 << 20;

/// Reads a trace program file (`-s FILE`), refusing one larger than [`MAX_PROGRAM_BYTES`]
/// (a device or FIFO is read only that far).
fn read_program(path: &Path) -> anyhow::Result<String> {
    use std::io::Read;
    let what = || format!("cannot read {}", path.display());
    let file = std::fs::File::open(path).with_context(what)?;
    let mut bytes = Vec::new();
    file.take(MAX_PROGRAM_BYTES + 1)
        .read_to_end(&mut bytes)
        .with_context(what)?;
    anyhow::ensure!(
        bytes.len() as u64 <= MAX_PROGRAM_BYTES,
        "{}: a trace program of more than {} MiB; not read",
        path.display(),
        MAX_PROGRAM_BYTES >> 20
    );
    // As read_to_string says it.
    String::from_utf8(bytes)
        .map_err(|_| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "stream did not contain valid UTF-8",
            )
        })
        .with_context(what)
}

/// Runs `culprit trace`.
pub fn run(args: TraceArgs) -> anyhow::Result<ExitCode> {
    args.output
        .require("trace", &[Format::Text, Format::Json])?;
    refuse_inapplicable(&args)?;
    let (src, name) = match (&args.program, &args.script) {
        (Some(p), None) => (p.clone(), "<program>".to_string()),
        (None, Some(f)) => (read_program(f)?, f.display().to_string()),
        _ => bail!("give the program with -e PROGRAM or -s FILE"),
    };
    let opts = Options {
        max_keys: args.max_keys.max(1),
        quiet: args.quiet,
    };
    let prog = match culprit_script::compile(&src, &opts) {
        Ok(p) => p,
        Err(e) => bail!("{name}:{e}"),
    };
    let mut sink = Sink::new(args.output.format, args.output.writer()?);
    // A live trace names this machine's kernel; a file, its recorded kernel's (unless the
    // user gave the kernel's symbols).
    let mut sym_opts = args.input.symbolizer_options();
    if args.input.input.is_none() && sym_opts.kernel_symbols == KernelSymbols::Recorded {
        sym_opts.kernel_symbols = KernelSymbols::Running;
    }
    let mut syms = Symbolizer::new(sym_opts);
    // A program that names functions or modules (`sym`, `mod`, `%a`, offenders) will need
    // the kernel's symbols, which take the kernel a while to print: start on another thread.
    // (A false positive only costs that thread's work.)
    if ["sym", "mod", "%a", "%A", "offenders"]
        .iter()
        .any(|t| src.contains(t))
    {
        syms.prefetch_kernel_symbols();
    }
    let (outcome, input, live) = match &args.input.input {
        None => {
            let opts = live_options(&prog, &args)?;
            let outcome = run_live(&prog, opts, &mut sink, &mut syms)?;
            (outcome, PathBuf::from("-"), true)
        }
        Some(path) => {
            let input = args.input.open();
            let what = path.display().to_string();
            let outcome = if args.stats {
                run_in_memory(&prog, &input, &what, &mut sink, &mut syms, args.stats)?
            } else {
                run_streaming(&prog, &input, &what, &mut sink, &mut syms)?
            };
            (outcome, path.clone(), false)
        }
    };
    sink.finish(&outcome, &input, live)?;
    Ok(match outcome.exit {
        Some(v) => ExitCode::from(u8::try_from(v).unwrap_or_else(|_| {
            // A status the shell cannot see: never turn it into 0 (success).
            eprintln!(
                "culprit: warning: exit({v}) is outside 0..255, which is all a process can return: exiting with 255"
            );
            255
        })),
        None => ExitCode::SUCCESS,
    })
}

/// Refuses flags that do not apply: a live target with `-i`, and the live-only or
/// file-only flags in the other mode.
fn refuse_inapplicable(args: &TraceArgs) -> anyhow::Result<()> {
    if args.input.input.is_some() {
        if args.target.is_given() {
            bail!(
                "-i runs the program over a recording: -p, -a, -C and a command record live                  (give either -i FILE or a live target)"
            );
        }
        if args.mmap_pages != record::DEFAULT_MMAP_PAGES {
            bail!("-m sizes the live recording's ring buffers: it does not apply to -i");
        }
    } else if args.stats {
        bail!("--stats times the evaluation over a file: give -i FILE");
    }
    Ok(())
}

/// Where output goes: written as it is printed (text), or collected (JSON).
struct Sink {
    format: Format,
    text: String,
    notes: Vec<String>,
    out: Box<dyn Write>,
}

/// `culprit trace --format json` (docs/schemas/trace.schema.json).
#[derive(Serialize)]
struct TraceReport<'a> {
    /// JSON schema version.
    schema: u32,
    /// The recording read (`null` live).
    input: Option<String>,
    samples: SampleCounts,
    /// What the program printed.
    output: &'a str,
    /// The aggregations, as the runner reports them (docs/trace.md).
    aggregations: &'a [serde_json::Value],
    notes: &'a [String],
    /// The program's `exit()` value.
    exit: Option<i64>,
    /// Why reading stopped early, when it did.
    stopped: Option<&'a str>,
}

#[derive(Serialize)]
struct SampleCounts {
    seen: u64,
    matched: u64,
}

impl Sink {
    fn new(format: Format, out: Box<dyn Write>) -> Sink {
        Sink {
            format,
            text: String::new(),
            notes: Vec::new(),
            out,
        }
    }

    fn flush_runner(&mut self, r: &mut Runner<'_>) -> std::io::Result<()> {
        let s = r.take_output();
        if s.is_empty() {
            return Ok(());
        }
        if self.format == Format::Json {
            // Bounded: a program printing per sample cannot grow the JSON without limit.
            const CAP: usize = 64 << 20;
            if self.text.len() + s.len() <= CAP {
                self.text.push_str(&s);
            } else if !self.notes.iter().any(|n| n.starts_with("output truncated")) {
                self.notes.push(format!(
                    "output truncated at {CAP} bytes in the JSON document"
                ));
            }
            return Ok(());
        }
        self.out.write_all(s.as_bytes())?;
        // Live output appears as it is printed.
        self.out.flush()
    }

    fn finish(&mut self, o: &Outcome, input: &Path, live: bool) -> anyhow::Result<()> {
        let mut notes = self.notes.clone();
        notes.extend(o.notes.iter().cloned());
        if self.format == Format::Json {
            let report = TraceReport {
                schema: 1,
                input: (!live).then(|| input.display().to_string()),
                samples: SampleCounts {
                    seen: o.seen,
                    matched: o.matched,
                },
                output: &self.text,
                aggregations: &o.aggregations,
                notes: &notes,
                exit: o.exit,
                stopped: o.stopped.as_deref(),
            };
            culprit_output::json::write_line(&mut self.out, &report)?;
            self.out.flush()?;
        } else {
            self.out.flush()?;
            for n in &notes {
                eprintln!("culprit trace: note: {n}");
            }
        }
        Ok(())
    }
}

struct Outcome {
    seen: u64,
    matched: u64,
    aggregations: Vec<serde_json::Value>,
    notes: Vec<String>,
    exit: Option<i64>,
    stopped: Option<String>,
}

fn bind<'p>(
    prog: &'p Program,
    profile: &Profile,
    what: &str,
    quiet: bool,
) -> anyhow::Result<Runner<'p>> {
    let r = prog.runner(&profile.events, what)?;
    if !quiet {
        let probes = prog.clauses().iter().map(|c| c.probes.len()).sum::<usize>();
        eprintln!(
            "culprit trace: {} clause(s), {probes} probe(s) over {what}",
            prog.clauses().len()
        );
    }
    Ok(r)
}

fn conclude(
    mut r: Runner<'_>,
    p: &Profile,
    sink: &mut Sink,
    syms: &mut dyn SymbolSource,
) -> anyhow::Result<Outcome> {
    r.end(p, syms, sink.format == Format::Text);
    sink.flush_runner(&mut r)?;
    let mut notes: Vec<String> = r.notes().to_vec();
    let stopped = p.stopped.as_ref().map(|s| {
        format!(
            "reading stopped at offset {} ({}) after {} records; the samples before it were traced",
            s.offset, s.reason, s.records_read
        )
    });
    if let Some(s) = &stopped {
        notes.push(s.clone());
    }
    if p.lost > 0 {
        notes.push(format!(
            "the kernel lost {} samples while recording",
            p.lost
        ));
    }
    Ok(Outcome {
        seen: r.samples_seen,
        matched: r.samples_matched,
        aggregations: r.aggregations_json(),
        notes,
        exit: r.exit_code(),
        stopped,
    })
}

fn run_streaming(
    prog: &Program,
    input: &ProfileInput,
    what: &str,
    sink: &mut Sink,
    syms: &mut Symbolizer,
) -> anyhow::Result<Outcome> {
    // Bound on first sample: the events are known once the header is read.
    let mut runner: Option<Runner<'_>> = None;
    let mut failed: Option<anyhow::Error> = None;
    let mut io_err: Option<std::io::Error> = None;
    // From a pipe (`culprit record -o - … | culprit trace -i -`) the samples arrive while the
    // recording runs: print at least every 100 ms, not only when 64 KiB are pending.
    let piped = input.is_stdin();
    let mut last_flush = Instant::now();
    // The common case: bound, nothing failed, not a pipe.
    let mut fast = false;
    let mut on_sample = |p: &Profile, s: &Sample| {
        if fast {
            if let Some(r) = runner.as_mut() {
                r.sample(p, s, syms);
                if r.pending_output() > 1 << 16 {
                    if let Err(e) = sink.flush_runner(r) {
                        io_err = Some(e);
                        fast = false;
                    }
                }
                return;
            }
        }
        if failed.is_some() || io_err.is_some() {
            return;
        }
        if runner.is_none() {
            match bind(prog, p, what, prog.quiet) {
                Ok(mut r) => {
                    r.begin(p, syms);
                    runner = Some(r);
                    fast = !piped;
                }
                Err(e) => {
                    failed = Some(e);
                    return;
                }
            }
        }
        if let Some(r) = runner.as_mut() {
            r.sample(p, s, syms);
            let pending = r.pending_output();
            let due = piped && pending > 0 && last_flush.elapsed().as_millis() >= 100;
            if pending > 1 << 16 || due {
                last_flush = Instant::now();
                if let Err(e) = sink.flush_runner(r) {
                    io_err = Some(e);
                }
            }
        }
    };
    // Programs never look at call chains: not decoding them is much faster on -g files.
    // Code locations are resolved only for programs that name code (sym, mod, %a…).
    let plan = ReadPlan {
        skip_callchains: true,
        skip_locations: !prog.uses_locations(),
        ..ReadPlan::default()
    };
    let bar = crate::progress::Progress::for_input(input);
    let profile = input.for_each(&plan, bar.callback(), &mut on_sample)?;
    bar.finish();
    if let Some(e) = failed {
        return Err(e);
    }
    if let Some(e) = io_err {
        return Err(e.into());
    }
    let mut r = match runner {
        Some(r) => r,
        None => {
            // No samples at all: BEGIN and END still run.
            let mut r = bind(prog, &profile, what, prog.quiet)?;
            r.begin(&profile, syms);
            r
        }
    };
    sink.flush_runner(&mut r)?;
    conclude(r, &profile, sink, syms)
}

fn run_in_memory(
    prog: &Program,
    input: &ProfileInput,
    what: &str,
    sink: &mut Sink,
    syms: &mut Symbolizer,
    stats: bool,
) -> anyhow::Result<Outcome> {
    let t0 = Instant::now();
    let profile = input.read(&ReadPlan::default())?;
    let decode = t0.elapsed();
    let mut r = bind(prog, &profile, what, prog.quiet)?;
    r.begin(&profile, syms);
    let t1 = Instant::now();
    for s in &profile.samples {
        if !r.sample(&profile, s, syms) {
            break;
        }
        if r.pending_output() > 1 << 16 {
            sink.flush_runner(&mut r)?;
        }
    }
    let eval = t1.elapsed();
    sink.flush_runner(&mut r)?;
    if stats {
        let n = r.samples_seen;
        eprintln!(
            "culprit trace: stats: {} samples; decode {:.3} s; evaluate {:.3} s = {:.1} M samples/s (one core)",
            n,
            decode.as_secs_f64(),
            eval.as_secs_f64(),
            n as f64 / eval.as_secs_f64().max(1e-9) / 1e6
        );
    }
    conclude(r, &profile, sink, syms)
}

/// The program's side of a live stream: binds on the first data (the events are known from
/// the stream's head), runs BEGIN, every sample and the wall-clock ticks, and writes the
/// output as it is produced.
struct LiveTrace<'p, 's> {
    prog: &'p Program,
    runner: Option<Runner<'p>>,
    sink: &'s mut Sink,
    syms: &'s mut Symbolizer,
    failed: Option<anyhow::Error>,
}

impl<'p> LiveTrace<'p, '_> {
    /// The runner, bound (and BEGIN run) once the stream's events are known.
    fn runner(&mut self, p: &Profile) -> Option<&mut Runner<'p>> {
        if self.runner.is_none() && self.failed.is_none() && !p.events.is_empty() {
            match bind(self.prog, p, "the live recording", self.prog.quiet) {
                Ok(mut r) => {
                    r.set_wall_clock_ticks(true);
                    r.begin(p, self.syms);
                    self.runner = Some(r);
                }
                Err(e) => self.failed = Some(e),
            }
        }
        self.runner.as_mut()
    }

    fn flush(&mut self) -> live::Flow {
        if let Some(r) = self.runner.as_mut() {
            if let Err(e) = self.sink.flush_runner(r) {
                self.failed = Some(e.into());
                return live::Flow::Stop;
            }
        }
        live::Flow::Continue
    }
}

impl live::Consumer for LiveTrace<'_, '_> {
    fn sample(&mut self, p: &Profile, s: &Sample) -> live::Flow {
        if self.runner(p).is_none() {
            return live::Flow::Stop;
        }
        let Some(r) = self.runner.as_mut() else {
            return live::Flow::Stop;
        };
        let go = r.sample(p, s, self.syms);
        if !go {
            self.flush();
            return live::Flow::Stop;
        }
        if r.pending_output() > 1 << 16 {
            return self.flush();
        }
        live::Flow::Continue
    }

    fn tick(&mut self, p: &Profile, now: u64) -> live::Flow {
        if self.runner(p).is_none() {
            return if self.failed.is_some() {
                live::Flow::Stop
            } else {
                live::Flow::Continue
            };
        }
        let go = match self.runner.as_mut() {
            Some(r) => r.tick(p, now, self.syms),
            None => true,
        };
        // Output produced by samples and ticks appears at least every tick.
        let flushed = self.flush();
        if !go {
            return live::Flow::Stop;
        }
        flushed
    }
}

/// Records live and runs the program over the stream as it arrives.
fn run_live(
    prog: &Program,
    opts: LiveOptions,
    sink: &mut Sink,
    syms: &mut Symbolizer,
) -> anyhow::Result<Outcome> {
    let launched = opts.launches();
    let mut t = LiveTrace {
        prog,
        runner: None,
        sink,
        syms,
        failed: None,
    };
    let end = live::run(
        opts,
        Duration::from_millis(LIVE_TICK_MS),
        Box::new(|w| eprintln!("culprit trace: warning: {w}")),
        &mut t,
    )?;
    if let Some(e) = t.failed.take() {
        return Err(e);
    }
    let s = &end.summary;
    if s.lost_samples > 0 {
        eprintln!(
            "culprit trace: warning: the kernel lost {} samples (raise -m, or lower the rate)",
            s.lost_samples
        );
    }
    let mut r = match t.runner.take() {
        Some(r) => r,
        None => {
            // Nothing arrived (no samples): BEGIN and END still run.
            let mut r = bind(prog, &end.profile, "the live recording", prog.quiet)?;
            r.begin(&end.profile, t.syms);
            r
        }
    };
    t.sink.flush_runner(&mut r)?;
    let mut out = conclude(r, &end.profile, t.sink, t.syms)?;
    if s.stopped && launched {
        if let Some(e) = s.exit {
            out.notes.push(format!(
                "exit() stopped the recording; the launched command {}",
                match e {
                    culprit_collect::launch::ChildExit::Exited(c) =>
                        format!("had already exited (status {c})"),
                    culprit_collect::launch::ChildExit::Signaled(sig) =>
                        format!("was terminated (signal {sig})"),
                }
            ));
        }
    }
    Ok(out)
}

/// Wall-clock tick of live mode: the resolution of `tick-N` probes and of output flushing.
const LIVE_TICK_MS: u64 = 10;

/// The live options of a trace: the events of the program's probes, the target.
fn live_options(prog: &Program, args: &TraceArgs) -> anyhow::Result<LiveOptions> {
    let probes: Vec<(EventRequest, String)> = prog
        .sample_probes()
        .into_iter()
        .filter_map(|(p, text)| {
            let req = match p {
                Probe::Pmc { event, period } => EventRequest::Event {
                    name: event,
                    period,
                },
                Probe::Profile { hz } => EventRequest::Profile { hz },
                Probe::IbsOp { period } => EventRequest::IbsOp { period },
                Probe::IbsFetch { period } => EventRequest::IbsFetch { period },
                Probe::Begin | Probe::End | Probe::Tick { .. } => return None,
            };
            Some((req, text))
        })
        .collect();
    let system_wide = args.target.all_cpus;
    let events = probe_event_specs(&probes, !system_wide)?;
    if !args.target.is_given() {
        bail!("nothing to trace: give -i PERF.DATA, -p PID, -a, or a command after --");
    }
    let choice = args.target.choice("trace", false)?;
    Ok(LiveOptions {
        events,
        rate: None,
        target: choice.target,
        cpus: choice.cpus,
        mmap_pages: args.mmap_pages,
        cmdline: std::env::args().collect(),
        tool_version: format!("culprit {}", env!("CARGO_PKG_VERSION")),
    })
}
