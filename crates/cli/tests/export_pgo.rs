//! `culprit export --format bolt|autofdo` against independent readers:
//!
//! - the taken branches (`B`) and straight-line ranges (`F`) of the BOLT profile of the
//!   corpus's LBR files equal what `perf script -F brstackoff,dso` gives, entry by entry;
//! - the BOLT profile of the IBS fixtures equals the IBS taken branches `perf report -D`
//!   prints (IbsOpRip, OpBrnTaken, OpBrnMisp, IbsBrTarget);
//! - on a crafted LBR file of a local binary, `perf2bolt -pa` (LLVM BOLT) reads the BOLT
//!   profile and finds the loop and the call in it, and `llvm-profdata` reads the AutoFDO
//!   profile, whose line counts equal those computed from objdump's instructions and
//!   binutils' addr2line lines;
//! - a file without branch data gives an error naming what to record.

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

fn corpus(name: &str) -> PathBuf {
    common::repo_root()
        .join("crates/decode/tests/fixtures/real-perf-data")
        .join(name)
}

fn fixture(name: &str) -> PathBuf {
    common::repo_root()
        .join("crates/decode/tests/fixtures")
        .join(name)
}

/// Kernel addresses start here on x86-64.
const KERNEL_BASE: u64 = 0xffff_8000_0000_0000;

/// One end of a BOLT line: an address in the binary or `X:0`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum End {
    In(u64),
    External,
}

/// A BOLT pre-aggregated profile, parsed strictly (every line must be `B` or `F` as
/// perf2bolt reads them): `B` (from, to) → (count, mispredicted), `F` (start, end) → count.
#[derive(Debug, Default, PartialEq)]
struct Bolt {
    branches: BTreeMap<(End, End), (u64, u64)>,
    ranges: BTreeMap<(u64, u64), u64>,
}

fn parse_bolt(text: &str) -> Bolt {
    let hex = |s: &str| -> u64 {
        assert!(
            !s.is_empty()
                && s.chars()
                    .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()),
            "not lower-case hex without 0x: {s:?}"
        );
        u64::from_str_radix(s, 16).unwrap()
    };
    let end = |s: &str| {
        if s == "X:0" {
            End::External
        } else {
            End::In(hex(s))
        }
    };
    let num = |s: &str| -> u64 {
        assert!(s.chars().all(|c| c.is_ascii_digit()), "not a count: {s:?}");
        s.parse().unwrap()
    };
    let mut b = Bolt::default();
    for line in text.lines() {
        let f: Vec<&str> = line.split(' ').collect();
        match f.as_slice() {
            ["B", from, to, count, mispred] => {
                let (count, mispred) = (num(count), num(mispred));
                assert!(count > 0 && mispred <= count, "{line}");
                let old = b.branches.insert((end(from), end(to)), (count, mispred));
                assert!(old.is_none(), "line repeated: {line}");
            }
            ["F", start, end, count] => {
                let (s, e) = (hex(start), hex(end));
                assert!(s <= e, "{line}");
                let old = b.ranges.insert((s, e), num(count));
                assert!(old.is_none(), "line repeated: {line}");
            }
            _ => panic!("not a B or F line of perf2bolt's pre-aggregated format: {line:?}"),
        }
    }
    b
}

/// One entry of `perf script -F brstackoff,dso`.
#[derive(Debug)]
struct PerfEntry {
    from: u64,
    from_dso: String,
    to: u64,
    to_dso: String,
    mispred: bool,
}

/// `0xF(dso)/0xT(dso)/P/...` → entry.
fn parse_brstackoff(token: &str) -> PerfEntry {
    let addr_dso = |s: &str| -> (u64, String, usize) {
        let open = s.find('(').unwrap();
        let close = s.find(")/").unwrap();
        let a = u64::from_str_radix(s[..open].trim_start_matches("0x"), 16).unwrap();
        (a, s[open + 1..close].to_string(), close + 2)
    };
    let (from, from_dso, n) = addr_dso(token);
    let rest = &token[n..];
    let (to, to_dso, m) = addr_dso(rest);
    PerfEntry {
        from,
        from_dso,
        to,
        to_dso,
        mispred: rest[m..].starts_with('M'),
    }
}

