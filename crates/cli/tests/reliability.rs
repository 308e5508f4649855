//! Issue 34 (reliability, round two) on small crafted files: every verb fails when all the
//! samples were malformed, warns with a count when some were, and names each kind of damage
//! once.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Output;

/// A perf.data file (culprit's writer) of process 100 with `valid` well-formed samples and
/// `malformed` samples cut short (their PERIOD missing), interleaved, each of period `period`.
fn crafted(dir: &Path, valid: usize, malformed: usize, period: u64) -> PathBuf {
    use culprit_collect::perfdata::{FileAttr, PerfDataWriter};
    use culprit_decode::abi::{misc, record_type};
    let path = dir.join("crafted.data");
    let attr = FileAttr {
        attr: common::cpu_clock_attr(0, 0),
        name: "cpu-clock".to_string(),
        ids: vec![1],
    };
    let file = std::fs::File::create(&path).unwrap();
    let mut w = PerfDataWriter::new(file, vec![attr]).unwrap();
    let mut buf = Vec::new();
    let mut time = 10u64;
    let mut push = |buf: &mut Vec<u8>, cut: bool| {
        let size: u16 = if cut { 40 } else { 48 };
        buf.extend_from_slice(&record_type::SAMPLE.to_le_bytes());
        buf.extend_from_slice(&misc::USER.to_le_bytes());
        buf.extend_from_slice(&size.to_le_bytes());
        buf.extend_from_slice(&1u64.to_le_bytes());
        buf.extend_from_slice(&(0x401000 + time).to_le_bytes());
        buf.extend_from_slice(&100u32.to_le_bytes());
        buf.extend_from_slice(&100u32.to_le_bytes());
        buf.extend_from_slice(&time.to_le_bytes());
        if !cut {
            buf.extend_from_slice(&period.to_le_bytes());
        }
        time += 1;
    };
    for i in 0..valid.max(malformed) {
        if i < valid {
            push(&mut buf, false);
        }
        if i < malformed {
            push(&mut buf, true);
        }
    }
    w.write_data(&buf).unwrap();
    w.finish(&culprit_collect::perfdata::Features::default())
        .unwrap();
    path
}

fn run(verb: &[&str], file: &Path, dir: &Path) -> Output {
    let mut cmd = common::culprit();
    cmd.args(verb).arg("-i").arg(file);
    if verb[0] == "export" || verb[0] == "flamegraph" || verb[0] == "html" {
        cmd.arg("-o")
            .arg(dir.join(format!("out-{}", verb.join("-"))));
    }
    common::in_test_home(&mut cmd).output().unwrap()
}

const VERBS: &[&[&str]] = &[
    &["report"],
    &["script"],
    &["annotate"],
    &["export", "--format", "folded"],
    &["export", "--format", "firefox"],
    &["flamegraph"],
];

#[test]
fn test_every_sample_malformed_fails_every_verb() {
    let dir = common::scratch("reliability-all-malformed");
    let file = crafted(&dir, 0, 7, 1000);
    for verb in VERBS {
        let out = run(verb, &file, &dir);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{verb:?}: {err}");
        assert!(
            err.contains("all 7 samples are malformed"),
            "{verb:?}: {err}"
        );
    }
}

#[test]
fn test_some_samples_malformed_warns_with_count_and_succeeds() {
    let dir = common::scratch("reliability-some-malformed");
    let file = crafted(&dir, 3, 5, 1000);
    let out = run(&["report"], &file, &dir);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("5 malformed samples skipped (3 read)"),
        "{err}"
    );
}

#[test]
fn test_annotate_names_each_malformed_kind_once() {
    let dir = common::scratch("reliability-annotate-once");
    let file = crafted(&dir, 3, 30, 1000);
    let out = run(&["annotate", "--addr", "0x401000"], &file, &dir);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        err.matches("malformed record of type 9").count(),
        1,
        "{err}"
    );
    assert_eq!(
        err.matches("30 malformed samples skipped").count(),
        1,
        "{err}"
    );
}

/// `export --format parquet` of `file` into `dir/name`; the export directory.
fn export_parquet(file: &Path, dir: &Path, name: &str) -> PathBuf {
    let out = dir.join(name);
    common::run_ok(
        common::culprit()
            .args(["export", "--format", "parquet", "--summary", "none", "-o"])
            .arg(&out)
            .arg("-i")
            .arg(file),
    );
    out
}

