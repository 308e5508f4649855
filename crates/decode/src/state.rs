//! Process, thread and mapping state over time, and DSO / comm interning.
//!
//! perf keeps the same state while it replays a file: COMM names threads (with `COMM_EXEC`
//! the process keeps its maps, as in perf, until the new image's MMAPs replace them), FORK
//! copies the parent's comm (and its maps for a new process), MMAP/MMAP2 add executable
//! mappings that replace what they overlap. Kernel
//! mappings (`[kernel.kallsyms]`, modules) are shared by all processes.

use std::cell::Cell;
use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;

use crate::model::{CpuMode, Dso, DsoId, DsoKind, Location, Profile, StrId};

/// One executable mapping.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Map {
    pub start: u64,
    /// Exclusive end.
    pub end: u64,
    pub pgoff: u64,
    pub dso: DsoId,
    /// Whether addresses map to themselves (kernel, anonymous/JIT) rather than to a file
    /// offset.
    pub identity: bool,
}

/// A HashMap for integer keys (pids, tids, sample ids): FxHash, one multiply per word
/// (SipHash cost ~8% of decoding for one lookup per sample).
pub(crate) type IntMap<K, V> = rustc_hash::FxHashMap<K, V>;

impl Map {
    #[inline(always)]
    fn location(&self, addr: u64) -> Location {
        let file_offset = if self.identity {
            addr
        } else {
            addr.wrapping_sub(self.start).wrapping_add(self.pgoff)
        };
        Location {
            dso: Some(self.dso),
            file_offset,
        }
    }
}

/// Non-overlapping maps keyed by start address (a B-tree: inserting and splitting stay
/// logarithmic whatever order a file lists its mappings in).
#[derive(Debug, Clone)]
pub(crate) struct Maps {
    maps: BTreeMap<u64, Map>,
    /// The maps of the last few successful lookups: consecutive samples and frames mostly
    /// fall in the same few maps (the sampled code, its caller's library), and this skips the
    /// tree walk for them. Cleared by every insert.
    recent: [Cell<Map>; RECENT],
    /// `[start, end)` of each `recent` entry, apart so that a miss reads two words, not a
    /// whole map (`EMPTY_RANGE`: no entry).
    recent_range: [Cell<(u64, u64)>; RECENT],
    /// Slot the next miss replaces (round robin).
    next: Cell<usize>,
    /// The last address range found to hold no map (unwound garbage and data addresses in
    /// call chains fall in a few such gaps); `EMPTY_RANGE` when none.
    gap: Cell<(u64, u64)>,
}

/// A range no address is in (start above end).
const EMPTY_RANGE: (u64, u64) = (u64::MAX, 0);

impl Default for Maps {
    fn default() -> Maps {
        Maps {
            maps: BTreeMap::new(),
            recent: Default::default(),
            recent_range: [const { Cell::new(EMPTY_RANGE) }; RECENT],
            next: Cell::new(0),
            gap: Cell::new(EMPTY_RANGE),
        }
    }
}

/// Size of [`Maps::recent`].
const RECENT: usize = 2;

impl Maps {
    /// Inserts a mapping, trimming or splitting the ones it overlaps (a new mmap over an old
    /// range replaces it, as in the kernel). Returns how many entries were added (net).
    pub(crate) fn insert(&mut self, m: Map) -> usize {
        if m.end <= m.start {
            return 0;
        }
        for c in &self.recent_range {
            c.set(EMPTY_RANGE);
        }
        self.gap.set(EMPTY_RANGE);
        let before = self.maps.len();
        // Overlapping maps start before m.end and end after m.start.
        let overlapping: Vec<Map> = self
            .maps
            .range(..m.end)
            .rev()
            .take_while(|(_, old)| old.end > m.start)
            .map(|(_, old)| *old)
            .collect();
        for old in overlapping {
            self.maps.remove(&old.start);
            if old.start < m.start {
                let left = Map {
                    end: m.start,
                    ..old
                };
                self.maps.insert(left.start, left);
            }
            if old.end > m.end {
                let right = Map {
                    start: m.end,
                    pgoff: old.pgoff.wrapping_add(m.end - old.start),
                    ..old
                };
                self.maps.insert(right.start, right);
            }
        }
        self.maps.insert(m.start, m);
        self.maps.len().saturating_sub(before)
    }

