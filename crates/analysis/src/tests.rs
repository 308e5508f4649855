//! Hotspot tests on hand-built profiles. Symbols come from a JIT map (`perf-PID.map`) in a
//! scratch directory, so names are fully controlled and no system file is read.

use culprit_decode::model::{CpuMode, Dso, DsoKind, EventInfo, Frame, Location, Profile, Sample};
use culprit_symbols::{Symbolizer, SymbolizerOptions};

use crate::*;

const PID: i32 = 4242;

mod models;
mod unnamed;

/// Symbols: f1 at 0x1000, f2 at 0x2000, main at 0x3000, each 0x100 long; 0x9000 unknown.
fn symbolizer(tag: &str) -> Symbolizer {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../target/test-tmp")
        .join(format!("culprit-analysis-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join(format!("perf-{PID}.map")),
        "1000 100 f1\n2000 100 f2\n3000 100 main\n",
    )
    .unwrap();
    Symbolizer::new(SymbolizerOptions {
        perf_map_dir: dir.clone(),
        kallsyms: dir.join("no-kallsyms"),
        kernel_notes: dir.join("no-notes"),
        modules: dir.join("no-modules"),
        buildid_cache: None,
        debug_root: dir,
        ..SymbolizerOptions::default()
    })
}

/// A software event with no samples yet (shared by the crate's tests).
pub(crate) fn event(name: &str) -> EventInfo {
    EventInfo {
        name: name.into(),
        attr_type: 1,
        config: 0,
        config1: 0,
        config2: 0,
        period_or_freq: 1000,
        freq: true,
        sample_type: 0,
        precise_ip: 0,
        pmu: None,
        samples: 0,
        period: 0,
        lost: 0,
        read_format: 0,
        attr_flags: 0,
        sample_regs_user: 0,
        sample_stack_user: 0,
        branch_sample_type: 0,
        ids: Vec::new(),
    }
}

struct Builder {
    p: Profile,
}

impl Builder {
    fn new(events: &[&str]) -> Builder {
        let p = Profile {
            events: events.iter().map(|e| event(e)).collect(),
            strings: vec!["prog".into(), "other".into()],
            dsos: vec![Dso {
                path: "//anon".into(),
                short_name: "//anon".into(),
                build_id: None,
                kind: DsoKind::Anonymous,
                pid: Some(PID),
            }],
            ..Profile::default()
        };
        Builder { p }
    }

    /// A sample at `chain[0]` with call chain `chain` (callee first), period `period`.
    fn sample(&mut self, event: u16, comm: u32, period: u64, chain: &[u64]) {
        let loc = |a: u64| Location {
            dso: Some(0),
            file_offset: a,
        };
        let start = self.p.frames.len() as u32;
        for &a in chain {
            self.p.frames.push(Frame {
                addr: a,
                cpumode: CpuMode::User,
                location: loc(a),
            });
        }
        let end = self.p.frames.len() as u32;
        self.p.samples.push(Sample {
            event,
            time: 0,
            pid: PID,
            tid: PID,
            cpu: 0,
            period,
            ip: chain[0],
            cpumode: CpuMode::User,
            exact_ip: false,
            comm,
            location: loc(chain[0]),
            callchain: start..end,
            ..Default::default()
        });
    }
}

fn run(p: &Profile, tag: &str, opts: &HotspotOptions) -> Hotspots {
    let mut s = symbolizer(tag);
    hotspots(p, &mut s, opts, &mut |_, _| {}).unwrap()
}

fn sym_of(row: &Row) -> String {
    let k = row.keys().find(|k| k.key == SortKey::Sym).unwrap();
    match k.addr() {
        Some(a) => format!("{a:#x}"),
        None => row.text(&k).to_string(),
    }
}

fn find<'a>(h: &'a Hotspots, sym: &str) -> Row<'a> {
    h.rows()
        .find(|r| sym_of(r) == sym)
        .unwrap_or_else(|| panic!("no row {sym}"))
}

fn sample_profile() -> Profile {
    let mut b = Builder::new(&["cpu-clock"]);
    // 3 × f1 called from main, 1 × f2 called from f1 from main, 1 × unknown from main.
    for _ in 0..3 {
        b.sample(0, 0, 100, &[0x1010, 0x3020]);
    }
    b.sample(0, 0, 200, &[0x2010, 0x1050, 0x3020]);
    b.sample(0, 0, 100, &[0x9000, 0x3020]);
    b.p
}

#[test]
fn test_hotspots_self_percentages_of_total_period() {
    let p = sample_profile();
    let per_address = HotspotOptions {
        unknown_per_address: true,
        ..HotspotOptions::default()
    };
    let h = run(&p, "self", &per_address);
    assert_eq!(h.events[0].samples, 5);
    assert_eq!(h.events[0].period, 600);
    assert_eq!(h.len(), 3);
    let f1 = find(&h, "f1");
    assert_eq!(f1.samples(0), 3);
    assert!((f1.percent(0) - 50.0).abs() < 1e-9);
    assert_eq!(f1.text(&f1.key(0)), "prog");
    assert_eq!(f1.text(&f1.key(1)), "//anon");
    assert!((find(&h, "f2").percent(0) - 100.0 / 3.0).abs() < 1e-9);
    // Unknown addresses group by address and keep it.
    assert_eq!(find(&h, "0x9000").samples(0), 1);
    // Sorted by period.
    assert_eq!(sym_of(&h.row(0)), "f1");
}

