//! `culprit stat` must not add context switches of its own: it blocks until the command
//! exits (or the next `-I` tick), as perf stat does, instead of polling every few ms.
//!
//! Oracle: `perf stat` on the same command, run in the same test (so both see the same
//! machine load), compared with a ratio plus a small absolute slack. Each count is the
//! fewest of three runs: a burst of load from another test (a JVM starting) adds switches to
//! whichever tool runs during it (`sleep 1` once counted 9 under culprit and 1 under perf).

use crate::common;

use std::process::Command;

use common::{culprit, perf, require_perf, run_ok};

/// The `context-switches` count in `perf stat`-style text (the first line naming it).
fn switches(text: &str) -> u64 {
    text.lines()
        .find(|l| l.contains("context-switches"))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|n| n.replace(',', "").parse().ok())
        .unwrap_or_else(|| panic!("no context-switches count in:\n{text}"))
}

fn stderr_of(cmd: &mut Command) -> String {
    String::from_utf8_lossy(&run_ok(cmd).stderr).into_owned()
}

/// The fewest of three counts (see the module's comment).
fn fewest(count: impl Fn() -> u64) -> u64 {
    (0..3).map(|_| count()).min().unwrap_or(0)
}

/// The context switches of stat itself (the outer perf counts stat and its child): culprit's
/// must be of perf's order, not one per 5 ms poll (≈ 200 per second).
#[test]
fn test_stat_does_not_poll_the_command_outer_count_as_perf() {
    if !require_perf("test_stat_does_not_poll_the_command_outer_count_as_perf") {
        return;
    }
    let outer = |program: &str| {
        let mut c = perf();
        c.args(["stat", "-e", "context-switches", "--", program])
            .args(["stat", "-e", "context-switches", "--", "sleep", "1"])
            .env("HOME", common::test_home());
        switches(&stderr_of(&mut c))
    };
    let culprit_total = fewest(|| outer(env!("CARGO_BIN_EXE_culprit")));
    let perf_total = fewest(|| outer("perf"));
    assert!(
        culprit_total <= 2 * perf_total + 10,
        "culprit stat made {culprit_total} context switches around `sleep 1`, perf stat {perf_total}"
    );
}

/// The command's own count equals perf's: a sleeping command (tiny, exact) and a CPU-bound
/// loop (preemptions, so a ratio with slack for the load of a shared machine).
#[test]
fn test_stat_context_switches_match_perf() {
    if !require_perf("test_stat_context_switches_match_perf") {
        return;
    }
    let count = |tool: fn() -> Command, cmd: &[&str]| {
        fewest(|| {
            let mut c = tool();
            c.args(["stat", "-e", "context-switches", "--"]).args(cmd);
            switches(&stderr_of(&mut c))
        })
    };
    let sleep = ["sleep", "1"];
    let (ours, theirs) = (count(culprit, &sleep), count(perf, &sleep));
    assert!(
        ours <= 2 * theirs + 5,
        "sleep 1: culprit {ours}, perf {theirs}"
    );
    let busy = [
        "sh",
        "-c",
        "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done",
    ];
    let (ours, theirs) = (count(culprit, &busy), count(perf, &busy));
    assert!(
        ours as f64 <= theirs as f64 * 1.2 + 20.0,
        "busy loop: culprit {ours}, perf {theirs}"
    );
}
