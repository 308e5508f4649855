//! The rules of `sched latency` and `sched timehist` on hand-made event sequences.

use super::*;
use culprit_decode::model::RecordedPid;

fn switch(time: u64, cpu: u32, prev: i32, prev_state: i64, next: i32) -> SchedEvent {
    SchedEvent {
        time,
        cpu,
        pid: prev,
        tid: prev,
        comm: if prev == 0 {
            "swapper".into()
        } else {
            format!("t{prev}")
        },
        kind: SchedKind::Switch {
            prev_pid: prev,
            prev_state,
            next_pid: next,
            next_comm: format!("t{next}"),
        },
    }
}

fn wakeup(time: u64, cpu: u32, pid: i32) -> SchedEvent {
    SchedEvent {
        time,
        cpu,
        pid: 0,
        tid: 0,
        comm: "swapper".into(),
        kind: SchedKind::Wakeup {
            pid,
            comm: format!("t{pid}"),
            waking: false,
            new_task: false,
        },
    }
}

fn runtime(time: u64, pid: i32, ns: u64) -> SchedEvent {
    SchedEvent {
        time,
        cpu: 0,
        pid,
        tid: pid,
        comm: format!("t{pid}"),
        kind: SchedKind::Runtime { pid, runtime: ns },
    }
}

/// Task 7 sleeps at 1000, is woken at 5000 and runs at 8000: a delay of 3000; task 8,
/// preempted at 10000, runs again at 14000: 4000. swapper is not shown.
fn sequence() -> Vec<SchedEvent> {
    vec![
        switch(1000, 0, 7, 1, 0),
        wakeup(5000, 1, 7),
        runtime(7000, 7, 500),
        switch(8000, 0, 0, 0, 7),
        switch(9000, 1, 0, 0, 8),
        switch(10000, 1, 8, 0, 9),
        switch(14000, 1, 9, 1, 8),
        // A wake-up of a running task changes nothing.
        wakeup(15000, 0, 8),
        switch(20000, 0, 7, 1, 0),
    ]
}

#[test]
fn test_latency_counts_delay_from_wakeup_or_preemption_to_switch_in() {
    let r = latency(&sequence(), Comms::default(), &LatencyOptions::default());
    let t7 = r.tasks.iter().find(|t| t.tid == 7).expect("task 7");
    assert_eq!(
        (t7.switches, t7.max_delay_ns, t7.avg_delay_ns),
        (1, 3000, 3000)
    );
    assert_eq!((t7.max_delay_start_ns, t7.max_delay_end_ns), (5000, 8000));
    assert_eq!(t7.runtime_ns, 500);
    let t8 = r.tasks.iter().find(|t| t.tid == 8).expect("task 8");
    // First seen coming in (delay 0), then preempted for 4000.
    assert_eq!(
        (t8.switches, t8.total_delay_ns, t8.max_delay_ns),
        (2, 4000, 4000)
    );
    assert!(r.tasks.iter().all(|t| t.comm != "swapper"));
    // Sorted by average delay, largest first.
    assert_eq!(r.tasks[0].tid, 7);
    assert_eq!(r.histogram.buckets.iter().sum::<u64>(), r.total_switches);
}

#[test]
fn test_latency_merges_threads_of_one_command_unless_per_thread() {
    let mut ev = sequence();
    for e in &mut ev {
        if let SchedKind::Switch { next_comm, .. } = &mut e.kind {
            if next_comm == "t8" || next_comm == "t7" {
                *next_comm = "same".into();
            }
        }
        if e.tid == 7 || e.tid == 8 {
            e.comm = "same".into();
        }
    }
    let merged = latency(&ev, Comms::default(), &LatencyOptions::default());
    let same = merged
        .tasks
        .iter()
        .find(|t| t.comm == "same")
        .expect("merged row");
    assert_eq!(
        (same.threads, same.switches, same.total_delay_ns),
        (2, 3, 7000)
    );
    let split = latency(
        &ev,
        Comms::default(),
        &LatencyOptions {
            per_thread: true,
            ..LatencyOptions::default()
        },
    );
    assert_eq!(split.tasks.iter().filter(|t| t.comm == "same").count(), 2);
}

#[test]
fn test_timehist_wait_delay_and_run_of_each_switch_out() {
    let r = timehist(&sequence(), &std::collections::HashMap::new(), false);
    assert_eq!(r.rows.len(), 6);
    // The first switch of each CPU has nothing before it.
    assert_eq!(
        (r.rows[0].wait_ns, r.rows[0].sch_delay_ns, r.rows[0].run_ns),
        (0, 0, 0)
    );
    assert_eq!(r.rows[2].comm, "<idle>");
    // Task 9 came in at 10000 on CPU 1 and leaves at 14000.
    let t9 = &r.rows[4];
    assert_eq!(
        (t9.tid, t9.run_ns, t9.sch_delay_ns, t9.wait_ns),
        (9, 4000, 0, 0)
    );
    // Task 7 slept from 1000, was woken at 5000, ran from 8000 to 20000.
    let t7 = &r.rows[5];
    assert_eq!(
        (t7.tid, t7.wait_ns, t7.sch_delay_ns, t7.run_ns),
        (7, 7000, 3000, 12000)
    );
    let lines = r.text_lines();
    assert!(lines[7].contains("t9[9]"), "{lines:?}");
    assert!(
        lines[7].ends_with("     0.000      0.000      0.004 "),
        "{lines:?}"
    );
    assert!(
        lines[8].ends_with("     0.007      0.003      0.012 "),
        "{lines:?}"
    );
}

/// As perf, a thread's pid is the one of the first thing met about it in time order: a
/// COMM/FORK record no newer than its first event, else that event (a wake-up: 0, which
/// perf shows as the comm alone).
#[test]
fn test_timehist_pid_of_a_thread_woken_before_its_comm_record_is_zero() {
    let events = [
        wakeup(100, 1, 5),
        switch(200, 0, 0, 0, 5),
        switch(300, 0, 5, 1, 0),
    ];
    let pid_of_row = |since: u64| {
        let records = std::collections::HashMap::from([(5, RecordedPid { pid: 5, since })]);
        let r = timehist(&events, &records, false);
        let row = r.rows.iter().find(|r| r.tid == 5).unwrap();
        (row.pid, r.text_lines().join("\n"))
    };
    let (pid, text) = pid_of_row(50);
    assert_eq!(pid, 5);
    assert!(text.contains("t5[5]"), "{text}");
    // The record came after the wake-up (a task forked while the recording started).
    let (pid, text) = pid_of_row(250);
    assert_eq!(pid, 0);
    assert!(text.contains(" t5 ") && !text.contains("t5["), "{text}");
}

#[test]
fn test_histogram_buckets_are_powers_of_two_microseconds() {
    let mut h = DelayHistogram::default();
    for ns in [0, 999, 1000, 1999, 2000, 3999, 4000, 1_000_000] {
        h.add(ns);
    }
    assert_eq!(&h.buckets[..4], &[2, 2, 2, 1]);
    assert_eq!(h.buckets.iter().sum::<u64>(), 8);
    assert_eq!(DelayHistogram::range_us(0), (0, 1));
    assert_eq!(DelayHistogram::range_us(3), (4, 8));
    assert_eq!(usec_timestamp(11_778_212_806_999), "11778.212806");
}

#[test]
fn test_latency_parses_perf_sort_keys() {
    assert_eq!(
        LatencySort::parse_list("max,pid").unwrap(),
        vec![LatencySort::Max, LatencySort::Pid]
    );
    assert!(LatencySort::parse_list("bogus").is_err());
}
