//! Evaluating a metric [`Expr`] on counts as perf's `expr.y` does, and finding the events it
//! needs as perf's "compute ids" pass does (constant branches folded away).
//!
//! perf's rules kept here: an unknown name reads as NaN; `a / 0` is NaN; `d_ratio(a, 0)` is
//! 0; `+ - * < >` of a NaN is NaN; `min`/`max` are `a < b ? a : b` / `a > b ? a : b` (so a
//! NaN on the left loses); `| & ^` are logical and treat a non-finite side as unknown;
//! `c if COND else e` takes `c` unless COND is exactly zero (a NaN condition is true); `%`
//! by zero and an unknown `#literal` make the whole expression fail (perf's parse error).

use std::collections::BTreeSet;

use super::expr::{Expr, Op};

/// What an expression reads from the outside world.
pub trait Env {
    /// The value of an event or a referenced metric; `None` reads as NaN.
    fn value(&self, name: &str) -> Option<f64>;
    /// How many sources (CPUs, PMUs) were aggregated into the event; `None` reads as NaN.
    fn source_count(&self, name: &str) -> Option<f64>;
    /// A `#literal` (`#SMT_on`, `#num_cpus_online`, …) as written; `None` fails the expression.
    fn literal(&self, name: &str) -> Option<f64>;
    /// `has_event(name)`: whether the event is among those counted.
    fn has_event(&self, name: &str) -> bool;
    /// `strcmp_cpuid_str(pattern)`: whether the CPU id matches the pattern; `None` is NaN.
    fn cpuid_matches(&self, pattern: &str) -> Option<bool>;
}

/// Why an expression has no value at all (perf prints nothing for such a metric).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EvalError {
    /// `#literal` that perf does not know.
    #[error("unknown literal `{0}`")]
    UnknownLiteral(String),
    /// `a % 0`.
    #[error("remainder by zero")]
    RemainderByZero,
}

fn is_zero(v: f64) -> bool {
    v == 0.0
}

fn truth(b: bool) -> f64 {
    if b {
        1.0
    } else {
        0.0
    }
}

/// perf's `(long)a % (long)b`; a remainder that C would trap on is an error here.
fn remainder(a: f64, b: f64) -> Result<f64, EvalError> {
    if is_zero(b) {
        return Err(EvalError::RemainderByZero);
    }
    (a as i64)
        .checked_rem(b as i64)
        .map(|r| r as f64)
        .ok_or(EvalError::RemainderByZero)
}

fn binary(op: Op, a: f64, b: f64) -> Result<f64, EvalError> {
    let finite = (a.is_finite(), b.is_finite());
    Ok(match op {
        Op::Or => match finite {
            (true, true) => truth(!(is_zero(a) && is_zero(b))),
            (true, false) if is_zero(a) => b,
            (false, true) if is_zero(b) => a,
            (true, false) | (false, true) => 1.0,
            (false, false) => f64::NAN,
        },
        Op::And => match finite {
            (true, true) => truth(!is_zero(a) && !is_zero(b)),
            (true, false) if !is_zero(a) => b,
            (false, true) if !is_zero(b) => a,
            (true, false) | (false, true) => 0.0,
            (false, false) => f64::NAN,
        },
        Op::Xor => match finite {
            (true, true) => truth(is_zero(a) != is_zero(b)),
            _ => f64::NAN,
        },
        Op::Div if is_zero(b) => f64::NAN,
        Op::Div => a / b,
        Op::Rem => remainder(a, b)?,
        _ if a.is_nan() || b.is_nan() => f64::NAN,
        Op::Lt => truth(a < b),
        Op::Gt => truth(a > b),
        Op::Add => a + b,
        Op::Sub => a - b,
        Op::Mul => a * b,
    })
}

/// Evaluates `expr` on `env`, as perf evaluates a metric on its counts.
pub fn evaluate(expr: &Expr, env: &dyn Env) -> Result<f64, EvalError> {
    Ok(match expr {
        Expr::Num(v) => *v,
        Expr::Id(n) => env.value(n).unwrap_or(f64::NAN),
        Expr::SourceCount(n) => env.source_count(n).unwrap_or(f64::NAN),
        Expr::Literal(l) => env
            .literal(l)
            .ok_or_else(|| EvalError::UnknownLiteral(l.clone()))?,
        Expr::HasEvent(n) => truth(env.has_event(n)),
        Expr::StrcmpCpuid(p) => env.cpuid_matches(p).map_or(f64::NAN, truth),
        Expr::Neg(a) => -evaluate(a, env)?,
        Expr::Binary(op, a, b) => binary(*op, evaluate(a, env)?, evaluate(b, env)?)?,
        Expr::DRatio(a, b) => {
            let (a, b) = (evaluate(a, env)?, evaluate(b, env)?);
            if is_zero(b) {
                0.0
            } else {
                a / b
            }
        }
        Expr::Min(a, b) => {
            let (a, b) = (evaluate(a, env)?, evaluate(b, env)?);
            if a < b {
                a
            } else {
                b
            }
        }
        Expr::Max(a, b) => {
            let (a, b) = (evaluate(a, env)?, evaluate(b, env)?);
            if a > b {
                a
            } else {
                b
            }
        }
        Expr::If {
            then,
            cond,
            otherwise,
        } => {
            // perf evaluates all three (an error anywhere fails the whole expression).
            let (t, c, o) = (
                evaluate(then, env)?,
                evaluate(cond, env)?,
                evaluate(otherwise, env)?,
            );
            if is_zero(c) {
                o
            } else {
                t
            }
        }
    })
}

