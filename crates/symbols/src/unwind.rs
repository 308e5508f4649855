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
//!   there (one warning per file), as does an address outside every mapping. Mappings without
//!   a file (`[vdso]`, JIT code, anonymous memory) are unwound with frame pointers, as perf's
//!   unwinders would fail there anyway. At most [`MAX_FRAMES`] frames (perf's default
//!   max-stack) per sample.

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
    last_used: u64,
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
}

/// A [`UserStackUnwinder`] for x86-64 and AArch64 Linux user stacks, built on framehop.
pub struct DwarfUnwinder {
    /// Where files are found (perf's build-id cache among them).
    opts: SymbolizerOptions,
    /// By (path, recorded build-id); None: unusable (warned).
    files: HashMap<FileKey, Option<Arc<UnwindFile>>>,
    procs: HashMap<i32, Proc>,
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
    /// mapping is now. Returns false when unwinding must stop at `addr`.
    fn ensure_module(&mut self, pid: i32, input: &UnwindInput<'_>, addr: u64) -> bool {
        let Some(m) = input.map_at(addr) else {
            return false;
        };
        let current = self
            .procs
            .get(&pid)
            .and_then(|p| p.mods.get(&m.start).copied());
        if let Some(k) = current {
            if (k.end, k.pgoff, k.dso) == (m.end, m.pgoff, m.dso) {
                return !k.stop;
            }
        }
        let module = match m.kind {
            DsoKind::Elf => match self.file(m.path, m.build_id) {
                Some(f) => f.module(&m),
                None => None,
            },
            // No file to read: framehop's frame-pointer fallback handles these.
            _ => None,
        };
        let stop = m.kind == DsoKind::Elf && module.is_none();
        let Some(proc) = self.procs.get_mut(&pid) else {
            return false;
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
        !stop
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
            if !self.ensure_module(pid, input, addr.address_for_lookup()) {
                break;
            }
            let Some(proc) = self.procs.get(&pid) else {
                break;
            };
            let next = match (&proc.unwinder, &mut regs) {
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
