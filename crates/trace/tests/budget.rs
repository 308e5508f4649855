//! The memory budget of a program's aggregations (`Options::agg_memory`, `--agg-memory`):
//! per-key state is estimated and charged, and past the budget new keys are dropped and
//! counted, with a note, while the keys already held keep aggregating.

use crate::common;

use common::{event, sample};
use culprit_decode::model::Profile;
use culprit_trace::{compile, NoSymbols, Options};

/// `n` cpu-clock samples with distinct timestamps 1..=n ns, then the same timestamps again
/// (so that every key the aggregations keep is seen twice).
fn timestamps_profile(n: u64) -> Profile {
    let mut p = Profile {
        events: vec![event("cpu-clock", 1000)],
        strings: vec!["t".into()],
        ..Profile::default()
    };
    for round in 0..2 {
        for i in 1..=n {
            let _ = round;
            p.samples
                .push(sample(0, i, 1, 0, 1000, 0x1000 + 4 * (i % 16)));
        }
    }
    p
}

/// Runs `src` over `p` with an aggregation budget of `budget` bytes: (text output,
/// aggregations JSON, notes, accounted bytes).
fn run_with_budget(
    p: &Profile,
    src: &str,
    budget: usize,
) -> (String, serde_json::Value, Vec<String>, usize) {
    let prog = compile(
        src,
        &Options {
            quiet: true,
            agg_memory: budget,
            ..Options::default()
        },
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let mut r = prog
        .runner(&p.events, "test")
        .unwrap_or_else(|e| panic!("{e}"));
    let mut syms = NoSymbols;
    r.begin(p, &mut syms);
    for s in &p.samples {
        if !r.sample(p, s, &mut syms) {
            break;
        }
    }
    r.end(p, &mut syms, true);
    (
        r.take_output(),
        serde_json::to_value(r.aggregations_json()).unwrap(),
        r.notes().to_vec(),
        r.aggregation_bytes(),
    )
}

/// Sum of a field over all aggregations of the JSON.
fn total(json: &serde_json::Value, field: &str) -> u64 {
    json.as_array()
        .unwrap()
        .iter()
        .map(|a| a[field].as_u64().unwrap())
        .sum()
}

#[test]
fn lquantize_per_timestamp_stays_within_the_budget() {
    // 10,002 buckets of 8 bytes: about 80 KB per key, so 4 MiB holds a few dozen keys of
    // the 2,000 timestamps (unbounded: about 160 MB).
    let n = 2000;
    let budget = 4 << 20;
    let (_, json, notes, bytes) = run_with_budget(
        &timestamps_profile(n),
        "pmc:::cpu-clock { @[timestamp] = lquantize(timestamp, 0, 10000, 1); }",
        budget,
    );
    assert!(bytes <= budget, "{bytes} bytes accounted, budget {budget}");
    let kept = json[0]["entries"].as_array().unwrap();
    assert!(
        !kept.is_empty() && (kept.len() as u64) < n / 10,
        "{} keys kept",
        kept.len()
    );
    // Kept keys went on aggregating: each saw both of its samples.
    assert!(kept.iter().all(|e| e["value"] == 2), "{kept:?}");
    let dropped_keys = json[0]["dropped_keys"].as_u64().unwrap();
    let dropped_samples = json[0]["dropped_samples"].as_u64().unwrap();
    assert_eq!(dropped_keys, n - kept.len() as u64);
    assert_eq!(dropped_samples, 2 * dropped_keys);
    let note = format!(
        "@: aggregation memory budget 4M reached: {dropped_keys} more keys and {dropped_samples} samples dropped (raise it with --agg-memory SIZE)"
    );
    assert_eq!(notes, vec![note]);
}

#[test]
fn three_hundred_aggregations_share_one_budget() {
    let n = 1000;
    let budget = 1 << 20;
    let body: String = (0..300)
        .map(|i| format!("@a{i}[timestamp] = count(); "))
        .collect();
    let src = format!("pmc:::cpu-clock {{ {body}}}");
    let (_, json, notes, bytes) = run_with_budget(&timestamps_profile(n), &src, budget);
    assert!(bytes <= budget, "{bytes} bytes accounted, budget {budget}");
    let aggs = json.as_array().unwrap();
    assert_eq!(aggs.len(), 300);
    let kept: u64 = aggs
        .iter()
        .map(|a| a["entries"].as_array().unwrap().len() as u64)
        .sum();
    // 300,000 keys asked for; a small part fits.
    assert!(kept > 0 && kept < 300 * n / 10, "{kept} keys kept");
    // Every sample of a key not kept is counted; distinct dropped keys are remembered
    // within the budget too, so past it their count is a lower bound ("at least").
    assert_eq!(total(&json, "dropped_samples"), 2 * (300 * n - kept));
    let dropped_keys = total(&json, "dropped_keys");
    assert!(dropped_keys > 0 && kept + dropped_keys < 300 * n);
    // The samples come in time order: every aggregation got the first keys, and every one
    // dropped later ones and says so.
    assert!(aggs
        .iter()
        .all(|a| !a["entries"].as_array().unwrap().is_empty()));
    assert_eq!(notes.len(), 300);
    assert!(notes
        .iter()
        .all(|n| n.contains("aggregation memory budget 1M reached")));
    assert!(notes.iter().any(|n| n.contains("at least")));
}

#[test]
fn offenders_per_key_are_charged_to_the_budget() {
    let n = 2000;
    let budget = 1 << 20;
    let (_, json, notes, bytes) = run_with_budget(
        &timestamps_profile(n),
        "pmc:::cpu-clock { @[timestamp] = offenders(ip); }",
        budget,
    );
    assert!(bytes <= budget, "{bytes} bytes accounted, budget {budget}");
    let kept = json[0]["entries"].as_array().unwrap().len() as u64;
    assert!(kept > 0 && kept < n);
    assert_eq!(json[0]["dropped_keys"].as_u64().unwrap(), n - kept);
    assert_eq!(notes.len(), 1);
    assert!(notes[0].contains("budget 1M reached"), "{notes:?}");
}

#[test]
fn under_the_budget_nothing_changes() {
    let p = timestamps_profile(300);
    let src = "pmc:::cpu-clock { @c[timestamp % 7] = count(); @q = quantize(timestamp); @l[tid] = lquantize(timestamp, 0, 300, 10); }";
    let (out, json, notes, bytes) = run_with_budget(&p, src, usize::MAX);
    let (small_out, small_json, small_notes, small_bytes) = run_with_budget(&p, src, 1 << 20);
    assert_eq!(out, small_out);
    assert_eq!(json, small_json);
    assert!(notes.is_empty() && small_notes.is_empty(), "{notes:?}");
    assert_eq!(bytes, small_bytes);
    assert!(bytes > 0);
    assert_eq!(total(&json, "dropped_keys"), 0);
}

#[test]
fn trunc_gives_its_bytes_back() {
    // Truncating the aggregation to one key at every sample frees the others: a budget of
    // two entries is enough for any number of distinct keys.
    let (_, json, notes, bytes) = run_with_budget(
        &timestamps_profile(500),
        "pmc:::cpu-clock { @[timestamp] = lquantize(timestamp, 0, 10000, 1); } pmc:::cpu-clock { trunc(@, 1); }",
        200 << 10,
    );
    assert!(notes.is_empty(), "{notes:?}");
    assert_eq!(json[0]["entries"].as_array().unwrap().len(), 1);
    assert!(bytes > 0 && bytes <= 200 << 10);
}
