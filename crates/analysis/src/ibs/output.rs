//! What `culprit ibs` shows: the reports a file has samples for, chosen and checked once
//! ([`ibs_report`]), as one owned JSON object (`schema` 1, docs/schemas/ibs.schema.json) and
//! as a text [`Document`] (notes, then one table per report and key).

use culprit_decode::ibs::{IbsContext, IbsKind};
use culprit_decode::model::Profile;
use culprit_decode::pebs::PreciseSource;
use culprit_output::text::{wrap, HEADER_WIDTH};
use culprit_output::{Column, Document, Table, Values};
use culprit_symbols::Symbolizer;
use serde::Serialize;

use super::{
    DataReport, DataRow, FetchReport, FetchRow, IbsFold, IbsOptions, IbsSort, OpReport, OpRow,
    Resolver,
};
use crate::AnalysisError;

/// Version of ibs's JSON (`"schema"`).
pub const SCHEMA: u32 = 1;

/// Which reports `culprit ibs` makes.
#[derive(Debug, Clone, Default)]
pub struct IbsRequest {
    /// The fetch report (`--fetch`).
    pub fetch: bool,
    /// The op report (`--op`).
    pub op: bool,
    /// The data-centric report (`--data`).
    pub data: bool,
    /// Without any of them: every report the file has samples for.
    pub options: IbsOptions,
}

/// The IBS reports of a file.
#[derive(Debug, Clone, Serialize)]
pub struct IbsReport {
    /// Version of this format.
    pub schema: u32,
    /// The file (as named on the command line).
    pub input: String,
    /// Row key of the main tables.
    pub sort: IbsSort,
    /// The fetch report, when made.
    pub fetch: Option<FetchReport>,
    /// The op report, when made.
    pub op: Option<OpReport>,
    /// The data-centric report, when made.
    pub data: Option<DataReport>,
    /// What the reports assumed and left out (CPU, errata, filtered samples).
    pub notes: Vec<String>,
}

/// The reports `req` asks for (without a choice: those the file has samples for) of
/// `profile`, read whole from `input`: the [`IbsFold`] over its samples.
pub fn ibs_report(
    profile: &Profile,
    symbolizer: &mut Symbolizer,
    req: &IbsRequest,
    input: &str,
) -> Result<IbsReport, AnalysisError> {
    let mut fold = IbsFold::new(req.options.include_killed);
    for s in &profile.samples {
        fold.add(profile, s);
    }
    fold.report(profile, symbolizer, req, input)
}

impl IbsFold {
    /// The reports `req` asks for (without a choice: those the file has samples for),
    /// once `profile` (the file's facts) is read from `input`. Errors when the file has
    /// neither IBS nor PEBS memory samples, or only PEBS samples and the fetch or op report
    /// is asked for.
    pub fn report(
        mut self,
        profile: &Profile,
        symbolizer: &mut Symbolizer,
        req: &IbsRequest,
        input: &str,
    ) -> Result<IbsReport, AnalysisError> {
        let has = |k: IbsKind| {
            profile
                .events
                .iter()
                .any(|e| e.samples > 0 && e.pmu.as_deref().and_then(IbsKind::from_pmu) == Some(k))
        };
        let (has_fetch, has_op) = (has(IbsKind::Fetch), has(IbsKind::Op));
        // Without IBS, PEBS memory samples (PERF_SAMPLE_ADDR with DATA_SRC / WEIGHT, as
        // `perf mem record` writes) feed the data-centric tables.
        let pebs_only = !has_fetch && !has_op && self.has_pebs_memory_samples();
        if pebs_only && (req.fetch || req.op) {
            return Err(AnalysisError::NoData(format!(
                "{input} has no IBS samples, only PEBS memory samples: the fetch and op \
                 tables need IBS; `culprit ibs --data` gives the data-centric tables of the \
                 PEBS samples"
            )));
        }
        if !has_fetch && !has_op && !pebs_only {
            if let Some(stop) = &profile.stopped {
                return Err(AnalysisError::NoData(format!(
                    "{input} is truncated or corrupt (reading stopped at offset {}: {}), and \
                     the header features that name the IBS PMUs (HEADER_PMU_MAPPINGS, at the \
                     end of the file) could not be read, so no sample can be recognized as IBS",
                    stop.offset, stop.reason
                )));
            }
            return Err(AnalysisError::NoData(format!(
                "{input} has no IBS samples (no event of the ibs_fetch or ibs_op PMU in \
                 HEADER_PMU_MAPPINGS with samples) and no PEBS memory samples (data address \
                 with data_src or weight, as PEBS and ARM SPE give); record them on an AMD CPU \
                 with `culprit record --ibs op` or `perf record -e ibs_op//`, on Intel with \
                 `perf mem record`, on ARM with `perf record -e arm_spe//`"
            )));
        }
        let none = !(req.fetch || req.op || req.data);
        let opts = &req.options;
        // Before the tables are taken out of the fold.
        let spe = self.spe();
        let mut r = Resolver::new(profile, symbolizer);
        let fetch = (req.fetch || (none && has_fetch)).then(|| self.fetch_report(&mut r, opts));
        let op = (req.op || (none && has_op)).then(|| self.op_report(&mut r, opts));
        let data =
            (req.data || (none && (has_op || pebs_only))).then(|| self.data_report(&mut r, opts));
        let notes = notes(profile, fetch.as_ref(), op.as_ref(), pebs_only, spe);
        Ok(IbsReport {
            schema: SCHEMA,
            input: input.to_string(),
            sort: opts.sort,
            fetch,
            op,
            data,
            notes,
        })
    }
}

