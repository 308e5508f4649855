//! A tracepoint's `print fmt:` line, evaluated on a raw record as libtraceevent (so perf
//! script) does: `prev_state=D`, `[action=TIMER]`, `0x0000002a`, not the raw numbers.
//!
//! The line is a C `printf` format string and its argument expressions over the record's
//! fields (`REC->prev_state`), with the kernel's helpers `__print_flags`,
//! `__print_symbolic`, `__get_str` and friends. Written by hand: the only implementation is
//! libtraceevent (C); no Rust crate evaluates these. What is not understood (an enum name
//! the format leaves unresolved, `%pS` that would need kernel symbols) makes [`render`]
//! return `None`, and the caller shows the fields as `name=value` instead.

use super::{FieldValue, TracepointFormat};

/// A parsed `print fmt:` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrintFmt {
    pieces: Vec<Piece>,
    args: Vec<Expr>,
}

/// A piece of the format string.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Text(String),
    Conv(Conv),
}

/// One `%…` conversion.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Conv {
    left: bool,
    zero: bool,
    alt: bool,
    plus: bool,
    width: usize,
    precision: Option<usize>,
    /// `h` count (negative) or `l` count; `z`/`j`/`t` count as `l`.
    length: i8,
    kind: char,
    /// `%ps` (symbol) or `%pS`/`%pF` (symbol+offset): a code address by its kernel symbol.
    symbol: Option<char>,
}

/// An argument expression.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Expr {
    Num(i128),
    Str(String),
    Field(String),
    /// A name the format left unresolved (an enum constant, `vmemmap_base`): 0 in
    /// arithmetic, as libtraceevent reads it; never a match as a flag or symbol value.
    Ident(String),
    Unary(char, Box<Expr>),
    Binary(&'static str, Box<Expr>, Box<Expr>),
    Cond(Box<Expr>, Box<Expr>, Box<Expr>),
    /// A cast to an integer of `bits`, `signed`.
    Cast(u32, bool, Box<Expr>),
    Call(String, Vec<Expr>),
    /// `{ value, "name" }` in `__print_flags`/`__print_symbolic`.
    Brace(Vec<Expr>),
    /// `array[index]`.
    Index(Box<Expr>, Box<Expr>),
}

/// A value during evaluation.
#[derive(Debug, Clone)]
enum Value {
    Int(i128),
    Str(String),
    Ints(Vec<i128>, u32),
}

impl Value {
    fn int(&self) -> Option<i128> {
        match self {
            Value::Int(v) => Some(*v),
            _ => None,
        }
    }
}

/// Parses the text after `print fmt:`; `None` when it is not a format string and
/// expressions this module understands.
pub fn parse(text: &str) -> Option<PrintFmt> {
    let tokens = tokenize(text.trim())?;
    let mut p = Parser {
        tokens,
        at: 0,
        depth: 0,
    };
    let Tok::Str(format) = p.next()? else {
        return None;
    };
    let pieces = parse_format_string(&format)?;
    let mut args = Vec::new();
    while p.eat(&Tok::Op(",")) {
        args.push(p.expr()?);
    }
    if p.at != p.tokens.len() {
        return None;
    }
    Some(PrintFmt { pieces, args })
}

/// Names a kernel code address for `%ps`/`%pS`: its symbol and the offset in it.
pub type Resolver<'r> = &'r mut dyn FnMut(u64) -> Option<(String, u64)>;

