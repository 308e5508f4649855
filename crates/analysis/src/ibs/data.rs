//! The data-centric tables (data addresses, cache lines, pages, data symbols) by DC misses
//! and miss latency, from IBS op samples or, without them, PEBS memory samples.

use super::*;
use culprit_decode::precise::PreciseDecoder;

/// One memory access of the data-centric tables, from either source.
struct Access {
    addr: u64,
    miss: bool,
    /// Latency counted in `miss_lat_total` (of a missing load).
    miss_lat: Option<u64>,
    local: bool,
    remote: bool,
    lat: Option<u64>,
    ins_lat: Option<u64>,
    /// Physical data address (PEBS PERF_SAMPLE_PHYS_ADDR).
    phys: Option<u64>,
    /// Data page size in bytes (PEBS PERF_SAMPLE_DATA_PAGE_SIZE).
    page_size: Option<u64>,
}

/// Whether a decoded data source says where a miss was served (local or remote).
fn served(ds: Option<MemDataSrc>, miss: bool) -> (bool, bool) {
    match ds {
        // A miss whose level says nothing beyond the L1 (a PEBS store's "L1 miss") was
        // served from an unknown place.
        Some(ds)
            if miss && !matches!(ds.level, MemLevel::Na | MemLevel::Uncached | MemLevel::L1) =>
        {
            (!ds.remote, ds.remote)
        }
        _ => (false, false),
    }
}

/// The access of an IBS op sample: a load or store with a valid linear address.
fn ibs_access(op: &ibs::IbsOp, ctx: &IbsContext) -> Option<Access> {
    let (Some(d3), Some(addr)) = (op.data3, op.dc_lin_addr) else {
        return None;
    };
    if !(d3.ld_op || d3.st_op) {
        return None;
    }
    let miss = d3.dc_miss;
    let lat = if d3.ld_op && miss {
        u64::from(d3.dc_miss_lat)
    } else {
        0
    };
    let (local, remote) = served(ibs::op_data_src(op, ctx).map(MemDataSrc::decode), miss);
    Some(Access {
        addr,
        miss,
        miss_lat: Some(lat),
        local,
        remote,
        lat: None,
        ins_lat: None,
        // The IBS physical address and page size stay in the op table and `script`: the
        // IBS data tables are kept as they were.
        phys: None,
        page_size: None,
    })
}

/// The access of a PEBS-style sample (a sample of a non-IBS event with a data address): a
/// miss is an access served beyond the L1 by its data_src; latencies are absent when the
/// event did not record PERF_SAMPLE_WEIGHT(_STRUCT).
fn pebs_access(profile: &Profile, s: &Sample) -> Option<Access> {
    if s.data_src.is_none() && s.weight.is_none() {
        return None;
    }
    // One SPE record becomes up to nine samples (l1d-miss, ..., memory): its access is
    // counted once, from its `memory` sample (every load or store has one).
    let spe = s.spe.as_deref();
    if spe.is_some() && !is_spe_memory_sample(profile, s) {
        return None;
    }
    let p = pebs::from_pebs(s)?;
    let addr = p.addr?;
    let op = p.data_src.map_or(MemOp::Na, |d| d.op);
    if matches!(op, MemOp::Exec) {
        return None;
    }
    // SPE says whether the L1D refilled; PEBS says where the data was served.
    let miss = match spe {
        Some(spe) => spe.has_event(culprit_decode::spe::record::EVENT_L1D_REFILL),
        None => pebs_l1_miss(p.data_src),
    };
    let (local, remote) = served(p.data_src, miss);
    // A recorded weight of 0 is "no latency measured", not a latency of 0; the field's
    // presence decides whether the column exists.
    let weight = s.weight;
    Some(Access {
        addr,
        miss,
        miss_lat: weight.map(|w| if miss && op != MemOp::Store { w } else { 0 }),
        local,
        remote,
        lat: weight,
        ins_lat: s.weight_struct.map(|w| (w >> 32) & 0xffff),
        phys: p.phys_addr,
        page_size: p.data_page_size,
    })
}

