//! The views of the second-generation `culprit html` report in headless Chromium (network
//! off), each number checked against the CLI for the same selection:
//! - the summary names the top functions; the Why tab says what precise data would show;
//! - the timeline: a time range dragged on it filters the hot functions table, whose rows then
//!   equal `culprit report --time` of the window the page prints; an `--off-cpu` recording
//!   has one track per thread, grouped by process, with off-CPU intervals;
//! - the call tree, top-down and inverted, and the callers/callees (sandwich) view equal
//!   `culprit report` (--no-children, --children); transforms and their undo;
//! - annotate's heat is proportional to `culprit annotate`'s samples per instruction.

use crate::browser;
use crate::common;

use std::path::Path;

use serde_json::Value;

use browser::*;

/// Whether tracefs has `sched_switch` (for `record --off-cpu`).
fn require_tracefs(test: &str) -> bool {
    if Path::new("/sys/kernel/tracing/events/sched/sched_switch/id").exists()
        || Path::new("/sys/kernel/debug/tracing/events/sched/sched_switch/id").exists()
    {
        return true;
    }
    if std::env::var("CI").is_ok() {
        panic!("{test}: no readable tracefs, which the CI machines have");
    }
    common::skip(test, "tracefs is not mounted or not readable")
}

/// The named rows of `culprit report --sort sym --no-children --format json` (plus ARGS):
/// (`[.] name`, percent, samples) of its first event, and the event's samples.
fn report_rows(data: &Path, args: &[&str]) -> (Vec<(String, f64, u64)>, u64) {
    let mut all = vec![
        "report",
        "-i",
        data.to_str().unwrap(),
        "--sort",
        "sym",
        "--no-children",
        "--format",
        "json",
    ];
    all.extend_from_slice(args);
    let report = json_of(&all);
    let ev = report["events"][0]["name"].as_str().unwrap().to_string();
    let rows = report["rows"]
        .as_array()
        .unwrap()
        .iter()
        // Code without a symbol is grouped by address in the report, per DSO on the page.
        .filter(|r| r["keys"]["sym_addr"].is_null())
        .map(|r| {
            let name = format!(
                "{} {}",
                r["sym_level"].as_str().unwrap_or(""),
                r["keys"]["sym"].as_str().unwrap()
            );
            (
                name.trim().to_string(),
                r["percent"][&ev].as_f64().unwrap(),
                r["samples"][&ev].as_u64().unwrap(),
            )
        })
        .collect();
    (rows, report["events"][0]["samples"].as_u64().unwrap())
}

