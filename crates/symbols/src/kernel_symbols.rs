//! Kernel symbols for the symbolizer: the running kernel's kallsyms (or perf's cached
//! copy when it is provably the same table), the kallsyms recorded in a profile, vmlinux
//! files, module names, and the kernel's lock text ranges.

use std::path::Path;

use super::*;

/// The running kernel's symbols: `opts.kallsyms` (`/proc/kallsyms`, which the kernel formats
/// slowly: ~50 ms for 10^5 lines), or perf's build-id cache copy of it when that copy is
/// provably the same table: the cache directory is the running kernel's build-id, no module
/// is loaded (their addresses could differ from the copy's), the copy lists no module (only
/// pseudo-modules such as ftrace trampolines), and
/// its `_text` is where the running kernel's is (KASLR moves the kernel at each boot; the
/// first lines of kallsyms show it). Anything else reads `opts.kallsyms`.
pub(crate) fn read_running_kallsyms(opts: &SymbolizerOptions) -> std::io::Result<kernel::Kallsyms> {
    if let Some(k) = cached_running_kallsyms(opts) {
        return Ok(k);
    }
    read_kallsyms(&opts.kallsyms)
}

/// Reads and parses a kallsyms file. The names are copied out of the text read: kept, it
/// would hold twice their size resident (reading `/proc/kallsyms` takes far longer than the
/// copy; perf's cached copy is mapped instead, see [`KallsymsText::release_pages`]).
pub(crate) fn read_kallsyms(path: &Path) -> std::io::Result<kernel::Kallsyms> {
    std::fs::read(path).map(|text| kernel::parse_kallsyms_text(Arc::new(text)).with_own_names())
}

/// A kallsyms file's bytes: mapped when it is a regular file (perf's cached copy: no copy
/// into fresh memory; the tables keep the mapping for their names), else read.
pub(crate) fn map_or_read(path: &Path) -> Option<KallsymsText> {
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
pub(crate) enum KallsymsText {
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
pub(crate) fn cached_running_kallsyms(opts: &SymbolizerOptions) -> Option<kernel::Kallsyms> {
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

/// Module name as kallsyms prints it, from a DSO path (`[kvm]`, `/lib/…/kvm-amd.ko.xz`).
pub(crate) fn module_name(path: &str) -> String {
    if let Some(inner) = path.strip_prefix('[').and_then(|p| p.strip_suffix(']')) {
        return inner.to_string();
    }
    let file = path.rsplit('/').next().unwrap_or(path);
    let stem = file.split(".ko").next().unwrap_or(file);
    stem.replace('-', "_")
}

impl Symbolizer {
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
    pub(crate) fn may_read_running_kernel(&self) -> bool {
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

    /// The kernel table and module tables, loaded once.
    pub(crate) fn kernel_tables(
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

    /// The kallsyms file of the recorded kernel ([`KernelSymbols::Recorded`]), or why there
    /// is none: this machine's when the profile shows it was recorded on this kernel (the
    /// same build-id; without a recorded build-id, the same release), else perf's cached
    /// copy of the recorded build-id's.
    pub(crate) fn recorded_kallsyms(
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
    pub(crate) fn vmlinux_table(&mut self, path: &Path, recorded: Option<&[u8]>) -> Option<u32> {
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
                Some(self.add_table(SymbolTable::demangling(f.symbols)))
            }
            Err(e) => {
                self.warn("vmlinux", format!("{e}: kernel symbols unknown"));
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_module_name() {
        assert_eq!(module_name("[kvm]"), "kvm");
        assert_eq!(
            module_name("/lib/modules/6.1/kernel/kvm-amd.ko.xz"),
            "kvm_amd"
        );
    }
}
