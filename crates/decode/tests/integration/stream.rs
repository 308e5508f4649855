//! StreamDecoder: a pipe-mode stream pushed in chunks of any size decodes exactly like
//! `Reader::from_bytes` on the whole input (samples with their side data, events, DSOs, strings,
//! meta, warnings, stop point), including streams cut anywhere and live `perf record -o -`.

use std::io::Read;
use std::process::Stdio;

use culprit_decode::model::{Profile, Sample};
use culprit_decode::{Reader, StreamDecoder};
use serde_json::{json, Value};

use crate::common::*;

/// A sample with everything it references resolved, as JSON (Sample has no PartialEq).
pub(crate) fn sample_view(p: &Profile, s: &Sample) -> Value {
    let dso = |l: &culprit_decode::model::Location| p.dso(l).map(|d| d.path.clone());
    // Ranges into the side tables depend on what else is stored: compare what they hold.
    let mut sample = serde_json::to_value(s).unwrap();
    for k in ["callchain", "raw", "read", "user_regs", "user_stack"] {
        sample.as_object_mut().unwrap().remove(k);
    }
    json!({
        "sample": sample,
        "comm": p.str(s.comm),
        "dso": dso(&s.location),
        "chain": p.callchain(s).iter().map(|f| json!([f.addr, f, dso(&f.location)])).collect::<Vec<_>>(),
        "raw": p.raw(s),
        "read": p.read_values(s),
        "regs": p.user_regs(s),
        "stack": p.user_stack(s),
        "event": p.events.get(s.event as usize).map(|e| e.name.clone()),
    })
}

/// The profile without its sample storage.
pub(crate) fn profile_view(p: &Profile) -> Value {
    let mut p = p.clone();
    p.samples.clear();
    p.frames.clear();
    p.raw.clear();
    p.read_values.clear();
    p.regs.clear();
    p.stacks.clear();
    serde_json::to_value(&p).unwrap()
}

/// What `Reader::from_bytes` says: samples and the rest.
fn reference(data: &[u8]) -> Option<(Vec<Value>, Value)> {
    let p = Reader::from_bytes(data).collect().ok()?;
    let samples = p.samples.iter().map(|s| sample_view(&p, s)).collect();
    Some((samples, profile_view(&p)))
}

/// Small deterministic generator for chunk sizes.
struct Lcg(u64);
impl Lcg {
    fn next(&mut self, n: u64) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) % n) as usize
    }
}

/// Feeds `data` in chunks whose sizes come from `size`; `None` if the decoder rejected it.
fn stream(data: &[u8], size: &mut dyn FnMut() -> usize) -> Option<(Vec<Value>, Value)> {
    let mut d = StreamDecoder::new();
    let mut got = Vec::new();
    let mut off = 0;
    while off < data.len() {
        let n = size().max(1).min(data.len() - off);
        d.push(&data[off..off + n], &mut |p, s| got.push(sample_view(p, s)))
            .ok()?;
        // Between pushes the profile holds no samples.
        assert!(d.profile().samples.is_empty());
        off += n;
    }
    let p = d.finish(&mut |p, s| got.push(sample_view(p, s)));
    Some((got, profile_view(&p)))
}

fn assert_same(name: &str, what: &str, want: &(Vec<Value>, Value), got: &(Vec<Value>, Value)) {
    assert_eq!(
        want.0.len(),
        got.0.len(),
        "{name} {what}: sample count differs"
    );
    for (i, (a, b)) in want.0.iter().zip(&got.0).enumerate() {
        assert_eq!(a, b, "{name} {what}: sample {i} differs");
    }
    assert_eq!(want.1, got.1, "{name} {what}: profile differs");
}

fn check_all_chunkings(name: &str, data: &[u8]) {
    let want = reference(data).unwrap_or_else(|| panic!("{name}: the read of the bytes failed"));
    assert!(!want.0.is_empty(), "{name}: no samples in the fixture");
    for fixed in [1usize, 7, 4096, data.len()] {
        let got = stream(data, &mut || fixed).expect("stream rejected");
        assert_same(name, &format!("chunks of {fixed}"), &want, &got);
    }
    for seed in 1..=8u64 {
        let mut g = Lcg(seed);
        let got = stream(data, &mut || g.next(3000) + 1).expect("stream rejected");
        assert_same(name, &format!("random chunks, seed {seed}"), &want, &got);
    }
}

