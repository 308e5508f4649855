//! Source lines and inline frames: the DWARF context of a DSO, built on first use, the
//! line-table-only lookup for `srcline`/`srcfile`, and the loading of the DWARF sections.

use std::path::Path;
use std::sync::Arc;

use super::*;

impl Symbolizer {
    /// Source file, line and inline frames of an address (innermost first). Empty when
    /// the DSO has no DWARF. `return_address` looks up `addr - 1` (for call-chain frames).
    pub fn source(
        &mut self,
        profile: &Profile,
        dso: Option<DsoId>,
        file_offset: u64,
        return_address: bool,
    ) -> Vec<SourceFrame> {
        let Some(dso) = dso else { return Vec::new() };
        if self.is_jit(profile, dso) {
            return self
                .jit_source(profile, dso, file_offset, return_address)
                .into_iter()
                .collect();
        }
        // Kernel and module addresses have no DWARF here: answer before resolving, which
        // would load kallsyms for nothing.
        let no_dwarf = profile.dsos.get(dso as usize).is_none_or(|d| {
            matches!(
                d.kind,
                DsoKind::Kernel | DsoKind::KernelModule | DsoKind::Ksymbol | DsoKind::Anonymous
            )
        });
        if no_dwarf {
            return Vec::new();
        }
        let r = self.resolve(
            profile,
            Query {
                dso: Some(dso),
                file_offset,
                pid: -1,
            },
        );
        let Some(svma) = r.svma else {
            return Vec::new();
        };
        let probe = if return_address {
            svma.saturating_sub(1)
        } else {
            svma
        };
        let Some(DsoState::Elf {
            dwarf_path, dwarf, ..
        }) = self.dsos.get_mut(&dso)
        else {
            return Vec::new();
        };
        if let DwarfState::NotTried = *dwarf {
            *dwarf = match dwarf_path.as_deref().map(load_dwarf) {
                Some(Ok(ctx)) => DwarfState::Ready(Box::new(ctx)),
                _ => DwarfState::Unavailable,
            };
        }
        let DwarfState::Ready(ctx) = dwarf else {
            return Vec::new();
        };
        let mut out = Vec::new();
        if let Ok(mut frames) = ctx.frames(probe) {
            while let Ok(Some(f)) = frames.next() {
                let function = f
                    .function
                    .as_ref()
                    .and_then(|n| n.raw_name().ok())
                    .map(|n| demangle(&n));
                let (file, line) = match &f.location {
                    Some(l) => (l.file.map(str::to_string), l.line),
                    None => (None, None),
                };
                out.push(SourceFrame {
                    function,
                    file,
                    line,
                });
            }
        }
        if out.is_empty() {
            if let Ok(Some(l)) = ctx.find_location(probe) {
                out.push(SourceFrame {
                    function: None,
                    file: l.file.map(str::to_string),
                    line: l.line,
                });
            }
        }
        out
    }
}

impl Symbolizer {
    /// File and line of an address, from the line tables alone: what the first frame of
    /// [`Symbolizer::source`] says, without parsing the functions and inline frames of every
    /// compilation unit (a fraction of the memory for large debug files such as glibc's).
    /// `function` is always `None`. For the `srcline`/`srcfile` report keys.
    pub fn source_line(
        &mut self,
        profile: &Profile,
        dso: Option<DsoId>,
        file_offset: u64,
    ) -> Option<SourceFrame> {
        let dso = dso?;
        if self.is_jit(profile, dso) {
            return self.jit_source(profile, dso, file_offset, false);
        }
        let no_dwarf = profile.dsos.get(dso as usize).is_none_or(|d| {
            matches!(
                d.kind,
                DsoKind::Kernel | DsoKind::KernelModule | DsoKind::Ksymbol | DsoKind::Anonymous
            )
        });
        if no_dwarf {
            return None;
        }
        let q = Query {
            dso: Some(dso),
            file_offset,
            pid: -1,
        };
        if !self.dsos.contains_key(&dso) {
            let state = self.prepare(profile, dso);
            self.dsos.insert(dso, state);
        }
        let Some(DsoState::Elf {
            segments,
            dwarf_path,
            lines,
            ..
        }) = self.dsos.get_mut(&dso)
        else {
            return None;
        };
        let svma = elf::offset_to_svma(segments.as_slice(), q.file_offset)?;
        if let LinesState::NotTried = *lines {
            *lines = match dwarf_path.as_deref().map(load_line_index) {
                Some(Ok(index)) => LinesState::Ready(Box::new(index)),
                _ => LinesState::Unavailable,
            };
        }
        let LinesState::Ready(index) = lines else {
            return None;
        };
        let (file, line) = index.find(svma)?;
        Some(SourceFrame {
            function: None,
            file,
            line,
        })
    }
}

