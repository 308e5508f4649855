//! The language additions checked against hand-computed output: printa of several
//! aggregations, if/else, declarations, formats (`%*d`, `%a`, `%@f`), DTrace's per-firing lines
//! without quiet, and the `offenders()` aggregating function.

use crate::common;

use common::{event, profile, sample};
use culprit_decode::model::{Profile, Sample};
use culprit_trace::{compile, Options, SymbolSource, What};

/// Names every address `fake`0x…` (and counts the questions, to check the caching).
#[derive(Default)]
struct Fake {
    asked: usize,
}

impl SymbolSource for Fake {
    fn lookup(&mut self, _: &Profile, s: &Sample, what: What) -> String {
        self.asked += 1;
        match what {
            What::Addr => format!("fake`0x{:x}", s.location.file_offset),
            _ => format!("f{:x}", s.ip),
        }
    }
}

/// Runs a program over a profile: (text output, aggregations JSON, symbol questions).
fn run_on(p: &Profile, src: &str, quiet: bool) -> (String, serde_json::Value, usize) {
    let prog = compile(
        src,
        &Options {
            max_keys: 1000,
            quiet,
            ..Options::default()
        },
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let mut r = prog
        .runner(&p.events, "test")
        .unwrap_or_else(|e| panic!("{e}"));
    let mut syms = Fake::default();
    r.begin(p, &mut syms);
    for s in &p.samples {
        if !r.sample(p, s, &mut syms) {
            break;
        }
    }
    r.end(p, &mut syms, true);
    (
        r.take_output(),
        serde_json::to_value(r.aggregations_json()).unwrap(),
        syms.asked,
    )
}

fn run(src: &str) -> String {
    run_on(&profile(), src, true).0
}

fn err(src: &str) -> String {
    compile(src, &Options::default()).unwrap_err().to_string()
}

#[test]
fn printa_of_several_aggregations_shares_the_keys() {
    // heavy: periods 1000 1002 1004 1006 1008 (count 5, sum 5020), one page fault;
    // light: 1001 … 1009 (count 5, sum 5025), one page fault. Ties on @c sort by key.
    let out = run(
        "pmc:::cpu-clock { @c[execname] = count(); @s[execname] = sum(period); }
         pmc:::page-faults { @f[execname] = count(); }
         END { printa(\"%-8s %@4d %6@d %@-3d|\\n\", @c, @s, @f); }",
    );
    assert_eq!(
        out,
        "heavy       5   5020 1  |\nlight       5   5025 1  |\n"
    );
    // The union of the keys: `x` is only in @f, so @c prints 0 there (and sorts first);
    // the default layout is each key then each value, 16 wide.
    let out = run("pmc:::cpu-clock { @c[execname] = count(); }
         pmc:::page-faults /tid == 1/ { @f[\"x\"] = sum(1); @f[execname] = sum(period); }
         END { printa(@c, @f); }");
    let row = |k: &str, a: i64, b: i64| format!("  {k:<50}  {a:>16}  {b:>16}\n");
    let want = format!(
        "\n{}{}{}",
        row("x", 0, 1),
        row("heavy", 5, 20),
        row("light", 5, 0)
    );
    assert_eq!(out, want);
}

#[test]
fn printa_of_several_aggregations_is_checked() {
    let e = err("BEGIN { @a[1] = count(); @b[\"s\"] = count(); } END { printa(@a, @b); }");
    assert!(
        e.contains("type error") && e.contains("same key types"),
        "{e}"
    );
    let e = err("BEGIN { @a = count(); @b = count(); } END { printa(\"%@d\\n\", @a, @b); }");
    assert!(
        e.starts_with("1:52: format error: the format has 1 `%@` conversion(s) for 2"),
        "{e}"
    );
    let e = err("BEGIN { @a = count(); } END { printa(\"%@f\\n\", @a); }");
    assert!(e.contains("`%@f` prints avg() and stddev()"), "{e}");
    let e = err("BEGIN { @a = count(); } END { printa(\"x\"); }");
    assert!(e.contains("`printa` takes an aggregation"), "{e}");
}

#[test]
fn if_else_chains_and_single_statements() {
    // periods 1000..=1009 mod 3: 1 2 0 1 2 0 1 2 0 1.
    let out = run("pmc:::cpu-clock {
           if (period % 3 == 0) { a++; }
           else if (period % 3 == 1) { b++; if (execname == \"heavy\") hb++; }
           else c++;
         }
         END { printf(\"%d %d %d %d\\n\", a, b, c, hb); }");
    // b: 1000 (heavy), 1003, 1006 (heavy), 1009.
    assert_eq!(out, "3 4 3 2\n");
    // An aggregation inside a branch; a branch stops at a run-time error like a clause.
    let out = run(
        "pmc:::cpu-clock { if (tid == 1) { @h = count(); } else { x = 1 / 0; y++; } }
         END { printf(\"%d\\n\", y); }",
    );
    assert_eq!(out, "0\n\n                 5\n");
    let e = err("BEGIN { if (execname) { x = 1; } }");
    assert!(
        e.starts_with("1:13: type error: an `if` condition must be an integer"),
        "{e}"
    );
    let e = err("BEGIN { else { x = 1; } }");
    assert!(
        e.starts_with("1:9: syntax error: `else` without a preceding `if`"),
        "{e}"
    );
    let e = err("BEGIN {\n  if (1 { x = 1; }\n}");
    assert_eq!(
        e,
        "2:9: syntax error: expected `)` to close the condition, found `{`\n    if (1 { x = 1; }\n          ^"
    );
}

#[test]
fn declarations_type_and_wrap_variables() {
    // uint8_t wraps 1009 to 241, char wraps 200 to -56; declared variables read 0 before any
    // assignment (the predicate precedes it); a declared `this` is zero at each firing.
    let out = run("int x; uint8_t small; string s; char c; self int z; this int w;
         unsigned long u;
         pmc:::cpu-clock /x >= 0/ { small = period; x = x + 1; this->w += 5; self->z += this->w; s = execname; }
         END { c = 200; u = -1; printf(\"%d %d %s %d %u\\n\", x, small, s, c, u); }");
    assert_eq!(out, "10 241 light -56 18446744073709551615\n");
    let e = err("int x;\nBEGIN { x = \"a\"; }");
    assert!(
        e.starts_with("2:9: type error: `x` is a int but is assigned a string"),
        "{e}"
    );
    let e = err("int x;\nstring x;\nBEGIN { }");
    assert!(
        e.starts_with("2:8: declaration error: `x` is already declared (line 1)"),
        "{e}"
    );
    let e = err("long char x;");
    assert!(
        e.starts_with("1:1: unknown type: unknown type `long char`"),
        "{e}"
    );
    let e = err("BEGIN { int x; }");
    assert!(e.contains("declarations go at the top level"), "{e}");
    let e = err("int pid;");
    assert!(e.contains("`pid` is a built-in variable"), "{e}");
    let e = err("self->x = 1;");
    assert!(
        e.starts_with("1:5: syntax error: `self->x` at top level"),
        "{e}"
    );
    let e = err("int x = 3;");
    assert!(e.contains("a declaration has no initializer"), "{e}");
}

#[test]
fn printf_formats_star_widths_and_types() {
    let out = run("BEGIN { printf(\"%5.1s|%*d|%-*d|%c|%%|%o|%X|%#o|%.*d\\n\", \"abc\", 4, 7, 3, 9, 65, 8, 255, 8, 3, 5); }");
    assert_eq!(out, "    a|   7|9  |A|%|10|FF|010|005\n");
    let e = err("BEGIN { printf(\"%f\\n\", 2); }");
    assert!(
        e.starts_with("1:24: type error: `%f` needs a floating-point value"),
        "{e}"
    );
    let e = err("BEGIN { printf(\"%s\\n\", 2); }");
    assert!(
        e.contains("`%s` expects a string, this argument is a int"),
        "{e}"
    );
    let e = err("BEGIN { printf(\"%a\\n\", execname); }");
    assert!(e.contains("`%a` expects an address"), "{e}");
    let e = err("BEGIN { printf(\"%*d\\n\", \"w\", 2); }");
    assert!(e.contains("`*` width must be an integer"), "{e}");
    let e = err("BEGIN { printf(\"%*d\\n\", 2); }");
    assert!(e.contains("missing a value"), "{e}");
}

#[test]
fn avg_and_stddev_print_with_decimals() {
    // avg of 1000..=1009 = 1004.5; population stddev = sqrt(8.25) = 2.8722813…
    let out = run("pmc:::cpu-clock { @a = avg(period); @d = stddev(period); @a2[execname] = avg(period); }
         END { printa(\"%@.2f %@d\\n\", @a, @a); printa(\"%@e\\n\", @d); printa(\"%s %@g\\n\", @a2); }");
    assert_eq!(out, "1004.50 1004\n2.872281e+00\nheavy 1004\nlight 1005\n");
}

#[test]
fn addresses_print_as_module_symbol() {
    // `%a` names the sample's IP (once per location: cached); printa's `%a` on an `ip` key
    // uses the names found so far, and prints the others in hex.
    let (out, _, asked) = run_on(
        &profile(),
        "pmc:::cpu-clock /period < 1002/ { printf(\"%a|%-14A|\\n\", ip, ip); }
         pmc:::cpu-clock { @[ip] = count(); }
         END { trunc(@, 3); printa(\"%a %@d\\n\", @); }",
        true,
    );
    assert_eq!(
        out,
        "fake`0x1000|fake`0x1000   |\nfake`0x1010|fake`0x1010   |\n0x1070 1\n0x1080 1\n0x1090 1\n"
    );
    assert_eq!(asked, 2);
    let (out, ..) = run_on(
        &profile(),
        "pmc:::cpu-clock /period < 1002/ { printf(\"%a\\n\", ip); @[ip] = count(); }
         END { printa(\"%-12a %@d\\n\", @); }",
        true,
    );
    assert_eq!(
        out,
        "fake`0x1000\nfake`0x1010\nfake`0x1000  1\nfake`0x1010  1\n"
    );
}

#[test]
fn without_quiet_each_recording_firing_prints_the_probe_line() {
    // Probe ids in source order: BEGIN 1, page-faults 2, cpu-clock 3, END 4. The
    // aggregating clause prints nothing per firing; the others print CPU, id and
    // FUNCTION:NAME, then what they printed, then a newline (DTrace's layout).
    let (out, ..) = run_on(
        &profile(),
        "BEGIN { x = 1; } pmc:::page-faults { } pmc:::cpu-clock { @n = count(); }
         END { printf(\"x=%d\", x); }",
        false,
    );
    let want = "CPU     ID                    FUNCTION:NAME\n  0      1                           :BEGIN \n  1      2                     :page-faults \n  0      2                     :page-faults \n  0      4                             :END x=1\n\n                10\n";
    assert_eq!(out, want);
    // Quiet: only what the program prints.
    let (out, ..) = run_on(
        &profile(),
        "BEGIN { x = 1; } pmc:::page-faults { } END { printf(\"x=%d\\n\", x); }",
        true,
    );
    assert_eq!(out, "x=1\n");
    // A four-part description names FUNCTION:NAME.
    let (out, ..) = run_on(&profile(), "dtrace:::BEGIN { }", false);
    assert_eq!(out, "CPU     ID                    FUNCTION:NAME\n  0      1                           :BEGIN \n");
}

/// 60 samples of `heavy` at one address and 60 of `light` at 60 different addresses,
/// interleaved.
fn hot_profile() -> Profile {
    let mut p = Profile {
        events: vec![event("cpu-clock", 1000)],
        strings: vec!["heavy".into(), "light".into()],
        ..Profile::default()
    };
    for i in 0..60u64 {
        p.samples
            .push(sample(0, 1000 * (2 * i + 1), 1, 0, 1000, 0x4000));
        p.samples
            .push(sample(0, 1000 * (2 * i + 2), 2, 1, 1000, 0x8000 + 4 * i));
    }
    p
}

#[test]
fn offenders_aggregation_finds_the_hot_address() {
    // Per key, one detector (T1 = 100, T2 = 5 samples): `heavy` is always at 0x4000, so
    // each round is one capture and 5 counted samples: 60 / 6 = 10 confirmations, each at
    // counters (5, 5). `light` never repeats an address: nothing confirmed. Sorted by
    // confirmations, like report --offenders.
    let (out, json, asked) = run_on(
        &hot_profile(),
        "pmc:::cpu-clock { @w[execname] = offenders(ip); }",
        true,
    );
    let want = "\n  light\n      CONF   COUNT1   COUNT2  ADDRESS            SYMBOL\n    (no offender confirmed)\n\n  heavy\n      CONF   COUNT1   COUNT2  ADDRESS            SYMBOL\n        10        5        5  0x4000             fake`0x4000\n\n";
    assert_eq!(out, want);
    // Named once, at the first confirmation: its `%a` name and its module.
    assert_eq!(asked, 2);
    let e = &json[0]["entries"][1];
    assert_eq!(e["keys"][0], "heavy");
    assert_eq!(e["value"], 10);
    assert_eq!(e["offenders"][0]["address"], "0x4000");
    assert_eq!(e["offenders"][0]["symbol"], "fake`0x4000");
    assert_eq!(e["offenders"][0]["confirmations"], 10);
    assert_eq!(json[0]["function"], "offenders");
    // Explicit thresholds: T1 = 4, T2 = 2 over the interleaved stream (no key): the
    // capture at 0x4000 is followed by light, heavy → confirmed at counters (2, 1)? No:
    // c1 counts every sample: light (1, 0), heavy (2, 1), light (3, 1), heavy (4, 2):
    // T2 reached with T1 → confirmed (a tie goes to counter 2). 120 samples in rounds
    // of 5: 24 rounds; captures alternate heavy/light: heavy rounds confirm, light
    // rounds (capture light, then 4 samples with no repeat) miss: 12 confirmations.
    let (out, ..) = run_on(
        &hot_profile(),
        "pmc:::cpu-clock { @w = offenders(ip, 4, 2); } END { printa(\"%@d\", @w); }",
        true,
    );
    assert_eq!(out, "\n      CONF   COUNT1   COUNT2  ADDRESS            SYMBOL\n        12        4        2  0x4000             fake`0x4000\n");
}

#[test]
fn offenders_arguments_are_checked() {
    let e = err("pmc:::cpu-clock { @w = offenders(ip, 5, 10); }");
    assert!(e.contains("t2 (10) must not exceed t1 (5)"), "{e}");
    let e = err("pmc:::cpu-clock { @w = offenders(ip, period, 2); }");
    assert!(e.contains("positive integer constants"), "{e}");
    let e = err("pmc:::cpu-clock { @w = offenders(ip, 5); }");
    assert!(e.contains("takes 1 or 3 arguments, got 2"), "{e}");
    let e = err("pmc:::cpu-clock { @w = offenders(execname); }");
    assert!(
        e.contains("`offenders` needs an integer, not a string"),
        "{e}"
    );
    let e = err("pmc:::cpu-clock { @w = offender(ip); }");
    assert!(e.contains("did you mean `offenders`"), "{e}");
}

#[test]
fn nested_ifs_are_bounded_and_run() {
    // 31 nested `if`s around an assignment: parsed, checked, compiled and run.
    let src = format!(
        "BEGIN {{ {}x = 7; printf(\"%d\\n\", x); }}",
        "if (1) ".repeat(31)
    );
    assert_eq!(run(&src), "7\n");
    let e = err(&format!("BEGIN {{ {} x = 1; }}", "if (1) ".repeat(100)));
    assert!(
        e.contains("statements nested too deeply (at most 32 levels)"),
        "{e}"
    );
}

/// `uses_locations`: true exactly when some expression names code (the reader resolves
/// locations only then).
#[test]
fn test_uses_locations() {
    let opts = Options {
        max_keys: 10,
        quiet: true,
        ..Options::default()
    };
    let uses = |src: &str| {
        compile(src, &opts)
            .unwrap_or_else(|e| panic!("{e}"))
            .uses_locations()
    };
    for src in [
        "pmc:::cpu-clock { @[sym] = count(); }",
        "pmc:::cpu-clock /mod == \"libc.so.6\"/ { @n = count(); }",
        "pmc:::cpu-clock { @[srcline] = count(); }",
        "pmc:::cpu-clock { printf(\"%a\\n\", ip); }",
        "pmc:::cpu-clock { printf(\"%A\\n\", ip); }",
        "pmc:::cpu-clock { @w = offenders(ip); }",
        "pmc:::cpu-clock { @w[execname] = offenders(period); }",
    ] {
        assert!(uses(src), "{src}");
    }
    for src in [
        "pmc:::cpu-clock /pid > 0 && period >= 1000/ { @s = sum(period); }",
        "pmc:::cpu-clock { @[ip, execname] = count(); printa(\"%a %s %@d\\n\", @); }",
        "pmc:::cpu-clock { printf(\"%x %d %s\\n\", ip, cpu, execname); }",
        "BEGIN { } END { }",
    ] {
        assert!(!uses(src), "{src}");
    }
}

#[test]
fn default_print_keeps_dtrace_widths_and_fits_80_columns_with_several_keys() {
    // One string key: DTrace's layout (key padded to 50, value right-aligned in 16).
    let one = run("pmc:::cpu-clock { @[execname] = count(); }");
    let line = one.lines().find(|l| !l.trim().is_empty()).unwrap();
    assert_eq!(line.len(), 2 + 50 + 2 + 16, "{one:?}");
    // Three keys would be 2+50+2+50+2+16+2+16 wide in DTrace's layout: each column is as
    // wide as its widest entry instead.
    let three = run("pmc:::cpu-clock { @[execname, execname, tid] = count(); }");
    assert!(three.lines().count() > 1, "{three:?}");
    for l in three.lines() {
        assert!(l.chars().count() <= 80, "{l:?} in\n{three}");
    }
}
