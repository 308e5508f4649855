//! Latency (wall-clock) overhead and parallelism, with the semantics of perf 6.15
//! (`tools/perf/Documentation/cpu-and-latency-overheads.txt`, `machine__resolve`):
//!
//! - The *parallelism* at a sample is the number of the recorded tasks running on a CPU
//!   then: a counter that starts at 1, goes up at each switch-in record and down at each
//!   switch-out and exit record (`record --latency` records them), clamped to 1..=CPUs.
//! - A sample's *latency* weight is its period divided by that parallelism, so a phase that
//!   runs on one thread weighs as much wall-clock time as it lasts, and a phase on N threads
//!   1/N of its CPU time.
//! - `Overhead` is a row's share of the period, `Latency` its share of the latency
//!   weights; `--parallelism=RANGE` keeps the samples whose parallelism is in the range
//!   (the shares stay relative to all samples: perf's `--percentage absolute`).

use std::collections::HashMap;

use culprit_decode::model::{EventId, Profile, SwitchKind};
use culprit_symbols::Symbolizer;
use serde::Serialize;

use crate::offenders::report::Place;
use crate::AnalysisError;

/// The parallelism of each sample of `profile` (index = sample index), as perf 6.15
/// computes it from the switch and exit records (all 1 when the file has none).
pub fn sample_parallelism(profile: &Profile) -> Vec<u32> {
    let mut tracker = ParallelismTracker::default();
    profile
        .samples
        .iter()
        .map(|s| tracker.at(profile, s.time))
        .collect()
}

/// Whether the recording has what parallelism needs: an event with `context_switch` set
/// (`record --latency`, perf's `--latency`). Without it every sample's parallelism is 1.
pub fn has_switch_records(profile: &Profile) -> bool {
    use culprit_decode::abi::attr_flag::CONTEXT_SWITCH;
    profile
        .events
        .iter()
        .any(|e| e.attr_flags & CONTEXT_SWITCH != 0)
        || !profile.switches.is_empty()
}

/// The parallelism at successive sample times of a profile being read (a stream: its
/// switch records grow as samples come), with [`sample_parallelism`]'s rule: one counter,
/// up at each switch-in, down at each switch-out or exit up to the sample's time, clamped
/// to 1..=CPUs.
#[derive(Debug, Clone)]
pub struct ParallelismTracker {
    /// Switch records applied so far.
    next: usize,
    running: i64,
}

impl Default for ParallelismTracker {
    fn default() -> Self {
        ParallelismTracker {
            next: 0,
            running: 1,
        }
    }
}

impl ParallelismTracker {
    /// The parallelism at `time` (samples in reading order).
    pub fn at(&mut self, profile: &Profile, time: u64) -> u32 {
        let cpus = profile
            .meta
            .nr_cpus
            .or(profile.meta.nr_cpus_online)
            .unwrap_or(1)
            .max(1) as i64;
        while let Some(sw) = profile.switches.get(self.next).filter(|sw| sw.time <= time) {
            self.running += match sw.kind {
                SwitchKind::In => 1,
                SwitchKind::Out { .. } | SwitchKind::Exit => -1,
            };
            self.next += 1;
        }
        self.running.clamp(1, cpus) as u32
    }
}

/// A sort key of the latency report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LatencyKey {
    /// Command name.
    Comm,
    /// Process id (`comm:pid` as perf's `pid` key shows the thread: here the process).
    Pid,
    /// Thread id.
    Tid,
    /// DSO short name.
    Dso,
    /// Function.
    Sym,
    /// Parallelism at the sample.
    Parallelism,
}

impl LatencyKey {
    /// The key of a `--sort` name, `None` for `latency`/`overhead` (ordering, not keys) or
    /// an unknown name.
    pub fn parse(name: &str) -> Option<LatencyKey> {
        Some(match name {
            "comm" => LatencyKey::Comm,
            "pid" => LatencyKey::Pid,
            "tid" => LatencyKey::Tid,
            "dso" => LatencyKey::Dso,
            "sym" | "symbol" => LatencyKey::Sym,
            "parallelism" => LatencyKey::Parallelism,
            _ => return None,
        })
    }

