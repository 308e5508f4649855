//! PEBS memory samples: `culprit report --sort mem,snoop,tlb,locked,blocked` against perf
//! 6.1's `perf report --mem-mode` (and `perf mem report`), and `culprit ibs --data` fed by
//! PEBS samples, on the real PEBS load-latency file of the corpus and on a crafted file whose
//! data_src values cover remote/hops/snoopx/blocked/lvl_num variants.

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

/// perf 5.17 `-d -W` MEM_TRANS_RETIRED.LOAD_LATENCY recording (WEIGHT_STRUCT, DATA_SRC).
fn weight_struct_fixture() -> PathBuf {
    common::repo_root().join(
        "crates/decode/tests/fixtures/real-perf-data/google-perf_data_converter/perf.data.weight_struct",
    )
}

/// Rows of a `--stdio` report: the last `nkeys` columns (joined by tabs) -> overhead
/// percentage (summed over rows that print the same). Columns are split at runs of two or
/// more spaces, not at the dotted rule's extents: perf sizes the memory column for 24
/// characters and lets longer texts ("Remote socket, same board Any cache hit") overflow it.
fn parse_perf(text: &str, nkeys: usize) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let fields: Vec<&str> = line
            .trim()
            .split("  ")
            .map(str::trim)
            .filter(|f| !f.is_empty())
            .collect();
        assert!(fields.len() > nkeys, "unexpected perf line: {line}");
        let pct: f64 = fields[0].trim_end_matches('%').parse().expect("overhead");
        let key = fields[fields.len() - nkeys..].join("\t");
        *out.entry(key).or_insert(0.0) += pct;
    }
    out
}

/// culprit's JSON rows in the same shape.
fn parse_culprit(json: &Value, keys: &[&str]) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    for row in json["rows"].as_array().expect("rows") {
        let key: Vec<String> = keys
            .iter()
            .map(|k| row["keys"][*k].as_str().expect("text key").to_string())
            .collect();
        let p: f64 = row["percent"]
            .as_object()
            .expect("percent")
            .values()
            .map(|v| v.as_f64().unwrap())
            .sum();
        *out.entry(key.join("\t")).or_insert(0.0) += p;
    }
    out
}

fn assert_same_rows(what: &str, perf: &BTreeMap<String, f64>, ours: &BTreeMap<String, f64>) {
    assert!(!perf.is_empty(), "{what}: perf printed no rows");
    let mut problems = Vec::new();
    for (k, p) in perf {
        match ours.get(k) {
            None => problems.push(format!("perf row missing in culprit: {k:?} {p}")),
            Some(o) if (p - o).abs() > 0.1 => problems.push(format!("{k:?}: perf {p} culprit {o}")),
            _ => {}
        }
    }
    for (k, o) in ours {
        if !perf.contains_key(k) {
            problems.push(format!("culprit row not in perf: {k:?} {o}"));
        }
    }
    assert!(problems.is_empty(), "{what}:\n{}", problems.join("\n"));
}

/// `perf report --mem-mode --no-children --sort SORT` (perf refuses memory keys without
/// --mem-mode) against `culprit report --no-children --sort SORT`.
fn compare_mem_sort(file: &Path, sort: &str) {
    compare_mem_sort_mode(file, sort, &["--no-children"]);
}

/// [`compare_mem_sort`] with other flags.
/// `mode`: flags given to both (`--no-children`, or none: each one's default).
fn compare_mem_sort_mode(file: &Path, sort: &str, mode: &[&str]) {
    let keys: Vec<&str> = sort.split(',').collect();
    let out = common::run_ok(
        common::perf()
            .arg("report")
            .arg("-i")
            .arg(file)
            .args(["--stdio", "-g", "none", "--mem-mode", "--sort", sort])
            .args(mode),
    );
    let perf = parse_perf(&String::from_utf8_lossy(&out.stdout), keys.len());
    let out = common::run_ok(
        common::culprit()
            .arg("report")
            .arg("-i")
            .arg(file)
            .args(["--format", "json", "--sort", sort])
            .args(mode),
    );
    let json: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(json["mem_mode"], true);
    assert_eq!(json["children"], false);
    assert_same_rows(
        &format!("{} --sort {sort}", file.display()),
        &perf,
        &parse_culprit(&json, &keys),
    );
}