/// The record rendered as perf script prints it, or `None` when something in the format
/// cannot be evaluated. `resolve` names code addresses for `%ps`/`%pS` (unnamed ones are
/// printed in hex, as perf does).
pub fn render(
    fmt: &PrintFmt,
    format: &TracepointFormat,
    raw: &[u8],
    resolve: Resolver<'_>,
) -> Option<String> {
    let ctx = Ctx { format, raw };
    let mut out = String::new();
    let mut args = fmt.args.iter();
    for piece in &fmt.pieces {
        match piece {
            Piece::Text(t) => out.push_str(t),
            Piece::Conv(c) => {
                let v = ctx.eval(args.next()?)?;
                match (c.symbol, &v) {
                    (Some(kind), Value::Int(addr)) => {
                        let addr = truncate(*addr, 64, false) as u64;
                        match resolve(addr) {
                            Some((name, _)) if kind == 's' => out.push_str(&name),
                            Some((name, off)) => out.push_str(&format!("{name}+{off:#x}")),
                            None => out.push_str(&format!("{addr:#x}")),
                        }
                    }
                    _ => out.push_str(&convert(c, &v)?),
                }
            }
        }
    }
    Some(out)
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    Num(i128),
    Str(String),
    Ident(String),
    Op(&'static str),
}

const OPS: &[&str] = &[
    "->", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "(", ")", "{", "}", "[", "]", ",", "?",
    ":", "+", "-", "*", "/", "%", "&", "|", "^", "~", "!", "<", ">", ".",
];

fn tokenize(s: &str) -> Option<Vec<Tok>> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c == b'"' {
            let mut text = Vec::new();
            i += 1;
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\\' && i + 1 < b.len() {
                    i += 1;
                    text.push(match b[i] {
                        b'n' => b'\n',
                        b't' => b'\t',
                        b'0' => 0,
                        other => other,
                    });
                } else {
                    text.push(b[i]);
                }
                i += 1;
            }
            i += 1;
            // Adjacent literals concatenate, as in C.
            let text = String::from_utf8_lossy(&text).into_owned();
            match out.last_mut() {
                Some(Tok::Str(prev)) => prev.push_str(&text),
                _ => out.push(Tok::Str(text)),
            }
        } else if c.is_ascii_digit() {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric()) {
                i += 1;
            }
            let word = s[start..i].trim_end_matches(['u', 'U', 'l', 'L']);
            let v = match word.strip_prefix("0x").or_else(|| word.strip_prefix("0X")) {
                Some(hex) => i128::from_str_radix(hex, 16).ok()?,
                None if word.len() > 1 && word.starts_with('0') => {
                    i128::from_str_radix(&word[1..], 8).ok()?
                }
                None => word.parse().ok()?,
            };
            out.push(Tok::Num(v));
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push(Tok::Ident(s[start..i].to_string()));
        } else if c == b'\'' && i + 2 < b.len() && b[i + 2] == b'\'' {
            out.push(Tok::Num(i128::from(b[i + 1])));
            i += 3;
        } else {
            let op = OPS.iter().find(|op| s[i..].starts_with(**op))?;
            out.push(Tok::Op(op));
            i += op.len();
        }
    }
    Some(out)
}

/// The C type words of a cast: its width and signedness, or `None` when the words are not
/// a type this module knows (then `(word)` is an expression).
fn cast_type(words: &[String]) -> Option<(u32, bool)> {
    let mut signed = true;
    let mut bits = 32;
    let mut longs = 0;
    let mut pointer = false;
    // `struct page *`, `enum x`: a pointer to an aggregate is an address; an enum an int.
    if matches!(
        words.first().map(String::as_str),
        Some("struct" | "union" | "enum")
    ) {
        let pointer = words.last().is_some_and(|w| w == "*");
        return match (words[0].as_str(), pointer) {
            (_, true) => Some((64, false)),
            ("enum", false) => Some((32, true)),
            _ => None,
        };
    }
    for w in words {
        match w.as_str() {
            "unsigned" => signed = false,
            "signed" | "const" | "volatile" | "int" | "__int" => {}
            "long" => longs += 1,
            "short" => bits = 16,
            "char" => bits = 8,
            "bool" | "_Bool" => bits = 8,
            "*" => pointer = true,
            "void" => pointer = true,
            "size_t" | "uintptr_t" | "dma_addr_t" | "phys_addr_t" | "sector_t" | "loff_t"
            | "u64" | "__u64" | "uint64_t" | "gfp_t" => {
                signed = w == "loff_t";
                bits = if w == "gfp_t" { 32 } else { 64 };
            }
            "s64" | "__s64" | "int64_t" | "ssize_t" | "time64_t" => bits = 64,
            "u32" | "__u32" | "uint32_t" => (bits, signed) = (32, false),
            "s32" | "__s32" | "int32_t" | "pid_t" => bits = 32,
            "u16" | "__u16" | "uint16_t" => (bits, signed) = (16, false),
            "s16" | "__s16" | "int16_t" => bits = 16,
            "u8" | "__u8" | "uint8_t" => (bits, signed) = (8, false),
            "s8" | "__s8" | "int8_t" => bits = 8,
            _ => return None,
        }
    }
    if longs > 0 || pointer {
        bits = 64;
    }
    if pointer {
        signed = false;
    }
    Some((bits, signed))
}

