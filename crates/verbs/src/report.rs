//! `culprit report`: the hotspot report of one perf.data file (culprit's or perf's), and its
//! other modes: several inputs or Parquet exports merged into one report (`fleet`),
//! perf's branch mode (`branch`), the latency report (`latency`) and the paired-sampling
//! offenders (`offenders`).
//!
//! [`run`] reads, symbolizes and computes; what it returns is rendered by the caller
//! through the render contract ([`Render`]), between [`Report::warnings`] (said first, on
//! stderr) and [`Report::finish`] (what the report could not cover, and the exit status).
//! The formats are documented in docs/report.md and docs/schemas/report.schema.json. Exit
//! status: 0 on success; 1 when an input is truncated or corrupt (the report of what was
//! read is still printed, and stderr says where reading stopped); errors (2) are `Err`.

mod branch;
mod fleet;
mod hotspots;
mod latency;
mod offenders;

use std::io;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use culprit_analysis::branches::{branch_csv_table, branch_document, branch_json, BranchReport};
use culprit_analysis::fleet::FleetReport;
use culprit_analysis::hotspots::{csv_table, json_report, DocOptions, Hotspots, Layout};
use culprit_analysis::offenders::report::OffendersReport;
use culprit_analysis::offenders::Settings;
use culprit_analysis::parallelism::{LatencyJson, LatencyReport, LATENCY_SCHEMA};
use culprit_analysis::time_window::TimeWindow;
use culprit_analysis::topdown::{SampledReport, TopdownError};
use culprit_analysis::{CallGraphMode, Filters, SortKey};
use culprit_decode::model::Profile;
use culprit_output::{Document, Note, Render, Table};
use culprit_symbols::ProfileInput;

/// The `--sort` default of the hotspot report; the branch mode then uses perf's branch
/// default, and the offenders (per address, no keys) take it for "not given".
pub const DEFAULT_SORT: &str = "comm,dso,sym";

/// The format the report will be rendered in: it decides the text layout (one table per
/// event) and which formats a mode refuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    /// Aligned text.
    #[default]
    Text,
    /// JSON.
    Json,
    /// CSV.
    Csv,
}

/// What to report, and how (the flags of `culprit report`).
#[derive(Debug, Clone)]
pub struct ReportOptions {
    /// The inputs, with where their symbols are found: one for the report of one file
    /// (only the first is read then), several for one report of them all. Empty: the
    /// report of `perf.data` with default symbol options.
    pub inputs: Vec<ProfileInput>,
    /// `culprit export --format parquet` directories to report instead of `inputs`.
    pub from_parquet: Vec<PathBuf>,
    /// The sort (group) keys as given, comma-separated ([`DEFAULT_SORT`]: not given).
    pub sort: String,
    /// Only these events (names as in the file; empty: all).
    pub events: Vec<String>,
    /// Children (inclusive) percentages: `Some(true)` asked, `Some(false)` refused,
    /// `None`: when the file has call chains.
    pub children: Option<bool>,
    /// The call graph under each row (`None`: not asked; `Some(CallGraphMode::None)`:
    /// asked for none).
    pub call_graph: Option<CallGraphMode>,
    /// Show at most this many rows.
    pub top: Option<usize>,
    /// Hide rows below this percentage.
    pub percent_limit: f64,
    /// Which samples count (pids, tids, comms; dsos: which rows).
    pub filters: Filters,
    /// Only samples timed in this window (the hotspot report of one file only).
    pub time: Option<TimeWindow>,
    /// Also show each row's de-skidded self share.
    pub deskid: bool,
    /// One `[unknown]` row per address instead of one per DSO.
    pub unknown_per_address: bool,
    /// Sort the rows by this event's values.
    pub sort_event: Option<String>,
    /// Several events side by side in one table instead of one table per event.
    pub group: bool,
    /// The format the report will be rendered in.
    pub format: Format,
    /// The per-function Top-Down view of the hotspot report.
    pub topdown: bool,
    /// The paired-sampling offenders instead of hotspots.
    pub offenders: bool,
    /// The offenders' thresholds and unit.
    pub offender_settings: Settings,
    /// The offenders: also build the exact per-address histogram and compare.
    pub exact: bool,
    /// Do not unwind the sampled user stacks of `--call-graph dwarf` recordings.
    pub no_unwind: bool,
    /// perf's branch mode: each branch-stack entry counts as one sample.
    pub branch: bool,
    /// The latency-centric report (also chosen by `--sort latency|parallelism` or
    /// `parallelism`).
    pub latency: bool,
    /// Only samples taken while this many recorded threads ran (`1`, `1-2`, `1,4-8`).
    pub parallelism: Option<String>,
}

