//! `culprit flamegraph`: a flame graph (SVG, drawn by inferno) of one event of a perf.data
//! file, or the differential flame graph of two files (`--diff`); docs/export.md#flamegraph.
//! Exit status as `culprit report`: 0 on success, 1 when an input is truncated (what was read
//! is drawn), 2 on errors.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use culprit_analysis::stacks::StackOptions;
use culprit_analysis::Filters;
use culprit_export::flamegraph::{Colors, FlameGraphOptions};
use culprit_export::FoldedOptions;

use crate::args::InputArgs;
use culprit_verbs::export::Destination;

/// Arguments of `culprit flamegraph`.
#[derive(clap::Args, Debug)]
#[command(
    about = "Flame graph (SVG) of a perf.data file, or the differential graph of two",
    after_help = crate::help::layout("EXAMPLES:\n  culprit flamegraph -i perf.data -o flame.svg\n  culprit flamegraph -e cycles --inverted -o icicle.svg\n  culprit flamegraph -i before.data --diff after.data -o diff.svg   red grew, blue shrank\n\nOpen the SVG in a browser: click to zoom, Ctrl-F to search. Colours and limits: docs/export.md#flamegraph.")
)]
pub struct FlameGraphArgs {
    /// The input file (the baseline with --diff) and where its symbols are found.
    #[command(flatten)]
    pub input: InputArgs,
    /// Output SVG file (`-`: stdout, the default).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// The event to draw (a name as in the file); default the first event sampled.
    #[arg(short = 'e', long = "event", value_name = "EVENT")]
    pub event: Option<String>,
    /// Icicle graph: roots at the top, stacks growing down.
    #[arg(long)]
    pub inverted: bool,
    /// Differential flame graph: OTHER's stacks coloured by their change of share from the
    /// input (red grew, blue shrank).
    #[arg(long = "diff", value_name = "OTHER")]
    pub diff: Option<PathBuf>,
    /// Colours: dso (kernel orange, the programs red-yellow, one hue per library; the
    /// default) or one of inferno's palettes (hot, mem, io, red, green, blue, aqua, yellow,
    /// purple, orange, java, js, perl, python, rust, wakeup).
    #[arg(long = "colors", value_name = "SCHEME", default_value = "dso")]
    pub colors: String,
    /// Weigh frames by samples, not periods.
    #[arg(long = "count-samples")]
    pub count_samples: bool,
    /// The graph's title.
    #[arg(long, value_name = "TEXT")]
    pub title: Option<String>,
    /// Image width in pixels (default: the window's).
    #[arg(long, value_name = "PX")]
    pub width: Option<usize>,
    /// Append the process id to the command frame (`comm-PID`).
    #[arg(long)]
    pub pid: bool,
    /// Append process and thread ids to the command frame (`comm-PID/TID`).
    #[arg(long)]
    pub tid: bool,
    /// Name frames without a symbol by their address.
    #[arg(long)]
    pub addrs: bool,
    /// Draw inlined functions as frames of their own (DWARF).
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
    /// Do not unwind the sampled user stacks of `--call-graph dwarf` recordings.
    #[arg(long = "no-unwind")]
    pub no_unwind: bool,
}

/// Runs `culprit flamegraph`.
pub fn run(args: FlameGraphArgs) -> anyhow::Result<ExitCode> {
    let colors = Colors::parse(&args.colors)
        .map_err(anyhow::Error::msg)
        .context("error parsing flag --colors")?;
    let stacks = StackOptions {
        events: args.event.iter().cloned().collect(),
        inline: args.inline,
        filters: Filters {
            pids: args.pids.clone(),
            tids: args.tids.clone(),
            comms: args.comms.clone(),
            dsos: Vec::new(),
        },
        unwind: !args.no_unwind,
        ..StackOptions::default()
    };
    let opts = FlameGraphOptions {
        event: args.event.clone(),
        folded: FoldedOptions {
            pid: args.pid,
            tid: args.tid,
            addrs: args.addrs,
            ..FoldedOptions::default()
        },
        samples: args.count_samples,
        inverted: args.inverted,
        colors,
        title: args.title.clone(),
        width: args.width,
    };
    let input = args.input.open();
    let other = args.diff.as_ref().map(|p| {
        let mut other = args.input.clone();
        other.input = Some(p.clone());
        other.open()
    });
    culprit_verbs::flamegraph::run(
        &input,
        other.as_ref(),
        &stacks,
        &opts,
        &Destination::of(args.output.as_deref()),
    )
}
