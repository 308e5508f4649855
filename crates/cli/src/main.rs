//! The `culprit` binary: argument parsing, dispatch and printing. The work is done by the
//! library crates (collect, decode, symbols, analysis).

mod alloc;
mod args;
mod cmd;
mod help;
mod pager;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// The system allocator with huge pages for large blocks (see `alloc`).
#[global_allocator]
static GLOBAL: alloc::HugePages = alloc::HugePages;

/// culprit: a precise sampling profiler for Linux.
///
/// Finds which instruction is the culprit of a performance problem, and why.
#[derive(Parser, Debug)]
#[command(name = "culprit", version,
    about = "culprit: a precise sampling profiler for Linux. Finds which instruction is the culprit of a performance problem, and why.",
    long_about = None,
    after_help = crate::help::layout("EXAMPLES:\n  culprit demo                              record and report the shipped matrix-multiply example\n  culprit record -e cpu-clock -g -- ./prog  sample with call chains (any machine)\n  culprit record -e cycles,instructions -- ./prog   hardware events (needs a PMU: see culprit list)\n  culprit report -i perf.data --sort dso,sym\n  culprit list"))]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Sample a command, processes (-p) or the whole system (-a) into a perf.data file.
    Record(cmd::record::RecordArgs),
    /// Hotspot report from a perf.data file (culprit's or perf's).
    Report(cmd::report::ReportArgs),
    /// Count events (perf stat), with Top-Down bottleneck analysis (--topdown).
    Stat(cmd::stat::StatArgs),
    /// Per-instruction annotated disassembly, one column per event, with skid estimates.
    Annotate(cmd::annotate::AnnotateArgs),
    /// Lock contention (perf lock): kernel locks and futex waits, with call sites.
    Lock(cmd::lock::LockArgs),
    /// Scheduling delay (perf sched): record the scheduler, per-task latency, history.
    Sched(cmd::sched::SchedArgs),
    /// One line (or JSON object) per sample, with decoded IBS/PEBS fields.
    Script(cmd::script::ScriptArgs),
    /// IBS fetch/op/data-centric reports from a perf.data file.
    Ibs(cmd::ibs::IbsArgs),
    /// DTrace-style probes, predicates and aggregations over samples (files or live).
    Trace(cmd::trace::TraceArgs),
    /// What this machine can measure: PMUs, events, capabilities.
    List(cmd::list::ListArgs),
    /// Build the shipped example workload, record it with several events and report it.
    Demo(cmd::demo::DemoArgs),
    /// Live view of the hottest functions per event (perf top), with worst offenders.
    Top(cmd::top::TopArgs),
    /// Difference of two perf.data files (perf diff): baseline, delta and ratio per row.
    Diff(cmd::diff::DiffArgs),
    /// Export a perf.data file to folded stacks and other tools' formats.
    Export(cmd::export::ExportArgs),
    /// Flame graph (SVG) of a perf.data file, or the differential graph of two.
    Flamegraph(cmd::flamegraph::FlameGraphArgs),
    /// Offline HTML report: hot functions, flame graph, call trees, annotate, diff.
    Html(cmd::html::HtmlArgs),
    /// Pack the objects a recording's samples need, by build-id, to report it elsewhere.
    Archive(cmd::archive::ArchiveArgs),
    /// SQL over Parquet exports (Apache DataFusion), with named queries for fleets.
    #[cfg(feature = "sql")]
    Sql(cmd::sql::SqlArgs),
    /// (Not in this build: `cargo build --release --features sql` adds it.)
    #[cfg(not(feature = "sql"))]
    #[command(hide = true, disable_help_flag = true)]
    Sql {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<std::ffi::OsString>,
    },
}

