//! `culprit archive`: the objects a recording needs, packed by build-id, give the same report
//! where the recorded files are gone (`--debug-dir` on the unpacked tar), and perf reads the
//! same archive (`perf --buildid-dir`) to the same names.

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// `report --sort dso,sym` rows (`dso|sym` → percent), with `--debug-dir dir`.
fn culprit_rows(file: &Path, debug_dir: &Path) -> BTreeMap<String, f64> {
    let out = common::run_ok(
        common::culprit()
            .args([
                "report",
                "--unknown",
                "address",
                "--format",
                "json",
                "--sort",
                "sym",
                "-i",
            ])
            .arg(file)
            .arg("--debug-dir")
            .arg(debug_dir),
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut rows = BTreeMap::new();
    for r in json["rows"].as_array().unwrap() {
        let name = r["keys"]["sym"].as_str().unwrap_or("").to_string();
        *rows.entry(name).or_insert(0.0) += r["percent"]["cpu-clock"].as_f64().unwrap();
    }
    rows
}

/// perf's `--sort sym` shares of `heavy` and `light` with its build-id cache at `dir`.
fn perf_heavy_light(file: &Path, dir: &Path) -> BTreeMap<String, f64> {
    let out = common::run_ok(
        common::perf()
            .arg("--buildid-dir")
            .arg(dir)
            .args(["report", "--stdio", "--sort", "sym", "-i"])
            .arg(file),
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let (left, name) = l.split_once("] ")?;
            let pct = left.split_whitespace().next()?.trim_end_matches('%');
            Some((name.trim().to_string(), pct.parse().ok()?))
        })
        .filter(|(n, _)| n == "heavy" || n == "light")
        .collect()
}

#[test]
fn test_archive_reports_the_same_where_the_files_are_gone() {
    if !common::require_perf("test_archive_reports_the_same_where_the_files_are_gone") {
        return;
    }
    let dir = common::scratch("archive");
    let bin = dir.join("bin/shares");
    std::fs::create_dir_all(bin.parent().unwrap()).unwrap();
    std::fs::copy(common::workload("shares"), &bin).unwrap();
    let file = {
        let _lock = common::pmu_lock();
        common::perf_record(
            "archive-rec",
            &["-e", "cpu-clock"],
            &[bin.to_str().unwrap(), "8"],
        )
    };
    let empty = dir.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let before = culprit_rows(&file, &empty);
    assert!(before.get("heavy").is_some_and(|p| *p > 40.0), "{before:?}");

    let tar = dir.join("perf.data.tar");
    let out = common::run_ok(
        common::culprit()
            .args(["archive", "-i"])
            .arg(&file)
            .arg("-o")
            .arg(&tar),
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("archived"));
    let list = common::run_ok(Command::new("tar").arg("tf").arg(&tar));
    let list = String::from_utf8_lossy(&list.stdout).into_owned();
    assert!(
        list.lines()
            .any(|l| l.starts_with(".build-id/") && l.ends_with("/elf")),
        "{list}"
    );

    // "Another machine": the workload is gone; the unpacked archive names it again.
    std::fs::remove_file(&bin).unwrap();
    let gone = culprit_rows(&file, &empty);
    assert!(!gone.contains_key("heavy"), "{gone:?}");
    let unpacked = dir.join("unpacked");
    std::fs::create_dir_all(&unpacked).unwrap();
    common::run_ok(
        Command::new("tar")
            .arg("xf")
            .arg(&tar)
            .arg("-C")
            .arg(&unpacked),
    );
    let after = culprit_rows(&file, &unpacked);
    assert_eq!(before, after, "the same report from the archive");
    // perf reads the same archive as its build-id cache, to the same shares.
    let perf = perf_heavy_light(&file, &unpacked);
    assert_eq!(perf.len(), 2, "{perf:?}");
    for (name, share) in &perf {
        assert!(
            (share - after[name]).abs() <= 0.1,
            "{name}: perf {share}, culprit {}",
            after[name]
        );
    }
}
