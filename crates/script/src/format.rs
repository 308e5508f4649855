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
    /// Conversion character (`d i u x X o c s p`).
    pub conv: char,
    /// `%@…`: the aggregation value (printa).
    pub agg: bool,
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
        while let Some(d) = b.get(i).and_then(|c| c.to_digit(10)) {
            w = (w * 10 + d as usize).min(MAX_WIDTH + 1);
            i += 1;
        }
        c.width = w;
        if b.get(i) == Some(&'.') {
            i += 1;
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
            Some(&ch @ ('d' | 'i' | 'u' | 'x' | 'X' | 'o' | 'c' | 's' | 'p')) => {
                c.conv = ch;
                i += 1;
            }
            Some(&ch) => {
                return Err((
                    start,
                    format!(
                    "unsupported conversion `%{ch}` (supported: %d %i %u %x %X %o %c %s %p %@d %%)"
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
        if c.agg && c.conv == 's' {
            return Err((start, "`%@s`: aggregation values are integers".into()));
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

/// Formats a string with a conversion.
pub fn string(out: &mut String, c: &Conv, s: &str) {
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

    #[test]
    fn bad_formats() {
        assert!(parse("%q").is_err());
        assert!(parse("abc %").is_err());
        assert!(parse("%99999d").is_err());
        assert!(parse("%@s").is_err());
    }
}
