//! perf.data formats `culprit report` reads like `perf report`: tracepoint and probe events
//! (pipe-mode TRACING_DATA records, HEADER_TRACING_DATA), the legacy `PERFFILE` magic, newer
//! records of the committed corpus (COMPRESSED2, perf's messages at the end of a pipe file),
//! AUX area trace files and a deliberately corrupt file.

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use serde_json::Value;

fn corpus(name: &str) -> PathBuf {
    common::repo_root()
        .join("crates/decode/tests/fixtures/real-perf-data")
        .join(name)
}

/// `culprit report --format json` on `file` (any exit status).
fn culprit_report(file: &Path) -> (Output, Option<Value>) {
    let out = common::culprit()
        .args(["report", "--unknown", "address"])
        .arg("-i")
        .arg(file)
        .args(["--format", "json"])
        .output()
        .expect("run culprit");
    let json = serde_json::from_slice(&out.stdout).ok();
    (out, json)
}

/// Event name -> samples, as culprit reports them (events with samples only, as perf).
fn culprit_events(json: &Value) -> BTreeMap<String, u64> {
    json["events"]
        .as_array()
        .expect("events")
        .iter()
        .map(|e| {
            (
                e["name"].as_str().unwrap().to_string(),
                e["samples"].as_u64().unwrap(),
            )
        })
        .filter(|(_, n)| *n > 0)
        .collect()
}

/// How `perf report` is asked to show a file's events.
#[derive(Clone, Copy)]
enum Events {
    /// A file that may have event groups: `--no-group`, one section per event.
    MaybeGrouped,
    /// A recording of one event: no `--no-group`, which perf 6.1 segfaults on with some
    /// pipe-mode recordings of a tracepoint (seen in CI; the same file reads without it).
    One,
}

/// Event name -> samples from `perf report --stdio`, summed from its rows (the section
/// header abbreviates counts past 999).
fn perf_events(file: &Path, events: Events) -> BTreeMap<String, u64> {
    let group = match events {
        Events::MaybeGrouped => &["--no-group"][..],
        Events::One => &[],
    };
    let out = common::run_ok(
        common::perf()
            .args(["report", "--stdio", "--no-branch-stack"])
            .args(group)
            .arg("--no-children")
            .args(["-g", "none"])
            .args(["--sort", "comm", "--show-nr-samples", "-t", "|", "-i"])
            .arg(file),
    );
    common::perf_event_totals(&String::from_utf8_lossy(&out.stdout))
        .into_iter()
        .map(|(ev, (n, _))| (ev, n))
        .collect()
}

/// Asserts culprit reads `file` completely and names and counts its events as perf does.
fn assert_events_like_perf(file: &Path, events: Events) -> Value {
    let (out, json) = culprit_report(file);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{}: {stderr}", file.display());
    let json = json.expect("JSON");
    let perf = perf_events(file, events);
    assert!(
        !perf.is_empty(),
        "{}: perf shows no samples",
        file.display()
    );
    assert_eq!(culprit_events(&json), perf, "{}", file.display());
    json
}

/// `perf record ARGS -- CMD` into `dir/NAME`: file mode, or pipe mode through stdout.
fn record(dir: &Path, name: &str, pipe: bool, args: &[&str], cmd: &[&str]) -> PathBuf {
    let path = dir.join(name);
    let mut c = common::perf();
    c.arg("record").arg("-q").args(args);
    if pipe {
        c.args(["-o", "-"])
            .stdout(std::fs::File::create(&path).unwrap());
    } else {
        c.arg("-o").arg(&path).stdout(Stdio::null());
    }
    let out = c
        .arg("--")
        .args(cmd)
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "perf record {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    path
}

/// Records in perf's little-endian pipe format: (type, whole record) in order. Tracing data
/// after a TRACING_DATA record is part of it.
fn pipe_records(b: &[u8]) -> Vec<(u32, Vec<u8>)> {
    let mut out = Vec::new();
    let mut off = 16;
    while off + 8 <= b.len() {
        let ty = u32::from_le_bytes(b[off..off + 4].try_into().unwrap());
        let mut size = usize::from(u16::from_le_bytes(b[off + 6..off + 8].try_into().unwrap()));
        if ty == 66 {
            size += u32::from_le_bytes(b[off + 8..off + 12].try_into().unwrap()) as usize;
        }
        assert!(size >= 8 && off + size <= b.len(), "record at {off}");
        out.push((ty, b[off..off + size].to_vec()));
        off += size;
    }
    out
}

