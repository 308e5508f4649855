//! `culprit script` and `culprit ibs` on the IBS vector files (perf 6.1's decoding of every
//! sample is the oracle: crates/decode/tests/fixtures/ibs-vectors.json), hand-checked report
//! tables, a synthetic IBS recording of the real matrix multiply, and `record --ibs` on a
//! machine without IBS.

use crate::common;

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::Value;

const VARIANTS: [&str; 4] = [
    "fam17h_m31_zen2",
    "fam19h_m01_zen3",
    "fam19h_m21_zen3",
    "fam19h_m11_zen4",
];

fn fixture(name: &str) -> PathBuf {
    common::repo_root()
        .join("crates/decode/tests/fixtures")
        .join(name)
}

fn vectors() -> Value {
    serde_json::from_slice(&std::fs::read(fixture("ibs-vectors.json")).unwrap()).unwrap()
}

fn json_lines(out: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad JSON line {l}: {e}")))
        .collect()
}

/// perf's printed field value as the number `culprit script` gives: "3=DRAM" → 3,
/// "8 bytes" → 8, page-size names by their index in the table perf used.
fn perf_number(name: &str, v: &Value, erratum_1347: bool) -> u64 {
    if let Some(n) = v.as_u64() {
        return n;
    }
    let s = v.as_str().unwrap();
    if name == "value" {
        return u64::from_str_radix(s, 16).unwrap();
    }
    if name == "L1TlbPgSz" {
        let table: [&str; 4] = if erratum_1347 {
            ["4KB", "16KB", "2MB", "1GB"]
        } else {
            ["4KB", "2MB", "1GB", "RESERVED"]
        };
        return table.iter().position(|t| *t == s).unwrap() as u64;
    }
    s.split(['=', ' ']).next().unwrap().parse().unwrap()
}

fn normalized_perf_fields(s: &Value) -> BTreeMap<String, BTreeMap<String, u64>> {
    let erratum = s["family"] == 25 && s["model"].as_u64().unwrap() < 16;
    s["perf_fields"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(label, fields)| {
            let m = fields
                .as_object()
                .unwrap()
                .iter()
                .map(|(k, v)| (k.clone(), perf_number(k, v, erratum)))
                .collect();
            (label.clone(), m)
        })
        .collect()
}

fn script_ibs(v: &Value) -> BTreeMap<String, BTreeMap<String, u64>> {
    v["ibs"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(label, fields)| {
            let m = fields
                .as_object()
                .unwrap()
                .iter()
                .map(|(k, v)| (k.clone(), v.as_u64().unwrap()))
                .collect();
            (label.clone(), m)
        })
        .collect()
}

#[test]
fn test_script_json_matches_perf_61_for_every_vector_sample() {
    let v = vectors();
    let mut compared = 0;
    let mut rejected = 0;
    for variant in VARIANTS {
        let out = common::run_ok(
            common::culprit()
                .args(["script", "--format", "json", "-i"])
                .arg(fixture(&format!("ibs-{variant}.data"))),
        );
        let lines = json_lines(&out.stdout);
        let want: Vec<&Value> = v["samples"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["variant"] == variant)
            .collect();
        assert_eq!(lines.len(), want.len(), "{variant}");
        for (got, s) in lines.iter().zip(&want) {
            let what = format!("{variant} #{}", s["index"]);
            assert_eq!(got["time"], s["time"], "{what}");
            assert_eq!(got["pid"], s["pid"], "{what}");
            assert_eq!(got["tid"], s["tid"], "{what}");
            assert_eq!(got["cpu"], s["cpu"], "{what}");
            let ip = u64::from_str_radix(s["ip"].as_str().unwrap().trim_start_matches("0x"), 16);
            assert_eq!(got["ip"].as_u64(), Some(ip.unwrap()), "{what}");
            let event = if s["kind"] == "op" {
                "ibs_op//"
            } else {
                "ibs_fetch//"
            };
            assert_eq!(got["event"], event, "{what}");
            if s["perf_decoded"] == false {
                assert!(got.get("ibs").is_none(), "{what}: {got}");
                let err = got["ibs_error"].as_str().unwrap();
                assert!(err.contains("Val false"), "{what}: {err}");
                rejected += 1;
                continue;
            }
            assert_eq!(script_ibs(got), normalized_perf_fields(s), "{what}");
            compared += 1;
        }
    }
    assert_eq!((compared, rejected), (92, 8));
}

#[test]
fn test_script_text_prints_perfs_decoded_lines_verbatim() {
    let v = vectors();
    for variant in VARIANTS {
        let out = common::run_ok(
            common::culprit()
                .args(["script", "-i"])
                .arg(fixture(&format!("ibs-{variant}.data"))),
        );
        let text = String::from_utf8(out.stdout).unwrap();
        let mut expected: Vec<String> = Vec::new();
        for s in v["samples"].as_array().unwrap() {
            if s["variant"] == variant {
                for l in s["perf_lines"].as_array().unwrap() {
                    expected.push(l.as_str().unwrap().to_string());
                }
            }
        }
        let got: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("ibs_") || l.starts_with("Ibs") || l.starts_with("ic_ibs"))
            .collect();
        assert_eq!(got, expected, "{variant}");
        // The two samples perf rejects say why.
        assert_eq!(text.matches("invalid IBS").count(), 2, "{variant}");
    }
}

