//! Split DWARF (`gcc/clang -gsplit-dwarf`): the executable keeps skeleton units and the line
//! tables, while each unit's full `.debug_info` (function names, inlined calls) lives in a
//! `.dwo` file beside its object, or in one `.dwp` package made by `dwp`.
//!
//! [`DwarfContext`] wraps addr2line's context with the loader addr2line asks for when a
//! lookup reaches a skeleton unit: the `.dwo` at the unit's `DW_AT_comp_dir`/`DW_AT_dwo_name`
//! (or, when the tree moved, the same file name beside the executable), else the package
//! `EXE.dwp` beside the executable, as gdb and perf (through libdw) look for them. A unit's
//! `.dwo` is asked for once (addr2line keeps it); the package is opened once per executable.
//! A missing or unreadable file leaves that unit with the skeleton's line table only.

use std::collections::HashMap;
use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use addr2line::{LookupContinuation, LookupResult, SplitDwarfLoad};

/// The byte reader of every DWARF section culprit reads.
pub(crate) type R = gimli::EndianArcSlice<gimli::RunTimeEndian>;

/// addr2line's context over an executable's DWARF, with its split-DWARF files.
pub(crate) struct DwarfContext {
    ctx: addr2line::Context<R>,
    split: Mutex<SplitFiles>,
}

impl Deref for DwarfContext {
    type Target = addr2line::Context<R>;

    fn deref(&self) -> &Self::Target {
        &self.ctx
    }
}

/// Where the split DWARF of one executable is found, and what was loaded already.
struct SplitFiles {
    /// The executable (or its debug file) the skeleton units are in.
    exe: PathBuf,
    /// `EXE.dwp`, once tried: `None` when there is none.
    package: Option<Option<gimli::DwarfPackage<R>>>,
}

impl DwarfContext {
    /// The context of `exe`'s DWARF (already parsed into `ctx`).
    pub(crate) fn new(ctx: addr2line::Context<R>, exe: &Path) -> DwarfContext {
        DwarfContext {
            ctx,
            split: Mutex::new(SplitFiles {
                exe: exe.to_path_buf(),
                package: None,
            }),
        }
    }

    /// The frames (inlined calls first) at `probe`, loading split DWARF as it is needed.
    pub(crate) fn frames(&self, probe: u64) -> Result<addr2line::FrameIter<'_, R>, gimli::Error> {
        self.resolve(self.ctx.find_frames(probe))
    }

    /// Runs an addr2line lookup to its end, loading each split unit it asks for.
    pub(crate) fn resolve<L: LookupContinuation<Buf = R>>(
        &self,
        mut lookup: LookupResult<L>,
    ) -> L::Output {
        loop {
            match lookup {
                LookupResult::Output(result) => return result,
                LookupResult::Load { load, continuation } => {
                    let dwo = match self.split.lock() {
                        Ok(mut files) => files.load(&load),
                        Err(_) => None,
                    };
                    lookup = continuation.resume(dwo);
                }
            }
        }
    }
}

impl SplitFiles {
    /// The split unit `load` asks for, from its `.dwo` file or from the package.
    fn load(&mut self, load: &SplitDwarfLoad<R>) -> Option<Arc<gimli::Dwarf<R>>> {
        if let Some(dwarf) = self.dwo_file(load) {
            return Some(Arc::new(dwarf));
        }
        let exe = self.exe.clone();
        let package = self
            .package
            .get_or_insert_with(|| load_package(&package_path(&exe)))
            .as_ref()?;
        let dwarf = package.find_cu(load.dwo_id, &load.parent).ok()??;
        Some(Arc::new(dwarf))
    }

