//! Branch stacks against perf: the decoded entries of the corpus's LBR/BRS/BRBE files equal
//! `perf script -F brstack`, `culprit report --branch` equals `perf report --branch-stack`
//! row by row (within 0.1 point, same branch counts), and `--call-graph lbr` chains built
//! from the LBR call stack give perf's `--children` numbers on a crafted file.

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn corpus(name: &str) -> PathBuf {
    common::repo_root()
        .join("crates/decode/tests/fixtures/real-perf-data")
        .join(name)
}

/// The corpus files with branch stacks.
const BRANCH_FILES: &[&str] = &[
    "google-perf_data_converter/perf.data.branch-4.14",
    "google-perf_data_converter/perf.data.branch_stack_hw_index",
    "google-perf_data_converter/perf.data.branch_stack_spec",
    "google-perf_data_converter/perf.data.callgraph_and_branch-3.4",
    "google-perf_data_converter/perf.data.callgraph_and_branch-3.8",
    "google-perf_data_converter/perf.data.raw_callgraph_branch-3.4",
    "google-autofdo/test.lbr",
    "google-autofdo/propeller_sample_1.perfdata1",
];

/// perf's brstack entry `0xF/0xT/P/-/-/3/TYPE/SPEC` → `0xF/0xT/P/-/-/3` (culprit's
/// `brstack_text` has no type names).
fn brstack_core(entry: &str) -> String {
    entry.split('/').take(6).collect::<Vec<_>>().join("/")
}

