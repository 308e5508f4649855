//! `culprit report --branch`: perf's branch mode (`perf report --branch-stack`). Every
//! branch-stack entry counts as one sample of period 1; rows group the entries by keys of
//! the branch's source and target (docs/report.md, "Branch mode").

use std::io::{IsTerminal, Write};
use std::process::ExitCode;

use anyhow::Context;
use culprit_analysis::branches::{
    branch_report, BranchAggregator, BranchKey, BranchKeyValue, BranchOptions, BranchReport,
    DEFAULT_BRANCH_SORT,
};
use culprit_analysis::Filters;
use culprit_decode::model::Profile;
use culprit_symbols::ReadPlan;
use serde_json::{Map, Value};

use super::report::{csv_field, json_meta, json_stopped, round4, ReportArgs, ReportFormat};

/// The `--sort` default of the hotspot mode: branch mode then uses perf's branch default.
const HOTSPOT_DEFAULT_SORT: &str = "comm,dso,sym";

/// Runs `culprit report --branch`.
pub fn run(args: &ReportArgs) -> anyhow::Result<ExitCode> {
    let sort = if args.sort == HOTSPOT_DEFAULT_SORT {
        DEFAULT_BRANCH_SORT
    } else {
        args.sort.as_str()
    };
    anyhow::ensure!(
        args.dso.is_empty() && !args.children && !args.deskid && !args.topdown,
        "--branch groups branch entries: --dso, --children, --deskid and --topdown do not apply"
    );
    anyhow::ensure!(
        matches!(
            args.call_graph,
            None | Some(super::report::CallGraphArg::None)
        ),
        "--branch groups branch entries: there are no call graphs (-g)"
    );
    let keys = BranchKey::parse_list(sort).context("error parsing flag --sort")?;
    anyhow::ensure!(!keys.is_empty(), "--sort needs at least one key");
    let filters = Filters {
        pids: args.pid.clone(),
        tids: args.tid.clone(),
        comms: args.comm.clone(),
        dsos: Vec::new(),
    };
    let mut agg = BranchAggregator::new(&keys, &filters);
    let input = args.input.open();
    // Branch mode never looks at call chains.
    let plan = ReadPlan {
        skip_callchains: true,
        ..ReadPlan::default()
    };
    let profile = input.for_each(&plan, |p, s| agg.add(p, s))?;
    if !profile
        .events
        .iter()
        .any(|e| e.sample_type & culprit_decode::abi::sample_type::BRANCH_STACK != 0)
    {
        anyhow::bail!(
            "{}: no event of the file has branch stacks (record with `perf record -b` or \
             `--call-graph lbr`)",
            args.input.path().display()
        );
    }
    let mut symbolizer = input.symbolizer();
    let report = branch_report(
        &profile,
        &agg,
        &mut symbolizer,
        &BranchOptions {
            events: args.event.clone(),
            percent_limit: args.percent_limit,
            top: args.top,
        },
    )?;
    let warnings: Vec<String> = profile
        .warnings
        .iter()
        .chain(symbolizer.warnings())
        .cloned()
        .collect();
    for w in &warnings {
        eprintln!("culprit: warning: {w}");
    }
    let stdout = std::io::stdout();
    let tty = stdout.is_terminal();
    let mut out = std::io::BufWriter::new(stdout.lock());
    match args.format {
        ReportFormat::Text => write_text(&mut out, args, &profile, &report, tty)?,
        ReportFormat::Json => {
            serde_json::to_writer_pretty(&mut out, &to_json(args, &profile, &report, &warnings))?;
            writeln!(out)?;
        }
        ReportFormat::Csv => write_csv(&mut out, &report)?,
    }
    out.flush()?;
    if let Some(stop) = &profile.stopped {
        eprintln!(
            "culprit: error: {}: reading stopped at byte offset {}: {}; the report covers the \
             {} records read before it",
            args.input.path().display(),
            stop.offset,
            stop.reason,
            stop.records_read
        );
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

/// A key's text as the text report shows it: symbols with their tag, unresolved
/// addresses as `[unknown] DSO+0xOFFSET` (like the hotspot report).
fn key_text(v: &BranchKeyValue) -> String {
    let base = match (v.addr, &v.dso) {
        (Some(a), Some(d)) => format!("[unknown] {d}+{a:#x}"),
        _ => v.text.clone(),
    };
    match v.tag {
        Some(t) => format!("{t} {base}"),
        None => base,
    }
}

fn write_text(
    out: &mut dyn Write,
    args: &ReportArgs,
    profile: &Profile,
    r: &BranchReport,
    tty: bool,
) -> anyhow::Result<()> {
    writeln!(out, "# File: {}", args.input.path().display())?;
    if let Some(c) = &profile.meta.cmdline {
        writeln!(out, "# Command line: {c}")?;
    }
    writeln!(out, "# Total lost samples: {}", profile.lost)?;
    for e in &r.events {
        writeln!(
            out,
            "# Event '{}': {} branch entries (each counts as one sample)",
            e.name, e.samples
        )?;
    }
    let names: Vec<&str> = r.keys.iter().map(|k| k.name()).collect();
    writeln!(out, "# Sort: {}; branch mode", names.join(","))?;
    if r.hidden_rows > 0 {
        writeln!(
            out,
            "# {} rows hidden by --top/--percent-limit",
            r.hidden_rows
        )?;
    }
    writeln!(out, "#")?;
    let multi = r.events.len() > 1;
    let mut header: Vec<String> = Vec::new();
    for e in &r.events {
        let p = if multi {
            format!("{} ", e.name)
        } else {
            String::new()
        };
        header.push(format!("{p}Overhead"));
        header.push(format!("{p}Samples"));
    }
    let ncols_num = header.len();
    header.extend(r.keys.iter().map(|k| k.header().to_string()));
    let lines: Vec<Vec<String>> = r
        .rows
        .iter()
        .map(|row| {
            let mut cells = Vec::new();
            for i in 0..r.events.len() {
                cells.push(format!("{:.2}%", row.percent(i, &r.events)));
                cells.push(row.samples.get(i).copied().unwrap_or(0).to_string());
            }
            cells.extend(row.keys.iter().map(key_text));
            cells
        })
        .collect();
    let mut width: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for l in &lines {
        for (i, c) in l.iter().enumerate() {
            if let Some(w) = width.get_mut(i) {
                *w = (*w).max(c.chars().count());
            }
        }
    }
    let fmt = |cells: &[String]| -> String {
        let mut s = String::new();
        for (i, c) in cells.iter().enumerate() {
            let w = width.get(i).copied().unwrap_or(0);
            let last = i + 1 == cells.len();
            if i < ncols_num {
                s.push_str(&format!("{c:>w$}"));
            } else if last {
                s.push_str(c);
            } else {
                s.push_str(&format!("{c:<w$}"));
            }
            if !last {
                s.push_str("  ");
            }
        }
        s
    };
    writeln!(out, "# {}", fmt(&header))?;
    for (row, cells) in r.rows.iter().zip(&lines) {
        let line = format!("  {}", fmt(cells));
        let hot = row.percent(0, &r.events);
        if tty && hot >= 10.0 {
            writeln!(out, "\x1b[1;31m{line}\x1b[0m")?;
        } else if tty && hot >= 1.0 {
            writeln!(out, "\x1b[33m{line}\x1b[0m")?;
        } else {
            writeln!(out, "{line}")?;
        }
    }
    if r.rows.is_empty() {
        writeln!(out, "# (no branch entries)")?;
    }
    Ok(())
}

/// `{EVENT: value}` for a row.
fn per_event(r: &BranchReport, f: impl Fn(usize) -> Value) -> Value {
    let mut m = Map::new();
    for (i, e) in r.events.iter().enumerate() {
        m.insert(e.name.clone(), f(i));
    }
    Value::Object(m)
}

fn to_json(args: &ReportArgs, profile: &Profile, r: &BranchReport, warnings: &[String]) -> Value {
    let rows: Vec<Value> = r
        .rows
        .iter()
        .map(|row| {
            let mut keys = Map::new();
            for v in &row.keys {
                let name = v.key.name();
                keys.insert(
                    name.to_string(),
                    match v.number {
                        Some(n) => Value::from(n),
                        None => Value::from(v.text.clone()),
                    },
                );
                if let Some(t) = v.tag {
                    keys.insert(format!("{name}_level"), Value::from(t));
                }
                if let Some(a) = v.addr {
                    keys.insert(format!("{name}_addr"), Value::from(format!("{a:#x}")));
                }
                if let Some(d) = &v.dso {
                    keys.insert(format!("{name}_dso"), Value::from(d.clone()));
                }
            }
            serde_json::json!({
                "keys": keys,
                "samples": per_event(r, |i| Value::from(row.samples.get(i).copied().unwrap_or(0))),
                "period": per_event(r, |i| Value::from(row.samples.get(i).copied().unwrap_or(0))),
                "percent": per_event(r, |i| round4(row.percent(i, &r.events))),
            })
        })
        .collect();
    serde_json::json!({
        "file": args.input.path().display().to_string(),
        "mode": "branch",
        "events": r.events.iter().map(|e| serde_json::json!({
            "name": e.name,
            "samples": e.samples,
            "period": e.period,
            "lost": e.lost,
        })).collect::<Vec<_>>(),
        "sort": r.keys.iter().map(|k| k.name()).collect::<Vec<_>>(),
        "children": false,
        "hidden_rows": r.hidden_rows,
        "meta": json_meta(profile),
        "rows": rows,
        "stopped": json_stopped(profile),
        "warnings": warnings,
    })
}

fn write_csv(out: &mut dyn Write, r: &BranchReport) -> anyhow::Result<()> {
    let mut header: Vec<String> = Vec::new();
    for k in &r.keys {
        header.push(k.name().to_string());
        if matches!(k, BranchKey::SymbolFrom | BranchKey::SymbolTo) {
            header.push(format!("{}_level", k.name()));
        }
        if matches!(
            k,
            BranchKey::SymbolFrom
                | BranchKey::SymbolTo
                | BranchKey::SrclineFrom
                | BranchKey::SrclineTo
        ) {
            header.push(format!("{}_addr", k.name()));
        }
    }
    for e in &r.events {
        for c in ["samples", "percent"] {
            header.push(format!("{}:{c}", e.name));
        }
    }
    let line = |f: &[String]| f.iter().map(|x| csv_field(x)).collect::<Vec<_>>().join(",");
    writeln!(out, "{}", line(&header))?;
    for row in &r.rows {
        let mut f: Vec<String> = Vec::new();
        for v in &row.keys {
            f.push(v.text.clone());
            if matches!(v.key, BranchKey::SymbolFrom | BranchKey::SymbolTo) {
                f.push(v.tag.unwrap_or("").to_string());
            }
            if matches!(
                v.key,
                BranchKey::SymbolFrom
                    | BranchKey::SymbolTo
                    | BranchKey::SrclineFrom
                    | BranchKey::SrclineTo
            ) {
                f.push(v.addr.map(|a| format!("{a:#x}")).unwrap_or_default());
            }
        }
        for i in 0..r.events.len() {
            f.push(row.samples.get(i).copied().unwrap_or(0).to_string());
            f.push(format!("{:.4}", row.percent(i, &r.events)));
        }
        writeln!(out, "{}", line(&f))?;
    }
    Ok(())
}
