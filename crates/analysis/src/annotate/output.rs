//! What `culprit annotate` shows: each [`FunctionAnnotation`] as a text [`Document`] (header
//! lines, one table of typed columns per function, source lines before their instructions)
//! and as an owned JSON object (`schema` 1, docs/schemas/annotate.schema.json).

use std::collections::BTreeMap;

use culprit_output::text::{expand_tabs, wrap, HEADER_WIDTH};
use culprit_output::units::round4;
use culprit_output::{Column, Document, Table, Values};
use serde::Serialize;

use super::{AnnotatedEvent, AnnotatedInsn, Annotation, Derived, FunctionAnnotation, Target};
use crate::pct;
use crate::skid::{EventClass, SkidStats};

/// Version of annotate's JSON (`"schema"`).
pub const SCHEMA: u32 = 1;

/// What the text of an annotation shows besides the instructions.
#[derive(Debug, Clone, Copy, Default)]
pub struct TextView {
    /// Source lines (and inline frames) before their first instruction.
    pub source: bool,
    /// A column of instruction bytes.
    pub raw_insn: bool,
    /// De-skidded columns (the annotation was computed with `deskid`).
    pub deskid: bool,
}

/// Source files read for `--source`, by path (None: unreadable), read once each.
#[derive(Debug, Default)]
pub struct SourceCache {
    files: BTreeMap<String, Option<Vec<String>>>,
}

impl SourceCache {
    /// Line `line` (1-based) of `file`, tabs expanded to 8-column stops, trailing blanks cut.
    pub fn line(&mut self, file: &str, line: u32) -> Option<String> {
        let lines = self.files.entry(file.to_string()).or_insert_with(|| {
            std::fs::read_to_string(file)
                .ok()
                .map(|t| t.lines().map(str::to_string).collect())
        });
        let l = lines.as_ref()?.get((line as usize).checked_sub(1)?)?;
        Some(expand_tabs(l.trim_end()).into_owned())
    }
}

/// Name of an event class as the text and JSON show it.
pub fn class_name(c: EventClass) -> &'static str {
    match c {
        EventClass::Memory => "memory",
        EventClass::Branch => "branch",
        EventClass::DataBreakpoint => "data_breakpoint",
        EventClass::Stays => "stays",
    }
}

impl Annotation {
    /// Why nothing was annotated, naming the sampled functions there are (the error of a
    /// target that matched nothing); `input` names the file.
    pub fn no_match_message(&self, target: &Target, input: &str) -> String {
        let what = match target {
            Target::Symbol(s) => format!("no samples in a function named '{s}'"),
            Target::Addr(a) => format!("no sampled function contains address {a:#x}"),
            Target::DsoOffset(d, o) => {
                format!("no sampled function of {d} contains file offset {o:#x}")
            }
            Target::Hottest(_) => "no samples with a known function".to_string(),
        };
        let hot: Vec<String> = self
            .candidates
            .iter()
            .take(10)
            .map(|(n, c)| format!("{n} ({c})"))
            .collect();
        if hot.is_empty() {
            format!("{what} in {input}")
        } else {
            format!("{what} in {input}; sampled functions: {}", hot.join(", "))
        }
    }
}

impl AnnotatedInsn {
    /// The instruction text with its branch label, as objdump shows it.
    pub fn asm_text(&self) -> String {
        let mut t = self.insn.text.clone();
        if let Some(l) = &self.target_label {
            t.push(' ');
            t.push_str(l);
        }
        t
    }

    /// The instruction's bytes in hex, space-separated (`48 b8 88 77`).
    pub fn bytes_text(&self) -> String {
        let mut t = String::with_capacity(self.insn.bytes.len() * 3);
        for (i, b) in self.insn.bytes.iter().enumerate() {
            if i > 0 {
                t.push(' ');
            }
            t.push_str(&format!("{b:02x}"));
        }
        t
    }
}

/// Whether de-skid columns of event `e` are shown: its samples can move.
fn movable(e: &AnnotatedEvent, deskid: bool) -> bool {
    deskid && e.class != EventClass::Stays && !e.precise
}

/// A count column's values: empty where zero (so that the sampled rows stand out).
fn sparse_counts(v: impl Iterator<Item = u64>) -> Values {
    Values::Float(
        v.map(|n| if n == 0 { f64::NAN } else { n as f64 })
            .collect(),
        0,
    )
}