#[test]
fn test_branch_entries_equal_perf_script_brstack() {
    if !common::require_perf("test_branch_entries_equal_perf_script_brstack") {
        return;
    }
    for name in BRANCH_FILES {
        let file = corpus(name);
        let out = common::run_ok(
            common::perf()
                .args(["script", "-F", "brstack", "-i"])
                .arg(&file),
        );
        let theirs: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| {
                l.split_whitespace()
                    .map(brstack_core)
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .filter(|l| !l.is_empty())
            .collect();
        let p = culprit_decode::Reader::open(&file).collect().unwrap();
        let ours: Vec<String> = p
            .samples
            .iter()
            .map(|s| {
                assert_eq!(s.branch_count as usize, p.branches(s).len(), "{name}");
                culprit_analysis::branches::brstack_text(p.branches(s))
                    .trim_end()
                    .to_string()
            })
            .filter(|l| !l.is_empty())
            .collect();
        assert!(!ours.is_empty(), "{name}: no branch entries decoded");
        assert_eq!(
            ours.len(),
            theirs.len(),
            "{name}: samples with branch stacks"
        );
        for (i, (a, b)) in ours.iter().zip(&theirs).enumerate() {
            assert_eq!(a, b, "{name}: sample {i}");
        }
        // HW_INDEX is kept where the attr records it (the arm64 BRBE-style file).
        let hw = p
            .events
            .iter()
            .any(|e| e.branch_sample_type & (1 << 17) != 0);
        let with_index = p.samples.iter().filter(|s| s.branch_hw_index.is_some());
        assert_eq!(with_index.count() > 0, hw, "{name}: hw_index");
    }
}

/// Percentages per event, per key (the key columns joined with a tab).
type Table = BTreeMap<String, BTreeMap<String, f64>>;

/// A symbol cell: perf's `[k] 0xffffffff81000000` / `[.] 0x000000000001a5c2` /
/// `[H] 0000000000000000` / `[.] name` → `[k] 0xffffffff81000000` / `[.] name`.
fn normalize_sym(cell: &str) -> String {
    let cell = cell.trim();
    let (tag, rest) = cell.split_at(cell.find("] ").map_or(0, |i| i + 1));
    let rest = rest.trim();
    let hex = rest.strip_prefix("0x").unwrap_or(rest);
    match u64::from_str_radix(hex, 16) {
        Ok(v) if hex.len() >= 8 => format!("{tag} {v:#x}"),
        _ => format!("{tag} {rest}"),
    }
}

/// The key joined with tabs, with the symbol of a `[vdso]` end (known from its `dso_*`
/// key) replaced by `[vdso]`: perf symbolizes a recorded file's vDSO with the vDSO of the
/// machine it runs on (it copies its own), which says nothing about the recorded one.
fn collapse_vdso(keys: &[&str], mut key: Vec<String>) -> String {
    for (i, k) in keys.iter().enumerate() {
        if let Some(side) = k.strip_prefix("symbol_") {
            let dso = keys.iter().position(|d| *d == format!("dso_{side}"));
            if dso.is_some_and(|d| key[d] == "[vdso]") {
                key[i] = "[.] [vdso]".to_string();
            }
        }
    }
    key.join("\t")
}

/// An empty kallsyms file for perf.
fn empty_kallsyms() -> PathBuf {
    static PATH: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    PATH.get_or_init(|| {
        let p = common::scratch("branch-kallsyms").join("kallsyms");
        std::fs::write(&p, "").unwrap();
        p
    })
    .clone()
}

/// `perf report --branch-stack -t '|'` → table, and the branch count of each event.
fn perf_branch_table(file: &Path, sort: &str) -> (Table, BTreeMap<String, u64>) {
    let out = common::run_ok(
        common::perf()
            // `-F overhead,KEYS` sorts by KEYS like `--sort KEYS` but without the IPC column,
            // on which perf 6.1 crashes (SIGSEGV) for branches into unmapped addresses.
            .args(["report", "--stdio", "--branch-stack", "-t", "|", "-F"])
            .arg(format!("overhead,{sort}"))
            // None of the recorded kernels is this machine's: perf would name the addresses of
            // files without a kernel build-id (perf 3.x) with the running kernel's symbols,
            // culprit leaves them unresolved. An empty kallsyms makes perf do the same.
            .arg("--kallsyms")
            .arg(empty_kallsyms())
            .arg("-i")
            .arg(file),
    );
    let keys: Vec<&str> = sort.split(',').collect();
    let mut table = Table::new();
    let mut counts = BTreeMap::new();
    let mut event = String::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        if let Some(rest) = line.strip_prefix("# Samples: ") {
            let i = rest.find("of event '").unwrap();
            event = rest[i + 10..].trim_end_matches('\'').to_string();
            continue;
        }
        // The exact count (`# Samples:` abbreviates to `14K`): each entry has period 1.
        if let Some(rest) = line.strip_prefix("# Event count (approx.): ") {
            counts.insert(event.clone(), rest.trim().parse::<u64>().unwrap());
            continue;
        }
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let cells: Vec<&str> = line.split('|').collect();
        let pct: f64 = cells[0].trim().trim_end_matches('%').parse().unwrap();
        let key: Vec<String> = keys
            .iter()
            .enumerate()
            .map(|(i, k)| {
                let c = cells[i + 1].trim();
                if k.starts_with("symbol_") {
                    normalize_sym(c)
                } else if *k == "cycles" {
                    // perf prints the 16-bit count with `%hd`: 42141 shows as -23395.
                    match c.parse::<i16>() {
                        Ok(v) => (v as u16).to_string(),
                        Err(_) => c.to_string(),
                    }
                } else {
                    c.to_string()
                }
            })
            .collect();
        *table
            .entry(event.clone())
            .or_default()
            .entry(collapse_vdso(&keys, key))
            .or_default() += pct;
    }
    (table, counts)
}

/// `culprit report --branch --format json` → the same shape.
fn culprit_branch_table(file: &Path, sort: &str) -> (Table, BTreeMap<String, u64>) {
    let out = common::run_ok(
        common::culprit()
            .args(["report", "--branch", "--format", "json", "--sort", sort])
            .arg("-i")
            .arg(file),
    );
    let j: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["mode"], "branch");
    let keys: Vec<&str> = sort.split(',').collect();
    let mut table = Table::new();
    for row in j["rows"].as_array().unwrap() {
        let k = &row["keys"];
        let key: Vec<String> = keys
            .iter()
            .map(|name| {
                let text = k[*name].as_str().unwrap().to_string();
                if name.starts_with("symbol_") {
                    let tag = k[format!("{name}_level")].as_str().unwrap();
                    // Unresolved: perf shows the address in the DSO.
                    let shown = match k[format!("{name}_addr")].as_str() {
                        Some(a) => a.to_string(),
                        None => text,
                    };
                    format!("{tag} {shown}")
                } else {
                    text
                }
            })
            .collect();
        for (ev, p) in row["percent"].as_object().unwrap() {
            if row["samples"][ev].as_u64() == Some(0) {
                continue;
            }
            *table
                .entry(ev.clone())
                .or_default()
                .entry(collapse_vdso(&keys, key.clone()))
                .or_default() += p.as_f64().unwrap();
        }
    }
    let counts = j["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["name"].as_str().unwrap().to_string(),
                e["samples"].as_u64().unwrap(),
            )
        })
        .collect();
    (table, counts)
}

