//! Annotate: one function's disassembly with, per instruction, the samples of each event
//! (raw, as sampled), their de-skidded estimate ([`crate::skid`]), inclusive samples on call
//! instructions (from call chains), source lines with inline frames, and derived ratios.
//!
//! Counting rules, chosen so that the numbers agree with `perf annotate` and with
//! `culprit report --sort ip` / `--sort srcline`:
//! - a sample counts for the function whose symbol contains its IP (the same symbol lookup
//!   as the report), and for the instruction containing its SVMA;
//! - percentages are of the function's samples of the event (perf's `local-hits`);
//! - the de-skid column moves only non-precise samples of memory and branch events.

use std::collections::HashMap;

use culprit_decode::model::{DsoId, DsoKind, EventId, Location, Profile, Sample};
use culprit_symbols::disasm::{disassemble_for, Flow, Insn, Syntax};
use culprit_symbols::{Query, SourceFrame, SymbolId, Symbolizer};
use serde::Serialize;

use crate::skid::{self, EventClass, SkidStats};
use crate::AnalysisError;

mod derived;
mod output;
mod unnamed;
pub use output::{
    class_name, DerivedJson, EventJson, FunctionJson, InlineJson, InsnJson, SourceCache, TextView,
    SCHEMA,
};

/// Which functions to annotate.
#[derive(Debug, Clone, PartialEq)]
pub enum Target {
    /// The N hottest functions (by the first event's samples).
    Hottest(usize),
    /// Functions with this name (demangled, as the report shows it).
    Symbol(String),
    /// The function containing this address (SVMA, as objdump shows it).
    Addr(u64),
    /// The function containing this file offset of the DSO with this short name (the
    /// `dso+0xOFFSET` form report prints for a frame without a symbol).
    DsoOffset(String, u64),
}

/// What to compute.
#[derive(Debug, Clone)]
pub struct AnnotateOptions {
    /// Which functions.
    pub target: Target,
    /// Only these events (by name); empty: all events of the file.
    pub events: Vec<String>,
    /// Assembly syntax.
    pub syntax: Syntax,
    /// Compute de-skidded columns.
    pub deskid: bool,
}

impl Default for AnnotateOptions {
    fn default() -> Self {
        AnnotateOptions {
            target: Target::Hottest(1),
            events: Vec::new(),
            syntax: Syntax::Att,
            deskid: false,
        }
    }
}

/// One event column.
#[derive(Debug, Clone, Serialize)]
pub struct AnnotatedEvent {
    /// Index in the profile's events.
    pub id: EventId,
    /// Event name.
    pub name: String,
    /// Which de-skid rule applies.
    pub class: EventClass,
    /// Whether all its samples are precise (IBS, PEBS).
    pub precise: bool,
    /// Samples of the event in the function.
    pub samples: u64,
    /// Their total period.
    pub period: u64,
    /// Samples of the event in the whole file.
    pub file_samples: u64,
}

/// One instruction row.
#[derive(Debug, Clone)]
pub struct AnnotatedInsn {
    /// The decoded instruction.
    pub insn: Insn,
    /// Branch or call target as `<symbol+0xoff>`, when it resolves.
    pub target_label: Option<String>,
    /// RIP-relative operand as `# 4040 <symbol>`, when it resolves.
    pub comment: Option<String>,
    /// Source frames of the instruction, innermost (inlined) first.
    pub source: Vec<SourceFrame>,
    /// Per event: samples at this instruction.
    pub samples: Vec<u64>,
    /// Per event: sum of their periods.
    pub period: Vec<u64>,
    /// Per event: samples after de-skid (empty unless asked for).
    pub deskid: Vec<u64>,
    /// Per event: samples whose call chain passes through this (call) instruction, below
    /// this function: the cost of the callee (empty unless the file has call chains).
    pub inclusive: Vec<u64>,
}

impl AnnotatedInsn {
    /// `file:line` of the innermost source frame (file base name, like report's srcline).
    pub fn srcline(&self) -> Option<String> {
        let f = self.source.first()?;
        let file = f.file.as_deref()?;
        let base = file.rsplit('/').next().unwrap_or(file);
        Some(format!("{base}:{}", f.line.unwrap_or(0)))
    }
}

