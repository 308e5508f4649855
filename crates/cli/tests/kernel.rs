//! Names as perf gives them. Kernel symbols of recorded files: never another kernel's. A
//! real pipe file of perf 3.4 records neither its kernel's build-id nor its release, so this
//! machine's kallsyms cannot name its addresses (perf 6.1 does, wrongly:
//! `srso_alias_return_thunk`); `--kallsyms FILE` and `--vmlinux FILE` give the recorded
//! kernel's symbols on every reading verb. JIT code named by a perf map.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;

/// perf 3.4, pipe mode, `-a` (kernel samples), no build-ids, no OSRELEASE.
fn file() -> PathBuf {
    repo_root().join(
        "crates/decode/tests/fixtures/real-perf-data/google-perf_data_converter/\
         perf.data.piped.hw_and_sw-3.4",
    )
}

/// Its most sampled kernel address (perf report: 0xffffffff810197b4, `-c 1000000` cycles).
const HOT: u64 = 0xffff_ffff_8101_97b4;

/// `report --sort dso,sym --format json` rows as (dso, sym, sym_addr), and stderr.
fn report(extra: &[&str]) -> (Vec<(String, String, Option<String>)>, String) {
    let out = run_ok(
        culprit()
            .args([
                "report",
                "--unknown",
                "address",
                "--sort",
                "dso,sym",
                "--format",
                "json",
                "-i",
            ])
            .arg(file())
            .args(extra),
    );
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = j["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let k = &r["keys"];
            (
                k["dso"].as_str().unwrap().to_string(),
                k["sym"].as_str().unwrap().to_string(),
                k["sym_addr"].as_str().map(str::to_string),
            )
        })
        .collect();
    (rows, String::from_utf8_lossy(&out.stderr).into_owned())
}

/// kallsyms text naming `[HOT page, +0x1000)` `test_kfunc`, and the kernel text around it
/// `test_kbase` and `test_after`.
fn write_kallsyms(dir: &Path) -> PathBuf {
    let page = HOT & !0xfff;
    let p = dir.join("kallsyms");
    std::fs::write(
        &p,
        format!(
            "ffffffff81000000 T test_kbase\n{page:016x} T test_kfunc\n{:016x} T test_after\nffffffff82000000 T _etext\n",
            page + 0x1000
        ),
    )
    .unwrap();
    p
}

#[test]
fn test_kernel_addresses_of_another_kernel_stay_unnamed_and_say_why() {
    let (rows, err) = report(&[]);
    let kernel: Vec<_> = rows.iter().filter(|r| r.0 == "[kernel.kallsyms]").collect();
    assert!(kernel.len() > 10, "{rows:?}");
    for r in &kernel {
        assert_eq!(
            r.1, "[unknown]",
            "kernel row named from this machine: {r:?}"
        );
    }
    assert!(
        kernel
            .iter()
            .any(|r| r.2.as_deref() == Some(&format!("{HOT:#x}"))),
        "{kernel:?}"
    );
    let why = "records neither the kernel's build-id nor its release";
    assert_eq!(err.matches(why).count(), 1, "{err}");
    assert!(err.contains("--kallsyms FILE or --vmlinux FILE"), "{err}");
}

#[test]
fn test_kallsyms_flag_names_kernel_addresses_on_every_reading_verb() {
    let dir = scratch("cli-kernel-kallsyms");
    let k = write_kallsyms(&dir);
    let (rows, err) = report(&["--kallsyms", k.to_str().unwrap()]);
    assert!(
        rows.iter()
            .any(|r| r.0 == "[kernel.kallsyms]" && r.1 == "test_kfunc"),
        "{rows:?}"
    );
    assert!(!err.contains("kernel symbols unknown"), "{err}");

    let out = run_ok(
        culprit()
            .args(["script", "-i"])
            .arg(file())
            .args(["--kallsyms", k.to_str().unwrap()]),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("test_kfunc"),
        "{}",
        &text[..text.len().min(2000)]
    );

    let out = run_ok(
        culprit()
            .args(["trace", "-i"])
            .arg(file())
            .args(["--kallsyms", k.to_str().unwrap()])
            .args(["-e", "profile:::hz-1 { @[sym] = count(); }"]),
    );
    // (The probe fires on the cpu-clock samples, elsewhere in the kernel.)
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("test_kbase") || text.contains("test_after"),
        "{text}"
    );
    // Without the flag, trace -i does not name them either.
    let out = run_ok(
        culprit()
            .args(["trace", "-i"])
            .arg(file())
            .args(["-e", "profile:::hz-1 { @[sym] = count(); }"]),
    );
    assert!(!String::from_utf8_lossy(&out.stdout).contains("srso_"));

    // annotate and ibs take the flags too (perf's names).
    for verb in ["annotate", "ibs", "report", "script", "trace"] {
        let out = run_ok(culprit().args([verb, "--help"]));
        let help = String::from_utf8_lossy(&out.stdout);
        assert!(
            help.contains("--kallsyms <FILE>") && help.contains("--vmlinux <FILE>"),
            "{verb}: {help}"
        );
    }
}

