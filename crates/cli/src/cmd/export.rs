//! `culprit export`: a perf.data file in the format of another tool (docs/export.md).

use std::path::PathBuf;
use std::process::ExitCode;

use culprit_analysis::Filters;
use culprit_export::pgo::PgoFormat;

use crate::args::InputArgs;

/// The formats on the command line.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum FormatArg {
    /// BOLT's pre-aggregated profile (perf2bolt -pa) from LBR branch stacks or IBS ops.
    Bolt,
    /// AutoFDO / LLVM text sample profile (clang -fprofile-sample-use) from LBR or IBS ops.
    Autofdo,
}

/// How the export's summary is printed.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum SummaryArg {
    /// One line on stderr.
    #[default]
    Text,
    /// A JSON object on stdout; needs `-o FILE`.
    Json,
    /// Nothing.
    None,
}

/// Arguments of `culprit export`.
#[derive(clap::Args, Debug)]
#[command(
    about = "Export a perf.data file to other tools' formats",
    after_help = "EXAMPLES:\n  culprit export -i perf.data --format bolt -o perf.preagg\n  culprit export -i perf.data --format autofdo --dso prog -o prog.afdo\n\nFormats and their limits: docs/export.md."
)]
pub struct ExportArgs {
    /// The input file and where its symbols are found.
    #[command(flatten)]
    pub input: InputArgs,
    /// The format to write.
    #[arg(short = 'f', long = "format", value_enum)]
    pub format: FormatArg,
    /// Output file (`-`: stdout, the default).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Events to export (names as in the file).
    #[arg(
        short = 'e',
        long = "event",
        value_name = "EVENT",
        value_delimiter = ','
    )]
    pub event: Vec<String>,
    /// bolt, autofdo: the binary the profile is for (short name or path); default the ELF
    /// file with the most taken branches.
    #[arg(long, value_name = "DSO")]
    pub dso: Option<String>,
    /// Only samples of these process ids.
    #[arg(long = "pids", value_name = "PID", value_delimiter = ',')]
    pub pids: Vec<i32>,
    /// Only samples of these thread ids.
    #[arg(long = "tids", value_name = "TID", value_delimiter = ',')]
    pub tids: Vec<i32>,
    /// Only samples of these command names.
    #[arg(long = "comms", value_name = "COMM", value_delimiter = ',')]
    pub comms: Vec<String>,
    /// Print what was written: `text` (stderr), `json` (stdout) or `none`.
    #[arg(long, value_enum, default_value_t)]
    pub summary: SummaryArg,
}

/// Runs `culprit export`.
pub fn run(args: ExportArgs) -> anyhow::Result<ExitCode> {
    let format = match args.format {
        FormatArg::Bolt => PgoFormat::Bolt,
        FormatArg::Autofdo => PgoFormat::Autofdo,
    };
    super::export_pgo::run(super::export_pgo::PgoArgs {
        input: &args.input,
        format,
        output: args.output.as_deref(),
        events: &args.event,
        dso: args.dso.as_deref(),
        filters: Filters {
            pids: args.pids.clone(),
            tids: args.tids.clone(),
            comms: args.comms.clone(),
            dsos: Vec::new(),
        },
        json_summary: args.summary == SummaryArg::Json,
        quiet: args.summary == SummaryArg::None,
    })
}