/// A copy of a pipe file without its HEADER_FEATURE EVENT_DESC record (feature 12) and
/// EVENT_UPDATE name records: the events are named from the tracing data alone.
fn pipe_without_names(file: &Path) -> PathBuf {
    let b = std::fs::read(file).unwrap();
    let mut out = b[..16].to_vec();
    let mut dropped = 0;
    for (ty, rec) in pipe_records(&b) {
        let feature = rec
            .get(8..16)
            .map_or(0, |f| u64::from_le_bytes(f.try_into().unwrap()));
        let name_update = ty == 78 && feature == 2;
        if (ty == 80 && feature == 12) || name_update {
            dropped += 1;
            continue;
        }
        out.extend_from_slice(&rec);
    }
    assert!(dropped > 0, "{}: no event names to drop", file.display());
    let path = file.with_extension("nonames");
    std::fs::write(&path, out).unwrap();
    path
}

/// A copy of a file-mode perf.data whose HEADER_EVENT_DESC section lists no events.
fn file_without_names(file: &Path) -> PathBuf {
    let mut b = std::fs::read(file).unwrap();
    let u64_at = |b: &[u8], o: usize| u64::from_le_bytes(b[o..o + 8].try_into().unwrap());
    let features = u64_at(&b, 72);
    const EVENT_DESC: u32 = 12;
    assert!(features & (1 << EVENT_DESC) != 0, "EVENT_DESC expected");
    let table = (u64_at(&b, 40) + u64_at(&b, 48)) as usize;
    let index = (features & ((1 << EVENT_DESC) - 1)).count_ones() as usize;
    let section = u64_at(&b, table + 16 * index) as usize;
    b[section..section + 4].copy_from_slice(&0u32.to_le_bytes());
    let path = file.with_extension("nonames");
    std::fs::write(&path, b).unwrap();
    path
}

#[test]
fn test_tracepoint_pipe_and_file_named_and_counted_like_perf() {
    if !common::require_perf("test_tracepoint_pipe_and_file_named_and_counted_like_perf") {
        return;
    }
    let dir = common::scratch("formats-tracepoint");
    let ev = ["-e", "sched:sched_switch"];
    let cmd = ["sleep", "0.01"];
    let pipe = record(&dir, "pipe.data", true, &ev, &cmd);
    let file = record(&dir, "file.data", false, &ev, &cmd);
    for f in [&pipe, &file] {
        let json = assert_events_like_perf(f, Events::One);
        assert!(culprit_events(&json).contains_key("sched:sched_switch"));
    }
    // Without the other names, the tracing data names the event (perf does the same).
    for f in [pipe_without_names(&pipe), file_without_names(&file)] {
        let json = assert_events_like_perf(&f, Events::One);
        assert_eq!(
            culprit_events(&json).keys().collect::<Vec<_>>(),
            ["sched:sched_switch"]
        );
    }
}

/// Deletes a perf probe when dropped (also when the test fails).
struct ProbeGuard(String);

impl Drop for ProbeGuard {
    fn drop(&mut self) {
        let _ = common::perf().args(["probe", "-q", "-d", &self.0]).output();
    }
}

#[test]
fn test_uprobe_pipe_and_file_named_and_counted_like_perf() {
    if !common::require_perf("test_uprobe_pipe_and_file_named_and_counted_like_perf") {
        return;
    }
    let dir = common::scratch("formats-uprobe");
    // A copy under a name of its own: its probe group cannot clash with another test's.
    let bin = dir.join("culprit_fmt_uprobe");
    std::fs::copy(common::workload("simple_classic"), &bin).unwrap();
    let group = "probe_culprit_fmt_uprobe";
    let _guard = ProbeGuard(format!("{group}:*"));
    let added = common::perf()
        .args(["probe", "-q", "-x"])
        .arg(&bin)
        .arg("main")
        .output()
        .unwrap();
    if !added.status.success() {
        eprintln!(
            "SKIPPED test_uprobe_pipe_and_file_named_and_counted_like_perf: perf probe -x \
             failed here: {}",
            String::from_utf8_lossy(&added.stderr)
        );
        return;
    }
    let event = format!("{group}:main");
    let bin_s = bin.to_str().unwrap();
    let pipe = record(&dir, "pipe.data", true, &["-e", &event], &[bin_s]);
    let file = record(&dir, "file.data", false, &["-e", &event], &[bin_s]);
    for f in [pipe_without_names(&pipe), pipe, file] {
        let json = assert_events_like_perf(&f, Events::One);
        assert_eq!(
            culprit_events(&json).get(&event),
            Some(&1),
            "{}",
            f.display()
        );
    }
}

