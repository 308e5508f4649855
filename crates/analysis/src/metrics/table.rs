//! The metrics of a CPU's pmu-events table: picking them by name or group (`-M`), the
//! events they need (following references to other metrics), and their values on counts.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, HashMap};

use culprit_pmu_events::{CpuTable, Metric as TableMetric};
use serde::Serialize;

use super::eval::{self, Env, EvalError};
use super::expr::{self, Expr};

/// Facts about the machine that `#literals` read (perf takes them from sysfs and CPUID).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MachineFacts {
    /// `#smt_on`: SMT siblings are online.
    pub smt_on: bool,
    /// `#num_cpus`: the highest present CPU number + 1.
    pub num_cpus: f64,
    /// `#num_cpus_online`.
    pub num_cpus_online: f64,
    /// `#num_cores`: distinct core sibling lists.
    pub num_cores: f64,
    /// `#num_dies`.
    pub num_dies: f64,
    /// `#num_packages`.
    pub num_packages: f64,
    /// `#system_tsc_freq` in Hz (0 where unknown, as perf off x86).
    pub system_tsc_freq: f64,
    /// `#core_wide`: counting covers whole cores (system-wide, or SMT off).
    pub core_wide: bool,
    /// `#slots`: the CPU's pipeline slots per cycle (sysfs `caps/slots`), 0 when absent.
    pub slots: f64,
    /// `#has_pmem`: an ACPI NFIT table exists.
    pub has_pmem: bool,
    /// The CPU id string (`GenuineIntel-6-8F-8`) that `strcmp_cpuid_str` compares with.
    pub cpuid: String,
}

impl MachineFacts {
    /// The value of a `#literal`, with perf's case rules (`#smt_on` and
    /// `#system_tsc_freq` ignore case, the others do not).
    pub fn literal(&self, name: &str) -> Option<f64> {
        let flag = |b: bool| if b { 1.0 } else { 0.0 };
        if name.eq_ignore_ascii_case("#smt_on") {
            return Some(flag(self.smt_on));
        }
        if name.eq_ignore_ascii_case("#system_tsc_freq") {
            return Some(self.system_tsc_freq);
        }
        Some(match name {
            "#num_cpus" => self.num_cpus,
            "#num_cpus_online" => self.num_cpus_online,
            "#num_cores" => self.num_cores,
            "#num_dies" => self.num_dies,
            "#num_packages" => self.num_packages,
            "#core_wide" => flag(self.core_wide),
            "#slots" => self.slots,
            "#has_pmem" => flag(self.has_pmem),
            _ => return None,
        })
    }
}

/// Counted values by the name the expressions use (`INST_RETIRED.ANY`,
/// `cpu@UOPS_RETIRED.MS,cmask=1@`, `duration_time` in seconds as perf scales it).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Counts {
    /// Value of each counted event; an event that did not count is absent (NaN in metrics).
    pub values: HashMap<String, f64>,
    /// Sources aggregated per event (`source_count`); 1 when absent but counted.
    pub source_counts: HashMap<String, f64>,
}

/// Why `-M` cannot be resolved.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MetricError {
    /// No metric or group of this name in the CPU's table (perf's wording).
    #[error("Cannot find metric or group `{0}'")]
    NotFound(String),
    /// A table expression does not parse.
    #[error("metric `{name}`: {error}")]
    Parse {
        /// The metric.
        name: String,
        /// The parse error.
        error: expr::ParseError,
    },
    /// Evaluating what a metric needs failed (an unknown literal, `% 0`).
    #[error("metric `{name}`: {error}")]
    Eval {
        /// The metric.
        name: String,
        /// The failure.
        error: EvalError,
    },
}

/// perf's `match_metric`: `sought` equals (ignoring case) `names` or one of its
/// `;`-separated parts; `all` matches everything, `No_group` a metric without groups.
pub fn matches(names: &str, sought: &str) -> bool {
    if sought == "all" {
        return true;
    }
    if names.is_empty() {
        return sought.eq_ignore_ascii_case("No_group");
    }
    names.split(';').any(|n| n.eq_ignore_ascii_case(sought))
}

