//! Checker and compiler: resolves names, probes and fields, checks types, and turns every
//! expression and statement into a closure over the sample (the program of [`crate::ir`],
//! run by [`crate::run`]).

use std::collections::HashMap;

use crate::agg::{Func, MAX_AGG_KEYS};
use crate::ast::{self, Expr, ExprKind, Stmt, Target};
use crate::env::{Env, What};
use crate::error::{hint, ScriptError, Span};
use crate::fields::{self, ArgsKind, Source};
use crate::format::{self, Piece};
use crate::ir::{AggDecl, CClause, ClauseInfo, IntFn, Program, StmtFn};
use crate::probe::{self, Probe};
use crate::{Interner, Ty};
use culprit_analysis::offenders::Observation;
use culprit_decode::model::Location;

/// A numeric built-in read straight from the sample (fused into its users: no call).
#[derive(Debug, Clone, Copy)]
enum Field {
    Pid,
    Tid,
    Cpu,
    Time,
    Ip,
    Period,
}

/// The built-in field an expression is, if it is one (built-ins cannot be assigned, so a
/// name that is one always is).
fn field_of(e: &Expr) -> Option<Field> {
    let ExprKind::Name(n) = &e.kind else {
        return None;
    };
    Some(match n.as_str() {
        "pid" => Field::Pid,
        "tid" => Field::Tid,
        "cpu" => Field::Cpu,
        "timestamp" => Field::Time,
        "ip" => Field::Ip,
        "period" => Field::Period,
        _ => return None,
    })
}

/// Expands `$body` with `$g` bound to the field's getter (a distinct closure type per field,
/// so the code using it is specialized and the read is inlined).
macro_rules! by_field {
    ($f:expr, $g:ident => $body:expr) => {
        match $f {
            Field::Pid => {
                let $g = |env: &mut Env<'_>| i64::from(env.s.pid);
                $body
            }
            Field::Tid => {
                let $g = |env: &mut Env<'_>| i64::from(env.s.tid);
                $body
            }
            Field::Cpu => {
                let $g = |env: &mut Env<'_>| i64::from(env.s.cpu);
                $body
            }
            Field::Time => {
                let $g = |env: &mut Env<'_>| env.s.time as i64;
                $body
            }
            Field::Ip => {
                let $g = |env: &mut Env<'_>| env.s.ip as i64;
                $body
            }
            Field::Period => {
                let $g = |env: &mut Env<'_>| env.s.period as i64;
                $body
            }
        }
    };
}

/// One printf conversion with its argument (and `*` width/precision arguments).
struct PrintfArg {
    conv: format::Conv,
    width: Option<IntFn>,
    prec: Option<IntFn>,
    value: IntFn,
}

/// Compile options.
#[derive(Debug, Clone)]
pub struct Options {
    /// Distinct keys kept per aggregation (and `self->` variables per program); beyond it,
    /// new keys are dropped and counted.
    pub max_keys: usize,
    /// Quiet mode (`-q` or `#pragma D option quiet`).
    pub quiet: bool,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            max_keys: 100_000,
            quiet: false,
        }
    }
}

/// Whether a clause body records per firing (anything but aggregations, or nothing at all).
fn records(body: &[Stmt]) -> bool {
    fn any_non_agg(body: &[Stmt]) -> bool {
        body.iter().any(|s| match s {
            Stmt::Aggregate { .. } => false,
            Stmt::If(_, a, b) => any_non_agg(a) || any_non_agg(b),
            _ => true,
        })
    }
    body.is_empty() || any_non_agg(body)
}

struct Var {
    slot: usize,
    ty: Ty,
    /// Declared narrower than 64 bits: (bits, signed); assignments wrap to it as in C.
    narrow: Option<(u8, bool)>,
    /// Declared at top level (line), not typed by its first assignment.
    declared: Option<usize>,
}

impl Var {
    fn inferred(slot: usize, ty: Ty) -> Var {
        Var {
            slot,
            ty,
            narrow: None,
            declared: None,
        }
    }
}

/// A declared `this` variable: name, type, width, line.
type ThisDecl = (String, Ty, Option<(u8, bool)>, usize);

/// A declared type: the value type and the C width it wraps to.
fn decl_type(words: &str) -> Option<(Ty, Option<(u8, bool)>)> {
    if words.contains('*') {
        return Some((Ty::Addr, None));
    }
    // `short int`, `long int`, `unsigned int` mean the same without `int`.
    let w = words
        .strip_suffix(" int")
        .filter(|w| !w.is_empty())
        .unwrap_or(words);
    let w = w.strip_prefix("signed ").unwrap_or(w);
    Some(match w {
        "string" => (Ty::Str, None),
        "uintptr_t" | "caddr_t" => (Ty::Addr, None),
        "char" | "int8_t" => (Ty::Int, Some((8, true))),
        "unsigned char" | "uchar_t" | "uint8_t" => (Ty::Int, Some((8, false))),
        "short" | "int16_t" => (Ty::Int, Some((16, true))),
        "unsigned short" | "ushort_t" | "uint16_t" => (Ty::Int, Some((16, false))),
        "int" | "signed" | "int32_t" | "pid_t" | "id_t" | "boolean_t" => {
            (Ty::Int, Some((32, true)))
        }
        "unsigned" | "uint_t" | "uint32_t" | "uid_t" | "gid_t" => (Ty::Int, Some((32, false))),
        "long" | "long long" | "int64_t" | "intptr_t" | "ssize_t" | "off_t" | "hrtime_t"
        | "longlong_t" | "unsigned long" | "unsigned long long" | "uint64_t" | "size_t"
        | "ulong_t" | "u_longlong_t" => (Ty::Int, None),
        _ => return None,
    })
}

/// Wraps `v` to a declared width.
#[inline]
fn wrap_to(v: i64, narrow: Option<(u8, bool)>) -> i64 {
    match narrow {
        None => v,
        Some((bits, true)) => (v << (64 - bits)) >> (64 - bits),
        Some((bits, false)) => v & ((1i64 << bits) - 1),
    }
}

/// Every assignment in `stmts`, nested `if` branches included, in source order.
fn assignments<'a>(stmts: &'a [Stmt], out: &mut Vec<(&'a Target, &'a Expr)>) {
    for s in stmts {
        match s {
            Stmt::Assign(t, _, rhs, _) => out.push((t, rhs)),
            Stmt::If(_, a, b) => {
                assignments(a, out);
                assignments(b, out);
            }
            _ => {}
        }
    }
}

struct Cx<'s> {
    src: &'s str,
    /// Byte offsets where each line of `src` starts (line numbers by binary search: a
    /// program of 20,000 clauses took seconds counting newlines from the start each time).
    line_starts: Vec<usize>,
    globals: HashMap<String, Var>,
    selfs: HashMap<String, Var>,
    this: HashMap<String, Var>,
    aggs: Vec<AggDecl>,
    strings: Interner,
    args: Option<Result<ArgsKind, String>>,
    /// `this` declarations: (name, type, width, line).
    this_decls: Vec<ThisDecl>,
    /// Some expression names the sample's code location (`sym`, `mod`, `srcline`, `%a`,
    /// `offenders`): samples must come with their location resolved.
    locations: bool,
}