/// A partial value: a constant (known before counting) or "depends on these names".
struct Ids {
    /// The constant; NaN when it depends on names.
    value: f64,
    names: BTreeSet<String>,
}

impl Ids {
    fn constant(value: f64) -> Ids {
        Ids {
            value,
            names: BTreeSet::new(),
        }
    }

    fn is_const(&self) -> bool {
        self.value.is_finite()
    }

    fn union(mut self, other: Ids) -> Ids {
        self.names.extend(other.names);
        Ids {
            value: f64::NAN,
            names: self.names,
        }
    }
}

/// The names (events and metric references) `expr` needs counted, as perf's compute-ids
/// pass finds them: `#literals` are known, so a branch or operand they rule out needs
/// nothing (`A if #SMT_on else B` needs only B's events without SMT).
pub fn needed_names(expr: &Expr, env: &dyn Env) -> Result<BTreeSet<String>, EvalError> {
    Ok(ids(expr, env)?.names)
}

fn ids(expr: &Expr, env: &dyn Env) -> Result<Ids, EvalError> {
    Ok(match expr {
        Expr::Num(v) => Ids::constant(*v),
        Expr::Id(n) | Expr::SourceCount(n) => Ids {
            value: f64::NAN,
            names: BTreeSet::from([n.clone()]),
        },
        Expr::Literal(_) | Expr::HasEvent(_) | Expr::StrcmpCpuid(_) => {
            Ids::constant(evaluate(expr, env)?)
        }
        Expr::Neg(a) => {
            let a = ids(a, env)?;
            Ids {
                value: -a.value,
                names: a.names,
            }
        }
        Expr::Binary(op, a, b) => binary_ids(*op, ids(a, env)?, ids(b, env)?)?,
        Expr::DRatio(a, b) => {
            let (a, b) = (ids(a, env)?, ids(b, env)?);
            if b.is_const() && is_zero(b.value) {
                Ids::constant(0.0)
            } else if a.is_const() && b.is_const() {
                Ids::constant(a.value / b.value)
            } else {
                a.union(b)
            }
        }
        Expr::Min(a, b) | Expr::Max(a, b) => ids(a, env)?.union(ids(b, env)?),
        Expr::If {
            then,
            cond,
            otherwise,
        } => {
            let (t, c, o) = (ids(then, env)?, ids(cond, env)?, ids(otherwise, env)?);
            if c.is_const() && is_zero(c.value) {
                o
            } else if c.is_const() {
                t
            } else if t.value == o.value {
                Ids::constant(t.value)
            } else {
                t.union(c).union(o)
            }
        }
    })
}

fn binary_ids(op: Op, a: Ids, b: Ids) -> Result<Ids, EvalError> {
    let both = a.is_const() && b.is_const();
    Ok(match op {
        Op::Or | Op::And | Op::Xor if both => Ids::constant(binary(op, a.value, b.value)?),
        Op::Or if a.is_const() => {
            if is_zero(a.value) {
                b
            } else {
                Ids::constant(1.0)
            }
        }
        Op::Or if b.is_const() => {
            if is_zero(b.value) {
                a
            } else {
                Ids::constant(1.0)
            }
        }
        Op::And if a.is_const() => {
            if is_zero(a.value) {
                Ids::constant(0.0)
            } else {
                b
            }
        }
        Op::And if b.is_const() => {
            if is_zero(b.value) {
                Ids::constant(0.0)
            } else {
                a
            }
        }
        Op::Div if b.is_const() && is_zero(b.value) => Ids::constant(f64::NAN),
        Op::Rem if b.is_const() && is_zero(b.value) => return Err(EvalError::RemainderByZero),
        _ if both => Ids::constant(binary(op, a.value, b.value)?),
        _ => a.union(b),
    })
}
