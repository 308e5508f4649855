//! The files a recording's report needs, by build-id: what `culprit archive` packs (perf
//! archive's role), so that the recording can be reported on another machine with
//! `--debug-dir` pointing at the unpacked archive (perf's build-id cache layout).

use std::collections::BTreeSet;
use std::path::PathBuf;

use culprit_decode::model::{DsoId, DsoKind, Profile};

use crate::{elf, hex, same_build_id, Symbolizer};

/// One object of an archive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArchiveObject {
    /// The path the recording names.
    pub recorded: String,
    /// Its build-id, lower-case hex.
    pub build_id: String,
    /// The file with that build-id (on disk, under `--symfs`, or perf's cached copy).
    pub elf: PathBuf,
    /// Its separate debug file with that build-id, if one is found.
    pub debug: Option<PathBuf>,
}

impl ArchiveObject {
    /// The object's directory in the build-id cache layout: `.build-id/xx/rest`, holding
    /// `elf` and `debug`.
    pub fn cache_dir(&self) -> PathBuf {
        let h = &self.build_id;
        PathBuf::from(".build-id")
            .join(h.get(..2).unwrap_or(""))
            .join(h.get(2..).unwrap_or(""))
    }
}

/// The DSOs that samples (and their call chains) fall in.
pub fn sampled_dsos(profile: &Profile) -> BTreeSet<DsoId> {
    let mut hit = BTreeSet::new();
    for s in &profile.samples {
        hit.extend(s.location.dso);
        let chain = profile
            .frames
            .get(s.callchain.start as usize..s.callchain.end as usize)
            .unwrap_or(&[]);
        hit.extend(chain.iter().filter_map(|f| f.location.dso));
    }
    hit
}

impl Symbolizer {
    /// The ELF objects with a recorded build-id among `dsos`, each with the file of that
    /// build-id and its debug file; the others (no build-id, file not found or another
    /// build) are left out, each with a warning.
    pub fn archive_objects(
        &mut self,
        profile: &Profile,
        dsos: &BTreeSet<DsoId>,
    ) -> Vec<ArchiveObject> {
        let mut out = Vec::new();
        for &id in dsos {
            let Some(dso) = profile.dsos.get(id as usize) else {
                continue;
            };
            if !matches!(dso.kind, DsoKind::Elf | DsoKind::KernelModule) {
                continue;
            }
            let Some(recorded) = dso.build_id.as_deref() else {
                self.warn(
                    &dso.path,
                    format!("{}: no recorded build-id: not archived", dso.path),
                );
                continue;
            };
            let matches = |p: &PathBuf| {
                elf::map_file(p)
                    .ok()
                    .and_then(|m| elf::read_elf(&m, &p.display().to_string(), false).ok())
                    .and_then(|f| f.build_id)
                    .is_some_and(|b| same_build_id(recorded, &b))
            };
            let elf = if dso.kind == DsoKind::KernelModule {
                // A module's `.ko`, where report finds it.
                self.module_file_candidates(profile, dso)
                    .into_iter()
                    .find(|p| matches(p))
            } else {
                let on_disk = self.opts.dso_file(&dso.path);
                if matches(&on_disk) {
                    Some(on_disk)
                } else {
                    self.opts.cached_elf(recorded).filter(|p| matches(p))
                }
            };
            let Some(elf) = elf else {
                self.warn(
                    &dso.path,
                    format!(
                        "{}: no file with the recorded build-id {}: not archived",
                        dso.path,
                        hex(recorded)
                    ),
                );
                continue;
            };
            let facts = elf::map_file(&elf)
                .ok()
                .and_then(|m| elf::read_elf(&m, &dso.path, false).ok());
            let (build_id, link) = match facts {
                Some(f) => (f.build_id, f.debuglink),
                None => (None, None),
            };
            let debug = self
                .debug_candidates(&dso.path, &elf, build_id.as_deref(), link.as_deref())
                .into_iter()
                .map(|(p, _)| p)
                .find(|p| p != &elf && matches(p) && !is_cache_copy(p));
            let build_id = hex(build_id.as_deref().unwrap_or(recorded));
            // Else a debug file debuginfod fetched before.
            let debug = debug.or_else(|| {
                let client = self.opts.debuginfod.as_ref()?;
                client.cached(&build_id, "debuginfo").filter(|p| matches(p))
            });
            out.push(ArchiveObject {
                recorded: dso.path.clone(),
                build_id,
                elf,
                debug,
            });
        }
        out
    }
}

/// Whether a debug candidate is perf's cached copy of the file itself (`…/elf`), not a
/// debug file.
fn is_cache_copy(p: &std::path::Path) -> bool {
    p.file_name().is_some_and(|n| n == "elf")
}