/// The branch stacks of a file as perf reads them, most recent entry first.
fn perf_stacks(file: &Path) -> Vec<Vec<PerfEntry>> {
    let out = common::run_ok(
        common::perf()
            .args(["script", "-F", "brstackoff,dso", "-i"])
            .arg(file),
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.split_whitespace().map(parse_brstackoff).collect())
        .filter(|s: &Vec<PerfEntry>| !s.is_empty())
        .collect()
}

fn is_kernel(dso: &str, addr: u64) -> bool {
    dso.starts_with("[kernel")
        || dso.ends_with(".ko")
        || (dso == "[unknown]" && addr >= KERNEL_BASE)
}

/// What the BOLT profile of `dso` must hold, computed from perf's entries by the rules of
/// docs/export.md: branches touching the binary (other end `X:0`, user/kernel crossings
/// left out) and ranges between consecutive entries inside it, forwards, under 64 KiB.
fn expected_bolt(stacks: &[Vec<PerfEntry>], dso: &str) -> Bolt {
    let mut b = Bolt::default();
    for stack in stacks {
        for e in stack {
            let (fi, ti) = (e.from_dso == dso, e.to_dso == dso);
            if !(fi || ti) {
                continue;
            }
            if !(fi && ti) {
                let (od, oa) = if fi {
                    (&e.to_dso, e.to)
                } else {
                    (&e.from_dso, e.from)
                };
                if is_kernel(od, oa) {
                    continue;
                }
            }
            let end = |inside: bool, a: u64| if inside { End::In(a) } else { End::External };
            let v = b
                .branches
                .entry((end(fi, e.from), end(ti, e.to)))
                .or_default();
            v.0 += 1;
            v.1 += u64::from(e.mispred);
        }
        for pair in stack.windows(2) {
            let (newer, older) = (&pair[0], &pair[1]);
            if older.to_dso == dso
                && newer.from_dso == dso
                && older.to <= newer.from
                && newer.from - older.to < 64 * 1024
            {
                *b.ranges.entry((older.to, newer.from)).or_default() += 1;
            }
        }
    }
    b
}

fn export(file: &Path, format: &str, extra: &[&str], out: &Path) -> serde_json::Value {
    let o = common::run_ok(
        common::culprit()
            .args(["export", "--format", format, "--summary", "json", "-o"])
            .arg(out)
            .args(extra)
            .arg("-i")
            .arg(file),
    );
    let text = String::from_utf8_lossy(&o.stdout).to_string();
    common::validate_json_schema("export", &text);
    let mut json: serde_json::Value = serde_json::from_str(&text).expect("summary JSON");
    assert_eq!(json["format"], format);
    // The PGO part, with the summary's records and samples for the tests.
    let mut pgo = json["pgo"].take();
    pgo["records"] = json["records"].take();
    pgo
}

