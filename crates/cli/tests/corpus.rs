//! The real-world corpus: every perf.data under crates/decode/tests/fixtures/real-perf-data
//! (recorded by other people on Intel, AMD, arm64, i686 and ARMv7 machines with perf 3.2 to
//! 6.16) read by `culprit report` and by perf 6.1 side by side.
//!
//! For every file perf reads: the same events, the same number of samples per event, self %
//! per (comm, dso, sym) within 0.1 point, and children % per (dso, sym) within 0.1 point
//! where the file has call chains and no DWARF stacks. Where perf itself is wrong, the rows
//! concerned are compared at a coarser level by a named rule, and every use of a rule is
//! printed: nothing is skipped silently. Files perf 6.1 cannot read at all are listed with
//! the reason, and culprit must still read them to the end with samples.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

use serde_json::Value;

/// Files perf 6.1 cannot read (it prints no sample, or fails), with the reason. culprit must
/// read each of them to the end and find samples.
const PERF_CANNOT_READ: &[(&str, &str)] = &[
    (
        "fibo.compressed2.pipe.data",
        "perf 6.16 wrote PERF_RECORD_COMPRESSED2 records, which perf 6.1 does not know",
    ),
    (
        "sleep.compressed2.pipe.data",
        "perf 6.16 wrote PERF_RECORD_COMPRESSED2 records, which perf 6.1 does not know",
    ),
    (
        "sleep.compressed2.data",
        "perf 6.16 wrote PERF_RECORD_COMPRESSED2 records, which perf 6.1 does not know",
    ),
    (
        "perf.data.piped.intel_pt-4.14",
        "perf 6.1 stops at the Intel PT AUXTRACE_INFO of a pipe stream and shows no sample",
    ),
];

/// Deliberately damaged files: culprit reports the samples before the damage and says where
/// it stopped; perf is not compared.
const CORRUPT: &[(&str, &str)] = &[(
    "perf.data.piped.corrupted.zero_size_sample-3.2",
    "a SAMPLE record of size 0 (quipper's corrupt-input test)",
)];

/// Events perf synthesizes by decoding AUX trace data (Intel PT), which culprit does not
/// decode: absent from culprit's report by design (docs/report.md).
const PERF_SYNTHESIZED_EVENTS: &[&str] = &[
    "cbr",
    "psb",
    "instructions:u",
    "branches",
    "pwrx",
    "mwait",
    "exstop",
    "pwre",
    "ptwrite",
];

/// Percentages per event, per key (parts joined by a tab): (children, self, samples).
type Table = BTreeMap<String, BTreeMap<String, Row>>;

#[derive(Debug, Clone, Copy, Default)]
struct Row {
    children: f64,
    self_pct: f64,
    samples: u64,
}

fn corpus_dir() -> PathBuf {
    common::repo_root().join("crates/decode/tests/fixtures/real-perf-data")
}

/// Every perf.data of the corpus (one directory per source repository).
fn corpus_files() -> Vec<PathBuf> {
    let mut files = Vec::new();
    for dir in std::fs::read_dir(corpus_dir()).expect("corpus dir") {
        let dir = dir.unwrap().path();
        if !dir.is_dir() {
            continue;
        }
        for f in std::fs::read_dir(&dir).unwrap() {
            let f = f.unwrap().path();
            if f.is_file() {
                files.push(f);
            }
        }
    }
    files.sort();
    files
}

fn file_name(p: &Path) -> String {
    p.file_name().unwrap().to_string_lossy().into_owned()
}