#[test]
fn test_report_memory_keys_match_perf_mem_mode_on_real_pebs_file() {
    let f = weight_struct_fixture();
    for sort in [
        "mem,snoop,tlb,locked",
        "mem,snoop,tlb,locked,blocked",
        "mem",
        "tlb",
        "locked",
        "comm,mem",
    ] {
        compare_mem_sort(&f, sort);
    }
    // perf takes `lock` for `locked` (a prefix): so does culprit.
    let lock: Value = serde_json::from_slice(
        &common::run_ok(common::culprit().arg("report").arg("-i").arg(&f).args([
            "--format",
            "json",
            "--no-children",
            "--sort",
            "lock",
        ]))
        .stdout,
    )
    .unwrap();
    assert_eq!(lock["sort"], serde_json::json!(["locked"]));
    assert_eq!(lock["rows"][1]["keys"]["locked"], "Yes");
    // `perf mem report` is `perf report --mem-mode`: same rows (it adds a Samples column).
    let sort = "mem,snoop,tlb,locked,blocked";
    let out = common::run_ok(
        common::perf()
            .args(["mem", "report", "--stdio", "-i"])
            .arg(&f)
            .args(["--sort", sort]),
    );
    let perf = parse_perf(&String::from_utf8_lossy(&out.stdout), 5);
    let json: Value = serde_json::from_slice(
        &common::run_ok(common::culprit().arg("report").arg("-i").arg(&f).args([
            "--format",
            "json",
            "--no-children",
            "--sort",
            sort,
        ]))
        .stdout,
    )
    .unwrap();
    let keys: Vec<&str> = sort.split(',').collect();
    assert_same_rows("perf mem report", &perf, &parse_culprit(&json, &keys));
    // Weights, not periods: the event's total is the sum of the weights (perf's "Total
    // weight : 1725"), and LFB/MAB hits are 5 samples of 729.
    assert_eq!(json["events"][0]["period"], 1725);
    let lfb = json["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["keys"]["mem"] == "LFB/MAB or LFB/MAB hit")
        .expect("LFB row");
    let ev = json["events"][0]["name"].as_str().unwrap();
    assert_eq!(
        (lfb["samples"][ev].as_u64(), lfb["period"][ev].as_u64()),
        (Some(5), Some(729))
    );
}

/// One PEBS access as perf script prints it: comm, data address, weight, and whether the
/// LVL text says the L1 served it.
struct ScriptAccess {
    comm: String,
    addr: u64,
    weight: u64,
    l1_or_na: bool,
}

fn perf_script_accesses(file: &Path) -> Vec<ScriptAccess> {
    let out = common::run_ok(
        common::perf()
            .args(["script", "-F", "comm,addr,weight,data_src", "-i"])
            .arg(file),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let mut v = Vec::new();
    for line in text.lines() {
        // "  comm  addr  data_src |OP LOAD|LVL L1 or L1 hit|SNP ...|BLK  N/A   weight"
        let Some(bar) = line.find('|') else { continue };
        let head: Vec<&str> = line[..bar].split_whitespace().collect();
        let n = head.len();
        assert!(n >= 3, "{line}");
        let lvl = line
            .split('|')
            .find_map(|f| f.strip_prefix("LVL "))
            .expect("LVL field");
        let weight: u64 = line
            .rsplit('|')
            .next()
            .unwrap()
            .split_whitespace()
            .last()
            .unwrap()
            .parse()
            .unwrap();
        v.push(ScriptAccess {
            comm: head[..n - 2].join(" "),
            addr: u64::from_str_radix(head[n - 2], 16).unwrap(),
            weight,
            l1_or_na: lvl.starts_with("L1 ") || lvl.starts_with("N/A"),
        });
    }
    v
}

fn ibs_data_json(file: &Path, extra: &[&str]) -> Value {
    let out = common::run_ok(
        common::culprit()
            .args(["ibs", "--data", "--format", "json", "-i"])
            .arg(file)
            .args(extra),
    );
    common::validate_json_schema("ibs", &String::from_utf8_lossy(&out.stdout));
    serde_json::from_slice(&out.stdout).expect("JSON")
}

#[test]
fn test_ibs_data_from_real_pebs_file_agrees_with_perf_script() {
    let f = weight_struct_fixture();
    let acc = perf_script_accesses(&f);
    assert_eq!(acc.len(), 14);
    let j = ibs_data_json(&f, &["--top", "100"]);
    let d = &j["data"];
    assert_eq!(d["source"], "pebs");
    // Not recorded in this file: absent, not empty.
    assert!(
        d["phys_pages"].is_null() && d["page_sizes"].is_null(),
        "{d}"
    );
    assert_eq!(
        d["accesses"].as_u64(),
        Some(acc.iter().filter(|a| a.addr != 0).count() as u64)
    );
    let misses: Vec<&ScriptAccess> = acc.iter().filter(|a| !a.l1_or_na).collect();
    assert_eq!(d["dc_miss"].as_u64(), Some(misses.len() as u64));
    // Per command and per cache line, counted here from perf script's lines.
    let mut by_comm: BTreeMap<String, (u64, u64, u64)> = BTreeMap::new();
    let mut by_line: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for a in &acc {
        let e = by_comm.entry(a.comm.clone()).or_default();
        e.0 += u64::from(!a.l1_or_na);
        e.1 += if a.l1_or_na { 0 } else { a.weight };
        e.2 += a.weight;
        if !a.l1_or_na {
            let l = by_line.entry(format!("{:#x}", a.addr & !63)).or_default();
            l.0 += 1;
            l.1 += a.weight;
        }
    }
    let comms = d["comms"]["by_misses"].as_array().unwrap();
    assert_eq!(comms.len(), by_comm.values().filter(|c| c.0 > 0).count());
    for row in comms {
        let (m, lat, all) = by_comm[row["key"].as_str().unwrap()];
        assert_eq!(row["dc_miss"].as_u64(), Some(m), "{row}");
        assert_eq!(row["miss_lat_total"].as_u64(), Some(lat), "{row}");
        assert_eq!(row["lat_total"].as_u64(), Some(all), "{row}");
        // Skylake has no instruction latency (var2 is always 0): absent, not 0.
        assert!(row["ins_lat_total"].is_null(), "{row}");
        assert_eq!(row["remote"], 0);
    }
    let lines = d["lines"]["by_latency"].as_array().unwrap();
    assert_eq!(lines.len(), by_line.len());
    for row in lines {
        let (m, lat) = by_line[row["key"].as_str().unwrap()];
        assert_eq!(
            (row["dc_miss"].as_u64(), row["miss_lat_total"].as_u64()),
            (Some(m), Some(lat))
        );
    }
    // The biggest miss: kstaled's LFB hit of 249 cycles.
    assert_eq!(lines[0]["miss_lat_total"], 249);
    // Without IBS the fetch and op tables are refused with a reason, the data ones are not.
    let out = common::culprit()
        .args(["ibs", "--op", "-i"])
        .arg(&f)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("only PEBS memory samples"));
    let text = common::run_ok(common::culprit().args(["ibs", "-i"]).arg(&f));
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("# PEBS data-centric: 14 memory ops"),
        "{text}"
    );
}