/// What the reports assumed (CPU family, errata) and left out.
fn notes(
    profile: &Profile,
    fetch: Option<&FetchReport>,
    op: Option<&OpReport>,
    pebs_only: bool,
    spe: bool,
) -> Vec<String> {
    let mut n = Vec::new();
    if pebs_only && spe {
        n.push(
            "no IBS samples: data-centric tables from ARM SPE records (the `memory` sample \
             perf synthesises from each load or store: data VA/PA, total latency as weight); \
             a DC miss is a record with the L1D refill event, MissLat its total latency"
                .to_string(),
        );
        return n;
    }
    if pebs_only {
        n.push(
            "no IBS samples: data-centric tables from PEBS memory samples (PERF_SAMPLE_ADDR, \
             DATA_SRC, WEIGHT); a DC miss is an access its data_src says was served beyond \
             the L1 (LFB included), MissLat is the weight of missing loads"
                .to_string(),
        );
        return n;
    }
    match IbsContext::from_meta(&profile.meta) {
        Some(c) => n.push(format!(
            "CPU family {:#x} model {:#x}{}{}",
            c.family,
            c.model,
            if c.zen4_pmu_cap {
                ", Zen 4 IBS extensions"
            } else {
                ""
            },
            if c.zen3_errata() {
                " (errata #1238/#1347/#1293 applied: IcMiss hidden, 4K/16K/2M/1G page table, \
                 OpData2/L2Miss ignored for SwPf/DcMissNoMabAlloc)"
            } else {
                ""
            }
        )),
        None => n.push(
            "no AMD CPUID in the file header: decoded without family errata or Zen 4 fields"
                .to_string(),
        ),
    }
    if let Some(f) = fetch {
        if f.killed_filtered {
            n.push(format!(
                "fetch: {} killed fetches filtered out (use --include-killed to count them)",
                f.killed
            ));
        }
        if f.invalid > 0 {
            n.push(format!(
                "fetch: {} invalid samples ignored (En/Val clear)",
                f.invalid
            ));
        }
    }
    if let Some(o) = op {
        if o.invalid > 0 {
            n.push(format!(
                "op: {} invalid samples ignored (En/Val clear)",
                o.invalid
            ));
        }
        if o.l3_miss_only {
            n.push(
                "op: L3MissOnly filtering was on: the effective period cannot be reconstructed, \
                 counts are not proportional to execution"
                    .to_string(),
            );
        }
    }
    n
}

/// `# text` lines, wrapped to 80 columns.
fn comment(text: &str) -> Vec<String> {
    wrap(text, HEADER_WIDTH)
        .into_iter()
        .map(|l| format!("# {l}"))
        .collect()
}

/// Narrowest width of the location column of the fetch and op tables when a line is too
/// wide (they are wider than a terminal: the end of the line is cut rather than the key).
const MIN_LOCATION: usize = 40;

/// Narrowest width of the key column of the data tables.
const MIN_KEY: usize = 24;

/// `key (dso)` unless the key names the DSO already.
fn location(key: &str, dso: Option<&str>) -> String {
    match dso {
        Some(d) if !key.contains(d) => format!("{key} ({d})"),
        _ => key.to_string(),
    }
}

/// A count column.
fn count<T>(name: &str, csv: &str, rows: &[T], f: impl Fn(&T) -> u64) -> Column {
    Column::new(name, csv, Values::Count(rows.iter().map(f).collect()))
}

/// An average column (one decimal).
fn average<T>(name: &str, csv: &str, rows: &[T], f: impl Fn(&T) -> f64) -> Column {
    Column::new(name, csv, Values::Float(rows.iter().map(f).collect(), 1))
}