#[test]
fn test_hotspots_children_count_each_ancestor_once() {
    let mut b = Builder::new(&["cpu-clock"]);
    // Recursion: f1 → f1 → main; f1 must get the period once.
    b.sample(0, 0, 10, &[0x1010, 0x1020, 0x3000]);
    b.sample(0, 0, 30, &[0x2010, 0x3000]);
    let opts = HotspotOptions {
        children: true,
        ..HotspotOptions::default()
    };
    let h = run(&b.p, "children", &opts);
    let main = find(&h, "main");
    assert_eq!(main.period(0), 0);
    assert_eq!(main.children_period(0), 40);
    assert!((main.children_percent(0) - 100.0).abs() < 1e-9);
    let f1 = find(&h, "f1");
    assert_eq!(f1.children_period(0), 10);
    assert_eq!(f1.children_samples(0), 1);
    // Sorted by children period: main first.
    assert_eq!(sym_of(&h.row(0)), "main");
}

#[test]
fn test_hotspots_unresolved_chain_frames_keyed_by_runtime_address() {
    let mut b = Builder::new(&["cpu-clock"]);
    b.sample(0, 0, 10, &[0x9000, 0x3000]);
    let opts = HotspotOptions {
        children: true,
        unknown_per_address: true,
        ..HotspotOptions::default()
    };
    let h = run(&b.p, "unresolved", &opts);
    // JIT maps are identity-mapped, so the sampled IP row and the chain row coincide.
    let u = find(&h, "0x9000");
    assert_eq!(u.period(0), 10);
    assert_eq!(u.children_period(0), 10);
    assert_eq!(h.len(), 2);
}

#[test]
fn test_hotspots_filters_keep_the_percentage_base() {
    let mut p = sample_profile();
    p.samples[0].comm = 1; // one f1 sample from "other"
    let opts = HotspotOptions {
        filters: Filters {
            comms: vec!["prog".into()],
            ..Filters::default()
        },
        ..HotspotOptions::default()
    };
    let h = run(&p, "filters", &opts);
    assert!(h.rows().all(|r| r.text(&r.key(0)) == "prog"));
    let f1 = find(&h, "f1");
    assert_eq!(f1.samples(0), 2);
    assert!((f1.percent(0) - 200.0 / 6.0).abs() < 1e-9);
    let opts = HotspotOptions {
        filters: Filters {
            dsos: vec!["libnothing.so".into()],
            ..Filters::default()
        },
        ..HotspotOptions::default()
    };
    assert!(run(&p, "filters2", &opts).is_empty());
}

#[test]
fn test_hotspots_percent_limit_and_top() {
    let p = sample_profile();
    let opts = HotspotOptions {
        keys: vec![SortKey::Sym],
        percent_limit: 20.0,
        ..HotspotOptions::default()
    };
    let h = run(&p, "limit", &opts);
    assert_eq!(h.len(), 2);
    assert_eq!(h.hidden_rows, 1);
    let opts = HotspotOptions {
        keys: vec![SortKey::Sym],
        top: Some(1),
        ..HotspotOptions::default()
    };
    let h = run(&p, "top", &opts);
    assert_eq!(h.len(), 1);
    assert_eq!(sym_of(&h.row(0)), "f1");
}

#[test]
fn test_hotspots_one_column_per_event_and_event_selection() {
    let mut b = Builder::new(&["cpu-clock", "page-faults"]);
    b.sample(0, 0, 100, &[0x1000]);
    b.sample(0, 0, 100, &[0x2000]);
    b.sample(1, 0, 7, &[0x2000]);
    let h = run(&b.p, "events", &HotspotOptions::default());
    assert_eq!(h.events.len(), 2);
    let f2 = find(&h, "f2");
    assert_eq!((f2.samples(0), f2.samples(1)), (1, 1));
    assert!((f2.percent(0) - 50.0).abs() < 1e-9);
    assert!((f2.percent(1) - 100.0).abs() < 1e-9);
    let opts = HotspotOptions {
        events: vec!["page-faults".into()],
        ..HotspotOptions::default()
    };
    let h = run(&b.p, "events2", &opts);
    assert_eq!(h.events.len(), 1);
    assert_eq!(h.len(), 1);
    let opts = HotspotOptions {
        events: vec!["cycles".into()],
        ..HotspotOptions::default()
    };
    let mut s = symbolizer("events3");
    assert!(matches!(
        hotspots(&b.p, &mut s, &opts, &mut |_, _| {}),
        Err(AnalysisError::UnknownEvent { .. })
    ));
}