    /// The column header.
    pub fn header(self) -> &'static str {
        match self {
            LatencyKey::Comm => "Command",
            LatencyKey::Pid => "Pid",
            LatencyKey::Tid => "Tid",
            LatencyKey::Dso => "Shared Object",
            LatencyKey::Sym => "Symbol",
            LatencyKey::Parallelism => "Parallelism",
        }
    }

    /// The CSV/JSON name.
    pub fn name(self) -> &'static str {
        match self {
            LatencyKey::Comm => "comm",
            LatencyKey::Pid => "pid",
            LatencyKey::Tid => "tid",
            LatencyKey::Dso => "dso",
            LatencyKey::Sym => "sym",
            LatencyKey::Parallelism => "parallelism",
        }
    }
}

/// Parses perf's `--parallelism` list: `1`, `7,8`, `1,64-128`.
pub fn parse_ranges(s: &str) -> Result<Vec<(u32, u32)>, String> {
    s.split(',')
        .filter(|p| !p.trim().is_empty())
        .map(|p| {
            let p = p.trim();
            let num = |x: &str| {
                x.trim()
                    .parse::<u32>()
                    .map_err(|_| format!("`{p}` is not a number or a range N-M"))
            };
            match p.split_once('-') {
                Some((a, b)) => {
                    let (a, b) = (num(a)?, num(b)?);
                    if a > b {
                        return Err(format!("`{p}`: the range is empty"));
                    }
                    Ok((a, b))
                }
                None => num(p).map(|n| (n, n)),
            }
        })
        .collect()
}

/// Options of [`latency_report`].
#[derive(Debug, Clone)]
pub struct LatencyReportOptions {
    /// Row keys (at least one).
    pub keys: Vec<LatencyKey>,
    /// Sort by latency (else by overhead).
    pub by_latency: bool,
    /// Keep only samples whose parallelism is in one of these ranges.
    pub parallelism: Option<Vec<(u32, u32)>>,
    /// The event reported (index into the profile's events).
    pub event: EventId,
}

/// One row of the latency report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LatencyRow {
    /// One value per key, in key order.
    pub keys: Vec<String>,
    /// Samples.
    pub samples: u64,
    /// Sum of the periods.
    pub period: u64,
    /// Share of all the event's period, percent.
    pub overhead: f64,
    /// Share of all the event's latency weight, percent.
    pub latency: f64,
}

/// The report of [`latency_report`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LatencyReport {
    /// The key names.
    pub keys: Vec<&'static str>,
    /// The event.
    pub event: String,
    /// Rows, largest first.
    pub rows: Vec<LatencyRow>,
    /// Samples of the event (before the parallelism filter).
    pub total_samples: u64,
    /// Whether the file had context-switch records (without them every parallelism is 1).
    pub has_switches: bool,
}

