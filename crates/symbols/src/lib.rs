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
mod debugfile;
pub mod debuginfod;
mod demangle;
pub mod disasm;
mod elf;
mod input;
mod jit;
pub mod jitdump;
mod kernel;
mod lines;
mod perfmap;
mod split_dwarf;
mod table;
pub mod unwind;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use culprit_decode::model::{DsoId, DsoKind, Location, Profile};

pub use code_lines::{CodeLine, LineFrame};
pub use demangle::demangle;
pub use elf::Segment;
pub use input::{ProfileInput, ReadPlan};
pub use kernel::{parse_kallsyms, parse_kallsyms_bytes, parse_kallsyms_text, Kallsyms};
pub use table::{Binding, SharedText, Symbol, SymbolRef, SymbolTable, SymbolTableBuilder};

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

/// A loaded ELF file's state and its warnings (keyed like [`Symbolizer::warn`]), not given
/// yet.
type LoadedElf = (DsoState, Vec<(String, String)>);

/// Kernel symbols read and parsed before the first kernel lookup.
enum Prefetched {
    /// Coming, on a thread of the symbolizer's own.
    Thread(std::thread::JoinHandle<std::io::Result<kernel::Kallsyms>>),
    /// Read.
    Ready(std::io::Result<kernel::Kallsyms>),
}

impl SymbolizerOptions {
    /// Where to read the DSO recorded at `path`: under [`SymbolizerOptions::symfs`] when that
    /// has it, else `path` itself.
    pub fn dso_file(&self, path: &str) -> PathBuf {
        if let Some(root) = &self.symfs {
            let p = root.join(path.trim_start_matches('/'));
            if p.exists() {
                return p;
            }
        }
        PathBuf::from(path)
    }

    /// perf's build-id cache copy of a kernel's kallsyms
    /// (`~/.debug/[kernel.kallsyms]/ID/kallsyms`), if the cache has it.
    fn cached_kallsyms(&self, build_id: &[u8]) -> Option<PathBuf> {
        let p = self
            .buildid_cache
            .as_ref()?
            .join("[kernel.kallsyms]")
            .join(hex(build_id))
            .join("kallsyms");
        p.exists().then_some(p)
    }

    /// perf's build-id cache copy of the file with this build-id
    /// (`~/.debug/.build-id/xx/rest/elf`), if the cache has it.
    pub(crate) fn cached_elf(&self, build_id: &[u8]) -> Option<PathBuf> {
        let cache = self.buildid_cache.as_ref()?;
        let h = hex(build_id);
        let p = cache
            .join(".build-id")
            .join(h.get(..2)?)
            .join(h.get(2..)?)
            .join("elf");
        p.is_file().then_some(p)
    }
}

/// Whether a recorded build-id (perf pads it with zeros to 20 bytes) matches a file's.
pub fn same_build_id(recorded: &[u8], actual: &[u8]) -> bool {
    if recorded.len() >= actual.len() {
        recorded[..actual.len()] == *actual && recorded[actual.len()..].iter().all(|&b| b == 0)
    } else {
        false
    }
}

/// The running kernel's symbols: `opts.kallsyms` (`/proc/kallsyms`, which the kernel formats
/// slowly: ~50 ms for 10^5 lines), or perf's build-id cache copy of it when that copy is
/// provably the same table: the cache directory is the running kernel's build-id, no module
/// is loaded (their addresses could differ from the copy's), the copy lists no module (only
/// pseudo-modules such as ftrace trampolines), and
/// its `_text` is where the running kernel's is (KASLR moves the kernel at each boot; the
/// first lines of kallsyms show it). Anything else reads `opts.kallsyms`.
fn read_running_kallsyms(opts: &SymbolizerOptions) -> std::io::Result<kernel::Kallsyms> {
    if let Some(k) = cached_running_kallsyms(opts) {
        return Ok(k);
    }
    read_kallsyms(&opts.kallsyms)
}

