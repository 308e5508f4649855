//! A hotspot report as JSON (docs/schemas/report.schema.json): serde derives on the report
//! and on each row, the rows streamed one at a time (a children report can have hundreds of
//! thousands).

use culprit_output::json::Round4;
use serde::{Serialize, Serializer};

use super::*;
use crate::recording::{RecordingMeta, Stopped};

/// The version of the report JSON (`schema`), bumped on incompatible changes.
pub const SCHEMA: u32 = 1;

/// The JSON of a hotspot report.
#[derive(Serialize)]
pub struct HotspotsJson<'a> {
    /// [`SCHEMA`].
    pub schema: u32,
    /// Whether children periods were computed from call chains.
    pub children: bool,
    /// Set when de-skidded values are shown: they are estimates.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deskid_is_estimate: Option<bool>,
    /// The events reported.
    pub events: Vec<EventJson>,
    /// The input file (several: their names joined by `, `).
    pub file: String,
    /// Rows dropped by `--top` or `--percent-limit`.
    pub hidden_rows: usize,
    /// A report over several inputs (or Parquet exports): each input with its totals.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inputs: Option<Vec<crate::fleet::InputSummary>>,
    /// Set in perf's memory mode (periods are sample weights).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mem_mode: Option<bool>,
    /// The recording's header facts.
    pub meta: RecordingMeta,
    /// The rows, sorted by `sort_event`.
    pub rows: RowsJson<'a>,
    /// The sort keys.
    pub sort: Vec<&'static str>,
    /// The event the rows are sorted and limited by.
    pub sort_event: String,
    /// Where reading a damaged file stopped, or null.
    pub stopped: Option<Stopped>,
    /// Set when samples fell at addresses no symbol covers: which DSOs, and how to name them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unsymbolized: Option<UnsymbolizedJson>,
    /// Warnings about the report.
    pub warnings: Vec<String>,
}

/// The DSOs of a report with samples no symbol covers.
#[derive(Serialize)]
pub struct UnsymbolizedJson {
    /// How their rows are shown: `dso` (one `[unknown]` row per DSO) or `address`.
    pub rows: &'static str,
    /// How to get names for them.
    pub hint: &'static str,
    /// The DSOs, biggest first for the sort event.
    pub dsos: Vec<UnsymbolizedDsoJson>,
}

/// One DSO of [`UnsymbolizedJson`]: its samples, period and percent per event name.
#[derive(Serialize)]
pub struct UnsymbolizedDsoJson {
    /// perf's short name, as the rows show it.
    pub dso: String,
    /// The path it was recorded at.
    pub path: String,
    /// Per event: samples without a symbol.
    pub samples: std::collections::BTreeMap<String, u64>,
    /// Per event: their period.
    pub period: std::collections::BTreeMap<String, u64>,
    /// Per event: that period as a percentage of the event's total.
    pub percent: std::collections::BTreeMap<String, Round4>,
}

/// The `unsymbolized` object of report `h`, when it has such DSOs.
fn unsymbolized_json(h: &Hotspots) -> Option<UnsymbolizedJson> {
    if h.unsymbolized.is_empty() {
        return None;
    }
    let per_event = |v: &[u64]| {
        h.events
            .iter()
            .enumerate()
            .map(|(i, e)| (e.name.clone(), v.get(i).copied().unwrap_or(0)))
            .collect()
    };
    let dsos = h
        .unsymbolized
        .iter()
        .map(|u| UnsymbolizedDsoJson {
            dso: u.dso.clone(),
            path: u.path.clone(),
            samples: per_event(&u.samples),
            period: per_event(&u.period),
            percent: h
                .events
                .iter()
                .enumerate()
                .map(|(i, e)| {
                    let p = u.period.get(i).copied().unwrap_or(0);
                    let pct = if e.period == 0 {
                        0.0
                    } else {
                        p as f64 * 100.0 / e.period as f64
                    };
                    (e.name.clone(), Round4(pct))
                })
                .collect(),
        })
        .collect();
    Some(UnsymbolizedJson {
        rows: if h.unknown_per_address {
            "address"
        } else {
            "dso"
        },
        hint: HOW_TO_NAME,
        dsos,
    })
}

