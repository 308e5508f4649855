//! IBS reports: fetch and op tables per instruction (or source line, or function) and per
//! function, and data-centric tables (data addresses, cache lines, pages, data symbols) by DC
//! misses and by total miss latency — the tables of AMD's IBS technical note and CodeAnalyst,
//! and of the Solaris DTrace IBS provider's "Top 10 VA that caused dcache misses".
//!
//! Rules:
//! - Samples whose raw payload does not decode (En/Val clear, too short) are counted in
//!   `invalid` and otherwise ignored, as perf ignores them.
//! - Fetch: *killed* fetches (no outcome bit set: CodeAnalyst's definition) are left out of
//!   the rows unless asked for; *attempted* = all − killed = completed + aborted. A fetch whose
//!   address falls inside an instruction (it straddles into the next 32-byte block) is counted
//!   on the instruction that straddles, found by disassembling the function.
//! - Op: rows are sorted by DC misses, then total DC-miss latency, then ops; averages are over
//!   the ops where the value is meaningful (DC-miss latency over missing loads).
//! - Data sources come from the kernel's IBS → `perf_mem_data_src` mapping
//!   ([`culprit_decode::ibs::op_data_src`]), so they follow the family's DataSrc table.
//! - Without IBS op samples, the data-centric tables come from PEBS memory samples (data
//!   address with DATA_SRC / WEIGHT): a miss is an access served beyond the L1 by its
//!   data_src, latencies are weights; fields one source lacks are `None`, not 0.

use std::collections::HashMap;

use culprit_decode::ibs::{self, IbsContext, IbsKind, IbsSample, PageSize};
use culprit_decode::model::{DsoId, Location, Profile, Sample};
use culprit_decode::pebs::{self, MemDataSrc, MemLevel, MemOp, PreciseSource};
use culprit_symbols::disasm::{disassemble, Syntax};
use culprit_symbols::{Query, Symbolizer};
use serde::Serialize;

use crate::AnalysisError;

mod data;
mod output;
mod precise;

pub use data::IbsFold;

pub use output::{ibs_report, IbsReport, IbsRequest, SCHEMA};
use precise::{is_spe_memory_sample, pebs_l1_miss};

/// How rows of the instruction table are keyed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum IbsSort {
    /// Per function.
    Sym,
    /// Per instruction address (the default).
    Ip,
    /// Per source line.
    Srcline,
}

impl IbsSort {
    /// Parses `sym`, `ip` or `srcline`.
    pub fn parse(s: &str) -> Result<IbsSort, AnalysisError> {
        match s {
            "sym" | "symbol" => Ok(IbsSort::Sym),
            "ip" => Ok(IbsSort::Ip),
            "srcline" => Ok(IbsSort::Srcline),
            other => Err(AnalysisError::UnknownSortKey(other.to_string())),
        }
    }
}

/// Options of the IBS reports.
#[derive(Debug, Clone)]
pub struct IbsOptions {
    /// Row key of the main table.
    pub sort: IbsSort,
    /// Count killed fetches in the fetch rows (filtered by default, as CodeAnalyst did).
    pub include_killed: bool,
    /// Keep at most this many rows per table.
    pub top: Option<usize>,
}

impl Default for IbsOptions {
    fn default() -> Self {
        IbsOptions {
            sort: IbsSort::Ip,
            include_killed: false,
            top: None,
        }
    }
}

/// Where a row's samples are: the row key and what it resolves to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Site {
    /// The row key as printed (`sym+0xoff`, `file:line`, or the function name).
    pub key: String,
    /// Function name, if known.
    pub sym: Option<String>,
    /// DSO short name, if known.
    pub dso: Option<String>,
    /// Instruction address as the ELF file states it (only for `ip` rows).
    pub ip: Option<u64>,
}