struct Parser {
    tokens: Vec<Tok>,
    at: usize,
    /// Nesting depth, bounded so a hostile format cannot overflow the stack.
    depth: usize,
}

/// The deepest nesting parsed (the kernel's gfp flags reach about 15).
const MAX_DEPTH: usize = 64;

/// Binary operators by precedence, loosest first (C's order).
const LEVELS: &[&[&str]] = &[
    &["||"],
    &["&&"],
    &["|"],
    &["^"],
    &["&"],
    &["==", "!="],
    &["<", ">", "<=", ">="],
    &["<<", ">>"],
    &["+", "-"],
    &["*", "/", "%"],
];

impl Parser {
    fn next(&mut self) -> Option<Tok> {
        let t = self.tokens.get(self.at)?.clone();
        self.at += 1;
        Some(t)
    }

    fn peek(&self) -> Option<&Tok> {
        self.tokens.get(self.at)
    }

    fn eat(&mut self, t: &Tok) -> bool {
        if self.peek() == Some(t) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, op: &'static str) -> Option<()> {
        self.eat(&Tok::Op(op)).then_some(())
    }

    fn expr(&mut self) -> Option<Expr> {
        self.depth += 1;
        let e = if self.depth > MAX_DEPTH {
            None
        } else {
            self.conditional()
        };
        self.depth -= 1;
        e
    }

    fn conditional(&mut self) -> Option<Expr> {
        let cond = self.binary(0)?;
        if self.eat(&Tok::Op("?")) {
            let yes = self.expr()?;
            self.expect(":")?;
            let no = self.expr()?;
            return Some(Expr::Cond(Box::new(cond), Box::new(yes), Box::new(no)));
        }
        Some(cond)
    }

    fn binary(&mut self, level: usize) -> Option<Expr> {
        if level == LEVELS.len() {
            return self.unary();
        }
        let mut left = self.binary(level + 1)?;
        loop {
            let Some(Tok::Op(op)) = self.peek() else {
                return Some(left);
            };
            let Some(op) = LEVELS[level].iter().find(|o| *o == op) else {
                return Some(left);
            };
            self.at += 1;
            let right = self.binary(level + 1)?;
            left = Expr::Binary(op, Box::new(left), Box::new(right));
        }
    }

    fn unary(&mut self) -> Option<Expr> {
        for op in ["-", "~", "!", "+"] {
            if self.eat(&Tok::Op(op)) {
                let e = self.expr_depth(Self::unary)?;
                return Some(Expr::Unary(op.chars().next()?, Box::new(e)));
            }
        }
        if self.peek() == Some(&Tok::Op("(")) {
            if let Some(cast) = self.try_cast() {
                return Some(cast);
            }
        }
        self.primary()
    }

    /// `(type) operand`, when the parenthesis holds only type words.
    fn try_cast(&mut self) -> Option<Expr> {
        let save = self.at;
        self.at += 1;
        let mut words = Vec::new();
        loop {
            match self.next() {
                Some(Tok::Ident(w)) => words.push(w),
                Some(Tok::Op("*")) => words.push("*".into()),
                Some(Tok::Op(")")) => break,
                _ => {
                    self.at = save;
                    return None;
                }
            }
        }
        let Some((bits, signed)) = cast_type(&words).filter(|_| !words.is_empty()) else {
            self.at = save;
            return None;
        };
        let Some(operand) = self.expr_depth(Self::unary) else {
            self.at = save;
            return None;
        };
        Some(Expr::Cast(bits, signed, Box::new(operand)))
    }

    /// Runs `parse` one nesting level deeper (unary chains and casts recurse too).
    fn expr_depth(&mut self, parse: fn(&mut Self) -> Option<Expr>) -> Option<Expr> {
        self.depth += 1;
        let e = if self.depth > MAX_DEPTH {
            None
        } else {
            parse(self)
        };
        self.depth -= 1;
        e
    }