/// Reads and parses a kallsyms file. The names are copied out of the text read: kept, it
/// would hold twice their size resident (reading `/proc/kallsyms` takes far longer than the
/// copy; perf's cached copy is mapped instead, see [`KallsymsText::release_pages`]).
fn read_kallsyms(path: &Path) -> std::io::Result<kernel::Kallsyms> {
    std::fs::read(path).map(|text| kernel::parse_kallsyms_text(Arc::new(text)).with_own_names())
}

/// A kallsyms file's bytes: mapped when it is a regular file (perf's cached copy: no copy
/// into fresh memory; the tables keep the mapping for their names), else read.
fn map_or_read(path: &Path) -> Option<KallsymsText> {
    let file = std::fs::File::open(path).ok()?;
    if file.metadata().ok()?.len() > 0 {
        // SAFETY: a read-only private mapping, read as bytes only (checked as UTF-8 before
        // names are taken from it); perf writes its cache copies once.
        if let Ok(map) = unsafe { memmap2::Mmap::map(&file) } {
            return Some(KallsymsText::Mapped(map));
        }
    }
    std::fs::read(path).ok().map(KallsymsText::Read)
}

/// The bytes of a kallsyms file, see [`map_or_read`].
enum KallsymsText {
    Mapped(memmap2::Mmap),
    Read(Vec<u8>),
}

impl KallsymsText {
    /// Takes a parsed mapping's pages out of the process's resident set: the parse touched
    /// all of the file (5 MB for 10^5 lines), the tables read only the names they are asked
    /// for, and those pages come back from the page cache when they are (keeping them held
    /// the whole file resident in `culprit top` and the reports).
    fn release_pages(&self) {
        if let KallsymsText::Mapped(map) = self {
            // SAFETY: a read-only private mapping is never written, so dropping its pages
            // loses nothing: a later read maps the file's page again.
            let _ = unsafe { map.unchecked_advise(memmap2::UncheckedAdvice::DontNeed) };
        }
    }
}

impl std::ops::Deref for KallsymsText {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            KallsymsText::Mapped(m) => m,
            KallsymsText::Read(v) => v,
        }
    }
}

impl AsRef<[u8]> for KallsymsText {
    fn as_ref(&self) -> &[u8] {
        self
    }
}

/// perf's cached kallsyms of the running kernel, if it provably matches (see
/// [`read_running_kallsyms`]).
fn cached_running_kallsyms(opts: &SymbolizerOptions) -> Option<kernel::Kallsyms> {
    let notes = std::fs::read(&opts.kernel_notes).ok()?;
    let running = kernel::build_id_from_notes(&notes)?;
    let copy = opts.cached_kallsyms(&running)?;
    // No module support (no file) or none loaded.
    if let Ok(m) = std::fs::read_to_string(&opts.modules) {
        if m.lines().any(|l| !l.trim().is_empty()) {
            return None;
        }
    }
    // `_text` comes within the first lines: read only the start of the kernel's file.
    let mut head = Vec::with_capacity(64 << 10);
    std::io::Read::read_to_end(
        &mut std::io::Read::take(std::fs::File::open(&opts.kallsyms).ok()?, 64 << 10),
        &mut head,
    )
    .ok()?;
    let now = kernel::text_address(&head)?;
    let text = map_or_read(&copy)?;
    if kernel::text_address(&text)? != now {
        return None;
    }
    let text = Arc::new(text);
    let k = kernel::parse_kallsyms_text(text.clone());
    text.release_pages();
    // Pseudo-modules (ftrace trampolines `[__builtin__ftrace]`, BPF programs `[bpf]`) are
    // not loaded modules: /proc/kallsyms lists them too, and they change with time in both.
    let real_module = |m: &String| !(m.starts_with("__builtin") || m == "bpf");
    (!k.modules.keys().any(real_module) && !k.all_zero).then_some(k)
}

