//! `culprit top`'s live model: per-function weights of every event in bounded memory, fed
//! one sample at a time, with optional worst-offender detectors ([`crate::offenders`]), and
//! snapshots of it (JSON by serde derives, `schema` 1: docs/schemas/top.schema.json; text as
//! a document of tables).
//!
//! Memory is fixed: the function table keeps at most [`FUNC_CAPACITY`] functions (when full,
//! the coldest quarter is dropped; their weight stays in the totals, so percentages remain of
//! everything sampled) and the detectors are O(1) per event.

use std::collections::{BTreeMap, HashMap};
use std::hash::{Hash, Hasher};
use std::time::Duration;

use culprit_decode::model::{EventId, Profile, Sample};
use culprit_output::json::Round4;
use culprit_output::{Column, Document, Table, Values};
use culprit_symbols::{Query, Symbolizer};
use serde::Serialize;

use crate::offenders::report::{dso_short, unit_name, Hex, Place};
use crate::offenders::{ConfigError, EventDetectors, Settings, Unit};

/// The version of top's JSON (`schema`).
pub const SCHEMA: u32 = 1;

/// Functions kept per table; when full, the coldest quarter is dropped.
pub const FUNC_CAPACITY: usize = 4096;

/// A function: its DSO (the stream decoder's DSO numbers are stable for a whole run) and a
/// hash of the symbol name; per process too when the table is by process (system-wide).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum FuncKey {
    Sym(Option<i32>, Option<u32>, u64),
    /// Unresolved: one row per DSO.
    Dso(Option<i32>, Option<u32>),
}

fn name_hash(name: &str) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    name.hash(&mut h);
    h.finish()
}

#[derive(Debug, Clone)]
struct FuncRow {
    /// Command and process, when the table is by process.
    process: Option<(String, i32)>,
    dso: String,
    name: String,
    period: Vec<u64>,
    samples: u64,
}

/// Per-function weights of every event, in bounded memory.
#[derive(Debug, Clone, Default)]
struct FuncTable {
    rows: HashMap<FuncKey, FuncRow>,
    totals: Vec<u64>,
    samples: Vec<u64>,
    dropped_rows: u64,
    events: Vec<String>,
    /// One row per process and function (system-wide: who runs it matters).
    by_process: bool,
}

