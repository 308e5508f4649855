//! Process, thread and mapping state over time, and DSO / comm interning.
//!
//! perf keeps the same state while it replays a file: COMM names threads (and with
//! `COMM_EXEC` starts a fresh address space), FORK copies the parent's comm (and its maps for
//! a new process), MMAP/MMAP2 add executable mappings that replace what they overlap. Kernel
//! mappings (`[kernel.kallsyms]`, modules) are shared by all processes.

use std::collections::HashMap;

use crate::model::{CpuMode, Dso, DsoId, DsoKind, Location, Profile, StrId};

/// One executable mapping.
#[derive(Debug, Clone, Copy)]
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

impl Map {
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

/// Maps sorted by start, non-overlapping.
#[derive(Debug, Clone, Default)]
pub(crate) struct Maps {
    maps: Vec<Map>,
}

impl Maps {
    /// Inserts a mapping, trimming or splitting the ones it overlaps (a new mmap over an old
    /// range replaces it, as in the kernel).
    pub(crate) fn insert(&mut self, m: Map) {
        if m.end <= m.start {
            return;
        }
        // First map that could overlap: the last one starting before m.start.
        let mut i = self.maps.partition_point(|x| x.start < m.start);
        if i > 0 && self.maps.get(i - 1).is_some_and(|p| p.end > m.start) {
            i -= 1;
        }
        let mut pieces: Vec<Map> = Vec::new();
        let mut j = i;
        while let Some(old) = self.maps.get(j) {
            if old.start >= m.end {
                break;
            }
            if old.start < m.start {
                pieces.push(Map {
                    end: m.start,
                    ..*old
                });
            }
            if old.end > m.end {
                pieces.push(Map {
                    start: m.end,
                    pgoff: old.pgoff.wrapping_add(m.end - old.start),
                    ..*old
                });
            }
            j += 1;
        }
        pieces.push(m);
        pieces.sort_by_key(|p| p.start);
        self.maps.splice(i..j, pieces);
    }

    pub(crate) fn find(&self, addr: u64) -> Option<&Map> {
        let i = self.maps.partition_point(|x| x.start <= addr);
        let m = self.maps.get(i.checked_sub(1)?)?;
        (addr < m.end).then_some(m)
    }

    pub(crate) fn clear(&mut self) {
        self.maps.clear();
    }
}

#[derive(Debug, Clone, Copy)]
struct Thread {
    comm: StrId,
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
    procs: HashMap<i32, Maps>,
    threads: HashMap<i32, Thread>,
    kernel: Maps,
    dso_index: HashMap<DsoKey, DsoId>,
    comm_index: HashMap<String, StrId>,
    /// One-entry cache of `comm_index` for the common "same thread again" case.
    last_tid: Option<(i32, StrId)>,
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
    pub(crate) fn comm(&mut self, p: &mut Profile, tid: i32) -> StrId {
        if let Some((t, c)) = self.last_tid {
            if t == tid {
                return c;
            }
        }
        let c = match self.threads.get(&tid) {
            Some(t) => t.comm,
            None if tid == 0 => {
                let c = self.intern(p, "swapper");
                self.threads.insert(0, Thread { comm: c });
                c
            }
            None => {
                let c = self.intern(p, &format!(":{tid}"));
                self.threads.insert(tid, Thread { comm: c });
                c
            }
        };
        self.last_tid = Some((tid, c));
        c
    }

    pub(crate) fn set_comm(&mut self, p: &mut Profile, pid: i32, tid: i32, comm: &str, exec: bool) {
        let c = self.intern(p, comm);
        self.threads.insert(tid, Thread { comm: c });
        self.last_tid = None;
        if exec {
            // exec starts a new address space; the new executable's MMAPs follow.
            self.procs.entry(pid).or_default().clear();
        }
    }

    pub(crate) fn fork(&mut self, p: &mut Profile, pid: i32, ppid: i32, tid: i32, ptid: i32) {
        let comm = self.comm(p, ptid);
        self.threads.insert(tid, Thread { comm });
        self.last_tid = None;
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
        let (kind, path, short) = classify(path, kernel);
        let owner = (kind == DsoKind::Anonymous).then_some(pid);
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

    pub(crate) fn add_map(&mut self, kernel: bool, pid: i32, m: Map) {
        if kernel {
            self.kernel.insert(m);
        } else {
            self.procs.entry(pid).or_default().insert(m);
        }
    }

    /// Resolves an address with the maps current now.
    pub(crate) fn resolve(&self, user: Option<&Maps>, mode: CpuMode, addr: u64) -> Location {
        let m = match mode {
            CpuMode::Kernel | CpuMode::GuestKernel => self.kernel.find(addr),
            CpuMode::User => user.and_then(|u| u.find(addr)),
            CpuMode::Unknown => user
                .and_then(|u| u.find(addr))
                .or_else(|| self.kernel.find(addr)),
            CpuMode::Hypervisor | CpuMode::GuestUser => None,
        };
        m.map(|m| m.location(addr)).unwrap_or(Location {
            dso: None,
            file_offset: addr,
        })
    }

    pub(crate) fn user_maps(&self, pid: i32) -> Option<&Maps> {
        self.procs.get(&pid)
    }
}

/// DSO kind, canonical path and perf's short name for a mapping's path.
fn classify(path: &str, kernel: bool) -> (DsoKind, String, String) {
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
        assert_eq!(maps.maps.len(), 1);
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