/// An optional total: empty where the samples do not have it (never 0).
fn optional<T>(name: &str, csv: &str, rows: &[T], f: impl Fn(&T) -> Option<u64>) -> Column {
    let v = rows
        .iter()
        .map(|r| f(r).map_or(f64::NAN, |x| x as f64))
        .collect();
    Column::new(name, csv, Values::Float(v, 0))
}

/// The location column, first (the tables are wider than a terminal; it stays in view).
fn location_column(rows: &[(String, Option<String>)]) -> Column {
    Column::new(
        "Location",
        "location",
        Values::Text(
            rows.iter()
                .map(|(k, d)| location(k, d.as_deref()))
                .collect(),
        ),
    )
    .shrink(MIN_LOCATION)
}

fn fetch_table(title: String, rows: &[FetchRow]) -> Table {
    let sites: Vec<(String, Option<String>)> = rows
        .iter()
        .map(|r| (r.site.key.clone(), r.site.dso.clone()))
        .collect();
    let mut t = Table::new(vec![
        location_column(&sites),
        count("All", "all", rows, |r| r.counts.all),
        count("Killed", "killed", rows, |r| r.counts.killed),
        count("Attempted", "attempted", rows, |r| r.counts.attempted),
        count("Completed", "completed", rows, |r| r.counts.completed),
        count("Aborted", "aborted", rows, |r| r.counts.aborted),
        count("ICmiss", "ic_miss", rows, |r| r.counts.ic_miss),
        count("ITLBL1M", "itlb_l1m", rows, |r| {
            r.counts.itlb_l1m_l2h + r.counts.itlb_l1m_l2m
        }),
        count("ITLBL2M", "itlb_l2m", rows, |r| r.counts.itlb_l1m_l2m),
        count("4K", "page_4k", rows, |r| r.counts.page_4k),
        count("16K", "page_16k", rows, |r| r.counts.page_16k),
        count("2M", "page_2m", rows, |r| r.counts.page_2m),
        count("1G", "page_1g", rows, |r| r.counts.page_1g),
        average("AvgLat", "avg_lat", rows, |r| r.counts.avg_lat),
    ]);
    t.title = Some(title);
    // Too wide for a terminal: the counters continue in panels under the location.
    t.repeat = 1;
    t
}

fn op_table(title: String, rows: &[OpRow]) -> Table {
    let sites: Vec<(String, Option<String>)> = rows
        .iter()
        .map(|r| (r.site.key.clone(), r.site.dso.clone()))
        .collect();
    let mut t = Table::new(vec![
        location_column(&sites),
        count("Ops", "ops", rows, |r| r.counts.all),
        count("Brn", "branch", rows, |r| r.counts.branch),
        count("Misp", "mispredicted", rows, |r| r.counts.mispredicted),
        count("Taken", "taken", rows, |r| r.counts.taken),
        count("Ret", "ret", rows, |r| r.counts.ret),
        count("Load", "load", rows, |r| r.counts.load),
        count("Store", "store", rows, |r| r.counts.store),
        count("DCmiss", "dc_miss", rows, |r| r.counts.dc_miss),
        count("DTLBL1M", "dtlb_l1m", rows, |r| {
            r.counts.dtlb_l1m_l2h + r.counts.dtlb_l1m_l2m
        }),
        count("DTLBL2M", "dtlb_l2m", rows, |r| r.counts.dtlb_l1m_l2m),
        count("4K", "page_4k", rows, |r| r.counts.page_4k),
        count("2M", "page_2m", rows, |r| r.counts.page_2m),
        count("1G", "page_1g", rows, |r| r.counts.page_1g),
        count("Misal", "misaligned", rows, |r| r.counts.misaligned),
        count("Lock", "locked", rows, |r| r.counts.locked),
        count("UC/WC", "uc_wc", rows, |r| r.counts.uc + r.counts.wc),
        count("MissLat", "dc_miss_lat_total", rows, |r| {
            r.counts.dc_miss_lat_total
        }),
        average("AvgLat", "avg_dc_miss_lat", rows, |r| {
            r.counts.avg_dc_miss_lat
        }),
        average("AvgT2R", "avg_tag_to_ret", rows, |r| {
            r.counts.avg_tag_to_ret
        }),
        average("AvgC2R", "avg_comp_to_ret", rows, |r| {
            r.counts.avg_comp_to_ret
        }),
        count("LCach", "src_local_cache", rows, |r| {
            r.counts.src_local_cache
        }),
        count("RCach", "src_remote_cache", rows, |r| {
            r.counts.src_remote_cache
        }),
        count("DRAM", "src_local_dram", rows, |r| r.counts.src_local_dram),
        count("RDRAM", "src_remote_dram", rows, |r| {
            r.counts.src_remote_dram
        }),
        count("IO", "src_io", rows, |r| r.counts.src_io),
        count("CXL", "src_cxl", rows, |r| r.counts.src_cxl),
    ]);
    t.title = Some(title);
    // Too wide for a terminal: the counters continue in panels under the location.
    t.repeat = 1;
    t
}

