//! `report --offenders`: the detectors run over a recording's sample stream, the owned report
//! model (JSON by serde derives, `schema` 1: docs/schemas/report-offenders.schema.json), the
//! optional comparison with the exact per-address histogram of the same samples (precision,
//! recall, memory: the evaluation of docs/offenders.md), and the report as a document.

use std::collections::HashMap;

use culprit_decode::model::{DsoId, EventId, Location, Profile, Sample};
use culprit_output::json::Round4;
use culprit_output::{Column, Document, Note, Table, Values};
use culprit_symbols::{Query, Symbolizer};
use serde::{Serialize, Serializer};

use super::events::{EventDetectors, Settings};
use super::{histogram_bytes, Config, ConfigError, Offender, Unit};
use crate::AnalysisError;

/// The version of the report's JSON (`schema`).
pub const SCHEMA: u32 = 1;

/// An address, serialized as `"0x…"` (the convention of every culprit JSON report).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Hex(pub u64);

impl Serialize for Hex {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&format_args!("{:#x}", self.0))
    }
}

/// A code location as reports show it: the DSO's short name, the address as the ELF file
/// states it (objdump's, `report --sort ip`'s; the file offset when the ELF address cannot be
/// computed) and the symbol.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    /// DSO short name (`[unknown]` outside every mapping).
    pub dso: String,
    /// ELF address.
    pub addr: u64,
    /// Function name, when known.
    pub symbol: Option<String>,
}

impl Place {
    /// Resolves `loc`, sampled in process `pid`.
    pub fn of(profile: &Profile, sym: &mut Symbolizer, loc: Location, pid: i32) -> Place {
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
}

/// The short name of a DSO, `[unknown]` for none.
pub fn dso_short(profile: &Profile, dso: Option<DsoId>) -> String {
    dso.and_then(|d| profile.dsos.get(d as usize))
        .map(|d| d.short_name.clone())
        .unwrap_or_else(|| "[unknown]".to_string())
}

/// What `report --offenders` computes.
#[derive(Debug, Clone, Default)]
pub struct ReportOptions {
    /// Only these events (names as in the file; empty: all).
    pub events: Vec<String>,
    /// The thresholds.
    pub settings: Settings,
    /// Also build the exact per-address histogram and compare.
    pub exact: bool,
}

/// Histogram value: samples, period, a pid that sampled it, index of its first sample.
#[derive(Debug, Clone, Copy)]
struct AddrCount {
    samples: u64,
    period: u64,
    pid: i32,
    first: u64,
}

/// Builds the report from a sample stream: feed [`ReportBuilder::sample`] every sample (in
/// the file's order), then [`ReportBuilder::finish`].
#[derive(Debug)]
pub struct ReportBuilder {
    options: ReportOptions,
    detectors: EventDetectors,
    /// Per event: the exact histogram keyed by (DSO, file offset).
    exact: Vec<HashMap<(Option<DsoId>, u64), AddrCount>>,
    wanted: Vec<Option<bool>>,
    observed: Vec<u64>,
}

impl ReportBuilder {
    /// A builder (bad thresholds are refused here).
    pub fn new(options: ReportOptions) -> Result<ReportBuilder, ConfigError> {
        Ok(ReportBuilder {
            detectors: EventDetectors::new(options.settings)?,
            options,
            exact: Vec::new(),
            wanted: Vec::new(),
            observed: Vec::new(),
        })
    }

    /// Feeds one sample.
    pub fn sample(&mut self, p: &Profile, s: &Sample) {
        let i = s.event as usize;
        if self.wanted.len() <= i {
            self.wanted.resize(i + 1, None);
            self.observed.resize(i + 1, 0);
        }
        let events = &self.options.events;
        let want = *self.wanted[i].get_or_insert_with(|| {
            events.is_empty()
                || p.events
                    .get(i)
                    .is_some_and(|e| events.iter().any(|w| e.matches(w)))
        });
        if !want {
            return;
        }
        self.observed[i] += 1;
        self.detectors.observe(s);
        if self.options.exact {
            if self.exact.len() <= i {
                self.exact.resize_with(i + 1, HashMap::new);
            }
            let e = self.exact[i]
                .entry((s.location.dso, s.location.file_offset))
                .or_insert(AddrCount {
                    samples: 0,
                    period: 0,
                    pid: s.pid,
                    first: self.observed[i],
                });
            e.samples += 1;
            e.period += s.period;
        }
    }

