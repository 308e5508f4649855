//! `culprit top` (a live, refreshing view of the hottest functions per event, with an optional
//! panel of worst offenders) and `culprit report --offenders` (the paired-sampling detector
//! over a perf.data file). Both feed the bounded-memory detector of
//! `culprit_analysis::offenders`; docs/offenders.md has the math, the JSON schema and the
//! evaluation.
//!
//! Live samples: the recorder (`culprit_collect::record`) runs in a thread and writes a
//! temporary perf.data file as it drains the rings; every refresh reads the samples appended
//! since the previous one with the streaming decoder. Memory is bounded (a capped function
//! table, O(1) detectors); the re-read costs CPU time proportional to the file so far, which
//! is why `top` samples at 1000 Hz by default (see docs/offenders.md, "Limits").

use std::collections::HashMap;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use clap::ValueEnum;
use culprit_analysis::offenders::{self, Config, Detectors, Observation, Offender, Step, Unit};
use culprit_collect::events::{self, SampleRate};
use culprit_collect::record::{CallGraph, RecordOptions, Target};
use culprit_decode::model::{DsoId, EventId, Location, Profile, Sample};
use culprit_symbols::{Query, Symbolizer, SymbolizerOptions};
use serde_json::{json, Value};

/// What `--t1`/`--t2` count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum UnitArg {
    /// Samples (each sample adds 1).
    Samples,
    /// Events (each sample adds its period).
    Events,
}

/// Output of `culprit top` in plain mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TopFormat {
    /// Text blocks.
    Text,
    /// One JSON object per refresh (JSON lines).
    Json,
}

/// Detector settings shared by `report --offenders` and `top --offenders`.
#[derive(Debug, Clone, Copy)]
pub struct OffenderSettings {
    /// First counter's terminal value (None: the default for the unit).
    pub t1: Option<u64>,
    /// Second counter's terminal value.
    pub t2: Option<u64>,
    /// What they count.
    pub unit: UnitArg,
}

impl OffenderSettings {
    /// The detector config for an event whose first sample has `period`: explicit thresholds
    /// are used as given; defaults are in samples, scaled by the period in events mode.
    fn config(&self, period: u64) -> anyhow::Result<Config> {
        let scale = match self.unit {
            UnitArg::Samples => 1,
            UnitArg::Events => period.max(1),
        };
        let c = Config {
            t1: self
                .t1
                .unwrap_or(offenders::DEFAULT_T1_SAMPLES.saturating_mul(scale)),
            t2: self
                .t2
                .unwrap_or(offenders::DEFAULT_T2_SAMPLES.saturating_mul(scale)),
            unit: match self.unit {
                UnitArg::Samples => Unit::Samples,
                UnitArg::Events => Unit::Events,
            },
            capacity: offenders::DEFAULT_CAPACITY,
        };
        c.validate()?;
        Ok(c)
    }
}

/// Samples buffered per event before its detector exists, when default thresholds in events
/// need the event's typical period (frequency-mode periods ramp up from 1 at the start).
const PERIOD_PROBE: usize = 32;

/// Per-event detectors. With explicit thresholds, or in samples, a detector starts at the
/// event's first sample; with default thresholds in events it starts after [`PERIOD_PROBE`]
/// samples (replayed into it), scaled by their median period.
struct EventDetectors {
    settings: OffenderSettings,
    per_event: Vec<Option<Detectors>>,
    pending: Vec<Vec<Observation>>,
}

impl EventDetectors {
    fn new(settings: OffenderSettings) -> anyhow::Result<EventDetectors> {
        settings.config(1)?; // reject bad explicit thresholds before any work
        Ok(EventDetectors {
            settings,
            per_event: Vec::new(),
            pending: Vec::new(),
        })
    }

    fn needs_probe(&self) -> bool {
        self.settings.unit == UnitArg::Events
            && (self.settings.t1.is_none() || self.settings.t2.is_none())
    }

    fn observe(&mut self, s: &Sample) -> Option<Step> {
        let i = s.event as usize;
        if self.per_event.len() <= i {
            self.per_event.resize_with(i + 1, || None);
            self.pending.resize_with(i + 1, Vec::new);
        }
        let o = Observation {
            location: s.location,
            ip: s.ip,
            pid: s.pid,
            period: s.period,
            time: s.time,
        };
        if self.per_event[i].is_none() && self.needs_probe() {
            self.pending[i].push(o);
            if self.pending[i].len() < PERIOD_PROBE {
                return None;
            }
            return self.start(i);
        }
        let settings = self.settings;
        let d = self.per_event[i].get_or_insert_with(|| {
            // Validated in new(); a scaled default cannot fail (t2 <= t1 scale alike).
            Detectors::new(settings.config(s.period).unwrap_or_default())
        });
        Some(d.observe(s.event, &o))
    }

    /// Creates event `i`'s detector from its buffered samples and replays them.
    fn start(&mut self, i: usize) -> Option<Step> {
        let pending = std::mem::take(&mut self.pending[i]);
        let mut periods: Vec<u64> = pending.iter().map(|o| o.period).collect();
        periods.sort_unstable();
        let median = periods.get(periods.len() / 2).copied().unwrap_or(1);
        let mut d = Detectors::new(self.settings.config(median).unwrap_or_default());
        let mut last = None;
        for o in &pending {
            last = Some(d.observe(i as EventId, o));
        }
        self.per_event[i] = Some(d);
        last
    }

    /// Starts the detectors of events that had fewer than [`PERIOD_PROBE`] samples.
    fn flush(&mut self) {
        for i in 0..self.pending.len() {
            if !self.pending[i].is_empty() {
                self.start(i);
            }
        }
    }

