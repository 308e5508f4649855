//! `culprit export`: a perf.data file in the format of another tool (docs/export.md). Exit
//! status as `culprit report`: 0 on success, 1 when the input is truncated (what was read is
//! still exported), 2 on errors.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use culprit_analysis::stacks::StackOptions;
use culprit_analysis::Filters;
use culprit_export::{ExportOptions, FoldedOptions, Format};

use crate::args::InputArgs;
use crate::progress::Progress;

/// The formats on the command line.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum FormatArg {
    /// Folded stacks (Brendan Gregg's collapsed format; equals perf script | inferno-collapse-perf).
    Folded,
    /// BOLT's pre-aggregated profile (perf2bolt -pa) of one binary, from LBR branch stacks or IBS ops.
    Bolt,
    /// AutoFDO: LLVM text sample profile (clang -fprofile-sample-use) of one binary, from LBR or IBS ops.
    Autofdo,
    /// pprof profile.proto, gzipped (go tool pprof, Parca, Pyroscope); binary: give -o.
    Pprof,
    /// Firefox Profiler processed profile JSON with symbols embedded (profiler.firefox.com).
    Firefox,
    /// speedscope JSON (speedscope.app), one sampled profile per thread and event.
    Speedscope,
    /// Chrome trace-event JSON: the samples over time (chrome://tracing, ui.perfetto.dev).
    Chrome,
}

impl From<FormatArg> for Format {
    fn from(f: FormatArg) -> Format {
        match f {
            FormatArg::Folded => Format::Folded,
            FormatArg::Bolt => Format::Bolt,
            FormatArg::Autofdo => Format::Autofdo,
            FormatArg::Pprof => Format::Pprof,
            FormatArg::Firefox => Format::Firefox,
            FormatArg::Speedscope => Format::Speedscope,
            FormatArg::Chrome => Format::Chrome,
        }
    }
}

/// How the export's summary is printed.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum SummaryArg {
    /// One line on stderr.
    #[default]
    Text,
    /// A JSON object on stdout (docs/schemas/export.schema.json); needs `-o FILE`.
    Json,
    /// Nothing.
    None,
}

/// Arguments of `culprit export`.
#[derive(clap::Args, Debug)]
#[command(
    about = "Export a perf.data file to folded stacks and other tools' formats",
    after_help = "EXAMPLES:\n  culprit export -i perf.data --format folded > out.folded\n  culprit export --format folded --pid -e cpu-clock -o out.folded --summary json\n  culprit export -i perf.data --format bolt --dso prog -o prog.preagg   (then perf2bolt -pa)\n  culprit export -i perf.data --format autofdo -o prog.afdo\n\nFormats and their limits: docs/export.md."
)]
pub struct ExportArgs {
    /// The input file and where its symbols are found.
    #[command(flatten)]
    pub input: InputArgs,
    /// The format to write.
    #[arg(short = 'f', long = "format", value_enum)]
    pub format: FormatArg,
    /// Output file (`-`: stdout, the default for text formats).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Events to export (names as in the file); single-event formats (folded) take one,
    /// default the first event sampled.
    #[arg(
        short = 'e',
        long = "event",
        value_name = "EVENT",
        value_delimiter = ','
    )]
    pub event: Vec<String>,
    /// Folded: append the process id to the command frame (`comm-PID`).
    #[arg(long)]
    pub pid: bool,
    /// Folded: append process and thread ids to the command frame (`comm-PID/TID`).
    #[arg(long)]
    pub tid: bool,
    /// Folded: suffix kernel frames with `_[k]`.
    #[arg(long)]
    pub kernel: bool,
    /// Folded: suffix JIT frames with `_[j]`.
    #[arg(long)]
    pub jit: bool,
    /// Folded: name frames without a symbol by their address.
    #[arg(long)]
    pub addrs: bool,
    /// Folded: weigh stacks by samples, not periods.
    #[arg(long = "count-samples")]
    pub count_samples: bool,
    /// Expand inlined functions into frames of their own (DWARF).
    #[arg(long)]
    pub inline: bool,
    /// Only samples of these process ids.
    #[arg(long = "pids", value_name = "PID", value_delimiter = ',')]
    pub pids: Vec<i32>,
    /// Only samples of these thread ids.
    #[arg(long = "tids", value_name = "TID", value_delimiter = ',')]
    pub tids: Vec<i32>,
    /// Only samples of these command names.
    #[arg(long = "comms", value_name = "COMM", value_delimiter = ',')]
    pub comms: Vec<String>,
    /// Print what was written: `text` (stderr), `json` (stdout; docs/schemas/export.schema.json) or `none`.
    #[arg(long, value_enum, default_value_t)]
    pub summary: SummaryArg,
    /// Do not unwind the sampled user stacks of `--call-graph dwarf` recordings.
    #[arg(long = "no-unwind")]
    pub no_unwind: bool,
    /// bolt, autofdo: the binary the profile is for (short name or path as recorded);
    /// default the ELF file with the most taken branches.
    #[arg(long, value_name = "DSO")]
    pub dso: Option<String>,
}

