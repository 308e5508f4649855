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
use clap::ValueEnum;
use culprit_collect::events::{self, SampleRate};
use culprit_collect::record::{self, CallGraph, RecordOptions, Target};
use culprit_decode::model::{Profile, Sample};
use culprit_script::probe::Probe;
use culprit_script::{Options, Program, Runner, SymbolSource};
use culprit_symbols::{KernelSymbols, ProfileInput, ReadPlan, Symbolizer};

use crate::args::InputArgs;
use crate::live;

/// Output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TraceFormat {
    /// What the program prints, as DTrace prints it.
    Text,
    /// One JSON object (schema in docs/trace.md).
    Json,
}

/// Arguments of `culprit trace`.
#[derive(clap::Args, Debug)]
#[command(
    about = "DTrace-style probes, predicates and aggregations over samples (files or live)",
    after_help = "EXAMPLES:\n  culprit trace -i perf.data -e 'pmc:::cpu-clock { @[sym] = count(); }'\n  culprit trace -e 'profile:::hz-999 /execname == \"prog\"/ { @[sym] = count(); }' -- ./prog\n  culprit trace -s examples/trace/dcache-misses-per-exec.d -i ibs.data\n  culprit trace -e 'ibs-exec-2000 { @[execname] = sum(args[0]->IbsOpData3.bit.IbsDcMiss); }' -a -- sleep 5\n\nThe language (probes, built-ins, args[0] fields, aggregations) is described in docs/trace.md.",
    trailing_var_arg = true
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
    /// from stdin), with where its symbols are found; without `-i`, trace live.
    #[command(flatten)]
    pub input: InputArgs,
    /// Live: attach to running process(es) (comma-separated) until Ctrl-C or they exit.
    #[arg(
        short = 'p',
        long = "pid",
        value_name = "PID[,PID…]",
        conflicts_with_all = ["all_cpus", "input"]
    )]
    pub pid: Option<String>,
    /// Live: system-wide (with a command, until it exits; without, until Ctrl-C).
    #[arg(short = 'a', long = "all-cpus", conflicts_with = "input")]
    pub all_cpus: bool,
    /// Output format.
    #[arg(long = "format", value_enum, default_value_t = TraceFormat::Text)]
    pub format: TraceFormat,
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
    /// Live: the command to run (put `--` before it).
    #[arg(value_name = "COMMAND", allow_hyphen_values = true)]
    pub command: Vec<String>,
}

