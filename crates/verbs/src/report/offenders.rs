//! `culprit report --offenders`: the paired-sampling detector over a recording
//! (`culprit_analysis::offenders::report`), as text or JSON (docs/offenders.md,
//! docs/schemas/report-offenders.schema.json). Options of the hotspot report that do not
//! apply are refused.

use culprit_analysis::offenders::report::{ReportBuilder, ReportOptions as BuilderOptions};
use culprit_symbols::ReadPlan;

use super::{stopped, Format, Report, ReportOptions, View, DEFAULT_SORT};
use crate::progress::Progress;

/// The hotspot report's flags given with `--offenders`, which do not apply to it.
fn inapplicable(opts: &ReportOptions) -> Vec<&'static str> {
    let mut v = Vec::new();
    let mut check = |given: bool, flag: &'static str| {
        if given {
            v.push(flag);
        }
    };
    check(opts.sort != DEFAULT_SORT, "--sort");
    check(opts.children == Some(true), "--children");
    check(opts.children == Some(false), "--no-children");
    check(opts.call_graph.is_some(), "--call-graph");
    check(opts.top.is_some(), "--top");
    check(opts.percent_limit != 0.0, "--percent-limit");
    check(!opts.filters.pids.is_empty(), "--pid");
    check(!opts.filters.tids.is_empty(), "--tid");
    check(!opts.filters.comms.is_empty(), "--comm");
    check(!opts.filters.dsos.is_empty(), "--dso");
    check(opts.deskid, "--deskid");
    check(opts.topdown, "--topdown");
    check(opts.branch, "--branch");
    check(opts.no_unwind, "--no-unwind");
    check(opts.sort_event.is_some(), "--sort-event");
    check(opts.group, "--group");
    v
}

/// Runs `culprit report --offenders`.
pub(super) fn run(opts: &ReportOptions) -> anyhow::Result<Report> {
    if opts.format == Format::Csv {
        anyhow::bail!("report --offenders has no --format csv (it writes text, json)");
    }
    let flags = inapplicable(opts);
    if !flags.is_empty() {
        anyhow::bail!(
            "{} {} not apply to --offenders (it ranks addresses per event: -e, --t1, --t2, \
             --offenders-unit and --exact choose what it reports)",
            flags.join(", "),
            if flags.len() == 1 { "does" } else { "do" }
        );
    }
    let mut builder = ReportBuilder::new(BuilderOptions {
        events: opts.events.clone(),
        settings: opts.offender_settings,
        exact: opts.exact,
    })?;
    let input = opts.first_input();
    let bar = Progress::for_input(&input);
    let profile = input.for_each(&ReadPlan::default(), bar.callback(), |p, s| {
        builder.sample(p, s)
    })?;
    bar.finish();
    let mut sym = input.symbolizer();
    let path = input.path().display().to_string();
    let report = builder.finish(&profile, &mut sym, &path)?;
    let outcome = "the report covers what was read before it".to_string();
    Ok(Report {
        warnings: Vec::new(),
        // Said after the report.
        after: report.notes.clone(),
        view: View::Offenders(report),
        stopped: stopped(&profile, &path, outcome),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use culprit_analysis::CallGraphMode;

    #[test]
    fn test_inapplicable() {
        assert!(inapplicable(&ReportOptions::default()).is_empty());
        let opts = ReportOptions {
            sort: "sym".into(),
            children: Some(false),
            call_graph: Some(CallGraphMode::None),
            top: Some(3),
            ..ReportOptions::default()
        };
        assert_eq!(
            inapplicable(&opts),
            ["--sort", "--no-children", "--call-graph", "--top"]
        );
    }
}
