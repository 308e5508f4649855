//! Symbolizer against real ELF files built here: a stripped binary whose names come from a
//! separate debug file (build-id directory, `.gnu_debuglink`), DWARF lines, and the build-id
//! check. Needs `cc`, `strip` and `objcopy` (gcc and binutils).

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use culprit_decode::model::{Dso, DsoKind, Profile};
use culprit_symbols::{Query, Symbolizer, SymbolizerOptions};
use object::{Object, ObjectSegment, ObjectSymbol};

fn run(cmd: &mut Command) {
    let out = cmd.output().expect("spawn");
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Builds workloads/shares.c with debug info; returns (binary, build-id, heavy's SVMA, its
/// file offset).
fn build(dir: &Path) -> (PathBuf, Vec<u8>, u64, u64) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../workloads/shares.c");
    let full = dir.join("full");
    run(Command::new("cc")
        .args([
            "-O1",
            "-g",
            "-fno-omit-frame-pointer",
            "-Wl,--build-id",
            "-o",
        ])
        .arg(&full)
        .arg(&src));
    let data = std::fs::read(&full).unwrap();
    let obj = object::File::parse(&*data).unwrap();
    let build_id = obj.build_id().unwrap().unwrap().to_vec();
    let heavy = obj
        .symbols()
        .find(|s| s.name() == Ok("heavy"))
        .unwrap()
        .address();
    let offset = obj
        .segments()
        .find_map(|seg| {
            let (off, size) = seg.file_range();
            (heavy >= seg.address() && heavy < seg.address() + size)
                .then(|| heavy - seg.address() + off)
        })
        .unwrap();
    (full, build_id, heavy, offset)
}

fn profile(path: &Path, build_id: Option<Vec<u8>>) -> Profile {
    Profile {
        dsos: vec![Dso {
            path: path.display().to_string(),
            short_name: path.file_name().unwrap().to_string_lossy().into_owned(),
            build_id,
            kind: DsoKind::Elf,
            pid: None,
        }],
        ..Profile::default()
    }
}

fn symbolizer(debug_root: &Path) -> Symbolizer {
    Symbolizer::new(SymbolizerOptions {
        debug_root: debug_root.to_path_buf(),
        buildid_cache: None,
        kallsyms: debug_root.join("none"),
        kernel_notes: debug_root.join("none"),
        modules: debug_root.join("none"),
        perf_map_dir: debug_root.join("none"),
        ..SymbolizerOptions::default()
    })
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[test]
fn test_stripped_binary_named_from_build_id_debug_file() {
    let dir = common::scratch("symbols-buildid");
    let (full, id, svma, offset) = build(&dir);
    let stripped = dir.join("stripped");
    run(Command::new("strip").arg("-o").arg(&stripped).arg(&full));
    let p = profile(&stripped, Some(id.clone()));
    let q = Query {
        dso: Some(0),
        file_offset: offset + 2,
        pid: 1,
    };

    // No debug file: the stripped binary has no name for heavy.
    let empty = dir.join("empty-root");
    std::fs::create_dir_all(&empty).unwrap();
    let mut s = symbolizer(&empty);
    let r = s.resolve(&p, q);
    assert_eq!(r.symbol, None);
    assert_eq!(r.svma, Some(svma + 2), "SVMA from the PT_LOAD headers");

    // /usr/lib/debug/.build-id/xx/yyyy.debug layout under a scratch root.
    let root = dir.join("debug-root");
    let h = hex(&id);
    let d = root.join(".build-id").join(&h[..2]);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::copy(&full, d.join(format!("{}.debug", &h[2..]))).unwrap();
    let mut s = symbolizer(&root);
    let r = s.resolve(&p, q);
    let sym = s
        .symbol(r.symbol.expect("named from the debug file"))
        .unwrap();
    assert_eq!(sym.name, "heavy");
    assert_eq!(sym.start, svma);
    // DWARF lines come from the debug file too (built lazily on first use).
    let src = s.source(&p, Some(0), offset + 2, false);
    let first = src.first().expect("a source frame");
    assert!(
        first.file.as_deref().unwrap().ends_with("shares.c"),
        "{src:?}"
    );
    assert!(first.line.unwrap() > 0);
    // The spin() loop is inlined into heavy: an inline frame names it.
    let frames = s.source(&p, Some(0), offset + 0x10, false);
    assert!(!frames.is_empty());
}

#[test]
fn test_debuglink_next_to_the_binary() {
    let dir = common::scratch("symbols-debuglink");
    let (full, _id, svma, offset) = build(&dir);
    let dbg = dir.join("prog.debug");
    run(Command::new("objcopy")
        .arg("--only-keep-debug")
        .arg(&full)
        .arg(&dbg));
    let linked = dir.join("prog");
    run(Command::new("objcopy")
        .current_dir(&dir)
        .args(["--strip-all", "--add-gnu-debuglink=prog.debug"])
        .arg(&full)
        .arg(&linked));
    // No build-id recorded: found by the debuglink name in the binary's directory.
    let p = profile(&linked, None);
    let empty = dir.join("empty-root");
    std::fs::create_dir_all(&empty).unwrap();
    let mut s = symbolizer(&empty);
    let r = s.resolve(
        &p,
        Query {
            dso: Some(0),
            file_offset: offset,
            pid: 1,
        },
    );
    let sym = s
        .symbol(r.symbol.expect("named through .gnu_debuglink"))
        .unwrap();
    assert_eq!((sym.name, sym.start), ("heavy", svma));
}

#[test]
fn test_build_id_mismatch_gives_a_warning_and_no_names() {
    let dir = common::scratch("symbols-mismatch");
    let (full, _id, _svma, offset) = build(&dir);
    let p = profile(&full, Some(vec![0xaa; 20]));
    let mut s = symbolizer(&dir);
    let r = s.resolve(
        &p,
        Query {
            dso: Some(0),
            file_offset: offset,
            pid: 1,
        },
    );
    assert_eq!(r.symbol, None);
    assert!(
        s.warnings()
            .iter()
            .any(|w| w.contains("differs from the recorded one")),
        "{:?}",
        s.warnings()
    );
    // Warned once, however many lookups.
    s.resolve(
        &p,
        Query {
            dso: Some(0),
            file_offset: offset + 1,
            pid: 1,
        },
    );
    assert_eq!(s.warnings().len(), 1);
    // A missing file: a warning, no panic.
    let p = profile(&dir.join("does-not-exist"), None);
    let mut s = symbolizer(&dir);
    assert_eq!(
        s.resolve(
            &p,
            Query {
                dso: Some(0),
                file_offset: 0,
                pid: 1
            }
        )
        .symbol,
        None
    );
    assert!(s.warnings()[0].contains("not found"), "{:?}", s.warnings());
}

#[test]
fn test_preloaded_files_resolve_the_same_and_warn_only_when_used() {
    let dir = common::scratch("symbols-preload");
    let (full, id, svma, offset) = build(&dir);
    let q = Query {
        dso: Some(0),
        file_offset: offset,
        pid: 1,
    };
    let path = full.display().to_string();
    // The recorded build-id: preloaded, then looked up, the name is the one a plain
    // lookup gives.
    let p = profile(&full, Some(id.clone()));
    let mut plain = symbolizer(&dir);
    let want = plain.resolve(&p, q);
    let mut s = symbolizer(&dir);
    s.preload_elf(&path, Some(&id));
    let got = s.resolve(&p, q);
    assert_eq!(got.svma, want.svma);
    let name = |s: &Symbolizer, r: &culprit_symbols::Resolved| {
        r.symbol
            .and_then(|i| s.symbol(i))
            .map(|x| (x.name.to_string(), x.start))
    };
    assert_eq!(name(&s, &got), Some(("heavy".to_string(), svma)));
    assert_eq!(name(&s, &got), name(&plain, &want));
    // Another recorded build-id: the preload gives no names, and its warning comes only
    // with the first lookup in that file.
    let other = vec![0xaa; 20];
    let p = profile(&full, Some(other.clone()));
    let mut s = symbolizer(&dir);
    s.preload_elf(&path, Some(&other));
    assert!(s.warnings().is_empty(), "{:?}", s.warnings());
    assert_eq!(s.resolve(&p, q).symbol, None);
    assert_eq!(s.warnings().len(), 1, "{:?}", s.warnings());
    assert!(s.warnings()[0].contains("differs from the recorded one"));
    // A preload of a file the profile names with another build-id is not used.
    let p = profile(&full, Some(id.clone()));
    let mut s = symbolizer(&dir);
    s.preload_elf(&path, Some(&other));
    let r = s.resolve(&p, q);
    assert_eq!(name(&s, &r), Some(("heavy".to_string(), svma)));
    assert!(s.warnings().is_empty(), "{:?}", s.warnings());
}

/// The recorded-path query of heavy's first instruction, and the name it resolves to.
fn heavy_name(s: &mut Symbolizer, p: &Profile, offset: u64) -> Option<String> {
    let q = Query {
        dso: Some(0),
        file_offset: offset,
        pid: 1,
    };
    let r = s.resolve(p, q);
    r.symbol
        .and_then(|id| s.symbol(id))
        .map(|sym| sym.name.to_string())
}

#[test]
fn test_debuglink_crc_must_match_without_build_id() {
    let dir = common::scratch("symbols-debuglink-crc");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../workloads/shares.c");
    let full = dir.join("full");
    run(Command::new("cc")
        .args(["-O1", "-g", "-Wl,--build-id=none", "-o"])
        .arg(&full)
        .arg(&src));
    let (_, _, _, offset) = {
        let data = std::fs::read(&full).unwrap();
        let obj = object::File::parse(&*data).unwrap();
        assert!(obj.build_id().unwrap().is_none());
        let heavy = obj
            .symbols()
            .find(|s| s.name() == Ok("heavy"))
            .unwrap()
            .address();
        let off = obj
            .segments()
            .find_map(|seg| {
                let (off, size) = seg.file_range();
                (heavy >= seg.address() && heavy < seg.address() + size)
                    .then(|| heavy - seg.address() + off)
            })
            .unwrap();
        ((), (), heavy, off)
    };
    let dbg = dir.join("prog.debug");
    run(Command::new("objcopy")
        .arg("--only-keep-debug")
        .arg(&full)
        .arg(&dbg));
    let linked = dir.join("prog");
    run(Command::new("objcopy")
        .current_dir(&dir)
        .args(["--strip-all", "--add-gnu-debuglink=prog.debug"])
        .arg(&full)
        .arg(&linked));
    let p = profile(&linked, None);
    let empty = dir.join("empty-root");
    std::fs::create_dir_all(&empty).unwrap();
    assert_eq!(
        heavy_name(&mut symbolizer(&empty), &p, offset).as_deref(),
        Some("heavy"),
        "the CRC matches"
    );
    // Another debug file under the same name (one byte more): its CRC differs, and
    // without a build-id nothing else could show it is this binary's.
    let mut other = std::fs::read(&dbg).unwrap();
    other.push(0);
    std::fs::write(&dbg, &other).unwrap();
    assert_eq!(heavy_name(&mut symbolizer(&empty), &p, offset), None);
}

#[test]
fn test_symfs_debug_root_build_id_and_debuglink() {
    let dir = common::scratch("symbols-symfs-debug");
    let (full, id, _svma, offset) = build(&dir);
    let symfs = dir.join("symfs");
    // Recorded as /opt/culprit-prog/prog on the other machine: stripped there, with its
    // debug file in that machine's /usr/lib/debug.
    let recorded = Path::new("/opt/culprit-prog/prog");
    let bin = symfs.join("opt/culprit-prog/prog");
    std::fs::create_dir_all(bin.parent().unwrap()).unwrap();
    let dbg = dir.join("prog.debug");
    run(Command::new("objcopy")
        .arg("--only-keep-debug")
        .arg(&full)
        .arg(&dbg));
    run(Command::new("objcopy")
        .current_dir(&dir)
        .args(["--strip-all", "--add-gnu-debuglink=prog.debug"])
        .arg(&full)
        .arg(&bin));
    let p = profile(recorded, Some(id.clone()));
    let opts = |symfs: Option<PathBuf>| SymbolizerOptions {
        debug_root: PathBuf::from("/usr/lib/debug"),
        buildid_cache: None,
        kallsyms: dir.join("none"),
        kernel_notes: dir.join("none"),
        modules: dir.join("none"),
        perf_map_dir: dir.join("none"),
        symfs,
        debuginfod: None,
        ..SymbolizerOptions::default()
    };
    let name = |symfs: Option<PathBuf>| heavy_name(&mut Symbolizer::new(opts(symfs)), &p, offset);
    assert_eq!(name(Some(symfs.clone())), None, "no debug file yet");
    // DIR/usr/lib/debug/.build-id/xx/rest.debug
    let h = hex(&id);
    let by_id = symfs
        .join("usr/lib/debug/.build-id")
        .join(&h[..2])
        .join(format!("{}.debug", &h[2..]));
    std::fs::create_dir_all(by_id.parent().unwrap()).unwrap();
    std::fs::copy(&full, &by_id).unwrap();
    assert_eq!(name(Some(symfs.clone())).as_deref(), Some("heavy"));
    assert_eq!(name(None), None, "only under --symfs");
    std::fs::remove_file(&by_id).unwrap();
    // DIR/usr/lib/debug/opt/culprit-prog/prog.debug (the debuglink under the debug root).
    let by_link = symfs.join("usr/lib/debug/opt/culprit-prog/prog.debug");
    std::fs::create_dir_all(by_link.parent().unwrap()).unwrap();
    std::fs::copy(&dbg, &by_link).unwrap();
    assert_eq!(name(Some(symfs.clone())).as_deref(), Some("heavy"));
}
