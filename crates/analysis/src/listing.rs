//! The sample listing of `culprit script`: per sample its time, task, CPU, event, period,
//! address with symbol and DSO, the decoded IBS registers (perf 6.1's labels and fields) and
//! the precise memory fields (IBS op or PEBS), as an owned record that is one JSON line
//! (`schema` 1, docs/schemas/script.schema.json) or perf-script-like text lines, with the
//! sample's call chain (perf script's layout: one line per frame, then an empty line).
//! [`fields`] renders the text as `perf script -F …` does.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

use culprit_decode::ibs::PerfLine;
use culprit_decode::model::{DsoId, DsoKind, Location, Profile, Sample};
use culprit_decode::pebs::{MemOp, PreciseSample, PreciseSource, Snoop, Tlb};
use culprit_decode::precise::PreciseDecoder;
use culprit_decode::tracepoint::FieldValue;
use culprit_output::text::escape;
use culprit_symbols::{Query, Symbolizer};
use serde::{Serialize, Serializer};

pub mod fields;

/// Version of script's JSON lines (`"schema"`).
pub const SCHEMA: u32 = 1;

/// Most frames of a chain listed, innermost first: perf script's default
/// (`kernel.perf_event_max_stack`, 127).
pub const MAX_FRAMES: usize = 127;

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
    /// The call chain, innermost frame first (absent when the sample has none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub callchain: Vec<ListedFrame>,
    /// Whether the sample's event recorded call chains and they are shown: perf script then
    /// ends the sample's line at the event and the sample with an empty line, even when the
    /// chain is empty.
    #[serde(skip)]
    pub has_chain: bool,
    /// The DSO as perf script names it (the path; `[kernel.kallsyms]`), for `-F dso`.
    #[serde(skip)]
    pub dso_path: Option<String>,
    /// Offset of `ip` from its symbol's start, for `-F symoff`.
    #[serde(skip)]
    pub symoff: Option<u64>,
    /// Offset of `ip` in its DSO's file, for `-F dsoff`.
    #[serde(skip)]
    pub dso_offset: Option<u64>,
    /// PERF_SAMPLE_ADDR, for `-F addr`.
    #[serde(skip)]
    pub addr: Option<u64>,
    /// PERF_SAMPLE_WEIGHT, for `-F weight`.
    #[serde(skip)]
    pub weight: Option<u64>,
    /// PERF_SAMPLE_PHYS_ADDR, for `-F phys_addr`.
    #[serde(skip)]
    pub phys_addr: Option<u64>,
    /// PERF_SAMPLE_DATA_SRC, for `-F data_src`.
    #[serde(skip)]
    pub data_src: Option<u64>,
    /// Index of the event in the profile, for `-F`'s per-event checks.
    #[serde(skip)]
    pub event_id: usize,
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
    /// The tracepoint's record as its `print fmt:` writes it (what perf script prints:
    /// `prev_state=D`), when the format could be evaluated; else the text shows `fields`.
    #[serde(skip)]
    pub fields_text: Option<String>,
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

/// One frame of a call chain.
#[derive(Debug, Clone, Serialize)]
pub struct ListedFrame {
    /// The address as recorded (a return address for all frames but the first).
    pub ip: u64,
    /// Function containing it, when known.
    pub sym: Option<String>,
    /// Offset of `ip` from the function's start.
    pub symoff: Option<u64>,
    /// DSO short name, when known.
    pub dso: Option<String>,
    /// Offset of `ip` in the DSO's file (perf's `map_ip`: what perf 6.1 printed as a user
    /// frame's address); null outside any DSO.
    pub dso_offset: Option<u64>,
    /// The DSO as perf script names it (its path).
    #[serde(skip)]
    pub dso_path: Option<String>,
}

impl ListedFrame {
    /// perf script's frame line: tab, address (16 wide), ` sym+0xoff` (`[unknown]` when
    /// unresolved), ` (dso path)` or ` (dso path+0xoffset)`; each part as the fields ask.
    pub fn perf_line(&self, sym: bool, symoff: bool, dso: bool, dsoff: bool) -> String {
        let mut t = format!("\t{:16x}", self.ip);
        if sym {
            t.push(' ');
            t.push_str(&sym_text(self.sym.as_deref(), self.symoff, symoff));
        }
        if dso {
            t.push_str(" (");
            t.push_str(&escape(self.dso_path.as_deref().unwrap_or("[unknown]")));
            if let (true, Some(o)) = (dsoff, self.dso_offset) {
                t.push_str(&format!("+{o:#x}"));
            }
            t.push(')');
        }
        t
    }
}

