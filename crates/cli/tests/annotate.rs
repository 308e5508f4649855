//! `culprit annotate`: agreement with `perf annotate` and with `culprit report --sort
//! ip|srcline` on live cpu-clock recordings; inclusive cost on calls from call chains;
//! de-skid on crafted profiles whose sample IPs are real instructions of the workloads
//! (placed with a realistic skid distribution, since this machine has no PMU); and live
//! hardware de-skid tests, gated on a PMU.
//!
//! Instruction addresses are found with `objdump -d`, independently of culprit's own
//! disassembler. Every test that opens perf events takes `common::pmu_lock()`.

use crate::common;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;

use culprit_analysis::annotate::{annotate, AnnotateOptions, Target};
use culprit_decode::model::{CpuMode, Dso, DsoKind, EventInfo, Location, Profile, Sample};
use culprit_symbols::{Symbolizer, SymbolizerOptions};
use serde_json::Value;

fn pos(
    lines: &[common::ObjdumpInsn],
    pred: impl Fn(&common::ObjdumpInsn) -> bool,
    what: &str,
) -> usize {
    lines
        .iter()
        .position(pred)
        .unwrap_or_else(|| panic!("no {what} in {lines:#?}"))
}

fn event(name: &str, attr_type: u32, config: u64) -> EventInfo {
    EventInfo {
        name: name.to_string(),
        attr_type,
        config,
        config1: 0,
        config2: 0,
        period_or_freq: 10007,
        freq: false,
        sample_type: 0x107,
        precise_ip: 0,
        pmu: Some("cpu".to_string()),
        samples: 0,
        period: 0,
        lost: 0,
        read_format: 0,
        attr_flags: 0,
        sample_regs_user: 0,
        sample_stack_user: 0,
        branch_sample_type: 0,
        ids: Vec::new(),
    }
}

/// A profile of one ELF DSO with the given events and no samples yet.
fn crafted_profile(bin: &Path, events: Vec<EventInfo>) -> Profile {
    let path = bin.display().to_string();
    Profile {
        events,
        strings: vec!["workload".to_string()],
        dsos: vec![Dso {
            short_name: path.rsplit('/').next().unwrap_or(&path).to_string(),
            path,
            build_id: None,
            kind: DsoKind::Elf,
            pid: None,
        }],
        ..Profile::default()
    }
}

/// Adds `n` samples of event `ev` at SVMA `svma` of DSO 0.
fn add_samples(p: &mut Profile, sym: &mut Symbolizer, ev: u16, svma: u64, n: u64, exact: bool) {
    let off = sym
        .svma_to_file_offset(p, 0, svma)
        .unwrap_or_else(|| panic!("{svma:#x} is not in a PT_LOAD segment"));
    for _ in 0..n {
        let t = p.samples.len() as u64;
        p.samples.push(Sample {
            event: ev,
            time: t,
            pid: 100,
            tid: 100,
            cpu: 0,
            period: 10007,
            ip: 0x5555_0000_0000 + off,
            cpumode: CpuMode::User,
            exact_ip: exact,
            comm: 0,
            location: Location {
                dso: Some(0),
                file_offset: off,
            },
            ..Default::default()
        });
        let e = &mut p.events[usize::from(ev)];
        e.samples += 1;
        e.period += 10007;
    }
}

/// Runs annotate on a crafted profile; returns per event: (raw, deskid) by SVMA.
type Columns = HashMap<String, (BTreeMap<u64, u64>, BTreeMap<u64, u64>)>;

fn annotate_crafted(p: &Profile, func: &str) -> Columns {
    let mut sym = Symbolizer::new(SymbolizerOptions::default());
    let ann = annotate(
        p,
        &mut sym,
        &AnnotateOptions {
            target: Target::Symbol(func.to_string()),
            deskid: true,
            ..AnnotateOptions::default()
        },
    )
    .expect("annotate");
    assert_eq!(ann.functions.len(), 1, "{func}: {:?}", ann.candidates);
    let f = &ann.functions[0];
    assert!(f.disassembled);
    let mut out = Columns::new();
    for (i, e) in f.events.iter().enumerate() {
        let mut raw = BTreeMap::new();
        let mut de = BTreeMap::new();
        for r in &f.insns {
            if r.samples[i] > 0 {
                raw.insert(r.insn.addr, r.samples[i]);
            }
            if r.deskid[i] > 0 {
                de.insert(r.insn.addr, r.deskid[i]);
            }
        }
        out.insert(e.name.clone(), (raw, de));
    }
    out
}

/// Places `dist` (SVMA, samples) for every event, runs annotate and checks: the raw column
/// is exactly what was placed, de-skid keeps the total, precise samples stay, and at least
/// 80% of the samples land on `culprit`.
fn check_deskid(bin: &Path, func: &str, events: Vec<EventInfo>, dist: &[(u64, u64)], culprit: u64) {
    let names: Vec<String> = events.iter().map(|e| e.name.clone()).collect();
    let mut p = crafted_profile(bin, events);
    let mut sym = Symbolizer::new(SymbolizerOptions::default());
    let precise_at = dist.iter().find(|(a, _)| *a != culprit).map(|d| d.0);
    for ev in 0..names.len() as u16 {
        for &(a, n) in dist {
            add_samples(&mut p, &mut sym, ev, a, n, false);
        }
        // A few precise samples (EXACT_IP) away from the culprit: they must not move.
        if let Some(a) = precise_at {
            add_samples(&mut p, &mut sym, ev, a, 3, true);
        }
    }
    let cols = annotate_crafted(&p, func);
    let total: u64 = dist.iter().map(|d| d.1).sum::<u64>() + 3;
    for name in &names {
        let (raw, de) = &cols[name];
        let mut expect: BTreeMap<u64, u64> = BTreeMap::new();
        for &(a, n) in dist {
            *expect.entry(a).or_insert(0) += n;
        }
        if let Some(a) = precise_at {
            *expect.entry(a).or_insert(0) += 3;
        }
        expect.retain(|_, v| *v > 0);
        assert_eq!(raw, &expect, "{name}: raw column must be the sampled IPs");
        assert_eq!(
            de.values().sum::<u64>(),
            total,
            "{name}: de-skid keeps the total"
        );
        let on = de.get(&culprit).copied().unwrap_or(0);
        eprintln!("{func}: {name}: {on} of {total} samples on {culprit:#x} after de-skid");
        assert!(
            on * 100 >= total * 80,
            "{name} in {func}: {on} of {total} samples on the culprit {culprit:#x} after \
             de-skid (need 80%): {de:x?}"
        );
        if let Some(a) = precise_at {
            assert!(
                de.get(&a).copied().unwrap_or(0) >= 3,
                "{name}: the precise samples at {a:#x} moved: {de:x?}"
            );
        }
    }
}

