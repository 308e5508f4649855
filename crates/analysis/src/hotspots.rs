//! Hotspots: samples grouped by a list of keys, per event, with self and children
//! (inclusive) periods, computed the way `perf report` computes them.
//!
//! Grouping rules copied from perf so that percentages agree:
//! - `comm` groups by command name, `dso` by the DSO's short name (`[unknown]` when no
//!   mapping covers the address).
//! - `sym` groups by (DSO, symbol); addresses without a symbol are grouped by address: the
//!   file offset for the sampled IP, and, in call chains, the runtime address (perf keys
//!   unresolved call-chain entries by the raw address, so these are separate rows in
//!   `--children` output, as in perf).
//! - Percentages are of the event's total period over *all* its samples (perf's default
//!   `--percentage absolute`): filters hide rows, they do not change the base.
//! - Children: each sample adds its period once to every distinct row its call chain
//!   (the sampled IP first) passes through.

use std::collections::HashMap;
use std::hash::BuildHasher;

use culprit_decode::abi::mem;
use culprit_decode::model::{
    CpuMode, DsoId, DsoKind, EventId, Frame, Location, Profile, Sample, StrId,
};
use culprit_decode::pebs::text as mem_text;
use culprit_symbols::{Query, Resolved, Symbolizer};

use rustc_hash::{FxBuildHasher, FxHashMap};

use crate::{AnalysisError, SortKey};

mod aggregate;
mod build;
mod children;
mod document;
mod json;
mod locations;
mod merge;
mod rows;
mod unsymbolized;

pub use aggregate::SampleAggregator;
use aggregate::*;
pub use build::hotspots_aggregated;
use build::*;
pub(crate) use document::key_text_into;
pub use document::{csv_table, document, document_with, key_header, DocOptions, Layout};
pub use json::{json_report, json_report_with, EventJson, HotspotsJson, RowsJson, SCHEMA};
use locations::*;
pub use merge::{EventFacts, HotspotsMerge, KeyPart};
use rows::*;
pub use unsymbolized::{note as unsymbolized_note, UnsymbolizedDso, HOW_TO_NAME};

/// perf's default `--max-stack` (the kernel's `perf_event_max_stack`, 127): `perf report
/// --children` walks a chain from its outermost caller (caller order) and stops after this
/// many frames, so a longer chain (a corrupt or runaway one) loses its innermost frames.
pub const PERF_MAX_STACK: usize = 127;

/// The frames of a call chain (callee first) that `perf report --children` accumulates:
/// the outermost [`PERF_MAX_STACK`].
pub fn children_window<T>(chain: &[T]) -> &[T] {
    &chain[chain.len().saturating_sub(PERF_MAX_STACK)..]
}

/// What reading a recording for a hotspot report needs, decided once from the report's
/// options: by the report of one file and by the report over many inputs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadNeeds {
    /// A memory key (perf's memory mode): each sample counts in its own row only.
    pub mem_mode: bool,
    /// Call graphs (`-g caller|callee`).
    pub graphs: bool,
    /// Samples are folded with their call chains (children or call graphs).
    pub with_chains: bool,
    /// Call chains are read at all (children, the default where a file has them, or graphs).
    pub chains_used: bool,
    /// The report shows symbols: they are loaded while the file is read.
    pub shows_symbols: bool,
}

impl ReadNeeds {
    /// The needs of a report with `opts` and `children` (`Some(false)`: `--no-children`;
    /// `Some(true)`: `--children`; `None`: children where a file has call chains).
    pub fn of(opts: &HotspotOptions, children: Option<bool>) -> ReadNeeds {
        let mem_mode = opts.keys.iter().any(|k| k.is_memory());
        let graphs = opts.call_graph != CallGraphMode::None;
        let chains_used = children != Some(false) || graphs;
        ReadNeeds {
            mem_mode,
            graphs,
            with_chains: (children != Some(false) && !mem_mode) || graphs,
            chains_used,
            shows_symbols: opts
                .keys
                .iter()
                .any(|k| matches!(k, SortKey::Sym | SortKey::Ip))
                || graphs,
        }
    }

