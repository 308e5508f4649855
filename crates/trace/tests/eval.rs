//! The compiled evaluator over a synthetic profile: semantics of expressions, variables,
//! aggregations, ticks, exit and output, checked against values computed by hand.

use crate::common;

use common::profile;
use culprit_trace::{compile, NoSymbols, Options};

/// Runs a program: (text output, aggregations JSON, notes, exit).
fn run(src: &str) -> (String, serde_json::Value, Vec<String>, Option<i64>) {
    let prog = compile(
        src,
        &Options {
            max_keys: 1000,
            quiet: true,
            ..Options::default()
        },
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let p = profile();
    let mut r = prog
        .runner(&p.events, "test")
        .unwrap_or_else(|e| panic!("{e}"));
    let mut syms = NoSymbols;
    r.begin(&p, &mut syms);
    for s in &p.samples {
        if !r.sample(&p, s, &mut syms) {
            break;
        }
    }
    r.end(&p, &mut syms, true);
    let notes = r.notes().to_vec();
    (
        r.take_output(),
        serde_json::to_value(r.aggregations_json()).unwrap(),
        notes,
        r.exit_code(),
    )
}

#[test]
fn predicates_arithmetic_and_ternary() {
    let (out, ..) = run(
        "pmc:::cpu-clock /period % 2 == 0 && execname == \"heavy\"/ { n += period; }
         pmc:::cpu-clock /execname != \"heavy\"/ { m = m + (period > 1004 ? 1 : 0); }
         END { printf(\"%d %d %d %x %d\\n\", n, m, -7 / 2, 255 & ~0xf, 1 << 4 | 1); }",
    );
    // heavy samples are i = 0, 2, 4, 6, 8: periods 1000 + i, all even; light ones above
    // 1004: 1005, 1007, 1009.
    assert_eq!(out, "5020 3 -3 f0 17\n");
}

#[test]
fn thread_local_and_clause_local_variables() {
    let (out, ..) = run(
        "pmc:::cpu-clock /self->last/ { this->d = timestamp - self->last; @gap[tid] = max(this->d); }
         pmc:::cpu-clock { self->last = timestamp; }
         END { printa(\"%d %@d\\n\", @gap); }",
    );
    // Each thread samples every 2 ms.
    assert_eq!(out, "1 2000000\n2 2000000\n");
}

#[test]
fn aggregations_sorted_by_value_with_default_layout() {
    let (out, json, ..) = run(
        "pmc:::cpu-clock { @c[execname] = count(); @s[execname] = sum(period); @a = avg(period); @mn = min(period); @mx = max(period); @sd = stddev(period); }
         pmc:::page-faults { @c[\"faults\"] = count(); @c[\"faults\"] = count(); }",
    );
    let lines: Vec<&str> = out.lines().collect();
    // @c: faults 4, heavy 5, light 5 (ties by key); printed first (declaration order).
    assert_eq!(lines[0], "");
    assert_eq!(lines[1], format!("  {:<50}  {:>16}", "faults", 4));
    assert_eq!(lines[2], format!("  {:<50}  {:>16}", "heavy", 5));
    assert_eq!(lines[3], format!("  {:<50}  {:>16}", "light", 5));
    let by_name = |n: &str| {
        json.as_array()
            .unwrap()
            .iter()
            .find(|a| a["name"] == n)
            .unwrap()["entries"]
            .clone()
    };
    assert_eq!(by_name("s")[0]["value"], 5020); // heavy: 1000+1002+…+1008
    assert_eq!(by_name("s")[1]["value"], 5025);
    assert_eq!(by_name("a")[0]["value"], 1004); // 10045 / 10
    assert_eq!(by_name("mn")[0]["value"], 1000);
    assert_eq!(by_name("mx")[0]["value"], 1009);
    assert_eq!(by_name("sd")[0]["value"], 2); // sqrt(8.25)
}

#[test]
fn quantize_lquantize_and_printa_histogram() {
    let (out, json, ..) = run(
        "pmc:::cpu-clock { @q = quantize(period - 1000); @l[\"x\"] = lquantize(period - 1000, 0, 10, 5); }
         END { printa(@q); printa(\"%s%@d\", @l); }",
    );
    // period - 1000 = 0..9: 0 → bucket 0; 1; 2,3; 4..7; 8,9.
    let expect_q = "\n           value  ------------- Distribution ------------- count\n\
                   \x20             -1 |                                         0\n\
                   \x20              0 |@@@@                                     1\n\
                   \x20              1 |@@@@                                     1\n\
                   \x20              2 |@@@@@@@@                                 2\n\
                   \x20              4 |@@@@@@@@@@@@@@@@                         4\n\
                   \x20              8 |@@@@@@@@                                 2\n\
                   \x20             16 |                                         0\n\n";
    assert!(out.starts_with(expect_q), "{out}");
    assert!(out.contains("x\n           value  ------------- Distribution ------------- count\n             < 0 |                                         0\n               0 |@@@@@@@@@@@@@@@@@@@@                     5\n               5 |@@@@@@@@@@@@@@@@@@@@                     5\n           >= 10 |                                         0\n"), "{out}");
    let l = &json.as_array().unwrap()[1]["entries"][0]["buckets"];
    assert_eq!(l[0]["value"], 0);
    assert_eq!(l[0]["count"], 5);
}

#[test]
fn trunc_clear_normalize() {
    let (out, ..) = run(
        "pmc:::cpu-clock { @[ip] = sum(period); @n[execname] = count(); }
         END { trunc(@, 2); printa(\"%x %@d\\n\", @); trunc(@n, -1); normalize(@n, 5); printa(\"%s %@d\\n\", @n); clear(@n); printa(\"%s %@d\\n\", @n); }",
    );
    assert_eq!(out, "1080 1008\n1090 1009\nheavy 1\nheavy 0\n");
}

#[test]
fn ticks_fire_on_sample_time_and_exit_stops() {
    let (out, _, _, exit) = run(
        "pmc:::cpu-clock { n++; } tick-3ms { printf(\"tick %d\\n\", n); } pmc:::cpu-clock /n == 7/ { exit(4); } END { printf(\"end %d\\n\", n); }",
    );
    // First sample at 1 ms: ticks due at 4 ms and 7 ms, seen before the samples at those times.
    assert_eq!(out, "tick 3\ntick 6\nend 7\n");
    assert_eq!(exit, Some(4));
}

#[test]
fn runtime_errors_and_key_limit_are_reported() {
    let prog = compile(
        "pmc:::cpu-clock { x = 10 / (period - period); @[ip] = count(); }",
        &Options {
            max_keys: 3,
            quiet: true,
            ..Options::default()
        },
    )
    .unwrap();
    let p = profile();
    let mut r = prog.runner(&p.events, "t").unwrap();
    for s in &p.samples {
        r.sample(&p, s, &mut NoSymbols);
    }
    r.end(&p, &mut NoSymbols, false);
    let notes = r.notes().join("\n");
    assert!(
        notes.contains("10 firings stopped by a run-time error (division by zero)"),
        "{notes}"
    );
    let prog = compile(
        "pmc:::cpu-clock { @[ip] = count(); }",
        &Options {
            max_keys: 3,
            quiet: true,
            ..Options::default()
        },
    )
    .unwrap();
    let mut r = prog.runner(&p.events, "t").unwrap();
    for s in &p.samples {
        r.sample(&p, s, &mut NoSymbols);
    }
    r.end(&p, &mut NoSymbols, false);
    let notes = r.notes().join("\n");
    assert!(
        notes.contains("7 more keys and 7 samples dropped"),
        "{notes}"
    );
}

#[test]
fn pebs_fields_and_unsigned_addresses() {
    let (out, ..) = run(
        "pmc:::cpu-clock /args->data_src.lvl == 3 && args[0]->addr > 0x1000/ { @[args->data_src.op] = sum(args->latency); }
         pmc:::cpu-clock /ip == 0x1000/ { a = ip - 0x1001; printf(\"%d %d\\n\", a > 1, -1 > 1); }",
    );
    // addr = ip ^ 0xff > 0x1000 for all; latency = period / 10 = 100 each.
    assert_eq!(out, "1 0\n\n                 2              1000\n");
}

#[test]
fn period_suffix_notes_and_absent_events() {
    let prog = compile(
        "pmc:::cpu-clock-5000 { } pmc:::page-faults-20 { }",
        &Options::default(),
    )
    .unwrap();
    let p = profile();
    let r = prog.runner(&p.events, "t").unwrap();
    assert_eq!(r.notes().len(), 1);
    assert!(r.notes()[0].contains("period 5000") && r.notes()[0].contains("period 1000"));
    let prog = compile("pmc:::cycles { }", &Options::default()).unwrap();
    let Err(e) = prog.runner(&p.events, "x.data") else {
        panic!("cycles is not in the profile")
    };
    let e = e.to_string();
    assert!(e.contains("cpu-clock, page-faults"), "{e}");
    let prog = compile("pmc:::*-clock { @ = count(); }", &Options::default()).unwrap();
    assert!(prog.runner(&p.events, "x").is_ok());
}

/// Generated programs with long operator chains (`1+1+…`, `a && b && …`, a 20,000-term `||`
/// predicate): the longest a program may have compiles and runs, even on a test thread's
/// small stack; longer ones are a syntax error at line:column, never a stack overflow.
#[test]
fn long_operator_chains_run_or_fail_cleanly() {
    let sum = vec!["1"; 240].join("+");
    let (out, ..) = run(&format!("END {{ printf(\"%d\\n\", {sum}); }}"));
    assert_eq!(out, "240\n");
    let and = vec!["1"; 240].join(" && ");
    let (out, ..) = run(&format!("END {{ printf(\"%d\\n\", {and}); }}"));
    assert_eq!(out, "1\n");
    for (op, n) in [
        ("+", 260),
        ("+", 9000),
        ("*", 9000),
        ("&&", 9000),
        ("||", 20000),
    ] {
        let chain = vec!["pid == 1"; n].join(&format!(" {op} "));
        let src = format!("pmc:::cpu-clock /{chain}/ {{ @ = count(); }}");
        let err = compile(&src, &Options::default())
            .err()
            .unwrap_or_else(|| panic!("a {n}-term {op} chain compiled"))
            .to_string();
        assert!(
            err.starts_with("1:") && err.contains("nested too deeply"),
            "{op}: {err}"
        );
        assert!(
            err.len() < 600,
            "the error quotes a window, not the line: {err}"
        );
    }
}

/// sum, avg and stddev accumulate in 128 bits: the mean of huge values is exact, and a sum
/// past 64 bits prints saturated with a note instead of wrapping to a wrong number.
#[test]
fn sums_widen_and_saturate_with_a_note() {
    let (out, aggs, notes, _) = run(
        "END { @s = sum(9223372036854775807); @s = sum(9223372036854775807);
           @a = avg(9223372036854775807); @a = avg(9223372036854775807);
           @n = sum(-9223372036854775807); @n = sum(-9223372036854775807);
           @d = stddev(4611686018427387904); @d = stddev(4611686018427387904);
           printa(\"%@d %@d %@d %@d\\n\", @s, @a, @n, @d); }",
    );
    assert_eq!(
        out, "9223372036854775807 9223372036854775807 -9223372036854775808 0\n",
        "{aggs}"
    );
    assert_eq!(notes.len(), 2, "{notes:?}");
    assert!(
        notes[0].starts_with("@s: 1 value exceeded 64 bits"),
        "{notes:?}"
    );
    assert!(
        notes[1].starts_with("@n: 1 value exceeded 64 bits"),
        "{notes:?}"
    );
}