/// Overhead and latency of `profile`'s samples of one event, grouped by the keys.
pub fn latency_report(
    profile: &Profile,
    sym: &mut Symbolizer,
    options: &LatencyReportOptions,
) -> Result<LatencyReport, AnalysisError> {
    if options.keys.is_empty() {
        return Err(AnalysisError::NoData(
            "no sort key for the latency report".into(),
        ));
    }
    let par = sample_parallelism(profile);
    let mut total_period = 0f64;
    let mut total_latency = 0f64;
    let mut total_samples = 0;
    let mut groups: HashMap<Vec<String>, (u64, u64, f64)> = HashMap::new();
    let mut places: HashMap<(i32, u64), Place> = HashMap::new();
    for (s, &p) in profile.samples.iter().zip(&par) {
        if s.event != options.event {
            continue;
        }
        let weight = s.period as f64 / f64::from(p);
        total_samples += 1;
        total_period += s.period as f64;
        total_latency += weight;
        if let Some(ranges) = &options.parallelism {
            if !ranges.iter().any(|&(a, b)| (a..=b).contains(&p)) {
                continue;
            }
        }
        let needs_place = options
            .keys
            .iter()
            .any(|k| matches!(k, LatencyKey::Dso | LatencyKey::Sym));
        let place = needs_place.then(|| {
            places
                .entry((s.pid, s.ip))
                .or_insert_with(|| Place::of(profile, sym, s.location, s.pid))
                .clone()
        });
        let key: Vec<String> = options
            .keys
            .iter()
            .map(|k| match k {
                LatencyKey::Comm => profile.str(s.comm).to_string(),
                LatencyKey::Pid => format!("{}:{}", s.pid, profile.str(s.comm)),
                LatencyKey::Tid => format!("{}:{}", s.tid, profile.str(s.comm)),
                LatencyKey::Parallelism => p.to_string(),
                LatencyKey::Dso => place.as_ref().map(|pl| pl.dso.clone()).unwrap_or_default(),
                LatencyKey::Sym => place
                    .as_ref()
                    .map(|pl| pl.symbol.clone().unwrap_or_else(|| format!("{:#x}", s.ip)))
                    .unwrap_or_default(),
            })
            .collect();
        let g = groups.entry(key).or_insert((0, 0, 0.0));
        g.0 += 1;
        g.1 += s.period;
        g.2 += weight;
    }
    let pct = |v: f64, total: f64| if total > 0.0 { v * 100.0 / total } else { 0.0 };
    let mut rows: Vec<LatencyRow> = groups
        .into_iter()
        .map(|(keys, (samples, period, lat))| LatencyRow {
            keys,
            samples,
            period,
            overhead: pct(period as f64, total_period),
            latency: pct(lat, total_latency),
        })
        .collect();
    rows.sort_by(|a, b| {
        let (x, y) = if options.by_latency {
            (b.latency, a.latency)
        } else {
            (b.overhead, a.overhead)
        };
        x.total_cmp(&y).then_with(|| a.keys.cmp(&b.keys))
    });
    Ok(LatencyReport {
        keys: options.keys.iter().map(|k| k.name()).collect(),
        event: profile
            .events
            .get(options.event as usize)
            .map(|e| e.name.clone())
            .unwrap_or_default(),
        rows,
        total_samples,
        has_switches: !profile.switches.is_empty(),
    })
}

/// Version of `report --latency --format json` (docs/schemas/report-latency.schema.json).
pub const LATENCY_SCHEMA: u32 = 1;

/// `report --latency --format json`.
#[derive(Debug, Serialize)]
pub struct LatencyJson<'a> {
    /// [`LATENCY_SCHEMA`].
    pub schema: u32,
    /// The input file.
    pub input: &'a str,
    /// The report.
    #[serde(flatten)]
    pub report: &'a LatencyReport,
}

impl LatencyReport {
    /// The table: Latency and Overhead (the sorting one first), samples, then the keys.
    pub fn table(&self, by_latency: bool) -> culprit_output::Table {
        use culprit_output::{Column, Values};
        let latency = Column::new(
            "Latency",
            "latency",
            Values::Percent(self.rows.iter().map(|r| r.latency).collect()),
        );
        let overhead = Column::new(
            "Overhead",
            "overhead",
            Values::Percent(self.rows.iter().map(|r| r.overhead).collect()),
        );
        let mut cols = if by_latency {
            vec![latency, overhead]
        } else {
            vec![overhead, latency]
        };
        cols.push(Column::new(
            "Samples",
            "samples",
            Values::Count(self.rows.iter().map(|r| r.samples).collect()),
        ));
        cols.push(
            Column::new(
                "Period",
                "period",
                Values::Count(self.rows.iter().map(|r| r.period).collect()),
            )
            .csv_only(),
        );
        for (j, name) in self.keys.iter().enumerate() {
            let header = LatencyKey::parse(name).map_or(*name, LatencyKey::header);
            let col = Column::new(
                header,
                *name,
                Values::Text(self.rows.iter().map(|r| r.keys[j].clone()).collect()),
            );
            cols.push(if *name == "sym" || *name == "dso" {
                col.shrink(12)
            } else {
                col
            });
        }
        culprit_output::Table::new(cols)
    }

    /// The text document: header lines, the table, a note when the file had no switches.
    pub fn document(&self, by_latency: bool) -> culprit_output::Document {
        let mut doc = culprit_output::Document::new();
        doc.header(format!(
            "Samples: {} of event '{}'",
            self.total_samples, self.event
        ));
        doc.header(
            "Latency: each sample's period divided by the number of recorded threads running \
             then (perf 6.15's semantics)",
        );
        if !self.has_switches {
            doc.note(
                culprit_output::NoteKind::Warning,
                "the file has no context-switch records: every sample counts with parallelism \
                 1 (record with `culprit record --latency`)",
            );
        }
        doc.table(self.table(by_latency));
        doc
    }
}

