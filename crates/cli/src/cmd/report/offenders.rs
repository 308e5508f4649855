//! `culprit report --offenders`: the paired-sampling detector over a recording
//! (`culprit_analysis::offenders::report`), as text or JSON (docs/offenders.md,
//! docs/schemas/report-offenders.schema.json). Flags of the hotspot report that do not apply
//! are refused.

use std::io::Write;
use std::process::ExitCode;

use culprit_analysis::offenders::report::{ReportBuilder, ReportOptions};
use culprit_analysis::offenders::Settings;
use culprit_symbols::ReadPlan;

use super::ReportArgs;
use crate::args::Format;
use culprit_verbs::progress::Progress;

/// The `--sort` default of the hotspot report (the offenders are per address: no keys).
const HOTSPOT_DEFAULT_SORT: &str = "comm,dso,sym";

/// The hotspot report's flags given with `--offenders`, which do not apply to it.
fn inapplicable(args: &ReportArgs) -> Vec<&'static str> {
    let mut v = Vec::new();
    let mut check = |given: bool, flag: &'static str| {
        if given {
            v.push(flag);
        }
    };
    check(args.sort != HOTSPOT_DEFAULT_SORT, "--sort");
    check(args.children, "--children");
    check(args.no_children, "--no-children");
    check(args.call_graph.is_some(), "--call-graph");
    check(args.top.is_some(), "--top");
    check(args.percent_limit != 0.0, "--percent-limit");
    check(!args.pid.is_empty(), "--pid");
    check(!args.tid.is_empty(), "--tid");
    check(!args.comm.is_empty(), "--comm");
    check(!args.dso.is_empty(), "--dso");
    check(args.deskid, "--deskid");
    check(args.topdown, "--topdown");
    check(args.branch, "--branch");
    check(args.no_unwind, "--no-unwind");
    check(args.sort_event.is_some(), "--sort-event");
    check(args.group, "--group");
    v
}

/// Runs `culprit report --offenders`.
pub fn run(args: &ReportArgs) -> anyhow::Result<ExitCode> {
    if args.output.format == Format::Csv {
        anyhow::bail!("report --offenders has no --format csv (it writes text, json)");
    }
    let flags = inapplicable(args);
    if !flags.is_empty() {
        anyhow::bail!(
            "{} {} not apply to --offenders (it ranks addresses per event: -e, --t1, --t2, \
             --offenders-unit and --exact choose what it reports)",
            flags.join(", "),
            if flags.len() == 1 { "does" } else { "do" }
        );
    }
    let mut builder = ReportBuilder::new(ReportOptions {
        events: args.event.clone(),
        settings: Settings {
            t1: args.t1,
            t2: args.t2,
            unit: args.offenders_unit.into(),
        },
        exact: args.exact,
    })?;
    let input_args = args.first_input();
    let input = input_args.open();
    let bar = Progress::for_input(&input);
    let profile = input.for_each(&ReadPlan::default(), bar.callback(), |p, s| {
        builder.sample(p, s)
    })?;
    bar.finish();
    let mut sym = input.symbolizer();
    let report = builder.finish(&profile, &mut sym, &input.path().display().to_string())?;
    let mut out = args.output.writer()?;
    if args.output.format == Format::Json {
        culprit_output::json::write(&mut out, &report)?;
    } else {
        let text = args.output.text_options();
        culprit_output::text::write(&mut out, &report.document(), &text)?;
    }
    out.flush()?;
    culprit_output::text::write_notes(&mut std::io::stderr().lock(), &report.notes, false)?;
    if let Some(stop) = &profile.stopped {
        let path = input.path().display().to_string();
        let outcome = "the report covers what was read before it";
        return Ok(culprit_verbs::stopped::report(
            &path,
            &stop.describe(),
            outcome,
        ));
    }
    Ok(ExitCode::SUCCESS)
}
