//! The Why tab's model: what explains the hot functions beyond their time. Here, the skid
//! correction: per function, the raw self samples of each event that skids (non-precise
//! memory and branch events) beside their de-skid estimate, as `culprit report --sort sym
//! --no-children --deskid` computes them.

use serde::Serialize;

use culprit_analysis::hotspots::{hotspots_aggregated, SampleAggregator};
use culprit_analysis::skid::{self, EventClass};
use culprit_analysis::{AnalysisError, Filters, HotspotOptions};
use culprit_decode::model::{EventInfo, Profile, Sample};
use culprit_symbols::Symbolizer;

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