/// Percentages of `total`, empty where the count is zero.
fn sparse_percents(v: impl Iterator<Item = u64>, total: u64) -> Vec<f64> {
    v.map(|n| if n == 0 { f64::NAN } else { pct(n, total) })
        .collect()
}

/// Narrowest width of a column named by an event: its widest value, and at least enough of
/// the name to recognize it (perf's generic names, up to `branch-misses`, stay whole).
const MIN_NAME: usize = 13;

impl FunctionAnnotation {
    /// Why an unnamed range has no function name, and how to get one.
    fn unnamed_why(&self) -> String {
        format!(
            "No symbols for {} (stripped, and no debug file found): its hot address range is \
             disassembled raw; {}",
            self.dso,
            crate::hotspots::HOW_TO_NAME
        )
    }

    /// The header lines of the text: the function, the command line, each event's figures,
    /// derived columns and what the columns mean.
    fn text_header(&self, cmdline: Option<&str>, view: &TextView) -> Vec<String> {
        let mut h = vec![format!(
            "Function: {} in {} ({}), {:#x}-{:#x}, {} instructions",
            self.symbol,
            self.dso,
            self.dso_path,
            self.start,
            self.end,
            self.insns.len()
        )];
        if let Some(c) = cmdline {
            h.push(format!("Command line: {c}"));
        }
        for (e, s) in self.events.iter().zip(&self.skid) {
            let precise = e.precise || s.precise == s.samples && s.samples > 0;
            let mut line = format!(
                "Event '{}': {} samples in the function ({} in the file), {}",
                e.name,
                e.samples,
                e.file_samples,
                match (e.class, precise) {
                    (_, true) => "precise: never moved".to_string(),
                    (EventClass::Stays, _) => "stays (cycles/instructions/clocks)".to_string(),
                    (EventClass::DataBreakpoint, _) => {
                        "data breakpoint: the trap comes one instruction after the access"
                            .to_string()
                    }
                    (c, _) => format!("{} event: skids", class_name(c)),
                }
            );
            line.push_str(&format!("; skid spread90 = {} instructions", s.spread90));
            if view.deskid && s.class != EventClass::Stays {
                line.push_str(&format!(
                    " ({} after de-skid; {} samples moved, {} without a culprit)",
                    s.spread90_deskid, s.moved, s.no_culprit
                ));
                if !s.distance.is_empty() {
                    let d: Vec<String> =
                        s.distance.iter().map(|(k, v)| format!("{k}:{v}")).collect();
                    line.push_str(&format!("; distance to culprit: {}", d.join(" ")));
                }
            }
            h.push(line);
        }
        for d in &self.derived {
            h.push(match d.function {
                Some(v) => format!("{} = {} = {:.3} over the function", d.name, d.formula, v),
                None => format!("{} = {} (no samples)", d.name, d.formula),
            });
        }
        let any_estimate = self
            .events
            .iter()
            .any(|e| movable(e, true) && !e.class.exact());
        let any_exact = self
            .events
            .iter()
            .any(|e| movable(e, true) && e.class.exact());
        if view.deskid && any_estimate {
            h.push(
                "~ columns are ESTIMATES: non-precise samples of memory and branch events moved \
                 to their plausible culprit (docs/skid.md); the raw columns are what the PMU \
                 reported"
                    .to_string(),
            );
        }
        if view.deskid && any_exact {
            h.push(
                "= columns are EXACT: data-breakpoint samples moved back one instruction, to the \
                 access that raised the trap (x86 reports the instruction after it; \
                 docs/skid.md)"
                    .to_string(),
            );
        }
        if view.deskid && !any_estimate && !any_exact {
            h.push(
                "--deskid: no event here moves (cycles, instructions, clocks and precise samples \
                 stay where they were sampled)"
                    .to_string(),
            );
        }
        if self.has_callchains {
            h.push("incl: samples in callees of the call instruction (from call chains)".into());
        }
        if self.unnamed {
            h.push(self.unnamed_why());
        }
        if !self.disassembled {
            h.push(
                "code not available (kernel, JIT or missing file): sampled addresses only".into(),
            );
        }
        h.iter().flat_map(|l| wrap(l, HEADER_WIDTH)).collect()
    }

    /// Whether instruction `k` is hot: at least 10% of an event's samples in the function,
    /// raw or de-skidded.
    fn is_hot(&self, k: usize, deskid: bool) -> bool {
        let r = &self.insns[k];
        self.events.iter().enumerate().any(|(i, e)| {
            pct(r.samples[i], e.samples) >= 10.0
                || (movable(e, deskid) && pct(r.deskid[i], e.samples) >= 10.0)
        })
    }

