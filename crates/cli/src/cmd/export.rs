//! `culprit export`: a perf.data file in the format of another tool (docs/export.md). Exit
//! status as `culprit report`: 0 on success, 1 when the input is truncated (what was read is
//! still exported), 2 on errors.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use culprit_analysis::stacks::StackOptions;
use culprit_analysis::Filters;
use culprit_export::{ExportOptions, FoldedOptions, Format};

use crate::args::MultiInputArgs;
use culprit_verbs::export::{self, Destination, SummaryMode};

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
    /// Parquet tables, one row per sample, into the directory -o DIR (Spark, DataFusion,
    /// DuckDB, Trino; docs/fleet.md); several -i files go into the same directory.
    Parquet,
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
            FormatArg::Parquet => Format::Parquet,
        }
    }
}

/// How the export's summary is printed (`culprit_verbs::export::SummaryMode`).
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

impl From<SummaryArg> for SummaryMode {
    fn from(s: SummaryArg) -> SummaryMode {
        match s {
            SummaryArg::Text => SummaryMode::Text,
            SummaryArg::Json => SummaryMode::Json,
            SummaryArg::None => SummaryMode::None,
        }
    }
}

/// Arguments of `culprit export`.
#[derive(clap::Args, Debug)]
#[command(
    about = "Export a perf.data file to folded stacks and other tools' formats",
    after_help = crate::help::layout("EXAMPLES:\n  culprit export -i perf.data --format folded > out.folded\n  culprit export --format folded --pid -e cpu-clock -o out.folded --summary json\n  culprit export -i perf.data --format bolt --dso prog -o prog.preagg   (then perf2bolt -pa)\n  culprit export -i perf.data --format autofdo -o prog.afdo\n  culprit export --format parquet -i a.data -i b.data -o fleet/ --host web-17\n\nFormats and their limits: docs/export.md.")
)]
pub struct ExportArgs {
    /// The input file (parquet: files, `-i` repeated) and where its symbols are found.
    #[command(flatten)]
    pub input: MultiInputArgs,
    /// The format to write.
    #[arg(short = 'f', long = "format", value_enum)]
    pub format: FormatArg,
    /// Output file (`-`: stdout, the default for text formats); parquet: the directory.
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
    /// parquet: the host name of the rows (default: the host the file was recorded on).
    #[arg(long, value_name = "NAME")]
    pub host: Option<String>,
    /// parquet: rows per row group.
    #[arg(long = "row-group-rows", value_name = "N", default_value_t = culprit_export::parquet::DEFAULT_ROW_GROUP_ROWS)]
    pub row_group_rows: usize,
    /// parquet: sample rows per file; a bigger input continues in FILE_ID-1.parquet, ….
    #[arg(long = "file-rows", value_name = "N", default_value_t = culprit_export::parquet::DEFAULT_FILE_ROWS)]
    pub file_rows: u64,
}

/// Options of the formats that are not parquet's.
fn check_single_input(args: &ExportArgs, format: Format) -> anyhow::Result<()> {
    if format != Format::Parquet {
        if args.input.inputs.len() > 1 {
            anyhow::bail!(
                "{} takes one input (-i given {} times); only parquet exports several files",
                format.name(),
                args.input.inputs.len()
            );
        }
        for (flag, given) in [
            ("--host", args.host.is_some()),
            (
                "--row-group-rows",
                args.row_group_rows != culprit_export::parquet::DEFAULT_ROW_GROUP_ROWS,
            ),
            (
                "--file-rows",
                args.file_rows != culprit_export::parquet::DEFAULT_FILE_ROWS,
            ),
        ] {
            if given {
                anyhow::bail!("{flag} is for --format parquet");
            }
        }
    }
    Ok(())
}

/// Runs `culprit export`.
pub fn run(args: ExportArgs) -> anyhow::Result<ExitCode> {
    let format = Format::from(args.format);
    check_single_input(&args, format)?;
    if format == Format::Parquet {
        return run_parquet(&args);
    }
    let to = Destination::of(args.output.as_deref());
    if to == Destination::Stdout && args.summary == SummaryArg::Json {
        anyhow::bail!("--summary json prints on stdout: give the export a file with -o");
    }
    if to == Destination::Stdout && format.is_binary() && std::io::stdout().is_terminal() {
        anyhow::bail!(
            "{} is a binary format: give a file with -o (or redirect stdout)",
            format.name()
        );
    }
    let opts = ExportOptions {
        format,
        stacks: stack_options(&args),
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
    let input = args.input.open().remove(0);
    export::export(&input, &opts, &to, args.summary.into())
}

/// Which samples, events and frames the stack model keeps.
fn stack_options(args: &ExportArgs) -> StackOptions {
    StackOptions {
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
    }
}

/// `--format parquet`: every input into the directory `-o DIR`.
fn run_parquet(args: &ExportArgs) -> anyhow::Result<ExitCode> {
    let Some(dir) = args.output.as_ref().filter(|p| p.as_os_str() != "-") else {
        anyhow::bail!("parquet writes a directory of tables: give it with -o DIR");
    };
    if dir.exists() && !dir.is_dir() {
        anyhow::bail!(
            "{} is not a directory (parquet writes a directory of tables)",
            dir.display()
        );
    }
    if args
        .input
        .paths()
        .iter()
        .filter(|p| p.as_os_str() == "-")
        .count()
        > 1
    {
        anyhow::bail!("stdin (-i -) can be read once");
    }
    if args.row_group_rows == 0 || args.file_rows == 0 {
        anyhow::bail!("--row-group-rows and --file-rows must be at least 1");
    }
    let opts = culprit_export::parquet::ParquetOptions {
        stacks: stack_options(args),
        host: args.host.clone(),
        row_group_rows: args.row_group_rows,
        file_rows: args.file_rows,
    };
    export::export_parquet(&args.input.open(), dir, &opts, args.summary.into())
}
