//! `culprit record`: flags (perf's spellings) → `culprit_collect::record::RecordOptions`
//! (the flags' values read by `culprit_verbs::record::flags`), then one call into
//! `culprit_verbs::record::run`, which records and prints the end-of-run summary (text on
//! stderr, or JSON on stdout with `--format json`; on stderr when the recording itself goes
//! to stdout with `-o -`) and gives the exit status (documented there). The presets of
//! `sched record` and `lock record` run `record` with their own flags ([`run_preset`]).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::bail;
use culprit_collect::record::{self, Output, RecordOptions, StreamOutput};
use culprit_verbs::record::flags::{self, IbsFlags, ModeFlags};
use culprit_verbs::record::{RunOptions, SummaryFormat};

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

/// The recording modes' flags, as given.
fn mode_flags(args: &RecordArgs) -> ModeFlags {
    ModeFlags {
        z: args.z,
        compression_level: args.compression_level,
        duration: args.duration,
        max_size: args.max_size.clone(),
        switch_output: args.switch_output.clone(),
        switch_max_files: args.switch_max_files,
        overwrite: args.overwrite,
    }
}

/// `--ibs` and its companion flags, as given.
fn ibs_flags(args: &RecordArgs) -> Option<IbsFlags> {
    Some(IbsFlags {
        kinds: args.ibs.clone()?,
        period: args.ibs_period,
        count: args.ibs_count.clone(),
        l3_miss_only: args.l3_miss_only,
        ldlat: args.ldlat,
        rand: args.rand,
    })
}

/// Turns the flags into recording options (no side effects besides reading sysfs for events).
pub fn options(args: &RecordArgs) -> anyhow::Result<RecordOptions> {
    // First: a command read as --switch-output's value is the mistake to name.
    let modes = flags::modes(&mode_flags(args))?;
    let ibs = ibs_flags(args);
    let mut specs = flags::event_specs(&args.events, ibs.as_ref(), args.target.all_cpus)?;
    if args.topdown {
        specs = culprit_verbs::stat::topdown::sampling_specs()?;
    }
    let rate = crate::args::sample_rate(args.count, args.freq)?;
    let call_graph = flags::call_graph(args.g, args.call_graph.as_deref())?;
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
        off_cpu_wakers: flags::off_cpu_wakers(args.off_cpu.as_deref())?,
        context_switches: args.latency,
        modes,
    })
}

/// Runs `culprit record`.
pub fn run(args: RecordArgs) -> anyhow::Result<ExitCode> {
    culprit_verbs::record::begin(args.verbose);
    OutputArgs {
        format: args.format,
        output: None,
        color: ColorArg::Auto,
        width: None,
        no_pager: true,
    }
    .require("record's summary", &[Format::Text, Format::Json])?;
    culprit_verbs::record::run(RunOptions {
        record: options(&args)?,
        quiet: args.quiet,
        format: match args.format {
            Format::Json => SummaryFormat::Json,
            _ => SummaryFormat::Text,
        },
        buildid_cache: !args.no_buildid_cache,
        buildid_dir: args.buildid_dir,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use culprit_collect::modes::{self, RecordModes};
    use culprit_collect::record::CallGraph;
    use std::time::Duration;

    fn modes(args: &RecordArgs) -> anyhow::Result<RecordModes> {
        flags::modes(&mode_flags(args))
    }

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
            flags::call_graph(a.g, a.call_graph.as_deref()).unwrap(),
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
        let a = parse(&["-g", "prog"]).unwrap();
        assert_eq!(options(&a).unwrap().call_graph, CallGraph::Fp);
        let a = parse(&["--call-graph", "lbr", "prog"]).unwrap();
        assert!(options(&a).is_err());
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
