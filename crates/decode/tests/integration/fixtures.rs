//! Every committed fixture reads with the counts perf reports for it (stored here, taken
//! from `perf report --stdio -i FILE`), and, where perf is installed, sample by sample and
//! frame by frame the same as `perf script` says.

use culprit_decode::model::DsoKind;

use crate::common::*;

/// (file, [(event, samples, period)], pipe mode, compressed, has call chains)
type Expect = (
    &'static str,
    &'static [(&'static str, u64, u64)],
    bool,
    bool,
    bool,
);

const FIXTURES: &[Expect] = &[
    (
        "cpu-clock-c.data",
        &[("cpu-clock", 103, 103_000_000)],
        false,
        false,
        false,
    ),
    (
        "cpu-clock-g.data",
        &[("cpu-clock", 93, 93_000_000)],
        false,
        false,
        true,
    ),
    (
        "compressed-g.data",
        &[("cpu-clock", 102, 102_000_000)],
        false,
        true,
        true,
    ),
    (
        "dwarf.data",
        &[("cpu-clock", 10, 50_000_000)],
        false,
        false,
        false,
    ),
    (
        "exec-g.data",
        &[("cpu-clock", 138, 138_000_000)],
        false,
        false,
        true,
    ),
    (
        "pipe-g.data",
        &[("cpu-clock", 102, 102_000_000)],
        true,
        false,
        true,
    ),
    (
        "pipe-compressed.data",
        &[("cpu-clock", 50, 50_000_000)],
        true,
        true,
        false,
    ),
    (
        "system-wide-g.data",
        &[("cpu-clock", 177, 177_000_000), ("dummy:HG", 0, 0)],
        false,
        false,
        true,
    ),
    (
        "two-events.data",
        &[
            ("task-clock/period=100000/", 300, 30_000_000),
            ("page-faults/period=20/", 9, 180),
        ],
        false,
        false,
        false,
    ),
    (
        "ibs-fam17h_m31_zen2.data",
        &[("ibs_fetch//", 7, 1_441_776), ("ibs_op//", 18, 6_501_456)],
        false,
        false,
        false,
    ),
    (
        "ibs-fam19h_m01_zen3.data",
        &[("ibs_fetch//", 7, 1_441_776), ("ibs_op//", 18, 6_501_456)],
        false,
        false,
        false,
    ),
    (
        "ibs-fam19h_m11_zen4.data",
        &[("ibs_fetch//", 7, 1_441_776), ("ibs_op//", 18, 6_501_456)],
        false,
        false,
        false,
    ),
    (
        "ibs-fam19h_m21_zen3.data",
        &[("ibs_fetch//", 7, 1_441_776), ("ibs_op//", 18, 6_501_456)],
        false,
        false,
        false,
    ),
];

#[test]
fn test_read_file_fixture_counts_match_perf_report() {
    for (file, events, pipe, compressed, chains) in FIXTURES {
        let p = culprit_decode::Reader::open(fixture(file))
            .collect()
            .unwrap_or_else(|e| panic!("{file}: {e}"));
        assert!(p.stopped.is_none(), "{file}: stopped {:?}", p.stopped);
        let got: Vec<(&str, u64, u64)> = p
            .events
            .iter()
            .map(|e| (e.name.as_str(), e.samples, e.period))
            .collect();
        assert_eq!(&got, events, "{file}");
        assert_eq!(p.lost, 0, "{file}");
        assert_eq!(p.meta.pipe_mode, *pipe, "{file}");
        assert_eq!(p.meta.compressed, *compressed, "{file}");
        assert_eq!(!p.frames.is_empty(), *chains, "{file}");
        assert_eq!(
            p.samples.len() as u64,
            events.iter().map(|e| e.1).sum::<u64>(),
            "{file}"
        );
        // Samples come in time order, as perf delivers them.
        assert!(
            p.samples.windows(2).all(|w| w[0].time <= w[1].time),
            "{file}: samples out of time order"
        );
        let (t0, t1) = p.meta.time_range.expect("time range");
        assert!(t0 <= t1);
        // perf leaves HEADER_SAMPLE_TIME zero for -z recordings.
        if let Some(h) = p.meta.header_time_range.filter(|&h| h != (0, 0)) {
            assert_eq!(h, (t0, t1), "{file}: HEADER_SAMPLE_TIME vs samples");
        }
    }
}

