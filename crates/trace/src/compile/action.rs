//! Actions: `printf`, `printa`, `trace`, `clear`, `trunc`, `exit` and the others DTrace
//! has, with their format strings checked against their arguments.

use super::*;

/// One printf conversion with its argument (and `*` width/precision arguments).
struct PrintfArg {
    conv: format::Conv,
    width: Option<IntFn>,
    prec: Option<IntFn>,
    value: IntFn,
}

impl Cx<'_> {
    fn int_arg(&mut self, e: &Expr) -> Result<IntFn, ScriptError> {
        let (t, f) = self.expr(e)?;
        if t == Ty::Str {
            return Err(self.type_err(e.span, "expected an integer, found a string"));
        }
        Ok(f)
    }

    pub(super) fn action(
        &mut self,
        name: &str,
        args: &[Expr],
        span: Span,
    ) -> Result<StmtFn, ScriptError> {
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

    pub(super) fn format(&mut self, e: &Expr, printa: bool) -> Result<Vec<Piece>, ScriptError> {
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
}
