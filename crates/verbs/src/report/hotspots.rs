//! The hotspot report of one file (`culprit_analysis::hotspots`), or its Top-Down view:
//! the samples are folded while reading (no `Vec<Sample>`), as `ReadNeeds` plans.

use culprit_analysis::hotspots::{self, hotspots_aggregated, ReadNeeds, SampleAggregator};
use culprit_analysis::time_window::InWindow;
use culprit_analysis::{CallGraphMode, HotspotOptions};
use culprit_decode::model::Profile;
use culprit_output::Note;
use culprit_symbols::{ProfileInput, Symbolizer};

use super::{hotspot_options, read_warnings, stopped, Report, ReportOptions, View};
use crate::progress::Progress;

/// Lets malloc give the report's big buffers back to the OS between phases.
fn tune_allocator() {
    // The report's big buffers live in phases (aggregation tables, symbolization, rows):
    // let malloc give each one back to the OS when it is freed, so that peak RSS follows
    // the live data instead of keeping every freed phase's heap.
    // But do not trim the top of the heap below 8 MiB: the reading threads free and
    // allocate sort buffers every round, and each trim and regrowth of the heap (brk) of a
    // process with two running threads flushes the other core's TLB by an IPI (slow in a VM:
    // 4 of 39 ms of CPU in `--sort comm`).
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only changes allocator tuning; it is called before any of the
    // report's allocations and with valid parameters.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 256 * 1024);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 8 * 1024 * 1024);
    }
}

/// What was read: the profile and the folded samples.
struct Read {
    profile: Profile,
    agg: SampleAggregator,
    symbolizer: Symbolizer,
    mem_mode: bool,
}

/// Reads the input, folding its samples as the report needs them.
fn read(
    opts: &ReportOptions,
    hotspots: &HotspotOptions,
    input: &ProfileInput,
) -> anyhow::Result<Read> {
    // perf's memory mode (a memory key) adds each sample to its own row only: no children.
    // Chains are needed for children (the default when the file has them) and call graphs.
    let needs = ReadNeeds::of(hotspots, opts.children);
    let mut symbolizer = input.symbolizer();
    // Samples are folded while reading (no Vec<Sample>): memory follows distinct places,
    // and a flat report folds away what its keys do not show.
    let mut agg = SampleAggregator::new(needs.with_chains, &hotspots.filters);
    agg.only_for(hotspots);
    // DWARF call chains (`--call-graph dwarf` files): the user part is unwound from the
    // sampled registers and stack while reading; skipped when chains are not used. Every
    // report reads on every core: the shares merge by renumbering places (a children
    // report) or by interning each distinct frame and chain of a share once (call graphs).
    let plan = needs.read_plan(opts.unwind(), true);
    let bar = Progress::for_input(input);
    let window = InWindow {
        window: opts.time.unwrap_or_default(),
        inner: agg,
    };
    let (profile, window) = input.fold(
        &plan,
        needs.shows_symbols.then_some(&mut symbolizer),
        window,
        bar.callback(),
    )?;
    bar.finish();
    Ok(Read {
        profile,
        agg: window.inner,
        symbolizer,
        mem_mode: needs.mem_mode,
    })
}

/// Runs the hotspot report of one file.
pub(super) fn run(opts: &ReportOptions) -> anyhow::Result<Report> {
    tune_allocator();
    let mut hotspots = hotspot_options(opts)?;
    let input = opts.first_input();
    let path = input.path().display().to_string();
    let Read {
        profile,
        mut agg,
        mut symbolizer,
        mem_mode,
    } = read(opts, &hotspots, &input)?;
    if mem_mode
        && !profile
            .events
            .iter()
            .any(|e| e.sample_type & culprit_decode::abi::sample_type::DATA_SRC != 0)
    {
        // As perf --mem-mode: every row would be N/A.
        anyhow::bail!(
            "--sort {}: memory keys read PERF_SAMPLE_DATA_SRC, which no event of {path} recorded \
             (record with `perf mem record` or `perf record -d`)",
            opts.sort,
        );
    }
    agg.finish();
    let has_chains = agg.has_callchains();
    // perf refuses call graphs of a file without call chains; it accepts --children and
    // shows self percentages, which culprit does too, saying so.
    let graph = match opts.call_graph {
        Some(CallGraphMode::Caller) => Some("-g caller"),
        Some(CallGraphMode::Callee) => Some("-g callee"),
        _ => None,
    };
    if let Some(flag) = graph.filter(|_| !has_chains && !mem_mode) {
        anyhow::bail!(
            "{flag} needs call chains, and {path} has none: record with -g (or --call-graph \
             dwarf|lbr)",
        );
    }
    let asked_children = opts.children == Some(true);
    let children_without_chains = (asked_children && !has_chains && !mem_mode).then(|| {
        format!(
            "--children: {path} has no call chains, so children equal self (record with -g for \
             callers' totals)",
        )
    });
    hotspots.children = if opts.children == Some(false) || mem_mode {
        false
    } else {
        asked_children || has_chains
    };
    let bar = Progress::new("symbolizing", 0);
    let report = hotspots_aggregated(
        &profile,
        &agg,
        &mut symbolizer,
        &hotspots,
        &mut bar.callback(),
    )?;
    bar.finish();
    // The rows own their values: free the aggregates before rendering (peak memory).
    drop(agg);
    let mut warnings = read_warnings(&profile, &symbolizer);
    warnings.extend(children_without_chains.map(Note::warning));
    if report.cut_call_paths > 0 {
        warnings.push(Note::warning(format!(
            "{} samples have call chains deeper than {} frames: their call-graph paths were \
             cut there (perf's --max-stack)",
            report.cut_call_paths,
            hotspots::PERF_MAX_STACK
        )));
    }
    let samples: u64 = profile.events.iter().map(|e| e.samples).sum();
    let outcome = format!("the report covers its {samples} samples read before it");
    let stopped = stopped(&profile, &path, outcome);
    let view = if opts.topdown {
        View::Topdown {
            report: culprit_analysis::topdown::sampled_report(&profile, &report),
            keys: report.keys.clone(),
        }
    } else {
        View::Hotspots {
            report,
            profile,
            file: path,
            layout: opts.layout(),
        }
    };
    Ok(Report {
        warnings,
        view,
        after: Vec::new(),
        stopped,
    })
}
