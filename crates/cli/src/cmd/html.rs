//! `culprit html`: the offline HTML report of a perf.data file (docs/html.md): one
//! self-contained page with the summary, hot functions, flame graph and icicle, caller and
//! callee trees, annotations, Top-Down and IBS tables, and the diff against another file.
//! The page is `culprit_export::html`'s. Exit status as `culprit report`: 0 on success, 1 when
//! the input is truncated (what was read is shown), 2 on errors.

use std::path::PathBuf;
use std::process::ExitCode;

use culprit_export::html::HtmlOptions;

use crate::args::InputArgs;
use crate::cmd::export::SummaryArg;
use culprit_verbs::export::Destination;

/// Arguments of `culprit html`.
#[derive(clap::Args, Debug)]
#[command(
    about = "Offline HTML report: hot functions, flame graph, call trees, annotate, diff",
    after_help = crate::help::layout("EXAMPLES:\n  culprit html -i perf.data -o report.html\n  culprit html -i before.data --diff after.data -o diff.html\n  culprit html -e cpu-clock --annotate-top 10 -o report.html --summary json\n\nOne file, no network: open it in any browser. What each view shows and its limits: docs/html.md.")
)]
pub struct HtmlArgs {
    /// The input file (the baseline with --diff) and where its symbols are found.
    #[command(flatten)]
    pub input: InputArgs,
    /// Output HTML file (`-`: stdout).
    #[arg(
        short = 'o',
        long = "output",
        value_name = "FILE",
        default_value = "report.html"
    )]
    pub output: PathBuf,
    /// Also show the diff of OTHER against the input (as `culprit diff INPUT OTHER`).
    #[arg(long = "diff", value_name = "OTHER")]
    pub diff: Option<PathBuf>,
    /// Only these events (comma-separated names as in the file); default: all.
    #[arg(
        short = 'e',
        long = "event",
        value_name = "EVENT",
        value_delimiter = ','
    )]
    pub event: Vec<String>,
    /// Annotate the N hottest functions (by the first event's samples); 0: none.
    #[arg(long = "annotate-top", value_name = "N", default_value_t = 30)]
    pub annotate_top: usize,
    /// Keep the top N functions of each event in the table (and the top N rows of each
    /// event in the diff).
    #[arg(long = "rows", value_name = "N", default_value_t = 500)]
    pub rows: usize,
    /// Print what was written: `text` (stderr), `json` (stdout;
    /// docs/schemas/html.schema.json) or `none`.
    #[arg(long, value_enum, default_value_t)]
    pub summary: SummaryArg,
    /// Do not unwind the sampled user stacks of `--call-graph dwarf` recordings.
    #[arg(long = "no-unwind")]
    pub no_unwind: bool,
}

/// Runs `culprit html`.
pub fn run(args: HtmlArgs) -> anyhow::Result<ExitCode> {
    let to_stdout = args.output.as_os_str() == "-";
    if to_stdout && args.summary == SummaryArg::Json {
        anyhow::bail!("--summary json prints on stdout: give the page a file with -o");
    }
    let input = args.input.open();
    let other = args.diff.as_ref().map(|p| {
        let mut other = args.input.clone();
        other.input = Some(p.clone());
        other.open()
    });
    let opts = HtmlOptions {
        events: args.event.clone(),
        unwind: !args.no_unwind,
        annotate_top: args.annotate_top,
        table_rows: args.rows,
        diff_rows: args.rows,
        ..HtmlOptions::default()
    };
    culprit_verbs::html::run(
        &input,
        other.as_ref(),
        &opts,
        &Destination::of(Some(&args.output)),
        args.summary.into(),
    )
}