    fn primary(&mut self) -> Option<Expr> {
        match self.next()? {
            Tok::Num(n) => Some(Expr::Num(n)),
            Tok::Str(s) => Some(Expr::Str(s)),
            Tok::Op("(") => {
                let e = self.expr()?;
                self.expect(")")?;
                Some(e)
            }
            Tok::Op("{") => {
                let mut items = vec![self.expr()?];
                while self.eat(&Tok::Op(",")) {
                    items.push(self.expr()?);
                }
                self.expect("}")?;
                Some(Expr::Brace(items))
            }
            Tok::Ident(w) if w == "REC" => {
                self.expect("->")?;
                let Tok::Ident(f) = self.next()? else {
                    return None;
                };
                let mut e = Expr::Field(f);
                while self.eat(&Tok::Op("[")) {
                    let i = self.expr()?;
                    self.expect("]")?;
                    e = Expr::Index(Box::new(e), Box::new(i));
                }
                Some(e)
            }
            Tok::Ident(w) if self.peek() == Some(&Tok::Op("(")) => {
                self.at += 1;
                let mut args = Vec::new();
                if !self.eat(&Tok::Op(")")) {
                    args.push(self.expr()?);
                    while self.eat(&Tok::Op(",")) {
                        args.push(self.expr()?);
                    }
                    self.expect(")")?;
                }
                Some(Expr::Call(w, args))
            }
            Tok::Ident(w) => Some(Expr::Ident(w)),
            Tok::Op(_) => None,
        }
    }
}

/// Splits a printf format into text and conversions.
fn parse_format_string(f: &str) -> Option<Vec<Piece>> {
    let mut pieces = Vec::new();
    let mut text = String::new();
    let mut chars = f.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '%' {
            text.push(c);
            continue;
        }
        if chars.peek() == Some(&'%') {
            chars.next();
            text.push('%');
            continue;
        }
        let mut conv = Conv {
            left: false,
            zero: false,
            alt: false,
            plus: false,
            width: 0,
            precision: None,
            length: 0,
            kind: 'd',
            symbol: None,
        };
        while let Some(&f) = chars.peek() {
            match f {
                '-' => conv.left = true,
                '0' => conv.zero = true,
                '#' => conv.alt = true,
                '+' => conv.plus = true,
                ' ' => {}
                _ => break,
            }
            chars.next();
        }
        while let Some(d) = chars.peek().and_then(|c| c.to_digit(10)) {
            conv.width = conv.width * 10 + d as usize;
            chars.next();
        }
        if chars.peek() == Some(&'.') {
            chars.next();
            let mut p = 0;
            while let Some(d) = chars.peek().and_then(|c| c.to_digit(10)) {
                p = p * 10 + d as usize;
                chars.next();
            }
            conv.precision = Some(p);
        }
        while let Some(&l) = chars.peek() {
            match l {
                'h' => conv.length -= 1,
                'l' | 'z' | 'j' | 't' | 'L' | 'q' => conv.length += 1,
                _ => break,
            }
            chars.next();
        }
        conv.kind = chars.next()?;
        if !"diuxXocsp".contains(conv.kind) {
            return None;
        }
        // `%ps`/`%pS`/`%pf`/`%pF` name a code address; other extensions (`%pM`, `%pI4`,
        // …) are not done.
        if conv.kind == 'p' && chars.peek().is_some_and(char::is_ascii_alphanumeric) {
            conv.symbol = match chars.next()? {
                's' | 'f' => Some('s'),
                'S' | 'F' | 'B' => Some('S'),
                _ => return None,
            };
        }
        if !text.is_empty() {
            pieces.push(Piece::Text(std::mem::take(&mut text)));
        }
        pieces.push(Piece::Conv(conv));
    }
    if !text.is_empty() {
        pieces.push(Piece::Text(text));
    }
    Some(pieces)
}

struct Ctx<'a> {
    format: &'a TracepointFormat,
    raw: &'a [u8],
}

