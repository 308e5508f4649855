//! The Why tab's model: what explains the hot functions beyond their time.
//! - The skid correction: per function, the raw self samples of each event that skids
//!   (non-precise memory and branch events) beside their de-skid estimate, as `culprit
//!   report --sort sym --no-children --deskid` computes them.
//! - Miss sources: per function, where its sampled loads were served (the memory level of
//!   PERF_SAMPLE_DATA_SRC) with their samples and weight, as `culprit report --sort sym,mem`.
//! - Latency histograms: per function, its samples' latencies (PEBS load latency, SPE total
//!   latency, IBS DcMissLat of a missing load) in power-of-two ranges of cycles, as `culprit
//!   script` gives each sample's `latency`.

use serde::Serialize;

use culprit_analysis::hotspots::{hotspots_aggregated, SampleAggregator};
use culprit_analysis::offenders::report::Place;
use culprit_analysis::skid::{self, EventClass};
use culprit_analysis::{AnalysisError, Filters, HotspotOptions, SortKey};
use culprit_decode::abi::sample_type as sample;
use culprit_decode::model::{EventInfo, Location, Profile, Sample};
use culprit_decode::precise::PreciseDecoder;
use culprit_symbols::Symbolizer;
use rustc_hash::FxHashMap;

/// Functions the de-skid table keeps.
const ROWS: usize = 20;

/// Per function, raw and de-skidded self samples of the events that skid.
#[derive(Debug, Clone, Serialize)]
pub struct WhyDeskid {
    /// The events whose samples de-skid moves (non-precise memory and branch events and
    /// data breakpoints), by name: the columns.
    pub events: Vec<String>,
    /// The functions with samples of those events, in the report's order (at most 20).
    pub rows: Vec<WhyDeskidRow>,
}

/// One function of [`WhyDeskid`].
#[derive(Debug, Clone, Serialize)]
pub struct WhyDeskidRow {
    /// The name as the report shows it.
    pub name: String,
    /// The DSO's short name.
    pub dso: String,
    /// Per column event: self samples as sampled.
    pub samples: Vec<u64>,
    /// Per column event: self samples after de-skid (an estimate; exact for breakpoints).
    pub deskid: Vec<u64>,
}

/// Whether de-skid moves samples of this event (what the table shows).
fn skids(e: &EventInfo) -> bool {
    !skid::is_precise_event(e) && skid::classify_event(e) != EventClass::Stays
}

/// The samples of the events that skid, folded while the file is read with every field
/// de-skid needs (the main table's aggregator drops the IP's exactness); other events'
/// samples are not kept.
pub struct DeskidSamples {
    agg: SampleAggregator,
    opts: HotspotOptions,
    /// Per event id: 0 unknown yet, 1 skids, 2 does not.
    skids: Vec<u8>,
}

impl DeskidSamples {
    /// An empty fold for the table of `hopts` (its keys and events).
    pub fn new(hopts: &HotspotOptions) -> DeskidSamples {
        let opts = HotspotOptions {
            deskid: true,
            ..hopts.clone()
        };
        let mut agg = SampleAggregator::new(false, &Filters::default());
        agg.only_for(&opts);
        DeskidSamples {
            agg,
            opts,
            skids: Vec::new(),
        }
    }

    /// Adds sample `s` of `profile` when its event skids.
    pub fn add(&mut self, profile: &Profile, s: &Sample) {
        let e = usize::from(s.event);
        if self.skids.len() <= e {
            self.skids.resize(e + 1, 0);
        }
        if self.skids[e] == 0 {
            let yes = profile.events.get(e).is_some_and(skids);
            self.skids[e] = if yes { 1 } else { 2 };
        }
        if self.skids[e] == 1 {
            self.agg.add(profile, s);
        }
    }

