//! The sample listing of `culprit script`: per sample its time, task, CPU, event, period,
//! address with symbol and DSO, the decoded IBS registers (perf 6.1's labels and fields) and
//! the precise memory fields (IBS op or PEBS), as an owned record that is one JSON line
//! (`schema` 1, docs/schemas/script.schema.json) or perf-script-like text lines.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

use culprit_decode::ibs::{self, IbsContext, IbsKind, IbsSample, PerfLine};
use culprit_decode::model::{Profile, Sample};
use culprit_decode::pebs::{self, MemOp, PreciseSample, PreciseSource, Snoop, Tlb};
use culprit_decode::tracepoint::FieldValue;
use culprit_output::text::escape;
use culprit_symbols::{Query, Symbolizer};
use serde::{Serialize, Serializer};

/// Version of script's JSON lines (`"schema"`).
pub const SCHEMA: u32 = 1;

/// One sample as `culprit script` shows it.
#[derive(Debug, Clone, Serialize)]
pub struct ListedSample {
    /// Version of this format.
    pub schema: u32,
    /// Time in nanoseconds.
    pub time: u64,
    /// Process id.
    pub pid: i32,
    /// Thread id.
    pub tid: i32,
    /// CPU.
    pub cpu: u32,
    /// Command name.
    pub comm: String,
    /// Event name.
    pub event: String,
    /// Sample period.
    pub period: u64,
    /// Sampled address (run time).
    pub ip: u64,
    /// Whether the address is the exact instruction (PERF_RECORD_MISC_EXACT_IP).
    pub exact_ip: bool,
    /// Function, when known.
    pub sym: Option<String>,
    /// DSO short name, when known.
    pub dso: Option<String>,
    /// Decoded IBS registers by perf's label, each with its `value` and perf's fields.
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "ibs_registers"
    )]
    pub ibs: Option<Vec<PerfLine>>,
    /// Why perf rejects the IBS sample (En or Val clear).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ibs_error: Option<String>,
    /// Precise memory fields (IBS op with a data source, or PEBS).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub precise: Option<PreciseJson>,
    /// A tracepoint's fields (`{"prev_comm": "sleep", "prev_pid": 42, …}`, format order),
    /// decoded with the format recorded in the file.
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "tracepoint_fields"
    )]
    pub fields: Option<Vec<(String, FieldValue)>>,
}

/// `fields` as one object, in the format's order.
fn tracepoint_fields<S: Serializer>(
    fields: &Option<Vec<(String, FieldValue)>>,
    s: S,
) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let fields = fields.as_deref().unwrap_or(&[]);
    let mut m = s.serialize_map(Some(fields.len()))?;
    for (k, v) in fields {
        m.serialize_entry(k, v)?;
    }
    m.end()
}

/// `ibs` as `{label: {"value": n, field: n, …}}`.
fn ibs_registers<S: Serializer>(lines: &Option<Vec<PerfLine>>, s: S) -> Result<S::Ok, S::Error> {
    let regs: BTreeMap<&str, BTreeMap<&str, u64>> = lines
        .iter()
        .flatten()
        .map(|l| {
            let mut f: BTreeMap<&str, u64> = l.fields.iter().copied().collect();
            f.insert("value", l.value);
            (l.label, f)
        })
        .collect();
    regs.serialize(s)
}

/// The precise memory fields of a sample.
#[derive(Debug, Clone, Serialize)]
pub struct PreciseJson {
    /// Where they come from (`ibs`, `pebs`).
    pub source: PreciseSource,
    /// Data address.
    pub addr: Option<u64>,
    /// Physical data address.
    pub phys_addr: Option<u64>,
    /// Load latency (cycles).
    pub latency: Option<u64>,
    /// Instruction latency.
    pub ins_latency: Option<u64>,
    /// Data page size (bytes).
    pub data_page_size: Option<u64>,
    /// The decoded data source, when the sample has one.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub data_src: Option<DataSrcJson>,
}

/// A decoded `perf_mem_data_src`.
#[derive(Debug, Clone, Serialize)]
pub struct DataSrcJson {
    /// The raw value.
    pub data_src: u64,
    /// Load, store, prefetch, exec.
    pub mem_op: MemOp,
    /// The level that served it (perf's name).
    pub level: String,
    /// Hit at that level.
    pub hit: bool,
    /// Remote.
    pub remote: bool,
    /// Hops.
    pub hops: u8,
    /// Snoop result.
    pub snoop: Snoop,
    /// Locked access.
    pub locked: Option<bool>,
    /// TLB access.
    pub tlb: Tlb,
}

impl PreciseJson {
    fn of(p: &PreciseSample) -> PreciseJson {
        PreciseJson {
            source: p.source,
            addr: p.addr,
            phys_addr: p.phys_addr,
            latency: p.latency,
            ins_latency: p.ins_latency,
            data_page_size: p.data_page_size,
            data_src: p.data_src.map(|d| DataSrcJson {
                data_src: d.value,
                mem_op: d.op,
                level: d.level.name().to_string(),
                hit: d.hit,
                remote: d.remote,
                hops: d.hops,
                snoop: d.snoop,
                locked: d.locked,
                tlb: d.tlb,
            }),
        }
    }

    /// `precise: addr 0x… phys 0x… lat N Load L1 tlb … snoop …`.
    fn text(&self) -> String {
        let mut t = String::from("precise:");
        if let Some(a) = self.addr {
            let _ = write!(t, " addr {a:#x}");
        }
        if let Some(a) = self.phys_addr {
            let _ = write!(t, " phys {a:#x}");
        }
        if let Some(l) = self.latency {
            let _ = write!(t, " lat {l}");
        }
        if let Some(d) = &self.data_src {
            let _ = write!(
                t,
                " {:?} {}{} tlb {:?} snoop {:?}{}",
                d.mem_op,
                d.level,
                if d.remote { " remote" } else { "" },
                d.tlb,
                d.snoop,
                if d.locked == Some(true) {
                    " locked"
                } else {
                    ""
                }
            );
        }
        t
    }
}