    fn get(&self, e: EventId) -> Option<&offenders::Detector> {
        self.per_event.get(e as usize)?.as_ref()?.get(e)
    }

    fn memory_bytes(&self) -> usize {
        self.per_event.capacity() * std::mem::size_of::<Option<Detectors>>()
            + self.pending.capacity() * std::mem::size_of::<Vec<Observation>>()
            + self
                .pending
                .iter()
                .map(|v| v.capacity() * std::mem::size_of::<Observation>())
                .sum::<usize>()
            + self
                .per_event
                .iter()
                .flatten()
                .map(|d| d.memory_bytes())
                .sum::<usize>()
    }
}

/// A resolved location for display: DSO short name, ELF address, symbol.
struct Place {
    dso: String,
    addr: u64,
    symbol: Option<String>,
}

fn place(profile: &Profile, sym: &mut Symbolizer, loc: Location, pid: i32) -> Place {
    let r = sym.resolve(profile, Query::of(loc, pid));
    Place {
        dso: dso_short(profile, loc.dso),
        addr: r.svma.unwrap_or(loc.file_offset),
        symbol: r
            .symbol
            .and_then(|id| sym.symbol(id))
            .map(|s| s.name.clone()),
    }
}

fn dso_short(profile: &Profile, dso: Option<DsoId>) -> String {
    dso.and_then(|d| profile.dsos.get(d as usize))
        .map(|d| d.short_name.clone())
        .unwrap_or_else(|| "[unknown]".to_string())
}

// ---------------------------------------------------------------------------------------
// culprit report --offenders

/// Options of `culprit report --offenders` (taken from the report flags).
pub struct OffendersReport<'a> {
    /// Input file.
    pub input: &'a Path,
    /// `-e`: only these events (empty: all).
    pub events: &'a [String],
    /// Thresholds.
    pub settings: OffenderSettings,
    /// Also build the exact histogram and compare (precision, recall).
    pub exact: bool,
    /// JSON instead of text.
    pub json: bool,
}

/// Histogram key: (DSO, file offset).
type AddrKey = (Option<DsoId>, u64);
/// Histogram value: (samples, period, a pid that sampled it, index of its first sample).
type AddrCount = (u64, u64, i32, u64);

/// The exact per-address histogram of one event, for the evaluation.
#[derive(Default)]
struct Exact {
    hist: HashMap<AddrKey, AddrCount>,
}