#[test]
fn test_stream_pipe_fixtures_match_the_read_of_the_bytes_in_any_chunking() {
    for name in ["pipe-g.data", "pipe-compressed.data"] {
        let data = std::fs::read(fixture(name)).unwrap();
        check_all_chunkings(name, &data);
    }
}

#[test]
fn test_stream_cut_anywhere_matches_the_read_of_the_prefix() {
    for name in ["pipe-g.data", "pipe-compressed.data"] {
        let data = std::fs::read(fixture(name)).unwrap();
        let mut cuts = 0;
        for end in (0..data.len())
            .step_by(61)
            .chain([data.len() - 1, 17, 16, 9, 8])
        {
            let prefix = &data[..end];
            let want = reference(prefix);
            let mut g = Lcg(end as u64);
            let got = stream(prefix, &mut || g.next(700) + 1);
            match (&want, &got) {
                (Some(w), Some(g)) => {
                    assert_same(name, &format!("cut at {end}"), w, g);
                    cuts += 1;
                }
                // Rejected up front (too short, no attrs): finish() says why in `stopped`.
                (None, Some((samples, p))) => {
                    assert!(
                        samples.is_empty(),
                        "{name} cut at {end}: samples from a bad stream"
                    );
                    assert!(!p["stopped"].is_null(), "{name} cut at {end}: no stop");
                }
                (_, None) => panic!("{name} cut at {end}: push failed on a pipe-mode prefix"),
            }
        }
        assert!(cuts > 20, "{name}: only {cuts} prefixes compared");
    }
}

#[test]
fn test_stream_stop_is_visible_and_later_input_ignored() {
    let data = std::fs::read(fixture("pipe-g.data")).unwrap();
    // Corrupt a record header in the middle: size 4 (< 8) is damage, not a partial record.
    let (mut off, mut target) = (16usize, None);
    while off + 8 <= data.len() {
        let ty = u32::from_le_bytes(data[off..off + 4].try_into().unwrap());
        let size = u16::from_le_bytes(data[off + 6..off + 8].try_into().unwrap()) as usize;
        if ty == 9 && off > data.len() / 2 {
            target = Some(off);
            break;
        }
        off += size;
    }
    let at = target.expect("a sample in the second half");
    let mut bad = data.clone();
    bad[at + 6..at + 8].copy_from_slice(&4u16.to_le_bytes());
    let want = reference(&bad).unwrap();
    let mut d = StreamDecoder::new();
    let mut got = Vec::new();
    d.push(&bad[..at + 100], &mut |p, s| got.push(sample_view(p, s)))
        .unwrap();
    let stop = d.profile().stopped.clone().expect("stopped set at once");
    assert_eq!(stop.offset, at as u64);
    assert!(stop.reason.contains("size 4"), "{}", stop.reason);
    d.push(&bad[at + 100..], &mut |p, s| got.push(sample_view(p, s)))
        .unwrap();
    let p = d.finish(&mut |p, s| got.push(sample_view(p, s)));
    assert_same("corrupt pipe-g", "stop", &want, &(got, profile_view(&p)));
}

