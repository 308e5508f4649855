//! Inputs that once crashed or hung a reader (fuzz findings in
//! tests/fixtures/fuzz-regressions/) and hostile shapes built on purpose: quadratic map
//! updates, fork/mmap memory bombs, zstd bombs. Each must finish quickly without panicking.

use std::time::{Duration, Instant};

use culprit_decode::Reader;

use crate::common::fixture;
use crate::synth::{comm, file, fork, mmap2, sample_a, Data, ID_A, USER};

fn timed(what: &str, data: &[u8], limit: Duration) -> culprit_decode::Profile {
    let t = Instant::now();
    let r = std::panic::catch_unwind(|| Reader::from_bytes(data).collect())
        .unwrap_or_else(|_| panic!("{what}: panic"));
    let took = t.elapsed();
    assert!(took < limit, "{what}: took {took:?}");
    r.unwrap_or_else(|e| panic!("{what}: {e}"))
}

#[test]
fn test_read_bytes_fuzz_regressions() {
    let dir = fixture("fuzz-regressions");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return; // no findings kept (yet)
    };
    for e in entries {
        let path = e.unwrap().path();
        let data = std::fs::read(&path).unwrap();
        let t = Instant::now();
        let r = std::panic::catch_unwind(|| Reader::from_bytes(&data).collect());
        assert!(r.is_ok(), "{}: panic", path.display());
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "{}: slow",
            path.display()
        );
    }
}

#[test]
fn test_read_bytes_many_mappings_in_reverse_order() {
    let mut d = Data::default();
    let n = 50_000u64;
    for i in (0..n).rev() {
        let at = 0x1000_0000 + i * 0x2000;
        d.rec_id(
            10,
            USER,
            mmap2(7, at, 0x1000, 0, 5, "/lib/x.so"),
            7,
            1,
            ID_A,
        );
    }
    d.rec(
        9,
        USER,
        sample_a(0x1000_0000 + 17 * 0x2000 + 5, 7, 7, 2, 1, &[]),
    );
    let p = timed("reverse mmaps", &file(&d), Duration::from_secs(20));
    let s = &p.samples[0];
    assert_eq!(p.dso(&s.location).unwrap().path, "/lib/x.so");
    assert_eq!(s.location.file_offset, 5);
}

#[test]
fn test_read_bytes_fork_mmap_bomb_is_bounded() {
    // 20k maps in the parent, then 20k children that each fork and map one more page: a
    // naive reader copies 20k maps 20k times (400M entries).
    let mut d = Data::default();
    let n = 20_000u64;
    for i in 0..n {
        d.rec_id(
            10,
            USER,
            mmap2(1, i * 0x2000, 0x1000, 0, 5, "/lib/a.so"),
            1,
            1,
            ID_A,
        );
    }
    for c in 0..n as i32 {
        let pid = 100 + c;
        d.rec_id(7, 0, fork(pid, 1, pid, 1, 2), pid, 2, ID_A);
        d.rec_id(
            10,
            USER,
            mmap2(pid, 0x7000_0000, 0x1000, 0, 5, "/lib/b.so"),
            pid,
            3,
            ID_A,
        );
    }
    d.rec(9, USER, sample_a(0x2000 * 3 + 1, 1, 1, 4, 1, &[]));
    let p = timed("fork bomb", &file(&d), Duration::from_secs(30));
    assert_eq!(p.samples.len(), 1);
    assert!(p.warnings.iter().any(|w| w.contains("too many mappings")));
    assert_eq!(p.dso(&p.samples[0].location).unwrap().path, "/lib/a.so");
}