/// Fetch counters of one row.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct FetchCounts {
    /// All fetch samples counted in the row (killed ones only with `include_killed`).
    pub all: u64,
    /// Killed fetches.
    pub killed: u64,
    /// Attempted fetches (not killed).
    pub attempted: u64,
    /// Completed fetches.
    pub completed: u64,
    /// Aborted fetches (attempted, not completed).
    pub aborted: u64,
    /// Instruction-cache misses (not counted where erratum #1238 hides the bit).
    pub ic_miss: u64,
    /// L1 ITLB misses that hit the L2 ITLB.
    pub itlb_l1m_l2h: u64,
    /// L1 and L2 ITLB misses.
    pub itlb_l1m_l2m: u64,
    /// Fetches from 4K pages.
    pub page_4k: u64,
    /// Fetches from 16K pages (19h < 10h table).
    pub page_16k: u64,
    /// Fetches from 2M pages.
    pub page_2m: u64,
    /// Fetches from 1G pages.
    pub page_1g: u64,
    /// L2 misses of completed fetches.
    pub l2_miss: u64,
    /// L3 misses (Zen 4+).
    pub l3_miss: u64,
    /// Op-cache misses (Zen 4+).
    pub oc_miss: u64,
    /// Sum of fetch latencies (cycles) over attempted fetches.
    pub lat_total: u64,
    /// Average fetch latency (cycles) over attempted fetches.
    pub avg_lat: f64,
}

/// One row of a fetch table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FetchRow {
    /// The row's site.
    #[serde(flatten)]
    pub site: Site,
    /// The counters.
    #[serde(flatten)]
    pub counts: FetchCounts,
}

/// Op counters of one row.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct OpCounts {
    /// All op samples.
    pub all: u64,
    /// Retired branches.
    pub branch: u64,
    /// Mispredicted branches.
    pub mispredicted: u64,
    /// Taken branches.
    pub taken: u64,
    /// Returns.
    pub ret: u64,
    /// Loads.
    pub load: u64,
    /// Stores.
    pub store: u64,
    /// Data-cache misses.
    pub dc_miss: u64,
    /// L1 DTLB misses that hit the L2 DTLB.
    pub dtlb_l1m_l2h: u64,
    /// L1 and L2 DTLB misses.
    pub dtlb_l1m_l2m: u64,
    /// DTLB hits in 4K pages (memory ops with a valid linear address, no 2M/1G hit bit).
    pub page_4k: u64,
    /// DTLB hits in 2M pages.
    pub page_2m: u64,
    /// DTLB hits in 1G pages.
    pub page_1g: u64,
    /// Misaligned accesses.
    pub misaligned: u64,
    /// Locked ops.
    pub locked: u64,
    /// Uncacheable accesses.
    pub uc: u64,
    /// Write-combining accesses.
    pub wc: u64,
    /// Sum of DC-miss latencies (cycles) of missing loads.
    pub dc_miss_lat_total: u64,
    /// Average DC-miss latency of missing loads.
    pub avg_dc_miss_lat: f64,
    /// Sum of tag-to-retire cycles.
    pub tag_to_ret_total: u64,
    /// Average tag-to-retire cycles.
    pub avg_tag_to_ret: f64,
    /// Sum of completion-to-retire cycles.
    pub comp_to_ret_total: u64,
    /// Average completion-to-retire cycles.
    pub avg_comp_to_ret: f64,
    /// Missing loads served by the L2.
    pub src_l2: u64,
    /// Missing loads served by a local cache (L3, same-node CCX).
    pub src_local_cache: u64,
    /// Missing loads served by a remote cache (other node / far CCX).
    pub src_remote_cache: u64,
    /// Missing loads served by local DRAM.
    pub src_local_dram: u64,
    /// Missing loads served by remote DRAM.
    pub src_remote_dram: u64,
    /// Missing loads served by long-latency memory (PMEM).
    pub src_pmem: u64,
    /// Missing loads served by I/O (MMIO).
    pub src_io: u64,
    /// Missing loads served by CXL / extension memory.
    pub src_cxl: u64,
    /// Missing loads whose source is unknown or reserved.
    pub src_other: u64,
}

/// One row of an op table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OpRow {
    /// The row's site.
    #[serde(flatten)]
    pub site: Site,
    /// The counters.
    #[serde(flatten)]
    pub counts: OpCounts,
}

/// `culprit ibs --fetch`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FetchReport {
    /// Fetch samples in the file.
    pub samples: u64,
    /// Samples perf would reject (En/Val clear or payload too short).
    pub invalid: u64,
    /// Killed fetches in the file.
    pub killed: u64,
    /// Whether killed fetches were left out of the rows.
    pub killed_filtered: bool,
    /// Fetches counted on the instruction that straddles their address.
    pub straddled: u64,
    /// Rows by the sort key.
    pub rows: Vec<FetchRow>,
    /// Rows per function.
    pub functions: Vec<FetchRow>,
    /// Totals over the rows.
    pub totals: FetchCounts,
}