#[cfg(test)]
mod tests {
    use culprit_decode::model::{Sample, TaskSwitch};

    use super::*;

    /// 1 s serial on thread 10, then 1 s of CPU on threads 11 and 12 at once (0.5 s), one
    /// sample per ms of CPU.
    fn phases() -> Profile {
        let mut p = Profile::default();
        p.meta.nr_cpus = Some(2);
        p.events.push(crate::tests::event("cpu-clock"));
        p.strings.push("phases".into());
        let ms = 1_000_000;
        let sample = |time: u64, tid: i32| Sample {
            time,
            pid: 10,
            tid,
            period: ms,
            ..Sample::default()
        };
        for i in 0..1000 {
            p.samples.push(sample(i * ms + 1, 10));
        }
        let switch = |time, tid, kind| TaskSwitch {
            time,
            pid: 10,
            tid,
            kind,
        };
        p.switches
            .push(switch(1000 * ms, 10, SwitchKind::Out { preempted: false }));
        p.switches.push(switch(1000 * ms, 11, SwitchKind::In));
        p.switches.push(switch(1000 * ms, 12, SwitchKind::In));
        for i in 0..500 {
            p.samples.push(sample((1000 + i) * ms + 1, 11));
            p.samples.push(sample((1000 + i) * ms + 1, 12));
        }
        p.switches.push(switch(1500 * ms, 11, SwitchKind::Exit));
        p.switches.push(switch(1500 * ms, 12, SwitchKind::Exit));
        p
    }

    fn report(keys: Vec<LatencyKey>, parallelism: Option<Vec<(u32, u32)>>) -> LatencyReport {
        let mut sym = Symbolizer::new(Default::default());
        latency_report(
            &phases(),
            &mut sym,
            &LatencyReportOptions {
                keys,
                by_latency: true,
                parallelism,
                event: 0,
            },
        )
        .unwrap()
    }

    #[test]
    fn test_serial_phase_weighs_two_thirds_of_latency_and_half_of_overhead() {
        let r = report(vec![LatencyKey::Tid], None);
        let main = r.rows.iter().find(|r| r.keys[0] == "10:phases").unwrap();
        assert!((main.latency - 200.0 / 3.0).abs() < 1e-9, "{main:?}");
        assert!((main.overhead - 50.0).abs() < 1e-9, "{main:?}");
        assert_eq!(r.rows[0].keys[0], "10:phases", "sorted by latency");
    }

    #[test]
    fn test_parallelism_histogram_and_filter() {
        let r = report(vec![LatencyKey::Parallelism], None);
        let by: Vec<(&str, f64, f64)> = r
            .rows
            .iter()
            .map(|r| (r.keys[0].as_str(), r.latency, r.overhead))
            .collect();
        assert_eq!(by.len(), 2);
        assert_eq!(by[0].0, "1");
        assert!((by[0].1 - 200.0 / 3.0).abs() < 1e-9 && (by[0].2 - 50.0).abs() < 1e-9);
        assert!((by[1].1 - 100.0 / 3.0).abs() < 1e-9 && (by[1].2 - 50.0).abs() < 1e-9);
        // Only the parallel phase: its rows keep their shares of all samples.
        let r = report(vec![LatencyKey::Tid], Some(vec![(2, 2)]));
        assert_eq!(r.rows.len(), 2);
        assert!(r.rows.iter().all(|row| row.keys[0] != "10:phases"));
        assert!((r.rows[0].overhead - 25.0).abs() < 1e-9);
    }

    #[test]
    fn test_parallelism_is_clamped_to_one_and_the_cpus() {
        let mut p = phases();
        // Three more switch-ins than CPUs, then unbalanced switch-outs.
        for t in [20, 21, 22] {
            p.switches.insert(
                0,
                TaskSwitch {
                    time: 0,
                    pid: 10,
                    tid: t,
                    kind: SwitchKind::In,
                },
            );
        }
        assert!(sample_parallelism(&p).iter().all(|&n| (1..=2).contains(&n)));
        assert_eq!(sample_parallelism(&Profile::default()), Vec::<u32>::new());
        assert_eq!(parse_ranges("1,4-8").unwrap(), vec![(1, 1), (4, 8)]);
        assert!(parse_ranges("8-4").is_err() && parse_ranges("x").is_err());
    }
}
