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

    /// Compiles the action call `name(args)` (a statement), or any other call as an
    /// expression whose value is dropped.
    pub(super) fn action(
        &mut self,
        name: &str,
        args: &[Expr],
        span: Span,
    ) -> Result<StmtFn, ScriptError> {
        match name {
            "printf" => self.printf_action(args, span),
            "trace" => self.trace_action(args, span),
            "printa" => self.printa_action(args, span),
            "trunc" => self.trunc_action(args, span),
            "clear" => self.clear_action(args, span),
            "normalize" => self.normalize_action(args, span),
            "denormalize" => self.denormalize_action(args, span),
            "exit" => self.exit_action(args, span),
            _ => self.call_as_action(name, args, span),
        }
    }

    /// The call error unless `name` has between `lo` and `hi` arguments (inclusive).
    fn check_arity(
        &self,
        name: &str,
        args: &[Expr],
        span: Span,
        lo: usize,
        hi: usize,
    ) -> Result<(), ScriptError> {
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
    }

    /// `printf(fmt, args…)`: the format's conversions checked against the arguments, then
    /// the statement that formats them into the output.
    fn printf_action(&mut self, args: &[Expr], span: Span) -> Result<StmtFn, ScriptError> {
        if args.is_empty() {
            return Err(self.err(span, "call error", "`printf` needs a format string"));
        }
        let pieces = self.format(&args[0], false)?;
        let mut argf: Vec<PrintfArg> = Vec::new();
        let mut ai = 1;
        for p in &pieces {
            if let Piece::Conv(c) = p {
                argf.push(self.printf_conv_arg(c, args, &mut ai)?);
            }
        }
        if ai < args.len() {
            return Err(self.err(
                args[ai].span,
                "format error",
                "more arguments than the format has conversions",
            ));
        }
        Ok(printf_stmt(pieces, argf))
    }

    /// The arguments of one printf conversion `c` (its `*` width and precision, then its
    /// value), taken from `args` at `*ai` onwards, with the value's type checked.
    fn printf_conv_arg(
        &mut self,
        c: &format::Conv,
        args: &[Expr],
        ai: &mut usize,
    ) -> Result<PrintfArg, ScriptError> {
        let width = self.printf_star_arg(args, ai, c.width_arg, "width")?;
        let prec = self.printf_star_arg(args, ai, c.prec_arg, "precision")?;
        let (t, f, span) = self.next_printf_arg(args, ai, "a value")?;
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
        Ok(PrintfArg {
            conv: c.clone(),
            width,
            prec,
            value: f,
        })
    }

    /// The next printf argument (`args[*ai]`, then `*ai` moves on), compiled; the format
    /// error names `what` is missing when the arguments ran out.
    fn next_printf_arg(
        &mut self,
        args: &[Expr],
        ai: &mut usize,
        what: &str,
    ) -> Result<(Ty, IntFn, Span), ScriptError> {
        let Some(a) = args.get(*ai) else {
            return Err(self.err(
                args[0].span,
                "format error",
                format!(
                    "the format needs more arguments than the {} given (missing {what})",
                    args.len() - 1
                ),
            ));
        };
        *ai += 1;
        let (t, f) = self.expr(a)?;
        Ok((t, f, a.span))
    }

    /// A `*` width or precision argument (`what`) when the conversion has one (`on`): the
    /// next printf argument, which must be an integer.
    fn printf_star_arg(
        &mut self,
        args: &[Expr],
        ai: &mut usize,
        on: bool,
        what: &str,
    ) -> Result<Option<IntFn>, ScriptError> {
        if !on {
            return Ok(None);
        }
        let (t, f, span) = self.next_printf_arg(args, ai, what)?;
        if t == Ty::Str {
            return Err(self.type_err(
                span,
                format!("`*` {what} must be an integer, this argument is a string"),
            ));
        }
        Ok(Some(f))
    }

    /// `trace(expr)`: prints the value (as a string, an address in hex or an integer) and
    /// a newline.
    fn trace_action(&mut self, args: &[Expr], span: Span) -> Result<StmtFn, ScriptError> {
        self.check_arity("trace", args, span, 1, 1)?;
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

    /// `printa([fmt, ]@a[, @b…])`: the aggregations (with the same key types) and the
    /// optional format checked against them, then the statement that prints them.
    fn printa_action(&mut self, args: &[Expr], span: Span) -> Result<StmtFn, ScriptError> {
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
        self.check_printa_key_types(agg_es, &idxs)?;
        if let Some(p) = &pieces {
            self.check_printa_format(p, args[0].span, &idxs)?;
        }
        Ok(Box::new(move |env: &mut Env<'_>| {
            env.rt.printa(&idxs, pieces.as_deref())
        }))
    }

    /// The type error unless the aggregations printed together (`agg_es`, declared at
    /// `idxs`) have the first one's key types.
    fn check_printa_key_types(&self, agg_es: &[Expr], idxs: &[usize]) -> Result<(), ScriptError> {
        let first = &self.aggs[idxs[0]];
        let show = |t: &[Ty]| t.iter().map(|t| t.name()).collect::<Vec<_>>().join(", ");
        for (e, &i) in agg_es.iter().zip(idxs).skip(1) {
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
        Ok(())
    }

    /// Checks a printa format (`p`, written at `fmt_span`) against the aggregations at
    /// `idxs`: no more key conversions than the first has keys, each fitting its key, one
    /// `%@` per aggregation when there are several, and decimals only for avg() and stddev().
    fn check_printa_format(
        &self,
        p: &[Piece],
        fmt_span: Span,
        idxs: &[usize],
    ) -> Result<(), ScriptError> {
        let decl = &self.aggs[idxs[0]];
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
                fmt_span,
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
                fmt_span,
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
                    fmt_span,
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
                    fmt_span,
                    format!(
                        "`%@{}` prints avg() and stddev() values with decimals; @{} is {}(), an integer (use `%@d`)",
                        c.conv,
                        a.name,
                        a.func.name()
                    ),
                ));
            }
        }
        Ok(())
    }

    /// `trunc(@a[, n])`: keeps the `n` largest entries (`n` < 0: the smallest); without
    /// `n`, removes all keys.
    fn trunc_action(&mut self, args: &[Expr], span: Span) -> Result<StmtFn, ScriptError> {
        self.check_arity("trunc", args, span, 1, 2)?;
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

    /// `clear(@a)`: zeroes the aggregation's values, keeps its keys.
    fn clear_action(&mut self, args: &[Expr], span: Span) -> Result<StmtFn, ScriptError> {
        self.check_arity("clear", args, span, 1, 1)?;
        let idx = self.agg_ref(&args[0])?;
        Ok(Box::new(move |env: &mut Env<'_>| env.rt.aggs[idx].clear()))
    }

    /// `normalize(@a, n)`: the aggregation prints divided by `n` (a run-time error unless
    /// `n` is positive).
    fn normalize_action(&mut self, args: &[Expr], span: Span) -> Result<StmtFn, ScriptError> {
        self.check_arity("normalize", args, span, 2, 2)?;
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

    /// `denormalize(@a)`: undoes `normalize`.
    fn denormalize_action(&mut self, args: &[Expr], span: Span) -> Result<StmtFn, ScriptError> {
        self.check_arity("denormalize", args, span, 1, 1)?;
        let idx = self.agg_ref(&args[0])?;
        Ok(Box::new(move |env: &mut Env<'_>| env.rt.aggs[idx].norm = 1))
    }

    /// `exit(n)`: records the exit value (the first one called wins); the run stops after
    /// the sample.
    fn exit_action(&mut self, args: &[Expr], span: Span) -> Result<StmtFn, ScriptError> {
        self.check_arity("exit", args, span, 1, 1)?;
        let f = self.int_arg(&args[0])?;
        Ok(Box::new(move |env: &mut Env<'_>| {
            let v = f(env);
            env.rt.exit.get_or_insert(v);
        }))
    }

    /// Any other call used as a statement: compiled as an expression, its value dropped.
    fn call_as_action(
        &mut self,
        name: &str,
        args: &[Expr],
        span: Span,
    ) -> Result<StmtFn, ScriptError> {
        let (_, f) = self.expr(&Expr {
            kind: ExprKind::Call(name.to_string(), args.to_vec()),
            span,
        })?;
        Ok(Box::new(move |env: &mut Env<'_>| {
            f(env);
        }))
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

/// The printf statement: the format's literal pieces and, for each conversion, its
/// argument formatted, appended to the output.
fn printf_stmt(pieces: Vec<Piece>, argf: Vec<PrintfArg>) -> StmtFn {
    Box::new(move |env: &mut Env<'_>| {
        let mut it = argf.iter();
        let mut out = std::mem::take(&mut env.rt.out);
        for p in &pieces {
            match p {
                Piece::Lit(l) => out.push_str(l),
                Piece::Conv(_) => {
                    if let Some(a) = it.next() {
                        write_printf_arg(&mut out, a, env);
                    }
                }
            }
        }
        env.rt.out = out;
    })
}

/// Appends one printf conversion's argument to `out`: `*` width and precision applied, a
/// string, an address's symbol (else hex) or an integer.
fn write_printf_arg(out: &mut String, a: &PrintfArg, env: &mut Env<'_>) {
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
        format::string(out, c, env.rt.strings.get(v as u32));
    } else if c.is_symbol() {
        match env.addr_name(v) {
            Some(id) => format::string(out, c, env.rt.strings.get(id)),
            None => format::string(out, c, &format!("0x{:x}", v as u64)),
        }
    } else {
        format::int(out, c, v);
    }
}