/// A copy of this process's vDSO image (its `[vdso]` mapping in /proc/self/maps).
fn own_vdso_image() -> Option<Vec<u8>> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    let line = maps.lines().find(|l| l.trim_end().ends_with("[vdso]"))?;
    let range = line.split_whitespace().next()?;
    let (start, end) = range.split_once('-')?;
    let start = usize::from_str_radix(start, 16).ok()?;
    let end = usize::from_str_radix(end, 16).ok()?;
    let len = end.checked_sub(start)?;
    if len == 0 || len > 1 << 20 {
        return None;
    }
    // SAFETY: /proc/self/maps says [start, end) is mapped readable in this process for its
    // whole lifetime (the vDSO is never unmapped), so the slice is valid while copied.
    let image = unsafe { std::slice::from_raw_parts(start as *const u8, len) };
    Some(image.to_vec())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Module name as kallsyms prints it, from a DSO path (`[kvm]`, `/lib/…/kvm-amd.ko.xz`).
fn module_name(path: &str) -> String {
    if let Some(inner) = path.strip_prefix('[').and_then(|p| p.strip_suffix(']')) {
        return inner.to_string();
    }
    let file = path.rsplit('/').next().unwrap_or(path);
    let stem = file.split(".ko").next().unwrap_or(file);
    stem.replace('-', "_")
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

    /// Starts reading and parsing the kernel's symbols (`/proc/kallsyms`: ~10^5 lines that
    /// the kernel formats slowly) on another thread, to overlap with other work such as
    /// reading the perf.data file. The first kernel lookup uses the result when it reads
    /// that file; otherwise (another kernel, nothing in the kernel) it is dropped.
    pub fn prefetch_kernel_symbols(&mut self) {
        if self.kernel.is_some() || self.prefetched.is_some() || !self.may_read_running_kernel() {
            return;
        }
        let opts = self.opts.clone();
        self.prefetched = std::thread::Builder::new()
            .name("culprit-kallsyms".into())
            .spawn(move || read_running_kallsyms(&opts))
            .ok()
            .map(Prefetched::Thread);
    }

    /// Reads and parses the kernel's symbols now, on the caller's thread (such as a reading
    /// thread before its share of the file, see [`Symbolizer::preload_elf`]); the first
    /// kernel lookup uses them when it reads that file. Nothing when they are already
    /// loaded or coming.
    pub fn load_kernel_symbols(&mut self) {
        if self.kernel.is_none() && self.prefetched.is_none() && self.may_read_running_kernel() {
            self.prefetched = Some(Prefetched::Ready(read_running_kallsyms(&self.opts)));
        }
    }

    /// Whether kernel symbols may come from this machine's kallsyms (not when the user gave
    /// the kernel's symbols).
    fn may_read_running_kernel(&self) -> bool {
        matches!(
            self.opts.kernel_symbols,
            KernelSymbols::Recorded | KernelSymbols::Running
        )
    }

    /// The kernel's lock and scheduler text (`__lock_text_start..__lock_text_end`,
    /// `__sched_text_start..__sched_text_end` in the kallsyms file of the options, or of
    /// `--kallsyms`): where perf's `machine__is_lock_function` says a frame is a lock
    /// function. Empty when the file cannot be read or lacks the markers.
    pub fn kernel_lock_text(&self) -> Vec<std::ops::Range<u64>> {
        let path = match &self.opts.kernel_symbols {
            KernelSymbols::Kallsyms(p) => p.clone(),
            _ => self.opts.kallsyms.clone(),
        };
        let Ok(text) = std::fs::read_to_string(&path) else {
            return Vec::new();
        };
        let mut marks: HashMap<&str, u64> = HashMap::new();
        for line in text.lines() {
            let mut f = line.split_whitespace();
            let (Some(addr), Some(_), Some(name)) = (f.next(), f.next(), f.next()) else {
                continue;
            };
            if matches!(
                name,
                "__lock_text_start" | "__lock_text_end" | "__sched_text_start" | "__sched_text_end"
            ) {
                if let Ok(a) = u64::from_str_radix(addr, 16) {
                    marks.insert(name, a);
                }
            }
        }
        let range = |a: &str, b: &str| Some(*marks.get(a)?..*marks.get(b)?);
        [
            range("__lock_text_start", "__lock_text_end"),
            range("__sched_text_start", "__sched_text_end"),
        ]
        .into_iter()
        .flatten()
        .filter(|r| r.start < r.end)
        .collect()
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

    /// The kernel table and module tables, loaded once.
    fn kernel_tables(
        &mut self,
        profile: &Profile,
        recorded: Option<&[u8]>,
    ) -> (Option<u32>, HashMap<String, u32>) {
        if let Some(k) = &self.kernel {
            return k.clone();
        }
        // The recorded kernel build-id, from the kernel DSO of the profile.
        let recorded = recorded.map(<[u8]>::to_vec).or_else(|| {
            profile
                .dsos
                .iter()
                .find(|d| d.kind == DsoKind::Kernel)
                .and_then(|d| d.build_id.clone())
        });
        let source = match self.opts.kernel_symbols.clone() {
            KernelSymbols::Running => Some(self.opts.kallsyms.clone()),
            KernelSymbols::Kallsyms(path) => Some(path),
            KernelSymbols::Vmlinux(path) => {
                let result = (
                    self.vmlinux_table(&path, recorded.as_deref()),
                    HashMap::new(),
                );
                self.prefetched = None;
                self.kernel = Some(result.clone());
                return result;
            }
            KernelSymbols::Recorded => {
                let source = self.recorded_kallsyms(profile, recorded.as_deref());
                if let Err(why) = &source {
                    self.warn(
                        "kernel-build-id",
                        format!(
                            "{why}: kernel symbols unknown (give the recorded kernel's \
                             symbols with --kallsyms FILE or --vmlinux FILE)"
                        ),
                    );
                }
                source.ok()
            }
        };
        let mut result = (None, HashMap::new());
        let prefetched = self.prefetched.take();
        if let Some(path) = source {
            let parsed = if path == self.opts.kallsyms {
                match prefetched {
                    Some(Prefetched::Thread(thread)) => thread.join().unwrap_or_else(|_| {
                        Err(std::io::Error::other("the kallsyms thread panicked"))
                    }),
                    Some(Prefetched::Ready(parsed)) => parsed,
                    None => read_running_kallsyms(&self.opts),
                }
            } else {
                read_kallsyms(&path)
            };
            match parsed {
                Ok(k) => {
                    if k.all_zero {
                        self.warn(
                            "kptr",
                            format!(
                                "{} shows only zero addresses (kernel.kptr_restrict): kernel \
                                 symbols unknown; run as root or set kernel.kptr_restrict=0",
                                path.display()
                            ),
                        );
                    } else {
                        let kt = self.add_table(k.kernel);
                        let mut mods = HashMap::new();
                        for (name, t) in k.modules {
                            let id = self.add_table(t);
                            mods.insert(name, id);
                        }
                        result = (Some(kt), mods);
                    }
                }
                Err(e) => self.warn(
                    "kallsyms",
                    format!(
                        "cannot read {}: {e}: kernel symbols unknown",
                        path.display()
                    ),
                ),
            }
        }
        self.kernel = Some(result.clone());
        result
    }

    /// The vDSO's symbols from this process's own vDSO mapping (the kernel maps the same
    /// image in every process), through a temporary copy of it that is removed once read.
    fn prepare_own_vdso(&mut self, name: &str) -> DsoState {
        let Some(image) = own_vdso_image() else {
            return DsoState::Unknown;
        };
        let copy = std::env::temp_dir().join(format!("culprit-vdso-{}.so", std::process::id()));
        if std::fs::write(&copy, &image).is_err() {
            return DsoState::Unknown;
        }
        let state = self.prepare_elf(name, &copy, None);
        let _ = std::fs::remove_file(&copy);
        state
    }

    /// The kallsyms file of the recorded kernel ([`KernelSymbols::Recorded`]), or why there
    /// is none: this machine's when the profile shows it was recorded on this kernel (the
    /// same build-id; without a recorded build-id, the same release), else perf's cached
    /// copy of the recorded build-id's.
    fn recorded_kallsyms(
        &self,
        profile: &Profile,
        recorded: Option<&[u8]>,
    ) -> Result<PathBuf, String> {
        let running = std::fs::read(&self.opts.kernel_notes)
            .ok()
            .and_then(|n| kernel::build_id_from_notes(&n));
        if let Some(rec) = recorded {
            if running
                .as_deref()
                .is_some_and(|run| same_build_id(rec, run))
            {
                return Ok(self.opts.kallsyms.clone());
            }
            if let Some(cached) = self.opts.cached_kallsyms(rec) {
                return Ok(cached);
            }
            return Err(match running {
                Some(run) => format!(
                    "the running kernel (build-id {}) is not the one recorded ({}) and perf's \
                     cache has no copy of its kallsyms",
                    hex(&run),
                    hex(rec)
                ),
                None => format!(
                    "this machine's kernel build-id is unknown ({} unreadable), so it cannot \
                     be checked against the recorded one ({}), and perf's cache has no copy \
                     of that kernel's kallsyms",
                    self.opts.kernel_notes.display(),
                    hex(rec)
                ),
            });
        }
        let host = std::fs::read_to_string(&self.opts.os_release)
            .ok()
            .map(|r| r.trim().to_string())
            .filter(|r| !r.is_empty());
        let file = profile
            .meta
            .os_release
            .as_deref()
            .map(str::trim)
            .filter(|r| !r.is_empty());
        match (file, host) {
            (Some(f), Some(h)) if f == h => Ok(self.opts.kallsyms.clone()),
            (Some(f), Some(h)) => Err(format!(
                "the file records no kernel build-id and was recorded on kernel {f}, this \
                 machine runs {h}"
            )),
            (Some(f), None) => Err(format!(
                "the file records no kernel build-id and was recorded on kernel {f}; this \
                 machine's release is unknown ({} unreadable)",
                self.opts.os_release.display()
            )),
            (None, _) => Err(
                "the file records neither the kernel's build-id nor its release, so this \
                 machine's kernel cannot be shown to be the recorded one"
                    .to_string(),
            ),
        }
    }

    /// The kernel table from a kernel ELF image (`--vmlinux`), with a warning when it
    /// cannot be read or its build-id is not the recorded one (its names are still used: the
    /// user chose the file).
    fn vmlinux_table(&mut self, path: &Path, recorded: Option<&[u8]>) -> Option<u32> {
        let name = path.display().to_string();
        let facts = elf::map_file(path).and_then(|data| elf::read_elf(&data, &name, true));
        match facts {
            Ok(f) => {
                if let (Some(rec), Some(b)) = (recorded, f.build_id.as_deref()) {
                    if !same_build_id(rec, b) {
                        self.warn(
                            "vmlinux-build-id",
                            format!(
                                "{name}: build-id {} is not the recorded kernel's ({}): its \
                                 names may be wrong",
                                hex(b),
                                hex(rec)
                            ),
                        );
                    }
                }
                if f.symbols.is_empty() {
                    self.warn(
                        "vmlinux",
                        format!("{name}: no symbols: kernel symbols unknown"),
                    );
                    return None;
                }
                Some(self.add_table(SymbolTable::new(f.symbols)))
            }
            Err(e) => {
                self.warn("vmlinux", format!("{e}: kernel symbols unknown"));
                None
            }
        }
    }

    /// Opens an ELF DSO (`path` is where to read it, `name` how the profile names it).
    fn prepare_elf(&mut self, name: &str, path: &Path, recorded: Option<&[u8]>) -> DsoState {
        let (state, warnings) = self.load_elf(name, path, recorded);
        for (key, msg) in warnings {
            self.warn(&key, msg);
        }
        state
    }

    /// Loads an ELF file's symbols for [`Symbolizer::prepare_elf`], returning the warnings
    /// (keyed like [`Symbolizer::warn`]) instead of giving them.
    fn load_elf(&mut self, name: &str, path: &Path, recorded: Option<&[u8]>) -> LoadedElf {
        let mut warnings = Vec::new();
        let mut path = path.to_path_buf();
        let mut data = elf::map_file(&path).ok();
        let mut facts = data.as_ref().map(|d| elf::read_elf(d, name, true));
        // Build-id check: a different file on disk must not give names; try perf's cache.
        // Like perf, a file without a build-id cannot prove it is the recorded one.
        let mismatch = match (&facts, recorded) {
            (Some(Ok(f)), Some(rec)) => {
                f.build_id.as_deref().is_none_or(|b| !same_build_id(rec, b))
            }
            _ => false,
        };
        if mismatch || data.is_none() {
            let mut cached = recorded.and_then(|rec| self.opts.cached_elf(rec));
            if cached.is_none() {
                // The recorded file from debuginfod, by its build-id.
                let fetched = recorded.and_then(|rec| self.debuginfod_fetch(rec, "executable"));
                cached = fetched.and_then(Result::ok);
            }
            if let Some(p) = cached {
                path = p;
                data = elf::map_file(&path).ok();
                facts = data.as_ref().map(|d| elf::read_elf(d, name, true));
            } else if mismatch {
                let actual = match &facts {
                    Some(Ok(f)) => f.build_id.as_deref().map(hex).unwrap_or_default(),
                    _ => String::new(),
                };
                warnings.push((
                    name.to_string(),
                    format!(
                        "{name}: build-id on disk ({actual}) differs from the recorded one ({}): \
                         its symbols are not shown",
                        recorded.map(hex).unwrap_or_default()
                    ),
                ));
                return (DsoState::Unknown, warnings);
            }
        }
        let facts = match facts {
            Some(Ok(f)) => f,
            Some(Err(e)) => {
                warnings.push((name.to_string(), format!("{e}: its symbols are not shown")));
                return (DsoState::Unknown, warnings);
            }
            None => {
                warnings.push((
                    name.to_string(),
                    format!("{name}: file not found: its symbols are not shown"),
                ));
                return (DsoState::Unknown, warnings);
            }
        };
        drop(data);
        let mut symbols = facts.symbols;
        let mut dwarf_path = facts.has_dwarf.then(|| path.clone());
        let mut symtab_found = facts.has_symtab;
        let link = facts.debuglink.as_deref();
        for (cand, by_link) in self.debug_candidates(name, &path, facts.build_id.as_deref(), link) {
            let Ok(map) = elf::map_file(&cand) else {
                continue;
            };
            // Without a build-id, only the debuglink's CRC shows a debug file is this one's.
            if by_link && facts.build_id.is_none() {
                if let Some(crc) = facts.debuglink_crc {
                    if debugfile::crc32(&map) != crc {
                        continue;
                    }
                }
            }
            let Ok(dbg) = elf::read_elf(&map, &cand.display().to_string(), !symtab_found) else {
                continue;
            };
            if let (Some(a), Some(b)) = (&facts.build_id, &dbg.build_id) {
                if a != b {
                    continue;
                }
            }
            if !symtab_found && dbg.has_symtab {
                symbols = dbg.symbols;
                symtab_found = true;
            }
            if dwarf_path.is_none() && dbg.has_dwarf {
                dwarf_path = Some(cand.clone());
            }
            if symtab_found && dwarf_path.is_some() {
                break;
            }
        }
        let mut debuginfod_failure = None;
        if !symtab_found {
            if let Some(id) = facts.build_id.as_deref().filter(|b| b.len() > 1) {
                match self.debuginfod_fetch(id, "debuginfo") {
                    Some(Ok(p)) => {
                        let dbg = elf::map_file(&p)
                            .ok()
                            .and_then(|m| elf::read_elf(&m, &p.display().to_string(), true).ok())
                            .filter(|d| d.build_id.as_deref() == Some(id));
                        if let Some(dbg) = dbg {
                            if dbg.has_symtab {
                                symbols = dbg.symbols;
                            }
                            if dwarf_path.is_none() && dbg.has_dwarf {
                                dwarf_path = Some(p);
                            }
                        }
                    }
                    Some(Err(why)) => debuginfod_failure = Some(why),
                    _ => {}
                }
            }
        }
        // perf adds the PLT entries of the runtime file to whatever symbols it loaded.
        if !symbols.is_empty() {
            symbols.extend(facts.plt);
        }
        let table = (!symbols.is_empty()).then(|| self.add_table(SymbolTable::new(symbols)));
        if table.is_none() {
            warnings.push((
                name.to_string(),
                match debuginfod_failure {
                    Some(why) => format!(
                        "{name}: no symbols (stripped, no debug file found; debuginfod: {why})"
                    ),
                    None => format!("{name}: no symbols (stripped, no debug file found)"),
                },
            ));
        }
        let state = DsoState::Elf {
            table,
            segments: facts.segments,
            path: path.clone(),
            dwarf_path,
            dwarf: DwarfState::NotTried,
            lines: LinesState::NotTried,
        };
        (state, warnings)
    }

    /// Whether a DSO is anonymous memory (JIT code, named by [`jit`]).
    fn is_jit(&self, profile: &Profile, dso: DsoId) -> bool {
        profile
            .dsos
            .get(dso as usize)
            .is_some_and(|d| d.kind == DsoKind::Anonymous)
    }

    /// Loads the symbols of the ELF file at `path` whose recorded build-id is `build_id`
    /// ahead of the lookups that need them (such as on a reading thread while the profile
    /// is read: see `culprit_decode::file_build_ids`). Its warnings wait for the first
    /// lookup in that file; a file no lookup comes to costs only the time.
    pub fn preload_elf(&mut self, path: &str, build_id: Option<&[u8]>) {
        let key = (path.to_string(), build_id.map(<[u8]>::to_vec));
        if !self.preloaded.contains_key(&key) {
            let file = self.opts.dso_file(path);
            let loaded = self.load_elf(path, &file, build_id);
            self.preloaded.insert(key, loaded);
        }
    }

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
                DsoKind::Kernel | DsoKind::KernelModule | DsoKind::Anonymous
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
                DsoKind::Kernel | DsoKind::KernelModule | DsoKind::Anonymous
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
fn load_line_index(path: &Path) -> Result<lines::LineIndex, SymbolError> {
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
fn load_sections(
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
fn section_bytes(section: &object::Section<'_, '_>) -> Option<Arc<[u8]>> {
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
fn load_dwarf(path: &Path) -> Result<Dwarf, SymbolError> {
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
    Ok(split_dwarf::DwarfContext::new(ctx, path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_same_build_id_allows_perf_padding() {
        assert!(same_build_id(&[1, 2, 3, 0, 0], &[1, 2, 3]));
        assert!(!same_build_id(&[1, 2, 4, 0, 0], &[1, 2, 3]));
        assert!(!same_build_id(&[1, 2], &[1, 2, 3]));
        assert!(!same_build_id(&[1, 2, 3, 0, 1], &[1, 2, 3]));
    }

    #[test]
    fn test_module_name() {
        assert_eq!(module_name("[kvm]"), "kvm");
        assert_eq!(
            module_name("/lib/modules/6.1/kernel/kvm-amd.ko.xz"),
            "kvm_amd"
        );
    }
}
