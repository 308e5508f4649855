//! Kernel module names from the module's own `.ko` (a relocatable ELF whose symbol values
//! count from their section), found under `--symfs` at the recorded path: the same
//! functions and shares as `perf report --symfs`. This machine's kernel has no modules, so
//! the module is built from C here and its kernel MMAP and samples are crafted.

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use common::*;

/// Where the crafted recording maps the module (a module-area address of x86-64).
const BASE: u64 = 0xffff_ffff_c000_0000;
/// The recorded path of the module.
const RECORDED: &str = "/lib/modules/6.1.0-test/kernel/drivers/foo.ko";

const SOURCE: &str = "int foo_counter;
__attribute__((noinline)) void foo_hot(void) { for (int i = 0; i < 100; i++) foo_counter += i * 3; }
__attribute__((noinline)) static void foo_helper(void) { foo_counter ^= 0x55; foo_counter += 7; }
__attribute__((noinline)) void foo_cold(void) { foo_helper(); foo_counter--; }
void foo_entry(void) { foo_hot(); foo_cold(); }
";

/// A function of the module: name, section-relative value, size.
type Function = (String, u64, u64);

/// Builds `foo.ko` (with a build-id) under `symfs` at [`RECORDED`]; its `.text` functions
/// as (name, value, size) from `nm`. `None` when gcc or ld is missing.
fn build_module(dir: &Path, symfs: &Path) -> Option<Vec<Function>> {
    let c = dir.join("foo.c");
    std::fs::write(&c, SOURCE).unwrap();
    let obj = dir.join("foo.o");
    let ok = Command::new("gcc")
        .args(["-O1", "-fno-pic", "-c"])
        .arg(&c)
        .arg("-o")
        .arg(&obj)
        .status()
        .ok()?
        .success();
    let ko = symfs.join(RECORDED.trim_start_matches('/'));
    std::fs::create_dir_all(ko.parent().unwrap()).unwrap();
    let ok = ok
        && Command::new("ld")
            .args(["-r", "--build-id"])
            .arg(&obj)
            .arg("-o")
            .arg(&ko)
            .status()
            .ok()?
            .success();
    if !ok {
        return None;
    }
    let nm = Command::new("nm").arg("-S").arg(&ko).output().ok()?;
    let funcs = String::from_utf8_lossy(&nm.stdout)
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let &[value, size, kind, name] = f.as_slice() else {
                return None;
            };
            matches!(kind, "T" | "t").then(|| {
                (
                    name.to_string(),
                    u64::from_str_radix(value, 16).unwrap(),
                    u64::from_str_radix(size, 16).unwrap(),
                )
            })
        })
        .collect();
    Some(funcs)
}

/// A perf.data file whose kernel maps `foo.ko` at [`BASE`] (as perf records a module:
/// pid -1, file offset 0) with `n` kernel samples at each (offset, n).
fn write_recording(path: &Path, samples: &[(u64, u64)]) {
    write_recording_as(
        path,
        RECORDED,
        samples,
        &culprit_collect::perfdata::Features::default(),
    );
}

/// [`write_recording`] with the module's recorded name and the header features given.
fn write_recording_as(
    path: &Path,
    recorded: &str,
    samples: &[(u64, u64)],
    features: &culprit_collect::perfdata::Features,
) {
    use culprit_collect::perfdata::records::{self, MmapArgs, SampleId};
    use culprit_collect::perfdata::{FileAttr, PerfDataWriter};
    use culprit_decode::abi::{attr_flag, misc};
    let attr = common::cpu_clock_attr(0, attr_flag::MMAP | attr_flag::COMM);
    let file = FileAttr {
        attr,
        name: "cpu-clock".to_string(),
        ids: vec![1],
    };
    let mut w = PerfDataWriter::new(std::fs::File::create(path).unwrap(), vec![file]).unwrap();
    let mut buf = Vec::new();
    let sid = SampleId {
        pid: -1i32 as u32,
        tid: -1i32 as u32,
        time: 1,
        id: 1,
        cpu: 0,
    };
    records::push_mmap(
        &mut buf,
        &attr,
        &MmapArgs {
            pid: -1i32 as u32,
            tid: -1i32 as u32,
            start: BASE,
            len: 0x2000,
            pgoff: 0,
            maj: 0,
            min: 0,
            ino: 0,
            prot: 5,
            flags: 2,
            filename: recorded.as_bytes(),
            misc: misc::KERNEL,
        },
        &sid,
    );
    let mut time = 10u64;
    for &(offset, n) in samples {
        for _ in 0..n {
            // PERF_RECORD_SAMPLE: IDENTIFIER, IP, TID, TIME, PERIOD.
            let words = [1, BASE + offset, 100 | 100 << 32, time, 100003];
            common::push_sample(&mut buf, misc::KERNEL, &words);
            time += 1;
        }
    }
    w.write_data(&buf).unwrap();
    w.finish(features).unwrap();
}