// perf_mem_data_src fields, written out here from the uapi header (not culprit's constants).
const LOAD: u64 = 0x02;
const STORE: u64 = 0x04;
const LVL_HIT: u64 = 0x02;
const LVL_MISS: u64 = 0x04;
const LVL_L1: u64 = 0x08;
const LVL_L3: u64 = 0x40;
const LVL_LOC_RAM: u64 = 0x80;
const LVL_REM_RAM1: u64 = 0x100;
const LVL_REM_CCE2: u64 = 0x800;
const LVL_IO: u64 = 0x1000;
const LVL_UNC: u64 = 0x2000;
const SNP_NA: u64 = 0x01;
const SNP_NONE: u64 = 0x02;
const SNP_HIT: u64 = 0x04;
const SNP_MISS: u64 = 0x08;
const SNP_HITM: u64 = 0x10;
const LOCK_NA: u64 = 0x01;
const LOCKED: u64 = 0x02;
const TLB_NA: u64 = 0x01;
const TLB_HIT: u64 = 0x02;
const TLB_MISS: u64 = 0x04;
const TLB_L1: u64 = 0x08;
const TLB_L2: u64 = 0x10;
const TLB_WK: u64 = 0x20;
const TLB_OS: u64 = 0x40;

/// One data_src value from its fields.
#[allow(clippy::too_many_arguments)]
fn data_src(
    op: u64,
    lvl: u64,
    snoop: u64,
    lock: u64,
    tlb: u64,
    lvl_num: u64,
    remote: u64,
    snoopx: u64,
    blk: u64,
    hops: u64,
) -> u64 {
    op | lvl << 5
        | snoop << 19
        | lock << 24
        | tlb << 26
        | lvl_num << 33
        | remote << 37
        | snoopx << 38
        | blk << 40
        | hops << 43
}

