//! Reading what culprit needs from one ELF file: PT_LOAD segments (file offset → SVMA),
//! build-id, `.gnu_debuglink`, and the symbol table perf would build (.symtab and .dynsym:
//! functions, objects and text labels).

use std::path::Path;

use object::elf;
use object::read::elf::{FileHeader, ProgramHeader, SectionHeader, Sym};
use object::{Endianness, Object};

use crate::demangle::demangle;
use crate::table::{Binding, Symbol};
use crate::SymbolError;

/// One PT_LOAD segment: maps file offsets to SVMAs.
#[derive(Debug, Clone, Copy)]
pub struct Segment {
    /// p_offset.
    pub offset: u64,
    /// p_filesz.
    pub filesz: u64,
    /// p_vaddr.
    pub vaddr: u64,
}

/// Facts read from one ELF file.
#[derive(Debug, Default)]
pub struct ElfFacts {
    /// PT_LOAD segments.
    pub segments: Vec<Segment>,
    /// NT_GNU_BUILD_ID, if present.
    pub build_id: Option<Vec<u8>>,
    /// `.gnu_debuglink` file name, if present.
    pub debuglink: Option<String>,
    /// `.gnu_debuglink`'s CRC-32 of the debug file, if present.
    pub debuglink_crc: Option<u32>,
    /// Whether the file has a `.symtab` section.
    pub has_symtab: bool,
    /// Whether the file has DWARF (`.debug_info`).
    pub has_dwarf: bool,
    /// Symbols (unsorted), only when asked for; names as the file spells them (mangled:
    /// [`crate::SymbolTable::demangling`] demangles them), `name@plt` ones demangled.
    pub symbols: Vec<Symbol>,
    /// `name@plt` symbols synthesized from `.plt` and `.rela.plt`/`.rel.plt`, only when
    /// symbols are asked for.
    pub plt: Vec<Symbol>,
}

/// Converts a file offset to an SVMA with the PT_LOAD segments (the first segment whose file
/// range holds the offset).
pub fn offset_to_svma(segments: &[Segment], offset: u64) -> Option<u64> {
    segments
        .iter()
        .find(|s| offset >= s.offset && offset - s.offset < s.filesz.max(1))
        .map(|s| offset - s.offset + s.vaddr)
}

/// Opens and maps a file read-only.
pub fn map_file(path: &Path) -> Result<memmap2::Mmap, SymbolError> {
    let file = std::fs::File::open(path).map_err(|source| SymbolError::Io {
        path: path.display().to_string(),
        source,
    })?;
    // SAFETY: read-only private mapping; a file truncated under us can SIGBUS, the same risk
    // every symbolizer (perf, addr2line) takes with mmap.
    unsafe { memmap2::Mmap::map(&file) }.map_err(|source| SymbolError::Io {
        path: path.display().to_string(),
        source,
    })
}

/// Reads the facts of an ELF image; `want_symbols` also collects its symbols.
pub fn read_elf(data: &[u8], path: &str, want_symbols: bool) -> Result<ElfFacts, SymbolError> {
    let bad = |msg: String| SymbolError::Elf {
        path: path.to_string(),
        msg,
    };
    let generic = object::File::parse(data).map_err(|e| bad(e.to_string()))?;
    let mut facts = ElfFacts {
        build_id: generic.build_id().ok().flatten().map(<[u8]>::to_vec),
        debuglink: generic
            .gnu_debuglink()
            .ok()
            .flatten()
            .map(|(name, _crc)| String::from_utf8_lossy(name).into_owned()),
        debuglink_crc: generic.gnu_debuglink().ok().flatten().map(|(_, crc)| crc),
        ..ElfFacts::default()
    };
    match generic {
        object::File::Elf64(_) => {
            read_raw::<elf::FileHeader64<Endianness>>(data, want_symbols, &mut facts)
        }
        object::File::Elf32(_) => {
            read_raw::<elf::FileHeader32<Endianness>>(data, want_symbols, &mut facts)
        }
        _ => return Err(bad("not an ELF file".into())),
    }
    .map_err(|e| bad(e.to_string()))?;
    if want_symbols && !facts.has_symtab {
        facts.symbols.extend(mini_debuginfo_symbols(&generic, path));
    }
    Ok(facts)
}

