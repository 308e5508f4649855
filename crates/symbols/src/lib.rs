//! culprit-symbols: turns (DSO, file offset) pairs into function names, source lines and inline
//! frames, from ELF symbol tables, DWARF, separate debug files and kallsyms.
//!
//! The main type is [`Symbolizer`]. It is fed the DSOs of a [`Profile`] and answers
//! [`Query`]s in batches with [`Resolved`] values: a [`SymbolId`] (look the [`Symbol`] up with
//! [`Symbolizer::symbol`]) and the SVMA (the address `objdump` shows). Source lines and inline
//! frames come from [`Symbolizer::source`], which builds the DWARF context of a DSO only on
//! first use, so symbol lookups never pay for DWARF.
//!
//! Where names come from, per DSO kind (mirroring `perf report`):
//! - ELF files: `.symtab` and `.dynsym` (functions, objects, text labels; zero-sized symbols
//!   run to the next symbol; aliases reduced like perf), preferably from a separate debug file
//!   (`/usr/lib/debug/.build-id/xx/yyyy.debug`, `.gnu_debuglink` next to the file, in its
//!   `.debug/` and under `/usr/lib/debug/DIR`, or `/usr/lib/debug/PATH`). If the profile
//!   recorded a build-id and the file on disk differs, perf's build-id cache (`~/.debug`) is
//!   tried, else the DSO gets a warning and no names (never wrong names). With `--symfs`,
//!   the `/usr/lib/debug` places are tried under it first; a debuglink's CRC is checked for
//!   files without a build-id (`src/debugfile.rs`). A file still without symbols asks the
//!   debuginfod servers of `$DEBUGINFOD_URLS` ([`debuginfod`]).
//! - The kernel and modules: kallsyms (the running kernel's, checked against the recorded
//!   build-id through `/sys/kernel/notes`, else perf's cached copy).
//! - JIT code: the process's JIT dump (`jit-PID.dump`, the file a runtime maps and the
//!   recording names, see [`jitdump`]), then its perf map (`/tmp/perf-PID.map`).
//! - `[vdso]`: perf's build-id cache copy, when there is one.
//!
//! ```no_run
//! use culprit_symbols::{Query, Symbolizer, SymbolizerOptions};
//! # fn demo(profile: &culprit_decode::model::Profile) {
//! let mut sym = Symbolizer::new(SymbolizerOptions::default());
//! let q: Vec<Query> = profile.samples.iter().map(|s| Query::of(s.location, s.pid)).collect();
//! for r in sym.resolve_batch(profile, &q) {
//!     let name = r.symbol.and_then(|id| sym.symbol(id)).map(|s| s.name);
//!     println!("{}", name.unwrap_or("[unknown]"));
//! }
//! # }
//! ```
#![deny(missing_docs)]

pub mod archive;
mod code_lines;
mod debug_lookup;
mod debugfile;
pub mod debuginfod;
mod demangle;
pub mod disasm;
mod elf;
mod input;
mod jit;
pub mod jitdump;
mod kernel;
mod kernel_symbols;
mod kmodule;
mod lines;
mod perfmap;
mod source;
mod split_dwarf;
mod table;
pub mod unwind;
mod vdso_jit;

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;

use culprit_decode::model::{DsoId, DsoKind, Location, Profile};

pub use code_lines::{CodeLine, LineFrame};
pub use debug_lookup::same_build_id;
pub use demangle::demangle;
pub use elf::Segment;
pub use input::{ProfileInput, ReadPlan};
pub use kernel::{parse_kallsyms, parse_kallsyms_bytes, parse_kallsyms_text, Kallsyms};
pub use table::{Binding, SharedText, Symbol, SymbolRef, SymbolTable, SymbolTableBuilder};

use debug_lookup::{hex, LoadedElf};
use kernel_symbols::module_name;
use source::load_dwarf;

/// Errors of this crate (most problems become warnings, see [`Symbolizer::warnings`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SymbolError {
    /// A file could not be opened or mapped.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A file is not a readable ELF file.
    #[error("cannot parse ELF file {path}: {msg}")]
    Elf {
        /// The file.
        path: String,
        /// What the parser said.
        msg: String,
    },
}

