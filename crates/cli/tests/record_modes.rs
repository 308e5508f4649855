//! Integration tests of `culprit record`'s modes for long recordings (issue 21): compressed
//! files (`-z`), rotation (`--switch-output`, `--switch-max-files`), `--max-size`,
//! `--duration` and the flight recorder (`--overwrite`). Every file is read by perf 6.1
//! (`perf report`/`perf script`, the independent reader) and by culprit's reader.
//!
//! Bounds have margins and nothing is timed: a busy machine changes how many samples land
//! where, never what must hold.
//!
//! Every test that opens perf events takes `common::pmu_lock()`.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn perf(args: &[&str]) -> Output {
    common::perf()
        .args(args)
        .env("PAGER", "cat")
        .env("PERF_PAGER", "cat")
        .stdin(Stdio::null())
        .output()
        .expect("run perf")
}

/// The summary line of `culprit record --format json` (the last line of stdout).
fn summary(out: &Output) -> Value {
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().last().unwrap_or_default();
    serde_json::from_str(line).unwrap_or_else(|e| panic!("summary is not JSON ({e}): {text}"))
}

fn record(args: &[&str]) -> (Value, Output) {
    let out = common::run_ok(
        common::culprit()
            .arg("record")
            .arg("--format")
            .arg("json")
            .args(args),
    );
    let v = summary(&out);
    // The workload's own output comes first on stdout; the summary is the last line.
    common::validate_json_schema("record", &v.to_string());
    (v, out)
}

/// perf report and perf script read `file` with an empty stderr; returns perf script's
/// samples as (tid, time, ip) lines.
fn perf_reads_cleanly(file: &Path) -> Vec<String> {
    let f = file.to_str().unwrap();
    let report = perf(&["report", "--stdio", "-i", f]);
    assert!(report.status.success(), "perf report: {}", stderr(&report));
    assert!(
        stderr(&report).trim().is_empty(),
        "perf report warned on {f}:\n{}",
        stderr(&report)
    );
    perf_samples(file)
}

fn perf_samples(file: &Path) -> Vec<String> {
    perf_samples_warning(file, None)
}

/// perf script's samples; its stderr must be empty, or (with `allowed`) hold only a warning
/// that contains `allowed`.
fn perf_samples_warning(file: &Path, allowed: Option<&str>) -> Vec<String> {
    let f = file.to_str().unwrap();
    let script = perf(&["script", "-i", f, "-F", "tid,time,ip", "-G"]);
    assert!(script.status.success(), "perf script: {}", stderr(&script));
    let err = stderr(&script);
    let expected = allowed.is_some_and(|a| err.starts_with("Warning:") && err.contains(a));
    assert!(
        err.trim().is_empty() || expected,
        "perf script warned on {f}:\n{err}"
    );
    String::from_utf8_lossy(&script.stdout)
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|l| !l.is_empty())
        .collect()
}

/// culprit's reader: no warning, no early stop; returns the samples as perf script prints
/// them (tid, time in seconds with 6 decimals, ip in hex).
fn culprit_samples(file: &Path) -> (culprit_decode::Profile, Vec<String>) {
    let p = culprit_decode::Reader::open(file)
        .collect()
        .unwrap_or_else(|e| panic!("culprit cannot read {}: {e}", file.display()));
    assert!(
        p.warnings.is_empty(),
        "{}: {:?}",
        file.display(),
        p.warnings
    );
    assert!(p.stopped.is_none(), "{}: {:?}", file.display(), p.stopped);
    let lines = p
        .samples
        .iter()
        .map(|s| {
            format!(
                "{} {}.{:06}: {:x}",
                s.tid,
                s.time / 1_000_000_000,
                s.time % 1_000_000_000 / 1000,
                s.ip
            )
        })
        .collect();
    (p, lines)
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

fn files_of(v: &Value) -> Vec<(PathBuf, u64, u64, bool)> {
    v["files"]
        .as_array()
        .expect("files")
        .iter()
        .map(|f| {
            (
                PathBuf::from(f["path"].as_str().unwrap()),
                f["size"].as_u64().unwrap(),
                f["samples"].as_u64().unwrap(),
                f["kept"].as_bool().unwrap(),
            )
        })
        .collect()
}

/// Share of the samples whose symbol perf resolves to `sym` (perf report --sort sym).
fn perf_share(file: &Path, sym: &str) -> f64 {
    let o = perf(&[
        "report",
        "--stdio",
        "-i",
        file.to_str().unwrap(),
        "--sort",
        "sym",
        "--percent-limit",
        "0",
    ]);
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter(|l| !l.starts_with('#'))
        .find(|l| l.trim_end().ends_with(&format!("] {sym}")))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|p| p.trim_end_matches('%').parse().ok())
        .unwrap_or(0.0)
}

