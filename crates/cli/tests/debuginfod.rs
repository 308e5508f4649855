//! debuginfod: a stripped workload's names come from a real `debuginfod` server (Debian's
//! package, started here on a free loopback port, serving the workload's debug file), equal
//! to perf's on the same recording with the unstripped file (`--symfs`); a second report
//! needs no server (the cache); `--no-debuginfod` and a server that is down leave one
//! warning and no names, quickly.

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A server process (`debuginfod -F DIR`, `openssl s_server`) and its URL, killed on drop.
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
    let home = file.with_file_name("home");
    let _ = std::fs::remove_dir_all(&home);
    std::fs::create_dir_all(&home).unwrap();
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
    let tools =
        common::runs("debuginfod", &["--version"]) && common::runs("objcopy", &["--version"]);
    if !common::need(
        test,
        tools,
        "debuginfod or objcopy missing (apt-get install debuginfod)",
    ) {
        return;
    }
    let dir = common::scratch("debuginfod");
    let Stripped {
        full,
        stripped,
        debug,
        build_id,
        file,
    } = stripped_shares(&dir, "debuginfod-rec");
    let served = debug.parent().unwrap().to_path_buf();
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
    assert_shares_equal_perf(&dir, &full, &stripped, &file, &names);
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

/// A stripped copy of the `shares` workload, its debug file and a recording of it.
struct Stripped {
    /// The unstripped program.
    full: PathBuf,
    /// The stripped program (what was recorded).
    stripped: PathBuf,
    /// Its debug file (`objcopy --only-keep-debug`), alone in its directory.
    debug: PathBuf,
    /// Its build-id, in hex.
    build_id: String,
    /// perf's cpu-clock recording of the stripped program.
    file: PathBuf,
}

/// Builds [`Stripped`] in `dir`, the recording in perf_record's `record_dir`.
fn stripped_shares(dir: &Path, record_dir: &str) -> Stripped {
    let (full, stripped) = (dir.join("full/shares"), dir.join("bin/shares"));
    let debug = dir.join("served/shares.debug");
    for d in [&full, &stripped, &debug] {
        std::fs::create_dir_all(d.parent().unwrap()).unwrap();
    }
    std::fs::copy(common::workload("shares"), &full).unwrap();
    common::run_ok(
        Command::new("objcopy")
            .arg("--only-keep-debug")
            .arg(&full)
            .arg(&debug),
    );
    common::run_ok(Command::new("strip").arg("-o").arg(&stripped).arg(&full));
    let build_id = {
        let data = std::fs::read(&stripped).unwrap();
        let obj = object::File::parse(&*data).unwrap();
        let id = object::Object::build_id(&obj).unwrap().unwrap();
        id.iter().map(|b| format!("{b:02x}")).collect::<String>()
    };
    let file = common::perf_record(
        record_dir,
        &["-e", "cpu-clock"],
        &[stripped.to_str().unwrap(), "10"],
    );
    Stripped {
        full,
        stripped,
        debug,
        build_id,
        file,
    }
}

/// culprit's `names` (shares of `heavy` and `light`) equal perf's on `file` with the
/// unstripped program `full` in place of `stripped` (`--symfs`), each within 0.1 point.
fn assert_shares_equal_perf(
    dir: &Path,
    full: &Path,
    stripped: &Path,
    file: &Path,
    names: &BTreeMap<String, f64>,
) {
    let symfs = dir.join("symfs");
    let at = symfs.join(stripped.strip_prefix("/").unwrap());
    std::fs::create_dir_all(at.parent().unwrap()).unwrap();
    std::fs::copy(full, &at).unwrap();
    let perf = perf_shares(file, &symfs);
    assert_eq!(perf.len(), 2, "perf names heavy and light: {perf:?}");
    for (name, share) in &perf {
        let ours = names.get(name).copied().unwrap_or(0.0);
        assert!(
            (share - ours).abs() <= 0.1,
            "{name}: perf {share}%, culprit {ours}%"
        );
    }
    assert!(names["heavy"] > 2.0 * names["light"], "{names:?}");
}

