//! The hotspot report of the rows of exported tables (`culprit report --from-parquet DIR…`):
//! the same rows and numbers `culprit report -i` gives over the perf.data files the exports
//! were made from, for the sort keys the tables carry. The tables are read by
//! `culprit_parquet::read` into the models of this module ([`TablesInput`], [`SampleRow`]);
//! nothing here opens a file.
//!
//! Each input file of an export (a `file_id`: one row of `hosts`) is one input of the
//! report, as one `-i` file is: its events, frames and stacks are handed over whole
//! ([`TablesReport::fold`]; they grow with the distinct events, code locations and stacks,
//! not with the samples), then its samples one by one ([`InputFold::add`]), folded by what
//! the report's keys read (memory follows the distinct folded entries, as `culprit
//! report`'s aggregation does). Rows are made from the folded entries with the rules of one
//! perf.data report (see [`crate::hotspots`]), then merged across inputs by
//! [`FleetMerge`], as `-i a -i b` merges files.
//!
//! What the tables carry, and so what can be reported:
//! - keys `comm`, `pid`, `tid`, `cpu` (from `samples`), `dso`, `sym`, `srcline`, `srcfile`
//!   (from the sample's frames; `srcline` and `srcfile` need the frames' source lines,
//!   present when the exported binaries had line tables), events by name;
//! - self values, and children values from `stacks.frame_ids` (each frame's row counted once
//!   per sample, as perf does; inlined frames of `--inline` exports count for their
//!   function's row);
//! - not `ip` (the tables have file offsets, not the ELF addresses `ip` shows), the memory
//!   keys (perf's memory mode weighs the recorded PERF_SAMPLE_WEIGHT, which the tables do not
//!   keep as such), `--deskid` (it disassembles the binaries) nor call graphs (`-g`): asking
//!   for them is an error that says so ([`unsupported`]).
//!
//! Where the numbers can differ from `-i` on the original file: what the export left out
//! (its `-e`, `--pid`, `--comm` filters), the kernel's per-event lost counts (the tables
//! have each file's total in `hosts.lost`), and rows of unnamed code reached through a call
//! chain in several processes at different addresses of one DSO (`frames.address` keeps
//! the first address of a code location, `culprit report` keys such rows by address).

mod rows;
#[cfg(test)]
mod tests;

use rustc_hash::FxHashMap;

use culprit_decode::model::event_name_matches;

use crate::fleet::{FleetError, FleetMerge, FleetOptions, FleetReport, InputSummary};
use crate::hotspots::EventJson;
use crate::recording::RecordingMeta;
use crate::{CallGraphMode, SortKey};

/// Interned strings of one input.
#[derive(Debug, Default)]
pub struct Strings {
    strs: Vec<String>,
    ids: FxHashMap<String, u32>,
}

impl Strings {
    /// The id of `s`, interned on first sight.
    pub fn id(&mut self, s: &str) -> u32 {
        if let Some(&i) = self.ids.get(s) {
            return i;
        }
        let i = self.strs.len() as u32;
        self.strs.push(s.to_string());
        self.ids.insert(s.to_string(), i);
        i
    }

    /// The string of id `i` (empty for an id never given).
    pub fn get(&self, i: u32) -> &str {
        self.strs.get(i as usize).map_or("", String::as_str)
    }
}

/// A row of `frames`, as the report's keys read it.
#[derive(Debug, Clone, Copy)]
pub struct Frame {
    /// DSO short name.
    pub dso: u32,
    /// The function's name, when symbolized.
    pub function: Option<u32>,
    /// `basename:line` (the report's srcline), when the frame has a source line.
    pub srcline: Option<u32>,
    /// The source file's base name.
    pub srcfile: Option<u32>,
    /// false: the function whose symbol holds the address; true: inlined.
    pub inline: bool,
    /// Kernel code.
    pub kernel: bool,
    /// The file offset (the address when the code has no mapping).
    pub offset: u64,
    /// The sampled address.
    pub address: u64,
}

