//! `culprit report --topdown`: each hotspot row's level-1 breakdown, estimated from the
//! sampled periods of a `culprit record --topdown` file.

use std::collections::BTreeMap;

use culprit_decode::model::Profile;
use culprit_output::{Column, Document, Table, Values};
use serde::Serialize;

use super::*;
use crate::Hotspots;

/// What the per-function estimate is, said once in every output.
pub const SAMPLED_NOTE: &str = "estimate from sampled slot counts: each sample stands for its \
    period of events at its IP; rows with few samples (min_samples) are noisy and may not sum to 1";

/// The per-function Top-Down report (JSON: docs/schemas/report-topdown.schema.json).
#[derive(Debug, Clone, Serialize)]
pub struct SampledReport {
    /// Schema version of this JSON object.
    pub schema: u32,
    /// The report.
    pub topdown: SampledTopdown,
}

/// The body of a [`SampledReport`].
#[derive(Debug, Clone, Serialize)]
pub struct SampledTopdown {
    /// The CPU model the file was recorded on.
    pub model: String,
    /// Always true: the fractions are estimates from samples.
    pub estimate: bool,
    /// [`SAMPLED_NOTE`].
    pub note: String,
    /// One per hotspot row with cycles samples, hottest first.
    pub rows: Vec<SampledRow>,
}

/// One row of a [`SampledTopdown`].
#[derive(Debug, Clone, Serialize)]
pub struct SampledRow {
    /// The row's sort keys (`comm`, `dso`, `sym`, …) and their texts.
    pub keys: BTreeMap<String, String>,
    /// The estimated fractions.
    pub level1: Level1,
    /// Samples of the level-1 events in the row.
    pub samples: u64,
    /// Samples of its least-sampled level-1 event.
    pub min_samples: u64,
    /// The key texts in sort-key order (text and CSV columns).
    #[serde(skip)]
    pub key_texts: Vec<String>,
}

/// The models whose level-1 events can be sampled.
const SAMPLED_MODELS: [Model; 3] = [Model::Zen4, Model::Zen5, Model::IntelSkylake];

/// Whether an event (`perf_event_attr` type and config) is a Top-Down sampling event of any
/// model culprit knows.
pub fn is_topdown_event(attr_type: u32, config: u64) -> bool {
    SAMPLED_MODELS
        .iter()
        .any(|&m| sampled_event(m, attr_type, config).is_some())
}

/// Each row's level-1 breakdown from the sampled periods of `profile` (a `culprit record
/// --topdown` file) grouped as `report` is.
///
/// Errors: the file has no Top-Down events at all ([`TopdownError::NoTopdownEvents`]), its
/// CPU is unknown or unsupported, or it lacks some of the model's level-1 events.
pub fn sampled_report(profile: &Profile, report: &Hotspots) -> Result<SampledReport, TopdownError> {
    // First what the file holds: a file of other events is not the CPU's fault.
    if !profile
        .events
        .iter()
        .any(|e| is_topdown_event(e.attr_type, e.config))
    {
        return Err(TopdownError::NoTopdownEvents {
            events: profile.events.iter().map(|e| e.name.clone()).collect(),
        });
    }
    let (vendor, family, model_nr) = profile
        .meta
        .cpuid
        .as_deref()
        .and_then(parse_cpuid)
        .ok_or(TopdownError::NoCpuid)?;
    let model = model_for(&vendor, family, model_nr, false, false)?;
    // Which report column is which level-1 event.
    let columns: Vec<Option<Ev>> = report
        .events
        .iter()
        .map(|e| {
            profile
                .events
                .get(usize::from(e.id))
                .and_then(|i| sampled_event(model, i.attr_type, i.config))
        })
        .collect();
    let wanted = sampling_events(model)?;
    let missing: Vec<String> = wanted
        .iter()
        .filter(|w| !columns.contains(&Some(w.key)))
        .map(|w| w.name.clone())
        .collect();
    if !missing.is_empty() {
        return Err(TopdownError::MissingEvents(missing));
    }
    let rows = report
        .rows()
        .filter_map(|row| {
            let periods: Vec<(Ev, u64, u64)> = columns
                .iter()
                .enumerate()
                .filter_map(|(i, c)| Some(((*c)?, row.period(i), row.samples(i))))
                .collect();
            let est = level1_from_samples(model, &periods)?;
            let keys = row
                .keys()
                .map(|k| (k.key.name().to_string(), row.text(&k).to_string()))
                .collect();
            Some(SampledRow {
                keys,
                level1: est.level1,
                samples: est.samples,
                min_samples: est.min_samples,
                key_texts: row.keys().map(|k| row.text(&k).to_string()).collect(),
            })
        })
        .collect();
    Ok(SampledReport {
        schema: 1,
        topdown: SampledTopdown {
            model: model.name().to_string(),
            estimate: true,
            note: SAMPLED_NOTE.to_string(),
            rows,
        },
    })
}

impl SampledReport {
    /// The report as a document: a header and one table (fractions as % of slots, the
    /// samples behind them, then the row's keys named as in `keys`).
    pub fn document(&self, keys: &[crate::SortKey]) -> Document {
        let t = &self.topdown;
        let mut doc = Document::new();
        doc.header(format!(
            "Per-function Top-Down level 1 ({}), % of slots",
            t.model
        ));
        // The note in lines that fit 80 columns (with their `# `).
        let mut line = String::new();
        for word in t.note.split(' ') {
            if !line.is_empty() && line.len() + 1 + word.len() > 76 {
                doc.header(std::mem::take(&mut line));
            }
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(word);
        }
        doc.header(line);
        let pct = |f: fn(&Level1) -> f64| {
            Values::Percent(t.rows.iter().map(|r| f(&r.level1) * 100.0).collect())
        };
        let mut columns = vec![
            Column::new("frontend", "frontend_bound", pct(|l| l.frontend_bound)),
            Column::new("bad_spec", "bad_speculation", pct(|l| l.bad_speculation)),
            Column::new("backend", "backend_bound", pct(|l| l.backend_bound)),
            Column::new("retiring", "retiring", pct(|l| l.retiring)),
            Column::new("smt", "smt_contention", pct(|l| l.smt_contention)),
            Column::new(
                "samples",
                "samples",
                Values::Count(t.rows.iter().map(|r| r.samples).collect()),
            ),
            Column::new(
                "min",
                "min_samples",
                Values::Count(t.rows.iter().map(|r| r.min_samples).collect()),
            ),
        ];
        for (j, k) in keys.iter().enumerate() {
            let texts = t
                .rows
                .iter()
                .map(|r| r.key_texts.get(j).cloned().unwrap_or_default())
                .collect();
            columns.push(Column::new(k.name(), k.name(), Values::Text(texts)).shrink(12));
        }
        let mut table = Table::new(columns);
        table.empty = Some("(no rows with cycles samples)".into());
        doc.table(table);
        doc
    }
}