/// Runs `culprit report --offenders`.
pub fn report_offenders(o: &OffendersReport) -> anyhow::Result<ExitCode> {
    let mut dets = EventDetectors::new(o.settings)?;
    let mut exact: Vec<Exact> = Vec::new();
    let mut wanted: Vec<Option<bool>> = Vec::new();
    let mut observed: Vec<u64> = Vec::new();
    let profile = culprit_decode::read_file_streaming(o.input, &mut |_, _| {}, &mut |p, s| {
        let i = s.event as usize;
        if wanted.len() <= i {
            wanted.resize(i + 1, None);
            observed.resize(i + 1, 0);
        }
        let want = *wanted[i].get_or_insert_with(|| {
            o.events.is_empty() || p.events.get(i).is_some_and(|e| o.events.contains(&e.name))
        });
        if !want {
            return;
        }
        observed[i] += 1;
        dets.observe(s);
        if o.exact {
            if exact.len() <= i {
                exact.resize_with(i + 1, Exact::default);
            }
            let e = exact[i]
                .hist
                .entry((s.location.dso, s.location.file_offset))
                .or_insert((0, 0, s.pid, observed[i]));
            e.0 += 1;
            e.1 += s.period;
        }
    })
    .with_context(|| format!("cannot read {}", o.input.display()))?;
    dets.flush();
    for w in o.events {
        if !profile.events.iter().any(|e| &e.name == w) {
            let names: Vec<&str> = profile.events.iter().map(|e| e.name.as_str()).collect();
            bail!("no event '{w}' in the file (events: {})", names.join(", "));
        }
    }
    let mut sym = Symbolizer::new(SymbolizerOptions::default());
    let (t0, t_end) = profile.meta.time_range.unwrap_or((0, 0));
    let span = t_end.saturating_sub(t0).max(1) as f64;
    let mut events_json = Vec::new();
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    for (ei, info) in profile.events.iter().enumerate() {
        let Some(d) = dets.get(ei as EventId) else {
            continue;
        };
        let cfg = d.config();
        let ranked = d.ranked();
        let total_obs = observed.get(ei).copied().unwrap_or(0).max(1);
        let rows: Vec<(Offender, Place)> = ranked
            .into_iter()
            .map(|x| {
                let pl = place(&profile, &mut sym, x.location, x.pid);
                (x, pl)
            })
            .collect();
        // The exact comparison.
        let cmp = if o.exact {
            exact
                .get(ei)
                .map(|h| compare(h, &rows, cfg, &profile, &mut sym, total_obs, t0, span))
        } else {
            None
        };
        if o.json {
            let offs: Vec<Value> = rows
                .iter()
                .map(|(x, pl)| {
                    json!({
                        "ip": format!("{:#x}", pl.addr),
                        "dso": pl.dso,
                        "symbol": pl.symbol,
                        "pid": x.pid,
                        "confirmations": x.confirmations,
                        "count1": x.count1,
                        "count2": x.count2,
                        "first_time_ns": x.first_time,
                        "last_time_ns": x.last_time,
                        "first_time_fraction": round4((x.first_time.saturating_sub(t0)) as f64 / span),
                        "first_observation": x.first_observation,
                    })
                })
                .collect();
            let mut ev = json!({
                "name": info.name,
                "samples": observed.get(ei).copied().unwrap_or(0),
                "t1": cfg.t1,
                "t2": cfg.t2,
                "unit": cfg.unit,
                "rounds": d.rounds(),
                "confirmations": d.confirmations(),
                "evictions": d.evictions(),
                "detector_bytes": d.memory_bytes(),
                "offenders": offs,
            });
            if let Some(c) = &cmp {
                ev["exact"] = c.json.clone();
            }
            events_json.push(ev);
        } else {
            writeln!(
                out,
                "# Event '{}': {} samples; T1={} T2={} ({}); {} rounds, {} confirmations; detector {} bytes",
                info.name,
                observed.get(ei).copied().unwrap_or(0),
                cfg.t1,
                cfg.t2,
                unit_name(cfg.unit),
                d.rounds(),
                d.confirmations(),
                d.memory_bytes()
            )?;
            writeln!(
                out,
                "# {:>6} {:>7} {:>9}  {:<20} {:<18} Symbol",
                "Conf", "First%", "FirstObs", "Shared Object", "Address"
            )?;
            for (x, pl) in &rows {
                writeln!(
                    out,
                    "  {:>6} {:>6.2}% {:>9}  {:<20} {:<18} {}",
                    x.confirmations,
                    100.0 * (x.first_time.saturating_sub(t0)) as f64 / span,
                    x.first_observation,
                    pl.dso,
                    format!("{:#x}", pl.addr),
                    pl.symbol.as_deref().unwrap_or("[unknown]")
                )?;
            }
            if rows.is_empty() {
                writeln!(out, "  (no offender confirmed)")?;
            }
            if let Some(c) = &cmp {
                for line in &c.text {
                    writeln!(out, "# {line}")?;
                }
            }
            writeln!(out)?;
        }
    }
    if o.json {
        let v = json!({
            "file": o.input.display().to_string(),
            "duration_ns": profile.meta.time_range.map(|(a, b)| b.saturating_sub(a)),
            "events": events_json,
            "detectors_bytes": dets.memory_bytes(),
        });
        serde_json::to_writer_pretty(&mut out, &v)?;
        writeln!(out)?;
    }
    out.flush()?;
    for w in profile.warnings.iter().chain(sym.warnings()) {
        eprintln!("culprit: warning: {w}");
    }
    if let Some(stop) = &profile.stopped {
        eprintln!(
            "culprit: error: {}: reading stopped at byte offset {}: {}",
            o.input.display(),
            stop.offset,
            stop.reason
        );
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

fn unit_name(u: Unit) -> &'static str {
    match u {
        Unit::Samples => "samples",
        Unit::Events => "events",
    }
}

fn round4(x: f64) -> f64 {
    (x * 10_000.0).round() / 10_000.0
}

struct Comparison {
    json: Value,
    text: Vec<String>,
}

/// Detector vs the exact top-k of the same samples.
#[allow(clippy::too_many_arguments)]
fn compare(
    h: &Exact,
    rows: &[(Offender, Place)],
    cfg: Config,
    profile: &Profile,
    sym: &mut Symbolizer,
    total_obs: u64,
    t0: u64,
    span: f64,
) -> Comparison {
    let weight = |v: &AddrCount| match cfg.unit {
        Unit::Samples => v.0,
        Unit::Events => v.1,
    };
    let total: u64 = h.hist.values().map(weight).sum::<u64>().max(1);
    let mut all: Vec<(&AddrKey, &AddrCount)> = h.hist.iter().collect();
    all.sort_by(|a, b| weight(b.1).cmp(&weight(a.1)).then(a.0.cmp(b.0)));
    let top: Vec<Location> = all
        .iter()
        .take(5)
        .map(|(k, _)| Location {
            dso: k.0,
            file_offset: k.1,
        })
        .collect();
    let reported: Vec<Location> = rows.iter().map(|(x, _)| x.location).collect();
    let share = |l: &Location| {
        h.hist
            .get(&(l.dso, l.file_offset))
            .map_or(0.0, |v| weight(v) as f64 / total as f64)
    };
    let threshold = cfg.t2 as f64 / cfg.t1 as f64;
    let in_top5 = reported.iter().filter(|l| top.contains(l)).count();
    let significant = reported.iter().filter(|l| share(l) >= threshold).count();
    let top1 = top
        .first()
        .and_then(|t| rows.iter().find(|(x, _)| x.location == *t));
    let recall5 = top.iter().filter(|t| reported.contains(t)).count();
    // Detection delay counted from the exact top-1's first sample (a program's set-up phase
    // before its hot code runs is no fault of the detector).
    let first_seen = all.first().map_or(0, |(_, v)| v.3);
    let delay = top1.map(|(x, _)| {
        round4(
            x.first_observation.saturating_sub(first_seen) as f64
                / total_obs.saturating_sub(first_seen).max(1) as f64,
        )
    });
    let nrep = reported.len().max(1) as f64;
    let top_json: Vec<Value> = all
        .iter()
        .take(5)
        .map(|(k, v)| {
            let loc = Location {
                dso: k.0,
                file_offset: k.1,
            };
            let pl = place(profile, sym, loc, v.2);
            json!({
                "ip": format!("{:#x}", pl.addr),
                "dso": pl.dso,
                "symbol": pl.symbol,
                "samples": v.0,
                "period": v.1,
                "percent": round4(100.0 * weight(v) as f64 / total as f64),
                "reported": reported.contains(&loc),
            })
        })
        .collect();
    let hist_bytes = offenders::histogram_bytes(h.hist.len());
    let json = json!({
        "distinct_addresses": h.hist.len(),
        "histogram_bytes": hist_bytes,
        "top": top_json,
        "recall_top1": if top1.is_some() { 1.0 } else { 0.0 },
        "recall_top5": round4(recall5 as f64 / top.len().max(1) as f64),
        "precision_top5": round4(in_top5 as f64 / nrep),
        "precision_significant": round4(significant as f64 / nrep),
        "significance_threshold": round4(threshold),
        "top1_first_observation": top1.map(|(x, _)| x.first_observation),
        "top1_first_observation_fraction": top1.map(|(x, _)| round4(x.first_observation as f64 / total_obs as f64)),
        "top1_first_time_fraction": top1.map(|(x, _)| round4(x.first_time.saturating_sub(t0) as f64 / span)),
        "top1_first_seen_observation": all.first().map(|(_, v)| v.3),
        "top1_detection_delay_fraction": delay,
    });
    let text = vec![
        format!(
            "exact: {} distinct addresses, full histogram {} bytes; top-1 {}; recall top-5 {}/{}; precision {}/{} in top-5, {}/{} with share >= T2/T1 = {:.1}%",
            h.hist.len(),
            hist_bytes,
            match top1 {
                Some((x, _)) => format!(
                    "found at sample {} ({:.2}% of the samples, {:.2}% of the time; {} samples after its first, {:.2}% of the rest)",
                    x.first_observation,
                    100.0 * x.first_observation as f64 / total_obs as f64,
                    100.0 * x.first_time.saturating_sub(t0) as f64 / span,
                    x.first_observation.saturating_sub(first_seen),
                    100.0 * delay.unwrap_or(0.0)
                ),
                None => "NOT reported".to_string(),
            },
            recall5,
            top.len(),
            in_top5,
            reported.len(),
            significant,
            reported.len(),
            100.0 * threshold
        ),
    ];
    Comparison { json, text }
}

// ---------------------------------------------------------------------------------------
// culprit top

/// Arguments of `culprit top`.
#[derive(clap::Args, Debug)]
#[command(
    about = "Live view of the hottest functions per event (perf top), with worst offenders",
    after_help = "EXAMPLES:\n  culprit top -a                          whole system\n  culprit top -p 1234 --offenders\n  culprit top -e cpu-clock -- ./prog      run a command and watch it\n  culprit top --stdio -- ./prog | less    plain text, one block per refresh\n\nKeys: q quits, Tab / Right and Left change the sort column (event), o toggles the offenders panel."
)]
pub struct TopArgs {
    /// Events (comma-separated, as `record -e`); default: cycles, or cpu-clock without a PMU.
    #[arg(short = 'e', long = "event", value_name = "EVENT")]
    pub events: Vec<String>,
    /// Sampling frequency in Hz (default 1000: each refresh re-reads the samples so far).
    #[arg(short = 'F', long = "freq", value_name = "HZ")]
    pub freq: Option<u64>,
    /// Sampling period in events (instead of -F).
    #[arg(short = 'c', long = "count", value_name = "N", conflicts_with = "freq")]
    pub count: Option<u64>,
    /// Attach to these running processes (comma-separated).
    #[arg(short = 'p', long = "pid", value_name = "PID")]
    pub pid: Option<String>,
    /// Whole system (all CPUs, all tasks).
    #[arg(short = 'a', long = "all-cpus")]
    pub all_cpus: bool,
    /// Refresh interval in seconds.
    #[arg(
        short = 'd',
        long = "delay",
        value_name = "SECS",
        default_value_t = 1.0
    )]
    pub delay: f64,
    /// Rows shown per refresh.
    #[arg(long = "rows", value_name = "N", default_value_t = 20)]
    pub rows: usize,
    /// Plain text (one block per refresh) even on a terminal; the default when stdout is not
    /// a terminal.
    #[arg(long = "stdio")]
    pub stdio: bool,
    /// Show a panel of confirmed worst offenders (paired-sampling detector).
    #[arg(long = "offenders")]
    pub offenders: bool,
    /// Offender detector: first counter's terminal value.
    #[arg(long = "t1", value_name = "N")]
    pub t1: Option<u64>,
    /// Offender detector: second counter's terminal value.
    #[arg(long = "t2", value_name = "N")]
    pub t2: Option<u64>,
    /// What --t1/--t2 count.
    #[arg(long = "offenders-unit", value_enum, default_value_t = UnitArg::Samples)]
    pub offenders_unit: UnitArg,
    /// Stop after this many seconds.
    #[arg(long = "duration", value_name = "SECS")]
    pub duration: Option<f64>,
    /// Plain-mode output: text blocks, or one JSON object per refresh and line (schema in
    /// docs/offenders.md). JSON implies plain mode.
    #[arg(long, value_enum, value_name = "FORMAT", default_value_t = TopFormat::Text)]
    pub format: TopFormat,
    /// Command to run and watch (after `--`).
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// Functions kept per table; when full, the coldest quarter is dropped (their weight stays in
/// the totals, so percentages remain of everything sampled).
const FUNC_CAPACITY: usize = 4096;