    pub(crate) fn find(&self, addr: u64) -> Option<&Map> {
        let (_, m) = self.maps.range(..=addr).next_back()?;
        (addr < m.end).then_some(m)
    }

    /// [`Maps::find`] through the last-hit cache.
    #[inline(always)]
    fn find_cached(&self, addr: u64) -> Option<Map> {
        for (i, r) in self.recent_range.iter().enumerate() {
            let (start, end) = r.get();
            if start <= addr && addr < end {
                return self.recent.get(i).map(Cell::get);
            }
        }
        let (lo, hi) = self.gap.get();
        if lo <= addr && addr < hi {
            return None;
        }
        self.find_and_remember(addr)
    }

    /// The tree walk behind [`Maps::find_cached`], which remembers what it finds (kept out of
    /// line: the cached path above is inlined into the sample loop).
    #[inline(never)]
    fn find_and_remember(&self, addr: u64) -> Option<Map> {
        let Some(&m) = self.find(addr) else {
            // Remember the gap around `addr`: from the end of the map before it (or 0) to
            // the start of the next one (or the top).
            let lo = self
                .maps
                .range(..=addr)
                .next_back()
                .map_or(0, |(_, m)| m.end);
            let hi = self.maps.range(addr..).next().map_or(u64::MAX, |(&s, _)| s);
            self.gap.set((lo, hi));
            return None;
        };
        let slot = self.next.get() % RECENT;
        if let (Some(c), Some(r)) = (self.recent.get(slot), self.recent_range.get(slot)) {
            c.set(m);
            r.set((m.start, m.end));
        }
        self.next.set(slot + 1);
        Some(m)
    }

    fn len(&self) -> usize {
        self.maps.len()
    }
}

#[derive(Debug, Clone, Copy)]
struct Thread {
    comm: StrId,
    /// Whether the comm was set (by a COMM record, by a fork from a named thread, or
    /// `swapper`), not the `:TID` of a thread first seen unnamed: perf's `comm_set`, which
    /// decides whether a child inherits its parent's name.
    named: bool,
}

#[derive(Hash, PartialEq, Eq)]
struct DsoKey {
    path: String,
    build_id: Option<Vec<u8>>,
    pid: Option<i32>,
}

/// All state of a replay.
#[derive(Default)]
pub(crate) struct State {
    /// Per-process maps, shared copy-on-write between a parent and its forked children
    /// (most children exec right away and never copy).
    procs: IntMap<i32, Rc<Maps>>,
    /// Map entries that copy-on-write may still create; a hostile file of many forks each
    /// followed by an mmap would otherwise copy big map lists quadratically.
    pub(crate) map_budget: usize,
    threads: IntMap<i32, Thread>,
    /// Threads that samples made known (their first sample came before any COMM or FORK).
    pub(crate) sample_threads: u64,
    kernel: Maps,
    dso_index: HashMap<DsoKey, DsoId>,
    comm_index: HashMap<String, StrId>,
    /// Per-thread answers of [`State::thread`] (comm and the process's maps), direct-mapped
    /// by tid: samples of a few threads interleave in time order, and this saves two hash
    /// lookups per sample. Emptied by every change of threads or maps.
    thread_cache: [Option<CachedThread>; THREAD_CACHE],
}

/// Size of [`State::thread_cache`] (a power of two).
const THREAD_CACHE: usize = 16;

/// One entry of [`State::thread_cache`].
#[derive(Debug, Clone)]
struct CachedThread {
    pid: i32,
    tid: i32,
    comm: StrId,
    /// The process's maps at the time of caching (a shared handle: changes empty the cache
    /// before they copy-on-write, so this never forces a copy).
    maps: Option<Rc<Maps>>,
}

impl State {
    pub(crate) fn intern(&mut self, p: &mut Profile, s: &str) -> StrId {
        if let Some(&id) = self.comm_index.get(s) {
            return id;
        }
        let id = p.strings.len() as StrId;
        p.strings.push(s.to_string());
        self.comm_index.insert(s.to_string(), id);
        id
    }