/// (comm, data address, weight var1, var2, data_src) of the crafted file, in time order.
fn crafted_samples() -> Vec<(&'static str, u64, u64, u64, u64)> {
    vec![
        // Remote RAM two hops away, snoop hit + forward, walker hit, data blocked.
        (
            "alpha",
            0x7f00_0000_1008,
            300,
            12,
            data_src(
                LOAD,
                LVL_REM_RAM1 | LVL_HIT,
                SNP_HIT,
                0,
                TLB_WK | TLB_HIT,
                0xd,
                1,
                1,
                2,
                2,
            ),
        ),
        // Remote cache three hops away, HitM, locked, L2 TLB miss, address blocked.
        (
            "alpha",
            0x7f00_0000_1010,
            500,
            20,
            data_src(
                LOAD,
                LVL_REM_CCE2 | LVL_HIT,
                SNP_HITM,
                LOCKED,
                TLB_L2 | TLB_MISS,
                0xb,
                1,
                0,
                4,
                3,
            ),
        ),
        // Local RAM, snoop miss + peer, fault miss, data and address blocked.
        (
            "beta",
            0x7f00_0000_2040,
            150,
            5,
            data_src(
                LOAD,
                LVL_LOC_RAM | LVL_HIT,
                SNP_MISS,
                0,
                TLB_OS | TLB_MISS,
                0xd,
                0,
                2,
                6,
                0,
            ),
        ),
        // A store without latency: everything N/A but the L1 hit.
        (
            "beta",
            0x7f00_0000_3000,
            0,
            0,
            data_src(
                STORE,
                LVL_L1 | LVL_HIT,
                SNP_NA,
                LOCK_NA,
                TLB_NA,
                1,
                0,
                0,
                1,
                0,
            ),
        ),
        // L3 miss with lvl_num 9 (CXL, which perf 6.1 has no name for), one hop, local.
        (
            "gamma",
            0x7f00_0000_4000,
            80,
            3,
            data_src(
                LOAD,
                LVL_L3 | LVL_MISS,
                SNP_NONE,
                0,
                TLB_L1 | TLB_L2 | TLB_HIT,
                9,
                0,
                0,
                0,
                1,
            ),
        ),
        // No data source at all.
        ("gamma", 0x7f00_0000_5000, 60, 0, 0),
        // Uncached with lvl_num 8.
        (
            "delta",
            0x7f00_0000_6000,
            40,
            1,
            data_src(
                LOAD,
                LVL_UNC | LVL_HIT,
                SNP_NONE,
                0,
                TLB_L1 | TLB_HIT,
                8,
                0,
                0,
                0,
                0,
            ),
        ),
        // PMEM through lvl_num only.
        (
            "delta",
            0x7f00_0000_7000,
            220,
            2,
            data_src(
                LOAD,
                LVL_HIT,
                SNP_NONE,
                0,
                TLB_L1 | TLB_HIT,
                0xe,
                0,
                0,
                0,
                0,
            ),
        ),
        // As the first but without snoopx: perf's snoop key compares mem_snoop only.
        (
            "alpha",
            0x7f00_0000_1020,
            90,
            4,
            data_src(
                LOAD,
                LVL_REM_RAM1 | LVL_HIT,
                SNP_HIT,
                0,
                TLB_WK | TLB_HIT,
                0xd,
                1,
                0,
                2,
                2,
            ),
        ),
        // Same mem_lvl as the local RAM access, another lvl_num: perf's mem key compares
        // mem_lvl only, so this joins that row.
        (
            "beta",
            0x7f00_0000_8000,
            70,
            0,
            data_src(
                LOAD,
                LVL_LOC_RAM | LVL_HIT,
                SNP_MISS,
                0,
                TLB_OS | TLB_MISS,
                3,
                0,
                2,
                6,
                0,
            ),
        ),
        // I/O.
        (
            "delta",
            0x7f00_0000_9000,
            33,
            0,
            data_src(
                LOAD,
                LVL_IO | LVL_HIT,
                SNP_NONE,
                0,
                TLB_L1 | TLB_HIT,
                0xa,
                0,
                0,
                0,
                0,
            ),
        ),
        // A store that missed the L1, as Intel's precise store events say it: "L1 miss",
        // no latency (weight 0: counts 1 in memory mode).
        (
            "epsilon",
            0x7f00_0000_a000,
            0,
            0,
            data_src(
                STORE,
                LVL_L1 | LVL_MISS,
                SNP_NA,
                LOCK_NA,
                TLB_NA,
                0,
                0,
                0,
                0,
                0,
            ),
        ),
    ]
}

