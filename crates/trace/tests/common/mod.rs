//! Shared by the language tests: a small synthetic profile and its parts.
#![allow(dead_code)]

use culprit_decode::model::{CpuMode, EventInfo, Location, Profile, Sample};

pub fn event(name: &str, period: u64) -> EventInfo {
    EventInfo {
        name: name.into(),
        attr_type: 1,
        config: if name == "cpu-clock" { 0 } else { 9 },
        config1: 0,
        config2: 0,
        period_or_freq: period,
        freq: false,
        sample_type: 0,
        precise_ip: 0,
        pmu: Some("software".into()),
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

pub fn sample(event: u16, time: u64, tid: i32, comm: u32, period: u64, ip: u64) -> Sample {
    Sample {
        event,
        time,
        pid: 100,
        tid,
        cpu: (tid % 2) as u32,
        period,
        ip,
        cpumode: CpuMode::User,
        exact_ip: false,
        comm,
        location: Location {
            dso: None,
            file_offset: ip,
        },
        callchain: 0..0,
        addr: Some(ip ^ 0xff),
        weight: Some(period / 10),
        data_src: Some((3 << 5) | 2),
        ..Default::default()
    }
}

/// 10 cpu-clock samples (1 ms apart, periods 1000..=1009, ips 0x1000.., alternating
/// `heavy`/`light` threads 1/2, comm ids 0/1) and 2 `faults` samples.
pub fn profile() -> Profile {
    let mut p = Profile {
        events: vec![event("cpu-clock", 1000), event("page-faults", 20)],
        strings: vec!["heavy".into(), "light".into()],
        ..Profile::default()
    };
    for i in 0..10u64 {
        let tid = 1 + (i % 2) as i32;
        p.samples.push(sample(
            0,
            1_000_000 * (i + 1),
            tid,
            (i % 2) as u32,
            1000 + i,
            0x1000 + 0x10 * i,
        ));
    }
    p.samples.push(sample(1, 20_000_000, 1, 0, 20, 0x9000));
    p.samples.push(sample(1, 21_000_000, 2, 1, 20, 0x9000));
    p
}
