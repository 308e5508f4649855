//! Call stacks of a profile, aggregated once for every export: the one model that folded
//! stacks, flame graphs, pprof, the Firefox Profiler, speedscope, Chrome traces, the HTML
//! report and Parquet are written from.
//!
//! Samples are folded while the file is read: each distinct code address (DSO and file
//! offset, per process for JIT code) becomes one [`Location`], symbolized once at the end
//! (with its inlined functions when [`StackOptions::inline`]); each distinct call path becomes
//! one node of a prefix tree ([`StackNode`], root first); samples are summed per (stack,
//! thread, event). Memory follows the distinct stacks, not the samples, unless the timeline
//! ([`StackOptions::timeline`]) is kept.

use rustc_hash::FxHashMap;
use serde::Serialize;

use culprit_decode::abi::perf_type;
use culprit_decode::model::{CpuMode, DsoKind, EventId, EventInfo, Profile, Sample};
use culprit_symbols::{ProfileInput, Query, ReadPlan, Symbolizer};

use crate::{AnalysisError, Filters};

/// No parent / no mapping.
pub const NONE: u32 = u32::MAX;

/// What a stack profile keeps.
#[derive(Debug, Clone, Default)]
pub struct StackOptions {
    /// Only these events (perf's names and spellings, see `EventInfo::matches`); empty: every
    /// event with samples.
    pub events: Vec<String>,
    /// Expand inlined functions into frames of their own (from DWARF), and give every frame
    /// its source line.
    pub inline: bool,
    /// Keep the source line of each location (implied by `inline`).
    pub lines: bool,
    /// Keep every sample's time, thread, event, stack and period ([`StackProfile::timeline`]).
    pub timeline: bool,
    /// Which samples count (pids, tids, comms; DSO filters are not applied to stacks).
    pub filters: Filters,
    /// Unwind `--call-graph dwarf` user stacks.
    pub unwind: bool,
}

/// Facts about the recording, for headers and summaries.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ProfileSummary {
    /// The input as given (`-` for stdin).
    pub input: String,
    /// HEADER_HOSTNAME.
    pub hostname: Option<String>,
    /// HEADER_OSRELEASE.
    pub os_release: Option<String>,
    /// HEADER_ARCH.
    pub arch: Option<String>,
    /// HEADER_CPUDESC.
    pub cpu: Option<String>,
    /// HEADER_CMDLINE.
    pub cmdline: Option<String>,
    /// The perf version that wrote the file.
    pub perf_version: Option<String>,
    /// First and last sample time (ns), of every sample read.
    pub time_range: Option<(u64, u64)>,
    /// Samples kept (after event and thread filters).
    pub samples: u64,
    /// Samples the kernel reported lost.
    pub lost: u64,
    /// Problems met while reading and symbolizing.
    pub warnings: Vec<String>,
    /// Where reading stopped, for a truncated or corrupt file (what was read is kept).
    pub stopped: Option<crate::recording::Stopped>,
}

/// What an event's period counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PeriodUnit {
    /// Nanoseconds (cpu-clock, task-clock, off-CPU time).
    Nanoseconds,
    /// Occurrences of the event (cycles, cache misses, page faults, ...).
    Events,
}

/// One event of the stack profile, with its totals.
#[derive(Debug, Clone, Serialize)]
pub struct StackEvent {
    /// The event's name as the file has it.
    pub name: String,
    /// Index of the event in the profile (`Profile::events`).
    pub id: EventId,
    /// What the period counts.
    pub unit: PeriodUnit,
    /// Samples kept.
    pub samples: u64,
    /// Sum of their periods.
    pub period: u64,
}

/// A thread samples were taken in.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize)]
pub struct ThreadInfo {
    /// Process id.
    pub pid: i32,
    /// Thread id.
    pub tid: i32,
    /// The command name at the time of the samples.
    pub comm: String,
}

/// What a mapping is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MappingKind {
    /// An ELF file (executable or library).
    File,
    /// The kernel image.
    Kernel,
    /// A kernel module.
    KernelModule,
    /// The vDSO.
    Vdso,
    /// Anonymous memory, JIT code.
    Anonymous,
}

