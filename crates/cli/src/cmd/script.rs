//! `culprit script`: one line (text) or one JSON object per line (json) per sample, with the
//! decoded IBS registers (perf 6.1's labels and field names) and precise memory fields.
//!
//! The JSON schema is documented in docs/script.md. Exit status: 0 on success; 1 when the
//! input is truncated or corrupt (what was read is still printed); 2 when nothing could be
//! read or an argument is wrong.

use std::collections::HashMap;
use std::io::{BufWriter, Write};
use std::process::ExitCode;

use clap::ValueEnum;
use culprit_decode::ibs::{self, IbsContext, IbsKind, IbsSample};
use culprit_decode::model::{Profile, Sample};
use culprit_decode::pebs::{self, PreciseSample};
use culprit_symbols::{Query, ReadPlan, Symbolizer};
use serde_json::{json, Map, Value};

use crate::args::InputArgs;

/// Output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ScriptFormat {
    /// perf-script-like line per sample, followed by perf's decoded IBS lines.
    Text,
    /// One JSON object per line (schema in docs/script.md).
    Json,
}

/// Arguments of `culprit script`.
#[derive(clap::Args, Debug)]
#[command(
    about = "One line (or JSON object) per sample, with decoded IBS/PEBS fields",
    after_help = "EXAMPLES:\n  culprit script -i perf.data\n  culprit script -i ibs.data --format json | jq 'select(.ibs.ibs_op_data3.DcMiss == 1)'\n\nIBS samples are decoded as perf 6.1 does (`perf report -D`): same labels, same fields, same\nconditions. Samples perf rejects (En or Val clear) carry \"ibs_error\" instead."
)]
pub struct ScriptArgs {
    /// The input file and where its symbols are found.
    #[command(flatten)]
    pub input: InputArgs,
    /// Output format: text or json (see docs/script.md).
    #[arg(long, value_enum, value_name = "FORMAT", default_value_t = ScriptFormat::Text)]
    pub format: ScriptFormat,
}

