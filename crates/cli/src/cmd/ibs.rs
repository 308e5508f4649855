//! `culprit ibs`: AMD IBS reports from a perf.data file — fetch table, op table (per
//! instruction, source line or function, and per function) and data-centric tables (these
//! also from Intel PEBS memory samples when the file has no IBS).
//!
//! The JSON schema is documented in docs/ibs.md. Exit status: 0 on success; 1 when the input
//! is truncated or corrupt (the report of what was read is still printed); 2 when nothing could
//! be read, an argument is wrong, or the file has neither IBS nor PEBS memory samples.

use std::io::{BufWriter, Write};
use std::process::ExitCode;

use anyhow::Context;
use clap::ValueEnum;
use culprit_analysis::ibs::{
    data_report, fetch_report, has_pebs_memory_samples, op_report, DataReport, DataRow, DataTable,
    FetchReport, IbsOptions, IbsSort, OpReport,
};
use culprit_decode::ibs::IbsKind;
use culprit_decode::model::Profile;
use culprit_decode::pebs::PreciseSource;
use culprit_symbols::ReadPlan;
use serde_json::{json, Map, Value};

use crate::args::InputArgs;

/// Output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum IbsFormat {
    /// Aligned tables.
    Text,
    /// One JSON object (schema in docs/ibs.md).
    Json,
}

/// Arguments of `culprit ibs`.
#[derive(clap::Args, Debug)]
#[command(
    about = "IBS fetch/op/data-centric reports from a perf.data file",
    after_help = "EXAMPLES:\n  culprit ibs -i ibs.data --op                 op table per instruction, DC misses first\n  culprit ibs --fetch --sort sym               fetch table per function\n  culprit ibs --data --top 10                  top data addresses/lines/pages/symbols by DC misses\n\nWith none of --fetch/--op/--data, every report the file has samples for is printed."
)]
pub struct IbsArgs {
    /// The input file and where its symbols are found.
    #[command(flatten)]
    pub input: InputArgs,
    /// Fetch report (ibs_fetch samples).
    #[arg(long)]
    pub fetch: bool,
    /// Op report (ibs_op samples).
    #[arg(long)]
    pub op: bool,
    /// Data-centric report (ibs_op load/store samples with a data address).
    #[arg(long)]
    pub data: bool,
    /// Row key of the main table: ip (instruction), sym (function) or srcline.
    #[arg(short = 's', long, value_name = "KEY", default_value = "ip")]
    pub sort: String,
    /// Count killed fetches too (left out by default, as CodeAnalyst did).
    #[arg(long = "include-killed")]
    pub include_killed: bool,
    /// Show at most N rows per table (data tables: default 10).
    #[arg(long, value_name = "N")]
    pub top: Option<usize>,
    /// Output format: text or json (see docs/ibs.md).
    #[arg(long, value_enum, value_name = "FORMAT", default_value_t = IbsFormat::Text)]
    pub format: IbsFormat,
}