#[test]
fn test_html_timeline_selection_equals_report_time() {
    if !require_browser("test_html_timeline_selection_equals_report_time") {
        return;
    }
    let dir = common::scratch("html-timeline");
    let data = record(&dir, "shares.data", "shares", &["60"]);
    let page = dir.join("report.html");
    html(&["-i", data.to_str().unwrap()], &page);

    let b = Browser::start();
    b.open(&page);
    // The summary: the top functions, and no "not in the file" noise.
    let summary = b.js("return document.getElementById('v-summary').textContent");
    let summary = summary.as_str().unwrap();
    assert!(
        summary.contains("Top functions") && summary.contains("heavy"),
        "{summary}"
    );
    assert!(
        !summary.contains("no Top-Down") && !summary.contains("no IBS"),
        "{summary}"
    );
    // Without precise data, the Why tab says in one line what it would show and how.
    b.click("#tab-why");
    let why =
        b.wait_until("const w = document.getElementById('why-none'); return w && w.textContent");
    assert!(
        why.as_str().unwrap().contains("culprit record --ibs op"),
        "{why}"
    );
    b.click("#tab-timeline");
    b.find("#timeline");
    // No selection: the window is the whole recording.
    let range = b.js("return document.getElementById('timeline-range').textContent");
    assert!(
        range.as_str().unwrap().starts_with("No selection"),
        "{range}"
    );
    // A range in the middle of the plot (the track labels take its left 200 pixels).
    let width = b.js("return document.getElementById('timeline').clientWidth");
    let half = width.as_i64().unwrap() / 2;
    b.drag("#timeline", 250 - half, half - 300, 0);
    let window = b.wait_until(
        "const w = document.getElementById('timeline-window'); return w && w.textContent",
    );
    let window = window.as_str().unwrap().to_string();
    let (rows, total) = report_rows(&data, &["--time", &window]);
    let (whole, whole_total) = report_rows(&data, &[]);
    assert!(
        total > 0 && total < whole_total,
        "the window {window} has {total} of {whole_total} samples"
    );
    assert!(!whole.is_empty());
    // The selection's sample count is the report's.
    let range = b.js("return document.getElementById('timeline-range').textContent");
    let range = range.as_str().unwrap();
    assert!(
        range.contains(&format!("{} cpu-clock samples", fmt_thousands(total))),
        "{range} vs {total} samples in {window}"
    );

    // The hot functions table of the selection: report --time's rows.
    b.click("#tab-functions");
    b.wait_until("return document.querySelectorAll('#functions-table tbody tr').length > 0");
    let note = b.js("return document.querySelector('#v-functions .note').textContent");
    assert!(note.as_str().unwrap().contains(&window), "{note}");
    let shown = function_rows(&b);
    for (name, pct, samples) in &rows {
        let row = shown
            .iter()
            .find(|s| &s.0 == name)
            .unwrap_or_else(|| panic!("no row {name:?} in {shown:?} (window {window})"));
        assert_percent(&row.2[0], *pct, name);
        assert_eq!(title_samples(&row.3[0]), *samples, "{name} in {window}");
    }
    // Clearing the selection brings back the whole recording's table.
    b.click("#selection-clear");
    b.click("#tab-functions");
    let shown = function_rows(&b);
    let (name, pct, _) = &whole[0];
    let row = shown.iter().find(|s| &s.0 == name).unwrap();
    assert_percent(&row.2[0], *pct, name);
}

