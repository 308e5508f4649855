//! Running a compiled program: binding probes to an input's events, the per-sample
//! dispatch, ticks, END, output and notes.

use std::collections::HashMap;

use rustc_hash::FxHashMap;

use culprit_decode::ibs::IbsKind;
use culprit_decode::model::{CpuMode, EventInfo, Location, Profile, Sample};

use crate::agg::{print_many, AddrNames, Agg};
use crate::compile::Program;
use crate::error::ScriptError;
use crate::format::Piece;
use crate::probe::{glob, Probe};
use crate::Interner;

/// What to ask a [`SymbolSource`] about a sample's IP.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum What {
    /// Function name (`sym`).
    Sym,
    /// Module (DSO short name, `mod`).
    Mod,
    /// `file:line` (`srcline`).
    Srcline,
    /// `module`symbol+0xoffset` (`%a`), DTrace's address form.
    Addr,
}

/// Names of code locations for `sym`, `mod` and `srcline`. Called once per distinct location
/// and question: the runner caches the answers.
pub trait SymbolSource {
    /// The name of `sample`'s IP.
    fn lookup(&mut self, profile: &Profile, sample: &Sample, what: What) -> String;
}

/// Names from the profile alone: the DSO for `mod`, the hex address for `sym` and `srcline`.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoSymbols;

impl SymbolSource for NoSymbols {
    fn lookup(&mut self, profile: &Profile, sample: &Sample, what: What) -> String {
        match what {
            What::Mod => profile
                .dso(&sample.location)
                .map_or_else(|| "[unknown]".to_string(), |d| d.short_name.clone()),
            What::Addr => match profile.dso(&sample.location) {
                Some(d) => format!("{}`0x{:x}", d.short_name, sample.location.file_offset),
                None => format!("0x{:x}", sample.ip),
            },
            _ => format!("0x{:x}", sample.ip),
        }
    }
}

impl SymbolSource for culprit_symbols::Symbolizer {
    fn lookup(&mut self, profile: &Profile, sample: &Sample, what: What) -> String {
        match what {
            What::Mod => NoSymbols.lookup(profile, sample, what),
            What::Addr => {
                let r = self.resolve(
                    profile,
                    culprit_symbols::Query::of(sample.location, sample.pid),
                );
                let sym = r.symbol.and_then(|id| self.symbol(id));
                let module = profile.dso(&sample.location).map(|d| d.short_name.as_str());
                match (module, sym, r.svma) {
                    (Some(m), Some(s), Some(a)) if a > s.start => {
                        format!("{m}`{}+0x{:x}", s.name, a - s.start)
                    }
                    (Some(m), Some(s), _) => format!("{m}`{}", s.name),
                    _ => NoSymbols.lookup(profile, sample, what),
                }
            }
            What::Sym => {
                let r = self.resolve(
                    profile,
                    culprit_symbols::Query::of(sample.location, sample.pid),
                );
                r.symbol
                    .and_then(|id| self.symbol(id))
                    .map_or_else(|| "[unknown]".to_string(), |s| s.name.to_string())
            }
            What::Srcline => {
                let frames = self.source(
                    profile,
                    sample.location.dso,
                    sample.location.file_offset,
                    false,
                );
                match frames.first() {
                    Some(f) => format!(
                        "{}:{}",
                        f.file.as_deref().unwrap_or("??"),
                        f.line.map_or_else(|| "?".to_string(), |l| l.to_string())
                    ),
                    None => "??:0".to_string(),
                }
            }
        }
    }
}

/// One slot of the direct-mapped symbol cache (`what` = u8::MAX: empty).
#[derive(Clone, Copy)]
struct FrontEntry {
    offset: u64,
    dso: u32,
    pid: i32,
    what: u8,
    id: u32,
}

const FRONT_BITS: u32 = 12;

const EMPTY_FRONT: FrontEntry = FrontEntry {
    offset: 0,
    dso: 0,
    pid: 0,
    what: u8::MAX,
    id: 0,
};

