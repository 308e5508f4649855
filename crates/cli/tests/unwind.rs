//! DWARF unwinding of sampled user stacks (`--call-graph dwarf`): the `calltree` workload
//! (built without frame pointers; main -> a -> b -> c ≈ 70%, main -> d -> e ≈ 30%) recorded
//! by `perf record` and by `culprit record`, reported with `culprit report --children`, and
//! compared with the known tree and with `perf report --children`; `culprit annotate` shows
//! the inclusive cost of the unwound calls.
//!
//! Tolerances: a run has ≥ 1000 cpu-clock samples (2000 Hz for ≥ 0.5 s of CPU), so the
//! sampling error of a 70% share is ≤ 1.5 points (binomial σ ≈ 1.45 at n = 1000); the
//! workload's true split is 7:3 of identical loops, off by the calls and loop set-up only. The
//! known-tree checks allow ±6 points; the comparison with perf on the same file is exact
//! up to unwinding differences, ±1 point.

use crate::common;

use std::path::{Path, PathBuf};

use culprit_decode::model::{CpuMode, Profile, Sample};
use culprit_decode::unwind::{x86_64_reg, UnwindInput, UserStackUnwinder};
use serde_json::Value;

/// The functions of the known tree and their expected children share (percent).
const TREE: [(&str, f64); 6] = [
    ("main", 100.0),
    ("a", 70.0),
    ("b", 70.0),
    ("c", 70.0),
    ("d", 30.0),
    ("e", 30.0),
];