#[test]
fn test_hotspots_sort_event_and_per_event_tables() {
    // page-faults (the first event) only in f1; cpu-clock mostly in f2, then f1.
    let mut b = Builder::new(&["page-faults", "cpu-clock"]);
    b.sample(0, 0, 1, &[0x1000]);
    b.sample(1, 0, 100, &[0x1000]);
    for _ in 0..3 {
        b.sample(1, 0, 100, &[0x2000]);
    }
    let top1 = |sort_event: Option<&str>, per_event: bool| HotspotOptions {
        top: Some(1),
        sort_event: sort_event.map(str::to_string),
        per_event,
        ..HotspotOptions::default()
    };
    // Default: the first event with samples sorts and cuts; f2 (75 % of cpu-clock) is cut.
    let h = run(&b.p, "sort-event", &top1(None, false));
    assert_eq!((h.sort_event, h.len(), h.hidden_rows), (0, 1, 1));
    assert_eq!(sym_of(&h.row(0)), "f1");
    // By cpu-clock: f2 first.
    let h = run(&b.p, "sort-event2", &top1(Some("cpu-clock"), false));
    assert_eq!(h.sort_event, 1);
    assert_eq!(sym_of(&h.row(0)), "f2");
    // One table per event, each sorted and cut by its event.
    let h = run(&b.p, "sort-event3", &top1(None, true));
    assert!(h.has_event_tables());
    let (faults, _) = h.event_rows(0);
    let (clock, hidden) = h.event_rows(1);
    assert_eq!(faults.iter().map(sym_of).collect::<Vec<_>>(), ["f1"]);
    assert_eq!(clock.iter().map(sym_of).collect::<Vec<_>>(), ["f2"]);
    assert_eq!(hidden, 1);
    // Ties of the sort event are broken by the next events.
    let mut b = Builder::new(&["page-faults", "cpu-clock"]);
    b.sample(1, 0, 100, &[0x1000]);
    b.sample(1, 0, 100, &[0x2000]);
    b.sample(1, 0, 100, &[0x2000]);
    b.sample(0, 0, 1, &[0x3000]);
    let h = run(&b.p, "sort-event4", &HotspotOptions::default());
    let order: Vec<String> = h.rows().map(|r| sym_of(&r)).collect();
    assert_eq!(order, ["main", "f2", "f1"]);
    // An event the report does not have.
    let mut s = symbolizer("sort-event5");
    assert!(matches!(
        hotspots(&b.p, &mut s, &top1(Some("cycles"), false), &mut |_, _| {}),
        Err(AnalysisError::UnknownEvent { .. })
    ));
}

#[test]
fn test_hotspots_callee_and_caller_graphs() {
    let p = sample_profile();
    let opts = HotspotOptions {
        keys: vec![SortKey::Sym],
        call_graph: CallGraphMode::Callee,
        call_graph_threshold: 0.0,
        ..HotspotOptions::default()
    };
    let h = run(&p, "callee", &opts);
    let f2 = find(&h, "f2");
    let g = f2.call_graph(0).unwrap();
    assert_eq!(g.name, "f2");
    assert_eq!(g.children.len(), 1);
    assert_eq!(g.children[0].name, "f1");
    assert_eq!(g.children[0].children[0].name, "main");
    assert_eq!(g.children[0].children[0].period, 200);
    let opts = HotspotOptions {
        call_graph: CallGraphMode::Caller,
        ..opts
    };
    let h = run(&p, "caller", &opts);
    let g = find(&h, "f2").call_graph(0).cloned().unwrap();
    assert_eq!(g.children[0].name, "main");
    assert_eq!(g.children[0].children[0].name, "f1");
}

#[test]
fn test_hotspots_pid_cpu_and_ip_keys() {
    let p = sample_profile();
    let opts = HotspotOptions {
        keys: vec![SortKey::Pid, SortKey::Cpu, SortKey::Ip],
        ..HotspotOptions::default()
    };
    let h = run(&p, "keys", &opts);
    let r = h.row(0);
    assert_eq!(r.key(0).number(), Some(i64::from(PID)));
    assert_eq!(r.key(1).number(), Some(0));
    // Three f1 samples at the same address share a row.
    assert_eq!(r.samples(0), 3);
    assert_eq!(r.text(&r.key(2)), "0x1010");
    assert_eq!(r.key(2).addr(), Some(0x1010));
    assert_eq!(r.dso(&r.key(2)), Some("//anon"));
}

#[test]
fn test_sort_key_parse_list() {
    assert_eq!(
        SortKey::parse_list("comm, dso,symbol").unwrap(),
        vec![SortKey::Comm, SortKey::Dso, SortKey::Sym]
    );
    assert!(matches!(
        SortKey::parse_list("comm,bogus"),
        Err(AnalysisError::UnknownSortKey(k)) if k == "bogus"
    ));
}

/// Children, caller graphs with every edge, only the `prog` command's chains.
fn children_callers_of_prog() -> HotspotOptions {
    HotspotOptions {
        children: true,
        call_graph: CallGraphMode::Caller,
        call_graph_threshold: 0.0,
        filters: Filters {
            comms: vec!["prog".into()],
            ..Filters::default()
        },
        ..HotspotOptions::default()
    }
}

