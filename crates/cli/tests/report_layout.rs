//! `culprit report`'s tables: one per event (sorted and cut by its event) or side by side
//! (`--group`), `--sort-event`, fitting the terminal width, colour, empty tables that say
//! why, refusing call graphs of files without call chains, and the JSON schemas.

use crate::common;

use std::path::{Path, PathBuf};

use serde_json::Value;

fn decode_fixture(name: &str) -> PathBuf {
    common::repo_root()
        .join("crates/decode/tests/fixtures")
        .join(name)
}

fn real(name: &str) -> PathBuf {
    decode_fixture("real-perf-data").join(name)
}

/// `culprit report -i FILE ARGS…` (must succeed), as text.
fn report(file: &Path, args: &[&str]) -> String {
    let out = common::run_ok(
        common::culprit()
            .arg("report")
            .arg("-i")
            .arg(file)
            .args(args)
            .env_remove("COLUMNS")
            .env_remove("NO_COLOR"),
    );
    String::from_utf8(out.stdout).expect("UTF-8 report")
}

fn report_json(file: &Path, args: &[&str]) -> Value {
    let mut all = vec!["--format", "json"];
    all.extend_from_slice(args);
    serde_json::from_str(&report(file, &all)).expect("report JSON")
}

/// The rows of the text table titled `# Event 'EVENT'…`: the lines after its column header
/// up to the next blank line.
fn table_rows<'a>(text: &'a str, event: &str) -> Vec<&'a str> {
    let title = format!("# Event '{event}'");
    let mut lines = text.lines().skip_while(|l| !l.starts_with(&title)).skip(2);
    let mut rows = Vec::new();
    for l in lines.by_ref() {
        if l.is_empty() || l.starts_with('#') {
            break;
        }
        rows.push(l);
    }
    rows
}

/// A `culprit record -e context-switches,cpu-clock` of the shares workload (heavy() has
/// ~75 % of the cpu-clock samples, none of the context switches, which are in the kernel).
fn context_switches_and_cpu_clock() -> PathBuf {
    let shares = common::workload("shares");
    let dir = common::scratch("report-layout-two-events");
    let file = dir.join("perf.data");
    let _lock = common::pmu_lock();
    common::run_ok(
        common::culprit()
            .args(["record", "-q", "-e", "context-switches,cpu-clock", "-o"])
            .arg(&file)
            .arg("--")
            .arg(&shares)
            .arg("20"),
    );
    file
}

