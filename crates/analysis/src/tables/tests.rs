//! The report of crafted table rows: folding, children from stacks, and the errors of rows
//! that do not fit their tables.

use super::*;
use crate::hotspots::HotspotOptions;

fn meta() -> RecordingMeta {
    RecordingMeta {
        cmdline: None,
        duration_ns: None,
        hostname: Some("h".to_string()),
        lost: 0,
        os_release: None,
        perf_version: None,
    }
}

/// One event (id 7, ns), two functions `main` -> `work` in DSO `prog`, the stacks
/// `[work, main]` (id 1) and `[main]` (id 2).
fn input(sample_rows: i64) -> TablesInput {
    let mut strings = Strings::default();
    let dso = strings.id("prog");
    let frame = |name: &str, strings: &mut Strings, offset: u64| Frame {
        dso,
        function: Some(strings.id(name)),
        srcline: None,
        srcfile: None,
        inline: false,
        kernel: false,
        offset,
        address: 0x1000 + offset,
    };
    let frames = vec![
        frame("main", &mut strings, 0x10),
        frame("work", &mut strings, 0x20),
    ];
    let frame_index = [(100, 0), (101, 1)].into_iter().collect();
    let g = |f: u32| Group {
        frame: f,
        innermost: f,
    };
    TablesInput {
        sample_rows,
        file: "perf.data".to_string(),
        meta: meta(),
        events: vec![TableEvent {
            id: 7,
            name: "cpu-clock".to_string(),
            unit: "ns".to_string(),
        }],
        frames,
        frame_index,
        stacks: [(1, (0, 2)), (2, (2, 3))].into_iter().collect(),
        groups: vec![g(1), g(0), g(0)],
        has_chains: true,
        strings,
    }
}

fn opts(keys: Vec<SortKey>) -> FleetOptions {
    FleetOptions {
        hotspots: HotspotOptions {
            keys,
            ..HotspotOptions::default()
        },
        children: None,
        unwind: false,
    }
}

fn place() -> InputPlace {
    InputPlace {
        label: "perf.data (x/00)".to_string(),
        id: "00".to_string(),
        samples_dir: "x/samples".to_string(),
        samples_file: "x/samples/00.parquet".to_string(),
    }
}

fn row(row: usize, stack: i64, leaf: i64, period: i64) -> SampleRow<'static> {
    SampleRow {
        row,
        pid: Some(5),
        tid: Some(5),
        comm: Some("prog"),
        cpu: Some(0),
        event_id: Some(7),
        period: Some(period),
        stack_id: Some(stack),
        leaf_frame_id: Some(leaf),
    }
}

#[test]
fn test_rows_of_folded_samples_have_self_and_children_values() {
    let o = opts(vec![SortKey::Sym]);
    let mut report = TablesReport::new(&o).unwrap();
    let mut fold = report.fold(input(3));
    for (i, (stack, leaf)) in [(1, 101), (1, 101), (2, 100)].into_iter().enumerate() {
        fold.add(&row(i, stack, leaf, 10), &o).unwrap();
    }
    report.add_input(fold, &place()).unwrap();
    let r = report.finish().unwrap();
    assert_eq!(r.inputs[0].events[0].samples, 3);
    assert_eq!(r.inputs[0].events[0].period, 30);
    let rows: Vec<(String, u64, u64)> = r
        .hotspots
        .rows()
        .map(|row| {
            let k = row.key(0);
            (
                row.text(&k).to_string(),
                row.period(0),
                row.children_period(0),
            )
        })
        .collect();
    assert!(rows.contains(&("work".to_string(), 20, 20)), "{rows:?}");
    assert!(rows.contains(&("main".to_string(), 10, 30)), "{rows:?}");
}

#[test]
fn test_rows_that_do_not_fit_their_tables_are_errors() {
    let o = opts(vec![SortKey::Sym]);
    let mut report = TablesReport::new(&o).unwrap();
    let mut fold = report.fold(input(1));
    let null_event = SampleRow {
        event_id: None,
        ..row(3, 1, 101, 1)
    };
    assert_eq!(
        fold.add(&null_event, &o).unwrap_err(),
        RowError {
            column: "event_id",
            what: "null in row 3".to_string()
        }
    );
    let unknown = SampleRow {
        event_id: Some(8),
        ..row(4, 1, 101, 1)
    };
    assert_eq!(fold.add(&unknown, &o).unwrap_err().column, "event_id");
    assert_eq!(
        fold.add(&row(5, 1, 101, -1), &o).unwrap_err().what,
        "row 5: negative period -1"
    );
    // Two rows where hosts.samples says one: a samples file duplicated.
    fold.add(&row(0, 1, 101, 1), &o).unwrap();
    fold.add(&row(1, 1, 101, 1), &o).unwrap();
    let err = report.add_input(fold, &place()).unwrap_err();
    assert_eq!(err.path, "x/samples");
    // A stack the stacks table does not have.
    let mut fold = report.fold(input(1));
    fold.add(&row(0, 9, 101, 1), &o).unwrap();
    let err = report.add_input(fold, &place()).unwrap_err();
    assert_eq!(
        (err.path.as_str(), err.why.as_str()),
        ("x/samples/00.parquet", "stack 9 is not in stacks/")
    );
}

#[test]
fn test_keys_the_tables_do_not_carry_are_refused() {
    assert!(TablesReport::new(&opts(vec![SortKey::Ip])).is_err());
    assert!(unsupported(&opts(vec![SortKey::Dso, SortKey::Sym])).is_none());
}