/// Writes a PEBS load-latency style perf.data (IDENTIFIER, IP, TID, TIME, ADDR, CPU,
/// PERIOD, WEIGHT_STRUCT, DATA_SRC, PHYS_ADDR, DATA_PAGE_SIZE) of [`crafted_samples`], one process per comm; the
/// samples `rounds` times over, each time followed by a FINISHED_ROUND record. With
/// `chains`, each sample has a user call chain (its IP, then one of three callers).
fn write_crafted_pebs(path: &Path, rounds: u64, chains: bool) {
    use culprit_collect::perfdata::records::{self, SampleId};
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
            | sample_type::WEIGHT_STRUCT
            | sample_type::DATA_SRC
            | sample_type::PHYS_ADDR
            | sample_type::DATA_PAGE_SIZE
            | if chains { sample_type::CALLCHAIN } else { 0 },
        flags: attr_flag::SAMPLE_ID_ALL | attr_flag::COMM | (2 << attr_flag::PRECISE_IP_SHIFT),
        ..Attr::default()
    };
    let mut w = PerfDataWriter::new(
        std::fs::File::create(path).unwrap(),
        vec![FileAttr {
            attr,
            name: "cpu/mem-loads,ldlat=30/P".into(),
            ids: vec![9],
        }],
    )
    .unwrap();
    let samples = crafted_samples();
    let mut comms: Vec<&str> = samples.iter().map(|s| s.0).collect();
    comms.dedup();
    comms.sort();
    comms.dedup();
    let pid_of = |c: &str| 100 + comms.iter().position(|x| *x == c).unwrap() as u32;
    let mut buf = Vec::new();
    for c in &comms {
        let pid = pid_of(c);
        let sid = SampleId {
            pid,
            tid: pid,
            time: 1,
            id: 9,
            cpu: 0,
        };
        records::push_comm(&mut buf, &attr, pid, pid, c.as_bytes(), true, &sid);
    }
    let n = samples.len() as u64;
    for (i, &(comm, addr, var1, var2, ds)) in (0..rounds).flat_map(|_| samples.iter()).enumerate() {
        let pid = pid_of(comm);
        let mut body = Vec::new();
        let ip = 0x40_1000 + 16 * (i as u64 % n);
        for v in [9u64, ip] {
            body.extend_from_slice(&v.to_le_bytes());
        }
        body.extend_from_slice(&pid.to_le_bytes());
        body.extend_from_slice(&pid.to_le_bytes());
        let cpu = (i % 2) as u64;
        for v in [1_000 + i as u64, addr, cpu, 1000] {
            body.extend_from_slice(&v.to_le_bytes());
        }
        if chains {
            let caller = 0x40_2000 + 0x100 * (i as u64 % 3);
            for v in [3u64, 0xffff_ffff_ffff_fe00, ip, caller] {
                body.extend_from_slice(&v.to_le_bytes());
            }
        }
        // Physical address: the virtual one moved to 4 GiB (none for the sample without
        // data source); the remote accesses' line is in a 2 MiB page.
        let phys = if ds == 0 {
            0
        } else {
            addr - 0x7f00_0000_0000 + (1 << 32)
        };
        let page = if addr & !0xfff == 0x7f00_0000_1000 {
            2 << 20
        } else {
            4096
        };
        for v in [var1 | var2 << 32, ds, phys, page] {
            body.extend_from_slice(&v.to_le_bytes());
        }
        buf.extend_from_slice(&9u32.to_le_bytes());
        buf.extend_from_slice(&(2u16 | (1 << 14)).to_le_bytes());
        buf.extend_from_slice(&((body.len() + 8) as u16).to_le_bytes());
        buf.extend_from_slice(&body);
        if (i as u64 + 1).is_multiple_of(n) {
            // PERF_RECORD_FINISHED_ROUND: where a parallel read may split.
            buf.extend_from_slice(&68u32.to_le_bytes());
            buf.extend_from_slice(&0u16.to_le_bytes());
            buf.extend_from_slice(&8u16.to_le_bytes());
        }
    }
    w.write_data(&buf).unwrap();
    w.finish(&Features {
        arch: Some("x86_64".into()),
        cpuid: Some("GenuineIntel,6,85,4".into()),
        pmu_mappings: vec![(4, "cpu".into())],
        ..Features::default()
    })
    .unwrap();
}