fn data_table(title: String, what: &str, rows: &[DataRow], pebs: bool) -> Table {
    let mut cols = vec![
        count("DCmiss", "dc_miss", rows, |r| r.dc_miss),
        optional("MissLat", "miss_lat_total", rows, |r| r.miss_lat_total),
        count("Access", "accesses", rows, |r| r.accesses),
        count("Local", "local", rows, |r| r.local),
        count("Remote", "remote", rows, |r| r.remote),
    ];
    if pebs {
        cols.push(optional("Lat", "lat_total", rows, |r| r.lat_total));
        cols.push(optional("InsLat", "ins_lat_total", rows, |r| {
            r.ins_lat_total
        }));
    }
    cols.push(
        Column::new(
            what,
            "key",
            Values::Text(rows.iter().map(|r| r.key.clone()).collect()),
        )
        .shrink(MIN_KEY),
    );
    let mut t = Table::new(cols);
    t.title = Some(title);
    t
}

/// CSV is the document's tables (the verb refuses it today).
impl culprit_output::Render for IbsReport {
    fn document(&self) -> Document {
        IbsReport::document(self)
    }

    fn write_json(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        culprit_output::json::write(out, self)
    }
}

impl IbsReport {
    /// The text: the notes as header lines, then per report a summary line and its
    /// tables (locations first: the op table is wider than a terminal).
    pub fn document(&self) -> Document {
        let mut doc = Document::new();
        doc.header = self
            .notes
            .iter()
            .flat_map(|n| wrap(n, HEADER_WIDTH))
            .collect();
        if let Some(f) = &self.fetch {
            doc.lines(comment(&format!(
                "IBS fetch: {} samples, {} killed{}, {} invalid, {} attributed to a \
                 straddling instruction",
                f.samples,
                f.killed,
                if f.killed_filtered { " (filtered)" } else { "" },
                f.invalid,
                f.straddled
            )));
            doc.table(fetch_table("fetch by location".into(), &f.rows));
            doc.table(fetch_table("fetch by function".into(), &f.functions));
        }
        if let Some(o) = &self.op {
            doc.lines(comment(&format!(
                "IBS op: {} samples, {} invalid; rows sorted by DC misses, then total miss \
                 latency",
                o.samples, o.invalid
            )));
            doc.table(op_table("op by location".into(), &o.rows));
            doc.table(op_table("op by function".into(), &o.functions));
        }
        if let Some(d) = &self.data {
            self.data_sections(&mut doc, d);
        }
        doc
    }

    fn data_sections(&self, doc: &mut Document, d: &DataReport) {
        let pebs = d.source != PreciseSource::Ibs;
        let source = match d.source {
            PreciseSource::Ibs => "IBS",
            PreciseSource::Pebs => "PEBS",
            PreciseSource::Spe => "ARM SPE",
        };
        doc.lines(comment(&format!(
            "{source} data-centric: {} memory ops with a data address, {} DC misses",
            d.accesses, d.dc_miss
        )));
        let mut tables = vec![
            ("VA", &d.addresses),
            ("cache line", &d.lines),
            ("page", &d.pages),
            ("data symbol", &d.symbols),
            ("command", &d.comms),
            ("CPU", &d.cpus),
        ];
        if let Some(t) = &d.phys_pages {
            tables.push(("physical page", t));
        }
        for (what, t) in tables {
            for (by, rows) in [
                ("DC misses", &t.by_misses),
                ("total miss latency", &t.by_latency),
            ] {
                doc.table(data_table(
                    format!("Top {} {what}s by {by}", rows.len()),
                    what,
                    rows,
                    pebs,
                ));
            }
        }
        if let Some(sizes) = &d.page_sizes {
            let mut t = Table::new(vec![
                count("Access", "accesses", sizes, |p| p.accesses),
                count("DCmiss", "dc_miss", sizes, |p| p.dc_miss),
                count("size", "size", sizes, |p| p.size),
            ]);
            t.title = Some("Data page sizes".into());
            doc.table(t);
        }
    }
}