#[test]
fn test_report_branch_matches_perf_branch_stack() {
    if !common::require_perf("test_report_branch_matches_perf_branch_stack") {
        return;
    }
    for name in BRANCH_FILES {
        let file = corpus(name);
        // perf's default keys where no branch touches the vDSO (see collapse_vdso, which
        // needs the dso_* keys), and all the branch keys.
        let has_vdso = String::from_utf8_lossy(
            &common::run_ok(
                common::perf()
                    .args([
                        "report",
                        "--stdio",
                        "--branch-stack",
                        "-F",
                        "overhead,dso_from,dso_to",
                        "-i",
                    ])
                    .arg(&file),
            )
            .stdout,
        )
        .contains("[vdso]");
        let default_keys = if has_vdso {
            "comm,dso_from,symbol_from,dso_to,symbol_to,cycles"
        } else {
            "comm,dso_from,symbol_from,symbol_to,cycles"
        };
        for sort in [
            default_keys,
            "dso_from,symbol_from,dso_to,symbol_to,mispredict,in_tx,abort",
        ] {
            let (perf, perf_counts) = perf_branch_table(&file, sort);
            let (ours, our_counts) = culprit_branch_table(&file, sort);
            let what = format!("{name} --sort {sort}");
            let keys: Vec<&str> = sort.split(',').collect();
            assert!(!perf.is_empty(), "{what}: perf printed no rows");
            assert_eq!(
                perf.keys().collect::<Vec<_>>(),
                ours.keys().collect::<Vec<_>>(),
                "{what}"
            );
            for ev in perf.keys() {
                assert_eq!(
                    perf_counts.get(ev),
                    our_counts.get(ev),
                    "{what}: branch count of {ev}"
                );
            }
            let mut problems = Vec::new();
            for (ev, prow) in &perf {
                let orow = &ours[ev];
                let mut max_diff = 0.0f64;
                // perf cuts a value to its column's width when the column was sized before
                // the value grew (a comm replaced by a longer one: `perf-exec` as `perf-ex`):
                // such a row is the one culprit row absent from perf whose key parts each
                // start with perf's.
                let mut by_prefix = Vec::new();
                for (k, p) in prow {
                    let key = if orow.contains_key(k) {
                        k.clone()
                    } else {
                        let parts: Vec<&str> = k.split('\t').collect();
                        let found: Vec<&String> = orow
                            .keys()
                            .filter(|o| {
                                let op: Vec<&str> = o.split('\t').collect();
                                !prow.contains_key(*o)
                                    && op.len() == parts.len()
                                    && op.iter().zip(&parts).zip(&keys).all(|((a, b), k)| {
                                        // Only names are cut, not numbers or addresses.
                                        if *k == "comm" || k.starts_with("dso_") {
                                            a.starts_with(b)
                                        } else {
                                            a == b
                                        }
                                    })
                            })
                            .collect();
                        match found[..] {
                            [one] => {
                                by_prefix.push(one.clone());
                                one.clone()
                            }
                            _ => k.clone(),
                        }
                    };
                    match orow.get(&key) {
                        None => problems.push(format!("[{ev}] perf row missing: {k:?} {p}")),
                        Some(o) if (p - o).abs() > 0.1 => {
                            problems.push(format!("[{ev}] {k:?}: perf {p} culprit {o}"))
                        }
                        Some(o) => max_diff = max_diff.max((p - o).abs()),
                    }
                }
                eprintln!(
                    "{what} [{ev}]: {} rows, max difference {max_diff:.4} point",
                    prow.len()
                );
                for (k, o) in orow {
                    if !prow.contains_key(k) && !by_prefix.contains(k) {
                        problems.push(format!("[{ev}] culprit row not in perf: {k:?} {o}"));
                    }
                }
            }
            assert!(
                problems.is_empty(),
                "{what}: {} mismatches:\n{}",
                problems.len(),
                problems
                    .iter()
                    .take(30)
                    .cloned()
                    .collect::<Vec<_>>()
                    .join("\n")
            );
        }
    }
}