/// A derived column (ratio of two events' periods per instruction).
#[derive(Debug, Clone, Serialize)]
pub struct Derived {
    /// Column name: `CPI`, `<event> ratio` or `<event> MPKI`.
    pub name: String,
    /// How it is computed.
    pub formula: String,
    /// Over the whole function.
    pub function: Option<f64>,
    /// Per instruction (None where the denominator has no samples).
    pub values: Vec<Option<f64>>,
}

/// The annotation of one function.
#[derive(Debug, Clone)]
pub struct FunctionAnnotation {
    /// Function name.
    pub symbol: String,
    /// DSO short name.
    pub dso: String,
    /// DSO path.
    pub dso_path: String,
    /// First SVMA of the function.
    pub start: u64,
    /// One past its last SVMA.
    pub end: u64,
    /// Event columns.
    pub events: Vec<AnnotatedEvent>,
    /// Instructions in address order.
    pub insns: Vec<AnnotatedInsn>,
    /// Whether the code could be read and disassembled (else rows are the sampled addresses
    /// only).
    pub disassembled: bool,
    /// Per event: skid figures.
    pub skid: Vec<SkidStats>,
    /// Derived columns the events allow.
    pub derived: Vec<Derived>,
    /// Whether the file has call chains (then `inclusive` is filled).
    pub has_callchains: bool,
    /// No symbol covers this code (a stripped DSO without a debug file): `symbol` names a
    /// hot address range (`[unknown] DSO+0xOFFSET`), shown as raw disassembly.
    pub unnamed: bool,
}

/// Everything `annotate` found.
#[derive(Debug, Clone)]
pub struct Annotation {
    /// Annotated functions, hottest first.
    pub functions: Vec<FunctionAnnotation>,
    /// Sampled functions matching nothing asked for, to help (name, first-event samples),
    /// hottest first; filled when the target matched nothing.
    pub candidates: Vec<(String, u64)>,
}

/// The samples of a profile as annotate needs them, folded while the file is read
/// ([`SampledPlaces::add`] from a `Reader::fold` callback): per distinct sampled place and
/// event its counts, per distinct call-chain frame and event the samples passing there.
/// Memory follows the distinct places, not the number of samples.
#[derive(Debug, Default)]
pub struct SampledPlaces {
    /// Distinct (place, event), in the order of their first sample.
    sites: Vec<Site>,
    site_of: HashMap<(Query, EventId), usize>,
    /// Distinct (DSO, file offset, event) of call-chain frames, in order of first appearance.
    frames: Vec<ChainSite>,
    frame_of: HashMap<(DsoId, u64, EventId), usize>,
    has_callchains: bool,
    /// Per sample: the frames it passes through (each counted once per sample).
    scratch: Vec<usize>,
}

/// The samples of one event at one sampled place.
#[derive(Debug)]
struct Site {
    query: Query,
    event: EventId,
    samples: u64,
    period: u64,
    /// Samples whose IP is exact (PERF_RECORD_MISC_EXACT_IP).
    exact: u64,
}

/// The samples of one event whose call chain passes through a frame.
#[derive(Debug)]
struct ChainSite {
    dso: DsoId,
    file_offset: u64,
    event: EventId,
    /// Samples with this frame below the sampled IP (the inclusive cost of a call there).
    samples: u64,
}