/// The culprit load of the -O0 matrix multiply (`matrix_b[k * n + j]`, the load right before
/// `mulss`) and the skid the issue measured: 44% on the addss after it, 30% on the store
/// after that, 9% on the mulss, 0% on the load; the rest on the stack reload, the loop
/// increment, the loop-condition block and the head of the next iteration (the rule follows
/// the fall-through and back-edge path there), and the `a` load's own skid.
fn matrix_layout() -> (PathBuf, Vec<(u64, u64)>, u64) {
    let bin = common::workload("simple_classic");
    let f = common::objdump_function(&bin, "multiply_matrices");
    let mul = pos(&f, |l| l.mnem == "mulss", "mulss");
    let load = &f[mul - 1];
    assert!(
        load.mnem == "movss" && load.ops.starts_with("(%r"),
        "the instruction before mulss should be the register-addressed load: {load:?}"
    );
    let at = |k: usize| f[mul + k].addr;
    assert_eq!(f[mul + 2].mnem, "addss", "{f:#?}");
    // The inner loop's back edge (`jl` to the head of the loop body).
    let back = pos(
        &f,
        |l| l.mnem.starts_with('j') && l.addr > load.addr,
        "inner loop branch",
    );
    let head = u64::from_str_radix(f[back].ops.split_whitespace().next().unwrap(), 16).unwrap();
    let head = pos(&f, |l| l.addr == head, "inner loop head");
    let dist = vec![
        (at(2), 440),       // addss
        (at(3), 300),       // store of the sum
        (at(0), 90),        // mulss
        (at(1), 70),        // reload of the sum from the stack
        (at(4), 30),        // k++ (addl)
        (at(5), 20),        // loop condition block
        (f[head].addr, 10), // next iteration, across the back edge
        (f[head + 1].addr, 10),
        (f[mul - 4].addr, 30), // after the `a` load: goes to that load, not the culprit
        (load.addr, 0),
    ];
    (bin, dist, load.addr)
}

#[test]
fn test_deskid_matrix_cache_fill_and_dtlb_samples_go_to_the_culprit_load() {
    let (bin, dist, culprit) = matrix_layout();
    check_deskid(
        &bin,
        "multiply_matrices",
        vec![
            event("ls_dmnd_fills_from_sys.all", 4, 0xff43),
            event("ls_l1_d_tlb_miss.all", 4, 0xff45),
            event("L1-dcache-load-misses", 3, 0x10000),
            event("dTLB-load-misses", 3, 0x10003),
        ],
        &dist,
        culprit,
    );
}

#[test]
fn test_deskid_pointer_chase_samples_go_to_the_chasing_load() {
    let bin = common::workload("pointer_chase");
    let f = common::objdump_function(&bin, "chase");
    // The load `mov (%rdi,%rdx,8),%rdx`: an indexed, register-addressed load.
    let load = pos(
        &f,
        |l| l.mnem == "mov" && l.ops.contains(",8)"),
        "chasing load",
    );
    let jcc = pos(
        &f,
        |l| l.mnem.starts_with('j') && l.addr > f[load].addr,
        "loop branch",
    );
    let mut dist = vec![(f[load].addr, 60)]; // skid past the loop branch: next iteration
    let shares = [500, 250, 100, 50];
    for (k, s) in (load + 1..=jcc).zip(shares) {
        dist.push((f[k].addr, s));
    }
    // After the loop (another block, reached by falling out of it: back to the load).
    dist.push((f[jcc + 1].addr, 40));
    check_deskid(
        &bin,
        "chase",
        vec![
            event("ls_any_fills_from_sys.all", 4, 0xff44),
            event("dTLB-load-misses", 3, 0x10003),
        ],
        &dist,
        f[load].addr,
    );
}

#[test]
fn test_deskid_branchy_mispredictions_go_to_the_data_dependent_branch() {
    let bin = common::workload("branchy");
    let f = common::objdump_function(&bin, "count_odd");
    // `test $0x1,%dl` then the data-dependent jcc.
    let test = pos(
        &f,
        |l| l.mnem == "test" && l.ops.starts_with("$0x1,"),
        "test $0x1",
    );
    let jcc = test + 1;
    assert!(f[jcc].mnem.starts_with('j'), "{:?}", f[jcc]);
    let target = u64::from_str_radix(f[jcc].ops.split_whitespace().next().unwrap(), 16).unwrap();
    let t = pos(&f, |l| l.addr == target, "branch target");
    let fall = jcc + 1;
    // The loop latch: where the fall-through path's jmp goes (the odd/even paths join).
    let jmp = pos(
        &f,
        |l| l.mnem == "jmp" && l.addr > f[fall].addr,
        "jmp after the fall-through path",
    );
    let latch = u64::from_str_radix(f[jmp].ops.split_whitespace().next().unwrap(), 16).unwrap();
    let dist = vec![
        (f[t].addr, 400),
        (f[fall].addr, 350),
        (f[t + 1].addr, 80),
        (f[fall + 1].addr, 70),
        (latch, 50),
        (f[jcc].addr, 0),
        // The load heading the branch's block: its predecessor's branch is the loop's
        // exit test, so these (wrongly, by design) go there.
        (f[test - 1].addr, 50),
    ];
    check_deskid(
        &bin,
        "count_odd",
        vec![
            event("branch-misses", 0, 5),
            event("ex_ret_brn_misp", 4, 0xc3),
        ],
        &dist,
        f[jcc].addr,
    );
}

