//! `culprit report` over many inputs: one hotspot report of several perf.data files (or
//! of the tables of Parquet exports, see `tables`), with the numbers
//! one report of all their samples together gives.
//!
//! Each input is read and symbolized on its own (its own mappings, build ids and
//! symbols), reported without limits ([`HotspotsMerge::part_options`]), and the reports are
//! summed by row key and event name ([`HotspotsMerge`], whose module doc gives the
//! matching rules); the sums are then sorted, cut (`--top`, `--percent-limit`) and given
//! call graphs as one report's are. Memory holds one input's aggregates at a time plus the
//! merged rows.
//!
//! An input that cannot be read (missing, not a perf.data file) is listed with its error
//! and the others are still reported ([`FleetReport::failed`] is then set, and the cli
//! exits 1); so is an input whose reading stopped early (its records before the damage
//! count, as in a one-file report).

use culprit_decode::abi::sample_type;
use culprit_decode::model::Profile;
use culprit_output::Document;
use culprit_symbols::{ProfileInput, ReadPlan};
use serde::Serialize;

use crate::hotspots::{
    self, document_with, EventFacts, EventJson, HotspotOptions, Hotspots, HotspotsJson,
    HotspotsMerge, Layout, ReadNeeds, SampleAggregator,
};
use crate::recording::{RecordingMeta, Stopped};
use crate::{AnalysisError, CallGraphMode};

/// What a report over many inputs computes.
#[derive(Debug, Clone)]
pub struct FleetOptions {
    /// The report's keys, events, filters, limits, call graphs and de-skid
    /// (`hotspots.children` is not read: see `children`).
    pub hotspots: HotspotOptions,
    /// `Some(true)`: children values (`--children`); `Some(false)`: self only
    /// (`--no-children`); `None`: children when any input has call chains (the default).
    pub children: Option<bool>,
    /// Unwind the sampled user stacks of `--call-graph dwarf` recordings when chains are
    /// used.
    pub unwind: bool,
}

/// One input of a report over many: what the header and the JSON `inputs` list say.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InputSummary {
    /// Where the input's events, samples and lost samples were read from, as given (a
    /// perf.data file; for a Parquet export, `DIR` and the recorded file).
    pub file: String,
    /// The recording's header facts (null when the input could not be read).
    pub meta: Option<RecordingMeta>,
    /// The input's events that the report counts, with their totals.
    pub events: Vec<EventJson>,
    /// Where reading a damaged input stopped, or null.
    pub stopped: Option<Stopped>,
    /// Why the input could not be read (then it counts nothing), or null.
    pub error: Option<String>,
}

impl InputSummary {
    /// The summary of an input that could not be read.
    pub fn failed(file: &str, error: String) -> InputSummary {
        InputSummary {
            file: file.to_string(),
            meta: None,
            events: Vec::new(),
            stopped: None,
            error: Some(error),
        }
    }

    /// The header line of this input: `Input a.data: host h, 3998 samples, 0 lost
    /// (cpu-clock: 3998 samples, event count 999500000); command ./prog`.
    pub fn header_line(&self) -> String {
        let mut l = format!("Input {}: ", self.file);
        if let Some(e) = &self.error {
            l.push_str("not read: ");
            l.push_str(e);
            return l;
        }
        let host = self
            .meta
            .as_ref()
            .and_then(|m| m.hostname.as_deref())
            .unwrap_or("?");
        let samples: u64 = self.events.iter().map(|e| e.samples).sum();
        let lost = self.meta.as_ref().map_or(0, |m| m.lost);
        l.push_str(&format!("host {host}, {samples} samples, {lost} lost"));
        let events: Vec<String> = self
            .events
            .iter()
            .map(|e| {
                format!(
                    "{}: {} samples, event count {}",
                    e.name, e.samples, e.period
                )
            })
            .collect();
        if !events.is_empty() {
            l.push_str(&format!(" ({})", events.join("; ")));
        }
        if let Some(c) = self.meta.as_ref().and_then(|m| m.cmdline.as_deref()) {
            l.push_str("; command ");
            l.push_str(c);
        }
        if let Some(s) = &self.stopped {
            l.push_str(&format!(
                "; reading stopped at byte offset {}: {}",
                s.offset, s.reason
            ));
        }
        l
    }
}