#[test]
fn test_report_sorts_and_cuts_each_event_by_its_own_values() {
    let file = context_switches_and_cpu_clock();
    let all = report_json(&file, &["--no-children", "--sort", "sym"]);
    let rows = all["rows"].as_array().unwrap();
    let share = |r: &Value, e: &str| r["percent"][e].as_f64().unwrap_or(0.0);
    let hottest = rows
        .iter()
        .max_by(|a, b| share(a, "cpu-clock").total_cmp(&share(b, "cpu-clock")))
        .unwrap();
    let hot_sym = hottest["keys"]["sym"].as_str().unwrap();
    assert_eq!(hot_sym, "heavy", "{all}");
    // The default sort event: the first event with samples in the rows.
    let with_samples: Vec<&str> = all["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["samples"].as_u64() > Some(0))
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(all["sort_event"], with_samples[0], "{all}");
    // --sort-event cpu-clock: sorted by cpu-clock, cut by it.
    let by_clock = report_json(
        &file,
        &[
            "--no-children",
            "--sort",
            "sym",
            "--sort-event",
            "cpu-clock",
        ],
    );
    let shares: Vec<f64> = by_clock["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| share(r, "cpu-clock"))
        .collect();
    assert!(shares.windows(2).all(|w| w[0] >= w[1]), "{shares:?}");
    let top = report_json(&file, &["--no-children", "--sort", "sym", "--top", "1"]);
    let top_clock = report_json(
        &file,
        &[
            "--no-children",
            "--sort",
            "sym",
            "--top",
            "1",
            "--sort-event",
            "cpu-clock",
        ],
    );
    assert_eq!(top_clock["rows"][0]["keys"]["sym"], "heavy", "{top_clock}");
    assert_eq!(top_clock["sort_event"], "cpu-clock");
    // The text's default layout: one table per event, each cut by its own event, so that
    // the cpu-clock table keeps heavy() whatever the first event sorts first.
    let text = report(&file, &["--no-children", "--sort", "sym", "--top", "1"]);
    let clock = table_rows(&text, "cpu-clock");
    assert_eq!(clock.len(), 1, "{text}");
    assert!(clock[0].ends_with("[.] heavy"), "{text}");
    if with_samples[0] == "context-switches" {
        // The JSON's one row set is sorted by context-switches: heavy() is not its top row
        // (the defect the per-event tables fix), but it is the cpu-clock table's.
        assert_ne!(top["rows"][0]["keys"]["sym"], "heavy", "{top}");
        let switches = table_rows(&text, "context-switches");
        assert_eq!(switches.len(), 1, "{text}");
        assert!(!switches[0].contains("heavy"), "{text}");
    }
    // --group: one table, the events side by side with short names, sorted by the sort
    // event.
    let group = report(
        &file,
        &[
            "--no-children",
            "--sort",
            "sym",
            "--group",
            "--sort-event",
            "cpu-clock",
        ],
    );
    let header = group
        .lines()
        .find(|l| l.starts_with("#") && l.contains("Self[1]"))
        .unwrap_or_else(|| panic!("{group}"));
    assert!(
        header.contains("Self[2]") && header.contains("Symbol"),
        "{group}"
    );
    let first_row = group.lines().skip_while(|l| *l != header).nth(1).unwrap();
    assert!(first_row.ends_with("[.] heavy"), "{group}");
    // An event the report does not have.
    let out = common::culprit()
        .args(["report", "--sort-event", "nosuch", "-i"])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no event 'nosuch'"));
}

/// Asserts that every line of `text` fits `width` characters.
fn assert_fits(text: &str, width: usize, what: &str) {
    for l in text.lines() {
        assert!(
            l.chars().count() <= width,
            "{what}: a line of {} characters:\n{l}",
            l.chars().count()
        );
    }
}

#[test]
fn test_report_text_fits_width_80() {
    let files = [
        decode_fixture("two-events.data"),
        decode_fixture("ibs-fam19h_m11_zen4.data"),
        decode_fixture("cpu-clock-g.data"),
        real("google-perf_data_converter/perf.data.busy.1-3.8"),
        real("mstange-linux-perf-data/fibo.compressed2.pipe.data"),
    ];
    let (mut cases, mut wide) = (0, 0);
    for f in &files {
        for args in [
            &[][..],
            &["--sort", "dso,sym"][..],
            &["--sort", "ip", "--no-children"][..],
            &["--group"][..],
        ] {
            let what = format!("{} {args:?}", f.display());
            let text = report(f, &[args, &["--width", "80"]].concat());
            assert_fits(&text, 80, &what);
            // `--width 0` never cuts: most of these reports are wider than 80 then.
            let whole = report(f, &[args, &["--width", "0"]].concat());
            cases += 1;
            if whole.lines().any(|l| l.chars().count() > 80) {
                wide += 1;
            }
        }
    }
    assert!(
        wide * 4 >= cases * 3,
        "only {wide} of {cases} reports to fit"
    );
    // A call graph's lines fit too; --width N fits N.
    let g = decode_fixture("cpu-clock-g.data");
    assert_fits(
        &report(&g, &["--sort", "sym", "-g", "caller", "--width", "80"]),
        80,
        "-g caller",
    );
    assert_fits(&report(&g, &["--width", "60"]), 60, "--width 60");

    // Branch mode too.
    let b = real("google-perf_data_converter/perf.data.branch-4.14");
    assert_fits(&report(&b, &["--branch", "--width", "80"]), 80, "--branch");
}

#[test]
fn test_report_call_graphs_of_a_file_without_call_chains_are_refused() {
    let file = decode_fixture("cpu-clock-c.data");
    // --children is accepted, as perf does (self percentages), with a warning saying so.
    let out = common::culprit()
        .args(["report", "--children", "-i"])
        .arg(&file)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("--children")
            && err.contains("no call chains")
            && err.contains("record with -g"),
        "{err}"
    );
    for args in [&["-g", "caller"][..], &["-g", "callee"]] {
        let out = common::culprit()
            .arg("report")
            .args(args)
            .arg("-i")
            .arg(&file)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(&file.display().to_string()) && err.contains("record with -g"),
            "{args:?}: {err}"
        );
        assert!(out.stdout.is_empty(), "{args:?}");
    }
    // Without those flags the same file reports (self only), and -g none is fine.
    let text = report(&file, &["-g", "none"]);
    assert!(text.contains("self only"), "{text}");
}

