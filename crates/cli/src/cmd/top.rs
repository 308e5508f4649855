//! `culprit top` (a live, refreshing view of the hottest functions per event, with an optional
//! panel of worst offenders) and `culprit report --offenders` (the paired-sampling detector
//! over a perf.data file). Both feed the bounded-memory detector of
//! `culprit_analysis::offenders`; docs/offenders.md has the math, the JSON schema and the
//! evaluation.
//!
//! Live samples: the recorder (`culprit_collect::record`) runs in a thread and streams
//! pipe-mode perf.data through an OS pipe to the incremental decoder (`crate::live`); every
//! sample updates the function table and the detectors as it arrives, and the view is redrawn
//! every `-d` seconds. No file is written. Memory is fixed: a capped function table (the
//! coldest quarter is evicted when full, and the header says so), O(1) detectors, the pipe and
//! the decoder's unflushed round.

use std::collections::HashMap;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use clap::ValueEnum;
use culprit_analysis::offenders::{self, Config, Detectors, Observation, Offender, Step, Unit};
use culprit_collect::events::{self, SampleRate};
use culprit_collect::record::{CallGraph, RecordOptions, Target};
use culprit_decode::model::{DsoId, EventId, Location, Profile, Sample};
use culprit_symbols::{KernelSymbols, Query, Symbolizer, SymbolizerOptions};
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
            .map(|s| s.name.to_string()),
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
    /// The input and where its symbols are found.
    pub input: &'a culprit_symbols::ProfileInput,
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
    let plan = culprit_symbols::ReadPlan::default();
    let profile = o.input.for_each(&plan, |p, s| {
        let i = s.event as usize;
        if wanted.len() <= i {
            wanted.resize(i + 1, None);
            observed.resize(i + 1, 0);
        }
        let want = *wanted[i].get_or_insert_with(|| {
            o.events.is_empty()
                || p.events
                    .get(i)
                    .is_some_and(|e| o.events.iter().any(|w| e.matches(w)))
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
    })?;
    dets.flush();
    culprit_decode::model::select_events(&profile, o.events)?;
    let mut sym = o.input.symbolizer();
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
            "file": o.input.path().display().to_string(),
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
            o.input.path().display(),
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
    /// Sampling frequency in Hz (default 1000).
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

/// A function: its DSO (the stream decoder's DSO numbers are stable for a whole run) and a
/// hash of the symbol name.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum FuncKey {
    Sym(Option<u32>, u64),
    /// Unresolved: one row per DSO.
    Dso(Option<u32>),
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
        let name = r.symbol.and_then(|id| sym.symbol(id)).map(|x| x.name);
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

/// Live state: fed by every sample, shown every refresh.
struct Live {
    table: FuncTable,
    dets: Option<EventDetectors>,
    sym: Symbolizer,
    started: Instant,
    /// Samples the kernel lost so far (LOST records in the stream).
    lost: u64,
}

impl Live {
    fn add(&mut self, p: &Profile, s: &Sample) {
        self.table.add(p, &mut self.sym, s.location.dso, s);
        if let Some(d) = self.dets.as_mut() {
            d.observe(s);
        }
        self.lost = p.lost;
    }

    fn offender_lines(&mut self, p: &Profile, max: usize) -> Vec<String> {
        let mut lines = Vec::new();
        let Some(dets) = &self.dets else {
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
                let pl = place(p, &mut self.sym, x.location, x.pid);
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
    fn json(&mut self, p: &Profile, rows: usize, offenders: usize) -> Value {
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
        if let Some(dets) = &self.dets {
            let t0 = p.meta.time_range.map_or(0, |r| r.0);
            for (ei, info) in p.events.iter().enumerate() {
                let Some(d) = dets.get(ei as EventId) else {
                    continue;
                };
                for x in d.ranked().iter().take(offenders) {
                    let pl = place(p, &mut self.sym, x.location, x.pid);
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
            "lost_samples": self.lost,
            "events": self.table.events,
            "functions_kept": self.table.rows.len(),
            "functions_dropped": self.table.dropped_rows,
            "functions_max": FUNC_CAPACITY,
            "functions": funcs,
            "offenders": if self.dets.is_some() { Value::from(offs) } else { Value::Null },
        })
    }

    fn header(&self) -> String {
        let samples: u64 = self.table.samples.iter().sum();
        let evicting = if self.table.dropped_rows > 0 {
            format!(
                ", table full: {} cold functions evicted, percentages still of all samples",
                self.table.dropped_rows
            )
        } else {
            String::new()
        };
        let lost = if self.lost > 0 {
            format!(", {} lost", self.lost)
        } else {
            String::new()
        };
        format!(
            "culprit top: {:.1}s, {} samples{lost}, {} functions (max {}){evicting}",
            self.started.elapsed().as_secs_f64(),
            samples,
            self.table.rows.len(),
            FUNC_CAPACITY,
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

fn record_options(args: &TopArgs) -> anyhow::Result<RecordOptions> {
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
        // Replaced by the live stream.
        output: culprit_collect::record::Output::File(PathBuf::new()),
        mmap_pages: culprit_collect::record::DEFAULT_MMAP_PAGES,
        cmdline: std::env::args().collect(),
        tool_version: format!("culprit {}", env!("CARGO_PKG_VERSION")),
        stop: None,
    })
}

/// How often the live loop wakes up (keys, the duration, the refresh interval).
const TICK: Duration = Duration::from_millis(100);

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
    let opts = record_options(&args)?;
    let mut state = Live {
        table: FuncTable::new(),
        dets,
        // The live view names this machine's kernel.
        sym: Symbolizer::new(SymbolizerOptions {
            kernel_symbols: KernelSymbols::Running,
            ..SymbolizerOptions::default()
        }),
        started: Instant::now(),
        lost: 0,
    };
    let plain = args.stdio || args.format == TopFormat::Json || !std::io::stdout().is_terminal();
    let end = if plain {
        let mut v = PlainView {
            args: &args,
            live: &mut state,
            last: Instant::now(),
            failed: None,
        };
        let end = crate::live::run(opts, TICK, Box::new(warn), &mut v);
        if let Some(e) = v.failed.take() {
            return Err(e);
        }
        let end = end?;
        // The final block: everything recorded, after the target ended.
        if !end.stopped_by_consumer || out_of_time(&args, &state) {
            print_block(&args, &mut state, &end.profile)?;
        }
        end
    } else {
        run_tui(&args, &mut state, opts)?
    };
    let summary = &end.summary;
    let recorded: u64 = summary.events.iter().map(|e| e.samples).sum();
    let counted: u64 = state.table.samples.iter().sum();
    eprintln!(
        "culprit top: {recorded} samples recorded, {counted} shown{}",
        if end.stopped_by_consumer {
            " (those still in flight when the view stopped are not)"
        } else {
            ""
        }
    );
    if recorded == 0 {
        eprintln!("culprit: warning: no samples were taken");
    }
    if summary.lost_samples > 0 {
        eprintln!(
            "culprit: warning: the kernel lost {} samples (the view could not keep up, or the \
             rate is too high for the ring buffer)",
            summary.lost_samples
        );
    }
    // Quitting (q, --duration) ends the target: its exit status is then ours to ignore.
    Ok(match summary.exit {
        Some(e) if e.code() != 0 && !end.stopped_by_consumer => {
            ExitCode::from(e.code().clamp(1, 255) as u8)
        }
        _ => ExitCode::SUCCESS,
    })
}

fn warn(w: String) {
    eprintln!("culprit: warning: {w}");
}

fn out_of_time(args: &TopArgs, live: &Live) -> bool {
    args.duration
        .is_some_and(|d| live.started.elapsed().as_secs_f64() >= d)
}

/// Prints one refresh (a text block or a JSON line).
fn print_block(args: &TopArgs, live: &mut Live, p: &Profile) -> anyhow::Result<()> {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    if args.format == TopFormat::Json {
        let v = live.json(p, args.rows, 10);
        serde_json::to_writer(&mut out, &v)?;
        writeln!(out)?;
        out.flush()?;
        return Ok(());
    }
    writeln!(out, "{}", live.header())?;
    for l in live.table_lines(0, args.rows) {
        writeln!(out, "{l}")?;
    }
    if live.dets.is_some() {
        for l in live.offender_lines(p, 10) {
            writeln!(out, "{l}")?;
        }
    }
    writeln!(out)?;
    out.flush()?;
    Ok(())
}

/// Plain mode: one block per interval while the target runs, and a last one at the end.
struct PlainView<'a> {
    args: &'a TopArgs,
    live: &'a mut Live,
    last: Instant,
    failed: Option<anyhow::Error>,
}

impl crate::live::Consumer for PlainView<'_> {
    fn sample(&mut self, p: &Profile, s: &Sample) -> crate::live::Flow {
        self.live.add(p, s);
        crate::live::Flow::Continue
    }

    fn tick(&mut self, p: &Profile, _now: u64) -> crate::live::Flow {
        if out_of_time(self.args, self.live) {
            return crate::live::Flow::Stop;
        }
        if self.last.elapsed().as_secs_f64() >= self.args.delay {
            self.last = Instant::now();
            if let Err(e) = print_block(self.args, self.live, p) {
                // stdout closed (e.g. `| head`): stop quietly, report other errors.
                let broken = e
                    .downcast_ref::<std::io::Error>()
                    .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe);
                if !broken {
                    self.failed = Some(e);
                }
                return crate::live::Flow::Stop;
            }
        }
        crate::live::Flow::Continue
    }
}

#[cfg(feature = "tui")]
fn run_tui(
    args: &TopArgs,
    live: &mut Live,
    opts: RecordOptions,
) -> anyhow::Result<crate::live::LiveEnd> {
    let terminal = ratatui::try_init().context("cannot set up the terminal")?;
    let mut v = TuiView {
        args,
        live,
        terminal,
        by: 0,
        show_off: false,
        last: None,
        failed: None,
    };
    v.show_off = v.live.dets.is_some();
    let end = crate::live::run(opts, TICK, Box::new(warn), &mut v);
    ratatui::restore();
    if let Some(e) = v.failed.take() {
        return Err(e);
    }
    end
}

#[cfg(feature = "tui")]
struct TuiView<'a> {
    args: &'a TopArgs,
    live: &'a mut Live,
    terminal: ratatui::DefaultTerminal,
    /// The sort column (event).
    by: usize,
    show_off: bool,
    /// The last redraw.
    last: Option<Instant>,
    failed: Option<anyhow::Error>,
}

#[cfg(feature = "tui")]
impl TuiView<'_> {
    fn draw(&mut self, p: &Profile) -> anyhow::Result<()> {
        use ratatui::layout::{Constraint, Layout};
        use ratatui::widgets::{Block, Paragraph};
        let live = &mut *self.live;
        let nev = live.table.events.len().max(1);
        let header = format!(
            "{}   [q quit, Tab/←/→ sort column, o offenders]",
            live.header()
        );
        let table = live
            .table_lines(self.by % nev, self.args.rows.max(1))
            .join("\n");
        let show_off = self.show_off;
        let offs = if show_off {
            live.offender_lines(p, 8).join("\n")
        } else {
            String::new()
        };
        self.terminal.draw(|f| {
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
                    Paragraph::new(offs.as_str()).block(Block::bordered().title("Worst offenders")),
                    parts[2],
                );
            }
        })?;
        Ok(())
    }

    /// Handles the keys typed since the last tick; false on q/Esc/Ctrl-C.
    fn keys(&mut self) -> anyhow::Result<bool> {
        use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
        let nev = self.live.table.events.len().max(1);
        while event::poll(Duration::ZERO)? {
            let Event::Key(k) = event::read()? else {
                continue;
            };
            if k.kind != KeyEventKind::Press {
                continue;
            }
            match k.code {
                KeyCode::Char('q') | KeyCode::Esc => return Ok(false),
                // Raw mode turns Ctrl-C into a key.
                KeyCode::Char('c') if k.modifiers.contains(KeyModifiers::CONTROL) => {
                    return Ok(false)
                }
                KeyCode::Tab | KeyCode::Right => self.by = (self.by + 1) % nev,
                KeyCode::Left | KeyCode::BackTab => self.by = (self.by + nev - 1) % nev,
                KeyCode::Char('o') if self.live.dets.is_some() => self.show_off = !self.show_off,
                _ => continue,
            }
            // Show a changed sort or panel at once.
            self.last = None;
        }
        Ok(true)
    }
}

