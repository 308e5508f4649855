//! Stable-Rust mutation fuzzer for the perf.data reader (the fallback of `bench/fuzz.sh` when
//! cargo-fuzz or a nightly toolchain is missing).
//!
//! Usage: `fuzz_mutate SECONDS CRASH_DIR SEED_FILE...`, or `fuzz_mutate replay FILE...` to check
//! saved inputs again.
//!
//! Mutates the seed files (bit flips, interesting integers at random and at header/record
//! size positions, truncation, chunk deletion/duplication, splicing) and feeds each input to
//! `Reader::from_bytes`, walking the result. A panic, or an input taking more than 2 s, is a crash:
//! the input is written to CRASH_DIR. Prints executions and crashes at the end.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::time::{Duration, Instant};

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}

const INTERESTING: [u64; 12] = [
    0,
    1,
    7,
    8,
    0x7f,
    0x80,
    0xff,
    0xffff,
    0x7fff_ffff,
    0xffff_ffff,
    0x8000_0000_0000_0000,
    u64::MAX,
];

fn mutate(rng: &mut Rng, seeds: &[Vec<u8>], input: &mut Vec<u8>) {
    let rounds = 1 + rng.below(8);
    for _ in 0..rounds {
        if input.is_empty() {
            input.extend_from_slice(&seeds[rng.below(seeds.len())]);
        }
        let len = input.len();
        match rng.below(9) {
            0 => {
                let i = rng.below(len);
                input[i] ^= 1 << rng.below(8);
            }
            1 => {
                let i = rng.below(len);
                input[i] = rng.next() as u8;
            }
            2 | 3 => {
                // An interesting integer of width 1/2/4/8 at a random or header-ish spot.
                let w = [1usize, 2, 4, 8][rng.below(4)];
                let i = if rng.below(3) == 0 {
                    rng.below(len.min(512))
                } else {
                    rng.below(len)
                };
                let v = INTERESTING[rng.below(INTERESTING.len())].to_le_bytes();
                for (k, &byte) in v.iter().take(w).enumerate() {
                    if let Some(b) = input.get_mut(i + k) {
                        *b = byte;
                    }
                }
            }
            4 => input.truncate(rng.below(len + 1)),
            5 => {
                let a = rng.below(len);
                let b = (a + rng.below(256)).min(len);
                input.drain(a..b);
            }
            6 => {
                let a = rng.below(len);
                let b = (a + rng.below(256)).min(len);
                let chunk = input[a..b].to_vec();
                let at = rng.below(input.len() + 1);
                input.splice(at..at, chunk);
            }
            7 => {
                // Splice in a piece of another seed at the same offset.
                let other = &seeds[rng.below(seeds.len())];
                let a = rng.below(other.len());
                let b = (a + rng.below(512)).min(other.len());
                for (k, &byte) in other[a..b].iter().enumerate() {
                    if let Some(x) = input.get_mut(a + k) {
                        *x = byte;
                    }
                }
            }
            _ => {
                // Small arithmetic on a u16 (record sizes are u16s at offset 6 of headers).
                let i = rng.below(len.saturating_sub(1));
                if i + 2 <= input.len() {
                    let v = u16::from_le_bytes([input[i], input[i + 1]]);
                    let d = (rng.below(33) as u16).wrapping_sub(16);
                    let v = v.wrapping_add(d).to_le_bytes();
                    input[i] = v[0];
                    input[i + 1] = v[1];
                }
            }
        }
    }
}

/// Every sample a read delivers, as text (fields, chain, side data).
fn sample_text(p: &culprit_decode::Profile, s: &culprit_decode::model::Sample) -> String {
    format!(
        "{s:?} {:?} {:?} {:?} {:?}",
        p.callchain(s),
        p.raw(s),
        p.read_values(s),
        p.dso(&s.location).map(|d| &d.path)
    )
}

/// Sample texts, share after share.
#[derive(Default)]
struct Texts(Vec<String>);

impl culprit_decode::Fold for Texts {
    fn add(&mut self, p: &culprit_decode::Profile, s: &culprit_decode::model::Sample) {
        self.0.push(sample_text(p, s));
    }

    fn split(&self) -> Self {
        Texts::default()
    }

    fn merge(&mut self, later: Self, _: &culprit_decode::Profile) {
        self.0.extend(later.0);
    }
}