/// Where the symbolizer looks for files.
#[derive(Debug, Clone)]
pub struct SymbolizerOptions {
    /// Root of separate debug files (`/usr/lib/debug`).
    pub debug_root: PathBuf,
    /// perf's build-id cache (`$PERF_BUILDID_DIR`, else `$HOME/.debug`), if any.
    pub buildid_cache: Option<PathBuf>,
    /// The kallsyms file (`/proc/kallsyms`).
    pub kallsyms: PathBuf,
    /// The running kernel's notes (`/sys/kernel/notes`), for its build-id.
    pub kernel_notes: PathBuf,
    /// The loaded modules (`/proc/modules`): perf's cached kallsyms stands in for the
    /// running kernel's only when none are loaded (see [`Symbolizer::prefetch_kernel_symbols`]).
    pub modules: PathBuf,
    /// Directory of JIT maps (`/tmp`, files `perf-PID.map`).
    pub perf_map_dir: PathBuf,
    /// Where else to look for the JIT dumps (`jit-PID.dump`) the recording names, after the
    /// paths it recorded: the recording's directory (a recording and its dumps copied
    /// elsewhere together).
    pub jitdump_dirs: Vec<PathBuf>,
    /// This machine's kernel release (`/proc/sys/kernel/osrelease`), compared with the
    /// recorded one (HEADER_OSRELEASE) when the file records no kernel build-id.
    pub os_release: PathBuf,
    /// Which kernel's symbols name kernel addresses.
    pub kernel_symbols: KernelSymbols,
    /// perf's `--symfs DIR`: every recorded DSO path is looked up under this directory
    /// first (`DIR/usr/lib/libc.so.6`), then where it was recorded.
    pub symfs: Option<PathBuf>,
    /// The debuginfod client for DSOs without symbols here (`$DEBUGINFOD_URLS` by default;
    /// `None`: never ask, `--no-debuginfod`).
    pub debuginfod: Option<debuginfod::Debuginfod>,
}

/// Where the names of kernel addresses come from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum KernelSymbols {
    /// The recorded kernel's, never another's: this machine's kallsyms when the profile
    /// shows it was recorded on this kernel (the same build-id; without a recorded build-id,
    /// the same release), else perf's cached kallsyms of the recorded build-id
    /// (`~/.debug/[kernel.kallsyms]/ID/kallsyms`), else none (with one warning saying why).
    /// For perf.data files.
    #[default]
    Recorded,
    /// This machine's running kernel's, unchecked: for live views of this machine.
    Running,
    /// A kallsyms file given by the user (`--kallsyms FILE`), unchecked.
    Kallsyms(PathBuf),
    /// The symbols of a kernel ELF image given by the user (`--vmlinux FILE`), at the
    /// addresses it was linked at.
    Vmlinux(PathBuf),
}

impl Default for SymbolizerOptions {
    fn default() -> Self {
        SymbolizerOptions {
            debug_root: PathBuf::from("/usr/lib/debug"),
            buildid_cache: culprit_decode::abi::buildid_cache_dir(),
            kallsyms: PathBuf::from("/proc/kallsyms"),
            kernel_notes: PathBuf::from("/sys/kernel/notes"),
            modules: PathBuf::from("/proc/modules"),
            perf_map_dir: PathBuf::from("/tmp"),
            jitdump_dirs: Vec::new(),
            os_release: PathBuf::from("/proc/sys/kernel/osrelease"),
            kernel_symbols: KernelSymbols::Recorded,
            symfs: None,
            debuginfod: debuginfod::Debuginfod::from_env(),
        }
    }
}

/// One address to symbolize.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Query {
    /// The DSO (None: no mapping covered the address).
    pub dso: Option<DsoId>,
    /// File offset in the DSO (the address itself for the kernel, modules and JIT code).
    pub file_offset: u64,
    /// Process id, for JIT maps (`/tmp/perf-PID.map`).
    pub pid: i32,
}

impl Query {
    /// A query for a location seen in process `pid`.
    pub fn of(location: Location, pid: i32) -> Query {
        Query {
            dso: location.dso,
            file_offset: location.file_offset,
            pid,
        }
    }
}

/// Identifies a symbol across all tables the symbolizer loaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SymbolId {
    /// Table number.
    pub table: u32,
    /// Index in the table.
    pub index: u32,
}

/// The answer to a [`Query`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Resolved {
    /// The symbol containing the address, if known.
    pub symbol: Option<SymbolId>,
    /// The address as the ELF file states it (objdump's address), if it could be computed.
    pub svma: Option<u64>,
}

