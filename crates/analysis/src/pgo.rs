//! Branch profiles for profile-guided optimizers (`culprit export --format bolt|autofdo`):
//! taken branches and straight-line ranges aggregated from LBR branch stacks
//! (PERF_SAMPLE_BRANCH_STACK) and from AMD IBS op samples.
//!
//! Addresses are kept as [`CodeAddr`]: the DSO and the file offset in it (the address itself
//! for the kernel and for addresses in no mapping), so that the samples of every process that
//! ran a binary add up whatever its load address.
//!
//! - **LBR**: every entry of a branch stack is one taken branch `from → to` (with its
//!   mispredicted bit). Two consecutive entries also give a straight-line range: the older
//!   branch's target up to the next branch's source executed without a taken branch (what
//!   BOLT calls a fall-through and AutoFDO a range). A range is kept only when both ends are
//!   in the same DSO, it runs forwards and it is shorter than [`MAX_RANGE`] (LBR filtering
//!   or an interrupt between the two branches makes other pairs meaningless); the others
//!   are counted in [`PgoStats::ranges_dropped`].
//! - **IBS op**: every op sample with a valid IbsOpRip is one sampled op at that address
//!   ([`PgoProfile::ops`]); a retired taken branch with IbsBrTarget is one taken branch. IBS
//!   gives the target as an address only: culprit places it in the branch's own mapping (the
//!   same DSO at the same load bias), which holds for the branches inside a DSO; an exporter
//!   checks that the offset falls in the DSO's code and leaves the others out.

use std::collections::{BTreeMap, HashMap};

use culprit_decode::ibs::{self, IbsContext, IbsKind};
use culprit_decode::model::{DsoId, EventId, Location, Profile, Sample};

use crate::hotspots::Filters;
use crate::AnalysisError;

/// Longest straight-line range kept (bytes between a branch target and the next branch).
pub const MAX_RANGE: u64 = 64 * 1024;

/// A code address as a DSO and a file offset in it (see the module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CodeAddr {
    /// The DSO; `None` for an address in no mapping.
    pub dso: Option<DsoId>,
    /// File offset in the DSO (the address itself for the kernel and unmapped addresses).
    pub offset: u64,
}

impl From<Location> for CodeAddr {
    fn from(l: Location) -> CodeAddr {
        CodeAddr {
            dso: l.dso,
            offset: l.file_offset,
        }
    }
}

/// How often one taken branch was seen.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BranchCount {
    /// Times taken.
    pub count: u64,
    /// Of those, times mispredicted.
    pub mispredicted: u64,
}

/// Where the branch data of a profile came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BranchSource {
    /// No branch data.
    #[default]
    None,
    /// LBR branch stacks only.
    Lbr,
    /// IBS op samples only.
    Ibs,
    /// Both.
    Both,
}

/// Counts of what went into a [`PgoProfile`] (for notes and for tests).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PgoStats {
    /// Samples read (all events, after the filters).
    pub samples: u64,
    /// Samples with a branch stack.
    pub lbr_samples: u64,
    /// Branch-stack entries (each one a taken branch in [`PgoProfile::branches`]).
    pub lbr_entries: u64,
    /// Straight-line ranges kept (sum of [`PgoProfile::ranges`] counts).
    pub ranges: u64,
    /// Consecutive entry pairs that gave no range (ends in different DSOs, backwards, or
    /// longer than [`MAX_RANGE`]).
    pub ranges_dropped: u64,
    /// IBS op samples decoded.
    pub ibs_ops: u64,
    /// IBS op samples that could not be decoded (En/Val clear, too short).
    pub ibs_invalid: u64,
    /// IBS op samples without a valid IbsOpRip (not in [`PgoProfile::ops`]).
    pub ibs_no_rip: u64,
    /// IBS ops that were retired branches.
    pub ibs_branches: u64,
    /// Of those, taken with a target (each one in [`PgoProfile::branches`]).
    pub ibs_taken: u64,
    /// Taken IBS branches without IbsBrTarget (the hardware or the kernel did not give it).
    pub ibs_no_target: u64,
}

/// Taken branches, straight-line ranges and sampled ops of a file.
#[derive(Debug, Clone, Default)]
pub struct PgoProfile {
    /// Taken branches `(from, to)`: LBR entries and IBS taken branches.
    pub branches: BTreeMap<(CodeAddr, CodeAddr), BranchCount>,
    /// Straight-line ranges `(start, end)`: from a branch target to the source of the next
    /// branch (both inclusive: `end` is the address of that branch instruction).
    pub ranges: BTreeMap<(CodeAddr, CodeAddr), u64>,
    /// IBS op samples by IbsOpRip (every sampled op, branch or not).
    pub ops: BTreeMap<CodeAddr, u64>,
    /// Where the data came from.
    pub source: BranchSource,
    /// What went in.
    pub stats: PgoStats,
}

/// Which samples a [`PgoAggregator`] takes.
#[derive(Debug, Clone, Default)]
pub struct PgoOptions {
    /// Only these events (by name, as `-e` selects); empty: every event.
    pub events: Vec<String>,
    /// Only these processes, threads and commands (`dsos` is not used here).
    pub filters: Filters,
}

