//! `culprit export`: every format checked by an independent reader. Folded stacks must equal
//! `perf script | inferno-collapse-perf` (the pipeline users run; inferno's collapser as a
//! library) on the same file.

use crate::common;

use std::path::Path;

/// `perf script -i FILE | inferno-collapse-perf [flags]`, with inferno's collapser (the
/// library inferno-collapse-perf runs); with `--pid`/`--tid`, perf script prints the process
/// id too (`-F +pid`: its default shows the thread id only).
fn perf_pipeline(file: &Path, flags: &[&str]) -> String {
    use inferno::collapse::Collapse;
    let mut script = common::perf();
    script.arg("script").arg("-i").arg(file);
    if flags.iter().any(|f| *f == "--pid" || *f == "--tid") {
        script.args(["-F", "+pid"]);
    }
    let script = common::run_ok(&mut script);
    let mut options = inferno::collapse::perf::Options::default();
    options.include_pid = flags.contains(&"--pid");
    options.include_tid = flags.contains(&"--tid");
    options.annotate_kernel = flags.contains(&"--kernel");
    options.annotate_jit = flags.contains(&"--jit");
    options.include_addrs = flags.contains(&"--addrs");
    let mut folder = inferno::collapse::perf::Folder::from(options);
    let mut out = Vec::new();
    folder
        .collapse(std::io::Cursor::new(script.stdout), &mut out)
        .expect("inferno collapses perf script's output");
    String::from_utf8(out).unwrap()
}

fn culprit_folded(file: &Path, flags: &[&str]) -> String {
    let out = common::run_ok(
        common::culprit()
            .args(["export", "--format", "folded", "--summary", "none", "-i"])
            .arg(file)
            .args(flags),
    );
    String::from_utf8(out.stdout).unwrap()
}

fn sorted_lines(text: &str) -> Vec<&str> {
    let mut v: Vec<&str> = text.lines().collect();
    v.sort_unstable();
    v
}

fn assert_same_folded(file: &Path, inferno_flags: &[&str], culprit_flags: &[&str]) {
    let expected = perf_pipeline(file, inferno_flags);
    let got = culprit_folded(file, culprit_flags);
    assert!(
        !expected.trim().is_empty(),
        "the perf pipeline folded nothing"
    );
    let (e, g) = (sorted_lines(&expected), sorted_lines(&got));
    if e != g {
        let only_e: Vec<_> = e.iter().filter(|l| !g.contains(l)).take(10).collect();
        let only_g: Vec<_> = g.iter().filter(|l| !e.contains(l)).take(10).collect();
        panic!(
            "folded stacks differ on {} ({} vs {} lines)\nonly perf|inferno:\n{:#?}\nonly culprit:\n{:#?}",
            file.display(),
            e.len(),
            g.len(),
            only_e,
            only_g
        );
    }
}

/// Records `cmd` with perf (frame-pointer call chains, cpu-clock) into a scratch file.
fn record_with_perf(test: &str, cmd: &[&str]) -> std::path::PathBuf {
    common::perf_record(test, &["-e", "cpu-clock", "-F", "2000", "-g"], cmd)
}

#[test]
fn test_folded_equals_perf_script_inferno_collapse_perf() {
    let test = "test_folded_equals_perf_script_inferno_collapse_perf";
    if !common::require_perf(test) {
        return;
    }
    let calltree = common::workload("calltree");
    let file = record_with_perf(test, &[calltree.to_str().unwrap(), "120"]);
    assert_same_folded(&file, &[], &[]);
    assert_same_folded(&file, &["--pid"], &["--pid"]);
    assert_same_folded(&file, &["--tid", "--kernel"], &["--tid", "--kernel"]);
}

