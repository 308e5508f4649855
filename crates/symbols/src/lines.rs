//! File and line of an address from the DWARF line tables alone, for the `srcline` and
//! `srcfile` sort keys of a report.
//!
//! addr2line's `Context` parses every compilation unit up front and keeps each one's
//! abbreviations and line-program header (for glibc's debug file that is ~22 MB, three
//! quarters of a `--sort srcline` report's memory). A line lookup needs none of that: this
//! index walks the units once to learn their address ranges (the same ranges, in the same
//! order, as addr2line: DW_AT_ranges, else .debug_aranges, else DW_AT_low_pc/high_pc, else
//! the line sequences), keeps only those, and parses a unit again (its abbreviations, its
//! line program) only when an address in it is asked for. The answer for an address is the
//! one `addr2line::Context::find_location` gives: the row of the first unit (in that order)
//! whose line sequences cover it. Written here because addr2line has no lazy, line-only mode.

use std::collections::HashMap;
use std::num::NonZeroU64;

use gimli::{Reader, Section};

type R = gimli::EndianArcSlice<gimli::RunTimeEndian>;

/// One address range of a unit, in addr2line's lookup order.
struct UnitRange {
    begin: u64,
    end: u64,
    /// Index into [`LineIndex::units`].
    unit: usize,
    /// The smallest `begin` of this and all later ranges (stops the scan early).
    min_begin: u64,
}

/// The parsed line table of one unit: sequences sorted by start, rendered file names.
struct Lines {
    files: Vec<String>,
    sequences: Vec<Sequence>,
}

struct Sequence {
    start: u64,
    end: u64,
    /// (address, file index, line; 0: no line), one per address, in address order.
    rows: Vec<(u64, u64, u32)>,
}

/// What parsing a unit's line program needs, copied out of its root DIE so that
/// .debug_info and .debug_abbrev (most of the decompressed bytes) can be dropped.
struct UnitInfo {
    /// DW_AT_stmt_list.
    line_offset: Option<gimli::DebugLineOffset>,
    address_size: u8,
    format: gimli::Format,
    str_offsets_base: gimli::DebugStrOffsetsBase,
    /// DW_AT_comp_dir and DW_AT_name (own copies).
    comp_dir: Option<R>,
    name: Option<R>,
}

/// Lazily parsed line tables of one file's DWARF.
pub(crate) struct LineIndex {
    /// The file's DWARF; after indexing only the line and string sections are kept.
    dwarf: gimli::Dwarf<R>,
    /// Per unit, in .debug_info order.
    units: Vec<UnitInfo>,
    ranges: Vec<UnitRange>,
    /// Parsed on first use (`None`: the unit has no usable line table).
    lines: HashMap<usize, Option<Lines>>,
}