#[test]
fn test_legacy_perffile_magic_reads_like_perf() {
    let have_perf = common::perf_installed();
    let dir = common::scratch("formats-v1");
    for (name, header_size) in [
        (
            "google-perf_data_converter/perf.data.singleprocess-3.4",
            None,
        ),
        // perf's previous header: 72 bytes, no feature bits (names from the attrs).
        (
            "google-perf_data_converter/perf.data.singleprocess-3.4",
            Some(72u64),
        ),
        (
            "google-perf_data_converter/perf.data.piped.ctx_switch_namespaces-4.14",
            None,
        ),
    ] {
        let original = corpus(name);
        let mut b = std::fs::read(&original).unwrap();
        b[..8].copy_from_slice(b"PERFFILE");
        if let Some(size) = header_size {
            b[8..16].copy_from_slice(&size.to_le_bytes());
            b[72..104].fill(0);
        }
        let v1 = dir.join(format!(
            "v1-{}",
            b.len() + header_size.unwrap_or(0) as usize
        ));
        std::fs::write(&v1, &b).unwrap();
        let (out, json) = culprit_report(&v1);
        assert!(
            out.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let ours = culprit_events(&json.unwrap());
        if header_size.is_none() {
            // The same samples and names as the PERFILE2 original.
            let (_, orig) = culprit_report(&original);
            assert_eq!(ours, culprit_events(&orig.unwrap()), "{name}");
        }
        assert!(ours.values().sum::<u64>() > 0, "{name}");
        if have_perf {
            assert_eq!(
                ours,
                perf_events(&v1, Events::MaybeGrouped),
                "{name} as v1, header {header_size:?}"
            );
        }
    }
}

#[test]
fn test_compressed2_pipe_with_perf_messages_reads_to_the_end() {
    let file = corpus("mstange-linux-perf-data/sleep.compressed2.pipe.data");
    let (out, json) = culprit_report(&file);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let json = json.unwrap();
    assert!(json["stopped"].is_null(), "{}", json["stopped"]);
    let warned = stderr.contains("perf record's own messages")
        && stderr.contains("[ perf record: Woken up 1 times to write data ]");
    assert!(warned, "{stderr}");
    // The same as the stream cut before the text: nothing else was skipped.
    let b = std::fs::read(&file).unwrap();
    let at = b.windows(14).position(|w| w == b"[ perf record:").unwrap();
    let cut = common::scratch("formats-compressed2").join("cut.data");
    std::fs::write(&cut, &b[..at]).unwrap();
    let (cut_out, cut_json) = culprit_report(&cut);
    assert!(cut_out.status.success());
    let events = culprit_events(&json);
    assert!(events.values().sum::<u64>() > 0);
    assert_eq!(events, culprit_events(&cut_json.unwrap()));
}

#[test]
fn test_every_corpus_pipe_file_reads_to_the_end() {
    let mut files: Vec<PathBuf> = Vec::new();
    for dir in std::fs::read_dir(corpus("")).unwrap() {
        let dir = dir.unwrap().path();
        if !dir.is_dir() {
            continue;
        }
        for f in std::fs::read_dir(&dir).unwrap() {
            let f = f.unwrap().path();
            let head = std::fs::read(&f).unwrap_or_default();
            let pipe = head.len() >= 16 && head[8..16] == 16u64.to_le_bytes();
            if pipe && !f.to_string_lossy().contains("corrupted") {
                files.push(f);
            }
        }
    }
    assert!(files.len() >= 14, "{files:?}");
    for f in files {
        let (out, json) = culprit_report(&f);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{}: {stderr}", f.display());
        let json = json.unwrap();
        assert!(json["stopped"].is_null(), "{}", f.display());
        for w in json["warnings"].as_array().into_iter().flatten() {
            let w = w.as_str().unwrap_or("");
            assert!(
                !w.contains("record type") && !w.contains("ignored") || w.contains("own messages"),
                "{}: {w}",
                f.display()
            );
        }
        assert!(
            culprit_events(&json).values().sum::<u64>() > 0,
            "{}",
            f.display()
        );
    }
}

#[test]
fn test_corrupt_zero_size_record_reports_what_came_before_and_fails() {
    let file = corpus("google-perf_data_converter/perf.data.piped.corrupted.zero_size_sample-3.2");
    let (out, json) = culprit_report(&file);
    let stderr = String::from_utf8_lossy(&out.stderr);
    // A damaged input is an error (exit 1) even though the report of what came before is
    // printed: perf 6.1 prints no report at all ("bad event header size").
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("byte offset 49104")
            && stderr.contains("corrupt record: size 0")
            && stderr.contains("after 570 records")
            && stderr.contains("its 0 samples read before it"),
        "{stderr}"
    );
    let json = json.expect("the report is printed");
    assert_eq!(json["stopped"]["offset"], 49104);
    assert_eq!(json["stopped"]["records_read"], 570);
}