#[test]
fn test_hotspots_aggregated_folds_identical_samples_and_keeps_counts() {
    let mut b = Builder::new(&["cpu-clock"]);
    // Three identical samples (same chain), one with another chain, one filtered out.
    for _ in 0..3 {
        b.sample(0, 0, 10, &[0x1010, 0x3000]);
    }
    b.sample(0, 0, 5, &[0x1010, 0x2010, 0x3000]);
    b.sample(0, 1, 7, &[0x2010, 0x3000]);
    let opts = children_callers_of_prog();
    let mut agg = hotspots::SampleAggregator::new(true, &opts.filters);
    for s in &b.p.samples {
        agg.add(&b.p, s);
    }
    assert!(agg.has_callchains());
    assert_eq!(agg.distinct(), 3, "identical samples fold into one entry");
    let mut s = symbolizer("aggregated");
    let h = hotspots::hotspots_aggregated(&b.p, &agg, &mut s, &opts, &mut |_, _| {}).unwrap();
    // The filtered sample still counts in the base.
    assert_eq!(h.events[0].samples, 5);
    assert_eq!(h.events[0].period, 42);
    let f1 = find(&h, "f1");
    assert_eq!(f1.samples(0), 4);
    assert_eq!(f1.period(0), 35);
    let main = find(&h, "main");
    assert_eq!(main.children_samples(0), 4);
    assert_eq!(main.children_period(0), 35);
    // The caller graph of f1 carries the folded counts: main (4 samples), then f2 (1).
    let g = f1.call_graph(0).unwrap();
    assert_eq!(g.samples, 4);
    assert_eq!(g.children[0].name, "main");
    assert_eq!(g.children[0].samples, 4);
    assert_eq!(g.children[0].period, 35);
    // Same answer as the in-memory API.
    let h2 = run(&b.p, "aggregated2", &opts);
    assert_eq!(h2.len(), h.len());
    for (a, b) in h.rows().zip(h2.rows()) {
        let texts = |r: &Row| -> Vec<String> { r.keys().map(|k| r.text(&k).to_string()).collect() };
        assert_eq!(texts(&a), texts(&b));
        assert_eq!(a.period(0), b.period(0));
        assert_eq!(a.children_period(0), b.children_period(0));
        assert_eq!(a.call_graph(0), b.call_graph(0));
    }
}

#[test]
fn test_aggregator_absorb_equals_one_aggregator_at_every_split() {
    let mut b = Builder::new(&["cpu-clock"]);
    // Equal-valued rows (ties keep first-seen order), shared and distinct chains, a sample
    // filtered out, samples that fold into entries of the other half.
    b.sample(0, 0, 10, &[0x1010, 0x3000]);
    b.sample(0, 0, 10, &[0x2010, 0x1050, 0x3000]);
    b.sample(0, 1, 7, &[0x2010, 0x3000]);
    b.sample(0, 0, 10, &[0x9000, 0x3000]);
    b.sample(0, 0, 10, &[0x1010, 0x3000]);
    b.sample(0, 0, 5, &[0x2010, 0x3000]);
    b.sample(0, 0, 10, &[0x9100, 0x2010, 0x3000]);
    b.sample(0, 0, 5, &[0x1010, 0x2010, 0x3000]);
    let opts = children_callers_of_prog();
    let view = |h: &Hotspots| -> Vec<String> {
        h.rows()
            .map(|r| {
                let keys: Vec<String> = r.keys().map(|k| r.text(&k).to_string()).collect();
                format!(
                    "{keys:?} {} {} {} {} {:?}",
                    r.samples(0),
                    r.period(0),
                    r.children_samples(0),
                    r.children_period(0),
                    r.call_graph(0)
                )
            })
            .collect()
    };
    let mut whole = hotspots::SampleAggregator::new(true, &opts.filters);
    for s in &b.p.samples {
        whole.add(&b.p, s);
    }
    whole.finish();
    let mut s = symbolizer("absorb");
    let want =
        view(&hotspots::hotspots_aggregated(&b.p, &whole, &mut s, &opts, &mut |_, _| {}).unwrap());
    for cut in 0..=b.p.samples.len() {
        let mut first = hotspots::SampleAggregator::new(true, &opts.filters);
        let mut second = first.empty_like();
        for (i, smp) in b.p.samples.iter().enumerate() {
            if i < cut {
                first.add(&b.p, smp);
            } else {
                second.add(&b.p, smp);
            }
        }
        first.absorb(second, &b.p);
        first.finish();
        assert_eq!(first.distinct(), whole.distinct(), "cut at {cut}");
        let got = view(
            &hotspots::hotspots_aggregated(&b.p, &first, &mut s, &opts, &mut |_, _| {}).unwrap(),
        );
        assert_eq!(got, want, "cut at {cut}");
    }
}