/// A group of a stack: a function's frame (depth 0) and the innermost of its inline
/// frames (itself when it has none).
#[derive(Debug, Clone, Copy)]
pub struct Group {
    /// The function's frame (an index of [`TablesInput::frames`]).
    pub frame: u32,
    /// The innermost inline frame of the function at this place.
    pub innermost: u32,
}

/// An event of an input (a row of `events`).
#[derive(Debug, Clone)]
pub struct TableEvent {
    /// `event_id`.
    pub id: i64,
    /// The event's name.
    pub name: String,
    /// The unit of its period (`ns` for clocks).
    pub unit: String,
}

/// One input of an export: its host row, events, frames and stacks.
#[derive(Debug)]
pub struct TablesInput {
    /// `hosts.samples`: the rows the export wrote to `samples/` for this input.
    pub sample_rows: i64,
    /// The recorded file, as exported.
    pub file: String,
    /// What the recording says of itself.
    pub meta: RecordingMeta,
    /// The events, in event_id order.
    pub events: Vec<TableEvent>,
    /// The frames, in the order read.
    pub frames: Vec<Frame>,
    /// frame_id -> index in `frames`.
    pub frame_index: FxHashMap<i64, u32>,
    /// stack_id -> range in `groups`.
    pub stacks: FxHashMap<i64, (u32, u32)>,
    /// The stacks' groups, each stack's from the sampled location outwards.
    pub groups: Vec<Group>,
    /// Whether any stack has more than one group (a call chain).
    pub has_chains: bool,
    /// The input's strings.
    pub strings: Strings,
}

/// One row of `samples` (row `row` of its batch), as read: a required value that is null is
/// an error of [`InputFold::add`].
#[derive(Debug, Clone, Copy, Default)]
pub struct SampleRow<'a> {
    /// The row's index in its batch (for messages).
    pub row: usize,
    /// `pid`.
    pub pid: Option<i64>,
    /// `tid`.
    pub tid: Option<i64>,
    /// `comm`.
    pub comm: Option<&'a str>,
    /// `cpu`.
    pub cpu: Option<i64>,
    /// `event_id`.
    pub event_id: Option<i64>,
    /// `period`.
    pub period: Option<i64>,
    /// `stack_id`.
    pub stack_id: Option<i64>,
    /// `leaf_frame_id`.
    pub leaf_frame_id: Option<i64>,
}

/// A sample row the report cannot take: the column and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowError {
    /// The column.
    pub column: &'static str,
    /// What is wrong with it.
    pub what: String,
}

/// An input whose rows do not fit its tables (a samples file duplicated or missing, a stack
/// or frame the tables do not have).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputError {
    /// The file or directory at fault.
    pub path: String,
    /// What is wrong.
    pub why: String,
}

/// Where an input's samples are, for messages.
#[derive(Debug, Clone)]
pub struct InputPlace {
    /// How the input is named in the report: `FILE (DIR/ID)`.
    pub label: String,
    /// The input's id (16 hex digits).
    pub id: String,
    /// The `samples/` directory.
    pub samples_dir: String,
    /// The first samples file.
    pub samples_file: String,
}

/// Why the report cannot be made from the tables, if it cannot.
pub fn unsupported(opts: &FleetOptions) -> Option<String> {
    let h = &opts.hotspots;
    if let Some(k) = h.keys.iter().find(|k| k.is_memory() || **k == SortKey::Ip) {
        let why = if *k == SortKey::Ip {
            "the tables keep file offsets, not the ELF addresses `ip` shows"
        } else {
            "perf's memory mode weighs each sample's recorded PERF_SAMPLE_WEIGHT, which the \
             tables do not keep as such"
        };
        return Some(format!(
            "sort key '{}' is not in the tables ({why}); the tables give comm, pid, tid, cpu, \
             dso, sym, srcline, srcfile: use -i on the perf.data files for '{}'",
            k.name(),
            k.name()
        ));
    }
    if h.deskid {
        return Some(
            "--deskid disassembles the recorded binaries: use -i on the perf.data files"
                .to_string(),
        );
    }
    if h.call_graph != CallGraphMode::None {
        return Some(
            "call graphs (-g caller|callee) are made from perf.data files (-i); from the \
             tables, --children gives each function's inclusive share"
                .to_string(),
        );
    }
    None
}