/// A copy of a file-mode perf.data whose attrs perf 6.1 can parse: perf >= 6.3 writes
/// 136-byte attrs (config3); perf 6.1 knows 128. Only the attr section changes, and only when
/// every dropped byte is zero (the idea of the corpus's downattr.py). `None` when the file
/// needs no rewrite.
fn perf61_copy(file: &Path, scratch: &Path) -> Option<PathBuf> {
    let mut b = std::fs::read(file).ok()?;
    if b.len() < 104 || &b[..8] != b"PERFILE2" || u64le(&b, 8) != 104 {
        return None;
    }
    let attr_size = u64le(&b, 16) as usize;
    let (off, size) = (u64le(&b, 24) as usize, u64le(&b, 32) as usize);
    if attr_size <= 128 + 16 || off + size > b.len() {
        return None;
    }
    let mut blob = Vec::new();
    for e in b[off..off + size].chunks_exact(attr_size) {
        let asz = u32::from_le_bytes(e[4..8].try_into().unwrap()) as usize;
        let (attr, ids) = (&e[..asz], &e[asz..asz + 16]);
        assert!(
            attr[128.min(asz)..].iter().all(|&x| x == 0),
            "{}: attr bytes past 128 are set: perf 6.1 cannot be given this file",
            file.display()
        );
        let mut a = attr[..128.min(asz)].to_vec();
        let len = a.len() as u32;
        a[4..8].copy_from_slice(&len.to_le_bytes());
        blob.extend_from_slice(&a);
        blob.extend_from_slice(ids);
    }
    let new_attr_size = 128 + 16;
    let pad = size - blob.len();
    blob.extend(std::iter::repeat_n(0u8, pad));
    b[off..off + size].copy_from_slice(&blob);
    b[16..24].copy_from_slice(&(new_attr_size as u64).to_le_bytes());
    b[32..40].copy_from_slice(&((size - pad) as u64).to_le_bytes());
    let out = scratch.join(format!("{}.perf61", file_name(file)));
    std::fs::write(&out, b).unwrap();
    Some(out)
}