#[test]
fn test_flat_report_keeping_only_read_fields_equals_full_fold() {
    // Samples that differ in every field a key can show (pid, tid, cpu, comm, cpumode,
    // address), with equal-valued rows (ties keep first-seen order) and repeats.
    let mut b = Builder::new(&["cpu-clock", "page-faults"]);
    let variants: [(i32, i32, u32, u32, CpuMode, u64, u64); 9] = [
        (PID, PID, 0, 0, CpuMode::User, 0x1010, 10),
        (PID, PID + 1, 1, 0, CpuMode::User, 0x2010, 10),
        (PID + 1, PID + 2, 0, 1, CpuMode::User, 0x1010, 7),
        (PID, PID, 1, 0, CpuMode::Kernel, 0x2010, 10),
        (PID + 1, PID + 2, 1, 1, CpuMode::User, 0x3000, 3),
        (PID, PID + 1, 0, 0, CpuMode::User, 0x1050, 10),
        (PID + 2, PID + 3, 0, 0, CpuMode::User, 0x9000, 5),
        (PID, PID, 0, 1, CpuMode::User, 0x1010, 10),
        (PID + 1, PID + 1, 1, 0, CpuMode::User, 0x2010, 5),
    ];
    for round in 0..3u64 {
        for (i, &(pid, tid, cpu, comm, mode, ip, period)) in variants.iter().enumerate() {
            b.sample((i % 2) as u16, comm, period + round, &[ip]);
            let s = b.p.samples.last_mut().unwrap();
            (s.pid, s.tid, s.cpu, s.cpumode) = (pid, tid, cpu, mode);
        }
    }
    let view = |h: &Hotspots| -> Vec<String> {
        h.rows()
            .map(|r| {
                let keys: Vec<String> = r
                    .keys()
                    .map(|k| format!("{}/{:?}/{:?}", r.text(&k), k.number(), k.tag()))
                    .collect();
                format!(
                    "{keys:?} {} {} {} {}",
                    r.samples(0),
                    r.period(0),
                    r.samples(1),
                    r.period(1)
                )
            })
            .collect()
    };
    let all = [
        SortKey::Comm,
        SortKey::Pid,
        SortKey::Tid,
        SortKey::Cpu,
        SortKey::Dso,
        SortKey::Sym,
        SortKey::Srcline,
        SortKey::Srcfile,
        SortKey::Ip,
    ];
    let mut key_lists: Vec<Vec<SortKey>> = all.iter().map(|&k| vec![k]).collect();
    for &a in &all {
        for &b in &all {
            if a != b {
                key_lists.push(vec![a, b]);
            }
        }
    }
    let filter_sets = [
        Filters::default(),
        Filters {
            pids: vec![PID],
            ..Filters::default()
        },
        Filters {
            tids: vec![PID + 2],
            ..Filters::default()
        },
        Filters {
            comms: vec!["other".into()],
            ..Filters::default()
        },
        Filters {
            dsos: vec!["[unknown]".into()],
            ..Filters::default()
        },
    ];
    let mut s = symbolizer("projection");
    for keys in &key_lists {
        for filters in &filter_sets {
            let opts = HotspotOptions {
                keys: keys.clone(),
                filters: filters.clone(),
                ..HotspotOptions::default()
            };
            let report = |project: bool, s: &mut Symbolizer| {
                let mut agg = hotspots::SampleAggregator::new(false, filters);
                if project {
                    agg.only_for(&opts);
                }
                for smp in &b.p.samples {
                    agg.add(&b.p, smp);
                }
                agg.finish();
                let h = hotspots::hotspots_aggregated(&b.p, &agg, s, &opts, &mut |_, _| {});
                (view(&h.unwrap()), agg.distinct())
            };
            let (full, n_full) = report(false, &mut s);
            let (kept, n_kept) = report(true, &mut s);
            assert_eq!(kept, full, "keys {keys:?}, filters {filters:?}");
            // Kept fields through a parallel read's join (absorb) and samples added after
            // `finish` freed the index: the same report, the same entries.
            let mut first = hotspots::SampleAggregator::new(false, filters);
            first.only_for(&opts);
            let mut later = first.empty_like();
            let half = b.p.samples.len() / 2;
            for smp in &b.p.samples[half..] {
                later.add(&b.p, smp);
            }
            for (i, smp) in b.p.samples[..half].iter().enumerate() {
                if i == half / 2 {
                    first.finish();
                }
                first.add(&b.p, smp);
            }
            first.absorb(later, &b.p);
            first.finish();
            let h = hotspots::hotspots_aggregated(&b.p, &first, &mut s, &opts, &mut |_, _| {});
            assert_eq!(
                view(&h.unwrap()),
                full,
                "joined: keys {keys:?}, filters {filters:?}"
            );
            assert_eq!(first.distinct(), n_kept);
            assert!(n_kept <= n_full);
            if keys == &[SortKey::Comm]
                && filters.pids.is_empty()
                && filters.tids.is_empty()
                && filters.dsos.is_empty()
            {
                assert!(n_kept <= 4, "comm rows fold to (event, comm): {n_kept}");
            }
        }
    }
}

