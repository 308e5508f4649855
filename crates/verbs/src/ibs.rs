//! `culprit ibs`: AMD IBS reports of a perf.data file — fetch table, op table (per
//! instruction, source line or function, and per function) and data-centric tables (these
//! also from Intel PEBS memory samples when the file has no IBS), from
//! `culprit_analysis::ibs` over the samples as they are read.

use culprit_analysis::ibs::{IbsFold, IbsReport, IbsRequest};
use culprit_symbols::{ProfileInput, ReadPlan};

use crate::stopped::{render_via, ReadReport};

/// What `culprit ibs` reads and which reports it makes.
#[derive(Debug, Clone)]
pub struct IbsOptions {
    /// The input, with where its symbols are found.
    pub input: ProfileInput,
    /// The reports (none of fetch, op and data: every report the file has samples for),
    /// their row key, killed fetches, and the rows per table.
    pub request: IbsRequest,
}

/// The reports of one input, and how its reading ended.
pub type Ibs = ReadReport<IbsReport>;

/// Reads `options.input` (streamed: the tables are summed per sampled location as the file is
/// read) and makes the reports asked for. Fails when nothing could be read, or the file has
/// neither IBS nor PEBS memory samples.
pub fn ibs(options: &IbsOptions) -> anyhow::Result<Ibs> {
    let input = &options.input;
    let mut fold = IbsFold::new(options.request.options.include_killed);
    let profile = input.for_each(&ReadPlan::default(), |_, _| {}, |p, s| fold.add(p, s))?;
    let mut symbolizer = input.symbolizer();
    let path = input.path().display().to_string();
    let report = fold.report(&profile, &mut symbolizer, &options.request, &path)?;
    Ok(ReadReport::new(report, input, &profile))
}

render_via!(Ibs, |r| r.report);
