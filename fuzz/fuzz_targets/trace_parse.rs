//! Any bytes as a `culprit trace` program: parse, check and compile must return Ok or an
//! error (never panic or hang); compiled programs then run their BEGIN/END/tick clauses and
//! sample clauses over a one-event synthetic profile, which exercises the evaluator too.
#![no_main]

use culprit_decode::model::{CpuMode, EventInfo, Location, Profile, Sample};
use culprit_trace::{NoSymbols, Options};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(src) = std::str::from_utf8(data) else {
        return;
    };
    let opts = Options {
        max_keys: 16,
        quiet: true,
        // Small, so a program whose keys grow hits the bound within one input.
        agg_memory: 1 << 20,
        ..Options::default()
    };
    let Ok(prog) = culprit_trace::compile(src, &opts) else {
        return;
    };
    let mut profile = Profile::default();
    profile.events.push(EventInfo {
        name: "cpu-clock".into(),
        attr_type: 1,
        config: 0,
        config1: 0,
        config2: 0,
        period_or_freq: 1000,
        freq: true,
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
    });
    let Ok(mut r) = prog.runner(&profile.events, "fuzz") else {
        return;
    };
    let mut syms = NoSymbols;
    r.begin(&profile, &mut syms);
    let _ = r.take_output();
    // A few samples (same thread, growing time, so self-> variables and ticks work too).
    profile.strings.push("fuzz".into());
    profile.raw = (0u8..68).collect();
    for i in 0..4u64 {
        let s = Sample {
            event: 0,
            time: 1_000_000_000 * (i + 1),
            pid: 7,
            tid: 7 + (i as i32 & 1),
            cpu: i as u32,
            period: 1000 + i,
            ip: 0x1000 * i,
            cpumode: CpuMode::User,
            exact_ip: false,
            comm: 0,
            location: Location {
                dso: None,
                file_offset: 0x1000 * i,
            },
            callchain: 0..0,
            addr: Some(i),
            weight: Some(i * 3),
            data_src: Some(0x1234_5678),
            phys_addr: None,
            raw: 0..68,
            ..Default::default()
        };
        if !r.sample(&profile, &s, &mut syms) {
            break;
        }
    }
    let _ = r.take_output();
    r.end(&profile, &mut syms, true);
    let _ = r.take_output();
    let _ = r.aggregations_json();
});