#[test]
fn test_read_file_fixtures_match_perf_script() {
    if !require_perf("decode::test_read_file_fixtures_match_perf_script") {
        return;
    }
    for (file, ..) in FIXTURES {
        let path = fixture(file);
        let p = culprit_decode::Reader::open(&path).collect().unwrap();
        let perf = perf_script(&path);
        assert_matches_perf(&p, &perf, file);
    }
}

#[test]
fn test_read_file_header_features() {
    let p = culprit_decode::Reader::open(fixture("cpu-clock-c.data"))
        .collect()
        .unwrap();
    let m = &p.meta;
    assert_eq!(m.hostname.as_deref(), Some("vm"));
    assert_eq!(m.perf_version.as_deref(), Some("6.1.187"));
    assert_eq!(m.arch.as_deref(), Some("x86_64"));
    assert_eq!(m.nr_cpus, Some(2));
    assert!(m
        .cmdline
        .as_deref()
        .unwrap()
        .contains("-e cpu-clock -c 1000000"));
    assert!(m.cpuid.as_deref().unwrap().starts_with("GenuineIntel,"));
    assert!(m.total_mem_kb.unwrap() > 0);
    assert!(m.pmu_mappings.contains(&(1, "software".to_string())));
    // The workload's DSO got its build-id from HEADER_BUILD_ID.
    let shares = p.dsos.iter().find(|d| d.short_name == "shares").unwrap();
    assert_eq!(shares.kind, DsoKind::Elf);
    assert_eq!(shares.build_id.as_ref().map(Vec::len), Some(20));
    assert!(p
        .dsos
        .iter()
        .any(|d| d.kind == DsoKind::Kernel && d.path == "[kernel.kallsyms]"));
}

#[test]
fn test_read_file_ibs_header_facts() {
    let p = culprit_decode::Reader::open(fixture("ibs-fam19h_m11_zen4.data"))
        .collect()
        .unwrap();
    assert_eq!(p.meta.cpuid.as_deref(), Some("AuthenticAMD,25,17,1"));
    assert_eq!(p.events[0].pmu.as_deref(), Some("ibs_fetch"));
    assert_eq!(p.events[1].pmu.as_deref(), Some("ibs_op"));
}

#[test]
fn test_read_file_exec_replaces_maps() {
    // `sh -c "shares 3; exec shares 10"`: after the exec the sh process's samples must
    // resolve into the new executable, and its comm is the new one.
    let p = culprit_decode::Reader::open(fixture("exec-g.data"))
        .collect()
        .unwrap();
    let shares = p
        .dsos
        .iter()
        .position(|d| d.short_name == "shares")
        .unwrap() as u32;
    let user: Vec<_> = p
        .samples
        .iter()
        .filter(|s| s.cpumode == culprit_decode::model::CpuMode::User)
        .collect();
    assert!(!user.is_empty());
    for s in &user {
        assert_eq!(p.str(s.comm), "shares");
        assert_eq!(s.location.dso, Some(shares), "{s:?}");
    }
    // Two processes ran shares: the child (fork + exec) and the exec'd shell.
    let mut pids: Vec<i32> = user.iter().map(|s| s.pid).collect();
    pids.sort();
    pids.dedup();
    assert_eq!(pids.len(), 2, "{pids:?}");
}

#[test]
fn test_read_file_dwarf_keeps_user_regs_and_stack() {
    let p = culprit_decode::Reader::open(fixture("dwarf.data"))
        .collect()
        .unwrap();
    let e = &p.events[0];
    assert_eq!(e.sample_regs_user, 0xff0fff);
    assert_eq!(e.sample_stack_user, 1024);
    for s in &p.samples {
        assert_eq!(p.user_regs(s).len(), 0xff0fffu64.count_ones() as usize);
        let stack = p.user_stack(s);
        assert!(!stack.is_empty() && stack.len() <= 1024);
        // x86-64 perf_regs order: IP is register 8, SP register 7.
        assert_eq!(p.user_regs(s)[8], s.ip);
        assert_eq!(s.data_src, Some(0x1e05080021), "perf's PERF_MEM_NA pattern");
    }
}