/// Functions that would reach outside the samples: refused with a reason.
const FORBIDDEN: &[&str] = &[
    "system",
    "copyin",
    "copyinstr",
    "copyout",
    "copyoutstr",
    "copyinto",
    "freopen",
    "raise",
    "stop",
    "panic",
    "chill",
    "breakpoint",
    "ustack",
    "stack",
    "jstack",
    "bcopy",
    "alloca",
    "speculate",
    "commit",
    "discard",
];
const ACTIONS: &[&str] = &[
    "printf",
    "printa",
    "trace",
    "trunc",
    "clear",
    "normalize",
    "denormalize",
    "exit",
];
const AGG_FUNCS: &[&str] = &[
    "count",
    "sum",
    "avg",
    "min",
    "max",
    "stddev",
    "quantize",
    "lquantize",
    "offenders",
];
const BUILTINS: &[&str] = &[
    "execname",
    "pid",
    "tid",
    "cpu",
    "timestamp",
    "ip",
    "period",
    "event",
    "sym",
    "mod",
    "srcline",
    "args",
];

/// Parses, checks and compiles a program.
pub fn compile(src: &str, opts: &Options) -> Result<Program, ScriptError> {
    let ast = crate::parser::parse(src)?;
    let mut quiet = opts.quiet;
    let mut max_keys = opts.max_keys;
    for (name, value, span) in &ast.options {
        match (name.as_str(), value) {
            ("quiet", None) => quiet = true,
            ("maxkeys" | "aggsize", Some(v)) => {
                max_keys = v.parse().ok().filter(|&n| n > 0).ok_or_else(|| {
                    ScriptError::at(
                        src,
                        *span,
                        "option error",
                        format!("`{name}` needs a positive integer"),
                    )
                })?;
            }
            ("bufsize" | "aggrate" | "switchrate" | "dynvarsize" | "strsize" | "flowindent", _) => {
                // DTrace tuning options with no meaning here: accepted so scripts run unchanged.
            }
            _ => {
                return Err(ScriptError::at(
                    src,
                    *span,
                    "option error",
                    format!(
                        "unknown option `{name}`{} (supported: quiet, maxkeys=N)",
                        hint(name, ["quiet", "maxkeys"])
                    ),
                ))
            }
        }
    }
    let mut cx = Cx {
        src,
        line_starts: std::iter::once(0)
            .chain(src.match_indices('\n').map(|(i, _)| i + 1))
            .collect(),
        globals: HashMap::new(),
        selfs: HashMap::new(),
        this: HashMap::new(),
        aggs: Vec::new(),
        strings: Interner::default(),
        args: None,
        this_decls: Vec::new(),
        locations: false,
    };
    cx.declare(&ast.decls)?;
    // Globals and self-> variables exist from their first assignment anywhere in the program
    // (so `/self->ts/` may precede the clause that sets it, and `n = n + 1` works); the type
    // is the first assignment's, checked again at every assignment.
    for c in &ast.clauses {
        let mut found = Vec::new();
        assignments(&c.body, &mut found);
        for (t, rhs) in found {
            let ty = cx.guess(rhs);
            let (map, name) = match t {
                Target::Global(n) => (&mut cx.globals, n),
                Target::SelfVar(n) => (&mut cx.selfs, n),
                Target::ThisVar(_) => continue,
            };
            let slot = map.len();
            map.entry(name.clone())
                .or_insert_with(|| Var::inferred(slot, ty));
        }
    }
    let mut infos = Vec::new();
    let mut clauses = Vec::new();
    let mut max_this = 0;
    for c in &ast.clauses {
        let (info, kind) = cx.probes(c)?;
        cx.args = kind;
        cx.this.clear();
        for (i, (n, ty, narrow, line)) in cx.this_decls.iter().enumerate() {
            cx.this.insert(
                n.clone(),
                Var {
                    slot: i,
                    ty: *ty,
                    narrow: *narrow,
                    declared: Some(*line),
                },
            );
        }
        // Clause-local variables: declared by any assignment in the clause.
        let mut found = Vec::new();
        assignments(&c.body, &mut found);
        for (t, rhs) in found {
            if let Target::ThisVar(n) = t {
                let ty = cx.guess(rhs);
                let slot = cx.this.len();
                cx.this
                    .entry(n.clone())
                    .or_insert_with(|| Var::inferred(slot, ty));
            }
        }
        let pred = match &c.predicate {
            Some(e) => {
                let (ty, f) = cx.expr(e)?;
                if ty == Ty::Str {
                    return Err(cx.type_err(e.span, "a predicate must be an integer, not a string"));
                }
                Some(f)
            }
            None => None,
        };
        let mut body = Vec::new();
        for s in &c.body {
            body.push(cx.stmt(s)?);
        }
        max_this = max_this.max(cx.this.len());
        clauses.push(CClause {
            pred,
            body,
            n_this: cx.this.len(),
            records: records(&c.body),
        });
        infos.push(info);
    }
    Ok(Program {
        infos,
        clauses,
        n_globals: cx.globals.len(),
        n_self: cx.selfs.len(),
        aggs: cx.aggs,
        strings: cx.strings,
        max_this,
        quiet,
        max_keys,
        locations: cx.locations,
    })
}

type Kind = Option<Result<ArgsKind, String>>;

