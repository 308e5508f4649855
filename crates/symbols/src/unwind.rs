//! DWARF unwinding of sampled user stacks (`--call-graph dwarf` recordings) with framehop.
//!
//! [`DwarfUnwinder`] implements the decoder's [`UserStackUnwinder`]: the decoder calls it for
//! every sample that carries user registers and a user stack copy, and appends the returned
//! addresses (the user IP, then return addresses) to the sample's call chain.
//!
//! - Per file (path + recorded build-id): `.eh_frame`, `.eh_frame_hdr` (or `.debug_frame`
//!   when there is no `.eh_frame`) and the PT_LOAD segments are read once and cached. The
//!   build-id is checked like the symbolizer does (a different file on disk is not used; perf's
//!   build-id cache `~/.debug` is tried).
//! - Per process: a framehop unwinder whose modules are the process's executable mappings,
//!   added lazily from the decoder's mapping lookup when an address of the chain falls in them,
//!   and replaced when the mapping at that place changed (exec, dlopen after dlclose). At most
//!   [`MAX_PROCESSES`] processes are kept; the least recently used is dropped.
//! - A frame in a file that cannot be opened or has no unwind information ends the chain
//!   there (one warning per file), as does an address outside every mapping.
//! - JIT code is unwound with the `.eh_frame` its JIT dump gave (`JIT_CODE_UNWINDING_INFO`,
//!   V8's `--perf-prof-unwinding-info`): one framehop module per JIT function, laid out as
//!   `perf inject --jit` lays out the ELF file it writes (the `.eh_frame` 8-aligned after the
//!   code, its `.eh_frame_hdr` after it), in a second unwinder per process, since these
//!   functions may lie over a mapped file as perf's injected mappings do (V8's builtins, in
//!   node's own text).
//! - Other mappings without a file (`[vdso]`, JIT code without unwinding records, anonymous
//!   memory) are unwound with frame pointers, as perf's unwinders would fail there anyway.
//!   At most [`MAX_FRAMES`] frames (perf's default max-stack) per sample.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

use culprit_decode::model::{DsoId, DsoKind};
use culprit_decode::unwind::{
    aarch64_reg, x86_64_reg, MapInfo, UnwindArch, UnwindInput, UserStackUnwinder,
};
use framehop::aarch64::{CacheAarch64, UnwindRegsAarch64, UnwinderAarch64};
use framehop::x86_64::{CacheX86_64, UnwindRegsX86_64, UnwinderX86_64};
use framehop::{ExplicitModuleSectionInfo, FrameAddress, Module, Unwinder};
use object::{Object, ObjectSection};

use crate::elf::{self, Segment};
use crate::jit::jitdump_path;
use crate::jitdump::{JitDump, JitFunction};
use crate::{hex, same_build_id, SymbolizerOptions};

/// Frames per sample at most (user IP included), perf's default `--max-stack`.
pub const MAX_FRAMES: usize = 127;
/// Processes whose unwinders are kept at once.
pub const MAX_PROCESSES: usize = 256;

/// A mapped file: its recorded path and build-id.
type FileKey = (String, Option<Vec<u8>>);

/// Section bytes shared by all modules made from one file.
type Bytes = Arc<[u8]>;

/// What unwinding needs from one ELF file.
struct UnwindFile {
    segments: Vec<Segment>,
    text_svma: Option<Range<u64>>,
    got_svma: Option<Range<u64>>,
    eh_frame: Option<(Range<u64>, Bytes)>,
    eh_frame_hdr: Option<(Range<u64>, Bytes)>,
    debug_frame: Option<Bytes>,
}

impl UnwindFile {
    fn has_unwind_info(&self) -> bool {
        self.eh_frame.is_some() || self.debug_frame.is_some()
    }

    /// The framehop module for one mapping of this file, or None if the mapping does not
    /// cover any of the file's segments.
    fn module(&self, m: &MapInfo<'_>) -> Option<Module<Bytes>> {
        // The mapping maps file offsets [pgoff, pgoff + len) to [start, end); any segment in
        // that file range gives the load bias: avma(seg.offset) - seg.vaddr.
        let len = m.end.checked_sub(m.start)?;
        let seg = self
            .segments
            .iter()
            .find(|s| s.offset < m.pgoff.saturating_add(len) && s.offset + s.filesz > m.pgoff)?;
        let bias = m
            .start
            .wrapping_add(seg.offset)
            .wrapping_sub(m.pgoff)
            .wrapping_sub(seg.vaddr);
        let info = ExplicitModuleSectionInfo {
            base_svma: 0,
            text_svma: self.text_svma.clone(),
            got_svma: self.got_svma.clone(),
            eh_frame_svma: self.eh_frame.as_ref().map(|(r, _)| r.clone()),
            eh_frame: self.eh_frame.as_ref().map(|(_, d)| d.clone()),
            eh_frame_hdr_svma: self.eh_frame_hdr.as_ref().map(|(r, _)| r.clone()),
            eh_frame_hdr: self.eh_frame_hdr.as_ref().map(|(_, d)| d.clone()),
            debug_frame: self.debug_frame.clone(),
            ..ExplicitModuleSectionInfo::default()
        };
        Some(Module::new(m.path.to_string(), m.start..m.end, bias, info))
    }
}