/// `1234567` as `1,234,567` (the page's `toLocaleString('en-US')`).
fn fmt_thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[test]
fn test_html_timeline_has_thread_tracks_and_off_cpu_intervals() {
    let test = "test_html_timeline_has_thread_tracks_and_off_cpu_intervals";
    if !require_browser(test) || !common::require_perf(test) || !require_tracefs(test) {
        return;
    }
    let dir = common::scratch("html-timeline-offcpu");
    let data = dir.join("offcpu.data");
    // Two threads of one process: a writer every 10 ms, a reader blocked in read(); with
    // the wake-ups.
    common::run_ok(
        common::culprit()
            .args(["record", "-q", "-g", "--off-cpu=wakers", "-o"])
            .arg(&data)
            .arg("--")
            .arg(common::workload("offcpu"))
            .args(["pipe", "20"]),
    );
    let page = dir.join("offcpu.html");
    html(&["-i", data.to_str().unwrap()], &page);
    let b = Browser::start();
    b.open(&page);
    b.click("#tab-timeline");
    b.find("#timeline");
    let tracks: Value = b.js(
        "const T = JSON.parse(document.getElementById('culprit-data').textContent).timeline;\
         return { threads: T.threads.map(t => [t.pid, t.tid, t.offcpu.length]),\
                  offcpu: T.offcpu, height: document.getElementById('timeline').clientHeight }",
    );
    let threads = tracks["threads"].as_array().unwrap();
    let pid = threads[0][0].clone();
    assert!(
        threads.iter().filter(|t| t[0] == pid).count() >= 2,
        "{tracks}"
    );
    assert!(!tracks["offcpu"].is_null(), "{tracks}");
    let intervals: u64 = threads.iter().map(|t| t[2].as_u64().unwrap()).sum();
    assert!(intervals >= 20, "off-CPU intervals: {tracks}");
    // One drawn row per track (and a label row per process).
    assert!(tracks["height"].as_u64().unwrap() >= 20 + 18 + 24 * threads.len() as u64);
    let note = b.js("return document.querySelector('#v-timeline p.note').textContent");
    assert!(
        note.as_str().unwrap().contains("off-CPU intervals"),
        "{note}"
    );
    // A click on the longest off-CPU interval's band shows it and its blocked stack (the
    // frames of its call-tree node, leaf first).
    let picked = longest_offcpu_interval(&b, false);
    assert!(picked["depth"].as_u64().unwrap() >= 1, "{picked}");
    b.click_viewport(picked["x"].as_i64().unwrap(), picked["y"].as_i64().unwrap());
    let shown = b.wait_until(
        "const d = document.getElementById('state-detail');\
         return d && d.dataset.start ? [Number(d.dataset.start), Number(d.dataset.end), document.querySelectorAll('#blocked-stack li').length] : null",
    );
    assert_eq!(shown[0], picked["iv"][0], "{shown} {picked}");
    assert_eq!(shown[1], picked["iv"][1], "{shown} {picked}");
    assert_eq!(shown[2], picked["depth"], "{shown} {picked}");

    // The wake-ups: as many intervals have a waker as `culprit sched wakers` pairs (every
    // interval is listed: fewer than MAX_INTERVALS), and the reader's, clicked, shows the
    // writer thread and its stack in write().
    let wakers = json_of(&[
        "sched",
        "wakers",
        "-i",
        data.to_str().unwrap(),
        "--format",
        "json",
    ]);
    let woken: Value = b.js(
        "const T = JSON.parse(document.getElementById('culprit-data').textContent).timeline;\
         return T.threads.map(t => [t.pid, t.tid, t.comm, t.offcpu_waker.filter(w => w).length])",
    );
    let paired: u64 = woken
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t[3].as_u64().unwrap())
        .sum();
    assert_eq!(
        paired,
        wakers["with_waker"].as_u64().unwrap(),
        "{woken} {wakers}"
    );
    let picked = longest_offcpu_interval(&b, true);
    b.click_viewport(picked["x"].as_i64().unwrap(), picked["y"].as_i64().unwrap());
    let shown = b.wait_until(
        "const d = document.getElementById('state-detail');\
         return d && d.dataset.waker ? [Number(d.dataset.start), d.dataset.waker, document.getElementById('state-waker').textContent, Array.from(document.querySelectorAll('#waker-stack li')).map(l => l.textContent)] : null",
    );
    assert_eq!(shown[0], picked["iv"][0], "{shown} {picked}");
    assert_eq!(shown[1], picked["waker"], "{shown} {picked}");
    assert_eq!(shown[2], picked["waker"], "{shown} {picked}");
    // The waker is a thread of the workload (`offcpu <tid>`), a track of its process, and
    // it woke the reader from write().
    let waker = picked["waker"].as_str().unwrap();
    let waker_tid: i64 = waker.rsplit(' ').next().unwrap().parse().unwrap();
    assert!(waker.starts_with("offcpu "), "{picked}");
    assert!(
        woken
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t[0] == pid && t[1] == waker_tid),
        "{woken} {picked}"
    );
    let frames = shown[3].as_array().unwrap();
    assert!(
        frames.iter().any(|f| f.as_str().unwrap().contains("write")),
        "{shown}"
    );
}