#[test]
fn test_bolt_profile_of_lbr_files_equals_perf_brstackoff() {
    if !common::require_perf("test_bolt_profile_of_lbr_files_equals_perf_brstackoff") {
        return;
    }
    let dir = common::scratch("export-pgo-lbr");
    // Not the x86 chrome files of perf 3.x (callgraph_and_branch, raw_callgraph_branch):
    // without that kernel's symbols perf 6.1 resolves some user addresses of samples taken
    // in the kernel into [kernel.kallsyms], so its DSO names are no oracle there.
    for name in [
        "google-autofdo/test.lbr",
        "google-autofdo/propeller_sample_1.perfdata1",
        "google-perf_data_converter/perf.data.branch-4.14",
        "google-perf_data_converter/perf.data.branch_stack_hw_index",
    ] {
        let file = corpus(name);
        let out = dir.join("out.preagg");
        let summary = export(&file, "bolt", &[], &out);
        let dso = summary["dso"].as_str().unwrap().to_string();
        // The binaries of these files are not on this machine: file offsets, as perf's.
        assert_eq!(summary["addresses"], "file_offset", "{name}");
        let ours = parse_bolt(&std::fs::read_to_string(&out).unwrap());
        let stacks = perf_stacks(&file);
        let theirs = expected_bolt(&stacks, &dso);
        assert!(!theirs.branches.is_empty(), "{name}: no branch of {dso}");
        // Totals first (a readable failure), then every line.
        let total = |b: &Bolt| b.branches.values().map(|v| v.0).sum::<u64>();
        assert_eq!(
            total(&ours),
            total(&theirs),
            "{name}: taken branches of {dso}"
        );
        assert_eq!(
            ours.ranges.values().sum::<u64>(),
            theirs.ranges.values().sum::<u64>(),
            "{name}: ranges of {dso}"
        );
        assert_eq!(ours, theirs, "{name}");
        // Every entry is written or counted as left out.
        let entries: u64 = stacks.iter().map(|s| s.len() as u64).sum();
        assert_eq!(summary["lbr_entries"].as_u64(), Some(entries), "{name}");
        assert_eq!(
            total(&ours) + summary["other_branches"].as_u64().unwrap(),
            entries,
            "{name}"
        );
    }
}

/// The IBS taken branches `perf report -D` prints: (IbsOpRip, IbsBrTarget) as file offsets
/// of the one mapping, with the mispredicted bit.
fn perf_ibs_branches(file: &Path) -> Vec<(u64, u64, bool)> {
    let out = common::run_ok(common::perf().args(["report", "-D", "-i"]).arg(file));
    let text = String::from_utf8_lossy(&out.stdout);
    let (mut start, mut pgoff) = (0u64, 0u64);
    let mut out = Vec::new();
    let (mut rip, mut taken, mut misp) = (None, false, false);
    let hex = |s: &str| u64::from_str_radix(s.trim().trim_start_matches("0x"), 16).unwrap();
    for l in text.lines() {
        if let Some(rest) = l
            .split("PERF_RECORD_MMAP")
            .nth(1)
            .filter(|_| l.contains(": [0x"))
        {
            // `PERF_RECORD_MMAP pid/tid: [0xSTART(0xLEN) @ PGOFF]: ...`
            let inner = rest.split('[').nth(1).unwrap();
            start = hex(inner.split('(').next().unwrap());
            pgoff = hex(inner.split("@ ").nth(1).unwrap().split(']').next().unwrap());
        } else if let Some(v) = l.strip_prefix("IbsOpRip:") {
            rip = Some(hex(v));
        } else if l.starts_with("ibs_op_data:") {
            taken = l.contains("BrnRet 1") && l.contains("OpBrnTaken 1");
            misp = l.contains("OpBrnMisp 1");
        } else if let Some(v) = l.strip_prefix("IbsBrTarget:") {
            if let (Some(r), true) = (rip, taken) {
                out.push((r - start + pgoff, hex(v) - start + pgoff, misp));
            }
        } else if l.contains("PERF_RECORD_SAMPLE") {
            (rip, taken, misp) = (None, false, false);
        }
    }
    out
}

#[test]
fn test_bolt_profile_of_ibs_fixtures_equals_perf_report_dump() {
    if !common::require_perf("test_bolt_profile_of_ibs_fixtures_equals_perf_report_dump") {
        return;
    }
    let dir = common::scratch("export-pgo-ibs");
    for name in [
        "ibs-fam17h_m31_zen2.data",
        "ibs-fam19h_m01_zen3.data",
        "ibs-fam19h_m11_zen4.data",
        "ibs-fam19h_m21_zen3.data",
    ] {
        let file = fixture(name);
        let out = dir.join("out.preagg");
        let summary = export(&file, "bolt", &[], &out);
        assert_eq!(summary["source"], "ibs", "{name}");
        let ours = parse_bolt(&std::fs::read_to_string(&out).unwrap());
        let mut theirs = Bolt::default();
        for (from, to, misp) in perf_ibs_branches(&file) {
            let v = theirs
                .branches
                .entry((End::In(from), End::In(to)))
                .or_default();
            v.0 += 1;
            v.1 += u64::from(misp);
        }
        assert!(
            !theirs.branches.is_empty(),
            "{name}: perf shows no IBS taken branch"
        );
        assert_eq!(ours, theirs, "{name}");
    }
}

