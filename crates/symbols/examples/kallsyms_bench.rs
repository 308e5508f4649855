//! Times parsing a kallsyms file (default: /proc/kallsyms): `kallsyms_bench [FILE] [RUNS]`.
fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().unwrap_or_else(|| "/proc/kallsyms".into());
    let runs: usize = args.next().and_then(|r| r.parse().ok()).unwrap_or(5);
    let text: culprit_symbols::SharedText =
        std::sync::Arc::new(std::fs::read(&path).expect("read kallsyms"));
    for _ in 0..runs {
        let t = std::time::Instant::now();
        let k = culprit_symbols::parse_kallsyms_text(text.clone());
        let d = t.elapsed();
        println!(
            "{} kernel symbols, {} modules: {:.2} ms",
            k.kernel.len(),
            k.modules.len(),
            d.as_secs_f64() * 1e3
        );
    }
}
