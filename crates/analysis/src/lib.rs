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
pub mod diff;
pub mod fleet;
pub mod hotspots;
pub mod ibs;
pub mod listing;
pub mod lock;
pub mod metrics;
pub mod offenders;
pub mod parallelism;
pub mod pgo;
pub mod recording;
pub mod sched;
pub mod skid;
pub mod stacks;
pub mod stat;
pub mod tables;
pub mod time_window;
pub mod top;
pub mod topdown;
pub mod wakers;

pub use hotspots::{
    hotspots, pct, CallGraphMode, CallNode, EventTotals, Filters, HotspotOptions, Hotspots,
    KeyValue, Row,
};

/// Errors of the analyses.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AnalysisError {
    /// A sort key name that culprit does not know.
    #[error("unknown sort key '{0}' (known: comm, pid, tid, dso, sym, srcline, srcfile, ip, cpu, mem, snoop, tlb, locked, blocked)")]
    UnknownSortKey(String),
    /// `-e` named no event of the file.
    #[error("no event '{wanted}' in the file (events: {})", available.join(", "))]
    UnknownEvent {
        /// What was asked for.
        wanted: String,
        /// The file's events.
        available: Vec<String>,
    },
    /// The file lacks the samples the report needs (the message says which and how to
    /// record them).
    #[error("{0}")]
    NoData(String),
}

impl From<culprit_decode::model::UnknownEvent> for AnalysisError {
    fn from(e: culprit_decode::model::UnknownEvent) -> Self {
        AnalysisError::UnknownEvent {
            wanted: e.wanted,
            available: e.available,
        }
    }
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
    /// Memory access level from PERF_SAMPLE_DATA_SRC (perf's `mem`, "Memory access").
    /// Memory keys put the report in perf's `--mem-mode`: each sample weighs its
    /// PERF_SAMPLE_WEIGHT (1 when 0) instead of its period.
    Mem,
    /// Snoop result (perf's `snoop`).
    Snoop,
    /// Data TLB access (perf's `tlb`, "TLB access").
    Tlb,
    /// Locked access (perf's `locked`).
    Locked,
    /// Blocked access (perf's `blocked`).
    Blocked,
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
            SortKey::Mem => "mem",
            SortKey::Snoop => "snoop",
            SortKey::Tlb => "tlb",
            SortKey::Locked => "locked",
            SortKey::Blocked => "blocked",
        }
    }

    /// Whether the key reads PERF_SAMPLE_DATA_SRC (perf's memory-mode keys).
    pub fn is_memory(self) -> bool {
        matches!(
            self,
            SortKey::Mem | SortKey::Snoop | SortKey::Tlb | SortKey::Locked | SortKey::Blocked
        )
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
                "mem" => Ok(SortKey::Mem),
                "snoop" => Ok(SortKey::Snoop),
                "tlb" => Ok(SortKey::Tlb),
                // perf takes any prefix of a key name; `lock` is the one in common use.
                "locked" | "lock" => Ok(SortKey::Locked),
                "blocked" => Ok(SortKey::Blocked),
                other => Err(AnalysisError::UnknownSortKey(other.to_string())),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests;
