//! `Symbolizer::source_line` (line tables alone, parsed lazily) against the first frame of
//! `Symbolizer::source` (addr2line's full context) at every address of real binaries: the
//! project's workloads built with -O0/-O2 (inlined code), DWARF 4 and 5, compressed debug
//! sections, and glibc with its separate debug file when the machine has it.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use culprit_decode::model::{Dso, DsoKind, Profile};
use culprit_symbols::{Symbolizer, SymbolizerOptions};
use object::{Object, ObjectSegment};

fn profile(path: &Path) -> Profile {
    Profile {
        dsos: vec![Dso {
            path: path.display().to_string(),
            short_name: path.file_name().unwrap().to_string_lossy().into_owned(),
            build_id: None,
            kind: DsoKind::Elf,
            pid: None,
        }],
        ..Profile::default()
    }
}

fn symbolizer() -> Symbolizer {
    let none = Path::new("/nonexistent");
    Symbolizer::new(SymbolizerOptions {
        debug_root: PathBuf::from("/usr/lib/debug"),
        buildid_cache: None,
        kallsyms: none.to_path_buf(),
        kernel_notes: none.to_path_buf(),
        modules: none.to_path_buf(),
        perf_map_dir: none.to_path_buf(),
        ..SymbolizerOptions::default()
    })
}

/// Compares the two lookups at every `step`-th byte of the file's executable segments; returns
/// how many addresses had a line.
fn compare(bin: &Path, step: usize) -> usize {
    let data = std::fs::read(bin).unwrap();
    let obj = object::File::parse(&*data).unwrap();
    let p = profile(bin);
    let (mut full, mut lines) = (symbolizer(), symbolizer());
    let mut found = 0;
    for seg in obj.segments() {
        let exec = match seg.flags() {
            object::SegmentFlags::Elf { p_flags, .. } => p_flags.0 & object::elf::PF_X.0 != 0,
            _ => false,
        };
        if !exec {
            continue;
        }
        let (off, size) = seg.file_range();
        for o in (off..off + size).step_by(step) {
            let want = full
                .source(&p, Some(0), o, false)
                .first()
                .map(|f| (f.file.clone(), f.line));
            let got = lines.source_line(&p, Some(0), o).map(|f| (f.file, f.line));
            // The report uses the file and line of the innermost position.
            assert_eq!(got, want, "{}: file offset {o:#x}", bin.display());
            found += usize::from(got.is_some());
        }
    }
    found
}

#[test]
fn test_source_line_agrees_with_addr2line_frames_on_workloads() {
    let dir = common::scratch("symbols-lines");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../workloads");
    let mut total = 0;
    for (name, flags) in [
        ("calltree", &["-O2", "-g"][..]),
        ("simple_classic", &["-O0", "-g"]),
        ("shares", &["-O2", "-gdwarf-4"]),
        ("branchy", &["-O2", "-g", "-gz"]),
        ("pointer_chase", &["-O3", "-g", "-gz=zlib"]),
    ] {
        let out = dir.join(format!("{name}{}", flags.join("")));
        let status = Command::new("cc")
            .args(flags)
            .arg("-o")
            .arg(&out)
            .arg(src.join(format!("{name}.c")))
            .status()
            .expect("run cc");
        assert!(status.success(), "cc {flags:?} {name}.c");
        total += compare(&out, 1);
    }
    // zstd-compressed sections (objcopy can write them; gcc 12 cannot).
    let plain = dir.join("calltree-O2-g");
    let zstd = dir.join("calltree-zstd");
    let ok = Command::new("objcopy")
        .arg("--compress-debug-sections=zstd")
        .arg(&plain)
        .arg(&zstd)
        .status()
        .is_ok_and(|s| s.success());
    if ok {
        total += compare(&zstd, 1);
    } else {
        eprintln!("objcopy cannot write zstd sections here: that variant is not compared");
    }
    assert!(total > 1000, "too few addresses with lines: {total}");
}

#[test]
fn test_source_line_agrees_with_addr2line_frames_on_glibc() {
    // glibc with Debian's libc6-dbg: compressed DWARF 5 in a separate debug file, ~1700
    // units. Skipped where the debug file is not installed (not a hardware test).
    let libc = Path::new("/lib/x86_64-linux-gnu/libc.so.6");
    let data = match std::fs::read(libc) {
        Ok(d) => d,
        Err(_) => return,
    };
    let obj = object::File::parse(&*data).unwrap();
    let Some(id) = obj.build_id().ok().flatten() else {
        return;
    };
    let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
    let debug = Path::new("/usr/lib/debug/.build-id")
        .join(&hex[..2])
        .join(format!("{}.debug", &hex[2..]));
    if !debug.exists() {
        eprintln!(
            "glibc debug file {} not installed: comparison skipped",
            debug.display()
        );
        return;
    }
    assert!(compare(libc, 13) > 10_000);
}
