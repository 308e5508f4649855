//! perf's metric expression language, as perf's pmu-events tables store it (the form
//! jevents.py writes, read by perf's `util/expr.l` and `util/expr.y`): numbers, event and
//! metric names (with `\`-escapes; `@` stands for `/` in `pmu@term\,term@`), `#literals`,
//! `+ - * / %`, `< >`, the logical `| & ^`, unary minus, `min`/`max`/`d_ratio`,
//! `source_count`/`has_event`/`strcmp_cpuid_str` and `A if COND else B`.
//!
//! Hand-written (a lexer and a precedence-climbing parser of ~250 lines) because the
//! tokenizer must follow flex's longest-match rules exactly as perf's scanner does, which a
//! general grammar crate would not give for free.

use std::fmt;

/// A parsed expression.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// A number (`1e9`, `.5`, `NaN`).
    Num(f64),
    /// An event or metric name, unescaped (`cpu@UOPS_RETIRED.MS,cmask=1@`).
    Id(String),
    /// A `#literal` (`#SMT_on`, `#num_cpus_online`), spelled as written.
    Literal(String),
    /// `source_count(ID)`.
    SourceCount(String),
    /// `has_event(ID)`.
    HasEvent(String),
    /// `strcmp_cpuid_str(ID)`.
    StrcmpCpuid(String),
    /// Unary minus.
    Neg(Box<Expr>),
    /// A binary operator.
    Binary(Op, Box<Expr>, Box<Expr>),
    /// `d_ratio(a, b)`: a / b, or 0 when b is 0.
    DRatio(Box<Expr>, Box<Expr>),
    /// `min(a, b)`.
    Min(Box<Expr>, Box<Expr>),
    /// `max(a, b)`.
    Max(Box<Expr>, Box<Expr>),
    /// `then if cond else otherwise`.
    If {
        /// The value when `cond` is not zero.
        then: Box<Expr>,
        /// The condition.
        cond: Box<Expr>,
        /// The value when `cond` is zero.
        otherwise: Box<Expr>,
    },
}

/// Binary operators, perf's precedence from loosest to tightest: `|`, `^`, `&`, `< >`,
/// `+ -`, `* / %` (all left-associative).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// Logical or.
    Or,
    /// Logical exclusive or.
    Xor,
    /// Logical and.
    And,
    /// Less than (1 or 0).
    Lt,
    /// Greater than (1 or 0).
    Gt,
    /// Addition.
    Add,
    /// Subtraction.
    Sub,
    /// Multiplication.
    Mul,
    /// Division (NaN when the divisor is 0).
    Div,
    /// Integer remainder.
    Rem,
}

impl Op {
    fn precedence(self) -> u8 {
        match self {
            Op::Or => 1,
            Op::Xor => 2,
            Op::And => 3,
            Op::Lt | Op::Gt => 4,
            Op::Add | Op::Sub => 5,
            Op::Mul | Op::Div | Op::Rem => 6,
        }
    }
}

/// An expression that does not parse (perf reports these as a parse failure and prints no
/// value for the metric).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// What was expected or found.
    pub message: String,
    /// Byte offset in the expression.
    pub offset: usize,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at offset {}", self.message, self.offset)
    }
}

impl std::error::Error for ParseError {}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Num(f64),
    Id(String),
    Literal(String),
    Keyword(&'static str),
    Punct(char),
}

/// perf's keywords, in the scanner's rule order (earlier wins a tie in length).
const KEYWORDS: &[&str] = &[
    "d_ratio",
    "max",
    "min",
    "if",
    "else",
    "source_count",
    "has_event",
    "strcmp_cpuid_str",
    "NaN",
];

fn is_symbol_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b':' | b'@' | b'?')
}

/// Length of the longest `({spec}|{sym})+` at `s` (`spec` is `\` followed by `-`, `,`, `=`).
fn symbol_len(s: &[u8]) -> usize {
    let mut i = 0;
    loop {
        if i < s.len() && is_symbol_char(s[i]) {
            i += 1;
        } else if i + 1 < s.len() && s[i] == b'\\' && matches!(s[i + 1], b'-' | b',' | b'=') {
            i += 2;
        } else {
            return i;
        }
    }
}

fn digits(s: &[u8]) -> usize {
    s.iter().take_while(|c| c.is_ascii_digit()).count()
}