#[test]
fn test_pgo_export_of_a_file_without_branch_data_names_what_to_record() {
    let dir = common::scratch("export-pgo-none");
    for format in ["bolt", "autofdo"] {
        let out = common::culprit()
            .args(["export", "--format", format, "-o"])
            .arg(dir.join("out"))
            .arg("-i")
            .arg(common::repo_root().join("crates/cli/tests/fixtures/cpu-clock-ppp.data"))
            .output()
            .unwrap();
        assert!(!out.status.success(), "{format}");
        let err = String::from_utf8_lossy(&out.stderr);
        for needed in ["perf record -b", "-j any", "ibs_op", "cpu-clock"] {
            assert!(err.contains(needed), "{format}: {needed} not in {err}");
        }
    }
}

// ---- A crafted LBR recording of a local binary (this machine has no LBR) ----

/// PERF_SAMPLE_BRANCH_USER | PERF_SAMPLE_BRANCH_ANY (`perf record -j any,u`).
const ANY_USER: u64 = 1 | 1 << 3;
/// Where the crafted process maps the binary (whole file from offset 0).
const BASE: u64 = 0x5555_5555_4000;

/// A crafted sample: its branch stack, most recent first, as SVMAs (from, to, mispredicted),
/// and how many times it is written.
type CraftedSample = (Vec<(u64, u64, bool)>, usize);

/// Writes a `perf record -j any,u` file: process 100 runs `bin` at [`BASE`]; each sample is
/// `(branch stack most recent first as SVMAs (from, to, mispredicted), times)`.
fn write_lbr_file(path: &Path, bin: &Path, samples: &[CraftedSample]) {
    use culprit_collect::perfdata::{Attr, Features, FileAttr, PerfDataWriter};
    use culprit_decode::abi::{attr_flag, misc, sample_type};
    let st = sample_type::IDENTIFIER
        | sample_type::IP
        | sample_type::TID
        | sample_type::TIME
        | sample_type::PERIOD
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
        name: "cycles:u".to_string(),
        ids: vec![1],
    }];
    let file = std::fs::File::create(path).unwrap();
    let mut w = PerfDataWriter::new(file, attrs).unwrap();
    let mut buf = Vec::new();
    common::push_process(&mut buf, &a0, b"calltree", bin, BASE);
    let mut time = 10u64;
    for (stack, times) in samples {
        for _ in 0..*times {
            let ip = BASE + stack[0].1;
            let mut body: Vec<u64> = vec![1, ip, 100 | 100 << 32, time, 100003];
            body.push(stack.len() as u64);
            for &(from, to, mispred) in stack {
                // flags: bit 0 mispredicted, bit 1 predicted.
                body.extend([BASE + from, BASE + to, if mispred { 1 } else { 2 }]);
            }
            common::push_sample(&mut buf, misc::USER, &body);
            time += 1;
        }
    }
    w.write_data(&buf).unwrap();
    w.finish(&Features::default()).unwrap();
    // culprit's writer has no branch_sample_type: set it in the attr (offset 72), found
    // through the header's attrs section (offset at byte 24).
    let mut bytes = std::fs::read(path).unwrap();
    let attrs_at = u64::from_le_bytes(bytes[24..32].try_into().unwrap()) as usize;
    bytes[attrs_at + 72..attrs_at + 80].copy_from_slice(&ANY_USER.to_le_bytes());
    std::fs::write(path, bytes).unwrap();
}

/// calltree's `c`: its loop's backward jump and target, its `ret`, and `b`'s call to it.
struct Calltree {
    bin: PathBuf,
    call: u64,
    c_start: u64,
    ret_site: u64,
    loop_jump: u64,
    loop_head: u64,
    ret: u64,
}