impl LineIndex {
    /// Indexes the units of `dwarf` (their address ranges only).
    /// `info` yields the units of .debug_info one at a time (with their offsets), so the
    /// whole decompressed section never has to be in memory; `dwarf` has the other sections.
    pub(crate) fn new(
        dwarf: gimli::Dwarf<R>,
        info: &mut UnitStream<'_>,
    ) -> Result<LineIndex, gimli::Error> {
        let mut aranges = Vec::new();
        let mut headers = dwarf.debug_aranges.headers();
        while let Some(h) = headers.next()? {
            aranges.push((h.debug_info_offset(), h.offset()));
        }
        aranges.sort_unstable_by_key(|a| a.0);
        let mut units = Vec::new();
        let mut ranges = Vec::new();
        let endian = dwarf.debug_line.reader().endian();
        while let Some((offset, bytes)) = info.next_unit()? {
            let offset = gimli::DebugInfoOffset(offset);
            let Some(header) = gimli::DebugInfo::from(R::new(bytes, endian))
                .units()
                .next()?
            else {
                continue;
            };
            let mut need_range = match header.type_() {
                gimli::UnitType::Type { .. } | gimli::UnitType::SplitType { .. } => continue,
                gimli::UnitType::Partial => false,
                _ => true,
            };
            let Ok(unit) = dwarf.unit(header) else {
                continue;
            };
            let id = units.len();
            units.push(UnitInfo {
                line_offset: unit.line_program.as_ref().map(|p| p.header().offset()),
                address_size: unit.encoding().address_size,
                format: unit.encoding().format,
                str_offsets_base: unit.str_offsets_base,
                comp_dir: unit.comp_dir.as_ref().map(owned),
                name: unit.name.as_ref().map(owned),
            });
            let unit_ref = gimli::UnitRef::new(&dwarf, &unit);
            let mut push = |r: gimli::Range| {
                ranges.push(UnitRange {
                    begin: r.begin,
                    end: r.end,
                    unit: id,
                    min_begin: 0,
                })
            };
            if need_range {
                // The root DIE's DW_AT_ranges win; then .debug_aranges; then low/high pc.
                let mut entries = unit_ref.entries_raw(None)?;
                let Some(abbrev) = entries.read_abbreviation()? else {
                    continue;
                };
                let (mut low, mut high, mut size, mut list) = (None, None, None, None);
                for spec in abbrev.attributes() {
                    let attr = entries.read_attribute(*spec)?;
                    match (attr.name(), attr.value()) {
                        (gimli::DW_AT_low_pc, gimli::AttributeValue::Addr(v)) => low = Some(v),
                        (gimli::DW_AT_low_pc, gimli::AttributeValue::DebugAddrIndex(i)) => {
                            low = Some(unit_ref.address(i)?)
                        }
                        (gimli::DW_AT_high_pc, gimli::AttributeValue::Addr(v)) => high = Some(v),
                        (gimli::DW_AT_high_pc, gimli::AttributeValue::DebugAddrIndex(i)) => {
                            high = Some(unit_ref.address(i)?)
                        }
                        (gimli::DW_AT_high_pc, gimli::AttributeValue::Udata(v)) => size = Some(v),
                        (gimli::DW_AT_ranges, v) => list = unit_ref.attr_ranges_offset(v)?,
                        _ => {}
                    }
                }
                if let Some(list) = list {
                    let mut it = unit_ref.ranges(list)?;
                    while let Some(r) = it.next()? {
                        if r.begin < r.end {
                            push(r);
                            need_range = false;
                        }
                    }
                } else {
                    let at = aranges.partition_point(|a| a.0 < offset);
                    for (_, aoff) in aranges[at..].iter().take_while(|a| a.0 == offset) {
                        let mut entries = dwarf.debug_aranges.header(*aoff)?.entries();
                        while let Some(a) = entries.next().transpose() {
                            // Errors (address overflow) are skipped, as addr2line does.
                            let Ok(a) = a else { continue };
                            if a.length() != 0 {
                                push(a.range());
                                need_range = false;
                            }
                        }
                    }
                    if need_range {
                        if let Some(begin) = low {
                            let end = match (high, size) {
                                (Some(h), _) => Some(h),
                                (None, Some(s)) => begin.checked_add(s),
                                _ => None,
                            };
                            if let Some(end) = end.filter(|&e| begin < e) {
                                push(gimli::Range { begin, end });
                                need_range = false;
                            }
                        }
                    }
                }
            }
            if need_range {
                // No declared ranges: the line sequences give them.
                let info = units.last();
                if let Some(lines) = info.and_then(|i| parse_lines(&dwarf, i)) {
                    for s in &lines.sequences {
                        push(gimli::Range {
                            begin: s.start,
                            end: s.end,
                        });
                    }
                }
            }
        }
        ranges.sort_unstable_by_key(|r| (r.end, r.unit));
        let mut min = u64::MAX;
        for r in ranges.iter_mut().rev() {
            min = min.min(r.begin);
            r.min_begin = min;
        }
        // Units are parsed again from what `units` keeps: drop the big sections.
        let mut dwarf = dwarf;
        let empty = || R::new(std::sync::Arc::from(&[][..]), endian);
        dwarf.debug_abbrev = gimli::DebugAbbrev::from(empty());
        dwarf.debug_aranges = gimli::DebugAranges::from(empty());
        Ok(LineIndex {
            dwarf,
            units,
            ranges,
            lines: HashMap::new(),
        })
    }

    /// File (as addr2line renders it: compilation directory, directory and name) and line
    /// (`None` for line 0) of `probe`, or `None` where no line table covers it.
    pub(crate) fn find(&mut self, probe: u64) -> Option<(Option<String>, Option<u32>)> {
        let pos = self.ranges.partition_point(|r| r.end <= probe);
        let candidates: Vec<usize> = self
            .ranges
            .get(pos..)
            .unwrap_or(&[])
            .iter()
            .take_while(|r| probe >= r.min_begin)
            .filter(|r| r.begin <= probe && probe < r.end)
            .map(|r| r.unit)
            .collect();
        for unit in candidates {
            if !self.lines.contains_key(&unit) {
                let parsed = self.parse_unit(unit);
                self.lines.insert(unit, parsed);
            }
            if let Some(Some(lines)) = self.lines.get(&unit) {
                if let Some(found) = lines.find(probe) {
                    return Some(found);
                }
            }
        }
        None
    }