    /// How to read: call chains only when used, their user part unwound from the sampled
    /// stacks (`--call-graph dwarf` files) when `unwind` allows it, on every core when
    /// `parallel`.
    pub fn read_plan(&self, unwind: bool, parallel: bool) -> culprit_symbols::ReadPlan {
        culprit_symbols::ReadPlan {
            unwind: self.chains_used && unwind,
            skip_callchains: !self.chains_used,
            skip_locations: false,
            parallel,
        }
    }
}

/// Which samples count.
#[derive(Debug, Clone, Default)]
pub struct Filters {
    /// Keep only these process ids (empty: all).
    pub pids: Vec<i32>,
    /// Keep only these thread ids (empty: all).
    pub tids: Vec<i32>,
    /// Keep only these command names (empty: all).
    pub comms: Vec<String>,
    /// Keep only rows of these DSOs, by short name or path (empty: all).
    pub dsos: Vec<String>,
}

/// Call-graph display order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallGraphMode {
    /// No call graphs.
    None,
    /// Paths from the outermost caller down to the row's function.
    Caller,
    /// Paths from the row's function out to its callers, nearest caller first.
    Callee,
}

/// What to compute.
#[derive(Debug, Clone)]
pub struct HotspotOptions {
    /// Grouping keys, in order.
    pub keys: Vec<SortKey>,
    /// Only these events (by name); empty: all events of the file.
    pub events: Vec<String>,
    /// Compute children (inclusive) periods from call chains and sort by them.
    pub children: bool,
    /// Which samples and rows count.
    pub filters: Filters,
    /// Hide rows whose percentage (children when `children`, else self) is below this for
    /// every event.
    pub percent_limit: f64,
    /// Keep at most this many rows.
    pub top: Option<usize>,
    /// Call graphs for the rows.
    pub call_graph: CallGraphMode,
    /// Hide call-graph nodes below this percentage of the event's total.
    pub call_graph_threshold: f64,
    /// Also compute de-skidded self values: each non-precise sample of a memory or branch
    /// event counted again at its estimated culprit instruction (see [`crate::skid`]).
    pub deskid: bool,
    /// The event whose values sort the rows and which `percent_limit` and `top` apply to
    /// (ties are broken by the next events); `None`: the first event with samples in the
    /// rows.
    pub sort_event: Option<String>,
    /// Also make one table per event, each sorted and limited by its event (perf's
    /// layout): [`Hotspots::event_rows`].
    pub per_event: bool,
    /// `sym` rows of addresses no symbol covers: one per address (perf's rows, `report
    /// --unknown address`) instead of one `[unknown]` row per DSO (the default: a stripped
    /// DSO's time is one row, not thousands).
    pub unknown_per_address: bool,
}

impl Default for HotspotOptions {
    fn default() -> Self {
        HotspotOptions {
            keys: vec![SortKey::Comm, SortKey::Dso, SortKey::Sym],
            events: Vec::new(),
            children: false,
            filters: Filters::default(),
            percent_limit: 0.0,
            top: None,
            call_graph: CallGraphMode::None,
            call_graph_threshold: 0.5,
            deskid: false,
            sort_event: None,
            per_event: false,
            unknown_per_address: false,
        }
    }
}

/// Totals of one event of the report.
#[derive(Debug, Clone)]
pub struct EventTotals {
    /// Index in the profile's events.
    pub id: EventId,
    /// Event name.
    pub name: String,
    /// All samples of the event in the file.
    pub samples: u64,
    /// Sum of all their periods (the percentage base).
    pub period: u64,
    /// Samples the kernel reported lost.
    pub lost: u64,
}

/// perf's privilege tag of a `sym` value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
enum Level {
    None,
    Kernel,
    Hypervisor,
    User,
}