#[test]
fn test_read_bytes_zstd_bomb_stops() {
    // One COMPRESSED record expanding to 1 GiB of FINISHED_ROUND records.
    let chunk: Vec<u8> = [
        68u32.to_le_bytes().as_slice(),
        &0u16.to_le_bytes(),
        &8u16.to_le_bytes(),
    ]
    .concat()
    .repeat(1 << 16);
    let mut cctx = zstd_safe::CCtx::create();
    let mut out = vec![0u8; 1 << 22];
    let mut pos = 0;
    for _ in 0..(1 << 30) / chunk.len() {
        let mut o = zstd_safe::OutBuffer::around(&mut out[pos..]);
        let mut i = zstd_safe::InBuffer::around(&chunk);
        cctx.compress_stream2(
            &mut o,
            &mut i,
            zstd_safe::zstd_sys::ZSTD_EndDirective::ZSTD_e_continue,
        )
        .unwrap();
        pos += o.pos();
    }
    loop {
        let mut o = zstd_safe::OutBuffer::around(&mut out[pos..]);
        let left = cctx
            .compress_stream2(
                &mut o,
                &mut zstd_safe::InBuffer::around(&[]),
                zstd_safe::zstd_sys::ZSTD_EndDirective::ZSTD_e_end,
            )
            .unwrap();
        pos += o.pos();
        if left == 0 {
            break;
        }
    }
    out.truncate(pos);
    let mut d = Data::default();
    // Split into records of at most ~64 KB (the u16 size limit).
    for piece in out.chunks(60_000) {
        d.rec(81, 0, piece.to_vec());
    }
    d.rec(9, USER, sample_a(1, 1, 1, 1, 1, &[]));
    let data = file(&d);
    assert!(data.len() < 1 << 20, "bomb is {} bytes", data.len());
    let p = timed("zstd bomb", &data, Duration::from_secs(60));
    let s = p.stopped.expect("the bomb is stopped");
    assert!(s.reason.contains("without a single event"), "{s:?}");
    assert_eq!(s.record_type, Some(81));
}

/// zstd-compresses `chunk` repeated `times` times into COMPRESSED records (at most ~60 KB
/// each, the u16 record size limit).
fn compressed_records(d: &mut Data, chunk: &[u8], times: usize) {
    let mut cctx = zstd_safe::CCtx::create();
    let mut out = vec![0u8; 1 << 22];
    let mut pos = 0;
    let mut end = false;
    let mut left = times;
    while !end {
        let directive = if left == 0 {
            zstd_safe::zstd_sys::ZSTD_EndDirective::ZSTD_e_end
        } else {
            zstd_safe::zstd_sys::ZSTD_EndDirective::ZSTD_e_continue
        };
        let data: &[u8] = if left == 0 { &[] } else { chunk };
        let mut i = zstd_safe::InBuffer::around(data);
        loop {
            let mut o = zstd_safe::OutBuffer::around(&mut out[pos..]);
            let rest = cctx.compress_stream2(&mut o, &mut i, directive).unwrap();
            pos += o.pos();
            if i.pos() == data.len() && (left > 0 || rest == 0) {
                end = left == 0;
                break;
            }
        }
        left = left.saturating_sub(1);
    }
    out.truncate(pos);
    // Records are padded to 8 bytes: end with a zstd skippable frame of the right length so
    // that the padding is not read as another frame.
    let rem = (8 - out.len() % 8) % 8;
    if rem > 0 {
        out.extend_from_slice(&0x184D_2A50u32.to_le_bytes());
        out.extend_from_slice(&(rem as u32).to_le_bytes());
        out.extend(std::iter::repeat_n(0u8, rem));
    }
    for piece in out.chunks(60_000) {
        d.rec(81, 0, piece.to_vec());
    }
}

/// A valid `-z` file that expands far more than 64 times and past 256 MiB is read whole:
/// the bomb guard looks at what the data is (events, or filler), not at its ratio.
#[test]
fn test_read_bytes_highly_compressed_real_data_is_read_whole() {
    // Rounds of 64 COMM records with long names: ~1 MiB a round, 300 rounds.
    let mut round = Data::default();
    let name = "x".repeat(16_000);
    for i in 0..64 {
        round.rec_id(3, 0, comm(7, 7, &format!("{name}{i}")), 7, 1, ID_A);
    }
    round.round();
    let rounds = 300;
    let mut d = Data::default();
    compressed_records(&mut d, &round.bytes, rounds);
    d.rec(9, USER, sample_a(1, 7, 7, 2, 1, &[]));
    let data = file(&d);
    let expanded = round.bytes.len() * rounds;
    assert!(expanded > 1 << 28, "{expanded} bytes");
    assert!(
        expanded > data.len() * 64,
        "ratio {}",
        expanded / data.len()
    );
    let p = timed("highly compressed", &data, Duration::from_secs(120));
    assert!(p.stopped.is_none(), "{:?}", p.stopped);
    assert_eq!(p.samples.len(), 1);
    assert!(p.meta.records >= (65 * rounds) as u64, "{}", p.meta.records);
}
