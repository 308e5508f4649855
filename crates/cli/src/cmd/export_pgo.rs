//! `culprit export --format bolt|autofdo`: the branch data of a file (LBR branch stacks or
//! IBS op samples) as a profile for BOLT or AutoFDO (docs/export.md, "bolt" and "autofdo").

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;
use culprit_analysis::Filters;
use culprit_export::pgo::{export_pgo, PgoExportOptions, PgoFormat, PgoSummary};

use crate::args::InputArgs;
use crate::progress::Progress;

/// What `culprit export` passes on for a PGO format.
pub struct PgoArgs<'a> {
    /// The input and its symbols.
    pub input: &'a InputArgs,
    /// The format.
    pub format: PgoFormat,
    /// `-o FILE` (`None` or `-`: stdout).
    pub output: Option<&'a Path>,
    /// `-e`: only these events.
    pub events: &'a [String],
    /// `--dso`: the binary.
    pub dso: Option<&'a str>,
    /// `--pids`/`--tids`/`--comms`.
    pub filters: Filters,
    /// `--summary json`: print the summary as JSON on stdout.
    pub json_summary: bool,
    /// `--summary none`: print nothing.
    pub quiet: bool,
}

/// Runs the export; exit status 1 when the input is truncated (what was read is exported).
pub fn run(args: PgoArgs<'_>) -> anyhow::Result<ExitCode> {
    let input = args.input.open();
    let opts = PgoExportOptions {
        format: args.format,
        events: args.events.to_vec(),
        filters: args.filters.clone(),
        dso: args.dso.map(str::to_string),
    };
    let to_stdout = args.output.is_none_or(|p| p.as_os_str() == "-");
    anyhow::ensure!(
        !(to_stdout && args.json_summary),
        "--summary json prints on stdout: give the export a file with -o"
    );
    let bar = Progress::for_input(&input);
    let what = || {
        format!(
            "{}: {} export",
            args.input.path().display(),
            args.format.name()
        )
    };
    let (profile, summary) = if to_stdout {
        let stdout = std::io::stdout();
        let mut out = std::io::BufWriter::new(stdout.lock());
        let r = export_pgo(&input, &opts, &mut out, bar.callback()).with_context(what)?;
        out.flush()?;
        r
    } else {
        let path = args.output.unwrap_or(Path::new("-"));
        let file = std::fs::File::create(path)
            .with_context(|| format!("cannot create {}", path.display()))?;
        let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
        let r = export_pgo(&input, &opts, &mut out, bar.callback()).with_context(what)?;
        out.flush()
            .with_context(|| format!("cannot write {}", path.display()))?;
        r
    };
    bar.finish();
    print_summary(&args, &summary)?;
    if let Some(stop) = &profile.stopped {
        eprintln!(
            "culprit: error: {}: reading stopped at byte offset {}: {}; the export covers the \
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

fn print_summary(args: &PgoArgs<'_>, s: &PgoSummary) -> anyhow::Result<()> {
    let mut err = std::io::stderr();
    for w in &s.warnings {
        writeln!(err, "culprit: warning: {}", culprit_output::text::escape(w))?;
    }
    if args.json_summary {
        #[derive(serde::Serialize)]
        struct Json<'a> {
            schema: u32,
            #[serde(flatten)]
            summary: &'a PgoSummary,
        }
        let mut out = std::io::stdout();
        serde_json::to_writer_pretty(
            &mut out,
            &Json {
                schema: 1,
                summary: s,
            },
        )?;
        writeln!(out)?;
    } else if !args.quiet {
        writeln!(
            err,
            "culprit: {} profile of {} ({} addresses, from {}): {} records, {} taken branches, \
             {} range executions; {} branches outside it left out",
            s.format,
            culprit_output::text::escape(&s.dso),
            s.addresses,
            s.source,
            s.records,
            s.branches,
            s.ranges,
            s.other_branches
        )?;
    }
    Ok(())
}