/// The value of one key in a row. Compact (24 bytes): the display text and the DSO name
/// are ids into the report's string table ([`Hotspots::text`], [`Hotspots::dso`]), because
/// a children report can have hundreds of thousands of rows.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KeyValue {
    /// Which key.
    pub key: SortKey,
    level: Level,
    has_number: bool,
    has_addr: bool,
    /// The address is a run-time address (a call-chain entry without a symbol), not a file
    /// offset: shown raw, as perf does, never as `DSO+0xOFFSET`.
    runtime_addr: bool,
    /// A `sym` value standing for every address of its DSO that no symbol covers (see
    /// [`HotspotOptions::unknown_per_address`]).
    unknown_group: bool,
    /// Display text id: the name, the number, or `[unknown]`.
    text: u32,
    /// DSO short name id (sym, ip, and srcfile without a source file), or `NONE`.
    dso: u32,
    /// The number (pid, tid, cpu) or the address (sym without a name, ip).
    value: u64,
}

impl KeyValue {
    /// The value of `key` with no text, DSO, number or address yet.
    pub(crate) fn blank(key: SortKey) -> KeyValue {
        KeyValue {
            key,
            level: Level::None,
            has_number: false,
            has_addr: false,
            runtime_addr: false,
            unknown_group: false,
            text: NONE,
            dso: NONE,
            value: 0,
        }
    }
    /// Numeric value for pid, tid and cpu.
    pub fn number(&self) -> Option<i64> {
        self.has_number.then_some(self.value as i64)
    }
    /// perf's privilege tag for sym (`[k]`, `[.]`, `[H]`).
    pub fn tag(&self) -> Option<&'static str> {
        match self.level {
            Level::None => None,
            Level::Kernel => Some("[k]"),
            Level::Hypervisor => Some("[H]"),
            Level::User => Some("[.]"),
        }
    }
    /// For sym without a name: the address the row groups by. For ip: the SVMA (or the
    /// file offset when there is no ELF mapping for it).
    pub fn addr(&self) -> Option<u64> {
        self.has_addr.then_some(self.value)
    }
    /// Whether [`KeyValue::addr`] is a run-time address (a caller without a symbol) rather
    /// than a file offset in the DSO.
    pub fn addr_is_runtime(&self) -> bool {
        self.runtime_addr
    }
    /// Whether this `sym` value is the one `[unknown]` row of its DSO: every address of
    /// the DSO ([`Row::dso`]) that no symbol covers.
    pub fn is_unknown_group(&self) -> bool {
        self.unknown_group
    }
}

/// One call-graph node.
#[derive(Debug, Clone, PartialEq)]
pub struct CallNode {
    /// Function name (or `[unknown]` with DSO+offset).
    pub name: String,
    /// Period through this path.
    pub period: u64,
    /// Samples through this path.
    pub samples: u64,
    /// Next frames, biggest first.
    pub children: Vec<CallNode>,
}

/// Per row and event, the values kept, in this order (`VALUES` without de-skid).
const V_SAMPLES: usize = 0;
const V_PERIOD: usize = 1;
const V_CH_SAMPLES: usize = 2;
const V_CH_PERIOD: usize = 3;
const V_DS_SAMPLES: usize = 4;
const V_DS_PERIOD: usize = 5;
const VALUES: usize = 4;
const VALUES_DESKID: usize = 6;

/// One sort key's values for all rows, columnar: the text id of every row, and the DSO,
/// number/address and tag only for the keys that have them (pid, tid, cpu, sym, ip).
#[derive(Debug, Clone)]
struct KeyColumn {
    key: SortKey,
    text: Vec<u32>,
    dso: Vec<u32>,
    value: Vec<u64>,
    /// Bits 0-1: [`Level`]; bit 2: has a number; bit 3: has an address; bit 4: run-time
    /// address; bit 5: the `[unknown]` row of a DSO.
    flags: Vec<u8>,
}