#[test]
fn test_compressed_recording_read_by_perf_and_culprit_sample_for_sample() {
    if !common::require_perf("test_compressed_recording_read_by_perf_and_culprit_sample_for_sample")
    {
        return;
    }
    let _lock = common::pmu_lock();
    let dir = common::scratch("record-modes-z");
    let shares = common::workload("shares");
    let plain = dir.join("plain.data");
    let z = dir.join("z.data");
    let z9 = dir.join("z9.data");
    let run = |file: &Path, extra: &[&str]| {
        let mut args = vec![
            "-e",
            "cpu-clock",
            "-F",
            "2000",
            "-g",
            "-o",
            file.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--", shares.to_str().unwrap(), "30"]);
        record(&args).0
    };
    let vp = run(&plain, &[]);
    let vz = run(&z, &["-z"]);
    let vz9 = run(&z9, &["--compression-level", "9"]);
    assert!(vp["compression"].is_null());
    assert_eq!(vz["compression"]["level"], 1);
    assert_eq!(vz9["compression"]["level"], 9);

    for (file, v) in [(&z, &vz), (&z9, &vz9)] {
        // perf decompresses it with no warning and sees what culprit sees, sample for sample.
        let by_perf = perf_reads_cleanly(file);
        let (p, by_culprit) = culprit_samples(file);
        assert!(p.meta.compressed);
        assert_eq!(by_perf.len() as u64, v["samples"].as_u64().unwrap());
        assert_eq!(sorted(by_perf), sorted(by_culprit));
        let header = perf(&["report", "--header-only", "-i", file.to_str().unwrap()]);
        let level = v["compression"]["level"].as_u64().unwrap();
        assert!(
            String::from_utf8_lossy(&header.stdout)
                .contains(&format!("# compressed : Zstd, level = {level}, ratio = ")),
            "{}",
            String::from_utf8_lossy(&header.stdout)
        );
        // Smaller per sample than the plain file, by a margin.
        let per_sample =
            |v: &Value| v["file_size"].as_f64().unwrap() / v["samples"].as_f64().unwrap();
        assert!(
            per_sample(v) * 2.0 < per_sample(&vp),
            "{} vs {} bytes per sample",
            per_sample(v),
            per_sample(&vp)
        );
        let c = &v["compression"];
        assert!(c["compressed_bytes"].as_u64().unwrap() * 2 < c["raw_bytes"].as_u64().unwrap());
    }
    // The plain recording of the same workload puts the same share in `heavy` (75 %),
    // within a wide margin: the compressed records hold the same kind of samples.
    let (hp, hz) = (perf_share(&plain, "heavy"), perf_share(&z, "heavy"));
    assert!(
        hp > 40.0 && (hp - hz).abs() < 20.0,
        "heavy: plain {hp}%, -z {hz}%"
    );
}

#[test]
fn test_switch_output_size_makes_standalone_files_whose_samples_sum_to_the_run() {
    if !common::require_perf(
        "test_switch_output_size_makes_standalone_files_whose_samples_sum_to_the_run",
    ) {
        return;
    }
    let _lock = common::pmu_lock();
    let dir = common::scratch("record-modes-switch");
    let shares = common::workload("shares");
    let base = dir.join("perf.data");
    let (v, out) = record(&[
        "-e",
        "cpu-clock",
        "-F",
        "4000",
        "-g",
        "--switch-output=24K",
        "-o",
        base.to_str().unwrap(),
        "--",
        shares.to_str().unwrap(),
        "40",
    ]);
    let files = files_of(&v);
    // ~1600 samples of ~100 bytes: several files of 24 KiB.
    assert!(files.len() >= 3, "{files:?}");
    assert!(
        !base.exists(),
        "with --switch-output the last file is switched too"
    );
    let err = stderr(&out);
    assert_eq!(
        err.matches("[ culprit record: Dump ").count(),
        files.len(),
        "{err}"
    );
    let mut total = 0;
    for (path, size, samples, kept) in &files {
        assert!(kept);
        let name = path.file_name().unwrap().to_str().unwrap();
        let stamp = name
            .strip_prefix("perf.data.")
            .expect("perf.data.<timestamp>");
        assert!(
            stamp.len() == 16 && stamp.bytes().all(|b| b.is_ascii_digit()),
            "{name}"
        );
        assert_eq!(std::fs::metadata(path).unwrap().len(), *size);
        // The size bound, with the feature sections on top.
        assert!(*size < 24 * 1024 + 16 * 1024, "{name}: {size} bytes");
        let by_perf = perf_reads_cleanly(path);
        let (p, by_culprit) = culprit_samples(path);
        assert_eq!(by_perf.len() as u64, *samples, "{name}");
        assert_eq!(sorted(by_perf), sorted(by_culprit), "{name}");
        total += samples;
        // Each file stands alone: its samples resolve to the workload's functions.
        if *samples >= 100 {
            assert!(
                perf_share(path, "heavy") > 20.0,
                "{name}: no `heavy` symbols"
            );
            assert!(
                p.samples.iter().any(|s| p.str(s.comm) == "shares"),
                "{name}: no comm"
            );
        }
    }
    assert_eq!(total, v["samples"].as_u64().unwrap());
}

#[test]
fn test_switch_max_files_keeps_the_newest_n() {
    if !common::require_perf("test_switch_max_files_keeps_the_newest_n") {
        return;
    }
    let _lock = common::pmu_lock();
    let dir = common::scratch("record-modes-max-files");
    let shares = common::workload("shares");
    let base = dir.join("perf.data");
    let (v, _) = record(&[
        "-e",
        "cpu-clock",
        "-F",
        "4000",
        "--switch-output=8K",
        "--switch-max-files",
        "3",
        "-o",
        base.to_str().unwrap(),
        "--",
        shares.to_str().unwrap(),
        "40",
    ]);
    let files = files_of(&v);
    assert!(files.len() > 3, "{files:?}");
    let kept: Vec<&PathBuf> = files.iter().filter(|f| f.3).map(|f| &f.0).collect();
    assert_eq!(kept.len(), 3);
    // The newest three, in order.
    let newest: Vec<&PathBuf> = files[files.len() - 3..].iter().map(|f| &f.0).collect();
    assert_eq!(kept, newest);
    let mut on_disk: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    on_disk.sort();
    assert_eq!(on_disk.iter().collect::<Vec<_>>(), kept);
    for f in kept {
        perf_reads_cleanly(f);
    }
}

#[test]
fn test_max_size_stops_at_about_the_size_with_a_valid_file() {
    if !common::require_perf("test_max_size_stops_at_about_the_size_with_a_valid_file") {
        return;
    }
    let _lock = common::pmu_lock();
    let dir = common::scratch("record-modes-max-size");
    let shares = common::workload("shares");
    let data = dir.join("m.data");
    // The workload runs ~2 s of CPU (~8000 samples, ~400 KiB): the bound comes first.
    let (v, out) = record(&[
        "-e",
        "cpu-clock",
        "-F",
        "4000",
        "--max-size",
        "40K",
        "-o",
        data.to_str().unwrap(),
        "--",
        shares.to_str().unwrap(),
        "200",
    ]);
    assert_eq!(v["stop_reason"], "max_size", "{v}");
    assert!(
        stderr(&out).contains("size limit reached"),
        "{}",
        stderr(&out)
    );
    let size = std::fs::metadata(&data).unwrap().len();
    assert_eq!(size, v["file_size"].as_u64().unwrap());
    // The records stop at or just before 40 KiB; the feature sections follow.
    let header_and_data = 40 * 1024 - v["data_size"].as_u64().unwrap();
    assert!(
        header_and_data < 4096,
        "{header_and_data} bytes short of the bound"
    );
    assert!(size < 40 * 1024 + 16 * 1024, "{size}");
    let o = perf(&["report", "--stdio", "-i", data.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    // perf warns when more than 5 % of the samples are lost: the dropped ones are.
    let by_perf = perf_samples_warning(&data, Some("lost"));
    let (p, by_culprit) = culprit_samples(&data);
    assert_eq!(by_perf.len() as u64, v["samples"].as_u64().unwrap());
    assert_eq!(sorted(by_perf), sorted(by_culprit));
    // What was read after the bound is counted, in the summary and in the file.
    let dropped = v["dropped_samples"].as_u64().unwrap();
    assert_eq!(p.lost, dropped + v["lost_samples"].as_u64().unwrap());
}

#[test]
fn test_duration_stops_a_system_wide_recording() {
    if !common::require_perf("test_duration_stops_a_system_wide_recording") {
        return;
    }
    let _lock = common::pmu_lock();
    let dir = common::scratch("record-modes-duration");
    let data = dir.join("d.data");
    let (v, out) = record(&[
        "-a",
        "-e",
        "cpu-clock",
        "-F",
        "1000",
        "--duration",
        "0.3",
        "-o",
        data.to_str().unwrap(),
    ]);
    assert!(out.status.success());
    assert_eq!(v["stop_reason"], "duration");
    perf_reads_cleanly(&data);
}

/// Waits until `file` exists and holds more than its header.
fn wait_for_file(file: &Path) {
    let t = Instant::now();
    while std::fs::metadata(file).map_or(true, |m| m.len() < 200) {
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "{} never appeared",
            file.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn test_overwrite_writes_the_newest_data_on_sigusr2_and_at_exit() {
    if !common::require_perf("test_overwrite_writes_the_newest_data_on_sigusr2_and_at_exit") {
        return;
    }
    let _lock = common::pmu_lock();
    let dir = common::scratch("record-modes-overwrite");
    let shares = common::workload("shares");
    let data = dir.join("o.data");
    // 8 pages (32 KiB) per CPU hold at most ~820 of these 40-byte samples; the workload
    // makes ~8000.
    let child = common::culprit()
        .args([
            "record",
            "--format",
            "json",
            "-e",
            "cpu-clock",
            "-F",
            "4000",
            "-m",
            "8",
            "--overwrite",
            "-o",
            data.to_str().unwrap(),
            "--",
            shares.to_str().unwrap(),
            "200",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn culprit record");
    wait_for_file(&data);
    std::thread::sleep(Duration::from_millis(500));
    // SAFETY: signalling the child we spawned.
    unsafe { libc::kill(child.id() as i32, libc::SIGUSR2) };
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let v = summary(&out);
    let files = files_of(&v);
    assert_eq!(
        files.len(),
        2,
        "a snapshot on SIGUSR2 and one at exit: {files:?}"
    );
    let (snap, last) = (&files[0], &files[1]);
    assert!(snap
        .0
        .to_str()
        .unwrap()
        .starts_with(&format!("{}.", data.display())));
    assert_eq!(last.0, data, "at exit: the -o file");
    assert!(
        stderr(&out).contains("[ culprit record: Dump "),
        "{}",
        stderr(&out)
    );
    let capacity = 32 * 1024 / 40 * online_cpus();
    let mut times = Vec::new();
    for (path, _, samples, kept) in &files {
        assert!(kept);
        let by_perf = perf_reads_cleanly(path);
        let (p, by_culprit) = culprit_samples(path);
        assert_eq!(by_perf.len() as u64, *samples);
        assert_eq!(sorted(by_perf), sorted(by_culprit));
        assert!(*samples > 0, "{}: empty snapshot", path.display());
        // Only what the rings hold: the newest samples, not the whole run.
        assert!(
            *samples as usize <= capacity,
            "{samples} samples > {capacity}"
        );
        assert!(perf_share(path, "heavy") > 20.0 || *samples < 100);
        let t: Vec<u64> = p.samples.iter().map(|s| s.time).collect();
        times.push((t.iter().min().copied(), t.iter().max().copied()));
    }
    // The exit snapshot holds what came after the SIGUSR2 one.
    assert!(times[1].0 > times[0].1, "{times:?}");
    assert!(v["samples"].as_u64().unwrap() < 8000);
}

/// The CPUs (one ring each) this process may run on.
fn online_cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

#[test]
fn test_modes_refused_with_a_reason() {
    let dir = common::scratch("record-modes-errors");
    let out = dir.join("x.data");
    let o = out.to_str().unwrap();
    for (args, want) in [
        (vec!["-z", "-o", "-", "true"], "-o -"),
        (vec!["--switch-output", "-o", "-", "--", "true"], "-o -"),
        (
            vec!["--switch-max-files", "2", "-o", o, "true"],
            "--switch-output",
        ),
        (
            vec!["--overwrite", "--switch-output=1M", "-o", o, "true"],
            "not a size",
        ),
        (
            vec!["--switch-output", "true"],
            "put `--` before the command",
        ),
        (vec!["--max-size", "10X", "-o", o, "true"], "B, K, M or G"),
        (vec!["--compression-level", "23", "-o", o, "true"], "23"),
    ] {
        let r = common::culprit()
            .arg("record")
            .args(&args)
            .output()
            .unwrap();
        assert!(!r.status.success(), "{args:?} was accepted");
        assert!(stderr(&r).contains(want), "{args:?}: {}", stderr(&r));
    }
}