/// An event of the report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EventJson {
    /// Its name.
    pub name: String,
    /// Its samples in the file.
    pub samples: u64,
    /// Their summed period (the percentage base).
    pub period: u64,
    /// Samples the kernel reported lost.
    pub lost: u64,
}

/// The JSON of report `h` of `file`, read into `profile`, with `warnings`.
pub fn json_report<'a>(
    h: &'a Hotspots,
    profile: &Profile,
    file: &str,
    warnings: Vec<String>,
) -> HotspotsJson<'a> {
    json_report_with(
        h,
        file,
        RecordingMeta::of(profile),
        profile.stopped.clone(),
        None,
        warnings,
    )
}

/// The JSON of report `h` of `file` (several inputs: their names, and each in `inputs`),
/// with its header facts `meta`, where reading stopped, and `warnings`.
pub fn json_report_with<'a>(
    h: &'a Hotspots,
    file: &str,
    meta: RecordingMeta,
    stopped: Option<Stopped>,
    inputs: Option<Vec<crate::fleet::InputSummary>>,
    warnings: Vec<String>,
) -> HotspotsJson<'a> {
    // Events in name order, one per distinct name (the last one), for the per-event maps.
    let mut by_name: Vec<usize> = (0..h.events.len()).collect();
    by_name.sort_by(|&a, &b| h.events[a].name.cmp(&h.events[b].name));
    let mut dedup: Vec<usize> = Vec::with_capacity(by_name.len());
    for i in by_name {
        match dedup.last_mut() {
            Some(last) if h.events[*last].name == h.events[i].name => *last = i,
            _ => dedup.push(i),
        }
    }
    HotspotsJson {
        schema: SCHEMA,
        children: h.children,
        deskid_is_estimate: h.deskid.then_some(true),
        events: h
            .events
            .iter()
            .map(|e| EventJson {
                name: e.name.clone(),
                samples: e.samples,
                period: e.period,
                lost: e.lost,
            })
            .collect(),
        file: file.to_string(),
        hidden_rows: h.hidden_rows,
        inputs,
        mem_mode: h.keys.iter().any(|k| k.is_memory()).then_some(true),
        meta,
        rows: RowsJson { h, by_name: dedup },
        sort: h.keys.iter().map(|k| k.name()).collect(),
        sort_event: h
            .events
            .get(h.sort_event)
            .map(|e| e.name.clone())
            .unwrap_or_default(),
        stopped,
        unsymbolized: unsymbolized_json(h),
        warnings,
    }
}

/// The rows, serialized one at a time.
pub struct RowsJson<'a> {
    h: &'a Hotspots,
    /// Report events in name order, one per distinct name.
    by_name: Vec<usize>,
}

impl Serialize for RowsJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(
            self.h
                .rows()
                .map(|row| row_json(self.h, &self.by_name, row)),
        )
    }
}

/// A map serialized from its entries in order.
struct Entries<K, V>(Vec<(K, V)>);

impl<K: Serialize, V: Serialize> Serialize for Entries<K, V> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.0.iter().map(|(k, v)| (k, v)))
    }
}

/// `{EVENT: value}`.
type PerEvent<'a, T> = Entries<&'a str, T>;

/// A value of a row's `keys` object.
#[derive(Serialize)]
#[serde(untagged)]
enum KeyJson<'a> {
    Number(i64),
    Text(&'a str),
    Owned(String),
}

/// One row.
#[derive(Serialize)]
struct RowJson<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    call_graph: Option<PerEvent<'a, Option<NodeJson<'a>>>>,
    children_percent: PerEvent<'a, Round4>,
    children_period: PerEvent<'a, u64>,
    children_samples: PerEvent<'a, u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    deskid_percent: Option<PerEvent<'a, Round4>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    deskid_period: Option<PerEvent<'a, u64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    deskid_samples: Option<PerEvent<'a, u64>>,
    keys: Entries<&'static str, KeyJson<'a>>,
    percent: PerEvent<'a, Round4>,
    period: PerEvent<'a, u64>,
    samples: PerEvent<'a, u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    sym_level: Option<&'static str>,
}