/// Run-time state shared by the compiled closures.
pub(crate) struct Rt {
    pub globals: Vec<i64>,
    pub this: Vec<i64>,
    pub selfs: FxHashMap<(i32, u32), i64>,
    pub self_limit: usize,
    pub self_dropped: u64,
    pub strings: Interner,
    /// Profile string id → interned id + 1 (0: not yet).
    comm_ids: Vec<u32>,
    /// Event index → interned id + 1.
    event_ids: Vec<u32>,
    loc_cache: FxHashMap<(What, Option<u32>, u64, i32), u32>,
    /// Direct-mapped front of `loc_cache` keyed by the sample's own (what, dso, offset, pid):
    /// one compare instead of hashing and probing for the locations seen over and over.
    loc_front: Box<[FrontEntry]>,
    /// Addresses named by `%a` (for printa's `%a` on keys), bounded by the key limit.
    pub addr_names: AddrNames,
    pub aggs: Vec<Agg>,
    pub out: String,
    pub exit: Option<i64>,
}

impl Rt {
    pub fn set_self(&mut self, key: (i32, u32), v: i64) {
        if v == 0 {
            // DTrace frees a thread-local variable assigned zero; so do we (bounded memory).
            self.selfs.remove(&key);
        } else if self.selfs.len() < self.self_limit || self.selfs.contains_key(&key) {
            self.selfs.insert(key, v);
        } else {
            self.self_dropped += 1;
        }
    }

    pub fn printa(&mut self, idxs: &[usize], pieces: Option<&[Piece]>) {
        for &i in idxs {
            if let Some(a) = self.aggs.get_mut(i) {
                a.printed = true;
            }
        }
        let mut out = std::mem::take(&mut self.out);
        match idxs {
            [idx] => {
                if let Some(agg) = self.aggs.get(*idx) {
                    match pieces {
                        Some(p) => agg.print_format(&mut out, p, &self.strings, &self.addr_names),
                        None => agg.print_default(&mut out, &self.strings),
                    }
                }
            }
            _ => {
                let aggs: Vec<&Agg> = idxs.iter().filter_map(|&i| self.aggs.get(i)).collect();
                print_many(&mut out, &aggs, pieces, &self.strings, &self.addr_names);
            }
        }
        self.out = out;
    }
}

/// The per-firing context the closures read.
pub(crate) struct Env<'a> {
    pub p: &'a Profile,
    pub s: &'a Sample,
    pub rt: &'a mut Rt,
    pub syms: &'a mut dyn SymbolSource,
    pub fault: Option<&'static str>,
}

