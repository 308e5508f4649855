//! DTrace's text output of aggregations: sorted by value, quantize histograms, printa.

use super::*;

impl Agg {
    /// The value as a float (`%@f` on avg and stddev: not truncated).
    pub fn value_f64(&self, acc: &Acc) -> f64 {
        let n = acc.n as f64;
        let v = match self.func {
            Func::Avg if acc.n > 0 => acc.sum as f64 / n,
            Func::Stddev if acc.n > 0 => {
                let mean = acc.sum as f64 / n;
                (acc.sq as f64 / n - mean * mean).max(0.0).sqrt()
            }
            _ => self.value(acc) as f64,
        };
        if self.norm > 1 {
            v / self.norm as f64
        } else {
            v
        }
    }

    /// Whether entries print a block (histogram, offender table) rather than one value.
    fn is_block(&self) -> bool {
        matches!(
            self.func,
            Func::Quantize | Func::Lquantize { .. } | Func::Offenders { .. }
        )
    }

    /// The confirmed offenders of one entry, ranked as `report --offenders` ranks them.
    pub fn offender_table(&self, out: &mut String, acc: &Acc, strings: &Interner) {
        let Some(st) = &acc.det else { return };
        let ranked = st.det.ranked();
        out.push_str(&format!(
            "    {:>6} {:>8} {:>8}  {:<18} SYMBOL\n",
            "CONF", "COUNT1", "COUNT2", "ADDRESS"
        ));
        if ranked.is_empty() {
            out.push_str("    (no offender confirmed)\n");
        }
        for x in &ranked {
            let name = st.name(&x.location);
            out.push_str(&format!(
                "    {:>6} {:>8} {:>8}  {:<18} {}\n",
                x.confirmations,
                x.count1,
                x.count2,
                format!("{:#x}", name.map_or(x.ip, |n| n.address)),
                name.map_or("[unknown]", |n| strings.get(n.symbol))
            ));
        }
    }

    fn block(&self, out: &mut String, acc: &Acc, strings: &Interner) {
        if acc.det.is_some() {
            self.offender_table(out, acc, strings);
        } else {
            self.histogram(out, acc);
        }
    }

    /// A note when some key's value does not fit the 64 bits it is printed in (a sum past
    /// i64, or a stddev whose sum of squares saturated): the printed values are saturated.
    pub fn saturated_note(&self) -> Option<String> {
        let over = |a: &Acc| match self.func {
            Func::Sum => saturate(a.sum) as i128 != a.sum,
            Func::Stddev => a.sq == i128::MAX,
            _ => false,
        };
        let n = self.map.values().filter(|a| over(a)).count();
        (n > 0).then(|| {
            format!(
                "@{}: {n} {} exceeded 64 bits: printed saturated ({} to {})",
                self.name,
                if n == 1 { "value" } else { "values" },
                i64::MIN,
                i64::MAX
            )
        })
    }

    /// The limit note, if the key limit or the memory budget dropped anything.
    pub fn dropped_note(&self) -> Option<String> {
        (self.dropped_samples > 0).then(|| {
            let (what, raise) = if self.budget_reached {
                (
                    format!(
                        "aggregation memory budget {} reached",
                        format_size(self.budget.limit())
                    ),
                    "raise it with --agg-memory SIZE",
                )
            } else {
                (
                    format!("key limit {} reached", self.max_keys),
                    "raise it with --max-keys or #pragma D option maxkeys=N",
                )
            };
            format!(
                "@{}: {what}: {}{} more keys and {} samples dropped ({raise})",
                self.name,
                if self.dropped_keys_capped {
                    "at least "
                } else {
                    ""
                },
                self.dropped_keys.len(),
                self.dropped_samples
            )
        })
    }

