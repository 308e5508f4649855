//! `culprit report --branch`: perf's branch mode (`perf report --branch-stack`). Every
//! branch-stack entry counts as one sample of period 1; rows group the entries by keys of
//! the branch's source and target (docs/report.md, "Branch mode").

use std::io::Write;
use std::process::ExitCode;

use anyhow::Context;
use culprit_analysis::branches::{
    branch_csv_table, branch_document, branch_json, branch_report, BranchAggregator, BranchKey,
    BranchOptions, DEFAULT_BRANCH_SORT,
};
use culprit_analysis::hotspots::{DocOptions, Layout};
use culprit_analysis::Filters;
use culprit_output::Note;
use culprit_symbols::ReadPlan;

use super::ReportArgs;
use crate::args::Format;
use culprit_verbs::progress::Progress;

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
        matches!(args.call_graph, None | Some(super::CallGraphArg::None)),
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
    let input_args = args.first_input();
    let input = input_args.open();
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
            "{}: no event of the file has branch stacks (record with `perf record -b` or \
             `--call-graph lbr`)",
            input_args.path().display()
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
            sort_event: args.sort_event.clone(),
            per_event: args.output.format == Format::Text && !args.group,
        },
    )?;
    let mut notes: Vec<Note> = profile
        .warnings
        .iter()
        .chain(symbolizer.warnings())
        .map(Note::warning)
        .collect();
    culprit_output::text::write_notes(&mut std::io::stderr(), &notes, false)?;
    let file = input_args.path().display().to_string();
    let mut out = args.output.writer()?;
    match args.output.format {
        Format::Text => {
            let layout = if args.group {
                Layout::Group
            } else {
                Layout::PerEvent
            };
            let doc = branch_document(&report, &profile, &DocOptions { file, layout });
            culprit_output::text::write(&mut out, &doc, &args.output.text_options())?;
        }
        Format::Json => {
            let warnings = notes.drain(..).map(|n| n.text).collect();
            culprit_output::json::write(
                &mut out,
                &branch_json(&report, &profile, &file, warnings),
            )?;
        }
        Format::Csv => culprit_output::csv::write(&mut out, &branch_csv_table(&report))?,
    }
    out.flush()?;
    if let Some(stop) = &profile.stopped {
        let path = input_args.path().display().to_string();
        let outcome = "the report covers what was read before it";
        return Ok(culprit_verbs::stopped::report(
            &path,
            &stop.describe(),
            outcome,
        ));
    }
    Ok(ExitCode::SUCCESS)
}