/// A sum of optional values whose presence the first value decides (a column exists when
/// the first access of its row has it), summed over the values present.
#[derive(Debug, Clone, Copy, Default)]
struct OptSum {
    first_present: Option<bool>,
    sum: u64,
}

impl OptSum {
    fn add(&mut self, v: Option<u64>) {
        self.first_present.get_or_insert(v.is_some());
        self.sum += v.unwrap_or(0);
    }

    /// Adds `other`'s values, which came after this one's.
    fn merge(&mut self, other: &OptSum) {
        if self.first_present.is_none() {
            self.first_present = other.first_present;
        }
        self.sum += other.sum;
    }

    fn value(&self) -> Option<u64> {
        (self.first_present == Some(true)).then_some(self.sum)
    }
}

/// One data-centric row being summed.
#[derive(Debug, Clone, Copy, Default)]
struct RowAcc {
    accesses: u64,
    dc_miss: u64,
    miss_lat: OptSum,
    local: u64,
    remote: u64,
    lat: OptSum,
    ins_lat: OptSum,
}

impl RowAcc {
    fn add(&mut self, a: &Access) {
        self.accesses += 1;
        self.dc_miss += u64::from(a.miss);
        self.miss_lat.add(a.miss_lat);
        self.local += u64::from(a.local);
        self.remote += u64::from(a.remote);
        self.lat.add(a.lat);
        self.ins_lat.add(a.ins_lat);
    }

    fn merge(&mut self, o: &RowAcc) {
        self.accesses += o.accesses;
        self.dc_miss += o.dc_miss;
        self.miss_lat.merge(&o.miss_lat);
        self.local += o.local;
        self.remote += o.remote;
        self.lat.merge(&o.lat);
        self.ins_lat.merge(&o.ins_lat);
    }

    fn row(&self, key: String, ins_lat: bool) -> DataRow {
        DataRow {
            key,
            accesses: self.accesses,
            dc_miss: self.dc_miss,
            miss_lat_total: self.miss_lat.value(),
            local: self.local,
            remote: self.remote,
            lat_total: self.lat.value(),
            ins_lat_total: self.ins_lat.value().filter(|_| ins_lat),
        }
    }
}

/// Where a data symbol is looked up: the instruction's location and process, its address
/// (for the load bias) and the data address.
type DataSymbolKey = (LocKey, u64, u64);

/// The data-centric tables of one source being summed, as the samples are read; the data
/// symbols are summed per (instruction, data address) until the file's symbols are known.
#[derive(Default)]
struct DataAcc {
    accesses: u64,
    misses: u64,
    /// Whether an instruction latency is ever set (CPUs before Sapphire Rapids write 0 in
    /// var2: a file where it never is has none, which is not a latency of 0).
    ins_lat_seen: bool,
    spe: bool,
    sizes: std::collections::BTreeMap<u64, PageSizeRow>,
    any_phys: bool,
    /// Addresses, lines, pages, comms, CPUs, physical pages.
    tables: [HashMap<String, RowAcc>; 6],
    symbols: Ordered<DataSymbolKey, RowAcc>,
}

impl DataAcc {
    fn add(&mut self, profile: &Profile, s: &Sample, a: &Access) {
        let addr = a.addr;
        self.accesses += 1;
        self.misses += u64::from(a.miss);
        self.ins_lat_seen |= a.ins_lat.is_some_and(|l| l > 0);
        self.spe |= s.spe.is_some();
        if let Some(size) = a.page_size {
            let row = self.sizes.entry(size).or_insert(PageSizeRow {
                size,
                accesses: 0,
                dc_miss: 0,
            });
            row.accesses += 1;
            row.dc_miss += u64::from(a.miss);
        }
        self.symbols.get(((s.location, s.pid), s.ip, addr)).add(a);
        let [addrs, lines, pages, comms, cpus, phys] = &mut self.tables;
        let mut keyed = vec![
            (addrs, format!("{addr:#x}")),
            (lines, format!("{:#x}", addr & !63)),
            (pages, format!("{:#x}", addr & !4095)),
            (comms, profile.str(s.comm).to_string()),
            (cpus, s.cpu.to_string()),
        ];
        if let Some(p) = a.phys {
            self.any_phys = true;
            keyed.push((phys, format!("{:#x}", p & !4095)));
        }
        for (acc, key) in keyed {
            acc.entry(key).or_default().add(a);
        }
    }

