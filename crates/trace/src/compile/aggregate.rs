//! Aggregating statements (`@name[keys] = func(args)`) and references to aggregations.

use super::*;

impl Cx<'_> {
    /// Compiles the aggregating statement `@name[keys] = func(args)`: the keys, the
    /// function and its argument checked, the aggregation declared (or checked against its
    /// earlier use), then the statement that updates it.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn aggregate(
        &mut self,
        name: &str,
        keys: &[Expr],
        func: &str,
        args: &[Expr],
        span: Span,
        func_span: Span,
    ) -> Result<StmtFn, ScriptError> {
        let (key_fns, key_types) = self.aggregation_keys(keys)?;
        let f = self.aggregating_func(func, args, span, func_span)?;
        if !matches!(
            f,
            Func::Count | Func::Lquantize { .. } | Func::Offenders { .. }
        ) {
            self.check_agg_arg_count(func, args, func_span, 1)?;
        }
        // offenders(ip) keys the detector by the sample's location (DSO + offset, as
        // `report --offenders`); any other address is its own location.
        let by_ip = matches!(&args.first().map(|a| &a.kind), Some(ExprKind::Name(n)) if n == "ip");
        let arg = self.aggregated_value(f, func, args)?;
        let idx = self.declare_aggregation(name, f, func, key_types, span)?;
        if matches!(f, Func::Offenders { .. }) {
            // Keyed and named by the sample's location.
            self.locations = true;
        }
        let (arg, off_arg) = match (f, arg) {
            (Func::Offenders { .. }, a) => (None, a),
            (_, a) => (a, None),
        };
        if let Some(arg) = off_arg {
            return Ok(offenders_stmt(idx, key_fns, arg, by_ip));
        }
        Ok(match (arg, args.first().and_then(field_of)) {
            (Some(_), Some(f)) => by_field!(f, g => agg_stmt(idx, key_fns, g)),
            (Some(a), None) => agg_stmt(idx, key_fns, move |env: &mut Env<'_>| a(env)),
            (None, _) => agg_stmt(idx, key_fns, |_: &mut Env<'_>| 0),
        })
    }

    /// The aggregation's keys compiled (at most [`MAX_AGG_KEYS`]), with their types.
    fn aggregation_keys(&mut self, keys: &[Expr]) -> Result<(Vec<IntFn>, Vec<Ty>), ScriptError> {
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
        Ok((key_fns, key_types))
    }

    /// The aggregation error unless the aggregating function `func` has `n` arguments.
    fn check_agg_arg_count(
        &self,
        func: &str,
        args: &[Expr],
        func_span: Span,
        n: usize,
    ) -> Result<(), ScriptError> {
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
    }

    /// The aggregating function named `func`, with its constant arguments (lquantize's
    /// bounds, offenders' thresholds) checked; an error for an unknown name.
    fn aggregating_func(
        &self,
        func: &str,
        args: &[Expr],
        span: Span,
        func_span: Span,
    ) -> Result<Func, ScriptError> {
        Ok(match func {
            "count" => {
                self.check_agg_arg_count(func, args, func_span, 0)?;
                Func::Count
            }
            "sum" => Func::Sum,
            "avg" => Func::Avg,
            "min" => Func::Min,
            "max" => Func::Max,
            "stddev" => Func::Stddev,
            "quantize" => Func::Quantize,
            "lquantize" => self.lquantize_func(args, span, func_span)?,
            "offenders" => self.offenders_func(args, func_span)?,
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
        })
    }

    /// `lquantize(value, lower, upper[, step])`: the constant bounds and step checked
    /// (lower < upper, step > 0 dividing upper - lower, at most 10,000 buckets).
    fn lquantize_func(
        &self,
        args: &[Expr],
        span: Span,
        func_span: Span,
    ) -> Result<Func, ScriptError> {
        if !(args.len() == 3 || args.len() == 4) {
            return Err(self.err(
                func_span,
                "aggregation error",
                "`lquantize(value, lower, upper[, step])` takes 3 or 4 arguments",
            ));
        }
        let lo = self.lquantize_bound(&args[1])?;
        let hi = self.lquantize_bound(&args[2])?;
        let step = if args.len() == 4 {
            self.lquantize_bound(&args[3])?
        } else {
            1
        };
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
        Ok(Func::Lquantize { lo, hi, step })
    }

    /// One of lquantize's bounds or its step: an integer constant, possibly negated.
    fn lquantize_bound(&self, e: &Expr) -> Result<i64, ScriptError> {
        match e.kind {
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
        }
    }

    /// `offenders(address[, t1, t2])`: the thresholds (constants, else the report's
    /// defaults) checked, t2 not over t1.
    fn offenders_func(&self, args: &[Expr], func_span: Span) -> Result<Func, ScriptError> {
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
            (
                self.offenders_threshold(&args[1])?,
                self.offenders_threshold(&args[2])?,
            )
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
        Ok(Func::Offenders { t1, t2 })
    }

    /// One of offenders' thresholds t1 and t2: a positive integer constant (samples).
    fn offenders_threshold(&self, e: &Expr) -> Result<u64, ScriptError> {
        match e.kind {
            ExprKind::Int(v) if v > 0 => Ok(v as u64),
            _ => Err(self.err(
                e.span,
                "aggregation error",
                "offenders thresholds t1 and t2 must be positive integer constants (samples)",
            )),
        }
    }

    /// The aggregated value, the first argument compiled (none for count()); an integer.
    fn aggregated_value(
        &mut self,
        f: Func,
        func: &str,
        args: &[Expr],
    ) -> Result<Option<IntFn>, ScriptError> {
        Ok(match args.first() {
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
        })
    }

    /// The index of aggregation `@name`: declared here on its first use, else checked to
    /// have the same function and key types as before.
    fn declare_aggregation(
        &mut self,
        name: &str,
        f: Func,
        func: &str,
        key_types: Vec<Ty>,
        span: Span,
    ) -> Result<usize, ScriptError> {
        let Some(i) = self.aggs.iter().position(|a| a.name == name) else {
            self.aggs.push(AggDecl {
                name: name.to_string(),
                func: f,
                key_types,
            });
            return Ok(self.aggs.len() - 1);
        };
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
        Ok(i)
    }

    pub(super) fn agg_ref(&self, e: &Expr) -> Result<usize, ScriptError> {
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
}

/// An offenders() statement: the keys, then the address (`arg`) observed by the key's
/// detector, at the sample's location when `by_ip` (else the address is its own location);
/// a confirmed offender is named by its symbol (by_ip) or its address in hex.
fn offenders_stmt(idx: usize, key_fns: Vec<IntFn>, arg: IntFn, by_ip: bool) -> StmtFn {
    let n = key_fns.len();
    Box::new(move |env: &mut Env<'_>| {
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
                env.offender_name(loc, ip, pid)
            } else {
                crate::agg::OffenderName {
                    symbol: env.rt.strings.intern(&format!("0x{ip:x}")),
                    dso: None,
                    address: ip,
                }
            };
            env.rt.aggs[idx].name_offender(&buf[..n], loc, name);
        }
    })
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
