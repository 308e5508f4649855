//! `culprit report --branch`: perf's branch mode (`perf report --branch-stack`). Every
//! branch-stack entry counts as one sample of period 1; rows group the entries by keys of
//! the branch's source and target (docs/report.md, "Branch mode").

use anyhow::Context;
use culprit_analysis::branches::{
    branch_report, BranchAggregator, BranchKey, BranchOptions, DEFAULT_BRANCH_SORT,
};
use culprit_analysis::{CallGraphMode, Filters};
use culprit_symbols::ReadPlan;

use super::{read_warnings, stopped, Format, Report, ReportOptions, View, DEFAULT_SORT};
use crate::progress::Progress;

/// Runs `culprit report --branch`.
pub(super) fn run(opts: &ReportOptions) -> anyhow::Result<Report> {
    let sort = if opts.sort == DEFAULT_SORT {
        DEFAULT_BRANCH_SORT
    } else {
        opts.sort.as_str()
    };
    anyhow::ensure!(
        opts.filters.dsos.is_empty()
            && opts.children != Some(true)
            && !opts.deskid
            && !opts.topdown,
        "--branch groups branch entries: --dso, --children, --deskid and --topdown do not apply"
    );
    anyhow::ensure!(
        matches!(opts.call_graph, None | Some(CallGraphMode::None)),
        "--branch groups branch entries: there are no call graphs (-g)"
    );
    let keys = BranchKey::parse_list(sort).context("error parsing flag --sort")?;
    anyhow::ensure!(!keys.is_empty(), "--sort needs at least one key");
    let filters = Filters {
        dsos: Vec::new(),
        ..opts.filters.clone()
    };
    let mut agg = BranchAggregator::new(&keys, &filters);
    let input = opts.first_input();
    let path = input.path().display().to_string();
    // Branch mode never looks at call chains.
    let plan = ReadPlan {
        skip_callchains: true,
        ..ReadPlan::default()
    };
    let bar = Progress::for_input(&input);
    let profile = input.for_each(&plan, bar.callback(), |p, s| agg.add(p, s))?;
    bar.finish();
    if !profile
        .events
        .iter()
        .any(|e| e.sample_type & culprit_decode::abi::sample_type::BRANCH_STACK != 0)
    {
        anyhow::bail!(
            "{path}: no event of the file has branch stacks (record with `perf record -b` or \
             `--call-graph lbr`)",
        );
    }
    let mut symbolizer = input.symbolizer();
    let report = branch_report(
        &profile,
        &agg,
        &mut symbolizer,
        &BranchOptions {
            events: opts.events.clone(),
            percent_limit: opts.percent_limit,
            top: opts.top,
            sort_event: opts.sort_event.clone(),
            per_event: opts.format == Format::Text && !opts.group,
        },
    )?;
    let warnings = read_warnings(&profile, &symbolizer);
    let outcome = "the report covers what was read before it".to_string();
    Ok(Report {
        warnings,
        stopped: stopped(&profile, &path, outcome),
        view: View::Branch {
            report,
            profile,
            file: path,
            layout: opts.layout(),
        },
        after: Vec::new(),
    })
}