/// `culprit ibs --op`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OpReport {
    /// Op samples in the file.
    pub samples: u64,
    /// Samples perf would reject.
    pub invalid: u64,
    /// Whether L3MissOnly filtering was on in some samples (the period then cannot be
    /// reconstructed: counts are not proportional to execution).
    pub l3_miss_only: bool,
    /// Rows by the sort key.
    pub rows: Vec<OpRow>,
    /// Rows per function.
    pub functions: Vec<OpRow>,
    /// Totals over the rows.
    pub totals: OpCounts,
}

/// One row of a data-centric table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DataRow {
    /// Data address, cache line or page (hex), or data symbol.
    pub key: String,
    /// Memory ops with this key (loads and stores with a valid linear address).
    pub accesses: u64,
    /// DC misses (PEBS: accesses whose data_src level is beyond the L1).
    pub dc_miss: u64,
    /// Sum of DC-miss latencies of missing loads (PEBS: their weight); `None` when the
    /// samples carry no latency (PEBS without PERF_SAMPLE_WEIGHT).
    pub miss_lat_total: Option<u64>,
    /// Misses served locally (cache or DRAM of this node).
    pub local: u64,
    /// Misses served remotely (other node or socket).
    pub remote: u64,
    /// Sum of the load latencies of every access, hits included (PEBS weight / var1);
    /// `None` for IBS, which measures the latency of misses only.
    pub lat_total: Option<u64>,
    /// Sum of the instruction latencies (PEBS WEIGHT_STRUCT var2); `None` without it
    /// (IBS, PEBS with a plain PERF_SAMPLE_WEIGHT).
    pub ins_lat_total: Option<u64>,
}

/// One data-centric table, ranked two ways.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DataTable {
    /// Top rows by DC misses.
    pub by_misses: Vec<DataRow>,
    /// Top rows by total miss latency.
    pub by_latency: Vec<DataRow>,
}

/// `culprit ibs --data`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DataReport {
    /// Where the samples came from: IBS op samples, or PEBS-style samples
    /// (PERF_SAMPLE_ADDR with DATA_SRC / WEIGHT) when the file has no IBS op sample.
    pub source: PreciseSource,
    /// Memory op samples with a valid data linear address.
    pub accesses: u64,
    /// Of which DC misses.
    pub dc_miss: u64,
    /// Data linear addresses.
    pub addresses: DataTable,
    /// 64-byte cache lines.
    pub lines: DataTable,
    /// 4 KiB pages.
    pub pages: DataTable,
    /// Data symbols (ELF data objects of the executable that made the access), else `[anon]`
    /// (heap, stack and anonymous mappings are not told apart without data-mmap records).
    pub symbols: DataTable,
    /// Per command name (the DTrace provider's "Dcache misses per exec").
    pub comms: DataTable,
    /// Per CPU (its "dcache misses per core").
    pub cpus: DataTable,
    /// 4 KiB physical pages, when the samples carry physical addresses (PEBS
    /// PERF_SAMPLE_PHYS_ADDR); `None` otherwise, and for IBS.
    pub phys_pages: Option<DataTable>,
    /// Accesses and misses per data page size, when the samples carry it (PEBS
    /// PERF_SAMPLE_DATA_PAGE_SIZE); `None` otherwise, and for IBS.
    pub page_sizes: Option<Vec<PageSizeRow>>,
}

/// Accesses of one data page size.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PageSizeRow {
    /// Page size in bytes.
    pub size: u64,
    /// Memory ops in pages of this size.
    pub accesses: u64,
    /// Of which DC misses.
    pub dc_miss: u64,
}

/// Values per key, in the order the keys were first seen: what is summed while reading,
/// per sampled location, and named once the file is read (rows keep the first-seen site of
/// their key, as a single pass over the samples would).
struct Ordered<K, V> {
    index: HashMap<K, usize>,
    items: Vec<(K, V)>,
}

impl<K, V> Default for Ordered<K, V> {
    fn default() -> Self {
        Ordered {
            index: HashMap::new(),
            items: Vec::new(),
        }
    }
}

impl<K: std::hash::Hash + Eq + Clone, V: Default> Ordered<K, V> {
    fn get(&mut self, key: K) -> &mut V {
        let items = &mut self.items;
        let i = *self.index.entry(key.clone()).or_insert_with(|| {
            items.push((key, V::default()));
            items.len() - 1
        });
        &mut items[i].1
    }
}