/// A mapped object code was sampled in.
#[derive(Debug, Clone, Serialize)]
pub struct Mapping {
    /// Path as recorded (`[kernel.kallsyms]`, `/usr/lib/…/libc.so.6`).
    pub path: String,
    /// perf's short name.
    pub short_name: String,
    /// Build id in lower-case hex, if recorded.
    pub build_id: Option<String>,
    /// What the object is.
    pub kind: MappingKind,
    /// Lowest and highest sampled runtime address in it (for pprof's memory range).
    pub address_range: (u64, u64),
}

/// A function (or, when unknown, the unknown code of one mapping).
#[derive(Debug, Clone, Serialize)]
pub struct Function {
    /// Demangled name; `[unknown]` when no symbol covers the address.
    pub name: String,
    /// The mapping it is in ([`NONE`]: no mapping).
    pub mapping: u32,
    /// Source file, when DWARF names it.
    pub file: Option<String>,
    /// No symbol was found: the name is `[unknown]`.
    pub unknown: bool,
}

/// One frame of a location: a function and the line in it (innermost inlined first).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct LineFrame {
    /// Index into [`StackProfile::functions`].
    pub function: u32,
    /// Source line, when known.
    pub line: Option<u32>,
}

/// One code address of the profile, symbolized once.
#[derive(Debug, Clone, Serialize)]
pub struct Location {
    /// The mapping ([`NONE`]: no mapping covered the address).
    pub mapping: u32,
    /// The runtime address (of the first sample seen there: ASLR differs per process).
    pub address: u64,
    /// Offset in the mapped file (the address itself for the kernel, JIT code, unmapped).
    pub file_offset: u64,
    /// The address as the ELF file states it, when computed.
    pub svma: Option<u64>,
    /// Whether the address is a return address (a caller's frame), not a sampled IP.
    pub return_address: bool,
    /// Kernel code.
    pub kernel: bool,
    /// Functions at the address: innermost inlined first, the symbol's function last (≥ 1).
    pub frames: Vec<LineFrame>,
}

/// A node of the stack prefix tree: a location called from its parent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct StackNode {
    /// The caller's node ([`NONE`] at the root).
    pub parent: u32,
    /// Index into [`StackProfile::locations`].
    pub location: u32,
}

/// Samples summed per (stack, thread, event).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct StackSample {
    /// The leaf node of the stack.
    pub stack: u32,
    /// Index into [`StackProfile::threads`].
    pub thread: u32,
    /// Index into [`StackProfile::events`].
    pub event: u32,
    /// Samples.
    pub count: u64,
    /// Sum of their periods.
    pub period: u64,
}

/// One sample in time order (with [`StackOptions::timeline`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct TimedSample {
    /// Time (ns, the perf clock).
    pub time: u64,
    /// Index into [`StackProfile::threads`].
    pub thread: u32,
    /// Index into [`StackProfile::events`].
    pub event: u32,
    /// The leaf node of the stack.
    pub stack: u32,
    /// The sample's period.
    pub period: u64,
    /// The CPU it was taken on.
    pub cpu: u32,
}

/// The call stacks of a profile: see the module documentation.
#[derive(Debug, Clone, Default, Serialize)]
pub struct StackProfile {
    /// Facts about the recording.
    pub summary: ProfileSummary,
    /// Events kept, in file order.
    pub events: Vec<StackEvent>,
    /// Threads, in order of first sample.
    pub threads: Vec<ThreadInfo>,
    /// Mapped objects sampled in.
    pub mappings: Vec<Mapping>,
    /// Functions.
    pub functions: Vec<Function>,
    /// Code addresses.
    pub locations: Vec<Location>,
    /// The stack prefix tree (a parent always comes before its children).
    pub nodes: Vec<StackNode>,
    /// Samples summed per (stack, thread, event), in order of first occurrence.
    pub samples: Vec<StackSample>,
    /// Every sample in delivery (time) order, when asked for.
    pub timeline: Vec<TimedSample>,
}