#[test]
fn test_report_empty_tables_say_why() {
    let file = decode_fixture("cpu-clock-g.data");
    let text = report(&file, &["--top", "0"]);
    assert!(text.contains("# (no rows: --top 0)"), "{text}");
    let text = report(&file, &["--comm", "nosuch"]);
    let all = report_json(&file, &["--sort", "comm"]);
    let comms: Vec<&str> = all["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["keys"]["comm"].as_str().unwrap())
        .collect();
    let line = text
        .lines()
        .find(|l| l.starts_with("# (no rows: --comm nosuch matched none of the file's"))
        .unwrap_or_else(|| panic!("{text}"));
    let n = comms.len();
    assert!(line.contains(&format!("{n} command")), "{line} ({comms:?})");
    assert!(comms.iter().all(|c| line.contains(c)), "{line} ({comms:?})");
    let text = report(&file, &["--no-children", "--percent-limit", "101"]);
    assert!(
        text.contains("# (no rows: none of") && text.contains("--percent-limit 101"),
        "{text}"
    );
    let text = report(&file, &["--pid", "999999"]);
    assert!(
        text.contains("# (no rows: --pid 999999 matched no sample)"),
        "{text}"
    );
}

#[test]
fn test_report_colour_only_when_asked_or_on_a_terminal() {
    let file = decode_fixture("cpu-clock-g.data");
    let always = report(&file, &["--color", "always"]);
    assert!(always.contains("\x1b[1;31m"), "{always}");
    // Not a terminal: auto colours nothing, NO_COLOR or not; never never does.
    let out = common::run_ok(
        common::culprit()
            .args(["report", "--color", "auto", "-i"])
            .arg(&file)
            .env("NO_COLOR", "1"),
    );
    assert!(!out.stdout.contains(&0x1b));
    assert!(!report(&file, &[]).contains('\x1b'));
    assert!(!report(&file, &["--color", "never"]).contains('\x1b'));
    // -o FILE: the same text in the file.
    let dir = common::scratch("report-layout-output");
    let out_file = dir.join("report.txt");
    let printed = report(&file, &[]);
    let written = report(&file, &["-o", out_file.to_str().unwrap()]);
    assert!(written.is_empty());
    assert_eq!(std::fs::read_to_string(&out_file).unwrap(), printed);
}

#[test]
fn test_report_json_validates_against_its_schema() {
    let cases: Vec<(PathBuf, Vec<&str>)> = vec![
        (decode_fixture("cpu-clock-g.data"), vec![]),
        (
            decode_fixture("cpu-clock-g.data"),
            vec!["--sort", "sym", "-g", "callee"],
        ),
        (
            decode_fixture("cpu-clock-g.data"),
            vec!["--sort", "pid,tid,cpu,ip"],
        ),
        (
            decode_fixture("two-events.data"),
            vec!["--no-children", "--top", "3"],
        ),
        (
            decode_fixture("ibs-fam19h_m11_zen4.data"),
            vec!["--deskid", "--sort", "sym"],
        ),
        (decode_fixture("cpu-clock-g.data"), vec!["--comm", "nosuch"]),
        (
            real("google-perf_data_converter/perf.data.weight_struct"),
            vec!["--sort", "mem,sym"],
        ),
    ];
    for (file, args) in &cases {
        let mut all = vec!["--format", "json"];
        all.extend(args);
        let json = report(file, &all);
        let v: Value = serde_json::from_str(&json).unwrap();
        assert_eq!(v["schema"], 1, "{}", file.display());
        assert!(
            json.trim_start().starts_with("{\n  \"schema\": 1,"),
            "schema comes first"
        );
        common::validate_json_schema("report", &json);
    }
    let b = real("google-perf_data_converter/perf.data.branch-4.14");
    for args in [
        &[][..],
        &[
            "--sort",
            "pid,symbol_from,srcline_to,mispredict,in_tx,abort",
        ],
    ] {
        let mut all = vec!["--branch", "--format", "json"];
        all.extend(args);
        let json = report(&b, &all);
        common::validate_json_schema("report-branch", &json);
    }
}

/// Text into a pipe or an `-o` file is never cut (as perf): it equals `--width 0`, lines
/// wider than 80 columns and all; `--width 80` still cuts.
#[test]
fn test_report_text_into_a_pipe_or_file_is_not_cut() {
    let dir = common::scratch("report-layout-uncut");
    let mut wider = 0;
    for (i, f) in [
        decode_fixture("cpu-clock-g.data"),
        decode_fixture("two-events.data"),
        real("google-perf_data_converter/perf.data.busy.1-3.8"),
    ]
    .iter()
    .enumerate()
    {
        let whole = report(f, &["--sort", "dso,sym", "--width", "0"]);
        // COLUMNS is a terminal's setting: a pipe ignores it.
        let piped = common::run_ok(
            common::culprit()
                .args(["report", "--sort", "dso,sym", "-i"])
                .arg(f)
                .env("COLUMNS", "50"),
        );
        assert_eq!(String::from_utf8_lossy(&piped.stdout), whole, "{f:?}");
        let file = dir.join(format!("rep{i}.txt"));
        common::run_ok(
            common::culprit()
                .args(["report", "--sort", "dso,sym", "-o"])
                .arg(&file)
                .arg("-i")
                .arg(f),
        );
        assert_eq!(std::fs::read_to_string(&file).unwrap(), whole, "{f:?}");
        if whole.lines().any(|l| l.chars().count() > 80) {
            wider += 1;
            let cut = report(f, &["--sort", "dso,sym", "--width", "80"]);
            assert_fits(&cut, 80, "--width 80");
            assert_ne!(cut, whole);
        }
    }
    assert!(wider > 0, "no fixture has a line wider than 80 columns");
}

/// A caller without a symbol is grouped by its run-time address (as perf): the row shows
/// that address raw (`[unknown] 0x559fd368e172`, perf `0x0000559fd368e172`), never dressed
/// as a file offset (`shares+0x559fd368e172`).
#[test]
fn test_report_unresolved_callers_show_raw_addresses_as_perf() {
    if !common::require_perf("test_report_unresolved_callers_show_raw_addresses_as_perf") {
        return;
    }
    // A stripped binary's frames: no symbols even with the fixtures' build-id cache.
    let f = decode_fixture("compressed-g.data");
    // The file names the binary by its path where it was recorded, with no build id: a
    // checkout at that path here (a developer's, not a fresh machine's) names the frames.
    let recorded = "/work/main/target/workloads/shares";
    if std::path::Path::new(recorded).exists() {
        common::skip(
            "test_report_unresolved_callers_show_raw_addresses_as_perf",
            &format!("the fixture's binary exists here at its recorded path {recorded}"),
        );
        return;
    }
    let ours = report(
        &f,
        &[
            "--children",
            "--sort",
            "dso,sym",
            "--width",
            "0",
            "--unknown",
            "address",
        ],
    );
    let big = |hex: &str| u64::from_str_radix(hex, 16).is_ok_and(|a| a > u64::from(u32::MAX));
    let mut raw = std::collections::BTreeSet::new();
    for l in ours.lines() {
        if let Some((_, rest)) = l.split_once("[unknown] ") {
            let word = rest.split_whitespace().next().unwrap_or("");
            match word.split_once("+0x") {
                Some((_, off)) => assert!(!big(off), "a run-time address as an offset: {l}"),
                None => {
                    // User space (`[.]`): perf resolves this VM's kernel from /proc.
                    let user = l.contains("[.] [unknown] ");
                    if let Some(a) = word.strip_prefix("0x").filter(|a| user && big(a)) {
                        raw.insert(u64::from_str_radix(a, 16).unwrap());
                    }
                }
            }
        }
    }
    let out = common::perf()
        .args(["report", "--children", "--sort", "dso,sym", "--stdio", "-i"])
        .arg(&f)
        .output()
        .unwrap();
    let theirs: std::collections::BTreeSet<u64> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_once("[.] 0x"))
        .filter_map(|(_, a)| a.split_whitespace().next())
        .filter(|a| big(a))
        .map(|a| u64::from_str_radix(a, 16).unwrap())
        .collect();
    assert!(!theirs.is_empty(), "perf shows no raw caller address");
    assert_eq!(raw, theirs, "\n{ours}");
}