/// One frame of source information; the first is the innermost inlined function.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceFrame {
    /// Function name (demangled), if DWARF names it.
    pub function: Option<String>,
    /// Source file path.
    pub file: Option<String>,
    /// Line number.
    pub line: Option<u32>,
}

type Dwarf = split_dwarf::DwarfContext;

enum LinesState {
    NotTried,
    Ready(Box<lines::LineIndex>),
    Unavailable,
}

enum DwarfState {
    NotTried,
    Ready(Box<Dwarf>),
    Unavailable,
}

/// How addresses of one DSO are resolved.
enum DsoState {
    /// An ELF file: file offset → SVMA by segments, symbols in SVMA space.
    Elf {
        table: Option<u32>,
        segments: Vec<Segment>,
        /// The file the code was read from (for disassembly).
        path: PathBuf,
        dwarf_path: Option<PathBuf>,
        dwarf: DwarfState,
        /// Line tables alone ([`Symbolizer::source_line`]), parsed lazily.
        lines: LinesState,
    },
    /// Kernel, module: absolute addresses.
    Absolute { table: Option<u32> },
    /// Anonymous memory: JIT dump and perf map of the process (see [`jit`]).
    Jit,
    /// Nothing known.
    Unknown,
}

/// Symbolizes addresses of a profile's DSOs; each DSO is opened once and cached.
pub struct Symbolizer {
    opts: SymbolizerOptions,
    tables: Vec<Arc<SymbolTable>>,
    dsos: HashMap<DsoId, DsoState>,
    kernel: Option<(Option<u32>, HashMap<String, u32>)>,
    jit: HashMap<i32, jit::JitProcess>,
    warnings: Vec<String>,
    warned: HashSet<String>,
    /// [`Symbolizer::prefetch_kernel_symbols`] or [`Symbolizer::load_kernel_symbols`]:
    /// `opts.kallsyms` read and parsed before the first kernel lookup.
    prefetched: Option<Prefetched>,
    /// [`Symbolizer::preload_elf`]: loaded ELF files by path and recorded build-id, with
    /// their warnings not given yet.
    preloaded: HashMap<(String, Option<Vec<u8>>), LoadedElf>,
    /// [`Symbolizer::code_lines`]: functions' first lines per DSO.
    decl_lines: HashMap<DsoId, code_lines::DeclLines>,
    /// debuginfod servers that failed (not asked again).
    debuginfod_down: Vec<String>,
}

/// Kernel symbols read and parsed before the first kernel lookup.
enum Prefetched {
    /// Coming, on a thread of the symbolizer's own.
    Thread(std::thread::JoinHandle<std::io::Result<kernel::Kallsyms>>),
    /// Read.
    Ready(std::io::Result<kernel::Kallsyms>),
}

impl Symbolizer {
    /// A symbolizer with nothing loaded yet.
    pub fn new(opts: SymbolizerOptions) -> Symbolizer {
        Symbolizer {
            opts,
            tables: Vec::new(),
            dsos: HashMap::new(),
            kernel: None,
            jit: HashMap::new(),
            warnings: Vec::new(),
            warned: HashSet::new(),
            prefetched: None,
            preloaded: HashMap::new(),
            decl_lines: HashMap::new(),
            debuginfod_down: Vec::new(),
        }
    }

