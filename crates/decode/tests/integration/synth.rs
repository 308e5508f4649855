//! Hand-built perf.data files for the semantics perf recordings on this machine cannot show:
//! fork/exec map inheritance and replacement, data-only and build-id mmaps, kernel modules,
//! JIT/anon regions per pid, perf's round-based ordering, LOST/LOST_SAMPLES/THROTTLE
//! attribution, and every re-parsed sample field (READ groups, WEIGHT_STRUCT, DATA_SRC,
//! PHYS_ADDR, ADDR, BRANCH_STACK, RAW).

use culprit_decode::model::{CpuMode, DsoKind, Profile};
use culprit_decode::Reader;

// sample_type bits
const IP: u64 = 1 << 0;
const TID: u64 = 1 << 1;
const TIME: u64 = 1 << 2;
const ADDR: u64 = 1 << 3;
const READ: u64 = 1 << 4;
const CALLCHAIN: u64 = 1 << 5;
const CPU: u64 = 1 << 7;
const PERIOD: u64 = 1 << 8;
const RAW: u64 = 1 << 10;
const BRANCH_STACK: u64 = 1 << 11;
const DATA_SRC: u64 = 1 << 15;
const IDENTIFIER: u64 = 1 << 16;
const PHYS_ADDR: u64 = 1 << 19;
const WEIGHT_STRUCT: u64 = 1 << 24;
// attr flags
const SAMPLE_ID_ALL: u64 = 1 << 18;
// read_format
const RF_ID: u64 = 1 << 2;
const RF_GROUP: u64 = 1 << 3;

pub(crate) const ID_A: u64 = 11;
pub(crate) const ID_B: u64 = 22;
const TYPE_A: u64 = IDENTIFIER | IP | TID | TIME | CPU | PERIOD | CALLCHAIN;
const TYPE_B: u64 = IDENTIFIER
    | IP
    | TID
    | TIME
    | ADDR
    | CPU
    | READ
    | CALLCHAIN
    | RAW
    | BRANCH_STACK
    | WEIGHT_STRUCT
    | DATA_SRC
    | PHYS_ADDR;

pub(crate) const USER: u16 = 2;
const KERNEL: u16 = 1;
const CTX_KERNEL: u64 = -128i64 as u64;
const CTX_USER: u64 = -512i64 as u64;

fn attr(type_: u32, config: u64, period: u64, sample_type: u64, read_format: u64) -> Vec<u8> {
    let mut a = vec![0u8; 128];
    a[0..4].copy_from_slice(&type_.to_le_bytes());
    a[4..8].copy_from_slice(&128u32.to_le_bytes());
    a[8..16].copy_from_slice(&config.to_le_bytes());
    a[16..24].copy_from_slice(&period.to_le_bytes());
    a[24..32].copy_from_slice(&sample_type.to_le_bytes());
    a[32..40].copy_from_slice(&read_format.to_le_bytes());
    a[40..48].copy_from_slice(&(SAMPLE_ID_ALL | (1 << 20)).to_le_bytes());
    a
}

#[derive(Default)]
pub(crate) struct Data {
    pub(crate) bytes: Vec<u8>,
}

impl Data {
    pub(crate) fn rec(&mut self, ty: u32, misc: u16, mut body: Vec<u8>) {
        while !(body.len() + 8).is_multiple_of(8) {
            body.push(0);
        }
        self.bytes.extend_from_slice(&ty.to_le_bytes());
        self.bytes.extend_from_slice(&misc.to_le_bytes());
        self.bytes
            .extend_from_slice(&((body.len() + 8) as u16).to_le_bytes());
        self.bytes.extend_from_slice(&body);
    }