impl Default for ReportOptions {
    fn default() -> ReportOptions {
        ReportOptions {
            inputs: Vec::new(),
            from_parquet: Vec::new(),
            sort: DEFAULT_SORT.to_string(),
            events: Vec::new(),
            children: None,
            call_graph: None,
            top: None,
            percent_limit: 0.0,
            filters: Filters::default(),
            time: None,
            deskid: false,
            unknown_per_address: false,
            sort_event: None,
            group: false,
            format: Format::Text,
            topdown: false,
            offenders: false,
            offender_settings: Settings::default(),
            exact: false,
            no_unwind: false,
            branch: false,
            latency: false,
            parallelism: None,
        }
    }
}

impl ReportOptions {
    /// The input of the one-file modes: the first (`perf.data` when none is given).
    fn first_input(&self) -> ProfileInput {
        self.inputs.first().cloned().unwrap_or_else(|| {
            ProfileInput::new("perf.data", culprit_symbols::SymbolizerOptions::default())
        })
    }

    /// Whether the report is over several inputs or Parquet exports.
    fn many(&self) -> bool {
        self.inputs.len() > 1 || !self.from_parquet.is_empty()
    }

    /// The text layout of several events.
    fn layout(&self) -> Layout {
        if self.group {
            Layout::Group
        } else {
            Layout::PerEvent
        }
    }

    /// Whether user stacks of DWARF recordings are unwound (not with `-g none`).
    fn unwind(&self) -> bool {
        !self.no_unwind && self.call_graph != Some(CallGraphMode::None)
    }
}

/// A finished report: the warnings to say first, the report to render, and what to say
/// after it.
pub struct Report {
    /// Said on stderr before the report (JSON also carries the hotspot reports').
    warnings: Vec<Note>,
    /// The report.
    view: View,
    /// Said on stderr after the report.
    after: Vec<Note>,
    /// Where reading stopped, when it did.
    stopped: Option<Stopped>,
}

/// The report of each mode.
enum View {
    /// The hotspot report of one file.
    Hotspots {
        report: Hotspots,
        profile: Profile,
        file: String,
        layout: Layout,
    },
    /// Its Top-Down view, or why there is none (an error once the output is opened, as
    /// the report's).
    Topdown {
        report: Result<SampledReport, TopdownError>,
        keys: Vec<SortKey>,
    },
    /// The branch mode.
    Branch {
        report: BranchReport,
        profile: Profile,
        file: String,
        layout: Layout,
    },
    /// Several inputs merged.
    Fleet { report: FleetReport, layout: Layout },
    /// The latency report.
    Latency {
        report: LatencyReport,
        by_latency: bool,
        file: String,
    },
    /// The offenders.
    Offenders(OffendersReport),
}

/// Where reading an input stopped (a truncated or corrupt file).
struct Stopped {
    path: String,
    description: String,
    outcome: String,
}

/// Runs `culprit report` in the mode the options choose: several inputs (or Parquet
/// exports), `offenders`, the latency report, `branch`, or the hotspot report of one file.
pub fn run(opts: &ReportOptions) -> anyhow::Result<Report> {
    let other_modes = [
        (opts.many(), "several inputs"),
        (opts.offenders, "--offenders"),
        (opts.branch, "--branch"),
    ];
    if let Some((_, what)) = other_modes.iter().find(|m| m.0 && opts.time.is_some()) {
        anyhow::bail!("--time filters the hotspot report of one file: not {what}");
    }
    if opts.many() {
        let what = [
            (opts.offenders, "--offenders"),
            (opts.branch, "--branch"),
            (opts.topdown, "--topdown"),
        ];
        if let Some((_, flag)) = what.iter().find(|w| w.0) {
            anyhow::bail!(
                "{flag} reads one perf.data file: give a single -i (several inputs and \
                 --from-parquet make hotspot reports)"
            );
        }
        return fleet::run(opts);
    }
    if opts.offenders {
        return offenders::run(opts);
    }
    if latency::wanted(opts) {
        return latency::run(opts);
    }
    if opts.branch {
        return branch::run(opts);
    }
    hotspots::run(opts)
}

impl Report {
    /// The warnings to say on stderr before the report (`culprit: warning: …`).
    pub fn warnings(&self) -> &[Note] {
        &self.warnings
    }

