//! printf-style formats: parsed and checked before running, applied to 64-bit values.

/// One conversion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conv {
    /// `-` flag.
    pub left: bool,
    /// `0` flag.
    pub zero: bool,
    /// `+` flag.
    pub plus: bool,
    /// ` ` flag.
    pub space: bool,
    /// `#` flag.
    pub alt: bool,
    /// Field width.
    pub width: usize,
    /// Precision.
    pub precision: Option<usize>,
    /// Conversion character (`d i u x X o c s p a A f e E g G`).
    pub conv: char,
    /// `%@…`: the aggregation value (printa).
    pub agg: bool,
    /// `%*d`: the width is taken from an argument (printf).
    pub width_arg: bool,
    /// `%.*d`: the precision is taken from an argument (printf).
    pub prec_arg: bool,
}

impl Conv {
    /// `%f %e %E %g %G`.
    pub fn is_float(&self) -> bool {
        matches!(self.conv, 'f' | 'e' | 'E' | 'g' | 'G')
    }

    /// `%a %A`: an address printed as `module`symbol+0xoffset`.
    pub fn is_symbol(&self) -> bool {
        matches!(self.conv, 'a' | 'A')
    }

    /// The width and precision given by arguments (`*`), clamped as literal ones are.
    pub fn with_args(&self, width: Option<i64>, precision: Option<i64>) -> Conv {
        let mut c = self.clone();
        if let Some(w) = width {
            // C: a negative width is the `-` flag and the absolute value.
            if w < 0 {
                c.left = true;
            }
            c.width = (w.unsigned_abs() as usize).min(MAX_WIDTH);
        }
        if let Some(p) = precision {
            // C: a negative precision is taken as if it were omitted.
            c.precision = (p >= 0).then(|| (p as usize).min(MAX_WIDTH));
        }
        c
    }
}

/// A piece of a format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    /// Literal text.
    Lit(String),
    /// A conversion.
    Conv(Conv),
}

/// Largest accepted width/precision (keeps hostile formats from allocating gigabytes).
const MAX_WIDTH: usize = 4096;

/// Parses a format; the error is (byte offset in the format, message).
pub fn parse(fmt: &str) -> Result<Vec<Piece>, (usize, String)> {
    let mut out = Vec::new();
    let mut lit = String::new();
    let b: Vec<char> = fmt.chars().collect();
    let mut i = 0;
    while i < b.len() {
        if b[i] != '%' {
            lit.push(b[i]);
            i += 1;
            continue;
        }
        let start = i;
        i += 1;
        if b.get(i) == Some(&'%') {
            lit.push('%');
            i += 1;
            continue;
        }
        let mut c = Conv {
            left: false,
            zero: false,
            plus: false,
            space: false,
            alt: false,
            width: 0,
            precision: None,
            conv: ' ',
            agg: false,
            width_arg: false,
            prec_arg: false,
        };
        while let Some(&f) = b.get(i) {
            match f {
                '-' => c.left = true,
                '0' => c.zero = true,
                '+' => c.plus = true,
                ' ' => c.space = true,
                '#' => c.alt = true,
                '@' => c.agg = true,
                _ => break,
            }
            i += 1;
        }
        let mut w = 0usize;
        if b.get(i) == Some(&'*') {
            c.width_arg = true;
            i += 1;
        }
        while let Some(d) = b.get(i).and_then(|c| c.to_digit(10)) {
            w = (w * 10 + d as usize).min(MAX_WIDTH + 1);
            i += 1;
        }
        c.width = w;
        // DTrace also accepts `@` after the width (`%8@d`).
        if b.get(i) == Some(&'@') {
            c.agg = true;
            i += 1;
        }
        if b.get(i) == Some(&'.') {
            i += 1;
            if b.get(i) == Some(&'*') {
                c.prec_arg = true;
                i += 1;
            }
            let mut p = 0usize;
            while let Some(d) = b.get(i).and_then(|c| c.to_digit(10)) {
                p = (p * 10 + d as usize).min(MAX_WIDTH + 1);
                i += 1;
            }
            c.precision = Some(p);
        }
        if c.width > MAX_WIDTH || c.precision.unwrap_or(0) > MAX_WIDTH {
            return Err((start, format!("width or precision above {MAX_WIDTH}")));
        }
        // Length modifiers are accepted and ignored: every integer is 64-bit.
        while matches!(b.get(i), Some('l' | 'h' | 'z' | 'j' | 't' | 'L')) {
            i += 1;
        }
        match b.get(i) {
            Some(
                &ch @ ('d' | 'i' | 'u' | 'x' | 'X' | 'o' | 'c' | 's' | 'p' | 'a' | 'A' | 'f' | 'e'
                | 'E' | 'g' | 'G'),
            ) => {
                c.conv = ch;
                i += 1;
            }
            Some(&ch) => {
                return Err((
                    start,
                    format!(
                    "unsupported conversion `%{ch}` (supported: %d %i %u %x %X %o %c %s %p %a %A %f %e %g %@d %%)"
                ),
                ))
            }
            None => {
                return Err((
                    start,
                    "incomplete conversion at the end of the format".into(),
                ))
            }
        }
        if c.agg && matches!(c.conv, 's' | 'a' | 'A' | 'c') {
            return Err((
                start,
                format!("`%@{}`: aggregation values are numbers", c.conv),
            ));
        }
        if c.agg && (c.width_arg || c.prec_arg) {
            return Err((start, "`*` widths are for printf, not printa".into()));
        }
        if !lit.is_empty() {
            out.push(Piece::Lit(std::mem::take(&mut lit)));
        }
        out.push(Piece::Conv(c));
    }
    if !lit.is_empty() {
        out.push(Piece::Lit(lit));
    }
    Ok(out)
}