/// `name+0xoff` (or the name alone, or `[unknown]`), escaped.
fn sym_text(sym: Option<&str>, off: Option<u64>, with_offset: bool) -> String {
    match (sym, off) {
        (Some(s), Some(o)) if with_offset => format!("{}+{o:#x}", escape(s)),
        (Some(s), _) => escape(s).into_owned(),
        (None, _) => "[unknown]".to_string(),
    }
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
    /// character in a file's names cannot drive the terminal), the call chain as perf script
    /// prints it (the line ends at the event, one line per frame with `sym+0xoff (dso
    /// path)`, an empty line after the sample), the precise fields, and perf's decoded IBS
    /// lines verbatim (tab-separated, as `perf report -D`).
    pub fn text_lines(&self) -> Vec<String> {
        let secs = self.time / 1_000_000_000;
        let usecs = (self.time % 1_000_000_000) / 1000;
        let mut head = format!(
            "{:>16} {:>7}/{:<7} [{:03}] {:>5}.{:06}: {:>10} {}:",
            escape(&self.comm),
            self.pid,
            self.tid,
            self.cpu,
            secs,
            usecs,
            self.period,
            escape(&self.event),
        );
        // A tracepoint's fields follow the event as its print format writes them (perf
        // script's text and order: before the address), or `name=value` when the format
        // cannot be evaluated.
        if let Some(text) = &self.fields_text {
            let _ = write!(head, " {}", escape(text));
        } else {
            for (name, value) in self.fields.iter().flatten() {
                let _ = write!(head, " {}={}", escape(name), escape(&value.to_string()));
            }
        }
        if !self.has_chain {
            let _ = write!(
                head,
                " {:16x} {} ({})",
                self.ip,
                escape(self.sym.as_deref().unwrap_or("[unknown]")),
                escape(self.dso.as_deref().unwrap_or("[unknown]"))
            );
        }
        let mut lines = vec![head];
        lines.extend(
            self.callchain
                .iter()
                .map(|f| f.perf_line(true, true, true, false)),
        );
        if let Some(p) = &self.precise {
            lines.push(p.text());
        }
        if let Some(regs) = &self.ibs {
            lines.extend(regs.iter().map(|l| l.text.clone()));
        }
        if let Some(e) = &self.ibs_error {
            lines.push(format!("ibs: {e}"));
        }
        if self.has_chain {
            lines.push(String::new());
        }
        lines
    }
}

/// What a location is called: symbol and offset in it, DSO short name and path, offset in
/// the DSO's file.
#[derive(Debug, Clone, Default)]
struct Names {
    sym: Option<String>,
    symoff: Option<u64>,
    dso: Option<String>,
    dso_path: Option<String>,
    dso_offset: Option<u64>,
}

/// Lists samples one at a time as a streaming read delivers them (the profile so far with
/// each), naming each address once.
pub struct Listing<'a> {
    symbolizer: &'a mut Symbolizer,
    precise: PreciseDecoder,
    names: HashMap<(Option<u32>, u64), Names>,
    callchains: bool,
    /// The kernel's DSO once found, and how many DSOs were looked at (a stream adds DSOs as
    /// it goes): found once, not per tracepoint sample.
    kernel_dso: Option<DsoId>,
    dsos_scanned: usize,
}

impl<'a> Listing<'a> {
    /// A listing whose samples are named by `symbolizer`.
    pub fn new(symbolizer: &'a mut Symbolizer) -> Listing<'a> {
        Listing {
            symbolizer,
            precise: PreciseDecoder::default(),
            names: HashMap::new(),
            callchains: true,
            kernel_dso: None,
            dsos_scanned: 0,
        }
    }

    /// Whether samples are listed with their call chains (default: yes). Without, no frame
    /// is symbolized.
    pub fn with_callchains(mut self, on: bool) -> Listing<'a> {
        self.callchains = on;
        self
    }