/// Runs `culprit ARGS` on a terminal (util-linux `script` gives it a pseudo-terminal) with
/// `CULPRIT_PAGER` saving what it is given into `paged`; returns what reached the terminal.
fn on_a_terminal(args: &str, paged: &Path, extra_env: &[(&str, &str)]) -> String {
    let cmd = format!("{} {args}", env!("CARGO_BIN_EXE_culprit"));
    let c = common::culprit();
    let mut script = std::process::Command::new("script");
    script
        .args(["-qec", &cmd, "/dev/null"])
        .envs(c.get_envs().filter_map(|(k, v)| Some((k, v?))))
        .env("CULPRIT_PAGER", format!("cat > {}", paged.display()))
        .envs(extra_env.iter().copied())
        .stdin(std::process::Stdio::null());
    let out = script.output().expect("run util-linux script");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// On a terminal, text goes through the pager as perf's does (`$CULPRIT_PAGER`, `$PAGER`,
/// else `less`); `--no-pager`, `-o FILE`, JSON and a pager of `cat` write directly.
#[test]
fn test_text_on_a_terminal_goes_through_the_pager() {
    if std::process::Command::new("script")
        .arg("--version")
        .output()
        .is_err()
    {
        common::skip(
            "test_text_on_a_terminal_goes_through_the_pager",
            "util-linux `script` is not installed",
        );
        return;
    }
    let dir = common::scratch("pager");
    let file = decode_fixture("cpu-clock-g.data");
    let report = format!("report -i {}", file.display());
    let paged = dir.join("paged");
    let shown = on_a_terminal(&report, &paged, &[]);
    let text = std::fs::read_to_string(&paged).expect("the pager ran");
    assert!(text.contains("# Event 'cpu-clock'"), "{text}");
    assert!(
        !shown.contains("# Event 'cpu-clock'"),
        "not also on the terminal: {shown}"
    );

    for (args, env) in [
        (format!("{report} --no-pager"), vec![]),
        (format!("{report} --format json"), vec![]),
        (report.clone(), vec![("CULPRIT_PAGER", "cat")]),
    ] {
        let paged = dir.join("not-paged");
        let _ = std::fs::remove_file(&paged);
        let shown = on_a_terminal(&args, &paged, &env);
        assert!(!paged.exists(), "{args}: paged");
        assert!(
            shown.contains("# Event 'cpu-clock'") || shown.contains("\"schema\""),
            "{args}: {shown}"
        );
    }
    let out = dir.join("report.txt");
    let paged = dir.join("not-paged-o");
    on_a_terminal(&format!("{report} -o {}", out.display()), &paged, &[]);
    assert!(!paged.exists());
    assert!(std::fs::read_to_string(&out)
        .unwrap()
        .contains("# Event 'cpu-clock'"));
}

/// The `[.] name` rows of `perf report --stdio --sort sym --no-children -g none` ARGS:
/// (symbol, self percentage).
fn perf_rows(file: &Path, args: &[&str]) -> Vec<(String, f64)> {
    let out = common::run_ok(
        common::perf()
            .args([
                "report",
                "--stdio",
                "--sort",
                "sym",
                "--no-children",
                "-g",
                "none",
                "-i",
            ])
            .arg(file)
            .args(args),
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.starts_with('#') && l.contains('%'))
        .filter_map(|l| {
            let (pct, sym) = l.trim().split_once('%')?;
            let sym = sym.trim().split_once(' ')?.1.trim().to_string();
            Some((sym, pct.trim().parse().ok()?))
        })
        .collect()
}

#[test]
fn test_report_time_window_equals_perf_report_time() {
    if !common::require_perf("test_report_time_window_equals_perf_report_time") {
        return;
    }
    let dir = common::scratch("report-time-window");
    let file = dir.join("perf.data");
    common::run_ok(
        common::culprit()
            .args(["record", "-q", "-e", "cpu-clock", "-F", "4000", "-o"])
            .arg(&file)
            .arg("--")
            .arg(common::workload("shares"))
            .arg("40"),
    );
    // The samples' times (script prints them as perf does): the middle third as a window.
    let out = common::run_ok(
        common::culprit()
            .args(["script", "-F", "time", "-i"])
            .arg(&file),
    );
    let times: Vec<f64> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.trim().trim_end_matches(':').parse().ok())
        .collect();
    assert!(times.len() > 20, "{} sample times", times.len());
    let (first, last) = (times[0], times[times.len() - 1]);
    let span = last - first;
    let window = format!("{:.6},{:.6}", first + span / 3.0, first + 2.0 * span / 3.0);
    let ours = report_json(
        &file,
        &[
            "--sort",
            "sym",
            "--no-children",
            "--time",
            &window,
            "-e",
            "cpu-clock",
        ],
    );
    let whole = report_json(
        &file,
        &["--sort", "sym", "--no-children", "-e", "cpu-clock"],
    );
    let samples = |r: &Value| r["events"][0]["samples"].as_u64().unwrap();
    assert!(
        samples(&ours) > 0 && samples(&ours) < samples(&whole),
        "the window {window} keeps {} of {} samples",
        samples(&ours),
        samples(&whole)
    );
    let theirs = perf_rows(&file, &["--time", &window]);
    assert!(!theirs.is_empty());
    for (sym, pct) in &theirs {
        let row = ours["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["keys"]["sym"].as_str() == Some(sym))
            .unwrap_or_else(|| panic!("{sym} ({pct}%) is in perf's window, not ours: {ours}"));
        let mine = row["percent"]["cpu-clock"].as_f64().unwrap();
        assert!(
            (mine - pct).abs() <= 0.006,
            "{sym}: ours {mine}%, perf {pct}%"
        );
    }
    // A window is START,STOP.
    let o = common::culprit()
        .args(["report", "--time", "12", "-i"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("START,STOP"));
}