/// Symbols of the `.gnu_debugdata` section (MiniDebugInfo, as Fedora ships: an xz-compressed
/// ELF holding a `.symtab` of the functions `.dynsym` lacks), as perf's `dso__load` tries it
/// for a file without `.symtab`. Empty when absent or unreadable.
fn mini_debuginfo_symbols(file: &object::File<'_>, path: &str) -> Vec<Symbol> {
    use object::{Object, ObjectSection};
    let Some(compressed) = file
        .section_by_name(".gnu_debugdata")
        .and_then(|s| s.data().ok())
    else {
        return Vec::new();
    };
    // Bounded: a hostile section cannot inflate without end (real ones are a few MB).
    let mut inner = BoundedSink {
        data: Vec::new(),
        limit: MINI_DEBUGINFO_LIMIT,
    };
    if lzma_rs::xz_decompress(&mut std::io::Cursor::new(compressed), &mut inner).is_err() {
        return Vec::new();
    }
    let inner = inner.data;
    // The inner ELF has a .symtab, so this does not recurse further.
    match read_elf(&inner, path, true) {
        Ok(facts) if facts.has_symtab => facts.symbols,
        _ => Vec::new(),
    }
}

/// The most a `.gnu_debugdata` section may decompress to (Fedora's are a few MB).
const MINI_DEBUGINFO_LIMIT: usize = 256 << 20;

/// A `Write` into memory that fails past `limit` bytes.
struct BoundedSink {
    data: Vec<u8>,
    limit: usize,
}

impl std::io::Write for BoundedSink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.data.len() + buf.len() > self.limit {
            return Err(std::io::Error::other("MiniDebugInfo larger than its bound"));
        }
        self.data.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn read_raw<H: FileHeader<Endian = Endianness>>(
    data: &[u8],
    want_symbols: bool,
    facts: &mut ElfFacts,
) -> object::read::Result<()> {
    let header = H::parse(data)?;
    let endian = header.endian()?;
    for ph in header.program_headers(endian, data)? {
        if ph.p_type(endian) == elf::PT_LOAD {
            facts.segments.push(Segment {
                offset: ph.p_offset(endian).into(),
                filesz: ph.p_filesz(endian).into(),
                vaddr: ph.p_vaddr(endian).into(),
            });
        }
    }
    let sections = header.sections(endian, data)?;
    for s in sections.iter() {
        let name = sections.section_name(endian, s).unwrap_or(b"");
        if s.sh_type(endian) == elf::SHT_SYMTAB {
            facts.has_symtab = true;
        }
        if name == b".debug_info" || name == b".zdebug_info" {
            facts.has_dwarf = s.sh_type(endian) != elf::SHT_NOBITS;
        }
    }
    if !want_symbols {
        return Ok(());
    }
    facts.plt = synthesize_plt(header, endian, data, &sections).unwrap_or_default();
    // perf loads .symtab and then .dynsym into one table; duplicates are resolved later.
    for sh_type in [elf::SHT_SYMTAB, elf::SHT_DYNSYM] {
        let table = sections.symbols(endian, data, sh_type)?;
        for sym in table.symbols() {
            let st_type = sym.st_type();
            let shndx = sym.st_shndx(endian);
            if sym.st_name(endian) == 0 || shndx == elf::SHN_UNDEF || shndx == elf::SHN_ABS {
                continue;
            }
            let is_func = st_type == elf::STT_FUNC || st_type == elf::STT_GNU_IFUNC;
            let is_object = st_type == elf::STT_OBJECT;
            let vis = sym.st_visibility();
            let is_label =
                st_type == elf::STT_NOTYPE && vis != elf::STV_HIDDEN && vis != elf::STV_INTERNAL;
            if !is_func && !is_object && !is_label {
                continue;
            }
            // Extended section indices (SHN_XINDEX) are rare; such symbols are skipped.
            let Ok(section) = sections.section(object::SectionIndex(usize::from(shndx.0))) else {
                continue;
            };
            let flags: u64 = section.sh_flags(endian).0;
            if flags & elf::SHF_ALLOC.0 == 0 {
                continue;
            }
            if !is_func && !is_object {
                // Labels count only in text sections (perf's elf_sec__filter).
                let sname = sections.section_name(endian, section).unwrap_or(b"");
                if !sname.windows(4).any(|w| w == b"text") {
                    continue;
                }
            }
            let Ok(raw_name) = table.symbol_name(endian, sym) else {
                continue;
            };
            let name = String::from_utf8_lossy(raw_name);
            let start: u64 = sym.st_value(endian).into();
            let size: u64 = sym.st_size(endian).into();
            let binding = match sym.st_bind() {
                elf::STB_GLOBAL => Binding::Global,
                elf::STB_WEAK => Binding::Weak,
                _ => Binding::Local,
            };
            facts.symbols.push(Symbol {
                // Demangled on first use by the table (SymbolTable::demangling).
                name: name.into_owned(),
                start,
                end: start.saturating_add(size),
                binding,
            });
        }
    }
    Ok(())
}