    /// The thread's comm at this point of the replay; perf's `:TID` for unknown threads and
    /// `swapper` for the idle task.
    #[inline]
    pub(crate) fn comm(&mut self, p: &mut Profile, tid: i32) -> StrId {
        match self.threads.get(&tid) {
            Some(t) => t.comm,
            None if tid == 0 => {
                let c = self.intern(p, "swapper");
                self.threads.insert(
                    0,
                    Thread {
                        comm: c,
                        named: true,
                    },
                );
                c
            }
            None => {
                let c = self.intern(p, &format!(":{tid}"));
                self.threads.insert(
                    tid,
                    Thread {
                        comm: c,
                        named: false,
                    },
                );
                c
            }
        }
    }

    /// Whether thread `tid` has a comm already (then a sample of it interns nothing: threads
    /// are never forgotten, so this stays true).
    #[inline]
    pub(crate) fn knows_thread(&self, tid: i32) -> bool {
        self.threads.contains_key(&tid)
    }

    /// The comm of thread `tid` and the maps of process `pid` at this point of the replay
    /// (what every sample needs), through the per-thread cache. Returns the comm and a cache
    /// slot for [`State::slot_maps`].
    #[inline(always)]
    pub(crate) fn thread(&mut self, p: &mut Profile, pid: i32, tid: i32) -> (StrId, usize) {
        let slot = (tid as u32 as usize) & (THREAD_CACHE - 1);
        if let Some(Some(c)) = self.thread_cache.get(slot) {
            if c.tid == tid && c.pid == pid {
                return (c.comm, slot);
            }
        }
        let known = self.threads.len();
        let comm = self.comm(p, tid);
        if self.threads.len() != known {
            self.sample_threads += 1;
        }
        let maps = self.procs.get(&pid).cloned();
        if let Some(e) = self.thread_cache.get_mut(slot) {
            *e = Some(CachedThread {
                pid,
                tid,
                comm,
                maps,
            });
        }
        (comm, slot)
    }

    /// The process maps cached in `slot` by [`State::thread`] (valid until the next change
    /// of state).
    #[inline]
    pub(crate) fn slot_maps(&self, slot: usize) -> Option<&Maps> {
        match self.thread_cache.get(slot) {
            Some(Some(c)) => c.maps.as_deref(),
            _ => None,
        }
    }

    /// Empties the per-thread cache (after any change of threads or maps).
    fn forget_threads(&mut self) {
        for e in &mut self.thread_cache {
            *e = None;
        }
    }

    /// Names thread `tid`. An exec's COMM (`COMM_EXEC`) changes nothing else: exec starts a
    /// new address space, but perf keeps the process's maps and only the new image's MMAPs
    /// replace what they overlap. A sample taken inside execve after the COMM, whose user IP
    /// and stack are still the old image's, resolves to the old libc in perf, and so here
    /// (clearing the maps made those frames `[unknown]`).
    pub(crate) fn set_comm(&mut self, p: &mut Profile, tid: i32, comm: &str) {
        let c = self.intern(p, comm);
        self.threads.insert(
            tid,
            Thread {
                comm: c,
                named: true,
            },
        );
        p.thread_comms.insert(tid, c);
        self.forget_threads();
    }

    pub(crate) fn fork(&mut self, p: &mut Profile, pid: i32, ppid: i32, tid: i32, ptid: i32) {
        // As perf's thread__fork: the child takes its parent's name only where the parent
        // has one; a parent first seen here (its `:PTID`) leaves the child its own `:TID`.
        let parent = self.comm(p, ptid);
        let named = self.threads.get(&ptid).is_some_and(|t| t.named);
        let comm = if named {
            parent
        } else {
            self.intern(p, &format!(":{tid}"))
        };
        self.threads.insert(tid, Thread { comm, named });
        p.thread_comms.insert(tid, comm);
        self.forget_threads();
        if pid != ppid {
            let maps = self.procs.get(&ppid).cloned().unwrap_or_default();
            self.procs.insert(pid, maps);
        }
    }