impl StackProfile {
    /// The locations of a stack, leaf first (`stack` is a leaf node).
    pub fn stack_locations(&self, stack: u32) -> impl Iterator<Item = &Location> + '_ {
        let mut node = stack;
        std::iter::from_fn(move || {
            let n = self.nodes.get(node as usize)?;
            node = n.parent;
            self.locations.get(n.location as usize)
        })
    }

    /// The function frames of a stack, root first (inlined functions expanded: callers
    /// before the functions inlined into them).
    pub fn stack_frames(&self, stack: u32) -> Vec<(LineFrame, &Location)> {
        let mut out = Vec::new();
        for loc in self.stack_locations(stack) {
            // Locations list innermost first; the root-first order reverses them too.
            for f in &loc.frames {
                out.push((*f, loc));
            }
        }
        out.reverse();
        out
    }

    /// The name of a function.
    pub fn function_name(&self, function: u32) -> &str {
        self.functions
            .get(function as usize)
            .map_or("[unknown]", |f| f.name.as_str())
    }

    /// The mapping of a location or function, if any.
    pub fn mapping(&self, mapping: u32) -> Option<&Mapping> {
        self.mappings.get(mapping as usize)
    }

    /// Index of the event named `name` (perf's spellings), if kept.
    pub fn event_index(&self, name: &str) -> Option<u32> {
        self.events
            .iter()
            .position(|e| {
                e.name == name || culprit_decode::model::event_name_matches(&e.name, |n| n == name)
            })
            .map(|i| i as u32)
    }
}

/// What an event's period counts: time for the clock events (and off-CPU time).
pub fn period_unit(e: &EventInfo) -> PeriodUnit {
    // PERF_COUNT_SW_CPU_CLOCK (0) and PERF_COUNT_SW_TASK_CLOCK (1) count nanoseconds.
    let clock = e.attr_type == perf_type::SOFTWARE && e.config <= 1;
    if clock || e.name.starts_with("offcpu-time") || e.name.starts_with("off-cpu") {
        PeriodUnit::Nanoseconds
    } else {
        PeriodUnit::Events
    }
}

/// A location named while the file is read ([`StackBuilder::name_location`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NamedLocation {
    /// Its functions, outermost first (the symbol, then the functions inlined into it);
    /// `None` for code without a symbol.
    pub functions: Vec<Option<String>>,
    /// The DSO it is in (index into `Profile::dsos`), if any.
    pub dso: Option<u32>,
    /// Kernel code.
    pub kernel: bool,
}

/// A code address as samples see it, before symbolization: what tells two frames apart in
/// the stack model and the Parquet export.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CodeKey {
    /// The DSO ([`NONE`]: no mapping covered the address).
    pub dso: u32,
    /// Offset in the DSO (the address itself for the kernel, JIT code, unmapped).
    pub file_offset: u64,
    /// The process, for per-process (anonymous/JIT) code; -1 otherwise.
    pub pid: i32,
    /// A caller's return address (inline frames are looked up at `address - 1`).
    pub return_address: bool,
    /// Kernel code.
    pub kernel: bool,
}

impl CodeKey {
    /// The key of `location`, seen in process `pid` in CPU `mode`: per process only for
    /// anonymous (JIT) code, whose addresses mean something in one process alone.
    pub fn of(
        profile: &Profile,
        location: culprit_decode::model::Location,
        mode: CpuMode,
        pid: i32,
        return_address: bool,
    ) -> CodeKey {
        let anonymous = location
            .dso
            .and_then(|d| profile.dsos.get(d as usize))
            .is_some_and(|d| d.kind == DsoKind::Anonymous);
        CodeKey {
            dso: location.dso.unwrap_or(NONE),
            file_offset: location.file_offset,
            pid: if anonymous { pid } else { -1 },
            return_address,
            kernel: matches!(mode, CpuMode::Kernel | CpuMode::GuestKernel),
        }
    }

    /// What the symbolizer is asked for this key.
    pub fn query(&self) -> Query {
        Query {
            dso: (self.dso != NONE).then_some(self.dso),
            file_offset: self.file_offset,
            pid: self.pid,
        }
    }
}

/// The last stack a thread was sampled in: consecutive samples of a thread mostly share
/// their callers (and often the whole chain), so a new sample looks up only the frames below
/// the part it shares with the last one.
#[derive(Debug, Clone, Default)]
struct LastStack {
    /// The locations' keys, root first.
    keys: Vec<CodeKey>,
    /// The node of each of them (`nodes[i]` is the node of `keys[..=i]`).
    nodes: Vec<u32>,
    /// The last sample's (leaf node, event) and its entry in `samples`.
    sample: Option<(u32, u32, u32)>,
}