impl Ctx<'_> {
    fn field(&self, name: &str) -> Option<Value> {
        let f = self.format.field(name)?;
        Some(match f.read(self.raw, self.format.big_endian)? {
            FieldValue::Signed(v) => Value::Int(i128::from(v)),
            FieldValue::Unsigned(v) | FieldValue::Address(v) => Value::Int(i128::from(v)),
            FieldValue::Str(s) => Value::Str(s),
            FieldValue::SignedArray(v) => {
                Value::Ints(v.into_iter().map(i128::from).collect(), elem_size(f))
            }
            FieldValue::UnsignedArray(v) => {
                Value::Ints(v.into_iter().map(i128::from).collect(), elem_size(f))
            }
        })
    }

    fn eval(&self, e: &Expr) -> Option<Value> {
        Some(match e {
            Expr::Num(n) => Value::Int(*n),
            Expr::Str(s) => Value::Str(s.clone()),
            Expr::Field(f) => self.field(f)?,
            Expr::Ident(_) => Value::Int(0),
            Expr::Brace(_) => return None,
            Expr::Index(a, i) => {
                let i = usize::try_from(self.eval(i)?.int()?).ok()?;
                match self.eval(a)? {
                    Value::Ints(v, _) => Value::Int(*v.get(i)?),
                    _ => return None,
                }
            }
            Expr::Unary(op, a) => {
                let v = self.eval(a)?.int()?;
                Value::Int(match op {
                    '-' => v.wrapping_neg(),
                    '~' => !v,
                    '!' => i128::from(v == 0),
                    _ => v,
                })
            }
            Expr::Binary(op, a, b) => {
                let (a, b) = (self.eval(a)?.int()?, self.eval(b)?.int()?);
                Value::Int(binary(op, a, b)?)
            }
            Expr::Cond(c, yes, no) => {
                let c = self.eval(c)?.int()?;
                self.eval(if c != 0 { yes } else { no })?
            }
            Expr::Cast(bits, signed, a) => match self.eval(a)? {
                Value::Int(v) => Value::Int(truncate(v, *bits, *signed)),
                other => other,
            },
            Expr::Call(name, args) => self.call(name, args)?,
        })
    }

    fn call(&self, name: &str, args: &[Expr]) -> Option<Value> {
        let field_arg = |i: usize| -> Option<Value> {
            match args.get(i)? {
                Expr::Field(f) | Expr::Ident(f) => self.field(f),
                other => self.eval(other),
            }
        };
        match name {
            "__get_str" | "__get_rel_str" => match field_arg(0)? {
                Value::Str(s) => Some(Value::Str(s)),
                _ => None,
            },
            "__get_dynamic_array" | "__get_rel_dynamic_array" => field_arg(0),
            "__get_dynamic_array_len" | "__get_rel_dynamic_array_len" => match field_arg(0)? {
                Value::Ints(v, size) => Some(Value::Int((v.len() as u32 * size) as i128)),
                Value::Str(s) => Some(Value::Int(s.len() as i128 + 1)),
                Value::Int(_) => None,
            },
            "__builtin_expect" => self.eval(args.first()?),
            "__print_flags" => {
                let v = self.eval(args.first()?)?.int()?;
                let Value::Str(delim) = self.eval(args.get(1)?)? else {
                    return None;
                };
                Some(Value::Str(print_flags(v, &delim, self.pairs(&args[2..])?)))
            }
            "__print_symbolic" => {
                let v = self.eval(args.first()?)?.int()?;
                let pairs = self.pairs(&args[1..])?;
                // Compared as C's 64-bit integers: an unresolved name (-1) matches all ones.
                let v64 = v as u64;
                Some(Value::Str(
                    pairs
                        .iter()
                        .find(|(k, _)| *k as u64 == v64)
                        .map_or_else(|| format!("0x{:x}", v as u64), |(_, s)| s.clone()),
                ))
            }
            "__print_hex" | "__print_hex_str" => {
                let bytes = self.bytes(args.first()?)?;
                let len = self.eval(args.get(1)?)?.int()?.max(0) as usize;
                let bytes = &bytes[..len.min(bytes.len())];
                let sep = if name == "__print_hex" { " " } else { "" };
                let text: Vec<String> = bytes.iter().map(|b| format!("{b:02x}")).collect();
                Some(Value::Str(text.join(sep)))
            }
            "__print_array" => {
                let Value::Ints(v, _) = self.eval(args.first()?)? else {
                    return None;
                };
                let count = self.eval(args.get(1)?)?.int()?.max(0) as usize;
                let size = self.eval(args.get(2)?)?.int()?;
                let items: Vec<String> = v
                    .iter()
                    .take(count)
                    .map(|x| format!("0x{:x}", truncate(*x, (size * 8) as u32, false)))
                    .collect();
                Some(Value::Str(format!("{{{}}}", items.join(","))))
            }
            _ => None,
        }
    }

    /// The bytes of an array or string argument.
    fn bytes(&self, e: &Expr) -> Option<Vec<u8>> {
        match self.eval(e)? {
            Value::Ints(v, _) => Some(v.iter().map(|x| *x as u8).collect()),
            Value::Str(s) => Some(s.into_bytes()),
            Value::Int(_) => None,
        }
    }

    /// `{ value, "name" }, …` of `__print_flags`/`__print_symbolic`, each value as
    /// libtraceevent's `eval_flag` reads it: a name the format left unresolved
    /// (`I_DIRTY_SYNC`, `HRTIMER_MODE_ABS`) is -1 unless libtraceevent knows it, and so is
    /// any negative value (it prints as "-5", which is not a number to `eval_flag`).
    fn pairs(&self, items: &[Expr]) -> Option<Vec<(i128, String)>> {
        let mut pairs = Vec::with_capacity(items.len());
        for item in items {
            let Expr::Brace(kv) = item else {
                return None;
            };
            // `{ 0, ((void *)0) }` ends some lists (gfp flags): no name, no entry.
            let Some(Value::Str(s)) = self.eval(kv.get(1)?) else {
                continue;
            };
            let key = kv.first()?;
            let k = match key {
                Expr::Ident(name) => known_flag_name(name).unwrap_or(UNRESOLVED_FLAG),
                _ if has_unresolved_name(key) => UNRESOLVED_FLAG,
                _ => match self.eval(key).and_then(|k| k.int()) {
                    Some(k) if k < 0 => UNRESOLVED_FLAG,
                    Some(k) => k,
                    None => continue,
                },
            };
            pairs.push((k, s));
        }
        Some(pairs)
    }
}

