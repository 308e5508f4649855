//! `culprit flamegraph`: the SVG parses as XML (roxmltree, not the writer's own library);
//! its frames equal those of perf script | inferno-collapse-perf --all | inferno-flamegraph;
//! every frame's details (`name (N ns, P%)`) equal the folded stacks it was drawn from
//! (`culprit export --format folded`, itself checked against inferno-collapse-perf in
//! export.rs); names holding markup are text, never markup; colours follow the code's
//! mapping; `--inverted` draws an icicle; the differential graph (`--diff`, `diff
//! --flamegraph`) colours frames by their change of share, as `culprit diff` measures it.

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// `<script>alert(1)</script>` as folded stacks name it: stackcollapse-perf (and so culprit's
/// folded export) cuts a function's name at its parameter list.
const SCRIPT: &str = "<script>alert";
const SCRIPT_SYM: &str = "<script>alert(1)</script>";
const AMP: &str = "a&b<c>";
const GONE: &str = "gone'&";
const FRESH: &str = "fresh<&>";

/// One drawn frame: its details and its rectangle.
#[derive(Debug, Clone)]
struct Frame {
    name: String,
    count: u64,
    unit: String,
    percent: f64,
    /// Differential graphs: the change of share, in points.
    delta: Option<f64>,
    y: f64,
    fill: (u8, u8, u8),
}

/// Parses `name (1,234 ns, 12.34%)` or `name (1,234 ns, 12.34%; +1.23%)`.
fn parse_title(title: &str) -> Option<(String, u64, String, f64, Option<f64>)> {
    let body = title.strip_suffix(')')?;
    let (name, details) = body.rsplit_once(" (")?;
    let (main, delta) = match details.split_once("; ") {
        Some((m, d)) => (m, Some(d.trim_end_matches('%').parse().ok()?)),
        None => (details, None),
    };
    let (count, percent) = main.split_once(", ")?;
    let (number, unit) = count.split_once(' ')?;
    let count = number.replace(',', "").parse().ok()?;
    let percent = percent.trim_end_matches('%').parse().ok()?;
    Some((name.to_string(), count, unit.to_string(), percent, delta))
}

fn parse_fill(fill: &str) -> (u8, u8, u8) {
    let inner = fill
        .strip_prefix("rgb(")
        .and_then(|f| f.strip_suffix(')'))
        .unwrap_or_else(|| panic!("fill {fill:?}"));
    let v: Vec<u8> = inner
        .split(',')
        .map(|c| c.trim().parse().unwrap())
        .collect();
    (v[0], v[1], v[2])
}

/// The SVG as XML (it has inferno's DOCTYPE: SVG 1.1's DTD, never fetched).
fn parse(svg: &str) -> roxmltree::Document<'_> {
    let opts = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..roxmltree::ParsingOptions::default()
    };
    roxmltree::Document::parse_with_options(svg, opts).expect("the SVG is well-formed XML")
}

/// The frames of an SVG, after checking it is well-formed XML.
fn frames(svg: &str) -> Vec<Frame> {
    let doc = parse(svg);
    assert_eq!(doc.root_element().tag_name().name(), "svg");
    let mut out = Vec::new();
    for g in doc.descendants().filter(|n| n.has_tag_name("g")) {
        let title = g.children().find(|c| c.has_tag_name("title"));
        let rect = g.children().find(|c| c.has_tag_name("rect"));
        let (Some(title), Some(rect)) = (title, rect) else {
            continue;
        };
        let text = title.text().unwrap_or_default();
        let (name, count, unit, percent, delta) =
            parse_title(text).unwrap_or_else(|| panic!("frame title {text:?}"));
        out.push(Frame {
            name,
            count,
            unit,
            percent,
            delta,
            y: rect.attribute("y").unwrap().parse().unwrap(),
            fill: parse_fill(rect.attribute("fill").unwrap()),
        });
    }
    assert!(!out.is_empty(), "no frames in the SVG");
    out
}

/// Records markup_names with call chains and `args` into DIR/NAME.
fn record(dir: &Path, name: &str, args: &[&str]) -> PathBuf {
    let out = dir.join(name);
    common::run_ok(
        common::culprit()
            .args(["record", "-q", "-g", "-e", "cpu-clock", "-F", "4000", "-o"])
            .arg(&out)
            .arg("--")
            .arg(common::workload("markup_names"))
            .args(args),
    );
    out
}