/// `PERF_SAMPLE_BRANCH_*` bits of a `--call-graph lbr` attr: USER | CALL_STACK | NO_FLAGS |
/// NO_CYCLES | HW_INDEX.
const LBR_BRANCH_SAMPLE_TYPE: u64 = 1 | 1 << 11 | 1 << 14 | 1 << 15 | 1 << 17;
const PERF_CONTEXT_KERNEL: u64 = -128i64 as u64;
const PERF_CONTEXT_USER: u64 = -512i64 as u64;

/// One crafted sample: mode, IP, kernel call chain, and LBR call stack (from, to).
struct LbrSample {
    misc: u16,
    ip: u64,
    chain: Vec<u64>,
    stack: Vec<(u64, u64)>,
    count: usize,
}

/// Writes a `perf record --call-graph lbr`-shaped file: process 100 runs `bin` at `base`,
/// samples with CALLCHAIN and an LBR call stack (HW_INDEX), as perf 6.1 writes them.
fn write_lbr_file(path: &Path, bin: &Path, base: u64, samples: &[LbrSample]) {
    use culprit_collect::perfdata::{Attr, Features, FileAttr, PerfDataWriter};
    use culprit_decode::abi::{attr_flag, sample_type};
    let st = sample_type::IDENTIFIER
        | sample_type::IP
        | sample_type::TID
        | sample_type::TIME
        | sample_type::PERIOD
        | sample_type::CALLCHAIN
        | sample_type::BRANCH_STACK;
    let a0 = Attr {
        attr_type: 0,
        config: 0,
        sample_period_or_freq: 100003,
        sample_type: st,
        flags: attr_flag::SAMPLE_ID_ALL | attr_flag::MMAP | attr_flag::COMM | attr_flag::MMAP2,
        ..Attr::default()
    };
    let attrs = vec![FileAttr {
        attr: a0,
        name: "cycles".to_string(),
        ids: vec![1],
    }];
    let file = std::fs::File::create(path).unwrap();
    let mut w = PerfDataWriter::new(file, attrs).unwrap();
    let mut buf = Vec::new();
    common::push_process(&mut buf, &a0, b"calltree", bin, base);
    let mut time = 10u64;
    for s in samples {
        for _ in 0..s.count {
            let mut body: Vec<u64> = vec![1, s.ip, 100 | 100 << 32, time, 100003];
            body.push(s.chain.len() as u64);
            body.extend(&s.chain);
            body.push(s.stack.len() as u64);
            body.push(0); // hw_idx
            for &(from, to) in &s.stack {
                body.extend([from, to, 0]);
            }
            common::push_sample(&mut buf, s.misc, &body);
            time += 1;
        }
    }
    w.write_data(&buf).unwrap();
    w.finish(&Features::default()).unwrap();
    // culprit's writer has no branch_sample_type: set it in the attr (offset 72), found
    // through the header's attrs section (offset at byte 24).
    let mut bytes = std::fs::read(path).unwrap();
    let attrs_at = u64::from_le_bytes(bytes[24..32].try_into().unwrap()) as usize;
    bytes[attrs_at + 72..attrs_at + 80].copy_from_slice(&LBR_BRANCH_SAMPLE_TYPE.to_le_bytes());
    std::fs::write(path, bytes).unwrap();
}

/// The address of the first `call` to `callee` in `func` (objdump's view).
fn call_site(bin: &Path, func: &str, callee: &str) -> u64 {
    common::objdump_function(bin, func)
        .iter()
        .find(|i| i.mnem.starts_with("call") && i.ops.contains(&format!("<{callee}>")))
        .unwrap_or_else(|| panic!("no call to {callee} in {func}"))
        .addr
}

