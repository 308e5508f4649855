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

/// The Why tab's latency histograms: per function (and DSO), its samples per power-of-two
/// range of latency cycles equal the `latency` of each sample in `culprit script --format
/// json`, on a real PEBS load-latency recording, a crafted Arm SPE one and a real IBS one;
/// the page draws one bar per range.
#[test]
fn test_html_why_latency_histograms_equal_script_latencies() {
    let test = "test_html_why_latency_histograms_equal_script_latencies";
    let root = common::repo_root();
    let files = [
        "crates/decode/tests/fixtures/real-perf-data/google-perf_data_converter/perf.data.weight_struct",
        "crates/decode/tests/fixtures/spe/spe-crafted.data",
        "crates/decode/tests/fixtures/ibs-fam17h_m31_zen2.data",
    ];
    let dir = common::scratch("html-why-latency");
    let browser = require_browser(test).then(Browser::start);
    for (k, rel) in files.iter().enumerate() {
        let f = root.join(rel);
        let page = dir.join(format!("why{k}.html"));
        html(&["-i", f.to_str().unwrap()], &page);
        // (function, dso) -> (samples, summed latency, samples per range), from script.
        let mut want: std::collections::BTreeMap<(String, String), (u64, u64, Vec<u64>)> =
            Default::default();
        let script = common::run_ok(
            common::culprit()
                .args(["script", "--format", "json", "-i"])
                .arg(&f),
        );
        for line in String::from_utf8_lossy(&script.stdout).lines() {
            let s: serde_json::Value = serde_json::from_str(line).unwrap();
            let Some(lat) = s["precise"]["latency"].as_u64() else {
                continue;
            };
            let name = s["sym"].as_str().unwrap_or("[unknown]").to_string();
            let dso = s["dso"].as_str().unwrap_or("[unknown]").to_string();
            let e = want.entry((name, dso)).or_insert((0, 0, vec![0; 24]));
            e.0 += 1;
            e.1 += lat;
            // Range b: 0, then [2^(b-1), 2^b) cycles; the last one open-ended.
            let b = (64 - lat.leading_zeros() as usize).min(23);
            e.2[b] += 1;
        }
        assert!(!want.is_empty(), "{rel}: script shows no latency");
        let data = page_data(&page);
        let rows = data["why_latency"]["rows"]
            .as_array()
            .expect("latency rows");
        assert_eq!(rows.len(), want.len().min(15), "{rel}");
        for r in rows {
            let key = (
                r["name"].as_str().unwrap().to_string(),
                r["dso"].as_str().unwrap().to_string(),
            );
            let buckets: Vec<u64> = serde_json::from_value(r["buckets"].clone()).unwrap();
            let got = (
                r["samples"].as_u64().unwrap(),
                r["total"].as_u64().unwrap(),
                buckets,
            );
            assert_eq!(Some(&got), want.get(&key), "{rel}: {key:?}");
        }
        let Some(b) = &browser else {
            continue;
        };
        b.open(&page);
        b.click("#tab-why");
        b.wait_until("return document.getElementById('why-lat') !== null");
        let drawn = b.js(
            "return [...document.querySelectorAll('#why-lat tbody tr')].map(tr => \
             [tr.cells[0].textContent, JSON.parse(tr.lastChild.dataset.buckets), \
              tr.lastChild.querySelectorAll('.lat-bar').length])",
        );
        let drawn = drawn.as_array().unwrap();
        assert_eq!(drawn.len(), rows.len(), "{rel}");
        // One bar per range from the lowest to the highest range any row has.
        let used: Vec<usize> = (0..24)
            .filter(|&i| rows.iter().any(|r| r["buckets"][i].as_u64() > Some(0)))
            .collect();
        let bars = used.last().unwrap() - used.first().unwrap() + 1;
        for (d, r) in drawn.iter().zip(rows) {
            assert_eq!(d[0], r["name"], "{rel}");
            assert_eq!(d[1], r["buckets"], "{rel}");
            assert_eq!(d[2].as_u64(), Some(bars as u64), "{rel}");
        }
    }
}