    fn parse_unit(&self, id: usize) -> Option<Lines> {
        parse_lines(&self.dwarf, self.units.get(id)?)
    }
}

/// An own copy of a reader's bytes (so the section it points into can be dropped).
fn owned(r: &R) -> R {
    R::new(std::sync::Arc::from(r.bytes()), r.endian())
}

/// A unit's line table, as addr2line builds it (rows at one address collapse to the last).
fn parse_lines(dwarf: &gimli::Dwarf<R>, unit: &UnitInfo) -> Option<Lines> {
    let program = dwarf
        .debug_line
        .program(
            unit.line_offset?,
            unit.address_size,
            unit.comp_dir.clone(),
            unit.name.clone(),
        )
        .ok()?;
    let mut sequences = Vec::new();
    let mut current: Vec<(u64, u64, u32)> = Vec::new();
    let mut rows = program.rows();
    // A bad row makes the whole table unusable, as in addr2line.
    while let Some((_, row)) = rows.next_row().ok()? {
        if row.end_sequence() {
            if let Some(start) = current.first().map(|r| r.0) {
                let end = row.address();
                let seq_rows = std::mem::take(&mut current);
                if start < end {
                    sequences.push(Sequence {
                        start,
                        end,
                        rows: seq_rows,
                    });
                }
            }
            continue;
        }
        let line = row.line().map(NonZeroU64::get).unwrap_or(0) as u32;
        let address = row.address();
        match current.last_mut() {
            Some(last) if last.0 == address => *last = (address, row.file_index(), line),
            _ => current.push((address, row.file_index(), line)),
        }
    }
    sequences.sort_unstable_by_key(|s| s.start);
    let header = rows.header();
    let mut files = Vec::new();
    match header.file(0) {
        Some(f) => files.push(render_file(dwarf, unit, f, header).ok()?),
        None => files.push(String::new()),
    }
    let mut index = 1;
    while let Some(f) = header.file(index) {
        files.push(render_file(dwarf, unit, f, header).ok()?);
        index += 1;
    }
    Some(Lines { files, sequences })
}

impl Lines {
    fn find(&self, probe: u64) -> Option<(Option<String>, Option<u32>)> {
        let at = self.sequences.partition_point(|s| s.end <= probe);
        let seq = self.sequences.get(at).filter(|s| s.start <= probe)?;
        let i = seq.rows.partition_point(|r| r.0 <= probe).checked_sub(1)?;
        let (_, file, line) = *seq.rows.get(i)?;
        let file = self.files.get(file as usize).cloned();
        Some((file, (line != 0).then_some(line)))
    }
}

/// A file entry's path as addr2line renders it: the compilation directory, then the entry's
/// directory (unless index 0), then its name; an absolute part replaces what came before.
fn render_file(
    dwarf: &gimli::Dwarf<R>,
    unit: &UnitInfo,
    file: &gimli::FileEntry<R>,
    header: &gimli::LineProgramHeader<R>,
) -> Result<String, gimli::Error> {
    let mut path = match &unit.comp_dir {
        Some(d) => d.to_string_lossy()?.into_owned(),
        None => String::new(),
    };
    if file.directory_index() != 0 {
        if let Some(dir) = file.directory(header) {
            push_path(
                &mut path,
                &attr_string(dwarf, unit, dir)?.to_string_lossy()?,
            );
        }
    }
    push_path(
        &mut path,
        &attr_string(dwarf, unit, file.path_name())?.to_string_lossy()?,
    );
    Ok(path)
}

/// The string an attribute of a line-program header names (gimli's `Dwarf::attr_string`
/// without a parsed unit).
fn attr_string(
    dwarf: &gimli::Dwarf<R>,
    unit: &UnitInfo,
    value: gimli::AttributeValue<R>,
) -> Result<R, gimli::Error> {
    match value {
        gimli::AttributeValue::String(s) => Ok(s),
        gimli::AttributeValue::DebugStrRef(o) => dwarf.debug_str.get_str(o),
        gimli::AttributeValue::DebugLineStrRef(o) => dwarf.debug_line_str.get_str(o),
        gimli::AttributeValue::DebugStrOffsetsIndex(i) => {
            let o =
                dwarf
                    .debug_str_offsets
                    .get_str_offset(unit.format, unit.str_offsets_base, i)?;
            dwarf.debug_str.get_str(o)
        }
        _ => Err(gimli::Error::ExpectedStringAttributeValue),
    }
}