/// A function across refreshes: the DSO's stable id and a hash of the symbol name (symbol and
/// DSO numbers of one read are not stable across reads, see [`DsoIds`]).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum FuncKey {
    Sym(Option<u32>, u64),
    /// Unresolved: one row per DSO.
    Dso(Option<u32>),
}

/// Stable identities of DSOs across refreshes. The decoder numbers DSOs in the order it meets
/// their mappings, and the records of the last, still unsorted round can arrive in a different
/// order in the next read, so a [`DsoId`] of one read may name another DSO in the next.
#[derive(Default)]
struct DsoIds {
    /// (path, owning pid) → stable id (grows with the DSOs seen, like the symbol tables).
    global: HashMap<(String, Option<i32>), u32>,
    /// This read: local id → stable id.
    local: Vec<Option<u32>>,
    /// The previous read's DSOs in local order, to notice a renumbering.
    known: Vec<(String, Option<i32>)>,
    /// How many of this read's DSOs were checked against `known`.
    checked: usize,
}

impl DsoIds {
    fn key(p: &Profile, local: DsoId) -> Option<(String, Option<i32>)> {
        p.dsos.get(local as usize).map(|d| (d.path.clone(), d.pid))
    }

    /// Starts a read.
    fn begin(&mut self) {
        self.local.clear();
        self.checked = 0;
    }

