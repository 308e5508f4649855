//! Fuzz target: any bytes through `culprit_decode::read_bytes`, then every accessor over the
//! result. The property: no panic, no hang, bounded memory.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(p) = culprit_decode::read_bytes(data) {
        let mut acc = 0u64;
        for s in &p.samples {
            acc = acc.wrapping_add(s.ip).wrapping_add(s.period);
            acc = acc.wrapping_add(p.str(s.comm).len() as u64);
            if let Some(d) = p.dso(&s.location) {
                acc = acc.wrapping_add(d.path.len() as u64);
            }
            for f in p.callchain(s) {
                acc = acc.wrapping_add(f.location.file_offset);
                if let Some(d) = p.dso(&f.location) {
                    acc = acc.wrapping_add(d.short_name.len() as u64);
                }
            }
            acc = acc.wrapping_add(p.raw(s).len() as u64);
            acc = acc.wrapping_add(p.read_values(s).len() as u64);
            acc = acc.wrapping_add(p.user_regs(s).len() as u64);
            acc = acc.wrapping_add(p.user_stack(s).len() as u64);
            let _ = p.events.get(s.event as usize).map(|e| e.name.len());
        }
        std::hint::black_box(acc);
    }
});
