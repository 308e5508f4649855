//! The CLI's integration tests: one test binary (one link of the whole program instead of one
//! per file), each file of this directory a module. Run one file's tests with
//! `cargo test -p culprit-cli --test cli MODULE::` (e.g. `attr_oracle::`).

mod browser;
mod common;

mod annotate;
mod architecture;
mod archive;
mod attr_oracle;
mod bounded;
mod branch;
mod breakpoint;
mod corpus;
mod debuginfod;
mod demo;
mod diff;
mod endless;
mod escaping;
mod export;
mod export_formats;
mod export_pgo;
mod flamegraph;
mod fleet;
mod formats;
mod groups;
mod html;
mod html_states;
mod html_views;
mod html_why;
mod ibs;
mod input;
mod jit;
mod kernel;
mod kmodule;
mod latency;
mod list;
mod lock;
mod mem;
mod offenders;
mod parquet;
mod record;
mod record_modes;
mod record_signals;
mod reliability;
mod report;
mod report_layout;
mod sched;
mod schema;
mod script;
// `culprit sql` exists only with the `sql` feature (DataFusion: a long build).
#[cfg(feature = "sql")]
mod sql;
mod stat;
mod stat_metrics;
mod stat_switches;
mod top;
mod trace;
mod tracepoints;
mod unknown;
mod unwind;

/// `autotests = false` builds only the files declared above: a new file in tests/ that is
/// not declared here would silently never run.
#[test]
fn every_test_file_is_a_module_of_this_binary() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let root = std::fs::read_to_string(dir.join("cli.rs")).expect("read tests/cli.rs");
    let declared: std::collections::BTreeSet<&str> = root
        .lines()
        .filter_map(|l| l.strip_prefix("mod ")?.strip_suffix(';'))
        .collect();
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(&dir).expect("read tests/") {
        let path = entry.expect("a tests/ entry").path();
        let module = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_default();
        let is_module =
            path.extension().is_some_and(|e| e == "rs") || path.join("mod.rs").is_file();
        if is_module && module != "cli" && !declared.contains(module) {
            missing.push(module.to_string());
        }
    }
    assert!(
        missing.is_empty(),
        "tests/ files not declared in tests/cli.rs: {missing:?}"
    );
}
