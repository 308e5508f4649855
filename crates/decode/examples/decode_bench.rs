//! Decode-only benchmark: reads a perf.data file with `Reader::fold` and a callback that
//! only counts, several times, and prints samples per second (best and median run), by wall
//! time and by the thread's on-CPU time (/proc/thread-self/schedstat: on a shared, loaded
//! machine the wall time mostly measures waiting for a CPU).
//! Usage: `cargo run --release -p culprit-decode --example decode_bench -- FILE [RUNS] [--pipe]
//! [--skip-chains]`
//! `--pipe` pushes the file through a `StreamDecoder` in 64 KiB chunks instead (a pipe-mode
//! file: `perf record -o - > f`). `--skip-chains` reads as flat reports and `culprit trace` do
//! (`Reader::skip_callchains`).
use std::time::Instant;

/// Nanoseconds this thread has spent on a CPU.
fn cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let Some(path) = args.get(1) else {
        eprintln!("usage: decode_bench FILE [RUNS] [--pipe] [--skip-chains]");
        std::process::exit(2);
    };
    let runs: usize = args.get(2).and_then(|n| n.parse().ok()).unwrap_or(5);
    let pipe = args.iter().any(|a| a == "--pipe");
    let skip_callchains = args.iter().any(|a| a == "--skip-chains");
    let mut times = Vec::new();
    let mut cpu_times = Vec::new();
    let mut samples = 0u64;
    for _ in 0..runs {
        let (mut n, mut frames, mut period) = (0u64, 0u64, 0u64);
        let t = Instant::now();
        let c0 = cpu_ns();
        let mut count = |p: &culprit_decode::Profile, s: &culprit_decode::model::Sample| {
            n += 1;
            period = period.wrapping_add(s.period);
            frames += p.callchain(s).len() as u64;
        };
        let stopped = if pipe {
            let data = std::fs::read(path).expect("read the file");
            let mut d = culprit_decode::StreamDecoder::new();
            for chunk in data.chunks(1 << 16) {
                d.push(chunk, &mut count).expect("a pipe-mode stream");
            }
            d.finish(&mut count).stopped
        } else {
            culprit_decode::Reader::open(path)
                .skip_callchains(skip_callchains)
                .fold(&mut count)
                .expect("a perf.data file")
                .stopped
        };
        let secs = t.elapsed().as_secs_f64();
        let cpu = (cpu_ns() - c0) as f64 / 1e9;
        if let Some(s) = stopped {
            eprintln!("stopped at {}: {}", s.offset, s.reason);
        }
        eprintln!(
            "{n} samples, {frames} frames, period {period}: {secs:.3} s ({:.2} M samples/s), \
             cpu {cpu:.3} s ({:.2} M samples/s)",
            n as f64 / secs / 1e6,
            n as f64 / cpu / 1e6
        );
        times.push(secs);
        cpu_times.push(cpu);
        samples = n;
    }
    times.sort_by(f64::total_cmp);
    cpu_times.sort_by(f64::total_cmp);
    let cpu_median = cpu_times.get(cpu_times.len() / 2).copied().unwrap_or(0.0);
    let best = times.first().copied().unwrap_or(0.0);
    let median = times.get(times.len() / 2).copied().unwrap_or(0.0);
    println!(
        "{samples} samples; wall best {best:.3} s ({:.2} M samples/s), median {median:.3} s \
         ({:.2} M samples/s); cpu median {cpu_median:.3} s ({:.2} M samples/s)",
        samples as f64 / best / 1e6,
        samples as f64 / median / 1e6,
        samples as f64 / cpu_median / 1e6
    );
}
