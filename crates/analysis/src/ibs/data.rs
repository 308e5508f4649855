//! The data-centric tables (data addresses, cache lines, pages, data symbols) by DC misses
//! and miss latency, from IBS op samples or, without them, PEBS memory samples.

use super::*;

/// One memory access of the data-centric tables, from either source.
struct Access<'p> {
    sample: &'p Sample,
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

/// The accesses of IBS op samples: loads and stores with a valid linear address.
fn ibs_accesses(profile: &Profile) -> Vec<Access<'_>> {
    let d = decode_all(profile, IbsKind::Op);
    let mut out = Vec::new();
    for (s, dec) in &d.items {
        let IbsSample::Op(op) = dec else { continue };
        let (Some(d3), Some(addr)) = (op.data3, op.dc_lin_addr) else {
            continue;
        };
        if !(d3.ld_op || d3.st_op) {
            continue;
        }
        let miss = d3.dc_miss;
        let lat = if d3.ld_op && miss {
            u64::from(d3.dc_miss_lat)
        } else {
            0
        };
        let (local, remote) = served(ibs::op_data_src(op, &d.ctx).map(MemDataSrc::decode), miss);
        out.push(Access {
            sample: s,
            addr,
            miss,
            miss_lat: Some(lat),
            local,
            remote,
            lat: None,
            ins_lat: None,
            // The IBS physical address and page size stay in the op table and `script`:
            // the IBS data tables are kept as they were.
            phys: None,
            page_size: None,
        });
    }
    out
}

/// The accesses of PEBS-style samples (any non-IBS event's samples with a data address):
/// a miss is an access served beyond the L1 by its data_src; latencies are absent when the
/// event did not record PERF_SAMPLE_WEIGHT(_STRUCT).
fn pebs_accesses(profile: &Profile) -> Vec<Access<'_>> {
    let mut out = Vec::new();
    for s in &profile.samples {
        let is_ibs = profile
            .events
            .get(s.event as usize)
            .and_then(|e| e.pmu.as_deref())
            .and_then(IbsKind::from_pmu)
            .is_some();
        if is_ibs {
            continue;
        }
        if s.data_src.is_none() && s.weight.is_none() {
            continue;
        }
        // One SPE record becomes up to nine samples (l1d-miss, ..., memory): its access is
        // counted once, from its `memory` sample (every load or store has one).
        let spe = s.spe.as_deref();
        if spe.is_some() && !is_spe_memory_sample(profile, s) {
            continue;
        }
        let Some(p) = pebs::from_pebs(s) else {
            continue;
        };
        let Some(addr) = p.addr else { continue };
        let op = p.data_src.map_or(MemOp::Na, |d| d.op);
        if matches!(op, MemOp::Exec) {
            continue;
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
        let ins_lat = s.weight_struct.map(|w| (w >> 32) & 0xffff);
        out.push(Access {
            sample: s,
            addr,
            miss,
            miss_lat: weight.map(|w| if miss && op != MemOp::Store { w } else { 0 }),
            local,
            remote,
            lat: weight,
            ins_lat,
            phys: p.phys_addr,
            page_size: p.data_page_size,
        });
    }
    // CPUs before Sapphire Rapids record no instruction latency and write 0 in var2: a
    // file where it is never set has none, which is not a latency of 0.
    if !out.iter().any(|a| a.ins_lat.is_some_and(|l| l > 0)) {
        for a in &mut out {
            a.ins_lat = None;
        }
    }
    out
}

/// Whether the profile has IBS samples (then the data-centric tables come from its op
/// samples, even when there are none: a fetch-only file has no data accesses).
fn has_ibs(profile: &Profile) -> bool {
    profile.samples.iter().any(|s| {
        profile
            .events
            .get(s.event as usize)
            .and_then(|e| e.pmu.as_deref())
            .and_then(IbsKind::from_pmu)
            .is_some()
    })
}

/// Whether the profile has PEBS-style memory samples (a data address, and DATA_SRC or
/// WEIGHT) outside the IBS PMUs: `culprit ibs --data` can report on them.
pub fn has_pebs_memory_samples(profile: &Profile) -> bool {
    !pebs_accesses(profile).is_empty()
}

