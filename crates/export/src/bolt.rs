//! BOLT's pre-aggregated profile (`perf2bolt -pa -p FILE -o perf.fdata BINARY`), as
//! LLVM's `DataAggregator::parsePreAggregated` reads it (LLVM 15 to 21):
//!
//! ```text
//! B <from> <to> <count> <mispredicted>     a taken branch
//! F <start> <end> <count>                  a straight-line range (fall-through)
//! ```
//!
//! An address is hex without `0x`, "the offset from the object base load address (0 for the
//! main executable unless it's PIE)": the address the ELF file states (SVMA), which culprit
//! computes from the file offset through the binary's program headers. When the binary
//! cannot be read (not on this machine: see `--symfs`) the file offsets are written instead
//! and a warning says so; they are the same numbers when the code segment's `p_vaddr` equals
//! its `p_offset` (PIE executables and shared objects from the usual linkers).
//!
//! An end outside the binary is written `X:0` (BOLT's "unknown object", at offset 0 where no
//! function is: a call into the binary from a library, a return out of it). Branches between
//! user and kernel code (interrupts, system calls) are left out, as `perf2bolt` ignores
//! them (`-ignore-interrupt-lbr`); so are branches that neither leave nor enter the binary.
//! The build-id is not written: BOLT does not check it, and the summary names the binary.

use std::collections::BTreeMap;
use std::io::Write;

use culprit_analysis::pgo::{CodeAddr, PgoProfile};
use culprit_decode::model::{DsoKind, Profile};
use culprit_symbols::{Query, Symbolizer};

use crate::pgo::{PgoError, PgoSummary, Target};

/// Kernel addresses start here on x86-64 (what `perf2bolt` treats as kernel).
const KERNEL_BASE: u64 = 0xffff_8000_0000_0000;

/// One end as written: an address in the binary, or outside it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum End {
    In(u64),
    External,
}

impl std::fmt::Display for End {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            End::In(a) => write!(f, "{a:x}"),
            End::External => f.write_str("X:0"),
        }
    }
}

/// File offset → the address BOLT wants, cached per offset.
struct Addresser<'a> {
    profile: &'a Profile,
    symbolizer: &'a mut Symbolizer,
    target: &'a Target,
    /// The binary could be read: addresses are SVMAs (else file offsets).
    svma: bool,
}

impl Addresser<'_> {
    fn address(&mut self, offset: u64) -> Option<u64> {
        if !self.svma {
            return Some(offset);
        }
        self.symbolizer
            .resolve(
                self.profile,
                Query {
                    dso: Some(self.target.dso),
                    file_offset: offset,
                    pid: -1,
                },
            )
            .svma
    }
}

fn is_kernel(profile: &Profile, at: &CodeAddr) -> bool {
    match at.dso.and_then(|d| profile.dsos.get(d as usize)) {
        Some(d) => matches!(
            d.kind,
            DsoKind::Kernel | DsoKind::KernelModule | DsoKind::Ksymbol
        ),
        None => at.offset >= KERNEL_BASE,
    }
}

/// Writes the pre-aggregated profile of `target` (see the module doc).
pub(crate) fn write(
    profile: &Profile,
    pgo: &PgoProfile,
    symbolizer: &mut Symbolizer,
    target: &Target,
    out: &mut dyn Write,
    summary: &mut PgoSummary,
) -> Result<(), PgoError> {
    let dso = &profile.dsos[target.dso as usize];
    let target_kernel = matches!(
        dso.kind,
        DsoKind::Kernel | DsoKind::KernelModule | DsoKind::Ksymbol
    );
    // Can the binary be read? One offset of its code tells.
    let probe = pgo
        .branches
        .keys()
        .flat_map(|(f, t)| [f, t])
        .find(|a| a.dso == Some(target.dso))
        .map(|a| a.offset);
    let readable = probe.is_some_and(|o| {
        symbolizer
            .resolve(
                profile,
                Query {
                    dso: Some(target.dso),
                    file_offset: o,
                    pid: -1,
                },
            )
            .svma
            .is_some()
    });
    let mut addr = Addresser {
        profile,
        symbolizer,
        target,
        svma: readable,
    };
    summary.addresses = if readable { "svma" } else { "file_offset" }.to_string();
    if !readable {
        summary.warnings.push(format!(
            "{}: the binary could not be read here (give its directory with --symfs): the \
             profile holds file offsets, which BOLT reads as addresses (right when the code \
             segment's p_vaddr equals its p_offset, as in PIE executables)",
            dso.path
        ));
    }

    let mut branches: BTreeMap<(End, End), (u64, u64)> = BTreeMap::new();
    let mut unplaced = 0u64;
    for ((from, to), b) in &pgo.branches {
        let from_in = from.dso == Some(target.dso);
        let to_in = to.dso == Some(target.dso);
        let other = if from_in { to } else { from };
        if !(from_in || to_in)
            || (!(from_in && to_in) && is_kernel(profile, other) != target_kernel)
        {
            summary.other_branches += b.count;
            continue;
        }
        let mut end = |inside: bool, at: &CodeAddr| -> Option<End> {
            if inside {
                addr.address(at.offset).map(End::In)
            } else {
                Some(End::External)
            }
        };
        let (Some(f), Some(t)) = (end(from_in, from), end(to_in, to)) else {
            // An IBS target placed outside the binary's code (module doc of
            // culprit_analysis::pgo), or an LBR address outside its segments.
            unplaced += b.count;
            continue;
        };
        let e = branches.entry((f, t)).or_default();
        e.0 += b.count;
        e.1 += b.mispredicted;
    }
    let mut ranges: BTreeMap<(u64, u64), u64> = BTreeMap::new();
    for ((start, end), n) in &pgo.ranges {
        if start.dso != Some(target.dso) {
            continue;
        }
        if let (Some(s), Some(e)) = (addr.address(start.offset), addr.address(end.offset)) {
            *ranges.entry((s, e)).or_default() += n;
        }
    }
    if unplaced > 0 {
        summary.warnings.push(format!(
            "{unplaced} taken branches had an end outside {}'s code segments (IBS targets in \
             another library): left out",
            dso.short_name
        ));
    }
    for ((f, t), (count, mispred)) in &branches {
        writeln!(out, "B {f} {t} {count} {mispred}")?;
        summary.branches += count;
    }
    for ((s, e), n) in &ranges {
        writeln!(out, "F {s:x} {e:x} {n}")?;
        summary.ranges += n;
    }
    summary.records = (branches.len() + ranges.len()) as u64;
    Ok(())
}