/// A test CA (`ca.pem`) and a loopback server certificate it signed (`srv.pem`, `srv.key`,
/// for IP 127.0.0.1), in `dir`.
fn make_certificates(dir: &Path) {
    let script = "openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem \
          -days 2 -subj /CN=culprit-test-ca && \
        openssl req -newkey rsa:2048 -nodes -keyout srv.key -out srv.csr -subj /CN=127.0.0.1 && \
        printf 'subjectAltName=IP:127.0.0.1\\nbasicConstraints=CA:FALSE\\n' > srv.ext && \
        openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out srv.pem \
          -days 2 -extfile srv.ext";
    common::run_ok(Command::new("sh").args(["-c", script]).current_dir(dir));
}

/// Serves `www` over TLS on a free loopback port with `dir`'s server certificate:
/// `openssl s_server -WWW`, a real TLS server of files under its directory by URL path.
fn start_tls_server(dir: &Path, www: &Path) -> Server {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new("openssl")
        .args(["s_server", "-WWW", "-quiet", "-accept"])
        .arg(format!("127.0.0.1:{port}"))
        .arg("-cert")
        .arg(dir.join("srv.pem"))
        .arg("-key")
        .arg(dir.join("srv.key"))
        .current_dir(www)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start openssl s_server");
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "openssl s_server never listened");
        std::thread::sleep(Duration::from_millis(100));
    }
    Server {
        child,
        url: format!("https://127.0.0.1:{port}"),
    }
}

/// An `https://` server (a real TLS server, OpenSSL's, serving debuginfod's URL layout)
/// names the stripped workload as perf names it from the unstripped file, when its
/// certificate verifies against `$SSL_CERT_FILE`; against the system's roots it does not
/// verify: one warning, no names.
#[test]
fn test_debuginfod_over_https_verifies_the_server_certificate() {
    let test = "test_debuginfod_over_https_verifies_the_server_certificate";
    if !common::require_perf(test) {
        return;
    }
    let tools = common::runs("openssl", &["version"]) && common::runs("objcopy", &["--version"]);
    if !common::need(test, tools, "openssl or objcopy missing") {
        return;
    }
    let dir = common::scratch("debuginfod-tls");
    let s = stripped_shares(&dir, "debuginfod-tls-rec");
    make_certificates(&dir);
    let www = dir.join("www");
    let entry = www.join("buildid").join(&s.build_id);
    std::fs::create_dir_all(&entry).unwrap();
    std::fs::copy(&s.debug, entry.join("debuginfo")).unwrap();
    let server = start_tls_server(&dir, &www);
    let urls = ("DEBUGINFOD_URLS", server.url.as_str());
    let ca = dir.join("ca.pem");

    // The system's roots do not know the test CA: the server fails verification.
    let untrusted = dir.join("cache-untrusted");
    let (none, stderr) = culprit_report(
        &s.file,
        &[urls, ("DEBUGINFOD_CACHE_PATH", untrusted.to_str().unwrap())],
        &[],
    );
    assert!(!none.contains_key("heavy"), "{none:?}");
    assert!(
        stderr.contains(&server.url) && stderr.to_lowercase().contains("certificate"),
        "{stderr}"
    );

    let cache = dir.join("cache");
    let (names, _) = culprit_report(
        &s.file,
        &[
            urls,
            ("DEBUGINFOD_CACHE_PATH", cache.to_str().unwrap()),
            ("SSL_CERT_FILE", ca.to_str().unwrap()),
        ],
        &[],
    );
    assert_shares_equal_perf(&dir, &s.full, &s.stripped, &s.file, &names);
    assert!(cache.join(&s.build_id).join("debuginfo").is_file());
}

/// `culprit report --sort dso,sym` shares of libc's rows (by name), run in a private mount
/// namespace whose `/usr/lib/debug` is an empty tmpfs: this machine's libc6-dbg is hidden,
/// as on a machine without debug packages.
fn libc_rows_without_debug_packages(file: &Path, env: &[(&str, &str)]) -> BTreeMap<String, f64> {
    let mut c = Command::new("unshare");
    c.args(["-m", "--propagation", "private", "sh", "-c"])
        .arg("mount -t tmpfs tmpfs /usr/lib/debug && exec \"$@\"")
        .arg("sh")
        .arg(env!("CARGO_BIN_EXE_culprit"))
        .args([
            "report",
            "--unknown",
            "address",
            "--format",
            "json",
            "--sort",
            "dso,sym",
            "-i",
        ])
        .arg(file);
    c.env_remove("DEBUGINFOD_URLS");
    common::in_test_home(&mut c);
    for (k, v) in env {
        c.env(k, v);
    }
    let out = common::run_ok(&mut c);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut rows = BTreeMap::new();
    for row in json["rows"].as_array().unwrap() {
        if row["keys"]["dso"].as_str() != Some("libc.so.6") {
            continue;
        }
        let name = row["keys"]["sym"].as_str().unwrap_or("").to_string();
        *rows.entry(name).or_insert(0.0) += row["percent"]["cpu-clock"].as_f64().unwrap();
    }
    rows
}

