//! `culprit html` in a real browser: headless Chromium, driven through chromedriver's
//! WebDriver HTTP API, loads each page from a file with every network request refused
//! (a dead proxy, unresolvable hosts; the page's CSP forbids fetches anyway) and the tests
//! read the DOM as a user sees it:
//! - the hot functions table has `culprit report --sort sym --no-children`'s rows, with the
//!   same percentages and sample counts (JSON);
//! - clicking a function shows its annotation, with `culprit annotate --format json`'s
//!   per-instruction numbers; the flame graph's search and the call trees work;
//! - `chromium --screenshot` of the page is a real, non-blank PNG;
//! - functions named as HTML/script injections (workloads/xss_names) show as text: no
//!   alert, no injected element, each cell's text equal to the name;
//! - the diff view equals `culprit diff --format json`; the IBS tables of the IBS fixtures
//!   equal `culprit ibs --format json`.
//!
//! Recordings are `cpu-clock` (no PMU needed), made live by each test.

use crate::browser;
use crate::common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use browser::*;

/// A screenshot by `chromium --screenshot` (not WebDriver): a PNG of the window's size
/// that is not one flat colour.
fn assert_screenshot(page: &Path, dir: &Path) {
    let png = dir.join("screenshot.png");
    let mut child = Command::new("chromium")
        .args(
            CHROME_ARGS
                .iter()
                .filter(|a| !a.starts_with("--window-size")),
        )
        .arg("--window-size=1200,900")
        .arg(format!("--user-data-dir={}", dir.join("profile").display()))
        .arg(format!("--screenshot={}", png.display()))
        .arg(format!("file://{}", page.canonicalize().unwrap().display()))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("run chromium --screenshot");
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > WAIT {
            let _ = child.kill();
            panic!("chromium --screenshot did not finish");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(status.success(), "chromium --screenshot: {status}");
    let decoder = png::Decoder::new(std::io::BufReader::new(
        std::fs::File::open(&png).expect("the screenshot was written"),
    ));
    let mut reader = decoder.read_info().expect("the screenshot is a PNG");
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).expect("PNG pixels");
    assert_eq!((info.width, info.height), (1200, 900), "screenshot size");
    let px = info.line_size / info.width as usize;
    let pixels = &buf[..info.buffer_size()];
    let first = &pixels[..px];
    let differ = pixels.chunks(px).filter(|p| *p != first).count();
    assert!(
        differ > pixels.len() / px / 100,
        "the screenshot is (nearly) blank: {differ} pixels differ"
    );
}