/// Two recordings with call chains: `3 1 1 0` (baseline) and `1 3 0 1`.
fn recordings() -> (PathBuf, PathBuf) {
    static FILES: std::sync::OnceLock<(PathBuf, PathBuf)> = std::sync::OnceLock::new();
    FILES
        .get_or_init(|| {
            let dir = common::scratch("flamegraph");
            (
                record(&dir, "a.data", &["3", "1", "1", "0"]),
                record(&dir, "b.data", &["1", "3", "0", "1"]),
            )
        })
        .clone()
}

fn flamegraph(args: &[&str]) -> String {
    let out = common::run_ok(
        common::culprit()
            .arg("flamegraph")
            .args(args)
            .args(["-o", "-"]),
    );
    String::from_utf8(out.stdout).expect("the SVG is UTF-8")
}

/// Each node of the folded stacks' prefix tree: (depth, frame name without its `_[k]`/`_[j]`
/// annotation) -> weights of the nodes with that name at that depth.
fn folded_tree(folded: &str) -> (BTreeMap<(usize, String), Vec<u64>>, u64) {
    let mut nodes: BTreeMap<String, u64> = BTreeMap::new();
    let mut total = 0;
    for line in folded.lines() {
        let (stack, weight) = line.rsplit_once(' ').unwrap();
        let weight: u64 = weight.parse().unwrap();
        total += weight;
        let mut prefix = String::new();
        for (depth, frame) in stack.split(';').enumerate() {
            if depth > 0 {
                prefix.push(';');
            }
            prefix.push_str(frame);
            *nodes.entry(format!("{depth}\u{1}{prefix}")).or_default() += weight;
        }
    }
    let mut by_name: BTreeMap<(usize, String), Vec<u64>> = BTreeMap::new();
    for (key, weight) in nodes {
        let (depth, path) = key.split_once('\u{1}').unwrap();
        let frame = path.rsplit(';').next().unwrap();
        let name = frame
            .strip_suffix("_[k]")
            .or_else(|| frame.strip_suffix("_[j]"))
            .unwrap_or(frame);
        by_name
            .entry((depth.parse().unwrap(), name.to_string()))
            .or_default()
            .push(weight);
    }
    (by_name, total)
}

#[test]
fn test_flamegraph_frames_equal_the_folded_stacks_and_names_stay_text() {
    let (a, _) = recordings();
    let a_str = a.to_str().unwrap();
    let svg = flamegraph(&["-i", a_str]);
    let folded = common::run_ok(
        common::culprit()
            .args([
                "export",
                "--format",
                "folded",
                "--kernel",
                "--jit",
                "--summary",
                "none",
                "-i",
            ])
            .arg(&a),
    );
    let (tree, total) = folded_tree(&String::from_utf8(folded.stdout).unwrap());
    let frames = frames(&svg);
    let root = frames
        .iter()
        .find(|f| f.name == "all")
        .expect("the root frame");
    assert_eq!(
        root.count, total,
        "the root frame holds every sample's period"
    );
    assert_eq!(root.unit, "ns", "cpu-clock periods are nanoseconds");
    // The root is at the bottom of a flame graph: the biggest y.
    assert!(frames.iter().all(|f| f.y <= root.y));
    // Depth of a frame: rows of 16 pixels up from the root.
    let height = 16.0;
    let mut drawn: BTreeMap<(usize, String), Vec<u64>> = BTreeMap::new();
    for f in frames.iter().filter(|f| f.name != "all") {
        let depth = ((root.y - f.y) / height).round() as usize - 1;
        let pct = 100.0 * f.count as f64 / total as f64;
        assert!((f.percent - pct).abs() < 0.006, "{f:?}: {pct}");
        drawn
            .entry((depth, f.name.clone()))
            .or_default()
            .push(f.count);
    }
    // Every frame drawn is a node of the folded stacks, with its weight; every node wider
    // than inferno's 0.1% minimum is drawn.
    for ((depth, name), counts) in &drawn {
        let want = tree
            .get(&(*depth, name.clone()))
            .unwrap_or_else(|| panic!("drawn frame {name} at depth {depth} is no folded node"));
        for c in counts {
            assert!(
                want.contains(c),
                "{name} at depth {depth}: {c} not in {want:?}"
            );
        }
    }
    for ((depth, name), weights) in &tree {
        for w in weights.iter().filter(|&&w| w * 1000 > total * 2) {
            assert!(
                drawn
                    .get(&(*depth, name.clone()))
                    .is_some_and(|d| d.contains(w)),
                "folded node {name} at depth {depth} ({w}) is not drawn"
            );
        }
    }
    // The workload's functions, with their shares (3:1:1 of the work).
    let share = |name: &str| -> f64 {
        frames
            .iter()
            .filter(|f| f.name == name)
            .map(|f| f.percent)
            .sum()
    };
    assert!(share(SCRIPT) > 40.0, "{}", share(SCRIPT));
    assert!(share(AMP) > 10.0 && share(GONE) > 10.0);
    assert!(share(SCRIPT) > 2.0 * share(AMP));
    assert_eq!(share(FRESH), 0.0);
    // Names are text: escaped in the file, whole once parsed; the only script element is
    // inferno's own.
    assert!(
        !svg.contains("<script>alert"),
        "a function name became markup"
    );
    assert!(svg.contains("&lt;script&gt;alert ("));
    assert!(svg.contains("a&amp;b&lt;c&gt;"));
    let doc = parse(&svg);
    assert_eq!(
        doc.descendants()
            .filter(|n| n.has_tag_name("script"))
            .count(),
        1
    );
    // The subtitle names the file and the event; the default title.
    assert!(doc.descendants().any(|n| n.text() == Some("Flame Graph")));
    let subtitle = format!("{a_str}: event 'cpu-clock'");
    assert!(
        doc.descendants()
            .any(|n| n.attribute("id") == Some("subtitle") && n.text() == Some(&subtitle)),
        "no subtitle {subtitle:?}"
    );
}