#[test]
fn test_deskid_leaves_cycles_and_instructions_in_place() {
    let (bin, dist, _) = matrix_layout();
    let mut p = crafted_profile(
        &bin,
        vec![event("cycles", 0, 0), event("instructions", 0, 1)],
    );
    let mut sym = Symbolizer::new(SymbolizerOptions::default());
    for ev in 0..2 {
        for &(a, n) in &dist {
            add_samples(&mut p, &mut sym, ev, a, n, false);
        }
    }
    let cols = annotate_crafted(&p, "multiply_matrices");
    for name in ["cycles", "instructions"] {
        let (raw, de) = &cols[name];
        assert_eq!(raw, de, "{name} must not move");
    }
}

fn culprit_cmd() -> Command {
    common::culprit()
}

fn json_lines(out: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(out)
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
        .collect()
}

fn annotate_json(file: &Path, args: &[&str]) -> Vec<Value> {
    let out = common::run_ok(
        culprit_cmd()
            .arg("annotate")
            .arg("-i")
            .arg(file)
            .args(args)
            .args(["--format", "json"]),
    );
    json_lines(&out.stdout)
}

/// ip → samples of an event, from an annotate JSON object.
fn ann_samples(f: &Value, ev: &str) -> BTreeMap<u64, u64> {
    let mut m = BTreeMap::new();
    for i in f["instructions"].as_array().unwrap() {
        let ip =
            u64::from_str_radix(i["ip"].as_str().unwrap().trim_start_matches("0x"), 16).unwrap();
        m.insert(ip, i["samples"][ev].as_u64().unwrap());
    }
    m
}

/// Parses `perf annotate --stdio` lines `  12.34 :   12af:   movss ...` → ip → percent.
fn parse_perf_annotate(text: &str) -> BTreeMap<u64, f64> {
    let mut m = BTreeMap::new();
    for l in text.lines() {
        let Some((pct, rest)) = l.split_once(':') else {
            continue;
        };
        let Ok(pct) = pct.trim().parse::<f64>() else {
            continue;
        };
        let Some((addr, _)) = rest.trim_start().split_once(':') else {
            continue;
        };
        if let Ok(a) = u64::from_str_radix(addr.trim(), 16) {
            m.insert(a, pct);
        }
    }
    m
}

fn record_perf(bin: &Path, out: &Path, extra: &[&str], args: &[&str]) {
    common::run_ok(
        common::perf()
            .args(["record", "-q", "-o"])
            .arg(out)
            .args(extra)
            .arg("--")
            .arg(bin)
            .args(args),
    );
}

#[test]
fn test_annotate_raw_column_agrees_with_perf_annotate_and_report() {
    let _lock = common::pmu_lock();
    if !common::require_perf("test_annotate_raw_column_agrees_with_perf_annotate_and_report") {
        return;
    }
    let dir = common::scratch("annotate-perf");
    let bin = common::workload("simple_classic");
    let file = dir.join("perf.data");
    record_perf(&bin, &file, &["-e", "cpu-clock", "-c", "250000"], &["350"]);
    check_against_perf_and_report(&file);
    // The same on a file written by culprit record.
    let file = dir.join("culprit.data");
    common::run_ok(
        culprit_cmd()
            .args(["record", "-q", "-e", "cpu-clock", "-c", "250000", "-o"])
            .arg(&file)
            .arg("--")
            .arg(&bin)
            .arg("350"),
    );
    check_against_perf_and_report(&file);
}