/// `culprit report --children --sort sym --format json [extra]`: children percent by symbol.
fn culprit_children(file: &Path, extra: &[&str]) -> Vec<(String, f64, f64)> {
    let out = common::run_ok(
        common::culprit()
            .args(["report", "--unknown", "address", "-i"])
            .arg(file)
            .args(["--children", "--sort", "sym", "--format", "json"])
            .args(extra),
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("report JSON");
    let rows = v["rows"].as_array().expect("rows");
    rows.iter()
        .map(|r| {
            let pct = |k: &str| -> f64 {
                r[k].as_object()
                    .and_then(|m| m.values().next())
                    .and_then(Value::as_f64)
                    .unwrap_or(f64::NAN)
            };
            (
                r["keys"]["sym"].as_str().unwrap_or("").to_string(),
                pct("children_percent"),
                pct("percent"),
            )
        })
        .collect()
}

fn children_of(rows: &[(String, f64, f64)], sym: &str) -> Option<f64> {
    rows.iter().find(|r| r.0 == sym).map(|r| r.1)
}

/// `perf report --stdio --children --sort sym -g none`: (symbol, children %, self %).
fn perf_children(file: &Path) -> Vec<(String, f64, f64)> {
    let out = common::run_ok(
        common::perf()
            .args([
                "report",
                "--stdio",
                "--children",
                "--sort",
                "sym",
                "-g",
                "none",
                "-i",
            ])
            .arg(file),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let mut rows = Vec::new();
    for line in text.lines() {
        if line.starts_with('#') {
            continue;
        }
        // "    69.78%     0.00%  [.] a"
        let mut it = line.split_whitespace();
        let (Some(c), Some(s), Some(tag)) = (it.next(), it.next(), it.next()) else {
            continue;
        };
        let pct = |x: &str| x.strip_suffix('%').and_then(|p| p.parse::<f64>().ok());
        let (Some(c), Some(s)) = (pct(c), pct(s)) else {
            continue;
        };
        if !tag.starts_with('[') {
            continue;
        }
        let name: Vec<&str> = it.collect();
        rows.push((name.join(" "), c, s));
    }
    rows
}

/// Checks the known tree in a report (children percentages by symbol).
fn assert_known_tree(rows: &[(String, f64, f64)], what: &str) {
    for (sym, want) in TREE {
        let got = children_of(rows, sym)
            .unwrap_or_else(|| panic!("{what}: no row for {sym} in {rows:?}"));
        let tol = if sym == "main" { 3.0 } else { 6.0 };
        assert!(
            (got - want).abs() <= tol,
            "{what}: children of {sym} = {got:.2}%, expected {want}% ± {tol}\n{rows:?}"
        );
    }
    // The chains are consistent: every sample of c passed through a and b.
    let (a, b, c) = (
        children_of(rows, "a").unwrap_or(0.0),
        children_of(rows, "b").unwrap_or(0.0),
        children_of(rows, "c").unwrap_or(0.0),
    );
    assert!(
        (a - b).abs() < 0.5 && (b - c).abs() < 0.5,
        "{what}: a {a} b {b} c {c}"
    );
}

fn record_dir(test: &str) -> PathBuf {
    common::scratch(test)
}

#[test]
fn test_unwind_perf_dwarf_recording_matches_known_tree_and_perf() {
    if !common::require_perf("test_unwind_perf_dwarf_recording_matches_known_tree_and_perf") {
        return;
    }
    let exe = common::workload("calltree");
    let file = record_dir("unwind-perf-dwarf").join("perf.data");
    {
        let _lock = common::pmu_lock();
        common::run_ok(
            common::perf()
                .args(["record", "-q", "--call-graph", "dwarf", "-e", "cpu-clock"])
                .args(["-F", "2000", "-o"])
                .arg(&file)
                .arg("--")
                .arg(&exe),
        );
    }
    let rows = culprit_children(&file, &[]);
    assert_known_tree(&rows, "culprit report on perf record --call-graph dwarf");

    // Without unwinding the same file has no user chains: a and d vanish (the test above
    // can only pass through the unwinder).
    let plain = culprit_children(&file, &["--no-unwind"]);
    assert!(
        children_of(&plain, "a").unwrap_or(0.0) < 1.0,
        "--no-unwind still shows a(): {plain:?}"
    );

    // perf 6.1 unwinds dwarf files with libdw/libunwind: compare when it did.
    let perf = perf_children(&file);
    let perf_a = children_of(&perf, "a").unwrap_or(0.0);
    if perf_a < 10.0 {
        eprintln!("NOTE: perf report did not unwind this file (a = {perf_a}%); compared with the known tree only");
        return;
    }
    for (sym, _) in TREE {
        let ours = children_of(&rows, sym).unwrap_or(f64::NAN);
        let theirs = children_of(&perf, sym).unwrap_or(f64::NAN);
        assert!(
            (ours - theirs).abs() <= 1.0,
            "children of {sym}: culprit {ours:.2}% vs perf {theirs:.2}%\nculprit {rows:?}\nperf {perf:?}"
        );
    }
}

#[test]
fn test_unwind_culprit_dwarf_recording_matches_known_tree() {
    let exe = common::workload("calltree");
    let file = record_dir("unwind-culprit-dwarf").join("culprit.data");
    {
        let _lock = common::pmu_lock();
        common::run_ok(
            common::culprit()
                .args(["record", "-q", "--call-graph", "dwarf", "-e", "cpu-clock"])
                .args(["-F", "2000", "-o"])
                .arg(&file)
                .arg("--")
                .arg(&exe),
        );
    }
    let rows = culprit_children(&file, &[]);
    assert_known_tree(&rows, "culprit report on culprit record --call-graph dwarf");
    // annotate: the call of b() in a() carries the inclusive cost of b (≈ 70% of the file),
    // from the unwound chains; with --no-unwind it carries nothing.
    let call_incl = |extra: &[&str]| -> (u64, u64) {
        let out = common::run_ok(
            common::culprit()
                .args(["annotate", "-i"])
                .arg(&file)
                .args(["a", "--format", "json"])
                .args(extra),
        );
        let line = String::from_utf8_lossy(&out.stdout);
        let v: Value = serde_json::from_str(line.lines().next().unwrap_or("")).expect("JSON");
        let file_samples = v["event_info"][0]["file_samples"].as_u64().unwrap_or(0);
        let incl = v["instructions"]
            .as_array()
            .expect("instructions")
            .iter()
            .filter(|i| i["asm"].as_str().is_some_and(|a| a.starts_with("call")))
            .filter_map(|i| i["inclusive"]["cpu-clock"].as_u64())
            .sum::<u64>();
        (incl, file_samples)
    };
    let (incl, total) = call_incl(&[]);
    let share = 100.0 * incl as f64 / total.max(1) as f64;
    assert!(
        (share - 70.0).abs() <= 6.0,
        "annotate a: call b inclusive {incl} of {total} samples ({share:.1}%)"
    );
    // Without unwinding, a() is on no chain at all: annotate finds nothing to show.
    let out = common::culprit()
        .args(["annotate", "-i"])
        .arg(&file)
        .args(["a", "--format", "json", "--no-unwind"])
        .output()
        .expect("spawn");
    assert!(
        !out.status.success()
            && String::from_utf8_lossy(&out.stderr).contains("no samples in a function named 'a'"),
        "annotate --no-unwind: {}",
        String::from_utf8_lossy(&out.stderr)
    );

    // -g none turns unwinding off like --no-unwind.
    let plain = culprit_children(&file, &["-g", "none"]);
    assert!(
        children_of(&plain, "a").unwrap_or(0.0) < 1.0,
        "-g none still unwinds: {plain:?}"
    );

    // The decoder's hook contract, checked with a recording unwinder on the same file: it is
    // called for user samples with the sampled IP in the IP register, the stack copy, and a
    // mapping lookup that finds the workload; what it returns is the user part of the chain.
    struct Probe {
        calls: u64,
        ip_is_mapped_exe: u64,
        exe: String,
        stack_bytes: u64,
    }
    impl UserStackUnwinder for Probe {
        fn unwind(&mut self, input: &UnwindInput<'_>, out: &mut Vec<u64>) {
            self.calls += 1;
            let Some(ip) = input.reg(x86_64_reg::IP) else {
                return;
            };
            self.stack_bytes += input.stack.len() as u64;
            if input.map_at(ip).is_some_and(|m| m.path == self.exe) {
                self.ip_is_mapped_exe += 1;
            }
            out.push(ip);
            out.push(0x1234_5678);
        }
    }
    let mut probe = Probe {
        calls: 0,
        ip_is_mapped_exe: 0,
        exe: exe.canonicalize().unwrap().display().to_string(),
        stack_bytes: 0,
    };
    let mut user_samples = 0u64;
    let mut checked = 0u64;
    let mut on_sample = |p: &Profile, s: &Sample| {
        let chain = p.callchain(s);
        if s.cpumode == CpuMode::User {
            user_samples += 1;
            // No kernel part for user samples: the chain is [IP, the probe's fake frame].
            assert_eq!(chain.len(), 2, "chain {chain:?}");
            assert_eq!(chain[0].addr, s.ip);
            assert_eq!(chain[0].location, s.location);
            assert_eq!(chain[1].addr, 0x1234_5678);
            assert_eq!(chain[1].cpumode, CpuMode::User);
            assert!(chain[1].location.dso.is_none());
            checked += 1;
        } else if let Some(last) = chain.last() {
            // Kernel samples: the kernel part first, the unwound user part last.
            assert_eq!(last.addr, 0x1234_5678);
            assert!(chain.first().is_some_and(|f| f.cpumode == CpuMode::Kernel));
        }
    };
    culprit_decode::Reader::open(&file)
        .unwinder(&mut probe)
        .fold(&mut on_sample)
        .expect("read the recording");
    assert!(user_samples > 500, "only {user_samples} user samples");
    assert_eq!(checked, user_samples);
    assert!(probe.calls >= user_samples);
    // Nearly all samples are in the workload's own code.
    assert!(
        probe.ip_is_mapped_exe * 10 >= probe.calls * 9,
        "{} of {} IPs mapped to {}",
        probe.ip_is_mapped_exe,
        probe.calls,
        probe.exe
    );
    assert!(probe.stack_bytes > 0);
}

/// Shares one unwinder between the test and a decoder that owns its unwinder.
struct Shared(std::rc::Rc<std::cell::RefCell<culprit_symbols::unwind::DwarfUnwinder>>);

impl UserStackUnwinder for Shared {
    fn unwind(&mut self, input: &UnwindInput<'_>, out: &mut Vec<u64>) {
        self.0.borrow_mut().unwind(input, out);
    }
}

#[test]
fn test_unwind_stream_decoder_matches_file_reader() {
    if !common::require_perf("test_unwind_stream_decoder_matches_file_reader") {
        return;
    }
    let exe = common::workload("calltree");
    let file = record_dir("unwind-stream").join("pipe.data");
    {
        let _lock = common::pmu_lock();
        let out = std::fs::File::create(&file).expect("create the pipe-mode file");
        let status = common::perf()
            .args(["record", "-q", "--call-graph", "dwarf", "-e", "cpu-clock"])
            .args(["-F", "2000", "-o", "-", "--"])
            .arg(&exe)
            .arg("200")
            .stdout(out)
            .status()
            .expect("run perf record -o -");
        assert!(status.success());
    }
    let data = std::fs::read(&file).expect("read the recording");
    let opts = culprit_symbols::SymbolizerOptions::default();
    let chains =
        |p: &Profile, s: &Sample| -> Vec<u64> { p.callchain(s).iter().map(|f| f.addr).collect() };

    let mut whole = culprit_symbols::unwind::DwarfUnwinder::new(&opts);
    let mut a: Vec<Vec<u64>> = Vec::new();
    culprit_decode::Reader::from_bytes(&data)
        .unwinder(&mut whole)
        .fold(|p, s| a.push(chains(p, s)))
        .expect("read the bytes");

    let shared = std::rc::Rc::new(std::cell::RefCell::new(
        culprit_symbols::unwind::DwarfUnwinder::new(&opts),
    ));
    let mut dec = culprit_decode::StreamDecoder::new();
    dec.set_unwinder(Box::new(Shared(shared.clone())));
    let mut b: Vec<Vec<u64>> = Vec::new();
    let mut on = |p: &Profile, s: &Sample| b.push(chains(p, s));
    for chunk in data.chunks(4096) {
        dec.push(chunk, &mut on).expect("push");
    }
    dec.finish(&mut on);

    assert!(a.len() > 200, "only {} samples", a.len());
    assert_eq!(a, b, "stream and file decoding unwind differently");
    // Most samples are in c() or e(): IP, leaf's caller, main, libc start, _start…
    let deep = a.iter().filter(|c| c.len() >= 4).count();
    assert!(
        deep * 10 >= a.len() * 9,
        "{deep} of {} chains have ≥ 4 frames",
        a.len()
    );
    assert_eq!(whole.stats(), shared.borrow().stats());
    assert!(whole.stats().frames >= 4 * deep as u64);
}

/// The state of the AArch64 `calltree` stopped inside `c`'s loop under qemu-user's gdb stub:
/// the registers DWARF unwinding starts from, the top of the stack, and gdb's backtrace.
struct Aarch64Stop {
    /// x29, x30, sp, pc (perf's arm64 registers 29–32, in mask order).
    regs: [u64; 4],
    /// The stack from sp up.
    stack: Vec<u8>,
    /// gdb's backtrace past main: (pc, function), innermost first.
    backtrace: Vec<(u64, String)>,
}

/// Runs the static AArch64 `calltree` under `qemu-aarch64 -g` and stops it with
/// `gdb-multiarch` six instructions into `c` (its loop; `c` is a leaf whose return address
/// is still in x30). `None` (after a loud skip; a failure under CI) without the tools.
fn stop_aarch64_calltree(test: &str, bin: &Path, dir: &Path) -> Option<Aarch64Stop> {
    for tool in ["qemu-aarch64", "gdb-multiarch"] {
        let why = format!("no {tool} (Debian qemu-user, gdb-multiarch)");
        if !common::need(test, common::runs(tool, &["--version"]), &why) {
            return None;
        }
    }
    let dumps: Vec<(usize, PathBuf)> = [8192, 4096, 2048]
        .into_iter()
        .map(|n| (n, dir.join(format!("stack{n}.bin"))))
        .collect();
    let mut gdb_script = String::from(
        "set pagination off\nset backtrace past-main on\nbreak c\ncontinue\nstepi 6\n\
         info registers x29 x30 sp pc\nbacktrace\n",
    );
    // Smallest first: gdb stops reading its script at the first command that fails, and
    // where the stack's top is less than 8 KiB above sp (it depends on the environment's
    // size) the larger dumps fail; the largest that worked is used.
    for (n, path) in dumps.iter().rev() {
        let _ = std::fs::remove_file(path);
        gdb_script.push_str(&format!(
            "dump binary memory {} $sp $sp+{n}\n",
            path.display()
        ));
    }
    gdb_script.push_str("kill\n");
    // qemu listens once it has loaded the program: retry gdb until it connects.
    let mut last = String::from("gdb never read the registers");
    for attempt in 0..20u16 {
        let port = 20000 + (std::process::id() % 20000) as u16 + attempt;
        let mut qemu = std::process::Command::new("qemu-aarch64")
            .args(["-g", &port.to_string()])
            .arg(bin)
            .arg("1")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("spawn qemu-aarch64");
        std::thread::sleep(std::time::Duration::from_millis(300));
        let script = dir.join("stop.gdb");
        std::fs::write(&script, format!("target remote :{port}\n{gdb_script}")).unwrap();
        let out = std::process::Command::new("gdb-multiarch")
            .args(["-q", "-batch", "-x"])
            .arg(&script)
            .arg(bin)
            .output()
            .expect("run gdb-multiarch");
        let _ = qemu.kill();
        let _ = qemu.wait();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let reg = |name: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(name)?.split_whitespace().next())
                .and_then(|v| u64::from_str_radix(v.trim_start_matches("0x"), 16).ok())
        };
        let (Some(fp), Some(lr), Some(sp), Some(pc)) =
            (reg("x29 "), reg("x30 "), reg("sp "), reg("pc "))
        else {
            last = format!(
                "no registers; gdb's output:\n{text}\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
            continue;
        };
        let backtrace = text
            .lines()
            .filter_map(|l| {
                let rest = l.strip_prefix('#')?;
                let rest = rest.split_once(char::is_whitespace)?.1.trim_start();
                let (at, func) = match rest.split_once(" in ") {
                    Some((a, f)) if a.starts_with("0x") => {
                        (u64::from_str_radix(&a[2..], 16).ok()?, f)
                    }
                    _ => (pc, rest),
                };
                let name = func.split([' ', '(']).next()?.to_string();
                Some((at, name))
            })
            .collect();
        // A loaded machine can lose the session between the stop and the dump (another
        // attempt starts a fresh qemu); what gdb said is kept for the final message.
        let Some(stack) = dumps.iter().find_map(|(_, path)| std::fs::read(path).ok()) else {
            last = format!(
                "gdb dumped no stack; its output:\n{text}\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
            continue;
        };
        return Some(Aarch64Stop {
            regs: [fp, lr, sp, pc],
            stack,
            backtrace,
        });
    }
    panic!("{test}: gdb never stopped the program under qemu-aarch64: {last}");
}

/// Writes a `--call-graph dwarf`-style recording of one AArch64 sample: HEADER_ARCH aarch64,
/// the static executable mapped where it runs, and the sampled x29/x30/sp/pc and stack.
fn write_aarch64_dwarf_sample(file: &Path, bin: &Path, stop: &Aarch64Stop) {
    use culprit_collect::perfdata::{Attr, Features, FileAttr, PerfDataWriter};
    use culprit_decode::abi::{attr_flag, misc, record_type, sample_type as st};
    let regs_mask = (1u64 << 29) | (1 << 30) | (1 << 31) | (1 << 32);
    let attr = Attr {
        attr_type: 1, // PERF_TYPE_SOFTWARE, cpu-clock
        config: 0,
        sample_period_or_freq: 250_000,
        sample_type: st::IDENTIFIER
            | st::IP
            | st::TID
            | st::TIME
            | st::PERIOD
            | st::REGS_USER
            | st::STACK_USER,
        flags: attr_flag::SAMPLE_ID_ALL | attr_flag::MMAP | attr_flag::COMM | attr_flag::MMAP2,
        sample_regs_user: regs_mask,
        sample_stack_user: stop.stack.len() as u32,
        ..Attr::default()
    };
    let attrs = vec![FileAttr {
        attr,
        name: "cpu-clock".to_string(),
        ids: vec![1],
    }];
    let mut w = PerfDataWriter::new(std::fs::File::create(file).unwrap(), attrs).unwrap();
    let mut buf = Vec::new();
    // The static executable's text is linked at 0x400000, file offset 0.
    common::push_process(&mut buf, &attr, b"calltree", bin, 0x40_0000);
    let mut body: Vec<u8> = Vec::new();
    body.extend(1u64.to_le_bytes());
    body.extend(stop.regs[3].to_le_bytes());
    body.extend(100u32.to_le_bytes());
    body.extend(100u32.to_le_bytes());
    body.extend(10u64.to_le_bytes());
    body.extend(250_000u64.to_le_bytes());
    body.extend(2u64.to_le_bytes()); // PERF_SAMPLE_REGS_ABI_64
    for r in stop.regs {
        body.extend(r.to_le_bytes());
    }
    body.extend((stop.stack.len() as u64).to_le_bytes());
    body.extend(&stop.stack);
    body.extend((stop.stack.len() as u64).to_le_bytes()); // dyn_size
    buf.extend(record_type::SAMPLE.to_le_bytes());
    buf.extend(misc::USER.to_le_bytes());
    buf.extend(u16::try_from(8 + body.len()).unwrap().to_le_bytes());
    buf.extend(body);
    w.write_data(&buf).unwrap();
    let features = Features {
        arch: Some("aarch64".to_string()),
        ..Default::default()
    };
    w.finish(&features).unwrap();
}

/// DWARF unwinding of an AArch64 user stack: the call chain culprit unwinds from a sample
/// of the static AArch64 `calltree` (registers and stack taken from the program stopped
/// under qemu-user) equals gdb's backtrace of the same moment, frame by frame, past main.
/// perf 6.1 for x86 cannot be the oracle here: it unwinds the host's architecture only.
#[test]
fn test_unwind_aarch64_stack_equals_gdb_backtrace() {
    let test = "test_unwind_aarch64_stack_equals_gdb_backtrace";
    let Some(bin) = common::workload_aarch64(test, "calltree-static") else {
        return;
    };
    let dir = record_dir("unwind-aarch64");
    let Some(stop) = stop_aarch64_calltree(test, &bin, &dir) else {
        return;
    };
    let names: Vec<&str> = stop.backtrace.iter().map(|(_, n)| n.as_str()).collect();
    assert_eq!(
        names.get(..4),
        Some(&["c", "b", "a", "main"][..]),
        "gdb: {names:?}"
    );
    let file = dir.join("aarch64-dwarf.data");
    write_aarch64_dwarf_sample(&file, &bin, &stop);
    let samples = common::script_json(&file);
    assert_eq!(samples.len(), 1, "{samples:?}");
    let chain: Vec<(u64, String)> = samples[0]["callchain"]
        .as_array()
        .unwrap_or_else(|| panic!("no callchain: {}", samples[0]))
        .iter()
        .map(|f| {
            (
                f["ip"].as_u64().unwrap(),
                f["sym"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    assert_eq!(chain, stop.backtrace, "culprit's chain vs gdb's backtrace");
}