impl ListedSample {
    /// The text lines of the sample: perf script's line (names escaped: a control
    /// character in a file's names cannot drive the terminal), the precise fields, and
    /// perf's decoded IBS lines verbatim (tab-separated, as `perf report -D`).
    pub fn text_lines(&self) -> Vec<String> {
        let secs = self.time / 1_000_000_000;
        let usecs = (self.time % 1_000_000_000) / 1000;
        let mut first = format!(
            "{:>16} {:>7}/{:<7} [{:03}] {:>5}.{:06}: {:>10} {}: {:16x} {} ({})",
            escape(&self.comm),
            self.pid,
            self.tid,
            self.cpu,
            secs,
            usecs,
            self.period,
            escape(&self.event),
            self.ip,
            escape(self.sym.as_deref().unwrap_or("[unknown]")),
            escape(self.dso.as_deref().unwrap_or("[unknown]"))
        );
        // A tracepoint's fields follow on the line, `name=value` as perf's print formats
        // mostly write them.
        for (name, value) in self.fields.iter().flatten() {
            let _ = write!(first, " {}={}", escape(name), escape(&value.to_string()));
        }
        let mut lines = vec![first];
        if let Some(p) = &self.precise {
            lines.push(p.text());
        }
        if let Some(regs) = &self.ibs {
            lines.extend(regs.iter().map(|l| l.text.clone()));
        }
        if let Some(e) = &self.ibs_error {
            lines.push(format!("ibs: {e}"));
        }
        lines
    }
}

/// (symbol, DSO short name) of a location.
type Names = (Option<String>, Option<String>);

/// Lists samples one at a time as a streaming read delivers them (the profile so far with
/// each), naming each address once.
pub struct Listing<'a> {
    symbolizer: &'a mut Symbolizer,
    /// Per event: its IBS kind (events may still arrive in a pipe-mode stream).
    kinds: Vec<Option<IbsKind>>,
    /// The IBS decoding context of the file's CPU, once the header's CPUID is known.
    ctx: Option<Option<IbsContext>>,
    names: HashMap<(Option<u32>, u64), Names>,
}

impl<'a> Listing<'a> {
    /// A listing whose samples are named by `symbolizer`.
    pub fn new(symbolizer: &'a mut Symbolizer) -> Listing<'a> {
        Listing {
            symbolizer,
            kinds: Vec::new(),
            ctx: None,
            names: HashMap::new(),
        }
    }

    /// One sample of `profile` (the profile of the read so far: inside a
    /// `Reader::fold` callback, or a whole profile) as listed.
    pub fn sample(&mut self, profile: &Profile, s: &Sample) -> ListedSample {
        if self.kinds.len() != profile.events.len() {
            self.kinds = profile
                .events
                .iter()
                .map(|e| e.pmu.as_deref().and_then(IbsKind::from_pmu))
                .collect();
        }
        // The header's features (CPUID) come before the samples, in a file and in a
        // pipe-mode stream alike; decided once the CPUID is known.
        let ctx = match self.ctx {
            Some(ctx) => ctx,
            None => {
                let ctx = IbsContext::from_meta(&profile.meta);
                if profile.meta.cpuid.is_some() {
                    self.ctx = Some(ctx);
                }
                ctx
            }
        };
        let symbolizer = &mut *self.symbolizer;
        let (sym, dso) = self
            .names
            .entry((s.location.dso, s.location.file_offset))
            .or_insert_with(|| {
                let r = symbolizer.resolve(profile, Query::of(s.location, s.pid));
                (
                    r.symbol
                        .and_then(|id| symbolizer.symbol(id))
                        .map(|s| s.name.to_string()),
                    profile.dso(&s.location).map(|d| d.short_name.clone()),
                )
            })
            .clone();
        let kind = self.kinds.get(s.event as usize).copied().flatten();
        // perf decodes IBS only for AMD files (CPUID) whose PMU mapping names the IBS PMU.
        let decoded = match (kind, &ctx) {
            (Some(k), Some(c)) => Some(ibs::decode(k, profile.raw(s), c)),
            _ => None,
        };
        let precise = match (&decoded, &ctx) {
            (Some(Ok(IbsSample::Op(op))), Some(c)) => {
                Some(pebs::from_ibs_op(op, c, s.ip)).filter(|p| p.data_src.is_some())
            }
            (None, _) => pebs::from_pebs(s),
            _ => None,
        };
        let (ibs, ibs_error) = match (&decoded, &ctx) {
            (Some(Ok(d)), Some(c)) => (Some(d.perf_lines(c)), None),
            (Some(Err(e)), _) => (None, Some(e.to_string())),
            _ => (None, None),
        };
        ListedSample {
            schema: SCHEMA,
            time: s.time,
            pid: s.pid,
            tid: s.tid,
            cpu: s.cpu,
            comm: profile.str(s.comm).to_string(),
            event: profile
                .events
                .get(s.event as usize)
                .map_or("?", |e| e.name.as_str())
                .to_string(),
            period: s.period,
            ip: s.ip,
            exact_ip: s.exact_ip,
            sym,
            dso,
            ibs,
            ibs_error,
            precise: precise.as_ref().map(PreciseJson::of),
            fields: profile.tracepoint_format(s.event).map(|f| {
                f.decode(profile.raw(s))
                    .into_iter()
                    .map(|(n, v)| (n.to_string(), v))
                    .collect()
            }),
        }
    }
}