fn u64le(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

/// perf's sym column (`[k] name`, `[.] 0x0000000000001172`) → (tag, `name` or `0x1172`).
fn perf_sym(s: &str) -> (String, String) {
    let s = s.trim();
    let (tag, rest) = match s.find("] ") {
        Some(i) if s.starts_with('[') && i <= 3 => (&s[..=i], s[i + 2..].trim()),
        _ => ("", s),
    };
    let hex = rest.strip_prefix("0x").unwrap_or(rest);
    if hex.len() == 16 && hex.bytes().all(|c| c.is_ascii_hexdigit()) {
        if let Ok(v) = u64::from_str_radix(hex, 16) {
            return (tag.to_string(), format!("{v:#x}"));
        }
    }
    (tag.to_string(), rest.to_string())
}

/// Whether a row belongs to the kernel (or one of its modules) or the vDSO: perf names
/// those from the running machine's kallsyms and vDSO when the file's own are not at hand.
/// Rows of no known object (`[unknown]`) are compared by address on both sides.
fn is_kernel_or_vdso(tag: &str, dso: &str) -> bool {
    dso != "[unknown]"
        && (tag == "[k]"
            || dso.starts_with("[kernel.")
            || matches!(dso, "[vdso]" | "[vsyscall]" | "[vdso32]" | "[vdsox32]"))
}

/// Runs `perf report --stdio -t '|'` and parses it. `keys` are the sort keys; with
/// `children`, perf's Children column is read too; the flag returned says whether perf
/// printed one (it does only for files with call chains).
fn perf_table(input: &Path, keys: &[&str], children: bool) -> Result<(Table, bool), String> {
    let mode = if children {
        "--children"
    } else {
        "--no-children"
    };
    let out = common::perf()
        .arg("report")
        .arg("-i")
        .arg(input)
        .args(["--stdio", "-g", "none", mode, "--show-nr-samples"])
        .args(["--no-group", "--no-branch-stack", "-t", "|"])
        .args(["--sort", &keys.join(",")])
        .output()
        .expect("run perf");
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let mut table = Table::new();
    let mut event = None;
    let mut has_children = false;
    for line in text.lines() {
        if line.starts_with("# Children") {
            has_children = true;
        }
        if let Some(rest) = line.strip_prefix("# Samples: ") {
            if let Some(i) = rest.find(" '") {
                event = Some(rest[i + 2..].trim_end_matches('\'').to_string());
            }
            continue;
        }
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let Some(ev) = &event else { continue };
        let f: Vec<&str> = line.split('|').collect();
        let npct = if children && has_children { 2 } else { 1 };
        if f.len() < npct + 1 + keys.len() {
            return Err(format!("unexpected perf line: {line}"));
        }
        let pct = |s: &str| s.trim().trim_end_matches('%').trim().parse::<f64>();
        let (c, s) = if npct == 2 {
            (pct(f[0]), pct(f[1]))
        } else {
            (Ok(f64::NAN), pct(f[0]))
        };
        let (Ok(c), Ok(s)) = (c, s) else {
            return Err(format!("unexpected perf line: {line}"));
        };
        let samples: u64 = f[npct].trim().parse().unwrap_or(0);
        // Key parts; the sym part is tagged with perf's [k]/[.] level for the rules.
        let mut parts = Vec::new();
        let mut tag = String::new();
        for (i, k) in keys.iter().enumerate() {
            let v = f[npct + 1 + i].trim();
            if *k == "sym" {
                let (t, name) = perf_sym(v);
                tag = t;
                parts.push(name);
            } else {
                parts.push(v.to_string());
            }
        }
        let row = table
            .entry(ev.clone())
            .or_default()
            .entry(format!("{tag}\t{}", parts.join("\t")))
            .or_default();
        row.children += if c.is_nan() { 0.0 } else { c };
        row.self_pct += s;
        row.samples += samples;
    }
    Ok((table, has_children))
}

/// `culprit report --format json` → the same shape as [`perf_table`] (sample counts per event
/// from the JSON's event list go in `totals`).
fn culprit_table(
    file: &Path,
    keys: &[&str],
    children: bool,
    totals: &mut BTreeMap<String, u64>,
) -> Result<(Table, Value), String> {
    let mode = if children {
        "--children"
    } else {
        "--no-children"
    };
    let out = common::culprit()
        .args(["report", "--unknown", "address"])
        .arg("-i")
        .arg(file)
        .args(["--format", "json", mode, "--sort", &keys.join(",")])
        .output()
        .expect("run culprit");
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    let json: Value = serde_json::from_slice(&out.stdout).map_err(|e| e.to_string())?;
    for e in json["events"].as_array().unwrap() {
        totals.insert(
            e["name"].as_str().unwrap().to_string(),
            e["samples"].as_u64().unwrap(),
        );
    }
    let mut table = Table::new();
    for row in json["rows"].as_array().unwrap() {
        let k = &row["keys"];
        let tag = row["sym_level"].as_str().unwrap_or("").to_string();
        let parts: Vec<String> = keys
            .iter()
            .map(|name| match (*name, k["sym_addr"].as_str()) {
                ("sym", Some(addr)) => addr.to_string(),
                _ => match &k[*name] {
                    Value::String(s) => s.clone(),
                    v => v.to_string(),
                },
            })
            .collect();
        for (ev, p) in row["percent"].as_object().unwrap() {
            let counted = if children {
                "children_samples"
            } else {
                "samples"
            };
            if row[counted][ev].as_u64() == Some(0) {
                continue;
            }
            let r = table
                .entry(ev.clone())
                .or_default()
                .entry(format!("{tag}\t{}", parts.join("\t")))
                .or_default();
            r.children += row["children_percent"][ev].as_f64().unwrap_or(0.0);
            r.self_pct += p.as_f64().unwrap_or(0.0);
            r.samples += row["samples"][ev].as_u64().unwrap_or(0);
        }
    }
    Ok((table, json))
}

/// Whether the file was recorded on another kernel than the one running here: perf then
/// names its kernel and vDSO addresses from this machine's kallsyms and vDSO, which is wrong.
fn foreign_kernel(json: &Value) -> bool {
    let here = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    json["meta"]["os_release"].as_str() != Some(here.trim())
}

/// Leaves out the rows a rule says perf cannot name (kernel and vDSO rows of a file from
/// another kernel); they are compared at the coarser key instead. Returns the number left out.
fn drop_unnameable(table: &Table, keys: &[&str]) -> (Table, usize) {
    let dso_at = keys.iter().position(|k| *k == "dso");
    let mut out = Table::new();
    let mut dropped = 0;
    for (ev, rows) in table {
        let dst = out.entry(ev.clone()).or_default();
        for (k, r) in rows {
            let mut parts = k.split('\t');
            let tag = parts.next().unwrap_or("");
            let dso = dso_at.and_then(|i| parts.nth(i)).unwrap_or("");
            if is_kernel_or_vdso(tag, dso) {
                dropped += 1;
            } else {
                dst.insert(k.clone(), *r);
            }
        }
    }
    (untag(&out), dropped)
}

/// Drops the sym-level tag from the keys (after the rules used it).
fn untag(table: &Table) -> Table {
    table
        .iter()
        .map(|(ev, rows)| {
            let mut dst: BTreeMap<String, Row> = BTreeMap::new();
            for (k, r) in rows {
                let e = dst
                    .entry(k.split_once('\t').map_or(k.as_str(), |x| x.1).to_string())
                    .or_default();
                e.children += r.children;
                e.self_pct += r.self_pct;
                e.samples += r.samples;
            }
            (ev.clone(), dst)
        })
        .collect()
}

/// Compares perf's and culprit's tables; problems are appended to `problems`, uses of the
/// rules to `notes`.
fn compare(
    what: &str,
    perf: &Table,
    ours: &Table,
    children: bool,
    problems: &mut Vec<String>,
    notes: &mut Vec<String>,
) {
    for (ev, prow) in perf {
        if PERF_SYNTHESIZED_EVENTS.contains(&ev.as_str()) && !ours.contains_key(ev) {
            notes.push(format!(
                "{what}: event {ev:?} ({} rows) is synthesized by perf from the Intel PT trace, which culprit does not decode",
                prow.len()
            ));
            continue;
        }
        let Some(orow) = ours.get(ev) else {
            problems.push(format!("{what}: event {ev:?} missing in culprit"));
            continue;
        };
        // perf prints a value cut to its column's width when the column was sized before the
        // value grew (`perf-exec` printed as `perf-ex`): such a row matches the one culprit
        // row, absent from perf, whose key parts each start with perf's.
        let mut prefix_matched = BTreeSet::new();
        for (k, p) in prow {
            let key = if orow.contains_key(k) {
                Some(k.clone())
            } else {
                let parts: Vec<&str> = k.split('\t').collect();
                let found: Vec<&String> = orow
                    .keys()
                    .filter(|o| {
                        !prow.contains_key(*o) && {
                            let op: Vec<&str> = o.split('\t').collect();
                            op.len() == parts.len()
                                && op.iter().zip(&parts).all(|(a, b)| a.starts_with(b))
                        }
                    })
                    .collect();
                (found.len() == 1).then(|| found[0].clone())
            };
            match key {
                None => {
                    if p.self_pct.abs() > 0.1 || (children && p.children.abs() > 0.1) {
                        problems.push(format!(
                            "{what} [{ev}] perf row missing in culprit: {k:?} self {:.2} children {:.2}",
                            p.self_pct, p.children
                        ))
                    }
                }
                Some(key) => {
                    if &key != k {
                        notes.push(format!(
                            "{what} [{ev}] perf cut {k:?} to its column width: matched {key:?}"
                        ));
                        prefix_matched.insert(key.clone());
                    }
                    let o = orow[&key];
                    if (p.self_pct - o.self_pct).abs() > 0.1 {
                        problems.push(format!(
                            "{what} [{ev}] {k:?}: self perf {:.2} culprit {:.2}",
                            p.self_pct, o.self_pct
                        ));
                    }
                    if children && (p.children - o.children).abs() > 0.1 {
                        problems.push(format!(
                            "{what} [{ev}] {k:?}: children perf {:.2} culprit {:.2}",
                            p.children, o.children
                        ));
                    }
                }
            }
        }
        for (k, o) in orow {
            if !prow.contains_key(k)
                && !prefix_matched.contains(k)
                && (o.self_pct > 0.1 || (children && o.children > 0.1))
            {
                problems.push(format!(
                    "{what} [{ev}] culprit row not in perf: {k:?} self {:.2} children {:.2}",
                    o.self_pct, o.children
                ));
            }
        }
    }
    for ev in ours.keys() {
        if !perf.contains_key(ev) {
            problems.push(format!("{what}: culprit event {ev:?} not in perf"));
        }
    }
}

/// Samples per event: perf's (summed from its Samples column) against culprit's totals.
fn compare_samples(
    what: &str,
    perf: &Table,
    totals: &BTreeMap<String, u64>,
    problems: &mut Vec<String>,
) {
    for (ev, rows) in perf {
        if PERF_SYNTHESIZED_EVENTS.contains(&ev.as_str()) && !totals.contains_key(ev) {
            continue;
        }
        let n: u64 = rows.values().map(|r| r.samples).sum();
        let ours = totals.get(ev).copied().unwrap_or(0);
        if n != ours {
            problems.push(format!(
                "{what} [{ev}]: perf has {n} samples, culprit {ours}"
            ));
        }
    }
}

/// Whether the file's samples carry user stacks for DWARF unwinding (perf evlist prints each
/// attr's sample_type).
fn has_dwarf_stacks(file: &Path) -> bool {
    let out = common::perf()
        .args(["evlist", "-v", "-i"])
        .arg(file)
        .output()
        .expect("perf evlist");
    String::from_utf8_lossy(&out.stdout).contains("STACK_USER")
}

/// The checks for one file; returns (problems, notes).
fn check_file(file: &Path, scratch: &Path) -> (Vec<String>, Vec<String>) {
    let name = file_name(file);
    let mut problems = Vec::new();
    let mut notes = Vec::new();
    let perf_input = perf61_copy(file, scratch);
    if let Some(p) = &perf_input {
        notes.push(format!(
            "{name}: 136-byte attrs rewritten to 128 for perf 6.1 ({})",
            file_name(p)
        ));
    }
    let perf_input = perf_input.unwrap_or_else(|| file.to_path_buf());

    if let Some((_, why)) = CORRUPT.iter().find(|(n, _)| *n == name) {
        let out = common::culprit()
            .args(["report", "--unknown", "address"])
            .arg("-i")
            .arg(file)
            .args(["--format", "json"])
            .output()
            .unwrap();
        let json: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        let stop = &json["stopped"];
        // The damage must be reported (exit 1, the stop in the JSON), with the report of
        // what came before it (here: the file's first sample is the damaged record).
        if stop.is_null() || out.status.code() != Some(1) {
            problems.push(format!(
                "{name} ({why}): culprit should report the samples before the damage and where it stopped; got {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        } else {
            notes.push(format!(
                "{name}: corrupt by design ({why}); culprit stopped at byte {} after {} samples",
                stop["offset"], json["events"][0]["samples"]
            ));
        }
        return (problems, notes);
    }

    let keys = ["comm", "dso", "sym"];
    let mut totals = BTreeMap::new();
    let (ours, json) = match culprit_table(file, &keys, false, &mut totals) {
        Ok(x) => x,
        Err(e) => {
            problems.push(format!("{name}: culprit report failed: {e}"));
            return (problems, notes);
        }
    };
    if !json["stopped"].is_null() {
        problems.push(format!(
            "{name}: culprit stopped reading: {}",
            json["stopped"]
        ));
    }
    if let Some((_, why)) = PERF_CANNOT_READ.iter().find(|(n, _)| *n == name) {
        let n: u64 = totals.values().sum();
        if n == 0 {
            problems.push(format!("{name}: culprit found no samples"));
        }
        notes.push(format!(
            "{name}: not compared, perf 6.1 cannot read it ({why}); culprit read {n} samples"
        ));
        return (problems, notes);
    }
    let perf = match perf_table(&perf_input, &keys, false) {
        Ok((t, _)) => t,
        Err(e) => {
            problems.push(format!("{name}: perf report failed: {e}"));
            return (problems, notes);
        }
    };
    if perf.is_empty() {
        problems.push(format!(
            "{name}: perf showed no samples (list it in PERF_CANNOT_READ with the reason if that is perf's fault)"
        ));
        return (problems, notes);
    }
    compare_samples(&name, &perf, &totals, &mut problems);
    let foreign = foreign_kernel(&json);
    // Compares one mode: at `keys`, leaving kernel/vDSO rows of a foreign kernel to the
    // comparison at `coarse` (the same keys without sym).
    let compare_mode = |keys: &[&str],
                        coarse: &[&str],
                        children: bool,
                        perf: Table,
                        ours: Table,
                        problems: &mut Vec<String>,
                        notes: &mut Vec<String>| {
        let what = format!(
            "{name}{} --sort {}",
            if children { " --children" } else { "" },
            keys.join(",")
        );
        if !foreign {
            compare(
                &what,
                &untag(&perf),
                &untag(&ours),
                children,
                problems,
                notes,
            );
            return;
        }
        let (p, n) = drop_unnameable(&perf, keys);
        let (o, _) = drop_unnameable(&ours, keys);
        compare(&what, &p, &o, children, problems, notes);
        if n == 0 {
            return;
        }
        notes.push(format!(
            "{what}: {n} kernel/vDSO rows compared at --sort {} instead: the file's kernel ({}) is not this machine's, and perf 6.1 names their addresses from this machine's kallsyms and vDSO",
            coarse.join(","),
            json["meta"]["os_release"]
        ));
        let mut t = BTreeMap::new();
        match (
            perf_table(&perf_input, coarse, children),
            culprit_table(file, coarse, children, &mut t),
        ) {
            (Ok((p, _)), Ok((o, _))) => compare(
                &format!(
                    "{name}{} --sort {}",
                    if children { " --children" } else { "" },
                    coarse.join(",")
                ),
                &untag(&p),
                &untag(&o),
                children,
                problems,
                notes,
            ),
            (Err(e), _) | (_, Err(e)) => {
                problems.push(format!("{what}: a coarse report failed: {e}"))
            }
        }
    };
    compare_mode(
        &keys,
        &["comm", "dso"],
        false,
        perf,
        ours,
        &mut problems,
        &mut notes,
    );

    // Children where the file has call chains (perf prints a Children column) and no DWARF
    // stacks (perf 6.1 would unwind those with this machine's binaries).
    if !has_dwarf_stacks(&perf_input) {
        let keys = ["dso", "sym"];
        let mut t = BTreeMap::new();
        match (
            perf_table(&perf_input, &keys, true),
            culprit_table(file, &keys, true, &mut t),
        ) {
            (Ok((p, true)), Ok((o, _))) => {
                compare_mode(&keys, &["dso"], true, p, o, &mut problems, &mut notes)
            }
            (Ok(_), Ok(_)) => {}
            (Err(e), _) | (_, Err(e)) => {
                problems.push(format!("{name} --children: a report failed: {e}"))
            }
        }
    }
    (problems, notes)
}

#[test]
fn test_corpus_reads_like_perf() {
    if !common::require_perf("test_corpus_reads_like_perf") {
        return;
    }
    let files = corpus_files();
    assert!(files.len() >= 60, "the corpus has {} files", files.len());
    let scratch = common::scratch("corpus");
    let queue = Mutex::new(files.clone());
    let results = Mutex::new(BTreeMap::new());
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| loop {
                let Some(f) = queue.lock().unwrap().pop() else {
                    break;
                };
                let r = check_file(&f, &scratch);
                results.lock().unwrap().insert(f, r);
            });
        }
    });
    let results = results.into_inner().unwrap();
    let mut report = String::new();
    let mut failed = 0;
    for (f, (problems, notes)) in &results {
        let name = f.strip_prefix(corpus_dir()).unwrap_or(f).display();
        let _ = writeln!(
            report,
            "{} {name}",
            if problems.is_empty() { "ok  " } else { "FAIL" }
        );
        for n in notes {
            let _ = writeln!(report, "       note: {n}");
        }
        for p in problems.iter().take(12) {
            let _ = writeln!(report, "       {p}");
        }
        if problems.len() > 12 {
            let _ = writeln!(report, "       … {} more", problems.len() - 12);
        }
        failed += usize::from(!problems.is_empty());
    }
    eprintln!("{report}");
    assert_eq!(
        failed,
        0,
        "{failed} of {} corpus files differ from perf:\n{report}",
        results.len()
    );
}

