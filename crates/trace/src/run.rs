//! Running a compiled program: binding probes to an input's events, the per-sample
//! dispatch, ticks, END, output and notes.

use std::collections::HashMap;

use culprit_decode::ibs::IbsKind;
use culprit_decode::model::{CpuMode, EventInfo, Location, Profile, Sample};

use crate::agg::{Agg, MemoryBudget};
use crate::env::{Env, Rt, SymbolSource};
use crate::error::ScriptError;
use crate::ir::{ClauseInfo, Program};
use crate::probe::{glob, Probe};

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

/// Whether a recorded event's name is the probe's event, by the rule of every verb's `-e`
/// ([`culprit_decode::model::event_name_matches`]): `cycles` matches `cycles`, `cycles:u`,
/// `cycles/period=1000/` and `cpu/cycles/`; `*` and `?` glob the whole name.
fn event_matches(pat: &str, name: &str) -> bool {
    let is_glob = pat.contains('*') || pat.contains('?');
    culprit_decode::model::event_name_matches(
        name,
        |n| if is_glob { glob(pat, n) } else { n == pat },
    )
}

/// DTrace's `FUNCTION:NAME` of a probe as written: the last two of four `:`-separated parts
/// (`syscall::read:entry` → `read:entry`), else an empty function (`BEGIN` → `:BEGIN`,
/// `pmc:::cycles-1000` → `:cycles-1000`; `mem:::0x10:rw` → `:0x10:rw`).
fn function_name(text: &str) -> String {
    let parts: Vec<&str> = text.split(':').collect();
    match parts.as_slice() {
        [_, _, f, n] => format!("{f}:{n}"),
        // `mem:::0x404048:rw`: the name is the address and its access.
        [_, _, f, name @ ..] if name.len() > 1 => format!("{f}:{}", name.join(":")),
        _ => format!(":{}", parts.last().copied().unwrap_or(text)),
    }
}

/// Whether `e` is a breakpoint on `addr` (bp_addr is config1) with these access letters
/// (as its name spells them, `mem:0x404048:rw`; any access when the probe names none).
fn breakpoint_matches(e: &EventInfo, addr: u64, access: Option<&str>) -> bool {
    let letters = |s: &str| -> Vec<char> {
        let mut v: Vec<char> = s.chars().collect();
        v.sort_unstable();
        v
    };
    e.attr_type == culprit_decode::abi::perf_type::BREAKPOINT
        && e.config1 == addr
        && access.is_none_or(|want| {
            let have = e.name.split(':').nth(2).unwrap_or("rw");
            letters(have) == letters(want)
        })
}

fn is_cpu_clock(e: &EventInfo) -> bool {
    (e.attr_type == culprit_decode::abi::perf_type::SOFTWARE && e.config == 0)
        || event_matches("cpu-clock", &e.name)
}

/// The IBS kind of an event recorded by an IBS PMU (none for any other event).
fn ibs_kind(e: &EventInfo) -> Option<IbsKind> {
    e.pmu.as_deref().and_then(IbsKind::from_pmu)
}

/// The indices of the events that `keep` accepts.
fn events_where(events: &[EventInfo], keep: impl Fn(&EventInfo) -> bool) -> Vec<usize> {
    events
        .iter()
        .enumerate()
        .filter(|(_, e)| keep(e))
        .map(|(i, _)| i)
        .collect()
}

/// The events of an input, for the message of a probe that matches none: their names
/// (IBS ones with their PMU), or `none`.
fn present_events(events: &[EventInfo]) -> String {
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
}

/// The note for a probe (`text`) that asks for period or frequency `v` (`freq`) when event
/// `e` was recorded with another one (offline, the suffix filters nothing); none when they
/// agree.
fn period_note(text: &str, e: &EventInfo, v: u64, freq: bool) -> Option<String> {
    if e.period_or_freq == v && e.freq == freq {
        return None;
    }
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
    Some(format!(
        "probe `{text}` asks for {asked} but `{}` was recorded {rec}; offline, the suffix does not filter samples: all of them fire the probe",
        e.name
    ))
}

/// What binding a program's probes to an input's events gathers.
struct Bindings {
    /// Per event: the (clause, probe) pairs it fires, at most one per clause.
    dispatch: Vec<Vec<(usize, usize)>>,
    /// The (clause, probe) pairs of BEGIN probes.
    begin: Vec<(usize, usize)>,
    /// The (clause, probe) pairs of END probes.
    end: Vec<(usize, usize)>,
    ticks: Vec<Tick>,
    /// Period suffixes that differ from the recording, each once.
    notes: Vec<String>,
}