/// The framehop module of a JIT function with unwinding information, laid out as
/// `perf inject --jit` writes its ELF file: the code at SVMA 0, `.eh_frame` at the next
/// multiple of 8 after it, `.eh_frame_hdr` right after that (the pc-relative addresses in
/// V8's tables assume this layout). None without unwinding information.
fn jit_module(f: &JitFunction) -> Option<Module<Bytes>> {
    let hdr_len = usize::try_from(f.eh_frame_hdr_size).ok()?;
    let eh_len = f.unwinding.len().checked_sub(hdr_len)?;
    if eh_len == 0 || f.size == 0 {
        return None;
    }
    let eh_at = f.size.checked_add(7)? & !7;
    let eh_end = eh_at + eh_len as u64;
    let (eh_frame, hdr) = f.unwinding.split_at(eh_len);
    let mut eh_frame = eh_frame.to_vec();
    drop_omitted_lsda(&mut eh_frame);
    let info = ExplicitModuleSectionInfo {
        base_svma: 0,
        text_svma: Some(0..f.size),
        eh_frame_svma: Some(eh_at..eh_end),
        eh_frame: Some(Arc::from(eh_frame)),
        eh_frame_hdr_svma: (hdr_len > 0).then(|| eh_end..eh_end + hdr_len as u64),
        eh_frame_hdr: (hdr_len > 0).then(|| Arc::from(hdr)),
        ..ExplicitModuleSectionInfo::default()
    };
    Some(Module::new(f.name.clone(), f.addr..f.end(), f.addr, info))
}

/// Rewrites, in place and at the same size, each CIE whose augmentation says "no LSDA" with
/// an `L` of encoding `DW_EH_PE_omit` (V8 writes `zLR` so): gimli refuses to parse the FDEs
/// of such a CIE (`CannotParseOmitPointerEncoding`), and framehop then falls back to frame
/// pointers, wrong in prologues; libdw, which perf uses, reads them. The `L` and its
/// encoding byte are dropped and the augmentation data padded by two ignored bytes, so
/// no offset in the section moves. CIEs of any other shape are left as they are.
fn drop_omitted_lsda(eh_frame: &mut [u8]) {
    let mut at = 0usize;
    while let Some(len) = eh_frame
        .get(at..at + 4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
    {
        // 0: the terminator; 0xffffffff: 64-bit DWARF, which no JIT writes.
        if len == 0 || len == 0xffff_ffff {
            return;
        }
        let Some(end) = at.checked_add(4 + len).filter(|&e| e <= eh_frame.len()) else {
            return;
        };
        // A CIE: its id (the 4 bytes after the length) is 0.
        if len >= 4 && eh_frame[at + 4..at + 8] == [0, 0, 0, 0] {
            if let Some(cie) = cie_without_omitted_lsda(&eh_frame[at + 8..end]) {
                eh_frame[at + 8..end].copy_from_slice(&cie);
            }
        }
        at = end;
    }
}

/// The body of a CIE (from its version byte) without an `L` augmentation of encoding
/// `DW_EH_PE_omit`, at the same size; None when it has none or a shape not handled.
fn cie_without_omitted_lsda(body: &[u8]) -> Option<Vec<u8>> {
    const OMIT: u8 = 0xff;
    fn leb(b: &[u8], at: &mut usize) -> Option<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = *b.get(*at)?;
            *at += 1;
            v |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Some(v);
            }
        }
        None
    }
    let version = *body.first()?;
    let nul = body.iter().skip(1).position(|&c| c == 0)? + 1;
    let aug = &body[1..nul];
    if aug.first() != Some(&b'z') || !aug.contains(&b'L') || aug.contains(&b'P') {
        return None;
    }
    // Code and data alignment factors, return-address register (a byte in version 1).
    let mut at = nul + 1;
    leb(body, &mut at)?;
    leb(body, &mut at)?;
    if version == 1 {
        at += 1;
    } else {
        leb(body, &mut at)?;
    }
    let factors = body.get(nul + 1..at)?;
    let len_at = at;
    let data_len = usize::try_from(leb(body, &mut at)?).ok()?;
    let data_at = at;
    let data = body.get(data_at..data_at.checked_add(data_len)?)?;
    // One data byte per augmentation letter after 'z' (L, R: encodings; S: none).
    let mut kept = Vec::new();
    let mut data_iter = data.iter();
    for &c in &aug[1..] {
        match c {
            b'L' => {
                if *data_iter.next()? != OMIT {
                    return None;
                }
            }
            b'R' => kept.push(*data_iter.next()?),
            b'S' => {}
            _ => return None,
        }
    }
    kept.extend(data_iter);
    let new_len = kept.len() + 2;
    // The new length must take as many LEB128 bytes as the old one.
    if new_len >= 0x80 || data_at - len_at != 1 {
        return None;
    }
    let mut out = Vec::with_capacity(body.len());
    out.push(version);
    out.extend(aug.iter().filter(|&&c| c != b'L'));
    out.push(0);
    out.extend_from_slice(factors);
    out.push(new_len as u8);
    out.extend_from_slice(&kept);
    out.extend_from_slice(&[0, 0]);
    out.extend_from_slice(&body[data_at + data_len..]);
    (out.len() == body.len()).then_some(out)
}