/// A file's line index: .debug_info streamed unit by unit, the other sections a line lookup
/// reads loaded.
pub(crate) fn load_line_index(path: &Path) -> Result<lines::LineIndex, SymbolError> {
    use object::{Object, ObjectSection};
    let dwarf = load_sections(path, &|id| LINE_SECTIONS.contains(&id))?;
    let map = elf::map_file(path)?;
    let bad = |msg: String| SymbolError::Elf {
        path: path.display().to_string(),
        msg,
    };
    let obj = object::File::parse(&*map).map_err(|e| bad(e.to_string()))?;
    let info = obj.section_by_name(".debug_info");
    let data = info.as_ref().and_then(|s| s.compressed_data().ok());
    let mut units = match data {
        Some(c) if c.format == object::CompressionFormat::Zlib => {
            lines::UnitStream::new(c.data, true, !obj.is_little_endian())
        }
        Some(c) if c.format == object::CompressionFormat::None => {
            lines::UnitStream::new(c.data, false, !obj.is_little_endian())
        }
        _ => {
            // Another compression (zstd): inflate the section whole.
            let whole = info.as_ref().and_then(|s| section_bytes(s));
            let bytes: &[u8] = whole.as_deref().unwrap_or(&[]);
            return lines::LineIndex::new(
                dwarf,
                &mut lines::UnitStream::new(bytes, false, !obj.is_little_endian()),
            )
            .map_err(|e| bad(e.to_string()));
        }
    };
    lines::LineIndex::new(dwarf, &mut units).map_err(|e| bad(e.to_string()))
}

/// The sections a line lookup reads besides .debug_info (abbreviations and ranges of the
/// units, line programs and the strings they name); the others are not loaded.
const LINE_SECTIONS: &[gimli::SectionId] = &[
    gimli::SectionId::DebugAbbrev,
    gimli::SectionId::DebugAranges,
    gimli::SectionId::DebugLine,
    gimli::SectionId::DebugLineStr,
    gimli::SectionId::DebugStr,
    gimli::SectionId::DebugStrOffsets,
    gimli::SectionId::DebugAddr,
    gimli::SectionId::DebugRanges,
    gimli::SectionId::DebugRngLists,
];

/// Copies (decompressed) of the DWARF sections of a file that `keep` accepts; the others
/// are empty.
pub(crate) fn load_sections(
    path: &Path,
    keep: &dyn Fn(gimli::SectionId) -> bool,
) -> Result<gimli::Dwarf<gimli::EndianArcSlice<gimli::RunTimeEndian>>, SymbolError> {
    use object::Object;
    let map = elf::map_file(path)?;
    let bad = |msg: String| SymbolError::Elf {
        path: path.display().to_string(),
        msg,
    };
    let obj = object::File::parse(&*map).map_err(|e| bad(e.to_string()))?;
    let endian = if obj.is_little_endian() {
        gimli::RunTimeEndian::Little
    } else {
        gimli::RunTimeEndian::Big
    };
    let load = |id: gimli::SectionId| -> Result<gimli::EndianArcSlice<gimli::RunTimeEndian>, gimli::Error> {
        let bytes = if keep(id) {
            obj.section_by_name(id.name())
                .and_then(|s| section_bytes(&s))
                .unwrap_or_else(|| Arc::from(&[][..]))
        } else {
            Arc::from(&[][..])
        };
        Ok(gimli::EndianArcSlice::new(bytes, endian))
    };
    gimli::Dwarf::load(load).map_err(|e| bad(e.to_string()))
}

/// A section's bytes, decompressed, in one buffer: zlib data is inflated straight into it
/// (object's `uncompressed_data` gives a `Vec` that would be copied again: twice the memory
/// of glibc's 5.8 MB .debug_info at the peak).
pub(crate) fn section_bytes(section: &object::Section<'_, '_>) -> Option<Arc<[u8]>> {
    use object::ObjectSection;
    let c = section.compressed_data().ok()?;
    match c.format {
        object::CompressionFormat::None => Some(Arc::from(c.data)),
        object::CompressionFormat::Zlib => {
            let size = usize::try_from(c.uncompressed_size).ok()?;
            let mut out: Arc<[u8]> = std::iter::repeat_n(0u8, size).collect();
            let buf = Arc::get_mut(&mut out)?;
            let mut z = flate2::Decompress::new(true);
            z.decompress(c.data, buf, flate2::FlushDecompress::Finish)
                .ok()?;
            (z.total_out() == c.uncompressed_size).then_some(out)
        }
        _ => section.uncompressed_data().ok().map(|d| Arc::from(&*d)),
    }
}

/// Builds an addr2line context over copies of a file's DWARF sections (decompressed).
pub(crate) fn load_dwarf(path: &Path) -> Result<Dwarf, SymbolError> {
    // Variable locations and macros are never looked at for lines and inline frames: do not
    // keep (decompressed) copies of them.
    let keep = |id: gimli::SectionId| {
        !matches!(
            id,
            gimli::SectionId::DebugLoc
                | gimli::SectionId::DebugLocLists
                | gimli::SectionId::DebugMacinfo
                | gimli::SectionId::DebugMacro
        )
    };
    let dwarf = load_sections(path, &keep)?;
    let ctx = addr2line::Context::from_dwarf(dwarf).map_err(|e| SymbolError::Elf {
        path: path.display().to_string(),
        msg: e.to_string(),
    })?;
    Ok(crate::split_dwarf::DwarfContext::new(ctx, path))
}