impl Env<'_> {
    pub fn execname(&mut self) -> i64 {
        let id = self.s.comm as usize;
        if let Some(&v) = self.rt.comm_ids.get(id) {
            if v != 0 {
                return i64::from(v - 1);
            }
        }
        let v = self.rt.strings.intern(self.p.str(self.s.comm));
        if id < self.p.strings.len() {
            if self.rt.comm_ids.len() <= id {
                self.rt.comm_ids.resize(id + 1, 0);
            }
            self.rt.comm_ids[id] = v + 1;
        }
        i64::from(v)
    }

    pub fn event_name(&mut self) -> i64 {
        let id = self.s.event as usize;
        if let Some(&v) = self.rt.event_ids.get(id) {
            if v != 0 {
                return i64::from(v - 1);
            }
        }
        let name = self.p.events.get(id).map_or("", |e| e.name.as_str());
        let v = self.rt.strings.intern(name);
        if id < self.p.events.len() {
            if self.rt.event_ids.len() <= id {
                self.rt.event_ids.resize(id + 1, 0);
            }
            self.rt.event_ids[id] = v + 1;
        }
        i64::from(v)
    }

    pub fn symbol(&mut self, what: What) -> i64 {
        let loc: Location = self.s.location;
        let dso = loc.dso.map_or(u32::MAX, |d| d);
        let w = what as u8;
        let h = (loc.file_offset ^ (u64::from(dso) << 40) ^ (u64::from(w) << 56))
            .wrapping_mul(0x9e37_79b9_7f4a_7c15)
            >> (64 - FRONT_BITS);
        let slot = &self.rt.loc_front[h as usize];
        if slot.what == w
            && slot.offset == loc.file_offset
            && slot.dso == dso
            && slot.pid == self.s.pid
        {
            return i64::from(slot.id);
        }
        let id = self.symbol_slow(what);
        self.rt.loc_front[h as usize] = FrontEntry {
            offset: loc.file_offset,
            dso,
            pid: self.s.pid,
            what: w,
            id,
        };
        i64::from(id)
    }

    fn symbol_slow(&mut self, what: What) -> u32 {
        let loc: Location = self.s.location;
        // Per-process objects (JIT, anonymous) and unmapped addresses are per pid.
        let pid = match self.p.dso(&loc) {
            Some(d) => d.pid.unwrap_or(-1),
            None => self.s.pid,
        };
        let key = (what, loc.dso, loc.file_offset, pid);
        if let Some(&v) = self.rt.loc_cache.get(&key) {
            return v;
        }
        let name = self.syms.lookup(self.p, self.s, what);
        let v = self.rt.strings.intern(&name);
        self.rt.loc_cache.insert(key, v);
        v
    }

    /// The name of another location than the sample's (a confirmed offender), cached.
    pub fn symbol_at(&mut self, what: What, loc: Location, ip: u64, pid: i32) -> u32 {
        let key_pid = match self.p.dso(&loc) {
            Some(d) => d.pid.unwrap_or(-1),
            None => pid,
        };
        let key = (what, loc.dso, loc.file_offset, key_pid);
        if let Some(&v) = self.rt.loc_cache.get(&key) {
            return v;
        }
        let mut s = self.s.clone();
        s.location = loc;
        s.ip = ip;
        s.pid = pid;
        let name = self.syms.lookup(self.p, &s, what);
        let v = self.rt.strings.intern(&name);
        self.rt.loc_cache.insert(key, v);
        v
    }

    /// `%a`: the sample's IP is symbolized (module`symbol+0xoff); other addresses only if
    /// they were named before (the profile does not keep the process maps to look them up).
    pub fn addr_name(&mut self, v: i64) -> Option<u32> {
        let a = v as u64;
        if self.s.event != u16::MAX && a == self.s.ip {
            let id = self.symbol(What::Addr) as u32;
            if self.rt.addr_names.len() < self.rt.self_limit {
                self.rt.addr_names.insert(a, id);
            }
            return Some(id);
        }
        self.rt.addr_names.get(&a).copied()
    }
}

/// A sample with nothing in it, for BEGIN, END and tick clauses.
fn empty_sample(time: u64) -> Sample {
    Sample {
        event: u16::MAX,
        time,
        pid: -1,
        tid: -1,
        cpu: 0,
        period: 0,
        ip: 0,
        cpumode: CpuMode::Unknown,
        exact_ip: false,
        comm: u32::MAX,
        location: Location {
            dso: None,
            file_offset: 0,
        },
        ..Default::default()
    }
}

/// DTrace's per-firing line start (after the `CPU ID FUNCTION:NAME` header, printed once).
#[cold]
#[inline(never)]
fn firing_line(out: &mut String, header_done: &mut bool, cpu: u32, id: u32, name: &str) {
    if !*header_done {
        *header_done = true;
        out.push_str(&format!(
            "{:>3} {:>6} {:>32}\n",
            "CPU", "ID", "FUNCTION:NAME"
        ));
    }
    out.push_str(&format!("{cpu:>3} {id:>6} {name:>32} "));
}

struct Tick {
    clause: usize,
    probe: usize,
    every: u64,
    next: Option<u64>,
    skipped: u64,
}