/// The culprit built for arm64 (`scripts/cross-aarch64.sh cross-test`: release at opt-level
/// 1, Debian's cross gcc as linker), run under qemu-user, reads the corpus's arm64 recordings exactly as this build
/// does: `report` (text and JSON), `script` and the folded and speedscope exports, byte for
/// byte. The files are those the corpus README lists with `arch: aarch64`.
#[test]
fn test_aarch64_build_reads_the_arm64_corpus_like_this_build() {
    let test = "test_aarch64_build_reads_the_arm64_corpus_like_this_build";
    let arm = common::repo_root().join("target/aarch64-unknown-linux-gnu/cross-test/culprit");
    if !common::need(
        test,
        arm.exists(),
        "no arm64 build (run scripts/cross-aarch64.sh cross-test)",
    ) {
        return;
    }
    let readme = std::fs::read_to_string(corpus_dir().join("README.md")).unwrap();
    let arm_files: Vec<PathBuf> = readme
        .lines()
        .filter(|l| l.contains("arch: aarch64"))
        .filter_map(|l| l.split('|').nth(1))
        .map(|name| corpus_dir().join(name.trim()))
        .collect();
    assert!(
        arm_files.len() >= 4,
        "arm64 files in the README: {arm_files:?}"
    );
    let views: [&[&str]; 5] = [
        &["report", "--width", "0"],
        &["report", "--format", "json"],
        &["script"],
        &["export", "--format", "folded"],
        &["export", "--format", "speedscope"],
    ];
    for file in &arm_files {
        for view in views {
            let here = common::culprit()
                .args(view)
                .arg("-i")
                .arg(file)
                .output()
                .unwrap();
            let there = common::in_test_home(&mut Command::new("qemu-aarch64"))
                .args(["-L", "/usr/aarch64-linux-gnu"])
                .arg(&arm)
                .args(view)
                .arg("-i")
                .arg(file)
                .output()
                .expect("run the arm64 culprit under qemu-aarch64");
            let name = format!("{} {}", file_name(file), view.join(" "));
            assert!(here.status.success(), "{name}: {here:?}");
            assert_eq!(here.status.code(), there.status.code(), "{name}");
            assert!(
                here.stdout == there.stdout,
                "{name}: the arm64 build's output differs ({} vs {} bytes)",
                there.stdout.len(),
                here.stdout.len()
            );
            assert!(!here.stdout.is_empty(), "{name}: no output");
        }
    }
}
