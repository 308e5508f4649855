//! The page model: everything the HTML report shows, aggregated and owned, serialized once as
//! the page's JSON data block (and read back by the page's script). Field names are short
//! where they repeat per row, to keep big pages small; each is documented here.

use serde::Serialize;

use culprit_analysis::diff::Diff;
use culprit_analysis::ibs::IbsReport;
use culprit_analysis::recording::Stopped;
use culprit_analysis::stacks::PeriodUnit;
use culprit_analysis::topdown::SampledTopdown;
use culprit_output::json::Round4;

/// Version of the page model (the page's data block and `--summary json`'s `schema`).
pub const SCHEMA: u32 = 1;

/// The whole report.
#[derive(Debug, Clone, Serialize)]
pub struct Page {
    /// [`SCHEMA`].
    pub schema: u32,
    /// What wrote the page (`culprit 0.1.0`).
    pub generator: String,
    /// Facts about the recording.
    pub summary: Summary,
    /// The events, in the order of the table columns and of every per-event array.
    pub events: Vec<PageEvent>,
    /// The hot functions table (`culprit report --sort sym --no-children`).
    pub functions: FunctionTable,
    /// The aggregated call tree the flame graph, icicle and caller/callee trees are drawn from.
    pub flame: FlameTree,
    /// The timeline and the per-bucket breakdowns that filter the views by time (none when
    /// the samples have no time).
    pub timeline: Option<crate::html::Timeline>,
    /// The annotated functions (the hottest [`crate::html::HtmlOptions::annotate_top`]).
    pub annotations: Vec<PageAnnotation>,
    /// Why some functions have no annotation (the limit, or why annotate found nothing).
    pub annotate_note: String,
    /// Per-function Top-Down level 1, when the file has the Top-Down sampling events.
    pub topdown: Option<SampledTopdown>,
    /// Why there is no Top-Down table, when there is none.
    pub topdown_note: Option<String>,
    /// The IBS tables, when the file has IBS samples.
    pub ibs: Option<IbsReport>,
    /// Why there are no IBS tables, when there are none.
    pub ibs_note: Option<String>,
    /// The Why tab's skid table, when an event skids.
    pub why_deskid: Option<crate::html::WhyDeskid>,
    /// The Why tab's miss sources per function, when events recorded data sources.
    pub why_memory: Option<crate::html::WhyMemory>,
    /// The Why tab's latency histograms per function, when samples carry a weight.
    pub why_latency: Option<crate::html::WhyLatency>,
    /// The diff against another file (`--diff`), as `culprit diff` computes it.
    pub diff: Option<Diff>,
    /// Rows of each diff event left out by the row limit, per event (same order).
    pub diff_hidden: Vec<usize>,
    /// The other file's call tree (`--diff`), in this page's event columns: the call tree
    /// and flame graph show each node's change of share against it.
    pub diff_flame: Option<FlameTree>,
}

/// Facts about the recording.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Summary {
    /// The input as given.
    pub input: String,
    /// HEADER_HOSTNAME.
    pub hostname: Option<String>,
    /// HEADER_OSRELEASE (the kernel).
    pub os_release: Option<String>,
    /// HEADER_ARCH.
    pub arch: Option<String>,
    /// HEADER_CPUDESC.
    pub cpu: Option<String>,
    /// HEADER_CMDLINE: the recording's command line.
    pub cmdline: Option<String>,
    /// The tool that wrote the file.
    pub perf_version: Option<String>,
    /// First to last sample, in ns.
    pub duration_ns: Option<u64>,
    /// Samples read (of the events shown).
    pub samples: u64,
    /// Samples the kernel reported lost.
    pub lost: u64,
    /// Problems met while reading and symbolizing.
    pub warnings: Vec<String>,
    /// Where reading stopped, for a damaged file (what was read is shown).
    pub stopped: Option<Stopped>,
}

/// One event.
#[derive(Debug, Clone, Serialize)]
pub struct PageEvent {
    /// Its name as the file has it.
    pub name: String,
    /// What its period counts.
    pub unit: PeriodUnit,
    /// Its samples (the percentage base of the tables counts every sample of the event).
    pub samples: u64,
    /// Their summed period: the percentage base.
    pub period: u64,
}