#[test]
fn test_aux_trace_files_report_sampled_events_and_warn_once() {
    for name in [
        "google-perf_data_converter/perf.data.intel_pt-4.14",
        "google-perf_data_converter/perf.data.piped.intel_pt-4.14",
    ] {
        let (out, json) = culprit_report(&corpus(name));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{name}: {stderr}");
        assert_eq!(
            stderr.matches("AUX area trace data").count(),
            1,
            "{name}: {stderr}"
        );
        let events = culprit_events(&json.unwrap());
        assert!(
            events.get("cycles").is_some_and(|&n| n > 0),
            "{name}: {events:?}"
        );
        if name.contains("piped") || !common::perf_installed() {
            continue;
        }
        // perf also shows the events it synthesizes from the trace (cbr, psb): not culprit.
        let mut perf = perf_events(&corpus(name), Events::MaybeGrouped);
        perf.retain(|e, _| events.contains_key(e));
        assert_eq!(events, perf, "{name}");
    }
    // perf inject's output keeps the synthesized samples and drops the trace: no warning.
    let (out, _) = culprit_report(&corpus("google-autofdo/perf-kernel.data"));
    assert!(!String::from_utf8_lossy(&out.stderr).contains("AUX area"));
}

/// A copy of a little-endian file-mode perf.data whose attrs are cut to perf 6.1's 128
/// bytes (perf >= 6.3 writes 136: config3, zero here), so perf 6.1 can read it.
fn attrs_cut_to_128(file: &Path, out: &Path) {
    let mut b = std::fs::read(file).unwrap();
    let u64_at = |b: &[u8], o: usize| u64::from_le_bytes(b[o..o + 8].try_into().unwrap());
    assert_eq!(&b[..8], b"PERFILE2");
    let entry = u64_at(&b, 16) as usize;
    let (off, size) = (u64_at(&b, 24) as usize, u64_at(&b, 32) as usize);
    let mut blob = Vec::new();
    for e in b[off..off + size].chunks_exact(entry) {
        let asz = u32::from_le_bytes(e[4..8].try_into().unwrap()) as usize;
        let (attr, ids) = (&e[..asz], &e[asz..asz + 16]);
        assert!(attr.len() <= 128 || attr[128..].iter().all(|&x| x == 0));
        let mut attr = attr[..asz.min(128)].to_vec();
        let len = attr.len() as u32;
        attr[4..8].copy_from_slice(&len.to_le_bytes());
        blob.extend_from_slice(&attr);
        blob.extend_from_slice(ids);
    }
    let new_entry = blob.len() / (size / entry);
    b[off..off + size].fill(0);
    b[off..off + blob.len()].copy_from_slice(&blob);
    b[16..24].copy_from_slice(&(new_entry as u64).to_le_bytes());
    b[32..40].copy_from_slice(&(blob.len() as u64).to_le_bytes());
    std::fs::write(out, b).unwrap();
}

#[test]
fn test_perf_6_3_attrs_read_like_perf_in_file_and_pipe_mode() {
    if !common::require_perf("test_perf_6_3_attrs_read_like_perf_in_file_and_pipe_mode") {
        return;
    }
    let dir = common::scratch("formats-attr136");
    // (sleep.compressed2.data has 136-byte attrs too, but perf 6.1 cannot read COMPRESSED2.)
    for name in [
        "mstange-linux-perf-data/sleep.data",
        "mstange-linux-perf-data/sleep.compressed.data",
    ] {
        let file = corpus(name);
        let head = std::fs::read(&file).unwrap();
        assert_eq!(
            u64::from_le_bytes(head[16..24].try_into().unwrap()),
            136 + 16
        );
        let (out, json) = culprit_report(&file);
        assert!(out.status.success(), "{name}");
        let cut = dir.join(file.file_name().unwrap());
        attrs_cut_to_128(&file, &cut);
        assert_eq!(
            culprit_events(&json.unwrap()),
            perf_events(&cut, Events::MaybeGrouped),
            "{name}"
        );
    }
    // Pipe mode: HEADER_ATTR records of 136-byte attrs, read by perf 6.1 as they are.
    assert_events_like_perf(
        &corpus("google-perf_data_converter/perf.data.piped.header_features_aligned-6.12"),
        Events::MaybeGrouped,
    );
}