/// perf annotate (local hits) and culprit report --sort ip|srcline against culprit
/// annotate of multiply_matrices in `file`.
fn check_against_perf_and_report(file: &Path) {
    let file = file.to_path_buf();
    let funcs = annotate_json(&file, &["multiply_matrices"]);
    assert_eq!(funcs.len(), 1);
    let f = &funcs[0];
    assert_eq!(f["symbol"], "multiply_matrices");
    assert_eq!(f["events"][0], "cpu-clock");
    let ours = ann_samples(f, "cpu-clock");
    let total: u64 = ours.values().sum();
    assert!(
        total >= 100,
        "too few samples in multiply_matrices: {total}"
    );
    assert_eq!(f["event_info"][0]["samples"].as_u64(), Some(total));

    // perf annotate, percentages of the function's samples (local hits).
    let out = common::run_ok(
        common::perf()
            .args(["annotate", "--stdio", "--percent-type", "local-hits", "-i"])
            .arg(&file)
            .arg("multiply_matrices"),
    );
    let perf = parse_perf_annotate(&String::from_utf8_lossy(&out.stdout));
    assert!(!perf.is_empty(), "could not parse perf annotate");
    let ours_ips: Vec<u64> = ours.keys().copied().collect();
    let perf_ips: Vec<u64> = perf.keys().copied().collect();
    assert_eq!(
        ours_ips, perf_ips,
        "instruction boundaries differ from perf's"
    );
    for (ip, p) in &perf {
        let mine = ours[ip] as f64 * 100.0 / total as f64;
        assert!(
            (mine - p).abs() <= 0.006,
            "{ip:#x}: perf annotate {p:.2}%, culprit {mine:.4}%"
        );
    }

    // culprit report --sort ip: the same samples per instruction.
    let rep = common::run_ok(
        culprit_cmd()
            .args(["report", "--sort", "ip", "--format", "json", "-i"])
            .arg(&file),
    );
    let rep: Value = serde_json::from_slice(&rep.stdout).unwrap();
    let (start, end) = (hex(&f["start"]), hex(&f["end"]));
    let mut by_ip = BTreeMap::new();
    for row in rep["rows"].as_array().unwrap() {
        if row["keys"]["dso"] != "simple_classic" {
            continue;
        }
        let ip = hex(&row["keys"]["ip"]);
        if ip >= start && ip < end {
            by_ip.insert(ip, row["samples"]["cpu-clock"].as_u64().unwrap());
        }
    }
    let sampled: BTreeMap<u64, u64> = ours
        .iter()
        .filter(|(_, &v)| v > 0)
        .map(|(&k, &v)| (k, v))
        .collect();
    assert_eq!(by_ip, sampled, "report --sort ip and annotate disagree");

    // culprit report --sort srcline: the same samples per source line.
    let rep = common::run_ok(
        culprit_cmd()
            .args(["report", "--sort", "srcline", "--format", "json", "-i"])
            .arg(&file),
    );
    let rep: Value = serde_json::from_slice(&rep.stdout).unwrap();
    let mut lines: BTreeMap<String, u64> = BTreeMap::new();
    for i in f["instructions"].as_array().unwrap() {
        if let Some(s) = i["source"].as_str() {
            *lines.entry(s.to_string()).or_insert(0) += i["samples"]["cpu-clock"].as_u64().unwrap();
        }
    }
    assert!(lines.contains_key("simple_classic.c:26"), "{lines:?}");
    for row in rep["rows"].as_array().unwrap() {
        let key = row["keys"]["srcline"].as_str().unwrap_or("");
        if let Some(&n) = lines.get(key) {
            assert_eq!(
                row["samples"]["cpu-clock"].as_u64(),
                Some(n),
                "report --sort srcline and annotate disagree on {key}"
            );
        }
    }
}

fn hex(v: &Value) -> u64 {
    let s = v.as_str().unwrap_or_else(|| panic!("not a string: {v}"));
    u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap()
}