impl SampledPlaces {
    /// Adds one sample of `profile` (the profile so far, during a streaming read).
    pub fn add(&mut self, profile: &Profile, s: &Sample) {
        let pid = match s.location.dso {
            Some(d)
                if profile
                    .dsos
                    .get(d as usize)
                    .is_some_and(|d| d.kind == DsoKind::Anonymous) =>
            {
                s.pid
            }
            _ => -1,
        };
        let key = (Query::of(s.location, pid), s.event);
        let sites = &mut self.sites;
        let i = *self.site_of.entry(key).or_insert_with(|| {
            sites.push(Site {
                query: key.0,
                event: key.1,
                samples: 0,
                period: 0,
                exact: 0,
            });
            sites.len() - 1
        });
        let site = &mut self.sites[i];
        site.samples += 1;
        site.period = site.period.saturating_add(s.period);
        site.exact += u64::from(s.exact_ip);
        let chain = profile.callchain(s);
        if chain.is_empty() {
            return;
        }
        self.has_callchains = true;
        // The frame equal to the sampled IP is the sample itself, not a call.
        let skip = usize::from(chain.first().is_some_and(|fr| fr.addr == s.ip));
        self.scratch.clear();
        for (n, fr) in chain.iter().enumerate() {
            let Some(dso) = fr.location.dso else { continue };
            let key = (dso, fr.location.file_offset, s.event);
            let frames = &mut self.frames;
            let k = *self.frame_of.entry(key).or_insert_with(|| {
                frames.push(ChainSite {
                    dso,
                    file_offset: key.1,
                    event: s.event,
                    samples: 0,
                });
                frames.len() - 1
            });
            if n >= skip {
                self.scratch.push(k);
            }
        }
        // Once per sample (recursion passes a call site several times).
        self.scratch.sort_unstable();
        self.scratch.dedup();
        for &k in &self.scratch {
            self.frames[k].samples += 1;
        }
    }

    /// Folds every sample of a profile read whole.
    pub fn of_profile(profile: &Profile) -> SampledPlaces {
        let mut places = SampledPlaces::default();
        for s in &profile.samples {
            places.add(profile, s);
        }
        places
    }
}

struct FuncSamples {
    dso: DsoId,
    /// `None`: a hot address range of code no symbol covers ([`unnamed`]).
    symbol: Option<SymbolId>,
    /// Without a symbol: its sampled address range.
    range: unnamed::HotRange,
    /// (site index, SVMA) of its samples.
    sites: Vec<(usize, u64)>,
    /// Its samples of the columns' events.
    samples: u64,
    first_event: u64,
}

/// Annotates functions of a profile read whole (see [`annotate_places`]).
pub fn annotate(
    profile: &Profile,
    symbolizer: &mut Symbolizer,
    opts: &AnnotateOptions,
) -> Result<Annotation, AnalysisError> {
    annotate_places(
        profile,
        &SampledPlaces::of_profile(profile),
        symbolizer,
        opts,
    )
}

/// Annotates functions from the samples folded while reading: `profile` is the read's
/// profile (its DSOs and events), `places` its samples.
pub fn annotate_places(
    profile: &Profile,
    places: &SampledPlaces,
    symbolizer: &mut Symbolizer,
    opts: &AnnotateOptions,
) -> Result<Annotation, AnalysisError> {
    let cols = event_columns(profile, &opts.events)?;
    let col_of = |e: EventId| cols.iter().position(|&c| c == e);
    let funcs = sampled_functions(profile, places, symbolizer, opts, &col_of);
    let chosen = chosen_functions(profile, &funcs, symbolizer, &opts.target);
    let mut out = Annotation {
        functions: Vec::new(),
        candidates: Vec::new(),
    };
    if chosen.is_empty() {
        out.candidates = funcs
            .iter()
            .take(20)
            .map(|f| (function_name(profile, symbolizer, f), f.first_event))
            .collect();
        return Ok(out);
    }
    for i in chosen {
        let f = &funcs[i];
        out.functions
            .push(annotate_one(profile, places, symbolizer, opts, &cols, f));
    }
    Ok(out)
}

impl FuncSamples {
    /// Function `sym` of `dso`, with no samples yet.
    fn named(dso: DsoId, sym: SymbolId) -> FuncSamples {
        FuncSamples {
            dso,
            symbol: Some(sym),
            range: unnamed::HotRange::default(),
            sites: Vec::new(),
            samples: 0,
            first_event: 0,
        }
    }
}

