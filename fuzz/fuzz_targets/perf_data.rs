//! Fuzz target: any bytes through `culprit_decode::Reader::from_bytes`, then every accessor over the
//! result; and the same bytes pushed through a `StreamDecoder` in chunks whose sizes come from
//! the input itself. The properties: no panic, no hang, bounded memory; and a pipe-mode input
//! the stream decoder accepts decodes to the same samples and stop point as the whole read.
#![no_main]

use culprit_decode::model::{Profile, Sample};
use libfuzzer_sys::fuzz_target;

/// Touches everything a sample references (the accessors must not panic).
fn touch(p: &Profile, s: &Sample) -> u64 {
    let mut acc = s.ip.wrapping_add(s.period);
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
    acc
}

/// What identifies a delivered sample across both readers.
fn key(s: &Sample) -> (u64, u64, i32, u64, u16) {
    (s.time, s.ip, s.tid, s.period, s.event)
}

fuzz_target!(|data: &[u8]| {
    let whole = culprit_decode::Reader::from_bytes(data).collect();
    let mut acc = 0u64;
    if let Ok(p) = &whole {
        for s in &p.samples {
            acc = acc.wrapping_add(touch(p, s));
        }
    }

    // Chunk sizes from the input's last bytes (1..=256, or 4096 for a zero byte).
    let sizes: Vec<usize> = data
        .iter()
        .rev()
        .take(16)
        .map(|&b| if b == 0 { 4096 } else { usize::from(b) })
        .collect();
    let mut d = culprit_decode::StreamDecoder::new();
    let mut got = Vec::new();
    let mut rejected = false;
    let (mut off, mut i) = (0usize, 0usize);
    while off < data.len() {
        let n = sizes.get(i % sizes.len().max(1)).copied().unwrap_or(1).min(data.len() - off);
        i += 1;
        let r = d.push(&data[off..off + n], &mut |p, s| {
            acc = acc.wrapping_add(touch(p, s));
            got.push(key(s));
        });
        if r.is_err() {
            rejected = true;
            break;
        }
        off += n;
        if i % 5 == 0 {
            d.flush_all(&mut |p, s| {
                acc = acc.wrapping_add(touch(p, s));
                got.push(key(s));
            });
        }
    }
    if rejected {
        std::hint::black_box(acc);
        return;
    }
    let flushed_early = i >= 5;
    let sp = d.finish(&mut |p, s| {
        acc = acc.wrapping_add(touch(p, s));
        got.push(key(s));
    });
    if let Ok(p) = &whole {
        if p.meta.pipe_mode {
            // flush_all may deliver ahead of perf's round order: compare as multisets then.
            let mut want: Vec<_> = p.samples.iter().map(key).collect();
            if flushed_early {
                want.sort_unstable();
                got.sort_unstable();
            }
            assert_eq!(want, got, "stream and whole read deliver different samples");
            assert_eq!(
                p.stopped.as_ref().map(|s| (s.offset, s.reason.as_str())),
                sp.stopped.as_ref().map(|s| (s.offset, s.reason.as_str())),
                "stream and whole read stop differently"
            );
        }
    }
    std::hint::black_box(acc);
});