fn pad(out: &mut String, c: &Conv, body: &str, sign: &str) {
    let len = body.chars().count() + sign.len();
    if len >= c.width {
        out.push_str(sign);
        out.push_str(body);
    } else if c.left {
        out.push_str(sign);
        out.push_str(body);
        out.extend(std::iter::repeat_n(' ', c.width - len));
    } else if c.zero && c.conv != 's' && c.conv != 'c' {
        out.push_str(sign);
        out.extend(std::iter::repeat_n('0', c.width - len));
        out.push_str(body);
    } else {
        out.extend(std::iter::repeat_n(' ', c.width - len));
        out.push_str(sign);
        out.push_str(body);
    }
}

/// Formats an integer with a conversion.
pub fn int(out: &mut String, c: &Conv, v: i64) {
    let (sign, mut body) = match c.conv {
        'd' | 'i' => {
            let s = if v < 0 {
                "-"
            } else if c.plus {
                "+"
            } else if c.space {
                " "
            } else {
                ""
            };
            (s, v.unsigned_abs().to_string())
        }
        'u' => ("", (v as u64).to_string()),
        'x' => (
            if c.alt && v != 0 { "0x" } else { "" },
            format!("{:x}", v as u64),
        ),
        'X' => (
            if c.alt && v != 0 { "0X" } else { "" },
            format!("{:X}", v as u64),
        ),
        'o' => (
            if c.alt && v != 0 { "0" } else { "" },
            format!("{:o}", v as u64),
        ),
        'p' => ("0x", format!("{:x}", v as u64)),
        'c' => (
            "",
            char::from_u32((v as u64 & 0xff) as u32)
                .unwrap_or('?')
                .to_string(),
        ),
        _ => ("", v.to_string()),
    };
    if let (Some(p), true) = (c.precision, c.conv != 'c') {
        if body.len() < p {
            body = format!("{}{body}", "0".repeat(p - body.len()));
        }
    }
    pad(out, c, &body, sign);
}

/// Formats a float (`%f %e %E %g %G`) as C's printf does.
pub fn float(out: &mut String, c: &Conv, v: f64) {
    let p = c.precision.unwrap_or(6);
    let sign = if v < 0.0 {
        "-"
    } else if c.plus {
        "+"
    } else if c.space {
        " "
    } else {
        ""
    };
    let a = v.abs();
    let body = if !a.is_finite() {
        let t = if a.is_nan() { "nan" } else { "inf" };
        if c.conv.is_ascii_uppercase() {
            t.to_ascii_uppercase()
        } else {
            t.to_string()
        }
    } else {
        match c.conv {
            'f' => format!("{a:.p$}"),
            'e' | 'E' => exp(a, p, c.conv == 'E'),
            _ => {
                // %g: precision P (0 means 1); exponent X of the %e form; %f with P-1-X
                // digits if P > X >= -4, else %e with P-1; trailing zeros removed unless `#`.
                let p = p.max(1);
                let x = if a == 0.0 {
                    0
                } else {
                    let e = exp(a, p - 1, false);
                    e.rsplit('e')
                        .next()
                        .and_then(|t| t.parse::<i32>().ok())
                        .unwrap_or(0)
                };
                let mut t = if (p as i32) > x && x >= -4 {
                    let digits = (p as i32 - 1 - x).max(0) as usize;
                    format!("{a:.digits$}")
                } else {
                    exp(a, p - 1, c.conv == 'G')
                };
                if !c.alt {
                    let (mant, tail) = match t.find(['e', 'E']) {
                        Some(i) => (t[..i].to_string(), t[i..].to_string()),
                        None => (t.clone(), String::new()),
                    };
                    let mant = if mant.contains('.') {
                        mant.trim_end_matches('0').trim_end_matches('.').to_string()
                    } else {
                        mant
                    };
                    t = mant + &tail;
                }
                t
            }
        }
    };
    pad(out, c, &body, sign);
}