/// The sampled functions (named, and hot ranges of unnamed code), hottest first by the
/// first event's samples; with a named target, also functions only on call chains.
/// `col_of` gives a report event's column (`None`: not reported).
fn sampled_functions(
    profile: &Profile,
    places: &SampledPlaces,
    symbolizer: &mut Symbolizer,
    opts: &AnnotateOptions,
    col_of: &dyn Fn(EventId) -> Option<usize>,
) -> Vec<FuncSamples> {
    // Resolve each distinct sampled location once.
    let mut qid: HashMap<Query, usize> = HashMap::new();
    let mut queries: Vec<Query> = Vec::new();
    let site_q: Vec<usize> = places
        .sites
        .iter()
        .map(|site| {
            *qid.entry(site.query).or_insert_with(|| {
                queries.push(site.query);
                queries.len() - 1
            })
        })
        .collect();
    let resolved = symbolizer.resolve_batch(profile, &queries);

    // Group samples by function.
    let mut funcs: Vec<FuncSamples> = Vec::new();
    let mut func_of: HashMap<(DsoId, SymbolId), usize> = HashMap::new();
    // Samples in ELF code no symbol covers (stripped): (DSO, site, SVMA).
    let mut unnamed_sites: Vec<(DsoId, usize, u64)> = Vec::new();
    for (n, site) in places.sites.iter().enumerate() {
        let Some(col) = col_of(site.event) else {
            continue;
        };
        let r = resolved[site_q[n]];
        let Some(dso) = site.query.dso else {
            continue;
        };
        let Some(sym) = r.symbol else {
            let elf = profile
                .dsos
                .get(dso as usize)
                .is_some_and(|d| d.kind == DsoKind::Elf);
            if let Some(svma) = r.svma.filter(|_| elf) {
                unnamed_sites.push((dso, n, svma));
            }
            continue;
        };
        let Some(svma) = r.svma.or_else(|| {
            // Kernel, modules and JIT code (named by a perf map): the address is the SVMA.
            let k = profile.dsos.get(dso as usize)?.kind;
            matches!(
                k,
                DsoKind::Kernel | DsoKind::KernelModule | DsoKind::Ksymbol | DsoKind::Anonymous
            )
            .then_some(site.query.file_offset)
        }) else {
            continue;
        };
        let f = *func_of.entry((dso, sym)).or_insert_with(|| {
            funcs.push(FuncSamples::named(dso, sym));
            funcs.len() - 1
        });
        funcs[f].sites.push((n, svma));
        funcs[f].samples += site.samples;
        if col == 0 {
            funcs[f].first_event += site.samples;
        }
    }
    funcs.extend(unnamed::hot_ranges(&places.sites, unnamed_sites, &|e| {
        col_of(e) == Some(0)
    }));
    // A function asked for by name or address may have no samples of its own but be on
    // call chains (`main`): annotate it too, for the inclusive cost of its calls.
    if !matches!(opts.target, Target::Hottest(_)) {
        let mut frame_queries: Vec<Query> = Vec::new();
        let mut seen: HashMap<Query, ()> = HashMap::new();
        for fr in &places.frames {
            if col_of(fr.event).is_none() {
                continue;
            }
            let q = Query {
                dso: Some(fr.dso),
                file_offset: fr.file_offset,
                pid: -1,
            };
            if seen.insert(q, ()).is_none() {
                frame_queries.push(q);
            }
        }
        let res = symbolizer.resolve_batch(profile, &frame_queries);
        for (q, r) in frame_queries.iter().zip(res) {
            if let (Some(dso), Some(sym)) = (q.dso, r.symbol) {
                func_of.entry((dso, sym)).or_insert_with(|| {
                    funcs.push(FuncSamples::named(dso, sym));
                    funcs.len() - 1
                });
            }
        }
    }
    funcs.sort_by(|a, b| {
        b.first_event
            .cmp(&a.first_event)
            .then(b.samples.cmp(&a.samples))
    });
    funcs
}

/// A function's name: its symbol's, or its hot range's for unnamed code.
fn function_name(profile: &Profile, symbolizer: &Symbolizer, f: &FuncSamples) -> String {
    match f.symbol {
        Some(id) => symbolizer
            .symbol(id)
            .map(|s| s.name.to_string())
            .unwrap_or_default(),
        None => unnamed::range_name(profile, f),
    }
}

