//! debuginfod: a stripped workload's names come from a real `debuginfod` server (Debian's
//! package, started here on a free loopback port, serving the workload's debug file), equal
//! to perf's on the same recording with the unstripped file (`--symfs`); a second report
//! needs no server (the cache); `--no-debuginfod` and a server that is down leave one
//! warning and no names, quickly.

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A `debuginfod -F DIR` server, killed on drop.
struct Server {
    child: Child,
    url: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts debuginfod on a free loopback port over `dir` and waits until it serves
/// `build_id`'s debug file (it indexes the directory when it starts).
fn start_server(dir: &Path, db: &Path, build_id: &str) -> Server {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new("debuginfod")
        .args(["-F", "-p", &port.to_string(), "-d"])
        .arg(db)
        .arg(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start debuginfod");
    let server = Server {
        child,
        url: format!("http://127.0.0.1:{port}"),
    };
    let probe = format!("{}/buildid/{build_id}/debuginfo", server.url);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if ureq::get(&probe).call().is_ok() {
            return server;
        }
        assert!(Instant::now() < deadline, "debuginfod never served {probe}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn tool(name: &str) -> bool {
    Command::new(name)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok()
}

/// `report --sort sym` shares by name (and stderr), with `env` and `extra` flags.
fn culprit_report(
    file: &Path,
    env: &[(&str, &str)],
    extra: &[&str],
) -> (BTreeMap<String, f64>, String) {
    let mut c = common::culprit();
    c.env_remove("DEBUGINFOD_URLS");
    // A home of its own: the shared test home's build-id cache holds the unstripped
    // workload (other tests record it), which would name the stripped one by its build-id.
    let home = common::scratch("debuginfod-home");
    c.env("HOME", &home);
    for (k, v) in env {
        c.env(k, v);
    }
    let out = common::run_ok(
        c.args([
            "report",
            "--unknown",
            "address",
            "--format",
            "json",
            "--sort",
            "sym",
            "-i",
        ])
        .arg(file)
        .args(extra),
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut shares = BTreeMap::new();
    for row in json["rows"].as_array().unwrap() {
        let name = row["keys"]["sym"].as_str().unwrap_or("").to_string();
        *shares.entry(name).or_insert(0.0) += row["percent"]["cpu-clock"].as_f64().unwrap();
    }
    (shares, String::from_utf8_lossy(&out.stderr).into_owned())
}

/// perf's self shares of `heavy` and `light` with the unstripped file under `symfs`.
fn perf_shares(file: &Path, symfs: &Path) -> BTreeMap<String, f64> {
    let out = common::run_ok(
        common::perf()
            .args(["report", "--stdio", "--sort", "sym", "--symfs"])
            .arg(symfs)
            .arg("-i")
            .arg(file),
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let (left, name) = l.split_once("] ")?;
            let pct = left.split_whitespace().next()?.trim_end_matches('%');
            Some((name.trim().to_string(), pct.parse().ok()?))
        })
        .filter(|(n, _)| n == "heavy" || n == "light")
        .collect()
}

#[test]
fn test_debuginfod_names_stripped_workload_then_cache_then_off() {
    let test = "test_debuginfod_names_stripped_workload_then_cache_then_off";
    if !common::require_perf(test) {
        return;
    }
    if !tool("debuginfod") || !tool("objcopy") {
        common::skip(
            test,
            "debuginfod or objcopy missing (apt-get install debuginfod)",
        );
        return;
    }
    let dir = common::scratch("debuginfod");
    let (full, stripped) = (dir.join("full/shares"), dir.join("bin/shares"));
    let served = dir.join("served");
    for d in [&full, &stripped] {
        std::fs::create_dir_all(d.parent().unwrap()).unwrap();
    }
    std::fs::create_dir_all(&served).unwrap();
    std::fs::copy(common::workload("shares"), &full).unwrap();
    common::run_ok(
        Command::new("objcopy")
            .arg("--only-keep-debug")
            .arg(&full)
            .arg(served.join("shares.debug")),
    );
    common::run_ok(Command::new("strip").arg("-o").arg(&stripped).arg(&full));
    let build_id = {
        let data = std::fs::read(&stripped).unwrap();
        let obj = object::File::parse(&*data).unwrap();
        let id = object::Object::build_id(&obj).unwrap().unwrap();
        id.iter().map(|b| format!("{b:02x}")).collect::<String>()
    };
    let file = common::perf_record(
        "debuginfod-rec",
        &["-e", "cpu-clock"],
        &[stripped.to_str().unwrap(), "10"],
    );
    let cache = dir.join("cache");
    let cache_env = ("DEBUGINFOD_CACHE_PATH", cache.to_str().unwrap());

    // No server: no names, the usual warning.
    let (none, stderr) = culprit_report(&file, &[cache_env], &[]);
    assert!(!none.contains_key("heavy"), "{none:?}");
    assert!(stderr.contains("no symbols"), "{stderr}");

    // The server names them, as perf names them from the unstripped file.
    let names = {
        let server = start_server(&served, &dir.join("db.sqlite"), &build_id);
        let urls = ("DEBUGINFOD_URLS", server.url.as_str());
        // --no-debuginfod: not asked (nothing cached either).
        let (off, _) = culprit_report(&file, &[cache_env, urls], &["--no-debuginfod"]);
        assert!(!off.contains_key("heavy") && !cache.exists(), "{off:?}");
        let (names, _) = culprit_report(&file, &[cache_env, urls], &[]);
        names
    };
    let symfs = dir.join("symfs");
    let at = symfs.join(stripped.strip_prefix("/").unwrap());
    std::fs::create_dir_all(at.parent().unwrap()).unwrap();
    std::fs::copy(&full, &at).unwrap();
    let perf = perf_shares(&file, &symfs);
    assert_eq!(perf.len(), 2, "perf names heavy and light: {perf:?}");
    for (name, share) in &perf {
        let ours = names.get(name).copied().unwrap_or(0.0);
        assert!(
            (share - ours).abs() <= 0.1,
            "{name}: perf {share}%, culprit {ours}%"
        );
    }
    assert!(names["heavy"] > 2.0 * names["light"], "{names:?}");
    assert!(cache.join(&build_id).join("debuginfo").is_file());

    // The server gone: the cache names them.
    let dead = "http://127.0.0.1:9";
    let (cached, _) = culprit_report(&file, &[cache_env, ("DEBUGINFOD_URLS", dead)], &[]);
    assert_eq!(cached.get("heavy"), names.get("heavy"));

    // A down server and an empty cache: one warning naming it, quickly.
    let empty = dir.join("empty-cache");
    let start = Instant::now();
    let (_, stderr) = culprit_report(
        &file,
        &[
            ("DEBUGINFOD_CACHE_PATH", empty.to_str().unwrap()),
            ("DEBUGINFOD_URLS", dead),
            ("DEBUGINFOD_TIMEOUT", "3"),
        ],
        &[],
    );
    assert!(start.elapsed() < Duration::from_secs(20));
    assert_eq!(stderr.matches("debuginfod: ").count(), 1, "{stderr}");
    assert!(stderr.contains("127.0.0.1:9"), "{stderr}");
}