    /// Checks the DSOs the decoder added since the last call; true if an earlier read
    /// numbered them differently.
    fn renumbered(&mut self, p: &Profile) -> bool {
        let mut changed = false;
        while self.checked < p.dsos.len() {
            let i = self.checked;
            if i < self.known.len() && Self::key(p, i as DsoId).as_ref() != Some(&self.known[i]) {
                changed = true;
            }
            self.checked += 1;
        }
        changed
    }

    /// Ends a read: remembers its numbering.
    fn end(&mut self, p: &Profile) {
        self.known = (0..p.dsos.len())
            .filter_map(|i| Self::key(p, i as DsoId))
            .collect();
    }

    fn stable(&mut self, p: &Profile, local: Option<DsoId>) -> Option<u32> {
        let l = local? as usize;
        if let Some(Some(g)) = self.local.get(l) {
            return Some(*g);
        }
        let key = Self::key(p, l as DsoId)?;
        let n = self.global.len() as u32;
        let g = *self.global.entry(key).or_insert(n);
        if self.local.len() <= l {
            self.local.resize(l + 1, None);
        }
        self.local[l] = Some(g);
        Some(g)
    }

    /// The local id in `p` of a stable id (for symbolizing with `p`).
    fn local_of(&self, p: &Profile, stable: u32) -> Option<DsoId> {
        (0..p.dsos.len())
            .find(|&i| {
                Self::key(p, i as DsoId).and_then(|k| self.global.get(&k).copied()) == Some(stable)
            })
            .map(|i| i as DsoId)
    }
}

fn name_hash(name: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    name.hash(&mut h);
    h.finish()
}

struct FuncRow {
    dso: String,
    name: String,
    period: Vec<u64>,
    samples: u64,
}

/// Per-function weights of every event, in bounded memory.
struct FuncTable {
    rows: HashMap<FuncKey, FuncRow>,
    totals: Vec<u64>,
    samples: Vec<u64>,
    dropped_rows: u64,
    events: Vec<String>,
}

impl FuncTable {
    fn new() -> FuncTable {
        FuncTable {
            rows: HashMap::with_capacity(FUNC_CAPACITY),
            totals: Vec::new(),
            samples: Vec::new(),
            dropped_rows: 0,
            events: Vec::new(),
        }
    }

    fn add(&mut self, profile: &Profile, sym: &mut Symbolizer, dso: Option<u32>, s: &Sample) {
        let e = s.event as usize;
        if self.totals.len() <= e {
            self.totals.resize(e + 1, 0);
            self.samples.resize(e + 1, 0);
        }
        if self.events.len() < profile.events.len() {
            self.events = profile.events.iter().map(|e| e.name.clone()).collect();
        }
        self.totals[e] += s.period;
        self.samples[e] += 1;
        let r = sym.resolve(profile, Query::of(s.location, s.pid));
        let name = r
            .symbol
            .and_then(|id| sym.symbol(id))
            .map(|x| x.name.as_str());
        let key = match name {
            Some(n) => FuncKey::Sym(dso, name_hash(n)),
            None => FuncKey::Dso(dso),
        };
        if !self.rows.contains_key(&key) && self.rows.len() >= FUNC_CAPACITY {
            self.shrink();
        }
        let n = self.totals.len();
        let row = self.rows.entry(key).or_insert_with(|| FuncRow {
            dso: dso_short(profile, s.location.dso),
            name: name.unwrap_or("[unknown]").to_string(),
            period: vec![0; n],
            samples: 0,
        });
        if row.period.len() <= e {
            row.period.resize(e + 1, 0);
        }
        row.period[e] += s.period;
        row.samples += 1;
    }

    /// Drops the coldest quarter of the rows (by samples).
    fn shrink(&mut self) {
        let mut counts: Vec<u64> = self.rows.values().map(|r| r.samples).collect();
        let q = counts.len() / 4;
        let (_, cut, _) = counts.select_nth_unstable(q);
        let cut = *cut;
        let before = self.rows.len();
        self.rows.retain(|_, r| r.samples > cut);
        if self.rows.len() == before {
            // All equal: drop arbitrary rows to make room.
            let drop: Vec<FuncKey> = self.rows.keys().take(q.max(1)).copied().collect();
            for k in drop {
                self.rows.remove(&k);
            }
        }
        self.dropped_rows += (before - self.rows.len()) as u64;
    }

    /// Rows sorted by the period of event `by`, at most `n`.
    fn sorted(&self, by: usize, n: usize) -> Vec<&FuncRow> {
        let mut v: Vec<&FuncRow> = self.rows.values().collect();
        let get = |r: &FuncRow| r.period.get(by).copied().unwrap_or(0);
        v.sort_by(|a, b| get(b).cmp(&get(a)).then(a.name.cmp(&b.name)));
        v.truncate(n);
        v
    }