impl KeyColumn {
    fn new(key: SortKey) -> KeyColumn {
        KeyColumn {
            key,
            text: Vec::new(),
            dso: Vec::new(),
            value: Vec::new(),
            flags: Vec::new(),
        }
    }

    fn has_extra(&self) -> bool {
        // srcfile keeps the DSO of `[unknown]` (rows of different DSOs are apart).
        !matches!(self.key, SortKey::Comm | SortKey::Dso | SortKey::Srcline)
            && !self.key.is_memory()
    }

    fn push(&mut self, v: &KeyValue) {
        self.text.push(v.text);
        if self.has_extra() {
            self.dso.push(v.dso);
            self.value.push(v.value);
            self.flags.push(
                v.level as u8
                    | u8::from(v.has_number) << 2
                    | u8::from(v.has_addr) << 3
                    | u8::from(v.runtime_addr) << 4
                    | u8::from(v.unknown_group) << 5,
            );
        }
    }

    fn get(&self, i: usize) -> KeyValue {
        let mut v = KeyValue {
            text: self.text.get(i).copied().unwrap_or(NONE),
            ..KeyValue::blank(self.key)
        };
        if self.has_extra() {
            let f = self.flags.get(i).copied().unwrap_or(0);
            v.level = match f & 3 {
                1 => Level::Kernel,
                2 => Level::Hypervisor,
                3 => Level::User,
                _ => Level::None,
            };
            v.has_number = f & 4 != 0;
            v.has_addr = f & 8 != 0;
            v.runtime_addr = f & 16 != 0;
            v.unknown_group = f & 32 != 0;
            v.dso = self.dso.get(i).copied().unwrap_or(NONE);
            v.value = self.value.get(i).copied().unwrap_or(0);
        }
        v
    }
}

/// The result of [`hotspots`]: the rows, stored compactly (keys by column with a string
/// table, values in one flat array) and read through [`Row`] views.
#[derive(Debug, Clone)]
pub struct Hotspots {
    /// The events reported (columns).
    pub events: Vec<EventTotals>,
    /// The grouping keys.
    pub keys: Vec<SortKey>,
    /// Whether children periods were computed from call chains.
    pub children: bool,
    /// Whether any sample had a call chain.
    pub has_callchains: bool,
    /// Whether de-skidded values were computed ([`HotspotOptions::deskid`]).
    pub deskid: bool,
    /// Rows dropped by `top` or `percent_limit`.
    pub hidden_rows: usize,
    /// The event the rows are sorted and limited by (index in `events`).
    pub sort_event: usize,
    /// [`HotspotOptions::top`].
    pub top: Option<usize>,
    /// [`HotspotOptions::percent_limit`].
    pub percent_limit: f64,
    /// Samples whose call-graph path was longer than [`PERF_MAX_STACK`] frames and was cut
    /// there (a corrupt or runaway chain; perf's `--max-stack` does the same).
    pub cut_call_paths: u64,
    /// The DSOs with samples at addresses no symbol covers (`sym` reports only), biggest
    /// first for the sort event; their values are per event of [`Hotspots::events`].
    pub unsymbolized: Vec<UnsymbolizedDso>,
    /// [`HotspotOptions::unknown_per_address`].
    pub unknown_per_address: bool,
    /// Why the filters left no row (set only then).
    filter_why: Option<String>,
    /// The commands of the samples when `--comm` left no row (a merge of several reports
    /// says why from all of them).
    no_row_comms: Vec<String>,
    /// Key texts and DSO names.
    strings: Vec<String>,
    /// One column per sort key.
    columns: Vec<KeyColumn>,
    /// `events.len() * nv` values per accumulated row (`V_*` order), shown or not.
    values: Vec<u64>,
    nv: usize,
    /// The values row of each stored row: the rows of the main table (sorted by the sort
    /// event), then those that only per-event tables show.
    order: Vec<u32>,
    /// Rows of the main table (the first stored rows).
    shown: usize,
    /// With [`HotspotOptions::per_event`] and several events: each event's table.
    event_tables: Vec<EventTable>,
    /// Call graphs: (row, one tree per event), only for rows that have one.
    call_graphs: Vec<(u32, Vec<Option<CallNode>>)>,
}