fn push_path(path: &mut String, p: &str) {
    let rooted = |s: &str| {
        s.starts_with('/') || s.starts_with('\\') || matches!(s.get(1..3), Some(":/" | ":\\"))
    };
    if rooted(p) {
        *path = p.to_string();
        return;
    }
    let backslash = path.starts_with('\\') || path.get(1..3) == Some(":\\");
    let sep = if backslash { '\\' } else { '/' };
    if !path.is_empty() && !path.ends_with(sep) {
        path.push(sep);
    }
    path.push_str(p);
}

/// A unit's offset in .debug_info and its bytes.
pub(crate) type UnitBytes = (usize, std::sync::Arc<[u8]>);

/// The units of a .debug_info section one at a time, inflating zlib-compressed data as it
/// goes: only the unit being indexed is in memory, not the section (5.8 MB for glibc).
pub(crate) struct UnitStream<'a> {
    input: &'a [u8],
    /// `Some` for zlib data; `None`: `input` is the section itself.
    inflate: Option<flate2::Decompress>,
    /// Inflated bytes not handed out yet, starting at section offset `at`.
    window: Vec<u8>,
    at: usize,
    big_endian: bool,
}

impl<'a> UnitStream<'a> {
    /// Over a section's bytes as stored: `zlib` when they are zlib-compressed (after the
    /// ELF compression header).
    pub(crate) fn new(input: &'a [u8], zlib: bool, big_endian: bool) -> UnitStream<'a> {
        UnitStream {
            input,
            inflate: zlib.then(|| flate2::Decompress::new(true)),
            window: Vec::new(),
            at: 0,
            big_endian,
        }
    }

    /// Makes `window` hold at least `n` bytes; false at the end of the data.
    fn fill(&mut self, n: usize) -> Result<bool, gimli::Error> {
        let Some(z) = self.inflate.as_mut() else {
            let start = self.at.saturating_add(self.window.len());
            let want = n.saturating_sub(self.window.len());
            let more = self.input.get(start..).unwrap_or(&[]);
            self.window
                .extend_from_slice(more.get(..want).unwrap_or(more));
            return Ok(self.window.len() >= n);
        };
        while self.window.len() < n {
            let before_in = z.total_in();
            let before_out = z.total_out();
            let consumed = usize::try_from(before_in).unwrap_or(usize::MAX);
            let input = self.input.get(consumed..).unwrap_or(&[]);
            self.window.reserve((n - self.window.len()).max(64 << 10));
            z.decompress_vec(input, &mut self.window, flate2::FlushDecompress::None)
                .map_err(|_| gimli::Error::UnexpectedEof(gimli::ReaderOffsetId(0)))?;
            if z.total_in() == before_in && z.total_out() == before_out {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// The next unit: its section offset and bytes (length field included).
    pub(crate) fn next_unit(&mut self) -> Result<Option<UnitBytes>, gimli::Error> {
        if !self.fill(4)? {
            return Ok(None);
        }
        let be = self.big_endian;
        let word = |b: &[u8]| -> u64 {
            let mut a = [0u8; 8];
            let n = b.len().min(8);
            a[..n].copy_from_slice(&b[..n]);
            if be {
                a[..n].reverse();
                u64::from_le_bytes(a)
            } else {
                u64::from_le_bytes(a)
            }
        };
        let len32 = word(&self.window[..4]);
        let total = if len32 == 0xffff_ffff {
            if !self.fill(12)? {
                return Ok(None);
            }
            usize::try_from(word(&self.window[4..12]))
                .ok()
                .and_then(|l| l.checked_add(12))
        } else {
            usize::try_from(len32).ok().and_then(|l| l.checked_add(4))
        };
        let Some(total) = total else {
            return Ok(None);
        };
        if !self.fill(total)? {
            // A truncated last unit: what gimli would refuse too.
            return Ok(None);
        }
        let unit: std::sync::Arc<[u8]> = std::sync::Arc::from(&self.window[..total]);
        self.window.drain(..total);
        let offset = self.at;
        self.at += total;
        Ok(Some((offset, unit)))
    }
}