/// The value libtraceevent gives a flag or symbol it cannot read as a number.
const UNRESOLVED_FLAG: i128 = -1;

/// The few enum names libtraceevent's `eval_flag` knows although formats leave them
/// unresolved (softirq vectors and hrtimer results).
fn known_flag_name(name: &str) -> Option<i128> {
    const SOFTIRQS: [&str; 10] = [
        "HI_SOFTIRQ",
        "TIMER_SOFTIRQ",
        "NET_TX_SOFTIRQ",
        "NET_RX_SOFTIRQ",
        "BLOCK_SOFTIRQ",
        "IRQ_POLL_SOFTIRQ",
        "TASKLET_SOFTIRQ",
        "SCHED_SOFTIRQ",
        "HRTIMER_SOFTIRQ",
        "RCU_SOFTIRQ",
    ];
    if let Some(i) = SOFTIRQS.iter().position(|n| *n == name) {
        return Some(i as i128);
    }
    match name {
        "HRTIMER_NORESTART" => Some(0),
        "HRTIMER_RESTART" => Some(1),
        _ => None,
    }
}

/// Whether an expression uses a name the format left unresolved.
fn has_unresolved_name(e: &Expr) -> bool {
    match e {
        Expr::Ident(_) => true,
        Expr::Num(_) | Expr::Str(_) | Expr::Field(_) => false,
        Expr::Unary(_, a) | Expr::Cast(_, _, a) => has_unresolved_name(a),
        Expr::Binary(_, a, b) | Expr::Index(a, b) => {
            has_unresolved_name(a) || has_unresolved_name(b)
        }
        Expr::Cond(a, b, c) => {
            has_unresolved_name(a) || has_unresolved_name(b) || has_unresolved_name(c)
        }
        Expr::Call(_, args) | Expr::Brace(args) => args.iter().any(has_unresolved_name),
    }
}

fn elem_size(f: &super::TracepointField) -> u32 {
    match f.kind() {
        super::FieldKind::Array { elem, .. } => elem,
        _ => 1,
    }
}

fn binary(op: &str, a: i128, b: i128) -> Option<i128> {
    Some(match op {
        "+" => a.wrapping_add(b),
        "-" => a.wrapping_sub(b),
        "*" => a.wrapping_mul(b),
        "/" => a.checked_div(b)?,
        "%" => a.checked_rem(b)?,
        "<<" => a.checked_shl(u32::try_from(b).ok()?)?,
        ">>" => a.checked_shr(u32::try_from(b).ok()?)?,
        "&" => a & b,
        "|" => a | b,
        "^" => a ^ b,
        "==" => i128::from(a == b),
        "!=" => i128::from(a != b),
        "<" => i128::from(a < b),
        ">" => i128::from(a > b),
        "<=" => i128::from(a <= b),
        ">=" => i128::from(a >= b),
        "&&" => i128::from(a != 0 && b != 0),
        "||" => i128::from(a != 0 || b != 0),
        _ => return None,
    })
}

