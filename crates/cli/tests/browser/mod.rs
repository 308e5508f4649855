//! Headless Chromium driven through chromedriver's WebDriver HTTP API, for the tests of
//! `culprit html` (html.rs, html_views.rs): every network request is refused (a dead proxy,
//! unresolvable hosts; the page's CSP forbids fetches anyway), and the tests read the DOM as
//! a user sees it.
#![allow(dead_code)]

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// How long a page, a browser or a condition may take: generous, for a loaded machine (all
/// waits poll and return as soon as they can).
pub const WAIT: Duration = Duration::from_secs(180);

/// One browser at a time: several Chromiums at once on a small machine only slow each other
/// into timeouts.
pub static BROWSER: Mutex<()> = Mutex::new(());

/// Whether Chromium and chromedriver are installed (Debian `chromium`, `chromium-driver`;
/// .ci/run installs them): panics under CI when they are not, else skips loudly.
pub fn require_browser(test: &str) -> bool {
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
    crate::common::skip(test, "chromium and chromium-driver are not installed")
}

/// Chromium's flags: headless as root in a container, and no network: every request goes to
/// a proxy on a closed port and no host name resolves (the page must need none).
pub const CHROME_ARGS: &[&str] = &[
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
pub struct Browser {
    driver: Child,
    base: String,
    session: String,
    agent: ureq::Agent,
    _lock: std::sync::MutexGuard<'static, ()>,
}

/// A WebDriver error: its `error` code and message.
#[derive(Debug)]
pub struct WdError {
    error: String,
    message: String,
}

impl Browser {
    pub fn start() -> Browser {
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
    pub fn call(&self, method: &str, path: &str, body: Option<Value>) -> Result<Value, WdError> {
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

    pub fn session_call(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let path = format!("/session/{}{}", self.session, path);
        self.call(method, &path, body)
            .unwrap_or_else(|e| panic!("{method} {path}: {} ({})", e.error, e.message))
    }

    /// Loads a page from a file and waits until its script has drawn it.
    pub fn open(&self, file: &Path) {
        let url = format!("file://{}", file.canonicalize().unwrap().display());
        self.session_call("POST", "/url", Some(json!({ "url": url })));
        self.wait_until("return document.body && document.body.dataset.ready === '1'");
    }

    /// Runs a script (a function body) in the page and returns its value.
    pub fn js(&self, script: &str) -> Value {
        self.session_call(
            "POST",
            "/execute/sync",
            Some(json!({"script": script, "args": []})),
        )
    }

    /// Polls `script` until it returns something truthy; returns that.
    pub fn wait_until(&self, script: &str) -> Value {
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
    pub fn find(&self, css: &str) -> String {
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
    pub fn click(&self, css: &str) {
        let id = self.find(css);
        self.session_call("POST", &format!("/element/{id}/click"), Some(json!({})));
    }

    /// Clicks at (`x`, `y`) CSS pixels of the viewport (WebDriver actions: a real pointer
    /// move, press and release).
    pub fn click_viewport(&self, x: i64, y: i64) {
        let actions = json!({"actions": [{
            "type": "pointer", "id": "mouse", "parameters": {"pointerType": "mouse"},
            "actions": [
                {"type": "pointerMove", "duration": 0, "origin": "viewport", "x": x, "y": y},
                {"type": "pointerDown", "button": 0},
                {"type": "pointerUp", "button": 0},
            ],
        }]});
        self.session_call("POST", "/actions", Some(actions));
    }

    /// Drags from `from_dx` to `to_dx` pixels from the centre of the element `css`, at `dy`
    /// (a real pointer press, move and release).
    pub fn drag(&self, css: &str, from_dx: i64, to_dx: i64, dy: i64) {
        let id = self.find(css);
        let element = json!({ "element-6066-11e4-a52e-4f735466cecf": id });
        let actions = json!({"actions": [{
            "type": "pointer", "id": "mouse", "parameters": {"pointerType": "mouse"},
            "actions": [
                {"type": "pointerMove", "duration": 0, "origin": element, "x": from_dx, "y": dy},
                {"type": "pointerDown", "button": 0},
                {"type": "pointerMove", "duration": 50, "origin": element, "x": to_dx, "y": dy},
                {"type": "pointerUp", "button": 0},
            ],
        }]});
        self.session_call("POST", "/actions", Some(actions));
    }

    /// Types `text` into the element `css`.
    pub fn type_into(&self, css: &str, text: &str) {
        let id = self.find(css);
        self.session_call(
            "POST",
            &format!("/element/{id}/value"),
            Some(json!({ "text": text })),
        );
    }

    /// The text of an open alert dialog, if one is open.
    pub fn alert(&self) -> Option<String> {
        let path = format!("/session/{}/alert/text", self.session);
        match self.call("GET", &path, None) {
            Ok(v) => Some(v.as_str().unwrap_or("").to_string()),
            Err(e) if e.error == "no such alert" => None,
            Err(e) => panic!("alert: {} ({})", e.error, e.message),
        }
    }

    /// The text of every cell of the rows of `css` (a tbody's rows).
    pub fn rows(&self, css: &str) -> Vec<Vec<String>> {
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
pub fn record(dir: &Path, name: &str, prog: &str, args: &[&str]) -> PathBuf {
    let out = dir.join(name);
    crate::common::run_ok(
        crate::common::culprit()
            .args(["record", "-q", "-g", "-e", "cpu-clock", "-F", "4000", "-o"])
            .arg(&out)
            .arg("--")
            .arg(crate::common::workload(prog))
            .args(args),
    );
    out
}

/// The JSON data an HTML report embeds (`<script id="culprit-data">`), read without a
/// browser.
pub fn page_data(page: &Path) -> Value {
    let html = std::fs::read_to_string(page).unwrap();
    let start = html.find("id=\"culprit-data\">").expect("the page's data") + 18;
    let end = start + html[start..].find("</script>").unwrap();
    serde_json::from_str(&html[start..end]).expect("the page's data is JSON")
}

/// `culprit html ARGS -o OUT --summary json`: the summary, checked against its schema.
pub fn html(args: &[&str], out: &Path) -> Value {
    let o = crate::common::run_ok(
        crate::common::culprit()
            .arg("html")
            .args(args)
            .arg("-o")
            .arg(out)
            .args(["--summary", "json"]),
    );
    let text = String::from_utf8(o.stdout).unwrap();
    crate::common::validate_json_schema("html", &text);
    let summary: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        summary["bytes"].as_u64(),
        Some(std::fs::metadata(out).unwrap().len()),
        "the summary's bytes are the page's size"
    );
    summary
}

pub fn json_of(args: &[&str]) -> Value {
    let o = crate::common::run_ok(crate::common::culprit().args(args));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// `12.34%` (or `+1.23%`) as a number.
pub fn percent(text: &str) -> f64 {
    text.trim()
        .trim_end_matches('%')
        .parse()
        .unwrap_or_else(|e| panic!("{text:?} is not a percentage: {e}"))
}

/// Checks a shown percentage (2 decimals) against the exact one.
pub fn assert_percent(shown: &str, exact: f64, what: &str) {
    let p = percent(shown);
    assert!(
        (p - exact).abs() <= 0.005 + 1e-9,
        "{what}: page shows {shown}, culprit's JSON says {exact}"
    );
}

/// The page is offline by construction: a CSP that allows no fetch, no URL anywhere.
pub fn assert_self_contained(page: &str) {
    assert!(
        page.contains("default-src 'none'"),
        "no CSP forbidding fetches"
    );
    for url in ["http://", "https://", "//cdn", "src=\"", "href=\""] {
        assert!(!page.contains(url), "the page refers to {url}");
    }
}

/// The page read no resource (the network is off, and nothing was even asked for).
pub fn assert_no_requests(b: &Browser) {
    let n = b.js("return performance.getEntriesByType('resource').length");
    assert_eq!(n, json!(0), "the page requested resources");
}

/// Table rows of the hot functions table: (function cell, DSO, percent cells, titles).
pub fn function_rows(b: &Browser) -> Vec<(String, String, Vec<String>, Vec<String>)> {
    let v = b.js(
        "return [...document.querySelectorAll('#functions-table tbody tr')].map(r => {\
           const c = [...r.children]; const n = c.length;\
           return [c[n-2].textContent, c[n-1].textContent,\
                   c.slice(0, n-2).map(x => x.textContent), c.slice(0, n-2).map(x => x.title)]; })",
    );
    serde_json::from_value(v).unwrap()
}

/// The `N samples` at the start of a cell's title.
pub fn title_samples(title: &str) -> u64 {
    title
        .split(" samples")
        .next()
        .unwrap()
        .replace(',', "")
        .parse()
        .unwrap_or_else(|e| panic!("title {title:?}: {e}"))
}