/// Debian's stripped libc, with its debug package hidden: a debuginfod server holding libc's
/// debug file names the hot libc functions as perf names them with the package installed
/// (every libc row within 0.1 point); without the server they stay unnamed.
#[test]
fn test_debuginfod_names_stripped_debian_libc_as_perf_with_its_debug_package() {
    let test = "test_debuginfod_names_stripped_debian_libc_as_perf_with_its_debug_package";
    if !common::require_perf(test) {
        return;
    }
    let tools =
        common::runs("debuginfod", &["--version"]) && common::runs("unshare", &["--version"]);
    if !common::need(test, tools, "debuginfod or unshare missing") {
        return;
    }
    // Hiding /usr/lib/debug takes a mount namespace: root (CI runs as root).
    let probe = Command::new("unshare")
        .args(["-m", "--propagation", "private", "true"])
        .status()
        .is_ok_and(|s| s.success());
    if !common::need(test, probe, "no private mount namespace (needs root)") {
        return;
    }
    let dir = common::scratch("debuginfod-libc");
    let bin = common::workload("libc_heavy");
    let file = common::perf_record(
        "debuginfod-libc-rec",
        &["-e", "cpu-clock"],
        &[bin.to_str().unwrap()],
    );
    // libc's build-id and its debug file from the debug package (libc6-dbg: .ci/run installs it).
    let profile = culprit_decode::Reader::open(&file).collect().unwrap();
    let libc = profile
        .dsos
        .iter()
        .find(|d| d.short_name == "libc.so.6")
        .expect("the recording maps libc");
    let id: String = libc
        .build_id
        .as_deref()
        .expect("libc's build-id is recorded")
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let debug = Path::new("/usr/lib/debug/.build-id")
        .join(&id[..2])
        .join(format!("{}.debug", &id[2..]));
    if !common::need(test, debug.is_file(), "libc6-dbg is not installed") {
        return;
    }
    let served = dir.join("served");
    std::fs::create_dir_all(&served).unwrap();
    std::fs::copy(&debug, served.join("libc.debug")).unwrap();

    // perf, with the debug package where it is installed.
    let out = common::run_ok(
        common::perf()
            .args(["report", "--stdio", "--sort", "dso,sym", "-i"])
            .arg(&file),
    );
    let mut perf = BTreeMap::new();
    for l in String::from_utf8_lossy(&out.stdout).lines() {
        let mut f = l.split_whitespace();
        let (Some(pct), Some("libc.so.6"), Some(_mode)) = (f.next(), f.next(), f.next()) else {
            continue;
        };
        let name = f.collect::<Vec<_>>().join(" ");
        let pct: f64 = pct.trim_end_matches('%').parse().unwrap();
        *perf.entry(name).or_insert(0.0) += pct;
    }
    let hot: Vec<&String> = perf
        .iter()
        .filter(|(n, &p)| p >= 1.0 && !n.starts_with("0x"))
        .map(|(n, _)| n)
        .collect();
    assert!(!hot.is_empty(), "perf names no hot libc function: {perf:?}");

    let cache = dir.join("cache");
    let cache_env = ("DEBUGINFOD_CACHE_PATH", cache.to_str().unwrap());
    let without = libc_rows_without_debug_packages(&file, &[cache_env]);
    for name in &hot {
        assert!(
            !without.contains_key(*name),
            "{name} named without its debug file: {without:?}"
        );
    }
    let with = {
        let server = start_server(&served, &dir.join("db.sqlite"), &id);
        libc_rows_without_debug_packages(&file, &[cache_env, ("DEBUGINFOD_URLS", &server.url)])
    };
    for (name, share) in &perf {
        let ours = with.get(name).copied().unwrap_or(0.0);
        assert!(
            (share - ours).abs() <= 0.1,
            "{name}: perf {share}%, culprit {ours}%\n{with:?}"
        );
    }
    assert!(cache.join(&id).join("debuginfo").is_file());
}