/// A sampled location and its process (the process names JIT code and maps).
type LocKey = (Location, i32);

/// Symbol facts of one location, resolved once.
#[derive(Clone)]
struct LocInfo {
    sym: Option<String>,
    sym_start: Option<u64>,
    sym_end: Option<u64>,
    svma: Option<u64>,
    dso: Option<String>,
}

struct Resolver<'a> {
    profile: &'a Profile,
    sym: &'a mut Symbolizer,
    cache: HashMap<(Option<DsoId>, u64), LocInfo>,
    /// Instruction starts per function (dso, symbol start).
    insns: HashMap<(DsoId, u64), Vec<(u64, u64)>>,
}

impl<'a> Resolver<'a> {
    fn new(profile: &'a Profile, sym: &'a mut Symbolizer) -> Self {
        Resolver {
            profile,
            sym,
            cache: HashMap::new(),
            insns: HashMap::new(),
        }
    }

    fn info(&mut self, loc: Location, pid: i32) -> LocInfo {
        if let Some(i) = self.cache.get(&(loc.dso, loc.file_offset)) {
            return i.clone();
        }
        let r = self.sym.resolve(self.profile, Query::of(loc, pid));
        let s = r.symbol.and_then(|id| self.sym.symbol(id));
        let info = LocInfo {
            sym: s.map(|s| s.name.to_string()),
            sym_start: s.map(|s| s.start),
            sym_end: s.map(|s| s.end),
            svma: r.svma,
            dso: self.profile.dso(&loc).map(|d| d.short_name.clone()),
        };
        self.cache.insert((loc.dso, loc.file_offset), info.clone());
        info
    }

    /// The start of the instruction containing `svma`, when it starts before `svma` (the
    /// instruction straddles into the fetch block at `svma`).
    fn straddler(&mut self, dso: DsoId, info: &LocInfo, svma: u64) -> Option<u64> {
        let (start, end) = (info.sym_start?, info.sym_end?);
        if !self.insns.contains_key(&(dso, start)) {
            let code = self
                .sym
                .function_code(self.profile, dso, start, end)
                .unwrap_or_default();
            let list = disassemble(&code, start, Syntax::Att)
                .iter()
                .map(|i| (i.addr, i.end()))
                .collect();
            self.insns.insert((dso, start), list);
        }
        let list = self.insns.get(&(dso, start))?;
        let idx = list.partition_point(|&(a, _)| a <= svma).checked_sub(1)?;
        let (a, e) = list[idx];
        (a < svma && svma < e).then_some(a)
    }

    fn srcline(&mut self, loc: Location) -> Option<String> {
        let frames = self
            .sym
            .source(self.profile, loc.dso, loc.file_offset, false);
        let f = frames.first()?;
        let file = f.file.as_deref()?;
        let base = file.rsplit('/').next().unwrap_or(file);
        Some(format!("{base}:{}", f.line.unwrap_or(0)))
    }

    /// The row site of a location for the sort key, and the function site.
    fn sites(
        &mut self,
        loc: Location,
        pid: i32,
        sort: IbsSort,
        svma_override: Option<u64>,
    ) -> (Site, Site) {
        let info = self.info(loc, pid);
        let func = Site {
            key: info.sym.clone().unwrap_or_else(|| {
                format!("[unknown] {}", info.dso.as_deref().unwrap_or("[unknown]"))
            }),
            sym: info.sym.clone(),
            dso: info.dso.clone(),
            ip: None,
        };
        let svma = svma_override.or(info.svma);
        let row = match sort {
            IbsSort::Sym => func.clone(),
            IbsSort::Ip => {
                let key = match (&info.sym, info.sym_start, svma) {
                    (Some(n), Some(st), Some(a)) => format!("{n}+{:#x}", a.saturating_sub(st)),
                    (_, _, Some(a)) => format!("{:#x}", a),
                    _ => format!(
                        "{}+{:#x}",
                        info.dso.as_deref().unwrap_or("[unknown]"),
                        loc.file_offset
                    ),
                };
                Site {
                    key,
                    sym: info.sym.clone(),
                    dso: info.dso.clone(),
                    ip: Some(svma.unwrap_or(loc.file_offset)),
                }
            }
            IbsSort::Srcline => Site {
                key: self.srcline(loc).unwrap_or_else(|| {
                    format!(
                        "{}+{:#x}",
                        info.dso.as_deref().unwrap_or("[unknown]"),
                        loc.file_offset
                    )
                }),
                sym: info.sym.clone(),
                dso: info.dso.clone(),
                ip: None,
            },
        };
        (row, func)
    }
}