    /// The report of everything fed, named with `sym`; `file` names the input. Fails when
    /// an event asked for is not in the profile.
    pub fn finish(
        mut self,
        profile: &Profile,
        sym: &mut Symbolizer,
        file: &str,
    ) -> Result<OffendersReport, AnalysisError> {
        self.detectors.flush();
        culprit_decode::model::select_events(profile, &self.options.events)?;
        let (t0, t_end) = profile.meta.time_range.unwrap_or((0, 0));
        let span = t_end.saturating_sub(t0).max(1) as f64;
        let mut events = Vec::new();
        for (ei, info) in profile.events.iter().enumerate() {
            let Some(d) = self.detectors.get(ei as EventId) else {
                continue;
            };
            let cfg = d.config();
            let samples = self.observed.get(ei).copied().unwrap_or(0);
            let ranked: Vec<(Offender, Place)> = d
                .ranked()
                .into_iter()
                .map(|x| {
                    let pl = Place::of(profile, sym, x.location, x.pid);
                    (x, pl)
                })
                .collect();
            let exact = match self.exact.get(ei) {
                Some(h) if self.options.exact => Some(compare(
                    h,
                    &ranked,
                    cfg,
                    profile,
                    sym,
                    samples.max(1),
                    t0,
                    span,
                )),
                _ => None,
            };
            let offenders = ranked
                .into_iter()
                .map(|(x, pl)| OffenderRow {
                    ip: Hex(pl.addr),
                    dso: pl.dso,
                    symbol: pl.symbol,
                    pid: x.pid,
                    confirmations: x.confirmations,
                    count1: x.count1,
                    count2: x.count2,
                    first_time_ns: x.first_time,
                    last_time_ns: x.last_time,
                    first_time_fraction: Round4(x.first_time.saturating_sub(t0) as f64 / span),
                    first_observation: x.first_observation,
                })
                .collect();
            events.push(EventOffenders {
                name: info.name.clone(),
                samples,
                t1: cfg.t1,
                t2: cfg.t2,
                unit: cfg.unit,
                rounds: d.rounds(),
                confirmations: d.confirmations(),
                evictions: d.evictions(),
                detector_bytes: d.memory_bytes(),
                offenders,
                exact,
            });
        }
        let notes = profile
            .warnings
            .iter()
            .chain(sym.warnings())
            .map(Note::warning)
            .collect();
        Ok(OffendersReport {
            schema: SCHEMA,
            file: file.to_string(),
            duration_ns: profile.meta.time_range.map(|(a, b)| b.saturating_sub(a)),
            events,
            detectors_bytes: self.detectors.memory_bytes(),
            notes,
        })
    }
}

/// `report --offenders`'s report (its JSON is this struct).
#[derive(Debug, Clone, Serialize)]
pub struct OffendersReport {
    /// JSON schema version ([`SCHEMA`]).
    pub schema: u32,
    /// The input.
    pub file: String,
    /// Time from the first to the last sample.
    pub duration_ns: Option<u64>,
    /// Per event with samples.
    pub events: Vec<EventOffenders>,
    /// Bytes of all detectors.
    pub detectors_bytes: usize,
    /// Warnings of reading and symbolizing (stderr).
    #[serde(skip)]
    pub notes: Vec<Note>,
}

/// The offenders of one event.
#[derive(Debug, Clone, Serialize)]
pub struct EventOffenders {
    /// Event name.
    pub name: String,
    /// Samples of the event.
    pub samples: u64,
    /// First threshold in use.
    pub t1: u64,
    /// Second threshold in use.
    pub t2: u64,
    /// What they count.
    pub unit: Unit,
    /// Rounds (candidates captured).
    pub rounds: u64,
    /// Confirmations, repeats included.
    pub confirmations: u64,
    /// Offenders dropped from the full table.
    pub evictions: u64,
    /// Bytes of the event's detector.
    pub detector_bytes: usize,
    /// Confirmed offenders, most confirmed first.
    pub offenders: Vec<OffenderRow>,
    /// The comparison with the exact histogram (`--exact`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exact: Option<Comparison>,
}

/// A confirmed offender.
#[derive(Debug, Clone, Serialize)]
pub struct OffenderRow {
    /// ELF address.
    pub ip: Hex,
    /// DSO short name.
    pub dso: String,
    /// Function.
    pub symbol: Option<String>,
    /// Process at the first confirmation.
    pub pid: i32,
    /// Rounds that confirmed it.
    pub confirmations: u64,
    /// First counter at the first confirmation.
    pub count1: u64,
    /// Second counter at the first confirmation.
    pub count2: u64,
    /// Time of the first confirmation.
    pub first_time_ns: u64,
    /// Time of the last confirmation.
    pub last_time_ns: u64,
    /// Share of the recording's time before the first confirmation.
    pub first_time_fraction: Round4,
    /// Samples the detector had seen at the first confirmation.
    pub first_observation: u64,
}

/// The detector against the exact top-k of the same samples.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    /// Distinct (DSO, offset) addresses sampled.
    pub distinct_addresses: usize,
    /// Bytes the full histogram needs.
    pub histogram_bytes: usize,
    /// The exact top 5.
    pub top: Vec<ExactRow>,
    /// 1 when the exact top-1 was reported.
    pub recall_top1: f64,
    /// Share of the exact top 5 reported.
    pub recall_top5: Round4,
    /// Share of the reported in the exact top 5.
    pub precision_top5: Round4,
    /// Share of the reported with a share of at least T2/T1.
    pub precision_significant: Round4,
    /// T2/T1.
    pub significance_threshold: Round4,
    /// The sample at which the exact top-1 was first confirmed.
    pub top1_first_observation: Option<u64>,
    /// That sample as a share of the event's samples.
    pub top1_first_observation_fraction: Option<Round4>,
    /// The time of that confirmation as a share of the recording.
    pub top1_first_time_fraction: Option<Round4>,
    /// The exact top-1's first sample.
    pub top1_first_seen_observation: Option<u64>,
    /// Samples from the top-1's first to its confirmation, as a share of the samples after
    /// its first.
    pub top1_detection_delay_fraction: Option<Round4>,
    /// The comparison in lines of text.
    #[serde(skip)]
    pub summary: Vec<String>,
}