    fn percent(&self, r: &FuncRow, e: usize) -> f64 {
        let t = self.totals.get(e).copied().unwrap_or(0);
        if t == 0 {
            0.0
        } else {
            100.0 * r.period.get(e).copied().unwrap_or(0) as f64 / t as f64
        }
    }
}

/// Live state fed by each refresh.
struct Live {
    path: PathBuf,
    /// Samples of the previous reads: by time (samples up to `done_until` were counted), or
    /// by index when the samples have no time.
    seen: u64,
    done_until: u64,
    dsos: DsoIds,
    table: FuncTable,
    dets: Option<EventDetectors>,
    sym: Symbolizer,
    /// The latest profile (DSOs, events; no samples) for resolving offenders.
    profile: Option<Profile>,
    started: Instant,
    /// How long the last refresh took (it re-reads the file so far).
    last_refresh: Duration,
}

impl Live {
    /// Reads the samples appended since the last refresh.
    fn refresh(&mut self) {
        if !self.path.exists() {
            return;
        }
        let t = Instant::now();
        let mut index = 0u64;
        let (seen, done_until) = (self.seen, self.done_until);
        let mut newest = done_until;
        let table = &mut self.table;
        let sym = &mut self.sym;
        let dets = &mut self.dets;
        let dsos = &mut self.dsos;
        dsos.begin();
        let r = culprit_decode::read_file_streaming(&self.path, &mut |_, _| {}, &mut |p, s| {
            index += 1;
            if dsos.renumbered(p) {
                // The symbolizer caches by DSO number: start it afresh for this numbering.
                *sym = Symbolizer::new(SymbolizerOptions::default());
            }
            // The last round is delivered unsorted-then-sorted on every read: by time, a late
            // record of it is skipped rather than counted twice.
            let new = if s.time != 0 {
                s.time > done_until
            } else {
                index > seen
            };
            if !new {
                return;
            }
            newest = newest.max(s.time);
            let dso = dsos.stable(p, s.location.dso);
            table.add(p, sym, dso, s);
            if let Some(d) = dets.as_mut() {
                let mut stable = s.clone();
                stable.location.dso = dso;
                d.observe(&stable);
            }
        });
        if let Ok(p) = r {
            // A recording in progress ends in a partial record: that is expected here.
            self.seen = self.seen.max(index);
            self.done_until = newest;
            self.dsos.end(&p);
            self.profile = Some(p);
        }
        self.last_refresh = t.elapsed();
    }

    fn offender_lines(&mut self, max: usize) -> Vec<String> {
        let mut lines = Vec::new();
        let (Some(dets), Some(p)) = (&self.dets, &self.profile) else {
            return lines;
        };
        let t0 = p.meta.time_range.map_or(0, |r| r.0);
        for (ei, info) in p.events.iter().enumerate() {
            let Some(d) = dets.get(ei as EventId) else {
                continue;
            };
            let c = d.config();
            lines.push(format!(
                "Offenders of {} (T1={} T2={} {}; {} rounds; {} bytes):",
                info.name,
                c.t1,
                c.t2,
                unit_name(c.unit),
                d.rounds(),
                d.memory_bytes()
            ));
            let ranked = d.ranked();
            if ranked.is_empty() {
                lines.push("  (none confirmed yet)".into());
            }
            for x in ranked.iter().take(max) {
                // Detector locations hold stable DSO ids; symbolize with this read's numbers.
                let loc = Location {
                    dso: x.location.dso.and_then(|g| self.dsos.local_of(p, g)),
                    file_offset: x.location.file_offset,
                };
                let pl = place(p, &mut self.sym, loc, x.pid);
                lines.push(format!(
                    "  {:>5}x  first at {:>7.2}s  {:<20} {:<14} {}",
                    x.confirmations,
                    x.first_time.saturating_sub(t0) as f64 / 1e9,
                    pl.dso,
                    format!("{:#x}", pl.addr),
                    pl.symbol.as_deref().unwrap_or("[unknown]")
                ));
            }
        }
        lines
    }

    /// One refresh as a JSON object (see docs/offenders.md).
    fn json(&mut self, rows: usize, offenders: usize) -> Value {
        let t = &self.table;
        let funcs: Vec<Value> = t
            .sorted(0, rows)
            .into_iter()
            .map(|r| {
                let mut period = serde_json::Map::new();
                let mut percent = serde_json::Map::new();
                for (i, e) in t.events.iter().enumerate() {
                    period.insert(e.clone(), r.period.get(i).copied().unwrap_or(0).into());
                    percent.insert(e.clone(), round4(t.percent(r, i)).into());
                }
                json!({"dso": r.dso, "symbol": r.name, "samples": r.samples,
                       "period": period, "percent": percent})
            })
            .collect();
        let mut offs = Vec::new();
        if let (Some(dets), Some(p)) = (&self.dets, &self.profile) {
            let t0 = p.meta.time_range.map_or(0, |r| r.0);
            for (ei, info) in p.events.iter().enumerate() {
                let Some(d) = dets.get(ei as EventId) else {
                    continue;
                };
                for x in d.ranked().iter().take(offenders) {
                    let loc = Location {
                        dso: x.location.dso.and_then(|g| self.dsos.local_of(p, g)),
                        file_offset: x.location.file_offset,
                    };
                    let pl = place(p, &mut self.sym, loc, x.pid);
                    offs.push(json!({
                        "event": info.name, "ip": format!("{:#x}", pl.addr), "dso": pl.dso,
                        "symbol": pl.symbol, "pid": x.pid, "confirmations": x.confirmations,
                        "first_time_s": round4(x.first_time.saturating_sub(t0) as f64 / 1e9),
                    }));
                }
            }
        }
        json!({
            "elapsed_s": round4(self.started.elapsed().as_secs_f64()),
            "samples": self.table.samples.iter().sum::<u64>(),
            "events": self.table.events,
            "functions_kept": self.table.rows.len(),
            "functions_dropped": self.table.dropped_rows,
            "refresh_ms": self.last_refresh.as_millis() as u64,
            "functions": funcs,
            "offenders": if self.dets.is_some() { Value::from(offs) } else { Value::Null },
        })
    }

