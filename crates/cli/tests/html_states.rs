//! Thread states on the HTML timeline, in headless Chromium: on the `perf sched record`
//! fixture of the `schedmix` workload, the blocked intervals the page holds for a thread
//! equal the ones `culprit sched timehist` gives for it (each row: runnable for its
//! scheduling delay before it ran, off the CPU for its wait before that), each sleeping
//! interval's waker is the task of its `sched_waking` in `culprit script`, and a click on the
//! thread's state band shows one of them with its bounds.

use crate::browser;
use crate::common;

use std::collections::BTreeSet;

use serde_json::Value;

use browser::*;

/// The fixture (recorded by `perf sched record`, stored in the repository).
fn fixture() -> std::path::PathBuf {
    common::repo_root().join("crates/cli/tests/fixtures/sched/schedmix.data")
}

/// The rows of `culprit sched timehist --format json` for thread `tid`.
fn timehist_rows(tid: i64) -> Vec<Value> {
    let o = common::run_ok(
        common::culprit()
            .args(["sched", "timehist", "--format", "json", "-i"])
            .arg(fixture()),
    );
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    doc["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["tid"].as_i64() == Some(tid))
        .cloned()
        .collect()
}

/// The off-CPU and runnable intervals `[start, end]` (ns) of thread `tid` read from
/// `culprit sched timehist --format json`'s rows.
fn timehist_intervals(tid: i64) -> BTreeSet<(u64, u64)> {
    let mut out = BTreeSet::new();
    // The state the thread left the CPU in at its previous switch-out (None: none yet).
    let mut previous: Option<i64> = None;
    for r in timehist_rows(tid) {
        let n = |k: &str| r[k].as_u64().unwrap();
        // Off the CPU for the wait before it ran, runnable for the last sch_delay of it
        // (all of it when it was preempted: state R).
        let ran = n("time_ns") - n("run_ns");
        let woken = ran - n("sch_delay_ns");
        let left = ran.saturating_sub(n("wait_ns")).min(woken);
        let spans = if previous.is_some_and(|s| s & 0xff == 0) {
            vec![(left, ran)]
        } else {
            vec![(left, woken), (woken, ran)]
        };
        out.extend(spans.into_iter().filter(|(a, b)| b > a));
        previous = r["state"].as_i64();
    }
    out
}

/// The page's data block (`<script type="application/json" id="culprit-data">`).
fn page_data(page: &std::path::Path) -> Value {
    let text = std::fs::read_to_string(page).unwrap();
    let open = r#"<script type="application/json" id="culprit-data">"#;
    let start = text.find(open).expect("a data block") + open.len();
    let end = start + text[start..].find("</script>").unwrap();
    serde_json::from_str(&text[start..end]).unwrap()
}

#[test]
fn test_html_thread_states_from_stdin_equal_the_files() {
    // The states come from the page's one read: a stream on stdin gives the same timeline.
    let dir = common::scratch("html-states-stdin");
    let (from_file, from_stdin) = (dir.join("file.html"), dir.join("stdin.html"));
    html(&["-i", fixture().to_str().unwrap()], &from_file);
    common::run_ok(
        common::culprit()
            .args(["html", "-i", "-", "-o"])
            .arg(&from_stdin)
            .stdin(std::fs::File::open(fixture()).unwrap()),
    );
    let (a, b) = (page_data(&from_file), page_data(&from_stdin));
    assert_eq!(
        a["timeline"]["state_names"].as_array().map(Vec::len),
        Some(5)
    );
    assert!(a["timeline"]["states"]
        .as_array()
        .is_some_and(|s| !s.is_empty()));
    assert_eq!(a["timeline"], b["timeline"]);
}

#[test]
fn test_html_thread_states_equal_sched_timehist() {
    let test = "test_html_thread_states_equal_sched_timehist";
    if !require_browser(test) {
        return;
    }
    let dir = common::scratch("html-states");
    let page = dir.join("schedmix.html");
    html(&["-i", fixture().to_str().unwrap()], &page);
    let b = Browser::start();
    b.open(&page);
    b.click("#tab-timeline");
    b.find("#timeline");
    // The thread with the most blocked intervals, its longest one and where it is drawn
    // (the page's layout: a ruler of 20 px, 18 px per process label, 24 px per track),
    // scrolled into the window.
    let picked: Value = b.js(
        "const T = JSON.parse(document.getElementById('culprit-data').textContent).timeline;\
         const F = JSON.parse(document.getElementById('culprit-data').textContent).flame;\
         let best = 0; T.states.forEach((s, i) => { if (s.blocked.length > T.states[best].blocked.length) best = i; });\
         let y = 20, pid = null, at = 0;\
         T.threads.forEach((t, i) => { if (t.pid !== pid) { pid = t.pid; y += 18; } if (i === best) at = y; y += 24; });\
         const st = T.states[best]; let iv = st.blocked[0];\
         let k = 0; st.blocked.forEach((x, j) => { if (x[1] - x[0] > iv[1] - iv[0]) { iv = x; k = j; } });\
         const cv = document.getElementById('timeline');\
         window.scrollTo(0, cv.getBoundingClientRect().top + window.scrollY + at - 100);\
         const c = cv.getBoundingClientRect();\
         const mid = (iv[0] + iv[1]) / 2, plot = c.width - 200;\
         const x = 200 + ((mid - T.start) / (T.width * T.buckets)) * plot;\
         return { tid: T.threads[best].tid, names: T.state_names, blocked: st.blocked, iv, waker: st.waker[k], wakers: st.waker,\
                  depths: [st.stack[k], st.waker_stack[k]].map((n) => { let d = 0; for (let q = n; q > 0; q = F.parent[q]) d++; return d; }),\
                  stacks: st.stack.filter((n) => n > 0).length,\
                  x: Math.round(c.left + x), y: Math.round(c.top + at + 3),\
                  running: st.share[0], start: T.start, width: T.width, buckets: T.buckets }",
    );
    assert_eq!(
        picked["names"],
        serde_json::json!(["running", "runnable", "sleeping", "D", "lock"]),
        "{picked}"
    );
    let tid = picked["tid"].as_i64().unwrap();
    let shown: BTreeSet<(u64, u64)> = picked["blocked"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| (v[0].as_u64().unwrap(), v[1].as_u64().unwrap()))
        .collect();
    assert!(shown.len() >= 5, "{picked}");
    // Every interval of timehist's rows, none added (the fixture is under the page's cap).
    assert_eq!(shown, timehist_intervals(tid), "thread {tid}");
    // Each sleeping or D interval's waker is the task current at the `sched_waking` of the
    // thread at the interval's end, as `culprit script` prints it (comm and tid).
    let script = common::run_ok(
        common::culprit()
            .args(["script", "--format", "json", "-i"])
            .arg(fixture()),
    );
    let mut woken_by: std::collections::HashMap<u64, String> = Default::default();
    for line in String::from_utf8_lossy(&script.stdout).lines() {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        if v["event"] == "sched:sched_waking" && v["fields"]["pid"].as_i64() == Some(tid) {
            let by = format!("{} {}", v["comm"].as_str().unwrap(), v["tid"]);
            woken_by.insert(v["time"].as_u64().unwrap(), by);
        }
    }
    let mut with_waker = 0;
    for (iv, waker) in picked["blocked"]
        .as_array()
        .unwrap()
        .iter()
        .zip(picked["wakers"].as_array().unwrap())
    {
        if iv[2].as_u64().unwrap() < 2 {
            continue;
        }
        let expected = woken_by.get(&iv[1].as_u64().unwrap()).cloned();
        assert_eq!(
            waker.as_str(),
            Some(expected.as_deref().unwrap_or("")),
            "{iv}"
        );
        with_waker += usize::from(expected.is_some());
    }
    assert!(
        with_waker >= 3,
        "{with_waker} sleeping intervals with a waker: {picked}"
    );
    // The running shares per bucket (the parallelism bars sum them) add up to timehist's
    // run times within the timeline, to rounding (half a thousandth of a bucket each).
    let n = |k: &str| picked[k].as_u64().unwrap();
    let (start, width, buckets) = (n("start"), n("width"), n("buckets"));
    let end = start + width * buckets;
    let shown_run: f64 = picked["running"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap() * width as f64 / 1000.0)
        .sum();
    let run: u64 = timehist_rows(tid)
        .iter()
        .map(|r| {
            let t = r["time_ns"].as_u64().unwrap();
            let a = (t - r["run_ns"].as_u64().unwrap()).max(start);
            t.min(end).saturating_sub(a)
        })
        .sum();
    assert!(
        (shown_run - run as f64).abs() <= (buckets * width) as f64 / 2000.0 + 1.0,
        "running {shown_run} ns shown, {run} ns in timehist"
    );
    // A click on the band in the middle of the longest interval shows it.
    b.click_viewport(picked["x"].as_i64().unwrap(), picked["y"].as_i64().unwrap());
    let detail = b.wait_until(
        "const d = document.getElementById('state-detail');\
         return d && d.dataset.start ? [Number(d.dataset.tid), Number(d.dataset.start), Number(d.dataset.end), d.dataset.state, d.dataset.waker,\
           document.querySelectorAll('#blocked-stack li').length, document.querySelectorAll('#waker-stack li').length] : null",
    );
    assert_eq!(detail[0].as_i64(), Some(tid), "{detail}");
    assert_eq!(detail[1], picked["iv"][0], "{detail} {picked}");
    assert_eq!(detail[2], picked["iv"][1], "{detail} {picked}");
    let state = picked["names"][picked["iv"][2].as_u64().unwrap() as usize].clone();
    assert_eq!(detail[3], state, "{detail}");
    assert_eq!(detail[4], picked["waker"], "{detail}");
    // Its blocked stack and its waker's, frame by frame of their call-tree nodes.
    assert_eq!(detail[5], picked["depths"][0], "{detail} {picked}");
    assert_eq!(detail[6], picked["depths"][1], "{detail} {picked}");
    assert!(
        picked["stacks"].as_u64().unwrap() >= 1,
        "no blocked stack: {picked}"
    );
    // No selection was made by the click.
    let sel = b.js("return document.getElementById('timeline-window') === null");
    assert_eq!(sel, Value::Bool(true));
}