    /// The text of the annotation: header lines, then one table with, per event, samples
    /// and percentage (and their de-skidded estimates, marked `~`; `incl` with call chains),
    /// derived columns, the `>>` mark of hot rows, address, bytes (`raw_insn`) and
    /// disassembly; source lines before the instructions they start (`source`).
    pub fn document(
        &self,
        cmdline: Option<&str>,
        view: &TextView,
        sources: &mut SourceCache,
    ) -> Document {
        let mut doc = Document::new();
        doc.header = self.text_header(cmdline, view);
        let rows = &self.insns;
        let mut cols = Vec::new();
        for (i, e) in self.events.iter().enumerate() {
            let widest = |v: &dyn Fn(&AnnotatedInsn) -> u64| {
                rows.iter().map(v).max().unwrap_or(0).to_string().len()
            };
            let w = widest(&|r| r.samples[i]).max(MIN_NAME);
            cols.push(
                Column::new(
                    e.name.clone(),
                    format!("{}:samples", e.name),
                    sparse_counts(rows.iter().map(|r| r.samples[i])),
                )
                .shrink(w),
            );
            cols.push(Column::new(
                "%",
                format!("{}:percent", e.name),
                Values::Percent(sparse_percents(
                    rows.iter().map(|r| r.samples[i]),
                    e.samples,
                )),
            ));
            if movable(e, view.deskid) {
                let w = widest(&|r| r.deskid[i]).max(MIN_NAME);
                // `~` marks estimates; `=` the exact rule of data breakpoints.
                let mark = if e.class.exact() { "=" } else { "~" };
                cols.push(
                    Column::new(
                        format!("{mark}{}", e.name),
                        format!("{}:deskid", e.name),
                        sparse_counts(rows.iter().map(|r| r.deskid[i])),
                    )
                    .shrink(w),
                );
                let percents = sparse_percents(rows.iter().map(|r| r.deskid[i]), e.samples);
                cols.push(Column::new(
                    format!("{mark}%"),
                    format!("{}:deskid_percent", e.name),
                    if e.class.exact() {
                        Values::Percent(percents)
                    } else {
                        Values::Estimate(percents)
                    },
                ));
            }
            if self.has_callchains {
                cols.push(Column::new(
                    "incl",
                    format!("{}:inclusive", e.name),
                    sparse_counts(rows.iter().map(|r| r.inclusive[i])),
                ));
            }
        }
        for (k, d) in self.derived.iter().enumerate() {
            cols.push(derived_column(d, k));
        }
        // Hot rows: marked, and highlighted by their hottest percentage on a colour terminal.
        let hot: Vec<String> = (0..rows.len())
            .map(|k| {
                if self.is_hot(k, view.deskid) {
                    ">>"
                } else {
                    ""
                }
                .to_string()
            })
            .collect();
        let hottest: Vec<f64> = rows
            .iter()
            .map(|r| {
                self.events
                    .iter()
                    .enumerate()
                    .map(|(i, e)| {
                        let d = if movable(e, view.deskid) {
                            r.deskid[i]
                        } else {
                            0
                        };
                        pct(r.samples[i].max(d), e.samples)
                    })
                    .fold(0.0, f64::max)
            })
            .collect();
        let highlight = cols.len();
        let mut hottest_col = Column::new("", "hottest", Values::Percent(hottest)).csv_only();
        hottest_col.in_csv = false;
        cols.push(hottest_col);
        cols.push(Column::new("", "hot", Values::Text(hot)));
        cols.push(Column::new(
            "Address",
            "ip",
            Values::Address(rows.iter().map(|r| Some(r.insn.addr)).collect()),
        ));
        if view.raw_insn {
            cols.push(Column::new(
                "Bytes",
                "bytes",
                Values::Text(rows.iter().map(AnnotatedInsn::bytes_text).collect()),
            ));
        }
        // The disassembly keeps its width: the event names shrink first, and a line still
        // too wide loses the end of its comment.
        cols.push(Column::new(
            "Disassembly",
            "asm",
            Values::Text(
                rows.iter()
                    .map(|r| {
                        let mut asm = r.asm_text();
                        if let Some(c) = &r.comment {
                            asm.push_str("  ");
                            asm.push_str(c);
                        }
                        asm
                    })
                    .collect(),
            ),
        ));
        let mut table = Table::new(cols);
        table.highlight = Some(highlight);
        // Source lines start at the left edge: as much of the code as the width allows.
        table.lines_at = 0;
        if view.source {
            table.lines_before = self.source_lines(sources);
        }
        doc.table(table);
        doc
    }