fn symbol_addr(bin: &Path, name: &str) -> u64 {
    let out = common::run_ok(Command::new("nm").arg(bin));
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find(|l| l.split_whitespace().nth(2) == Some(name))
        .unwrap_or_else(|| panic!("nm shows no {name}"));
    u64::from_str_radix(line.split_whitespace().next().unwrap(), 16).unwrap()
}

/// `perf report --stdio --no-branch-stack -g none --sort sym` (children and self) →
/// symbol → (children %, self %).
fn perf_children_by_sym(file: &Path) -> BTreeMap<String, (f64, f64)> {
    let out = common::run_ok(
        common::perf()
            .args([
                "report",
                "--stdio",
                "--no-branch-stack",
                "--children",
                "-g",
                "none",
            ])
            .args(["--sort", "sym", "-t", "|", "--kallsyms"])
            .arg(empty_kallsyms())
            .arg("-i")
            .arg(file),
    );
    let mut m = BTreeMap::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let c: Vec<&str> = line.split('|').collect();
        let pct = |s: &str| s.trim().trim_end_matches('%').parse::<f64>().unwrap();
        let e = m
            .entry(untagged(&normalize_sym(c[2])))
            .or_insert((0.0, 0.0));
        e.0 += pct(c[0]);
        e.1 += pct(c[1]);
    }
    m
}

fn culprit_children_by_sym(file: &Path) -> BTreeMap<String, (f64, f64)> {
    let out = common::run_ok(
        common::culprit()
            .args([
                "report",
                "--unknown",
                "address",
                "--children",
                "--sort",
                "sym",
                "--format",
                "json",
                "-i",
            ])
            .arg(file),
    );
    let j: Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut m = BTreeMap::new();
    for row in j["rows"].as_array().unwrap() {
        let k = &row["keys"];
        let name = match k["sym_addr"].as_str() {
            // perf keys unresolved chain entries by runtime address, and shows the address.
            Some(a) => a.to_string(),
            None => k["sym"].as_str().unwrap().to_string(),
        };
        let e = m.entry(name).or_insert((0.0, 0.0));
        e.0 += row["children_percent"]["cycles"].as_f64().unwrap();
        e.1 += row["percent"]["cycles"].as_f64().unwrap();
    }
    m
}

/// A sym cell without its privilege tag: perf tags an unresolved call-chain entry `[.]`
/// whatever its mode (as the hotspot comparisons in report.rs, tags are not compared).
fn untagged(cell: &str) -> String {
    match cell.split_once("] ") {
        Some((t, rest)) if t.starts_with('[') => rest.to_string(),
        _ => cell.to_string(),
    }
}

