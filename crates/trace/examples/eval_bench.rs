//! Times the evaluator alone (as `culprit trace --stats` does): reads a perf.data file into
//! memory, then runs a program over its samples RUNS times and prints the best rate, by wall
//! time and by the thread's on-CPU time.
//!
//! `cargo run --release -p culprit-trace --example eval_bench -- FILE 'PROGRAM' [RUNS]`
//! (`HOT=1`: samples in cache, see below)

use std::time::Instant;

use culprit_symbols::{Symbolizer, SymbolizerOptions};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(file), Some(src)) = (args.get(1), args.get(2)) else {
        eprintln!("usage: eval_bench FILE PROGRAM [RUNS]");
        std::process::exit(2);
    };
    let runs: usize = args.get(3).and_then(|r| r.parse().ok()).unwrap_or(5);
    let profile = match culprit_decode::Reader::open(std::path::Path::new(file)).collect() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("eval_bench: {file}: {e}");
            std::process::exit(2);
        }
    };
    let opts = culprit_trace::Options {
        quiet: true,
        ..Default::default()
    };
    let prog = match culprit_trace::compile(src, &opts) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    // HOT=1: each chunk of 4096 samples runs 8 times in a row, so the samples are in the
    // cache as in streaming mode (where the decoder has just written them); the rate then
    // measures the evaluator rather than memory bandwidth.
    let hot = std::env::var_os("HOT").is_some();
    let (chunk, repeat) = if hot { (4096, 8) } else { (usize::MAX, 1) };
    let mut best = f64::MAX;
    let mut best_cpu = f64::MAX;
    let mut syms = Symbolizer::new(SymbolizerOptions::default());
    for _ in 0..runs {
        let mut r = match prog.runner(&profile.events, file) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("{e}");
                std::process::exit(2);
            }
        };
        r.begin(&profile, &mut syms);
        let t = Instant::now();
        let c = cpu_ns();
        'all: for chunk in profile.samples.chunks(chunk) {
            for _ in 0..repeat {
                for s in chunk {
                    if !r.sample(&profile, s, &mut syms) {
                        break 'all;
                    }
                }
            }
        }
        let wall = t.elapsed().as_secs_f64();
        best = best.min(wall);
        if let (Some(a), Some(b)) = (c, cpu_ns()) {
            best_cpu = best_cpu.min((b - a) as f64 / 1e9);
        }
        r.end(&profile, &mut syms, false);
    }
    let n = (profile.samples.len() * repeat) as f64;
    println!(
        "{} samples, best of {runs}: {:.3} s = {:.1} M samples/s wall; on-CPU {:.3} s = {:.1} M samples/s",
        profile.samples.len() * repeat,
        best,
        n / best / 1e6,
        best_cpu,
        n / best_cpu / 1e6
    );
}

/// This thread's time on a CPU in ns (/proc/thread-self/schedstat): unlike wall time, it
/// does not count the time other processes had the CPU (this machine is shared).
fn cpu_ns() -> Option<u64> {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}