#[test]
fn test_children_report_from_places_equals_interned_chains() {
    // Chains through known and unknown places, recursion (a row met twice in one chain),
    // several processes, threads, cpus, comms, modes and events, repeats and ties.
    let mut b = Builder::new(&["cpu-clock", "page-faults"]);
    let chains: [&[u64]; 7] = [
        &[0x1010, 0x2010, 0x3000],
        &[0x1010, 0x1020, 0x3000],
        &[0x2010, 0x9000, 0x3010],
        &[0x9000, 0x9000, 0x9010],
        &[0x3000],
        &[0x1050, 0x2050, 0x1060, 0x3000],
        &[0x9020, 0x2010],
    ];
    let variants: [(i32, i32, u32, u32, CpuMode); 5] = [
        (PID, PID, 0, 0, CpuMode::User),
        (PID, PID + 1, 1, 0, CpuMode::User),
        (PID + 1, PID + 2, 0, 1, CpuMode::User),
        (PID, PID, 1, 0, CpuMode::Kernel),
        (PID + 1, PID + 1, 1, 1, CpuMode::User),
    ];
    for round in 0..3u64 {
        for (i, chain) in chains.iter().enumerate() {
            let (pid, tid, cpu, comm, mode) = variants[(i + round as usize) % variants.len()];
            b.sample((i % 2) as u16, comm, 10 + (i as u64 % 3) * round, chain);
            let s = b.p.samples.last_mut().unwrap();
            (s.pid, s.tid, s.cpu, s.cpumode) = (pid, tid, cpu, mode);
            if round == 1 {
                // The same sample again, right after (folded into one entry).
                let again = b.p.samples.last().unwrap().clone();
                b.p.samples.push(again);
            }
        }
    }
    // An unresolved sampled IP whose file offset is not its address (rows of unresolved
    // IPs show the offset, those of chain frames the address).
    for s in b.p.samples.iter_mut().filter(|s| s.ip == 0x9020) {
        s.location.file_offset = 0x9400;
    }
    // A sample without a chain.
    b.sample(0, 0, 7, &[0x1010]);
    let last = b.p.samples.len() - 1;
    b.p.samples[last].callchain = 0..0;
    let view = |h: &Hotspots| -> Vec<String> {
        h.rows()
            .map(|r| {
                let keys: Vec<String> = r
                    .keys()
                    .map(|k| {
                        format!(
                            "{}/{:?}/{:?}/{:?}",
                            r.text(&k),
                            k.number(),
                            k.tag(),
                            k.addr()
                        )
                    })
                    .collect();
                let vals: Vec<u64> = (0..h.events.len())
                    .flat_map(|e| {
                        [
                            r.samples(e),
                            r.period(e),
                            r.children_samples(e),
                            r.children_period(e),
                        ]
                    })
                    .collect();
                format!("{keys:?} {vals:?}")
            })
            .collect()
    };
    let key_lists: Vec<Vec<SortKey>> = vec![
        vec![SortKey::Comm, SortKey::Dso, SortKey::Sym],
        vec![SortKey::Sym],
        vec![SortKey::Sym, SortKey::Comm],
        vec![SortKey::Pid, SortKey::Sym],
        vec![SortKey::Tid, SortKey::Cpu],
        vec![SortKey::Dso],
        vec![SortKey::Ip, SortKey::Tid],
        vec![SortKey::Srcline],
        vec![SortKey::Cpu, SortKey::Srcfile, SortKey::Sym],
    ];
    let filter_sets = [
        Filters::default(),
        Filters {
            pids: vec![PID + 1],
            ..Filters::default()
        },
        Filters {
            comms: vec!["prog".into()],
            ..Filters::default()
        },
        Filters {
            dsos: vec!["//anon".into()],
            ..Filters::default()
        },
    ];
    let mut s = symbolizer("places");
    for keys in &key_lists {
        for filters in &filter_sets {
            for children in [true, false] {
                for top in [None, Some(3)] {
                    let opts = HotspotOptions {
                        keys: keys.clone(),
                        filters: filters.clone(),
                        children,
                        top,
                        ..HotspotOptions::default()
                    };
                    let report = |places: bool, cut: usize, s: &mut Symbolizer| {
                        let mut agg = hotspots::SampleAggregator::new(true, filters);
                        if places {
                            agg.only_for(&opts);
                        }
                        let mut second = agg.empty_like();
                        for (i, smp) in b.p.samples.iter().enumerate() {
                            if i < cut {
                                agg.add(&b.p, smp);
                            } else {
                                second.add(&b.p, smp);
                            }
                        }
                        agg.absorb(second, &b.p);
                        agg.finish();
                        let h = hotspots::hotspots_aggregated(&b.p, &agg, s, &opts, &mut |_, _| {});
                        view(&h.unwrap())
                    };
                    let want = report(false, b.p.samples.len(), &mut s);
                    assert!(!want.is_empty());
                    for cut in [b.p.samples.len(), 0, 5, 17] {
                        let got = report(true, cut, &mut s);
                        assert_eq!(
                            got, want,
                            "keys {keys:?}, filters {filters:?}, children {children}, top {top:?}, cut {cut}"
                        );
                    }
                }
            }
        }
    }
}

/// The aggregation maps' hasher (rustc-hash) spreads keys that differ only in high address
/// bits over the low bits the tables index buckets with: a multiply-only hash without a
/// final mix put such keys in one bucket and made `--children` take 75 s on a 1M-sample file.
#[test]
fn test_map_hash_spreads_high_bit_only_differences_over_low_bits() {
    use std::hash::BuildHasher;
    let b = rustc_hash::FxBuildHasher;
    let addr = |i: u64| 0x7f00_0000_0000 + (i << 32);
    let spread = |hash: &dyn Fn(u64) -> u64| {
        (0..1024u64)
            .map(|i| hash(addr(i)) & 0xfff)
            .collect::<std::collections::HashSet<_>>()
            .len()
    };
    // 1024 keys over 4096 low-bit buckets: nearly all distinct when well mixed.
    for (what, n) in [
        ("u64", spread(&|a| b.hash_one(a))),
        ("(u64, u64)", spread(&|a| b.hash_one((7u64, a)))),
        ("[u64; 2]", spread(&|a| b.hash_one([7u64, a]))),
        ("[u64; 4]", spread(&|a| b.hash_one([a, 0x1000, 3, 1]))),
    ] {
        assert!(n > 800, "{what}: only {n} distinct buckets of 4096");
    }
}

/// A report as comparable values: per row (its key texts, DSOs, numbers and addresses), per
/// event: self and children samples and periods, and its call graph.
type RowsView = Vec<(String, Vec<(u64, u64, u64, u64, Option<CallNode>)>)>;

fn rows_view(h: &Hotspots) -> RowsView {
    h.rows()
        .map(|r| {
            let key = r
                .keys()
                .map(|k| {
                    format!(
                        "{}|{:?}|{:?}|{:?}|{:?}",
                        r.text(&k),
                        r.dso(&k),
                        k.number(),
                        k.addr(),
                        k.tag()
                    )
                })
                .collect::<Vec<_>>()
                .join(" ");
            let values = (0..h.events.len())
                .map(|e| {
                    (
                        r.samples(e),
                        r.period(e),
                        r.children_samples(e),
                        r.children_period(e),
                        r.call_graph(e).cloned(),
                    )
                })
                .collect();
            (key, values)
        })
        .collect()
}

