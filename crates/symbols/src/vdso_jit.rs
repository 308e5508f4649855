//! The vDSO and JIT code: the symbolizer's own vDSO image (the same kernel's vDSO as the
//! recorded process's), and which DSOs are anonymous JIT memory.

use super::*;

/// A copy of this process's vDSO image (its `[vdso]` mapping in /proc/self/maps).
pub(crate) fn own_vdso_image() -> Option<Vec<u8>> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    let line = maps.lines().find(|l| l.trim_end().ends_with("[vdso]"))?;
    let range = line.split_whitespace().next()?;
    let (start, end) = range.split_once('-')?;
    let start = usize::from_str_radix(start, 16).ok()?;
    let end = usize::from_str_radix(end, 16).ok()?;
    let len = end.checked_sub(start)?;
    if len == 0 || len > 1 << 20 {
        return None;
    }
    // SAFETY: /proc/self/maps says [start, end) is mapped readable in this process for its
    // whole lifetime (the vDSO is never unmapped), so the slice is valid while copied.
    let image = unsafe { std::slice::from_raw_parts(start as *const u8, len) };
    Some(image.to_vec())
}

impl Symbolizer {
    /// The vDSO's symbols from this process's own vDSO mapping (the kernel maps the same
    /// image in every process), through a temporary copy of it that is removed once read.
    pub(crate) fn prepare_own_vdso(&mut self, name: &str) -> DsoState {
        let Some(image) = own_vdso_image() else {
            return DsoState::Unknown;
        };
        let copy = std::env::temp_dir().join(format!("culprit-vdso-{}.so", std::process::id()));
        if std::fs::write(&copy, &image).is_err() {
            return DsoState::Unknown;
        }
        let state = self.prepare_elf(name, &copy, None);
        let _ = std::fs::remove_file(&copy);
        state
    }

    /// Whether a DSO is anonymous memory (JIT code, named by [`jit`]).
    pub(crate) fn is_jit(&self, profile: &Profile, dso: DsoId) -> bool {
        profile
            .dsos
            .get(dso as usize)
            .is_some_and(|d| d.kind == DsoKind::Anonymous)
    }
}