/// The parallel read (2 and 3 shares) must deliver what the sequential one does.
fn check_parallel(data: &[u8]) {
    let mut want = Vec::new();
    let seq = culprit_decode::Reader::from_bytes(data).fold(|p, s| want.push(sample_text(p, s)));
    // Fixed splits: the same input reads the same way every time.
    for (n, split) in [(2usize, 0.5), (2, 0.2), (3, 0.5)] {
        let par = culprit_decode::Reader::from_bytes(data)
            .threads(n)
            .split(culprit_decode::SplitRule::Fixed(split))
            .fold_parallel(Texts::default());
        let (par, got) = match par {
            Ok((p, texts)) => (Ok(p), texts.0),
            Err(e) => (Err(e), Vec::new()),
        };
        match (&seq, &par) {
            (Ok(a), Ok(b)) => {
                assert_eq!(
                    want, got,
                    "parallel read ({n} shares, split {split}) delivered other samples"
                );
                assert_eq!(
                    format!(
                        "{:?} {:?} {:?} {:?}",
                        a.events, a.dsos, a.stopped, a.warnings
                    ),
                    format!(
                        "{:?} {:?} {:?} {:?}",
                        b.events, b.dsos, b.stopped, b.warnings
                    ),
                    "parallel read ({n} shares, split {split}) gave another profile"
                );
            }
            (Err(_), Err(_)) => {}
            _ => panic!(
                "parallel read ({n} shares, split {split}) and sequential read disagree on failing"
            ),
        }
    }
}

fn walk(data: &[u8]) -> u64 {
    check_parallel(data);
    let Ok(p) = culprit_decode::Reader::from_bytes(data).collect() else {
        return 0;
    };
    let mut acc = 0u64;
    for s in &p.samples {
        acc = acc
            .wrapping_add(s.ip)
            .wrapping_add(p.str(s.comm).len() as u64);
        if let Some(d) = p.dso(&s.location) {
            acc = acc.wrapping_add(d.path.len() as u64);
        }
        for f in p.callchain(s) {
            acc = acc.wrapping_add(f.location.file_offset);
        }
        acc = acc
            .wrapping_add(p.raw(s).len() as u64)
            .wrapping_add(p.read_values(s).len() as u64)
            .wrapping_add(p.user_regs(s).len() as u64)
            .wrapping_add(p.user_stack(s).len() as u64);
    }
    acc
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 || (args.len() < 4 && args[1] != "replay") {
        eprintln!("usage: fuzz_mutate SECONDS CRASH_DIR SEED_FILE... | fuzz_mutate replay FILE...");
        std::process::exit(2);
    }
    if args[1] == "replay" {
        // `fuzz_mutate replay FILE...`: checks saved inputs again (parallel vs sequential).
        for f in &args[2..] {
            let data = std::fs::read(f).unwrap();
            let r = catch_unwind(AssertUnwindSafe(|| check_parallel(&data)));
            println!("{f}: {}", if r.is_ok() { "ok" } else { "FAIL" });
        }
        return;
    }
    let secs: u64 = args[1].parse().expect("SECONDS");
    let crash_dir = PathBuf::from(&args[2]);
    std::fs::create_dir_all(&crash_dir).expect("create CRASH_DIR");
    let seeds: Vec<Vec<u8>> = args[3..]
        .iter()
        .map(|f| std::fs::read(f).unwrap_or_else(|e| panic!("{f}: {e}")))
        .collect();
    // Quiet panics: report each distinct location once.
    let seen = std::sync::Arc::new(std::sync::Mutex::new(std::collections::HashSet::new()));
    let seen2 = seen.clone();
    std::panic::set_hook(Box::new(move |info| {
        let loc = info
            .location()
            .map(|l| format!("{}:{}", l.file(), l.line()))
            .unwrap_or_default();
        if let Ok(mut s) = seen2.lock() {
            if s.insert(loc.clone()) {
                eprintln!("new panic at {loc}: {info}");
            }
        }
    }));
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(1)
        | 1;
    let mut rng = Rng(seed);
    let deadline = Instant::now() + Duration::from_secs(secs);
    let (mut execs, mut crashes, mut slow) = (0u64, 0u64, 0u64);
    let mut input = Vec::new();
    while Instant::now() < deadline {
        input.clear();
        input.extend_from_slice(&seeds[rng.below(seeds.len())]);
        mutate(&mut rng, &seeds, &mut input);
        let t = Instant::now();
        let r = catch_unwind(AssertUnwindSafe(|| walk(&input)));
        let took = t.elapsed();
        execs += 1;
        let bad = if r.is_err() {
            crashes += 1;
            Some("crash")
        } else if took > Duration::from_secs(2) {
            slow += 1;
            Some("slow")
        } else {
            None
        };
        if let Some(kind) = bad {
            let h = input.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
                (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
            });
            let path = crash_dir.join(format!("{kind}-{h:016x}"));
            let _ = std::fs::write(&path, &input);
            eprintln!("{kind}: saved {}", path.display());
        }
    }
    println!(
        "fuzz_mutate: {execs} executions in {secs} s ({:.0}/s), {crashes} crashes, {slow} slow inputs (>2 s), seed {seed:#x}",
        execs as f64 / secs.max(1) as f64
    );
    if crashes + slow > 0 {
        std::process::exit(1);
    }
}