/// The indexes in `funcs` of the functions `target` asks for.
fn chosen_functions(
    profile: &Profile,
    funcs: &[FuncSamples],
    symbolizer: &mut Symbolizer,
    target: &Target,
) -> Vec<usize> {
    match target {
        Target::Hottest(n) => (0..funcs.len().min(*n)).collect(),
        Target::Symbol(name) => (0..funcs.len())
            .filter(|&i| function_name(profile, symbolizer, &funcs[i]) == *name)
            .collect(),
        Target::Addr(a) => (0..funcs.len())
            .filter(|&i| match funcs[i].symbol {
                Some(id) => symbolizer
                    .symbol(id)
                    .is_some_and(|s| s.start <= *a && *a < s.end),
                None => unnamed::covers(&funcs[i], *a),
            })
            .take(1)
            .collect(),
        Target::DsoOffset(name, offset) => {
            // The symbol at that offset, as report resolved it.
            let queries: Vec<Query> = profile
                .dsos
                .iter()
                .enumerate()
                .filter(|(_, d)| d.short_name == *name)
                .map(|(i, _)| Query {
                    dso: Some(i as DsoId),
                    file_offset: *offset,
                    pid: -1,
                })
                .collect();
            let res = symbolizer.resolve_batch(profile, &queries);
            let wanted: Vec<(DsoId, Option<SymbolId>, Option<u64>)> = queries
                .iter()
                .zip(res)
                .filter_map(|(q, r)| Some((q.dso?, r.symbol, r.svma)))
                .collect();
            // By its symbol, or (unnamed code) by the hot range holding its SVMA.
            let matches = |f: &FuncSamples| {
                wanted.iter().any(|&(d, sym, svma)| {
                    d == f.dso
                        && match (sym, f.symbol) {
                            (Some(s), Some(t)) => s == t,
                            (None, None) => svma.is_some_and(|a| unnamed::covers(f, a)),
                            _ => false,
                        }
                })
            };
            (0..funcs.len())
                .filter(|&i| matches(&funcs[i]))
                .take(1)
                .collect()
        }
    }
}

fn event_columns(profile: &Profile, wanted: &[String]) -> Result<Vec<EventId>, AnalysisError> {
    let cols: Vec<EventId> = if wanted.is_empty() {
        (0..profile.events.len() as EventId).collect()
    } else {
        culprit_decode::model::select_events(profile, wanted)?
    };
    if cols.is_empty() {
        return Err(AnalysisError::UnknownEvent {
            wanted: wanted.join(","),
            available: Vec::new(),
        });
    }
    Ok(cols)
}

/// `<name+0xoff>` for an SVMA of a DSO.
fn label(profile: &Profile, symbolizer: &mut Symbolizer, dso: DsoId, addr: u64) -> Option<String> {
    let id = symbolizer.symbol_at_svma(profile, dso, addr)?;
    let s = symbolizer.symbol(id)?;
    Some(if addr == s.start {
        format!("<{}>", s.name)
    } else {
        format!("<{}+{:#x}>", s.name, addr - s.start)
    })
}