    /// The report (`top`: rows per table, default 10 like the DTrace script), its data
    /// symbols named by `r`.
    fn report(self, r: &mut Resolver<'_>, source: PreciseSource, opts: &IbsOptions) -> DataReport {
        let mut syms: Ordered<String, RowAcc> = Ordered::default();
        for ((loc, ip, addr), acc) in &self.symbols.items {
            syms.get(data_symbol(r, *loc, *ip, *addr)).merge(acc);
        }
        let ins_lat = self.ins_lat_seen;
        let top = opts.top.unwrap_or(10);
        let table = |rows: Vec<DataRow>| {
            let rows: Vec<DataRow> = rows.into_iter().filter(|r| r.dc_miss > 0).collect();
            let mut by_misses = rows.clone();
            by_misses.sort_by(|a, b| {
                b.dc_miss
                    .cmp(&a.dc_miss)
                    .then(b.miss_lat_total.cmp(&a.miss_lat_total))
                    .then(a.key.cmp(&b.key))
            });
            by_misses.truncate(top);
            let mut by_latency = rows;
            by_latency.sort_by(|a, b| {
                b.miss_lat_total
                    .cmp(&a.miss_lat_total)
                    .then(b.dc_miss.cmp(&a.dc_miss))
                    .then(a.key.cmp(&b.key))
            });
            by_latency.truncate(top);
            DataTable {
                by_misses,
                by_latency,
            }
        };
        let rows = |acc: HashMap<String, RowAcc>| -> Vec<DataRow> {
            acc.into_iter().map(|(k, a)| a.row(k, ins_lat)).collect()
        };
        let [addrs, lines, pages, comms, cpus, phys] = self.tables;
        let symbols = syms
            .items
            .into_iter()
            .map(|(k, a)| a.row(k, ins_lat))
            .collect();
        DataReport {
            source,
            accesses: self.accesses,
            dc_miss: self.misses,
            addresses: table(rows(addrs)),
            lines: table(rows(lines)),
            pages: table(rows(pages)),
            symbols: table(symbols),
            comms: table(rows(comms)),
            cpus: table(rows(cpus)),
            phys_pages: self.any_phys.then(|| table(rows(phys))),
            page_sizes: (!self.sizes.is_empty()).then(|| self.sizes.into_values().collect()),
        }
    }
}

/// Every IBS table of a file, summed sample by sample as it is read ([`IbsFold::add`]): per
/// sampled location, data key and data-symbol site, never per sample, so a stream stays
/// bounded. [`IbsFold::report`] names the locations once the file is read.
pub struct IbsFold {
    include_killed: bool,
    /// Which events are IBS (the one table of kinds `script` and the latencies use).
    kinds: PreciseDecoder,
    ctx: Option<IbsContext>,
    fetch: FetchAcc,
    op: OpAcc,
    /// The data tables of the IBS op samples.
    ibs_data: DataAcc,
    /// The data tables of PEBS-style samples (used when the file has no IBS sample).
    pebs_data: DataAcc,
    saw_ibs: bool,
}

impl IbsFold {
    /// An empty fold; `include_killed` counts killed fetches in the fetch rows.
    pub fn new(include_killed: bool) -> Self {
        IbsFold {
            include_killed,
            kinds: PreciseDecoder::default(),
            ctx: None,
            fetch: FetchAcc::default(),
            op: OpAcc::default(),
            ibs_data: DataAcc::default(),
            pebs_data: DataAcc::default(),
            saw_ibs: false,
        }
    }