    /// `: file:line  text` before the first instruction of each source line, with
    /// `: (inlined f into g at file:line)` for its inline frames.
    fn source_lines(&self, sources: &mut SourceCache) -> Vec<(usize, String)> {
        let base = |f: &str| f.rsplit('/').next().unwrap_or(f).to_string();
        let mut out = Vec::new();
        let mut last: Option<(String, u32)> = None;
        for (k, r) in self.insns.iter().enumerate() {
            let Some(fr) = r.source.first() else { continue };
            let key = (fr.file.clone().unwrap_or_default(), fr.line.unwrap_or(0));
            if last.as_ref() == Some(&key) {
                continue;
            }
            let text = sources.line(&key.0, key.1).unwrap_or_default();
            out.push((k, format!(": {}:{}  {text}", base(&key.0), key.1)));
            // Inline frames: the innermost is named by the next (caller) frame.
            for pair in r.source.windows(2) {
                let callee = pair[0].function.as_deref().unwrap_or("?");
                let at = &pair[1];
                out.push((
                    k,
                    format!(
                        ": (inlined {callee} into {} at {}:{})",
                        at.function.as_deref().unwrap_or("?"),
                        base(at.file.as_deref().unwrap_or("?")),
                        at.line.unwrap_or(0)
                    ),
                ));
            }
            last = Some(key);
        }
        out
    }

    /// The JSON object of the function (`schema` 1; docs/schemas/annotate.schema.json).
    pub fn to_json(&self, deskid: bool) -> FunctionJson {
        let names: Vec<&str> = self.events.iter().map(|e| e.name.as_str()).collect();
        let per = |v: &[u64]| -> BTreeMap<String, u64> {
            names
                .iter()
                .enumerate()
                .map(|(i, n)| ((*n).to_string(), v.get(i).copied().unwrap_or(0)))
                .collect()
        };
        let instructions = self
            .insns
            .iter()
            .enumerate()
            .map(|(k, r)| InsnJson {
                ip: format!("{:#x}", r.insn.addr),
                bytes: r.bytes_text(),
                asm: r.asm_text(),
                target: r.insn.target.map(|t| format!("{t:#x}")),
                comment: r.comment.clone(),
                source: r.srcline(),
                inline: r
                    .source
                    .iter()
                    .map(|s| InlineJson {
                        function: s.function.clone(),
                        file: s.file.clone(),
                        line: s.line,
                    })
                    .collect(),
                samples: per(&r.samples),
                period: per(&r.period),
                percent: self
                    .events
                    .iter()
                    .enumerate()
                    .map(|(i, e)| (e.name.clone(), round4(pct(r.samples[i], e.samples))))
                    .collect(),
                deskid: deskid.then(|| per(&r.deskid)),
                inclusive: self.has_callchains.then(|| per(&r.inclusive)),
                derived: (!self.derived.is_empty()).then(|| {
                    self.derived
                        .iter()
                        .map(|c| (c.name.clone(), c.values[k].map(round4)))
                        .collect()
                }),
            })
            .collect();
        FunctionJson {
            schema: SCHEMA,
            symbol: self.symbol.clone(),
            dso: self.dso.clone(),
            dso_path: self.dso_path.clone(),
            start: format!("{:#x}", self.start),
            end: format!("{:#x}", self.end),
            disassembled: self.disassembled,
            unnamed: self.unnamed.then(|| self.unnamed_why()),
            events: names.iter().map(|n| (*n).to_string()).collect(),
            event_info: self
                .events
                .iter()
                .map(|e| EventJson {
                    name: e.name.clone(),
                    class: e.class,
                    precise: e.precise,
                    samples: e.samples,
                    period: e.period,
                    file_samples: e.file_samples,
                })
                .collect(),
            deskid_is_estimate: deskid
                && self
                    .events
                    .iter()
                    .any(|e| movable(e, true) && !e.class.exact()),
            has_callchains: self.has_callchains,
            derived: self
                .derived
                .iter()
                .map(|d| DerivedJson {
                    name: d.name.clone(),
                    formula: d.formula.clone(),
                    function: d.function.map(round4),
                })
                .collect(),
            instructions,
            skid: self
                .events
                .iter()
                .zip(&self.skid)
                .map(|(e, s)| (e.name.clone(), s.clone()))
                .collect(),
        }
    }
}