/// A program bound to an input's events, with its state.
pub struct Runner<'p> {
    prog: &'p Program,
    rt: Rt,
    /// Per event: the clauses to run, in source order, with the probe of the clause that
    /// the event matched.
    dispatch: Vec<Vec<(usize, usize)>>,
    /// (clause, probe) pairs.
    begin: Vec<(usize, usize)>,
    end: Vec<(usize, usize)>,
    /// Per clause and probe: DTrace's probe id (1-based, source order) and `FUNCTION:NAME`.
    probe_names: Vec<Vec<(u32, String)>>,
    /// The `CPU ID FUNCTION:NAME` header was printed.
    header_done: bool,
    ticks: Vec<Tick>,
    notes: Vec<String>,
    /// Samples seen / samples that fired at least one clause.
    pub samples_seen: u64,
    /// Samples of events some clause probes.
    pub samples_matched: u64,
    faults: HashMap<(usize, &'static str), u64>,
    done: bool,
    /// Live mode: tick probes fire on the clock given to [`Runner::tick`], not on sample time.
    wall_ticks: bool,
}

/// Whether a recorded event's name is the probe's event: `cycles` matches `cycles`,
/// `cycles:u`, `cycles/period=1000/` and `cpu/cycles/`; `*` and `?` glob the whole name.
fn event_matches(pat: &str, name: &str) -> bool {
    let is_glob = pat.contains('*') || pat.contains('?');
    let same = |n: &str| if is_glob { glob(pat, n) } else { n == pat };
    if same(name) {
        return true;
    }
    // Drop `:modifiers` after the event (not inside a `/…/` term list).
    let bare = match name.rfind(':') {
        Some(i) if !name[i..].contains('/') => &name[..i],
        _ => name,
    };
    if same(bare) {
        return true;
    }
    if let Some((head, rest)) = bare.split_once('/') {
        let inner = rest.strip_suffix('/').unwrap_or(rest);
        // `event/period=N/` names the event first (only per-event settings inside);
        // `pmu/event/` names it inside; `pmu/event=0x3c/` only matches whole.
        let settings_only = inner.split(',').all(|t| {
            ["period=", "freq=", "name=", "call-graph=", "stack-size="]
                .iter()
                .any(|p| t.starts_with(p))
        });
        if (settings_only && same(head)) || (!inner.contains('=') && same(inner)) {
            return true;
        }
    }
    false
}

/// DTrace's `FUNCTION:NAME` of a probe as written: the last two of four `:`-separated parts
/// (`syscall::read:entry` → `read:entry`), else an empty function (`BEGIN` → `:BEGIN`,
/// `pmc:::cycles-1000` → `:cycles-1000`).
fn function_name(text: &str) -> String {
    let parts: Vec<&str> = text.split(':').collect();
    match parts.as_slice() {
        [_, _, f, n] => format!("{f}:{n}"),
        _ => format!(":{}", parts.last().copied().unwrap_or(text)),
    }
}

fn is_cpu_clock(e: &EventInfo) -> bool {
    (e.attr_type == culprit_decode::abi::perf_type::SOFTWARE && e.config == 0)
        || event_matches("cpu-clock", &e.name)
}