#[test]
fn test_report_memory_keys_match_perf_on_crafted_data_src_variants() {
    let dir = common::scratch("mem-crafted-report");
    let f = dir.join("pebs.data");
    write_crafted_pebs(&f, 1, false);
    for sort in [
        "mem",
        "snoop",
        "tlb",
        "locked",
        "blocked",
        "mem,snoop,tlb,locked,blocked",
        "comm,mem,snoop",
    ] {
        compare_mem_sort(&f, sort);
    }
}

#[test]
fn test_ibs_data_from_crafted_pebs_file() {
    let dir = common::scratch("mem-crafted-ibs");
    let f = dir.join("pebs.data");
    write_crafted_pebs(&f, 1, false);
    let j = ibs_data_json(&f, &[]);
    let d = &j["data"];
    assert_eq!(d["source"], "pebs");
    assert_eq!(d["accesses"], 12);
    // Served beyond the L1 or missing it: all but the L1 store and the sample without a
    // data source.
    assert_eq!(d["dc_miss"], 10);
    // The line of the three remote accesses (300 + 500 + 90 cycles).
    let top = &d["lines"]["by_misses"][0];
    assert_eq!(top["key"], "0x7f0000001000");
    assert_eq!(
        (
            top["dc_miss"].as_u64(),
            top["miss_lat_total"].as_u64(),
            top["local"].as_u64(),
            top["remote"].as_u64()
        ),
        (Some(3), Some(890), Some(0), Some(3))
    );
    assert_eq!(
        (top["lat_total"].as_u64(), top["ins_lat_total"].as_u64()),
        (Some(890), Some(36))
    );
    // beta: the local RAM loads miss (150 + 70), the store neither misses nor has a latency.
    let beta = d["comms"]["by_misses"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["key"] == "beta")
        .expect("beta row")
        .clone();
    assert_eq!(
        (
            beta["accesses"].as_u64(),
            beta["dc_miss"].as_u64(),
            beta["miss_lat_total"].as_u64(),
            beta["local"].as_u64()
        ),
        (Some(3), Some(2), Some(220), Some(2))
    );
    // The uncached access is a miss served nowhere local or remote.
    let unc = d["addresses"]["by_misses"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["key"] == "0x7f0000006000")
        .expect("uncached row")
        .clone();
    assert_eq!(
        (unc["local"].as_u64(), unc["remote"].as_u64()),
        (Some(0), Some(0))
    );
    // The store's L1 miss is a miss of unknown source and no latency.
    let st = d["comms"]["by_misses"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["key"] == "epsilon")
        .expect("epsilon row")
        .clone();
    assert_eq!(
        (
            st["dc_miss"].as_u64(),
            st["miss_lat_total"].as_u64(),
            st["local"].as_u64(),
            st["remote"].as_u64()
        ),
        (Some(1), Some(0), Some(0), Some(0))
    );
    // Physical pages and page sizes (PHYS_ADDR, DATA_PAGE_SIZE).
    let top = &d["phys_pages"]["by_misses"][0];
    assert_eq!(
        (top["key"].as_str(), top["dc_miss"].as_u64()),
        (Some("0x100001000"), Some(3))
    );
    assert_eq!(
        d["page_sizes"],
        serde_json::json!([
            {"size": 4096, "accesses": 9, "dc_miss": 7},
            {"size": 2097152, "accesses": 3, "dc_miss": 3}
        ])
    );
    // The sample without data source is no miss: its address is in no table.
    assert!(!d["addresses"]["by_misses"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r["key"] == "0x7f0000005000"));
}

