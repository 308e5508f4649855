//! Aggregation of raw counts into stat rows (moved with the code from `collect::stat`).

use super::*;

fn info(name: &str) -> EventInfo {
    EventInfo {
        name: name.to_string(),
        scale: 1.0,
        unit: None,
        uncore: false,
    }
}

fn count(value: u64, ns: u64) -> Option<Count> {
    Some(Count {
        value,
        enabled_ns: ns,
        running_ns: ns,
    })
}

/// The instances of an uncore event are one row, their sum (perf merges them); a scaled
/// event's row carries count × scale and its unit (RAPL's Joules).
#[test]
fn test_aggregate_merges_uncore_instances_and_scales_units() {
    let uncore = EventInfo {
        uncore: true,
        ..info("unc_m_cas_count.rd")
    };
    let rapl = EventInfo {
        name: "power/energy-pkg/".into(),
        // RAPL energy units: 2^-32 J.
        scale: 1.0 / (1u64 << 32) as f64,
        unit: Some("Joules".into()),
        uncore: true,
    };
    let groups = vec![
        vec![uncore.clone()],
        vec![info("task-clock")],
        vec![uncore],
        vec![rapl],
    ];
    let run = vec![
        vec![count(100, 10)],
        vec![count(7, 10)],
        vec![count(50, 10)],
        vec![count(1 << 32, 10)],
    ];
    let rows = aggregate(&groups, &[run]);
    let names: Vec<&str> = rows.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(
        names,
        ["unc_m_cas_count.rd", "task-clock", "power/energy-pkg/"]
    );
    assert_eq!(
        (rows[0].value, rows[0].scaled, rows[0].instances),
        (150, Some(150.0), 2)
    );
    assert_eq!((rows[0].enabled_ns, rows[0].running_pct), (20, 100.0));
    assert_eq!((rows[1].instances, rows[1].unit.as_deref()), (0, None));
    assert_eq!(rows[2].scaled, Some(1.0));
    assert_eq!(rows[2].unit.as_deref(), Some("Joules"));
    assert_eq!(rows[2].value, 1 << 32);
    // Each row knows its first event among all requested ones.
    let firsts: Vec<usize> = rows.iter().map(|r| r.first_spec).collect();
    assert_eq!(firsts, [0, 1, 3]);
}

#[test]
fn test_stddev_and_mean() {
    assert_eq!(stddev(&[1.0]), None);
    let sd = stddev(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap();
    assert!((sd - 2.138089935).abs() < 1e-6);
    assert_eq!(mean(&[1.0, 3.0]), 2.0);
}

#[test]
fn test_aggregate_marks_unsupported_events() {
    let groups = vec![vec![info("task-clock")], vec![info("cycles")]];
    let rows = aggregate(&groups, &[vec![vec![count(10, 5)], vec![None]]]);
    assert!(rows[0].supported && rows[0].scaled == Some(10.0));
    assert!(!rows[1].supported && rows[1].scaled.is_none() && rows[1].value == 0);
    // Not supported events feed no metric.
    assert!(metrics_of(&rows, 1_000)
        .iter()
        .all(|m| !m.inputs.contains(&"cycles".to_string())));
}

/// A row that does not count says why by its first event's index, so two rows of one name
/// (`-e cycles,cycles`) or a merged uncore row ask about their own event.
#[test]
fn test_report_asks_why_by_each_rows_first_event() {
    let groups = vec![
        vec![info("task-clock")],
        vec![info("cycles")],
        vec![info("cycles")],
    ];
    let raw = RawStat {
        events: groups,
        runs: vec![vec![vec![count(10, 5)], vec![None], vec![None]]],
        intervals: Some(vec![IntervalCounts {
            time_s: 0.5,
            counts: vec![vec![count(4, 5)], vec![None], vec![None]],
        }]),
        facts: RunFacts {
            elapsed_runs: vec![1000.0],
            exit_code: Some(3),
            ..RunFacts::default()
        },
    };
    let mut asked = Vec::new();
    let r = report(raw, &mut |i| {
        asked.push(i);
        Some(format!("event {i}"))
    });
    assert_eq!(asked, [1, 2]);
    assert_eq!(r.events[2].why.as_deref(), Some("event 2"));
    assert_eq!(r.events[0].why, None);
    let ivs = r.intervals.as_ref().unwrap();
    assert_eq!((ivs[0].time_s, ivs[0].events[0].value), (0.5, 4));
    assert_eq!(r.exit_status(), 3);
}

/// The exit status is the shell's: 128 + the signal for a killed command, 0 without one.
#[test]
fn test_exit_status_as_the_shell() {
    let mut r = StatReport::new(Vec::new(), RunFacts::default(), None);
    assert_eq!(r.exit_status(), 0);
    r.signal = Some(9);
    assert_eq!(r.exit_status(), 137);
}