    /// Non-sample record with the sample_id trailer (TID, TIME, CPU, IDENTIFIER).
    pub(crate) fn rec_id(
        &mut self,
        ty: u32,
        misc: u16,
        mut body: Vec<u8>,
        pid: i32,
        time: u64,
        id: u64,
    ) {
        while !body.len().is_multiple_of(8) {
            body.push(0);
        }
        body.extend_from_slice(&pid.to_le_bytes());
        body.extend_from_slice(&pid.to_le_bytes());
        body.extend_from_slice(&time.to_le_bytes());
        body.extend_from_slice(&0u64.to_le_bytes());
        body.extend_from_slice(&id.to_le_bytes());
        self.rec(ty, misc, body);
    }

    pub(crate) fn round(&mut self) {
        self.rec(68, 0, Vec::new());
    }
}

pub(crate) fn u32s(v: &[u32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}
pub(crate) fn u64s(v: &[u64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}
fn cstr(s: &str) -> Vec<u8> {
    let mut b = s.as_bytes().to_vec();
    b.push(0);
    b
}

pub(crate) fn mmap2(pid: i32, start: u64, len: u64, pgoff: u64, prot: u32, path: &str) -> Vec<u8> {
    let mut b = u32s(&[pid as u32, pid as u32]);
    b.extend(u64s(&[start, len, pgoff]));
    b.extend(u32s(&[8, 1])); // maj, min
    b.extend(u64s(&[1234, 0])); // ino, ino_generation
    b.extend(u32s(&[prot, 2])); // prot, flags MAP_PRIVATE
    b.extend(cstr(path));
    b
}

fn mmap1(pid: i32, start: u64, len: u64, pgoff: u64, path: &str) -> Vec<u8> {
    let mut b = u32s(&[pid as u32, pid as u32]);
    b.extend(u64s(&[start, len, pgoff]));
    b.extend(cstr(path));
    b
}

pub(crate) fn comm(pid: i32, tid: i32, name: &str) -> Vec<u8> {
    let mut b = u32s(&[pid as u32, tid as u32]);
    b.extend(cstr(name));
    b
}

pub(crate) fn fork(pid: i32, ppid: i32, tid: i32, ptid: i32, time: u64) -> Vec<u8> {
    let mut b = u32s(&[pid as u32, ppid as u32, tid as u32, ptid as u32]);
    b.extend(u64s(&[time]));
    b
}

/// A sample of attr A: IDENTIFIER IP TID TIME CPU PERIOD CALLCHAIN.
pub(crate) fn sample_a(
    ip: u64,
    pid: i32,
    tid: i32,
    time: u64,
    period: u64,
    chain: &[u64],
) -> Vec<u8> {
    let mut b = u64s(&[ID_A, ip]);
    b.extend(u32s(&[pid as u32, tid as u32]));
    b.extend(u64s(&[time]));
    b.extend(u32s(&[1, 0]));
    b.extend(u64s(&[period, chain.len() as u64]));
    b.extend(u64s(chain));
    b
}

/// Builds the file: header, attrs (A: task-clock with PERIOD; B: raw r1c2, fixed period
/// 1000, memory-sample fields), their ids, then the data section.
pub(crate) fn file(data: &Data) -> Vec<u8> {
    let attrs = [
        (attr(1, 1, 4000, TYPE_A, 0), ID_A),
        (attr(4, 0x1c2, 1000, TYPE_B, RF_GROUP | RF_ID), ID_B),
    ];
    let attr_size = 128 + 16;
    let attrs_at = 104u64;
    let ids_at = attrs_at + (attr_size * attrs.len()) as u64;
    let data_at = ids_at + 8 * attrs.len() as u64;
    let mut f = b"PERFILE2".to_vec();
    f.extend(u64s(&[104, attr_size as u64]));
    f.extend(u64s(&[attrs_at, (attr_size * attrs.len()) as u64]));
    f.extend(u64s(&[data_at, data.bytes.len() as u64]));
    f.extend(u64s(&[0, 0])); // event types
    f.extend(u64s(&[0, 0, 0, 0])); // no features
    for (i, (a, _)) in attrs.iter().enumerate() {
        f.extend_from_slice(a);
        f.extend(u64s(&[ids_at + 8 * i as u64, 8]));
    }
    for (_, id) in &attrs {
        f.extend(u64s(&[*id]));
    }
    assert_eq!(f.len() as u64, data_at);
    f.extend_from_slice(&data.bytes);
    f
}

pub(crate) fn build() -> Vec<u8> {
    let mut d = Data::default();
    // Kernel and a module, shared by everyone.
    d.rec_id(
        1,
        KERNEL,
        mmap1(
            -1,
            0xffff_ffff_8100_0000,
            0x100_0000,
            0xffff_ffff_8100_0000,
            "[kernel.kallsyms]_text",
        ),
        -1,
        0,
        ID_A,
    );
    d.rec_id(
        1,
        KERNEL,
        mmap1(
            -1,
            0xffff_ffff_c000_0000,
            0x1_0000,
            0,
            "/lib/modules/6.1/kernel/drivers/foo-bar.ko",
        ),
        -1,
        0,
        ID_A,
    );
    // Process 100 "parent": app text, a data-only mmap2, an MMAP_DATA mmap, a build-id lib,
    // and a JIT region.
    d.rec_id(3, 0, comm(100, 100, "parent"), 100, 1, ID_A);
    d.rec_id(
        10,
        USER,
        mmap2(100, 0x40_0000, 0x1_0000, 0x1000, 5, "/usr/bin/app"),
        100,
        2,
        ID_A,
    );
    d.rec_id(
        10,
        USER,
        mmap2(100, 0x50_0000, 0x1_0000, 0, 1, "/usr/bin/data"),
        100,
        2,
        ID_A,
    );
    d.rec_id(
        1,
        USER | (1 << 13),
        mmap1(100, 0x58_0000, 0x1000, 0, "/usr/bin/data2"),
        100,
        2,
        ID_A,
    );
    {
        let mut b = u32s(&[100, 100]);
        b.extend(u64s(&[0x7f00_0000_0000, 0x1_0000, 0]));
        b.push(20); // build_id_size
        b.extend([0, 0, 0]);
        b.extend([0xaa; 20]);
        b.extend(u32s(&[5, 2]));
        b.extend(cstr("/usr/lib/libx.so"));
        d.rec_id(10, USER | (1 << 14), b, 100, 3, ID_A);
    }
    d.rec_id(
        10,
        USER,
        mmap2(100, 0x1000_0000, 0x1000, 0, 7, "//anon"),
        100,
        3,
        ID_A,
    );
    // t=10: user sample in app, called from libx.
    d.rec(
        9,
        USER,
        sample_a(
            0x40_0010,
            100,
            100,
            10,
            4000,
            &[CTX_USER, 0x40_0010, 0x7f00_0000_0100],
        ),
    );
    // t=11: kernel sample with a kernel+module+user chain.
    d.rec(
        9,
        KERNEL,
        sample_a(
            0xffff_ffff_8100_1234,
            100,
            100,
            11,
            4000,
            &[
                CTX_KERNEL,
                0xffff_ffff_8100_1234,
                0xffff_ffff_c000_0100,
                CTX_USER,
                0x40_0010,
            ],
        ),
    );
    // t=12: JIT code; t=13: data-only mapping addresses are not code.
    d.rec(9, USER, sample_a(0x1000_0010, 100, 100, 12, 4000, &[]));
    d.rec(9, USER, sample_a(0x50_0010, 100, 100, 13, 4000, &[]));
    // t=20: fork of 200 from 100; its sample at t=21 uses the inherited maps and comm.
    d.rec_id(7, 0, fork(200, 100, 200, 100, 20), 200, 20, ID_A);
    d.rec(9, USER, sample_a(0x40_0020, 200, 200, 21, 4000, &[]));
    // t=30: 200 execs "child": the old maps stay (as in perf) until the new text replaces
    // what it overlaps at t=31.
    d.rec_id(3, 1 << 13, comm(200, 200, "child"), 200, 30, ID_A);
    d.rec_id(
        10,
        USER,
        mmap2(200, 0x40_0000, 0x2000, 0, 5, "/usr/bin/child"),
        200,
        31,
        ID_A,
    );
    d.rec(9, USER, sample_a(0x40_0030, 200, 200, 32, 4000, &[]));
    d.rec(9, USER, sample_a(0x7f00_0000_0100, 200, 200, 33, 4000, &[]));
    // A thread of 100 renamed without exec keeps 100's maps.
    d.rec_id(7, 0, fork(100, 100, 101, 100, 34), 100, 34, ID_A);
    d.rec_id(3, 0, comm(100, 101, "worker"), 100, 35, ID_A);
    d.rec(9, USER, sample_a(0x40_0040, 100, 101, 36, 4000, &[]));
    // An unknown thread, and a chain with an invalid context marker (dropped, like perf).
    d.rec(
        9,
        USER,
        sample_a(
            0x40_0050,
            100,
            777,
            37,
            4000,
            &[CTX_USER, 0x40_0050, u64::MAX],
        ),
    );
    // Attr B sample with every memory-sample field.
    {
        let mut b = u64s(&[ID_B, 0x40_0060]);
        b.extend(u32s(&[100, 100]));
        b.extend(u64s(&[38, 0xdead_beef])); // time, addr
        b.extend(u32s(&[1, 0])); // cpu
        b.extend(u64s(&[2, 500, ID_A, 600, ID_B])); // READ group: nr, (value, id) x2
        b.extend(u64s(&[0])); // callchain nr
        b.extend(u32s(&[12])); // RAW size
        b.extend([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
        b.extend(u64s(&[2])); // branch stack nr
        b.extend(u64s(&[1, 2, 0, 3, 4, 0]));
        b.extend(u64s(&[0x0003_0002_0000_0064])); // weight struct
        b.extend(u64s(&[0x1_2345])); // data_src
        b.extend(u64s(&[0x1_0000_0000])); // phys_addr
        d.rec(9, USER | (1 << 14), b);
    }
    // Losses and throttles.
    d.rec_id(2, 0, u64s(&[ID_B, 5]), 100, 39, ID_A);
    d.rec_id(13, 0, u64s(&[3]), 100, 39, ID_A);
    d.rec_id(5, 0, u64s(&[39, ID_A, 0]), 100, 39, ID_A);
    d.rec_id(5, 0, u64s(&[39, ID_A, 0]), 100, 39, ID_A);
    // perf's rounds: a sample at t=50 in round 1, the mmap it needs (t=45) in round 2.
    d.round();
    d.rec(9, USER, sample_a(0x60_0010, 100, 100, 50, 4000, &[]));
    d.round();
    d.rec_id(
        10,
        USER,
        mmap2(100, 0x60_0000, 0x1000, 0, 5, "/usr/bin/late"),
        100,
        45,
        ID_A,
    );
    d.round();
    file(&d)
}

fn dso_of(p: &Profile, i: usize) -> Option<&culprit_decode::model::Dso> {
    p.dso(&p.samples[i].location)
}

#[test]
fn test_read_bytes_synthetic_state_and_fields() {
    let data = build();
    let p = Reader::from_bytes(&data).collect().unwrap();
    assert!(p.stopped.is_none(), "{:?}", p.stopped);
    assert!(p.warnings.is_empty(), "{:?}", p.warnings);
    let times: Vec<u64> = p.samples.iter().map(|s| s.time).collect();
    // t=38 twice: attr B's sample reads a group, delivered once per member (as perf does).
    assert_eq!(times, [10, 11, 12, 13, 21, 32, 33, 36, 37, 38, 38, 50]);
    let by_time = |t: u64| p.samples.iter().position(|s| s.time == t).unwrap();

    // t=10: app at file offset 0x10 + pgoff 0x1000; caller in the build-id lib.
    let s = &p.samples[by_time(10)];
    assert_eq!(p.str(s.comm), "parent");
    assert_eq!(dso_of(&p, by_time(10)).unwrap().path, "/usr/bin/app");
    assert_eq!(s.location.file_offset, 0x1010);
    let chain = p.callchain(s);
    assert_eq!(chain.len(), 2);
    let lib = p.dso(&chain[1].location).unwrap();
    assert_eq!(lib.path, "/usr/lib/libx.so");
    assert_eq!(lib.build_id.as_deref(), Some(&[0xaa; 20][..]));
    assert_eq!(chain[1].location.file_offset, 0x100);

    // t=11: kernel, module and user frames, markers removed.
    let s = &p.samples[by_time(11)];
    assert_eq!(s.cpumode, CpuMode::Kernel);
    let k = p.dso(&s.location).unwrap();
    assert_eq!(
        (k.kind, k.path.as_str()),
        (DsoKind::Kernel, "[kernel.kallsyms]")
    );
    assert_eq!(s.location.file_offset, 0xffff_ffff_8100_1234);
    let chain = p.callchain(s);
    let modes: Vec<CpuMode> = chain.iter().map(|f| f.cpumode).collect();
    assert_eq!(modes, [CpuMode::Kernel, CpuMode::Kernel, CpuMode::User]);
    let m = p.dso(&chain[1].location).unwrap();
    assert_eq!(
        (m.kind, m.short_name.as_str()),
        (DsoKind::KernelModule, "[foo_bar]")
    );
    assert_eq!(chain[1].location.file_offset, 0x100);
    assert_eq!(p.dso(&chain[2].location).unwrap().path, "/usr/bin/app");

    // t=12: JIT region: anonymous, owned by pid 100, address kept as the offset.
    let s = &p.samples[by_time(12)];
    let j = p.dso(&s.location).unwrap();
    assert_eq!((j.kind, j.pid), (DsoKind::Anonymous, Some(100)));
    assert_eq!(s.location.file_offset, 0x1000_0010);
    // t=13: data-only mappings are ignored for code.
    assert!(dso_of(&p, by_time(13)).is_none());
    assert!(!p.dsos.iter().any(|d| d.path.starts_with("/usr/bin/data")));

    // t=21: forked child inherits maps and comm.
    assert_eq!(p.str(p.samples[by_time(21)].comm), "parent");
    assert_eq!(dso_of(&p, by_time(21)).unwrap().path, "/usr/bin/app");
    // t=32/33: after exec, new comm and new text; an old mapping the new image did not
    // overlap still resolves, as perf resolves it (perf keeps a process's maps across exec:
    // a sample inside execve has the old image's user IP).
    assert_eq!(p.str(p.samples[by_time(32)].comm), "child");
    assert_eq!(dso_of(&p, by_time(32)).unwrap().path, "/usr/bin/child");
    assert_eq!(p.samples[by_time(32)].location.file_offset, 0x30);
    assert_eq!(dso_of(&p, by_time(33)).unwrap().path, "/usr/lib/libx.so");
    // t=36: a renamed thread of 100 keeps 100's maps.
    assert_eq!(p.str(p.samples[by_time(36)].comm), "worker");
    assert_eq!(dso_of(&p, by_time(36)).unwrap().path, "/usr/bin/app");
    // t=37: unknown thread, invalid chain dropped.
    assert_eq!(p.str(p.samples[by_time(37)].comm), ":777");
    assert!(p.callchain(&p.samples[by_time(37)]).is_empty());

    // t=38: attr B's fields, in the samples of both group members: each member's period is
    // its read value (the first read of its id), and the raw read values stay.
    let members: Vec<(u16, u64, Option<u64>)> = p
        .samples
        .iter()
        .filter(|s| s.time == 38)
        .map(|s| (s.event, s.period, s.id))
        .collect();
    assert_eq!(members, [(0, 500, Some(ID_A)), (1, 600, Some(ID_B))]);
    let s = &p.samples[by_time(38) + 1];
    assert_eq!(p.events[s.event as usize].name, "r1c2");
    assert!(s.exact_ip);
    assert_eq!(s.addr, Some(0xdead_beef));
    assert_eq!(s.weight, Some(0x64));
    assert_eq!(s.weight_struct, Some(0x0003_0002_0000_0064));
    assert_eq!(s.data_src, Some(0x1_2345));
    assert_eq!(s.phys_addr, Some(0x1_0000_0000));
    assert_eq!(s.branch_count, 2);
    assert_eq!(p.raw(s), &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
    let rv: Vec<(u64, Option<u64>)> = p.read_values(s).iter().map(|v| (v.value, v.id)).collect();
    assert_eq!(rv, [(500, Some(ID_A)), (600, Some(ID_B))]);

    // t=50: delivered after the t=45 mmap from the next round, as perf orders them.
    assert_eq!(dso_of(&p, by_time(50)).unwrap().path, "/usr/bin/late");

    // Totals, losses, throttles.
    assert_eq!(p.events[0].name, "task-clock");
    assert_eq!(p.events[0].samples, 11);
    assert_eq!(p.events[0].period, 40_500);
    assert_eq!((p.events[1].samples, p.events[1].period), (1, 600));
    assert_eq!((p.events[0].lost, p.events[1].lost, p.lost), (3, 5, 8));
    assert_eq!((p.lost_samples, p.lost_events), (3, 5));
    assert_eq!(p.throttles, 2);
}

#[test]
fn test_read_bytes_synthetic_every_truncation() {
    let data = build();
    let full = Reader::from_bytes(&data).collect().unwrap();
    for cut in 0..data.len() {
        let r = std::panic::catch_unwind(|| Reader::from_bytes(&data[..cut]).collect())
            .unwrap_or_else(|_| panic!("panic at cut {cut}"));
        if let Ok(p) = r {
            assert!(p.samples.len() <= full.samples.len());
            assert!(p.stopped.is_some(), "cut {cut}: no stop");
        }
    }
}

/// A sample of attr B (a PERF_SAMPLE_READ group) of thread `tid` of process 100 at `time`
/// reading `group` (value, id) pairs; every other field empty.
pub(crate) fn sample_b_read(tid: i32, time: u64, group: &[(u64, u64)]) -> Vec<u8> {
    let mut b = u64s(&[ID_B, 0x40_0060]);
    b.extend(u32s(&[100, tid as u32]));
    b.extend(u64s(&[time, 0])); // time, addr
    b.extend(u32s(&[0, 0])); // cpu
    b.extend(u64s(&[group.len() as u64]));
    for &(value, id) in group {
        b.extend(u64s(&[value, id]));
    }
    b.extend(u64s(&[0])); // callchain nr
    b.extend(u32s(&[4, 0])); // RAW size, payload
    b.extend(u64s(&[0, 0, 0, 0])); // branch nr, weight struct, data_src, phys_addr
    b
}

/// A leader sample of [`read_group_file_threads`]: thread, time, (value, id) of each member.
pub(crate) type ReadSample = (i32, u64, Vec<(u64, u64)>);

/// A process with an executable mapping and leader samples of attr B (of thread 100)
/// reading a group of both attrs.
pub(crate) fn read_group_file(samples: &[(u64, Vec<(u64, u64)>)], rounds_every: usize) -> Vec<u8> {
    let samples: Vec<ReadSample> = samples.iter().map(|(t, g)| (100, *t, g.clone())).collect();
    read_group_file_threads(&samples, rounds_every)
}

/// [`read_group_file`] with each sample's thread.
pub(crate) fn read_group_file_threads(samples: &[ReadSample], rounds_every: usize) -> Vec<u8> {
    let mut d = Data::default();
    d.rec_id(3, 0, comm(100, 100, "main"), 100, 1, ID_A);
    let app = mmap2(100, 0x40_0000, 0x1_0000, 0, 5, "/usr/bin/app");
    d.rec_id(10, USER, app, 100, 2, ID_A);
    d.round();
    for (i, (tid, time, group)) in samples.iter().enumerate() {
        d.rec(9, USER, sample_b_read(*tid, *time, group));
        if (i + 1) % rounds_every == 0 {
            d.round();
        }
    }
    d.round();
    file(&d)
}

#[test]
fn test_read_group_samples_become_member_samples_weighted_by_deltas() {
    // perf's deliver_sample_value: one sample per value, period = value - the last value of
    // that id, none when the counter did not move, none for an id of no event.
    let data = read_group_file(
        &[
            (10, vec![(100, ID_B), (7, ID_A)]),
            (20, vec![(250, ID_B), (7, ID_A)]),
            (30, vec![(250, ID_B), (9, ID_A), (40, 0xdead)]),
            (40, vec![(400, ID_B), (12, ID_A)]),
        ],
        2,
    );
    let p = Reader::from_bytes(&data).collect().unwrap();
    let got: Vec<(u64, u16, u64, Option<u64>)> = p
        .samples
        .iter()
        .map(|s| (s.time, s.event, s.period, s.id))
        .collect();
    assert_eq!(
        got,
        [
            (10, 1, 100, Some(ID_B)),
            (10, 0, 7, Some(ID_A)),
            (20, 1, 150, Some(ID_B)),
            (30, 0, 2, Some(ID_A)),
            (40, 1, 150, Some(ID_B)),
            (40, 0, 3, Some(ID_A)),
        ]
    );
    assert_eq!((p.events[0].samples, p.events[0].period), (3, 12));
    assert_eq!((p.events[1].samples, p.events[1].period), (3, 400));
    // The raw values stay with every sample they became.
    let s = &p.samples[3];
    let raw: Vec<(u64, Option<u64>)> = p.read_values(s).iter().map(|v| (v.value, v.id)).collect();
    assert_eq!(
        raw,
        [(250, Some(ID_B)), (9, Some(ID_A)), (40, Some(0xdead))]
    );
    assert_eq!(p.warnings.len(), 1, "{:?}", p.warnings);
    assert!(p.warnings[0].contains("unknown id"), "{:?}", p.warnings);
}

#[test]
fn test_read_group_of_inherited_counters_takes_deltas_per_thread() {
    // Inherited counters with PERF_SAMPLE_READ (kernel 6.11+) are read per thread under the
    // parent's id: perf (6.12+) keeps the last value per (id, thread).
    let samples = [
        (100, 10, vec![(100, ID_B), (5, ID_A)]),
        (101, 20, vec![(30, ID_B), (1, ID_A)]),
        (100, 30, vec![(160, ID_B), (5, ID_A)]),
        (101, 40, vec![(70, ID_B), (4, ID_A)]),
    ];
    let plain = read_group_file_threads(&samples, 2);
    let periods = |data: &[u8]| -> Vec<(u16, u64)> {
        Reader::from_bytes(data)
            .collect()
            .unwrap()
            .samples
            .iter()
            .map(|s| (s.event, s.period))
            .collect()
    };
    // Not inherited: one counter per id, whatever thread reads it (perf 6.1's rule), so the
    // deltas wrap where another thread's smaller value follows (as perf computes them).
    let flat = periods(&plain);
    assert_eq!(flat[0], (1, 100));
    assert_eq!(flat[2], (1, 30u64.wrapping_sub(100)));
    // The same file with attr B inherited: deltas per thread.
    let mut inherited = plain.clone();
    let flags_at = 104 + 144 + 40;
    let flags = u64::from_le_bytes(inherited[flags_at..flags_at + 8].try_into().unwrap());
    inherited[flags_at..flags_at + 8].copy_from_slice(&(flags | 2).to_le_bytes());
    assert_eq!(
        periods(&inherited),
        [(1, 100), (0, 5), (1, 30), (0, 1), (1, 60), (1, 40), (0, 3)]
    );
}