/// A report over many inputs.
pub struct FleetReport {
    /// The merged report.
    pub hotspots: Hotspots,
    /// What the text output says of each of its events.
    pub events: Vec<EventFacts>,
    /// Every input, in the order given, read or not.
    pub inputs: Vec<InputSummary>,
    /// Warnings about the inputs (each names its input) and the report.
    pub warnings: Vec<String>,
}

impl FleetReport {
    /// Whether an input could not be read, or not to its end (the cli exits 1).
    pub fn failed(&self) -> bool {
        self.inputs
            .iter()
            .any(|i| i.error.is_some() || i.stopped.is_some())
    }

    /// The inputs as one label (`a.data, b.data`): the JSON `file`, the header's `Files`.
    pub fn files(&self) -> String {
        self.inputs
            .iter()
            .map(|i| i.file.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The header facts the inputs share (a field differing between them is null); `lost`
    /// and the duration are sums.
    pub fn meta(&self) -> RecordingMeta {
        let metas: Vec<&RecordingMeta> =
            self.inputs.iter().filter_map(|i| i.meta.as_ref()).collect();
        fn common(
            v: &[&RecordingMeta],
            f: impl Fn(&RecordingMeta) -> &Option<String>,
        ) -> Option<String> {
            let first = f(v.first()?).clone();
            v.iter().all(|m| *f(m) == first).then_some(first).flatten()
        }
        RecordingMeta {
            cmdline: common(&metas, |m| &m.cmdline),
            duration_ns: metas.iter().map(|m| m.duration_ns).sum::<Option<u64>>(),
            hostname: common(&metas, |m| &m.hostname),
            lost: metas.iter().map(|m| m.lost).sum(),
            os_release: common(&metas, |m| &m.os_release),
            perf_version: common(&metas, |m| &m.perf_version),
        }
    }

    /// The text document: one header line per input, then the merged report as one
    /// file's (`layout`: several events apart or side by side).
    pub fn document(&self, layout: Layout) -> Document {
        let mut header = vec![format!(
            "{} inputs, merged (rows matched by key, events by name)",
            self.inputs.len()
        )];
        header.extend(self.inputs.iter().map(InputSummary::header_line));
        header.push(format!("Total lost samples: {}", self.meta().lost));
        document_with(&self.hotspots, header, &self.events, layout)
    }

    /// The JSON report (docs/schemas/report.schema.json, with `inputs`), with `warnings`.
    pub fn json(&self, warnings: Vec<String>) -> HotspotsJson<'_> {
        let stopped = self.inputs.iter().find_map(|i| i.stopped.clone());
        hotspots::json_report_with(
            &self.hotspots,
            &self.files(),
            self.meta(),
            stopped,
            Some(self.inputs.clone()),
            warnings,
        )
    }
}

/// Why a report over many inputs could not be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FleetError {
    /// No input could be read (each reason names its input).
    #[error("no input could be read: {}", .0.join("; "))]
    NothingRead(Vec<String>),
    /// The options do not fit the inputs (an event none has, a sort event none has).
    #[error(transparent)]
    Analysis(#[from] AnalysisError),
    /// `-e` named an event no input has.
    #[error("no input has an event '{wanted}' (their events: {})", available.join(", "))]
    UnknownEvent {
        /// What was asked for.
        wanted: String,
        /// The inputs' events.
        available: Vec<String>,
    },
    /// `-g caller|callee` and no input has call chains.
    #[error("{flag} needs call chains, and none of the inputs has any: record with -g (or --call-graph dwarf|lbr)")]
    NoCallChains {
        /// The flag given.
        flag: &'static str,
    },
    /// A memory sort key and no input recorded PERF_SAMPLE_DATA_SRC.
    #[error("--sort {keys}: memory keys read PERF_SAMPLE_DATA_SRC, which no event of the inputs recorded (record with `perf mem record` or `perf record -d`)")]
    NoDataSource {
        /// The sort keys given.
        keys: String,
    },
}

/// What each input is read for, from the options (the same plan a one-file report uses).
struct Plan {
    part: HotspotOptions,
    with_chains: bool,
    shows_symbols: bool,
    read: ReadPlan,
    mem_mode: bool,
}

impl Plan {
    fn new(opts: &FleetOptions) -> Plan {
        let needs = ReadNeeds::of(&opts.hotspots, opts.children);
        let mut part = HotspotsMerge::part_options(&opts.hotspots);
        part.children = opts.children != Some(false) && !needs.mem_mode;
        Plan {
            with_chains: needs.with_chains,
            shows_symbols: needs.shows_symbols,
            read: needs.read_plan(opts.unwind, true),
            part,
            mem_mode: needs.mem_mode,
        }
    }
}

/// The events of `wanted` (`-e` names) that `profile` has: a file without them counts
/// nothing, and a name no input has is an error at the end.
fn wanted_here(profile: &Profile, wanted: &[String], matched: &mut [bool]) -> Vec<String> {
    let mut here = Vec::new();
    for (w, m) in wanted.iter().zip(matched.iter_mut()) {
        if profile.events.iter().any(|e| e.matches(w)) {
            *m = true;
            here.push(w.clone());
        }
    }
    here
}

/// The state of a report over many inputs while its parts come in (perf.data files here,
/// Parquet exports in `culprit_export`): the merge, the inputs and the warnings.
pub struct FleetMerge {
    merge: HotspotsMerge,
    inputs: Vec<InputSummary>,
    warnings: Vec<String>,
    any_data_src: bool,
}

impl FleetMerge {
    /// An empty merge for `opts`.
    pub fn new(opts: &FleetOptions) -> FleetMerge {
        let mut merge = HotspotsMerge::new(&opts.hotspots.keys, opts.hotspots.deskid);
        merge.set_unknown_per_address(opts.hotspots.unknown_per_address);
        FleetMerge {
            merge,
            inputs: Vec::new(),
            warnings: Vec::new(),
            any_data_src: false,
        }
    }

