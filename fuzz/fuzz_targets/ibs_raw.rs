//! Fuzz target: arbitrary IBS raw payloads through the typed decoders, the perf-compatible
//! line builder, the kernel's data_src mapping and the precise-sample model. The first byte
//! picks the kind and the CPU (family 10h/17h/19h early/19h Zen 4/1Ah, Zen 4 PMU cap); the
//! rest is the PERF_SAMPLE_RAW payload. The property: no panic, whatever the size or caps.
#![no_main]

use culprit_decode::ibs::{self, IbsContext, IbsKind, IbsSample};
use culprit_decode::pebs::{self, MemDataSrc};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&sel, raw)) = data.split_first() else {
        return;
    };
    let kind = if sel & 1 == 0 { IbsKind::Op } else { IbsKind::Fetch };
    let (family, model) = match (sel >> 1) & 7 {
        0 => (0x10, 0x02),
        1 => (0x17, 0x31),
        2 => (0x19, 0x01),
        3 => (0x19, 0x11),
        4 => (0x19, 0x21),
        5 => (0x1a, 0x02),
        6 => (0x19, 0x5f),
        _ => (u32::from(sel), u32::from(sel >> 2)),
    };
    let ctx = IbsContext {
        family,
        model,
        zen4_pmu_cap: sel & 0x10 != 0,
    };
    let mut acc = 0u64;
    if let Ok(s) = ibs::decode(kind, raw, &ctx) {
        for l in s.perf_lines(&ctx) {
            acc = acc.wrapping_add(l.value).wrapping_add(l.text.len() as u64);
            for (_, v) in &l.fields {
                acc = acc.wrapping_add(*v);
            }
        }
        match &s {
            IbsSample::Op(op) => {
                if let Some(ds) = ibs::op_data_src(op, &ctx) {
                    acc = acc.wrapping_add(ds);
                }
                let p = pebs::from_ibs_op(op, &ctx, 0x1000);
                acc = acc.wrapping_add(p.latency.unwrap_or(0));
            }
            IbsSample::Fetch(f) => {
                acc = acc.wrapping_add(u64::from(f.killed()));
            }
        }
    }
    // Any u64 is a perf_mem_data_src value.
    if raw.len() >= 8 {
        let mut b = [0u8; 8];
        b.copy_from_slice(&raw[..8]);
        let d = MemDataSrc::decode(u64::from_le_bytes(b));
        acc = acc.wrapping_add(u64::from(d.hops));
    }
    std::hint::black_box(acc);
});