/// Reads the unwind sections and segments of an ELF image.
fn read_unwind_file(data: &[u8], name: &str) -> Result<UnwindFile, String> {
    let facts = elf::read_elf(data, name, false).map_err(|e| e.to_string())?;
    let file = object::File::parse(data).map_err(|e| format!("{name}: {e}"))?;
    let range = |s: &object::Section<'_, '_>| s.address()..s.address().saturating_add(s.size());
    let with_data = |n: &str| -> Option<(Range<u64>, Bytes)> {
        let s = file.section_by_name(n)?;
        let d = s.data().ok()?;
        (!d.is_empty()).then(|| (range(&s), Arc::from(d)))
    };
    let eh_frame = with_data(".eh_frame");
    let eh_frame_hdr = with_data(".eh_frame_hdr");
    // .debug_frame only matters without .eh_frame (framehop prefers .eh_frame).
    let debug_frame = if eh_frame.is_none() {
        file.section_by_name(".debug_frame")
            .and_then(|s| s.uncompressed_data().ok())
            .filter(|d| !d.is_empty())
            .map(|d| Arc::from(&*d))
    } else {
        None
    };
    Ok(UnwindFile {
        segments: facts.segments,
        text_svma: file.section_by_name(".text").map(|s| range(&s)),
        got_svma: file.section_by_name(".got").map(|s| range(&s)),
        eh_frame,
        eh_frame_hdr,
        debug_frame,
    })
}

/// What the module list of a process says about one mapping.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ModKey {
    end: u64,
    pgoff: u64,
    dso: DsoId,
    /// Whether a framehop module was added (false: unwound with frame pointers, or `stop`).
    added: bool,
    /// Frames in this mapping end the chain (file missing or without unwind info).
    stop: bool,
}

/// framehop's unwinder of one instruction set.
enum ArchUnwinder {
    X86_64(UnwinderX86_64<Bytes>),
    Aarch64(UnwinderAarch64<Bytes>),
}

impl ArchUnwinder {
    fn new(arch: UnwindArch) -> ArchUnwinder {
        match arch {
            UnwindArch::X86_64 => ArchUnwinder::X86_64(UnwinderX86_64::new()),
            UnwindArch::Aarch64 => ArchUnwinder::Aarch64(UnwinderAarch64::new()),
        }
    }

    fn arch(&self) -> UnwindArch {
        match self {
            ArchUnwinder::X86_64(_) => UnwindArch::X86_64,
            ArchUnwinder::Aarch64(_) => UnwindArch::Aarch64,
        }
    }

    fn add_module(&mut self, module: Module<Bytes>) {
        match self {
            ArchUnwinder::X86_64(u) => u.add_module(module),
            ArchUnwinder::Aarch64(u) => u.add_module(module),
        }
    }

    fn remove_module(&mut self, start: u64) {
        match self {
            ArchUnwinder::X86_64(u) => u.remove_module(start),
            ArchUnwinder::Aarch64(u) => u.remove_module(start),
        }
    }
}

/// The registers framehop tracks while it walks a stack, per instruction set.
enum ArchRegs {
    X86_64(UnwindRegsX86_64),
    Aarch64(UnwindRegsAarch64),
}