/// C's `%e` body of a non-negative finite value: `d.ddde+XX`.
fn exp(a: f64, p: usize, upper: bool) -> String {
    let r = format!("{a:.p$e}");
    let (mant, e) = r.split_once('e').unwrap_or((&r, "0"));
    let e: i32 = e.parse().unwrap_or(0);
    let mark = if upper { 'E' } else { 'e' };
    let s = if e < 0 { '-' } else { '+' };
    format!("{mant}{mark}{s}{:02}", e.unsigned_abs())
}

/// Formats a string with a conversion. Control characters of the string (names from the
/// file: a command or symbol holding a terminal escape or newline) are written as `\xNN`, so
/// that a value can neither break the output's lines nor drive the terminal.
pub fn string(out: &mut String, c: &Conv, s: &str) {
    let s = &*culprit_output::text::escape(s);
    match c.precision {
        Some(p) => {
            let cut: String = s.chars().take(p).collect();
            pad(out, c, &cut, "");
        }
        None => pad(out, c, s, ""),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(fmt: &str, v: i64) -> String {
        let p = parse(fmt).unwrap();
        let mut s = String::new();
        for piece in &p {
            match piece {
                Piece::Lit(l) => s.push_str(l),
                Piece::Conv(c) => int(&mut s, c, v),
            }
        }
        s
    }

    #[test]
    fn conversions() {
        assert_eq!(one("%d", -5), "-5");
        assert_eq!(one("[%5d]", 42), "[   42]");
        assert_eq!(one("[%-5d]", 42), "[42   ]");
        assert_eq!(one("%05d", -42), "-0042");
        assert_eq!(one("%x", 255), "ff");
        assert_eq!(one("%#x", 255), "0xff");
        assert_eq!(one("%-16x|", 0x7f00), "7f00            |");
        assert_eq!(one("%u", -1), "18446744073709551615");
        assert_eq!(one("%p", 4096), "0x1000");
        assert_eq!(one("%lld%%", 3), "3%");
        let mut s = String::new();
        let p = parse("%-6.3s|").unwrap();
        let Piece::Conv(c) = &p[0] else { panic!() };
        string(&mut s, c, "abcdef");
        assert_eq!(s, "abc   ");
    }

    fn fl(fmt: &str, v: f64) -> String {
        let p = parse(fmt).unwrap();
        let mut s = String::new();
        for piece in &p {
            match piece {
                Piece::Lit(l) => s.push_str(l),
                Piece::Conv(c) => float(&mut s, c, v),
            }
        }
        s
    }

    #[test]
    fn floats_as_c_prints_them() {
        assert_eq!(fl("%f", 2.5), "2.500000");
        assert_eq!(fl("%.2f", 2.346), "2.35");
        assert_eq!(fl("[%8.1f]", -3.25), "[    -3.2]");
        assert_eq!(fl("%e", 12345.678), "1.234568e+04");
        assert_eq!(fl("%E", 0.000123), "1.230000E-04");
        assert_eq!(fl("%g", 100000.0), "100000");
        assert_eq!(fl("%g", 1000000.0), "1e+06");
        assert_eq!(fl("%g", 0.0001), "0.0001");
        assert_eq!(fl("%g", 0.00001234), "1.234e-05");
        assert_eq!(fl("%g", 2.5), "2.5");
        assert_eq!(fl("%#g", 2.5), "2.50000");
        assert_eq!(fl("%+.0f", 3.0), "+3");
        assert_eq!(fl("%g", 0.0), "0");
    }

    #[test]
    fn star_widths_and_agg_after_width() {
        let p = parse("%*d|%-.*s|%8@d").unwrap();
        let Piece::Conv(a) = &p[0] else { panic!() };
        assert!(a.width_arg && !a.prec_arg);
        let mut s = String::new();
        int(&mut s, &a.with_args(Some(5), None), 42);
        int(&mut s, &a.with_args(Some(-5), None), 42);
        assert_eq!(s, "   4242   ");
        let Piece::Conv(b) = &p[2] else { panic!() };
        assert!(b.prec_arg);
        let mut s = String::new();
        string(&mut s, &b.with_args(None, Some(2)), "abcdef");
        assert_eq!(s, "ab");
        let Piece::Conv(c) = &p[4] else { panic!() };
        assert!(c.agg && c.width == 8);
        assert!(parse("%@*d").is_err());
        assert!(parse("%@a").is_err());
    }

    #[test]
    fn bad_formats() {
        assert!(parse("%q").is_err());
        assert!(parse("abc %").is_err());
        assert!(parse("%99999d").is_err());
        assert!(parse("%@s").is_err());
    }
}
