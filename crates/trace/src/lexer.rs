//! Tokens of the language. Hand-written: probe descriptions (`pmc:::ls_any.all-10000`) need a
//! different lexing mode than expressions, which the parser switches explicitly.

use crate::error::Span;

/// One token kind.
#[derive(Debug, Clone, PartialEq)]
pub enum Tok {
    /// An identifier or keyword.
    Ident(String),
    /// An integer literal.
    Int(i64),
    /// A string literal (escapes resolved).
    Str(String),
    /// `@name` or `@` alone (empty name).
    Agg(String),
    /// Punctuation or an operator.
    Punct(&'static str),
    /// End of input.
    Eof,
}

impl Tok {
    /// How the token reads in an error message.
    pub fn describe(&self) -> String {
        match self {
            Tok::Ident(s) => format!("`{s}`"),
            Tok::Int(i) => format!("`{i}`"),
            Tok::Str(_) => "a string".into(),
            Tok::Agg(s) => format!("`@{s}`"),
            Tok::Punct(p) => format!("`{p}`"),
            Tok::Eof => "the end of the program".into(),
        }
    }
}

/// Operators, longest first so that the first prefix match is the right one.
const PUNCTS: &[&str] = &[
    "<<=", ">>=", "->", "++", "--", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "^^", "+=",
    "-=", "*=", "/=", "%=", "&=", "|=", "^=", "+", "-", "*", "/", "%", "<", ">", "=", "!", "~",
    "&", "|", "^", "?", ":", ";", ",", ".", "(", ")", "[", "]", "{", "}",
];

/// The lexer: a cursor over the source.
pub struct Lexer<'s> {
    src: &'s str,
    pos: usize,
}

impl<'s> Lexer<'s> {
    /// A lexer at the start of `src`.
    pub fn new(src: &'s str) -> Lexer<'s> {
        Lexer { src, pos: 0 }
    }

    /// The current byte offset.
    pub fn pos(&self) -> usize {
        self.pos
    }

    fn rest(&self) -> &'s str {
        self.src.get(self.pos..).unwrap_or("")
    }

    /// Skips whitespace and comments (`/* */`, `//`, and a `#!` first line).
    pub fn skip_trivia(&mut self) -> Result<(), (String, Span)> {
        loop {
            let r = self.rest();
            if self.pos == 0 && r.starts_with("#!") {
                self.pos += r.find('\n').unwrap_or(r.len());
                continue;
            }
            let trimmed = r.trim_start();
            self.pos += r.len() - trimmed.len();
            let r = self.rest();
            if let Some(body) = r.strip_prefix("/*") {
                match body.find("*/") {
                    Some(end) => self.pos += end + 4,
                    None => {
                        return Err((
                            "unterminated comment".into(),
                            Span::new(self.pos, self.pos + 2),
                        ))
                    }
                }
            } else if r.starts_with("//") {
                self.pos += r.find('\n').unwrap_or(r.len());
            } else {
                return Ok(());
            }
        }
    }

    /// Whether the rest (after trivia) starts with `s`.
    pub fn at(&mut self, s: &str) -> bool {
        self.rest().starts_with(s)
    }

    /// The next character after whitespace and comments, without consuming anything.
    pub fn peek_char(&self) -> Option<char> {
        let mut l = Lexer {
            src: self.src,
            pos: self.pos,
        };
        l.skip_trivia().ok()?;
        l.rest().chars().next()
    }