/// The longest off-CPU interval of the page's timeline (with `woken`: of those with a
/// waker), scrolled into view: `iv` its `[start, end, node]`, `depth` its blocked stack's
/// frames, `waker` its waker, and `x`, `y` the viewport point of its band.
fn longest_offcpu_interval(b: &Browser, woken: bool) -> Value {
    b.js(&format!(
        "const D = JSON.parse(document.getElementById('culprit-data').textContent);\
         const T = D.timeline, F = D.flame, woken = {woken};\
         let best = null, bi = 0, bk = 0;\
         T.threads.forEach((t, i) => t.offcpu.forEach((iv, k) => {{ if ((!woken || t.offcpu_waker[k]) && (!best || iv[1] - iv[0] > best[1] - best[0])) {{ best = iv; bi = i; bk = k; }} }}));\
         let y = 20, pid = null, at = 0;\
         T.threads.forEach((t, i) => {{ if (t.pid !== pid) {{ pid = t.pid; y += 18; }} if (i === bi) at = y; y += 24; }});\
         const cv = document.getElementById('timeline');\
         window.scrollTo(0, cv.getBoundingClientRect().top + window.scrollY + at - 100);\
         const c = cv.getBoundingClientRect();\
         const x = 200 + (((best[0] + best[1]) / 2 - T.start) / (T.width * T.buckets)) * (c.width - 200);\
         let depth = 0; for (let q = best[2]; q > 0; q = F.parent[q]) depth++;\
         return {{ iv: best, depth, waker: T.threads[bi].offcpu_waker[bk] || '', x: Math.round(c.left + x), y: Math.round(c.top + at + 24 - 2) }}"
    ))
}