/// A derived column (`CPI`, ratios, MPKI), two decimals, empty where undefined.
fn derived_column(d: &Derived, k: usize) -> Column {
    let values: Vec<f64> = d.values.iter().map(|v| v.unwrap_or(f64::NAN)).collect();
    let widest = values
        .iter()
        .filter(|v| !v.is_nan())
        .map(|v| format!("{v:.2}").len())
        .max()
        .unwrap_or(0);
    Column::new(
        d.name.clone(),
        format!("derived{k}"),
        Values::Float(values, 2),
    )
    .shrink(widest.max(MIN_NAME))
}

/// One annotated function in JSON (one object per line of `annotate --format json`).
#[derive(Debug, Clone, Serialize)]
pub struct FunctionJson {
    /// Version of this format.
    pub schema: u32,
    /// Function name.
    pub symbol: String,
    /// DSO short name.
    pub dso: String,
    /// DSO path.
    pub dso_path: String,
    /// First SVMA, hex.
    pub start: String,
    /// One past the last SVMA, hex.
    pub end: String,
    /// Whether the code was disassembled (else rows are sampled addresses).
    pub disassembled: bool,
    /// Set when no symbol covers the code (a stripped DSO): why there is no name, and how to
    /// get one; `symbol` is then the hot range's `[unknown] DSO+0xOFFSET`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unnamed: Option<String>,
    /// Event names, in column order.
    pub events: Vec<String>,
    /// Per event: figures.
    pub event_info: Vec<EventJson>,
    /// Whether some `deskid` column is an estimate (with `--deskid`, unless every event that
    /// moves is a data breakpoint, whose rule is exact).
    pub deskid_is_estimate: bool,
    /// Whether `inclusive` columns are present.
    pub has_callchains: bool,
    /// Derived columns over the function.
    pub derived: Vec<DerivedJson>,
    /// Instructions in address order.
    pub instructions: Vec<InsnJson>,
    /// Per event name: skid figures.
    pub skid: BTreeMap<String, SkidStats>,
}

/// An event of an annotated function.
#[derive(Debug, Clone, Serialize)]
pub struct EventJson {
    /// Event name.
    pub name: String,
    /// Which de-skid rule applies.
    pub class: EventClass,
    /// Whether its samples are all precise.
    pub precise: bool,
    /// Samples in the function.
    pub samples: u64,
    /// Their total period.
    pub period: u64,
    /// Samples in the file.
    pub file_samples: u64,
}

/// A derived column over a function.
#[derive(Debug, Clone, Serialize)]
pub struct DerivedJson {
    /// Column name.
    pub name: String,
    /// How it is computed.
    pub formula: String,
    /// Value over the function (4 decimals).
    pub function: Option<f64>,
}

/// A source frame of an instruction.
#[derive(Debug, Clone, Serialize)]
pub struct InlineJson {
    /// Function (demangled).
    pub function: Option<String>,
    /// Source file path.
    pub file: Option<String>,
    /// Line.
    pub line: Option<u32>,
}

/// One instruction of an annotated function.
#[derive(Debug, Clone, Serialize)]
pub struct InsnJson {
    /// SVMA, hex.
    pub ip: String,
    /// Bytes, hex, space-separated.
    pub bytes: String,
    /// Instruction text with its branch label.
    pub asm: String,
    /// Branch or call target, hex.
    pub target: Option<String>,
    /// RIP-relative operand comment (`# 4040 <n>`).
    pub comment: Option<String>,
    /// `file:line` of the innermost source frame.
    pub source: Option<String>,
    /// Source frames, innermost first.
    pub inline: Vec<InlineJson>,
    /// Per event: samples.
    pub samples: BTreeMap<String, u64>,
    /// Per event: period.
    pub period: BTreeMap<String, u64>,
    /// Per event: percentage of the function's samples (4 decimals).
    pub percent: BTreeMap<String, f64>,
    /// Per event: de-skidded samples (with `--deskid`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deskid: Option<BTreeMap<String, u64>>,
    /// Per event: samples in callees of this call (files with call chains).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inclusive: Option<BTreeMap<String, u64>>,
    /// Per derived column: value (4 decimals).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub derived: Option<BTreeMap<String, Option<f64>>>,
}
