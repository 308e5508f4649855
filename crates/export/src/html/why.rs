//! The Why tab's model: what explains the hot functions beyond their time. Here, the skid
//! correction: per function, the raw self samples of each event that skids (non-precise
//! memory and branch events) beside their de-skid estimate, as `culprit report --sort sym
//! --no-children --deskid` computes them.

use serde::Serialize;

use culprit_analysis::hotspots::{hotspots_aggregated, SampleAggregator};
use culprit_analysis::skid::{self, EventClass};
use culprit_analysis::{AnalysisError, HotspotOptions};
use culprit_decode::model::Profile;
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

/// The de-skid table of the samples folded in `agg`, with the table's options `hopts`;
/// `None` when no event of the report skids.
pub fn deskid_table(
    profile: &Profile,
    agg: &SampleAggregator,
    symbolizer: &mut Symbolizer,
    hopts: &HotspotOptions,
) -> Result<Option<WhyDeskid>, AnalysisError> {
    let opts = HotspotOptions {
        deskid: true,
        ..hopts.clone()
    };
    let h = hotspots_aggregated(profile, agg, symbolizer, &opts, &mut |_, _| {})?;
    let moving: Vec<usize> = (0..h.events.len())
        .filter(|&i| {
            profile
                .events
                .get(usize::from(h.events[i].id))
                .is_some_and(|e| {
                    !skid::is_precise_event(e) && skid::classify_event(e) != EventClass::Stays
                })
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
