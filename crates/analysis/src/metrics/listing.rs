//! `culprit list --metrics`: a CPU table's metrics by metric group, as `perf list` shows
//! them (groups with their descriptions, each metric with its description), and the JSON
//! model of the same.

use std::collections::BTreeMap;

use culprit_pmu_events::CpuTable;
use serde::Serialize;

/// One metric of the listing.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MetricEntry {
    /// MetricName.
    pub name: String,
    /// The table PMU (`default_core`, `cpu_core`, `cpu_atom`).
    pub pmu: String,
    /// Its metric groups.
    pub groups: Vec<String>,
    /// BriefDescription.
    pub description: String,
    /// The expression, in the tables' stored form.
    pub expr: String,
    /// MetricThreshold, when the table has one.
    pub threshold: Option<String>,
    /// ScaleUnit (`100%`), when the table has one.
    pub scale_unit: Option<String>,
}

/// A metric group of the listing.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GroupEntry {
    /// The group (`TopdownL1`, `PipelineL2`; `No_group` for metrics without one).
    pub name: String,
    /// Its description, when the table has one.
    pub description: Option<String>,
    /// Its metrics' names, in the table's order.
    pub metrics: Vec<String>,
}

/// The listing.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MetricListing {
    /// Groups, sorted by name (case-insensitive, as perf).
    pub groups: Vec<GroupEntry>,
    /// Metrics, in the table's order.
    pub metrics: Vec<MetricEntry>,
}

/// The metrics of `table` whose name or one of whose groups contains `filter`
/// (case-insensitive), with their groups.
pub fn listing(table: &CpuTable, filter: Option<&str>) -> MetricListing {
    let filter = filter.map(str::to_ascii_lowercase);
    let keep = |text: &str| {
        filter
            .as_ref()
            .is_none_or(|f| text.to_ascii_lowercase().contains(f.as_str()))
    };
    let mut groups: BTreeMap<String, GroupEntry> = BTreeMap::new();
    let mut metrics = Vec::new();
    for m in &table.metrics {
        let names: Vec<String> = m
            .group
            .split(';')
            .filter(|g| !g.is_empty())
            .map(str::to_string)
            .collect();
        if !keep(m.name) && !names.iter().any(|g| keep(g)) {
            continue;
        }
        let shown = if names.is_empty() {
            vec!["No_group".to_string()]
        } else {
            names.clone()
        };
        for g in shown {
            let entry = groups
                .entry(g.to_ascii_lowercase())
                .or_insert_with(|| GroupEntry {
                    description: table
                        .metric_groups
                        .iter()
                        .find(|(n, _)| *n == g)
                        .map(|(_, d)| d.to_string()),
                    name: g,
                    metrics: Vec::new(),
                });
            if !entry.metrics.iter().any(|n| n == m.name) {
                entry.metrics.push(m.name.to_string());
            }
        }
        metrics.push(MetricEntry {
            name: m.name.to_string(),
            pmu: m.pmu.to_string(),
            groups: names,
            description: m.description.to_string(),
            expr: m.expr.to_string(),
            threshold: (!m.threshold.is_empty()).then(|| m.threshold.to_string()),
            scale_unit: (!m.scale_unit.is_empty()).then(|| m.scale_unit.to_string()),
        });
    }
    MetricListing {
        groups: groups.into_values().collect(),
        metrics,
    }
}

impl MetricListing {
    /// perf list's text: each group (`TopdownL1: [description]`), then its metrics with
    /// their descriptions in brackets.
    pub fn text_lines(&self) -> Vec<String> {
        let mut out = Vec::new();
        for g in &self.groups {
            out.push(String::new());
            out.push(match &g.description {
                Some(d) => format!("{}: [{d}]", g.name),
                None => format!("{}:", g.name),
            });
            for name in &g.metrics {
                out.push(format!("  {name}"));
                if let Some(m) = self.metrics.iter().find(|m| &m.name == name) {
                    if !m.description.is_empty() {
                        out.push(format!("       [{}]", m.description));
                    }
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zen4_pipeline_groups_and_filter() {
        let table = culprit_pmu_events::Tables::get()
            .unwrap()
            .model("x86/amdzen4")
            .unwrap();
        let l = listing(&table, Some("pipelinel1"));
        let names: Vec<&str> = l.groups.iter().map(|g| g.name.as_str()).collect();
        assert!(names.contains(&"PipelineL1"), "{names:?}");
        assert!(l.metrics.iter().any(|m| m.name == "frontend_bound"));
        assert!(l
            .metrics
            .iter()
            .all(|m| m.groups.iter().any(|g| g == "PipelineL1")));
        let text = l.text_lines();
        assert!(text.iter().any(|t| t == "  frontend_bound"));
        assert!(listing(&table, Some("no-such-metric-xyz"))
            .metrics
            .is_empty());
    }
}