impl Cx<'_> {
    /// The 1-based line of a span's start.
    fn line_of(&self, span: Span) -> usize {
        self.line_starts.partition_point(|&l| l <= span.start)
    }

    /// Top-level declarations: typed variables that exist before any assignment.
    fn declare(&mut self, decls: &[ast::Decl]) -> Result<(), ScriptError> {
        for d in decls {
            let Some((ty, narrow)) = decl_type(&d.ty) else {
                let known = [
                    "int",
                    "long",
                    "char",
                    "short",
                    "unsigned",
                    "int64_t",
                    "uint64_t",
                    "uint32_t",
                    "string",
                    "uintptr_t",
                    "void *",
                    "size_t",
                ];
                return Err(self.err(
                    d.ty_span,
                    "unknown type",
                    format!(
                        "unknown type `{}`{} (integers: char short int long, signed/unsigned, intN_t uintN_t size_t pid_t…; `string`; pointers and uintptr_t are addresses)",
                        d.ty,
                        hint(&d.ty, known)
                    ),
                ));
            };
            for (name, span) in &d.names {
                let line = self.line_of(*span);
                if d.scope == ast::Scope::Global
                    && (BUILTINS.contains(&name.as_str()) || name == "self" || name == "this")
                {
                    return Err(self.err(
                        *span,
                        "declaration error",
                        format!("`{name}` is a built-in variable and cannot be declared"),
                    ));
                }
                let prev = match d.scope {
                    ast::Scope::Global => self.globals.get(name).and_then(|v| v.declared),
                    ast::Scope::SelfVar => self.selfs.get(name).and_then(|v| v.declared),
                    ast::Scope::ThisVar => {
                        self.this_decls.iter().find(|x| &x.0 == name).map(|x| x.3)
                    }
                };
                if let Some(l) = prev {
                    return Err(self.err(
                        *span,
                        "declaration error",
                        format!("`{name}` is already declared (line {l})"),
                    ));
                }
                let var = |slot| Var {
                    slot,
                    ty,
                    narrow,
                    declared: Some(line),
                };
                match d.scope {
                    ast::Scope::Global => {
                        let slot = self.globals.len();
                        self.globals.insert(name.clone(), var(slot));
                    }
                    ast::Scope::SelfVar => {
                        let slot = self.selfs.len();
                        self.selfs.insert(name.clone(), var(slot));
                    }
                    ast::Scope::ThisVar => {
                        self.this_decls.push((name.clone(), ty, narrow, line));
                    }
                }
            }
        }
        Ok(())
    }

    /// The type an expression will have, without compiling it (for declaring variables up
    /// front; the compiler checks it for real at each assignment).
    fn guess(&self, e: &Expr) -> Ty {
        match &e.kind {
            ExprKind::Str(_) => Ty::Str,
            ExprKind::Name(n) => match n.as_str() {
                "execname" | "event" | "sym" | "mod" | "srcline" => Ty::Str,
                "ip" => Ty::Addr,
                _ => self.globals.get(n).map_or(Ty::Int, |v| v.ty),
            },
            ExprKind::SelfVar(n) => self.selfs.get(n).map_or(Ty::Int, |v| v.ty),
            ExprKind::ThisVar(n) => self.this.get(n).map_or(Ty::Int, |v| v.ty),
            ExprKind::Ternary(_, a, _) => self.guess(a),
            ExprKind::Binary(op, l, r) if matches!(*op, "+" | "-" | "&" | "|") => {
                if self.guess(l) == Ty::Addr || self.guess(r) == Ty::Addr {
                    Ty::Addr
                } else {
                    Ty::Int
                }
            }
            ExprKind::Args(_, path) => {
                let names: Vec<&str> = path.iter().map(|p| p.0.as_str()).collect();
                let addr = [ArgsKind::Op, ArgsKind::Fetch, ArgsKind::Pmc]
                    .iter()
                    .any(|k| fields::resolve(*k, &names).is_ok_and(|f| f.is_addr));
                if addr {
                    Ty::Addr
                } else {
                    Ty::Int
                }
            }
            _ => Ty::Int,
        }
    }

    fn err(&self, span: Span, kind: &'static str, msg: impl Into<String>) -> ScriptError {
        ScriptError::at(self.src, span, kind, msg)
    }

    fn type_err(&self, span: Span, msg: impl Into<String>) -> ScriptError {
        self.err(span, "type error", msg)
    }

    fn probes(&self, c: &ast::Clause) -> Result<(ClauseInfo, Kind), ScriptError> {
        let mut probes = Vec::new();
        let mut kinds: Vec<(ArgsKind, &str)> = Vec::new();
        let mut non_sample = false;
        for (text, span) in &c.probes {
            let p = probe::parse(text).map_err(|m| self.err(*span, "unknown probe", m))?;
            match &p {
                Probe::Begin | Probe::End | Probe::Tick { .. } => non_sample = true,
                Probe::IbsOp { .. } => kinds.push((ArgsKind::Op, text)),
                Probe::IbsFetch { .. } => kinds.push((ArgsKind::Fetch, text)),
                Probe::Pmc { .. } | Probe::Profile { .. } => kinds.push((ArgsKind::Pmc, text)),
            }
            probes.push((p, text.clone()));
        }
        let kind = match kinds.first() {
            None => Some(Err(
                "`args` is not available in BEGIN, END and tick clauses (they have no sample)"
                    .to_string(),
            )),
            Some(&(k, _)) => {
                if non_sample {
                    Some(Err("`args` is not available in a clause that mixes BEGIN/END/tick with sample probes".into()))
                } else if let Some((other, t)) = kinds.iter().find(|(o, _)| *o != k) {
                    Some(Err(format!(
                        "`args[0]` has no single type in this clause: `{}` gives {} but `{t}` gives {}",
                        kinds[0].1,
                        k.struct_name(),
                        other.struct_name()
                    )))
                } else {
                    Some(Ok(k))
                }
            }
        };
        let line = c.probes.first().map_or(1, |p| self.line_of(p.1));
        Ok((ClauseInfo { probes, line }, kind))
    }

    fn stmt(&mut self, s: &Stmt) -> Result<StmtFn, ScriptError> {
        match s {
            Stmt::Assign(target, op, rhs, span) => self.assign(target, op, rhs, *span),
            Stmt::Aggregate {
                name,
                keys,
                func,
                args,
                span,
                func_span,
            } => self.aggregate(name, keys, func, args, *span, *func_span),
            Stmt::If(cond, then, els) => {
                let (t, cf) = self.expr(cond)?;
                if t == Ty::Str {
                    return Err(self.type_err(
                        cond.span,
                        "an `if` condition must be an integer, not a string (compare it: `s == \"x\"`)",
                    ));
                }
                let then = then
                    .iter()
                    .map(|s| self.stmt(s))
                    .collect::<Result<Vec<_>, _>>()?;
                let els = els
                    .iter()
                    .map(|s| self.stmt(s))
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(Box::new(move |env: &mut Env<'_>| {
                    let c = cf(env);
                    if env.fault.is_some() {
                        return;
                    }
                    for st in if c != 0 { &then } else { &els } {
                        st(env);
                        if env.fault.is_some() {
                            return;
                        }
                    }
                }))
            }
            Stmt::Expr(e) => match &e.kind {
                ExprKind::Call(name, args) => self.action(name, args, e.span),
                _ => {
                    // An expression statement with no effect: DTrace accepts it; so do we.
                    let (_, f) = self.expr(e)?;
                    Ok(Box::new(move |env: &mut Env<'_>| {
                        f(env);
                    }))
                }
            },
        }
    }

    fn assign(
        &mut self,
        target: &Target,
        op: &'static str,
        rhs: &Expr,
        span: Span,
    ) -> Result<StmtFn, ScriptError> {
        let (rty, rf) = self.expr(rhs)?;
        let (scope, name) = match target {
            Target::Global(n) => (0, n),
            Target::SelfVar(n) => (1, n),
            Target::ThisVar(n) => (2, n),
        };
        if scope == 0 && (BUILTINS.contains(&name.as_str())) {
            return Err(self.err(
                span,
                "assignment error",
                format!("`{name}` is a built-in variable and cannot be assigned"),
            ));
        }
        let map = match scope {
            0 => &mut self.globals,
            1 => &mut self.selfs,
            _ => &mut self.this,
        };
        let n = map.len();
        let var = map
            .entry(name.clone())
            .or_insert_with(|| Var::inferred(n, rty));
        let (slot, ty, narrow) = (var.slot, var.ty, var.narrow);
        if op != "=" && !(ty.is_int() && rty.is_int()) {
            return Err(self.type_err(
                span,
                format!("`{op}=` needs integers; `{name}` is a {}", ty.name()),
            ));
        }
        if ty.is_int() != rty.is_int() {
            return Err(self.type_err(
                span,
                format!(
                    "`{name}` is a {} but is assigned a {}",
                    ty.name(),
                    rty.name()
                ),
            ));
        }
        let combine: Option<fn(i64, i64) -> Option<i64>> = match op {
            "=" => None,
            "+" => Some(|a, b| Some(a.wrapping_add(b))),
            "-" => Some(|a, b| Some(a.wrapping_sub(b))),
            "*" => Some(|a, b| Some(a.wrapping_mul(b))),
            "/" => Some(|a, b| (b != 0).then(|| a.wrapping_div(b))),
            "%" => Some(|a, b| (b != 0).then(|| a.wrapping_rem(b))),
            "&" => Some(|a, b| Some(a & b)),
            "|" => Some(|a, b| Some(a | b)),
            "^" => Some(|a, b| Some(a ^ b)),
            "<<" => Some(|a, b| Some(a.wrapping_shl(b as u32))),
            ">>" => Some(|a, b| Some(a.wrapping_shr(b as u32))),
            _ => None,
        };
        let value = move |env: &mut Env<'_>, old: i64| -> i64 {
            let v = rf(env);
            let v = match combine {
                None => v,
                Some(c) => c(old, v).unwrap_or_else(|| {
                    env.fault = Some("division by zero");
                    old
                }),
            };
            wrap_to(v, narrow)
        };
        Ok(match scope {
            0 => Box::new(move |env: &mut Env<'_>| {
                let old = env.rt.globals[slot];
                let v = value(env, old);
                env.rt.globals[slot] = v;
            }),
            1 => Box::new(move |env: &mut Env<'_>| {
                let key = (env.s.tid, slot as u32);
                let old = env.rt.selfs.get(&key).copied().unwrap_or(0);
                let v = value(env, old);
                env.rt.set_self(key, v);
            }),
            _ => Box::new(move |env: &mut Env<'_>| {
                let old = env.rt.this[slot];
                let v = value(env, old);
                env.rt.this[slot] = v;
            }),
        })
    }

    #[allow(clippy::too_many_arguments)]
    fn aggregate(
        &mut self,
        name: &str,
        keys: &[Expr],
        func: &str,
        args: &[Expr],
        span: Span,
        func_span: Span,
    ) -> Result<StmtFn, ScriptError> {
        if keys.len() > MAX_AGG_KEYS {
            return Err(self.err(
                keys[MAX_AGG_KEYS].span,
                "aggregation error",
                format!("at most {MAX_AGG_KEYS} keys"),
            ));
        }
        let mut key_fns = Vec::new();
        let mut key_types = Vec::new();
        for k in keys {
            let (t, f) = self.expr(k)?;
            key_types.push(t);
            key_fns.push(f);
        }
        let want = |n: usize| -> Result<(), ScriptError> {
            if args.len() != n {
                Err(self.err(
                    func_span,
                    "aggregation error",
                    format!(
                        "`{func}` takes {n} argument{}, got {}",
                        if n == 1 { "" } else { "s" },
                        args.len()
                    ),
                ))
            } else {
                Ok(())
            }
        };
        let f = match func {
            "count" => {
                want(0)?;
                Func::Count
            }
            "sum" => Func::Sum,
            "avg" => Func::Avg,
            "min" => Func::Min,
            "max" => Func::Max,
            "stddev" => Func::Stddev,
            "quantize" => Func::Quantize,
            "lquantize" => {
                if !(args.len() == 3 || args.len() == 4) {
                    return Err(self.err(
                        func_span,
                        "aggregation error",
                        "`lquantize(value, lower, upper[, step])` takes 3 or 4 arguments",
                    ));
                }
                let c = |e: &Expr| match e.kind {
                    ExprKind::Int(v) => Ok(v),
                    ExprKind::Unary("-", ref inner) => match inner.kind {
                        ExprKind::Int(v) => Ok(v.wrapping_neg()),
                        _ => Err(self.err(
                            e.span,
                            "aggregation error",
                            "lquantize bounds must be integer constants",
                        )),
                    },
                    _ => Err(self.err(
                        e.span,
                        "aggregation error",
                        "lquantize bounds must be integer constants",
                    )),
                };
                let lo = c(&args[1])?;
                let hi = c(&args[2])?;
                let step = if args.len() == 4 { c(&args[3])? } else { 1 };
                if step <= 0 || hi <= lo {
                    return Err(self.err(
                        span,
                        "aggregation error",
                        "lquantize needs lower < upper and step > 0",
                    ));
                }
                let n = (hi as i128 - lo as i128) / step as i128;
                if n > 10_000 {
                    return Err(self.err(
                        span,
                        "aggregation error",
                        format!("lquantize with {n} buckets (at most 10000)"),
                    ));
                }
                if (hi as i128 - lo as i128) % step as i128 != 0 {
                    return Err(self.err(
                        span,
                        "aggregation error",
                        "lquantize: upper - lower must be a multiple of step",
                    ));
                }
                Func::Lquantize { lo, hi, step }
            }
            "offenders" => {
                if !(args.len() == 1 || args.len() == 3) {
                    return Err(self.err(
                        func_span,
                        "aggregation error",
                        format!(
                            "`offenders(address[, t1, t2])` takes 1 or 3 arguments, got {}",
                            args.len()
                        ),
                    ));
                }
                let (t1, t2) = if args.len() == 3 {
                    let c = |e: &Expr| {
                        match e.kind {
                        ExprKind::Int(v) if v > 0 => Ok(v as u64),
                        _ => Err(self.err(
                            e.span,
                            "aggregation error",
                            "offenders thresholds t1 and t2 must be positive integer constants (samples)",
                        )),
                    }
                    };
                    (c(&args[1])?, c(&args[2])?)
                } else {
                    (
                        culprit_analysis::offenders::DEFAULT_T1_SAMPLES,
                        culprit_analysis::offenders::DEFAULT_T2_SAMPLES,
                    )
                };
                if t2 > t1 {
                    return Err(self.err(
                        args[2].span,
                        "aggregation error",
                        format!("offenders: t2 ({t2}) must not exceed t1 ({t1}): no candidate could ever be confirmed"),
                    ));
                }
                Func::Offenders { t1, t2 }
            }
            other => {
                let extra = if ACTIONS.contains(&other) {
                    format!(" (`{other}` is an action, not an aggregating function)")
                } else {
                    hint(other, AGG_FUNCS.iter().copied())
                };
                return Err(self.err(
                    func_span,
                    "unknown function",
                    format!("unknown aggregating function `{other}`{extra}"),
                ));
            }
        };
        if !matches!(
            f,
            Func::Count | Func::Lquantize { .. } | Func::Offenders { .. }
        ) {
            want(1)?;
        }
        // offenders(ip) keys the detector by the sample's location (DSO + offset, as
        // `report --offenders`); any other address is its own location.
        let by_ip = matches!(&args.first().map(|a| &a.kind), Some(ExprKind::Name(n)) if n == "ip");
        let arg = match args.first() {
            Some(a) if f != Func::Count => {
                let (t, af) = self.expr(a)?;
                if t == Ty::Str {
                    return Err(
                        self.type_err(a.span, format!("`{func}` needs an integer, not a string"))
                    );
                }
                Some(af)
            }
            _ => None,
        };
        let idx = match self.aggs.iter().position(|a| a.name == name) {
            Some(i) => {
                let a = &self.aggs[i];
                if a.func != f {
                    return Err(self.type_err(
                        span,
                        format!(
                            "@{name} was {}() and is now {func}(): one function per aggregation",
                            a.func.name()
                        ),
                    ));
                }
                if a.key_types.len() != key_types.len()
                    || a.key_types
                        .iter()
                        .zip(&key_types)
                        .any(|(x, y)| x.is_int() != y.is_int())
                {
                    let show = |t: &[Ty]| t.iter().map(|t| t.name()).collect::<Vec<_>>().join(", ");
                    return Err(self.type_err(
                        span,
                        format!(
                            "@{name} has keys [{}] elsewhere but [{}] here",
                            show(&a.key_types),
                            show(&key_types)
                        ),
                    ));
                }
                i
            }
            None => {
                self.aggs.push(AggDecl {
                    name: name.to_string(),
                    func: f,
                    key_types,
                });
                self.aggs.len() - 1
            }
        };
        let n = key_fns.len();
        if matches!(f, Func::Offenders { .. }) {
            // Keyed and named by the sample's location.
            self.locations = true;
        }
        let (arg, off_arg) = match (f, arg) {
            (Func::Offenders { .. }, a) => (None, a),
            (_, a) => (None.or(a), None),
        };
        if let Some(arg) = off_arg {
            return Ok(Box::new(move |env: &mut Env<'_>| {
                let mut buf = [0i64; MAX_AGG_KEYS];
                for (slot, k) in buf.iter_mut().zip(&key_fns) {
                    *slot = k(env);
                }
                let v = arg(env) as u64;
                let location = if by_ip {
                    env.s.location
                } else {
                    Location {
                        dso: None,
                        file_offset: v,
                    }
                };
                let o = Observation {
                    location,
                    ip: v,
                    pid: env.s.pid,
                    period: env.s.period,
                    time: env.s.time,
                };
                if let Some((loc, ip, pid)) = env.rt.aggs[idx].observe(&buf[..n], &o) {
                    let name = if by_ip {
                        env.symbol_at(What::Addr, loc, ip, pid)
                    } else {
                        env.rt.strings.intern(&format!("0x{ip:x}"))
                    };
                    env.rt.aggs[idx].name_offender(&buf[..n], loc, name);
                }
            }));
        }
        let _ = n;
        Ok(match (arg, args.first().and_then(field_of)) {
            (Some(_), Some(f)) => by_field!(f, g => agg_stmt(idx, key_fns, g)),
            (Some(a), None) => agg_stmt(idx, key_fns, move |env: &mut Env<'_>| a(env)),
            (None, _) => agg_stmt(idx, key_fns, |_: &mut Env<'_>| 0),
        })
    }

    fn agg_ref(&self, e: &Expr) -> Result<usize, ScriptError> {
        match &e.kind {
            ExprKind::AggRef(name) => {
                self.aggs
                    .iter()
                    .position(|a| &a.name == name)
                    .ok_or_else(|| {
                        self.err(
                            e.span,
                            "unknown aggregation",
                            format!(
                                "@{name} is not assigned before this point{}",
                                hint(name, self.aggs.iter().map(|a| a.name.as_str()))
                            ),
                        )
                    })
            }
            _ => Err(self.type_err(e.span, "expected an aggregation (`@name`)")),
        }
    }

    fn int_arg(&mut self, e: &Expr) -> Result<IntFn, ScriptError> {
        let (t, f) = self.expr(e)?;
        if t == Ty::Str {
            return Err(self.type_err(e.span, "expected an integer, found a string"));
        }
        Ok(f)
    }

    fn action(&mut self, name: &str, args: &[Expr], span: Span) -> Result<StmtFn, ScriptError> {
        let arity = |lo: usize, hi: usize| -> Result<(), ScriptError> {
            if args.len() < lo || args.len() > hi {
                Err(self.err(
                    span,
                    "call error",
                    format!(
                        "`{name}` takes {}, got {}",
                        if lo == hi {
                            format!("{lo} argument(s)")
                        } else {
                            format!("{lo} to {hi} arguments")
                        },
                        args.len()
                    ),
                ))
            } else {
                Ok(())
            }
        };
        match name {
            "printf" => {
                if args.is_empty() {
                    return Err(self.err(span, "call error", "`printf` needs a format string"));
                }
                let pieces = self.format(&args[0], false)?;
                let mut argf: Vec<PrintfArg> = Vec::new();
                let mut ai = 1;
                for p in &pieces {
                    if let Piece::Conv(c) = p {
                        let mut next =
                            |cx: &mut Self, what: &str| -> Result<(Ty, IntFn, Span), ScriptError> {
                                let Some(a) = args.get(ai) else {
                                    return Err(cx.err(
                                    args[0].span,
                                    "format error",
                                    format!(
                                        "the format needs more arguments than the {} given (missing {what})",
                                        args.len() - 1
                                    ),
                                ));
                                };
                                ai += 1;
                                let (t, f) = cx.expr(a)?;
                                Ok((t, f, a.span))
                            };
                        let mut star =
                            |cx: &mut Self,
                             on: bool,
                             what: &str|
                             -> Result<Option<IntFn>, ScriptError> {
                                if !on {
                                    return Ok(None);
                                }
                                let (t, f, span) = next(cx, what)?;
                                if t == Ty::Str {
                                    return Err(cx.type_err(span, format!("`*` {what} must be an integer, this argument is a string")));
                                }
                                Ok(Some(f))
                            };
                        let width = star(self, c.width_arg, "width")?;
                        let prec = star(self, c.prec_arg, "precision")?;
                        let (t, f, span) = next(self, "a value")?;
                        if c.is_float() {
                            return Err(self.type_err(
                                span,
                                format!(
                                    "`%{}` needs a floating-point value, and the trace language's values are 64-bit integers or strings (use `%d`; avg() and stddev() print with decimals through printa's `%@{}`)",
                                    c.conv, c.conv
                                ),
                            ));
                        }
                        if (c.conv == 's') != (t == Ty::Str) {
                            return Err(self.type_err(
                                span,
                                format!(
                                    "`%{}` expects {}, this argument is a {}",
                                    c.conv,
                                    if c.conv == 's' {
                                        "a string"
                                    } else if c.is_symbol() {
                                        "an address"
                                    } else {
                                        "an integer"
                                    },
                                    t.name()
                                ),
                            ));
                        }
                        if c.is_symbol() {
                            self.locations = true;
                        }
                        argf.push(PrintfArg {
                            conv: c.clone(),
                            width,
                            prec,
                            value: f,
                        });
                    }
                }
                if ai < args.len() {
                    return Err(self.err(
                        args[ai].span,
                        "format error",
                        "more arguments than the format has conversions",
                    ));
                }
                Ok(Box::new(move |env: &mut Env<'_>| {
                    let mut it = argf.iter();
                    let mut out = std::mem::take(&mut env.rt.out);
                    for p in &pieces {
                        match p {
                            Piece::Lit(l) => out.push_str(l),
                            Piece::Conv(_) => {
                                if let Some(a) = it.next() {
                                    let starred;
                                    let c = if a.width.is_some() || a.prec.is_some() {
                                        let w = a.width.as_ref().map(|f| f(env));
                                        let p = a.prec.as_ref().map(|f| f(env));
                                        starred = a.conv.with_args(w, p);
                                        &starred
                                    } else {
                                        &a.conv
                                    };
                                    let v = (a.value)(env);
                                    if c.conv == 's' {
                                        format::string(&mut out, c, env.rt.strings.get(v as u32));
                                    } else if c.is_symbol() {
                                        match env.addr_name(v) {
                                            Some(id) => {
                                                format::string(&mut out, c, env.rt.strings.get(id))
                                            }
                                            None => format::string(
                                                &mut out,
                                                c,
                                                &format!("0x{:x}", v as u64),
                                            ),
                                        }
                                    } else {
                                        format::int(&mut out, c, v);
                                    }
                                }
                            }
                        }
                    }
                    env.rt.out = out;
                }))
            }
            "trace" => {
                arity(1, 1)?;
                let (t, f) = self.expr(&args[0])?;
                Ok(Box::new(move |env: &mut Env<'_>| {
                    let v = f(env);
                    let text = match t {
                        Ty::Str => env.rt.strings.get(v as u32).to_string(),
                        Ty::Addr => format!("0x{:x}", v as u64),
                        Ty::Int => v.to_string(),
                    };
                    env.rt.out.push_str(&text);
                    env.rt.out.push('\n');
                }))
            }
            "printa" => {
                let (pieces, agg_es) = match args.first().map(|a| &a.kind) {
                    Some(ExprKind::Str(_)) => (Some(self.format(&args[0], true)?), &args[1..]),
                    _ => (None, args),
                };
                if agg_es.is_empty() {
                    return Err(self.err(
                        span,
                        "call error",
                        "`printa` takes an aggregation: `printa(@a)`, `printa(fmt, @a[, @b…])`",
                    ));
                }
                let idxs = agg_es
                    .iter()
                    .map(|e| self.agg_ref(e))
                    .collect::<Result<Vec<usize>, _>>()?;
                let first = &self.aggs[idxs[0]];
                let show = |t: &[Ty]| t.iter().map(|t| t.name()).collect::<Vec<_>>().join(", ");
                for (e, &i) in agg_es.iter().zip(&idxs).skip(1) {
                    let other = &self.aggs[i];
                    if other.key_types.len() != first.key_types.len()
                        || other
                            .key_types
                            .iter()
                            .zip(&first.key_types)
                            .any(|(x, y)| x.is_int() != y.is_int())
                    {
                        return Err(self.type_err(
                            e.span,
                            format!(
                                "@{} has keys [{}] but @{} has [{}]: aggregations printed together must have the same key types",
                                other.name,
                                show(&other.key_types),
                                first.name,
                                show(&first.key_types)
                            ),
                        ));
                    }
                }
                if let Some(p) = &pieces {
                    let decl = first;
                    let convs: Vec<&format::Conv> = p
                        .iter()
                        .filter_map(|x| match x {
                            Piece::Conv(c) if !c.agg => Some(c),
                            _ => None,
                        })
                        .collect();
                    let aggs_convs: Vec<&format::Conv> = p
                        .iter()
                        .filter_map(|x| match x {
                            Piece::Conv(c) if c.agg => Some(c),
                            _ => None,
                        })
                        .collect();
                    if convs.len() > decl.key_types.len() {
                        return Err(self.err(
                            args[0].span,
                            "format error",
                            format!(
                                "the format has {} key conversions but @{} has {} key(s)",
                                convs.len(),
                                decl.name,
                                decl.key_types.len()
                            ),
                        ));
                    }
                    if idxs.len() > 1 && aggs_convs.len() != idxs.len() {
                        return Err(self.err(
                            args[0].span,
                            "format error",
                            format!(
                                "the format has {} `%@` conversion(s) for {} aggregations (one each, in order)",
                                aggs_convs.len(),
                                idxs.len()
                            ),
                        ));
                    }
                    for (c, t) in convs.iter().zip(&decl.key_types) {
                        let ok = match c.conv {
                            's' => *t == Ty::Str,
                            'f' | 'e' | 'E' | 'g' | 'G' => false,
                            _ => t.is_int(),
                        };
                        if !ok {
                            return Err(self.type_err(
                                args[0].span,
                                format!(
                                    "`%{}` does not fit a {} key of @{}",
                                    c.conv,
                                    t.name(),
                                    decl.name
                                ),
                            ));
                        }
                    }
                    for (j, c) in aggs_convs.iter().enumerate() {
                        let a = &self.aggs[idxs[j.min(idxs.len() - 1)]];
                        if c.is_float() && !matches!(a.func, Func::Avg | Func::Stddev) {
                            return Err(self.type_err(
                                args[0].span,
                                format!(
                                    "`%@{}` prints avg() and stddev() values with decimals; @{} is {}(), an integer (use `%@d`)",
                                    c.conv,
                                    a.name,
                                    a.func.name()
                                ),
                            ));
                        }
                    }
                }
                Ok(Box::new(move |env: &mut Env<'_>| {
                    env.rt.printa(&idxs, pieces.as_deref())
                }))
            }
            "trunc" => {
                arity(1, 2)?;
                let idx = self.agg_ref(&args[0])?;
                let n = match args.get(1) {
                    Some(e) => Some(self.int_arg(e)?),
                    None => None,
                };
                Ok(Box::new(move |env: &mut Env<'_>| {
                    let n = n.as_ref().map(|f| f(env));
                    let rt = &mut *env.rt;
                    rt.aggs[idx].trunc(n, &rt.strings);
                }))
            }
            "clear" => {
                arity(1, 1)?;
                let idx = self.agg_ref(&args[0])?;
                Ok(Box::new(move |env: &mut Env<'_>| env.rt.aggs[idx].clear()))
            }
            "normalize" => {
                arity(2, 2)?;
                let idx = self.agg_ref(&args[0])?;
                let n = self.int_arg(&args[1])?;
                Ok(Box::new(move |env: &mut Env<'_>| {
                    let v = n(env);
                    if v <= 0 {
                        env.fault = Some("normalize by a non-positive value");
                    } else {
                        env.rt.aggs[idx].norm = v;
                    }
                }))
            }
            "denormalize" => {
                arity(1, 1)?;
                let idx = self.agg_ref(&args[0])?;
                Ok(Box::new(move |env: &mut Env<'_>| env.rt.aggs[idx].norm = 1))
            }
            "exit" => {
                arity(1, 1)?;
                let f = self.int_arg(&args[0])?;
                Ok(Box::new(move |env: &mut Env<'_>| {
                    let v = f(env);
                    env.rt.exit.get_or_insert(v);
                }))
            }
            _ => {
                let (_, f) = self.expr(&Expr {
                    kind: ExprKind::Call(name.to_string(), args.to_vec()),
                    span,
                })?;
                Ok(Box::new(move |env: &mut Env<'_>| {
                    f(env);
                }))
            }
        }
    }

    fn format(&mut self, e: &Expr, printa: bool) -> Result<Vec<Piece>, ScriptError> {
        let ExprKind::Str(s) = &e.kind else {
            return Err(self.type_err(e.span, "the format must be a string literal"));
        };
        let pieces = format::parse(s).map_err(|(_, m)| self.err(e.span, "format error", m))?;
        let has_agg = pieces.iter().any(|p| matches!(p, Piece::Conv(c) if c.agg));
        if has_agg && !printa {
            return Err(self.err(e.span, "format error", "`%@` conversions are for printa"));
        }
        Ok(pieces)
    }

    fn expr(&mut self, e: &Expr) -> Result<(Ty, IntFn), ScriptError> {
        match &e.kind {
            ExprKind::Int(v) => {
                let v = *v;
                Ok((Ty::Int, Box::new(move |_: &mut Env<'_>| v)))
            }
            ExprKind::Str(s) => {
                let id = i64::from(self.strings.intern(s));
                Ok((Ty::Str, Box::new(move |_: &mut Env<'_>| id)))
            }
            ExprKind::Name(n) => self.name(n, e.span),
            ExprKind::SelfVar(n) => {
                let Some(v) = self.selfs.get(n) else {
                    return Err(self.err(e.span, "unknown variable", format!(
                        "`self->{n}` is used before any assignment{}",
                        hint(n, self.selfs.keys().map(String::as_str))
                    )));
                };
                let slot = v.slot as u32;
                Ok((v.ty, Box::new(move |env: &mut Env<'_>| {
                    env.rt.selfs.get(&(env.s.tid, slot)).copied().unwrap_or(0)
                })))
            }
            ExprKind::ThisVar(n) => {
                let Some(v) = self.this.get(n) else {
                    return Err(self.err(e.span, "unknown variable", format!(
                        "`this->{n}` is used before any assignment in this clause{}",
                        hint(n, self.this.keys().map(String::as_str))
                    )));
                };
                let slot = v.slot;
                Ok((v.ty, Box::new(move |env: &mut Env<'_>| env.rt.this[slot])))
            }
            ExprKind::Args(index, path) => self.args(*index, path, e.span),
            ExprKind::Unary(op, inner) => {
                let (t, f) = self.expr(inner)?;
                if t == Ty::Str {
                    return Err(self.type_err(e.span, format!("`{op}` needs an integer, not a string")));
                }
                let f: IntFn = match *op {
                    "-" => Box::new(move |env: &mut Env<'_>| f(env).wrapping_neg()),
                    "!" => Box::new(move |env: &mut Env<'_>| i64::from(f(env) == 0)),
                    "~" => Box::new(move |env: &mut Env<'_>| !f(env)),
                    _ => f,
                };
                Ok((if *op == "!" { Ty::Int } else { t }, f))
            }
            ExprKind::Binary(op, l, r) => self.binary(op, l, r, e.span),
            ExprKind::Ternary(c, a, b) => {
                let (ct, cf) = self.expr(c)?;
                if ct == Ty::Str {
                    return Err(self.type_err(c.span, "the condition must be an integer"));
                }
                let (at, af) = self.expr(a)?;
                let (bt, bf) = self.expr(b)?;
                if at.is_int() != bt.is_int() {
                    return Err(self.type_err(e.span, format!("the branches have different types: {} and {}", at.name(), bt.name())));
                }
                let t = if at == bt { at } else { Ty::Int };
                Ok((t, Box::new(move |env: &mut Env<'_>| if cf(env) != 0 { af(env) } else { bf(env) })))
            }
            ExprKind::Call(name, _) => {
                let n = name.as_str();
                let msg = if FORBIDDEN.contains(&n) {
                    format!("`{n}` is not allowed: a trace program only reads samples (no commands, file writes or memory reads)")
                } else if ACTIONS.contains(&n) {
                    format!("`{n}` is an action: it is a statement of its own, not a value")
                } else if AGG_FUNCS.contains(&n) {
                    format!("`{n}` is an aggregating function: use it as `@name[keys] = {n}(…)`")
                } else {
                    format!(
                        "unknown function `{n}`{}",
                        hint(n, ACTIONS.iter().chain(AGG_FUNCS).copied())
                    )
                };
                Err(self.err(e.span, "unknown function", msg))
            }
            ExprKind::AggRef(name) => Err(self.type_err(e.span, format!(
                "@{name} is an aggregation: it can only be printed (printa), truncated, cleared or normalized"
            ))),
        }
    }

    fn name(&mut self, n: &str, span: Span) -> Result<(Ty, IntFn), ScriptError> {
        if matches!(n, "sym" | "mod" | "srcline") {
            self.locations = true;
        }
        let f: (Ty, IntFn) = match n {
            "execname" => (Ty::Str, Box::new(|env: &mut Env<'_>| env.execname())),
            "pid" => (Ty::Int, Box::new(|env: &mut Env<'_>| i64::from(env.s.pid))),
            "tid" => (Ty::Int, Box::new(|env: &mut Env<'_>| i64::from(env.s.tid))),
            "cpu" => (Ty::Int, Box::new(|env: &mut Env<'_>| i64::from(env.s.cpu))),
            "timestamp" => (Ty::Int, Box::new(|env: &mut Env<'_>| env.s.time as i64)),
            "ip" => (Ty::Addr, Box::new(|env: &mut Env<'_>| env.s.ip as i64)),
            "period" => (Ty::Int, Box::new(|env: &mut Env<'_>| env.s.period as i64)),
            "event" => (Ty::Str, Box::new(|env: &mut Env<'_>| env.event_name())),
            "sym" => (Ty::Str, Box::new(|env: &mut Env<'_>| env.symbol(What::Sym))),
            "mod" => (Ty::Str, Box::new(|env: &mut Env<'_>| env.symbol(What::Mod))),
            "srcline" => (
                Ty::Str,
                Box::new(|env: &mut Env<'_>| env.symbol(What::Srcline)),
            ),
            _ => {
                if let Some(v) = self.globals.get(n) {
                    let slot = v.slot;
                    return Ok((
                        v.ty,
                        Box::new(move |env: &mut Env<'_>| env.rt.globals[slot]),
                    ));
                }
                let mut names: Vec<&str> = BUILTINS.to_vec();
                names.extend(self.globals.keys().map(String::as_str));
                let extra = if n == "arg0" || n == "arg1" {
                    " (use `args[0]->FIELD` for the sample's fields)".to_string()
                } else {
                    hint(n, names)
                };
                return Err(self.err(
                    span,
                    "unknown variable",
                    format!(
                    "`{n}` is not a built-in variable and is not assigned before this point{extra}"
                ),
                ));
            }
        };
        Ok(f)
    }

    fn args(
        &mut self,
        index: i64,
        path: &[(String, Span)],
        span: Span,
    ) -> Result<(Ty, IntFn), ScriptError> {
        let kind = match &self.args {
            Some(Ok(k)) => *k,
            Some(Err(m)) => return Err(self.err(span, "type error", m.clone())),
            None => return Err(self.err(span, "type error", "`args` outside a clause")),
        };
        if index != 0 {
            return Err(self.err(
                span,
                "unknown field",
                format!("only `args[0]` exists (the {})", kind.struct_name()),
            ));
        }
        let names: Vec<&str> = path.iter().map(|p| p.0.as_str()).collect();
        let f = fields::resolve(kind, &names).map_err(|(i, m)| {
            let at = path.get(i).map_or(span, |p| p.1);
            self.err(at, "unknown field", m)
        })?;
        let ty = if f.is_addr { Ty::Addr } else { Ty::Int };
        let func: IntFn = match f.source {
            Source::Reg { reg, lo, width } => {
                let off = 4 + 8 * reg as usize;
                let mask = if width >= 64 {
                    u64::MAX
                } else {
                    (1u64 << width) - 1
                };
                Box::new(
                    move |env: &mut Env<'_>| match env.p.raw(env.s).get(off..off + 8) {
                        Some(b) => {
                            let mut a = [0u8; 8];
                            a.copy_from_slice(b);
                            ((u64::from_le_bytes(a) >> lo) & mask) as i64
                        }
                        None => 0,
                    },
                )
            }
            Source::Cpu => Box::new(|env: &mut Env<'_>| i64::from(env.s.cpu)),
            Source::Addr => Box::new(|env: &mut Env<'_>| env.s.addr.unwrap_or(0) as i64),
            Source::Weight => Box::new(|env: &mut Env<'_>| env.s.weight.unwrap_or(0) as i64),
            Source::Weight2 => Box::new(|env: &mut Env<'_>| {
                env.s
                    .weight_struct
                    .map_or(0, |w| ((w >> 32) & 0xffff) as i64)
            }),
            Source::PhysAddr => Box::new(|env: &mut Env<'_>| env.s.phys_addr.unwrap_or(0) as i64),
            Source::DataSrc { lo, width } => {
                let mask = if width >= 64 {
                    u64::MAX
                } else {
                    (1u64 << width) - 1
                };
                Box::new(move |env: &mut Env<'_>| {
                    ((env.s.data_src.unwrap_or(0) >> lo) & mask) as i64
                })
            }
        };
        Ok((ty, func))
    }

    fn binary(
        &mut self,
        op: &'static str,
        l: &Expr,
        r: &Expr,
        span: Span,
    ) -> Result<(Ty, IntFn), ScriptError> {
        let (lt, lf) = self.expr(l)?;
        let (rt, rf) = self.expr(r)?;
        let cmp = matches!(op, "==" | "!=" | "<" | "<=" | ">" | ">=");
        if cmp {
            if lt.is_int() != rt.is_int() {
                return Err(self.type_err(
                    span,
                    format!("cannot compare a {} with a {}", lt.name(), rt.name()),
                ));
            }
            if lt == Ty::Str {
                if op == "==" || op == "!=" {
                    // Interned: equal strings have equal ids.
                    let eq = op == "==";
                    return Ok((
                        Ty::Int,
                        Box::new(move |env: &mut Env<'_>| i64::from((lf(env) == rf(env)) == eq)),
                    ));
                }
                let f: fn(std::cmp::Ordering) -> bool = match op {
                    "<" => |o| o.is_lt(),
                    "<=" => |o| o.is_le(),
                    ">" => |o| o.is_gt(),
                    _ => |o| o.is_ge(),
                };
                return Ok((
                    Ty::Int,
                    Box::new(move |env: &mut Env<'_>| {
                        let (a, b) = (lf(env), rf(env));
                        let s = &env.rt.strings;
                        i64::from(f(s.get(a as u32).cmp(s.get(b as u32))))
                    }),
                ));
            }
        } else if lt == Ty::Str || rt == Ty::Str {
            let which = if lt == Ty::Str { l.span } else { r.span };
            return Err(self.type_err(which, format!("`{op}` needs integers, not a string")));
        }
        let unsigned = lt == Ty::Addr || rt == Ty::Addr;
        if let ExprKind::Int(c) = r.kind {
            if const_op(op) {
                let ty = if cmp {
                    Ty::Int
                } else if matches!(op, "+" | "-" | "&" | "|") && unsigned {
                    Ty::Addr
                } else {
                    Ty::Int
                };
                // `field OP constant` reads the field in the same closure (one call).
                if let Some(f) = field_of(l) {
                    return Ok((ty, by_field!(f, g => with_constant(op, g, c, unsigned))));
                }
                return Ok((ty, with_constant(op, lf, c, unsigned)));
            }
        }
        self.binary_fns(op, lf, rf, unsigned, cmp, span)
    }

    #[allow(clippy::too_many_arguments)]
    fn binary_fns(
        &mut self,
        op: &'static str,
        lf: IntFn,
        rf: IntFn,
        unsigned: bool,
        cmp: bool,
        span: Span,
    ) -> Result<(Ty, IntFn), ScriptError> {
        macro_rules! bin {
            ($a:ident, $b:ident, $e:expr) => {
                Box::new(move |env: &mut Env<'_>| {
                    let $a = lf(env);
                    let $b = rf(env);
                    $e
                }) as IntFn
            };
        }
        let f: IntFn = match op {
            "+" => bin!(a, b, a.wrapping_add(b)),
            "-" => bin!(a, b, a.wrapping_sub(b)),
            "*" => bin!(a, b, a.wrapping_mul(b)),
            "/" | "%" => {
                let div = op == "/";
                Box::new(move |env: &mut Env<'_>| {
                    let a = lf(env);
                    let b = rf(env);
                    if b == 0 {
                        env.fault = Some("division by zero");
                        return 0;
                    }
                    match (div, unsigned) {
                        (true, false) => a.wrapping_div(b),
                        (false, false) => a.wrapping_rem(b),
                        (true, true) => ((a as u64) / (b as u64)) as i64,
                        (false, true) => ((a as u64) % (b as u64)) as i64,
                    }
                })
            }
            "&" => bin!(a, b, a & b),
            "|" => bin!(a, b, a | b),
            "^" => bin!(a, b, a ^ b),
            "<<" => bin!(a, b, a.wrapping_shl(b as u32)),
            ">>" => {
                if unsigned {
                    bin!(a, b, ((a as u64).wrapping_shr(b as u32)) as i64)
                } else {
                    bin!(a, b, a.wrapping_shr(b as u32))
                }
            }
            "==" => bin!(a, b, i64::from(a == b)),
            "!=" => bin!(a, b, i64::from(a != b)),
            "<" if unsigned => bin!(a, b, i64::from((a as u64) < (b as u64))),
            "<=" if unsigned => bin!(a, b, i64::from((a as u64) <= (b as u64))),
            ">" if unsigned => bin!(a, b, i64::from((a as u64) > (b as u64))),
            ">=" if unsigned => bin!(a, b, i64::from((a as u64) >= (b as u64))),
            "<" => bin!(a, b, i64::from(a < b)),
            "<=" => bin!(a, b, i64::from(a <= b)),
            ">" => bin!(a, b, i64::from(a > b)),
            ">=" => bin!(a, b, i64::from(a >= b)),
            "&&" => Box::new(move |env: &mut Env<'_>| i64::from(lf(env) != 0 && rf(env) != 0)),
            "||" => Box::new(move |env: &mut Env<'_>| i64::from(lf(env) != 0 || rf(env) != 0)),
            "^^" => bin!(a, b, i64::from((a != 0) != (b != 0))),
            _ => return Err(self.err(span, "syntax error", format!("unknown operator `{op}`"))),
        };
        let ty = if cmp || matches!(op, "&&" | "||" | "^^") {
            Ty::Int
        } else if matches!(op, "+" | "-" | "&" | "|") && unsigned {
            Ty::Addr
        } else {
            Ty::Int
        };
        Ok((ty, f))
    }
}

/// `x OP constant` for the common operators, as one closure (`lf` is a compiled expression
/// or, inlined, a sample field's getter).
fn with_constant<F: Fn(&mut Env<'_>) -> i64 + 'static>(
    op: &str,
    lf: F,
    c: i64,
    unsigned: bool,
) -> IntFn {
    let u = c as u64;
    match (op, unsigned) {
        ("==", _) => Box::new(move |env: &mut Env<'_>| i64::from(lf(env) == c)),
        ("!=", _) => Box::new(move |env: &mut Env<'_>| i64::from(lf(env) != c)),
        ("<", false) => Box::new(move |env: &mut Env<'_>| i64::from(lf(env) < c)),
        ("<=", false) => Box::new(move |env: &mut Env<'_>| i64::from(lf(env) <= c)),
        (">", false) => Box::new(move |env: &mut Env<'_>| i64::from(lf(env) > c)),
        (">=", false) => Box::new(move |env: &mut Env<'_>| i64::from(lf(env) >= c)),
        ("<", true) => Box::new(move |env: &mut Env<'_>| i64::from((lf(env) as u64) < u)),
        ("<=", true) => Box::new(move |env: &mut Env<'_>| i64::from((lf(env) as u64) <= u)),
        (">", true) => Box::new(move |env: &mut Env<'_>| i64::from((lf(env) as u64) > u)),
        (">=", true) => Box::new(move |env: &mut Env<'_>| i64::from((lf(env) as u64) >= u)),
        ("+", _) => Box::new(move |env: &mut Env<'_>| lf(env).wrapping_add(c)),
        ("-", _) => Box::new(move |env: &mut Env<'_>| lf(env).wrapping_sub(c)),
        ("*", _) => Box::new(move |env: &mut Env<'_>| lf(env).wrapping_mul(c)),
        ("&", _) => Box::new(move |env: &mut Env<'_>| lf(env) & c),
        ("|", _) => Box::new(move |env: &mut Env<'_>| lf(env) | c),
        _ => Box::new(lf),
    }
}

/// An aggregation statement: keys, then the argument, then the update; specialized for no
/// key and one key (no key buffer), the argument inlined when it is a field.
fn agg_stmt<A: Fn(&mut Env<'_>) -> i64 + 'static>(
    idx: usize,
    key_fns: Vec<IntFn>,
    arg: A,
) -> StmtFn {
    let n = key_fns.len();
    let mut it = key_fns.into_iter();
    match (it.next(), n) {
        (None, _) => Box::new(move |env: &mut Env<'_>| {
            let v = arg(env);
            env.rt.aggs[idx].update(&[], v);
        }),
        (Some(k0), 1) => Box::new(move |env: &mut Env<'_>| {
            let k = [k0(env)];
            let v = arg(env);
            env.rt.aggs[idx].update(&k, v);
        }),
        (Some(k0), _) => {
            let mut key_fns = vec![k0];
            key_fns.extend(it);
            Box::new(move |env: &mut Env<'_>| {
                let mut buf = [0i64; MAX_AGG_KEYS];
                for (slot, k) in buf.iter_mut().zip(&key_fns) {
                    *slot = k(env);
                }
                let v = arg(env);
                env.rt.aggs[idx].update(&buf[..n], v);
            })
        }
    }
}

/// Operators [`with_constant`] handles.
fn const_op(op: &str) -> bool {
    matches!(
        op,
        "==" | "!=" | "<" | "<=" | ">" | ">=" | "+" | "-" | "*" | "&" | "|"
    )
}
