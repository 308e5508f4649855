//! The HTML report's Why tab, in headless Chromium: each number equals the CLI's for the
//! same function (the de-skid table: `culprit report --sort sym --no-children --deskid`).

use crate::browser;
use crate::common;

use browser::*;

#[test]
fn test_html_why_deskid_table_equals_report_deskid() {
    if !require_browser("test_html_why_deskid_table_equals_report_deskid") {
        return;
    }
    let dir = common::scratch("html-why-deskid");
    let (file, fill) = common::write_skidded_fill_file(&dir);
    let d = file.to_str().unwrap();
    let page = dir.join("why.html");
    html(&["-i", d], &page);
    let report = json_of(&[
        "report",
        "-i",
        d,
        "--sort",
        "sym",
        "--no-children",
        "--deskid",
        "--format",
        "json",
    ]);

    let b = Browser::start();
    b.open(&page);
    b.click("#tab-why");
    b.wait_until("return document.getElementById('why-deskid') !== null");
    let heads = b.js(
        "return [...document.querySelectorAll('#why-deskid thead th')].map(h => h.textContent)",
    );
    assert_eq!(
        heads,
        serde_json::json!([fill, format!("~{fill}"), "Function"]),
        "columns for the skidding event only"
    );
    let rows = b.rows("#why-deskid tbody tr");
    assert!(!rows.is_empty(), "no rows");
    for row in &rows {
        let name = row.last().unwrap();
        let r = report["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["keys"]["sym"] == name.as_str())
            .unwrap_or_else(|| panic!("no report row {name}"));
        let int = |s: &str| s.replace(',', "").parse::<u64>().unwrap_or(0);
        assert_eq!(int(&row[0]), r["samples"][fill].as_u64().unwrap(), "{name}");
        assert_eq!(
            int(&row[1]),
            r["deskid_samples"][fill].as_u64().unwrap(),
            "{name}"
        );
    }
    let note = b.js("return document.querySelector('#v-why .est').textContent");
    assert!(note.as_str().unwrap().contains("estimates"), "{note}");
}

#[test]
fn test_html_why_miss_sources_equal_report_sort_sym_mem() {
    if !require_browser("test_html_why_miss_sources_equal_report_sort_sym_mem") {
        return;
    }
    // A real PEBS load-latency recording (data sources and weights).
    let f = common::repo_root().join(
        "crates/decode/tests/fixtures/real-perf-data/google-perf_data_converter/perf.data.weight_struct",
    );
    let d = f.to_str().unwrap();
    let dir = common::scratch("html-why-mem");
    let page = dir.join("why.html");
    html(&["-i", d], &page);
    let report = json_of(&["report", "-i", d, "--sort", "sym,mem", "--format", "json"]);
    let event = report["events"][0]["name"].as_str().unwrap().to_string();
    // (function, level) -> (samples, weight), summed (a name may be in two DSOs).
    let mut want: std::collections::BTreeMap<(String, String), (u64, u64)> = Default::default();
    for r in report["rows"].as_array().unwrap() {
        let e = want
            .entry((
                r["keys"]["sym"].as_str().unwrap().to_string(),
                r["keys"]["mem"].as_str().unwrap().to_string(),
            ))
            .or_default();
        e.0 += r["samples"][&event].as_u64().unwrap_or(0);
        e.1 += r["period"][&event].as_u64().unwrap_or(0);
    }

    let b = Browser::start();
    b.open(&page);
    b.click("#tab-why");
    b.wait_until("return document.getElementById('why-mem') !== null");
    let heads =
        b.js("return [...document.querySelectorAll('#why-mem thead th')].map(h => h.textContent)");
    assert_eq!(
        heads,
        serde_json::json!([
            "Function",
            "Served from",
            format!("{event} samples"),
            format!("{event} weight"),
            format!("{event} weight %")
        ])
    );
    let rows = b.rows("#why-mem tbody tr");
    assert!(rows.len() > 1, "{rows:?}");
    let int = |s: &str| s.replace(',', "").parse::<u64>().unwrap();
    let total = report["events"][0]["period"].as_u64().unwrap();
    let mut shown: std::collections::BTreeMap<(String, String), (u64, u64)> = Default::default();
    for row in &rows {
        let e = shown.entry((row[0].clone(), row[1].clone())).or_default();
        e.0 += int(&row[2]);
        e.1 += int(&row[3]);
        assert_percent(&row[4], int(&row[3]) as f64 * 100.0 / total as f64, &row[0]);
    }
    for (k, v) in &shown {
        assert_eq!(Some(v), want.get(k), "{k:?}");
    }
}
