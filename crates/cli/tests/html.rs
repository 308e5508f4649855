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

mod common;

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// How long a page, a browser or a condition may take: generous, for a loaded machine (all
/// waits poll and return as soon as they can).
const WAIT: Duration = Duration::from_secs(180);

/// One browser at a time: several Chromiums at once on a small machine only slow each other
/// into timeouts.
static BROWSER: Mutex<()> = Mutex::new(());

/// Whether Chromium and chromedriver are installed (Debian `chromium`, `chromium-driver`;
/// .ci/run installs them): panics under CI when they are not, else skips loudly.
fn require_browser(test: &str) -> bool {
    let ok = |cmd: &str| {
        Command::new(cmd)
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if ok("chromium") && ok("chromedriver") {
        return true;
    }
    if std::env::var("CI").is_ok() {
        panic!("{test}: chromium or chromedriver is missing, but .ci/run installs them");
    }
    common::skip(test, "chromium and chromium-driver are not installed")
}

/// Chromium's flags: headless as root in a container, and no network: every request goes to
/// a proxy on a closed port and no host name resolves (the page must need none).
const CHROME_ARGS: &[&str] = &[
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--no-first-run",
    "--window-size=1400,1000",
    "--proxy-server=127.0.0.1:9",
    "--proxy-bypass-list=<-loopback>",
    "--host-resolver-rules=MAP * ~NOTFOUND",
];

/// A headless Chromium session through chromedriver.
struct Browser {
    driver: Child,
    base: String,
    session: String,
    agent: ureq::Agent,
    _lock: std::sync::MutexGuard<'static, ()>,
}

/// A WebDriver error: its `error` code and message.
#[derive(Debug)]
struct WdError {
    error: String,
    message: String,
}

impl Browser {
    fn start() -> Browser {
        let lock = BROWSER.lock().unwrap_or_else(|e| e.into_inner());
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let driver = Command::new("chromedriver")
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start chromedriver");
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(WAIT))
            .build()
            .into();
        let mut b = Browser {
            driver,
            base: format!("http://127.0.0.1:{port}"),
            session: String::new(),
            agent,
            _lock: lock,
        };
        let start = Instant::now();
        loop {
            let ready = b
                .agent
                .get(format!("{}/status", b.base))
                .call()
                .ok()
                .and_then(|mut r| r.body_mut().read_json::<Value>().ok())
                .is_some_and(|v| v["value"]["ready"] == true);
            if ready {
                break;
            }
            assert!(start.elapsed() < WAIT, "chromedriver did not start");
            std::thread::sleep(Duration::from_millis(100));
        }
        let caps = json!({"capabilities": {"alwaysMatch": {
            "goog:chromeOptions": {"args": CHROME_ARGS},
            "timeouts": {"pageLoad": WAIT.as_millis() as u64, "script": WAIT.as_millis() as u64},
        }}});
        let v = b.call("POST", "/session", Some(caps)).expect("new session");
        b.session = v["sessionId"].as_str().expect("sessionId").to_string();
        b
    }

    /// A WebDriver command; its `value`, or its error.
    fn call(&self, method: &str, path: &str, body: Option<Value>) -> Result<Value, WdError> {
        let url = format!("{}{}", self.base, path);
        let resp = match (method, body) {
            ("GET", _) => self.agent.get(&url).call(),
            ("DELETE", _) => self.agent.delete(&url).call(),
            (_, b) => self.agent.post(&url).send_json(b.unwrap_or(json!({}))),
        };
        let mut resp = resp.unwrap_or_else(|e| panic!("{method} {path}: {e}"));
        let v: Value = resp
            .body_mut()
            .read_json()
            .unwrap_or_else(|e| panic!("{method} {path}: not JSON: {e}"));
        let value = v.get("value").cloned().unwrap_or(Value::Null);
        match value.get("error").and_then(Value::as_str) {
            Some(error) => Err(WdError {
                error: error.to_string(),
                message: value["message"].as_str().unwrap_or("").to_string(),
            }),
            None => Ok(value),
        }
    }

    fn session_call(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let path = format!("/session/{}{}", self.session, path);
        self.call(method, &path, body)
            .unwrap_or_else(|e| panic!("{method} {path}: {} ({})", e.error, e.message))
    }

    /// Loads a page from a file and waits until its script has drawn it.
    fn open(&self, file: &Path) {
        let url = format!("file://{}", file.canonicalize().unwrap().display());
        self.session_call("POST", "/url", Some(json!({ "url": url })));
        self.wait_until("return document.body && document.body.dataset.ready === '1'");
    }

    /// Runs a script (a function body) in the page and returns its value.
    fn js(&self, script: &str) -> Value {
        self.session_call(
            "POST",
            "/execute/sync",
            Some(json!({"script": script, "args": []})),
        )
    }

    /// Polls `script` until it returns something truthy; returns that.
    fn wait_until(&self, script: &str) -> Value {
        let start = Instant::now();
        loop {
            let v = self.js(script);
            let truthy = match &v {
                Value::Null => false,
                Value::Bool(b) => *b,
                Value::String(s) => !s.is_empty(),
                Value::Number(n) => n.as_f64() != Some(0.0),
                _ => true,
            };
            if truthy {
                return v;
            }
            assert!(start.elapsed() < WAIT, "timed out waiting for: {script}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The WebDriver id of the element `css` (waiting for it to exist).
    fn find(&self, css: &str) -> String {
        self.wait_until(&format!(
            "return document.querySelector({}) !== null",
            json!(css)
        ));
        let v = self.session_call(
            "POST",
            "/element",
            Some(json!({"using": "css selector", "value": css})),
        );
        v.as_object()
            .and_then(|o| o.values().next())
            .and_then(Value::as_str)
            .expect("element id")
            .to_string()
    }

    /// Clicks the element `css` as a user would (WebDriver's element click).
    fn click(&self, css: &str) {
        let id = self.find(css);
        self.session_call("POST", &format!("/element/{id}/click"), Some(json!({})));
    }

    /// Clicks at (`dx`, `dy`) pixels from the centre of the element `css` (WebDriver
    /// actions: a real pointer move, press and release).
    fn click_at(&self, css: &str, dx: i64, dy: i64) {
        let id = self.find(css);
        let element = json!({ "element-6066-11e4-a52e-4f735466cecf": id });
        let actions = json!({"actions": [{
            "type": "pointer", "id": "mouse", "parameters": {"pointerType": "mouse"},
            "actions": [
                {"type": "pointerMove", "duration": 0, "origin": element, "x": dx, "y": dy},
                {"type": "pointerDown", "button": 0},
                {"type": "pointerUp", "button": 0},
            ],
        }]});
        self.session_call("POST", "/actions", Some(actions));
    }

    /// Types `text` into the element `css`.
    fn type_into(&self, css: &str, text: &str) {
        let id = self.find(css);
        self.session_call(
            "POST",
            &format!("/element/{id}/value"),
            Some(json!({ "text": text })),
        );
    }

    /// The text of an open alert dialog, if one is open.
    fn alert(&self) -> Option<String> {
        let path = format!("/session/{}/alert/text", self.session);
        match self.call("GET", &path, None) {
            Ok(v) => Some(v.as_str().unwrap_or("").to_string()),
            Err(e) if e.error == "no such alert" => None,
            Err(e) => panic!("alert: {} ({})", e.error, e.message),
        }
    }

    /// The text of every cell of the rows of `css` (a tbody's rows).
    fn rows(&self, css: &str) -> Vec<Vec<String>> {
        let v = self.js(&format!(
            "return [...document.querySelectorAll({})].filter(r => !r.hidden)\
             .map(r => [...r.children].map(c => c.textContent))",
            json!(css)
        ));
        serde_json::from_value(v).unwrap()
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if !self.session.is_empty() {
            let path = format!("/session/{}", self.session);
            let _ = self.call("DELETE", &path, None);
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

/// Records `prog args` with call chains into DIR/NAME (cpu-clock: no PMU needed).
fn record(dir: &Path, name: &str, prog: &str, args: &[&str]) -> PathBuf {
    let out = dir.join(name);
    common::run_ok(
        common::culprit()
            .args(["record", "-q", "-g", "-e", "cpu-clock", "-F", "4000", "-o"])
            .arg(&out)
            .arg("--")
            .arg(common::workload(prog))
            .args(args),
    );
    out
}

/// `culprit html ARGS -o OUT --summary json`: the summary, checked against its schema.
fn html(args: &[&str], out: &Path) -> Value {
    let o = common::run_ok(
        common::culprit()
            .arg("html")
            .args(args)
            .arg("-o")
            .arg(out)
            .args(["--summary", "json"]),
    );
    let text = String::from_utf8(o.stdout).unwrap();
    common::validate_json_schema("html", &text);
    let summary: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        summary["bytes"].as_u64(),
        Some(std::fs::metadata(out).unwrap().len()),
        "the summary's bytes are the page's size"
    );
    summary
}

fn json_of(args: &[&str]) -> Value {
    let o = common::run_ok(common::culprit().args(args));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// `12.34%` (or `+1.23%`) as a number.
fn percent(text: &str) -> f64 {
    text.trim()
        .trim_end_matches('%')
        .parse()
        .unwrap_or_else(|e| panic!("{text:?} is not a percentage: {e}"))
}

/// Checks a shown percentage (2 decimals) against the exact one.
fn assert_percent(shown: &str, exact: f64, what: &str) {
    let p = percent(shown);
    assert!(
        (p - exact).abs() <= 0.005 + 1e-9,
        "{what}: page shows {shown}, culprit's JSON says {exact}"
    );
}

/// The page is offline by construction: a CSP that allows no fetch, no URL anywhere.
fn assert_self_contained(page: &str) {
    assert!(
        page.contains("default-src 'none'"),
        "no CSP forbidding fetches"
    );
    for url in ["http://", "https://", "//cdn", "src=\"", "href=\""] {
        assert!(!page.contains(url), "the page refers to {url}");
    }
}

/// The page read no resource (the network is off, and nothing was even asked for).
fn assert_no_requests(b: &Browser) {
    let n = b.js("return performance.getEntriesByType('resource').length");
    assert_eq!(n, json!(0), "the page requested resources");
}

/// Table rows of the hot functions table: (function cell, DSO, percent cells, titles).
fn function_rows(b: &Browser) -> Vec<(String, String, Vec<String>, Vec<String>)> {
    let v = b.js(
        "return [...document.querySelectorAll('#functions-table tbody tr')].map(r => {\
           const c = [...r.children]; const n = c.length;\
           return [c[n-2].textContent, c[n-1].textContent,\
                   c.slice(0, n-2).map(x => x.textContent), c.slice(0, n-2).map(x => x.title)]; })",
    );
    serde_json::from_value(v).unwrap()
}

/// The `N samples` at the start of a cell's title.
fn title_samples(title: &str) -> u64 {
    title
        .split(" samples")
        .next()
        .unwrap()
        .replace(',', "")
        .parse()
        .unwrap_or_else(|e| panic!("title {title:?}: {e}"))
}

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
           [r.dataset.addr, r.children[0].textContent, r.children[0].title, r.children[2].textContent])",
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
    // bottom; rows are 17 px), measured afresh: zooming changes the canvas' height.
    let click_frame = |b: &Browser, fraction: f64, depth: f64| {
        let size = b.js(
            "const r = document.getElementById('flame').getBoundingClientRect(); \
             return [r.width, r.height]",
        );
        let (w, h) = (size[0].as_f64().unwrap(), size[1].as_f64().unwrap());
        let dx = ((fraction - 0.5) * w).round() as i64;
        let dy = (h - (depth + 1.0) * 17.0 + 8.0 - h / 2.0).round() as i64;
        b.click_at("#flame", dx, dy);
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
    let notes = b.js("return [...document.querySelectorAll('#v-summary .note')].map(n => n.textContent).join('\\n')");
    assert!(notes.as_str().unwrap().contains("no Top-Down"), "{notes}");
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
    let bin = common::workload("simple_classic");
    let f = common::objdump_function(&bin, "multiply_matrices");
    let mul = f
        .iter()
        .position(|l| l.mnem == "mulss")
        .expect("mulss in multiply_matrices");
    // Skidded samples after the load before mulss (the culprit), as a cache-fill event lands.
    let samples = vec![
        (f[mul + 2].addr, 440, false),
        (f[mul + 3].addr, 300, false),
        (f[mul].addr, 90, false),
        (f[mul + 1].addr, 70, false),
    ];
    let dir = common::scratch("html-deskid");
    let file = dir.join("crafted.data");
    let fill = "ls_dmnd_fills_from_sys.all";
    common::write_crafted_file(
        &file,
        &bin,
        0x5555_5555_4000,
        &[(fill, 4, 0xff43), ("cycles", 0, 0)],
        &samples,
    );
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