#[test]
fn test_flamegraph_colours_by_mapping_and_other_options() {
    let (a, _) = recordings();
    let a_str = a.to_str().unwrap();
    let svg = flamegraph(&["-i", a_str]);
    let frames = frames(&svg);
    // The program's functions are red to yellow (FlameGraph's "hot").
    for f in frames
        .iter()
        .filter(|f| [SCRIPT, AMP, GONE, "main"].contains(&f.name.as_str()))
    {
        let (r, _, b) = f.fill;
        assert!(r >= 205 && b == 55, "{f:?} is not in the program's colours");
    }
    // Every other mapping's frames are not: kernel frames orange, libraries their hue.
    let folded = common::run_ok(
        common::culprit()
            .args([
                "export",
                "--format",
                "folded",
                "--kernel",
                "--summary",
                "none",
                "-i",
            ])
            .arg(&a),
    );
    let folded = String::from_utf8(folded.stdout).unwrap();
    let kernel: Vec<&str> = folded
        .split([';', ' ', '\n'])
        .filter_map(|f| f.strip_suffix("_[k]"))
        .collect();
    for f in frames.iter().filter(|f| kernel.contains(&f.name.as_str())) {
        let (r, g, b) = f.fill;
        assert!(
            r >= 190 && (90..=155).contains(&g) && b == 0,
            "kernel {f:?}"
        );
    }
    let libc = frames
        .iter()
        .filter(|f| f.name.starts_with("__libc_start"))
        .collect::<Vec<_>>();
    assert!(!libc.is_empty(), "no libc frame under main:\n{folded}");
    for f in libc {
        assert!(
            !(f.fill.0 >= 205 && f.fill.2 == 55),
            "libc drawn as the program: {f:?}"
        );
    }
    // The same input gives the same SVG (colours follow names, not chance).
    assert_eq!(svg, flamegraph(&["-i", a_str]));

    // --inverted: an icicle, the root at the top.
    let icicle = frames_of(&["-i", a_str, "--inverted"]);
    let root = icicle.iter().find(|f| f.name == "all").unwrap();
    assert!(icicle.iter().all(|f| f.y >= root.y));
    // --colors takes inferno's palettes; --title; --count-samples weighs by samples.
    let hot = flamegraph(&["-i", a_str, "--colors", "hot", "--title", "T<&>"]);
    assert_ne!(hot, svg);
    assert!(hot.contains("T&lt;&amp;&gt;"));
    let counted = frames_of(&["-i", a_str, "--count-samples"]);
    let root = counted.iter().find(|f| f.name == "all").unwrap();
    assert_eq!(root.unit, "samples");
    assert!(root.count > 500 && root.count < 100_000, "{root:?}");
    // Bad arguments: exit 2 with a message.
    for args in [vec!["--colors", "nosuch"], vec!["-e", "cycles"]] {
        let out = common::culprit()
            .args(["flamegraph", "-o", "-", "-i", a_str])
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(!out.stderr.is_empty(), "{args:?}");
    }
}

fn frames_of(args: &[&str]) -> Vec<Frame> {
    frames(&flamegraph(args))
}