/// One address of the exact top 5.
#[derive(Debug, Clone, Serialize)]
pub struct ExactRow {
    /// ELF address.
    pub ip: Hex,
    /// DSO short name.
    pub dso: String,
    /// Function.
    pub symbol: Option<String>,
    /// Samples at the address.
    pub samples: u64,
    /// Their period.
    pub period: u64,
    /// Share of the event (in the detector's unit).
    pub percent: Round4,
    /// Whether the detector reported it.
    pub reported: bool,
}

fn round4(x: f64) -> f64 {
    culprit_output::units::round4(x)
}

/// Detector vs the exact top-k of the same samples.
#[allow(clippy::too_many_arguments)]
fn compare(
    h: &HashMap<(Option<DsoId>, u64), AddrCount>,
    rows: &[(Offender, Place)],
    cfg: Config,
    profile: &Profile,
    sym: &mut Symbolizer,
    total_obs: u64,
    t0: u64,
    span: f64,
) -> Comparison {
    let weight = |v: &AddrCount| match cfg.unit {
        Unit::Samples => v.samples,
        Unit::Events => v.period,
    };
    let total: u64 = h.values().map(weight).sum::<u64>().max(1);
    let mut all: Vec<(&(Option<DsoId>, u64), &AddrCount)> = h.iter().collect();
    all.sort_by(|a, b| weight(b.1).cmp(&weight(a.1)).then(a.0.cmp(b.0)));
    let loc = |k: &(Option<DsoId>, u64)| Location {
        dso: k.0,
        file_offset: k.1,
    };
    let top: Vec<Location> = all.iter().take(5).map(|(k, _)| loc(k)).collect();
    let reported: Vec<Location> = rows.iter().map(|(x, _)| x.location).collect();
    let share = |l: &Location| {
        h.get(&(l.dso, l.file_offset))
            .map_or(0.0, |v| weight(v) as f64 / total as f64)
    };
    let threshold = cfg.t2 as f64 / cfg.t1 as f64;
    let in_top5 = reported.iter().filter(|l| top.contains(l)).count();
    let significant = reported.iter().filter(|l| share(l) >= threshold).count();
    let top1 = top
        .first()
        .and_then(|t| rows.iter().find(|(x, _)| x.location == *t))
        .map(|(x, _)| x);
    let recall5 = top.iter().filter(|t| reported.contains(t)).count();
    // Detection delay counted from the exact top-1's first sample (a program's set-up phase
    // before its hot code runs is no fault of the detector).
    let first_seen = all.first().map_or(0, |(_, v)| v.first);
    let delay = top1.map(|x| {
        round4(
            x.first_observation.saturating_sub(first_seen) as f64
                / total_obs.saturating_sub(first_seen).max(1) as f64,
        )
    });
    let nrep = reported.len().max(1) as f64;
    let top_rows: Vec<ExactRow> = all
        .iter()
        .take(5)
        .map(|(k, v)| {
            let pl = Place::of(profile, sym, loc(k), v.pid);
            ExactRow {
                ip: Hex(pl.addr),
                dso: pl.dso,
                symbol: pl.symbol,
                samples: v.samples,
                period: v.period,
                percent: Round4(100.0 * weight(v) as f64 / total as f64),
                reported: reported.contains(&loc(k)),
            }
        })
        .collect();
    let hist_bytes = histogram_bytes(h.len());
    let mut summary = vec![format!(
        "exact: {} distinct addresses, full histogram {} bytes",
        h.len(),
        hist_bytes
    )];
    match top1 {
        Some(x) => {
            summary.push(format!(
                "top-1 found at sample {}: {:.2}% of the samples, {:.2}% of the time",
                x.first_observation,
                100.0 * x.first_observation as f64 / total_obs as f64,
                100.0 * x.first_time.saturating_sub(t0) as f64 / span,
            ));
            summary.push(format!(
                "top-1 delay: {} samples after its first, {:.2}% of the rest",
                x.first_observation.saturating_sub(first_seen),
                100.0 * delay.unwrap_or(0.0)
            ));
        }
        None => summary.push("top-1 NOT reported".to_string()),
    }
    summary.push(format!(
        "recall top-5 {}/{}; precision {}/{} in top-5, {}/{} with share >= T2/T1 = {:.1}%",
        recall5,
        top.len(),
        in_top5,
        reported.len(),
        significant,
        reported.len(),
        100.0 * threshold
    ));
    Comparison {
        distinct_addresses: h.len(),
        histogram_bytes: hist_bytes,
        top: top_rows,
        recall_top1: if top1.is_some() { 1.0 } else { 0.0 },
        recall_top5: Round4(recall5 as f64 / top.len().max(1) as f64),
        precision_top5: Round4(in_top5 as f64 / nrep),
        precision_significant: Round4(significant as f64 / nrep),
        significance_threshold: Round4(threshold),
        top1_first_observation: top1.map(|x| x.first_observation),
        top1_first_observation_fraction: top1
            .map(|x| Round4(x.first_observation as f64 / total_obs as f64)),
        top1_first_time_fraction: top1
            .map(|x| Round4(x.first_time.saturating_sub(t0) as f64 / span)),
        top1_first_seen_observation: all.first().map(|(_, v)| v.first),
        top1_detection_delay_fraction: delay.map(Round4),
        summary,
    }
}