/// Runs `culprit script`.
pub fn run(args: ScriptArgs) -> anyhow::Result<ExitCode> {
    let input = args.input.open();
    let profile = input.read(&ReadPlan::default())?;
    let mut symbolizer = input.symbolizer();
    let stdout = std::io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    write_script(&profile, &mut symbolizer, args.format, &mut out)?;
    out.flush()?;
    if let Some(stop) = &profile.stopped {
        eprintln!(
            "culprit: warning: {}: reading stopped at offset {} ({}) after {} records; samples \
             before it are shown",
            args.input.path().display(),
            stop.offset,
            stop.reason,
            stop.records_read
        );
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

/// (symbol, DSO short name) of a location.
type Names = (Option<String>, Option<String>);

/// The IBS kind of each event (by its PMU name).
fn ibs_kinds(profile: &Profile) -> Vec<Option<IbsKind>> {
    profile
        .events
        .iter()
        .map(|e| e.pmu.as_deref().and_then(IbsKind::from_pmu))
        .collect()
}

/// Writes every sample.
pub fn write_script(
    profile: &Profile,
    symbolizer: &mut Symbolizer,
    format: ScriptFormat,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    let kinds = ibs_kinds(profile);
    let ctx = IbsContext::from_meta(&profile.meta);
    let mut names: HashMap<(Option<u32>, u64), Names> = HashMap::new();
    for s in &profile.samples {
        let key = (s.location.dso, s.location.file_offset);
        let (sym, dso) = names
            .entry(key)
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
        let event = profile
            .events
            .get(s.event as usize)
            .map(|e| e.name.as_str())
            .unwrap_or("?");
        let kind = kinds.get(s.event as usize).copied().flatten();
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
        match format {
            ScriptFormat::Json => {
                let v = json_line(
                    profile,
                    s,
                    event,
                    sym,
                    dso,
                    decoded.as_ref(),
                    ctx.as_ref(),
                    precise,
                );
                // Written as a string so that a closed pipe stays an io::Error (quiet exit).
                writeln!(out, "{v}")?;
            }
            ScriptFormat::Text => {
                text_line(profile, s, event, sym, dso, out)?;
                if let Some(p) = &precise {
                    writeln!(out, "{}", precise_text(p))?;
                }
                match (&decoded, &ctx) {
                    (Some(Ok(d)), Some(c)) => {
                        for l in d.perf_lines(c) {
                            writeln!(out, "{}", l.text)?;
                        }
                    }
                    (Some(Err(e)), _) => writeln!(out, "ibs: {e}")?,
                    _ => {}
                }
            }
        }
    }
    Ok(())
}

fn text_line(
    profile: &Profile,
    s: &Sample,
    event: &str,
    sym: Option<String>,
    dso: Option<String>,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let secs = s.time / 1_000_000_000;
    let usecs = (s.time % 1_000_000_000) / 1000;
    writeln!(
        out,
        "{:>16} {:>7}/{:<7} [{:03}] {:>5}.{:06}: {:>10} {}: {:16x} {} ({})",
        profile.str(s.comm),
        s.pid,
        s.tid,
        s.cpu,
        secs,
        usecs,
        s.period,
        event,
        s.ip,
        sym.as_deref().unwrap_or("[unknown]"),
        dso.as_deref().unwrap_or("[unknown]")
    )
}

fn precise_text(p: &PreciseSample) -> String {
    let mut t = String::from("precise:");
    if let Some(a) = p.addr {
        t += &format!(" addr {a:#x}");
    }
    if let Some(a) = p.phys_addr {
        t += &format!(" phys {a:#x}");
    }
    if let Some(l) = p.latency {
        t += &format!(" lat {l}");
    }
    if let Some(d) = &p.data_src {
        t += &format!(
            " {:?} {}{} tlb {:?} snoop {:?}{}",
            d.op,
            d.level.name(),
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

#[allow(clippy::too_many_arguments)]
fn json_line(
    profile: &Profile,
    s: &Sample,
    event: &str,
    sym: Option<String>,
    dso: Option<String>,
    decoded: Option<&Result<IbsSample, ibs::IbsError>>,
    ctx: Option<&IbsContext>,
    precise: Option<PreciseSample>,
) -> Value {
    let mut m = Map::new();
    m.insert("time".into(), json!(s.time));
    m.insert("pid".into(), json!(s.pid));
    m.insert("tid".into(), json!(s.tid));
    m.insert("cpu".into(), json!(s.cpu));
    m.insert("comm".into(), json!(profile.str(s.comm)));
    m.insert("event".into(), json!(event));
    m.insert("period".into(), json!(s.period));
    m.insert("ip".into(), json!(s.ip));
    m.insert("exact_ip".into(), json!(s.exact_ip));
    m.insert("sym".into(), json!(sym));
    m.insert("dso".into(), json!(dso));
    match (decoded, ctx) {
        (Some(Ok(d)), Some(c)) => {
            let mut regs = Map::new();
            for l in d.perf_lines(c) {
                let mut f = Map::new();
                f.insert("value".into(), json!(l.value));
                for (k, v) in &l.fields {
                    f.insert((*k).into(), json!(v));
                }
                regs.insert(l.label.into(), Value::Object(f));
            }
            m.insert("ibs".into(), Value::Object(regs));
        }
        (Some(Err(e)), _) => {
            m.insert("ibs_error".into(), json!(e.to_string()));
        }
        _ => {}
    }
    if let Some(p) = precise {
        let mut pm = Map::new();
        pm.insert("source".into(), json!(p.source));
        pm.insert("addr".into(), json!(p.addr));
        pm.insert("phys_addr".into(), json!(p.phys_addr));
        pm.insert("latency".into(), json!(p.latency));
        pm.insert("ins_latency".into(), json!(p.ins_latency));
        pm.insert("data_page_size".into(), json!(p.data_page_size));
        if let Some(d) = p.data_src {
            pm.insert("data_src".into(), json!(d.value));
            pm.insert("mem_op".into(), json!(d.op));
            pm.insert("level".into(), json!(d.level.name()));
            pm.insert("hit".into(), json!(d.hit));
            pm.insert("remote".into(), json!(d.remote));
            pm.insert("hops".into(), json!(d.hops));
            pm.insert("snoop".into(), json!(d.snoop));
            pm.insert("locked".into(), json!(d.locked));
            pm.insert("tlb".into(), json!(d.tlb));
        }
        m.insert("precise".into(), Value::Object(pm));
    }
    Value::Object(m)
}
