//! The offline HTML report (`culprit html`): one self-contained page (no network, no CDN:
//! its CSS and script are inline and its Content-Security-Policy forbids every fetch) with
//! the recording's summary, the hot functions table, an interactive flame graph and icicle,
//! caller/callee trees, per-function annotations, the Top-Down and IBS tables when the file
//! has them, and the diff against another file.
//!
//! The page is built in two steps: [`build_page`] reads the file once and aggregates
//! everything into a [`Page`] (an owned, serializable model: no raw samples, so a page of a
//! million samples stays small), then [`write_page`] writes it as HTML, the model as a JSON
//! data block that the page's script draws. Every number comes from the analyses the verbs
//! use: the table is `culprit report --sort sym --no-children`'s hotspots, the call tree the
//! stack model of the exports ([`culprit_analysis::stacks`]), the annotations
//! [`culprit_analysis::annotate`]'s, the diff [`culprit_analysis::diff`]'s.
//!
//! Names from the file never become markup: the data block escapes `<`, `>` and `&` as
//! `\u003c`, `\u003e`, `\u0026` (so `</script>` in a name cannot end it), and the script
//! sets every name with `textContent`, never `innerHTML`.

mod flame;
mod model;
mod page;
mod states;
mod timeline;
mod why;

use std::collections::HashMap;
use std::io;

use culprit_analysis::annotate::{annotate_places, AnnotateOptions, SampledPlaces, Target};
use culprit_analysis::annotate::{FunctionAnnotation, SourceCache};
use culprit_analysis::diff::{diff_inputs, DiffError, DiffOptions, DEFAULT_KEYS};
use culprit_analysis::hotspots::{self, hotspots_aggregated, SampleAggregator};
use culprit_analysis::ibs::{IbsFold, IbsOptions, IbsRequest};
use culprit_analysis::skid::EventClass;
use culprit_analysis::stacks::{period_unit, StackBuilder, StackOptions, StackProfile};
use culprit_analysis::topdown::{sampled_report, SampledTopdown, TopdownError};
use culprit_analysis::wakers::{WakerSample, WakerSamples, WakeupPairing};
use culprit_analysis::{AnalysisError, Filters, HotspotOptions, Hotspots, SortKey};
use culprit_decode::ibs::IbsKind;
use culprit_decode::model::{Profile, Sample};
use culprit_decode::ReadError;
use culprit_output::json::Round4;
use culprit_symbols::disasm::Syntax;
use culprit_symbols::{ProfileInput, ReadPlan, Symbolizer};
use timeline::{TimelineFold, TimelineRole};

pub use flame::{MAX_NODES, MIN_FRACTION};
pub use model::*;
pub use page::write_page;
pub use states::{StatesFold, ThreadStates, STATE_NAMES};
pub use timeline::{Cells, Timeline, Track};
pub use why::{
    WhyDeskid, WhyDeskidRow, WhyLatency, WhyLatencyRow, WhyMemory, WhyMemoryRow, LATENCY_BUCKETS,
};

/// What the page shows.
#[derive(Debug, Clone)]
pub struct HtmlOptions {
    /// Only these events (perf's names); empty: every event with samples.
    pub events: Vec<String>,
    /// Unwind the sampled user stacks of `--call-graph dwarf` recordings.
    pub unwind: bool,
    /// Annotate this many of the hottest functions (by the first event's samples).
    pub annotate_top: usize,
    /// The hot functions table keeps the top this many rows of each event.
    pub table_rows: usize,
    /// The diff view keeps the top this many rows of each event.
    pub diff_rows: usize,
    /// The IBS tables keep this many rows each.
    pub ibs_rows: usize,
}

impl Default for HtmlOptions {
    fn default() -> Self {
        HtmlOptions {
            events: Vec::new(),
            unwind: true,
            annotate_top: 30,
            table_rows: 500,
            diff_rows: 500,
            ibs_rows: 50,
        }
    }
}