/// The name of a unit in text.
pub fn unit_name(u: Unit) -> &'static str {
    match u {
        Unit::Samples => "samples",
        Unit::Events => "events",
    }
}

impl OffendersReport {
    /// The report as a document: per event, the detector's numbers, a table of its
    /// offenders, and the comparison with `--exact`.
    pub fn document(&self) -> Document {
        let mut doc = Document::new();
        for e in &self.events {
            let mut t = Table::new(vec![
                Column::new(
                    "Conf",
                    "confirmations",
                    Values::Count(e.offenders.iter().map(|o| o.confirmations).collect()),
                ),
                Column::new(
                    "First%",
                    "first_time_percent",
                    Values::Percent(
                        e.offenders
                            .iter()
                            .map(|o| 100.0 * o.first_time_fraction.0)
                            .collect(),
                    ),
                ),
                Column::new(
                    "FirstObs",
                    "first_observation",
                    Values::Count(e.offenders.iter().map(|o| o.first_observation).collect()),
                ),
                Column::new(
                    "Shared Object",
                    "dso",
                    Values::Text(e.offenders.iter().map(|o| o.dso.clone()).collect()),
                )
                .shrink(12),
                Column::new(
                    "Address",
                    "ip",
                    Values::Address(e.offenders.iter().map(|o| Some(o.ip.0)).collect()),
                ),
                Column::new(
                    "Symbol",
                    "symbol",
                    Values::Text(
                        e.offenders
                            .iter()
                            .map(|o| o.symbol.clone().unwrap_or_else(|| "[unknown]".into()))
                            .collect(),
                    ),
                )
                .shrink(12),
            ]);
            t.empty = Some("(no offender confirmed)".into());
            doc.lines(vec![
                format!(
                    "# Event '{}': {} samples; T1={} T2={} ({})",
                    e.name,
                    e.samples,
                    e.t1,
                    e.t2,
                    unit_name(e.unit)
                ),
                format!(
                    "# {} rounds, {} confirmations; detector {} bytes",
                    e.rounds, e.confirmations, e.detector_bytes
                ),
            ]);
            doc.table(t);
            if let Some(c) = &e.exact {
                doc.lines(c.summary.iter().map(|l| format!("# {l}")).collect());
            }
        }
        doc.notes.extend(self.notes.iter().cloned());
        doc
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A profile of one software event.
    pub(crate) fn profile() -> Profile {
        let mut p = Profile::default();
        p.events.push(crate::tests::event("cpu-clock"));
        p.meta.time_range = Some((0, 1000));
        p
    }

    fn sample(off: u64, time: u64) -> Sample {
        Sample {
            event: 0,
            ip: 0x1000 + off,
            location: Location {
                dso: None,
                file_offset: 0x1000 + off,
            },
            period: 1,
            time,
            ..Sample::default()
        }
    }

    fn report(exact: bool) -> OffendersReport {
        let p = profile();
        let mut b = ReportBuilder::new(ReportOptions {
            events: vec![],
            settings: Settings {
                t1: Some(10),
                t2: Some(3),
                unit: Unit::Samples,
            },
            exact,
        })
        .unwrap();
        // One hot address (every other sample), the rest spread.
        for i in 0..200u64 {
            let off = if i % 2 == 0 { 0x40 } else { 0x100 + i };
            b.sample(&p, &sample(off, i * 5));
        }
        let mut sym = Symbolizer::new(Default::default());
        b.finish(&p, &mut sym, "f.data").unwrap()
    }

    #[test]
    fn test_report_finds_the_hot_address_and_compares_with_the_histogram() {
        let r = report(true);
        let e = &r.events[0];
        assert_eq!(e.samples, 200);
        assert_eq!(e.offenders[0].ip, Hex(0x1040));
        let c = e.exact.as_ref().unwrap();
        assert_eq!(c.recall_top1, 1.0);
        assert_eq!(c.top[0].ip, Hex(0x1040));
        assert_eq!(
            c.summary[0],
            "exact: 101 distinct addresses, full histogram 3216 bytes"
        );
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["schema"], 1);
        assert_eq!(v["events"][0]["offenders"][0]["ip"], "0x1040");
        assert!(report(false).events[0].exact.is_none());
        let j = serde_json::to_value(report(false)).unwrap();
        assert!(j["events"][0].get("exact").is_none());
    }