/// One event's table (perf's layout): its rows, sorted and limited by the event.
#[derive(Debug, Clone)]
struct EventTable {
    /// Stored rows, in order.
    rows: Vec<u32>,
    /// Rows its limits hid.
    hidden: usize,
}

impl Hotspots {
    /// Number of rows.
    pub fn len(&self) -> usize {
        self.shown
    }
    /// Whether there are no rows.
    pub fn is_empty(&self) -> bool {
        self.shown == 0
    }
    /// Row `i` (0 is the hottest). Panics when `i >= len()`.
    pub fn row(&self, i: usize) -> Row<'_> {
        assert!(i < self.len(), "row {i} of {}", self.len());
        Row { h: self, i }
    }
    /// The rows, sorted by the sort event's (children or self) period, biggest first, ties
    /// by the next events.
    pub fn rows(&self) -> impl ExactSizeIterator<Item = Row<'_>> + '_ {
        (0..self.len()).map(move |i| Row { h: self, i })
    }
    /// Event `e`'s own table (with [`HotspotOptions::per_event`]): the rows with values
    /// of `e`, sorted and limited by `e`; and how many rows its limits hid. Without
    /// per-event tables (or with one event): the main table.
    pub fn event_rows(&self, e: usize) -> (Vec<Row<'_>>, usize) {
        match self.event_tables.get(e) {
            Some(t) => (
                t.rows
                    .iter()
                    .map(|&i| Row {
                        h: self,
                        i: i as usize,
                    })
                    .collect(),
                t.hidden,
            ),
            None => (self.rows().collect(), self.hidden_rows),
        }
    }
    /// Rows the limits hid from event `e`'s own table (see [`Hotspots::event_rows`]).
    pub fn event_hidden_rows(&self, e: usize) -> usize {
        self.event_tables
            .get(e)
            .map_or(self.hidden_rows, |t| t.hidden)
    }
    /// Whether the report has one table per event ([`HotspotOptions::per_event`] with
    /// several events).
    pub fn has_event_tables(&self) -> bool {
        !self.event_tables.is_empty()
    }
    /// Why a table with `hidden` rows hidden by the limits has no row: `--top 0`, the
    /// percent limit, the filters (`--comm nosuch matched none of the file's 3 commands:
    /// a, b, c`); `None` when no sample of the events is in the file.
    pub fn why_no_rows(&self, hidden: usize) -> Option<String> {
        if self.top == Some(0) {
            return Some("--top 0".to_string());
        }
        if hidden > 0 {
            return Some(format!(
                "none of {hidden} rows reaches --percent-limit {}",
                self.percent_limit
            ));
        }
        self.filter_why.clone()
    }
    /// The display text of a key value: the name, the number, or `[unknown]`.
    pub fn text(&self, k: &KeyValue) -> &str {
        self.strings.get(k.text as usize).map_or("", String::as_str)
    }
    /// For sym and ip: the DSO short name.
    pub fn dso(&self, k: &KeyValue) -> Option<&str> {
        self.strings.get(k.dso as usize).map(String::as_str)
    }
}

/// One row of a [`Hotspots`] report (a view; copy it freely).
#[derive(Clone, Copy)]
pub struct Row<'a> {
    h: &'a Hotspots,
    i: usize,
}