#[test]
fn test_annotate_text_source_intel_addr_and_inclusive_calls() {
    let _lock = common::pmu_lock();
    let dir = common::scratch("annotate-callchain");
    let bin = common::workload("simple_classic");
    let file = dir.join("cc.data");
    common::run_ok(
        culprit_cmd()
            .args([
                "record",
                "-q",
                "-g",
                "-e",
                "cpu-clock",
                "-c",
                "250000",
                "-o",
            ])
            .arg(&file)
            .arg("--")
            .arg(&bin)
            .arg("300"),
    );
    // main's call to multiply_matrices carries multiply_matrices' samples.
    let mm = &annotate_json(&file, &["multiply_matrices"])[0];
    let mm_samples = mm["event_info"][0]["samples"].as_u64().unwrap();
    assert!(mm_samples >= 50, "{mm_samples}");
    let main = &annotate_json(&file, &["main"])[0];
    assert_eq!(main["has_callchains"], true);
    let call = main["instructions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| {
            let a = i["asm"].as_str().unwrap();
            a.starts_with("call") && a.ends_with("<multiply_matrices>")
        })
        .expect("a call to multiply_matrices in main");
    let incl = call["inclusive"]["cpu-clock"].as_u64().unwrap();
    assert!(
        incl * 10 >= mm_samples * 9
            && incl <= mm_samples + main["event_info"][0]["file_samples"].as_u64().unwrap(),
        "inclusive {incl} vs {mm_samples} samples in multiply_matrices"
    );

    // --addr finds the function; --intel changes the syntax; --source interleaves lines.
    let load = mm["instructions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["asm"].as_str().unwrap().starts_with("mulss"))
        .unwrap();
    let addr = load["ip"].as_str().unwrap();
    let by_addr = annotate_json(&file, &["--addr", addr]);
    assert_eq!(by_addr[0]["symbol"], "multiply_matrices");
    // The `DSO+0xOFFSET` form report prints for frames without a symbol (ld maps a PIE's
    // text at file offset == address).
    let by_offset = annotate_json(&file, &["--addr", &format!("simple_classic+{addr}")]);
    assert_eq!(by_offset[0]["symbol"], "multiply_matrices");
    let out = common::run_ok(
        culprit_cmd()
            .args([
                "annotate", "--intel", "--source", "--deskid", "--width", "0", "-i",
            ])
            .arg(&file)
            .arg("multiply_matrices"),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("mulss xmm0,xmm1"), "{text}");
    assert!(text.contains("simple_classic.c:26"), "{text}");
    assert!(text.contains("sum = sum + matrix_a[i * n + k] * matrix_b[k * n + j];"));
    assert!(
        text.contains("no event here moves"),
        "cpu-clock does not move: {text}"
    );
    assert!(!text.contains("~cpu-clock"), "{text}");
    assert!(text.contains(">>"), "hot rows are marked");

    // Without SYMBOL: the hottest functions, hottest first.
    let hot = annotate_json(&file, &["--top", "2"]);
    assert!(!hot.is_empty() && hot.len() <= 2);
    assert_eq!(hot[0]["symbol"], "multiply_matrices");

    // Unknown function and event: exit 2 with a message naming what exists.
    let out = culprit_cmd()
        .args(["annotate", "-i"])
        .arg(&file)
        .arg("no_such_function")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("multiply_matrices"), "{err}");
    let out = culprit_cmd()
        .args(["annotate", "-e", "cycles", "-i"])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn test_annotate_several_events_and_derived_columns_on_a_perf_file() {
    let _lock = common::pmu_lock();
    if !common::require_perf("test_annotate_several_events_and_derived_columns_on_a_perf_file") {
        return;
    }
    let dir = common::scratch("annotate-two-events");
    let bin = common::workload("pointer_chase");
    let file = dir.join("two.data");
    record_perf(
        &bin,
        &file,
        &["-e", "cpu-clock,task-clock", "-c", "200000"],
        &["16", "2000000"],
    );
    let f = &annotate_json(&file, &["chase"])[0];
    let events: Vec<&str> = f["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.as_str().unwrap())
        .collect();
    assert_eq!(events, ["cpu-clock", "task-clock"]);
    for e in &events {
        let n: u64 = ann_samples(f, e).values().sum();
        assert!(n > 0, "{e}: no samples in chase");
        let s = &f["skid"][*e];
        assert_eq!(s["class"], "stays");
        let spread = s["spread90"].as_u64().unwrap();
        assert!((1..=12).contains(&spread), "{s}");
    }
    // Neither cycles nor instructions: no CPI column.
    assert!(f["derived"].as_array().unwrap().is_empty());
}

/// Vendor-appropriate event names for a data-cache fill and a DTLB miss.
fn memory_events() -> (&'static str, &'static str) {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    if cpuinfo.contains("AuthenticAMD") {
        ("ls_dmnd_fills_from_sys.all", "ls_l1_d_tlb_miss.all")
    } else {
        ("L1-dcache-load-misses", "dTLB-load-misses")
    }
}

/// Records `bin args` with `events` (fixed period) and checks that de-skid puts ≥ 80% of
/// `func`'s samples of each event on `culprit`, leaving the raw column as recorded.
fn live_deskid(name: &str, bin: &Path, args: &[&str], events: &[&str], func: &str, culprit: u64) {
    let dir = common::scratch(name);
    let file = dir.join("hw.data");
    common::run_ok(
        culprit_cmd()
            .args([
                "record",
                "-q",
                "-e",
                &events.join(","),
                "-c",
                "100003",
                "-o",
            ])
            .arg(&file)
            .arg("--")
            .arg(bin)
            .args(args),
    );
    let raw = &annotate_json(&file, &[func])[0];
    let de = &annotate_json(&file, &[func, "--deskid"])[0];
    for e in events {
        let r = ann_samples(raw, e);
        assert_eq!(
            r,
            ann_samples(de, e),
            "{e}: --deskid changed the raw column"
        );
        let total: u64 = r.values().sum();
        assert!(total >= 50, "{e}: only {total} samples in {func}");
        let mut on = 0;
        for i in de["instructions"].as_array().unwrap() {
            if hex(&i["ip"]) == culprit {
                on = i["deskid"][*e].as_u64().unwrap();
            }
        }
        eprintln!("{name}: {e}: {on}/{total} on {culprit:#x} after de-skid; raw {r:x?}");
        assert!(
            on * 100 >= total * 80,
            "{e}: {on} of {total} de-skidded samples on {culprit:#x}: {}",
            de["skid"][*e]
        );
    }
}

#[test]
fn test_live_deskid_matrix_and_pointer_chase_memory_events() {
    let _lock = common::pmu_lock();
    if !common::require_hardware_pmu("test_live_deskid_matrix_and_pointer_chase_memory_events") {
        return;
    }
    let (fill, dtlb) = memory_events();
    let (bin, _, load) = matrix_layout();
    live_deskid(
        "annotate-hw-matrix",
        &bin,
        &["700"],
        &[fill, dtlb],
        "multiply_matrices",
        load,
    );
    let bin = common::workload("pointer_chase");
    let f = common::objdump_function(&bin, "chase");
    let load = pos(
        &f,
        |l| l.mnem == "mov" && l.ops.contains(",8)"),
        "chasing load",
    );
    live_deskid(
        "annotate-hw-chase",
        &bin,
        &["64", "10000000"],
        &[fill, dtlb],
        "chase",
        f[load].addr,
    );
}

#[test]
fn test_live_deskid_branchy_branch_misses() {
    let _lock = common::pmu_lock();
    if !common::require_hardware_pmu("test_live_deskid_branchy_branch_misses") {
        return;
    }
    let bin = common::workload("branchy");
    let f = common::objdump_function(&bin, "count_odd");
    let test = pos(
        &f,
        |l| l.mnem == "test" && l.ops.starts_with("$0x1,"),
        "test $0x1",
    );
    live_deskid(
        "annotate-hw-branchy",
        &bin,
        &["4", "20"],
        &["branch-misses"],
        "count_odd",
        f[test + 1].addr,
    );
}

#[test]
fn test_annotate_cli_deskid_and_derived_columns_on_a_crafted_file() {
    let (bin, dist, culprit) = matrix_layout();
    // In this PIE the text segment's file offsets equal its SVMAs (checked below through
    // the raw column, which must show exactly the placed addresses).
    let mut samples: Vec<(u64, u64, bool)> = dist.iter().map(|&(a, n)| (a, n, false)).collect();
    let precise_at = dist[0].0;
    samples.push((precise_at, 3, true));
    let dir = common::scratch("annotate-crafted");
    let file = dir.join("crafted.data");
    let fill = "ls_dmnd_fills_from_sys.all";
    common::write_crafted_file(
        &file,
        &bin,
        0x5555_5555_4000,
        &[(fill, 4, 0xff43), ("cycles", 0, 0), ("instructions", 0, 1)],
        &samples,
    );
    let f = &annotate_json(&file, &["multiply_matrices", "--deskid"])[0];
    assert_eq!(f["deskid_is_estimate"], true);
    let total: u64 = samples.iter().map(|s| s.1).sum();
    for ev in [fill, "cycles", "instructions"] {
        let raw = ann_samples(f, ev);
        for &(a, n) in &dist {
            let extra = if a == precise_at { 3 } else { 0 };
            assert_eq!(raw[&a], n + extra, "{ev}: raw column at {a:#x}");
        }
        assert_eq!(raw.values().sum::<u64>(), total, "{ev}");
        let mut de = BTreeMap::new();
        for i in f["instructions"].as_array().unwrap() {
            de.insert(hex(&i["ip"]), i["deskid"][ev].as_u64().unwrap());
        }
        assert_eq!(de.values().sum::<u64>(), total, "{ev}: totals kept");
        if ev == fill {
            assert!(de[&culprit] * 100 >= total * 80, "{ev}: {de:x?}");
            assert_eq!(f["skid"][ev]["class"], "memory");
            assert_eq!(f["skid"][ev]["precise"], 3);
            assert_eq!(f["skid"][ev]["spread90_deskid"], 1);
            assert!(f["skid"][ev]["spread90"].as_u64().unwrap() >= 3);
            assert!(de[&precise_at] >= 3, "precise samples stay");
        } else {
            assert_eq!(de, raw, "{ev} never moves");
            assert_eq!(f["skid"][ev]["class"], "stays");
        }
    }
    let derived: Vec<&str> = f["derived"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["name"].as_str().unwrap())
        .collect();
    assert_eq!(derived, ["CPI", &format!("{fill} MPKI")]);
    // Same periods for all events: CPI is 1 wherever instructions has samples.
    assert_eq!(f["derived"][0]["function"].as_f64(), Some(1.0));

    let out = common::run_ok(
        culprit_cmd()
            .args(["annotate", "--deskid", "--width", "0", "-i"])
            .arg(&file)
            .arg("multiply_matrices"),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("~ls_dmnd_fills_"), "{text}");
    assert!(text.contains("memory event: skids"), "{text}");
    assert!(text.contains("ESTIMATES"), "{text}");
    assert!(text.contains("CPI"), "{text}");
}

#[test]
fn test_deskid_locations_per_sample_match_the_annotate_column() {
    let (bin, dist, culprit) = matrix_layout();
    let mut p = crafted_profile(
        &bin,
        vec![event("dTLB-load-misses", 3, 0x10003), event("cycles", 0, 0)],
    );
    let mut sym = Symbolizer::new(SymbolizerOptions::default());
    for ev in 0..2 {
        for &(a, n) in &dist {
            add_samples(&mut p, &mut sym, ev, a, n, false);
        }
        add_samples(&mut p, &mut sym, ev, dist[0].0, 3, true);
    }
    let locs = culprit_analysis::annotate::deskid_locations(&p, &mut sym);
    assert_eq!(locs.len(), p.samples.len());
    // Per event: SVMA → samples after re-attribution, to compare with annotate's column.
    let mut per: [BTreeMap<u64, u64>; 2] = Default::default();
    for (s, l) in p.samples.iter().zip(&locs) {
        let svma = sym
            .resolve(&p, culprit_symbols::Query::of(*l, -1))
            .svma
            .unwrap();
        *per[usize::from(s.event)].entry(svma).or_insert(0) += 1;
        if s.event == 1 || s.exact_ip {
            assert_eq!(*l, s.location, "cycles and precise samples never move");
        }
    }
    let cols = annotate_crafted(&p, "multiply_matrices");
    assert_eq!(per[0], cols["dTLB-load-misses"].1);
    assert_eq!(per[1], cols["cycles"].0);
    let total: u64 = per[0].values().sum();
    assert!(per[0][&culprit] * 100 >= total * 80, "{:x?}", per[0]);
}

#[test]
fn test_annotate_source_names_inlined_functions() {
    annotate_inlined_in_layout("annotate-inline", &[], |_, _| {});
}

/// Split DWARF (`-gsplit-dwarf`): the inlined calls are in the `.dwo` beside the program
/// (the executable keeps skeleton units and line tables only).
#[test]
fn test_annotate_inlined_functions_from_split_dwarf_dwo() {
    annotate_inlined_in_layout("annotate-inline-dwo", &["-gsplit-dwarf"], |dir, _| {
        let dwos = files_ending_in(dir, ".dwo");
        assert!(
            !dwos.is_empty(),
            "gcc -gsplit-dwarf wrote no .dwo in {dir:?}"
        );
    });
}

/// Split DWARF packed by `dwp` into `EXE.dwp`, the `.dwo` files deleted.
#[test]
fn test_annotate_inlined_functions_from_split_dwarf_dwp() {
    annotate_inlined_in_layout("annotate-inline-dwp", &["-gsplit-dwarf"], |dir, bin| {
        let dwos = files_ending_in(dir, ".dwo");
        let mut dwp = bin.as_os_str().to_os_string();
        dwp.push(".dwp");
        // LLVM's dwp: binutils' (gold) crashes on the DWARF 5 that GCC 12 writes.
        common::run_ok(
            Command::new("llvm-dwp")
                .arg("-e")
                .arg(bin)
                .arg("-o")
                .arg(&dwp),
        );
        for f in dwos {
            std::fs::remove_file(f).unwrap();
        }
    });
}

/// The files of `dir` whose names end in `suffix`.
fn files_ending_in(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(suffix))
        .collect()
}