impl FuncTable {
    fn add(&mut self, profile: &Profile, sym: &mut Symbolizer, s: &Sample) {
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
        let dso = s.location.dso;
        let r = sym.resolve(profile, Query::of(s.location, s.pid));
        let name = r.symbol.and_then(|id| sym.symbol(id)).map(|x| x.name);
        let pid = self.by_process.then_some(s.pid);
        let key = match name {
            Some(n) => FuncKey::Sym(pid, dso, name_hash(n)),
            None => FuncKey::Dso(pid, dso),
        };
        if !self.rows.contains_key(&key) && self.rows.len() >= FUNC_CAPACITY {
            self.shrink();
        }
        let n = self.totals.len();
        let by_process = self.by_process;
        let row = self.rows.entry(key).or_insert_with(|| FuncRow {
            process: by_process.then(|| (profile.str(s.comm).to_string(), s.pid)),
            dso: dso_short(profile, dso),
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

    /// Rows sorted by the period of event `by` (ties: by name), at most `n`.
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

/// What a snapshot shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct View {
    /// Sort by this event (index; wraps around the events).
    pub sort_by: usize,
    /// At most this many functions.
    pub rows: usize,
    /// At most this many offenders per event.
    pub offenders: usize,
}

/// The live state of `culprit top`: fed by every sample, shown by snapshots.
pub struct LiveTop {
    table: FuncTable,
    detectors: Option<EventDetectors>,
    sym: Symbolizer,
    /// Samples the kernel lost so far (LOST records in the stream).
    lost: u64,
    /// A process whose samples are not shown (culprit itself, system-wide), and how many
    /// of its samples were left out.
    hidden: Option<(i32, u64)>,
}

impl LiveTop {
    /// A live table naming functions with `sym`, with offender detectors when `offenders`
    /// has settings (bad thresholds are refused here).
    pub fn new(sym: Symbolizer, offenders: Option<Settings>) -> Result<LiveTop, ConfigError> {
        Ok(LiveTop {
            table: FuncTable::default(),
            detectors: offenders.map(EventDetectors::new).transpose()?,
            sym,
            lost: 0,
            hidden: None,
        })
    }

    /// One row per process and function, with its command and PID (for system-wide views,
    /// where the same function runs in many processes).
    pub fn by_process(mut self, on: bool) -> LiveTop {
        self.table.by_process = on;
        self
    }

    /// Leaves the samples of process `pid` out (culprit top's own, system-wide), counting
    /// them for the status line.
    pub fn hiding(mut self, pid: Option<i32>) -> LiveTop {
        self.hidden = pid.map(|p| (p, 0));
        self
    }

    /// Adds one sample of the live stream.
    pub fn add(&mut self, p: &Profile, s: &Sample) {
        if let Some((pid, n)) = self.hidden.as_mut() {
            if s.pid == *pid {
                *n += 1;
                return;
            }
        }
        self.table.add(p, &mut self.sym, s);
        if let Some(d) = self.detectors.as_mut() {
            d.observe(s);
        }
        self.lost = p.lost;
    }

    /// Samples added so far.
    pub fn samples(&self) -> u64 {
        self.table.samples.iter().sum()
    }

    /// Number of events seen so far (at least 1, for cycling the sort column).
    pub fn events(&self) -> usize {
        self.table.events.len().max(1)
    }

    /// Whether offenders are detected.
    pub fn has_offenders(&self) -> bool {
        self.detectors.is_some()
    }

    /// The symbolizer's warnings (symbols not found…).
    pub fn warnings(&self) -> &[String] {
        self.sym.warnings()
    }

    /// The table now, `elapsed` after the start.
    pub fn snapshot(&mut self, p: &Profile, view: View, elapsed: Duration) -> TopSnapshot {
        let t = &self.table;
        let sort_by = view.sort_by % self.table.events.len().max(1);
        let functions: Vec<TopFunction> = t
            .sorted(sort_by, view.rows)
            .into_iter()
            .map(|r| {
                let mut period = BTreeMap::new();
                let mut percent = BTreeMap::new();
                for (i, e) in t.events.iter().enumerate() {
                    period.insert(e.clone(), r.period.get(i).copied().unwrap_or(0));
                    percent.insert(e.clone(), Round4(t.percent(r, i)));
                }
                TopFunction {
                    command: r.process.as_ref().map(|(c, _)| c.clone()),
                    pid: r.process.as_ref().map(|(_, p)| *p),
                    dso: r.dso.clone(),
                    symbol: r.name.clone(),
                    samples: r.samples,
                    period,
                    percent,
                }
            })
            .collect();
        let mut panels = Vec::new();
        let offenders = self.detectors.as_ref().map(|dets| {
            let t0 = p.meta.time_range.map_or(0, |r| r.0);
            let mut list = Vec::new();
            for (ei, info) in p.events.iter().enumerate() {
                let Some(d) = dets.get(ei as EventId) else {
                    continue;
                };
                let c = d.config();
                let first = list.len();
                for x in d.ranked().iter().take(view.offenders) {
                    let pl = Place::of(p, &mut self.sym, x.location, x.pid);
                    list.push(TopOffender {
                        event: info.name.clone(),
                        ip: Hex(pl.addr),
                        dso: pl.dso,
                        symbol: pl.symbol,
                        pid: x.pid,
                        confirmations: x.confirmations,
                        first_time_s: Round4(x.first_time.saturating_sub(t0) as f64 / 1e9),
                    });
                }
                panels.push(OffenderPanel {
                    event: info.name.clone(),
                    t1: c.t1,
                    t2: c.t2,
                    unit: c.unit,
                    rounds: d.rounds(),
                    bytes: d.memory_bytes(),
                    rows: first..list.len(),
                });
            }
            list
        });
        TopSnapshot {
            schema: SCHEMA,
            elapsed_s: Round4(elapsed.as_secs_f64()),
            samples: self.samples(),
            lost_samples: self.lost,
            events: self.table.events.clone(),
            functions_kept: self.table.rows.len(),
            functions_dropped: self.table.dropped_rows,
            functions_max: FUNC_CAPACITY,
            hidden_samples: self.hidden.map(|(_, n)| n),
            functions,
            offenders,
            sort_by,
            panels,
        }
    }
}

/// One refresh of `culprit top` (its JSON is this struct, one per line).
#[derive(Debug, Clone, Serialize)]
pub struct TopSnapshot {
    /// JSON schema version ([`SCHEMA`]).
    pub schema: u32,
    /// Seconds since the start.
    pub elapsed_s: Round4,
    /// Samples counted.
    pub samples: u64,
    /// Samples the kernel lost.
    pub lost_samples: u64,
    /// Event names, in column order.
    pub events: Vec<String>,
    /// Functions in the table.
    pub functions_kept: usize,
    /// Functions evicted from the full table.
    pub functions_dropped: u64,
    /// The table's capacity.
    pub functions_max: usize,
    /// culprit's own samples left out (system-wide; absent when they are shown).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hidden_samples: Option<u64>,
    /// The hottest functions, by the sort event.
    pub functions: Vec<TopFunction>,
    /// Confirmed offenders of every event (`null` without `--offenders`).
    pub offenders: Option<Vec<TopOffender>>,
    /// The sort event (index into `events`).
    #[serde(skip)]
    pub sort_by: usize,
    /// Per event: its detector's numbers and its rows in `offenders`.
    #[serde(skip)]
    pub panels: Vec<OffenderPanel>,
}

/// A function of the table.
#[derive(Debug, Clone, Serialize)]
pub struct TopFunction {
    /// Command of the process (system-wide tables are by process).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// The process (system-wide tables).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid: Option<i32>,
    /// DSO short name.
    pub dso: String,
    /// Function name (`[unknown]`: the DSO's unnamed code).
    pub symbol: String,
    /// Samples of every event.
    pub samples: u64,
    /// Period per event.
    pub period: BTreeMap<String, u64>,
    /// Share of each event's total period.
    pub percent: BTreeMap<String, Round4>,
}

/// A confirmed offender.
#[derive(Debug, Clone, Serialize)]
pub struct TopOffender {
    /// Event name.
    pub event: String,
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
    /// Seconds from the first sample to the first confirmation.
    pub first_time_s: Round4,
}

/// The detector of one event, for the panel's title.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffenderPanel {
    /// Event name.
    pub event: String,
    /// First threshold.
    pub t1: u64,
    /// Second threshold.
    pub t2: u64,
    /// Their unit.
    pub unit: Unit,
    /// Rounds so far.
    pub rounds: u64,
    /// Detector bytes.
    pub bytes: usize,
    /// Its offenders: these rows of [`TopSnapshot::offenders`].
    pub rows: std::ops::Range<usize>,
}

impl TopSnapshot {
    /// The status line: time, samples, losses, functions (and evictions).
    pub fn status_line(&self) -> String {
        let evicting = if self.functions_dropped > 0 {
            format!(
                ", table full: {} cold functions evicted, percentages still of all samples",
                self.functions_dropped
            )
        } else {
            String::new()
        };
        let lost = if self.lost_samples > 0 {
            format!(", {} lost", self.lost_samples)
        } else {
            String::new()
        };
        let hidden = match self.hidden_samples {
            Some(n) if n > 0 => format!(", {n} of culprit's own hidden"),
            _ => String::new(),
        };
        format!(
            "culprit top: {:.1}s, {} samples{lost}{hidden}, {} functions (max {}){evicting}",
            self.elapsed_s.0, self.samples, self.functions_kept, self.functions_max,
        )
    }

    /// The function table: one percentage column per event (the sort event marked `*`),
    /// the DSO and the function.
    pub fn functions_table(&self) -> Table {
        let mut cols: Vec<Column> = self
            .events
            .iter()
            .enumerate()
            .map(|(i, e)| {
                let mark = if i == self.sort_by { "*" } else { "" };
                Column::new(
                    format!("{e}{mark}"),
                    e.clone(),
                    Values::Percent(
                        self.functions
                            .iter()
                            .map(|f| f.percent.get(e).map_or(0.0, |p| p.0))
                            .collect(),
                    ),
                )
            })
            .collect();
        if self.functions.iter().any(|f| f.pid.is_some()) {
            cols.push(
                Column::new(
                    "Command",
                    "command",
                    Values::Text(
                        self.functions
                            .iter()
                            .map(|f| f.command.clone().unwrap_or_default())
                            .collect(),
                    ),
                )
                .shrink(8),
            );
            cols.push(Column::new(
                "PID",
                "pid",
                Values::Int(
                    self.functions
                        .iter()
                        .map(|f| f.pid.map(i64::from))
                        .collect(),
                ),
            ));
        }
        cols.push(
            Column::new(
                "Shared Object",
                "dso",
                Values::Text(self.functions.iter().map(|f| f.dso.clone()).collect()),
            )
            .shrink(12),
        );
        cols.push(
            Column::new(
                "Symbol",
                "symbol",
                Values::Text(self.functions.iter().map(|f| f.symbol.clone()).collect()),
            )
            .shrink(12),
        );
        let mut t = Table::new(cols);
        t.highlight = Some(self.sort_by);
        t.empty = Some("(no samples yet)".into());
        t
    }

    /// The offenders panel: one table per event, titled with its detector's numbers.
    pub fn offender_tables(&self) -> Vec<Table> {
        let Some(list) = &self.offenders else {
            return Vec::new();
        };
        self.panels
            .iter()
            .map(|p| {
                let rows = list.get(p.rows.clone()).unwrap_or(&[]);
                let mut t = Table::new(vec![
                    Column::new(
                        "Conf",
                        "confirmations",
                        Values::Count(rows.iter().map(|o| o.confirmations).collect()),
                    ),
                    Column::new(
                        "First (s)",
                        "first_time_s",
                        Values::Float(rows.iter().map(|o| o.first_time_s.0).collect(), 2),
                    ),
                    Column::new(
                        "Shared Object",
                        "dso",
                        Values::Text(rows.iter().map(|o| o.dso.clone()).collect()),
                    )
                    .shrink(12),
                    Column::new(
                        "Address",
                        "ip",
                        Values::Address(rows.iter().map(|o| Some(o.ip.0)).collect()),
                    ),
                    Column::new(
                        "Symbol",
                        "symbol",
                        Values::Text(
                            rows.iter()
                                .map(|o| o.symbol.clone().unwrap_or_else(|| "[unknown]".into()))
                                .collect(),
                        ),
                    )
                    .shrink(12),
                ]);
                t.title = Some(format!(
                    "Offenders of {} (T1={} T2={} {}; {} rounds; {} bytes)",
                    p.event,
                    p.t1,
                    p.t2,
                    unit_name(p.unit),
                    p.rounds,
                    p.bytes
                ));
                t.empty = Some("(none confirmed yet)".into());
                t
            })
            .collect()
    }

    /// The refresh as a document: the function table, then the offender tables.
    pub fn document(&self) -> Document {
        let mut doc = Document::new();
        doc.table(self.functions_table());
        for t in self.offender_tables() {
            doc.table(t);
        }
        doc
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use culprit_decode::model::Location;

    fn text(doc: &Document) -> String {
        let mut out = Vec::new();
        culprit_output::text::write(
            &mut out,
            doc,
            &culprit_output::TextOptions {
                width: None,
                color: false,
            },
        )
        .unwrap();
        String::from_utf8(out).unwrap()
    }

    /// The end column (exclusive) of the `n`th whitespace-separated field of a line.
    fn field_end(line: &str, n: usize) -> usize {
        let mut count = 0;
        let mut in_field = false;
        for (i, c) in line.char_indices() {
            if c != ' ' && !in_field {
                in_field = true;
            } else if c == ' ' && in_field {
                in_field = false;
                if count == n {
                    return i;
                }
                count += 1;
            }
        }
        line.len()
    }

    #[test]
    fn test_two_event_table_header_lines_up_with_rows() {
        let mut p = crate::offenders::report::tests::profile();
        let mut second = p.events[0].clone();
        second.name = "task-clock".into();
        p.events.push(second);
        let mut top = LiveTop::new(
            Symbolizer::new(Default::default()),
            Some(Settings::default()),
        )
        .unwrap();
        for i in 0..300u64 {
            let s = Sample {
                event: (i % 2) as u16,
                ip: 0x40 + i % 3,
                location: Location {
                    dso: None,
                    file_offset: 0x40 + i % 3,
                },
                period: 1000 + i,
                time: i * 1000,
                ..Sample::default()
            };
            top.add(&p, &s);
        }
        let view = View {
            sort_by: 1,
            rows: 20,
            offenders: 10,
        };
        let snap = top.snapshot(&p, view, Duration::from_millis(1500));
        assert_eq!(snap.samples, 300);
        assert!(snap
            .status_line()
            .starts_with("culprit top: 1.5s, 300 samples, 1 functions"));
        let s = text(&snap.document());
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(
            lines[0].split_whitespace().nth(2),
            Some("task-clock*"),
            "{s}"
        );
        // Both percentage columns end where their headers end.
        for col in [1, 2] {
            assert_eq!(
                field_end(lines[0], col),
                field_end(lines[1], col - 1),
                "column {col}:\n{s}"
            );
        }
        assert!(lines[1].trim_start().starts_with("100.00%"), "{s}");
        assert!(
            s.contains("# Offenders of cpu-clock (T1=100 T2=5 samples;"),
            "{s}"
        );
        let v = serde_json::to_value(&snap).unwrap();
        assert_eq!(v["schema"], 1);
        assert_eq!(v["functions"][0]["percent"]["task-clock"], 100.0);
        assert!(v["offenders"].is_array());
        assert!(v.get("panels").is_none());
    }
}
