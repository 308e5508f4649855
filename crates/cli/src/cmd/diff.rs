//! `culprit diff`: the difference of two perf.data files (perf diff): per event, each row's
//! baseline share, its Delta and Ratio in the other file, new and vanished rows, sorted by
//! the absolute Delta; as text, JSON (docs/schemas/diff.schema.json) or CSV. The numbers are
//! `culprit_analysis::diff`'s, over the two files' hotspots (docs/diff.md).
//!
//! Exit status: 0 on success; 1 when an input is truncated or corrupt (the diff of what was
//! read is still printed); 2 when a file cannot be read or an argument is wrong.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use culprit_analysis::diff::{DiffOptions, DEFAULT_KEYS};
use culprit_analysis::SortKey;
use culprit_symbols::ProfileInput;

use crate::args::{InputArgs, KernelSymbolArgs, OutputArgs};

/// Arguments of `culprit diff`.
#[derive(clap::Args, Debug)]
#[command(
    about = "Difference of two perf.data files (perf diff): baseline share, delta and ratio per row",
    after_help = crate::help::layout("EXAMPLES:\n  culprit diff                                perf.data.old (baseline) against perf.data\n  culprit diff before.data after.data\n  culprit diff a.data b.data --sort sym -e cpu-clock --format csv\n\nDelta = the row's share of the event total in the other file minus its share in the baseline\n(points, as perf diff); Ratio = other period / baseline period; rows by |Delta|.")
)]
pub struct DiffArgs {
    /// The baseline file and the file compared with it (default: perf.data.old perf.data).
    #[arg(value_name = "FILE", num_args = 0..=2)]
    pub files: Vec<PathBuf>,
    /// Sort (match) keys, comma-separated: comm, pid, tid, dso, sym, srcline, srcfile, ip,
    /// cpu (default dso,sym as perf diff). Rows match across files by these keys' names.
    #[arg(short = 's', long = "sort", value_name = "KEYS")]
    pub sort: Option<String>,
    /// Only these events (comma-separated names); default: every event both files have.
    #[arg(
        short = 'e',
        long = "event",
        value_name = "EVENT",
        value_delimiter = ','
    )]
    pub event: Vec<String>,
    /// The recorded kernel's symbols (`--kallsyms FILE`, `--vmlinux FILE`), for both files.
    #[command(flatten)]
    pub kernel: KernelSymbolArgs,
    /// Look every recorded file up under DIR first (both inputs).
    #[arg(long = "symfs", value_name = "DIR")]
    pub symfs: Option<PathBuf>,
    /// perf's build-id cache is DIR instead of ~/.debug (both inputs).
    #[arg(long = "debug-dir", value_name = "DIR")]
    pub debug_dir: Option<PathBuf>,
    /// Never ask the debuginfod servers of $DEBUGINFOD_URLS (see `culprit report --help`).
    #[arg(long = "no-debuginfod")]
    pub no_debuginfod: bool,
    /// Also draw the differential flame graph of the two files to FILE (SVG): the other
    /// file's stacks, red where a frame's share grew, blue where it shrank (its event: the
    /// first -e, else the first the other file sampled).
    #[arg(long = "flamegraph", value_name = "FILE")]
    pub flamegraph: Option<PathBuf>,
    /// --format text, json or csv (docs/diff.md), -o, --color, --width.
    #[command(flatten)]
    pub output: OutputArgs,
}

impl DiffArgs {
    /// The two inputs: baseline, other.
    fn inputs(&self) -> anyhow::Result<[ProfileInput; 2]> {
        let (a, b) = match self.files.as_slice() {
            [] => (PathBuf::from("perf.data.old"), PathBuf::from("perf.data")),
            [a, b] => (a.clone(), b.clone()),
            _ => anyhow::bail!(
                "culprit diff takes two files, the baseline and the other (or none: \
                 perf.data.old and perf.data)"
            ),
        };
        let open = |p: PathBuf| {
            InputArgs {
                input: Some(p),
                kernel: self.kernel.clone(),
                symfs: self.symfs.clone(),
                debug_dir: self.debug_dir.clone(),
                no_debuginfod: self.no_debuginfod,
            }
            .open()
        };
        Ok([open(a), open(b)])
    }
}

/// Runs `culprit diff`.
pub fn run(args: DiffArgs) -> anyhow::Result<ExitCode> {
    let keys = match &args.sort {
        Some(s) => SortKey::parse_list(s).context("error parsing flag --sort")?,
        None => DEFAULT_KEYS.to_vec(),
    };
    anyhow::ensure!(!keys.is_empty(), "--sort needs at least one key");
    let [baseline, other] = args.inputs()?;
    let diffed = culprit_verbs::diff::diff(&culprit_verbs::diff::DiffOptions {
        baseline,
        other,
        diff: DiffOptions {
            keys,
            events: args.event.clone(),
        },
        flamegraph: args.flamegraph.clone(),
    })?;
    args.output.render(&diffed)?;
    Ok(diffed.exit_status())
}