    /// Prints every entry as DTrace does without a format.
    pub fn print_default(&self, out: &mut String, strings: &Interner) {
        out.push('\n');
        let entries = self.sorted(strings);
        let widths = self.print_widths(&entries, strings);
        for (keys, acc) in entries {
            if self.is_block() {
                if !keys.is_empty() {
                    out.push_str("  ");
                    let parts: Vec<String> = keys
                        .iter()
                        .enumerate()
                        .map(|(i, k)| self.key_text(i, *k, strings))
                        .collect();
                    out.push_str(&parts.join(", "));
                    out.push('\n');
                }
                self.block(out, acc, strings);
                out.push('\n');
            } else {
                let w = &widths;
                for (i, k) in keys.iter().enumerate() {
                    let text = self.key_text(i, *k, strings);
                    let width = w.get(i).copied().unwrap_or(16);
                    match self.key_types.get(i) {
                        Some(Ty::Str) => out.push_str(&format!("  {text:<width$}")),
                        _ => out.push_str(&format!("  {text:>width$}")),
                    }
                }
                let width = w.last().copied().unwrap_or(16);
                out.push_str(&format!("  {:>width$}\n", self.value(acc)));
            }
        }
    }

    /// Widths of the key columns and the value column of the default (unformatted) print:
    /// DTrace's (50 for strings, 16 for numbers) when a line fits 80 columns; else each
    /// column as wide as its widest entry, so that multi-key aggregations fit a terminal.
    fn print_widths(&self, entries: &[(&[i64], &Acc)], strings: &Interner) -> Vec<usize> {
        let n = self.key_types.len();
        let dtrace: Vec<usize> = (0..n)
            .map(|i| match self.key_types.get(i) {
                Some(Ty::Str) => 50,
                _ => 16,
            })
            .chain(std::iter::once(16))
            .collect();
        let line = |w: &[usize]| w.iter().map(|x| x + 2).sum::<usize>();
        if line(&dtrace) <= 80 {
            return dtrace;
        }
        let mut w = vec![1; n + 1];
        for (keys, acc) in entries {
            for (i, k) in keys.iter().enumerate().take(n) {
                w[i] = w[i].max(self.key_text(i, *k, strings).chars().count().min(50));
            }
            w[n] = w[n].max(self.value(acc).to_string().len());
        }
        w
    }

    fn key_text(&self, i: usize, k: i64, strings: &Interner) -> String {
        match self.key_types.get(i) {
            Some(Ty::Str) => culprit_output::text::escape(strings.get(k as u32)).into_owned(),
            Some(Ty::Addr) => format!("0x{:x}", k as u64),
            _ => k.to_string(),
        }
    }

    /// The quantize/lquantize histogram of one entry, DTrace layout.
    pub fn histogram(&self, out: &mut String, acc: &Acc) {
        let Some(b) = &acc.buckets else { return };
        let total: i64 = b.iter().sum();
        out.push_str("           value  ------------- Distribution ------------- count\n");
        let first = b.iter().position(|&c| c != 0);
        let last = b.iter().rposition(|&c| c != 0);
        let (lo, hi) = match (first, last) {
            (Some(f), Some(l)) => (f.saturating_sub(1), (l + 1).min(b.len() - 1)),
            _ => return,
        };
        for (i, &count) in b.iter().enumerate().take(hi + 1).skip(lo) {
            let label = match self.func {
                Func::Quantize => qvalue(i).to_string(),
                Func::Lquantize { lo, step, .. } => {
                    let at = i128::from(lo) + (i as i128 - 1) * i128::from(step);
                    if i == 0 {
                        format!("< {lo}")
                    } else if i == b.len() - 1 {
                        format!(">= {at}")
                    } else {
                        at.to_string()
                    }
                }
                _ => String::new(),
            };
            let bar = if total > 0 {
                ((count as i128 * 40 + total as i128 / 2) / total as i128) as usize
            } else {
                0
            };
            out.push_str(&format!(
                "{label:>16} |{:<40} {count}\n",
                "@".repeat(bar.min(40))
            ));
        }
    }

    /// `printa(fmt, @a)`: the format's conversions take the keys in order, `%@…` the value.
    pub fn print_format(
        &self,
        out: &mut String,
        pieces: &[Piece],
        strings: &Interner,
        addrs: &AddrNames,
    ) {
        for (keys, acc) in self.sorted(strings) {
            let mut ki = 0;
            for p in pieces {
                match p {
                    Piece::Lit(l) => out.push_str(l),
                    Piece::Conv(c) if c.agg => self.value_conv(out, c, Some(acc), strings),
                    Piece::Conv(c) => {
                        let k = keys.get(ki).copied().unwrap_or(0);
                        key_conv(out, c, self.key_types.get(ki), k, strings, addrs);
                        ki += 1;
                    }
                }
            }
        }
    }

