//! Parsing and evaluation against perf's own rules (values worked out by hand from
//! `expr.l`/`expr.y`; perf's `tests/expr.c` checks the same cases).

use std::collections::HashMap;

use super::*;
use crate::metrics::eval::{evaluate, needed_names, Env, EvalError};

struct Vals(HashMap<&'static str, f64>);

impl Env for Vals {
    fn value(&self, name: &str) -> Option<f64> {
        self.0.get(name).copied()
    }
    fn source_count(&self, name: &str) -> Option<f64> {
        self.0.contains_key(name).then_some(2.0)
    }
    fn literal(&self, name: &str) -> Option<f64> {
        match name {
            "#smt_on" | "#SMT_on" => Some(1.0),
            "#num_cpus_online" => Some(8.0),
            _ => None,
        }
    }
    fn has_event(&self, name: &str) -> bool {
        self.0.contains_key(name)
    }
    fn cpuid_matches(&self, pattern: &str) -> Option<bool> {
        Some(pattern == "0x41")
    }
}

fn env() -> Vals {
    Vals(HashMap::from([
        ("FOO", 1.0),
        ("BAR", 2.0),
        ("ZERO", 0.0),
        ("cpu/X,cmask=1/", 7.0),
        ("cpu@X,cmask=1@", 5.0),
        ("EXE_ACTIVITY.2_PORTS_UTIL", 3.0),
    ]))
}

fn eval(text: &str) -> f64 {
    let e = parse(text).unwrap_or_else(|err| panic!("{text}: {err}"));
    evaluate(&e, &env()).unwrap_or_else(|err| panic!("{text}: {err}"))
}

#[test]
fn arithmetic_and_precedence() {
    assert_eq!(eval("1+1"), 2.0);
    assert_eq!(eval("FOO+BAR"), 3.0);
    assert_eq!(eval("(BAR/2)%2"), 1.0);
    assert_eq!(eval("1 - -4"), 5.0);
    assert_eq!(eval("(FOO-1)*2 + (BAR/2)%2 - -4"), 5.0);
    assert_eq!(eval("-BAR * 3 + 1"), -5.0);
    assert_eq!(eval("1e9 / 1e3"), 1e6);
    assert_eq!(eval(".5 + 5."), 5.5);
    assert_eq!(eval("2 * 3 < 7"), 1.0);
    assert_eq!(eval("1 | 0 & 0"), 1.0);
    assert_eq!(eval("1 ^ 1"), 0.0);
}

#[test]
fn names_with_escapes_and_digits() {
    assert_eq!(eval("cpu@X\\,cmask\\=1@"), 5.0);
    assert_eq!(eval("EXE_ACTIVITY.2_PORTS_UTIL * 2"), 6.0);
    assert_eq!(
        parse("cpu@X\\,cmask\\=1@ / FOO").unwrap().names(),
        vec!["cpu@X,cmask=1@", "FOO"]
    );
}

#[test]
fn perfs_nan_rules() {
    assert!(eval("FOO / ZERO").is_nan());
    assert_eq!(eval("d_ratio(FOO, ZERO)"), 0.0);
    assert_eq!(eval("d_ratio(MISSING, 0)"), 0.0);
    assert!(eval("MISSING + 1").is_nan());
    assert!(eval("NaN * 0").is_nan());
    // `a < b ? a : b`: a NaN on the left loses, on the right wins.
    assert_eq!(eval("min(MISSING, 3)"), 3.0);
    assert!(eval("min(3, MISSING)").is_nan());
    assert_eq!(eval("max(MISSING, 3)"), 3.0);
    // A NaN condition is not zero, so true.
    assert_eq!(eval("1 if MISSING else 2"), 1.0);
    assert!(eval("0 | MISSING").is_nan());
    assert_eq!(eval("1 | MISSING"), 1.0);
    assert_eq!(eval("0 & MISSING"), 0.0);
}

#[test]
fn if_else_min_max_and_functions() {
    assert_eq!(eval("FOO if BAR > 1 else 3"), 1.0);
    assert_eq!(eval("FOO if ZERO else 3 if 1 else 4"), 3.0);
    assert_eq!(eval("(FOO if 0 else BAR) * 2"), 4.0);
    assert_eq!(eval("min(FOO, BAR) + max(FOO, BAR)"), 3.0);
    assert_eq!(eval("#smt_on * #num_cpus_online"), 8.0);
    assert_eq!(eval("source_count(FOO)"), 2.0);
    assert_eq!(eval("has_event(FOO) + has_event(NOPE)"), 1.0);
    assert_eq!(eval("strcmp_cpuid_str(0x41)"), 1.0);
}

#[test]
fn failures_fail_the_whole_expression() {
    let e = parse("#bogus + 1").unwrap();
    assert_eq!(
        evaluate(&e, &env()),
        Err(EvalError::UnknownLiteral("#bogus".into()))
    );
    let e = parse("FOO if 1 else 5 % 0").unwrap();
    assert_eq!(evaluate(&e, &env()), Err(EvalError::RemainderByZero));
    assert!(parse("FOO +").is_err());
    assert!(parse("(FOO").is_err());
    assert!(parse("FOO if 1").is_err());
    assert!(parse("min(FOO)").is_err());
    assert!(parse("FOO BAR").is_err());
}

#[test]
fn needed_names_fold_literal_branches() {
    let e = parse("A if #smt_on else B").unwrap();
    let names: Vec<String> = needed_names(&e, &env()).unwrap().into_iter().collect();
    assert_eq!(names, vec!["A"]);
    let e = parse("d_ratio(A, 0) + B / 0 + C").unwrap();
    let names: Vec<String> = needed_names(&e, &env()).unwrap().into_iter().collect();
    assert_eq!(names, vec!["C"]);
    let e = parse("A if C > 1 else B").unwrap();
    assert_eq!(needed_names(&e, &env()).unwrap().len(), 3);
}