/// Folds samples into a [`PgoProfile`] as they are read (memory grows with distinct
/// branches and ranges, not with samples).
#[derive(Debug)]
pub struct PgoAggregator {
    opts: PgoOptions,
    /// Per event: `Some(selected, ibs op?)` once decided.
    events: HashMap<EventId, (bool, bool)>,
    ibs_ctx: Option<IbsContext>,
    profile: PgoProfile,
}

impl PgoAggregator {
    /// An aggregator taking the samples `opts` selects.
    pub fn new(opts: &PgoOptions) -> PgoAggregator {
        PgoAggregator {
            opts: opts.clone(),
            events: HashMap::new(),
            ibs_ctx: None,
            profile: PgoProfile::default(),
        }
    }

    fn event_kind(&mut self, profile: &Profile, id: EventId) -> (bool, bool) {
        if let Some(&k) = self.events.get(&id) {
            return k;
        }
        let info = profile.events.get(usize::from(id));
        let selected = self.opts.events.is_empty()
            || info.is_some_and(|e| self.opts.events.iter().any(|w| e.matches(w)));
        let ibs_op = info
            .and_then(|e| e.pmu.as_deref())
            .and_then(IbsKind::from_pmu)
            == Some(IbsKind::Op);
        self.events.insert(id, (selected, ibs_op));
        (selected, ibs_op)
    }

    /// Adds one sample: its branch stack, or its IBS op payload.
    pub fn add(&mut self, profile: &Profile, s: &Sample) {
        let (selected, ibs_op) = self.event_kind(profile, s.event);
        let f = &self.opts.filters;
        if !selected
            || (!f.pids.is_empty() && !f.pids.contains(&s.pid))
            || (!f.tids.is_empty() && !f.tids.contains(&s.tid))
            || (!f.comms.is_empty() && !f.comms.iter().any(|c| c == profile.str(s.comm)))
        {
            return;
        }
        self.profile.stats.samples += 1;
        let entries = profile.branches(s);
        if !entries.is_empty() {
            self.add_lbr(entries);
        }
        if ibs_op {
            self.add_ibs(profile, s);
        }
    }

    fn add_lbr(&mut self, entries: &[culprit_decode::model::BranchEntry]) {
        let p = &mut self.profile;
        p.stats.lbr_samples += 1;
        p.stats.lbr_entries += entries.len() as u64;
        for e in entries {
            let b = p
                .branches
                .entry((e.from_location.into(), e.to_location.into()))
                .or_default();
            b.count += 1;
            b.mispredicted += u64::from(e.mispred());
        }
        // Most recent first: the older entry's target runs to the newer entry's source.
        for pair in entries.windows(2) {
            let (newer, older) = (&pair[0], &pair[1]);
            let start = CodeAddr::from(older.to_location);
            let end = CodeAddr::from(newer.from_location);
            if start.dso.is_some()
                && start.dso == end.dso
                && start.offset <= end.offset
                && end.offset - start.offset < MAX_RANGE
            {
                *p.ranges.entry((start, end)).or_default() += 1;
                p.stats.ranges += 1;
            } else {
                p.stats.ranges_dropped += 1;
            }
        }
    }

    fn add_ibs(&mut self, profile: &Profile, s: &Sample) {
        let ctx = *self
            .ibs_ctx
            .get_or_insert_with(|| IbsContext::from_meta_or_neutral(&profile.meta));
        let p = &mut self.profile;
        let op = match ibs::decode_op(profile.raw(s), &ctx) {
            Ok(op) => op,
            Err(_) => {
                p.stats.ibs_invalid += 1;
                return;
            }
        };
        p.stats.ibs_ops += 1;
        let Some(rip) = op.rip.filter(|_| s.exact_ip) else {
            p.stats.ibs_no_rip += 1;
            return;
        };
        let at = CodeAddr::from(s.location);
        *p.ops.entry(at).or_default() += 1;
        let Some(data) = op.data.filter(|d| d.brn_ret) else {
            return;
        };
        p.stats.ibs_branches += 1;
        if !data.brn_taken {
            return;
        }
        match op.br_target.filter(|&t| t != 0) {
            Some(target) => {
                // Same mapping, same load bias (module doc).
                let to = CodeAddr {
                    dso: at.dso,
                    offset: at.offset.wrapping_add(target.wrapping_sub(rip)),
                };
                let b = p.branches.entry((at, to)).or_default();
                b.count += 1;
                b.mispredicted += u64::from(data.brn_misp);
                p.stats.ibs_taken += 1;
            }
            None => p.stats.ibs_no_target += 1,
        }
    }