    #[test]
    fn test_document_one_table_per_event() {
        let r = report(true);
        let d = r.document();
        let mut out = Vec::new();
        culprit_output::text::write(&mut out, &d, &culprit_output::TextOptions::default()).unwrap();
        let s = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(
            lines[0], "# Event 'cpu-clock': 200 samples; T1=10 T2=3 (samples)",
            "{s}"
        );
        assert!(
            lines[1].starts_with("# 23 rounds, 11 confirmations; detector "),
            "{s}"
        );
        assert!(
            lines[3].starts_with("# Conf  First%  FirstObs  Shared Object"),
            "{s}"
        );
        assert!(
            lines[4].contains("[unknown]       0x1040  [unknown]"),
            "{s}"
        );
        assert!(s.contains("\n# exact: 101 distinct"), "{s}");
        assert!(s.lines().all(|l| l.chars().count() <= 80), "{s}");
    }

    #[test]
    fn test_unknown_event_is_an_error() {
        let p = profile();
        let b = ReportBuilder::new(ReportOptions {
            events: vec!["cycles".into()],
            ..ReportOptions::default()
        })
        .unwrap();
        let mut sym = Symbolizer::new(Default::default());
        let e = b.finish(&p, &mut sym, "f").unwrap_err().to_string();
        assert!(e.contains("no event 'cycles'"), "{e}");
    }
}