/// Merges the reports of `parts` (each made with the part options of `opts`).
fn merged(parts: &[&Profile], tag: &str, opts: &HotspotOptions) -> Hotspots {
    let mut m = hotspots::HotspotsMerge::new(&opts.keys, opts.deskid);
    let part_opts = hotspots::HotspotsMerge::part_options(opts);
    for (i, p) in parts.iter().enumerate() {
        let h = run(p, &format!("{tag}-{i}"), &part_opts);
        let facts: Vec<hotspots::EventFacts> = h
            .events
            .iter()
            .map(|e| hotspots::EventFacts::of(p, e.id))
            .collect();
        m.add(&h, &facts);
    }
    m.finish(opts).unwrap().0
}

#[test]
fn test_merge_of_reports_equals_the_report_of_all_samples() {
    // Two profiles of one process (same symbols), the second with an event of its own; and
    // the profile holding the samples of both: its report is what the merge must give.
    let mut a = Builder::new(&["cpu-clock", "faults"]);
    let mut b = Builder::new(&["cpu-clock"]);
    let mut all = Builder::new(&["cpu-clock", "faults"]);
    let add = |x: &mut Builder, all: &mut Builder, e: u16, comm: u32, p: u64, c: &[u64]| {
        x.sample(e, comm, p, c);
        all.sample(e, comm, p, c);
    };
    for _ in 0..3 {
        add(&mut a, &mut all, 0, 0, 100, &[0x1010, 0x3020]);
    }
    add(&mut a, &mut all, 1, 0, 7, &[0x2010, 0x1050, 0x3020]);
    add(&mut a, &mut all, 0, 1, 100, &[0x9000, 0x3020]);
    add(&mut b, &mut all, 0, 0, 300, &[0x2010, 0x1050, 0x3020]);
    add(&mut b, &mut all, 0, 1, 50, &[0x1010, 0x2020, 0x3020]);
    add(&mut b, &mut all, 0, 0, 1, &[0x9000, 0x1020, 0x3020]);
    for keys in [
        vec![SortKey::Sym],
        vec![SortKey::Comm, SortKey::Sym],
        vec![SortKey::Pid, SortKey::Ip],
        vec![SortKey::Comm],
    ] {
        for children in [false, true] {
            for call_graph in [
                CallGraphMode::None,
                CallGraphMode::Caller,
                CallGraphMode::Callee,
            ] {
                for (top, percent_limit) in [(None, 0.0), (Some(2), 0.0), (None, 10.0)] {
                    let opts = HotspotOptions {
                        keys: keys.clone(),
                        children,
                        call_graph,
                        top,
                        percent_limit,
                        // Nodes under 2 % of the merged total are cut: some of a's and b's
                        // are above 2 % of their own totals only.
                        call_graph_threshold: 2.0,
                        ..HotspotOptions::default()
                    };
                    let what = format!(
                        "{keys:?} children {children} {call_graph:?} {top:?} {percent_limit}"
                    );
                    let want = run(&all.p, "merge-all", &opts);
                    let got = merged(&[&a.p, &b.p], "merge-parts", &opts);
                    let names = |h: &Hotspots| -> Vec<(String, u64, u64)> {
                        h.events
                            .iter()
                            .map(|e| (e.name.clone(), e.samples, e.period))
                            .collect()
                    };
                    assert_eq!(names(&got), names(&want), "{what}: events");
                    assert_eq!(got.hidden_rows, want.hidden_rows, "{what}: hidden rows");
                    assert_eq!(got.children, want.children, "{what}: children");
                    let (mut g, mut w) = (rows_view(&got), rows_view(&want));
                    // Equal values may come in another order (first-seen differs).
                    g.sort_by(|x, y| x.0.cmp(&y.0));
                    w.sort_by(|x, y| x.0.cmp(&y.0));
                    assert_eq!(g, w, "{what}: rows");
                }
            }
        }
    }
}

/// Samples of two threads and two events whose chains share callers, repeat, grow, shrink
/// and become prefixes of each other (a caller sampled itself), with times.
fn stack_samples() -> Profile {
    let mut b = Builder::new(&["cpu-clock", "page-faults"]);
    let chains: [(u16, i32, &[u64]); 12] = [
        (0, PID, &[0x1010, 0x3020]),
        (0, PID, &[0x1014, 0x3020]),
        (0, PID + 1, &[0x1014, 0x3020]),
        (0, PID, &[0x2010, 0x1050, 0x3020]),
        (1, PID, &[0x2010, 0x1050, 0x3020]),
        (0, PID, &[0x1050, 0x3020]),
        (0, PID, &[0x3020]),
        (0, PID + 1, &[0x9000, 0x2010, 0x1050, 0x3020]),
        (0, PID, &[0x2010, 0x1050, 0x3020]),
        (0, PID, &[0x2010, 0x1050, 0x3020]),
        (1, PID + 1, &[0x1010, 0x3024]),
        (0, PID, &[0x1010, 0x3020]),
    ];
    for (i, (event, tid, chain)) in chains.into_iter().enumerate() {
        b.sample(event, 0, 10 + i as u64, chain);
        let s = b.p.samples.last_mut().unwrap();
        s.tid = tid;
        s.time = 1000 + i as u64;
    }
    b.p
}