/// Length of the longest `([0-9]+\.?[0-9]*|[0-9]*\.?[0-9]+)(e-?[0-9]+)?` at `s`.
fn number_len(s: &[u8]) -> usize {
    let whole = digits(s);
    let dot = s.get(whole) == Some(&b'.');
    let fraction = if dot { digits(&s[whole + 1..]) } else { 0 };
    let mantissa = if whole > 0 {
        whole + if dot { 1 + fraction } else { 0 }
    } else if dot && fraction > 0 {
        1 + fraction
    } else {
        return 0;
    };
    let mut exp = mantissa;
    if s.get(exp) == Some(&b'e') {
        exp += 1;
        if s.get(exp) == Some(&b'-') {
            exp += 1;
        }
        let d = digits(&s[exp.min(s.len())..]);
        if d > 0 {
            return exp + d;
        }
    }
    mantissa
}

/// Undoes the scanner's escapes: `\x` → `x`, `?` → the runtime parameter (0). perf runs
/// this twice over each name, so a doubled backslash collapses fully; so does this.
fn normalize(text: &str) -> String {
    let once = |s: &str| {
        let mut out = String::with_capacity(s.len());
        let mut chars = s.chars();
        while let Some(c) = chars.next() {
            match c {
                '\\' => match chars.next() {
                    Some(n) => out.push(n),
                    None => break,
                },
                '?' => out.push('0'),
                c => out.push(c),
            }
        }
        out
    };
    once(&once(text))
}

fn lex(text: &str) -> Result<Vec<(Tok, usize)>, ParseError> {
    let s = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < s.len() {
        let rest = &s[i..];
        if rest[0] == b'#' {
            let n = 1 + rest[1..]
                .iter()
                .take_while(|&&c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'-'))
                .count();
            if n > 1 {
                out.push((Tok::Literal(text[i..i + n].to_string()), i));
                i += n;
                continue;
            }
        }
        // flex: the longest match wins; on a tie the earlier rule (keywords, then numbers,
        // then symbols).
        let keyword = KEYWORDS
            .iter()
            .find(|k| rest.starts_with(k.as_bytes()) && symbol_len(rest) <= k.len());
        let num = number_len(rest);
        let sym = symbol_len(rest);
        if let Some(k) = keyword {
            out.push((
                if *k == "NaN" {
                    Tok::Num(f64::NAN)
                } else {
                    Tok::Keyword(k)
                },
                i,
            ));
            i += k.len();
        } else if num > 0 && num >= sym {
            let v: f64 = text[i..i + num].parse().map_err(|_| ParseError {
                message: format!("bad number `{}`", &text[i..i + num]),
                offset: i,
            })?;
            out.push((Tok::Num(v), i));
            i += num;
        } else if sym > 0 {
            out.push((Tok::Id(normalize(&text[i..i + sym])), i));
            i += sym;
        } else {
            let c = rest[0] as char;
            if "|^&<>-+*/%(),".contains(c) {
                out.push((Tok::Punct(c), i));
            }
            // Anything else (spaces, stray characters) is skipped, as perf's `.` rule does.
            i += text[i..].chars().next().map_or(1, char::len_utf8);
        }
    }
    Ok(out)
}

