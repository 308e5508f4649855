//! Debug-file lookup: where the symbols of an ELF DSO come from. The file under `--symfs`,
//! perf's build-id cache (`~/.debug`), the separate debug file (build-id path,
//! `.gnu_debuglink` with its CRC), and debuginfod, with the warnings that say what was
//! missing; and the check that a recorded build-id matches a file's.

use std::path::{Path, PathBuf};

use super::*;

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
    pub(crate) fn cached_kallsyms(&self, build_id: &[u8]) -> Option<PathBuf> {
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

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A loaded ELF file's state and its warnings (keyed like [`Symbolizer::warn`]), not given
/// yet.
pub(crate) type LoadedElf = (DsoState, Vec<(String, String)>);

impl Symbolizer {
    /// Opens an ELF DSO (`path` is where to read it, `name` how the profile names it).
    pub(crate) fn prepare_elf(
        &mut self,
        name: &str,
        path: &Path,
        recorded: Option<&[u8]>,
    ) -> DsoState {
        let (state, warnings) = self.load_elf(name, path, recorded);
        for (key, msg) in warnings {
            self.warn(&key, msg);
        }
        state
    }

    /// Loads an ELF file's symbols for [`Symbolizer::prepare_elf`], returning the warnings
    /// (keyed like [`Symbolizer::warn`]) instead of giving them.
    pub(crate) fn load_elf(
        &mut self,
        name: &str,
        path: &Path,
        recorded: Option<&[u8]>,
    ) -> LoadedElf {
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
        let table = (!symbols.is_empty()).then(|| self.add_table(SymbolTable::demangling(symbols)));
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
}