#[test]
fn test_vmlinux_flag_names_kernel_addresses() {
    let dir = scratch("cli-kernel-vmlinux");
    // A tiny kernel image: one function over the hot address's page.
    let src = dir.join("k.s");
    std::fs::write(
        &src,
        ".text\n.globl test_vmfunc\n.type test_vmfunc,@function\ntest_vmfunc:\n\
         .skip 0x1000\n.size test_vmfunc, 0x1000\n.globl _start\n_start:\nret\n",
    )
    .unwrap();
    let vmlinux = dir.join("vmlinux");
    let built = Command::new("cc")
        .args(["-nostdlib", "-static", "-no-pie"])
        .arg(format!("-Wl,-Ttext={:#x}", HOT & !0xfff))
        .arg("-o")
        .arg(&vmlinux)
        .arg(&src)
        .status()
        .is_ok_and(|s| s.success());
    assert!(built, "cc could not build the test's vmlinux");
    let (rows, err) = report(&["--vmlinux", vmlinux.to_str().unwrap()]);
    assert!(
        rows.iter()
            .any(|r| r.0 == "[kernel.kallsyms]" && r.1 == "test_vmfunc"),
        "{rows:?}\n{err}"
    );
}

/// A program that runs generated code in an anonymous executable mapping and names it in
/// its perf map (`/tmp/perf-PID.map`), as JIT compilers do.
const JIT_PROGRAM: &str = r#"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
int main(int argc, char **argv) {
    long iters = argc > 1 ? atol(argv[1]) : 300000000L;
    /* spin: dec %rdi; jnz spin; ret */
    unsigned char code[] = {0x48, 0xff, 0xcf, 0x75, 0xfb, 0xc3};
    unsigned char *m = mmap(0, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
                            MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return 1;
    memcpy(m, code, sizeof code);
    char path[64];
    snprintf(path, sizeof path, "/tmp/perf-%d.map", getpid());
    FILE *f = fopen(path, "w");
    if (!f) return 1;
    fprintf(f, "%lx %zx jitted_spin\n", (unsigned long)m, sizeof code);
    fclose(f);
    ((void (*)(long))m)(iters);
    printf("%d\n", getpid());
    return 0;
}
"#;

/// JIT code named by a perf map: its rows read `[JIT] tid PID` / `jitted_spin` (as
/// perf 6.1 prints them), and `annotate jitted_spin` shows its sampled addresses marked
/// `(code not available)` (docs/annotate.md) instead of failing.
#[test]
fn test_jit_code_is_named_like_perf_and_annotates_without_code() {
    if !cfg!(target_arch = "x86_64") {
        eprintln!("skipped: the generated code is x86-64");
        return;
    }
    let dir = scratch("cli-kernel-jit");
    let src = dir.join("jit.c");
    std::fs::write(&src, JIT_PROGRAM).unwrap();
    let bin = dir.join("jit");
    run_ok(Command::new("cc").args(["-O1", "-o"]).arg(&bin).arg(&src));
    let data = dir.join("jit.data");
    let out = {
        let _lock = pmu_lock();
        run_ok(
            culprit()
                .args(["record", "-q", "-e", "cpu-clock", "-c", "250000", "-o"])
                .arg(&data)
                .arg("--")
                .arg(&bin),
        )
    };
    let pid: i32 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    let map = PathBuf::from(format!("/tmp/perf-{pid}.map"));
    let report = run_ok(
        culprit()
            .args(["report", "--sort", "dso,sym", "--format", "json", "-i"])
            .arg(&data),
    );
    let annotate = culprit()
        .args(["annotate", "-i"])
        .arg(&data)
        .arg("jitted_spin")
        .output()
        .unwrap();
    let _ = std::fs::remove_file(&map);
    let j: serde_json::Value = serde_json::from_slice(&report.stdout).unwrap();
    let jit = format!("[JIT] tid {pid}");
    let share: f64 = j["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["keys"]["dso"] == jit.as_str() && r["keys"]["sym"] == "jitted_spin")
        .map(|r| r["percent"]["cpu-clock"].as_f64().unwrap_or(0.0))
        .sum();
    assert!(share > 50.0, "{jit} jitted_spin {share}%: {}", j["rows"]);
    let text = String::from_utf8_lossy(&annotate.stdout);
    assert!(
        annotate.status.success(),
        "annotate failed: {}",
        String::from_utf8_lossy(&annotate.stderr)
    );
    assert!(
        text.contains("jitted_spin") && text.contains(&jit),
        "{text}"
    );
    assert!(text.contains("(code not available)"), "{text}");
}

/// The live views (`top`, live `trace`) name `[vdso]` functions as `report` does (this
/// process's vDSO is the one every process maps): a program spinning on clock_gettime.
#[test]
fn test_live_views_name_vdso_functions() {
    let dir = scratch("cli-kernel-vdso");
    let src = dir.join("vd.c");
    std::fs::write(
        &src,
        "#include <stdio.h>\n#include <time.h>\nint main(void) { struct timespec t; long n = 0; \
         time_t end = time(0) + 1; while (time(0) < end) for (int i = 0; i < 1000; i++) { \
         clock_gettime(CLOCK_MONOTONIC, &t); n += t.tv_nsec & 1; } printf(\"%ld\\n\", n); \
         return 0; }\n",
    )
    .unwrap();
    let bin = dir.join("vd");
    run_ok(Command::new("cc").args(["-O1", "-o"]).arg(&bin).arg(&src));
    let _lock = pmu_lock();
    let out = run_ok(
        culprit()
            .args([
                "trace",
                "-e",
                "profile:::hz-1000 { @[mod, sym] = count(); }",
                "--",
            ])
            .arg(&bin),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let vdso: Vec<&str> = text.lines().filter(|l| l.contains("[vdso]")).collect();
    assert!(!vdso.is_empty(), "{text}");
    assert!(vdso.iter().any(|l| l.contains("clock_gettime")), "{text}");
    let out = run_ok(culprit().args(["top", "--stdio", "--"]).arg(&bin));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.lines()
            .any(|l| l.contains("[vdso]") && l.contains("clock_gettime")),
        "{text}"
    );
}

#[test]
fn test_annotate_kernel_addresses_keep_their_gap() {
    let dir = scratch("cli-kernel-annotate");
    let k = write_kallsyms(&dir);
    let out = run_ok(
        culprit()
            .env_remove("COLUMNS")
            .args(["annotate", "-i"])
            .arg(file())
            .args([
                "--kallsyms",
                k.to_str().unwrap(),
                "test_kfunc",
                "--width",
                "80",
            ]),
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let mut lines = text.lines();
    let header = lines
        .by_ref()
        .find(|l| l.starts_with("# ") && l.contains("Address"))
        .unwrap_or_else(|| panic!("{text}"));
    // (Positions in characters: a name cut to fit ends with a 3-byte '…'.)
    let header = header.replace('…', ".");
    let addr_end = header.find("Address").unwrap() + "Address".len();
    let rows: Vec<String> = lines
        .take_while(|l| !l.is_empty())
        .map(|l| l.replace('…', "."))
        .collect();
    assert!(rows.len() >= 2, "{text}");
    let hot = format!("{HOT:#x}");
    assert!(rows.iter().any(|r| r.contains(&hot)), "{text}");
    for r in &rows {
        // The 16-digit address is right-aligned in its column, two blanks after the `>>`
        // mark of hot rows (or the counts), two blanks before the code.
        let start = addr_end - hot.len();
        assert!(
            r[start..addr_end].starts_with("0xffffffff"),
            "{r:?}\n{text}"
        );
        assert_eq!(&r[start - 2..start], "  ", "{r:?}\n{text}");
        assert_eq!(&r[addr_end..addr_end + 2], "  ", "{r:?}\n{text}");
    }
    assert!(rows.iter().any(|r| r.contains(">>  0xffffffff")), "{text}");
    for l in text.lines() {
        assert!(l.chars().count() <= 80, "{l:?}");
    }
}