impl ArchRegs {
    /// The sampled registers unwinding starts from, and the sampled instruction pointer.
    fn sampled(input: &UnwindInput<'_>) -> Option<(u64, ArchRegs)> {
        let (ip, sp) = (input.ip()?, input.sp()?);
        Some(match input.arch {
            UnwindArch::X86_64 => {
                let bp = input.reg(x86_64_reg::BP).unwrap_or(0);
                (ip, ArchRegs::X86_64(UnwindRegsX86_64::new(ip, sp, bp)))
            }
            UnwindArch::Aarch64 => {
                let lr = input.reg(aarch64_reg::LR).unwrap_or(0);
                let fp = input.reg(aarch64_reg::FP).unwrap_or(0);
                (ip, ArchRegs::Aarch64(UnwindRegsAarch64::new(lr, sp, fp)))
            }
        })
    }
}

/// One process: its framehop unwinder and which mappings it holds modules for.
struct Proc {
    unwinder: ArchUnwinder,
    mods: BTreeMap<u64, ModKey>,
    /// The JIT functions with unwinding information, one module each. Apart from
    /// `unwinder`, as `perf inject --jit`'s mappings lie over whatever was mapped there:
    /// V8 describes its builtins, which live in node's own text, whose `.eh_frame` does not.
    jit_unwinder: ArchUnwinder,
    /// JIT functions looked up, by start: their end and whether a module was added.
    jit_mods: BTreeMap<u64, (u64, bool)>,
    last_used: u64,
}

impl Proc {
    /// Drops the JIT function modules overlapping `start..end` (code replaced there).
    fn drop_jit_modules(&mut self, start: u64, end: u64) {
        let stale: Vec<(u64, bool)> = self
            .jit_mods
            .range(..end)
            .rev()
            .take_while(|(_, &(e, _))| e > start)
            .map(|(&s, &(_, added))| (s, added))
            .collect();
        for (s, added) in stale {
            self.jit_mods.remove(&s);
            if added {
                self.jit_unwinder.remove_module(s);
            }
        }
    }
}

/// Counters of what the unwinder did (for docs and tests).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UnwindStats {
    /// Samples unwound.
    pub samples: u64,
    /// Frames produced (user IPs included).
    pub frames: u64,
    /// Files loaded (unwind sections read).
    pub files: u64,
    /// framehop modules added (one per process and executable mapping used).
    pub modules: u64,
    /// Of which JIT functions with unwinding information (from JIT dumps).
    pub jit_modules: u64,
}

/// A process's JIT dump as far as unwinding is concerned.
enum JitState {
    /// No marker MMAP of `jit-PID.dump` yet, when the recording had this many DSOs.
    NoMarker(usize),
    /// The dump (None: named but unreadable; the symbolizer warns).
    Read(Option<Arc<JitDump>>),
}

/// A [`UserStackUnwinder`] for x86-64 and AArch64 Linux user stacks, built on framehop.
pub struct DwarfUnwinder {
    /// Where files are found (perf's build-id cache among them).
    opts: SymbolizerOptions,
    /// By (path, recorded build-id); None: unusable (warned).
    files: HashMap<FileKey, Option<Arc<UnwindFile>>>,
    procs: HashMap<i32, Proc>,
    /// JIT dumps by pid.
    jit: HashMap<i32, JitState>,
    cache: CacheX86_64,
    cache_aarch64: CacheAarch64,
    clock: u64,
    max_frames: usize,
    warnings: Vec<String>,
    warned: HashSet<String>,
    stats: UnwindStats,
}

impl DwarfUnwinder {
    /// An unwinder that finds files like the symbolizer with these options (the recorded
    /// path, else perf's build-id cache).
    pub fn new(opts: &SymbolizerOptions) -> DwarfUnwinder {
        DwarfUnwinder {
            opts: opts.clone(),
            files: HashMap::new(),
            procs: HashMap::new(),
            jit: HashMap::new(),
            cache: CacheX86_64::new(),
            cache_aarch64: CacheAarch64::new(),
            clock: 0,
            max_frames: MAX_FRAMES,
            warnings: Vec::new(),
            warned: HashSet::new(),
            stats: UnwindStats::default(),
        }
    }

    /// Limits the frames per sample (user IP included; at least 1).
    pub fn set_max_frames(&mut self, n: usize) {
        self.max_frames = n.max(1);
    }

    /// Problems met (a file missing, a build-id mismatch, no unwind information), each
    /// file once.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// What was done so far.
    pub fn stats(&self) -> UnwindStats {
        self.stats
    }