fn calltree() -> Calltree {
    let bin = common::workload("calltree");
    let c = common::objdump_function(&bin, "c");
    let b = common::objdump_function(&bin, "b");
    let call_at = b
        .iter()
        .position(|i| i.mnem.starts_with("call") && i.ops.contains("<c>"))
        .expect("b calls c");
    let jump = c
        .iter()
        .find(|i| {
            i.mnem.starts_with('j')
                && u64::from_str_radix(i.ops.split_whitespace().next().unwrap_or(""), 16)
                    .is_ok_and(|t| t < i.addr)
        })
        .expect("c's loop jumps back");
    let head = u64::from_str_radix(jump.ops.split_whitespace().next().unwrap(), 16).unwrap();
    let ret = c.iter().find(|i| i.mnem.starts_with("ret")).unwrap().addr;
    Calltree {
        bin: bin.clone(),
        call: b[call_at].addr,
        c_start: c[0].addr,
        ret_site: b[call_at + 1].addr,
        loop_jump: jump.addr,
        loop_head: head,
        ret,
    }
}

/// 5 samples: the call into `c`, then 7 loop iterations; 3 samples: 3 iterations, the
/// last one falling out of the loop to `ret`.
fn calltree_samples(t: &Calltree) -> Vec<CraftedSample> {
    let mut entering = vec![(t.loop_jump, t.loop_head, false); 7];
    entering.push((t.call, t.c_start, false));
    let mut leaving = vec![(t.ret, t.ret_site, false)];
    leaving.extend(vec![(t.loop_jump, t.loop_head, true); 3]);
    vec![(entering, 5), (leaving, 3)]
}