    /// A tracepoint sample's record as its print format writes it, kernel code addresses
    /// (`%pS`) named by the kernel's symbols, as perf script does.
    fn trace_text(&mut self, profile: &Profile, s: &Sample) -> Option<String> {
        let format = profile.tracepoint_format(s.event)?;
        let kernel = self.kernel_dso(profile);
        let mut resolve = |addr: u64| -> Option<(String, u64)> {
            // Kernel text is in the upper half; user addresses stay in hex, as in perf.
            if addr < 1 << 63 {
                return None;
            }
            let location = Location {
                dso: Some(kernel?),
                file_offset: addr,
            };
            let n = self.names(profile, location, s.pid);
            Some((n.sym?, n.symoff.unwrap_or(0)))
        };
        format.render(profile.raw(s), &mut resolve)
    }

    /// The kernel's DSO, looking only at DSOs added since the last call until it is found.
    fn kernel_dso(&mut self, profile: &Profile) -> Option<DsoId> {
        if self.kernel_dso.is_none() {
            let from = self.dsos_scanned.min(profile.dsos.len());
            self.kernel_dso = profile.dsos[from..]
                .iter()
                .position(|d| d.kind == DsoKind::Kernel)
                .and_then(|i| DsoId::try_from(from + i).ok());
            self.dsos_scanned = profile.dsos.len();
        }
        self.kernel_dso
    }

    /// The names of a location, looked up once.
    fn names(&mut self, profile: &Profile, location: Location, pid: i32) -> Names {
        let symbolizer = &mut *self.symbolizer;
        self.names
            .entry((location.dso, location.file_offset))
            .or_insert_with(|| {
                let r = symbolizer.resolve(profile, Query::of(location, pid));
                let sym = r.symbol.and_then(|id| symbolizer.symbol(id));
                let dso = profile.dso(&location);
                Names {
                    symoff: sym.zip(r.svma).map(|(s, a)| a.saturating_sub(s.start)),
                    sym: sym.map(|s| s.name.to_string()),
                    dso: dso.map(|d| d.short_name.clone()),
                    dso_path: dso.map(|d| d.path.clone()),
                    dso_offset: dso.map(|_| location.file_offset),
                }
            })
            .clone()
    }

    /// One sample of `profile` (the profile of the read so far: inside a
    /// `Reader::fold` callback, or a whole profile) as listed.
    pub fn sample(&mut self, profile: &Profile, s: &Sample) -> ListedSample {
        let here = self.names(profile, s.location, s.pid);
        let mut callchain = Vec::new();
        if self.callchains {
            let range = s.callchain.start as usize..s.callchain.end as usize;
            for f in profile
                .frames
                .get(range)
                .unwrap_or(&[])
                .iter()
                .take(MAX_FRAMES)
            {
                let n = self.names(profile, f.location, s.pid);
                callchain.push(ListedFrame {
                    ip: f.addr,
                    sym: n.sym,
                    symoff: n.symoff,
                    dso: n.dso,
                    dso_offset: n.dso_offset,
                    dso_path: n.dso_path,
                });
            }
        }
        let (decoded, precise, ctx) = self.precise.decode(profile, s);
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
            sym: here.sym,
            dso: here.dso,
            callchain,
            has_chain: self.callchains
                && profile.events.get(s.event as usize).is_some_and(|e| {
                    e.sample_type & culprit_decode::abi::sample_type::CALLCHAIN != 0
                }),
            dso_path: here.dso_path,
            symoff: here.symoff,
            dso_offset: here.dso_offset,
            addr: s.addr,
            weight: s.weight,
            phys_addr: s.phys_addr,
            data_src: s.data_src,
            event_id: s.event as usize,
            ibs,
            ibs_error,
            precise: precise.as_ref().map(PreciseJson::of),
            fields_text: self.trace_text(profile, s),
            fields: profile.tracepoint_format(s.event).map(|f| {
                f.decode(profile.raw(s))
                    .into_iter()
                    .map(|(n, v)| (n.to_string(), v))
                    .collect()
            }),
        }
    }
}