    fn warn(&mut self, key: &str, msg: String) {
        if self.warned.insert(key.to_string()) {
            self.warnings.push(msg);
        }
    }

    /// The unwind data of a mapped file, read on first use.
    fn file(&mut self, path: &str, build_id: Option<&[u8]>) -> Option<Arc<UnwindFile>> {
        let key = (path.to_string(), build_id.map(<[u8]>::to_vec));
        if let Some(f) = self.files.get(&key) {
            return f.clone();
        }
        let loaded = self.load(path, build_id);
        let f = match loaded {
            Ok(f) if f.has_unwind_info() => {
                self.stats.files += 1;
                Some(Arc::new(f))
            }
            Ok(_) => {
                self.warn(
                    path,
                    format!("{path}: no .eh_frame or .debug_frame: DWARF call chains stop there"),
                );
                None
            }
            Err(e) => {
                self.warn(path, format!("{e}: DWARF call chains stop there"));
                None
            }
        };
        self.files.insert(key, f.clone());
        f
    }

    fn load(&self, path: &str, build_id: Option<&[u8]>) -> Result<UnwindFile, String> {
        let read = |p: &Path| -> Result<(UnwindFile, Option<Vec<u8>>), String> {
            let map = elf::map_file(p).map_err(|e| e.to_string())?;
            let facts = elf::read_elf(&map, path, false).map_err(|e| e.to_string())?;
            Ok((read_unwind_file(&map, path)?, facts.build_id))
        };
        let on_disk = read(&self.opts.dso_file(path));
        let Some(rec) = build_id else {
            return on_disk.map(|(f, _)| f);
        };
        if matches!(&on_disk, Ok((_, Some(actual))) if same_build_id(rec, actual)) {
            return on_disk.map(|(f, _)| f);
        }
        // Missing or different on disk: perf's build-id cache may have the recorded file.
        if let Some(p) = self.opts.cached_elf(rec) {
            return read(&p).map(|(f, _)| f);
        }
        match on_disk {
            Ok((_, actual)) => Err(format!(
                "{path}: build-id on disk ({}) differs from the recorded one ({})",
                actual.as_deref().map(hex).unwrap_or_default(),
                hex(rec)
            )),
            Err(e) => Err(e),
        }
    }

    /// Makes sure the process's unwinder has a module for the mapping at `addr`, as that
    /// mapping is now (and, in JIT code, for the function at `addr`). Returns false when
    /// unwinding must stop at `addr`.
    fn ensure_module(&mut self, pid: i32, input: &UnwindInput<'_>, addr: u64) -> bool {
        let Some(m) = input.map_at(addr) else {
            return false;
        };
        let current = self
            .procs
            .get(&pid)
            .and_then(|p| p.mods.get(&m.start).copied());
        let stop = match current {
            Some(k) if (k.end, k.pgoff, k.dso) == (m.end, m.pgoff, m.dso) => k.stop,
            _ => self.add_mapping(pid, &m),
        };
        !stop
    }

    /// Adds the module of a mapping new to the process's unwinder (dropping what it
    /// replaced). Returns whether frames in it end the chain.
    fn add_mapping(&mut self, pid: i32, m: &MapInfo<'_>) -> bool {
        let module = match m.kind {
            DsoKind::Elf => match self.file(m.path, m.build_id) {
                Some(f) => f.module(m),
                None => None,
            },
            // No file to read: framehop's frame-pointer fallback handles these (and JIT
            // functions with unwinding information get modules of their own).
            _ => None,
        };
        let stop = m.kind == DsoKind::Elf && module.is_none();
        let Some(proc) = self.procs.get_mut(&pid) else {
            return true;
        };
        // Drop whatever this mapping replaced (framehop modules must not overlap).
        let stale: Vec<(u64, bool)> = proc
            .mods
            .range(..m.end)
            .rev()
            .take_while(|(_, k)| k.end > m.start)
            .map(|(&s, k)| (s, k.added))
            .collect();
        for (s, added) in stale {
            proc.mods.remove(&s);
            if added {
                proc.unwinder.remove_module(s);
            }
        }
        let added = module.is_some();
        if let Some(module) = module {
            proc.unwinder.add_module(module);
            self.stats.modules += 1;
        }
        proc.mods.insert(
            m.start,
            ModKey {
                end: m.end,
                pgoff: m.pgoff,
                dso: m.dso,
                added,
                stop,
            },
        );
        stop
    }

