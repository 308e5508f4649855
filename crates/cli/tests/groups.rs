//! Event groups and leader sampling (`perf record -e '{a,b}:S'`): every verb sees the
//! members' samples as perf's tools do (one sample per read value, weighted by the counter's
//! delta), and `culprit record` records groups that perf reads.

use crate::common;

use std::collections::BTreeMap;
use std::path::PathBuf;

use common::perf_record;

/// A leader-sampled recording of a shell loop (page faults in every `ls`).
fn leader_sampled(test: &str) -> PathBuf {
    let _lock = common::pmu_lock();
    perf_record(
        test,
        &["-e", "{cpu-clock,page-faults}:S"],
        &[
            "sh",
            "-c",
            "for i in $(seq 1 60); do ls /usr/bin > /dev/null; done",
        ],
    )
}

/// (event, period) of every sample as `perf script` prints them.
fn perf_script_periods(file: &std::path::Path) -> Vec<(String, u64)> {
    let out = common::run_ok(
        common::perf()
            .args(["script", "-F", "event,period", "-i"])
            .arg(file),
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            let period = w.next()?.parse().ok()?;
            let event = w.next()?.trim_end_matches(':').to_string();
            Some((event, period))
        })
        .collect()
}

#[test]
fn test_script_shows_leader_sampled_members_as_perf_script() {
    if !common::require_perf("test_script_shows_leader_sampled_members_as_perf_script") {
        return;
    }
    let file = leader_sampled("groups-script");
    let want = perf_script_periods(&file);
    let out = common::run_ok(
        common::culprit()
            .args(["script", "--format", "json", "-i"])
            .arg(&file),
    );
    let got: Vec<(String, u64)> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("a JSON line");
            let event = v["event"].as_str().expect("event").to_string();
            (event, v["period"].as_u64().expect("period"))
        })
        .collect();
    assert!(
        want.iter().any(|(e, _)| e == "page-faults"),
        "perf script shows no member: {want:?}"
    );
    assert_eq!(got, want, "culprit script and perf script samples differ");
}

#[test]
fn test_annotate_and_trace_see_leader_sampled_members() {
    if !common::require_perf("test_annotate_and_trace_see_leader_sampled_members") {
        return;
    }
    let file = leader_sampled("groups-annotate-trace");
    let mut perf: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for (e, p) in perf_script_periods(&file) {
        let t = perf.entry(e).or_default();
        t.0 += 1;
        t.1 += p;
    }
    let faults = perf["page-faults"];
    // annotate: a column per member, with the member's samples in the file.
    let out = common::run_ok(common::culprit().args(["annotate", "-i"]).arg(&file));
    let text = String::from_utf8_lossy(&out.stdout);
    let header = format!("({} in the file)", faults.0);
    assert!(
        text.lines()
            .any(|l| l.starts_with("# Event 'page-faults'") && l.contains(&header)),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.contains("cpu-clock") && l.contains("page-faults") && l.contains("Address")),
        "{text}"
    );
    // trace: the members' samples fire their event's probe, with their periods.
    let out = common::run_ok(
        common::culprit()
            .args(["trace", "-q", "--format", "json", "-i"])
            .arg(&file)
            .args([
                "-e",
                "pmc:::page-faults { @n = count(); @p = sum(period); }",
            ]),
    );
    let doc: serde_json::Value =
        serde_json::from_slice(&out.stdout).expect("trace --format json gives JSON");
    let value = |name: &str| -> i64 {
        doc["aggregations"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["name"] == name)
            .and_then(|a| a["entries"][0]["value"].as_i64())
            .unwrap_or_else(|| panic!("no @{name} in {doc}"))
    };
    assert_eq!(
        (value("n") as u64, value("p") as u64),
        faults,
        "trace: page-faults samples and period"
    );
}