/// What the report's keys read from a sample (the others are folded away).
#[derive(Debug, Clone, Copy)]
struct Kept {
    comm: bool,
    pid: bool,
    tid: bool,
    cpu: bool,
    /// The leaf frame (location keys, the DSO filter).
    leaf: bool,
    /// The whole stack (children values; srcline, whose innermost line may be an inline
    /// frame's).
    stack: bool,
}

/// Samples folded by what the report reads: (event index, comm, pid, tid, cpu, stack or
/// leaf frame) -> samples and period, in first-seen order.
type FoldKey = (u32, u32, i32, i32, i32, i64);

/// The report over the inputs of Parquet exports, made input by input.
pub struct TablesReport<'o> {
    opts: &'o FleetOptions,
    fleet: FleetMerge,
    /// Per `-e` name: whether an input has an event it selects.
    matched: Vec<bool>,
    /// Every input's event names, first seen first (for the unknown-event error).
    all_events: Vec<String>,
}

impl<'o> TablesReport<'o> {
    /// A report with `opts`, or why the tables cannot give it ([`unsupported`]).
    pub fn new(opts: &'o FleetOptions) -> Result<TablesReport<'o>, String> {
        if let Some(why) = unsupported(opts) {
            return Err(why);
        }
        Ok(TablesReport {
            opts,
            fleet: FleetMerge::new(opts),
            matched: vec![false; opts.hotspots.events.len()],
            all_events: Vec::new(),
        })
    }

    /// Lists an input whose tables could not be read, with its error (the others still
    /// count).
    pub fn add_failed(&mut self, label: &str, error: String) {
        self.fleet.warn(error.clone());
        self.fleet.add_input(InputSummary::failed(label, error));
    }

    /// Starts folding the samples of `input`.
    pub fn fold(&mut self, input: TablesInput) -> InputFold {
        let h = &self.opts.hotspots;
        let keys = &h.keys;
        let has = |k: SortKey| keys.contains(&k);
        let children = self.opts.children != Some(false) && input.has_chains;
        let location = keys.iter().any(|k| {
            matches!(
                k,
                SortKey::Dso | SortKey::Sym | SortKey::Srcline | SortKey::Srcfile
            )
        }) || !h.filters.dsos.is_empty();
        let kept = Kept {
            comm: has(SortKey::Comm) || has(SortKey::Pid) || has(SortKey::Tid),
            pid: has(SortKey::Pid),
            tid: has(SortKey::Tid),
            cpu: has(SortKey::Cpu),
            leaf: location,
            stack: children || has(SortKey::Srcline) || has(SortKey::Srcfile),
        };
        for e in &input.events {
            if !self.all_events.contains(&e.name) {
                self.all_events.push(e.name.clone());
            }
        }
        // The events asked for that this input has (all when none is asked for).
        let selected: Vec<bool> = input
            .events
            .iter()
            .map(|e| wanted_matches(&h.events, &e.name, &mut self.matched))
            .collect();
        let event_pos = input
            .events
            .iter()
            .enumerate()
            .map(|(i, e)| (e.id, i as u32))
            .collect();
        InputFold {
            totals: vec![(0, 0); input.events.len()],
            input,
            kept,
            children,
            selected,
            event_pos,
            fold: FxHashMap::default(),
            entries: Vec::new(),
        }
    }

    /// Makes the rows of a folded input and adds them to the report.
    pub fn add_input(&mut self, fold: InputFold, place: &InputPlace) -> Result<(), InputError> {
        rows::add_input(self.opts, &mut self.fleet, fold, place)
    }

    /// The merged report.
    pub fn finish(self) -> Result<FleetReport, FleetError> {
        let wanted = &self.opts.hotspots.events;
        if let Some(n) = self.matched.iter().position(|m| !m) {
            if self.fleet.inputs().iter().any(|i| i.error.is_none()) {
                return Err(FleetError::UnknownEvent {
                    wanted: wanted[n].clone(),
                    available: self.all_events,
                });
            }
        }
        self.fleet.finish(self.opts)
    }
}

/// The samples of one input being folded.
pub struct InputFold {
    input: TablesInput,
    kept: Kept,
    /// Whether children values are made (the report asks and the input has chains).
    children: bool,
    /// Per event of the input: whether the report selects it.
    selected: Vec<bool>,
    /// event_id -> index in `input.events`.
    event_pos: FxHashMap<i64, u32>,
    /// Per event: samples and period of every sample.
    totals: Vec<(u64, u64)>,
    fold: FxHashMap<FoldKey, u32>,
    entries: Vec<(FoldKey, u64, u64)>,
}

impl InputFold {
    /// Counts sample `s` and folds it when the report reads it.
    pub fn add(&mut self, s: &SampleRow<'_>, opts: &FleetOptions) -> Result<(), RowError> {
        let i = s.row;
        let need = |column: &'static str, v: Option<i64>| {
            v.ok_or_else(|| RowError {
                column,
                what: format!("null in row {i}"),
            })
        };
        let wrong = |column: &'static str, what: String| RowError { column, what };
        let ev = need("event_id", s.event_id)?;
        let Some(&e) = self.event_pos.get(&ev) else {
            return Err(wrong(
                "event_id",
                format!("row {i}: event {ev}, which events/ does not have"),
            ));
        };
        let p = s.period.unwrap_or(0);
        if p < 0 {
            return Err(wrong("period", format!("row {i}: negative period {p}")));
        }
        let p = p as u64;
        // Totals stay within the tables' own Int64: a sum past it would wrap.
        let total = &mut self.totals[e as usize];
        total.0 += 1;
        total.1 = total
            .1
            .checked_add(p)
            .filter(|&t| t <= i64::MAX as u64)
            .ok_or_else(|| {
                wrong(
                    "period",
                    format!("row {i}: the periods of event {ev} add up past 2^63-1 (period {p})"),
                )
            })?;
        if !self.selected[e as usize] {
            return Ok(());
        }
        let (spid, stid) = (need("pid", s.pid)? as i32, need("tid", s.tid)? as i32);
        let scomm = s.comm.unwrap_or("");
        let f = &opts.hotspots.filters;
        let keep = (f.pids.is_empty() || f.pids.contains(&spid))
            && (f.tids.is_empty() || f.tids.contains(&stid))
            && (f.comms.is_empty() || f.comms.iter().any(|x| x == scomm));
        if !keep {
            return Ok(());
        }
        let kept = self.kept;
        let place = if kept.stack {
            need("stack_id", s.stack_id)?
        } else if kept.leaf {
            need("leaf_frame_id", s.leaf_frame_id)?
        } else {
            0
        };
        let key: FoldKey = (
            e,
            if kept.comm {
                self.input.strings.id(scomm)
            } else {
                0
            },
            if kept.pid { spid } else { 0 },
            if kept.tid { stid } else { 0 },
            // A sample without a CPU is on CPU 0, as `culprit report` shows it.
            if kept.cpu {
                s.cpu.unwrap_or(0) as i32
            } else {
                0
            },
            place,
        );
        match self.fold.get(&key) {
            Some(&n) => {
                let en = &mut self.entries[n as usize];
                en.1 += 1;
                en.2 += p;
            }
            None => {
                self.fold.insert(key, self.entries.len() as u32);
                self.entries.push((key, 1, p));
            }
        }
        Ok(())
    }
}

/// Whether event `name` is selected by the `-e` names `wanted` (all when none), marking
/// the names that select it.
fn wanted_matches(wanted: &[String], name: &str, matched: &mut [bool]) -> bool {
    if wanted.is_empty() {
        return true;
    }
    let mut any = false;
    for (w, m) in wanted.iter().zip(matched.iter_mut()) {
        if event_name_matches(name, |n| n == w) {
            *m = true;
            any = true;
        }
    }
    any
}

/// The event list of an input, for messages.
fn event_names(input: &TablesInput) -> String {
    input
        .events
        .iter()
        .map(|e| e.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The summary line of an input's event.
fn event_json(name: &str, totals: (u64, u64)) -> EventJson {
    EventJson {
        name: name.to_string(),
        samples: totals.0,
        period: totals.1,
        lost: 0,
    }
}