    /// The JIT dump of process `pid`, read once its marker MMAP is in the recording.
    fn jit_dump(&mut self, pid: i32, input: &UnwindInput<'_>) -> Option<Arc<JitDump>> {
        let dsos = input.dsos();
        match self.jit.get(&pid) {
            Some(JitState::Read(dump)) => return dump.clone(),
            // Nothing new since the last look: no marker yet.
            Some(JitState::NoMarker(n)) if *n == dsos.len() => return None,
            _ => {}
        }
        let Some(path) = jitdump_path(&self.opts, dsos, pid) else {
            self.jit.insert(pid, JitState::NoMarker(dsos.len()));
            return None;
        };
        let dump = crate::jitdump::read_shared(&path)
            .ok()
            .filter(|d| d.functions().any(|f| !f.unwinding.is_empty()));
        self.jit.insert(pid, JitState::Read(dump.clone()));
        dump
    }

    /// Whether `addr` is in a JIT function whose dump gave unwinding information; its
    /// module is added to the process's JIT unwinder on first use.
    fn jit_frame(&mut self, pid: i32, input: &UnwindInput<'_>, addr: u64) -> bool {
        if let Some(p) = self.procs.get(&pid) {
            if let Some((_, &(end, added))) = p.jit_mods.range(..=addr).next_back() {
                if addr < end {
                    return added;
                }
            }
        }
        let Some(dump) = self.jit_dump(pid, input) else {
            return false;
        };
        let Some(f) = dump.function_at(addr) else {
            return false;
        };
        let module = jit_module(f);
        let Some(proc) = self.procs.get_mut(&pid) else {
            return false;
        };
        proc.drop_jit_modules(f.addr, f.end());
        let added = module.is_some();
        if let Some(module) = module {
            proc.jit_unwinder.add_module(module);
            self.stats.jit_modules += 1;
        }
        proc.jit_mods.insert(f.addr, (f.end(), added));
        added
    }

    /// The process's entry, created (and the least recently used one dropped) if needed.
    fn touch_proc(&mut self, pid: i32, arch: UnwindArch) {
        self.clock += 1;
        let clock = self.clock;
        if let Some(p) = self.procs.get_mut(&pid) {
            if p.unwinder.arch() == arch {
                p.last_used = clock;
                return;
            }
        }
        if self.procs.len() >= MAX_PROCESSES {
            if let Some(old) = self
                .procs
                .iter()
                .min_by_key(|(_, p)| p.last_used)
                .map(|(&pid, _)| pid)
            {
                self.procs.remove(&old);
            }
        }
        self.procs.insert(
            pid,
            Proc {
                unwinder: ArchUnwinder::new(arch),
                mods: BTreeMap::new(),
                jit_unwinder: ArchUnwinder::new(arch),
                jit_mods: BTreeMap::new(),
                last_used: clock,
            },
        );
    }
}

impl UserStackUnwinder for DwarfUnwinder {
    fn take_warnings(&mut self) -> Vec<String> {
        std::mem::take(&mut self.warnings)
    }

    fn unwind(&mut self, input: &UnwindInput<'_>, out: &mut Vec<u64>) {
        let Some((ip, mut regs)) = ArchRegs::sampled(input) else {
            return;
        };
        self.stats.samples += 1;
        let start = out.len();
        out.push(ip);
        let pid = input.pid;
        self.touch_proc(pid, input.arch);
        let mut addr = FrameAddress::from_instruction_pointer(ip);
        let mut read_stack = |a: u64| input.read_stack(a).ok_or(());
        while out.len() - start < self.max_frames {
            let lookup = addr.address_for_lookup();
            let jit = self.jit_frame(pid, input, lookup);
            if !jit && !self.ensure_module(pid, input, lookup) {
                break;
            }
            let Some(proc) = self.procs.get(&pid) else {
                break;
            };
            let unwinder = if jit {
                &proc.jit_unwinder
            } else {
                &proc.unwinder
            };
            let next = match (unwinder, &mut regs) {
                (ArchUnwinder::X86_64(u), ArchRegs::X86_64(r)) => u
                    .unwind_frame(addr, r, &mut self.cache, &mut read_stack)
                    .map_err(drop),
                (ArchUnwinder::Aarch64(u), ArchRegs::Aarch64(r)) => u
                    .unwind_frame(addr, r, &mut self.cache_aarch64, &mut read_stack)
                    .map_err(drop),
                _ => Err(()),
            };
            match next {
                Ok(Some(ra)) => match FrameAddress::from_return_address(ra) {
                    Some(a) => {
                        out.push(ra);
                        addr = a;
                    }
                    None => break,
                },
                // Ok(None): the outermost frame; Err: the stack copy ended or rules failed.
                _ => break,
            }
        }
        self.stats.frames += (out.len() - start) as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_read_unwind_file_of_own_binary() {
        // The test binary itself: a Rust executable always has .eh_frame and .eh_frame_hdr.
        let exe = std::env::current_exe().unwrap();
        let map = elf::map_file(&exe).unwrap();
        let f = read_unwind_file(&map, "self").unwrap();
        assert!(f.has_unwind_info());
        assert!(f.eh_frame_hdr.is_some());
        assert!(!f.segments.is_empty());
    }

    #[test]
    fn test_missing_file_warns_once_and_stops() {
        let mut u = DwarfUnwinder::new(&SymbolizerOptions {
            buildid_cache: None,
            ..SymbolizerOptions::default()
        });
        assert!(u.file("/nonexistent/libx.so", None).is_none());
        assert!(u.file("/nonexistent/libx.so", None).is_none());
        assert_eq!(u.warnings().len(), 1);
        assert!(u.warnings()[0].contains("/nonexistent/libx.so"));
    }
}

#[cfg(test)]
mod jit_tests {
    use super::*;