/// The metrics `-M LIST` names (comma-separated metrics or groups), in the table's order,
/// each once. Every item must match something, as in perf.
pub fn select<'t>(table: &'t CpuTable, list: &str) -> Result<Vec<&'t TableMetric>, MetricError> {
    let mut chosen: Vec<&TableMetric> = Vec::new();
    for item in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let found: Vec<&TableMetric> = table
            .metrics
            .iter()
            .filter(|m| matches(m.name, item) || matches(&m.group, item))
            .collect();
        if found.is_empty() {
            return Err(MetricError::NotFound(item.to_string()));
        }
        for m in found {
            if !chosen.iter().any(|c| std::ptr::eq(*c, m)) {
                chosen.push(m);
            }
        }
    }
    let order = |m: &TableMetric| table.metrics.iter().position(|t| std::ptr::eq(t, m));
    chosen.sort_by_key(|m| order(m));
    Ok(chosen)
}

/// A metric's parsed expression (shared by every reference to it), or why it does not parse.
type ParsedExpr = Result<std::rc::Rc<Expr>, expr::ParseError>;

/// The table's Top-Down metric groups down to `level` (1 or 2): Intel's TMA groups
/// (`TopdownL1,TopdownL2`) or AMD's pipeline-utilization groups (`PipelineL1,PipelineL2`),
/// whichever the table has; `None` when it has neither.
pub fn topdown_groups(table: &CpuTable, level: u8) -> Option<String> {
    let has = |g: &str| table.metrics.iter().any(|m| matches(&m.group, g));
    ["TopdownL", "PipelineL"].iter().find_map(|stem| {
        let groups: Vec<String> = (1..=level.max(1)).map(|l| format!("{stem}{l}")).collect();
        groups.iter().all(|g| has(g)).then(|| groups.join(","))
    })
}

/// A CPU table's metrics, parsed on demand, evaluated with references resolved among the
/// metrics of the same PMU (as perf resolves them).
pub struct Metrics<'t> {
    table: &'t CpuTable,
    facts: &'t MachineFacts,
    parsed: RefCell<HashMap<(String, String), ParsedExpr>>,
}

impl<'t> Metrics<'t> {
    /// The metrics of `table` on a machine described by `facts`.
    pub fn new(table: &'t CpuTable, facts: &'t MachineFacts) -> Metrics<'t> {
        Metrics {
            table,
            facts,
            parsed: RefCell::new(HashMap::new()),
        }
    }

    /// The table metric of `pmu` called `name` (case-insensitive).
    fn find(&self, pmu: &str, name: &str) -> Option<&'t TableMetric> {
        self.table
            .metrics
            .iter()
            .find(|m| m.pmu == pmu && m.name.eq_ignore_ascii_case(name))
    }

    fn parse(&self, m: &TableMetric) -> Result<std::rc::Rc<Expr>, MetricError> {
        let key = (m.pmu.to_string(), m.name.to_string());
        let mut cache = self.parsed.borrow_mut();
        cache
            .entry(key)
            .or_insert_with(|| expr::parse(&m.expr).map(std::rc::Rc::new))
            .clone()
            .map_err(|error| MetricError::Parse {
                name: m.name.to_string(),
                error,
            })
    }

    /// The events `metric` needs counted (names as the expressions spell them), following
    /// references to other metrics; constant branches are folded away as perf does.
    pub fn events_needed(&self, metric: &TableMetric) -> Result<BTreeSet<String>, MetricError> {
        let mut events = BTreeSet::new();
        let mut seen = BTreeSet::new();
        self.collect_events(metric, &mut events, &mut seen)?;
        Ok(events)
    }

    fn collect_events(
        &self,
        metric: &TableMetric,
        events: &mut BTreeSet<String>,
        seen: &mut BTreeSet<String>,
    ) -> Result<(), MetricError> {
        if !seen.insert(metric.name.to_ascii_lowercase()) {
            return Ok(());
        }
        let parsed = self.parse(metric)?;
        let env = FactsOnly {
            arch: self.table.row.arch,
            facts: self.facts,
            known: &BTreeSet::new(),
        };
        let names = eval::needed_names(&parsed, &env).map_err(|error| MetricError::Eval {
            name: metric.name.to_string(),
            error,
        })?;
        for name in names {
            match self.find(metric.pmu, &name) {
                Some(referenced) => self.collect_events(referenced, events, seen)?,
                None => {
                    events.insert(name);
                }
            }
        }
        Ok(())
    }

    /// The value of `metric` on `counts`, before its ScaleUnit: NaN when an input is
    /// missing or a division by zero happened; an error when perf's parser would fail.
    pub fn value(&self, metric: &TableMetric, counts: &Counts) -> Result<f64, MetricError> {
        let env = CountsEnv {
            metrics: self,
            pmu: metric.pmu,
            counts,
            active: RefCell::new(vec![metric.name.to_ascii_lowercase()]),
            refs: RefCell::new(BTreeMap::new()),
        };
        let parsed = self.parse(metric)?;
        eval::evaluate(&parsed, &env).map_err(|error| MetricError::Eval {
            name: metric.name.to_string(),
            error,
        })
    }
}