#[test]
fn test_differential_flamegraph_colours_changes_like_diff() {
    let (a, b) = recordings();
    let (a_str, b_str) = (a.to_str().unwrap(), b.to_str().unwrap());
    let svg = flamegraph(&["-i", a_str, "--diff", b_str]);
    let frames = frames(&svg);
    assert!(svg.contains("Differential Flame Graph"));
    // The other profile's stacks are drawn; a function only in the baseline is not.
    assert!(!frames.iter().any(|f| f.name == GONE));
    let frame = |name: &str| {
        frames
            .iter()
            .find(|f| f.name == name)
            .unwrap_or_else(|| panic!("no frame {name}"))
            .clone()
    };
    // Shares by construction: the first function fell from ~60% to ~20% (blue), the second
    // rose from ~20% to ~60% (red), the new one is red.
    let (script, amp, fresh) = (frame(SCRIPT), frame(AMP), frame(FRESH));
    assert!(script.delta.unwrap() < -20.0, "{script:?}");
    assert_eq!(script.fill.2, 255, "a shrunk frame is blue: {script:?}");
    assert!(amp.delta.unwrap() > 20.0, "{amp:?}");
    assert_eq!(amp.fill.0, 255, "a grown frame is red: {amp:?}");
    assert!(
        fresh.delta.unwrap() > 10.0 && fresh.fill.0 == 255,
        "{fresh:?}"
    );
    // The deltas are culprit diff's (change of share in points; the frames have no callees
    // of their own but the kernel's, so their totals are their self shares).
    let diff = common::run_ok(
        common::culprit()
            .args(["diff", "--sort", "sym", "--format", "json"])
            .arg(&a)
            .arg(&b),
    );
    let diff: serde_json::Value = serde_json::from_slice(&diff.stdout).unwrap();
    let delta_of = |sym: &str| -> f64 {
        diff["events"][0]["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["keys"]["sym"] == sym)
            .and_then(|r| r["delta"].as_f64())
            .unwrap_or_else(|| panic!("no diff row for {sym}"))
    };
    for (f, sym) in [(&script, SCRIPT_SYM), (&amp, AMP), (&fresh, FRESH)] {
        let want = delta_of(sym);
        assert!(
            (f.delta.unwrap() - want).abs() < 1.0,
            "{}: graph {:?} vs diff {want}",
            f.name,
            f.delta
        );
    }
    // `culprit diff --flamegraph` draws the same graph.
    let dir = common::scratch("flamegraph-diff");
    let out = dir.join("d.svg");
    common::run_ok(
        common::culprit()
            .arg("diff")
            .arg(&a)
            .arg(&b)
            .arg("--flamegraph")
            .arg(&out),
    );
    assert_eq!(std::fs::read_to_string(&out).unwrap(), svg);
}

#[test]
fn test_flamegraph_draws_the_frames_of_perf_script_inferno_pipeline() {
    let test = "test_flamegraph_draws_the_frames_of_perf_script_inferno_pipeline";
    if !common::require_perf(test) {
        return;
    }
    let (a, _) = recordings();
    // The pipeline users run, perf script | inferno-collapse-perf --all | inferno-flamegraph,
    // with inferno's tools as a library (the binaries' own code).
    use inferno::collapse::Collapse;
    let script = common::run_ok(common::perf().arg("script").arg("-i").arg(&a));
    let mut collapse = inferno::collapse::perf::Options::default();
    collapse.annotate_kernel = true;
    collapse.annotate_jit = true;
    let mut folded = Vec::new();
    inferno::collapse::perf::Folder::from(collapse)
        .collapse(std::io::Cursor::new(script.stdout), &mut folded)
        .expect("inferno collapses perf script's output");
    let folded = String::from_utf8(folded).unwrap();
    let mut theirs = Vec::new();
    inferno::flamegraph::from_lines(
        &mut inferno::flamegraph::Options::default(),
        folded.lines(),
        &mut theirs,
    )
    .expect("inferno draws the folded stacks");
    let theirs = String::from_utf8(theirs).unwrap();
    let mine = flamegraph(&["-i", a.to_str().unwrap()]);
    // The same frames, each with the same weight and share (colours, titles and the count's
    // unit name differ).
    let key = |f: &Frame| (f.name.clone(), f.count, (f.percent * 100.0).round() as i64);
    let mut theirs: Vec<_> = frames(&theirs).iter().map(key).collect();
    let mut mine: Vec<_> = frames(&mine).iter().map(key).collect();
    theirs.sort();
    mine.sort();
    assert!(mine.len() > 10, "{mine:?}");
    assert_eq!(mine, theirs);
}