/// Builds a small -O2 program whose hot function inlines a helper, with `cflags`, lets
/// `arrange(dir, program)` move its debug info, records it and checks that annotate names
/// the inlined function and its source line.
fn annotate_inlined_in_layout(test: &str, cflags: &[&str], arrange: impl Fn(&Path, &Path)) {
    let _lock = common::pmu_lock();
    let dir = common::scratch(test);
    // A small -O2 program whose hot function inlines a helper (written here, built with cc).
    let src = dir.join("inl.c");
    std::fs::write(
        &src,
        "#include <stdio.h>\n\
         #include <stdlib.h>\n\
         static inline unsigned mix(unsigned x) {\n\
         \x20   x ^= x >> 7;\n\
         \x20   return x * 2654435761u;\n\
         }\n\
         __attribute__((noinline)) unsigned work(unsigned n) {\n\
         \x20   unsigned h = 1;\n\
         \x20   for (unsigned i = 0; i < n; i++)\n\
         \x20       h = mix(h + i);\n\
         \x20   return h;\n\
         }\n\
         int main(int argc, char **argv) {\n\
         \x20   unsigned n = argc > 1 ? (unsigned)atoi(argv[1]) : 300000000u;\n\
         \x20   printf(\"%u\\n\", work(n));\n\
         \x20   return 0;\n\
         }\n",
    )
    .unwrap();
    let bin = dir.join("inl");
    common::run_ok(
        Command::new("cc")
            .current_dir(&dir)
            .args(["-O2", "-g", "-fno-omit-frame-pointer"])
            .args(cflags)
            .arg("-o")
            .arg(&bin)
            .arg(&src),
    );
    arrange(&dir, &bin);
    let file = dir.join("inl.data");
    common::run_ok(
        culprit_cmd()
            .args(["record", "-q", "-e", "cpu-clock", "-o"])
            .arg(&file)
            .arg("--")
            .arg(&bin),
    );
    let f = &annotate_json(&file, &["work"])[0];
    let inlined = f["instructions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["inline"].as_array().unwrap().len() >= 2)
        .unwrap_or_else(|| panic!("no inlined instruction in work: {f}"));
    let frames = inlined["inline"].as_array().unwrap();
    assert_eq!(frames[0]["function"], "mix", "{frames:?}");
    assert_eq!(frames[1]["function"], "work", "{frames:?}");
    assert!(
        inlined["source"].as_str().unwrap().starts_with("inl.c:"),
        "{inlined}"
    );
    let out = common::run_ok(
        culprit_cmd()
            .args(["annotate", "--source", "-i"])
            .arg(&file)
            .arg("work"),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("(inlined mix into work at inl.c:10)"),
        "{text}"
    );
    assert!(text.contains("h = mix(h + i);"), "{text}");
}

/// The text of `culprit annotate ARGS` fitted to 80 columns (`--width 80` unless ARGS give
/// a width: a pipe alone is never cut).
fn annotate_text(args: &[&str]) -> String {
    let mut cmd = culprit_cmd();
    cmd.env_remove("COLUMNS").arg("annotate").args(args);
    if !args.contains(&"--width") {
        cmd.args(["--width", "80"]);
    }
    let out = common::run_ok(&mut cmd);
    String::from_utf8(out.stdout).expect("UTF-8 text")
}

/// The table header (`# … Address … Disassembly`) and the instruction rows under it.
fn annotate_table(text: &str) -> (&str, Vec<&str>) {
    let mut lines = text.lines();
    let header = lines
        .by_ref()
        .find(|l| l.starts_with("# ") && l.contains("Address"))
        .unwrap_or_else(|| panic!("no table header: {text}"));
    let rows = lines.take_while(|l| !l.is_empty()).collect();
    (header, rows)
}

/// Asserts that every line has at most `width` characters.
fn assert_fits(text: &str, width: usize) {
    for l in text.lines() {
        assert!(
            l.chars().count() <= width,
            "{} characters: {l:?}",
            l.chars().count()
        );
    }
}

#[test]
fn test_annotate_raw_insn_column_fits_a_10_byte_instruction_and_counts_align_right() {
    let _lock = common::pmu_lock();
    let dir = common::scratch("annotate-raw-insn");
    let bin = common::workload("odd_names");
    let file = dir.join("odd.data");
    common::run_ok(
        culprit_cmd()
            .args(["record", "-q", "-e", "cpu-clock", "-c", "250000", "-o"])
            .arg(&file)
            .arg("--")
            .arg(&bin)
            .arg("300"),
    );
    let f = file.to_str().unwrap();
    let text = annotate_text(&[
        "-i",
        f,
        "--show-raw-insn",
        "--width",
        "0",
        "wide_immediates",
    ]);
    let (header, rows) = annotate_table(&text);
    let bytes_at = header.find("Bytes").expect("a Bytes column");
    let asm_at = header.find("Disassembly").expect("a Disassembly column");
    let mut wide = 0;
    for r in &rows {
        // Two blanks between the widest bytes and every mnemonic.
        assert!(r.len() > asm_at, "{r:?}\n{text}");
        assert_eq!(&r[asm_at - 2..asm_at], "  ", "{r:?}\n{text}");
        assert!(!r[asm_at..].starts_with(' '), "{r:?}\n{text}");
        if r[asm_at..].starts_with("movabs $0x1122334455667788") {
            assert!(
                r[bytes_at..asm_at]
                    .trim_end()
                    .ends_with("88 77 66 55 44 33 22 11"),
                "{r:?}"
            );
            assert_eq!(r[bytes_at..asm_at].split_whitespace().count(), 10, "{r:?}");
            wide += 1;
        }
    }
    assert_eq!(wide, 1, "one 10-byte movabs in wide_immediates:\n{text}");

    // Sample counts are right-aligned under the event's name.
    let count_end = header.find("cpu-clock").unwrap() + "cpu-clock".len();
    let counted: Vec<&&str> = rows
        .iter()
        .filter(|r| !r[..count_end].trim().is_empty())
        .collect();
    assert!(counted.len() >= 2, "{text}");
    for r in &counted {
        let cell = &r[..count_end];
        assert!(
            cell.ends_with(|c: char| c.is_ascii_digit()) && r[count_end..].starts_with(' '),
            "count not right-aligned: {r:?}\n{text}"
        );
    }

    // The default text fits 80 columns; JSON validates against its schema.
    assert_fits(
        &annotate_text(&["-i", f, "--show-raw-insn", "--source", "wide_immediates"]),
        80,
    );
    let json = common::run_ok(
        culprit_cmd()
            .args([
                "annotate", "--format", "json", "--deskid", "--top", "2", "-i",
            ])
            .arg(&file),
    );
    common::validate_json_schema("annotate", &String::from_utf8_lossy(&json.stdout));
}

#[test]
fn test_annotate_text_fits_80_columns_on_fixtures() {
    let fixtures = common::repo_root().join("crates/decode/tests/fixtures");
    for name in ["two-events.data", "dwarf.data", "cpu-clock-g.data"] {
        let f = fixtures.join(name);
        let f = f.to_str().unwrap();
        for extra in [&[][..], &["--source", "--show-raw-insn", "--deskid"][..]] {
            let mut args = vec!["-i", f, "--top", "2"];
            args.extend_from_slice(extra);
            let text = annotate_text(&args);
            assert!(text.contains("Address"), "{name}: {text}");
            assert_fits(&text, 80);
        }
        let json = common::run_ok(
            culprit_cmd()
                .args(["annotate", "--format", "json", "--top", "2", "-i"])
                .arg(f),
        );
        common::validate_json_schema("annotate", &String::from_utf8_lossy(&json.stdout));
    }
    // --width 0 never cuts: the two-events file's long event name stays whole.
    let f = fixtures.join("two-events.data");
    let text = annotate_text(&["-i", f.to_str().unwrap(), "--width", "0"]);
    assert!(text.contains("# task-clock/period=100000/ "), "{text}");
    assert!(text.lines().any(|l| l.chars().count() > 80), "{text}");
    // CSV is not a format of annotate.
    let out = culprit_cmd()
        .args(["annotate", "--format", "csv", "-i"])
        .arg(&f)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("annotate has no --format csv"));
}