#[test]
fn test_html_call_tree_and_sandwich_equal_report() {
    if !require_browser("test_html_call_tree_and_sandwich_equal_report") {
        return;
    }
    let dir = common::scratch("html-calltree");
    let data = record(&dir, "shares.data", "shares", &["60"]);
    let page = dir.join("report.html");
    html(&["-i", data.to_str().unwrap()], &page);
    let (flat, _) = report_rows(&data, &[]);
    let children = json_of(&[
        "report",
        "-i",
        data.to_str().unwrap(),
        "--sort",
        "sym",
        "--children",
        "--format",
        "json",
    ]);

    let b = Browser::start();
    b.open(&page);
    b.click("#tab-calltree");
    b.find("#calltree-table");
    // Top-down: the command holds every sample.
    let top = b.rows("#calltree-table tbody tr[data-depth='0']");
    assert_eq!(top[0][0], "100.00%", "{top:?}");
    assert!(top[0][2].contains("shares"), "{top:?}");
    // Inverted: the top rows are the sampled functions with their self shares, as
    // report --no-children.
    b.click("#calltree-inverted");
    b.wait_until("return document.getElementById('calltree-inverted').checked");
    let inverted = b.rows("#calltree-table tbody tr[data-depth='0']");
    for name in ["heavy", "light"] {
        let (_, pct, _) = flat
            .iter()
            .find(|r| r.0 == format!("[.] {name}"))
            .unwrap_or_else(|| panic!("no {name} in the report: {flat:?}"));
        let row = inverted
            .iter()
            .find(|r| r[2].trim_start_matches(['▸', '▾', ' ']) == format!("{name} (shares)"))
            .unwrap_or_else(|| panic!("no {name} in the inverted tree: {inverted:?}"));
        assert_percent(&row[0], *pct, name);
    }

    // Transforms: merging heavy gives its time to its callers; undo brings it back; focus
    // on light makes light the whole tree.
    let click_row = |name: &str| {
        let node = b.js(&format!(
            "const r = [...document.querySelectorAll('#calltree-table tbody tr[data-depth=\"0\"]')]\
               .find(r => r.lastChild.textContent.endsWith({})); return r && r.dataset.node",
            serde_json::json!(format!("{name} (shares)"))
        ));
        b.click(&format!(
            "#calltree-table tbody tr[data-node='{}'][data-depth='0']",
            node.as_str().unwrap_or_else(|| panic!("no row {name}"))
        ));
    };
    let top_names = |b: &Browser| -> Vec<String> {
        b.rows("#calltree-table tbody tr[data-depth='0']")
            .into_iter()
            .map(|r| r[2].trim_start_matches(['▸', '▾', ' ']).to_string())
            .collect()
    };
    click_row("heavy");
    b.click("#calltree-actions button[data-kind='merge']");
    b.wait_until("return document.querySelectorAll('#transforms button.crumb').length === 2");
    assert!(
        !top_names(&b).contains(&"heavy (shares)".to_string()),
        "{:?}",
        top_names(&b)
    );
    b.click("#transform-undo");
    b.wait_until("return document.querySelectorAll('#transforms button.crumb').length === 0");
    assert!(top_names(&b).contains(&"heavy (shares)".to_string()));
    click_row("light");
    b.click("#calltree-actions button[data-kind='focusFunction']");
    b.wait_until("return document.querySelectorAll('#transforms button.crumb').length === 2");
    // (Inverted: the sampled functions of the stacks through light, light itself and the
    // kernel code its interrupts ran: together the whole focused tree.)
    let focused = b.rows("#calltree-table tbody tr[data-depth='0']");
    let sum: f64 = focused.iter().map(|r| percent(&r[0])).sum();
    assert!((sum - 100.0).abs() < 0.05, "{focused:?}");
    assert!(focused[0][2].ends_with("light (shares)"), "{focused:?}");
    b.click("#transforms button.crumb");
    b.wait_until("return document.querySelectorAll('#transforms button.crumb').length === 0");

    // Sandwich: heavy's total is report --children's, its callers and callees listed.
    b.click("#tab-trees");
    b.find("#tree-fn");
    let heavy_frame = b.js(
        "const o = [...document.querySelectorAll('#tree-fn option')]\
           .find(o => o.textContent.startsWith('heavy (shares)')); return o && o.value",
    );
    b.js(&format!(
        "const s = document.getElementById('tree-fn'); s.value = {heavy_frame}; \
         s.dispatchEvent(new Event('change'))"
    ));
    let note = b.wait_until(
        "const t = document.getElementById('tree-title'); \
         return t && t.textContent.startsWith('heavy') && t.nextSibling.textContent",
    );
    let heavy = children["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["keys"]["sym"] == "heavy")
        .unwrap();
    let total = note.as_str().unwrap().split("total ").nth(1).unwrap();
    let total = total.split(',').next().unwrap();
    assert_percent(
        total,
        heavy["children_percent"]["cpu-clock"].as_f64().unwrap(),
        "heavy's total",
    );
    let callers =
        b.js("return [...document.querySelectorAll('#callers .name')].map(n => n.textContent)");
    assert!(
        !callers.as_array().unwrap().is_empty(),
        "heavy's callers: {callers}"
    );

    // Annotate: each instruction's heat is its share of the hottest one's samples, as
    // `culprit annotate` counts them (a row with 1% of the samples is 1% as intense).
    b.click("#tab-annotate");
    b.js("const s = document.getElementById('ann-fn'); \
          s.value = [...s.options].find(o => o.textContent.startsWith('heavy ')).value; \
          s.dispatchEvent(new Event('change'))");
    b.wait_until(
        "const t = document.getElementById('ann-title'); return t && t.textContent === 'heavy'",
    );
    let ann = json_of(&[
        "annotate",
        "-i",
        data.to_str().unwrap(),
        "heavy",
        "--format",
        "json",
    ]);
    let counts: Vec<(String, u64)> = ann["instructions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["ip"].as_str().unwrap().to_string(),
                i["samples"]["cpu-clock"].as_u64().unwrap(),
            )
        })
        .collect();
    let max = counts.iter().map(|c| c.1).max().unwrap();
    assert!(max > 0);
    let heat = b.js(
        "return [...document.querySelectorAll('#ann-asm tbody tr[data-addr]')]\
           .map(r => [r.dataset.addr, Number(r.dataset.heat || 0)])",
    );
    let heat: Vec<(String, f64)> = serde_json::from_value(heat).unwrap();
    assert_eq!(heat.len(), counts.len());
    for ((ip, n), (addr, h)) in counts.iter().zip(&heat) {
        assert_eq!(ip, addr);
        let exact = *n as f64 / max as f64;
        assert!(
            (h - exact).abs() < 1e-3,
            "{ip}: heat {h}, annotate {n} of {max}"
        );
    }
    b.click("#ann-hottest");
}