fn add_opt(total: &mut Option<u64>, v: Option<u64>, first: bool) {
    *total = match (first, *total, v) {
        (true, _, v) => v,
        (false, Some(t), Some(v)) => Some(t + v),
        (false, t, _) => t,
    };
}

/// Builds the data-centric report (`top`: rows per table, default 10 like the DTrace script)
/// from the file's IBS op samples, or, in a file without IBS samples, from its PEBS memory
/// samples.
pub fn data_report(
    profile: &Profile,
    symbolizer: &mut Symbolizer,
    opts: &IbsOptions,
) -> DataReport {
    let (source, list) = if has_ibs(profile) {
        (PreciseSource::Ibs, ibs_accesses(profile))
    } else {
        let list = pebs_accesses(profile);
        let spe = list.iter().any(|a| a.sample.spe.is_some());
        let source = if spe {
            PreciseSource::Spe
        } else {
            PreciseSource::Pebs
        };
        (source, list)
    };
    let mut r = Resolver::new(profile, symbolizer);
    type Acc = HashMap<String, DataRow>;
    let (mut addrs, mut lines, mut pages, mut syms): (Acc, Acc, Acc, Acc) = Default::default();
    let (mut comms, mut cpus, mut phys): (Acc, Acc, Acc) = Default::default();
    let (mut accesses, mut misses) = (0, 0);
    let mut sizes: std::collections::BTreeMap<u64, PageSizeRow> = Default::default();
    let any_phys = list.iter().any(|a| a.phys.is_some());
    for a in &list {
        let s = a.sample;
        let addr = a.addr;
        accesses += 1;
        misses += u64::from(a.miss);
        if let Some(size) = a.page_size {
            let row = sizes.entry(size).or_insert(PageSizeRow {
                size,
                accesses: 0,
                dc_miss: 0,
            });
            row.accesses += 1;
            row.dc_miss += u64::from(a.miss);
        }
        let sym = data_symbol(&mut r, s, addr);
        let mut keyed = vec![
            (&mut addrs, format!("{addr:#x}")),
            (&mut lines, format!("{:#x}", addr & !63)),
            (&mut pages, format!("{:#x}", addr & !4095)),
            (&mut syms, sym),
            (&mut comms, profile.str(s.comm).to_string()),
            (&mut cpus, s.cpu.to_string()),
        ];
        if let Some(p) = a.phys {
            keyed.push((&mut phys, format!("{:#x}", p & !4095)));
        }
        for (acc, key) in keyed {
            let mut first = false;
            let row = acc.entry(key.clone()).or_insert_with(|| {
                first = true;
                DataRow {
                    key,
                    accesses: 0,
                    dc_miss: 0,
                    miss_lat_total: None,
                    local: 0,
                    remote: 0,
                    lat_total: None,
                    ins_lat_total: None,
                }
            });
            row.accesses += 1;
            row.dc_miss += u64::from(a.miss);
            add_opt(&mut row.miss_lat_total, a.miss_lat, first);
            row.local += u64::from(a.local);
            row.remote += u64::from(a.remote);
            add_opt(&mut row.lat_total, a.lat, first);
            add_opt(&mut row.ins_lat_total, a.ins_lat, first);
        }
    }
    let top = opts.top.unwrap_or(10);
    let table = |acc: Acc| {
        let rows: Vec<DataRow> = acc.into_values().filter(|r| r.dc_miss > 0).collect();
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
    DataReport {
        source,
        accesses,
        dc_miss: misses,
        addresses: table(addrs),
        lines: table(lines),
        pages: table(pages),
        symbols: table(syms),
        comms: table(comms),
        cpus: table(cpus),
        phys_pages: any_phys.then(|| table(phys)),
        page_sizes: (!sizes.is_empty()).then(|| sizes.into_values().collect()),
    }
}

/// The ELF data object at a data address of the executable that made the access (its load
/// bias comes from the instruction's own mapping), else `[anon]`.
fn data_symbol(r: &mut Resolver<'_>, s: &Sample, addr: u64) -> String {
    if let Some(dso) = s.location.dso {
        let info = r.info(s.location, s.pid);
        if let Some(ip_svma) = info.svma {
            let bias = s.ip.wrapping_sub(ip_svma);
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
