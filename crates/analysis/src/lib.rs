//! culprit-analysis: pure analyses over the sample model (hotspots, call trees, …).
//!
//! [`hotspots`] groups a [`Profile`](culprit_decode::model::Profile)'s samples by any list of
//! [`SortKey`]s, per event, with self and children periods and call graphs, matching
//! `perf report`'s numbers (see the [`hotspots`](mod@hotspots) module for the exact rules).
//! Symbols come from a [`culprit_symbols::Symbolizer`]; nothing here reads `/proc` or the
//! perf.data file itself.
#![deny(missing_docs)]

pub mod annotate;
pub mod branches;
mod fxhash;
pub mod hotspots;
pub mod ibs;
pub mod metrics;
pub mod offenders;
pub mod skid;
pub mod topdown;

pub use hotspots::{
    hotspots, pct, CallGraphMode, CallNode, EventTotals, Filters, HotspotOptions, Hotspots,
    KeyValue, Row,
};

/// Errors of the analyses.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AnalysisError {
    /// A sort key name that culprit does not know.
    #[error("unknown sort key '{0}' (known: comm, pid, tid, dso, sym, srcline, srcfile, ip, cpu)")]
    UnknownSortKey(String),
    /// `-e` named no event of the file.
    #[error("no event '{wanted}' in the file (events: {})", available.join(", "))]
    UnknownEvent {
        /// What was asked for.
        wanted: String,
        /// The file's events.
        available: Vec<String>,
    },
}

/// What rows are grouped by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SortKey {
    /// Command name.
    Comm,
    /// Process id.
    Pid,
    /// Thread id.
    Tid,
    /// Shared object (short name).
    Dso,
    /// Function (per DSO); unresolved addresses by address.
    Sym,
    /// Source `file:line` of the sampled instruction (innermost inline frame).
    Srcline,
    /// Source file of the sampled instruction.
    Srcfile,
    /// Instruction address as the ELF file states it (SVMA), per DSO.
    Ip,
    /// CPU number.
    Cpu,
}

impl SortKey {
    /// The key's name as used on the command line and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            SortKey::Comm => "comm",
            SortKey::Pid => "pid",
            SortKey::Tid => "tid",
            SortKey::Dso => "dso",
            SortKey::Sym => "sym",
            SortKey::Srcline => "srcline",
            SortKey::Srcfile => "srcfile",
            SortKey::Ip => "ip",
            SortKey::Cpu => "cpu",
        }
    }

    /// Parses a comma-separated key list (`comm,dso,sym`); perf's `symbol` spelling works too.
    pub fn parse_list(s: &str) -> Result<Vec<SortKey>, AnalysisError> {
        s.split(',')
            .map(str::trim)
            .filter(|k| !k.is_empty())
            .map(|k| match k {
                "comm" => Ok(SortKey::Comm),
                "pid" => Ok(SortKey::Pid),
                "tid" => Ok(SortKey::Tid),
                "dso" => Ok(SortKey::Dso),
                "sym" | "symbol" => Ok(SortKey::Sym),
                "srcline" => Ok(SortKey::Srcline),
                "srcfile" => Ok(SortKey::Srcfile),
                "ip" => Ok(SortKey::Ip),
                "cpu" => Ok(SortKey::Cpu),
                other => Err(AnalysisError::UnknownSortKey(other.to_string())),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests;