    /// The unit's `.dwo`: at `comp_dir/dwo_name`, else its file name beside the executable;
    /// only a file whose unit has the skeleton's DWO id.
    fn dwo_file(&self, load: &SplitDwarfLoad<R>) -> Option<gimli::Dwarf<R>> {
        let name = PathBuf::from(load.path.as_ref().and_then(attr_text)?);
        let mut candidates = Vec::new();
        match load.comp_dir.as_ref().and_then(attr_text) {
            Some(dir) if name.is_relative() => candidates.push(Path::new(&dir).join(&name)),
            _ => candidates.push(name.clone()),
        }
        if let (Some(dir), Some(file)) = (self.exe.parent(), name.file_name()) {
            candidates.push(dir.join(file));
        }
        candidates.into_iter().find_map(|path| {
            let mut dwarf = load_dwo(&path)?;
            dwarf.make_dwo(&load.parent);
            let id_matches = dwo_id_of(&dwarf) == Some(load.dwo_id);
            id_matches.then_some(dwarf)
        })
    }
}

/// A string attribute's text (a path: lossy UTF-8).
fn attr_text(r: &R) -> Option<String> {
    use gimli::Reader;
    Some(String::from_utf8_lossy(&r.to_slice().ok()?).into_owned())
}

/// `EXE.dwp`, where `dwp -e EXE` writes the package.
fn package_path(exe: &Path) -> PathBuf {
    let mut name = exe.as_os_str().to_os_string();
    name.push(".dwp");
    PathBuf::from(name)
}

/// The `.debug_*` sections of a split-DWARF file (a `.dwo` or a `.dwp`), by name.
struct DwoSections {
    by_name: HashMap<String, Arc<[u8]>>,
    endian: gimli::RunTimeEndian,
}

impl DwoSections {
    fn read(path: &Path) -> Option<DwoSections> {
        use object::{Object, ObjectSection};
        let map = crate::elf::map_file(path).ok()?;
        let obj = object::File::parse(&*map).ok()?;
        let endian = if obj.is_little_endian() {
            gimli::RunTimeEndian::Little
        } else {
            gimli::RunTimeEndian::Big
        };
        let by_name = obj
            .sections()
            .filter_map(|s| {
                let name = s.name().ok()?;
                let bytes = name
                    .starts_with(".debug_")
                    .then(|| s.uncompressed_data().ok())??;
                Some((name.to_string(), Arc::from(&*bytes)))
            })
            .collect();
        Some(DwoSections { by_name, endian })
    }

    /// The reader of a section (its `.dwo` name), empty when the file has none.
    fn section(&self, id: gimli::SectionId) -> Result<R, gimli::Error> {
        let bytes = id
            .dwo_name()
            .and_then(|n| self.by_name.get(n).cloned())
            .unwrap_or_else(|| Arc::from(&[][..]));
        Ok(R::new(bytes, self.endian))
    }
}

/// A `.dwo` file's DWARF.
fn load_dwo(path: &Path) -> Option<gimli::Dwarf<R>> {
    let sections = DwoSections::read(path)?;
    gimli::Dwarf::load(|id| sections.section(id)).ok()
}

/// A `.dwp` package (its sections and the CU/TU indexes).
fn load_package(path: &Path) -> Option<gimli::DwarfPackage<R>> {
    let sections = DwoSections::read(path)?;
    let empty = R::new(Arc::from(&[][..]), sections.endian);
    gimli::DwarfPackage::load(|id| sections.section(id), empty).ok()
}

/// The DWO id of a split file's (first) compilation unit.
fn dwo_id_of(dwarf: &gimli::Dwarf<R>) -> Option<gimli::DwoId> {
    let header = dwarf.units().next().ok()??;
    match header.type_() {
        gimli::UnitType::SplitCompilation(id) | gimli::UnitType::Skeleton(id) => Some(id),
        _ => {
            // DWARF 4 split units (GCC's default before DWARF 5) carry DW_AT_GNU_dwo_id.
            let unit = dwarf.unit(header).ok()?;
            let mut entries = unit.entries();
            let root = entries.next_dfs().ok()??;
            match root.attr_value(gimli::DW_AT_GNU_dwo_id)? {
                gimli::AttributeValue::DwoId(id) => Some(id),
                _ => None,
            }
        }
    }
}