/// AArch64 code annotates as `aarch64-linux-gnu-objdump -d` disassembles it: a crafted
/// recording (HEADER_ARCH aarch64) puts samples in every `.text` function of the
/// cross-compiled workloads; each function's instructions (address and mnemonic) equal
/// objdump's, and every sample lands on the instruction it was placed at.
#[test]
fn test_annotate_aarch64_code_equals_objdump() {
    let test = "test_annotate_aarch64_code_equals_objdump";
    let objdump = "aarch64-linux-gnu-objdump";
    let features = culprit_collect::perfdata::Features {
        arch: Some("aarch64".to_string()),
        ..Default::default()
    };
    let dir = common::scratch("annotate-aarch64");
    let (mut compared, mut plt_calls) = (0, 0);
    for name in ["simple_classic", "pointer_chase", "branchy", "calltree"] {
        let Some(bin) = common::workload_aarch64(test, name) else {
            return;
        };
        let functions = common::objdump_text_functions(objdump, &bin);
        assert!(
            functions.iter().any(|f| f == "main"),
            "{name}: {functions:?}"
        );
        let listings: Vec<Vec<common::ObjdumpInsn>> = functions
            .iter()
            .map(|f| common::objdump_function_with(objdump, &bin, f))
            .collect();
        // In these PIEs the text segment's file offsets equal its SVMAs (LOAD at offset 0,
        // vaddr 0), which the crafted file's placement relies on.
        let mut placed: BTreeMap<u64, u64> = BTreeMap::new();
        for (k, insns) in listings.iter().enumerate() {
            placed.insert(insns[0].addr, 1);
            *placed.entry(insns[insns.len() / 2].addr).or_default() += k as u64 + 2;
        }
        let samples: Vec<(u64, u64, bool)> = placed.iter().map(|(&a, &n)| (a, n, false)).collect();
        let file = dir.join(format!("{name}.data"));
        common::write_crafted_file_with(
            &file,
            &bin,
            0xaaaa_0000_0000,
            &[("cpu-clock", 1, 0)],
            &[samples],
            &features,
        );
        let annotated = annotate_json(&file, &["--top", "1000"]);
        for (func, insns) in functions.iter().zip(&listings) {
            let f = annotated
                .iter()
                .find(|f| f["symbol"] == func.as_str())
                .unwrap_or_else(|| panic!("{name}: no annotation of {func}"));
            assert_eq!(f["disassembled"], true, "{name} {func}");
            let got: Vec<(u64, String)> = f["instructions"]
                .as_array()
                .unwrap()
                .iter()
                .map(|i| {
                    let asm = i["asm"].as_str().unwrap();
                    (hex(&i["ip"]), asm.split(' ').next().unwrap().to_string())
                })
                .collect();
            // objdump runs on to the next label (alignment padding); the function is its
            // symbol's extent.
            let end = hex(&f["end"]);
            let expected: Vec<(u64, String)> = insns
                .iter()
                .filter(|i| i.addr < end)
                .map(|i| (i.addr, i.mnem.clone()))
                .collect();
            assert_eq!(got, expected, "{name} {func}: culprit vs {objdump}");
            // Calls name their targets as objdump does, PLT stubs included (`<malloc@plt>`).
            for (i, o) in f["instructions"].as_array().unwrap().iter().zip(insns) {
                if o.mnem == "bl" {
                    let label = &o.ops[o.ops.find('<').unwrap()..];
                    let asm = i["asm"].as_str().unwrap();
                    assert!(asm.ends_with(label), "{name} {func}: {asm} vs {}", o.ops);
                    plt_calls += usize::from(label.ends_with("@plt>"));
                }
            }
            for (ip, n) in ann_samples(f, "cpu-clock") {
                assert_eq!(
                    n,
                    placed.get(&ip).copied().unwrap_or(0),
                    "{name} {func} {ip:#x}"
                );
            }
            compared += expected.len();
        }
    }
    assert!(compared > 500, "only {compared} instructions compared");
    assert!(plt_calls > 10, "only {plt_calls} PLT calls compared");
}