#[test]
fn test_lbr_call_graph_children_match_perf() {
    if !common::require_perf("test_lbr_call_graph_children_match_perf") {
        return;
    }
    let bin = common::workload("calltree");
    let base = 0x5555_5555_4000u64;
    let at = |a: u64| base + a;
    let sym = |n: &str| symbol_addr(&bin, n);
    // Inside the leaves (past their first instruction), the call sites of the tree.
    let (c_ip, e_ip) = (at(sym("c") + 8), at(sym("e") + 8));
    let b_calls_c = at(call_site(&bin, "b", "c"));
    let a_calls_b = at(call_site(&bin, "a", "b"));
    let main_calls_a = at(call_site(&bin, "main", "a"));
    let d_calls_e = at(call_site(&bin, "d", "e"));
    let main_calls_d = at(call_site(&bin, "main", "d"));
    let (kernel_ip, kernel_caller) = (0xffff_ffff_8100_1234u64, 0xffff_ffff_8100_5678u64);
    // A frame-pointer walk of code built without frame pointers: garbage after the IP,
    // which the LBR call stack replaces.
    let garbage = at(sym("e") + 3);
    let samples = [
        // main -> a -> b -> c, user mode.
        LbrSample {
            misc: 2,
            ip: c_ip,
            chain: vec![PERF_CONTEXT_USER, c_ip, garbage],
            stack: vec![
                (b_calls_c, at(sym("c"))),
                (a_calls_b, at(sym("b"))),
                (main_calls_a, at(sym("a"))),
            ],
            count: 14,
        },
        // main -> d -> e, user mode.
        LbrSample {
            misc: 2,
            ip: e_ip,
            chain: vec![PERF_CONTEXT_USER, e_ip, garbage, garbage],
            stack: vec![(d_calls_e, at(sym("e"))), (main_calls_d, at(sym("d")))],
            count: 6,
        },
        // In the kernel, entered from c: the kernel part stays, the user part is the LBR's.
        LbrSample {
            misc: 1,
            ip: kernel_ip,
            chain: vec![
                PERF_CONTEXT_KERNEL,
                kernel_ip,
                kernel_caller,
                PERF_CONTEXT_USER,
                c_ip,
                garbage,
            ],
            stack: vec![
                (b_calls_c, at(sym("c"))),
                (a_calls_b, at(sym("b"))),
                (main_calls_a, at(sym("a"))),
            ],
            count: 3,
        },
        // A kernel-only chain (no user part): perf keeps the chain as recorded.
        LbrSample {
            misc: 1,
            ip: kernel_ip,
            chain: vec![PERF_CONTEXT_KERNEL, kernel_ip, kernel_caller],
            stack: vec![(d_calls_e, at(sym("e")))],
            count: 2,
        },
    ];
    let dir = common::scratch("lbr-call-graph");
    let file = dir.join("perf.data");
    write_lbr_file(&file, &bin, base, &samples);
    let perf = perf_children_by_sym(&file);
    let ours = culprit_children_by_sym(&file);
    // The tree is what the LBR says: main, a and b carry their callees.
    let children = |t: &BTreeMap<String, (f64, f64)>, s: &str| t.get(s).map(|v| v.0);
    assert_eq!(children(&perf, "main"), Some(92.0), "perf: {perf:?}");
    assert!(
        (children(&perf, "a").unwrap() - 68.0).abs() < 0.01,
        "perf: {perf:?}"
    );
    let mut problems = Vec::new();
    for (k, (pc, ps)) in &perf {
        match ours.get(k) {
            None => problems.push(format!("perf row missing: {k} {pc} {ps}")),
            Some((oc, os)) if (pc - oc).abs() > 0.1 || (ps - os).abs() > 0.1 => {
                problems.push(format!("{k}: perf {pc}/{ps} culprit {oc}/{os}"))
            }
            Some(_) => {}
        }
    }
    for k in ours.keys() {
        if !perf.contains_key(k) {
            problems.push(format!("culprit row not in perf: {k} {:?}", ours[k]));
        }
    }
    assert!(
        problems.is_empty(),
        "{}\nperf {perf:?}\nculprit {ours:?}",
        problems.join("\n")
    );
}

/// `perf report --no-branch-stack --sort comm,dso` (self) → event → "comm\tdso" → %.
fn perf_plain(file: &Path) -> Table {
    let out = common::run_ok(
        common::perf()
            .args([
                "report",
                "--stdio",
                "--no-branch-stack",
                "--no-children",
                "-g",
                "none",
            ])
            .args(["--sort", "comm,dso", "-t", "|", "-i"])
            .arg(file),
    );
    let mut t = Table::new();
    let mut event = String::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        if let Some(rest) = line.strip_prefix("# Samples: ") {
            let i = rest.find("of event '").unwrap();
            event = rest[i + 10..].trim_end_matches('\'').to_string();
            continue;
        }
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let c: Vec<&str> = line.split('|').collect();
        let dso = c[2].trim();
        *t.entry(event.clone())
            .or_default()
            .entry(format!("{}\t{dso}", c[1].trim()))
            .or_default() += c[0].trim().trim_end_matches('%').parse::<f64>().unwrap();
    }
    t
}