fn run() -> anyhow::Result<ExitCode> {
    let cli = Cli::parse();
    match cli.command {
        Command::Record(args) => cmd::record::run(args),
        Command::Report(args) => cmd::report::run(args),
        Command::Stat(args) => cmd::stat::run(args),
        Command::Annotate(args) => cmd::annotate::run(args),
        Command::Lock(args) => cmd::lock::run(args),
        Command::Sched(args) => cmd::sched::run(args),
        Command::Script(args) => cmd::script::run(args),
        Command::Ibs(args) => cmd::ibs::run(args),
        Command::Trace(args) => cmd::trace::run(args),
        Command::List(args) => cmd::list::run(args),
        Command::Demo(args) => cmd::demo::run(args),
        Command::Top(args) => cmd::top::run(args),
        Command::Diff(args) => cmd::diff::run(args),
        Command::Export(args) => cmd::export::run(args),
        Command::Flamegraph(args) => cmd::flamegraph::run(args),
        Command::Html(args) => cmd::html::run(args),
        Command::Archive(args) => cmd::archive::run(args),
        #[cfg(feature = "sql")]
        Command::Sql(args) => cmd::sql::run(args),
        #[cfg(not(feature = "sql"))]
        Command::Sql { .. } => anyhow::bail!(
            "this culprit was built without `culprit sql` (Apache DataFusion, a long build): \
             build it with `cargo build --release --features sql` (README, docs/fleet.md)"
        ),
    }
}

fn main() -> ExitCode {
    match run() {
        Ok(code) => code,
        Err(err) => {
            // A closed pipe (`culprit report | head`) is not an error.
            for cause in err.chain() {
                if let Some(io) = cause.downcast_ref::<std::io::Error>() {
                    if io.kind() == std::io::ErrorKind::BrokenPipe {
                        return ExitCode::SUCCESS;
                    }
                }
            }
            // Names in the message are escaped; its own line breaks (a caret under a
            // program's error) are kept.
            let text = error_text(&err);
            let lines: Vec<_> = text.split('\n').map(culprit_output::text::escape).collect();
            eprintln!("culprit: error: {}", lines.join("\n"));
            // A file of malformed samples only is damaged data (1, as a truncated file),
            // not a usage or I/O error (2).
            let damaged = err.chain().any(|cause| {
                let decode = cause
                    .downcast_ref::<culprit_decode::ReadError>()
                    .map(|r| &r.error)
                    .or_else(|| cause.downcast_ref::<culprit_decode::DecodeError>());
                matches!(
                    decode,
                    Some(culprit_decode::DecodeError::AllSamplesMalformed(_))
                )
            });
            ExitCode::from(if damaged { 1 } else { 2 })
        }
    }
}

/// The error and its causes joined by ": ", each text once: an error type that prints its
/// source in its own message (`cannot write x: No such file…`) and also returns it from
/// `source()` would otherwise show the cause twice.
fn error_text(err: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in err.chain() {
        let cause = cause.to_string();
        if text.contains(&cause) {
            continue;
        }
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&cause);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An error whose message holds its source's, as thiserror's `"…: {source}"` makes it.
    #[derive(Debug)]
    struct Doubled {
        source: std::io::Error,
    }

    impl std::fmt::Display for Doubled {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "cannot write out.data: {}", self.source)
        }
    }

    impl std::error::Error for Doubled {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.source)
        }
    }

    #[test]
    fn test_error_text_names_each_cause_once() {
        let io = std::io::Error::from(std::io::ErrorKind::NotFound);
        let reason = io.to_string();
        let err = anyhow::Error::new(Doubled { source: io }).context("recording failed");
        assert_eq!(
            error_text(&err),
            format!("recording failed: cannot write out.data: {reason}")
        );
    }
    use clap::CommandFactory;

    #[test]
    fn test_every_verbs_examples_fit_80_columns() {
        use clap::CommandFactory;
        fn check(cmd: &clap::Command, path: &str, checked: &mut usize) {
            for sub in cmd.get_subcommands() {
                let path = format!("{path} {}", sub.get_name());
                if let Some(after) = sub.get_after_help() {
                    for line in after.to_string().lines() {
                        assert!(
                            line.chars().count() <= help::WIDTH,
                            "`{path} --help`: {} columns: {line}",
                            line.chars().count()
                        );
                    }
                    *checked += 1;
                }
                check(sub, &path, checked);
            }
        }
        let mut checked = 0;
        check(&Cli::command(), "culprit", &mut checked);
        assert!(checked >= 10, "only {checked} verbs have examples");
    }

    #[test]
    fn test_cli_definition_is_valid() {
        Cli::command().debug_assert();
    }
}