    /// The table (`None` when no event skids), with the numbers of `culprit report --sort
    /// sym --no-children --deskid` for those events.
    pub fn table(
        mut self,
        profile: &Profile,
        symbolizer: &mut Symbolizer,
    ) -> Result<Option<WhyDeskid>, AnalysisError> {
        self.agg.finish();
        if self.agg.distinct() == 0 {
            return Ok(None);
        }
        let h = hotspots_aggregated(profile, &self.agg, symbolizer, &self.opts, &mut |_, _| {})?;
        let moving: Vec<usize> = (0..h.events.len())
            .filter(|&i| {
                h.events[i].samples > 0
                    && profile
                        .events
                        .get(usize::from(h.events[i].id))
                        .is_some_and(skids)
            })
            .collect();
        if moving.is_empty() {
            return Ok(None);
        }
        let rows = h
            .rows()
            .filter(|r| {
                moving
                    .iter()
                    .any(|&e| r.samples(e) > 0 || r.deskid_samples(e) > 0)
            })
            .take(ROWS)
            .map(|r| {
                let sym = r.keys().next();
                WhyDeskidRow {
                    name: sym.map(|k| r.text(&k).to_string()).unwrap_or_default(),
                    dso: sym
                        .and_then(|k| r.dso(&k).map(str::to_string))
                        .unwrap_or_default(),
                    samples: moving.iter().map(|&e| r.samples(e)).collect(),
                    deskid: moving.iter().map(|&e| r.deskid_samples(e)).collect(),
                }
            })
            .collect();
        Ok(Some(WhyDeskid {
            events: moving.iter().map(|&e| h.events[e].name.clone()).collect(),
            rows,
        }))
    }
}

/// Rows the memory table keeps.
const MEM_ROWS: usize = 30;

/// Per function and memory level (where its loads were served, from
/// PERF_SAMPLE_DATA_SRC), the samples and their weight: `culprit report --sort sym,mem`.
#[derive(Debug, Clone, Serialize)]
pub struct WhyMemory {
    /// The events with data sources, by name: the columns.
    pub events: Vec<String>,
    /// Per column event: its total weight (the percentage base).
    pub total_weight: Vec<u64>,
    /// The (function, level) rows, in the report's order (at most 30).
    pub rows: Vec<WhyMemoryRow>,
}

/// One row of [`WhyMemory`].
#[derive(Debug, Clone, Serialize)]
pub struct WhyMemoryRow {
    /// The function as the report shows it.
    pub name: String,
    /// The memory level, as perf prints it (`L1 or L1 hit`, `Local RAM or RAM hit`).
    pub level: String,
    /// Per column event: samples.
    pub samples: Vec<u64>,
    /// Per column event: summed weight (load latency when recorded, else 1 per sample).
    pub weight: Vec<u64>,
}

/// The samples of the events that record data sources, folded with every field the memory
/// keys need; other events' samples are not kept.
pub struct MemorySamples {
    agg: SampleAggregator,
    opts: HotspotOptions,
}

impl MemorySamples {
    /// An empty fold for the events of `hopts`.
    pub fn new(hopts: &HotspotOptions) -> MemorySamples {
        let opts = HotspotOptions {
            keys: vec![SortKey::Sym, SortKey::Mem],
            ..hopts.clone()
        };
        let mut agg = SampleAggregator::new(false, &Filters::default());
        agg.only_for(&opts);
        MemorySamples { agg, opts }
    }

    /// Adds sample `s` of `profile` when its event records PERF_SAMPLE_DATA_SRC.
    pub fn add(&mut self, profile: &Profile, s: &Sample) {
        let has_src = profile
            .events
            .get(usize::from(s.event))
            .is_some_and(|e| e.sample_type & sample::DATA_SRC != 0);
        if has_src {
            self.agg.add(profile, s);
        }
    }

    /// The table (`None` without data sources), with `culprit report --sort sym,mem`'s
    /// numbers.
    pub fn table(
        mut self,
        profile: &Profile,
        symbolizer: &mut Symbolizer,
    ) -> Result<Option<WhyMemory>, AnalysisError> {
        self.agg.finish();
        if self.agg.distinct() == 0 {
            return Ok(None);
        }
        let h = hotspots_aggregated(profile, &self.agg, symbolizer, &self.opts, &mut |_, _| {})?;
        let cols: Vec<usize> = (0..h.events.len())
            .filter(|&i| h.events[i].samples > 0)
            .collect();
        if cols.is_empty() {
            return Ok(None);
        }
        let rows = h
            .rows()
            .take(MEM_ROWS)
            .map(|r| {
                let text = |key: SortKey| {
                    r.keys()
                        .find(|k| k.key == key)
                        .map(|k| r.text(&k).to_string())
                        .unwrap_or_default()
                };
                WhyMemoryRow {
                    name: text(SortKey::Sym),
                    level: text(SortKey::Mem),
                    samples: cols.iter().map(|&e| r.samples(e)).collect(),
                    weight: cols.iter().map(|&e| r.period(e)).collect(),
                }
            })
            .collect();
        Ok(Some(WhyMemory {
            events: cols.iter().map(|&e| h.events[e].name.clone()).collect(),
            total_weight: cols.iter().map(|&e| h.events[e].period).collect(),
            rows,
        }))
    }
}