#[test]
fn test_html_report_in_chromium_matches_report_and_annotate() {
    if !require_browser("test_html_report_in_chromium_matches_report_and_annotate") {
        return;
    }
    let dir = common::scratch("html-report");
    let data = record(&dir, "shares.data", "shares", &["60"]);
    let data_s = data.to_str().unwrap();
    let page = dir.join("report.html");
    let summary = html(&["-i", data_s], &page);
    let text = std::fs::read_to_string(&page).unwrap();
    assert_self_contained(&text);

    let report = json_of(&[
        "report",
        "-i",
        data_s,
        "--sort",
        "sym",
        "--no-children",
        "--format",
        "json",
    ]);
    let rows = report["rows"].as_array().unwrap();
    assert_eq!(summary["functions"].as_u64(), Some(rows.len() as u64));
    assert_eq!(summary["samples"], report["events"][0]["samples"]);

    let b = Browser::start();
    b.open(&page);
    assert_no_requests(&b);
    // The summary names the recording.
    let kv = b.rows("#summary-table tr");
    let command = kv
        .iter()
        .find(|r| r[0] == "Command")
        .expect("a Command row");
    assert!(command[1].contains("shares"), "{command:?}");
    let samples = kv.iter().find(|r| r[0] == "Samples").unwrap();
    assert_eq!(
        samples[1].replace(',', ""),
        report["events"][0]["samples"].to_string()
    );

    // The hot functions: the report's rows, its percentages and sample counts.
    b.click("#tab-functions");
    b.wait_until("return document.querySelectorAll('#functions-table tbody tr').length > 0");
    let shown = function_rows(&b);
    assert_eq!(shown.len(), rows.len(), "one table row per report row");
    for r in rows {
        let sym = r["keys"]["sym"].as_str().unwrap();
        let mut name = format!("{} {sym}", r["sym_level"].as_str().unwrap_or(""))
            .trim()
            .to_string();
        if let Some(a) = r["keys"]["sym_addr"].as_str() {
            name = format!("{name} {a}");
        }
        let row = shown
            .iter()
            .find(|s| s.0 == name)
            .unwrap_or_else(|| panic!("no row {name:?} in {shown:?}"));
        let (ev, pct) = r["percent"].as_object().unwrap().iter().next().unwrap();
        assert_percent(&row.2[0], pct.as_f64().unwrap(), &format!("{name} {ev}"));
        assert_eq!(
            title_samples(&row.3[0]),
            r["samples"][ev].as_u64().unwrap(),
            "{name}: samples"
        );
    }
    assert_eq!(shown[0].0, "[.] heavy", "the hottest function first");

    // Clicking a function shows its annotation: annotate's numbers per instruction.
    let index = b.js(
        "return [...document.querySelectorAll('#functions-table tbody tr')]\
         .findIndex(r => r.children[r.children.length - 2].textContent === '[.] light')",
    );
    let row = b.js(&format!(
        "return document.querySelectorAll('#functions-table tbody tr')[{index}].dataset.row"
    ));
    b.click(&format!(
        "#functions-table tbody tr[data-row='{}']",
        row.as_str().unwrap()
    ));
    b.wait_until(
        "const t = document.getElementById('ann-title'); return t && t.textContent === 'light'",
    );
    assert_eq!(
        b.js("return document.getElementById('v-annotate').hidden"),
        json!(false)
    );
    let ann = json_of(&["annotate", "-i", data_s, "light", "--format", "json"]);
    let insns = ann["instructions"].as_array().unwrap();
    let asm = b.js(
        "return [...document.querySelectorAll('#ann-asm tbody tr[data-addr]')].map(r =>\
           [r.dataset.addr, r.children[0].textContent, r.children[0].title,\
            r.children[r.children.length - 2].textContent])",
    );
    let asm: Vec<(String, String, String, String)> = serde_json::from_value(asm).unwrap();
    assert_eq!(asm.len(), insns.len(), "one row per instruction");
    let mut sampled = 0;
    for (insn, (addr, pct, title, text)) in insns.iter().zip(&asm) {
        assert_eq!(insn["ip"].as_str().unwrap(), addr);
        assert_eq!(insn["asm"].as_str().unwrap(), text, "{addr}");
        let n = insn["samples"]["cpu-clock"].as_u64().unwrap();
        assert_eq!(title_samples(title), n, "{addr}: samples");
        if n > 0 {
            sampled += 1;
            assert_percent(pct, insn["percent"]["cpu-clock"].as_f64().unwrap(), addr);
        } else {
            assert_eq!(pct, "", "{addr}: no samples, no percentage");
        }
    }
    assert!(sampled > 0, "light has sampled instructions");

    // The flame graph draws, and its search measures a function's share of all samples
    // (heavy's children share in the report: its samples and its callees').
    b.click("#tab-flame");
    b.wait_until("const c = document.getElementById('flame'); return c && c.height > 0");
    b.type_into("#flame-search", "heavy");
    let status = b.wait_until("return document.getElementById('flame-status').textContent");
    let children = json_of(&[
        "report",
        "-i",
        data_s,
        "--sort",
        "sym",
        "--children",
        "--format",
        "json",
    ]);
    let heavy = children["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["keys"]["sym"] == "heavy")
        .unwrap();
    let matched = status.as_str().unwrap().trim_start_matches("matched: ");
    let matched = matched.split(' ').next().unwrap();
    let exact = heavy["children_percent"]["cpu-clock"].as_f64().unwrap();
    assert!(
        (percent(matched) - exact).abs() <= 0.01,
        "flame search matched {matched}, report --children says {exact}"
    );
    // Zoom: heavy and light are the frames above __libc_start_call_main (depth 3, heavy
    // first: 0-75% of the width, light 75-100%). A click at 90% zooms into light, which then
    // spans the width: a click at 10% finds light too; after Reset zoom, heavy again.
    b.js("document.getElementById('flame-search').value = ''; \
          document.getElementById('flame-search').dispatchEvent(new Event('input'))");
    // Clicks the frame at `fraction` of the width in row `depth` (0: the root, at the
    // bottom; rows are 17 px), measured afresh: zooming changes the canvas' height. The
    // canvas' bottom is scrolled into view first, and the click is at viewport coordinates:
    // a pointer move relative to an element that is partly out of view goes from the centre
    // of its visible part, or fails ("move target out of bounds", seen with Chromium 156).
    let click_frame = |b: &Browser, fraction: f64, depth: f64| {
        let rect = b.js("const c = document.getElementById('flame'); \
             c.scrollIntoView({block: 'end', inline: 'nearest'}); \
             const r = c.getBoundingClientRect(); \
             return [r.left, r.top, r.width, r.height]");
        let [left, top, w, h] = [0, 1, 2, 3].map(|i| rect[i].as_f64().unwrap());
        let x = (left + fraction * w).round() as i64;
        let y = (top + h - (depth + 1.0) * 17.0 + 8.0).round() as i64;
        b.click_viewport(x, y);
    };
    let info = |b: &Browser| {
        b.js("return document.getElementById('frame-info').textContent")
            .as_str()
            .unwrap()
            .to_string()
    };
    click_frame(&b, 0.1, 3.0);
    assert!(info(&b).starts_with("heavy (shares)"), "{}", info(&b));
    b.click("#flame-reset");
    click_frame(&b, 0.9, 3.0);
    assert!(info(&b).starts_with("light (shares)"), "{}", info(&b));
    click_frame(&b, 0.1, 3.0);
    assert!(
        info(&b).starts_with("light (shares)"),
        "zoomed: {}",
        info(&b)
    );
    b.click("#flame-reset");
    click_frame(&b, 0.1, 3.0);
    assert!(
        info(&b).starts_with("heavy (shares)"),
        "reset: {}",
        info(&b)
    );
    // Icicle: the same frames, drawn from the top.
    b.click("#flame-icicle");
    assert_eq!(
        b.js("return document.getElementById('flame-icicle').checked"),
        json!(true)
    );

    // Callers and callees of the function picked in the table.
    b.click("#tab-trees");
    let title =
        b.wait_until("const t = document.getElementById('tree-title'); return t && t.textContent");
    assert_eq!(title, json!("light (shares)"));
    let callers =
        b.js("return [...document.querySelectorAll('#callers .name')].map(n => n.textContent)");
    // (light is a leaf without a frame pointer: its chains skip main, as perf's do.)
    assert!(
        callers
            .as_array()
            .unwrap()
            .contains(&json!("__libc_start_call_main")),
        "light's callers: {callers}"
    );
    assert!(b.alert().is_none());
    drop(b);

    assert_screenshot(&page, &dir);
}

#[test]
fn test_html_names_with_markup_stay_text() {
    if !require_browser("test_html_names_with_markup_stay_text") {
        return;
    }
    let dir = common::scratch("html-xss");
    let data = record(&dir, "xss.data", "xss_names", &["4"]);
    let page = dir.join("xss.html");
    html(&["-i", data.to_str().unwrap()], &page);
    let names = [
        "<script>alert(1)</script>",
        "<img src=x onerror=alert(2)>",
        "</script><script>alert(3)</script>",
        "&lt;b&gt;'onmouseover='alert(4)",
    ];
    let caller = "<iframe srcdoc=x>";
    // In the file: escaped in the data block, never as markup.
    let text = std::fs::read_to_string(&page).unwrap();
    assert_self_contained(&text);
    assert_eq!(
        text.matches("<script").count(),
        2,
        "only the page's own two scripts"
    );
    for n in names.iter().chain([&caller]) {
        assert!(!text.contains(n), "{n} is in the HTML unescaped");
    }

    let b = Browser::start();
    b.open(&page);
    assert_no_requests(&b);
    let injected = "return document.querySelectorAll('img, iframe, svg, object, embed').length \
                    + ':' + document.scripts.length";
    assert_eq!(b.js(injected), json!("0:2"));
    assert!(b.alert().is_none(), "an alert opened");

    b.click("#tab-functions");
    b.wait_until("return document.querySelectorAll('#functions-table tbody tr').length > 0");
    let shown = function_rows(&b);
    for n in names {
        let row = shown
            .iter()
            .position(|s| s.0 == format!("[.] {n}") && s.1 == "xss_names")
            .unwrap_or_else(|| panic!("no row with the text {n:?}: {shown:?}"));
        // Its annotation is titled with the name, as text.
        let data_row = b.js(&format!(
            "return document.querySelectorAll('#functions-table tbody tr')[{row}].dataset.row"
        ));
        b.click(&format!(
            "#functions-table tbody tr[data-row='{}']",
            data_row.as_str().unwrap()
        ));
        let title = b.wait_until(
            "const t = document.getElementById('ann-title'); return t && t.textContent",
        );
        assert_eq!(title, json!(n));
        b.click("#tab-functions");
    }

    // The call trees: the caller of every leaf, by its name.
    b.click("#tab-trees");
    b.wait_until("return document.getElementById('tree-title') !== null");
    let callers =
        b.js("return [...document.querySelectorAll('#callers .name')].map(n => n.textContent)");
    assert!(
        callers.as_array().unwrap().contains(&json!(caller)),
        "callers: {callers}"
    );
    let options =
        b.js("return [...document.querySelectorAll('#tree-fn option')].map(o => o.textContent)");
    for n in names.iter().chain([&caller]) {
        assert!(
            options
                .as_array()
                .unwrap()
                .iter()
                .any(|o| o.as_str().unwrap().starts_with(&format!("{n} (xss_names)"))),
            "{n} not among {options}"
        );
    }

    // The flame graph finds them by name.
    b.click("#tab-flame");
    b.type_into("#flame-search", "<img src");
    let status = b.wait_until("return document.getElementById('flame-status').textContent");
    let matched = status.as_str().unwrap().trim_start_matches("matched: ");
    assert!(
        percent(matched.split(' ').next().unwrap()) > 5.0,
        "{status}"
    );

    assert_eq!(b.js(injected), json!("0:2"), "an element was injected");
    assert!(b.alert().is_none(), "an alert opened");
    let title = b.js("return document.title");
    assert_eq!(title, json!(format!("culprit: {}", data.display())));
}

#[test]
fn test_html_diff_view_equals_culprit_diff() {
    if !require_browser("test_html_diff_view_equals_culprit_diff") {
        return;
    }
    let dir = common::scratch("html-diff");
    let a = record(&dir, "a.data", "markup_names", &["3", "1", "1", "0"]);
    let b_data = record(&dir, "b.data", "markup_names", &["1", "3", "0", "1"]);
    let (a_s, b_s) = (a.to_str().unwrap(), b_data.to_str().unwrap());
    let page = dir.join("diff.html");
    let summary = html(&["-i", a_s, "--diff", b_s], &page);
    assert_eq!(summary["diff"], json!(true));
    assert_eq!(summary["diff_input"], json!(b_s));
    let diff = json_of(&["diff", a_s, b_s, "--format", "json"]);
    let rows = diff["events"][0]["rows"].as_array().unwrap();
    assert!(rows.len() >= 4);

    let b = Browser::start();
    b.open(&page);
    assert_no_requests(&b);
    b.click("#tab-diff");
    b.wait_until("return document.querySelectorAll('#diff-table tbody tr').length > 0");
    let shown = b.rows("#diff-table tbody tr");
    assert_eq!(shown.len(), rows.len(), "one row per diff row");
    for (r, s) in rows.iter().zip(&shown) {
        let what = format!("{s:?}");
        // Baseline, Delta, Ratio, Other, marker, DSO, Symbol.
        match r["baseline"]["percent"].as_f64() {
            Some(p) => assert_percent(&s[0], p, &what),
            None => assert_eq!(s[0], "", "{what}"),
        }
        assert_percent(&s[1], r["delta"].as_f64().unwrap(), &what);
        match r["ratio"].as_f64() {
            Some(x) => {
                let shown: f64 = s[2].parse().unwrap();
                assert!((shown - x).abs() <= 0.00005 + 1e-12, "{what}: ratio {x}");
            }
            None => assert_eq!(s[2], "", "{what}"),
        }
        match r["other"]["percent"].as_f64() {
            Some(p) => assert_percent(&s[3], p, &what),
            None => assert_eq!(s[3], "", "{what}"),
        }
        let marker = match r["status"].as_str().unwrap() {
            "new" => "[+]",
            "vanished" => "[-]",
            _ => "",
        };
        assert_eq!(s[4], marker, "{what}");
        assert_eq!(s[5], r["keys"]["dso"].as_str().unwrap(), "{what}");
        let sym = format!(
            "{} {}",
            r["sym_level"].as_str().unwrap_or(""),
            r["keys"]["sym"].as_str().unwrap()
        );
        assert_eq!(s[6], sym.trim(), "{what}");
    }
    // The renamed functions: `gone'&` vanished, `fresh<&>` is new.
    assert!(shown.iter().any(|s| s[6] == "[.] gone'&" && s[4] == "[-]"));
    assert!(shown
        .iter()
        .any(|s| s[6] == "[.] fresh<&>" && s[4] == "[+]"));
}

#[test]
fn test_html_ibs_tables_equal_culprit_ibs() {
    if !require_browser("test_html_ibs_tables_equal_culprit_ibs") {
        return;
    }
    let dir = common::scratch("html-ibs");
    let fixture = common::repo_root().join("crates/decode/tests/fixtures/ibs-fam19h_m11_zen4.data");
    let f = fixture.to_str().unwrap();
    let page = dir.join("ibs.html");
    let summary = html(&["-i", f], &page);
    assert_eq!(summary["ibs"], json!(true));
    assert_eq!(summary["topdown"], json!(false));
    let ibs = json_of(&["ibs", "-i", f, "--format", "json"]);

    let b = Browser::start();
    b.open(&page);
    assert_no_requests(&b);
    // No Top-Down events: no tab, and the summary says why.
    assert_eq!(
        b.js("return document.getElementById('tab-topdown')"),
        Value::Null
    );
    b.click("#tab-why");
    let why = b.wait_until("return document.getElementById('v-why').textContent");
    assert!(why.as_str().unwrap().contains("no Top-Down"), "{why}");
    assert!(why.as_str().unwrap().contains("IBS op samples"), "{why}");
    b.click("#tab-ibs");
    for (table, json_rows, all) in [
        ("#ibs-op-functions", &ibs["op"]["functions"], "all"),
        ("#ibs-op-rows", &ibs["op"]["rows"], "all"),
        ("#ibs-fetch-rows", &ibs["fetch"]["rows"], "all"),
    ] {
        b.wait_until(&format!(
            "return document.querySelector('{table}') !== null"
        ));
        let shown = b.rows(&format!("{table} tbody tr"));
        let rows = json_rows.as_array().unwrap();
        assert!(!rows.is_empty(), "{table}: no rows in culprit ibs");
        assert_eq!(shown.len(), rows.len(), "{table}");
        for (r, s) in rows.iter().zip(&shown) {
            // First column: the samples; last: where.
            assert_eq!(s[0].replace(',', ""), r[all].to_string(), "{table} {s:?}");
            assert_eq!(s.last().unwrap(), r["key"].as_str().unwrap(), "{table}");
        }
    }
    let op = b.rows("#ibs-op-functions tbody tr");
    for (r, s) in ibs["op"]["functions"].as_array().unwrap().iter().zip(&op) {
        assert_eq!(
            s[3].replace(',', ""),
            r["dc_miss"].to_string(),
            "DC misses {s:?}"
        );
    }
}

#[test]
fn test_html_errors_and_limits() {
    let dir = common::scratch("html-errors");
    // A missing input: exit 2, naming the file.
    let o = common::culprit()
        .args(["html", "-i"])
        .arg(dir.join("nosuch.data"))
        .arg("-o")
        .arg(dir.join("x.html"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("nosuch.data"));
    // --summary json needs a file for the page.
    let o = common::culprit()
        .args(["html", "-i", "x.data", "-o", "-", "--summary", "json"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("-o"));
    // --annotate-top and --rows bound the page.
    let data = record(&dir, "a.data", "markup_names", &["3", "1", "1", "0"]);
    let d = data.to_str().unwrap();
    let s = html(
        &["-i", d, "--annotate-top", "0", "--rows", "2"],
        &dir.join("small.html"),
    );
    assert_eq!(s["annotated"], json!(0));
    assert!(s["functions"].as_u64().unwrap() <= 2, "{s}");
    assert!(s["hidden_functions"].as_u64().unwrap() >= 2, "{s}");
    let full = html(&["-i", d, "--annotate-top", "2"], &dir.join("full.html"));
    assert_eq!(full["annotated"], json!(2));
    // --diff reads the input twice: not from stdin.
    let o = common::culprit()
        .args(["html", "-i", "-", "--diff", d, "-o"])
        .arg(dir.join("d.html"))
        .stdin(std::fs::File::open(&data).unwrap())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("stdin"));
    // A truncated file: the page of what was read, exit 1, the summary says where it stopped.
    let bytes = std::fs::read(&data).unwrap();
    let cut = dir.join("cut.data");
    std::fs::write(&cut, &bytes[..bytes.len() * 2 / 3]).unwrap();
    let page = dir.join("cut.html");
    let o = common::culprit()
        .args(["html", "-i"])
        .arg(&cut)
        .arg("-o")
        .arg(&page)
        .args(["--summary", "json"])
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let s: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(s["stopped"]["offset"].as_u64().is_some(), "{s}");
    assert!(s["samples"].as_u64().unwrap() > 0, "{s}");
    assert!(std::fs::metadata(&page).unwrap().len() > 0);
    // An unknown event is an error naming the file's events.
    let o = common::culprit()
        .args(["html", "-i", d, "-e", "nosuch", "-o"])
        .arg(dir.join("e.html"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("cpu-clock"));
}

/// A crafted `culprit record --topdown` file of a Zen 4 (its level-1 sampling events, in
/// different mixes in `heavy` and `light` of workloads/shares): the page's Top-Down table
/// equals `culprit report --sort sym --topdown --format json`.
#[test]
fn test_html_topdown_table_equals_report_topdown() {
    if !require_browser("test_html_topdown_table_equals_report_topdown") {
        return;
    }
    use culprit_analysis::topdown::{sampling_events, Model};
    let dir = common::scratch("html-topdown");
    let bin = common::workload("shares");
    // In this PIE the text's file offsets equal its SVMAs (see annotate.rs).
    let heavy = common::objdump_function(&bin, "heavy")[0].addr;
    let light = common::objdump_function(&bin, "light")[0].addr;
    let defs = sampling_events(Model::Zen4).unwrap();
    let events: Vec<(&str, u32, u64)> = defs
        .iter()
        .map(|d| (d.name.as_str(), d.attr_type, d.config))
        .collect();
    let samples: Vec<Vec<(u64, u64, bool)>> = (0..defs.len() as u64)
        .map(|i| vec![(heavy, 40 + 7 * i, false), (light, 60 - 5 * i, false)])
        .collect();
    let features = culprit_collect::perfdata::Features {
        cpuid: Some("AuthenticAMD,25,17,1".to_string()),
        ..Default::default()
    };
    let file = dir.join("topdown.data");
    common::write_crafted_file_with(&file, &bin, 0x5555_5555_4000, &events, &samples, &features);
    let f = file.to_str().unwrap();
    let page = dir.join("topdown.html");
    let summary = html(&["-i", f], &page);
    assert_eq!(summary["topdown"], json!(true));
    let report = json_of(&[
        "report",
        "-i",
        f,
        "--sort",
        "sym",
        "--topdown",
        "--format",
        "json",
    ]);
    let rows = report["topdown"]["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "{report}");

    let b = Browser::start();
    b.open(&page);
    b.click("#tab-topdown");
    b.wait_until("return document.querySelectorAll('#topdown-table tbody tr').length > 0");
    let shown = b.rows("#topdown-table tbody tr");
    assert_eq!(shown.len(), rows.len());
    let keys = [
        "frontend_bound",
        "bad_speculation",
        "backend_bound",
        "retiring",
        "smt_contention",
    ];
    for (r, s) in rows.iter().zip(&shown) {
        assert_eq!(s[7], r["keys"]["sym"].as_str().unwrap());
        for (k, key) in keys.iter().enumerate() {
            let exact = r["level1"][key].as_f64().unwrap() * 100.0;
            assert_percent(&s[k], exact, &format!("{} {key}", s[7]));
        }
        assert_eq!(s[5].replace(',', ""), r["samples"].to_string());
        assert_eq!(s[6].replace(',', ""), r["min_samples"].to_string());
    }
    let note = b.js("return document.querySelector('#v-topdown .est').textContent");
    assert!(note.as_str().unwrap().contains("estimate"), "{note}");
}

/// A crafted file with a memory event (an AMD cache-fill event, not precise) and cycles in
/// workloads/simple_classic's multiply_matrices: the annotation has a de-skid column for the
/// memory event only, marked `~` and said to be an estimate, with `culprit annotate --deskid
/// --format json`'s numbers.
#[test]
fn test_html_annotation_marks_deskid_estimates() {
    if !require_browser("test_html_annotation_marks_deskid_estimates") {
        return;
    }
    let dir = common::scratch("html-deskid");
    let (file, fill) = common::write_skidded_fill_file(&dir);
    let d = file.to_str().unwrap();
    let page = dir.join("deskid.html");
    html(&["-i", d], &page);
    let ann = json_of(&[
        "annotate",
        "-i",
        d,
        "multiply_matrices",
        "--deskid",
        "--format",
        "json",
    ]);
    assert_eq!(ann["deskid_is_estimate"], json!(true));
    let fill_samples = ann["event_info"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == fill)
        .unwrap()["samples"]
        .as_u64()
        .unwrap();

    let b = Browser::start();
    b.open(&page);
    b.click("#tab-annotate");
    let title =
        b.wait_until("const t = document.getElementById('ann-title'); return t && t.textContent");
    assert_eq!(title, json!("multiply_matrices"));
    let heads =
        b.js("return [...document.querySelectorAll('#ann-asm thead th')].map(h => h.textContent)");
    assert_eq!(
        heads,
        json!([
            fill,
            format!("~{fill}"),
            "cycles",
            "Address",
            "Instruction",
            "Source"
        ]),
        "one de-skid column, for the memory event only"
    );
    let note = b.js("return [...document.querySelectorAll('#v-annotate .est')].map(n => n.textContent).join(' ')");
    assert!(note.as_str().unwrap().contains("estimates"), "{note}");
    let rows = b.js(
        "return [...document.querySelectorAll('#ann-asm tbody tr[data-addr]')].map(r =>\
           [r.dataset.addr, r.children[1].textContent])",
    );
    let rows: Vec<(String, String)> = serde_json::from_value(rows).unwrap();
    let mut moved = 0;
    for insn in ann["instructions"].as_array().unwrap() {
        let ip = insn["ip"].as_str().unwrap();
        let (_, shown) = rows
            .iter()
            .find(|r| r.0 == ip)
            .unwrap_or_else(|| panic!("no row {ip}"));
        let n = insn["deskid"][fill].as_u64().unwrap();
        if n == 0 {
            assert_eq!(shown, "", "{ip}");
        } else {
            moved += 1;
            let exact = n as f64 * 100.0 / fill_samples as f64;
            assert_percent(shown, exact, ip);
        }
    }
    assert!(moved > 0, "no de-skidded samples");
}