#[cfg(feature = "tui")]
impl crate::live::Consumer for TuiView<'_> {
    fn sample(&mut self, p: &Profile, s: &Sample) -> crate::live::Flow {
        self.live.add(p, s);
        crate::live::Flow::Continue
    }

    fn tick(&mut self, p: &Profile, _now: u64) -> crate::live::Flow {
        let go = match self.keys() {
            Ok(go) => go,
            Err(e) => {
                self.failed = Some(e);
                false
            }
        };
        if !go || out_of_time(self.args, self.live) {
            return crate::live::Flow::Stop;
        }
        let due = self
            .last
            .is_none_or(|t| t.elapsed().as_secs_f64() >= self.args.delay);
        if due {
            self.last = Some(Instant::now());
            if let Err(e) = self.draw(p) {
                self.failed = Some(e);
                return crate::live::Flow::Stop;
            }
        }
        crate::live::Flow::Continue
    }
}

#[cfg(not(feature = "tui"))]
fn run_tui(
    args: &TopArgs,
    live: &mut Live,
    opts: RecordOptions,
) -> anyhow::Result<crate::live::LiveEnd> {
    // Built without the `tui` feature: the plain-text view on the terminal too.
    let mut v = PlainView {
        args,
        live,
        last: Instant::now(),
        failed: None,
    };
    let end = crate::live::run(opts, TICK, Box::new(warn), &mut v);
    if let Some(e) = v.failed.take() {
        return Err(e);
    }
    end
}