/// The hot functions: rows of `culprit report --sort sym --no-children`, every event's
/// values side by side.
#[derive(Debug, Clone, Serialize)]
pub struct FunctionTable {
    /// The rows kept (the top rows of each event, in the report's order).
    pub rows: Vec<FunctionRow>,
    /// Rows of the report left out (beyond the top rows of every event).
    pub hidden: usize,
}

/// One function (a `sym` row).
#[derive(Debug, Clone, Serialize)]
pub struct FunctionRow {
    /// The name as the report shows it (an address for code without a symbol).
    pub name: String,
    /// The DSO's short name.
    pub dso: String,
    /// perf's privilege tag (`[.]` user, `[k]` kernel).
    pub tag: String,
    /// For code without a symbol: the address the row groups by (hex), as the report's
    /// `sym_addr`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub addr: Option<String>,
    /// Per event: self samples.
    pub samples: Vec<u64>,
    /// Per event: self period.
    pub period: Vec<u64>,
    /// Per event: self period as a share of the event's total, in % (4 decimals, as the
    /// report's JSON).
    pub percent: Vec<Round4>,
    /// Index of its annotation in [`Page::annotations`], when annotated.
    pub annotation: Option<u32>,
    /// Index of its frame in [`FlameTree::frames`], when it is in the call tree.
    pub frame: Option<u32>,
}

/// What kind of code a frame is (its colour).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FrameKind {
    /// The command (the root frame of each stack).
    Comm,
    /// Kernel code.
    Kernel,
    /// The sampled program itself.
    Program,
    /// A shared library.
    Library,
    /// JIT or anonymous code.
    Jit,
    /// Code outside any mapping.
    Unknown,
}

/// One distinct frame name of the call tree.
#[derive(Debug, Clone, Serialize)]
pub struct Frame {
    /// Function name (`[libc.so.6]` for code of a file without a symbol), or the command.
    pub name: String,
    /// DSO short name (empty for commands and unmapped code).
    pub dso: String,
    /// Its kind.
    pub kind: FrameKind,
    /// Its colour in `culprit flamegraph`'s SVG (`#rrggbb`; none for commands).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub color: Option<String>,
}

/// The call tree of every sample, merged by frame (function) per parent, weighed by period
/// per event; node 0 is the root (`all`), the command names are its children. Columnar:
/// node `i` is `parent[i]`, `frame[i]`, `value[e][i]`. Parents come before their children.
#[derive(Debug, Clone, Default, Serialize)]
pub struct FlameTree {
    /// Frame names.
    pub frames: Vec<Frame>,
    /// Parent node of each node (-1 for the root).
    pub parent: Vec<i64>,
    /// Frame of each node (-1 for the root).
    pub frame: Vec<i64>,
    /// Per event, each node's inclusive period (its samples' and its callees').
    pub value: Vec<Vec<u64>>,
    /// Nodes left out because they weigh less than [`FlameTree::min_fraction`] of every
    /// event's total (their weight stays in their parent).
    pub pruned: u64,
    /// The share of an event's total below which nodes were pruned.
    pub min_fraction: f64,
}

/// An annotated function: disassembly with one column per event, and its source lines.
#[derive(Debug, Clone, Serialize)]
pub struct PageAnnotation {
    /// The function.
    pub symbol: String,
    /// DSO short name.
    pub dso: String,
    /// DSO path.
    pub dso_path: String,
    /// First SVMA, hex.
    pub start: String,
    /// One past the last, hex.
    pub end: String,
    /// Whether the code was disassembled (else the rows are the sampled addresses).
    pub disassembled: bool,
    /// Event columns (index into [`Page::events`] by name).
    pub events: Vec<AnnotEvent>,
    /// Whether the file has call chains (then `inclusive` columns are filled).
    pub callchains: bool,
    /// Whether some de-skid column is an estimate (shown marked `~`).
    pub deskid_estimate: bool,
    /// The instructions (or, for long functions, those around the sampled ones).
    pub insns: Vec<PageInsn>,
    /// Instructions left out of a long function (far from every sampled one).
    pub omitted: usize,
    /// Source lines of the instructions, by the innermost source frame.
    pub lines: Vec<SourceLine>,
}