/// Why a page could not be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HtmlError {
    /// The input could not be read.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// The options do not fit the file (an unknown event).
    #[error(transparent)]
    Analysis(#[from] AnalysisError),
    /// The diff could not be made.
    #[error(transparent)]
    Diff(#[from] DiffError),
    /// Writing the page failed.
    #[error(transparent)]
    Io(#[from] io::Error),
    /// The input cannot give what was asked (the message says why).
    #[error("{0}")]
    Unsupported(String),
}

/// Progress callbacks of [`build_page`]: bytes read of the input, then of the other file.
pub type Progress = Box<dyn FnMut(u64, u64) + Send>;

/// Adds each track's states to `tl` when the file has `sched_switch` events, from what
/// `fold` gathered of the one read.
fn add_thread_states(
    profile: &Profile,
    fold: StatesFold,
    tl: &mut Timeline,
    nodes: &states::SchedStacks,
) {
    let tids: Vec<i32> = tl.threads.iter().map(|t| t.tid).collect();
    if let Some(states) =
        states::thread_states(profile, fold, tl.start, tl.width, tl.buckets, &tids, nodes)
    {
        tl.state_names = STATE_NAMES.to_vec();
        tl.states = states;
    }
}

/// What the page's one read of its input gathers, sample by sample: the stack model, the
/// table's aggregates, annotate's places, the Why tab's tables, the IBS tables, and the
/// timeline with the thread states' events.
struct PageRead {
    stacks: StackBuilder,
    agg: SampleAggregator,
    places: SampledPlaces,
    why_samples: why::DeskidSamples,
    why_memory: why::MemorySamples,
    why_latency: why::LatencySamples,
    ibs: IbsFold,
    timeline_fold: TimelineFold,
    states_fold: StatesFold,
    /// Off-CPU intervals with the wake-up that ended them (`--off-cpu=wakers`), as `culprit
    /// sched wakers` pairs them.
    waker_samples: WakerSamples,
    wakeups: WakeupPairing<(u32, u32)>,
    /// Each event's timeline role, found once from its name.
    event_roles: Vec<TimelineRole>,
}

impl PageRead {
    fn new(stack_opts: &StackOptions, hopts: &HotspotOptions) -> PageRead {
        let mut agg = SampleAggregator::new(false, &Filters::default());
        agg.only_for(hopts);
        PageRead {
            stacks: StackBuilder::new(stack_opts),
            agg,
            places: SampledPlaces::default(),
            why_samples: why::DeskidSamples::new(hopts),
            why_memory: why::MemorySamples::new(hopts),
            why_latency: why::LatencySamples::default(),
            ibs: IbsFold::new(false),
            // The thread states need the scheduler samples' stacks.
            timeline_fold: TimelineFold::new(true),
            states_fold: StatesFold::default(),
            waker_samples: WakerSamples::default(),
            wakeups: WakeupPairing::default(),
            event_roles: Vec::new(),
        }
    }

    /// Takes sample `s` of `p` (the profile read so far).
    fn add(&mut self, p: &Profile, s: &Sample) {
        if let Some(timed) = self.stacks.add_timed(p, s) {
            if self.event_roles.len() < p.events.len() {
                self.event_roles = (p.events.iter())
                    .map(|e| TimelineRole::of_event(&e.name))
                    .collect();
            }
            let base = self.event_roles.get(usize::from(s.event)).copied();
            let base = base.unwrap_or(TimelineRole::Plain);
            let role = match self.waker_samples.classify(p, s) {
                Some(WakerSample::Waking { wakee }) => {
                    (self.wakeups).waking(wakee, s.time, (timed.thread, timed.stack));
                    base
                }
                Some(WakerSample::Blocked) => {
                    let begin = s.time.saturating_sub(s.period);
                    TimelineRole::OffCpu(self.wakeups.blocked(s.tid, begin, s.time))
                }
                None => base,
            };
            self.timeline_fold.add(&timed, p.str(s.comm), role);
        }
        self.states_fold.add(p, s);
        self.agg.add(p, s);
        self.places.add(p, s);
        self.why_samples.add(p, s);
        self.why_memory.add(p, s);
        self.why_latency.add(p, s);
        self.ibs.add(p, s);
    }
}

/// The page's summary: the recording's facts, and every warning of the stack model and
/// the symbolizer, with the note on unnamed samples report prints.
fn page_summary(
    stacks: &StackProfile,
    symbolizer: &Symbolizer,
    hot: &Hotspots,
    file: String,
) -> Summary {
    let s = &stacks.summary;
    let mut warnings = s.warnings.clone();
    for w in symbolizer.warnings() {
        if !warnings.contains(w) {
            warnings.push(w.clone());
        }
    }
    // Which DSOs have unnamed samples and how to name them, as under report's table.
    if let Some(e) = hot.events.get(hot.sort_event) {
        warnings.extend(hotspots::unsymbolized_note(
            &hot.unsymbolized,
            hot.sort_event,
            e.period,
            hot.unknown_per_address,
        ));
    }
    Summary {
        input: file,
        hostname: s.hostname.clone(),
        os_release: s.os_release.clone(),
        arch: s.arch.clone(),
        cpu: s.cpu.clone(),
        cmdline: s.cmdline.clone(),
        perf_version: s.perf_version.clone(),
        duration_ns: s.time_range.map(|(a, b)| b.saturating_sub(a)),
        samples: s.samples,
        lost: s.lost,
        warnings,
        stopped: s.stopped.clone(),
    }
}

/// Reads `input` (and, for the diff view, `other`) and aggregates the page's model.
pub fn build_page(
    input: &ProfileInput,
    other: Option<&ProfileInput>,
    opts: &HtmlOptions,
    progress: [Progress; 2],
) -> Result<Page, HtmlError> {
    let [pa, pb] = progress;
    let file = input.path().display().to_string();
    if other.is_some() && input.is_stdin() {
        return Err(HtmlError::Unsupported(
            "--diff reads the input a second time: give it as a file, not stdin".to_string(),
        ));
    }
    let stack_opts = StackOptions {
        events: opts.events.clone(),
        unwind: opts.unwind,
        // The timeline is summed beside it (`TimelineFold`), not kept per sample.
        timeline: false,
        ..StackOptions::default()
    };
    // `culprit report --sort sym --no-children`: the table's rows and percentages.
    let hopts = HotspotOptions {
        keys: vec![SortKey::Sym],
        events: opts.events.clone(),
        ..HotspotOptions::default()
    };
    let plan = ReadPlan {
        unwind: opts.unwind,
        ..ReadPlan::default()
    };
    let mut read = PageRead::new(&stack_opts, &hopts);
    let profile = input.for_each(&plan, pa, |p, s| read.add(p, s))?;
    let PageRead {
        stacks,
        mut agg,
        places,
        why_samples,
        why_memory,
        why_latency,
        ibs,
        timeline_fold,
        states_fold,
        ..
    } = read;
    agg.finish();
    let mut symbolizer = input.symbolizer();
    let hot = hotspots_aggregated(&profile, &agg, &mut symbolizer, &hopts, &mut |_, _| {})?;
    drop(agg);
    let why_deskid = why_samples.table(&profile, &mut symbolizer)?;
    let why_memory = why_memory.table(&profile, &mut symbolizer)?;
    let why_latency = why_latency.table(&profile, &mut symbolizer);
    let stacks = stacks.finish(&profile, &mut symbolizer)?;

    let events: Vec<PageEvent> = hot
        .events
        .iter()
        .map(|e| PageEvent {
            name: e.name.clone(),
            unit: profile
                .events
                .get(usize::from(e.id))
                .map_or(culprit_analysis::stacks::PeriodUnit::Events, period_unit),
            samples: e.samples,
            period: e.period,
        })
        .collect();
    // The page's column of each event of the stack model.
    let columns: Vec<Option<usize>> = stacks
        .events
        .iter()
        .map(|se| hot.events.iter().position(|he| he.id == se.id))
        .collect();
    let (flame, leaf_of) = flame::flame_tree(&stacks, &columns, events.len());
    let mut timeline = timeline::timeline(&timeline_fold, &stacks, &columns, &events, &leaf_of);
    if let Some(tl) = timeline.as_mut() {
        let nodes = states::scheduler_stacks(&timeline_fold, &stacks, &leaf_of);
        add_thread_states(&profile, states_fold, tl, &nodes);
    }
    drop(leaf_of);
    drop(timeline_fold);

    let annotations = if opts.annotate_top > 0 {
        let aopts = AnnotateOptions {
            target: Target::Hottest(opts.annotate_top),
            events: opts.events.clone(),
            syntax: Syntax::Att,
            deskid: true,
        };
        let ann = annotate_places(&profile, &places, &mut symbolizer, &aopts)?;
        let mut sources = SourceCache::default();
        ann.functions
            .iter()
            .map(|f| page_annotation(f, &mut sources))
            .collect()
    } else {
        Vec::new()
    };
    drop(places);
    let annotate_note = if opts.annotate_top == 0 {
        "no function is annotated (--annotate-top 0)".to_string()
    } else if annotations.is_empty() {
        "no sampled function has a symbol: nothing to annotate".to_string()
    } else {
        format!(
            "the {} hottest functions (by samples of the first event) are annotated \
             (--annotate-top {})",
            annotations.len(),
            opts.annotate_top
        )
    };
    let functions = function_table(&hot, &annotations, &flame, opts.table_rows);

    let (topdown, topdown_note) = topdown_table(&profile, &hot);
    let (ibs, ibs_note) = ibs_tables(ibs, &profile, &mut symbolizer, opts, &file);
    let (diff, diff_hidden, diff_flame) = match other {
        Some(other) => {
            let (d, hidden, tree) = diff_view(input, other, opts, &stack_opts, &events, pb)?;
            (Some(d), hidden, Some(tree))
        }
        None => (None, Vec::new(), None),
    };

    let summary = page_summary(&stacks, &symbolizer, &hot, file);
    Ok(Page {
        schema: SCHEMA,
        generator: format!("culprit {}", env!("CARGO_PKG_VERSION")),
        summary,
        events,
        functions,
        flame,
        timeline,
        annotations,
        annotate_note,
        topdown,
        topdown_note,
        ibs,
        ibs_note,
        why_deskid,
        why_memory,
        why_latency,
        diff,
        diff_hidden,
        diff_flame,
    })
}

/// Per-function Top-Down level 1 when the file has the Top-Down events (else why not).
fn topdown_table(profile: &Profile, hot: &Hotspots) -> (Option<SampledTopdown>, Option<String>) {
    match sampled_report(profile, hot) {
        Ok(r) => (Some(r.topdown), None),
        Err(TopdownError::NoTopdownEvents { .. }) => (
            None,
            Some(
                "the file has no Top-Down sampling events (record them with `culprit record \
                 --topdown`)"
                    .to_string(),
            ),
        ),
        Err(e) => (None, Some(e.to_string())),
    }
}

/// The IBS tables when the file has IBS samples (else why not), from the samples `fold`
/// summed while the file was read.
fn ibs_tables(
    fold: IbsFold,
    profile: &Profile,
    symbolizer: &mut culprit_symbols::Symbolizer,
    opts: &HtmlOptions,
    file: &str,
) -> (Option<culprit_analysis::ibs::IbsReport>, Option<String>) {
    if !has_ibs(profile) {
        return (
            None,
            Some("the file has no IBS samples (AMD: `culprit record --ibs op`)".to_string()),
        );
    }
    let req = IbsRequest {
        options: IbsOptions {
            top: Some(opts.ibs_rows),
            ..IbsOptions::default()
        },
        ..IbsRequest::default()
    };
    match fold.report(profile, symbolizer, &req, file) {
        Ok(r) => (Some(r), None),
        Err(e) => (None, Some(e.to_string())),
    }
}

/// The diff view against `other` (`culprit diff`'s model, each event's rows cut to
/// `--rows`, with how many were cut) and `other`'s call tree in the page's event columns
/// (for the deltas of the call tree and flame graph).
fn diff_view(
    input: &ProfileInput,
    other: &ProfileInput,
    opts: &HtmlOptions,
    stack_opts: &StackOptions,
    events: &[PageEvent],
    progress: Progress,
) -> Result<(culprit_analysis::diff::Diff, Vec<usize>, FlameTree), HtmlError> {
    let dopts = DiffOptions {
        keys: DEFAULT_KEYS.to_vec(),
        events: opts.events.clone(),
    };
    let mut d = diff_inputs(input, other, &dopts, [Box::new(|_, _| {}), progress])?;
    let hidden = d
        .events
        .iter_mut()
        .map(|e| {
            let n = e.rows.len().saturating_sub(opts.diff_rows);
            e.rows.truncate(opts.diff_rows);
            n
        })
        .collect();
    // The other file's call tree: a third read, without the timeline.
    let sopts = StackOptions {
        timeline: false,
        ..stack_opts.clone()
    };
    let mut stacks = StackBuilder::new(&sopts);
    let plan = ReadPlan {
        unwind: opts.unwind,
        ..ReadPlan::default()
    };
    let profile = other.for_each(&plan, |_, _| {}, |p, s| stacks.add(p, s))?;
    let stacks = stacks.finish(&profile, &mut other.symbolizer())?;
    let columns: Vec<Option<usize>> = stacks
        .events
        .iter()
        .map(|se| events.iter().position(|pe| pe.name == se.name))
        .collect();
    let (tree, _) = flame::flame_tree(&stacks, &columns, events.len());
    Ok((d, hidden, tree))
}

/// Whether the file has IBS samples (an event of an IBS PMU with samples).
fn has_ibs(profile: &Profile) -> bool {
    profile
        .events
        .iter()
        .any(|e| e.samples > 0 && e.pmu.as_deref().and_then(IbsKind::from_pmu).is_some())
}

/// The table: the top `per_event` rows of each event, in the report's order.
fn function_table(
    hot: &Hotspots,
    annotations: &[PageAnnotation],
    flame: &FlameTree,
    per_event: usize,
) -> FunctionTable {
    let n = hot.len();
    let mut keep = vec![false; n];
    for e in 0..hot.events.len() {
        let mut order: Vec<usize> = (0..n).filter(|&i| hot.row(i).period(e) > 0).collect();
        // Stable: ties keep the report's order.
        order.sort_by_key(|&i| std::cmp::Reverse(hot.row(i).period(e)));
        for &i in order.iter().take(per_event) {
            keep[i] = true;
        }
    }
    let annotation_of: HashMap<(&str, &str), u32> = annotations
        .iter()
        .enumerate()
        .map(|(i, a)| ((a.dso.as_str(), a.symbol.as_str()), i as u32))
        .collect();
    let mut frame_of: HashMap<(&str, &str), u32> = HashMap::new();
    for (i, f) in flame.frames.iter().enumerate() {
        if f.kind != FrameKind::Comm {
            frame_of
                .entry((f.dso.as_str(), f.name.as_str()))
                .or_insert(i as u32);
        }
    }
    let ne = hot.events.len();
    let rows: Vec<FunctionRow> = (0..n)
        .filter(|&i| keep[i])
        .map(|i| {
            let row = hot.row(i);
            let k = row.key(0);
            let name = row.text(&k).to_string();
            let dso = row.dso(&k).unwrap_or("").to_string();
            let addr = k.addr().map(|a| format!("{a:#x}"));
            FunctionRow {
                annotation: annotation_of.get(&(dso.as_str(), name.as_str())).copied(),
                frame: if addr.is_some() {
                    None
                } else {
                    frame_of.get(&(dso.as_str(), name.as_str())).copied()
                },
                samples: (0..ne).map(|e| row.samples(e)).collect(),
                period: (0..ne).map(|e| row.period(e)).collect(),
                percent: (0..ne).map(|e| Round4(row.percent(e))).collect(),
                tag: k.tag().unwrap_or("").to_string(),
                addr,
                name,
                dso,
            }
        })
        .collect();
    FunctionTable {
        hidden: n - rows.len(),
        rows,
    }
}

/// Instructions of a longer function are cut to those near a sampled one.
const MAX_INSNS: usize = 600;
/// How many instructions around a sampled one a cut function keeps.
const CONTEXT: usize = 12;

/// The page's view of one annotated function.
fn page_annotation(f: &FunctionAnnotation, sources: &mut SourceCache) -> PageAnnotation {
    let events: Vec<AnnotEvent> = f
        .events
        .iter()
        .map(|e| AnnotEvent {
            name: e.name.clone(),
            samples: e.samples,
            precise: e.precise,
            deskid: e.class != EventClass::Stays && !e.precise,
        })
        .collect();
    let deskid = events.iter().any(|e| e.deskid);
    let deskid_estimate = f
        .events
        .iter()
        .zip(&events)
        .any(|(e, pe)| pe.deskid && !e.class.exact());
    let sampled = |k: usize| {
        let r = &f.insns[k];
        r.samples.iter().any(|&v| v > 0)
            || r.deskid.iter().any(|&v| v > 0)
            || r.inclusive.iter().any(|&v| v > 0)
    };
    // Which instructions are shown: all, or those near a sampled one.
    let mut shown = vec![f.insns.len() <= MAX_INSNS; f.insns.len()];
    if f.insns.len() > MAX_INSNS {
        for k in (0..f.insns.len()).filter(|&k| sampled(k)) {
            let lo = k.saturating_sub(CONTEXT);
            let hi = (k + CONTEXT + 1).min(f.insns.len());
            shown[lo..hi].iter_mut().for_each(|s| *s = true);
        }
    }
    let mut lines: Vec<SourceLine> = Vec::new();
    let mut line_of: HashMap<(String, u32), u32> = HashMap::new();
    let mut insns = Vec::new();
    let mut gap = false;
    for (k, r) in f.insns.iter().enumerate() {
        // Source lines count every instruction, shown or not.
        let l = r.source.first().and_then(|sf| {
            let (file, line) = (sf.file.clone()?, sf.line?);
            let id = *line_of.entry((file.clone(), line)).or_insert_with(|| {
                lines.push(SourceLine {
                    text: sources.line(&file, line),
                    file,
                    line,
                    samples: vec![0; r.samples.len()],
                    inclusive: vec![0; r.samples.len()],
                });
                (lines.len() - 1) as u32
            });
            let sl = &mut lines[id as usize];
            for (acc, v) in sl.samples.iter_mut().zip(&r.samples) {
                *acc += v;
            }
            for (acc, v) in sl.inclusive.iter_mut().zip(&r.inclusive) {
                *acc += v;
            }
            Some(id)
        });
        if !shown[k] {
            gap = true;
            continue;
        }
        insns.push(PageInsn {
            a: format!("{:#x}", r.insn.addr),
            t: r.asm_text(),
            l,
            s: r.samples.clone(),
            d: if deskid { r.deskid.clone() } else { Vec::new() },
            i: if r.inclusive.iter().any(|&v| v > 0) {
                r.inclusive.clone()
            } else {
                Vec::new()
            },
            gap: std::mem::take(&mut gap),
            // An inlined instruction: the function it was inlined from (innermost frame).
            n: if r.source.len() > 1 {
                r.source.first().and_then(|sf| sf.function.clone())
            } else {
                None
            },
        });
    }
    // Lines in file order.
    let mut order: Vec<usize> = (0..lines.len()).collect();
    order.sort_by(|&a, &b| (&lines[a].file, lines[a].line).cmp(&(&lines[b].file, lines[b].line)));
    let mut renumber = vec![0u32; lines.len()];
    for (new, &old) in order.iter().enumerate() {
        renumber[old] = new as u32;
    }
    for insn in &mut insns {
        if let Some(l) = &mut insn.l {
            *l = renumber[*l as usize];
        }
    }
    let mut sorted: Vec<Option<SourceLine>> = lines.into_iter().map(Some).collect();
    let lines = order.iter().filter_map(|&i| sorted[i].take()).collect();
    PageAnnotation {
        symbol: f.symbol.clone(),
        dso: f.dso.clone(),
        dso_path: f.dso_path.clone(),
        start: format!("{:#x}", f.start),
        end: format!("{:#x}", f.end),
        disassembled: f.disassembled,
        events,
        callchains: f.has_callchains,
        deskid_estimate,
        omitted: f.insns.len() - insns.len(),
        insns,
        lines,
    }
}