/// Runs `culprit export`.
pub fn run(args: ExportArgs) -> anyhow::Result<ExitCode> {
    let format = Format::from(args.format);
    let to_stdout = args.output.as_ref().is_none_or(|p| p.as_os_str() == "-");
    if to_stdout && args.summary == SummaryArg::Json {
        anyhow::bail!("--summary json prints on stdout: give the export a file with -o");
    }
    if to_stdout && format.is_binary() && std::io::stdout().is_terminal() {
        anyhow::bail!(
            "{} is a binary format: give a file with -o (or redirect stdout)",
            format.name()
        );
    }
    let input = args.input.open();
    let opts = ExportOptions {
        format,
        stacks: StackOptions {
            events: args.event.clone(),
            inline: args.inline,
            filters: Filters {
                pids: args.pids.clone(),
                tids: args.tids.clone(),
                comms: args.comms.clone(),
                dsos: Vec::new(),
            },
            unwind: !args.no_unwind,
            ..StackOptions::default()
        },
        event: args.event.first().cloned(),
        folded: FoldedOptions {
            pid: args.pid,
            tid: args.tid,
            annotate_kernel: args.kernel,
            annotate_jit: args.jit,
            addrs: args.addrs,
            count_samples: args.count_samples,
        },
        dso: args.dso.clone(),
    };
    let progress = Progress::for_input(&input);
    let summary = match &args.output {
        Some(path) if path.as_os_str() != "-" => {
            let file = std::fs::File::create(path)
                .with_context(|| format!("cannot create {}", path.display()))?;
            let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
            let summary = culprit_export::export(&input, &opts, &mut out, progress.callback())?;
            out.flush()
                .with_context(|| format!("cannot write {}", path.display()))?;
            summary
        }
        _ => {
            let stdout = std::io::stdout();
            let mut out = std::io::BufWriter::with_capacity(1 << 20, stdout.lock());
            let summary = culprit_export::export(&input, &opts, &mut out, progress.callback())?;
            out.flush()?;
            summary
        }
    };
    progress.finish();
    for w in &summary.warnings {
        eprintln!("warning: {}", culprit_output::text::escape(w));
    }
    if let Some(stop) = &summary.stopped {
        eprintln!(
            "warning: {}: reading stopped at byte {} after {} records ({}); what was read is exported",
            culprit_output::text::escape(&summary.input),
            stop.offset,
            stop.records_read,
            culprit_output::text::escape(&stop.reason)
        );
    }
    match args.summary {
        SummaryArg::Json => {
            let stdout = std::io::stdout();
            let mut out = stdout.lock();
            culprit_output::json::write(&mut out, &summary)?;
        }
        SummaryArg::Text => {
            let events = if summary.exported_events.is_empty() {
                "no samples".to_string()
            } else {
                summary.exported_events.join(",")
            };
            eprintln!(
                "exported {} samples ({}) as {}: {} records, {}",
                summary.samples,
                culprit_output::text::escape(&events),
                summary.format,
                summary.records,
                culprit_output::units::human_bytes(summary.bytes)
            );
        }
        SummaryArg::None => {}
    }
    Ok(if summary.stopped.is_some() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