fn ibs_json(file: &str, extra: &[&str]) -> Value {
    let out = common::run_ok(
        common::culprit()
            .args(["ibs", "--format", "json", "-i"])
            .arg(fixture(file))
            .args(extra),
    );
    common::validate_json_schema("ibs", &String::from_utf8_lossy(&out.stdout));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Zen 2 op samples, counted by hand from the registers in ibs-vectors.json (17 valid ops:
/// indexes 0–23 minus the fetches and the invalid #24).
#[test]
fn test_ibs_op_report_zen2_hand_checked() {
    let j = ibs_json("ibs-fam17h_m31_zen2.data", &["--op"]);
    let op = &j["op"];
    assert_eq!(op["samples"], 18);
    assert_eq!(op["invalid"], 1);
    let t = &op["totals"];
    let expect = [
        ("all", 17),
        ("branch", 3),       // #6, #7, #9 have BrnRet
        ("mispredicted", 1), // #6
        ("taken", 2),        // #6, #7
        ("ret", 1),          // #7
        ("load", 11),
        ("store", 2), // #1, #16
        ("dc_miss", 10),
        ("dtlb_l1m_l2h", 2), // #1, #16
        ("dtlb_l1m_l2m", 1), // #3
        ("misaligned", 1),   // #12
        ("locked", 1),       // #12
        ("uc", 1),           // #15
        ("wc", 1),           // #16
        // 250+90+700+60+1200+18+380+65535+310+140
        ("dc_miss_lat_total", 68683),
        ("src_l2", 1),           // #18: DC miss, L2 hit
        ("src_local_cache", 2),  // #3, #23: DataSrc 2
        ("src_remote_cache", 2), // #12, #22: DataSrc 4
        ("src_local_dram", 1),   // #0
        ("src_remote_dram", 1),  // #13: DataSrc 3 + RmtNode
        ("src_io", 1),           // #15: DataSrc 7 (UC but IO wins, as in the kernel)
        ("src_other", 2),        // #19, #21: DataSrc 5, 6 reserved before Zen 4
        ("src_cxl", 0),
    ];
    for (k, v) in expect {
        assert_eq!(t[k], v, "totals.{k}: {t}");
    }
    assert_eq!(t["avg_dc_miss_lat"], 6868.3);
    // Rows: DC misses first, ties by total latency: the 65535-cycle miss (#21) leads, then
    // the UC load (#15, 1200), then the locked load (#12, 700).
    let rows = op["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 17);
    let keys: Vec<&str> = rows[..3]
        .iter()
        .map(|r| r["key"].as_str().unwrap())
        .collect();
    assert_eq!(
        keys,
        [
            "ibs-vector+0x1370",
            "ibs-vector+0x1330",
            "ibs-vector+0x1310"
        ]
    );
    assert_eq!(rows[0]["dc_miss_lat_total"], 65535);
    assert_eq!(rows[0]["avg_tag_to_ret"], 65535.0);
    // One function row (the DSO is not on this machine: [unknown]).
    assert_eq!(op["functions"].as_array().unwrap().len(), 1);
}

#[test]
fn test_ibs_fetch_report_zen2_and_zen3_errata_hand_checked() {
    let j = ibs_json("ibs-fam17h_m31_zen2.data", &["--fetch"]);
    let f = &j["fetch"];
    assert_eq!(
        (f["samples"].as_u64(), f["invalid"].as_u64()),
        (Some(7), Some(1))
    );
    assert_eq!(f["killed_filtered"], true);
    let t = &f["totals"];
    for (k, v) in [
        ("all", 6),
        ("killed", 0),
        ("attempted", 6),
        ("completed", 4), // #2, #5, #11, #14
        ("aborted", 2),   // #8, #17
        ("ic_miss", 4),   // #2, #8, #11, #14
        ("itlb_l1m_l2h", 1),
        ("itlb_l1m_l2m", 1),
        ("page_4k", 2), // #2, #17 (page size only with PhyAddrValid)
        ("page_2m", 1), // #5
        ("page_1g", 1), // #11; #14's field 3 is reserved
        ("page_16k", 0),
        ("l2_miss", 2), // #2, #14 (#8's bit does not count: not completed)
        ("lat_total", 65787),
    ] {
        assert_eq!(t[k], v, "zen2 totals.{k}: {t}");
    }
    assert_eq!(t["avg_lat"], 10964.5);
    // Family 19h model 1: IcMiss hidden (#1238), erratum #1347 page table 4K/16K/2M/1G.
    let j = ibs_json("ibs-fam19h_m01_zen3.data", &["--fetch"]);
    let t = &j["fetch"]["totals"];
    for (k, v) in [
        ("ic_miss", 0),
        ("page_4k", 2),
        ("page_16k", 1),
        ("page_2m", 1),
        ("page_1g", 1),
    ] {
        assert_eq!(t[k], v, "zen3 m01 totals.{k}: {t}");
    }
    // Zen 4: L3 and op-cache misses are decoded.
    let j = ibs_json("ibs-fam19h_m11_zen4.data", &["--fetch"]);
    let t = &j["fetch"]["totals"];
    assert_eq!(
        (t["l3_miss"].as_u64(), t["oc_miss"].as_u64()),
        (Some(1), Some(2))
    );
}

#[test]
fn test_ibs_data_report_top_cache_line_hand_checked() {
    let j = ibs_json("ibs-fam17h_m31_zen2.data", &["--data"]);
    let d = &j["data"];
    assert_eq!(d["accesses"], 13);
    assert_eq!(d["dc_miss"], 10);
    // #0 (0x7ffd12345678, DRAM, 250 cycles) and #12 (0x7ffd1234567c, remote cache, 700) share
    // a line.
    let top = &d["lines"]["by_misses"][0];
    assert_eq!(top["key"], "0x7ffd12345640");
    assert_eq!(top["dc_miss"], 2);
    assert_eq!(top["miss_lat_total"], 950);
    assert_eq!(
        (top["local"].as_u64(), top["remote"].as_u64()),
        (Some(1), Some(1))
    );
    let by_lat = &d["addresses"]["by_latency"][0];
    assert_eq!(by_lat["key"], "0x7f5000000040");
    assert_eq!(by_lat["miss_lat_total"], 65535);
    assert_eq!(d["pages"]["by_misses"][0]["key"], "0x7f5000000000");
    assert_eq!(d["pages"]["by_misses"][0]["dc_miss"], 3);
    // Per command and per CPU, as the DTrace provider's example scripts: all 10 misses are
    // ibs-vector's; per CPU they add up to the same 10.
    assert_eq!(d["comms"]["by_misses"][0]["key"], "ibs-vector");
    assert_eq!(d["comms"]["by_misses"][0]["dc_miss"], 10);
    let cpus: u64 = d["cpus"]["by_misses"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["dc_miss"].as_u64().unwrap())
        .sum();
    assert_eq!(cpus, 10);
    // CPU 3 (samples #3, #7, #11, #15, #19, #23): misses #3 (90), #15 (1200), #19 (380),
    // #23 (140).
    let top = &d["cpus"]["by_misses"][0];
    assert_eq!(
        (top["key"].as_str(), top["dc_miss"].as_u64()),
        (Some("3"), Some(4))
    );
    assert_eq!(top["miss_lat_total"], 1810);
}

#[test]
fn test_ibs_text_report_says_what_it_filters_and_file_without_ibs_fails() {
    let out = common::run_ok(
        common::culprit()
            .args(["ibs", "-i"])
            .arg(fixture("ibs-fam19h_m01_zen3.data")),
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("killed fetches filtered out"), "{text}");
    assert!(text.contains("errata #1238/#1347/#1293 applied"), "{text}");
    assert!(text.contains("\n# op by location\n"), "{text}");
    assert!(text.contains("\n# Top 10 VAs by DC misses\n"), "{text}");
    // Every fixture's text fits --width 80; --width 0 never cuts.
    for f in [
        "ibs-fam17h_m31_zen2.data",
        "ibs-fam19h_m01_zen3.data",
        "ibs-fam19h_m11_zen4.data",
        "ibs-fam19h_m21_zen3.data",
    ] {
        let run = |extra: &[&str]| {
            let out = common::run_ok(
                common::culprit()
                    .env_remove("COLUMNS")
                    .args(["ibs", "-i"])
                    .arg(fixture(f))
                    .args(extra),
            );
            String::from_utf8(out.stdout).unwrap()
        };
        for l in run(&["--width", "80"]).lines() {
            assert!(l.chars().count() <= 80, "{f}: {l:?}");
        }
        let whole = run(&["--width", "0"]);
        assert!(whole.lines().any(|l| l.contains("CXL")), "{f}: {whole}");
    }
    let out = common::culprit()
        .args(["ibs", "-i"])
        .arg(fixture("cpu-clock-c.data"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("has no IBS samples"), "{err}");
}

// ---------------------------------------------------------------------------------------
// Synthetic IBS recording of the real matrix multiply.

struct Func {
    /// SVMA of the function.
    start: u64,
    /// (SVMA, length, reads memory through a computed address) per instruction.
    insns: Vec<(u64, u64, bool)>,
    /// The load of matrix_b[k * n + j] (the culprit).
    culprit: u64,
    /// The load of matrix_a[i * n + k].
    a_load: u64,
    /// File offset minus SVMA of the text section.
    file_delta: i64,
    /// SVMA of the global `n` (an initialized .data object).
    n_addr: u64,
    /// (SVMA, RIP-relative target) of instructions that read a global.
    rip_reads: Vec<(u64, u64)>,
}

fn analyze_multiply(bin: &std::path::Path) -> Func {
    use culprit_symbols::disasm::{disassemble, Syntax};
    use object::{Object, ObjectSection, ObjectSymbol};
    let data = std::fs::read(bin).unwrap();
    let file = object::File::parse(&*data).unwrap();
    let sym_addr = |name: &str| {
        file.symbols()
            .find(|s| s.name() == Ok(name))
            .unwrap_or_else(|| panic!("no symbol {name}"))
    };
    let f = sym_addr("multiply_matrices");
    let (a_addr, b_addr) = (
        sym_addr("matrix_a").address(),
        sym_addr("matrix_b").address(),
    );
    let text = file.section_by_name(".text").unwrap();
    let (off, _) = text.file_range().unwrap();
    let file_delta = off as i64 - text.address() as i64;
    let from = (f.address() as i64 + file_delta) as usize;
    let code = &data[from..from + f.size() as usize];
    let insns = disassemble(code, f.address(), Syntax::Att);
    // The load through the pointer most recently read from a matrix global.
    let load_after = |global: u64| {
        let i = insns
            .iter()
            .position(|x| x.rip_target == Some(global))
            .unwrap_or_else(|| panic!("no read of the global at {global:#x}"));
        insns[i + 1..]
            .iter()
            .find(|x| x.mem.iter().any(|m| m.read && m.register_computed()))
            .unwrap()
            .addr
    };
    Func {
        start: f.address(),
        culprit: load_after(b_addr),
        a_load: load_after(a_addr),
        insns: insns
            .iter()
            .map(|x| {
                let computed = x.mem.iter().any(|m| m.read && m.register_computed());
                (x.addr, x.bytes.len() as u64, computed)
            })
            .collect(),
        file_delta,
        n_addr: sym_addr("n").address(),
        rip_reads: insns
            .iter()
            .filter(|x| x.mem.iter().any(|m| m.read))
            .filter_map(|x| x.rip_target.map(|t| (x.addr, t)))
            .collect(),
    }
}

/// Writes a perf.data with ibs_op samples over multiply_matrices' instructions, as a Zen 4
/// machine would record the matrix multiply: the b[k][j] load strides 4000 bytes per
/// iteration and misses the DC (and the DTLB) in 15 of 16 samples, the a[i][k] load misses
/// once per 64-byte line (1 in 16), stack accesses hit.
fn write_synthetic(bin: &std::path::Path, f: &Func, out: &std::path::Path) {
    write_ibs_file(bin, f, out, "ibs_op", &op_regs);
}

/// The op registers of round `round` at instruction `svma` (mapped at `ip`).
fn op_regs(f: &Func, round: u64, svma: u64, computed: bool, ip: u64) -> Option<(u64, Vec<u64>)> {
    let (matrix_a, matrix_b) = (0x7f00_0000_0000u64, 0x7f00_4000_0000u64);
    let en_val = (1u64 << 17) | (1 << 18) | 0x186a; // MaxCnt 100000/16
    let mut data3 = 0u64;
    let (mut lin, mut data2) = (0u64, 0u64);
    let mut op_data = (3u64 << 16) | 1; // TagToRet 3, CompToRet 1
    if svma == f.culprit {
        // Load, 4 bytes, lin valid; misses except once in 16.
        data3 = 1 | (3 << 22) | (1 << 17) | (1 << 2);
        lin = matrix_b + round * 4000;
        if round % 16 != 15 {
            data3 |= (1 << 7) | (1 << 20) | (280u64 << 32) | (1 << 3);
            data2 = 3; // DRAM
            op_data = (300 << 16) | 2;
        }
    } else if svma == f.a_load {
        data3 = 1 | (3 << 22) | (1 << 17);
        lin = matrix_a + round * 4;
        if round & 15 == 0 {
            data3 |= (1 << 7) | (20u64 << 32);
        }
    } else if let Some(&(_, target)) = f.rip_reads.iter().find(|r| r.0 == svma) {
        // A read of a global (n, matrix pointers): the data address is the global's, moved
        // by the same load bias as the code (text file offset == SVMA here, see the test).
        data3 = 1 | (3 << 22) | (1 << 17);
        lin = ip - svma + target;
        // One miss on n: its first read in the first round.
        let first_n = f.rip_reads.iter().find(|r| r.1 == f.n_addr).map(|r| r.0);
        if target == f.n_addr && round == 0 && first_n == Some(svma) {
            data3 |= (1 << 7) | (1 << 20) | (100u64 << 32);
            data2 = 1; // local L3 (Zen 4 table)
        }
    } else if computed {
        // Other loads through registers (stack-relative ones hit).
        data3 = 1 | (3 << 22) | (1 << 17);
        lin = 0x7ffd_0000_0000 + (svma & 0xff);
    }
    Some((ip, vec![en_val, ip, op_data, data2, data3, lin, 0, 0]))
}

type RegsFn = dyn Fn(&Func, u64, u64, bool, u64) -> Option<(u64, Vec<u64>)>;

/// A perf.data of one IBS PMU (`pmu`, type 12) over 64 rounds of multiply_matrices'
/// instructions, mapped from the real binary; `regs` gives each sample's IP and registers.
fn write_ibs_file(
    bin: &std::path::Path,
    f: &Func,
    out: &std::path::Path,
    pmu: &str,
    regs_of: &RegsFn,
) {
    use culprit_collect::perfdata::records::{self, MmapArgs, SampleId};
    use culprit_collect::perfdata::{Attr, Features, FileAttr, PerfDataWriter};
    use culprit_decode::abi::{attr_flag, misc, sample_type};
    let attr = Attr {
        attr_type: 12,
        config: 0,
        sample_period_or_freq: 100_000,
        sample_type: sample_type::IDENTIFIER
            | sample_type::IP
            | sample_type::TID
            | sample_type::TIME
            | sample_type::CPU
            | sample_type::PERIOD
            | sample_type::RAW,
        flags: attr_flag::SAMPLE_ID_ALL | attr_flag::MMAP2 | attr_flag::COMM,
        ..Attr::default()
    };
    let id = 7;
    let file = std::fs::File::create(out).unwrap();
    let mut w = PerfDataWriter::new(
        file,
        vec![FileAttr {
            attr,
            name: format!("{pmu}//"),
            ids: vec![id],
        }],
    )
    .unwrap();
    let (pid, base) = (5150u32, 0x5555_5555_4000u64);
    let sid = SampleId {
        pid,
        tid: pid,
        time: 0,
        id,
        cpu: 0,
    };
    let mut buf = Vec::new();
    records::push_comm(&mut buf, &attr, pid, pid, b"simple_classic", true, &sid);
    let path = bin.to_str().unwrap().as_bytes().to_vec();
    let len = std::fs::metadata(bin).unwrap().len().div_ceil(4096) * 4096;
    records::push_mmap2(
        &mut buf,
        &attr,
        &MmapArgs {
            pid,
            tid: pid,
            start: base,
            len,
            pgoff: 0,
            maj: 0,
            min: 0,
            ino: 0,
            prot: 5,
            flags: 2,
            filename: &path,
            misc: misc::USER,
        },
        &sid,
    );
    let mut time = 1_000_000_000u64;
    for round in 0..64u64 {
        for &(svma, _, computed) in &f.insns {
            let ip = (svma as i64 + f.file_delta) as u64 + base;
            let Some((ip, regs)) = regs_of(f, round, svma, computed, ip) else {
                continue;
            };
            let mut raw = (0xbffu32).to_le_bytes().to_vec();
            for r in regs {
                raw.extend_from_slice(&r.to_le_bytes());
            }
            // PERF_RECORD_SAMPLE: IDENTIFIER, IP, TID, TIME, CPU, PERIOD, RAW.
            let mut body = Vec::new();
            body.extend_from_slice(&id.to_le_bytes());
            body.extend_from_slice(&ip.to_le_bytes());
            body.extend_from_slice(&pid.to_le_bytes());
            body.extend_from_slice(&pid.to_le_bytes());
            body.extend_from_slice(&time.to_le_bytes());
            body.extend_from_slice(&0u64.to_le_bytes());
            body.extend_from_slice(&100_000u64.to_le_bytes());
            body.extend_from_slice(&(raw.len() as u32).to_le_bytes());
            body.extend_from_slice(&raw);
            body.resize(body.len().next_multiple_of(8), 0);
            let size = (body.len() + 8) as u16;
            buf.extend_from_slice(&9u32.to_le_bytes());
            buf.extend_from_slice(&(misc::USER | (1 << 14)).to_le_bytes());
            buf.extend_from_slice(&size.to_le_bytes());
            buf.extend_from_slice(&body);
            time += 1000;
        }
    }
    w.write_data(&buf).unwrap();
    let features = Features {
        arch: Some("x86_64".into()),
        cpuid: Some("AuthenticAMD,25,17,1".into()),
        pmu_mappings: vec![(4, "cpu".into()), (12, pmu.to_string())],
        pmu_caps: vec![(
            "ibs_op".into(),
            vec![("zen4_ibs_extensions".into(), "1".into())],
        )],
        ..Features::default()
    };
    w.finish(&features).unwrap();
}

#[test]
fn test_synthetic_ibs_recording_of_matrix_multiply_puts_the_culprit_load_on_top() {
    let bin = common::workload("simple_classic");
    let f = analyze_multiply(&bin);
    assert!(
        f.culprit > f.a_load,
        "b's load follows a's in the inner loop"
    );
    let dir = common::scratch("ibs-synthetic");
    let data = dir.join("ibs.data");
    write_synthetic(&bin, &f, &data);
    // Text: the first row of the op table is the culprit, named by its real symbol offset.
    let out = common::run_ok(
        common::culprit()
            .args(["ibs", "--op", "--width", "0", "-i"])
            .arg(&data),
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let want = format!("multiply_matrices+{:#x}", f.culprit - f.start);
    let first_row = text
        .lines()
        .skip_while(|l| !l.starts_with("# op by location"))
        .nth(2)
        .unwrap_or_else(|| panic!("no op rows in:\n{text}"));
    assert!(
        first_row
            .trim_start()
            .starts_with(&format!("{want} (simple_classic) ")),
        "first row {first_row:?} is not {want}:\n{text}"
    );
    // JSON: the numbers behind it.
    let out = common::run_ok(
        common::culprit()
            .args(["ibs", "--op", "--format", "json", "-i"])
            .arg(&data),
    );
    let j: Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = j["op"]["rows"].as_array().unwrap();
    assert_eq!(rows[0]["key"], want.as_str());
    assert_eq!(rows[0]["ip"], f.culprit);
    assert_eq!(rows[0]["dc_miss"], 60); // 64 rounds, one hit in 16
    assert_eq!(rows[0]["dtlb_l1m_l2m"], 60);
    assert_eq!(rows[0]["src_local_dram"], 60);
    assert_eq!(rows[0]["avg_dc_miss_lat"], 280.0);
    assert_eq!(rows[1]["ip"], f.a_load);
    assert_eq!(rows[1]["dc_miss"], 4);
    let funcs = j["op"]["functions"].as_array().unwrap();
    assert_eq!(funcs.len(), 1);
    assert_eq!(funcs[0]["sym"], "multiply_matrices");
    assert_eq!(funcs[0]["all"], 64 * f.insns.len() as u64);
    // Per source line: the culprit's line (the inner loop body) leads.
    let j = {
        let out = common::run_ok(
            common::culprit()
                .args(["ibs", "--op", "--sort", "srcline", "--format", "json", "-i"])
                .arg(&data),
        );
        serde_json::from_slice::<Value>(&out.stdout).unwrap()
    };
    let top = j["op"]["rows"][0]["key"].as_str().unwrap().to_string();
    assert!(top.starts_with("simple_classic.c:"), "{top}");
}

#[test]
fn test_record_ibs_without_ibs_pmu_fails_with_an_explanation() {
    if std::path::Path::new("/sys/bus/event_source/devices/ibs_op").exists() {
        // A machine with IBS: the kernel's period rule is checked before anything opens.
        let dir = common::scratch("ibs-record-bad-period");
        let out = common::culprit()
            .current_dir(&dir)
            .args([
                "record",
                "--ibs",
                "op",
                "--ibs-period",
                "1000",
                "--",
                "true",
            ])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "stderr: {err}");
        assert!(err.contains("multiple of 16, e.g. 1008"), "{err}");
        return;
    }
    let dir = common::scratch("ibs-record-none");
    let out = common::culprit()
        .current_dir(&dir)
        .args(["record", "--ibs", "op", "--", "true"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "stderr: {err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(err.contains("IBS"), "{err}");
    assert!(err.contains("ibs_op"), "{err}");
    assert!(!dir.join("perf.data").exists());
}

/// A PEBS-style recording (Intel, `cpu/event=0xcd,umask=0x1,ldlat=3/P`): PERF_SAMPLE_ADDR,
/// WEIGHT and DATA_SRC decode into the same precise model as IBS.
#[test]
fn test_script_decodes_pebs_data_src_weight_and_addr() {
    use culprit_collect::perfdata::{Attr, Features, FileAttr, PerfDataWriter};
    use culprit_decode::abi::{attr_flag, sample_type};
    let attr = Attr {
        attr_type: 4,
        config: 0x1cd,
        config1: 3,
        sample_period_or_freq: 1000,
        sample_type: sample_type::IDENTIFIER
            | sample_type::IP
            | sample_type::TID
            | sample_type::TIME
            | sample_type::ADDR
            | sample_type::CPU
            | sample_type::PERIOD
            | sample_type::WEIGHT
            | sample_type::DATA_SRC,
        flags: attr_flag::SAMPLE_ID_ALL | (2 << attr_flag::PRECISE_IP_SHIFT),
        ..Attr::default()
    };
    let dir = common::scratch("pebs-script");
    let path = dir.join("pebs.data");
    let mut w = PerfDataWriter::new(
        std::fs::File::create(&path).unwrap(),
        vec![FileAttr {
            attr,
            name: "cpu/event=0xcd,umask=0x1,ldlat=3/P".into(),
            ids: vec![9],
        }],
    )
    .unwrap();
    // Load, L3 hit, snoop HITM, L1 DTLB hit, lock N/A, lvl_num L3.
    let l3_hitm: u64 = 0x02
        | ((0x40 | 0x02) << 5)
        | (0x10 << 19)
        | (0x01 << 24)
        | ((0x08 | 0x02) << 26)
        | (3 << 33);
    // PERF_MEM_NA: what PEBS writes when it has nothing.
    let na: u64 = 0x01 | (0x01 << 5) | (0x01 << 19) | (0x01 << 24) | (0x01 << 26);
    let mut buf = Vec::new();
    for (i, (addr, weight, ds)) in [(0x7ffc_1000u64, 212u64, l3_hitm), (0, 0, na)]
        .into_iter()
        .enumerate()
    {
        let mut body = Vec::new();
        for v in [9u64, 0x40_1000 + i as u64] {
            body.extend_from_slice(&v.to_le_bytes());
        }
        body.extend_from_slice(&77u32.to_le_bytes());
        body.extend_from_slice(&77u32.to_le_bytes());
        for v in [1_000 + i as u64, addr, 0, 1000, weight, ds] {
            body.extend_from_slice(&v.to_le_bytes());
        }
        buf.extend_from_slice(&9u32.to_le_bytes());
        buf.extend_from_slice(&(2u16 | (1 << 14)).to_le_bytes());
        buf.extend_from_slice(&((body.len() + 8) as u16).to_le_bytes());
        buf.extend_from_slice(&body);
    }
    w.write_data(&buf).unwrap();
    w.finish(&Features {
        arch: Some("x86_64".into()),
        cpuid: Some("GenuineIntel,6,85,4".into()),
        pmu_mappings: vec![(4, "cpu".into())],
        ..Features::default()
    })
    .unwrap();
    let out = common::run_ok(
        common::culprit()
            .args(["script", "--format", "json", "-i"])
            .arg(&path),
    );
    let lines = json_lines(&out.stdout);
    assert_eq!(lines.len(), 2);
    let p = &lines[0]["precise"];
    assert_eq!(p["source"], "pebs");
    assert_eq!(p["addr"], 0x7ffc_1000u64);
    assert_eq!(p["latency"], 212);
    assert_eq!(p["data_src"], l3_hitm);
    assert_eq!(p["mem_op"], "load");
    assert_eq!(p["level"], "L3");
    assert_eq!(p["snoop"], "hit_m");
    assert_eq!(p["tlb"], "l1_hit");
    assert_eq!(p["remote"], false);
    assert_eq!(p["locked"], Value::Null);
    assert!(lines[0].get("ibs").is_none());
    // Unfilled PEBS fields are absent, not zeros.
    let p = &lines[1]["precise"];
    assert_eq!(p["addr"], Value::Null);
    assert_eq!(p["latency"], Value::Null);
    assert!(p.get("data_src").is_none(), "{p}");
}

/// Fetch samples whose IbsFetchLinAd falls inside the culprit load (it straddles into the
/// next 32-byte block) are counted on that load; killed fetches are filtered unless asked.
#[test]
fn test_synthetic_fetch_straddling_instruction_and_killed_filter() {
    let bin = common::workload("simple_classic");
    let f = analyze_multiply(&bin);
    let len = f
        .insns
        .iter()
        .find(|i| i.0 == f.culprit)
        .map(|i| i.1)
        .unwrap();
    assert!(len > 1, "the culprit load has more than one byte");
    let fetch = |f: &Func, round: u64, svma: u64, _: bool, ip: u64| {
        if svma != f.culprit {
            return None;
        }
        let en_val = (1u64 << 48) | (1 << 49) | 0x1000;
        // Even rounds: a completed fetch (IC miss, 4K page, latency 30) at culprit + 1.
        // Odd rounds: a killed fetch (no outcome bit) at the culprit itself.
        if round & 1 == 0 {
            let ctl = en_val | (1 << 50) | (1 << 51) | (1 << 52) | (30u64 << 32);
            Some((ip + 1, vec![ctl, ip + 1, 0x1234_5000, 0]))
        } else {
            Some((ip, vec![en_val, ip, 0, 0]))
        }
    };
    let dir = common::scratch("ibs-synthetic-fetch");
    let data = dir.join("fetch.data");
    write_ibs_file(&bin, &f, &data, "ibs_fetch", &fetch);
    let j = {
        let out = common::run_ok(
            common::culprit()
                .args(["ibs", "--fetch", "--format", "json", "-i"])
                .arg(&data),
        );
        serde_json::from_slice::<Value>(&out.stdout).unwrap()
    };
    let fr = &j["fetch"];
    assert_eq!(fr["samples"], 64);
    assert_eq!(fr["killed"], 32);
    assert_eq!(fr["straddled"], 32);
    let rows = fr["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["ip"], f.culprit);
    assert_eq!(rows[0]["all"], 32);
    assert_eq!(rows[0]["completed"], 32);
    assert_eq!(rows[0]["ic_miss"], 32);
    assert_eq!(rows[0]["avg_lat"], 30.0);
    // With the killed fetches: same row, 64 samples, 32 killed.
    let out = common::run_ok(
        common::culprit()
            .args([
                "ibs",
                "--fetch",
                "--include-killed",
                "--format",
                "json",
                "-i",
            ])
            .arg(&data),
    );
    let j: Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = j["fetch"]["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(
        (rows[0]["all"].as_u64(), rows[0]["killed"].as_u64()),
        (Some(64), Some(32))
    );
    assert_eq!(rows[0]["attempted"], 32);
}

/// Data-centric tables of the synthetic matrix multiply: the page of matrix_a (4 misses of 20
/// cycles) leads by misses, a page of matrix_b (2 misses of 280 cycles) by latency, and the
/// reads of the global `n` (one missing) resolve to the ELF data object `n`.
#[test]
fn test_synthetic_data_centric_tables() {
    let bin = common::workload("simple_classic");
    let f = analyze_multiply(&bin);
    assert_eq!(
        f.file_delta, 0,
        "PIE text: file offset == SVMA (the generator relies on it)"
    );
    let n_reads = f.rip_reads.iter().filter(|r| r.1 == f.n_addr).count() as u64;
    assert!(n_reads >= 3, "multiply_matrices reads n in each loop test");
    let dir = common::scratch("ibs-synthetic-data");
    let data = dir.join("ibs.data");
    write_synthetic(&bin, &f, &data);
    let out = common::run_ok(
        common::culprit()
            .args(["ibs", "--data", "--format", "json", "-i"])
            .arg(&data),
    );
    let j: Value = serde_json::from_slice(&out.stdout).unwrap();
    let d = &j["data"];
    // 60 (b) + 4 (a) + 1 (n).
    assert_eq!(d["dc_miss"], 65);
    let pages = &d["pages"];
    assert_eq!(pages["by_misses"][0]["key"], "0x7f0000000000");
    assert_eq!(pages["by_misses"][0]["dc_miss"], 4);
    assert_eq!(pages["by_misses"][0]["miss_lat_total"], 80);
    // Rounds 0 and 1 of b (offsets 0 and 4000) share the first page.
    assert_eq!(pages["by_latency"][0]["key"], "0x7f0040000000");
    assert_eq!(pages["by_latency"][0]["dc_miss"], 2);
    assert_eq!(pages["by_latency"][0]["miss_lat_total"], 560);
    let syms = d["symbols"]["by_misses"].as_array().unwrap();
    assert_eq!(syms[0]["key"], "[anon]");
    assert_eq!(syms[0]["dc_miss"], 64);
    let n = syms
        .iter()
        .find(|r| r["key"] == "n (simple_classic)")
        .unwrap_or_else(|| panic!("no data symbol n in {syms:?}"));
    assert_eq!(n["dc_miss"], 1);
    assert_eq!(n["miss_lat_total"], 100);
    assert_eq!(n["local"], 1);
    assert_eq!(n["accesses"], 64 * n_reads);
}

/// A truncated IBS file loses the header features that name the IBS PMUs: culprit ibs says
/// so instead of claiming there are no IBS samples.
#[test]
fn test_ibs_on_truncated_file_explains_the_lost_pmu_mappings() {
    let dir = common::scratch("ibs-truncated");
    let path = dir.join("trunc.data");
    let full = std::fs::read(fixture("ibs-fam19h_m11_zen4.data")).unwrap();
    std::fs::write(&path, &full[..2500]).unwrap();
    let out = common::culprit()
        .args(["ibs", "-i"])
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("truncated or corrupt") && err.contains("HEADER_PMU_MAPPINGS"),
        "{err}"
    );
    // culprit script still prints the samples read, and exits 1.
    let out = common::culprit()
        .args(["script", "-i"])
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).lines().count() >= 10);
}

/// Interop: the installed perf's own `perf report -D` IBS lines equal culprit script's, for
/// the four fixture files (the stored vectors are checked above; this checks live perf).
#[test]
fn test_script_ibs_lines_equal_live_perf_report_dump() {
    if !common::require_perf("test_script_ibs_lines_equal_live_perf_report_dump") {
        return;
    }
    let ibs_lines = |text: &str| -> Vec<String> {
        text.lines()
            .filter(|l| l.starts_with("ibs_") || l.starts_with("Ibs") || l.starts_with("ic_ibs"))
            // perf's per-event summary at the end (`ibs_op// stats:`) is not a sample line.
            .filter(|l| !l.ends_with(" stats:"))
            .map(str::to_string)
            .collect()
    };
    for variant in VARIANTS {
        let file = fixture(&format!("ibs-{variant}.data"));
        let perf = common::perf()
            .args(["report", "-D", "-i"])
            .arg(&file)
            .output()
            .unwrap();
        assert!(perf.status.success(), "perf report -D failed on {variant}");
        let want = ibs_lines(&String::from_utf8_lossy(&perf.stdout));
        let out = common::run_ok(common::culprit().args(["script", "-i"]).arg(&file));
        let got = ibs_lines(&String::from_utf8_lossy(&out.stdout));
        assert!(!want.is_empty());
        assert_eq!(got, want, "{variant}");
    }
}

/// ARM SPE (docs/spe.md): `culprit ibs --data` takes an SPE recording, counts each load or
/// store record once (its `memory` sample, not its l1d/llc/tlb samples) and says SPE.
#[test]
fn test_ibs_data_tables_of_an_spe_recording() {
    let out = common::run_ok(
        common::culprit()
            .args(["ibs", "--data", "-i"])
            .arg(fixture("spe/spe-crafted.data")),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("ARM SPE data-centric: 2 memory ops with a data address, 1 DC misses"),
        "{text}"
    );
    // The missing load: VA, its line, total latency 120 as miss latency.
    let row = text
        .lines()
        .find(|l| l.ends_with("0x7fff12345678"))
        .unwrap_or_else(|| panic!("{text}"));
    let cols: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(cols[..3], ["1", "120", "1"], "{row}");
    let json = ibs_json("spe/spe-crafted.data", &["--data"]);
    assert_eq!(json["data"]["accesses"], 2, "{json}");
    assert_eq!(json["data"]["dc_miss"], 1, "{json}");
    // The note names the source, as the table does.
    assert_eq!(json["data"]["source"], "spe", "{json}");
    let notes = json["notes"].to_string();
    assert!(notes.contains("from ARM SPE records"), "{notes}");
}