struct Parser {
    toks: Vec<(Tok, usize)>,
    pos: usize,
    end: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos).map(|(t, _)| t)
    }

    fn offset(&self) -> usize {
        self.toks.get(self.pos).map_or(self.end, |(_, o)| *o)
    }

    fn error<T>(&self, message: impl Into<String>) -> Result<T, ParseError> {
        Err(ParseError {
            message: message.into(),
            offset: self.offset(),
        })
    }

    fn expect(&mut self, want: char) -> Result<(), ParseError> {
        if self.peek() == Some(&Tok::Punct(want)) {
            self.pos += 1;
            Ok(())
        } else {
            self.error(format!("expected `{want}`"))
        }
    }

    fn keyword(&mut self, k: &str) -> bool {
        if matches!(self.peek(), Some(Tok::Keyword(w)) if *w == k) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    /// `if_expr: expr IF expr ELSE if_expr | expr`.
    fn if_expr(&mut self) -> Result<Expr, ParseError> {
        let then = self.expr(0)?;
        if !self.keyword("if") {
            return Ok(then);
        }
        let cond = self.expr(0)?;
        if !self.keyword("else") {
            return self.error("expected `else`");
        }
        let otherwise = self.if_expr()?;
        Ok(Expr::If {
            then: Box::new(then),
            cond: Box::new(cond),
            otherwise: Box::new(otherwise),
        })
    }

    fn binary_op(&self) -> Option<Op> {
        Some(match self.peek()? {
            Tok::Punct('|') => Op::Or,
            Tok::Punct('^') => Op::Xor,
            Tok::Punct('&') => Op::And,
            Tok::Punct('<') => Op::Lt,
            Tok::Punct('>') => Op::Gt,
            Tok::Punct('+') => Op::Add,
            Tok::Punct('-') => Op::Sub,
            Tok::Punct('*') => Op::Mul,
            Tok::Punct('/') => Op::Div,
            Tok::Punct('%') => Op::Rem,
            _ => return None,
        })
    }

    /// Binary operators binding tighter than `min_prec` (precedence climbing).
    fn expr(&mut self, min_prec: u8) -> Result<Expr, ParseError> {
        let mut lhs = self.unary()?;
        while let Some(op) = self.binary_op() {
            let prec = op.precedence();
            if prec <= min_prec {
                break;
            }
            self.pos += 1;
            let rhs = self.expr(prec)?;
            lhs = Expr::Binary(op, Box::new(lhs), Box::new(rhs));
        }
        Ok(lhs)
    }

    fn unary(&mut self) -> Result<Expr, ParseError> {
        if self.peek() == Some(&Tok::Punct('-')) {
            self.pos += 1;
            return Ok(Expr::Neg(Box::new(self.unary()?)));
        }
        self.primary()
    }

    fn id_argument(&mut self) -> Result<String, ParseError> {
        self.expect('(')?;
        let Some(Tok::Id(id)) = self.peek().cloned() else {
            return self.error("expected an event name");
        };
        self.pos += 1;
        self.expect(')')?;
        Ok(id)
    }

    fn two_arguments(&mut self) -> Result<(Box<Expr>, Box<Expr>), ParseError> {
        self.expect('(')?;
        let a = self.expr(0)?;
        self.expect(',')?;
        let b = self.expr(0)?;
        self.expect(')')?;
        Ok((Box::new(a), Box::new(b)))
    }

    fn primary(&mut self) -> Result<Expr, ParseError> {
        let Some(tok) = self.peek().cloned() else {
            return self.error("unexpected end");
        };
        self.pos += 1;
        Ok(match tok {
            Tok::Num(v) => Expr::Num(v),
            Tok::Id(id) => Expr::Id(id),
            Tok::Literal(l) => Expr::Literal(l),
            Tok::Punct('(') => {
                let inner = self.if_expr()?;
                self.expect(')')?;
                inner
            }
            Tok::Keyword("source_count") => Expr::SourceCount(self.id_argument()?),
            Tok::Keyword("has_event") => Expr::HasEvent(self.id_argument()?),
            Tok::Keyword("strcmp_cpuid_str") => Expr::StrcmpCpuid(self.id_argument()?),
            Tok::Keyword("d_ratio") => {
                let (a, b) = self.two_arguments()?;
                Expr::DRatio(a, b)
            }
            Tok::Keyword("min") => {
                let (a, b) = self.two_arguments()?;
                Expr::Min(a, b)
            }
            Tok::Keyword("max") => {
                let (a, b) = self.two_arguments()?;
                Expr::Max(a, b)
            }
            _ => {
                self.pos -= 1;
                return self.error("unexpected token");
            }
        })
    }
}

/// Parses a metric expression as perf's parser reads it.
pub fn parse(text: &str) -> Result<Expr, ParseError> {
    let mut p = Parser {
        toks: lex(text)?,
        pos: 0,
        end: text.len(),
    };
    let e = p.if_expr()?;
    if p.pos != p.toks.len() {
        return p.error("unexpected token after the expression");
    }
    Ok(e)
}

impl Expr {
    /// Every name the expression reads (events and metric references, also inside
    /// `source_count`), in first-appearance order, without duplicates.
    pub fn names(&self) -> Vec<&str> {
        let mut out = Vec::new();
        self.walk_names(&mut out);
        out
    }

    fn walk_names<'a>(&'a self, out: &mut Vec<&'a str>) {
        match self {
            Expr::Id(n) | Expr::SourceCount(n) => {
                if !out.contains(&n.as_str()) {
                    out.push(n);
                }
            }
            Expr::Num(_) | Expr::Literal(_) | Expr::HasEvent(_) | Expr::StrcmpCpuid(_) => {}
            Expr::Neg(a) => a.walk_names(out),
            Expr::Binary(_, a, b) | Expr::DRatio(a, b) | Expr::Min(a, b) | Expr::Max(a, b) => {
                a.walk_names(out);
                b.walk_names(out);
            }
            Expr::If {
                then,
                cond,
                otherwise,
            } => {
                then.walk_names(out);
                cond.walk_names(out);
                otherwise.walk_names(out);
            }
        }
    }
}

#[cfg(test)]
#[path = "expr_tests.rs"]
mod tests;