#[test]
fn test_stream_rejects_non_pipe_input() {
    // A file-mode perf.data: not a stream.
    let data = std::fs::read(fixture("cpu-clock-g.data")).unwrap();
    let mut d = StreamDecoder::new();
    let e = d.push(&data, &mut |_, _| {}).unwrap_err();
    assert!(e.to_string().contains("pipe-mode"), "{e}");
    // A sample before any HEADER_ATTR is skipped with a warning, as a file reader skips it
    // (it was an error for a stream only); a stream that never has attrs is still refused.
    let mut s = b"PERFILE2".to_vec();
    s.extend_from_slice(&16u64.to_le_bytes());
    s.extend_from_slice(&9u32.to_le_bytes());
    s.extend_from_slice(&0u16.to_le_bytes());
    s.extend_from_slice(&16u16.to_le_bytes());
    s.extend_from_slice(&[0; 8]);
    let mut d = StreamDecoder::new();
    d.push(&s, &mut |_, _| {}).unwrap();
    let p = d.finish(&mut |_, _| {});
    let stop = p.stopped.expect("no attrs");
    assert!(
        stop.reason.contains("without any HEADER_ATTR"),
        "{}",
        stop.reason
    );
    // Before real attrs: the same samples from a stream as from the bytes.
    let data = std::fs::read(fixture("pipe-g.data")).unwrap();
    let mut stray = data[..16].to_vec();
    stray.extend_from_slice(&s[16..]);
    stray.extend_from_slice(&data[16..]);
    let want = reference(&stray).unwrap();
    let mut got = Vec::new();
    let p = Reader::from_read(Trickle(&stray, 0, 7))
        .fold(|p, s| got.push(sample_view(p, s)))
        .unwrap();
    assert!(!got.is_empty());
    assert!(p
        .warnings
        .iter()
        .any(|w| w.contains("before any HEADER_ATTR")));
    assert_same("stray sample", "stream", &want, &(got, profile_view(&p)));
}

#[test]
fn test_reader_from_read_folds_and_collects_as_from_bytes() {
    for name in ["pipe-g.data", "pipe-compressed.data", "cpu-clock-g.data"] {
        let data = std::fs::read(fixture(name)).unwrap();
        let want = reference(&data).unwrap();
        let mut got = Vec::new();
        // A reader that returns odd-sized pieces, like a pipe.
        let reader = Trickle(&data, 0, 3);
        let p = Reader::from_read(reader)
            .fold(|p, s| got.push(sample_view(p, s)))
            .unwrap();
        assert_same(name, "from_read fold", &want, &(got, profile_view(&p)));
        let p = Reader::from_read(Trickle(&data, 0, 5)).collect().unwrap();
        let samples = p.samples.iter().map(|s| sample_view(&p, s)).collect();
        assert_same(
            name,
            "from_read collect",
            &want,
            &(samples, profile_view(&p)),
        );
    }
}

/// Reads `.0` in pieces of growing, uneven size.
struct Trickle<'a>(&'a [u8], usize, usize);
impl Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.2 = (self.2 * 7 + 3) % 5000 + 1;
        let n = self.2.min(buf.len()).min(self.0.len() - self.1);
        buf[..n].copy_from_slice(&self.0[self.1..self.1 + n]);
        self.1 += n;
        Ok(n)
    }
}

/// Copies what it reads into a Vec (to compare the live stream with the read of its bytes afterwards).
struct Tee<R>(R, Vec<u8>);
impl<R: Read> Read for Tee<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.0.read(buf)?;
        self.1.extend_from_slice(&buf[..n]);
        Ok(n)
    }
}

#[test]
fn test_stream_live_perf_record_pipe() {
    if !require_perf("decode::test_stream_live_perf_record_pipe") {
        return;
    }
    let shares = workload("shares");
    let _lock = pmu_lock();
    for args in [
        &["-e", "cpu-clock", "-F", "4000", "-g"][..],
        &["-e", "cpu-clock,page-faults", "-c", "20000", "-z"][..],
    ] {
        let mut child = crate::common::perf()
            .args(["record", "-q", "-o", "-"])
            .args(args)
            .arg("--")
            .arg(&shares)
            // ~70 ms of CPU on a Zen 5 VM (3 units gave only ~90 samples at 4 kHz there).
            .arg("10")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("run perf record");
        let mut tee = Tee(child.stdout.take().unwrap(), Vec::new());
        let mut live = Vec::new();
        let p = Reader::from_read(&mut tee)
            .fold(|p, s| live.push(sample_view(p, s)))
            .expect("live stream decodes");
        assert!(
            child.wait().unwrap().success(),
            "perf record {args:?} failed"
        );
        let want = reference(&tee.1).expect("the read of the same bytes");
        assert!(
            want.0.len() > 100,
            "{args:?}: only {} samples",
            want.0.len()
        );
        assert_same(
            "live",
            &format!("{args:?}"),
            &want,
            &(live, profile_view(&p)),
        );
        // And in tiny pieces.
        let got = stream(&tee.1, &mut || 13).unwrap();
        assert_same("live", &format!("{args:?} chunks of 13"), &want, &got);
    }
}