fn avg(total: u64, n: u64) -> f64 {
    if n == 0 {
        0.0
    } else {
        total as f64 / n as f64
    }
}

/// The fetch table being summed: per sampled location, as the samples are read.
#[derive(Default)]
struct FetchAcc {
    samples: u64,
    invalid: u64,
    killed: u64,
    by_loc: Ordered<LocKey, FetchCounts>,
    totals: FetchCounts,
}

impl FetchAcc {
    fn add(&mut self, s: &Sample, f: Option<&ibs::IbsFetch>, include_killed: bool) {
        self.samples += 1;
        let Some(f) = f else {
            self.invalid += 1;
            return;
        };
        let killed = f.killed();
        self.killed += u64::from(killed);
        if killed && !include_killed {
            return;
        }
        let mut c = FetchCounts {
            all: 1,
            ..FetchCounts::default()
        };
        if killed {
            c.killed = 1;
        } else {
            c.attempted = 1;
            c.lat_total = u64::from(f.ctl.lat);
            if f.ctl.comp {
                c.completed = 1;
            } else {
                c.aborted = 1;
            }
        }
        c.ic_miss = u64::from(f.ctl.ic_miss == Some(true));
        c.itlb_l1m_l2h = u64::from(f.ctl.l1_tlb_miss && !f.ctl.l2_tlb_miss);
        c.itlb_l1m_l2m = u64::from(f.ctl.l1_tlb_miss && f.ctl.l2_tlb_miss);
        match f.ctl.page_size {
            Some(PageSize::K4) => c.page_4k = 1,
            Some(PageSize::K16) => c.page_16k = 1,
            Some(PageSize::M2) => c.page_2m = 1,
            Some(PageSize::G1) => c.page_1g = 1,
            _ => {}
        }
        c.l2_miss = u64::from(f.ctl.l2_miss == Some(true));
        c.l3_miss = u64::from(f.ctl.l3_miss == Some(true));
        c.oc_miss = u64::from(f.ctl.oc_miss == Some(true));
        add_fetch(self.by_loc.get((s.location, s.pid)), &c);
        add_fetch(&mut self.totals, &c);
    }

    /// The report, its locations named by `r`.
    fn report(self, r: &mut Resolver<'_>, opts: &IbsOptions) -> FetchReport {
        let mut rows: Ordered<String, (Option<Site>, FetchCounts)> = Ordered::default();
        let mut funcs: Ordered<String, (Option<Site>, FetchCounts)> = Ordered::default();
        let mut straddled = 0;
        for ((loc, pid), c) in &self.by_loc.items {
            let mut over = None;
            if let (Some(dso), Some(svma)) = (loc.dso, r.info(*loc, *pid).svma) {
                let info = r.info(*loc, *pid);
                if let Some(start) = r.straddler(dso, &info, svma) {
                    over = Some(start);
                    straddled += c.all;
                }
            }
            let (site, func) = r.sites(*loc, *pid, opts.sort, over);
            for (table, site) in [(&mut rows, site), (&mut funcs, func)] {
                let row = table.get(site.key.clone());
                row.0.get_or_insert(site);
                add_fetch(&mut row.1, c);
            }
        }
        let finish = |v: Ordered<String, (Option<Site>, FetchCounts)>| {
            let mut out: Vec<FetchRow> = v
                .items
                .into_iter()
                .filter_map(|(_, (site, mut counts))| {
                    counts.avg_lat = avg(counts.lat_total, counts.attempted);
                    Some(FetchRow {
                        site: site?,
                        counts,
                    })
                })
                .collect();
            out.sort_by(|a, b| {
                b.counts
                    .all
                    .cmp(&a.counts.all)
                    .then(b.counts.lat_total.cmp(&a.counts.lat_total))
                    .then(a.site.key.cmp(&b.site.key))
            });
            if let Some(n) = opts.top {
                out.truncate(n);
            }
            out
        };
        let mut totals = self.totals;
        totals.avg_lat = avg(totals.lat_total, totals.attempted);
        FetchReport {
            samples: self.samples,
            invalid: self.invalid,
            killed: self.killed,
            killed_filtered: !opts.include_killed,
            straddled,
            rows: finish(rows),
            functions: finish(funcs),
            totals,
        }
    }
}