    /// Adds one input's report `part` (made with [`HotspotsMerge::part_options`]) and its
    /// summary; `has_data_src`: its events recorded PERF_SAMPLE_DATA_SRC.
    pub fn add(
        &mut self,
        part: &Hotspots,
        facts: &[EventFacts],
        summary: InputSummary,
        has_data_src: bool,
    ) {
        self.merge.add(part, facts);
        self.any_data_src |= has_data_src;
        self.inputs.push(summary);
    }

    /// The merge, for inputs whose rows are made outside a perf.data report (Parquet
    /// tables: [`HotspotsMerge::add_event`], [`HotspotsMerge::add_row`]); list each such
    /// input with [`add_input`](Self::add_input).
    pub fn rows(&mut self) -> &mut HotspotsMerge {
        &mut self.merge
    }

    /// Lists an input (its rows added through [`rows`](Self::rows), or none: unreadable,
    /// or without the events asked for).
    pub fn add_input(&mut self, summary: InputSummary) {
        self.inputs.push(summary);
    }

    /// The inputs listed so far.
    pub fn inputs(&self) -> &[InputSummary] {
        &self.inputs
    }

    /// Adds a warning (naming its input).
    pub fn warn(&mut self, w: String) {
        self.warnings.push(w);
    }

    /// The merged report for `opts`.
    pub fn finish(mut self, opts: &FleetOptions) -> Result<FleetReport, FleetError> {
        let any_chains = self.merge.has_callchains();
        if self.inputs.iter().all(|i| i.error.is_some()) {
            return Err(FleetError::NothingRead(
                self.inputs.iter().filter_map(|i| i.error.clone()).collect(),
            ));
        }
        let h = &opts.hotspots;
        let mem_mode = h.keys.iter().any(|k| k.is_memory());
        if mem_mode && !self.any_data_src {
            return Err(FleetError::NoDataSource {
                keys: h
                    .keys
                    .iter()
                    .map(|k| k.name())
                    .collect::<Vec<_>>()
                    .join(","),
            });
        }
        let flag = match h.call_graph {
            CallGraphMode::Caller => Some("-g caller"),
            CallGraphMode::Callee => Some("-g callee"),
            CallGraphMode::None => None,
        };
        if let Some(flag) = flag.filter(|_| !any_chains && !mem_mode) {
            return Err(FleetError::NoCallChains { flag });
        }
        if opts.children == Some(true) && !any_chains && !mem_mode {
            self.warnings.push(
                "--children: no input has call chains, so children equal self (record with -g \
                 for callers' totals)"
                    .to_string(),
            );
        }
        let mut fin = h.clone();
        fin.children = match opts.children {
            Some(false) => false,
            Some(true) => !mem_mode,
            None => !mem_mode && any_chains,
        };
        let (hotspots, events) = self.merge.finish(&fin)?;
        if hotspots.cut_call_paths > 0 {
            self.warnings.push(format!(
                "{} samples have call chains deeper than {} frames: their call-graph paths were \
                 cut there (perf's --max-stack)",
                hotspots.cut_call_paths,
                hotspots::PERF_MAX_STACK
            ));
        }
        Ok(FleetReport {
            hotspots,
            events,
            inputs: self.inputs,
            warnings: self.warnings,
        })
    }
}

/// The report of `inputs` as one: each read (`progress(input, bytes done, total)`),
/// symbolized and reported on its own, the reports merged. An input that cannot be read
/// is listed with its error, and the others still count.
pub fn report_inputs(
    inputs: &[ProfileInput],
    opts: &FleetOptions,
    progress: &(dyn Fn(usize, u64, u64) + Sync),
) -> Result<FleetReport, FleetError> {
    let plan = Plan::new(opts);
    let wanted = &opts.hotspots.events;
    let mut matched = vec![false; wanted.len()];
    let mut all_events: Vec<String> = Vec::new();
    let mut fleet = FleetMerge::new(opts);
    for (i, input) in inputs.iter().enumerate() {
        let file = input.path().display().to_string();
        let mut symbolizer = input.symbolizer();
        let mut agg = SampleAggregator::new(plan.with_chains, &plan.part.filters);
        agg.only_for(&plan.part);
        // As one file's report: read on every core.
        let read = plan.read;
        let folded = input.fold(
            &read,
            plan.shows_symbols.then_some(&mut symbolizer),
            agg,
            move |d, t| progress(i, d, t),
        );
        let (profile, mut agg) = match folded {
            Ok(r) => r,
            Err(e) => {
                fleet.warn(e.to_string());
                fleet.add_input(InputSummary::failed(&file, e.to_string()));
                continue;
            }
        };
        agg.finish();
        for e in &profile.events {
            if !all_events.contains(&e.name) {
                all_events.push(e.name.clone());
            }
        }
        let mut part_opts = plan.part.clone();
        part_opts.events = wanted_here(&profile, wanted, &mut matched);
        let has_data_src = profile
            .events
            .iter()
            .any(|e| e.sample_type & sample_type::DATA_SRC != 0);
        let stopped = profile.stopped.clone();
        if let Some(s) = &stopped {
            fleet.warn(format!(
                "{file}: reading stopped at byte offset {}: {}; the report counts the {} \
                 records read before it",
                s.offset, s.reason, s.records_read
            ));
        }
        let mut summary = InputSummary {
            file: file.clone(),
            meta: Some(RecordingMeta::of(&profile)),
            events: Vec::new(),
            stopped,
            error: None,
        };
        if !wanted.is_empty() && part_opts.events.is_empty() {
            fleet.warn(format!(
                "{file}: none of the events asked for (-e {}); its events: {}",
                wanted.join(","),
                profile
                    .events
                    .iter()
                    .map(|e| e.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
            fleet.add_input(summary);
            continue;
        }
        if plan.mem_mode && !has_data_src {
            fleet.warn(format!(
                "{file}: no event recorded PERF_SAMPLE_DATA_SRC: its memory keys are N/A"
            ));
        }
        let part = hotspots::hotspots_aggregated(
            &profile,
            &agg,
            &mut symbolizer,
            &part_opts,
            &mut |_, _| {},
        )?;
        drop(agg);
        for w in profile.warnings.iter().chain(symbolizer.warnings()) {
            fleet.warn(format!("{file}: {w}"));
        }
        let facts: Vec<EventFacts> = part
            .events
            .iter()
            .map(|e| EventFacts::of(&profile, e.id))
            .collect();
        summary.events = part
            .events
            .iter()
            .map(|e| EventJson {
                name: e.name.clone(),
                samples: e.samples,
                period: e.period,
                lost: e.lost,
            })
            .collect();
        fleet.add(&part, &facts, summary, has_data_src);
    }
    if let Some(n) = matched.iter().position(|m| !m) {
        if fleet.inputs.iter().any(|i| i.error.is_none()) {
            return Err(FleetError::UnknownEvent {
                wanted: wanted[n].clone(),
                available: all_events,
            });
        }
    }
    fleet.finish(opts)
}
