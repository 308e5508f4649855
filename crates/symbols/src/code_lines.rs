//! Source lines of a code range with the start line of each function (for sample-profile
//! exports such as AutoFDO, whose line numbers are offsets from the function's first line).

use std::collections::{HashMap, HashSet};

use culprit_decode::model::{DsoId, DsoKind, Profile};

use crate::{elf, load_dwarf, DsoState, Dwarf, DwarfState, Query, Symbolizer};

/// One frame of a [`CodeLine`]: a function, inlined or not, and the line in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineFrame {
    /// The function's name as DWARF gives it: the linkage (mangled) name when there is one,
    /// else the plain name. Sample profiles are keyed by it.
    pub name: String,
    /// The function's first line (`DW_AT_decl_line`), when DWARF says it.
    pub start_line: Option<u32>,
    /// The line in this function: of the instruction for the innermost frame, of the call
    /// site of the inlined function for the outer ones.
    pub line: Option<u32>,
}

/// The code from `offset` on (to the next [`CodeLine`] or the end of the range asked for)
/// and its inline frames, innermost first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeLine {
    /// File offset in the DSO where this line's code starts.
    pub offset: u64,
    /// Inline frames, innermost first; empty when DWARF has no function here.
    pub frames: Vec<LineFrame>,
}

/// `DW_AT_decl_line` of every function of the DWARF units looked at so far, by name.
#[derive(Default)]
pub(crate) struct DeclLines {
    units: HashSet<u64>,
    lines: HashMap<String, u32>,
}

impl Symbolizer {
    /// The source lines of the code from file offset `start` to `end` (inclusive) of `dso`:
    /// one [`CodeLine`] per line-table row that starts in the range (and one at `start`),
    /// in address order, each with its inline frames and their functions' first lines.
    /// Empty when the DSO has no DWARF or the range is not in its code.
    pub fn code_lines(
        &mut self,
        profile: &Profile,
        dso: DsoId,
        start: u64,
        end: u64,
    ) -> Vec<CodeLine> {
        let no_dwarf = profile.dsos.get(dso as usize).is_none_or(|d| {
            matches!(
                d.kind,
                DsoKind::Kernel | DsoKind::KernelModule | DsoKind::Ksymbol | DsoKind::Anonymous
            )
        });
        if no_dwarf || end < start {
            return Vec::new();
        }
        // Prepares the DSO (segments, DWARF path) as any lookup does.
        let r = self.resolve(
            profile,
            Query {
                dso: Some(dso),
                file_offset: start,
                pid: -1,
            },
        );
        let Some(svma_start) = r.svma else {
            return Vec::new();
        };
        let Some(DsoState::Elf {
            segments,
            dwarf_path,
            dwarf,
            ..
        }) = self.dsos.get_mut(&dso)
        else {
            return Vec::new();
        };
        // Both ends in the same segment: the range maps to SVMAs one to one.
        let Some(svma_end) = svma_start.checked_add(end - start) else {
            return Vec::new();
        };
        if elf::offset_to_svma(segments.as_slice(), end) != Some(svma_end) {
            return Vec::new();
        }
        if let DwarfState::NotTried = *dwarf {
            *dwarf = match dwarf_path.as_deref().map(load_dwarf) {
                Some(Ok(ctx)) => DwarfState::Ready(Box::new(ctx)),
                _ => DwarfState::Unavailable,
            };
        }
        let DwarfState::Ready(ctx) = dwarf else {
            return Vec::new();
        };
        let mut starts = vec![svma_start];
        if let Ok(rows) = ctx.find_location_range(svma_start, svma_end.saturating_add(1)) {
            for (addr, _, _) in rows {
                if addr > svma_start && addr <= svma_end {
                    starts.push(addr);
                }
            }
        }
        starts.sort_unstable();
        starts.dedup();
        let decl = self.decl_lines.entry(dso).or_default();
        starts
            .into_iter()
            .map(|svma| CodeLine {
                offset: start + (svma - svma_start),
                frames: frames_at(ctx, decl, svma),
            })
            .collect()
    }
}

/// The inline frames at `svma`, innermost first, with their functions' first lines.
fn frames_at(ctx: &Dwarf, decl: &mut DeclLines, svma: u64) -> Vec<LineFrame> {
    let mut out = Vec::new();
    if let Ok(mut frames) = ctx.frames(svma) {
        while let Ok(Some(f)) = frames.next() {
            let Some(name) = f
                .function
                .as_ref()
                .and_then(|n| n.raw_name().ok())
                .map(|n| n.into_owned())
            else {
                continue;
            };
            out.push(LineFrame {
                name,
                start_line: None,
                line: f.location.as_ref().and_then(|l| l.line),
            });
        }
    }
    if out.iter().any(|f| !decl.lines.contains_key(&f.name)) {
        index_unit(ctx, decl, svma);
    }
    for f in &mut out {
        f.start_line = decl.lines.get(&f.name).copied();
    }
    out
}

/// Records the first line of every function of the unit holding `svma` (once per unit).
fn index_unit(ctx: &Dwarf, decl: &mut DeclLines, svma: u64) {
    let Some(unit) = ctx.resolve(ctx.find_dwarf_and_unit(svma)) else {
        return;
    };
    let key = unit.header.offset().0 as u64;
    if !decl.units.insert(key) {
        return;
    }
    let mut cursor = unit.entries();
    while let Ok(Some(die)) = cursor.next_dfs() {
        if die.tag() != gimli::DW_TAG_subprogram {
            continue;
        }
        if let Some((name, line)) = name_and_decl_line(&unit, die) {
            decl.lines.entry(name).or_insert(line);
        }
    }
}

/// A subprogram's name (linkage name first, as addr2line names frames) and its
/// `DW_AT_decl_line`, following `DW_AT_specification`/`DW_AT_abstract_origin` within the
/// unit for what the entry itself lacks.
fn name_and_decl_line<R: gimli::Reader>(
    unit: &gimli::UnitRef<'_, R>,
    die: &gimli::DebuggingInformationEntry<R>,
) -> Option<(String, u32)> {
    let mut name: Option<String> = None;
    let mut line: Option<u32> = None;
    let mut current = die.clone();
    for _ in 0..4 {
        if name.is_none() {
            for at in [
                gimli::DW_AT_linkage_name,
                gimli::DW_AT_MIPS_linkage_name,
                gimli::DW_AT_name,
            ] {
                if let Some(v) = current.attr_value(at) {
                    if let Ok(s) = unit.attr_string(v) {
                        if let Ok(s) = s.to_string_lossy() {
                            name = Some(s.into_owned());
                            break;
                        }
                    }
                }
            }
        }
        if line.is_none() {
            line = current
                .attr_value(gimli::DW_AT_decl_line)
                .and_then(|v| v.udata_value())
                .and_then(|l| u32::try_from(l).ok());
        }
        if name.is_some() && line.is_some() {
            break;
        }
        let next = [gimli::DW_AT_specification, gimli::DW_AT_abstract_origin]
            .into_iter()
            .find_map(|at| match current.attr_value(at) {
                Some(gimli::AttributeValue::UnitRef(o)) => unit.entry(o).ok(),
                _ => None,
            });
        match next {
            Some(d) => current = d,
            None => break,
        }
    }
    Some((name?, line?))
}
