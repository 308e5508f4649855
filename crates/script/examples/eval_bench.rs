//! Times the evaluator alone (as `culprit trace --stats` does): reads a perf.data file into
//! memory, then runs a program over its samples RUNS times and prints the best rate.
//!
//! `cargo run --release -p culprit-script --example eval_bench -- FILE 'PROGRAM' [RUNS]`

use std::time::Instant;

use culprit_symbols::{Symbolizer, SymbolizerOptions};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(file), Some(src)) = (args.get(1), args.get(2)) else {
        eprintln!("usage: eval_bench FILE PROGRAM [RUNS]");
        std::process::exit(2);
    };
    let runs: usize = args.get(3).and_then(|r| r.parse().ok()).unwrap_or(5);
    let profile = match culprit_decode::read_file(std::path::Path::new(file)) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("eval_bench: {file}: {e}");
            std::process::exit(2);
        }
    };
    let opts = culprit_script::Options {
        quiet: true,
        ..Default::default()
    };
    let prog = match culprit_script::compile(src, &opts) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    let mut best = f64::MAX;
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
        for s in &profile.samples {
            if !r.sample(&profile, s, &mut syms) {
                break;
            }
        }
        best = best.min(t.elapsed().as_secs_f64());
        r.end(&profile, &mut syms, false);
    }
    let n = profile.samples.len() as f64;
    println!(
        "{} samples, best of {runs}: {:.3} s = {:.1} M samples/s",
        profile.samples.len(),
        best,
        n / best / 1e6
    );
}
