//! Shared helpers for the CLI integration tests: the culprit binary, workloads built on
//! demand, the PMU gate and the cross-process PMU lock.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

// One PMU lock, one set of skip rules and one workload builder for every crate's tests.
pub use culprit_testkit::{
    need, perf_installed, pmu_lock, require_perf, require_tool, runs, skip, workload,
};

/// The `culprit` binary cargo built for these tests, with `$HOME` at [`test_home`].
pub fn culprit() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_culprit"));
    in_test_home(&mut c);
    c
}

/// `perf`, with `$HOME` at [`test_home`] (its build-id cache and config), as culprit.
pub fn perf() -> Command {
    let mut c = Command::new("perf");
    in_test_home(&mut c);
    c
}

/// Runs `c` with `$HOME` at [`test_home`] and no `$PERF_BUILDID_DIR`: the build-id cache
/// that culprit and perf read (and that `record` fills) is the suite's own, never the
/// user's `~/.debug`.
pub fn in_test_home(c: &mut Command) -> &mut Command {
    c.env("HOME", test_home()).env_remove("PERF_BUILDID_DIR")
}

/// The `$HOME` of every culprit and perf the tests run: target/test-home, whose `.debug`
/// (perf's build-id cache) holds the binaries the committed fixtures were recorded with
/// (copied from crates/decode/tests/fixtures/buildid-cache), so that their names resolve on
/// any machine, in any checkout.
pub fn test_home() -> PathBuf {
    static HOME: OnceLock<PathBuf> = OnceLock::new();
    HOME.get_or_init(|| {
        let root = repo_root();
        let home = root.join("target/test-home");
        copy_missing(
            &root.join("crates/decode/tests/fixtures/buildid-cache"),
            &home.join(".debug"),
        );
        home
    })
    .clone()
}

/// The `--symfs` root of the fixtures that recorded no build-id (pipe mode, `-z`): their
/// recorded paths, inside the repository (crates/decode/tests/fixtures/README.md).
pub fn fixture_symfs() -> PathBuf {
    repo_root().join("crates/decode/tests/fixtures/symfs")
}

/// Copies every file under `from` to the same place under `to` that does not exist there
/// yet (written to a temporary name, then renamed: test binaries may run at once).
fn copy_missing(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        if entry.file_type().unwrap().is_dir() {
            copy_missing(&src, &dst);
        } else if !dst.exists() {
            let tmp = to.join(format!(
                ".{}.{}",
                entry.file_name().to_string_lossy(),
                std::process::id()
            ));
            std::fs::copy(&src, &tmp).unwrap();
            std::fs::rename(&tmp, &dst).unwrap();
        }
    }
}