/// Runs `culprit trace`.
pub fn run(args: TraceArgs) -> anyhow::Result<ExitCode> {
    let (src, name) = match (&args.program, &args.script) {
        (Some(p), None) => (p.clone(), "<program>".to_string()),
        (None, Some(f)) => (
            std::fs::read_to_string(f).with_context(|| format!("cannot read {}", f.display()))?,
            f.display().to_string(),
        ),
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
    let mut sink = Sink::new(args.format);
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

/// Where output goes: stdout as it is printed (text), or collected (JSON).
struct Sink {
    format: TraceFormat,
    text: String,
    notes: Vec<String>,
    out: std::io::Stdout,
}

impl Sink {
    fn new(format: TraceFormat) -> Sink {
        Sink {
            format,
            text: String::new(),
            notes: Vec::new(),
            out: std::io::stdout(),
        }
    }

    fn flush_runner(&mut self, r: &mut Runner<'_>) -> std::io::Result<()> {
        let s = r.take_output();
        if s.is_empty() {
            return Ok(());
        }
        match self.format {
            TraceFormat::Text => self.out.lock().write_all(s.as_bytes()),
            TraceFormat::Json => {
                // Bounded: a program printing per sample cannot grow the JSON without limit.
                const CAP: usize = 64 << 20;
                if self.text.len() + s.len() <= CAP {
                    self.text.push_str(&s);
                } else if !self.notes.iter().any(|n| n.starts_with("output truncated")) {
                    self.notes.push(format!(
                        "output truncated at {CAP} bytes in the JSON document"
                    ));
                }
                Ok(())
            }
        }
    }

    fn finish(&mut self, o: &Outcome, input: &Path, live: bool) -> anyhow::Result<()> {
        let mut notes = self.notes.clone();
        notes.extend(o.notes.iter().cloned());
        match self.format {
            TraceFormat::Text => {
                self.out.lock().flush()?;
                for n in &notes {
                    eprintln!("culprit trace: note: {n}");
                }
            }
            TraceFormat::Json => {
                let v = serde_json::json!({
                    "input": if live { serde_json::Value::Null } else { input.display().to_string().into() },
                    "samples": { "seen": o.seen, "matched": o.matched },
                    "output": self.text,
                    "aggregations": o.aggregations,
                    "notes": notes,
                    "exit": o.exit,
                    "stopped": o.stopped,
                });
                let mut out = self.out.lock();
                writeln!(out, "{v}")?;
                out.flush()?;
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
    r.end(p, syms, sink.format == TraceFormat::Text);
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
    let profile = input.for_each(&plan, &mut on_sample)?;
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
    opts: RecordOptions,
    sink: &mut Sink,
    syms: &mut Symbolizer,
) -> anyhow::Result<Outcome> {
    let launched = matches!(opts.target, Target::Command(_) | Target::System(Some(_)));
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

/// Most events one live wildcard probe may open (more would be multiplexed on the few
/// hardware counters and name more events than a program can mean).
const MAX_GLOB_EVENTS: usize = 16;

/// `*` and `?` over a whole name.
fn glob_match(pat: &[u8], name: &[u8]) -> bool {
    match (pat.first(), name.first()) {
        (None, None) => true,
        (Some(b'*'), _) => {
            glob_match(&pat[1..], name) || (!name.is_empty() && glob_match(pat, &name[1..]))
        }
        (Some(b'?'), Some(_)) => glob_match(&pat[1..], &name[1..]),
        (Some(a), Some(b)) if a == b => glob_match(&pat[1..], &name[1..]),
        _ => false,
    }
}

/// Live wildcard probes (`pmc:::ls_*`): the event names this machine knows (generic, cache,
/// the CPU's catalog, sysfs aliases) that match the pattern.
fn expand_event_glob(pattern: &str) -> anyhow::Result<Vec<String>> {
    let sysfs = culprit_collect::sysfs::Sysfs::system();
    let cpu = culprit_collect::sysfs::cpu_identity();
    let names: Vec<String> = events::known_names(&sysfs, cpu.as_ref())
        .into_iter()
        .filter(|n| !n.contains('/') && glob_match(pattern.as_bytes(), n.as_bytes()))
        .collect();
    if names.is_empty() {
        bail!("`{pattern}` matches no event known here (`culprit list` shows them)");
    }
    if names.len() > MAX_GLOB_EVENTS {
        bail!(
            "`{pattern}` matches {} events ({}, …); at most {MAX_GLOB_EVENTS} live: narrow the pattern",
            names.len(),
            names[..5].join(", ")
        );
    }
    Ok(names)
}

/// The recording options of a live trace: the events of the program's probes.
fn live_options(prog: &Program, args: &TraceArgs) -> anyhow::Result<RecordOptions> {
    let probes = prog.sample_probes();
    if probes.is_empty() {
        bail!("the program has no sample probes (pmc:::, profile:::, ibs:::): nothing to record live; give -i FILE to run it over a recording");
    }
    let mut specs = Vec::new();
    let (mut op, mut fetch): (Option<Option<u64>>, Option<Option<u64>>) = (None, None);
    for (p, text) in &probes {
        match p {
            Probe::Pmc { event, period } => {
                let names = if event.contains(['*', '?']) {
                    expand_event_glob(event).with_context(|| format!("probe `{text}`"))?
                } else {
                    vec![event.clone()]
                };
                for name in names {
                    if specs.iter().any(|s: &events::EventSpec| s.name == name) {
                        continue; // another probe (or pattern) records it already
                    }
                    let mut spec =
                        events::parse_event(&name).with_context(|| format!("probe `{text}`"))?;
                    if let Some(p) = period {
                        spec.rate = Some(SampleRate::Period(*p));
                    }
                    specs.push(spec);
                }
            }
            Probe::Profile { hz } => {
                let mut spec = events::parse_event("cpu-clock").context("cpu-clock")?;
                spec.rate = Some(SampleRate::Frequency(*hz));
                if specs
                    .iter()
                    .any(|s: &events::EventSpec| s.name == spec.name)
                {
                    bail!("probe `{text}`: cpu-clock is already recorded by another probe; one cpu-clock rate per program");
                }
                specs.push(spec);
            }
            Probe::IbsOp { period } => {
                if op.is_some_and(|q| q != *period) {
                    bail!(
                        "probe `{text}`: one IBS op period per program (the PMU takes one event)"
                    );
                }
                op = Some(*period);
            }
            Probe::IbsFetch { period } => {
                if fetch.is_some_and(|q| q != *period) {
                    bail!("probe `{text}`: one IBS fetch period per program (the PMU takes one event)");
                }
                fetch = Some(*period);
            }
            Probe::Begin | Probe::End | Probe::Tick { .. } => {}
        }
    }
    for (is_op, period) in [(true, op), (false, fetch)] {
        let Some(period) = period else { continue };
        use culprit_collect::ibs::{self as cibs, IbsHost, IbsRequest};
        let req = IbsRequest {
            op: is_op,
            fetch: !is_op,
            period,
            // The provider's ibs-exec-N counts ops.
            count_ops: is_op,
            l3_miss_only: false,
            ldlat: None,
            rand: false,
        };
        let host = IbsHost::current(!args.all_cpus);
        specs.extend(cibs::ibs_specs(
            &culprit_collect::sysfs::Sysfs::system(),
            &req,
            &host,
        )?);
    }
    let target = if let Some(p) = &args.pid {
        if !args.command.is_empty() {
            bail!("-p attaches to running processes: give no command");
        }
        let pids = p
            .split(',')
            .map(|x| {
                x.trim()
                    .parse::<i32>()
                    .ok()
                    .filter(|&n| n > 0)
                    .with_context(|| format!("-p: `{x}` is not a process id"))
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        Target::Pids(pids)
    } else if args.all_cpus {
        Target::System((!args.command.is_empty()).then(|| args.command.clone()))
    } else if args.command.is_empty() {
        bail!("nothing to trace: give -i PERF.DATA, -p PID, -a, or a command after --");
    } else {
        Target::Command(args.command.clone())
    };
    Ok(RecordOptions {
        events: specs,
        rate: None,
        call_graph: CallGraph::None,
        target,
        cpus: None,
        // Replaced by the live stream.
        output: record::Output::File(PathBuf::new()),
        mmap_pages: args.mmap_pages,
        cmdline: std::env::args().collect(),
        tool_version: format!("culprit {}", env!("CARGO_PKG_VERSION")),
        stop: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_glob_match_whole_names() {
        assert!(glob_match(b"ls_*", b"ls_any_fills_from_sys.all"));
        assert!(glob_match(b"*-clock", b"cpu-clock"));
        assert!(glob_match(b"t?sk-clock", b"task-clock"));
        assert!(!glob_match(b"ls_*", b"xls_a"));
        assert!(!glob_match(b"cpu-clock?", b"cpu-clock"));
        assert!(glob_match(b"*", b""));
    }

    #[test]
    fn test_expand_event_glob_software_names() {
        let v = expand_event_glob("*-clock").unwrap();
        assert!(v.contains(&"cpu-clock".to_string()), "{v:?}");
        assert!(v.contains(&"task-clock".to_string()), "{v:?}");
        assert!(v.iter().all(|n| n.ends_with("-clock")), "{v:?}");
        let e = expand_event_glob("no_such_event_*")
            .unwrap_err()
            .to_string();
        assert!(e.contains("matches no event"), "{e}");
        let e = expand_event_glob("*").unwrap_err().to_string();
        assert!(e.contains("narrow the pattern"), "{e}");
    }
}