    /// Interns a DSO by (path, build-id, owning pid for per-process objects).
    pub(crate) fn dso(
        &mut self,
        p: &mut Profile,
        path: &str,
        kernel: bool,
        build_id: Option<&[u8]>,
        pid: i32,
    ) -> (DsoId, DsoKind) {
        let (kind, path, mut short) = classify(path, kernel);
        let owner = (kind == DsoKind::Anonymous).then_some(pid);
        if kind == DsoKind::Anonymous {
            // perf's map__new names code in anonymous memory after the process's perf map
            // (/tmp/perf-PID.map, whether or not it exists), shown as `[JIT] tid PID`.
            if let Some(map_pid) = perf_jit_map(&path, pid) {
                short = format!("[JIT] tid {map_pid}");
            }
        }
        let key = DsoKey {
            path,
            build_id: build_id.map(<[u8]>::to_vec),
            pid: owner,
        };
        if let Some(&id) = self.dso_index.get(&key) {
            return (id, kind);
        }
        let id = p.dsos.len() as DsoId;
        p.dsos.push(Dso {
            path: key.path.clone(),
            short_name: short,
            build_id: key.build_id.clone(),
            kind,
            pid: owner,
        });
        self.dso_index.insert(key, id);
        (id, kind)
    }

    /// Interns the DSO of kernel code a KSYMBOL record names (by its name alone).
    pub(crate) fn ksymbol_dso(&mut self, p: &mut Profile, name: &str) -> DsoId {
        let key = DsoKey {
            path: name.to_string(),
            build_id: None,
            pid: None,
        };
        if let Some(&id) = self.dso_index.get(&key) {
            return id;
        }
        let id = p.dsos.len() as DsoId;
        p.dsos.push(Dso {
            path: name.to_string(),
            short_name: name.to_string(),
            build_id: None,
            kind: DsoKind::Ksymbol,
            pid: None,
        });
        self.dso_index.insert(key, id);
        id
    }

    /// Adds a mapping; false when the map budget is exhausted (the mapping is dropped).
    pub(crate) fn add_map(&mut self, kernel: bool, pid: i32, m: Map) -> bool {
        // Worst case an insert splits one map in two and adds itself: 2 new entries.
        if self.map_budget < 2 {
            return false;
        }
        if kernel {
            self.map_budget -= self.kernel.insert(m);
            return true;
        }
        // The cache holds handles to process maps: drop them before copy-on-write counts.
        self.forget_threads();
        let maps = self.procs.entry(pid).or_default();
        if Rc::strong_count(maps) > 1 {
            // First change after a fork: this process gets its own copy, if affordable.
            let n = maps.len();
            if n + 2 > self.map_budget {
                return false;
            }
            self.map_budget -= n;
        }
        self.map_budget -= Rc::make_mut(maps).insert(m);
        true
    }

    /// Resolves an address with the maps current now.
    #[inline(always)]
    pub(crate) fn resolve(&self, user: Option<&Maps>, mode: CpuMode, addr: u64) -> Location {
        let m = match mode {
            CpuMode::Kernel | CpuMode::GuestKernel => self.kernel.find_cached(addr),
            CpuMode::User => user.and_then(|u| u.find_cached(addr)),
            CpuMode::Unknown => user
                .and_then(|u| u.find_cached(addr))
                .or_else(|| self.kernel.find_cached(addr)),
            CpuMode::Hypervisor | CpuMode::GuestUser => None,
        };
        m.map(|m| m.location(addr))
            .unwrap_or(Location::unmapped(addr))
    }

    #[inline]
    pub(crate) fn user_maps(&self, pid: i32) -> Option<&Maps> {
        self.procs.get(&pid).map(|m| &**m)
    }
}