/// Repository root.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// A fresh scratch directory under target/test-tmp/NAME (emptied first).
pub fn scratch(name: &str) -> PathBuf {
    let dir = repo_root().join("target/test-tmp").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A workload cross-compiled for AArch64 (`make -C workloads aarch64`, Debian's
/// gcc-aarch64-linux-gnu), or `None` after a loud skip where the cross compiler is missing.
/// Under CI (which installs it) a missing compiler fails the test instead.
pub fn workload_aarch64(test: &str, name: &str) -> Option<PathBuf> {
    let cross = runs("aarch64-linux-gnu-gcc", &["--version"]);
    if !need(
        test,
        cross,
        "no aarch64-linux-gnu-gcc (Debian gcc-aarch64-linux-gnu)",
    ) {
        return None;
    }
    Some(culprit_testkit::workload_in("aarch64", name))
}

/// Call at the start of a test that reads Parquet back with pyarrow: true when python3 has
/// it; otherwise skips loudly (false), or fails under CI, which installs it.
pub fn require_pyarrow(test: &str) -> bool {
    static HAVE: OnceLock<bool> = OnceLock::new();
    let have = *HAVE.get_or_init(|| runs("python3", &["-c", "import pyarrow.dataset"]));
    need(
        test,
        have,
        "python3's pyarrow is not installed (pip install pyarrow)",
    )
}

/// Whether the hardware PMU is usable here.
pub fn hardware_pmu() -> bool {
    static HAVE: OnceLock<bool> = OnceLock::new();
    *HAVE.get_or_init(culprit_collect::support::hardware_pmu_available)
}

/// Call at the start of a test that needs the hardware PMU. Returns false (and reports a
/// loud skip) when there is none; panics instead when `CULPRIT_REQUIRE_PMU=1`, so that CI on
/// a machine with a PMU can never pass by skipping.
pub fn require_hardware_pmu(test: &str) -> bool {
    culprit_testkit::require_pmu(test, hardware_pmu())
}

/// Runs a command and returns its output, with stdout/stderr in the panic message on failure.
pub fn run_ok(cmd: &mut Command) -> Output {
    let out = cmd.output().expect("spawn");
    assert!(
        out.status.success(),
        "{:?} failed with {}\nstdout:\n{}\nstderr:\n{}",
        cmd,
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// `TOOL record -q -e EVENTS -o - -- CMD` (`tool` is [`perf`] or [`culprit`]), its stdout, a
/// pipe-mode perf.data, written to `file`.
pub fn record_pipe_mode(mut tool: Command, events: &str, cmd: &[&str], file: &Path) {
    let out = std::fs::File::create(file).unwrap();
    run_ok(
        tool.args(["record", "-q", "-e", events, "-o", "-", "--"])
            .args(cmd)
            .stdout(out),
    );
}

/// Pushes the records of a crafted file's process 100 (time 1, sample id 1): its COMM `comm`
/// and the executable MMAP2 of `bin` at `base`.
pub fn push_process(
    buf: &mut Vec<u8>,
    a0: &culprit_collect::perfdata::Attr,
    comm: &[u8],
    bin: &Path,
    base: u64,
) {
    use culprit_collect::perfdata::records::{self, MmapArgs, SampleId};
    use culprit_decode::abi::misc;
    let sid = SampleId {
        pid: 100,
        tid: 100,
        time: 1,
        id: 1,
        cpu: 0,
    };
    records::push_comm(buf, a0, 100, 100, comm, true, &sid);
    let len = std::fs::metadata(bin).unwrap().len().div_ceil(4096) * 4096;
    let name = bin.display().to_string();
    records::push_mmap2(
        buf,
        a0,
        &MmapArgs {
            pid: 100,
            tid: 100,
            start: base,
            len,
            pgoff: 0,
            maj: 0,
            min: 0,
            ino: 0,
            prot: 5,
            flags: 2,
            filename: name.as_bytes(),
            misc: misc::USER,
        },
        &sid,
    );
}

/// Writes a perf.data file (with culprit's writer) in which process 100 runs `bin` mapped at
/// `base`; each event gets `samples` = (SVMA == file offset here, count, exact) entries.
pub fn write_crafted_file(
    path: &Path,
    bin: &Path,
    base: u64,
    events: &[(&str, u32, u64)],
    samples: &[(u64, u64, bool)],
) {
    let per_event = vec![samples.to_vec(); events.len()];
    write_crafted_file_with(
        path,
        bin,
        base,
        events,
        &per_event,
        &culprit_collect::perfdata::Features::default(),
    );
}

/// [`write_crafted_file`] with each event's own samples and the header features given.
pub fn write_crafted_file_with(
    path: &Path,
    bin: &Path,
    base: u64,
    events: &[(&str, u32, u64)],
    samples: &[Vec<(u64, u64, bool)>],
    features: &culprit_collect::perfdata::Features,
) {
    use culprit_collect::perfdata::{Attr, FileAttr, PerfDataWriter};
    use culprit_decode::abi::{attr_flag, misc, sample_type};
    let st = sample_type::IDENTIFIER
        | sample_type::IP
        | sample_type::TID
        | sample_type::TIME
        | sample_type::PERIOD;
    let attrs: Vec<FileAttr> = events
        .iter()
        .enumerate()
        .map(|(i, &(name, t, config))| FileAttr {
            attr: Attr {
                attr_type: t,
                config,
                sample_period_or_freq: 100003,
                sample_type: st,
                flags: attr_flag::SAMPLE_ID_ALL
                    | attr_flag::MMAP
                    | attr_flag::COMM
                    | attr_flag::MMAP2,
                ..Attr::default()
            },
            name: name.to_string(),
            ids: vec![i as u64 + 1],
        })
        .collect();
    let a0 = attrs[0].attr;
    let file = std::fs::File::create(path).unwrap();
    let mut w = PerfDataWriter::new(file, attrs.clone()).unwrap();
    let mut buf = Vec::new();
    push_process(&mut buf, &a0, b"simple_classic", bin, base);
    let mut time = 10u64;
    for (e, _) in events.iter().enumerate() {
        for &(svma, n, exact) in &samples[e] {
            for _ in 0..n {
                // PERF_RECORD_SAMPLE: IDENTIFIER, IP, TID, TIME, PERIOD.
                let misc: u16 = misc::USER | if exact { 1 << 14 } else { 0 };
                let words = [e as u64 + 1, base + svma, 100 | 100 << 32, time, 100003];
                push_sample(&mut buf, misc, &words);
                time += 1;
            }
        }
    }
    w.write_data(&buf).unwrap();
    w.finish(features).unwrap();
}

/// Appends a PERF_RECORD_SAMPLE of mode `misc` whose body is `words` (the attr's sample
/// fields in order, each as a u64 word: `pid | tid << 32` for TID, ...).
pub fn push_sample(buf: &mut Vec<u8>, misc: u16, words: &[u64]) {
    use culprit_decode::abi::record_type;
    let size = u16::try_from(8 + 8 * words.len()).expect("a sample record under 64 KiB");
    buf.extend_from_slice(&record_type::SAMPLE.to_le_bytes());
    buf.extend_from_slice(&misc.to_le_bytes());
    buf.extend_from_slice(&size.to_le_bytes());
    for w in words {
        buf.extend_from_slice(&w.to_le_bytes());
    }
}

/// A cpu-clock attr (period 100,003) of samples with id, IP, TID, time, period and call
/// chain, and side records with sample ids: what the crafted streams of the memory tests write.
pub fn cpu_clock_chain_attr() -> culprit_collect::perfdata::Attr {
    use culprit_decode::abi::{attr_flag, sample_type};
    cpu_clock_attr(sample_type::CALLCHAIN, attr_flag::COMM | attr_flag::MMAP2)
}

/// The cpu-clock attr of crafted files: samples with IDENTIFIER, IP, TID, TIME, PERIOD and
/// the `extra` fields, period 100,003, SAMPLE_ID_ALL and the `flags` given.
pub fn cpu_clock_attr(extra: u64, flags: u64) -> culprit_collect::perfdata::Attr {
    use culprit_decode::abi::{attr_flag, sample_type};
    culprit_collect::perfdata::Attr {
        attr_type: 1,
        config: 0,
        sample_period_or_freq: 100_003,
        sample_type: sample_type::IDENTIFIER
            | sample_type::IP
            | sample_type::TID
            | sample_type::TIME
            | sample_type::PERIOD
            | extra,
        flags: attr_flag::SAMPLE_ID_ALL | flags,
        ..Default::default()
    }
}

/// Writes `DIR/crafted.data`: an AMD cache-fill event (not precise) that skidded past the
/// load before `mulss` in workloads/simple_classic's `multiply_matrices` (the culprit): 90,
/// 70, 440 and 300 samples on the four instructions after it, none on it; and cycles at the
/// same places. Returns the file and the fill event's name.
pub fn write_skidded_fill_file(dir: &Path) -> (PathBuf, &'static str) {
    let bin = workload("simple_classic");
    let f = objdump_function(&bin, "multiply_matrices");
    let mul = f
        .iter()
        .position(|l| l.mnem == "mulss")
        .expect("mulss in multiply_matrices");
    let samples = vec![
        (f[mul + 2].addr, 440, false),
        (f[mul + 3].addr, 300, false),
        (f[mul].addr, 90, false),
        (f[mul + 1].addr, 70, false),
    ];
    let file = dir.join("crafted.data");
    let fill = "ls_dmnd_fills_from_sys.all";
    write_crafted_file(
        &file,
        &bin,
        0x5555_5555_4000,
        &[(fill, 4, 0xff43), ("cycles", 0, 0)],
        &samples,
    );
    (file, fill)
}

/// One line of `objdump -d --no-show-raw-insn`: (address, mnemonic, operands).
#[derive(Debug, Clone)]
pub struct ObjdumpInsn {
    pub addr: u64,
    pub mnem: String,
    pub ops: String,
}

/// The instructions of one function, from objdump (independent of culprit's disassembler); operands without objdump's `# 4040 <n>` comments.
pub fn objdump_function(bin: &Path, func: &str) -> Vec<ObjdumpInsn> {
    objdump_function_with("objdump", bin, func)
}

/// The functions of an ELF file's `.text`, in address order, as `objdump` (a cross binutils'
/// for foreign code) names them.
pub fn objdump_text_functions(objdump: &str, bin: &Path) -> Vec<String> {
    let out = run_ok(Command::new(objdump).args(["-d", "-j", ".text"]).arg(bin));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            l.strip_suffix(">:")?
                .split_once(" <")
                .map(|(_, n)| n.to_string())
        })
        .collect()
}

/// [`objdump_function`] with another objdump (`aarch64-linux-gnu-objdump` for ARM code).
pub fn objdump_function_with(objdump: &str, bin: &Path, func: &str) -> Vec<ObjdumpInsn> {
    let out = run_ok(
        std::process::Command::new(objdump)
            .arg("-d")
            .arg("--no-show-raw-insn")
            .arg(bin),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let header = format!("<{func}>:");
    let mut lines = Vec::new();
    let mut inside = false;
    for l in text.lines() {
        if l.ends_with(&header) {
            inside = true;
            continue;
        }
        if !inside {
            continue;
        }
        if l.trim().is_empty() {
            break;
        }
        let Some((a, rest)) = l.split_once(':') else {
            continue;
        };
        let Ok(addr) = u64::from_str_radix(a.trim(), 16) else {
            continue;
        };
        let rest = rest.trim();
        let (mnem, ops) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
        lines.push(ObjdumpInsn {
            addr,
            mnem: mnem.to_string(),
            ops: ops.split('#').next().unwrap_or("").trim().to_string(),
        });
    }
    assert!(!lines.is_empty(), "objdump shows no {func}");
    lines
}

/// `perf record` into a scratch dir; returns the file.
pub fn perf_record(test: &str, args: &[&str], cmd: &[&str]) -> PathBuf {
    let dir = scratch(test);
    let file = dir.join("perf.data");
    run_ok(
        perf()
            .arg("record")
            .arg("-q")
            .arg("-o")
            .arg(&file)
            .args(args)
            .arg("--")
            .args(cmd),
    );
    file
}

/// perf's totals per event section: (samples, event count), from `perf report --stdio
/// --no-group --show-nr-samples -t '|'` output. The samples are summed from the rows: the
/// section header abbreviates counts past 999 (`1K`).
pub fn perf_event_totals(text: &str) -> BTreeMap<String, (u64, u64)> {
    let mut out: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# Samples: ") {
            let name = rest.split('\'').nth(1).unwrap_or("").to_string();
            out.entry(name.clone()).or_default();
            current = Some(name);
        } else if let Some(rest) = line.strip_prefix("# Event count (approx.): ") {
            if let Some(name) = &current {
                out.entry(name.clone()).or_default().1 = rest.trim().parse().unwrap_or(0);
            }
        } else if !line.starts_with('#') && line.contains('|') {
            let n = line.split('|').nth(1).map(str::trim).unwrap_or("");
            if n.is_empty() {
                // A blank separator row.
                continue;
            }
            let n: u64 = n
                .parse()
                .unwrap_or_else(|_| panic!("samples column in {line:?}"));
            if let Some(name) = &current {
                out.entry(name.clone()).or_default().0 += n;
            }
        }
    }
    out.retain(|_, t| t.0 > 0);
    out
}

/// culprit's totals per event with samples: (samples, period).
pub fn culprit_event_totals(json: &serde_json::Value) -> BTreeMap<String, (u64, u64)> {
    json["events"]
        .as_array()
        .expect("events")
        .iter()
        .filter(|e| e["samples"].as_u64() > Some(0))
        .map(|e| {
            let name = e["name"].as_str().unwrap_or("").to_string();
            let totals = (
                e["samples"].as_u64().unwrap(),
                e["period"].as_u64().unwrap(),
            );
            (name, totals)
        })
        .collect()
}

/// Asserts that culprit and `perf report --no-group` count the same samples and period per
/// event in `file`.
pub fn assert_event_totals_match(file: &Path) -> BTreeMap<String, (u64, u64)> {
    let out = run_ok(
        perf()
            .arg("report")
            .arg("-i")
            .arg(file)
            .args(["--stdio", "--no-group", "--no-children", "--sort", "comm"])
            .args(["--show-nr-samples", "-t", "|", "-g", "none"]),
    );
    let perf = perf_event_totals(&String::from_utf8_lossy(&out.stdout));
    let out = run_ok(culprit().arg("report").arg("-i").arg(file).args([
        "--format",
        "json",
        "--no-children",
    ]));
    let json = serde_json::from_slice(&out.stdout).expect("culprit report --format json");
    let ours = culprit_event_totals(&json);
    assert_eq!(
        perf,
        ours,
        "{}: samples and periods per event",
        file.display()
    );
    ours
}

/// Validates `json` (one JSON document, or JSON Lines when `lines`) against
/// docs/schemas/NAME.schema.json with python3's `jsonschema` (the reference validator;
/// `.ci/run` installs it), and checks that every document carries an integer `schema`.
/// Panics with the validator's message when it does not validate.
pub fn validate_json_schema(name: &str, json: &str) {
    let schema = repo_root().join(format!("docs/schemas/{name}.schema.json"));
    assert!(schema.exists(), "no schema file {}", schema.display());
    // One directory per call: tests of one binary validate in parallel threads.
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = scratch(&format!("schema-{name}-{}-{call}", std::process::id()));
    let doc = dir.join("doc.json");
    std::fs::write(&doc, json).unwrap();
    let script = r#"
import json, sys
import jsonschema
schema = json.load(open(sys.argv[1]))
jsonschema.Draft202012Validator.check_schema(schema)
v = jsonschema.Draft202012Validator(schema)
text = open(sys.argv[2]).read()
docs = [json.loads(l) for l in text.splitlines() if l.strip()] if sys.argv[3] == "lines" else [json.loads(text)]
if not docs:
    sys.exit("no JSON document")
for i, d in enumerate(docs):
    if not isinstance(d, dict) or not isinstance(d.get("schema"), int):
        sys.exit(f"document {i}: no integer 'schema' field")
    errs = sorted(v.iter_errors(d), key=lambda e: list(e.path))
    if errs:
        sys.exit(f"document {i}: " + "; ".join(f"{list(e.path)}: {e.message}" for e in errs[:5]))
"#;
    let lines = json.trim_start().starts_with('{')
        && json.trim().lines().count() > 1
        && json
            .lines()
            .all(|l| l.trim().is_empty() || l.starts_with('{'));
    let out = Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(&schema)
        .arg(&doc)
        .arg(if lines { "lines" } else { "one" })
        .output()
        .expect("run python3 (needed to validate JSON schemas)");
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        out.status.success(),
        "{name}: JSON does not validate against {}: {}",
        schema.display(),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `culprit script --format json -i FILE`: one JSON object per sample, in delivery order.
pub fn script_json(file: &Path) -> Vec<serde_json::Value> {
    let out = run_ok(
        culprit()
            .args(["script", "--format", "json", "-i"])
            .arg(file),
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// What `culprit script --format json` decodes of one IBS sample `s`, as the precise columns
/// of the Parquet `samples` table must hold it (docs/fleet.md): the expected value of each
/// column the sample determines (`data_addr`, `phys_addr` and `data_src` as unsigned), and the
/// kinds of field it exercises ("fetch", "op", "branch", "load miss", "data address", "dtlb
/// miss"), for tests to check the fixtures cover each.
pub fn expected_ibs_precise_columns(
    s: &serde_json::Value,
) -> (BTreeMap<&'static str, serde_json::Value>, Vec<&'static str>) {
    use serde_json::Value;
    let mut want = BTreeMap::new();
    let mut kinds = Vec::new();
    let ibs = &s["ibs"];
    let bit = |v: &Value| v.as_u64().map(|b| b == 1);
    if let Some(fetch) = ibs.get("ibs_fetch_ctl") {
        want.insert("ibs_fetch_latency", fetch["Lat"].clone());
        for k in ["data_addr", "dc_miss", "ibs_op_latency", "branch_taken"] {
            want.insert(k, Value::Null);
        }
        kinds.push("fetch");
        return (want, kinds);
    }
    let Some(data3) = ibs.get("ibs_op_data3") else {
        // A payload perf rejects (En or Val clear): no precise fields.
        assert!(s.get("ibs_error").is_some(), "neither fetch nor op: {s}");
        want.insert("ibs_op_latency", Value::Null);
        return (want, kinds);
    };
    let p = &s["precise"];
    // What script decodes as perf mem's precise sample.
    want.insert("data_addr", p["addr"].clone());
    want.insert("phys_addr", p["phys_addr"].clone());
    want.insert("weight", p["latency"].clone());
    want.insert("data_src", p["data_src"].clone());
    // The registers themselves.
    let mem_op = data3["LdOp"] == 1 || data3["StOp"] == 1;
    let when_mem = |v: Option<bool>| match v {
        Some(b) if mem_op => Value::Bool(b),
        _ => Value::Null,
    };
    want.insert("dc_miss", when_mem(bit(&data3["DcMiss"])));
    want.insert("dtlb_miss", when_mem(bit(&data3["DcL1TlbMiss"])));
    let op = &ibs["ibs_op_data"];
    want.insert("ibs_op_latency", op["TagToRetCtr"].clone());
    let load_miss = data3["LdOp"] == 1 && data3["DcMiss"] == 1;
    want.insert(
        "ibs_dc_miss_latency",
        if load_miss {
            data3["DcMissLat"].clone()
        } else {
            Value::Null
        },
    );
    if op["BrnRet"] == 1 {
        want.insert("branch_taken", Value::Bool(op["OpBrnTaken"] == 1));
        want.insert("branch_mispredicted", Value::Bool(op["OpBrnMisp"] == 1));
        kinds.push("branch");
    } else {
        want.insert("branch_taken", Value::Null);
        want.insert("branch_mispredicted", Value::Null);
    }
    if load_miss {
        kinds.push("load miss");
    }
    if want["data_addr"] != Value::Null {
        kinds.push("data address");
    }
    if want["dtlb_miss"] == Value::Bool(true) {
        kinds.push("dtlb miss");
    }
    kinds.push("op");
    (want, kinds)
}

/// The kinds of IBS field [`expected_ibs_precise_columns`] names: the IBS fixtures exercise
/// each.
pub const IBS_PRECISE_KINDS: [&str; 6] = [
    "fetch",
    "op",
    "branch",
    "load miss",
    "data address",
    "dtlb miss",
];

/// A small tmpfs mounted at `dir/mnt` (a disk that fills up), unmounted when dropped.
pub struct SmallDisk(PathBuf);

impl SmallDisk {
    /// Mounts a tmpfs of `size` (mount's syntax, e.g. `2m`) at `dir/mnt`; `None` where this
    /// process may not mount (not root).
    pub fn mount(dir: &Path, size: &str) -> Option<SmallDisk> {
        let mnt = dir.join("mnt");
        std::fs::create_dir_all(&mnt).unwrap();
        Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(&mnt)
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
            .then_some(SmallDisk(mnt))
    }

    /// Where the disk is mounted.
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}