/// Folds samples into a [`StackProfile`] while a file is read (or, as a
/// [`culprit_decode::Fold`], on several threads whose builders are merged in share order:
/// the same profile, ids in the same order of first occurrence).
pub struct StackBuilder {
    opts: StackOptions,
    /// Per profile event: kept (`Some(index in events)`), or not; grows with the profile.
    event_slot: Vec<Option<Option<u32>>>,
    events: Vec<(EventId, u64, u64)>,
    threads: FxHashMap<(i32, i32, u32), u32>,
    thread_keys: Vec<(i32, i32, u32)>,
    /// Per thread (index into `thread_keys`): its last stack.
    last: Vec<LastStack>,
    loc_ids: FxHashMap<CodeKey, u32>,
    locs: Vec<(CodeKey, u64)>,
    /// The node of (parent node, location key): one look-up per frame (the location's id
    /// is looked up only for a new node).
    node_ids: FxHashMap<(u32, CodeKey), u32>,
    nodes: Vec<StackNode>,
    /// The last sample's thread key and index.
    last_thread: Option<((i32, i32, u32), u32)>,
    sample_ids: FxHashMap<(u32, u32, u32), u32>,
    samples: Vec<StackSample>,
    timeline: Vec<TimedSample>,
    /// Scratch: the current sample's location keys and addresses, leaf first.
    path: Vec<(CodeKey, u64)>,
    kept: u64,
    time_range: Option<(u64, u64)>,
}

impl StackBuilder {
    /// A builder keeping what `opts` asks for.
    pub fn new(opts: &StackOptions) -> StackBuilder {
        StackBuilder {
            opts: opts.clone(),
            event_slot: Vec::new(),
            events: Vec::new(),
            threads: FxHashMap::default(),
            thread_keys: Vec::new(),
            last: Vec::new(),
            loc_ids: FxHashMap::default(),
            locs: Vec::new(),
            node_ids: FxHashMap::default(),
            nodes: Vec::new(),
            last_thread: None,
            sample_ids: FxHashMap::default(),
            samples: Vec::new(),
            timeline: Vec::new(),
            path: Vec::new(),
            kept: 0,
            time_range: None,
        }
    }

    fn event(&mut self, profile: &Profile, id: EventId) -> Option<u32> {
        let i = usize::from(id);
        if self.event_slot.len() <= i {
            self.event_slot.resize(i + 1, None);
        }
        if let Some(slot) = self.event_slot[i] {
            return slot;
        }
        let info = profile.events.get(i)?;
        let wanted =
            self.opts.events.is_empty() || self.opts.events.iter().any(|w| info.matches(w));
        let slot = wanted.then(|| {
            self.events.push((id, 0, 0));
            (self.events.len() - 1) as u32
        });
        self.event_slot[i] = Some(slot);
        slot
    }

    fn location(&mut self, key: CodeKey, addr: u64) -> u32 {
        let next = self.locs.len() as u32;
        let id = *self.loc_ids.entry(key).or_insert(next);
        if id == next {
            self.locs.push((key, addr));
        }
        id
    }

    /// The node of `key` (at `addr`) called from `parent`.
    fn node(&mut self, parent: u32, key: CodeKey, addr: u64) -> u32 {
        if let Some(&id) = self.node_ids.get(&(parent, key)) {
            return id;
        }
        let location = self.location(key, addr);
        let id = self.nodes.len() as u32;
        self.nodes.push(StackNode { parent, location });
        self.node_ids.insert((parent, key), id);
        id
    }

    fn thread(&mut self, key: (i32, i32, u32)) -> u32 {
        if let Some((k, id)) = self.last_thread {
            if k == key {
                return id;
            }
        }
        let next = self.thread_keys.len() as u32;
        let id = *self.threads.entry(key).or_insert(next);
        if id == next {
            self.thread_keys.push(key);
            self.last.push(LastStack::default());
        }
        self.last_thread = Some((key, id));
        id
    }

    fn sample_slot(&mut self, stack: u32, thread: u32, event: u32) -> u32 {
        let next = self.samples.len() as u32;
        let id = *self
            .sample_ids
            .entry((stack, thread, event))
            .or_insert(next);
        if id == next {
            self.samples.push(StackSample {
                stack,
                thread,
                event,
                count: 0,
                period: 0,
            });
        }
        id
    }

    /// Adds one sample (call it for every sample, in delivery order).
    pub fn add(&mut self, profile: &Profile, sample: &Sample) {
        self.add_timed(profile, sample);
    }

