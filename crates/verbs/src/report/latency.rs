//! `culprit report --latency` (and `--sort latency|parallelism`, `--parallelism=RANGE`):
//! Latency (wall-clock) and Overhead (CPU) side by side, with perf 6.15's semantics
//! (`culprit_analysis::parallelism`; docs/wall-clock.md). Text, JSON or CSV.

use culprit_analysis::parallelism::{self, LatencyKey, LatencyReportOptions};
use culprit_symbols::ReadPlan;

use super::{stopped, Format, Report, ReportOptions, View};

/// Whether the options ask for the latency report.
pub(super) fn wanted(opts: &ReportOptions) -> bool {
    opts.latency
        || opts.parallelism.is_some()
        || opts
            .sort
            .split(',')
            .any(|k| matches!(k.trim(), "latency" | "parallelism"))
}

/// The keys and the ordering of the sort keys (`latency`/`overhead` order the rows; the
/// rest are keys; none left: comm,dso,sym).
fn keys(opts: &ReportOptions) -> anyhow::Result<(Vec<LatencyKey>, bool)> {
    let mut by_latency = opts.latency;
    let mut keys = Vec::new();
    for name in opts
        .sort
        .split(',')
        .map(str::trim)
        .filter(|k| !k.is_empty())
    {
        match name {
            "latency" => by_latency = true,
            "overhead" => by_latency = false,
            other => keys.push(LatencyKey::parse(other).ok_or_else(|| {
                anyhow::anyhow!(
                    "--sort {other}: the latency report's keys are comm, pid, tid, dso, sym, \
                     parallelism (and latency, overhead to order the rows)"
                )
            })?),
        }
    }
    if keys.is_empty() {
        keys = vec![LatencyKey::Comm, LatencyKey::Dso, LatencyKey::Sym];
    }
    Ok((keys, by_latency))
}

/// Runs the latency report.
pub(super) fn run(opts: &ReportOptions) -> anyhow::Result<Report> {
    let (keys, by_latency) = keys(opts)?;
    let ranges = opts
        .parallelism
        .as_deref()
        .map(parallelism::parse_ranges)
        .transpose()
        .map_err(|e| anyhow::anyhow!("--parallelism {e}"))?;
    let input = opts.first_input();
    let profile = input.read(&ReadPlan::default())?;
    let event = match opts.events.first() {
        Some(name) => profile
            .events
            .iter()
            .position(|e| &e.name == name)
            .ok_or_else(|| anyhow::anyhow!("no event '{name}' in the file"))?,
        None => profile.samples.first().map_or(0, |s| s.event as usize),
    };
    let mut sym = input.symbolizer();
    let report = parallelism::latency_report(
        &profile,
        &mut sym,
        &LatencyReportOptions {
            keys,
            by_latency,
            parallelism: ranges,
            event: event as _,
        },
    )?;
    let path = input.path().display().to_string();
    // Text says the document's notes on stderr before the report, as the other warnings
    // (JSON and CSV carry none). (Before culprit-verbs they were said once the output was
    // open, so an `-o` that cannot be created now comes after them.)
    let notes = match opts.format {
        Format::Text => report.document(by_latency).notes,
        Format::Json | Format::Csv => Vec::new(),
    };
    let outcome = "the report covers what was read before it".to_string();
    Ok(Report {
        warnings: notes,
        stopped: stopped(&profile, &path, outcome),
        view: View::Latency {
            report,
            by_latency,
            file: path,
        },
        after: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sorted(sort: &str, latency: bool) -> ReportOptions {
        ReportOptions {
            sort: sort.to_string(),
            latency,
            ..ReportOptions::default()
        }
    }

    #[test]
    fn test_wanted_and_keys() {
        assert!(!wanted(&sorted("comm,dso,sym", false)));
        assert!(wanted(&sorted("comm, latency", false)));
        assert!(wanted(&sorted("parallelism", false)));
        assert!(wanted(&sorted("comm", true)));
        let (k, by_latency) = keys(&sorted("latency,pid", false)).unwrap();
        assert_eq!(k, vec![LatencyKey::Pid]);
        assert!(by_latency);
        let (k, by_latency) = keys(&sorted("overhead", true)).unwrap();
        assert_eq!(k, vec![LatencyKey::Comm, LatencyKey::Dso, LatencyKey::Sym]);
        assert!(!by_latency);
        let e = keys(&sorted("srcline", true)).unwrap_err().to_string();
        assert!(
            e.starts_with("--sort srcline: the latency report's keys"),
            "{e}"
        );
    }
}