/// LLVM BOLT from Debian's bolt-19 (or another LLVM's), if installed. Run with
/// `-aggregate-only` it is perf2bolt (which it is only when named exactly `perf2bolt`).
fn perf2bolt() -> Option<PathBuf> {
    [
        "perf2bolt",
        "llvm-bolt-19",
        "llvm-bolt",
        "/usr/lib/llvm-19/bin/llvm-bolt",
    ]
    .iter()
    .map(PathBuf::from)
    .find(|p| {
        Command::new(p)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

fn require_tool(test: &str, tool: Option<PathBuf>, name: &str) -> Option<PathBuf> {
    let why = format!("{name} is not installed");
    if common::need(test, tool.is_some(), &why) {
        tool
    } else {
        None
    }
}

#[test]
fn test_bolt_profile_of_crafted_lbr_file_is_read_by_perf2bolt() {
    let test = "test_bolt_profile_of_crafted_lbr_file_is_read_by_perf2bolt";
    let Some(p2b) = require_tool(test, perf2bolt(), "perf2bolt (Debian bolt-19)") else {
        return;
    };
    let t = calltree();
    let dir = common::scratch("export-pgo-perf2bolt");
    let data = dir.join("lbr.data");
    write_lbr_file(&data, &t.bin, &calltree_samples(&t));
    let preagg = dir.join("calltree.preagg");
    let summary = export(&data, "bolt", &["--dso", "calltree"], &preagg);
    assert_eq!(summary["addresses"], "svma");
    let ours = parse_bolt(&std::fs::read_to_string(&preagg).unwrap());
    let i = End::In;
    assert_eq!(ours.branches[&(i(t.loop_jump), i(t.loop_head))], (44, 9));
    assert_eq!(ours.branches[&(i(t.call), i(t.c_start))], (5, 0));
    assert_eq!(ours.branches[&(i(t.ret), i(t.ret_site))], (3, 0));
    assert_eq!(ours.ranges[&(t.loop_head, t.loop_jump)], 30 + 6);
    assert_eq!(ours.ranges[&(t.c_start, t.loop_jump)], 5);
    assert_eq!(ours.ranges[&(t.loop_head, t.ret)], 3);

    let fdata = dir.join("calltree.fdata");
    let out = common::run_ok(
        Command::new(&p2b)
            .args(["-aggregate-only", "-pa"])
            .arg("-p")
            .arg(&preagg)
            .arg("-o")
            .arg(&fdata)
            .arg(&t.bin),
    );
    let log = String::from_utf8_lossy(&out.stdout);
    assert!(log.contains("read 6 aggregated"), "{log}");
    // Every range runs through code BOLT disassembled: the addresses are the binary's.
    assert!(
        log.contains("traces mismatching disassembled function contents: 0 ("),
        "{log}"
    );
    // fdata: `1 FUNC OFFSET 1 FUNC OFFSET MISPREDS COUNT` per branch, offsets in the function.
    let fdata = std::fs::read_to_string(&fdata).unwrap();
    let line = format!(
        "1 c {:x} 1 c {:x} 9 44",
        t.loop_jump - t.c_start,
        t.loop_head - t.c_start
    );
    assert!(fdata.lines().any(|l| l == line), "no `{line}` in\n{fdata}");
    let call = format!("1 b {:x} 1 c 0 0 5", t.call - common_start(&t.bin, "b"));
    assert!(fdata.lines().any(|l| l == call), "no `{call}` in\n{fdata}");
}

fn common_start(bin: &Path, func: &str) -> u64 {
    common::objdump_function(bin, func)[0].addr
}

/// Line of each address, from binutils' addr2line (discriminators dropped).
fn addr2line(bin: &Path, addrs: &[u64]) -> Vec<u32> {
    let out = common::run_ok(
        Command::new("addr2line")
            .arg("-e")
            .arg(bin)
            .args(addrs.iter().map(|a| format!("{a:x}"))),
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            let l = l.split(" (").next().unwrap();
            l.rsplit(':').next().unwrap().parse().unwrap()
        })
        .collect()
}

/// `llvm-profdata` (Debian llvm), if installed.
fn llvm_profdata() -> Option<PathBuf> {
    [
        "llvm-profdata",
        "llvm-profdata-19",
        "llvm-profdata-16",
        "llvm-profdata-14",
    ]
    .iter()
    .map(PathBuf::from)
    .find(|p| {
        Command::new(p)
            .arg("--help")
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

#[test]
fn test_autofdo_profile_of_crafted_lbr_file_is_read_by_llvm_profdata() {
    let test = "test_autofdo_profile_of_crafted_lbr_file_is_read_by_llvm_profdata";
    let Some(profdata) = require_tool(test, llvm_profdata(), "llvm-profdata (Debian llvm)") else {
        return;
    };
    let t = calltree();
    let dir = common::scratch("export-pgo-autofdo");
    let data = dir.join("lbr.data");
    write_lbr_file(&data, &t.bin, &calltree_samples(&t));
    let prof = dir.join("calltree.afdo");
    let summary = export(&data, "autofdo", &[], &prof);
    assert_eq!(summary["source"], "lbr");
    let text = std::fs::read_to_string(&prof).unwrap();

    // Expected from objdump and addr2line: each instruction of c runs as often as the
    // ranges covering it; a line counts its most executed instruction.
    let ranges = [
        (t.c_start, t.loop_jump, 5u64),
        (t.loop_head, t.loop_jump, 36),
        (t.loop_head, t.ret, 3),
    ];
    let insns: Vec<u64> = common::objdump_function(&t.bin, "c")
        .iter()
        .map(|i| i.addr)
        .filter(|&a| a <= t.ret)
        .collect();
    let lines = addr2line(&t.bin, &insns);
    let source = std::fs::read_to_string(common::repo_root().join("workloads/calltree.c")).unwrap();
    let decl = 1 + source
        .lines()
        .position(|l| l.contains("unsigned long c(unsigned long units)"))
        .unwrap() as u32;
    let mut want: BTreeMap<u32, u64> = BTreeMap::new();
    for (a, line) in insns.iter().zip(&lines) {
        let n: u64 = ranges
            .iter()
            .filter(|(s, e, _)| s <= a && a <= e)
            .map(|r| r.2)
            .sum();
        if n > 0 {
            let w = want.entry(line - decl).or_default();
            *w = (*w).max(n);
        }
    }
    let total: u64 = want.values().sum();
    let head = format!("c:{total}:5");
    let mut got: BTreeMap<u32, u64> = BTreeMap::new();
    let mut in_c = false;
    for l in text.lines() {
        if !l.starts_with(' ') {
            in_c = l.starts_with("c:");
            if in_c {
                assert_eq!(l, head, "{text}");
            }
        } else if in_c {
            let (off, count) = l.trim().split_once(": ").unwrap();
            got.insert(off.parse().unwrap(), count.parse().unwrap());
        }
    }
    assert_eq!(got, want, "{text}");
    // b calls c 5 times at the call's line.
    let b_decl = 1 + source
        .lines()
        .position(|l| l.contains("unsigned long b(unsigned long units)"))
        .unwrap() as u32;
    let call_line = addr2line(&t.bin, &[t.call])[0];
    assert!(
        text.lines()
            .any(|l| l == format!(" {}: 5 c:5", call_line - b_decl)),
        "{text}"
    );

    // LLVM reads it back: the same functions, totals and head samples.
    let out = common::run_ok(
        Command::new(&profdata)
            .args(["show", "--sample", "--all-functions"])
            .arg(&prof),
    );
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(
        shown.contains(&format!(
            "Function: c: {total}, 5, {} sampled lines",
            want.len()
        )),
        "{shown}"
    );
    assert!(
        shown.contains("Function: b: 5, 0, 1 sampled lines"),
        "{shown}"
    );
}

#[test]
fn test_bolt_of_kernel_only_branches_needs_dso_and_writes_every_entry() {
    // `perf record -b` of lsattr on Zen 4: every branch entry is in the kernel.
    let file = corpus("google-perf_data_converter/perf.data.branch_stack_spec");
    let dir = common::scratch("export-pgo-kernel");
    let out = dir.join("out.preagg");
    let o = common::culprit()
        .args(["export", "--format", "bolt", "-o"])
        .arg(&out)
        .arg("-i")
        .arg(&file)
        .output()
        .unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("--dso '[kernel.kallsyms]'"), "{err}");
    let summary = export(&file, "bolt", &["--dso", "[kernel.kallsyms]"], &out);
    let ours = parse_bolt(&std::fs::read_to_string(&out).unwrap());
    let entries = summary["lbr_entries"].as_u64().unwrap();
    assert!(entries > 0);
    assert_eq!(ours.branches.values().map(|v| v.0).sum::<u64>(), entries);
    assert!(ours
        .branches
        .keys()
        .all(|(f, t)| matches!((f, t), (End::In(a), End::In(b)) if *a >= KERNEL_BASE && *b >= KERNEL_BASE)));
}

#[test]
fn test_pgo_exports_of_every_corpus_file_end_cleanly() {
    // Every real file, with or without branch data: an export or an error, never a crash.
    let dir = common::scratch("export-pgo-corpus");
    let mut files: Vec<PathBuf> = Vec::new();
    for sub in std::fs::read_dir(corpus("")).unwrap() {
        let sub = sub.unwrap().path();
        if sub.is_dir() {
            files.extend(std::fs::read_dir(sub).unwrap().map(|f| f.unwrap().path()));
        }
    }
    files.sort();
    assert!(files.len() > 20);
    let mut exported = 0;
    for file in &files {
        for format in ["bolt", "autofdo"] {
            let out = common::culprit()
                .args(["export", "--format", format, "--summary", "none", "-o"])
                .arg(dir.join("out"))
                .arg("-i")
                .arg(file)
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            let code = out.status.code();
            assert!(
                matches!(code, Some(0..=2)) && !err.contains("panicked"),
                "{format} of {}: {code:?}\n{err}",
                file.display()
            );
            if code != Some(2) {
                exported += 1;
            } else {
                assert!(err.contains("culprit: error:"), "{err}");
            }
        }
    }
    // The LBR files export to bolt (their binaries are elsewhere: autofdo needs DWARF).
    assert!(exported >= 5, "{exported}");
}