    /// One `%@…` conversion (`None`: the key is absent from this aggregation, prints 0).
    fn value_conv(&self, out: &mut String, c: &format::Conv, acc: Option<&Acc>, s: &Interner) {
        match acc {
            Some(acc) if self.is_block() => {
                out.push('\n');
                self.block(out, acc, s);
            }
            Some(acc) if c.is_float() => format::float(out, c, self.value_f64(acc)),
            Some(acc) => format::int(out, c, self.value(acc)),
            None if c.is_float() => format::float(out, c, 0.0),
            None => format::int(out, c, 0),
        }
    }
}

/// A key under a printa conversion: `%s` strings, `%a` names of addresses, integers.
fn key_conv(
    out: &mut String,
    c: &format::Conv,
    ty: Option<&Ty>,
    k: i64,
    strings: &Interner,
    addrs: &AddrNames,
) {
    match (c.conv, ty) {
        ('s', Some(Ty::Str)) => format::string(out, c, strings.get(k as u32)),
        ('s', _) => format::string(out, c, &k.to_string()),
        ('a' | 'A', _) => match addrs.get(&(k as u64)) {
            Some(&id) => format::string(out, c, strings.get(id)),
            None => format::string(out, c, &format!("0x{:x}", k as u64)),
        },
        _ => format::int(out, c, k),
    }
}

/// `printa([fmt,] @a, @b, …)` with several aggregations sharing their keys: the union of the
/// keys, sorted by the first aggregation's value (then the keys); an aggregation without a
/// key prints 0 there. With a format, the `%@` conversions take the aggregations in order.
pub fn print_many(
    out: &mut String,
    aggs: &[&Agg],
    pieces: Option<&[Piece]>,
    strings: &Interner,
    addrs: &AddrNames,
) {
    let Some(first) = aggs.first() else { return };
    let mut seen: FxHashSet<&Key> = FxHashSet::default();
    let mut keys: Vec<(&Key, i64)> = Vec::new();
    for a in aggs {
        for k in a.map.keys() {
            if seen.insert(k) {
                let v = first.map.get(k).map_or(0, |acc| first.value(acc));
                keys.push((k, v));
            }
        }
    }
    keys.sort_by(|x, y| {
        x.1.cmp(&y.1)
            .then_with(|| first.cmp_keys(x.0.as_slice(), y.0.as_slice(), strings))
    });
    if pieces.is_none() {
        out.push('\n');
    }
    for (key, _) in keys {
        let k = key.as_slice();
        match pieces {
            Some(pieces) => {
                let (mut ki, mut ai) = (0, 0);
                for p in pieces {
                    match p {
                        Piece::Lit(l) => out.push_str(l),
                        Piece::Conv(c) if c.agg => {
                            if let Some(a) = aggs.get(ai) {
                                a.value_conv(out, c, a.map.get(key), strings);
                            }
                            ai += 1;
                        }
                        Piece::Conv(c) => {
                            let v = k.get(ki).copied().unwrap_or(0);
                            key_conv(out, c, first.key_types.get(ki), v, strings, addrs);
                            ki += 1;
                        }
                    }
                }
            }
            None => {
                for (i, v) in k.iter().enumerate() {
                    match first.key_types.get(i) {
                        Some(Ty::Str) => out.push_str(&format!(
                            "  {:<50}",
                            culprit_output::text::escape(strings.get(*v as u32))
                        )),
                        Some(Ty::Addr) => {
                            out.push_str(&format!("  {:>16}", format!("0x{:x}", *v as u64)))
                        }
                        _ => out.push_str(&format!("  {:>16}", v)),
                    }
                }
                let mut blocks = Vec::new();
                for a in aggs {
                    match a.map.get(key) {
                        Some(acc) if a.is_block() => blocks.push((a, acc)),
                        Some(acc) => out.push_str(&format!("  {:>16}", a.value(acc))),
                        None if a.is_block() => {}
                        None => out.push_str(&format!("  {:>16}", 0)),
                    }
                }
                out.push('\n');
                for (a, acc) in blocks {
                    a.block(out, acc, strings);
                    out.push('\n');
                }
            }
        }
    }
}
