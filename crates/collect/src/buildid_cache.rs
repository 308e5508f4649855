//! perf's build-id cache (`~/.debug`), filled after a recording as `perf record` does, so
//! that a rebuilt or deleted binary does not take the symbols of older recordings with it.
//!
//! Layout (perf's `build_id_cache__add`):
//! - `DIR/<absolute path>/<build-id>/elf`: a copy (or hard link) of the object;
//! - `DIR/[kernel.kallsyms]/<build-id>/kallsyms`: the running kernel's `/proc/kallsyms`;
//! - `DIR/.build-id/<first 2 hex digits>/<other 38>`: a symlink to the directory above
//!   (`../../<path>/<build-id>`), which is how readers find an object by build-id.
//!
//! `DIR` is `$PERF_BUILDID_DIR` (perf's `buildid.dir`), else `$HOME/.debug`.

use std::io;
use std::path::{Path, PathBuf};

use crate::perfdata::BuildIdEntry;

/// The cache directory: `$PERF_BUILDID_DIR`, else `$HOME/.debug`; `None` without either.
pub fn default_dir() -> Option<PathBuf> {
    culprit_decode::abi::buildid_cache_dir()
}

fn hex(id: &[u8]) -> String {
    id.iter().map(|b| format!("{b:02x}")).collect()
}

/// What [`add`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CacheResult {
    /// Objects newly stored.
    pub added: usize,
    /// Objects already in the cache.
    pub present: usize,
    /// Objects that could not be stored, with why (one line each).
    pub failed: Vec<String>,
}

/// Stores every object of `entries` (the build ids of a finished recording) in the cache at
/// `dir`: ELF files whose on-disk build id is still the recorded one, and the running
/// kernel's kallsyms. Objects without a file (anonymous memory, `[vdso]`) are skipped.
pub fn add(dir: &Path, entries: &[BuildIdEntry]) -> CacheResult {
    let mut r = CacheResult::default();
    for e in entries {
        let id = hex(&e.build_id);
        if id.len() < 3 {
            continue;
        }
        let stored = if e.filename == "[kernel.kallsyms]" {
            if crate::buildid::kernel_build_id().as_deref() != Some(&e.build_id[..]) {
                continue;
            }
            store(dir, "[kernel.kallsyms]", &id, "kallsyms", |dst| {
                std::fs::write(dst, std::fs::read("/proc/kallsyms")?)
            })
        } else if e.filename.starts_with('/') {
            // The file may have been rebuilt since its samples: store only the recorded one.
            if crate::buildid::file_build_id(&e.filename).as_deref() != Some(&e.build_id[..]) {
                continue;
            }
            let src = Path::new(&e.filename);
            store(dir, &e.filename, &id, "elf", |dst| {
                std::fs::hard_link(src, dst).or_else(|_| std::fs::copy(src, dst).map(drop))
            })
        } else {
            continue;
        };
        match stored {
            Ok(true) => r.added += 1,
            Ok(false) => r.present += 1,
            Err(err) => r.failed.push(format!("{}: {err}", e.filename)),
        }
    }
    r
}

/// Stores one object as `dir/<name>/<id>/<file>` (written by `put`) with its `.build-id`
/// link; `Ok(false)` when it is there already.
fn store(
    dir: &Path,
    name: &str,
    id: &str,
    file: &str,
    put: impl FnOnce(&Path) -> io::Result<()>,
) -> io::Result<bool> {
    let rel = name.trim_start_matches('/');
    let obj_dir = dir.join(rel).join(id);
    let dst = obj_dir.join(file);
    let link_dir = dir.join(".build-id").join(&id[..2]);
    let link = link_dir.join(&id[2..]);
    let present = dst.exists();
    if !present {
        std::fs::create_dir_all(&obj_dir)?;
        // Written under a temporary name and renamed: a reader never sees half a file.
        let tmp = obj_dir.join(format!(".{file}.{}", std::process::id()));
        let _ = std::fs::remove_file(&tmp);
        put(&tmp)?;
        std::fs::rename(&tmp, &dst)?;
    }
    if std::fs::symlink_metadata(&link).is_err() {
        std::fs::create_dir_all(&link_dir)?;
        std::os::unix::fs::symlink(Path::new("../..").join(rel).join(id), &link)?;
    }
    Ok(!present)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_add_stores_elf_and_build_id_link_as_perf() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../target/test-tmp")
            .join(format!("culprit-bidcache-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let exe = std::env::current_exe().unwrap();
        let Some(id) = crate::buildid::file_build_id(exe.to_str().unwrap()) else {
            // A test binary without a build id has nothing to cache.
            return;
        };
        let entry = BuildIdEntry {
            cpumode: 2,
            build_id: id.clone(),
            filename: exe.to_str().unwrap().into(),
        };
        let r = add(&dir, std::slice::from_ref(&entry));
        assert_eq!((r.added, r.present), (1, 0), "{r:?}");
        let h = hex(&id);
        let via_link = dir
            .join(".build-id")
            .join(&h[..2])
            .join(&h[2..])
            .join("elf");
        assert_eq!(
            crate::buildid::file_build_id(via_link.to_str().unwrap()),
            Some(id)
        );
        // Twice: already there.
        assert_eq!(add(&dir, &[entry]).present, 1);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
