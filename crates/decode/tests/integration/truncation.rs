//! Truncated, corrupt and garbage inputs: partial results with the stop point, clean errors,
//! never a panic.

use culprit_decode::{DecodeError, Profile, Reader};

/// Reads `data` whole; the error is what is wrong with the bytes.
fn read_bytes(data: &[u8]) -> Result<Profile, DecodeError> {
    Reader::from_bytes(data).collect().map_err(|e| e.error)
}

use crate::common::*;

const FILES: &[&str] = &[
    "cpu-clock-g.data",
    "two-events.data",
    "system-wide-g.data",
    "compressed-g.data",
    "pipe-g.data",
    "pipe-compressed.data",
    "dwarf.data",
    "ibs-fam19h_m11_zen4.data",
];

fn u64_at(d: &[u8], off: usize) -> u64 {
    u64::from_le_bytes(d[off..off + 8].try_into().unwrap())
}

/// Offsets of record starts in a file's data section (or a pipe stream).
fn record_starts(d: &[u8]) -> (usize, usize, Vec<usize>) {
    let (start, end) = if u64_at(d, 8) == 16 {
        (16, d.len())
    } else {
        let off = u64_at(d, 40) as usize;
        (off, off + u64_at(d, 48) as usize)
    };
    let mut v = Vec::new();
    let mut o = start;
    while o < end {
        v.push(o);
        let size = u16::from_le_bytes([d[o + 6], d[o + 7]]) as usize;
        o += size;
    }
    (start, end, v)
}

#[test]
fn test_read_bytes_truncated_at_many_offsets() {
    for file in FILES {
        let data = std::fs::read(fixture(file)).unwrap();
        let full = read_bytes(&data).unwrap();
        assert!(full.stopped.is_none(), "{file}");
        let (start, end, starts) = record_starts(&data);
        // Every offset in the header and first records, then ~400 spread over the file,
        // plus every record boundary and the byte after it.
        let mut cuts: Vec<usize> = (0..start.min(data.len()) + 600).collect();
        let step = (data.len() / 400).max(1);
        cuts.extend((0..data.len()).step_by(step));
        cuts.extend(starts.iter().flat_map(|&s| [s, s + 1]));
        cuts.retain(|&c| c < data.len());
        cuts.sort();
        cuts.dedup();
        // Until the (last) attr is complete, nothing usable exists: Err is allowed there.
        let usable_from = if full.meta.pipe_mode {
            starts
                .iter()
                .filter(|&&o| u32::from_le_bytes(data[o..o + 4].try_into().unwrap()) == 64)
                .map(|&o| o + u16::from_le_bytes([data[o + 6], data[o + 7]]) as usize)
                .max()
                .unwrap()
        } else {
            start
        };
        let mut last_samples = 0usize;
        let mut last_cut_ok = None;
        for &cut in &cuts {
            let part = &data[..cut];
            let r = std::panic::catch_unwind(|| read_bytes(part));
            let r = r.unwrap_or_else(|_| panic!("{file}: panic when cut at {cut}"));
            match r {
                Err(e) => {
                    // Only an unreadable header/attrs may fail: nothing of the data yet.
                    assert!(
                        cut < usable_from || (!full.meta.pipe_mode && cut <= start),
                        "{file}: cut at {cut} (data at {start}): Err {e}"
                    );
                    let msg = e.to_string();
                    assert!(
                        msg.contains("offset"),
                        "{file}: message names no offset: {msg}"
                    );
                }
                Ok(p) => {
                    let n = p.samples.len();
                    // More bytes never give fewer samples (compressed files deliver whole
                    // decompressed chunks at once, so only monotonic, not exact).
                    if let Some(prev) = last_cut_ok {
                        assert!(
                            n >= last_samples,
                            "{file}: {n} samples at cut {cut} < {last_samples} at cut {prev}"
                        );
                    }
                    last_samples = n;
                    last_cut_ok = Some(cut);
                    assert!(n <= full.samples.len(), "{file}: cut {cut}");
                    let at_boundary = starts.contains(&cut);
                    let pipe = full.meta.pipe_mode;
                    if !(pipe && at_boundary) {
                        let s = p
                            .stopped
                            .as_ref()
                            .unwrap_or_else(|| panic!("{file}: cut at {cut}: no stop reported"));
                        assert!(
                            s.offset <= cut as u64,
                            "{file}: stop {s:?} beyond cut {cut}"
                        );
                        assert!(!s.reason.is_empty());
                        // A record cut in the middle is named with its type.
                        if cut > start && cut < end && !at_boundary {
                            let rec = starts.iter().rev().find(|&&o| o < cut).unwrap();
                            assert_eq!(s.offset, *rec as u64, "{file}: cut {cut}: {s:?}");
                            if cut >= rec + 8 {
                                assert!(s.record_type.is_some(), "{file}: cut {cut}: {s:?}");
                            }
                        }
                    }
                    // What was read is what the full file says for those samples.
                    for s in &p.samples {
                        assert!((s.event as usize) < p.events.len());
                    }
                }
            }
        }
    }
}