/// A call-graph node.
#[derive(Serialize)]
struct NodeJson<'a> {
    children: Vec<NodeJson<'a>>,
    name: &'a str,
    percent: Round4,
    period: u64,
    samples: u64,
}

fn node_json(n: &CallNode, total: u64) -> NodeJson<'_> {
    NodeJson {
        children: n.children.iter().map(|c| node_json(c, total)).collect(),
        name: &n.name,
        percent: Round4(pct(n.period, total)),
        period: n.period,
        samples: n.samples,
    }
}

/// Sets a `keys` entry (`replace`: the later value wins, else the first one stays).
fn put<'a>(
    keys: &mut Vec<(&'static str, KeyJson<'a>)>,
    name: &'static str,
    v: KeyJson<'a>,
    replace: bool,
) {
    match keys.iter_mut().find(|e| e.0 == name) {
        Some(e) if replace => e.1 = v,
        Some(_) => {}
        None => keys.push((name, v)),
    }
}

fn row_json<'a>(h: &'a Hotspots, by_name: &[usize], row: Row<'a>) -> RowJson<'a> {
    let per_event = |f: &dyn Fn(usize) -> u64| -> PerEvent<'a, u64> {
        Entries(
            by_name
                .iter()
                .map(|&i| (h.events[i].name.as_str(), f(i)))
                .collect(),
        )
    };
    let shares = |f: &dyn Fn(usize) -> f64| -> PerEvent<'a, Round4> {
        Entries(
            by_name
                .iter()
                .map(|&i| (h.events[i].name.as_str(), Round4(f(i))))
                .collect(),
        )
    };
    // The keys object: sort keys, plus `dso` (ip, unresolved sym) and `sym_addr`.
    let mut keys: Vec<(&'static str, KeyJson<'a>)> = Vec::with_capacity(h.keys.len() + 2);
    let mut level = None;
    for k in row.keys() {
        let v = match k.number() {
            Some(n) => KeyJson::Number(n),
            None => KeyJson::Text(row.text(&k)),
        };
        put(&mut keys, k.key.name(), v, true);
        match k.key {
            SortKey::Ip => {
                if let Some(d) = row.dso(&k) {
                    put(&mut keys, "dso", KeyJson::Text(d), false);
                }
            }
            SortKey::Sym => {
                level = k.tag();
                if k.is_unknown_group() {
                    if let Some(d) = row.dso(&k) {
                        put(&mut keys, "dso", KeyJson::Text(d), false);
                    }
                }
                if let Some(a) = k.addr() {
                    put(
                        &mut keys,
                        "sym_addr",
                        KeyJson::Owned(format!("{a:#x}")),
                        true,
                    );
                    if let Some(d) = row.dso(&k) {
                        put(&mut keys, "dso", KeyJson::Text(d), false);
                    }
                }
            }
            _ => {}
        }
    }
    keys.sort_by(|a, b| a.0.cmp(b.0));
    let call_graph = row.has_call_graph().then(|| {
        Entries(
            by_name
                .iter()
                .map(|&i| {
                    let node = row.call_graph(i).map(|n| node_json(n, h.events[i].period));
                    (h.events[i].name.as_str(), node)
                })
                .collect(),
        )
    });
    RowJson {
        call_graph,
        children_percent: shares(&|i| row.children_percent(i)),
        children_period: per_event(&|i| row.children_period(i)),
        children_samples: per_event(&|i| row.children_samples(i)),
        deskid_percent: h.deskid.then(|| shares(&|i| row.deskid_percent(i))),
        deskid_period: h.deskid.then(|| per_event(&|i| row.deskid_period(i))),
        deskid_samples: h.deskid.then(|| per_event(&|i| row.deskid_samples(i))),
        keys: Entries(keys),
        percent: shares(&|i| row.percent(i)),
        period: per_event(&|i| row.period(i)),
        samples: per_event(&|i| row.samples(i)),
        sym_level: level,
    }
}