/// Runs `culprit ibs`.
pub fn run(args: IbsArgs) -> anyhow::Result<ExitCode> {
    let sort =
        IbsSort::parse(&args.sort).context("error parsing flag --sort (ip, sym, srcline)")?;
    let input = args.input.open();
    let profile = input.read(&ReadPlan::default())?;
    let has = |k: IbsKind| {
        profile
            .events
            .iter()
            .any(|e| e.samples > 0 && e.pmu.as_deref().and_then(IbsKind::from_pmu) == Some(k))
    };
    let (has_fetch, has_op) = (has(IbsKind::Fetch), has(IbsKind::Op));
    // Without IBS, PEBS memory samples (PERF_SAMPLE_ADDR with DATA_SRC / WEIGHT, as `perf mem
    // record` writes) feed the data-centric tables.
    let pebs_only = !has_fetch && !has_op && has_pebs_memory_samples(&profile);
    if pebs_only && (args.fetch || args.op) {
        anyhow::bail!(
            "{} has no IBS samples, only PEBS memory samples: the fetch and op tables need \
             IBS; `culprit ibs --data` gives the data-centric tables of the PEBS samples",
            args.input.path().display()
        );
    }
    if !has_fetch && !has_op && !pebs_only {
        if let Some(stop) = &profile.stopped {
            anyhow::bail!(
                "{} is truncated or corrupt (reading stopped at offset {}: {}), and the \
                 header features that name the IBS PMUs (HEADER_PMU_MAPPINGS, at the end of \
                 the file) could not be read, so no sample can be recognized as IBS",
                args.input.path().display(),
                stop.offset,
                stop.reason
            );
        }
        anyhow::bail!(
            "{} has no IBS samples (no event of the ibs_fetch or ibs_op PMU in \
             HEADER_PMU_MAPPINGS with samples) and no PEBS memory samples (data address with \
             data_src or weight); record them on an AMD CPU with `culprit record --ibs op` \
             or `perf record -e ibs_op//`, or on Intel with `perf mem record`",
            args.input.path().display()
        );
    }
    let none = !(args.fetch || args.op || args.data);
    let want_fetch = args.fetch || (none && has_fetch);
    let want_op = args.op || (none && has_op);
    let want_data = args.data || (none && (has_op || pebs_only));
    let opts = IbsOptions {
        sort,
        include_killed: args.include_killed,
        top: args.top,
    };
    let mut symbolizer = input.symbolizer();
    let fetch = want_fetch.then(|| fetch_report(&profile, &mut symbolizer, &opts));
    let op = want_op.then(|| op_report(&profile, &mut symbolizer, &opts));
    let data = want_data.then(|| data_report(&profile, &mut symbolizer, &opts));
    let stdout = std::io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    match args.format {
        IbsFormat::Json => {
            let mut m = Map::new();
            m.insert(
                "input".into(),
                json!(args.input.path().display().to_string()),
            );
            m.insert("sort".into(), json!(sort));
            m.insert("fetch".into(), serde_json::to_value(&fetch)?);
            m.insert("op".into(), serde_json::to_value(&op)?);
            m.insert("data".into(), serde_json::to_value(&data)?);
            m.insert(
                "notes".into(),
                json!(notes(&profile, fetch.as_ref(), op.as_ref(), pebs_only)),
            );
            writeln!(out, "{}", Value::Object(m))?;
        }
        IbsFormat::Text => {
            for n in notes(&profile, fetch.as_ref(), op.as_ref(), pebs_only) {
                writeln!(out, "# {n}")?;
            }
            if let Some(f) = &fetch {
                print_fetch(&mut out, f)?;
            }
            if let Some(o) = &op {
                print_op(&mut out, o)?;
            }
            if let Some(d) = &data {
                print_data(&mut out, d)?;
            }
        }
    }
    out.flush()?;
    if let Some(stop) = &profile.stopped {
        eprintln!(
            "culprit: warning: {}: reading stopped at offset {} ({}); the report covers what \
             was read before it",
            args.input.path().display(),
            stop.offset,
            stop.reason
        );
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

fn notes(
    profile: &Profile,
    fetch: Option<&FetchReport>,
    op: Option<&OpReport>,
    pebs_only: bool,
) -> Vec<String> {
    let mut n = Vec::new();
    if pebs_only {
        n.push(
            "no IBS samples: data-centric tables from PEBS memory samples (PERF_SAMPLE_ADDR, \
             DATA_SRC, WEIGHT); a DC miss is an access its data_src says was served beyond \
             the L1 (LFB included), MissLat is the weight of missing loads"
                .to_string(),
        );
        return n;
    }
    match culprit_decode::ibs::IbsContext::from_meta(&profile.meta) {
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

fn print_fetch(out: &mut dyn Write, f: &FetchReport) -> std::io::Result<()> {
    writeln!(
        out,
        "\n# IBS fetch: {} samples, {} killed{}, {} invalid, {} attributed to a straddling instruction",
        f.samples,
        f.killed,
        if f.killed_filtered { " (filtered)" } else { "" },
        f.invalid,
        f.straddled
    )?;
    let header = format!(
        "{:>7} {:>7} {:>9} {:>9} {:>7} {:>7} {:>8} {:>8} {:>6} {:>6} {:>6} {:>6} {:>8}  {}",
        "All",
        "Killed",
        "Attempted",
        "Completed",
        "Aborted",
        "ICmiss",
        "ITLBL1M",
        "ITLBL2M",
        "4K",
        "16K",
        "2M",
        "1G",
        "AvgLat",
        "Location"
    );
    for (title, rows) in [("by location", &f.rows), ("by function", &f.functions)] {
        writeln!(out, "\n## fetch {title}\n{header}")?;
        for r in rows.iter() {
            let c = &r.counts;
            writeln!(
                out,
                "{:>7} {:>7} {:>9} {:>9} {:>7} {:>7} {:>8} {:>8} {:>6} {:>6} {:>6} {:>6} {:>8.1}  {}",
                c.all,
                c.killed,
                c.attempted,
                c.completed,
                c.aborted,
                c.ic_miss,
                c.itlb_l1m_l2h + c.itlb_l1m_l2m,
                c.itlb_l1m_l2m,
                c.page_4k,
                c.page_16k,
                c.page_2m,
                c.page_1g,
                c.avg_lat,
                location(&r.site.key, r.site.dso.as_deref())
            )?;
        }
    }
    Ok(())
}

fn location(key: &str, dso: Option<&str>) -> String {
    match dso {
        Some(d) if !key.contains(d) => format!("{key} ({d})"),
        _ => key.to_string(),
    }
}

fn print_op(out: &mut dyn Write, o: &OpReport) -> std::io::Result<()> {
    writeln!(
        out,
        "\n# IBS op: {} samples, {} invalid; rows sorted by DC misses, then total miss latency",
        o.samples, o.invalid
    )?;
    let header = format!(
        "{:>6} {:>5} {:>5} {:>5} {:>4} {:>6} {:>6} {:>6} {:>7} {:>7} {:>5} {:>5} {:>5} {:>5} {:>5} {:>5} {:>9} {:>7} {:>6} {:>6} {:>5} {:>5} {:>5} {:>5} {:>4} {:>4}  {}",
        "Ops", "Brn", "Misp", "Taken", "Ret", "Load", "Store", "DCmiss", "DTLBL1M", "DTLBL2M",
        "4K", "2M", "1G", "Misal", "Lock", "UC/WC", "MissLat", "AvgLat", "AvgT2R", "AvgC2R",
        "LCach", "RCach", "DRAM", "RDRAM", "IO", "CXL", "Location"
    );
    for (title, rows) in [("by location", &o.rows), ("by function", &o.functions)] {
        writeln!(out, "\n## op {title}\n{header}")?;
        for r in rows.iter() {
            let c = &r.counts;
            writeln!(
                out,
                "{:>6} {:>5} {:>5} {:>5} {:>4} {:>6} {:>6} {:>6} {:>7} {:>7} {:>5} {:>5} {:>5} {:>5} {:>5} {:>5} {:>9} {:>7.1} {:>6.1} {:>6.1} {:>5} {:>5} {:>5} {:>5} {:>4} {:>4}  {}",
                c.all,
                c.branch,
                c.mispredicted,
                c.taken,
                c.ret,
                c.load,
                c.store,
                c.dc_miss,
                c.dtlb_l1m_l2h + c.dtlb_l1m_l2m,
                c.dtlb_l1m_l2m,
                c.page_4k,
                c.page_2m,
                c.page_1g,
                c.misaligned,
                c.locked,
                c.uc + c.wc,
                c.dc_miss_lat_total,
                c.avg_dc_miss_lat,
                c.avg_tag_to_ret,
                c.avg_comp_to_ret,
                c.src_local_cache,
                c.src_remote_cache,
                c.src_local_dram,
                c.src_remote_dram,
                c.src_io,
                c.src_cxl,
                location(&r.site.key, r.site.dso.as_deref())
            )?;
        }
    }
    Ok(())
}

fn print_data(out: &mut dyn Write, d: &DataReport) -> std::io::Result<()> {
    let pebs = d.source == PreciseSource::Pebs;
    writeln!(
        out,
        "\n# {} data-centric: {} memory ops with a data address, {} DC misses",
        if pebs { "PEBS" } else { "IBS" },
        d.accesses,
        d.dc_miss
    )?;
    let mut tables: Vec<(&str, &DataTable)> = vec![
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
            writeln!(out, "\n## Top {} {what}s by {by}", rows.len())?;
            if pebs {
                writeln!(
                    out,
                    "{:>8} {:>10} {:>8} {:>7} {:>7} {:>10} {:>10}  {}",
                    "DCmiss", "MissLat", "Access", "Local", "Remote", "Lat", "InsLat", what
                )?;
            } else {
                writeln!(
                    out,
                    "{:>8} {:>10} {:>8} {:>7} {:>7}  {}",
                    "DCmiss", "MissLat", "Access", "Local", "Remote", what
                )?;
            }
            for r in rows.iter() {
                print_data_row(out, r, pebs)?;
            }
        }
    }
    if let Some(sizes) = &d.page_sizes {
        writeln!(
            out,
            "\n## Data page sizes\n{:>8} {:>8}  size",
            "Access", "DCmiss"
        )?;
        for p in sizes {
            writeln!(out, "{:>8} {:>8}  {}", p.accesses, p.dc_miss, p.size)?;
        }
    }
    Ok(())
}

/// An optional total as printed: absent values are `-`, never 0.
fn opt(v: Option<u64>) -> String {
    v.map_or_else(|| "-".to_string(), |v| v.to_string())
}

fn print_data_row(out: &mut dyn Write, r: &DataRow, pebs: bool) -> std::io::Result<()> {
    if pebs {
        return writeln!(
            out,
            "{:>8} {:>10} {:>8} {:>7} {:>7} {:>10} {:>10}  {}",
            r.dc_miss,
            opt(r.miss_lat_total),
            r.accesses,
            r.local,
            r.remote,
            opt(r.lat_total),
            opt(r.ins_lat_total),
            r.key
        );
    }
    writeln!(
        out,
        "{:>8} {:>10} {:>8} {:>7} {:>7}  {}",
        r.dc_miss,
        opt(r.miss_lat_total),
        r.accesses,
        r.local,
        r.remote,
        r.key
    )
}
