//! Kernel module symbols from the module's `.ko` file, as perf's `dso__load_sym` reads them.
//!
//! A `.ko` is a relocatable ELF (ET_REL): symbol values count from the start of their
//! section. The kernel loads a module's `.text` at the module's base address (the start of
//! its kernel MMAP), so a `.text` symbol runs at base + value. perf gives symbols of other
//! sections (`.init.text`, `.text.unlikely`) maps of their own placed from
//! `/sys/module/NAME/sections/`, which a recording does not carry; they are left out here.

use std::path::{Path, PathBuf};

use culprit_decode::model::{Dso, Profile};
use object::{Object, ObjectKind, ObjectSection, ObjectSymbol, SymbolKind};

use crate::debug_lookup::same_build_id;
use crate::kernel_symbols::module_name;
use crate::table::{Binding, SymbolTable, SymbolTableBuilder};
use crate::Symbolizer;

/// The `.text` functions of a relocatable module image, placed at `base`; `None` when
/// `data` is not a relocatable ELF or has no `.text` functions.
pub(crate) fn module_symbols(data: &[u8], base: u64) -> Option<SymbolTable> {
    let file = object::File::parse(data).ok()?;
    if file.kind() != ObjectKind::Relocatable {
        return None;
    }
    let text = file.section_by_name(".text")?.index();
    let mut table = SymbolTableBuilder::with_capacity(0, 0);
    let mut any = false;
    for sym in file.symbols() {
        if sym.kind() != SymbolKind::Text || sym.section_index() != Some(text) {
            continue;
        }
        let Ok(name) = sym.name() else { continue };
        if name.is_empty() {
            continue;
        }
        let binding = if sym.is_weak() {
            Binding::Weak
        } else if sym.is_global() {
            Binding::Global
        } else {
            Binding::Local
        };
        let start = base.wrapping_add(sym.address());
        table.push(name, start, start.wrapping_add(sym.size()), binding);
        any = true;
    }
    any.then(|| table.build())
}

impl Symbolizer {
    /// The symbol table of a kernel module's `.ko`, when one is found (see
    /// [`Symbolizer::module_file_candidates`]) whose build-id matches the recorded one (when
    /// the recording has one). Its addresses are offsets from the module's base, as the
    /// module's kernel MMAP gives them (that MMAP's file offset 0 is the base).
    pub(crate) fn module_file_table(&mut self, profile: &Profile, dso: &Dso) -> Option<u32> {
        for path in self.module_file_candidates(profile, dso) {
            let Ok(map) = crate::elf::map_file(&path) else {
                continue;
            };
            if let Some(rec) = dso.build_id.as_deref() {
                let own = object::File::parse(&map[..])
                    .ok()
                    .and_then(|f| f.build_id().ok().flatten().map(<[u8]>::to_vec));
                if !own.is_some_and(|own| same_build_id(rec, &own)) {
                    continue;
                }
            }
            if let Some(table) = module_symbols(&map, 0) {
                return Some(self.add_table(table));
            }
        }
        None
    }

    /// Where a module's `.ko` may be, in perf's order: the build-id cache, the recorded
    /// path (under `--symfs` when given), then `/lib/modules/RELEASE/` (under `--symfs`)
    /// searched for `NAME.ko`, RELEASE being the recording's HEADER_OSRELEASE.
    pub(crate) fn module_file_candidates(&self, profile: &Profile, dso: &Dso) -> Vec<PathBuf> {
        let mut out = Vec::new();
        if let Some(p) = dso
            .build_id
            .as_deref()
            .and_then(|b| self.opts.cached_elf(b))
        {
            out.push(p);
        }
        if dso.path.starts_with('/') {
            out.push(self.opts.dso_file(&dso.path));
        }
        if let Some(release) = &profile.meta.os_release {
            let root = self
                .opts
                .symfs
                .clone()
                .unwrap_or_else(|| PathBuf::from("/"));
            let dir = root.join("lib/modules").join(release);
            let name = module_name(&dso.path);
            if let Some(p) = find_module(&dir, &name, 8) {
                out.push(p);
            }
        }
        out
    }
}

/// The first `NAME.ko` (with `-` and `_` the same, as the kernel treats them) under `dir`,
/// at most `depth` directories down.
fn find_module(dir: &Path, name: &str, depth: u32) -> Option<PathBuf> {
    let entries = std::fs::read_dir(dir).ok()?;
    let mut subdirs = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            subdirs.push(path);
        } else if entry.file_name().to_str().is_some_and(|f| {
            f.strip_suffix(".ko")
                .is_some_and(|stem| stem.replace('-', "_") == name)
        }) {
            return Some(path);
        }
    }
    if depth == 0 {
        return None;
    }
    subdirs.sort();
    subdirs.iter().find_map(|d| find_module(d, name, depth - 1))
}