    /// The identifier starting at the current position (`""` if none), not consumed.
    pub fn word(&self) -> &'s str {
        let r = self.rest();
        let n = r
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(r.len());
        &r[..n]
    }

    /// Reads a whole line from the current position (for `#pragma`).
    pub fn line(&mut self) -> (String, Span) {
        let r = self.rest();
        let n = r.find('\n').unwrap_or(r.len());
        let start = self.pos;
        self.pos += n;
        (r[..n].to_string(), Span::new(start, start + n))
    }

    /// Probe-description mode: everything up to whitespace, `,`, `{` or `/`.
    pub fn probe_desc(&mut self) -> (String, Span) {
        let r = self.rest();
        let n = r
            .find(|c: char| c.is_whitespace() || c == ',' || c == '{' || c == '/')
            .unwrap_or(r.len());
        let start = self.pos;
        self.pos += n;
        (r[..n].to_string(), Span::new(start, start + n))
    }

    /// The next token in expression mode.
    pub fn next_tok(&mut self) -> Result<(Tok, Span), (String, Span)> {
        self.skip_trivia()?;
        let start = self.pos;
        let r = self.rest();
        let Some(c) = r.chars().next() else {
            return Ok((Tok::Eof, Span::new(start, start)));
        };
        if c.is_ascii_alphabetic() || c == '_' {
            let n = r
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(r.len());
            self.pos += n;
            return Ok((Tok::Ident(r[..n].to_string()), Span::new(start, start + n)));
        }
        if c == '@' {
            let body = &r[1..];
            let n = body
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(body.len());
            self.pos += 1 + n;
            return Ok((Tok::Agg(body[..n].to_string()), Span::new(start, self.pos)));
        }
        if c.is_ascii_digit() {
            let n = r
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(r.len());
            let text = &r[..n];
            self.pos += n;
            let span = Span::new(start, start + n);
            return parse_int(text)
                .map(|v| (Tok::Int(v), span))
                .ok_or_else(|| (format!("bad integer literal `{text}`"), span));
        }
        if c == '"' {
            return self.string(start);
        }
        if c == '\'' {
            // A character constant: 'a' or '\n'.
            let mut chars = r[1..].chars();
            let (v, len) = match chars.next() {
                Some('\\') => match chars.next().and_then(escape) {
                    Some(e) => (e as i64, 2),
                    None => return Err(("bad escape".into(), Span::new(start, start + 2))),
                },
                Some(ch) => (ch as i64, ch.len_utf8()),
                None => return Err(("unterminated character".into(), Span::new(start, start + 1))),
            };
            if r[1 + len..].starts_with('\'') {
                self.pos += len + 2;
                return Ok((Tok::Int(v), Span::new(start, self.pos)));
            }
            return Err(("unterminated character".into(), Span::new(start, start + 1)));
        }
        for p in PUNCTS {
            if r.starts_with(p) {
                self.pos += p.len();
                return Ok((Tok::Punct(p), Span::new(start, self.pos)));
            }
        }
        Err((
            format!("unexpected character `{c}`"),
            Span::new(start, start + c.len_utf8()),
        ))
    }

    fn string(&mut self, start: usize) -> Result<(Tok, Span), (String, Span)> {
        let mut out = String::new();
        let mut it = self.rest()[1..].char_indices();
        while let Some((i, ch)) = it.next() {
            match ch {
                '"' => {
                    self.pos = start + 1 + i + 1;
                    return Ok((Tok::Str(out), Span::new(start, self.pos)));
                }
                '\\' => match it.next() {
                    Some((j, e)) => match escape(e) {
                        Some(v) => out.push(v),
                        None => {
                            let at = start + 1 + j;
                            return Err((
                                format!("unknown escape `\\{e}`"),
                                Span::new(at - 1, at + e.len_utf8()),
                            ));
                        }
                    },
                    None => break,
                },
                '\n' => break,
                _ => out.push(ch),
            }
        }
        Err(("unterminated string".into(), Span::new(start, start + 1)))
    }
}

fn escape(c: char) -> Option<char> {
    Some(match c {
        'n' => '\n',
        't' => '\t',
        'r' => '\r',
        '0' => '\0',
        '\\' => '\\',
        '"' => '"',
        '\'' => '\'',
        'a' => '\x07',
        'b' => '\x08',
        'f' => '\x0c',
        'v' => '\x0b',
        _ => return None,
    })
}

/// Parses a C integer literal: decimal, `0x` hex, leading-0 octal, optional `u`/`l` suffixes.
/// Values up to `u64::MAX` wrap into the 64-bit integer (addresses).
pub fn parse_int(text: &str) -> Option<i64> {
    let t = text.trim_end_matches(['u', 'U', 'l', 'L']);
    let v = if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        u64::from_str_radix(h, 16).ok()?
    } else if t.len() > 1 && t.starts_with('0') {
        u64::from_str_radix(&t[1..], 8).ok()?
    } else {
        t.parse::<u64>().ok()?
    };
    Some(v as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lexes_operators_and_literals() {
        let mut l = Lexer::new("a->b >= 0x10 /* c */ \"x\\n\" @n");
        let mut toks = Vec::new();
        loop {
            let (t, _) = l.next_tok().unwrap();
            if t == Tok::Eof {
                break;
            }
            toks.push(t);
        }
        assert_eq!(
            toks,
            vec![
                Tok::Ident("a".into()),
                Tok::Punct("->"),
                Tok::Ident("b".into()),
                Tok::Punct(">="),
                Tok::Int(16),
                Tok::Str("x\n".into()),
                Tok::Agg("n".into()),
            ]
        );
    }

    #[test]
    fn probe_mode_keeps_dots_and_dashes() {
        let mut l = Lexer::new("pmc:::ls_any.all-10000,tick-1s");
        assert_eq!(l.probe_desc().0, "pmc:::ls_any.all-10000");
    }

    #[test]
    fn integer_forms() {
        assert_eq!(parse_int("0xffffffffffffffff"), Some(-1));
        assert_eq!(parse_int("010"), Some(8));
        assert_eq!(parse_int("12ul"), Some(12));
        assert_eq!(parse_int("0x"), None);
    }
}