fn annotate_one(
    profile: &Profile,
    places: &SampledPlaces,
    symbolizer: &mut Symbolizer,
    opts: &AnnotateOptions,
    cols: &[EventId],
    f: &FuncSamples,
) -> FunctionAnnotation {
    let has_callchains = places.has_callchains;
    let code = function_code(profile, symbolizer, opts, f);
    let counts = SiteCounts::of(profile, places, cols, f, &code);
    let inclusive = if has_callchains {
        inclusive_costs(profile, places, symbolizer, cols, f, &code)
    } else {
        Vec::new()
    };
    let deskidded = deskid_events(profile, opts, cols, &code, &counts);
    let ncol = cols.len();
    let FunctionCode {
        name,
        start,
        end,
        insns,
        disassembled,
    } = code;
    let mut rows: Vec<AnnotatedInsn> = Vec::with_capacity(insns.len());
    for (i, insn) in insns.into_iter().enumerate() {
        let target_label = insn.target.and_then(|t| {
            if t >= start && t < end {
                Some(if t == start {
                    format!("<{name}>")
                } else {
                    format!("<{name}+{:#x}>", t - start)
                })
            } else {
                label(profile, symbolizer, f.dso, t)
            }
        });
        let comment = insn
            .rip_target
            .map(|t| match label(profile, symbolizer, f.dso, t) {
                Some(l) => format!("# {t:x} {l}"),
                None => format!("# {t:x}"),
            });
        let source = match symbolizer.svma_to_file_offset(profile, f.dso, insn.addr) {
            Some(off) => symbolizer.source(profile, Some(f.dso), off, false),
            None => Vec::new(),
        };
        let cells = i * ncol..(i + 1) * ncol;
        rows.push(AnnotatedInsn {
            insn,
            target_label,
            comment,
            source,
            samples: counts.samples[cells.clone()].to_vec(),
            period: counts.period[cells.clone()].to_vec(),
            deskid: deskidded.columns.iter().map(|d| d[i]).collect(),
            inclusive: if has_callchains {
                inclusive[cells].to_vec()
            } else {
                Vec::new()
            },
        });
    }
    let derived = derived::derived_columns(profile, cols, &rows);
    let dso = profile.dsos.get(f.dso as usize);
    FunctionAnnotation {
        symbol: name,
        dso: dso.map(|d| d.short_name.clone()).unwrap_or_default(),
        dso_path: dso.map(|d| d.path.clone()).unwrap_or_default(),
        start,
        end,
        events: deskidded.events,
        insns: rows,
        disassembled,
        skid: deskidded.stats,
        derived,
        has_callchains,
        unnamed: f.symbol.is_none(),
    }
}

/// A function's instructions: disassembled from its code, else (kernel, missing file) one
/// placeholder row per sampled address.
struct FunctionCode {
    name: String,
    start: u64,
    end: u64,
    insns: Vec<Insn>,
    disassembled: bool,
}

impl FunctionCode {
    /// The instruction at or holding address `a`.
    fn find(&self, a: u64) -> Option<usize> {
        if self.disassembled {
            skid::insn_containing(&self.insns, a)
        } else {
            skid::insn_at(&self.insns, a)
        }
    }
}

/// The name, bounds and instructions of function `f` (an unnamed hot range ends with its
/// last sampled instruction).
fn function_code(
    profile: &Profile,
    symbolizer: &mut Symbolizer,
    opts: &AnnotateOptions,
    f: &FuncSamples,
) -> FunctionCode {
    let (name, start, mut end) = match f.symbol.and_then(|id| symbolizer.symbol(id)) {
        Some(s) => (s.name.to_string(), s.start, s.end),
        None if f.symbol.is_none() => (
            unnamed::range_name(profile, f),
            f.range.first,
            f.range.last + unnamed::MAX_INSN_LEN,
        ),
        None => (String::new(), 0, 0),
    };
    let code = symbolizer.function_code(profile, f.dso, start, end);
    let arch = symbolizer.code_arch(profile, f.dso);
    let disassembled = code.is_some() && arch.is_some();
    let mut insns: Vec<Insn> = match (&code, arch) {
        (Some(c), Some(arch)) => disassemble_for(arch, c, start, opts.syntax),
        _ => Vec::new(),
    };
    if f.symbol.is_none() {
        // The range ends with its last sampled instruction.
        insns.retain(|i| i.addr <= f.range.last);
        end = insns.last().map_or(f.range.last + 1, Insn::end);
    }
    if insns.is_empty() {
        // No code (kernel, missing file): one row per sampled address.
        let mut addrs: Vec<u64> = f.sites.iter().map(|&(_, a)| a).collect();
        addrs.sort_unstable();
        addrs.dedup();
        insns = addrs
            .into_iter()
            .map(|a| Insn {
                addr: a,
                bytes: Vec::new(),
                text: "(code not available)".to_string(),
                flow: Flow::Next,
                target: None,
                mem: Vec::new(),
                rip_target: None,
                invalid: true,
            })
            .collect();
    }
    FunctionCode {
        name,
        start,
        end,
        insns,
        disassembled,
    }
}