    fn header(&self) -> String {
        let samples: u64 = self.table.samples.iter().sum();
        format!(
            "culprit top: {:.1}s, {} samples, {} functions kept (max {}, {} dropped), refresh {} ms",
            self.started.elapsed().as_secs_f64(),
            samples,
            self.table.rows.len(),
            FUNC_CAPACITY,
            self.table.dropped_rows,
            self.last_refresh.as_millis()
        )
    }

    /// The function table as text lines (one column per event, sorted by `by`).
    fn table_lines(&self, by: usize, n: usize) -> Vec<String> {
        let t = &self.table;
        let mut lines = Vec::new();
        let mut head = String::new();
        for (i, e) in t.events.iter().enumerate() {
            let mark = if i == by { "*" } else { " " };
            head.push_str(&format!("{:>13}{mark} ", truncate(e, 13)));
        }
        lines.push(format!("{head}{:<20} Symbol", "Shared Object"));
        for r in t.sorted(by, n) {
            let mut l = String::new();
            for i in 0..t.events.len() {
                l.push_str(&format!("{:>13.2}%  ", t.percent(r, i)));
            }
            l.push_str(&format!("{:<20} {}", r.dso, r.name));
            lines.push(l);
        }
        lines
    }
}

fn truncate(s: &str, n: usize) -> String {
    s.chars().take(n).collect()
}

fn record_options(args: &TopArgs, output: PathBuf) -> anyhow::Result<RecordOptions> {
    let mut specs = Vec::new();
    for list in &args.events {
        specs.extend(events::parse_event_list(list)?);
    }
    let rate = match (args.count, args.freq) {
        (Some(0), _) => bail!("-c: the period must be > 0"),
        (_, Some(0)) => bail!("-F: the frequency must be > 0"),
        (Some(c), _) => SampleRate::Period(c),
        (None, Some(f)) => SampleRate::Frequency(f),
        (None, None) => SampleRate::Frequency(1000),
    };
    let target = if let Some(p) = &args.pid {
        if !args.command.is_empty() {
            bail!("-p attaches to running processes: give no command");
        }
        let pids = p
            .split(',')
            .map(|x| x.trim().parse::<i32>())
            .collect::<Result<Vec<_>, _>>()
            .with_context(|| format!("-p: `{p}` is not a list of process ids"))?;
        Target::Pids(pids)
    } else if args.all_cpus {
        Target::System((!args.command.is_empty()).then(|| args.command.clone()))
    } else if args.command.is_empty() {
        bail!("nothing to watch: give a command (`culprit top -- ./prog`), -p PID or -a");
    } else {
        Target::Command(args.command.clone())
    };
    Ok(RecordOptions {
        events: specs,
        rate: Some(rate),
        call_graph: CallGraph::None,
        target,
        cpus: None,
        output,
        mmap_pages: culprit_collect::record::DEFAULT_MMAP_PAGES,
        cmdline: std::env::args().collect(),
        tool_version: format!("culprit {}", env!("CARGO_PKG_VERSION")),
    })
}

/// Removes the temporary recording when `top` ends, however it ends.
struct TempFile(PathBuf);

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Runs `culprit top`.
pub fn run(args: TopArgs) -> anyhow::Result<ExitCode> {
    if !(args.delay > 0.0 && args.delay.is_finite()) {
        bail!("-d: the delay must be a positive number of seconds");
    }
    let settings = OffenderSettings {
        t1: args.t1,
        t2: args.t2,
        unit: args.offenders_unit,
    };
    let dets = if args.offenders || args.t1.is_some() || args.t2.is_some() {
        Some(EventDetectors::new(settings)?)
    } else {
        None
    };
    let path = std::env::temp_dir().join(format!("culprit-top-{}.data", std::process::id()));
    let _cleanup = TempFile(path.clone());
    let opts = record_options(&args, path.clone())?;
    let warnings = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let w2 = warnings.clone();
    let recorder = std::thread::spawn(move || {
        culprit_collect::record::record(&opts, &mut |w| {
            if let Ok(mut v) = w2.lock() {
                v.push(w);
            }
        })
    });
    let mut live = Live {
        path,
        seen: 0,
        done_until: 0,
        dsos: DsoIds::default(),
        table: FuncTable::new(),
        dets,
        sym: Symbolizer::new(SymbolizerOptions::default()),
        profile: None,
        started: Instant::now(),
        last_refresh: Duration::ZERO,
    };
    let plain = args.stdio || args.format == TopFormat::Json || !std::io::stdout().is_terminal();
    let result = if plain {
        run_plain(&args, &mut live, &recorder)
    } else {
        run_tui(&args, &mut live, &recorder)
    };
    // Quitting (q, --duration) interrupts the target: its exit status is then ours to ignore.
    let quit_early = !recorder.is_finished();
    stop_recorder(&recorder);
    let rec = recorder
        .join()
        .map_err(|_| anyhow::anyhow!("the recorder thread panicked"))?;
    if let Ok(v) = warnings.lock() {
        for w in v.iter() {
            eprintln!("culprit: warning: {w}");
        }
    }
    result?;
    let summary = rec.context("recording failed")?;
    let recorded: u64 = summary.events.iter().map(|e| e.samples).sum();
    let counted: u64 = live.table.samples.iter().sum();
    // The last refresh after the target ended saw the whole file: the counts should agree.
    eprintln!("culprit top: {recorded} samples recorded, {counted} shown");
    if recorded == 0 {
        eprintln!("culprit: warning: no samples were taken");
    }
    Ok(match summary.exit {
        Some(e) if e.code() != 0 && !quit_early => ExitCode::from(e.code().clamp(1, 255) as u8),
        _ => ExitCode::SUCCESS,
    })
}