    /// `.eh_frame` and `.eh_frame_hdr` of a function of `size` bytes that allocates a 40-byte
    /// frame in its first 4 bytes and frees it at `size - 1` (as workloads/jit_dump.c's
    /// `framed_code`), for perf's layout: `.eh_frame` at `size` rounded up to 8.
    fn framed_unwinding(size: u32) -> (Vec<u8>, Vec<u8>) {
        let eh = (size + 7) & !7;
        let mut e = Vec::new();
        // CIE: "zR", code align 1, data align -8, RA r16, pcrel|sdata4; CFA rsp+8, RA at CFA-8.
        e.extend_from_slice(&20u32.to_le_bytes());
        e.extend_from_slice(&[0, 0, 0, 0, 1, b'z', b'R', 0, 1, 0x78, 16, 1, 0x1b]);
        e.extend_from_slice(&[0x0c, 7, 8, 0x90, 1, 0, 0]);
        // FDE at 24: CIE pointer 28, pc_begin (pcrel to 0), pc_range; advance 4, CFA+48;
        // advance to size-1, CFA+8.
        e.extend_from_slice(&36u32.to_le_bytes());
        e.extend_from_slice(&28u32.to_le_bytes());
        e.extend_from_slice(&(0u32.wrapping_sub(eh + 32)).to_le_bytes());
        e.extend_from_slice(&size.to_le_bytes());
        e.extend_from_slice(&[0, 0x44, 0x0e, 48, 0x40 | (size as u8 - 5), 0x0e, 8]);
        e.resize(64, 0);
        e.extend_from_slice(&[0; 4]);
        // .eh_frame_hdr at 68: eh_frame_ptr pcrel, one table entry datarel.
        let mut h = vec![1, 0x1b, 0x03, 0x3b];
        h.extend_from_slice(&(-72i32).to_le_bytes());
        h.extend_from_slice(&1u32.to_le_bytes());
        h.extend_from_slice(&(0u32.wrapping_sub(eh + 68)).to_le_bytes());
        h.extend_from_slice(&(-44i32).to_le_bytes());
        (e, h)
    }

    #[test]
    fn test_jit_function_unwound_with_its_eh_frame() {
        let (eh_frame, hdr) = framed_unwinding(17);
        let addr = 0x7f00_0000_0200;
        let mut unwinding = eh_frame.clone();
        unwinding.extend_from_slice(&hdr);
        let f = JitFunction {
            name: "js:framed".into(),
            addr,
            size: 17,
            index: 1,
            timestamp: 0,
            code: vec![0x90; 17],
            lines: Vec::new(),
            unwinding,
            eh_frame_hdr_size: hdr.len() as u64,
        };
        let mut u = UnwinderX86_64::new();
        u.add_module(jit_module(&f).expect("a module"));
        let mut cache = CacheX86_64::new();
        // In the loop (offset 10): the return address is at sp + 40; %rbp is the caller's
        // frame, whose own return address a frame-pointer walk would wrongly take.
        let sp = 0x7ffd_0000_1000u64;
        let bp = sp + 0x100;
        let mut stack = vec![0u64; 0x40];
        stack[5] = 0x5555_0000_1234;
        stack[0x21] = 0x5555_0000_9999;
        let mut read = |a: u64| {
            let i = usize::try_from(a.checked_sub(sp).ok_or(())? / 8).map_err(drop)?;
            stack.get(i).copied().ok_or(())
        };
        let mut regs = UnwindRegsX86_64::new(addr + 10, sp, bp);
        let ra = u
            .unwind_frame(
                FrameAddress::from_instruction_pointer(addr + 10),
                &mut regs,
                &mut cache,
                &mut read,
            )
            .unwrap();
        assert_eq!(ra, Some(0x5555_0000_1234));
        assert_eq!(regs.sp(), sp + 48);
    }