/// Ranges of the latency histograms: 0 cycles, then `[2^(b-1), 2^b)` for bucket `b`, the
/// last one open-ended.
pub const LATENCY_BUCKETS: usize = 24;
/// Functions the latency table keeps.
const LATENCY_ROWS: usize = 15;

/// The histogram bucket of a latency of `w` cycles.
fn latency_bucket(w: u64) -> usize {
    (64 - w.leading_zeros() as usize).min(LATENCY_BUCKETS - 1)
}

/// Per function, the histogram of its samples' latencies (PERF_SAMPLE_WEIGHT).
#[derive(Debug, Clone, Serialize)]
pub struct WhyLatency {
    /// The events whose samples carry a weight, by name.
    pub events: Vec<String>,
    /// The functions with the most summed latency (at most 15), most first.
    pub rows: Vec<WhyLatencyRow>,
}

/// One row of [`WhyLatency`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WhyLatencyRow {
    /// The function (`[unknown]` without a symbol).
    pub name: String,
    /// Its DSO's short name.
    pub dso: String,
    /// Samples with a weight.
    pub samples: u64,
    /// Their summed latency, cycles.
    pub total: u64,
    /// Samples per range ([`LATENCY_BUCKETS`]: 0, then `[2^(b-1), 2^b)` cycles).
    pub buckets: Vec<u64>,
}

/// The weighted samples, folded by where they were taken (bounded by the distinct
/// locations, not the samples); named when the table is made.
#[derive(Default)]
pub struct LatencySamples {
    by_place: FxHashMap<(i32, Location), (u64, [u64; LATENCY_BUCKETS])>,
    events: Vec<bool>,
    precise: PreciseDecoder,
}

impl LatencySamples {
    /// Adds sample `s` of `profile` (read so far) when its precise model has a latency (as
    /// `culprit script` shows it: PEBS/SPE weight, IBS DcMissLat of a missing load).
    pub fn add(&mut self, profile: &Profile, s: &Sample) {
        let (_, precise, _) = self.precise.decode(profile, s);
        let Some(w) = precise.and_then(|p| p.latency) else {
            return;
        };
        let event = usize::from(s.event);
        if self.events.len() <= event {
            self.events.resize(event + 1, false);
        }
        self.events[event] = true;
        let (total, buckets) = self.by_place.entry((s.pid, s.location)).or_default();
        *total += w;
        buckets[latency_bucket(w)] += 1;
    }

    /// The table (`None` without weighted samples): the functions by summed latency.
    pub fn table(self, profile: &Profile, symbolizer: &mut Symbolizer) -> Option<WhyLatency> {
        if self.by_place.is_empty() {
            return None;
        }
        let mut by_function: FxHashMap<(String, String), WhyLatencyRow> = FxHashMap::default();
        for ((pid, location), (total, buckets)) in self.by_place {
            let place = Place::of(profile, symbolizer, location, pid);
            let name = place.symbol.unwrap_or_else(|| "[unknown]".to_string());
            let row = by_function
                .entry((name.clone(), place.dso.clone()))
                .or_insert_with(|| WhyLatencyRow {
                    name,
                    dso: place.dso,
                    samples: 0,
                    total: 0,
                    buckets: vec![0; LATENCY_BUCKETS],
                });
            row.samples += buckets.iter().sum::<u64>();
            row.total += total;
            for (sum, n) in row.buckets.iter_mut().zip(buckets) {
                *sum += n;
            }
        }
        let mut rows: Vec<WhyLatencyRow> = by_function.into_values().collect();
        rows.sort_by(|a, b| (b.total, &a.name, &a.dso).cmp(&(a.total, &b.name, &b.dso)));
        rows.truncate(LATENCY_ROWS);
        let events = self
            .events
            .iter()
            .enumerate()
            .filter(|(_, &has)| has)
            .filter_map(|(i, _)| profile.events.get(i).map(|e| e.name.clone()))
            .collect();
        Some(WhyLatency { events, rows })
    }
}