/// The environment for finding needed events: literals only, every name unknown.
struct FactsOnly<'a> {
    arch: &'a str,
    facts: &'a MachineFacts,
    known: &'a BTreeSet<String>,
}

impl Env for FactsOnly<'_> {
    fn value(&self, _: &str) -> Option<f64> {
        None
    }
    fn source_count(&self, _: &str) -> Option<f64> {
        None
    }
    fn literal(&self, name: &str) -> Option<f64> {
        self.facts.literal(name)
    }
    fn has_event(&self, name: &str) -> bool {
        self.known.contains(name)
    }
    fn cpuid_matches(&self, pattern: &str) -> Option<bool> {
        Some(culprit_pmu_events::cpuid_matches(
            self.arch,
            pattern,
            &self.facts.cpuid,
        ))
    }
}

/// The environment for values: counts, literals and referenced metrics (each evaluated
/// once; a reference cycle reads as NaN, as a reference perf cannot compute).
struct CountsEnv<'m, 't> {
    metrics: &'m Metrics<'t>,
    pmu: &'t str,
    counts: &'m Counts,
    active: RefCell<Vec<String>>,
    refs: RefCell<BTreeMap<String, f64>>,
}

impl Env for CountsEnv<'_, '_> {
    fn value(&self, name: &str) -> Option<f64> {
        let Some(referenced) = self.metrics.find(self.pmu, name) else {
            return self.counts.values.get(name).copied();
        };
        let key = referenced.name.to_ascii_lowercase();
        if let Some(v) = self.refs.borrow().get(&key) {
            return Some(*v);
        }
        if self.active.borrow().contains(&key) {
            return None;
        }
        let parsed = self.metrics.parse(referenced).ok()?;
        self.active.borrow_mut().push(key.clone());
        let v = eval::evaluate(&parsed, self).ok();
        self.active.borrow_mut().pop();
        // A referenced metric that fails reads as NaN (perf's resolve_id failing).
        let v = v.unwrap_or(f64::NAN);
        self.refs.borrow_mut().insert(key, v);
        Some(v)
    }
    fn source_count(&self, name: &str) -> Option<f64> {
        self.counts
            .source_counts
            .get(name)
            .copied()
            .or_else(|| self.counts.values.contains_key(name).then_some(1.0))
    }
    fn literal(&self, name: &str) -> Option<f64> {
        self.metrics.facts.literal(name)
    }
    fn has_event(&self, name: &str) -> bool {
        self.counts.values.contains_key(name)
    }
    fn cpuid_matches(&self, pattern: &str) -> Option<bool> {
        Some(culprit_pmu_events::cpuid_matches(
            self.metrics.table.row.arch,
            pattern,
            &self.metrics.facts.cpuid,
        ))
    }
}

/// perf's `perf_pmu__convert_scale` for a ScaleUnit: `100%` → (100, `%`), `1GHz` → (1,
/// `GHz`), `6.103515625e-5MiB` → (6.1e-5, `MiB`); no number → (1, the whole text).
pub fn scale_unit(text: &str) -> (f64, &str) {
    // The longest prefix that parses as a number (strtod's greedy reading).
    let best = text
        .char_indices()
        .map(|(i, c)| i + c.len_utf8())
        .filter_map(|end| text[..end].parse::<f64>().ok().map(|v| (v, end)))
        .rfind(|(v, _)| v.is_finite());
    match best {
        Some((v, n)) => (v, text[n..].trim_start()),
        None => (1.0, text),
    }
}
