//! `culprit list` as a library call: what this machine can measure
//! (`culprit_collect::inventory`: PMUs, generic events tried, capabilities, notes, this CPU's
//! event table), or with `metrics` the metrics and metric groups of this CPU's pmu-events
//! table (`culprit_analysis::metrics::listing`). The caller renders the report: the
//! inventory as a document of aligned sections (`text`), the metrics as lines, either as
//! JSON (docs/schemas/list.schema.json).

use std::io::Write;

use anyhow::Context;
use culprit_analysis::metrics::listing::MetricListing;
use culprit_collect::events::tables::{self, CpuidSource};
use culprit_collect::inventory::{self, Listing};
use culprit_pmu_events::CpuTable;

pub mod text;

/// What `culprit list` lists.
#[derive(Debug, Clone, Default)]
pub struct ListOptions {
    /// Only events, aliases and event-table entries whose name contains this
    /// (case-insensitive); with `metrics`, metrics whose name or group contains it.
    pub filter: Option<String>,
    /// The metrics and metric groups of this CPU's pmu-events table instead of the
    /// inventory (what `culprit stat -M` takes).
    pub metrics: bool,
}

/// What `culprit list` found.
pub enum ListReport {
    /// The machine's inventory (`culprit list [FILTER]`).
    Inventory(Box<Listing>),
    /// This CPU's table's metrics (`culprit list --metrics [FILTER]`).
    Metrics(Box<MetricsReport>),
}

/// `culprit list --metrics`: the table chosen for this CPU, and its metrics by group.
pub struct MetricsReport {
    /// The CPU id the table was looked up by.
    pub cpuid: String,
    /// Where the CPU id came from (`PERF_CPUID`, /proc/cpuinfo, …).
    pub source: CpuidSource,
    /// The table whose mapfile.csv row matches the CPU id, if one does.
    pub table: Option<CpuTable>,
    /// The table's metrics and groups kept by the filter (`None` without a table).
    pub listing: Option<MetricListing>,
}

/// Lists what `opts` asks: the inventory, or this CPU's metrics.
pub fn list(opts: &ListOptions) -> anyhow::Result<ListReport> {
    if !opts.metrics {
        let listing = inventory::collect(opts.filter.as_deref());
        return Ok(ListReport::Inventory(Box::new(listing)));
    }
    let cpu = culprit_collect::sysfs::cpu_identity();
    let (cpuid, source) = tables::system_cpuid(cpu.as_ref())
        .context("--metrics: the CPU id could not be built (set PERF_CPUID)")?;
    let table = tables::table_for(&cpuid);
    let listing = table
        .as_ref()
        .map(|t| culprit_analysis::metrics::listing::listing(t, opts.filter.as_deref()));
    Ok(ListReport::Metrics(Box::new(MetricsReport {
        cpuid,
        source,
        table,
        listing,
    })))
}

impl ListReport {
    /// Writes the report as JSON.
    pub fn write_json(&self, out: &mut dyn Write) -> std::io::Result<()> {
        match self {
            ListReport::Inventory(listing) => culprit_output::json::write(out, &**listing),
            ListReport::Metrics(m) => culprit_output::json::write(out, &m.json()),
        }
    }
}

impl MetricsReport {
    /// The JSON object: the CPU id and its source, the table's model and mapfile.csv row,
    /// the groups and the metrics.
    pub fn json(&self) -> serde_json::Value {
        let table = self.table.as_ref();
        serde_json::json!({
            "cpuid": self.cpuid,
            "cpuid_source": self.source,
            "model": table.map(|t| t.row.model),
            "mapfile_row": table.map(|t| t.row.csv()),
            "groups": self.listing.as_ref().map(|l| &l.groups),
            "metrics": self.listing.as_ref().map(|l| &l.metrics),
        })
    }

    /// The text: which table (or none) matched the CPU id, then the groups and metrics.
    pub fn text_lines(&self) -> Vec<String> {
        let head = match &self.table {
            Some(t) => format!(
                "Metrics of {}: CPU id {} matches mapfile.csv row `{}`",
                t.row.model,
                self.cpuid,
                t.row.csv()
            ),
            None => format!(
                "Metrics: none: no mapfile.csv row matches CPU id {}; perf has no metrics for this CPU either",
                self.cpuid
            ),
        };
        let mut lines = vec![head];
        lines.extend(
            self.listing
                .as_ref()
                .map(|l| l.text_lines())
                .unwrap_or_default(),
        );
        lines
    }
}