/// perf's `--stdio --sort sym` rows as symbol -> percentage (two decimals; the `[k]` level
/// left out).
fn perf_shares(file: &Path, symfs: &Path) -> BTreeMap<String, String> {
    let out = run_ok(
        perf()
            .args(["report", "--stdio", "--sort", "sym", "-i"])
            .arg(file)
            .arg("--symfs")
            .arg(symfs),
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.starts_with('#') && l.contains('%'))
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let share = f.next()?.trim_end_matches('%').to_string();
            let _level = f.next()?;
            Some((f.collect::<Vec<_>>().join(" "), share))
        })
        .collect()
}

/// culprit's `report --sort sym --format json` rows as symbol -> percentage.
fn culprit_shares(file: &Path, symfs: &Path) -> BTreeMap<String, String> {
    let out = run_ok(
        culprit()
            .args(["report", "--sort", "sym", "--format", "json", "-i"])
            .arg(file)
            .arg("--symfs")
            .arg(symfs),
    );
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    j["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["keys"]["sym"].as_str().unwrap().to_string(),
                format!(
                    "{:.2}",
                    r["percent"]
                        .as_object()
                        .unwrap()
                        .values()
                        .next()
                        .unwrap()
                        .as_f64()
                        .unwrap()
                ),
            )
        })
        .collect()
}

#[test]
fn test_module_functions_come_from_the_ko_under_symfs_like_perf() {
    let test = "test_module_functions_come_from_the_ko_under_symfs_like_perf";
    let dir = scratch("kmodule-symfs");
    let symfs = dir.join("root");
    let Some(funcs) = build_module(&dir, &symfs) else {
        need(test, false, "gcc and ld are needed to build the module");
        return;
    };
    let at = |name: &str| funcs.iter().find(|f| f.0 == name).unwrap();
    // 6 samples in foo_hot, 3 in the local foo_helper, 1 in foo_cold.
    let (hot, helper, cold) = (at("foo_hot"), at("foo_helper"), at("foo_cold"));
    let file = dir.join("perf.data");
    write_recording(
        &file,
        &[(hot.1 + 2, 6), (helper.1 + helper.2 - 1, 3), (cold.1, 1)],
    );
    let ours = culprit_shares(&file, &symfs);
    for (name, share) in [
        ("foo_hot", "60.00"),
        ("foo_helper", "30.00"),
        ("foo_cold", "10.00"),
    ] {
        assert_eq!(
            ours.get(name).map(String::as_str),
            Some(share),
            "{name}: {ours:?}"
        );
    }
    if !require_perf(test) {
        return;
    }
    let theirs = perf_shares(&file, &symfs);
    assert_eq!(ours, theirs);
}

