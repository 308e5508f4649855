//! Where an ELF file's separate debug file may be, in perf's and gdb's order, under
//! `--symfs` first when it is given.

use std::path::{Path, PathBuf};

use crate::{hex, Symbolizer};

/// CRC-32 of a file's bytes, as `.gnu_debuglink` records it (zlib's CRC-32).
pub(crate) fn crc32(data: &[u8]) -> u32 {
    let mut crc = flate2::Crc::new();
    crc.update(data);
    crc.sum()
}

impl Symbolizer {
    /// Candidate separate debug files of the ELF file recorded as `name` and read at `path`,
    /// each with whether the debuglink named it (its CRC then matters):
    /// - perf's build-id cache (`~/.debug/.build-id/xx/rest/{elf,debug}`);
    /// - `DEBUG_ROOT/.build-id/xx/rest.debug`;
    /// - the debuglink next to the file, in its `.debug/`, and in `DEBUG_ROOT/DIR/`;
    /// - `DEBUG_ROOT/PATH` and `DEBUG_ROOT/PATH.debug`.
    ///
    /// With `--symfs DIR`, every `DEBUG_ROOT` place is tried under `DIR` first (the other
    /// machine's `/usr/lib/debug`); `path` is already under it when the file was there.
    pub(crate) fn debug_candidates(
        &self,
        name: &str,
        path: &Path,
        build_id: Option<&[u8]>,
        debuglink: Option<&str>,
    ) -> Vec<(PathBuf, bool)> {
        let debug_root = &self.opts.debug_root;
        let mut roots = Vec::new();
        if let Some(symfs) = &self.opts.symfs {
            roots.push(symfs.join(debug_root.strip_prefix("/").unwrap_or(debug_root)));
        }
        roots.push(debug_root.clone());
        let mut c = Vec::new();
        let build_id = build_id.filter(|b| b.len() > 1).map(hex);
        // perf's build-id cache comes first, as in perf's own lookup order.
        if let (Some(cache), Some(h)) = (&self.opts.buildid_cache, &build_id) {
            let dir = cache.join(".build-id").join(&h[..2]).join(&h[2..]);
            c.push((dir.join("elf"), false));
            c.push((dir.join("debug"), false));
        }
        if let Some(h) = &build_id {
            for root in &roots {
                let file = format!("{}.debug", &h[2..]);
                c.push((root.join(".build-id").join(&h[..2]).join(file), false));
            }
        }
        let recorded = Path::new(name);
        let rel = recorded.strip_prefix("/").unwrap_or(recorded);
        let rel_dir = rel.parent().unwrap_or(Path::new(""));
        if let Some(link) = debuglink {
            let dir = path.parent().unwrap_or(Path::new("/"));
            c.push((dir.join(link), true));
            c.push((dir.join(".debug").join(link), true));
            for root in &roots {
                c.push((root.join(rel_dir).join(link), true));
            }
        }
        for root in &roots {
            c.push((root.join(rel), false));
            let mut dbg = root.join(rel).into_os_string();
            dbg.push(".debug");
            c.push((PathBuf::from(dbg), false));
        }
        c.retain(|(p, _)| p != path && p.is_file());
        c
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn test_crc32_is_zlibs() {
        // The check value of CRC-32 (ISO-HDLC), which gdb's and elfutils' debuglink use.
        assert_eq!(super::crc32(b"123456789"), 0xcbf4_3926);
    }
}