#[test]
fn test_stack_builder_reuses_nodes_and_keeps_each_samples_chain() {
    let p = stack_samples();
    let opts = stacks::StackOptions {
        timeline: true,
        ..Default::default()
    };
    let mut builder = stacks::StackBuilder::new(&opts);
    for s in &p.samples {
        builder.add(&p, s);
    }
    let out = builder.finish(&p, &mut symbolizer("stacks")).unwrap();
    // Every sample's stack is its chain, leaf first (the anonymous code's offsets are the
    // addresses), the leaf alone not a return address.
    assert_eq!(out.timeline.len(), p.samples.len());
    for (t, s) in out.timeline.iter().zip(&p.samples) {
        let got: Vec<(u64, bool)> = out
            .stack_locations(t.stack)
            .map(|l| (l.file_offset, l.return_address))
            .collect();
        let want: Vec<(u64, bool)> = p
            .callchain(s)
            .iter()
            .enumerate()
            .map(|(i, f)| (f.addr, i > 0))
            .collect();
        assert_eq!(got, want, "sample at {}", s.time);
    }
    // One node per (caller, location), each location once, in the order of first
    // occurrence along the chains (leaf first), as one look-up per frame gives them.
    let nodes: std::collections::HashSet<(u32, u32)> =
        out.nodes.iter().map(|n| (n.parent, n.location)).collect();
    assert_eq!(nodes.len(), out.nodes.len());
    let mut first_seen: Vec<(u64, bool)> = Vec::new();
    for s in &p.samples {
        for (i, f) in p.callchain(s).iter().enumerate() {
            if !first_seen.contains(&(f.addr, i > 0)) {
                first_seen.push((f.addr, i > 0));
            }
        }
    }
    let locations: Vec<(u64, bool)> = out
        .locations
        .iter()
        .map(|l| (l.file_offset, l.return_address))
        .collect();
    assert_eq!(locations, first_seen);
    // Samples summed per (stack, thread, event): the two equal samples in a row share one.
    let counts: u64 = out.samples.iter().map(|s| s.count).sum();
    assert_eq!(counts, p.samples.len() as u64);
    assert!(out.samples.iter().any(|s| s.count == 2));
    assert_eq!(out.threads.len(), 2);
    assert_eq!(out.summary.time_range, Some((1000, 1011)));
}

#[test]
fn test_stack_builder_merge_equals_one_builder_at_every_split() {
    let p = stack_samples();
    let opts = stacks::StackOptions {
        timeline: true,
        ..Default::default()
    };
    let mut s = symbolizer("stacks-merge");
    let build = |parts: &[&[Sample]], s: &mut Symbolizer| -> String {
        let mut builders = parts.iter().map(|part| {
            let mut b = stacks::StackBuilder::new(&opts);
            for smp in *part {
                b.add(&p, smp);
            }
            b
        });
        let mut first = builders.next().unwrap();
        for later in builders {
            first.merge(later);
        }
        serde_json::to_string(&first.finish(&p, s).unwrap()).unwrap()
    };
    let all = &p.samples[..];
    let want = build(&[all], &mut s);
    let n = all.len();
    for i in 0..=n {
        for j in i..=n {
            let got = build(&[&all[..i], &all[i..j], &all[j..]], &mut s);
            assert_eq!(got, want, "split at {i} and {j}");
        }
    }
    // Only page-faults in the first share: the events keep the order they were first
    // sampled in, whichever share saw them.
    let events = |json: &str| -> Vec<String> {
        let v: serde_json::Value = serde_json::from_str(json).unwrap();
        v["events"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["name"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(events(&want), ["cpu-clock", "page-faults"]);
    let pf_first = build(&[&all[4..5], &all[..4], &all[5..]], &mut s);
    assert_eq!(events(&pf_first), ["page-faults", "cpu-clock"]);
}

/// Branch rows of equal counts come out in one order, run after run: the aggregator's map
/// iterates in a random order, and 24 rows tied on count and addresses (one branch each,
/// from 24 processes) were shown in that order, a different report at each run.
#[test]
fn test_branch_rows_tied_on_count_keep_one_order() {
    use crate::branches::{branch_report, BranchAggregator, BranchKey, BranchOptions};
    use culprit_decode::model::BranchEntry;
    let mut b = Builder::new(&["cycles"]);
    let loc = |a: u64| Location {
        dso: Some(0),
        file_offset: a,
    };
    for pid in (100..124).rev() {
        b.sample(0, 0, 1, &[0x1010]);
        let start = b.p.branches.len() as u32;
        b.p.branches.push(BranchEntry {
            from: 0x1010,
            to: 0x2010,
            flags: 0,
            from_location: loc(0x1010),
            from_cpumode: CpuMode::User,
            to_location: loc(0x2010),
            to_cpumode: CpuMode::User,
        });
        let s = b.p.samples.last_mut().unwrap();
        s.pid = pid;
        s.branches = start..start + 1;
    }
    let keys = [BranchKey::Pid, BranchKey::SymbolFrom, BranchKey::SymbolTo];
    let pids = |tag: &str| -> Vec<String> {
        let mut agg = BranchAggregator::new(&keys, &Filters::default());
        for s in &b.p.samples {
            agg.add(&b.p, s);
        }
        let mut sym = symbolizer(tag);
        let report = branch_report(&b.p, &agg, &mut sym, &BranchOptions::default()).unwrap();
        report.rows.iter().map(|r| r.keys[0].text.clone()).collect()
    };
    let first = pids("branch-order-1");
    assert_eq!(first.len(), 24);
    // By pid, the order of the folded fields after the addresses.
    let want: Vec<String> = (100..124).map(|p| format!("{p}:prog")).collect();
    assert_eq!(first, want);
    assert_eq!(pids("branch-order-2"), first);
}