/// `perf evlist -v` of a file: per event, its `key: value` fields.
fn perf_evlist(file: &std::path::Path) -> Vec<(String, BTreeMap<String, String>)> {
    let out = common::run_ok(common::perf().args(["evlist", "-v", "-i"]).arg(file));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let (name, rest) = l.split_once(": ")?;
            let fields = rest
                .split(", ")
                .filter_map(|f| f.split_once(": "))
                .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
                .collect();
            Some((name.to_string(), fields))
        })
        .collect()
}

/// The attr fields that make a leader-sampled group, as perf reads them.
fn group_fields(fields: &BTreeMap<String, String>) -> (bool, bool, bool, bool) {
    let has = |k: &str, v: &str| fields.get(k).is_some_and(|f| f.split('|').any(|x| x == v));
    (
        has("sample_type", "READ"),
        has("read_format", "GROUP") && has("read_format", "ID"),
        fields.contains_key("{ sample_period, sample_freq }"),
        fields.contains_key("inherit"),
    )
}

#[test]
fn test_record_groups_read_by_perf_as_perf_records_them() {
    if !common::require_perf("test_record_groups_read_by_perf_as_perf_records_them") {
        return;
    }
    let dir = common::scratch("groups-record");
    let cmd = [
        "sh",
        "-c",
        "for i in $(seq 1 60); do ls /usr/bin > /dev/null; done",
    ];
    let _lock = common::pmu_lock();
    let theirs = perf_record(
        "groups-record-perf",
        &["-e", "{cpu-clock,page-faults}:S"],
        &cmd,
    );
    let file = dir.join("leader.data");
    let out = common::run_ok(
        common::culprit()
            .args(["record", "-e", "{cpu-clock,page-faults}:S", "-o"])
            .arg(&file)
            .arg("--")
            .args(cmd),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("read by the group leader"), "{stderr}");
    assert!(!stderr.contains("recorded no samples"), "{stderr}");
    // The attrs say what perf's say: both read the group by id, the member does not sample,
    // nothing is inherited.
    let ours = perf_evlist(&file);
    let perf = perf_evlist(&theirs);
    assert_eq!(ours.len(), 2, "{ours:?}");
    for ((on, of), (pn, pf)) in ours.iter().zip(&perf) {
        assert_eq!(on, pn);
        assert_eq!(
            group_fields(of),
            group_fields(pf),
            "{on}: {of:?} vs perf's {pf:?}"
        );
    }
    let pipe = dir.join("leader-pipe.data");
    common::record_pipe_mode(common::culprit(), "{cpu-clock,page-faults}:S", &cmd, &pipe);
    let plain = dir.join("group.data");
    common::run_ok(
        common::culprit()
            .args(["record", "-q", "-e", "{cpu-clock,page-faults}", "-o"])
            .arg(&plain)
            .arg("--")
            .args(cmd),
    );
    for f in [&file, &pipe, &plain] {
        // perf sees the group, and it and culprit count the same samples per event.
        let header = common::run_ok(
            common::perf()
                .args(["report", "--header-only", "-i"])
                .arg(f),
        );
        let header = String::from_utf8_lossy(&header.stdout);
        assert!(
            header.contains("# group: {cpu-clock,page-faults}"),
            "{}: {header}",
            f.display()
        );
        let totals = common::assert_event_totals_match(f);
        assert!(
            totals.get("page-faults").is_some_and(|t| t.0 > 0) && totals.contains_key("cpu-clock"),
            "{}: {totals:?}",
            f.display()
        );
    }
}

#[test]
fn test_record_refuses_groups_that_make_no_sense() {
    for (events, why) in [
        ("{cpu-clock,page-faults/period=10/}:S", "does not sample"),
        ("{cpu-clock,{page-faults}}", "do not nest"),
        ("{cpu-clock,page-faults", "without a closing"),
    ] {
        let out = common::culprit()
            .args(["record", "-e", events, "-o", "/dev/null", "--", "true"])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && stderr.contains(why),
            "{events}: {stderr}"
        );
    }
}