#[test]
fn test_folded_of_culprits_own_recording_equals_the_perf_pipeline() {
    let test = "test_folded_of_culprits_own_recording_equals_the_perf_pipeline";
    if !common::require_perf(test) {
        return;
    }
    let dir = common::scratch(test);
    let file = dir.join("perf.data");
    let shares = common::workload("shares");
    common::run_ok(
        common::culprit()
            .args(["record", "-q", "-e", "cpu-clock", "-F", "2000", "-g", "-o"])
            .arg(&file)
            .arg("--")
            .arg(&shares),
    );
    assert_same_folded(&file, &[], &[]);
    assert_same_folded(&file, &["--pid"], &["--pid"]);
}

#[test]
fn test_folded_of_a_file_without_call_chains_and_of_shipped_fixtures() {
    let test = "test_folded_of_a_file_without_call_chains_and_of_shipped_fixtures";
    if !common::require_perf(test) {
        return;
    }
    let fixtures = common::repo_root().join("crates/decode/tests/fixtures");
    // Recorded elsewhere: perf and culprit both name what this machine can resolve.
    // (Not two-events.data: without call chains, inferno-collapse-perf stops folding after
    // the first line of a second event — its parser stays "in the event" — so the
    // pipeline's output is wrong there; culprit folds the first event's samples.)
    for name in ["cpu-clock-c.data", "cpu-clock-g.data", "pipe-g.data"] {
        assert_same_folded(&fixtures.join(name), &[], &[]);
    }
}

#[test]
fn test_folded_weights_sum_to_the_event_totals_of_report() {
    let fixtures = common::repo_root().join("crates/decode/tests/fixtures");
    let file = fixtures.join("cpu-clock-g.data");
    let folded = culprit_folded(&file, &[]);
    let sum: u64 = folded
        .lines()
        .map(|l| l.rsplit(' ').next().unwrap().parse::<u64>().unwrap())
        .sum();
    let report = common::run_ok(
        common::culprit()
            .args(["report", "--format", "json", "-i"])
            .arg(&file),
    );
    let json: serde_json::Value = serde_json::from_slice(&report.stdout).unwrap();
    let totals = common::culprit_event_totals(&json);
    let (_, period) = totals.values().next().unwrap();
    assert_eq!(sum, *period);
    // By samples: the sample count.
    let by_samples = culprit_folded(&file, &["--count-samples"]);
    let n: u64 = by_samples
        .lines()
        .map(|l| l.rsplit(' ').next().unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(n, totals.values().next().unwrap().0);
}

#[test]
fn test_export_summary_json_and_errors() {
    let test = "test_export_summary_json_and_errors";
    let dir = common::scratch(test);
    let fixtures = common::repo_root().join("crates/decode/tests/fixtures");
    let out = dir.join("out.folded");
    let run = common::run_ok(
        common::culprit()
            .args(["export", "--format", "folded", "--summary", "json", "-o"])
            .arg(&out)
            .arg("-i")
            .arg(fixtures.join("two-events.data")),
    );
    let text = String::from_utf8(run.stdout).unwrap();
    common::validate_json_schema("export", &text);
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(json["schema"], 1);
    assert_eq!(json["format"], "folded");
    assert_eq!(
        json["bytes"].as_u64().unwrap(),
        std::fs::metadata(&out).unwrap().len()
    );
    assert_eq!(
        json["records"].as_u64().unwrap(),
        std::fs::read_to_string(&out).unwrap().lines().count() as u64
    );
    // An event the file lacks: a clear error naming the file's events.
    let bad = common::culprit()
        .args(["export", "--format", "folded", "-e", "no-such-event", "-i"])
        .arg(fixtures.join("two-events.data"))
        .output()
        .unwrap();
    assert!(!bad.status.success());
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(err.contains("no-such-event"), "{err}");
    // A truncated file: what was read is exported, exit 1, a warning says where it stopped.
    let whole = std::fs::read(fixtures.join("cpu-clock-g.data")).unwrap();
    let cut = dir.join("cut.data");
    std::fs::write(&cut, &whole[..whole.len() * 2 / 3]).unwrap();
    let partial = common::culprit()
        .args(["export", "--format", "folded", "-i"])
        .arg(&cut)
        .output()
        .unwrap();
    assert_eq!(partial.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&partial.stderr).contains("stopped"));
}