    /// Adds one sample as [`StackBuilder::add`] does, and returns where it was counted (its
    /// thread, event and stack, indices as the finished profile will have them), or `None`
    /// for a sample the options leave out: what a streaming export writes as it reads.
    pub fn add_timed(&mut self, profile: &Profile, sample: &Sample) -> Option<TimedSample> {
        if let Some(t) = (sample.time != 0).then_some(sample.time) {
            self.time_range = Some(match self.time_range {
                Some((a, b)) => (a.min(t), b.max(t)),
                None => (t, t),
            });
        }
        let event = self.event(profile, sample.event)?;
        let f = &self.opts.filters;
        if (!f.pids.is_empty() && !f.pids.contains(&sample.pid))
            || (!f.tids.is_empty() && !f.tids.contains(&sample.tid))
            || (!f.comms.is_empty() && !f.comms.iter().any(|c| c == profile.str(sample.comm)))
        {
            return None;
        }
        let thread = self.thread((sample.pid, sample.tid, sample.comm));
        let mut path = std::mem::take(&mut self.path);
        path.clear();
        let chain = profile.callchain(sample);
        if chain.is_empty() {
            let key = CodeKey::of(profile, sample.location, sample.cpumode, sample.pid, false);
            path.push((key, sample.ip));
        } else {
            path.extend(chain.iter().enumerate().map(|(i, fr)| {
                let key = CodeKey::of(profile, fr.location, fr.cpumode, sample.pid, i > 0);
                (key, fr.addr)
            }));
        }
        // The part of the chain (from the root) this thread's last stack had: its nodes are
        // known; only the frames below it are looked up.
        let mut last = std::mem::take(&mut self.last[thread as usize]);
        let shared = last
            .keys
            .iter()
            .zip(path.iter().rev())
            .take_while(|(a, (b, _))| *a == b)
            .count();
        last.keys.truncate(shared);
        last.nodes.truncate(shared);
        let mut parent = last.nodes.last().copied().unwrap_or(NONE);
        let mut below = path.len() - shared;
        // Known nodes, from the root.
        while below > 0 {
            let key = path[below - 1].0;
            let Some(&node) = self.node_ids.get(&(parent, key)) else {
                break;
            };
            parent = node;
            last.keys.push(key);
            last.nodes.push(node);
            below -= 1;
        }
        if below > 0 {
            // New nodes from here to the leaf. Their locations get ids leaf first (the order
            // of the chain), then the nodes from the root.
            let locations: Vec<u32> = path[..below]
                .iter()
                .map(|&(key, addr)| self.location(key, addr))
                .collect();
            for (i, &location) in locations.iter().enumerate().rev() {
                let key = path[i].0;
                let node = self.nodes.len() as u32;
                self.nodes.push(StackNode { parent, location });
                self.node_ids.insert((parent, key), node);
                parent = node;
                last.keys.push(key);
                last.nodes.push(node);
            }
        }
        self.path = path;
        let stack = parent;
        let slot = match last.sample {
            Some((s, e, slot)) if s == stack && e == event => slot,
            _ => self.sample_slot(stack, thread, event),
        };
        last.sample = Some((stack, event, slot));
        self.last[thread as usize] = last;
        let s = &mut self.samples[slot as usize];
        s.count += 1;
        s.period += sample.period;
        let e = &mut self.events[event as usize];
        e.1 += 1;
        e.2 += sample.period;
        self.kept += 1;
        let timed = TimedSample {
            time: sample.time,
            thread,
            event,
            stack,
            period: sample.period,
            cpu: sample.cpu,
        };
        if self.opts.timeline {
            self.timeline.push(timed);
        }
        Some(timed)
    }