type Recorder = std::thread::JoinHandle<
    Result<culprit_collect::record::RecordSummary, culprit_collect::error::RecordError>,
>;

/// Asks the recorder to stop (it counts SIGINTs: the first goes to a launched command, a
/// second ends the recording) and waits up to 2 s.
fn stop_recorder(r: &Recorder) {
    let deadline = Instant::now() + Duration::from_secs(2);
    let mut sent = 0;
    while !r.is_finished() && Instant::now() < deadline {
        if sent < 2 {
            // SAFETY: raising a signal in our own process; the recorder's handler only counts.
            unsafe { libc::raise(libc::SIGINT) };
            sent += 1;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn out_of_time(args: &TopArgs, live: &Live) -> bool {
    args.duration
        .is_some_and(|d| live.started.elapsed().as_secs_f64() >= d)
}

fn run_plain(args: &TopArgs, live: &mut Live, recorder: &Recorder) -> anyhow::Result<()> {
    let stdout = std::io::stdout();
    let delay = Duration::from_secs_f64(args.delay);
    let mut tick = Instant::now();
    loop {
        // Each block covers one interval: wait for it first (or for the target to end).
        while tick.elapsed() < delay && !recorder.is_finished() && !out_of_time(args, live) {
            std::thread::sleep(Duration::from_millis(50));
        }
        tick = Instant::now();
        let finished = recorder.is_finished();
        live.refresh();
        if finished && live.profile.is_none() {
            // The recording failed before writing anything: its error says why.
            return Ok(());
        }
        let mut out = stdout.lock();
        if args.format == TopFormat::Json {
            let v = live.json(args.rows, 10);
            serde_json::to_writer(&mut out, &v)?;
            writeln!(out)?;
            out.flush()?;
            drop(out);
            if finished || out_of_time(args, live) {
                return Ok(());
            }
            continue;
        }
        writeln!(out, "{}", live.header())?;
        for l in live.table_lines(0, args.rows) {
            writeln!(out, "{l}")?;
        }
        if live.dets.is_some() {
            for l in live.offender_lines(10) {
                writeln!(out, "{l}")?;
            }
        }
        writeln!(out)?;
        out.flush()?;
        drop(out);
        if finished || out_of_time(args, live) {
            return Ok(());
        }
    }
}

#[cfg(feature = "tui")]
fn run_tui(args: &TopArgs, live: &mut Live, recorder: &Recorder) -> anyhow::Result<()> {
    use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind};
    use ratatui::layout::{Constraint, Layout};
    use ratatui::widgets::{Block, Paragraph};

    let mut terminal = ratatui::try_init().context("cannot set up the terminal")?;
    let delay = Duration::from_secs_f64(args.delay);
    let mut by = 0usize;
    let mut show_off = live.dets.is_some();
    let mut last = Instant::now() - delay;
    let mut ended = false;
    let res = (|| -> anyhow::Result<()> {
        loop {
            if !ended && last.elapsed() >= delay {
                ended = recorder.is_finished();
                live.refresh();
                last = Instant::now();
                if ended && live.profile.is_none() {
                    return Ok(()); // the recording failed: its error is printed after
                }
            }
            let nev = live.table.events.len().max(1);
            let header = format!(
                "{}{}   [q quit, Tab/←/→ sort column, o offenders]",
                live.header(),
                if ended { " — target ended" } else { "" }
            );
            let table = live.table_lines(by % nev, args.rows.max(1)).join("\n");
            let offs = if show_off {
                live.offender_lines(8).join("\n")
            } else {
                String::new()
            };
            terminal.draw(|f| {
                let off_h = if show_off { 12 } else { 0 };
                let parts = Layout::vertical([
                    Constraint::Length(1),
                    Constraint::Min(3),
                    Constraint::Length(off_h),
                ])
                .split(f.area());
                f.render_widget(Paragraph::new(header.as_str()), parts[0]);
                f.render_widget(
                    Paragraph::new(table.as_str()).block(Block::bordered().title("Functions")),
                    parts[1],
                );
                if show_off {
                    f.render_widget(
                        Paragraph::new(offs.as_str())
                            .block(Block::bordered().title("Worst offenders")),
                        parts[2],
                    );
                }
            })?;
            if out_of_time(args, live) {
                return Ok(());
            }
            if event::poll(Duration::from_millis(100))? {
                if let Event::Key(k) = event::read()? {
                    if k.kind != KeyEventKind::Press {
                        continue;
                    }
                    match k.code {
                        KeyCode::Char('q') | KeyCode::Esc => return Ok(()),
                        KeyCode::Tab | KeyCode::Right => by = (by + 1) % nev,
                        KeyCode::Left | KeyCode::BackTab => by = (by + nev - 1) % nev,
                        KeyCode::Char('o') if live.dets.is_some() => show_off = !show_off,
                        _ => {}
                    }
                }
            }
        }
    })();
    ratatui::restore();
    res
}

#[cfg(not(feature = "tui"))]
fn run_tui(args: &TopArgs, live: &mut Live, recorder: &Recorder) -> anyhow::Result<()> {
    // Built without the `tui` feature: the plain-text view on the terminal too.
    run_plain(args, live, recorder)
}