    /// The unwinding record Node 20's V8 wrote for an optimized `fib` (`--perf-prof
    /// --perf-prof-unwinding-info`, x86-64): a `zLR` CIE whose LSDA encoding is omit.
    const V8_FIB_UNWINDING: &str = "1800000000000000037a4c520001781002ff1b0c07089001000000002800\
        0000200000005cfeffff7e010000004f0e108602430d060304010d07410e08520c06100000000000000000\
        000000011b033bb0ffffff0100000034feffffd0ffffff";

    #[test]
    fn test_v8_unwinding_record_unwinds_its_prologue() {
        let unwinding: Vec<u8> = (0..V8_FIB_UNWINDING.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&V8_FIB_UNWINDING[i..i + 2], 16).unwrap())
            .collect();
        let addr = 0x7f1e_8a7e_4c40u64;
        let f = JitFunction {
            name: "JS:*fib".into(),
            addr,
            size: 384,
            index: 1,
            timestamp: 0,
            code: Vec::new(),
            lines: Vec::new(),
            unwinding,
            eh_frame_hdr_size: 20,
        };
        let mut u = UnwinderX86_64::new();
        u.add_module(jit_module(&f).expect("a module"));
        let mut cache = CacheX86_64::new();
        let sp = 0x7ffd_0000_1000u64;
        // [sp]: the return address; [sp + 8]: what `push %rbp` (at 0xe) saves over; %rbp
        // still the caller's frame, whose return address is at [bp + 8].
        let bp = sp + 0x100;
        let stack: Vec<u64> = (0..0x40u64).map(|i| 0x5555_0000_0000 + i).collect();
        let mut read = |a: u64| {
            let i = usize::try_from(a.checked_sub(sp).ok_or(())? / 8).map_err(drop)?;
            stack.get(i).copied().ok_or(())
        };
        // Offsets 0 and 8 (before `push %rbp`): CFA = sp + 8; 0xf (after it): CFA = sp + 16.
        for (offset, ra) in [
            (0u64, 0x5555_0000_0000u64),
            (8, 0x5555_0000_0000),
            (0xf, 0x5555_0000_0001),
        ] {
            let mut regs = UnwindRegsX86_64::new(addr + offset, sp, bp);
            let got = u
                .unwind_frame(
                    FrameAddress::from_instruction_pointer(addr + offset),
                    &mut regs,
                    &mut cache,
                    &mut read,
                )
                .unwrap();
            assert_eq!(got, Some(ra), "offset {offset:#x}");
        }
    }

    #[test]
    fn test_cie_rewrite_keeps_size_and_other_cies() {
        // zLR with omit: rewritten to zR, same size; zR and zPLR: unchanged.
        let body = [
            3, b'z', b'L', b'R', 0, 1, 0x78, 16, 2, 0xff, 0x1b, 0x0c, 7, 8,
        ];
        let new = cie_without_omitted_lsda(&body).unwrap();
        assert_eq!(
            new,
            [3, b'z', b'R', 0, 1, 0x78, 16, 3, 0x1b, 0, 0, 0x0c, 7, 8]
        );
        assert!(cie_without_omitted_lsda(&[1, b'z', b'R', 0, 1, 0x78, 16, 1, 0x1b]).is_none());
        assert!(
            cie_without_omitted_lsda(&[1, b'z', b'L', b'R', 0, 1, 0x78, 16, 2, 0x1b, 0x1b])
                .is_none()
        );
        // Damaged input: no panic, no rewrite.
        for cut in 0..body.len() {
            let _ = cie_without_omitted_lsda(&body[..cut]);
        }
        let mut junk = vec![0xffu8; 7];
        drop_omitted_lsda(&mut junk);
        // Entries shorter than a CIE id, cut sections, random bytes: no panic.
        for len in 0u8..12 {
            let mut short = vec![len, 0, 0, 0, 0, 0, 0];
            drop_omitted_lsda(&mut short);
        }
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..2000 {
            let mut bytes: Vec<u8> = (0..(x % 64) as usize)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    if x.is_multiple_of(3) {
                        0
                    } else {
                        x as u8
                    }
                })
                .collect();
            drop_omitted_lsda(&mut bytes);
        }
    }
}
