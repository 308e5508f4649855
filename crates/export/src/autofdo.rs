//! AutoFDO: an LLVM sample profile in its text form (what `llvm-profdata merge --sample
//! --text` writes and `clang -fprofile-sample-use=FILE` / `llvm-profdata` read):
//!
//! ```text
//! main:1850:3                 function:total samples:head samples (times entered)
//!  2: 420                     line offset from the function's first line: samples
//!  4: 400 compute:400         … and the calls made there, callee:count
//!  5: compute:1030            an inlined call site: callee:total samples
//!   1: 1030                     its body, one space deeper
//! ```
//!
//! Line offsets are source lines minus the function's first line (`DW_AT_decl_line`); names
//! are DWARF's linkage names (the mangled names clang and gcc look functions up by).
//! Discriminators are not written (culprit's line tables do not keep them).
//!
//! Counts come from the branch data of one binary (see [`culprit_analysis::pgo`]):
//!
//! - **LBR**: the straight-line ranges are cut where any range starts or ends; each piece
//!   is executed as often as the ranges that cover it, and a line's count is the largest
//!   count among its pieces (a line's instructions run as often as the line does: adding
//!   them up would weigh long lines). This is what `llvm-profgen` and `create_llvm_prof` do.
//! - **IBS op** (when the file has no LBR ranges): each sampled op counts once on its line.
//! - Taken branches to the first address of a function are calls: they count as the
//!   callee's head samples and, at the branch's source line, as call targets.
//!
//! Needs the binary's DWARF (`-g`); a binary without it gives an error naming it.

use std::collections::BTreeMap;
use std::io::Write;

use culprit_analysis::pgo::PgoProfile;
use culprit_decode::model::Profile;
use culprit_symbols::{CodeLine, LineFrame, Query, Symbolizer};

use crate::pgo::{PgoError, PgoSummary, Target};

/// One function's samples (top level or inlined at a call site).
#[derive(Debug, Default)]
struct FnSamples {
    head: u64,
    /// Line offset → samples and calls made there.
    body: BTreeMap<u32, Body>,
    /// (line offset, callee) → the inlined callee's samples.
    inlined: BTreeMap<(u32, String), FnSamples>,
}

#[derive(Debug, Default)]
struct Body {
    count: u64,
    calls: BTreeMap<String, u64>,
}

impl FnSamples {
    fn total(&self) -> u64 {
        self.body.values().map(|b| b.count).sum::<u64>()
            + self.inlined.values().map(FnSamples::total).sum::<u64>()
    }
}

/// How a count joins the count already at a line.
#[derive(Clone, Copy)]
enum Merge {
    Max,
    Add,
}

/// Top-level functions by name.
#[derive(Default)]
struct Samples {
    functions: BTreeMap<String, FnSamples>,
    /// Lines without a function start or line number.
    unplaced: u64,
}

impl Samples {
    /// The body at the innermost frame of `frames` (innermost first), inline path created.
    fn body(&mut self, frames: &[LineFrame]) -> Option<&mut Body> {
        let offsets: Option<Vec<u32>> = frames
            .iter()
            .map(|f| {
                let (line, start) = (f.line?, f.start_line?);
                line.checked_sub(start)
            })
            .collect();
        let Some(offsets) = offsets.filter(|o| !o.is_empty()) else {
            self.unplaced += 1;
            return None;
        };
        let top = frames.last()?;
        let mut node = self.functions.entry(top.name.clone()).or_default();
        // From the outermost frame in: each call site leads into the next inner function.
        for i in (1..frames.len()).rev() {
            node = node
                .inlined
                .entry((offsets[i], frames[i - 1].name.clone()))
                .or_default();
        }
        Some(node.body.entry(offsets[0]).or_default())
    }

    fn add(&mut self, frames: &[LineFrame], count: u64, merge: Merge) {
        if let Some(b) = self.body(frames) {
            b.count = match merge {
                Merge::Max => b.count.max(count),
                Merge::Add => b.count + count,
            };
        }
    }
}