    /// Adds one sample of `profile` (read so far).
    pub fn add(&mut self, profile: &Profile, s: &Sample) {
        let Some(kind) = self.kinds.kind(profile, s) else {
            if let Some(a) = pebs_access(profile, s) {
                self.pebs_data.add(profile, s, &a);
            }
            return;
        };
        self.saw_ibs = true;
        // The CPUID feature comes before the samples (a file's header, a pipe's first
        // records). Unlike perf (and `script`), a file that does not say it is from an AMD
        // CPU is still decoded, with neutral rules: `culprit ibs` is asked for IBS.
        let ctx = *self
            .ctx
            .get_or_insert_with(|| IbsContext::from_meta_or_neutral(&profile.meta));
        let decoded = ibs::decode(kind, profile.raw(s), &ctx).ok();
        match (kind, &decoded) {
            (IbsKind::Fetch, Some(IbsSample::Fetch(f))) => {
                self.fetch.add(s, Some(f), self.include_killed)
            }
            (IbsKind::Fetch, _) => self.fetch.add(s, None, self.include_killed),
            (IbsKind::Op, Some(IbsSample::Op(op))) => {
                self.op.add(s, Some(op), &ctx);
                if let Some(a) = ibs_access(op, &ctx) {
                    self.ibs_data.add(profile, s, &a);
                }
            }
            (IbsKind::Op, _) => self.op.add(s, None, &ctx),
        }
    }

    /// Whether the samples read had PEBS-style memory samples (a data address, and
    /// DATA_SRC or WEIGHT) outside the IBS PMUs: `culprit ibs --data` can report on them.
    pub fn has_pebs_memory_samples(&self) -> bool {
        self.pebs_data.accesses > 0
    }

    /// Whether the samples read were SPE records (the `memory` samples perf synthesises).
    pub fn spe(&self) -> bool {
        self.pebs_data.spe
    }

    /// The fetch report, named by `r`.
    pub(super) fn fetch_report(&mut self, r: &mut Resolver<'_>, opts: &IbsOptions) -> FetchReport {
        std::mem::take(&mut self.fetch).report(r, opts)
    }

    /// The op report, named by `r`.
    pub(super) fn op_report(&mut self, r: &mut Resolver<'_>, opts: &IbsOptions) -> OpReport {
        std::mem::take(&mut self.op).report(r, opts)
    }

    /// The data-centric report: from the IBS op samples when the file has IBS samples (a
    /// fetch-only file then has no data accesses), else from its PEBS memory samples.
    pub(super) fn data_report(&mut self, r: &mut Resolver<'_>, opts: &IbsOptions) -> DataReport {
        if self.saw_ibs {
            std::mem::take(&mut self.ibs_data).report(r, PreciseSource::Ibs, opts)
        } else {
            let source = if self.pebs_data.spe {
                PreciseSource::Spe
            } else {
                PreciseSource::Pebs
            };
            std::mem::take(&mut self.pebs_data).report(r, source, opts)
        }
    }
}

/// The ELF data object at a data address of the executable that made the access (its load
/// bias comes from the instruction's own mapping), else `[anon]`.
fn data_symbol(r: &mut Resolver<'_>, (loc, pid): LocKey, ip: u64, addr: u64) -> String {
    if let Some(dso) = loc.dso {
        let info = r.info(loc, pid);
        if let Some(ip_svma) = info.svma {
            let bias = ip.wrapping_sub(ip_svma);
            let data_svma = addr.wrapping_sub(bias);
            if let Some(id) = r.sym.symbol_at_svma(r.profile, dso, data_svma) {
                if let Some(sym) = r.sym.symbol(id) {
                    // Code symbols are not data: an address that resolves to a function is
                    // not a data object.
                    if info.sym.as_deref() != Some(sym.name) {
                        return format!("{} ({})", sym.name, info.dso.as_deref().unwrap_or("?"));
                    }
                }
            }
        }
    }
    "[anon]".to_string()
}