#[test]
fn test_read_bytes_truncated_uncompressed_counts_exact() {
    // Without compression, a cut right after record k yields exactly the samples of records
    // 0..=k.
    let data = std::fs::read(fixture("cpu-clock-g.data")).unwrap();
    let (_, _, starts) = record_starts(&data);
    let mut samples_before = 0;
    for (i, &s) in starts.iter().enumerate().skip(1) {
        let ty = u32::from_le_bytes(data[starts[i - 1]..starts[i - 1] + 4].try_into().unwrap());
        if ty == 9 {
            samples_before += 1;
        }
        let p = read_bytes(&data[..s]).unwrap();
        assert_eq!(
            p.samples.len(),
            samples_before,
            "cut at record {i} (offset {s})"
        );
        let stop = p.stopped.expect("truncated file must report a stop");
        assert_eq!(stop.records_read as usize, i);
    }
}

#[test]
fn test_read_bytes_corrupt_record_size_stops_there() {
    let mut data = std::fs::read(fixture("cpu-clock-c.data")).unwrap();
    let (_, _, starts) = record_starts(&data);
    let victim = starts[starts.len() / 2];
    data[victim + 6] = 4; // size 4 < 8
    data[victim + 7] = 0;
    let p = read_bytes(&data).unwrap();
    let s = p.stopped.expect("stop");
    assert_eq!(s.offset, victim as u64);
    assert!(s.record_type.is_some());
    assert!(s.reason.contains("size"), "{}", s.reason);
    assert!(!p.samples.is_empty());
}

#[test]
fn test_read_bytes_garbage_is_a_clean_error() {
    assert!(matches!(read_bytes(&[]), Err(DecodeError::TooShort(0))));
    let e = read_bytes(b"this is not a perf.data file at all").unwrap_err();
    assert!(matches!(e, DecodeError::BadMagic(_)));
    assert!(e.to_string().contains("offset 0"), "{e}");
    assert!(e.to_string().contains("bad magic \"this is \""), "{e}");
    let e = read_bytes(b"\x00\x01garbage").unwrap_err();
    assert!(e.to_string().contains("\"\\x00\\x01garbag\""), "{e}");
    // Right magic, lying header.
    let mut d = b"PERFILE2".to_vec();
    d.extend_from_slice(&104u64.to_le_bytes());
    d.extend_from_slice(&[0xff; 96]);
    let e = read_bytes(&d).unwrap_err();
    assert!(e.to_string().contains("offset"), "{e}");
    // Pipe magic with no attrs.
    let mut d = b"PERFILE2".to_vec();
    d.extend_from_slice(&16u64.to_le_bytes());
    assert!(read_bytes(&d).is_err());
    // Deterministic pseudo-random garbage after a valid header prefix never panics.
    let base = std::fs::read(fixture("cpu-clock-g.data")).unwrap();
    let mut x: u64 = 0x9e3779b97f4a7c15;
    for round in 0..300 {
        let mut d = base.clone();
        for _ in 0..(1 + round % 16) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let at = (x % d.len() as u64) as usize;
            d[at] = (x >> 32) as u8;
        }
        let _ = read_bytes(&d);
    }
}

#[test]
fn test_read_bytes_killed_perf_record_zero_data_size() {
    // A perf killed with SIGKILL leaves data size 0 in the header and no feature table:
    // the records are still read, and the file is reported as incomplete.
    let full_bytes = std::fs::read(fixture("cpu-clock-g.data")).unwrap();
    let full = read_bytes(&full_bytes).unwrap();
    let data_end = (u64_at(&full_bytes, 40) + u64_at(&full_bytes, 48)) as usize;
    let mut d = full_bytes[..data_end].to_vec();
    d[48..56].copy_from_slice(&0u64.to_le_bytes());
    let p = read_bytes(&d).unwrap();
    assert_eq!(p.samples.len(), full.samples.len());
    let s = p.stopped.expect("incomplete file");
    assert!(s.reason.contains("did not finish"), "{}", s.reason);
    assert_eq!(s.offset, d.len() as u64);
    assert!(p.warnings.is_empty(), "{:?}", p.warnings);
}