/// Writes the sample profile of `target` (see the module doc).
pub(crate) fn write(
    profile: &Profile,
    pgo: &PgoProfile,
    symbolizer: &mut Symbolizer,
    target: &Target,
    out: &mut dyn Write,
    summary: &mut PgoSummary,
) -> Result<(), PgoError> {
    let dso = target.dso;
    let path = profile.dsos[dso as usize].path.clone();
    summary.addresses = "svma".to_string();
    let mut samples = Samples::default();
    let mut any_lines = false;

    // Bodies: LBR ranges cut into pieces, or IBS op samples.
    let ranges: Vec<(u64, u64, u64)> = pgo
        .ranges
        .iter()
        .filter(|((s, _), _)| s.dso == Some(dso))
        .map(|((s, e), n)| (s.offset, e.offset, *n))
        .collect();
    if !ranges.is_empty() {
        for (start, end, count) in pieces(&ranges) {
            let lines = symbolizer.code_lines(profile, dso, start, end);
            any_lines |= !lines.is_empty();
            for CodeLine { frames, .. } in &lines {
                samples.add(frames, count, Merge::Max);
            }
        }
    } else {
        for (at, n) in pgo.ops.range(..) {
            if at.dso != Some(dso) {
                continue;
            }
            let lines = symbolizer.code_lines(profile, dso, at.offset, at.offset);
            any_lines |= !lines.is_empty();
            if let Some(l) = lines.first() {
                samples.add(&l.frames, *n, Merge::Add);
            }
        }
    }

    // Calls: taken branches to a function's first address.
    for ((from, to), b) in &pgo.branches {
        if to.dso != Some(dso) {
            continue;
        }
        let r = symbolizer.resolve(
            profile,
            Query {
                dso: Some(dso),
                file_offset: to.offset,
                pid: -1,
            },
        );
        let entry = r
            .symbol
            .and_then(|id| symbolizer.symbol(id))
            .zip(r.svma)
            .is_some_and(|(s, svma)| s.start == svma);
        if !entry {
            continue;
        }
        let callee_lines = symbolizer.code_lines(profile, dso, to.offset, to.offset);
        let Some(callee) = callee_lines
            .first()
            .and_then(|l| l.frames.last())
            .map(|f| f.name.clone())
        else {
            continue;
        };
        samples.functions.entry(callee.clone()).or_default().head += b.count;
        summary.branches += b.count;
        if from.dso == Some(dso) {
            let lines = symbolizer.code_lines(profile, dso, from.offset, from.offset);
            if let Some(body) = lines.first().and_then(|l| samples.body(&l.frames)) {
                *body.calls.entry(callee).or_default() += b.count;
                let calls: u64 = body.calls.values().sum();
                body.count = body.count.max(calls);
            }
        }
    }

    if !any_lines {
        return Err(PgoError::Unsupported(format!(
            "{path}: no source lines for its sampled code: an AutoFDO profile needs the \
             binary's DWARF line tables (build with -g; give its directory with --symfs or \
             its debug file with --debug-dir)"
        )));
    }
    if samples.unplaced > 0 {
        summary.warnings.push(format!(
            "{} lines of {path} had no line number or function start line in DWARF: left out",
            samples.unplaced
        ));
    }
    let mut functions: Vec<(&String, &FnSamples, u64)> = samples
        .functions
        .iter()
        .filter(|(name, _)| !name.contains(char::is_whitespace) && !name.contains(':'))
        .map(|(name, f)| (name, f, f.total()))
        .filter(|(_, f, total)| *total > 0 || f.head > 0)
        .collect();
    // Hottest first, as llvm-profdata writes them.
    functions.sort_by(|a, b| b.2.cmp(&a.2).then_with(|| a.0.cmp(b.0)));
    for (name, f, total) in &functions {
        writeln!(out, "{name}:{total}:{}", f.head)?;
        write_body(out, f, 1)?;
    }
    summary.records = functions.len() as u64;
    Ok(())
}

fn write_body(out: &mut dyn Write, f: &FnSamples, depth: usize) -> std::io::Result<()> {
    let pad = " ".repeat(depth);
    for (offset, b) in &f.body {
        write!(out, "{pad}{offset}: {}", b.count)?;
        for (callee, n) in &b.calls {
            write!(out, " {callee}:{n}")?;
        }
        writeln!(out)?;
    }
    for ((offset, callee), inner) in &f.inlined {
        writeln!(out, "{pad}{offset}: {callee}:{}", inner.total())?;
        write_body(out, inner, depth + 1)?;
    }
    Ok(())
}

/// Cuts ranges `(start, end inclusive, count)` where any starts or ends: pieces
/// `(start, end inclusive, count)` with the sum of the counts of the ranges covering them.
fn pieces(ranges: &[(u64, u64, u64)]) -> Vec<(u64, u64, u64)> {
    let mut edges: BTreeMap<u64, i128> = BTreeMap::new();
    for &(s, e, n) in ranges {
        *edges.entry(s).or_default() += i128::from(n);
        *edges.entry(e.saturating_add(1)).or_default() -= i128::from(n);
    }
    let mut out = Vec::new();
    let mut running: i128 = 0;
    let mut prev: Option<u64> = None;
    for (&at, &delta) in &edges {
        if let Some(p) = prev {
            if running > 0 && at > p {
                out.push((p, at - 1, running as u64));
            }
        }
        running += delta;
        prev = Some(at);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_pieces_sum_the_ranges_covering_them() {
        // [0x10, 0x1f] ×2 and [0x18, 0x2f] ×3.
        let p = pieces(&[(0x10, 0x1f, 2), (0x18, 0x2f, 3)]);
        assert_eq!(p, vec![(0x10, 0x17, 2), (0x18, 0x1f, 5), (0x20, 0x2f, 3)]);
        // Disjoint ranges leave a gap.
        let p = pieces(&[(0, 3, 1), (8, 9, 4)]);
        assert_eq!(p, vec![(0, 3, 1), (8, 9, 4)]);
    }

    fn frame(name: &str, start: u32, line: u32) -> LineFrame {
        LineFrame {
            name: name.into(),
            start_line: Some(start),
            line: Some(line),
        }
    }

    #[test]
    fn test_inline_frames_nest_under_the_call_site_and_lines_take_the_max() {
        let mut s = Samples::default();
        // compute (first line 20) inlined into main (first line 10) at line 15.
        let inl = [frame("compute", 20, 23), frame("main", 10, 15)];
        s.add(&inl, 7, Merge::Max);
        s.add(&inl, 5, Merge::Max);
        s.add(&[frame("main", 10, 12)], 4, Merge::Max);
        let mut out = Vec::new();
        let m = &s.functions["main"];
        assert_eq!(m.total(), 11);
        write_body(&mut out, m, 1).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            " 2: 4\n 5: compute:7\n  3: 7\n"
        );
        // A line before the function's first line has no offset.
        s.add(&[frame("main", 10, 9)], 1, Merge::Add);
        assert_eq!(s.unplaced, 1);
    }
}