impl Program {
    /// Binds the program to the events of an input (`what` names the input in messages):
    /// every sample probe must match an event there, else an error lists the events present.
    /// A probe's period that differs from the recorded one gives a note (it filters nothing).
    pub fn runner(&self, events: &[EventInfo], what: &str) -> Result<Runner<'_>, ScriptError> {
        let mut dispatch: Vec<Vec<(usize, usize)>> = vec![Vec::new(); events.len()];
        let mut next_id = 0u32;
        let probe_names: Vec<Vec<(u32, String)>> = self
            .infos
            .iter()
            .map(|info| {
                info.probes
                    .iter()
                    .map(|(_, text)| {
                        next_id += 1;
                        (next_id, function_name(text))
                    })
                    .collect()
            })
            .collect();
        let mut notes = Vec::new();
        let mut begin = Vec::new();
        let mut end = Vec::new();
        let mut ticks = Vec::new();
        let present = || {
            let names: Vec<String> = events
                .iter()
                .map(|e| match e.pmu.as_deref() {
                    Some(p) if IbsKind::from_pmu(p).is_some() => format!("{} (IBS, {p})", e.name),
                    _ => e.name.clone(),
                })
                .collect();
            if names.is_empty() {
                "none".to_string()
            } else {
                names.join(", ")
            }
        };
        for (ci, info) in self.infos.iter().enumerate() {
            for (pi, (probe, text)) in info.probes.iter().enumerate() {
                let kind_of = |e: &EventInfo| e.pmu.as_deref().and_then(IbsKind::from_pmu);
                let (matched, want): (Vec<usize>, Option<(u64, bool)>) = match probe {
                    Probe::Begin => {
                        begin.push((ci, pi));
                        continue;
                    }
                    Probe::End => {
                        end.push((ci, pi));
                        continue;
                    }
                    Probe::Tick { ns } => {
                        ticks.push(Tick {
                            clause: ci,
                            probe: pi,
                            every: *ns,
                            next: None,
                            skipped: 0,
                        });
                        continue;
                    }
                    Probe::Pmc { event, period } => (
                        events
                            .iter()
                            .enumerate()
                            .filter(|(_, e)| kind_of(e).is_none() && event_matches(event, &e.name))
                            .map(|(i, _)| i)
                            .collect(),
                        period.map(|p| (p, false)),
                    ),
                    Probe::IbsOp { period } => (
                        events
                            .iter()
                            .enumerate()
                            .filter(|(_, e)| kind_of(e) == Some(IbsKind::Op))
                            .map(|(i, _)| i)
                            .collect(),
                        period.map(|p| (p, false)),
                    ),
                    Probe::IbsFetch { period } => (
                        events
                            .iter()
                            .enumerate()
                            .filter(|(_, e)| kind_of(e) == Some(IbsKind::Fetch))
                            .map(|(i, _)| i)
                            .collect(),
                        period.map(|p| (p, false)),
                    ),
                    Probe::Profile { hz } => (
                        events
                            .iter()
                            .enumerate()
                            .filter(|(_, e)| is_cpu_clock(e))
                            .map(|(i, _)| i)
                            .collect(),
                        Some((*hz, true)),
                    ),
                };
                if matched.is_empty() {
                    return Err(ScriptError::Input(format!(
                        "probe `{text}` (line {}): no such event in {what}; the events there are: {}",
                        info.line,
                        present()
                    )));
                }
                for &i in &matched {
                    // Clauses come in order: one already queued for this event is last (a
                    // scan of the whole list made 50,000 clauses quadratic).
                    if dispatch[i].last().is_none_or(|d| d.0 != ci) {
                        dispatch[i].push((ci, pi));
                    }
                    if let Some((v, freq)) = want {
                        let e = &events[i];
                        if e.period_or_freq != v || e.freq != freq {
                            let rec = if e.freq {
                                format!("at {} Hz", e.period_or_freq)
                            } else {
                                format!("with period {}", e.period_or_freq)
                            };
                            let asked = if freq {
                                format!("{v} Hz")
                            } else {
                                format!("period {v}")
                            };
                            let note = format!(
                                "probe `{text}` asks for {asked} but `{}` was recorded {rec}; offline, the suffix does not filter samples: all of them fire the probe",
                                e.name
                            );
                            if !notes.contains(&note) {
                                notes.push(note);
                            }
                        }
                    }
                }
            }
        }
        for d in &mut dispatch {
            d.sort_unstable();
        }
        let rt = Rt {
            globals: vec![0; self.n_globals],
            this: vec![0; self.max_this],
            selfs: HashMap::default(),
            self_limit: self.max_keys,
            self_dropped: 0,
            strings: self.strings.clone(),
            comm_ids: Vec::new(),
            event_ids: Vec::new(),
            loc_cache: HashMap::default(),
            loc_front: vec![EMPTY_FRONT; 1 << FRONT_BITS].into_boxed_slice(),
            addr_names: HashMap::default(),
            aggs: self
                .aggs
                .iter()
                .map(|a| Agg::new(a.name.clone(), a.func, a.key_types.clone(), self.max_keys))
                .collect(),
            out: String::new(),
            exit: None,
        };
        let _ = self.n_self;
        Ok(Runner {
            prog: self,
            rt,
            dispatch,
            begin,
            end,
            probe_names,
            header_done: false,
            ticks,
            notes,
            samples_seen: 0,
            samples_matched: 0,
            faults: HashMap::new(),
            done: false,
            wall_ticks: false,
        })
    }
}