/// `report --children --sort sym` of `data`: each symbol's children percentage.
fn children_shares(data: &Path) -> Vec<(String, f64)> {
    let r = json_of(&[
        "report",
        "-i",
        data.to_str().unwrap(),
        "--sort",
        "sym",
        "--children",
        "--format",
        "json",
    ]);
    let ev = r["events"][0]["name"].as_str().unwrap().to_string();
    r["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| {
            (
                row["keys"]["sym"].as_str().unwrap_or("").to_string(),
                row["children_percent"][&ev].as_f64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn test_html_diff_deltas_in_call_tree_and_sandwich_equal_report_children() {
    if !require_browser("test_html_diff_deltas_in_call_tree_and_sandwich_equal_report_children") {
        return;
    }
    let dir = common::scratch("html-diff-tree");
    let a = record(&dir, "a.data", "markup_names", &["3", "1", "1", "0"]);
    let b_data = record(&dir, "b.data", "markup_names", &["1", "3", "0", "1"]);
    let page = dir.join("diff.html");
    html(
        &[
            "-i",
            a.to_str().unwrap(),
            "--diff",
            b_data.to_str().unwrap(),
        ],
        &page,
    );
    let (base, other) = (children_shares(&a), children_shares(&b_data));

    let b = Browser::start();
    b.open(&page);
    // The call tree has a change column; the command's share is 100% in both files.
    b.click("#tab-calltree");
    b.find("#calltree-table");
    let heads =
        b.js("return [...document.querySelectorAll('#calltree-table th')].map(h => h.textContent)");
    assert!(
        heads.as_array().unwrap().contains(&Value::from("change")),
        "{heads}"
    );
    let top = b.rows("#calltree-table tbody tr[data-depth='0']");
    assert_eq!(top[0][2], "+0.00%", "{top:?}");
    // The sandwich view: each function's change of total share is report --children's.
    b.click("#tab-trees");
    b.find("#tree-fn");
    let options = b.js("return [...document.querySelectorAll('#tree-fn option')].map(o => [o.value, o.textContent])");
    let options: Vec<(String, String)> = serde_json::from_value(options).unwrap();
    let mut checked = 0;
    for (sym, pct) in &base {
        let Some((_, theirs)) = other.iter().find(|o| &o.0 == sym) else {
            continue;
        };
        if *pct < 5.0 {
            continue;
        }
        let Some((value, _)) = options
            .iter()
            .find(|o| o.1.starts_with(&format!("{sym} (")))
        else {
            continue;
        };
        b.js(&format!(
            "const s = document.getElementById('tree-fn'); s.value = {}; \
             s.dispatchEvent(new Event('change'))",
            serde_json::json!(value)
        ));
        let note = b.wait_until(&format!(
            "const t = document.getElementById('tree-title'); \
             return t && t.textContent.startsWith({}) && t.nextSibling.textContent",
            serde_json::json!(format!("{sym} ("))
        ));
        let change = note.as_str().unwrap().rsplit(": ").next().unwrap();
        let exact = theirs - pct;
        assert!(
            (percent(change) - exact).abs() <= 0.006,
            "{sym}: the page says {change}, report --children {pct} -> {theirs}"
        );
        checked += 1;
    }
    assert!(checked >= 2, "functions compared: {checked} ({base:?})");
    // The flame graph can colour by change.
    b.click("#tab-flame");
    b.click("#flame-delta");
    assert_eq!(
        b.js("return document.getElementById('flame-delta').checked"),
        Value::from(true)
    );
}
