//! Code no symbol covers (a stripped DSO without a debug file): its sampled addresses,
//! clustered per DSO into hot address ranges that annotate disassembles raw, as objdump
//! would, so that a stripped hot loop is shown rather than skipped.

use culprit_decode::model::{DsoId, EventId, Profile};

use super::{FuncSamples, Site};

/// Sampled addresses further apart than this start a new range: a loop and its neighbours
/// stay one range, two unrelated hot spots of a big binary do not.
const GAP: u64 = 256;

/// The longest instruction (x86: 15 bytes, rounded up): what is read past the last sampled
/// address so that its instruction decodes whole.
pub(super) const MAX_INSN_LEN: u64 = 16;

/// A hot address range of unnamed code.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct HotRange {
    /// SVMA of its first sampled instruction (where disassembly starts: a sampled IP is an
    /// instruction boundary).
    pub(super) first: u64,
    /// SVMA of its last sampled instruction.
    pub(super) last: u64,
    /// The DSO's file offset of `first` (its name, as report prints an unnamed address).
    pub(super) offset: u64,
}

/// The hot ranges of `unnamed` sampled sites (DSO, index in `sites`, SVMA): per DSO, the
/// addresses sorted and cut where they are more than [`GAP`] apart. `first_event` says
/// whether an event is the first column (ranges rank by its samples, as functions do).
pub(super) fn hot_ranges(
    sites: &[Site],
    mut unnamed: Vec<(DsoId, usize, u64)>,
    first_event: &dyn Fn(EventId) -> bool,
) -> Vec<FuncSamples> {
    unnamed.sort_unstable_by_key(|&(d, _, a)| (d, a));
    let mut out: Vec<FuncSamples> = Vec::new();
    for (dso, n, svma) in unnamed {
        let Some(site) = sites.get(n) else { continue };
        let joins = out
            .last()
            .is_some_and(|f| f.dso == dso && svma - f.range.last <= GAP);
        if !joins {
            out.push(FuncSamples {
                dso,
                symbol: None,
                range: HotRange {
                    first: svma,
                    last: svma,
                    offset: site.query.file_offset,
                },
                sites: Vec::new(),
                samples: 0,
                first_event: 0,
            });
        }
        let Some(f) = out.last_mut() else { continue };
        f.range.last = svma;
        f.sites.push((n, svma));
        f.samples += site.samples;
        if first_event(site.event) {
            f.first_event += site.samples;
        }
    }
    out
}

/// Whether SVMA `a` is in the unnamed range of `f` (up to its last instruction's end).
pub(super) fn covers(f: &FuncSamples, a: u64) -> bool {
    f.symbol.is_none() && f.range.first <= a && a < f.range.last + MAX_INSN_LEN
}

/// The name of an unnamed range: `[unknown] DSO+0xOFFSET` (its first address), as report
/// prints an unnamed address and `annotate --addr` takes it.
pub(super) fn range_name(profile: &Profile, f: &FuncSamples) -> String {
    let dso = profile
        .dsos
        .get(f.dso as usize)
        .map_or("[unknown]", |d| d.short_name.as_str());
    format!("[unknown] {dso}+{:#x}", f.range.offset)
}