    /// Once the report is rendered: says on stderr what it could not cover (where reading
    /// an input stopped, inputs not read) and gives the exit status (1 then, else 0). Fails
    /// with the reason a requested view could not be made (`--topdown` of a file without
    /// Top-Down events).
    pub fn finish(self) -> anyhow::Result<ExitCode> {
        if let View::Topdown { report: Err(e), .. } = self.view {
            return Err(anyhow::Error::new(e).context("--topdown"));
        }
        culprit_output::text::write_notes(&mut io::stderr().lock(), &self.after, false)?;
        if let View::Fleet { report, .. } = &self.view {
            return Ok(fleet::finish(report));
        }
        Ok(match &self.stopped {
            Some(s) => crate::stopped::report(&s.path, &s.description, &s.outcome),
            None => ExitCode::SUCCESS,
        })
    }

    /// The warnings' texts, as JSON carries them.
    fn warning_texts(&self) -> Vec<String> {
        self.warnings.iter().map(|n| n.text.clone()).collect()
    }
}

impl Render for Report {
    fn document(&self) -> Document {
        match &self.view {
            View::Hotspots {
                report,
                profile,
                file,
                layout,
            } => culprit_analysis::hotspots::document(
                report,
                profile,
                &DocOptions {
                    file: file.clone(),
                    layout: *layout,
                },
            ),
            View::Topdown {
                report: Ok(td),
                keys,
            } => td.document(keys),
            View::Topdown { report: Err(_), .. } => Document::new(),
            View::Branch {
                report,
                profile,
                file,
                layout,
            } => branch_document(
                report,
                profile,
                &DocOptions {
                    file: file.clone(),
                    layout: *layout,
                },
            ),
            View::Fleet { report, layout } => report.document(*layout),
            View::Latency {
                report, by_latency, ..
            } => report.document(*by_latency),
            View::Offenders(report) => report.document(),
        }
    }

    fn csv_tables(&self) -> Vec<Table> {
        match &self.view {
            View::Hotspots { report, .. } => vec![csv_table(report)],
            View::Branch { report, .. } => vec![branch_csv_table(report)],
            View::Fleet { report, .. } => vec![csv_table(&report.hotspots)],
            View::Latency {
                report, by_latency, ..
            } => vec![report.table(*by_latency)],
            View::Topdown { .. } | View::Offenders(_) => {
                self.document().tables().cloned().collect()
            }
        }
    }

    fn write_json(&self, out: &mut dyn io::Write) -> io::Result<()> {
        use culprit_output::json::write;
        match &self.view {
            View::Hotspots {
                report,
                profile,
                file,
                ..
            } => write(
                out,
                &json_report(report, profile, file, self.warning_texts()),
            ),
            View::Topdown { report: Ok(td), .. } => write(out, td),
            View::Topdown { report: Err(_), .. } => Ok(()),
            View::Branch {
                report,
                profile,
                file,
                ..
            } => write(
                out,
                &branch_json(report, profile, file, self.warning_texts()),
            ),
            View::Fleet { report, .. } => write(out, &report.json(report.warnings.clone())),
            View::Latency { report, file, .. } => write(
                out,
                &LatencyJson {
                    schema: LATENCY_SCHEMA,
                    input: file,
                    report,
                },
            ),
            View::Offenders(report) => write(out, report),
        }
    }
}

/// The stop of a one-file report: `outcome` says what the report covers.
fn stopped(profile: &Profile, path: &str, outcome: String) -> Option<Stopped> {
    profile.stopped.as_ref().map(|stop| Stopped {
        path: path.to_string(),
        description: stop.describe(),
        outcome,
    })
}

/// The warnings of a one-file report: the reader's, then the symbolizer's.
fn read_warnings(profile: &Profile, symbolizer: &culprit_symbols::Symbolizer) -> Vec<Note> {
    profile
        .warnings
        .iter()
        .chain(symbolizer.warnings())
        .map(Note::warning)
        .collect()
}

/// The options of the hotspot report (one file, many inputs) from the report's (`children`
/// is decided once the input is read).
fn hotspot_options(opts: &ReportOptions) -> anyhow::Result<culprit_analysis::HotspotOptions> {
    let keys = SortKey::parse_list(&opts.sort).context("error parsing flag --sort")?;
    anyhow::ensure!(!keys.is_empty(), "--sort needs at least one key");
    Ok(culprit_analysis::HotspotOptions {
        keys,
        events: opts.events.clone(),
        // Known once the file is read (whether it has call chains).
        children: false,
        filters: opts.filters.clone(),
        percent_limit: opts.percent_limit,
        top: opts.top,
        call_graph: opts.call_graph.unwrap_or(CallGraphMode::None),
        call_graph_threshold: 0.5,
        deskid: opts.deskid,
        sort_event: opts.sort_event.clone(),
        // perf's layout: one table per event (text only: JSON and CSV have one row set).
        per_event: opts.format == Format::Text && !opts.group && !opts.topdown,
        unknown_per_address: opts.unknown_per_address,
    })
}