    /// The profile, or [`AnalysisError::NoData`] naming what to record when the samples
    /// had no branch data at all.
    pub fn finish(mut self, profile: &Profile) -> Result<PgoProfile, AnalysisError> {
        let p = &mut self.profile;
        let lbr = p.stats.lbr_entries > 0;
        let ibs = p.stats.ibs_ops > 0;
        p.source = match (lbr, ibs) {
            (true, true) => BranchSource::Both,
            (true, false) => BranchSource::Lbr,
            (false, true) => BranchSource::Ibs,
            (false, false) => BranchSource::None,
        };
        if p.source == BranchSource::None {
            let events: Vec<&str> = profile.events.iter().map(|e| e.name.as_str()).collect();
            return Err(AnalysisError::NoData(format!(
                "no branch data in the samples read ({} samples of {}): a PGO profile needs LBR \
                 branch stacks (`perf record -b` or `-j any,u`) or AMD IBS op samples \
                 (`perf record -e ibs_op//`){}",
                p.stats.samples,
                if events.is_empty() {
                    "no event".to_string()
                } else {
                    events.join(", ")
                },
                if p.stats.ibs_invalid > 0 {
                    format!(
                        "; {} IBS op samples could not be decoded",
                        p.stats.ibs_invalid
                    )
                } else {
                    String::new()
                }
            )));
        }
        Ok(self.profile)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use culprit_decode::model::{BranchEntry, CpuMode};

    fn entry(from: u64, to: u64, mispred: bool) -> BranchEntry {
        let loc = |a: u64| Location {
            dso: Some(0),
            file_offset: a - 0x1000,
        };
        BranchEntry {
            from,
            to,
            flags: u64::from(mispred),
            from_location: loc(from),
            from_cpumode: CpuMode::User,
            to_location: loc(to),
            to_cpumode: CpuMode::User,
        }
    }

    fn profile_with(branches: Vec<BranchEntry>) -> (Profile, Sample) {
        let mut p = Profile::default();
        p.events.push(crate::tests::event("cycles"));
        let n = branches.len() as u32;
        p.branches = branches;
        let s = Sample {
            branches: 0..n,
            branch_count: n,
            ..Sample::default()
        };
        (p, s)
    }

    #[test]
    fn test_lbr_stack_gives_branches_and_ranges_between_consecutive_entries() {
        // Most recent first: 0x1500→0x1600, before it 0x1300→0x1400, before it 0x1100→0x1200.
        let (p, s) = profile_with(vec![
            entry(0x1500, 0x1600, false),
            entry(0x1300, 0x1400, true),
            entry(0x1100, 0x1200, false),
        ]);
        let mut agg = PgoAggregator::new(&PgoOptions::default());
        agg.add(&p, &s);
        agg.add(&p, &s);
        let out = agg.finish(&p).unwrap();
        assert_eq!(out.source, BranchSource::Lbr);
        assert_eq!(out.stats.lbr_entries, 6);
        let at = |o: u64| CodeAddr {
            dso: Some(0),
            offset: o,
        };
        assert_eq!(
            out.branches[&(at(0x300), at(0x400))],
            BranchCount {
                count: 2,
                mispredicted: 2
            }
        );
        // 0x1200 runs to 0x1300, 0x1400 runs to 0x1500.
        assert_eq!(out.ranges[&(at(0x200), at(0x300))], 2);
        assert_eq!(out.ranges[&(at(0x400), at(0x500))], 2);
        assert_eq!(out.ranges.len(), 2);
        assert_eq!(out.stats.ranges, 4);
    }

    #[test]
    fn test_backward_or_cross_dso_pairs_are_dropped_not_ranges() {
        let mut other = entry(0x1800, 0x1900, false);
        other.to_location.dso = Some(1);
        let (p, s) = profile_with(vec![
            entry(0x1100, 0x1200, false),
            // Its target 0x1900 (another DSO) runs to 0x1100: dropped.
            other,
            // Its target 0x1f00 is past the next source 0x1800: backwards, dropped.
            entry(0x1000 + 0x50, 0x1f00, false),
        ]);
        let mut agg = PgoAggregator::new(&PgoOptions::default());
        agg.add(&p, &s);
        let out = agg.finish(&p).unwrap();
        assert!(out.ranges.is_empty());
        assert_eq!(out.stats.ranges_dropped, 2);
    }

    #[test]
    fn test_samples_without_branch_data_name_what_to_record() {
        let mut p = Profile::default();
        p.events.push(crate::tests::event("cpu-clock"));
        let mut agg = PgoAggregator::new(&PgoOptions::default());
        agg.add(&p, &Sample::default());
        let err = agg.finish(&p).unwrap_err().to_string();
        assert!(err.contains("perf record -b"), "{err}");
        assert!(err.contains("ibs_op"), "{err}");
        assert!(err.contains("cpu-clock"), "{err}");
    }

    #[test]
    fn test_filters_and_events_leave_samples_out() {
        let (p, mut s) = profile_with(vec![entry(0x1100, 0x1200, false)]);
        s.pid = 7;
        let mut agg = PgoAggregator::new(&PgoOptions {
            filters: Filters {
                pids: vec![8],
                ..Filters::default()
            },
            ..PgoOptions::default()
        });
        agg.add(&p, &s);
        assert!(agg.finish(&p).is_err());
        let mut agg = PgoAggregator::new(&PgoOptions {
            events: vec!["instructions".into()],
            ..PgoOptions::default()
        });
        agg.add(&p, &s);
        assert!(agg.finish(&p).is_err());
    }
}