    /// The locations of stack `stack` (a leaf node), leaf first, as ids for
    /// [`StackBuilder::name_location`].
    pub fn stack_location_ids(&self, stack: u32) -> impl Iterator<Item = u32> + '_ {
        let mut node = stack;
        std::iter::from_fn(move || {
            let n = self.nodes.get(node as usize)?;
            node = n.parent;
            Some(n.location)
        })
    }

    /// Names location `location` now, while the file is read (streaming exports; a finished
    /// profile names every location in one batch instead): its function, and with
    /// [`StackOptions::inline`] the functions inlined at it, outermost first.
    pub fn name_location(
        &self,
        profile: &Profile,
        symbolizer: &mut Symbolizer,
        location: u32,
    ) -> NamedLocation {
        let Some(&(key, _)) = self.locs.get(location as usize) else {
            return NamedLocation::default();
        };
        let dso = (key.dso != NONE).then_some(key.dso);
        let info = dso.and_then(|d| profile.dsos.get(d as usize));
        let query = Query {
            dso,
            file_offset: key.file_offset,
            pid: key.pid,
        };
        let symbol = symbolizer
            .resolve_batch(profile, &[query])
            .first()
            .and_then(|r| r.symbol)
            .and_then(|id| symbolizer.symbol(id))
            .map(|s| s.name.to_string());
        let mut functions = Vec::with_capacity(1);
        if self.opts.inline && symbol.is_some() {
            let source = symbolizer.source(profile, dso, key.file_offset, key.return_address);
            // Innermost first; the outermost is the symbol itself.
            if let Some((_, inner)) = source.split_last() {
                functions.extend(inner.iter().rev().map(|sf| sf.function.clone()));
            }
        }
        functions.insert(0, symbol);
        NamedLocation {
            functions,
            dso,
            kernel: key.kernel
                || info.is_some_and(|d| matches!(d.kind, DsoKind::Kernel | DsoKind::KernelModule)),
        }
    }

    /// Appends `later`, the builder of the samples delivered after this one's (the next
    /// share of a parallel read): everything `later` saw first gets ids after this one's, in
    /// `later`'s order, as one builder fed both shares would have given them.
    pub fn merge(&mut self, later: StackBuilder) {
        let events: Vec<u32> = later
            .events
            .iter()
            .map(|&(id, samples, period)| {
                let i = match self.events.iter().position(|e| e.0 == id) {
                    Some(i) => i,
                    None => {
                        self.events.push((id, 0, 0));
                        let slot = usize::from(id);
                        if self.event_slot.len() <= slot {
                            self.event_slot.resize(slot + 1, None);
                        }
                        self.event_slot[slot] = Some(Some((self.events.len() - 1) as u32));
                        self.events.len() - 1
                    }
                };
                self.events[i].1 += samples;
                self.events[i].2 += period;
                i as u32
            })
            .collect();
        let threads: Vec<u32> = later.thread_keys.iter().map(|&k| self.thread(k)).collect();
        // Locations first, in `later`'s order (each new one was first met with a new node).
        for &(key, addr) in &later.locs {
            self.location(key, addr);
        }
        // Parents come before their children: each parent is mapped before it is needed.
        let mut nodes: Vec<u32> = Vec::with_capacity(later.nodes.len());
        for n in &later.nodes {
            let parent = if n.parent == NONE {
                NONE
            } else {
                nodes[n.parent as usize]
            };
            let (key, addr) = later.locs[n.location as usize];
            nodes.push(self.node(parent, key, addr));
        }
        for s in &later.samples {
            let slot = self.sample_slot(
                nodes[s.stack as usize],
                threads[s.thread as usize],
                events[s.event as usize],
            );
            let mine = &mut self.samples[slot as usize];
            mine.count += s.count;
            mine.period += s.period;
        }
        self.timeline
            .extend(later.timeline.iter().map(|t| TimedSample {
                thread: threads[t.thread as usize],
                event: events[t.event as usize],
                stack: nodes[t.stack as usize],
                ..*t
            }));
        self.kept += later.kept;
        self.time_range = match (self.time_range, later.time_range) {
            (Some((a, b)), Some((c, d))) => Some((a.min(c), b.max(d))),
            (x, y) => x.or(y),
        };
    }

    /// Symbolizes the locations and returns the profile. `profile` is the read's profile
    /// (its DSOs, strings, events and header facts).
    pub fn finish(
        self,
        profile: &Profile,
        symbolizer: &mut Symbolizer,
    ) -> Result<StackProfile, AnalysisError> {
        if !self.opts.events.is_empty() && self.events.is_empty() {
            culprit_decode::model::select_events(profile, &self.opts.events)?;
            return Err(AnalysisError::UnknownEvent {
                wanted: self.opts.events.join(","),
                available: profile.events.iter().map(|e| e.name.clone()).collect(),
            });
        }
        let mut out = StackProfile {
            summary: summary(profile, self.kept, self.time_range),
            ..StackProfile::default()
        };
        out.events = self
            .events
            .iter()
            .map(|&(id, samples, period)| {
                let info = &profile.events[usize::from(id)];
                StackEvent {
                    name: info.name.clone(),
                    id,
                    unit: period_unit(info),
                    samples,
                    period,
                }
            })
            .collect();
        out.threads = self
            .thread_keys
            .iter()
            .map(|&(pid, tid, comm)| ThreadInfo {
                pid,
                tid,
                comm: profile.str(comm).to_string(),
            })
            .collect();

        let mapping_of = self.mappings(profile, &mut out);
        self.locations(profile, symbolizer, &mapping_of, &mut out);
        out.nodes = self.nodes;
        out.samples = self.samples;
        out.timeline = self.timeline;
        out.summary
            .warnings
            .extend(symbolizer.warnings().iter().cloned());
        Ok(out)
    }

    /// The mappings of the sampled locations into `out`, in order of first use, each with
    /// the range of its sampled addresses; returns the mapping of each DSO id.
    fn mappings(&self, profile: &Profile, out: &mut StackProfile) -> FxHashMap<u32, u32> {
        let mut mapping_of: FxHashMap<u32, u32> = FxHashMap::default();
        for (key, addr) in &self.locs {
            if key.dso == NONE {
                continue;
            }
            let Some(dso) = profile.dsos.get(key.dso as usize) else {
                continue;
            };
            let m = *mapping_of.entry(key.dso).or_insert_with(|| {
                out.mappings.push(Mapping {
                    path: dso.path.clone(),
                    short_name: dso.short_name.clone(),
                    build_id: dso.build_id.as_deref().map(hex),
                    kind: match dso.kind {
                        DsoKind::Elf => MappingKind::File,
                        DsoKind::Kernel => MappingKind::Kernel,
                        DsoKind::KernelModule | DsoKind::Ksymbol => MappingKind::KernelModule,
                        DsoKind::Vdso => MappingKind::Vdso,
                        DsoKind::Anonymous => MappingKind::Anonymous,
                    },
                    address_range: (*addr, *addr),
                });
                (out.mappings.len() - 1) as u32
            });
            let r = &mut out.mappings[m as usize].address_range;
            *r = (r.0.min(*addr), r.1.max(*addr));
        }
        mapping_of
    }

    /// The locations into `out`, with their functions (and inlined frames and lines when
    /// asked), symbols resolved in one sorted batch.
    fn locations(
        &self,
        profile: &Profile,
        symbolizer: &mut Symbolizer,
        mapping_of: &FxHashMap<u32, u32>,
        out: &mut StackProfile,
    ) {
        let queries: Vec<Query> = self.locs.iter().map(|(k, _)| k.query()).collect();
        let resolved = symbolizer.resolve_batch(profile, &queries);
        let mut functions = FunctionIds::default();
        let with_lines = self.opts.inline || self.opts.lines;
        out.locations.reserve(self.locs.len());
        for (i, (key, addr)) in self.locs.iter().enumerate() {
            let mapping = mapping_of.get(&key.dso).copied().unwrap_or(NONE);
            let r = resolved[i];
            let symbol = r
                .symbol
                .and_then(|id| symbolizer.symbol(id))
                .map(|s| s.name.to_string());
            let outer = match &symbol {
                Some(name) => functions.get(out, name, mapping, false),
                None => functions.get(out, "[unknown]", mapping, true),
            };
            let dso = (key.dso != NONE).then_some(key.dso);
            let mut frames = Vec::with_capacity(1);
            let mut outer_line = None;
            let mut outer_file = None;
            if with_lines && symbol.is_some() {
                let source = if self.opts.inline {
                    symbolizer.source(profile, dso, key.file_offset, key.return_address)
                } else {
                    symbolizer
                        .source_line(profile, dso, key.file_offset)
                        .into_iter()
                        .collect()
                };
                if let Some((last, inner)) = source.split_last() {
                    for sf in inner {
                        let name = sf.function.as_deref().unwrap_or("[unknown]");
                        let f = functions.get(out, name, mapping, sf.function.is_none());
                        if out.functions[f as usize].file.is_none() {
                            out.functions[f as usize].file = sf.file.clone();
                        }
                        frames.push(LineFrame {
                            function: f,
                            line: sf.line,
                        });
                    }
                    outer_line = last.line;
                    outer_file = last.file.clone();
                }
            }
            if out.functions[outer as usize].file.is_none() {
                out.functions[outer as usize].file = outer_file;
            }
            frames.push(LineFrame {
                function: outer,
                line: outer_line,
            });
            out.locations.push(Location {
                mapping,
                address: *addr,
                file_offset: key.file_offset,
                svma: r.svma,
                return_address: key.return_address,
                kernel: key.kernel
                    || out.mappings.get(mapping as usize).is_some_and(|m| {
                        matches!(m.kind, MappingKind::Kernel | MappingKind::KernelModule)
                    }),
                frames,
            });
        }
    }
}