fn add_fetch(a: &mut FetchCounts, c: &FetchCounts) {
    a.all += c.all;
    a.killed += c.killed;
    a.attempted += c.attempted;
    a.completed += c.completed;
    a.aborted += c.aborted;
    a.ic_miss += c.ic_miss;
    a.itlb_l1m_l2h += c.itlb_l1m_l2h;
    a.itlb_l1m_l2m += c.itlb_l1m_l2m;
    a.page_4k += c.page_4k;
    a.page_16k += c.page_16k;
    a.page_2m += c.page_2m;
    a.page_1g += c.page_1g;
    a.l2_miss += c.l2_miss;
    a.l3_miss += c.l3_miss;
    a.oc_miss += c.oc_miss;
    a.lat_total += c.lat_total;
}

/// Where a missing load's data came from, by the kernel's data_src mapping.
fn source_of(ds: &MemDataSrc) -> fn(&mut OpCounts) {
    match (ds.level, ds.remote) {
        (MemLevel::L2, _) => |c| c.src_l2 += 1,
        (MemLevel::L3 | MemLevel::AnyCache | MemLevel::L4 | MemLevel::Lfb, false) => {
            |c| c.src_local_cache += 1
        }
        (MemLevel::L3 | MemLevel::AnyCache | MemLevel::L4 | MemLevel::Lfb, true) => {
            |c| c.src_remote_cache += 1
        }
        (MemLevel::Ram, false) => |c| c.src_local_dram += 1,
        (MemLevel::Ram, true) => |c| c.src_remote_dram += 1,
        (MemLevel::Pmem, _) => |c| c.src_pmem += 1,
        (MemLevel::Io, _) => |c| c.src_io += 1,
        (MemLevel::Cxl, _) => |c| c.src_cxl += 1,
        _ => |c| c.src_other += 1,
    }
}

fn op_counts(op: &ibs::IbsOp, ctx: &IbsContext) -> OpCounts {
    let mut c = OpCounts {
        all: 1,
        ..OpCounts::default()
    };
    if let Some(d) = op.data {
        if d.brn_ret {
            c.branch = 1;
            c.mispredicted = u64::from(d.brn_misp);
            c.taken = u64::from(d.brn_taken);
            c.ret = u64::from(d.ret);
        }
        c.tag_to_ret_total = u64::from(d.tag_to_ret);
        c.comp_to_ret_total = u64::from(d.comp_to_ret);
    }
    if let Some(d3) = op.data3 {
        c.load = u64::from(d3.ld_op);
        c.store = u64::from(d3.st_op);
        c.dc_miss = u64::from(d3.dc_miss);
        c.dtlb_l1m_l2h = u64::from(d3.dc_l1_tlb_miss && !d3.dc_l2_tlb_miss);
        c.dtlb_l1m_l2m = u64::from(d3.dc_l1_tlb_miss && d3.dc_l2_tlb_miss);
        if (d3.ld_op || d3.st_op) && d3.dc_lin_addr_valid {
            let size = match d3.page_size {
                Some(p) => Some(p),
                None if d3.dc_l1_tlb_hit_1g || d3.dc_l2_tlb_hit_1g => Some(PageSize::G1),
                None if d3.dc_l1_tlb_hit_2m || d3.dc_l2_tlb_hit_2m => Some(PageSize::M2),
                None if !d3.dc_l2_tlb_miss => Some(PageSize::K4),
                None => None,
            };
            match size {
                Some(PageSize::K4) => c.page_4k = 1,
                Some(PageSize::M2) => c.page_2m = 1,
                Some(PageSize::G1) => c.page_1g = 1,
                _ => {}
            }
        }
        c.misaligned = u64::from(d3.dc_mis_acc);
        c.locked = u64::from(d3.dc_locked_op);
        c.uc = u64::from(d3.dc_uc_mem_acc);
        c.wc = u64::from(d3.dc_wc_mem_acc);
        if d3.ld_op && d3.dc_miss {
            c.dc_miss_lat_total = u64::from(d3.dc_miss_lat);
            if let Some(ds) = ibs::op_data_src(op, ctx).map(MemDataSrc::decode) {
                source_of(&ds)(&mut c);
            }
        }
    }
    c
}