/// A module recorded as `[foo]` is found under `/lib/modules/RELEASE/` (RELEASE from the
/// recording's HEADER_OSRELEASE, under `--symfs`), with `-` and `_` alike; a recorded
/// build-id that is not the file's keeps its names out (never wrong names).
#[test]
fn test_module_ko_is_found_by_release_and_checked_by_build_id() {
    use culprit_collect::perfdata::{BuildIdEntry, Features};
    let test = "test_module_ko_is_found_by_release_and_checked_by_build_id";
    let dir = scratch("kmodule-release");
    let built = dir.join("built");
    let Some(funcs) = build_module(&dir, &built) else {
        need(test, false, "gcc and ld are needed to build the module");
        return;
    };
    let symfs = dir.join("root");
    let ko = symfs.join("lib/modules/6.1.0-other/extra/f/foo.ko");
    std::fs::create_dir_all(ko.parent().unwrap()).unwrap();
    std::fs::copy(built.join(RECORDED.trim_start_matches('/')), &ko).unwrap();
    let hot = funcs.iter().find(|f| f.0 == "foo_hot").unwrap();
    let features = Features {
        osrelease: Some("6.1.0-other".to_string()),
        ..Features::default()
    };
    let file = dir.join("perf.data");
    write_recording_as(&file, "[foo]", &[(hot.1 + 1, 4)], &features);
    let ours = culprit_shares(&file, &symfs);
    assert_eq!(
        ours.get("foo_hot").map(String::as_str),
        Some("100.00"),
        "{ours:?}"
    );

    let notes = run_ok(Command::new("readelf").arg("-n").arg(&ko));
    let own: Vec<u8> = String::from_utf8_lossy(&notes.stdout)
        .split("Build ID:")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .map(|h| {
            (0..h.len() / 2)
                .map(|i| u8::from_str_radix(&h[2 * i..2 * i + 2], 16).unwrap())
                .collect()
        })
        .expect("ld --build-id wrote a build-id");
    for (build_id, named) in [(own, true), (vec![0xab; 20], false)] {
        let recorded = Features {
            build_ids: vec![BuildIdEntry {
                cpumode: 1,
                build_id,
                filename: "[foo]".to_string(),
            }],
            ..features.clone()
        };
        write_recording_as(&file, "[foo]", &[(hot.1 + 1, 4)], &recorded);
        let ours = culprit_shares(&file, &symfs);
        assert_eq!(ours.contains_key("foo_hot"), named, "{ours:?}");
    }
}

/// `culprit archive` carries a module's `.ko` (by its recorded build-id), and a report with
/// `--debug-dir` on the unpacked archive names its functions once the file is gone.
#[test]
fn test_archive_carries_the_module_ko() {
    use culprit_collect::perfdata::{BuildIdEntry, Features};
    let test = "test_archive_carries_the_module_ko";
    let dir = scratch("kmodule-archive");
    let Some(funcs) = build_module(&dir, &dir.join("built")) else {
        need(test, false, "gcc and ld are needed to build the module");
        return;
    };
    // The recording names the module at its absolute path in the scratch directory.
    let ko = dir.join("built").join(RECORDED.trim_start_matches('/'));
    let recorded = ko.display().to_string();
    let notes = run_ok(Command::new("readelf").arg("-n").arg(&ko));
    let hex = String::from_utf8_lossy(&notes.stdout)
        .split("Build ID:")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next().map(str::to_string))
        .expect("ld --build-id wrote a build-id");
    let build_id = (0..hex.len() / 2)
        .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap())
        .collect();
    let features = Features {
        build_ids: vec![BuildIdEntry {
            cpumode: 1,
            build_id,
            filename: recorded.clone(),
        }],
        ..Features::default()
    };
    let hot = funcs.iter().find(|f| f.0 == "foo_hot").unwrap();
    let file = dir.join("perf.data");
    write_recording_as(&file, &recorded, &[(hot.1 + 3, 5)], &features);
    let tar = dir.join("perf.data.tar");
    run_ok(
        culprit()
            .args(["archive", "-i"])
            .arg(&file)
            .arg("-o")
            .arg(&tar),
    );
    let list = run_ok(Command::new("tar").arg("tf").arg(&tar));
    let list = String::from_utf8_lossy(&list.stdout).into_owned();
    let entry = format!(".build-id/{}/{}/elf", &hex[..2], &hex[2..]);
    assert!(list.lines().any(|l| l == entry), "{entry} not in {list}");

    std::fs::remove_file(&ko).unwrap();
    let unpacked = dir.join("unpacked");
    std::fs::create_dir_all(&unpacked).unwrap();
    run_ok(
        Command::new("tar")
            .arg("xf")
            .arg(&tar)
            .arg("-C")
            .arg(&unpacked),
    );
    let out = run_ok(
        culprit()
            .args(["report", "--sort", "sym", "--format", "json", "-i"])
            .arg(&file)
            .arg("--debug-dir")
            .arg(&unpacked),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("\"foo_hot\""), "{text}");
}