    /// Warnings so far (missing files, build-id mismatches, hidden kernel addresses), each
    /// once.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    fn warn(&mut self, key: &str, msg: String) {
        if self.warned.insert(key.to_string()) {
            self.warnings.push(msg);
        }
    }

    /// The symbol behind an id.
    pub fn symbol(&self, id: SymbolId) -> Option<SymbolRef<'_>> {
        self.tables.get(id.table as usize)?.get(id.index)
    }

    fn add_table(&mut self, t: SymbolTable) -> u32 {
        self.tables.push(Arc::new(t));
        (self.tables.len() - 1) as u32
    }

    /// Resolves many addresses; the answers are in query order. Queries are processed sorted
    /// by DSO and offset, so each DSO is prepared once and its table walked in order.
    pub fn resolve_batch(&mut self, profile: &Profile, queries: &[Query]) -> Vec<Resolved> {
        // Sorted with the queries themselves (not indices into them: a cache miss per
        // comparison for large batches).
        // Addresses in no mapping have no symbol: left out of the sort.
        let mut order: Vec<(Query, u32)> = queries
            .iter()
            .enumerate()
            .filter(|(_, q)| q.dso.is_some())
            .map(|(i, &q)| (q, i as u32))
            .collect();
        order.sort_unstable();
        let mut out = vec![Resolved::default(); queries.len()];
        for (q, i) in order {
            out[i as usize] = self.resolve(profile, q);
        }
        out
    }

    /// Resolves one address.
    pub fn resolve(&mut self, profile: &Profile, q: Query) -> Resolved {
        let Some(dso) = q.dso else {
            return Resolved::default();
        };
        if !self.dsos.contains_key(&dso) {
            let state = self.prepare(profile, dso);
            self.dsos.insert(dso, state);
        }
        let (table, svma) = match self.dsos.get(&dso) {
            Some(DsoState::Elf {
                table, segments, ..
            }) => (
                *table,
                elf::offset_to_svma(segments.as_slice(), q.file_offset),
            ),
            Some(DsoState::Absolute { table }) => (*table, Some(q.file_offset)),
            Some(DsoState::Jit) => (self.jit_table(profile, dso, q.pid), None),
            Some(DsoState::Unknown) | None => (None, None),
        };
        let addr = match self.dsos.get(&dso) {
            Some(DsoState::Jit) => Some(q.file_offset),
            _ => svma,
        };
        let symbol = match (table, addr) {
            (Some(t), Some(a)) => self.tables[t as usize]
                .find(a)
                .map(|index| SymbolId { table: t, index }),
            _ => None,
        };
        Resolved { symbol, svma }
    }

    fn prepare(&mut self, profile: &Profile, id: DsoId) -> DsoState {
        let Some(dso) = profile.dsos.get(id as usize) else {
            return DsoState::Unknown;
        };
        match dso.kind {
            DsoKind::Kernel => {
                let (k, _) = self.kernel_tables(profile, dso.build_id.as_deref());
                DsoState::Absolute { table: k }
            }
            DsoKind::KernelModule => {
                // The module's own `.ko` first, as perf does; else its kallsyms lines.
                if let Some(table) = self.module_file_table(profile, dso) {
                    return DsoState::Absolute { table: Some(table) };
                }
                let (_, mods) = self.kernel_tables(profile, None);
                let name = module_name(&dso.path);
                DsoState::Absolute {
                    table: mods.get(&name).copied(),
                }
            }
            DsoKind::Vdso => {
                let cached = dso.build_id.as_deref().and_then(|b| {
                    let cache = self.opts.buildid_cache.as_ref()?;
                    let p = cache.join("[vdso]").join(hex(b)).join("vdso");
                    p.exists().then_some(p)
                });
                match cached {
                    Some(p) => self.prepare_elf(&dso.path, p.as_path(), None),
                    // A live view of this machine: every process maps the same vDSO as this
                    // one, so this process's copy names its functions (as `report` does with
                    // perf's cached copy).
                    None if self.opts.kernel_symbols == KernelSymbols::Running => {
                        self.prepare_own_vdso(&dso.path)
                    }
                    None => DsoState::Unknown,
                }
            }
            DsoKind::Anonymous => DsoState::Jit,
            // Its one symbol, named as the code: every offset in the map is in it (as long
            // as its JIT image, when the recording saved it: HEADER_BPF_PROG_INFO).
            DsoKind::Ksymbol => {
                let size = profile
                    .meta
                    .bpf_function(&dso.path)
                    .map_or(0, |f| f.code.len() as u64);
                let size = if size == 0 { u64::MAX } else { size };
                let mut table = SymbolTableBuilder::with_capacity(1, dso.path.len());
                table.push(&dso.path, 0, size, Binding::Global);
                DsoState::Absolute {
                    table: Some(self.add_table(table.build())),
                }
            }
            DsoKind::Elf => {
                let key = (dso.path.clone(), dso.build_id.clone());
                if let Some((state, warnings)) = self.preloaded.remove(&key) {
                    for (key, msg) in warnings {
                        self.warn(&key, msg);
                    }
                    return state;
                }
                let path = self.opts.dso_file(&dso.path);
                self.prepare_elf(&dso.path, &path, dso.build_id.as_deref())
            }
        }
    }
}