/// A function's samples, periods and exact samples per instruction and event column
/// (`[insn * ncol + column]`).
struct SiteCounts {
    samples: Vec<u64>,
    period: Vec<u64>,
    precise: Vec<u64>,
}

impl SiteCounts {
    fn of(
        profile: &Profile,
        places: &SampledPlaces,
        cols: &[EventId],
        f: &FuncSamples,
        code: &FunctionCode,
    ) -> SiteCounts {
        let ncol = cols.len();
        let cells = code.insns.len() * ncol;
        let mut counts = SiteCounts {
            samples: vec![0; cells],
            period: vec![0; cells],
            precise: vec![0; cells],
        };
        for &(si, svma) in &f.sites {
            let site = &places.sites[si];
            let Some(c) = cols.iter().position(|&e| e == site.event) else {
                continue;
            };
            let Some(i) = code.find(svma) else { continue };
            counts.samples[i * ncol + c] += site.samples;
            counts.period[i * ncol + c] += site.period;
            let ev = &profile.events[usize::from(site.event)];
            counts.precise[i * ncol + c] += if skid::is_precise_event(ev) {
                site.samples
            } else {
                site.exact
            };
        }
        counts
    }
}

/// Inclusive cost of calls (`[insn * ncol + column]`): a chain frame whose return address
/// follows a call of this function charges that call, once per sample.
fn inclusive_costs(
    profile: &Profile,
    places: &SampledPlaces,
    symbolizer: &mut Symbolizer,
    cols: &[EventId],
    f: &FuncSamples,
    code: &FunctionCode,
) -> Vec<u64> {
    let ncol = cols.len();
    let mut inclusive = vec![0u64; code.insns.len() * ncol];
    if !code.disassembled {
        return inclusive;
    }
    let end_of: HashMap<u64, usize> = code
        .insns
        .iter()
        .enumerate()
        .filter(|(_, i)| matches!(i.flow, Flow::Call | Flow::IndirectCall))
        .map(|(k, i)| (i.end(), k))
        .collect();
    for fr in &places.frames {
        if fr.dso != f.dso || fr.samples == 0 {
            continue;
        }
        let Some(c) = cols.iter().position(|&e| e == fr.event) else {
            continue;
        };
        let svma = symbolizer
            .resolve(
                profile,
                Query {
                    dso: Some(f.dso),
                    file_offset: fr.file_offset,
                    pid: -1,
                },
            )
            .svma;
        if let Some(k) = svma.and_then(|a| end_of.get(&a)) {
            inclusive[k * ncol + c] += fr.samples;
        }
    }
    inclusive
}

/// Each event column's totals and skid estimate, with its de-skidded counts per
/// instruction when `--deskid` asks for them.
struct Deskidded {
    events: Vec<AnnotatedEvent>,
    stats: Vec<skid::SkidStats>,
    columns: Vec<Vec<u64>>,
}

/// De-skids each event column of a function's counts.
fn deskid_events(
    profile: &Profile,
    opts: &AnnotateOptions,
    cols: &[EventId],
    code: &FunctionCode,
    counts: &SiteCounts,
) -> Deskidded {
    let (ncol, n) = (cols.len(), code.insns.len());
    let mut out = Deskidded {
        events: Vec::with_capacity(ncol),
        stats: Vec::with_capacity(ncol),
        columns: Vec::new(),
    };
    let cfg = skid::build_cfg(&code.insns);
    for (c, &e) in cols.iter().enumerate() {
        let info = &profile.events[usize::from(e)];
        let class = skid::classify_event(info);
        let col = |v: &[u64]| -> Vec<u64> { (0..n).map(|i| v[i * ncol + c]).collect() };
        let raw = col(&counts.samples);
        let pre = col(&counts.precise);
        let imprecise: Vec<u64> = raw.iter().zip(&pre).map(|(r, p)| r - p).collect();
        // Without the code there is no control flow to follow: nothing moves.
        let rule = if code.disassembled {
            class
        } else {
            EventClass::Stays
        };
        let d = skid::deskid(rule, &code.insns, &cfg, &imprecise, &pre);
        let mut stats = d.stats;
        stats.class = class;
        out.stats.push(stats);
        if opts.deskid {
            out.columns.push(d.counts);
        }
        out.events.push(AnnotatedEvent {
            id: e,
            name: info.name.clone(),
            class,
            precise: skid::is_precise_event(info),
            samples: raw.iter().sum(),
            period: col(&counts.period).iter().sum(),
            file_samples: info.samples,
        });
    }
    out
}

