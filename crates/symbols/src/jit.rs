//! Names, code and source lines of JIT code (anonymous memory of a process), from the
//! process's JIT dump (`jit-PID.dump`, see [`crate::jitdump`]) and its perf map
//! (`/tmp/perf-PID.map`, see [`crate::perfmap`]).
//!
//! The dump is the one the recording names: the runtime maps it executable, so the recording
//! holds an MMAP of a file `jit-PID.dump` (the marker `perf inject --jit` looks for). It is
//! read at that path (under `--symfs` first), else next to the recording
//! ([`crate::SymbolizerOptions::jitdump_dirs`]). Without a marker no dump is read: a stale
//! file of an earlier process with the same pid must not name this one's code.
//!
//! Where both exist, the dump's names win and the perf map names the code the dump does not
//! cover (what `perf report` shows after `perf inject --jit`: the injected mappings hide the
//! anonymous memory under them, whose names come from the perf map).

use std::path::PathBuf;
use std::sync::Arc;

use culprit_decode::model::{Dso, DsoId, DsoKind, Profile};

use crate::jitdump::{read_shared, JitDump};
use crate::table::{Binding, Symbol, SymbolTable};
use crate::{perfmap, SourceFrame, Symbolizer, SymbolizerOptions};

/// A process's JIT symbols: the table number and its dump, if it has one.
#[derive(Clone, Default)]
pub(crate) struct JitProcess {
    pub(crate) table: Option<u32>,
    pub(crate) dump: Option<Arc<JitDump>>,
}

impl Symbolizer {
    /// The pid whose JIT symbols name a DSO's addresses: the DSO's own (anonymous memory
    /// belongs to one process), the one its perf map's name gives, else the sample's.
    fn jit_pid(profile: &Profile, dso: DsoId, pid: i32) -> i32 {
        let d = profile.dsos.get(dso as usize);
        d.and_then(|d| d.pid)
            .or_else(|| {
                let d = d?;
                d.short_name
                    .strip_prefix("perf-")?
                    .strip_suffix(".map")?
                    .parse()
                    .ok()
            })
            .unwrap_or(pid)
    }

    /// The JIT symbols of the process behind a DSO, loaded once per process.
    pub(crate) fn jit_process(&mut self, profile: &Profile, dso: DsoId, pid: i32) -> JitProcess {
        let pid = Self::jit_pid(profile, dso, pid);
        if let Some(p) = self.jit.get(&pid) {
            return p.clone();
        }
        let dump = self.load_jitdump(profile, pid);
        let map = std::fs::read_to_string(self.opts.perf_map_dir.join(format!("perf-{pid}.map")))
            .ok()
            .map(|text| perfmap::parse_perf_map(&text));
        let table = match (&dump, map) {
            (None, None) => None,
            (None, Some(map)) => Some(self.add_table(map)),
            (Some(d), map) => Some(self.add_table(merged_table(d, map.as_ref()))),
        };
        let p = JitProcess { table, dump };
        self.jit.insert(pid, p.clone());
        p
    }

    /// The JIT symbol table of the process behind a DSO.
    pub(crate) fn jit_table(&mut self, profile: &Profile, dso: DsoId, pid: i32) -> Option<u32> {
        self.jit_process(profile, dso, pid).table
    }

    /// Reads and parses the dump of process `pid`, with a warning when it is missing or
    /// damaged (what was read before the damage is kept).
    fn load_jitdump(&mut self, profile: &Profile, pid: i32) -> Option<Arc<JitDump>> {
        let Some(path) = jitdump_path(&self.opts, &profile.dsos, pid) else {
            // A marker whose file is gone: say so (names stay unknown or come from a map).
            if profile
                .dsos
                .iter()
                .any(|d| d.short_name == format!("jit-{pid}.dump"))
            {
                self.warn(
                    &format!("jitdump-{pid}"),
                    format!(
                        "jit-{pid}.dump: the recording names it but it is neither where it was \
                         recorded nor next to the recording: JIT code of pid {pid} is unnamed"
                    ),
                );
            }
            return None;
        };
        let shown = path.display().to_string();
        let dump = match read_shared(&path) {
            Ok(d) => d,
            Err(e) => {
                self.warn(&shown, format!("cannot read {shown}: {e}"));
                return None;
            }
        };
        if let Some(why) = &dump.damage {
            let kept = dump.len();
            self.warn(
                &shown,
                format!("{shown}: {why}; the {kept} functions before it are used"),
            );
        }
        (!dump.is_empty()).then_some(dump)
    }

    /// The code bytes of `start..end` of JIT code, from the dump of the DSO's process.
    pub(crate) fn jit_code(
        &mut self,
        profile: &Profile,
        dso: DsoId,
        start: u64,
        end: u64,
    ) -> Option<Vec<u8>> {
        let dump = self.jit_process(profile, dso, -1).dump?;
        let f = dump.function_at(start)?;
        let from = usize::try_from(start - f.addr).ok()?;
        let to = usize::try_from(end.min(f.end()) - f.addr).ok()?;
        f.code.get(from..to).map(<[u8]>::to_vec)
    }

    /// The source line of a JIT address (`return_address`: of the call before it), from the
    /// debug-info records of the dump of the DSO's process.
    pub(crate) fn jit_source(
        &mut self,
        profile: &Profile,
        dso: DsoId,
        addr: u64,
        return_address: bool,
    ) -> Option<SourceFrame> {
        let dump = self.jit_process(profile, dso, -1).dump?;
        let probe = if return_address {
            addr.saturating_sub(1)
        } else {
            addr
        };
        let line = dump.function_at(probe)?.line_at(probe)?;
        Some(SourceFrame {
            function: None,
            file: Some(line.file.clone()),
            line: Some(line.line),
        })
    }
}

/// The dump's functions, and the perf map's symbols where no function of the dump is.
fn merged_table(dump: &JitDump, map: Option<&SymbolTable>) -> SymbolTable {
    let mut syms: Vec<Symbol> = dump
        .functions()
        .map(|f| Symbol {
            name: f.name.clone(),
            start: f.addr,
            end: f.end(),
            binding: Binding::Global,
        })
        .collect();
    if let Some(map) = map {
        for i in 0..map.len() as u32 {
            if let Some(s) = map.get(i).filter(|s| !dump.overlaps(s.start, s.end)) {
                syms.push(Symbol {
                    name: s.name.to_string(),
                    start: s.start,
                    end: s.end,
                    binding: s.binding,
                });
            }
        }
    }
    SymbolTable::new(syms)
}

/// Where the dump of process `pid` is: the MMAPs of `jit-PID.dump` among the recording's
/// DSOs, read under `--symfs` first, then where they were recorded, then in the recording's
/// directory. None without such a MMAP (a stale dump of an earlier process with the same pid
/// must not name this one's code).
pub(crate) fn jitdump_path(opts: &SymbolizerOptions, dsos: &[Dso], pid: i32) -> Option<PathBuf> {
    let name = format!("jit-{pid}.dump");
    let marked: Vec<&str> = dsos
        .iter()
        .filter(|d| d.kind == DsoKind::Elf && d.short_name == name)
        .map(|d| d.path.as_str())
        .collect();
    if marked.is_empty() {
        return None;
    }
    let near_recording = opts.jitdump_dirs.iter().map(|dir| dir.join(&name));
    marked
        .iter()
        .map(|p| opts.dso_file(p))
        .chain(near_recording)
        .find(|p| p.is_file())
}