impl<'a> Row<'a> {
    /// One value per sort key, in sort-key order.
    pub fn keys(&self) -> impl ExactSizeIterator<Item = KeyValue> + 'a {
        let i = self.i;
        self.h.columns.iter().map(move |c| c.get(i))
    }
    /// The value of sort key number `j`. Panics when `j` is not a key index.
    pub fn key(&self, j: usize) -> KeyValue {
        self.h.columns[j].get(self.i)
    }
    /// The display text of one of this row's keys.
    pub fn text(&self, k: &KeyValue) -> &'a str {
        self.h.text(k)
    }
    /// The DSO short name of one of this row's keys (sym and ip).
    pub fn dso(&self, k: &KeyValue) -> Option<&'a str> {
        self.h.dso(k)
    }
    fn value(&self, e: usize, v: usize) -> u64 {
        let ncol = self.h.events.len();
        let r = self.h.order.get(self.i).copied().unwrap_or(0) as usize;
        self.h
            .values
            .get((r * ncol + e) * self.h.nv + v)
            .copied()
            .unwrap_or(0)
    }
    /// Self samples of report event `e`.
    pub fn samples(&self, e: usize) -> u64 {
        self.value(e, V_SAMPLES)
    }
    /// Self period of event `e`.
    pub fn period(&self, e: usize) -> u64 {
        self.value(e, V_PERIOD)
    }
    /// Children (inclusive) period of event `e`; equals `period` without call chains.
    pub fn children_period(&self, e: usize) -> u64 {
        self.value(e, V_CH_PERIOD)
    }
    /// Samples of event `e` whose chain passes through the row.
    pub fn children_samples(&self, e: usize) -> u64 {
        self.value(e, V_CH_SAMPLES)
    }
    /// Self samples of event `e` after skid correction (0 without [`Hotspots::deskid`]).
    pub fn deskid_samples(&self, e: usize) -> u64 {
        if self.h.deskid {
            self.value(e, V_DS_SAMPLES)
        } else {
            0
        }
    }
    /// Self period of event `e` after skid correction (0 without [`Hotspots::deskid`]).
    pub fn deskid_period(&self, e: usize) -> u64 {
        if self.h.deskid {
            self.value(e, V_DS_PERIOD)
        } else {
            0
        }
    }
    /// Self percentage of event `e` (of the event's total period).
    pub fn percent(&self, e: usize) -> f64 {
        pct(self.period(e), self.total(e))
    }
    /// Children percentage of event `e`.
    pub fn children_percent(&self, e: usize) -> f64 {
        pct(self.children_period(e), self.total(e))
    }
    /// De-skidded self percentage of event `e`.
    pub fn deskid_percent(&self, e: usize) -> f64 {
        pct(self.deskid_period(e), self.total(e))
    }
    fn total(&self, e: usize) -> u64 {
        self.h.events.get(e).map_or(0, |t| t.period)
    }
    /// The call graph of event `e` (root is the row itself), when call graphs were asked
    /// for and the row has one.
    pub fn call_graph(&self, e: usize) -> Option<&'a CallNode> {
        let i = self
            .h
            .call_graphs
            .binary_search_by_key(&(self.i as u32), |g| g.0)
            .ok()?;
        self.h.call_graphs[i].1.get(e)?.as_ref()
    }
    /// Whether the row has a call graph for any event.
    pub fn has_call_graph(&self) -> bool {
        (0..self.h.events.len()).any(|e| self.call_graph(e).is_some())
    }
}

/// `part` as a percentage of `total` (0 when the total is 0).
pub fn pct(part: u64, total: u64) -> f64 {
    if total == 0 {
        0.0
    } else {
        part as f64 * 100.0 / total as f64
    }
}

/// Computes hotspots. `progress(done, total)` is called now and then while resolving
/// locations and aggregating samples.
///
/// Works on an in-memory profile (its `samples`); [`hotspots_aggregated`] is the same over
/// samples aggregated while streaming.
pub fn hotspots(
    profile: &Profile,
    symbolizer: &mut Symbolizer,
    opts: &HotspotOptions,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<Hotspots, AnalysisError> {
    let mut agg = SampleAggregator::new(
        opts.children || opts.call_graph != CallGraphMode::None,
        &opts.filters,
    );
    agg.only_for(opts);
    for s in &profile.samples {
        agg.add(profile, s);
    }
    agg.finish();
    hotspots_aggregated(profile, &agg, symbolizer, opts, progress)
}
