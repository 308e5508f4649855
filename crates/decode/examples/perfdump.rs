//! Dumps what culprit-decode reads from a perf.data file: events, totals, DSOs, stop point.
//! Usage: `cargo run -p culprit-decode --example perfdump -- perf.data [--samples N] [--stream]
//! [--digest]`. `--digest` streams the file and prints one hash of everything every sample
//! carries (fields, chain, raw, regs, stack, read values, comm and DSO), to check that a
//! change of the decoder delivers exactly the same samples. `--check-parallel N` reads the
//! file sequentially and with `Reader::fold_parallel` on N threads and compares every sample (in
//! share order) and the profiles.
use std::collections::HashMap;
use std::hash::{Hash, Hasher};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let Some(path) = args.get(1) else {
        eprintln!("usage: perfdump FILE [--samples N]");
        std::process::exit(2);
    };
    let show: usize = args
        .iter()
        .position(|a| a == "--samples")
        .and_then(|i| args.get(i + 1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    let t = std::time::Instant::now();
    if let Some(n) = args
        .iter()
        .position(|a| a == "--check-parallel")
        .and_then(|i| args.get(i + 1))
        .and_then(|n| n.parse::<usize>().ok())
    {
        check_parallel(path, n.max(1));
        return;
    }
    if args.iter().any(|a| a == "--digest") {
        // DefaultHasher::new() has fixed keys: the same samples give the same digest.
        let mut h = std::collections::hash_map::DefaultHasher::new();
        let mut n = 0u64;
        let p = culprit_decode::Reader::open(path).fold(|p, s| {
            n += 1;
            sample_hash(p, s).hash(&mut h);
        });
        match p {
            Ok(p) => {
                format!("{:?} {:?} {:?}", p.events, p.dsos, p.stopped).hash(&mut h);
                println!("{n} samples, digest {:016x}", h.finish());
            }
            Err(e) => println!("error: {e}"),
        }
        return;
    }
    if args.iter().any(|a| a == "--stream") {
        // Streaming: count samples and frames without keeping them.
        let (mut n, mut frames) = (0u64, 0u64);
        let p = culprit_decode::Reader::open(path).fold(|p, s| {
            n += 1;
            frames += p.callchain(s).len() as u64;
        });
        let secs = t.elapsed().as_secs_f64();
        match p {
            Ok(p) => println!(
                "streamed {n} samples, {frames} frames, {} records in {secs:.3} s ({:.0} samples/s), {} dsos",
                p.meta.records,
                n as f64 / secs,
                p.dsos.len()
            ),
            Err(e) => eprintln!("error: {e}"),
        }
        return;
    }
    let p = match culprit_decode::Reader::open(path).collect() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    };
    let secs = t.elapsed().as_secs_f64();
    println!(
        "read {} samples, {} frames, {} records in {:.3} s ({:.0} samples/s)",
        p.samples.len(),
        p.frames.len(),
        p.meta.records,
        secs,
        p.samples.len() as f64 / secs
    );
    println!("meta: {:?}", p.meta);
    for e in &p.events {
        println!(
            "event {:?} type {} config {:#x} samples {} period {} lost {} pmu {:?}",
            e.name, e.attr_type, e.config, e.samples, e.period, e.lost, e.pmu
        );
    }
    println!("lost {} throttles {}", p.lost, p.throttles);
    let mut by_dso: HashMap<String, u64> = HashMap::new();
    let mut by_comm: HashMap<&str, u64> = HashMap::new();
    for s in &p.samples {
        let d = p
            .dso(&s.location)
            .map(|d| d.short_name.clone())
            .unwrap_or_else(|| "[unknown]".into());
        *by_dso.entry(d).or_default() += s.period;
        *by_comm.entry(p.str(s.comm)).or_default() += s.period;
    }
    let mut v: Vec<_> = by_dso.into_iter().collect();
    v.sort_by_key(|x| std::cmp::Reverse(x.1));
    for (d, n) in v.iter().take(15) {
        println!("dso {d}: {n}");
    }
    let mut v: Vec<_> = by_comm.into_iter().collect();
    v.sort_by_key(|x| std::cmp::Reverse(x.1));
    for (d, n) in v.iter().take(15) {
        println!("comm {d}: {n}");
    }
    for d in &p.dsos {
        println!(
            "dso #{:?} {} kind {:?} build_id {:?} pid {:?}",
            d.short_name,
            d.path,
            d.kind,
            d.build_id
                .as_ref()
                .map(|b| b.iter().map(|x| format!("{x:02x}")).collect::<String>()),
            d.pid
        );
    }
    for s in p.samples.iter().take(show) {
        println!("{:?}", s);
        for f in p.callchain(s) {
            println!("    {:#x} {:?} {:?}", f.addr, f.cpumode, f.location);
        }
    }
    for w in &p.warnings {
        println!("warning: {w}");
    }
    if let Some(s) = &p.stopped {
        println!("STOPPED: {s:?}");
    }
}