#[test]
fn test_read_file_streaming_sees_the_same_samples() {
    for file in [
        "system-wide-g.data",
        "compressed-g.data",
        "pipe-g.data",
        "dwarf.data",
    ] {
        let path = fixture(file);
        let full = culprit_decode::Reader::open(&path).collect().unwrap();
        let mut seen = Vec::new();
        let streamed = culprit_decode::Reader::open(&path)
            .fold(|p, s| {
                let frames: Vec<_> = p
                    .callchain(s)
                    .iter()
                    .map(|f| (f.addr, f.location))
                    .collect();
                let dso = p
                    .dso(&s.location)
                    .map(|d| (d.path.clone(), d.build_id.clone()));
                seen.push((
                    s.time,
                    s.ip,
                    s.tid,
                    p.str(s.comm).to_string(),
                    dso,
                    frames,
                    p.user_stack(s).len(),
                ));
            })
            .unwrap();
        let want: Vec<_> = full
            .samples
            .iter()
            .map(|s| {
                let frames: Vec<_> = full
                    .callchain(s)
                    .iter()
                    .map(|f| (f.addr, f.location))
                    .collect();
                let dso = full
                    .dso(&s.location)
                    .map(|d| (d.path.clone(), d.build_id.clone()));
                (
                    s.time,
                    s.ip,
                    s.tid,
                    full.str(s.comm).to_string(),
                    dso,
                    frames,
                    full.user_stack(s).len(),
                )
            })
            .collect();
        assert_eq!(seen, want, "{file}");
        assert!(
            streamed.samples.is_empty() && streamed.frames.is_empty(),
            "{file}"
        );
        let totals = |p: &culprit_decode::Profile| {
            p.events
                .iter()
                .map(|e| (e.samples, e.period))
                .collect::<Vec<_>>()
        };
        assert_eq!(totals(&streamed), totals(&full), "{file}");
    }
}

/// The sched_switch fields of perf's recordings, decoded from the formats in the files
/// themselves (HEADER_TRACING_DATA; the pipe-mode TRACING_DATA record while streaming), as
/// `perf script` prints them for these files.
#[test]
fn test_sched_switch_fields_from_the_files_own_formats() {
    use culprit_decode::tracepoint::FieldValue::{Signed, Str};
    // perf script: `sleep 28032 … prev_comm=sleep prev_pid=28032 prev_prio=120
    // prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120`.
    let p = culprit_decode::Reader::open(fixture("sched-switch.data"))
        .collect()
        .unwrap();
    assert_eq!(p.samples.len(), 1);
    let s = &p.samples[0];
    let f = p
        .tracepoint_format(s.event)
        .expect("format of sched:sched_switch");
    assert_eq!(f.full_name(), "sched:sched_switch");
    let fields = f.decode(p.raw(s));
    let want = [
        ("prev_comm", Str("sleep".into())),
        ("prev_pid", Signed(28032)),
        ("prev_prio", Signed(120)),
        ("prev_state", Signed(1)),
        ("next_comm", Str("swapper/1".into())),
        ("next_pid", Signed(0)),
        ("next_prio", Signed(120)),
    ];
    assert_eq!(fields, want.to_vec());
    // The header alone names the formats (before any record is read).
    let header = culprit_decode::Reader::open(fixture("sched-switch.data"))
        .tracepoint_formats()
        .unwrap();
    assert_eq!(header.len(), 1);
    assert_eq!(header[0].id, f.id);

    // Pipe mode, streamed: the formats are known when the first sample arrives.
    let mut seen = Vec::new();
    culprit_decode::Reader::open(fixture("sched-switch-pipe.data"))
        .fold(|p, s| {
            let f = p
                .tracepoint_format(s.event)
                .expect("format while streaming");
            seen.push(f.decode(p.raw(s))[3].1.clone());
        })
        .unwrap();
    // perf script: prev_state=D, then S (TASK_UNINTERRUPTIBLE 2, TASK_INTERRUPTIBLE 1).
    assert_eq!(seen[..2], [Signed(2), Signed(1)]);
}