/// The skid-corrected location of every sample of a profile (same order as
/// `profile.samples`): non-precise samples of memory and branch events moved to their
/// estimated culprit instruction (the rule of [`crate::skid`]), all others unchanged. For
/// reports that group by de-skidded IP or line (`report --deskid`); each sampled function is
/// disassembled once.
pub fn deskid_locations(profile: &Profile, symbolizer: &mut Symbolizer) -> Vec<Location> {
    let items: Vec<(EventId, Location, bool)> = profile
        .samples
        .iter()
        .map(|s| (s.event, s.location, s.exact_ip))
        .collect();
    deskid_targets(profile, symbolizer, &items)
}

/// [`deskid_locations`] over places instead of samples: each item is (event, sampled
/// location, exact_ip); the answer is the item's estimated culprit location, or the item's
/// own location when it does not move (stays-class event, precise sample, no culprit, or
/// an address outside a known function). `culprit report --deskid` calls it on aggregated
/// entries, so each distinct place is decided once however many samples it holds.
pub fn deskid_targets(
    profile: &Profile,
    symbolizer: &mut Symbolizer,
    items: &[(EventId, Location, bool)],
) -> Vec<Location> {
    let mut out: Vec<Location> = items.iter().map(|i| i.1).collect();
    let classes: Vec<EventClass> = profile.events.iter().map(skid::classify_event).collect();
    let precise_ev: Vec<bool> = profile.events.iter().map(skid::is_precise_event).collect();
    // Items that may move, grouped by function.
    let mut groups: HashMap<(DsoId, SymbolId), Vec<(usize, u64)>> = HashMap::new();
    let mut cache: HashMap<Query, culprit_symbols::Resolved> = HashMap::new();
    for (n, &(event, location, exact)) in items.iter().enumerate() {
        let e = usize::from(event);
        let movable = classes.get(e).is_some_and(|c| *c != EventClass::Stays)
            && !precise_ev.get(e).copied().unwrap_or(true)
            && !exact;
        let Some(dso) = location.dso.filter(|_| movable) else {
            continue;
        };
        let q = Query::of(location, -1);
        let r = *cache
            .entry(q)
            .or_insert_with(|| symbolizer.resolve(profile, q));
        if let (Some(sym), Some(svma)) = (r.symbol, r.svma) {
            groups.entry((dso, sym)).or_default().push((n, svma));
        }
    }
    for ((dso, sym), members) in groups {
        let Some((start, end)) = symbolizer.symbol(sym).map(|s| (s.start, s.end)) else {
            continue;
        };
        let Some(code) = symbolizer.function_code(profile, dso, start, end) else {
            continue;
        };
        let Some(arch) = symbolizer.code_arch(profile, dso) else {
            continue;
        };
        let insns = disassemble_for(arch, &code, start, Syntax::Att);
        let cfg = skid::build_cfg(&insns);
        for (n, svma) in members {
            let Some(&class) = classes.get(usize::from(items[n].0)) else {
                continue;
            };
            let Some(i) = skid::insn_containing(&insns, svma) else {
                continue;
            };
            let Some((to, _)) = skid::culprit(class, &insns, &cfg, i) else {
                continue;
            };
            if let Some(off) = symbolizer.svma_to_file_offset(profile, dso, insns[to].addr) {
                out[n] = Location {
                    dso: Some(dso),
                    file_offset: off,
                };
            }
        }
    }
    out
}