/// One hash of everything a sample carries (as `--digest` hashes it).
fn sample_hash(p: &culprit_decode::Profile, s: &culprit_decode::model::Sample) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    format!("{s:?}").hash(&mut h);
    p.str(s.comm).hash(&mut h);
    p.dso(&s.location).map(|d| &d.path).hash(&mut h);
    for f in p.callchain(s) {
        format!("{f:?}").hash(&mut h);
    }
    p.raw(s).hash(&mut h);
    p.user_regs(s).hash(&mut h);
    p.user_stack(s).hash(&mut h);
    format!("{:?}", p.read_values(s)).hash(&mut h);
    h.finish()
}

/// Sample hashes of a parallel read, share after share, and the size of each merged share.
#[derive(Default)]
struct Hashes {
    samples: Vec<u64>,
    merged: Vec<usize>,
}

impl culprit_decode::Fold for Hashes {
    fn add(&mut self, p: &culprit_decode::Profile, s: &culprit_decode::model::Sample) {
        self.samples.push(sample_hash(p, s));
    }

    fn split(&self) -> Self {
        Hashes::default()
    }

    fn merge(&mut self, later: Self, _: &culprit_decode::Profile) {
        self.merged.push(later.samples.len());
        self.samples.extend(later.samples);
    }
}

/// `--check-parallel N`: sequential and parallel reads deliver the same samples.
fn check_parallel(path: &str, n: usize) {
    let mut seq = Vec::new();
    let t = std::time::Instant::now();
    let a = culprit_decode::Reader::open(path).fold(|p, s| seq.push(sample_hash(p, s)));
    let t_seq = t.elapsed().as_secs_f64();
    let t = std::time::Instant::now();
    let b = culprit_decode::Reader::open(path)
        .threads(n)
        .fold_parallel(Hashes::default());
    let t_par = t.elapsed().as_secs_f64();
    let (a, b, par) = match (a, b) {
        (Ok(a), Ok((b, par))) => (a, b, par),
        (a, b) => {
            println!("errors: sequential {:?} parallel {:?}", a.err(), b.err());
            return;
        }
    };
    let mut sizes = vec![par.samples.len() - par.merged.iter().sum::<usize>()];
    sizes.extend(&par.merged);
    let par = par.samples;
    let first_diff = seq.iter().zip(&par).position(|(x, y)| x != y);
    let same_samples = seq.len() == par.len() && first_diff.is_none();
    let view = |p: &culprit_decode::Profile| {
        format!(
            "{:?} {:?} {:?} {:?} {} {} {} {} {:?} {:?}",
            p.events,
            p.dsos,
            p.strings,
            p.stopped,
            p.lost,
            p.lost_samples,
            p.lost_events,
            p.throttles,
            p.meta.time_range,
            p.meta.records
        )
    };
    let same_profile = view(&a) == view(&b);
    println!(
        "{} samples sequential ({t_seq:.3} s), {} parallel {sizes:?} ({t_par:.3} s): samples {}, profile {}, warnings {}",
        seq.len(),
        par.len(),
        if same_samples { "SAME".to_string() } else { format!("DIFFER at {first_diff:?}") },
        if same_profile { "SAME" } else { "DIFFERS" },
        if a.warnings == b.warnings { "SAME" } else { "DIFFER" },
    );
    if !same_profile {
        println!("sequential: {}\nparallel:   {}", view(&a), view(&b));
    }
}