/// The ids of a profile's functions, by mapping and name (looked up by `&str`: no string is
/// made for a function already known).
#[derive(Default)]
struct FunctionIds(FxHashMap<u32, FxHashMap<String, u32>>);

impl FunctionIds {
    /// The id of function `name` in `mapping`, added to `out` on first use.
    fn get(&mut self, out: &mut StackProfile, name: &str, mapping: u32, unknown: bool) -> u32 {
        let ids = self.0.entry(mapping).or_default();
        if let Some(&f) = ids.get(name) {
            return f;
        }
        out.functions.push(Function {
            name: name.to_string(),
            mapping,
            file: None,
            unknown,
        });
        let f = (out.functions.len() - 1) as u32;
        ids.insert(name.to_string(), f);
        f
    }
}

fn summary(profile: &Profile, kept: u64, time_range: Option<(u64, u64)>) -> ProfileSummary {
    let m = &profile.meta;
    let warnings = profile.warnings.clone();
    ProfileSummary {
        input: String::new(),
        hostname: m.hostname.clone(),
        os_release: m.os_release.clone(),
        arch: m.arch.clone(),
        cpu: m.cpu_desc.clone(),
        cmdline: m.cmdline.clone(),
        perf_version: m.perf_version.clone(),
        time_range: time_range.or(m.time_range),
        samples: kept,
        lost: profile.lost,
        warnings,
        stopped: profile.stopped.clone(),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl culprit_decode::Fold for StackBuilder {
    fn add(&mut self, profile: &Profile, sample: &Sample) {
        StackBuilder::add(self, profile, sample);
    }

    fn split(&self) -> Self {
        StackBuilder::new(&self.opts)
    }

    fn merge(&mut self, later: Self, _profile: &Profile) {
        StackBuilder::merge(self, later);
    }
}

/// Reads `input` once, streaming (on several threads when the file allows it, see
/// [`ProfileInput::fold`]), and returns its stack profile. The symbols the profile will need
/// (the kernel's, and those of the ELF files the header lists as sampled) are loaded
/// meanwhile on a thread of their own: on two reading threads, loading them before the second
/// share (as `ProfileInput::fold` does) would make that share the longest.
/// `progress(done, total)` reports bytes read.
pub fn stack_profile(
    input: &ProfileInput,
    opts: &StackOptions,
    progress: impl FnMut(u64, u64) + Send,
) -> Result<StackProfile, StackError> {
    let plan = ReadPlan {
        unwind: opts.unwind,
        parallel: true,
        ..ReadPlan::default()
    };
    let mut symbolizer = input.symbolizer();
    let sampled = input.reader().sampled_elf_build_ids();
    let read = std::thread::scope(|scope| {
        let loading = scope.spawn(|| {
            symbolizer.load_kernel_symbols();
            for (path, build_id) in &sampled {
                symbolizer.preload_elf(path, Some(build_id));
            }
        });
        let read = input.fold(&plan, None, StackBuilder::new(opts), progress);
        if let Err(panic) = loading.join() {
            std::panic::resume_unwind(panic);
        }
        read
    });
    let (profile, builder) = read.map_err(StackError::Read)?;
    let mut out = builder
        .finish(&profile, &mut symbolizer)
        .map_err(StackError::Analysis)?;
    out.summary.input = input.path().display().to_string();
    Ok(out)
}

/// Why a stack profile could not be made.
#[derive(Debug, thiserror::Error)]
pub enum StackError {
    /// The input could not be read.
    #[error(transparent)]
    Read(culprit_decode::ReadError),
    /// The options do not fit the file (e.g. an unknown event).
    #[error(transparent)]
    Analysis(AnalysisError),
}