/// Whether perf names a code mapping of this path after the process's perf map
/// (`/tmp/perf-PID.map`): anonymous memory (`//anon`, `/dev/zero`, `/anon_hugepage`), memory
/// without a file (`[stack…`, `/SYSV…`, `[heap]`), and the perf map itself.
/// Returns the pid of that perf map: the mapping's `pid`, or the one the map's name gives.
fn perf_jit_map(path: &str, pid: i32) -> Option<i32> {
    if let Some(n) = path
        .strip_prefix("/tmp/perf-")
        .and_then(|r| r.strip_suffix(".map"))
    {
        return n.parse().ok();
    }
    let anon = path == "//anon"
        || path.starts_with("/dev/zero")
        || path.starts_with("/anon_hugepage")
        || path.starts_with("[stack")
        || path.starts_with("/SYSV")
        || path == "[heap]";
    anon.then_some(pid)
}

/// DSO kind, canonical path and perf's short name for a mapping's path.
pub(crate) fn classify(path: &str, kernel: bool) -> (DsoKind, String, String) {
    if path.starts_with("[kernel.kallsyms]") || path.starts_with("[guest.kernel.kallsyms") {
        let p = if path.starts_with("[kernel") {
            "[kernel.kallsyms]"
        } else {
            "[guest.kernel.kallsyms]"
        };
        return (DsoKind::Kernel, p.to_string(), p.to_string());
    }
    if kernel {
        // Modules: perf's short name is `[name]` with '-' as '_', extensions stripped.
        let short = if path.starts_with('[') {
            path.to_string()
        } else {
            let base = path.rsplit('/').next().unwrap_or(path);
            let stem = base.split(".ko").next().unwrap_or(base);
            format!("[{}]", stem.replace('-', "_"))
        };
        return (DsoKind::KernelModule, path.to_string(), short);
    }
    if path == "[vdso]" {
        return (DsoKind::Vdso, path.to_string(), path.to_string());
    }
    let anon = path.starts_with("//anon")
        || path.starts_with("/anon_hugepage")
        || path.starts_with("/dev/zero")
        || path.starts_with("/SYSV")
        || path.starts_with("/memfd:")
        || path.starts_with("/tmp/perf-")
        || path.starts_with('[');
    let short = if path.starts_with("//") || path.starts_with('[') {
        path.to_string()
    } else {
        path.rsplit('/').next().unwrap_or(path).to_string()
    };
    let kind = if anon {
        DsoKind::Anonymous
    } else {
        DsoKind::Elf
    };
    (kind, path.to_string(), short)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(start: u64, end: u64, pgoff: u64, dso: DsoId) -> Map {
        Map {
            start,
            end,
            pgoff,
            dso,
            identity: false,
        }
    }

    #[test]
    fn test_maps_insert_splits_overlapped() {
        let mut maps = Maps::default();
        maps.insert(m(0x1000, 0x5000, 0, 1));
        maps.insert(m(0x2000, 0x3000, 0x100, 2));
        assert_eq!(maps.find(0x1800).unwrap().dso, 1);
        assert_eq!(maps.find(0x2800).unwrap().dso, 2);
        let right = maps.find(0x3800).unwrap();
        assert_eq!((right.dso, right.start, right.pgoff), (1, 0x3000, 0x2000));
        assert!(maps.find(0x5000).is_none());
        assert!(maps.find(0xfff).is_none());
        // A map covering everything replaces all.
        maps.insert(m(0, 0x10000, 0, 3));
        assert_eq!(maps.find(0x2800).unwrap().dso, 3);
        assert_eq!(maps.len(), 1);
    }

    #[test]
    fn test_add_map_fork_shares_until_change_and_budget_holds() {
        let mut p = Profile::default();
        let mut st = State {
            map_budget: 100,
            ..State::default()
        };
        for i in 0..10u64 {
            assert!(st.add_map(false, 1, m(i * 0x1000, i * 0x1000 + 0x800, 0, 0)));
        }
        // Forks share the parent's maps without spending budget.
        for child in 2..50 {
            st.fork(&mut p, child, 1, child, 1);
        }
        assert_eq!(st.map_budget, 90);
        assert!(st.user_maps(7).unwrap().find(0x3100).is_some());
        // A child's first mmap copies (10 entries) and adds one.
        assert!(st.add_map(false, 2, m(0x100_0000, 0x100_1000, 0, 1)));
        assert_eq!(st.map_budget, 79);
        assert!(st.user_maps(1).unwrap().find(0x100_0000).is_none());
        // Copies stop when the budget cannot pay for them; nothing panics.
        let mut refused = 0;
        for child in 3..50 {
            if !st.add_map(false, child, m(0x100_0000, 0x100_1000, 0, 1)) {
                refused += 1;
            }
        }
        assert!(refused > 0);
        assert!(st.map_budget < 13);
    }

    #[test]
    fn test_fork_child_takes_only_a_set_name_as_perf() {
        let mut p = Profile::default();
        let mut st = State::default();
        // A parent first seen in the fork (no COMM): the child keeps its own `:TID`, as
        // perf's thread__fork copies only a comm that was set.
        st.fork(&mut p, 20, 10, 21, 10);
        let name = |st: &mut State, p: &mut Profile, tid| {
            let c = st.comm(p, tid);
            p.str(c).to_string()
        };
        assert_eq!(name(&mut st, &mut p, 10), ":10");
        assert_eq!(name(&mut st, &mut p, 21), ":21");
        // Its children inherit nothing either; a named parent's children take its name.
        st.fork(&mut p, 20, 20, 22, 21);
        assert_eq!(name(&mut st, &mut p, 22), ":22");
        st.set_comm(&mut p, 10, "server");
        st.fork(&mut p, 30, 10, 31, 10);
        assert_eq!(name(&mut st, &mut p, 31), "server");
        st.fork(&mut p, 30, 30, 32, 31);
        assert_eq!(name(&mut st, &mut p, 32), "server");
        // The idle task's children are named `swapper`, as in perf.
        st.fork(&mut p, 40, 0, 40, 0);
        assert_eq!(name(&mut st, &mut p, 40), "swapper");
    }

    #[test]
    fn test_exec_keeps_the_maps_until_the_new_image_replaces_them() {
        // As perf: a sample inside execve after the exec's COMM still has the old image's
        // user IP; the old libc resolves it. The new image's mappings replace what they
        // overlap.
        let mut st = State {
            map_budget: 100,
            ..State::default()
        };
        let mut p = Profile::default();
        assert!(st.add_map(false, 7, m(0x7f00_0000, 0x7f01_0000, 0, 1)));
        st.set_comm(&mut p, 7, "shares");
        let old = st
            .user_maps(7)
            .and_then(|u| u.find(0x7f00_0100))
            .map(|m| m.dso);
        assert_eq!(old, Some(1));
        assert!(st.add_map(false, 7, m(0x7f00_8000, 0x7f02_0000, 0, 2)));
        let maps = st.user_maps(7).unwrap();
        assert_eq!(maps.find(0x7f00_0100).map(|m| m.dso), Some(1));
        assert_eq!(maps.find(0x7f00_9000).map(|m| m.dso), Some(2));
    }

    #[test]
    fn test_maps_location_file_offset() {
        let mut maps = Maps::default();
        maps.insert(m(0x400000, 0x401000, 0x1000, 0));
        let loc = maps.find(0x400010).unwrap().location(0x400010);
        assert_eq!(loc.file_offset, 0x1010);
    }

    #[test]
    fn test_classify_paths() {
        assert_eq!(classify("[kernel.kallsyms]_text", true).0, DsoKind::Kernel);
        assert_eq!(
            classify("[kernel.kallsyms]_text", true).1,
            "[kernel.kallsyms]"
        );
        let (k, _, s) = classify("/lib/modules/6.1/kernel/nf-tables.ko.xz", true);
        assert_eq!((k, s.as_str()), (DsoKind::KernelModule, "[nf_tables]"));
        assert_eq!(classify("[vdso]", false).0, DsoKind::Vdso);
        assert_eq!(classify("//anon", false).0, DsoKind::Anonymous);
        assert_eq!(classify("/tmp/perf-12.map", false).0, DsoKind::Anonymous);
        let (k, _, s) = classify("/usr/lib/libc.so.6", false);
        assert_eq!((k, s.as_str()), (DsoKind::Elf, "libc.so.6"));
    }
}