fn add_op(a: &mut OpCounts, c: &OpCounts) {
    a.all += c.all;
    a.branch += c.branch;
    a.mispredicted += c.mispredicted;
    a.taken += c.taken;
    a.ret += c.ret;
    a.load += c.load;
    a.store += c.store;
    a.dc_miss += c.dc_miss;
    a.dtlb_l1m_l2h += c.dtlb_l1m_l2h;
    a.dtlb_l1m_l2m += c.dtlb_l1m_l2m;
    a.page_4k += c.page_4k;
    a.page_2m += c.page_2m;
    a.page_1g += c.page_1g;
    a.misaligned += c.misaligned;
    a.locked += c.locked;
    a.uc += c.uc;
    a.wc += c.wc;
    a.dc_miss_lat_total += c.dc_miss_lat_total;
    a.tag_to_ret_total += c.tag_to_ret_total;
    a.comp_to_ret_total += c.comp_to_ret_total;
    a.src_l2 += c.src_l2;
    a.src_local_cache += c.src_local_cache;
    a.src_remote_cache += c.src_remote_cache;
    a.src_local_dram += c.src_local_dram;
    a.src_remote_dram += c.src_remote_dram;
    a.src_pmem += c.src_pmem;
    a.src_io += c.src_io;
    a.src_cxl += c.src_cxl;
    a.src_other += c.src_other;
}

fn finish_op(c: &mut OpCounts, load_misses: u64) {
    c.avg_dc_miss_lat = avg(c.dc_miss_lat_total, load_misses);
    c.avg_tag_to_ret = avg(c.tag_to_ret_total, c.all);
    c.avg_comp_to_ret = avg(c.comp_to_ret_total, c.all);
}

/// The op table being summed: per sampled location, as the samples are read.
#[derive(Default)]
struct OpAcc {
    samples: u64,
    invalid: u64,
    l3_miss_only: bool,
    /// Counts and missing loads per location.
    by_loc: Ordered<LocKey, (OpCounts, u64)>,
    totals: OpCounts,
    load_misses: u64,
}

impl OpAcc {
    fn add(&mut self, s: &Sample, op: Option<&ibs::IbsOp>, ctx: &IbsContext) {
        self.samples += 1;
        let Some(op) = op else {
            self.invalid += 1;
            return;
        };
        self.l3_miss_only |= op.ctl.l3_miss_only == Some(true);
        let c = op_counts(op, ctx);
        let lm = u64::from(op.is_load() && op.dc_miss());
        let row = self.by_loc.get((s.location, s.pid));
        add_op(&mut row.0, &c);
        row.1 += lm;
        add_op(&mut self.totals, &c);
        self.load_misses += lm;
    }

    /// The report, its locations named by `r`.
    fn report(self, r: &mut Resolver<'_>, opts: &IbsOptions) -> OpReport {
        type Rows = Ordered<String, (Option<Site>, OpCounts, u64)>;
        let (mut rows, mut funcs): (Rows, Rows) = Default::default();
        for ((loc, pid), (c, lm)) in &self.by_loc.items {
            let (site, func) = r.sites(*loc, *pid, opts.sort, None);
            for (table, site) in [(&mut rows, site), (&mut funcs, func)] {
                let row = table.get(site.key.clone());
                row.0.get_or_insert(site);
                add_op(&mut row.1, c);
                row.2 += lm;
            }
        }
        let finish = |v: Rows| {
            let mut out: Vec<OpRow> = v
                .items
                .into_iter()
                .filter_map(|(_, (site, mut counts, lm))| {
                    finish_op(&mut counts, lm);
                    Some(OpRow {
                        site: site?,
                        counts,
                    })
                })
                .collect();
            out.sort_by(|a, b| {
                b.counts
                    .dc_miss
                    .cmp(&a.counts.dc_miss)
                    .then(b.counts.dc_miss_lat_total.cmp(&a.counts.dc_miss_lat_total))
                    .then(b.counts.all.cmp(&a.counts.all))
                    .then(a.site.key.cmp(&b.site.key))
            });
            if let Some(n) = opts.top {
                out.truncate(n);
            }
            out
        };
        let mut totals = self.totals;
        finish_op(&mut totals, self.load_misses);
        OpReport {
            samples: self.samples,
            invalid: self.invalid,
            l3_miss_only: self.l3_miss_only,
            rows: finish(rows),
            functions: finish(funcs),
            totals,
        }
    }
}