impl Bindings {
    /// Nothing bound yet, for an input with `n_events` events.
    fn new(n_events: usize) -> Self {
        Bindings {
            dispatch: vec![Vec::new(); n_events],
            begin: Vec::new(),
            end: Vec::new(),
            ticks: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// Binds probe `pi` of clause `ci` (`info`): BEGIN, END and ticks to their lists, a
    /// sample probe to the events it matches (an error naming the input, `what`, when there
    /// is none), with a note per recorded period it asks otherwise.
    fn bind_probe(
        &mut self,
        events: &[EventInfo],
        what: &str,
        info: &ClauseInfo,
        ci: usize,
        pi: usize,
    ) -> Result<(), ScriptError> {
        let (probe, text) = &info.probes[pi];
        let (matched, want): (Vec<usize>, Option<(u64, bool)>) = match probe {
            Probe::Begin => {
                self.begin.push((ci, pi));
                return Ok(());
            }
            Probe::End => {
                self.end.push((ci, pi));
                return Ok(());
            }
            Probe::Tick { ns } => {
                self.ticks.push(Tick {
                    clause: ci,
                    probe: pi,
                    every: *ns,
                    next: None,
                    skipped: 0,
                });
                return Ok(());
            }
            Probe::Pmc { event, period } => (
                events_where(events, |e| {
                    ibs_kind(e).is_none() && event_matches(event, &e.name)
                }),
                period.map(|p| (p, false)),
            ),
            Probe::IbsOp { period } => (
                events_where(events, |e| ibs_kind(e) == Some(IbsKind::Op)),
                period.map(|p| (p, false)),
            ),
            Probe::IbsFetch { period } => (
                events_where(events, |e| ibs_kind(e) == Some(IbsKind::Fetch)),
                period.map(|p| (p, false)),
            ),
            Probe::Tracepoint { event } => (
                events_where(events, |e| {
                    e.attr_type == culprit_decode::abi::perf_type::TRACEPOINT
                        && event_matches(event, &e.name)
                }),
                None,
            ),
            Probe::Breakpoint { addr, access, .. } => (
                events_where(events, |e| breakpoint_matches(e, *addr, access.as_deref())),
                None,
            ),
            Probe::Profile { hz } => (events_where(events, is_cpu_clock), Some((*hz, true))),
        };
        if matched.is_empty() {
            return Err(ScriptError::Input(format!(
                "probe `{text}` (line {}): no such event in {what}; the events there are: {}",
                info.line,
                present_events(events)
            )));
        }
        for &i in &matched {
            // Clauses come in order: one already queued for this event is last (a
            // scan of the whole list made 50,000 clauses quadratic).
            if self.dispatch[i].last().is_none_or(|d| d.0 != ci) {
                self.dispatch[i].push((ci, pi));
            }
            if let Some((v, freq)) = want {
                if let Some(note) = period_note(text, &events[i], v, freq) {
                    if !self.notes.contains(&note) {
                        self.notes.push(note);
                    }
                }
            }
        }
        Ok(())
    }
}

impl Program {
    /// Binds the program to the events of an input (`what` names the input in messages):
    /// every sample probe must match an event there, else an error lists the events present.
    /// A probe's period that differs from the recorded one gives a note (it filters nothing).
    pub fn runner(&self, events: &[EventInfo], what: &str) -> Result<Runner<'_>, ScriptError> {
        let probe_names = self.probe_names();
        let mut b = Bindings::new(events.len());
        for (ci, info) in self.infos.iter().enumerate() {
            for pi in 0..info.probes.len() {
                b.bind_probe(events, what, info, ci, pi)?;
            }
        }
        for d in &mut b.dispatch {
            d.sort_unstable();
        }
        let rt = self.new_runtime();
        let _ = self.n_self;
        Ok(Runner {
            prog: self,
            rt,
            dispatch: b.dispatch,
            begin: b.begin,
            end: b.end,
            probe_names,
            header_done: false,
            ticks: b.ticks,
            notes: b.notes,
            samples_seen: 0,
            samples_matched: 0,
            faults: HashMap::new(),
            done: false,
            wall_ticks: false,
        })
    }

    /// Per clause and probe: DTrace's probe id (1-based, in source order) and its
    /// `FUNCTION:NAME`.
    fn probe_names(&self) -> Vec<Vec<(u32, String)>> {
        let mut next_id = 0u32;
        self.infos
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
            .collect()
    }

    /// The run-time state: the global and `this->` variables, the key limit, the strings
    /// and one aggregation per declared one, all sharing the `agg_memory` budget.
    fn new_runtime(&self) -> Rt {
        let budget = MemoryBudget::new(self.agg_memory);
        let aggs = self
            .aggs
            .iter()
            .map(|a| {
                Agg::with_budget(
                    a.name.clone(),
                    a.func,
                    a.key_types.clone(),
                    self.max_keys,
                    budget.clone(),
                )
            })
            .collect();
        Rt::new(
            self.n_globals,
            self.max_this,
            self.max_keys,
            self.strings.clone(),
            aggs,
        )
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

    /// Bytes the aggregations hold, as estimated against the `agg_memory` budget (entries
    /// and remembered dropped keys); never more than the budget.
    pub fn aggregation_bytes(&self) -> usize {
        self.rt.aggs.first().map_or(0, |a| a.budget.used())
    }

    /// The `exit()` value, if the program called it.
    pub fn exit_code(&self) -> Option<i64> {
        self.rt.exit
    }

    /// All aggregations as JSON objects (see docs/trace.md).
    pub fn aggregations_json(&self) -> Vec<crate::agg::AggregationJson> {
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