#[test]
fn test_plain_report_of_branch_files_matches_perf_no_branch_stack() {
    if !common::require_perf("test_plain_report_of_branch_files_matches_perf_no_branch_stack") {
        return;
    }
    for name in BRANCH_FILES {
        let file = corpus(name);
        let perf = perf_plain(&file);
        assert!(!perf.is_empty(), "{name}: perf printed no rows");
        let out = common::run_ok(
            common::culprit()
                .args([
                    "report",
                    "--no-children",
                    "--sort",
                    "comm,dso",
                    "--format",
                    "json",
                    "-i",
                ])
                .arg(&file),
        );
        let j: Value = serde_json::from_slice(&out.stdout).unwrap();
        let mut ours = Table::new();
        for row in j["rows"].as_array().unwrap() {
            for (ev, p) in row["percent"].as_object().unwrap() {
                if row["samples"][ev].as_u64() == Some(0) {
                    continue;
                }
                let k = format!(
                    "{}\t{}",
                    row["keys"]["comm"].as_str().unwrap(),
                    row["keys"]["dso"].as_str().unwrap()
                );
                *ours.entry(ev.clone()).or_default().entry(k).or_default() += p.as_f64().unwrap();
            }
        }
        for (ev, prow) in &perf {
            let orow = ours
                .get(ev)
                .unwrap_or_else(|| panic!("{name}: no rows for {ev}"));
            for (k, p) in prow {
                // perf cuts long names to their column (see the branch-mode test).
                let o = orow.get(k).copied().or_else(|| {
                    let (pc, pd) = k.split_once('\t').unwrap();
                    let found: Vec<f64> = orow
                        .iter()
                        .filter(|(ok, _)| !prow.contains_key(*ok))
                        .filter(|(ok, _)| {
                            let (oc, od) = ok.split_once('\t').unwrap();
                            oc.starts_with(pc) && od.starts_with(pd)
                        })
                        .map(|(_, v)| *v)
                        .collect();
                    (found.len() == 1).then(|| found[0])
                });
                let o = o.unwrap_or_else(|| panic!("{name} [{ev}]: perf row {k:?} {p} missing"));
                assert!(
                    (p - o).abs() <= 0.1,
                    "{name} [{ev}] {k:?}: perf {p} culprit {o}"
                );
            }
        }
    }
}

#[test]
fn test_report_branch_text_and_csv_show_the_json_rows() {
    let file = corpus("google-perf_data_converter/perf.data.branch-4.14");
    let run = |format: &str| {
        let out = common::run_ok(
            common::culprit()
                .args(["report", "--branch", "--top", "5", "--format", format])
                // Whole names in text too (the text rows are compared with the JSON's).
                .args(["--width", "0"])
                .args(["--sort", "comm,symbol_from,mispredict", "-i"])
                .arg(&file),
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let j: Value = serde_json::from_str(&run("json")).unwrap();
    let rows = j["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 5);
    assert_eq!(j["events"][0]["samples"], 416);
    let text = run("text");
    assert!(
        text.contains("# Sort: comm,symbol_from,mispredict; branch mode"),
        "{text}"
    );
    assert!(
        text.contains("Source Symbol") && text.contains("Branch Mispredicted"),
        "{text}"
    );
    let csv = run("csv");
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(
        lines[0],
        "comm,symbol_from,symbol_from_level,symbol_from_addr,mispredict,cycles:ppp:samples,cycles:ppp:percent"
    );
    assert_eq!(lines.len(), 6);
    for (row, line) in rows.iter().zip(&lines[1..]) {
        let k = &row["keys"];
        let n = row["samples"]["cycles:ppp"].as_u64().unwrap();
        let addr = k["symbol_from_addr"].as_str().unwrap_or("");
        let expected = format!(
            "{},{},{},{addr},{},{n},",
            k["comm"].as_str().unwrap(),
            k["symbol_from"].as_str().unwrap(),
            k["symbol_from_level"].as_str().unwrap(),
            k["mispredict"].as_str().unwrap(),
        );
        assert!(line.starts_with(&expected), "{line} vs {expected}");
        // The text row shows the same key values and count.
        let shown = match addr {
            "" => k["symbol_from"].as_str().unwrap().to_string(),
            a => format!("+{a}"),
        };
        assert!(
            text.lines()
                .any(|l| l.contains(&format!(" {n} ")) && l.contains(&shown)),
            "no text row for {line}"
        );
    }
    // A file without branch stacks is refused (exit 2).
    let out = common::culprit()
        .args(["report", "--branch", "-i"])
        .arg(corpus("google-perf_data_converter/perf.data.busy.0-3.4"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no event of the file has branch stacks"));
}