/// An event column of an annotation.
#[derive(Debug, Clone, Serialize)]
pub struct AnnotEvent {
    /// The event's name.
    pub name: String,
    /// Samples in the function.
    pub samples: u64,
    /// Whether its samples are precise (IBS, PEBS: no skid).
    pub precise: bool,
    /// Whether a de-skid column is shown for it (non-precise memory or branch events).
    pub deskid: bool,
}

/// One instruction.
#[derive(Debug, Clone, Serialize)]
pub struct PageInsn {
    /// SVMA, hex.
    pub a: String,
    /// The instruction text.
    pub t: String,
    /// Index of its source line in [`PageAnnotation::lines`].
    pub l: Option<u32>,
    /// Per event: samples.
    pub s: Vec<u64>,
    /// Per event: de-skidded samples (an estimate), for events with a de-skid column.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub d: Vec<u64>,
    /// Per event: samples below this call (call chains).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub i: Vec<u64>,
    /// Whether instructions were left out before this one.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub gap: bool,
    /// For an instruction of inlined code: the function inlined here.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub n: Option<String>,
}

/// A source line of an annotated function.
#[derive(Debug, Clone, Serialize)]
pub struct SourceLine {
    /// Source file.
    pub file: String,
    /// Line number.
    pub line: u32,
    /// The line's text, when the file could be read.
    pub text: Option<String>,
    /// Per event: samples of the line's instructions.
    pub samples: Vec<u64>,
    /// Per event: samples below the line's calls (call chains; zeros without them).
    pub inclusive: Vec<u64>,
}

/// What `culprit html --summary json` prints (docs/schemas/html.schema.json).
#[derive(Debug, Clone, Serialize)]
pub struct HtmlSummary {
    /// [`SCHEMA`].
    pub schema: u32,
    /// The input file.
    pub input: String,
    /// The file compared with it (`--diff`).
    pub diff_input: Option<String>,
    /// Bytes of the page.
    pub bytes: u64,
    /// The events shown.
    pub events: Vec<SummaryEvent>,
    /// Samples read.
    pub samples: u64,
    /// Samples the kernel reported lost.
    pub lost: u64,
    /// Rows of the hot functions table.
    pub functions: usize,
    /// Rows of the report left out of the table.
    pub hidden_functions: usize,
    /// Nodes of the call tree.
    pub tree_nodes: usize,
    /// Nodes pruned from it.
    pub pruned_nodes: u64,
    /// Annotated functions.
    pub annotated: usize,
    /// Whether the page has a Top-Down table.
    pub topdown: bool,
    /// Whether the page has IBS tables.
    pub ibs: bool,
    /// Whether the page has a diff view.
    pub diff: bool,
    /// Problems met.
    pub warnings: Vec<String>,
    /// Where reading stopped, for a damaged input.
    pub stopped: Option<Stopped>,
}

/// An event of the summary.
#[derive(Debug, Clone, Serialize)]
pub struct SummaryEvent {
    /// Its name.
    pub name: String,
    /// Its samples.
    pub samples: u64,
    /// Their summed period.
    pub period: u64,
}

impl Page {
    /// The summary of this page written in `bytes` bytes.
    pub fn summary(&self, bytes: u64) -> HtmlSummary {
        HtmlSummary {
            schema: SCHEMA,
            input: self.summary.input.clone(),
            diff_input: self.diff.as_ref().map(|d| d.other.file.clone()),
            bytes,
            events: self
                .events
                .iter()
                .map(|e| SummaryEvent {
                    name: e.name.clone(),
                    samples: e.samples,
                    period: e.period,
                })
                .collect(),
            samples: self.summary.samples,
            lost: self.summary.lost,
            functions: self.functions.rows.len(),
            hidden_functions: self.functions.hidden,
            tree_nodes: self.flame.parent.len(),
            pruned_nodes: self.flame.pruned,
            annotated: self.annotations.len(),
            topdown: self.topdown.is_some(),
            ibs: self.ibs.is_some(),
            diff: self.diff.is_some(),
            warnings: self.summary.warnings.clone(),
            stopped: self.summary.stopped.clone(),
        }
    }
}