impl Runner<'_> {
    /// Notes from binding (period suffixes that differ from the recording).
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// Runs clause `ci` (matched by its probe `probe`) for one sample or firing (inlined:
    /// it is the per-sample path; the rare per-firing line is out of line).
    #[inline(always)]
    fn fire(
        &mut self,
        ci: usize,
        probe: usize,
        p: &Profile,
        s: &Sample,
        syms: &mut dyn SymbolSource,
    ) {
        let clause = &self.prog.clauses[ci];
        let line = !self.prog.quiet && clause.records;
        let mut env = Env {
            p,
            s,
            rt: &mut self.rt,
            syms,
            fault: None,
        };
        if clause.n_this > 0 {
            env.rt.this[..clause.n_this].fill(0);
        }
        if let Some(pred) = &clause.pred {
            let v = pred(&mut env);
            if let Some(f) = env.fault {
                *self.faults.entry((ci, f)).or_default() += 1;
                return;
            }
            if v == 0 {
                return;
            }
        }
        if line {
            // DTrace without quiet: `CPU ID FUNCTION:NAME` (once), then per firing the CPU,
            // probe id and FUNCTION:NAME, what the clause printed, and a newline.
            let (id, name) = self.probe_names[ci]
                .get(probe)
                .map_or((0, ""), |(i, n)| (*i, n.as_str()));
            firing_line(&mut env.rt.out, &mut self.header_done, s.cpu, id, name);
        }
        for st in &clause.body {
            st(&mut env);
            if let Some(f) = env.fault {
                *self.faults.entry((ci, f)).or_default() += 1;
                if line {
                    env.rt.out.push('\n');
                }
                return;
            }
        }
        if line {
            env.rt.out.push('\n');
        }
    }

    /// Runs the BEGIN clauses.
    pub fn begin(&mut self, p: &Profile, syms: &mut dyn SymbolSource) {
        let s = empty_sample(0);
        for i in 0..self.begin.len() {
            let (ci, pi) = self.begin[i];
            self.fire(ci, pi, p, &s, syms);
        }
        if self.rt.exit.is_some() {
            self.done = true;
        }
    }

    /// Live mode (`culprit trace` while recording): tick-N probes fire from [`Runner::tick`]
    /// on the caller's clock (wall time) instead of on sample time.
    pub fn set_wall_clock_ticks(&mut self, on: bool) {
        self.wall_ticks = on;
    }

    /// Fires the tick probes due at `now` (nanoseconds on the caller's clock; see
    /// [`Runner::set_wall_clock_ticks`]). Returns false once the program called `exit()`.
    pub fn tick(&mut self, p: &Profile, now: u64, syms: &mut dyn SymbolSource) -> bool {
        if self.done {
            return false;
        }
        if !self.ticks.is_empty() {
            self.run_ticks(p, now, syms);
        }
        !self.done
    }

    /// Runs the clauses of one sample (and the ticks due before it). Returns false once the
    /// program called `exit()`: the caller should stop and call [`Runner::end`].
    #[inline(always)]
    pub fn sample(&mut self, p: &Profile, s: &Sample, syms: &mut dyn SymbolSource) -> bool {
        if self.done {
            return false;
        }
        self.samples_seen += 1;
        if !self.ticks.is_empty() && s.time > 0 && !self.wall_ticks {
            self.run_ticks(p, s.time, syms);
        }
        let Some(clauses) = self.dispatch.get(s.event as usize) else {
            return true;
        };
        if clauses.is_empty() {
            return true;
        }
        self.samples_matched += 1;
        if clauses.len() == 1 {
            let (ci, pi) = clauses[0];
            self.fire(ci, pi, p, s, syms);
        } else {
            for i in 0..clauses.len() {
                let (ci, pi) = self.dispatch[s.event as usize][i];
                self.fire(ci, pi, p, s, syms);
            }
        }
        if self.rt.exit.is_some() {
            self.done = true;
            return false;
        }
        true
    }

    fn run_ticks(&mut self, p: &Profile, now: u64, syms: &mut dyn SymbolSource) {
        for t in 0..self.ticks.len() {
            let tick = &mut self.ticks[t];
            let next = *tick.next.get_or_insert(now.saturating_add(tick.every));
            if next > now {
                continue;
            }
            // Catch up over gaps, but never fire more than 1000 times at once.
            let due = (now - next) / tick.every + 1;
            let fire = due.min(1000);
            tick.skipped += due - fire;
            let first = next.saturating_add((due - fire).saturating_mul(tick.every));
            tick.next = Some(next.saturating_add(due.saturating_mul(tick.every)));
            let (ci, pi) = (tick.clause, tick.probe);
            for k in 0..fire {
                let s = empty_sample(first.saturating_add(k.saturating_mul(self.ticks[t].every)));
                self.fire(ci, pi, p, &s, syms);
                if self.rt.exit.is_some() {
                    self.done = true;
                    return;
                }
            }
        }
    }

    /// Runs the END clauses; in text mode (`auto_print`), then prints the aggregations that
    /// were never printed with printa, as DTrace does at exit.
    pub fn end(&mut self, p: &Profile, syms: &mut dyn SymbolSource, auto_print: bool) {
        let s = empty_sample(0);
        self.done = false;
        for i in 0..self.end.len() {
            let (ci, pi) = self.end[i];
            self.fire(ci, pi, p, &s, syms);
        }
        self.done = true;
        if auto_print {
            for i in 0..self.rt.aggs.len() {
                if !self.rt.aggs[i].printed && !self.rt.aggs[i].map.is_empty() {
                    self.rt.printa(&[i], None);
                }
            }
        }
        for t in &self.ticks {
            if t.skipped > 0 {
                self.notes.push(format!(
                    "clause at line {}: {} tick firings were skipped over gaps in the samples (at most 1000 per gap)",
                    self.prog.infos[t.clause].line, t.skipped
                ));
            }
        }
        let mut faults: Vec<_> = self.faults.iter().collect();
        faults.sort();
        for ((ci, what), n) in faults {
            self.notes.push(format!(
                "clause at line {}: {n} firings stopped by a run-time error ({what})",
                self.prog.infos[*ci].line
            ));
        }
        for a in &self.rt.aggs {
            if let Some(n) = a.dropped_note() {
                self.notes.push(n);
            }
            if let Some(n) = a.saturated_note() {
                self.notes.push(n);
            }
        }
        if self.rt.self_dropped > 0 {
            self.notes.push(format!(
                "self-> variable limit {} reached: {} assignments dropped",
                self.rt.self_limit, self.rt.self_dropped
            ));
        }
    }

    /// Text printed since the last call.
    pub fn take_output(&mut self) -> String {
        std::mem::take(&mut self.rt.out)
    }

    /// Bytes of output waiting.
    pub fn pending_output(&self) -> usize {
        self.rt.out.len()
    }

    /// The `exit()` value, if the program called it.
    pub fn exit_code(&self) -> Option<i64> {
        self.rt.exit
    }

    /// All aggregations as JSON objects (see docs/trace.md).
    pub fn aggregations_json(&self) -> Vec<serde_json::Value> {
        self.rt
            .aggs
            .iter()
            .map(|a| a.to_json(&self.rt.strings))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::event_matches;

    #[test]
    fn event_names_as_perf_writes_them() {
        assert!(event_matches("cycles", "cycles"));
        assert!(event_matches("cycles", "cycles:u"));
        assert!(event_matches("task-clock", "task-clock/period=100000/"));
        assert!(event_matches("page-faults", "page-faults/period=20/:u"));
        assert!(event_matches("cycles", "cpu/cycles/"));
        assert!(event_matches("cpu/event=0x3c/", "cpu/event=0x3c/"));
        assert!(!event_matches("cycles", "instructions"));
        assert!(!event_matches("cpu", "cpu/event=0x3c/"));
        assert!(event_matches("*-clock", "task-clock/period=100000/"));
    }
}