/// `v` as a C integer of `bits` bits.
fn truncate(v: i128, bits: u32, signed: bool) -> i128 {
    if bits >= 128 {
        return v;
    }
    if bits == 0 {
        return 0;
    }
    let mask = (1i128 << bits) - 1;
    let u = v & mask;
    if signed && u >> (bits - 1) != 0 {
        u - (1i128 << bits)
    } else {
        u
    }
}

/// libtraceevent's `__print_flags`: each positive flag fully set in `v`, in the listed
/// order, joined by `delim`; what no flag covers follows in hex. A flag of value 0 never
/// prints, but when `v` is 0 the first unresolved flag (-1) names it, as perf 6.1 prints
/// `state=I_DIRTY_SYNC` for a 0 state.
fn print_flags(mut v: i128, delim: &str, flags: Vec<(i128, String)>) -> String {
    let mut out = String::new();
    for (flag, name) in flags {
        if v == 0 && flag < 0 {
            out.push_str(&name);
            return out;
        }
        if flag > 0 && v & flag == flag {
            if !out.is_empty() {
                out.push_str(delim);
            }
            out.push_str(&name);
            v &= !flag;
        }
    }
    if v != 0 {
        if !out.is_empty() {
            out.push_str(delim);
        }
        out.push_str(&format!("0x{:x}", v as u64));
    }
    out
}

/// One conversion of `v`, as C's printf with the conversion's length modifier.
fn convert(c: &Conv, v: &Value) -> Option<String> {
    let bits = match c.length {
        l if l <= -2 => 8,
        -1 => 16,
        0 => 32,
        _ => 64,
    };
    let body = match (c.kind, v) {
        ('s', Value::Str(s)) => match c.precision {
            Some(p) => s.chars().take(p).collect(),
            None => s.clone(),
        },
        ('s', Value::Int(_)) | (_, Value::Ints(..)) => return None,
        (_, Value::Str(_)) => return None,
        ('c', Value::Int(n)) => char::from(*n as u8).to_string(),
        ('d' | 'i', Value::Int(n)) => {
            let n = truncate(*n, bits, true);
            let sign = if c.plus && n >= 0 { "+" } else { "" };
            return Some(pad_number(c, &format!("{sign}{n}")));
        }
        ('u', Value::Int(n)) => return Some(pad_number(c, &truncate(*n, bits, false).to_string())),
        ('x' | 'X' | 'o', Value::Int(n)) => {
            let n = truncate(*n, bits, false);
            let digits = match c.kind {
                'x' => format!("{n:x}"),
                'X' => format!("{n:X}"),
                _ => format!("{n:o}"),
            };
            let prefix = match (c.alt && n != 0, c.kind) {
                (true, 'x') => "0x",
                (true, 'X') => "0X",
                (true, _) => "0",
                _ => "",
            };
            return Some(pad_number(c, &format!("{prefix}{digits}")));
        }
        ('p', Value::Int(n)) => {
            let n = truncate(*n, 64, false);
            if n == 0 {
                "(nil)".to_string()
            } else {
                format!("0x{n:x}")
            }
        }
        _ => return None,
    };
    Some(pad(c, body))
}

/// A number padded: zeros go after the sign or `0x` prefix.
fn pad_number(c: &Conv, text: &str) -> String {
    let text = match c.precision {
        Some(p) => {
            let (sign, digits) = text.split_at(usize::from(text.starts_with(['-', '+'])));
            format!("{sign}{digits:0>p$}")
        }
        None => text.to_string(),
    };
    if c.zero && !c.left && c.precision.is_none() && text.len() < c.width {
        let cut = if text.starts_with("0x") || text.starts_with("0X") {
            2
        } else {
            usize::from(text.starts_with(['-', '+']))
        };
        let (head, digits) = text.split_at(cut);
        return format!("{head}{digits:0>w$}", w = c.width - cut);
    }
    pad(c, text)
}

fn pad(c: &Conv, text: String) -> String {
    let len = text.chars().count();
    if len >= c.width {
        text
    } else if c.left {
        format!("{text}{}", " ".repeat(c.width - len))
    } else {
        format!("{}{text}", " ".repeat(c.width - len))
    }
}

#[cfg(test)]
mod tests;
