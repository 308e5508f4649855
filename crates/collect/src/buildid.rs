//! Build ids of the objects samples hit, for the HEADER_BUILD_ID feature: ELF files on disk
//! (`.note.gnu.build-id`), the running kernel (/sys/kernel/notes) and the vDSO (read from this
//! process's own mapping: every process of a boot shares the same vDSO image).

use object::{Object, ObjectSection};

/// `NT_GNU_BUILD_ID`.
const NT_GNU_BUILD_ID: u32 = 3;

/// Build id of an ELF file, if it has one. Reads only the headers and the note (not the
/// whole file: debug binaries can be hundreds of MB).
pub fn file_build_id(path: &str) -> Option<Vec<u8>> {
    let file = std::fs::File::open(path).ok()?;
    let cache = object::ReadCache::new(file);
    let obj = object::File::parse(&cache).ok()?;
    if let Ok(Some(id)) = obj.build_id() {
        return Some(id.to_vec());
    }
    obj.sections()
        .filter(|s| s.name().map(|n| n.starts_with(".note")).unwrap_or(false))
        .find_map(|s| s.data().ok().and_then(parse_notes))
}

/// Build id of an ELF image in memory.
pub fn elf_build_id(data: &[u8]) -> Option<Vec<u8>> {
    let file = object::File::parse(data).ok()?;
    if let Ok(Some(id)) = file.build_id() {
        return Some(id.to_vec());
    }
    // Some images have the note only in a PT_NOTE segment or an oddly named section.
    file.sections()
        .filter(|s| s.name().map(|n| n.starts_with(".note")).unwrap_or(false))
        .find_map(|s| s.data().ok().and_then(parse_notes))
}

/// Finds the GNU build-id in a sequence of ELF notes (4-byte aligned, little-endian), e.g.
/// the contents of /sys/kernel/notes.
pub fn parse_notes(mut data: &[u8]) -> Option<Vec<u8>> {
    let align4 = |n: usize| n.div_ceil(4) * 4;
    while data.len() >= 12 {
        let namesz = u32::from_le_bytes(data[0..4].try_into().ok()?) as usize;
        let descsz = u32::from_le_bytes(data[4..8].try_into().ok()?) as usize;
        let ntype = u32::from_le_bytes(data[8..12].try_into().ok()?);
        let name_end = 12usize.checked_add(align4(namesz))?;
        let desc_end = name_end.checked_add(align4(descsz))?;
        let name = data.get(12..12 + namesz)?;
        let desc = data.get(name_end..name_end.checked_add(descsz)?)?;
        if ntype == NT_GNU_BUILD_ID && name == b"GNU\0" {
            return Some(desc.to_vec());
        }
        data = data.get(desc_end..)?;
    }
    None
}

/// The running kernel's build id.
pub fn kernel_build_id() -> Option<Vec<u8>> {
    let data = std::fs::read("/sys/kernel/notes").ok()?;
    parse_notes(&data)
}

/// The vDSO's build id, read from this process's vDSO mapping.
pub fn vdso_build_id() -> Option<Vec<u8>> {
    let maps = crate::procfs::maps(std::process::id() as i32);
    let vdso = maps.iter().find(|m| m.path == "[vdso]")?;
    let len = usize::try_from(vdso.end.checked_sub(vdso.start)?).ok()?;
    // SAFETY: /proc/self/maps says [start, end) is mapped readable in this process for its
    // whole lifetime (the vDSO is never unmapped), so the slice is valid.
    let image = unsafe { std::slice::from_raw_parts(vdso.start as usize as *const u8, len) };
    elf_build_id(image)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_parse_notes_finds_gnu_build_id() {
        let mut notes = Vec::new();
        // an unrelated note first
        notes.extend_from_slice(&4u32.to_le_bytes());
        notes.extend_from_slice(&2u32.to_le_bytes());
        notes.extend_from_slice(&1u32.to_le_bytes());
        notes.extend_from_slice(b"Xen\0");
        notes.extend_from_slice(&[1, 2, 0, 0]);
        notes.extend_from_slice(&4u32.to_le_bytes());
        notes.extend_from_slice(&20u32.to_le_bytes());
        notes.extend_from_slice(&3u32.to_le_bytes());
        notes.extend_from_slice(b"GNU\0");
        notes.extend_from_slice(&[7u8; 20]);
        assert_eq!(parse_notes(&notes), Some(vec![7u8; 20]));
        assert_eq!(parse_notes(&notes[..30]), None);
        assert_eq!(parse_notes(&[]), None);
    }

    #[test]
    fn test_file_build_id_matches_readelf_style_length() {
        // The test binary itself is linked with a GNU build id by default on Debian.
        let exe = std::env::current_exe().unwrap();
        if let Some(id) = file_build_id(exe.to_str().unwrap()) {
            assert!(
                id.len() == 20 || id.len() == 16 || id.len() == 8,
                "odd build id length {}",
                id.len()
            );
        }
        assert!(vdso_build_id().is_some_and(|id| !id.is_empty()));
    }
}