/// perf 6.1's `dso__synthesize_plt_symbols`: one `name@plt` symbol per `.rela.plt` (or
/// `.rel.plt`) entry, in relocation order, `.plt` entry size apart after a one-entry header.
/// (perf 6.1 does not know `.plt.sec`; neither does this, to give the same names.) AArch64's
/// PLT has a 32-byte header before its 16-byte entries, as later perfs' `get_plt_sizes`
/// know; perf 6.1 assumed one entry of header there and named every stub after the next one.
fn synthesize_plt<H: FileHeader<Endian = Endianness>>(
    header: &H,
    endian: Endianness,
    data: &[u8],
    sections: &object::read::elf::SectionTable<'_, H>,
) -> Option<Vec<Symbol>> {
    use object::read::elf::{Rel, Rela};
    let (_, plt) = sections.section_by_name(endian, b".plt")?;
    let (header_size, entsize): (u64, u64) = if header.e_machine(endian) == elf::EM_AARCH64 {
        (32, 16)
    } else {
        let entsize = plt.sh_entsize(endian).into();
        (entsize, entsize)
    };
    if entsize == 0 {
        return None;
    }
    let dynsyms = sections.symbols(endian, data, elf::SHT_DYNSYM).ok()?;
    let rel_sec = sections
        .section_by_name(endian, b".rela.plt")
        .or_else(|| sections.section_by_name(endian, b".rel.plt"))?
        .1;
    if rel_sec.sh_link(endian) as usize != dynsyms.section().0 {
        return None;
    }
    let mut sym_indices: Vec<u32> = Vec::new();
    let is_mips64el = header.is_mips64el(endian);
    if let Ok(Some((relas, _))) = rel_sec.rela(endian, data) {
        sym_indices.extend(relas.iter().map(|r| r.r_sym(endian, is_mips64el)));
    } else if let Ok(Some((rels, _))) = rel_sec.rel(endian, data) {
        sym_indices.extend(rels.iter().map(|r| r.r_sym(endian)));
    }
    let mut addr: u64 = plt.sh_addr(endian).into();
    addr = addr.saturating_add(header_size);
    let mut out = Vec::with_capacity(sym_indices.len());
    for idx in sym_indices {
        let name = dynsyms
            .symbol(object::SymbolIndex(idx as usize))
            .ok()
            .and_then(|s| dynsyms.symbol_name(endian, s).ok())
            .map(|n| demangle(&String::from_utf8_lossy(n)))
            .unwrap_or_default();
        out.push(Symbol {
            name: format!("{name}@plt"),
            start: addr,
            end: addr.saturating_add(entsize),
            binding: Binding::Global,
        });
        addr = addr.saturating_add(entsize);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_offset_to_svma_uses_load_segments() {
        let segs = [
            Segment {
                offset: 0,
                filesz: 0x1000,
                vaddr: 0,
            },
            Segment {
                offset: 0x1000,
                filesz: 0x2000,
                vaddr: 0x401000,
            },
        ];
        assert_eq!(offset_to_svma(&segs, 0x1234), Some(0x401234));
        assert_eq!(offset_to_svma(&segs, 0x10), Some(0x10));
        assert_eq!(offset_to_svma(&segs, 0x5000), None);
    }

    #[test]
    fn test_read_elf_rejects_garbage() {
        assert!(read_elf(b"definitely not an elf file", "x", true).is_err());
    }

    #[test]
    fn test_read_elf_own_binary_has_symbols_and_segments() {
        let exe = std::env::current_exe().unwrap();
        let map = map_file(&exe).unwrap();
        let facts = read_elf(&map, "self", true).unwrap();
        assert!(!facts.segments.is_empty());
        assert!(facts
            .symbols
            .iter()
            .any(|s| s.name.contains("test_read_elf_own_binary")));
    }

    /// Runs `sh -c script` in `dir`; false when it fails (a tool is missing).
    fn shell(dir: &Path, script: &str) -> bool {
        std::process::Command::new("sh")
            .arg("-c")
            .arg(script)
            .current_dir(dir)
            .status()
            .is_ok_and(|s| s.success())
    }

    /// Fedora's MiniDebugInfo recipe (find-debuginfo's add_minidebug): the functions missing
    /// from .dynsym go into an xz-compressed .symtab-only ELF in `.gnu_debugdata`, then the
    /// binary is stripped. The static hot function must come back from it.
    #[test]
    fn test_read_elf_mini_debuginfo_symbols() {
        // Inside the checkout (target/test-tmp), never in /tmp.
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../target/test-tmp")
            .join(format!("culprit-minidebug-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("w.c"),
            "static int __attribute__((noinline)) hot_minidebug_fn(int x) \
             { return x * 3 + 1; }\nint main(int c, char **v) { (void)v; \
             return hot_minidebug_fn(c); }\n",
        )
        .unwrap();
        let recipe = "gcc -O1 -g -o w w.c && \
            nm -D w --format=posix --defined-only | awk '{print $1}' | sort > dynsyms && \
            nm w --format=posix --defined-only | awk '{ if ($2 == \"T\" || $2 == \"t\" || $2 == \"D\") print $1 }' | sort > funcsyms && \
            comm -13 dynsyms funcsyms > keep_symbols && \
            objcopy --only-keep-debug w w.dbg && \
            objcopy -S --remove-section .gdb_index --remove-section .comment --keep-symbols=keep_symbols w.dbg mini && \
            xz -f mini && strip --strip-all -R .comment w && \
            objcopy --add-section .gnu_debugdata=mini.xz w";
        if !shell(&dir, recipe) {
            let _ = std::fs::remove_dir_all(&dir);
            // .ci/run's machine has gcc, binutils and xz: there it must run.
            culprit_testkit::require_tool(
                "test_read_elf_mini_debuginfo_symbols",
                "gcc/binutils/xz missing: the MiniDebugInfo binary was not built",
            );
            return;
        }
        let map = map_file(&dir.join("w")).unwrap();
        let facts = read_elf(&map, "w", true).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        assert!(!facts.has_symtab);
        assert!(
            facts.symbols.iter().any(|s| s.name == "hot_minidebug_fn"),
            "{:?}",
            facts.symbols
        );
    }

    /// The decompression bound: past it the write fails (and the section gives no symbols).
    #[test]
    fn test_mini_debuginfo_sink_is_bounded() {
        use std::io::Write;
        let mut sink = BoundedSink {
            data: Vec::new(),
            limit: 4,
        };
        assert!(sink.write_all(b"abcd").is_ok());
        assert!(sink.write_all(b"e").is_err());
        assert_eq!(sink.data, b"abcd");
    }
}