/// Memory keys through the parallel read (shares folded together) give what one pass over
/// stdin gives.
#[test]
fn test_memory_report_parallel_read_equals_stdin_read() {
    let dir = common::scratch("mem-crafted-parallel");
    let f = dir.join("pebs.data");
    write_crafted_pebs(&f, 3000, false);
    for sort in ["mem,snoop,tlb,locked,blocked", "comm,mem", "snoop,comm"] {
        let run = |input: &str, stdin: Option<&Path>| {
            let mut c = common::culprit();
            c.args(["report", "--no-children", "--sort", sort, "-i", input])
                .env("CULPRIT_READ_THREADS", "4");
            if let Some(p) = stdin {
                c.stdin(std::fs::File::open(p).unwrap());
            }
            String::from_utf8_lossy(&common::run_ok(&mut c).stdout).into_owned()
        };
        let path = f.display().to_string();
        let from_file = run(&path, None).replace(&path, "-");
        let from_stdin = run("-", Some(&f));
        assert_eq!(from_file, from_stdin, "--sort {sort}");
        // 3000 rounds of the 12 samples, weighted: 1545 a round (weights 0 count 1).
        assert!(
            from_file.contains("36000 samples, event count 4635000"),
            "{from_file}"
        );
    }
}

/// perf's memory mode adds a sample to its own row only: with call chains, memory-key
/// reports have no children, in perf and in culprit.
#[test]
fn test_memory_keys_with_call_chains_are_self_only_like_perf() {
    let dir = common::scratch("mem-crafted-chains");
    let f = dir.join("pebs.data");
    write_crafted_pebs(&f, 2, true);
    compare_mem_sort_mode(&f, "comm,mem", &[]);
    compare_mem_sort_mode(&f, "mem,tlb", &["--children"]);
}

/// As perf ("Selected --mem-mode but no mem data"), memory keys on a file without
/// PERF_SAMPLE_DATA_SRC are an error that says how to record one.
#[test]
fn test_memory_keys_on_a_file_without_data_src_fail_with_the_reason() {
    let f = common::repo_root().join("crates/decode/tests/fixtures/cpu-clock-c.data");
    let out = common::culprit()
        .args(["report", "--sort", "mem", "-i"])
        .arg(&f)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("PERF_SAMPLE_DATA_SRC"), "{err}");
    assert!(err.contains("perf mem record"), "{err}");
}
