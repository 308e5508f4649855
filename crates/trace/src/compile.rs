//! Checker and compiler: resolves names, probes and fields, checks types, and turns every
//! expression and statement into a closure over the sample (the program of [`crate::ir`],
//! run by [`crate::run`]).
//!
//! Here: the driver (clauses, probes, declarations, statements, assignments); expressions
//! are in `expr`, aggregating statements in `aggregate`, actions (printf, printa, ...) in
//! `action`.

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
use culprit_decode::tracepoint::{FieldKind, TracepointField, TracepointFormat};

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

// After `by_field!`: they use it.
mod action;
mod aggregate;
mod expr;

/// Compile options.
#[derive(Debug, Clone)]
pub struct Options {
    /// Distinct keys kept per aggregation (and `self->` variables per program); beyond it,
    /// new keys are dropped and counted.
    pub max_keys: usize,
    /// Quiet mode (`-q` or `#pragma D option quiet`).
    pub quiet: bool,
    /// Bytes all of the program's aggregations may hold together (estimated per entry, see
    /// [`crate::agg::entry_bytes`]); beyond it, new keys are dropped and counted.
    pub agg_memory: usize,
    /// The tracepoint formats `tracepoint:` probes are typed with (`args->FIELD`): the
    /// recording's (its tracing data), or this machine's for a live trace.
    pub tracepoints: Vec<TracepointFormat>,
}

/// The default of [`Options::agg_memory`]: 512 MiB.
pub const DEFAULT_AGG_MEMORY: usize = 512 << 20;

impl Default for Options {
    fn default() -> Options {
        Options {
            max_keys: 100_000,
            quiet: false,
            agg_memory: DEFAULT_AGG_MEMORY,
            tracepoints: Vec::new(),
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
    /// Every tracepoint format known (from the options).
    tp_formats: &'s [TracepointFormat],
    /// The formats the current clause's tracepoint probes match, and the probes' text.
    tp_clause: (Vec<&'s TracepointFormat>, String),
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
        tp_formats: &opts.tracepoints,
        tp_clause: (Vec::new(), String::new()),
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
        cx.tp_clause = cx.tracepoint_formats(&info);
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
        agg_memory: opts.agg_memory,
        locations: cx.locations,
    })
}

type Kind = Option<Result<ArgsKind, String>>;

/// The language type of a tracepoint field: strings for `char[N]` and `__data_loc char[]`,
/// addresses for pointers, integers otherwise (arrays read their first element).
pub(crate) fn tracepoint_type(f: &TracepointField) -> Ty {
    match f.kind() {
        FieldKind::Str { .. } => Ty::Str,
        _ if f.is_pointer() => Ty::Addr,
        _ => Ty::Int,
    }
}

impl<'s> Cx<'s> {
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
            ExprKind::Args(_, path) if !self.tp_formats.is_empty() => {
                // A tracepoint field of that name, if any format has one.
                let field = path
                    .first()
                    .and_then(|(n, _)| self.tp_formats.iter().find_map(|f| f.field(n)));
                match field {
                    Some(f) => tracepoint_type(f),
                    None => Ty::Int,
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

    /// The formats the clause's tracepoint probes match (`*`/`?` globs), with the probes'
    /// text for messages.
    fn tracepoint_formats(&self, info: &ClauseInfo) -> (Vec<&'s TracepointFormat>, String) {
        let mut out: Vec<&'s TracepointFormat> = Vec::new();
        let mut texts = Vec::new();
        let formats: &'s [TracepointFormat] = self.tp_formats;
        for (p, text) in &info.probes {
            if let Probe::Tracepoint { event } = p {
                texts.push(text.as_str());
                for f in formats {
                    let name = f.full_name();
                    if probe::glob(event, &name) && !out.iter().any(|o| std::ptr::eq(*o, f)) {
                        out.push(f);
                    }
                }
            }
        }
        (out, texts.join(", "))
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
                Probe::Pmc { .. } | Probe::Profile { .. } | Probe::Breakpoint { .. } => {
                    kinds.push((ArgsKind::Pmc, text))
                }
                Probe::Tracepoint { .. } => kinds.push((ArgsKind::Tracepoint, text)),
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
}
