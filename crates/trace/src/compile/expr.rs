//! Expressions: names and built-in variables, calls, unary and binary operators (with
//! constants folded into the operator's closure).

use super::*;
use crate::fields::SpeValue;
use culprit_decode::tracepoint::FieldValue;

impl Cx<'_> {
    pub(super) fn expr(&mut self, e: &Expr) -> Result<(Ty, IntFn), ScriptError> {
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

    pub(super) fn name(&mut self, n: &str, span: Span) -> Result<(Ty, IntFn), ScriptError> {
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

    pub(super) fn args(
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
        if kind == ArgsKind::Tracepoint {
            return self.tracepoint_arg(path, span);
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
            Source::Spe(value) => Box::new(move |env: &mut Env<'_>| {
                env.s.spe.as_deref().map_or(0, |spe| {
                    let latency = |l: Option<u16>| i64::from(l.unwrap_or(0));
                    match value {
                        SpeValue::IssueLatency => latency(spe.issue_latency),
                        SpeValue::TranslationLatency => latency(spe.translation_latency),
                        SpeValue::Events => spe.events as i64,
                        SpeValue::EventBit(bit) => ((spe.events >> bit) & 1) as i64,
                        SpeValue::OpClass => spe.op_type.map_or(0, |(class, _)| i64::from(class)),
                    }
                })
            }),
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

    /// `args->FIELD` of a tracepoint clause: typed by the formats its probes match (each
    /// must have the field, with one type), read at run time from the raw record with the
    /// offsets of the sample's own tracepoint (by its id, `attr.config`).
    fn tracepoint_arg(
        &mut self,
        path: &[(String, Span)],
        span: Span,
    ) -> Result<(Ty, IntFn), ScriptError> {
        let (formats, probes) = self.tp_clause.clone();
        let Some((name, name_span)) = path.first() else {
            return Err(self.err(
                span,
                "unknown field",
                "`args` must be followed by `->FIELD`",
            ));
        };
        if path.len() > 1 {
            return Err(self.err(
                path[1].1,
                "unknown field",
                format!("`{name}` is a tracepoint field: it has no members"),
            ));
        }
        if formats.is_empty() {
            return Err(self.err(
                span,
                "unknown field",
                format!("no format is known for `{probes}`: offline, the recording has no such tracepoint in its tracing data; live, this machine has none (culprit list tracepoint shows them)"),
            ));
        }
        let mut ty = None;
        // Per tracepoint id: the field's place in that tracepoint's records.
        let mut places: Vec<(u64, TracepointField, bool)> = Vec::new();
        for f in &formats {
            let Some(field) = f.field(name) else {
                let names: Vec<&str> = f.own_fields().map(|x| x.name.as_str()).collect();
                return Err(self.err(
                    *name_span,
                    "unknown field",
                    format!(
                        "`{}` has no field `{name}`{} (its fields: {})",
                        f.full_name(),
                        hint(name, names.iter().copied()),
                        names.join(", ")
                    ),
                ));
            };
            let t = tracepoint_type(field);
            if ty.is_some_and(|x| x != t) {
                return Err(self.type_err(
                    *name_span,
                    format!("`{name}` has different types in the tracepoints of `{probes}`"),
                ));
            }
            ty = Some(t);
            places.push((f.id, field.clone(), f.big_endian));
        }
        let ty = ty.unwrap_or(Ty::Int);
        let one = places.len() == 1;
        let func: IntFn = Box::new(move |env: &mut Env<'_>| {
            let id = env
                .p
                .events
                .get(env.s.event as usize)
                .map_or(u64::MAX, |e| e.config);
            let place = if one {
                places.first().filter(|p| p.0 == id)
            } else {
                places.iter().find(|p| p.0 == id)
            };
            let Some((_, field, be)) = place else {
                return 0;
            };
            match field.read(env.p.raw(env.s), *be) {
                Some(FieldValue::Signed(v)) => v,
                Some(FieldValue::Unsigned(v) | FieldValue::Address(v)) => v as i64,
                Some(FieldValue::Str(s)) => i64::from(env.rt.strings.intern(&s)),
                Some(FieldValue::SignedArray(v)) => v.first().copied().unwrap_or(0),
                Some(FieldValue::UnsignedArray(v)) => v.first().map_or(0, |&x| x as i64),
                None if ty == Ty::Str => i64::from(env.rt.strings.intern("")),
                None => 0,
            }
        });
        Ok((ty, func))
    }

    pub(super) fn binary(
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

/// Operators [`with_constant`] handles.
fn const_op(op: &str) -> bool {
    matches!(
        op,
        "==" | "!=" | "<" | "<=" | ">" | ">=" | "+" | "-" | "*" | "&" | "|"
    )
}