fn report_parquet(export: &Path) -> (Option<i32>, String) {
    let out = common::culprit()
        .args(["report", "--format", "json", "--from-parquet"])
        .arg(export)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

#[test]
fn test_from_parquet_rejects_bad_periods_and_duplicated_samples() {
    let dir = common::scratch("reliability-parquet");
    // Two periods of 2^63-1: their total does not fit the tables' Int64.
    let sub = dir.join("max");
    std::fs::create_dir_all(&sub).unwrap();
    let export = export_parquet(&crafted(&sub, 2, 0, i64::MAX as u64), &dir, "max.parquet");
    let (code, err) = report_parquet(&export);
    assert_ne!(code, Some(0), "{err}");
    assert!(err.contains("add up past 2^63-1"), "{err}");
    // A period of 2^64-1 is -1 in the tables.
    let sub = dir.join("neg");
    std::fs::create_dir_all(&sub).unwrap();
    let export = export_parquet(&crafted(&sub, 1, 0, u64::MAX), &dir, "neg.parquet");
    let (code, err) = report_parquet(&export);
    assert_ne!(code, Some(0), "{err}");
    assert!(err.contains("negative period -1"), "{err}");
    // A samples file copied twice: the rows no longer match hosts.samples.
    let sub = dir.join("dup");
    std::fs::create_dir_all(&sub).unwrap();
    let export = export_parquet(&crafted(&sub, 3, 0, 1000), &dir, "dup.parquet");
    let (code, err) = report_parquet(&export);
    assert_eq!(code, Some(0), "{err}");
    let samples = export.join("samples");
    let first = std::fs::read_dir(&samples)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .next()
        .unwrap();
    let stem = first.file_stem().unwrap().to_string_lossy().to_string();
    std::fs::copy(&first, samples.join(format!("{stem}-1.parquet"))).unwrap();
    let (code, err) = report_parquet(&export);
    assert_ne!(code, Some(0), "{err}");
    assert!(
        err.contains("6 sample rows") && err.contains("hosts.samples says 3"),
        "{err}"
    );
}

#[test]
fn test_firefox_export_of_a_huge_period_is_bounded() {
    let dir = common::scratch("reliability-firefox-huge");
    let file = crafted(&dir, 1, 0, i64::MAX as u64);
    let out_file = dir.join("out.json");
    let started = std::time::Instant::now();
    let out = common::culprit()
        .args(["export", "--format", "firefox", "-o"])
        .arg(&out_file)
        .arg("-i")
        .arg(&file)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
    let size = std::fs::metadata(&out_file).unwrap().len();
    assert!(size < 1 << 20, "{size} bytes");
    assert!(err.contains("every weight is divided by"), "{err}");
}

/// A FIFO whose writer stays silent: on a terminal, culprit says after a grace period that
/// it is waiting for data on it, and still reads what comes afterwards.
#[test]
fn test_silent_fifo_says_culprit_is_waiting_on_a_terminal() {
    let test = "test_silent_fifo_says_culprit_is_waiting_on_a_terminal";
    let has_script = std::process::Command::new("script")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_script {
        common::skip(test, "no `script` command to give culprit a terminal");
        return;
    }
    let dir = common::scratch("reliability-fifo-wait");
    let fifo = dir.join("in.fifo");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(status.success());
    let data = std::fs::read(common::repo_root().join("crates/decode/tests/fixtures/pipe-g.data"))
        .unwrap();
    let writer_fifo = fifo.clone();
    // Opens the FIFO at once (a writer is there) but writes only after 3.5 s.
    let writer = std::thread::spawn(move || {
        use std::io::Write;
        let mut w = std::fs::OpenOptions::new()
            .write(true)
            .open(&writer_fifo)
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(3500));
        // Fails only when culprit did not read (the assertions below say why).
        let _ = w.write_all(&data);
    });
    // No pager: on a terminal it would wait for keys that never come.
    let inner = format!(
        "{} report --no-pager -i {}",
        env!("CARGO_BIN_EXE_culprit"),
        fifo.display()
    );
    let out = std::process::Command::new("script")
        .args(["-qec", &inner, "/dev/null"])
        .env("HOME", common::test_home())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    // A reader for the writer's open if culprit never opened the FIFO (no hang here).
    {
        use std::os::unix::fs::OpenOptionsExt;
        let _unblock = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&fifo);
        writer.join().unwrap();
    }
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert_eq!(
        text.matches("waiting for data on the FIFO").count(),
        1,
        "{text}"
    );
    // The data that came later is read whole: the report has samples.
    assert!(text.contains("Samples"), "{text}");
}
