//! Hand-written recursive-descent parser with Pratt expression parsing (C precedence).

use crate::ast::*;
use crate::error::{ScriptError, Span};
use crate::lexer::{Lexer, Tok};

/// Parses a program.
pub fn parse(src: &str) -> Result<Program, ScriptError> {
    let mut p = Parser {
        src,
        lex: Lexer::new(src),
        peeked: None,
        in_predicate: false,
        depth: 0,
        height: 0,
        stmt_depth: 0,
    };
    p.program()
}

struct Parser<'s> {
    src: &'s str,
    lex: Lexer<'s>,
    peeked: Option<(Tok, Span)>,
    /// Parsing a predicate: a `/` followed by `{` closes it instead of dividing.
    in_predicate: bool,
    /// Expression recursion depth of the parser, bounded by [`MAX_DEPTH`] so that hostile
    /// input cannot overflow the stack.
    depth: u32,
    /// Height of the expression tree being built (see [`MAX_NESTING`]).
    height: u32,
    /// Statement nesting depth (`if` inside `if`), bounded likewise.
    stmt_depth: u32,
}

/// How deeply the parser may recurse into an expression (parentheses, unary operators,
/// right operands).
const MAX_DEPTH: u32 = 200;
/// How high an expression tree may grow: its height is checked once the whole expression
/// is parsed. The compiler and the tree's drop walk it recursively; 250 levels leave room in
/// a debug build on a 2 MiB thread stack (about 390 overflowed it).
const MAX_HEIGHT: u32 = 250;
/// A bound on the height while an expression is built (parentheses, operands and each
/// operator of a chain count one: `1+1+…+1` nests its left side one level per operator):
/// a tree grows to at most twice this before [`MAX_HEIGHT`] is checked, so that a
/// 20,000-term chain is refused early and dropped without deep recursion.
const MAX_NESTING: u32 = 2 * MAX_HEIGHT;
const MAX_STMT_DEPTH: u32 = 32;

/// The message for an expression taller than [`MAX_HEIGHT`].
fn too_deep() -> String {
    format!(
        "expression nested too deeply (more than {MAX_HEIGHT} levels of parentheses, operators and operands): split it with variables"
    )
}

/// The height of an expression tree, walked without recursion.
fn tree_height(e: &Expr) -> u32 {
    let mut max = 0;
    let mut todo = vec![(e, 1u32)];
    while let Some((e, h)) = todo.pop() {
        max = max.max(h);
        match &e.kind {
            ExprKind::Unary(_, a) => todo.push((a, h + 1)),
            ExprKind::Binary(_, a, b) => todo.extend([(&**a, h + 1), (&**b, h + 1)]),
            ExprKind::Ternary(a, b, c) => {
                todo.extend([(&**a, h + 1), (&**b, h + 1), (&**c, h + 1)])
            }
            ExprKind::Call(_, args) => todo.extend(args.iter().map(|a| (a, h + 1))),
            _ => {}
        }
    }
    max
}

/// Binding powers: (left, right) for infix operators.
fn infix_bp(op: &str) -> Option<(u8, u8)> {
    Some(match op {
        "?" => (3, 2),
        "||" => (4, 5),
        "^^" => (6, 7),
        "&&" => (8, 9),
        "|" => (10, 11),
        "^" => (12, 13),
        "&" => (14, 15),
        "==" | "!=" => (16, 17),
        "<" | "<=" | ">" | ">=" => (18, 19),
        "<<" | ">>" => (20, 21),
        "+" | "-" => (22, 23),
        "*" | "/" | "%" => (24, 25),
        _ => return None,
    })
}

const PREFIX_BP: u8 = 26;

/// Words a D type may be made of (the checker decides which combinations mean what).
pub const TYPE_WORDS: &[&str] = &[
    "signed",
    "unsigned",
    "char",
    "short",
    "int",
    "long",
    "void",
    "string",
    "int8_t",
    "int16_t",
    "int32_t",
    "int64_t",
    "uint8_t",
    "uint16_t",
    "uint32_t",
    "uint64_t",
    "intptr_t",
    "uintptr_t",
    "size_t",
    "ssize_t",
    "off_t",
    "pid_t",
    "id_t",
    "uid_t",
    "gid_t",
    "hrtime_t",
    "uchar_t",
    "ushort_t",
    "uint_t",
    "ulong_t",
    "longlong_t",
    "u_longlong_t",
    "boolean_t",
    "caddr_t",
];

/// Whether a top-level word starts a declaration rather than a probe description.
fn is_decl_start(word: &str) -> bool {
    word == "self" || word == "this" || TYPE_WORDS.contains(&word)
}

impl<'s> Parser<'s> {
    fn err(&self, span: Span, msg: impl Into<String>) -> ScriptError {
        ScriptError::at(self.src, span, "syntax error", msg)
    }

    fn lex_err(&self, e: (String, Span)) -> ScriptError {
        self.err(e.1, e.0)
    }

    fn peek(&mut self) -> Result<&(Tok, Span), ScriptError> {
        if self.peeked.is_none() {
            let t = self.lex.next_tok().map_err(|e| self.lex_err(e))?;
            self.peeked = Some(t);
        }
        // Filled just above.
        Ok(self.peeked.as_ref().expect("peeked"))
    }

    fn next(&mut self) -> Result<(Tok, Span), ScriptError> {
        self.peek()?;
        Ok(self.peeked.take().expect("peeked"))
    }

    fn is_punct(&mut self, p: &str) -> Result<bool, ScriptError> {
        Ok(matches!(self.peek()?.0, Tok::Punct(q) if q == p))
    }

    fn eat(&mut self, p: &str) -> Result<bool, ScriptError> {
        if self.is_punct(p)? {
            self.next()?;
            Ok(true)
        } else {
            Ok(false)
        }
    }

    fn expect(&mut self, p: &str, what: &str) -> Result<Span, ScriptError> {
        let (t, span) = self.next()?;
        match t {
            Tok::Punct(q) if q == p => Ok(span),
            other => Err(self.err(
                span,
                format!("expected `{p}` {what}, found {}", other.describe()),
            )),
        }
    }

    fn ident(&mut self, what: &str) -> Result<(String, Span), ScriptError> {
        let (t, span) = self.next()?;
        match t {
            Tok::Ident(s) => Ok((s, span)),
            other => Err(self.err(span, format!("expected {what}, found {}", other.describe()))),
        }
    }

    fn program(&mut self) -> Result<Program, ScriptError> {
        let mut prog = Program::default();
        loop {
            // Clause level works on the raw lexer (probe descriptions have their own mode).
            debug_assert!(self.peeked.is_none());
            self.lex.skip_trivia().map_err(|e| self.lex_err(e))?;
            if self.lex.pos() >= self.src.len() {
                return Ok(prog);
            }
            if self.lex.at("#pragma") {
                let (line, span) = self.lex.line();
                prog.options.push(self.pragma(&line, span)?);
                continue;
            }
            if self.lex.at("#") {
                let (_, span) = self.lex.line();
                return Err(self.err(
                    span,
                    "preprocessor directives are not supported (only `#pragma D option`)",
                ));
            }
            if is_decl_start(self.lex.word()) {
                prog.decls.push(self.decl()?);
                continue;
            }
            prog.clauses.push(self.clause()?);
        }
    }

    fn pragma(
        &self,
        line: &str,
        span: Span,
    ) -> Result<(String, Option<String>, Span), ScriptError> {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["#pragma", "D", "option", opt] => {
                let (name, value) = match opt.split_once('=') {
                    Some((n, v)) => (n.to_string(), Some(v.to_string())),
                    None => (opt.to_string(), None),
                };
                Ok((name, value, span))
            }
            _ => Err(self.err(span, "expected `#pragma D option NAME[=VALUE]`")),
        }
    }

    fn clause(&mut self) -> Result<Clause, ScriptError> {
        let mut probes = Vec::new();
        loop {
            self.lex.skip_trivia().map_err(|e| self.lex_err(e))?;
            let (desc, span) = self.lex.probe_desc();
            if desc.is_empty() {
                let t = self.next()?;
                return Err(self.err(
                    t.1,
                    format!("expected a probe description, found {}", t.0.describe()),
                ));
            }
            probes.push((desc, span));
            self.lex.skip_trivia().map_err(|e| self.lex_err(e))?;
            if self.lex.at(",") {
                self.next()?;
                continue;
            }
            break;
        }
        let predicate = if self.lex.at("/") && !self.lex.at("/*") && !self.lex.at("//") {
            self.next()?;
            self.in_predicate = true;
            let e = self.expr(0);
            self.in_predicate = false;
            let e = e?;
            self.expect("/", "to close the predicate")?;
            Some(e)
        } else {
            None
        };
        self.expect("{", "to open the clause body")?;
        let body = self.block()?;
        debug_assert!(self.peeked.is_none());
        Ok(Clause {
            probes,
            predicate,
            body,
        })
    }

    /// Statements up to and including the `}` closing a block whose `{` was just read.
    fn block(&mut self) -> Result<Vec<Stmt>, ScriptError> {
        let mut body = Vec::new();
        loop {
            if self.eat("}")? {
                return Ok(body);
            }
            if self.eat(";")? {
                continue;
            }
            let st = self.statement()?;
            let is_if = matches!(st, Stmt::If(..));
            body.push(st);
            if self.eat(";")? || is_if {
                continue;
            }
            if !self.is_punct("}")? {
                let (t, span) = self.next()?;
                return Err(self.err(
                    span,
                    format!(
                        "expected `;` or `}}` after a statement, found {}",
                        t.describe()
                    ),
                ));
            }
        }
    }

    /// `[self|this] TYPE name[, name…];` (the first word is known to start one).
    fn decl(&mut self) -> Result<Decl, ScriptError> {
        let mut scope = Scope::Global;
        let (first, first_span) = self.ident("a type")?;
        let mut words = Vec::new();
        let mut ty_span = first_span;
        match first.as_str() {
            "self" => scope = Scope::SelfVar,
            "this" => scope = Scope::ThisVar,
            _ => words.push(first),
        }
        loop {
            let (tok, span) = self.peek()?.clone();
            match tok {
                Tok::Ident(w) if TYPE_WORDS.contains(&w.as_str()) => {
                    self.next()?;
                    if words.is_empty() {
                        ty_span = span;
                    } else {
                        ty_span = ty_span.to(span);
                    }
                    words.push(w);
                }
                Tok::Punct("*") if !words.is_empty() => {
                    self.next()?;
                    ty_span = ty_span.to(span);
                    words.push("*".into());
                }
                Tok::Punct("->") if words.is_empty() => {
                    return Err(self.err(
                        span,
                        format!(
                            "`{}->x` at top level: declarations are `{} TYPE x;` (e.g. `{} int x;`); statements go inside a clause",
                            if scope == Scope::SelfVar { "self" } else { "this" },
                            if scope == Scope::SelfVar { "self" } else { "this" },
                            if scope == Scope::SelfVar { "self" } else { "this" }
                        ),
                    ))
                }
                other if words.is_empty() => {
                    return Err(self.err(
                        span,
                        format!(
                            "expected a type after `{}`, found {}",
                            if scope == Scope::SelfVar { "self" } else { "this" },
                            other.describe()
                        ),
                    ))
                }
                _ => break,
            }
        }
        let mut names = Vec::new();
        loop {
            names.push(self.ident("a variable name")?);
            if self.eat(",")? {
                continue;
            }
            if self.is_punct("[")? {
                let span = self.peek()?.1;
                return Err(self.err(
                    span,
                    "associative arrays are not supported (use an aggregation: `@name[key] = …`)",
                ));
            }
            if self.is_punct("=")? {
                let span = self.peek()?.1;
                return Err(self.err(
                    span,
                    "a declaration has no initializer (variables start at 0; assign in a BEGIN clause)",
                ));
            }
            self.expect(";", "after the declaration")?;
            break;
        }
        Ok(Decl {
            scope,
            ty: words.join(" ").replace(" *", "*").replace('*', " *"),
            ty_span,
            names,
        })
    }

    fn statement(&mut self) -> Result<Stmt, ScriptError> {
        // Nested `if`s recurse through four frames each (and the checker and compiler
        // recurse again): a tighter bound than expressions have.
        self.stmt_depth += 1;
        if self.stmt_depth > MAX_STMT_DEPTH {
            let span = self.peek()?.1;
            return Err(self.err(
                span,
                format!("statements nested too deeply (at most {MAX_STMT_DEPTH} levels)"),
            ));
        }
        let r = self.statement_inner();
        self.stmt_depth -= 1;
        r
    }

    /// `if (cond) stmt-or-block [else stmt-or-block]` (the `if` is next).
    fn if_stmt(&mut self) -> Result<Stmt, ScriptError> {
        self.next()?;
        self.expect("(", "after `if`")?;
        let cond = self.expr(0)?;
        self.expect(")", "to close the condition")?;
        let then = self.branch()?;
        let els = if matches!(&self.peek()?.0, Tok::Ident(w) if w == "else") {
            self.next()?;
            self.branch()?
        } else {
            Vec::new()
        };
        Ok(Stmt::If(cond, then, els))
    }

    /// A block `{ … }` or one statement (with its optional `;`).
    fn branch(&mut self) -> Result<Vec<Stmt>, ScriptError> {
        if self.eat("{")? {
            return self.block();
        }
        if self.is_punct("}")? {
            let span = self.peek()?.1;
            return Err(self.err(span, "expected a statement or `{` after the condition"));
        }
        let st = self.statement()?;
        if !matches!(st, Stmt::If(..)) {
            self.eat(";")?;
        }
        Ok(vec![st])
    }

    fn statement_inner(&mut self) -> Result<Stmt, ScriptError> {
        let (tok, span) = self.peek()?.clone();
        match &tok {
            Tok::Ident(w) if w == "if" => return self.if_stmt(),
            Tok::Ident(w) if w == "else" => {
                return Err(self.err(span, "`else` without a preceding `if`"))
            }
            Tok::Ident(w) if TYPE_WORDS.contains(&w.as_str()) && w != "string" => {
                return Err(self.err(
                    span,
                    "declarations go at the top level of the program, before the clauses (e.g. `int x;`)",
                ))
            }
            _ => {}
        }
        if let Tok::Agg(name) = tok {
            self.next()?;
            let mut keys = Vec::new();
            if self.eat("[")? {
                loop {
                    keys.push(self.expr(0)?);
                    if self.eat(",")? {
                        continue;
                    }
                    self.expect("]", "to close the aggregation keys")?;
                    break;
                }
            }
            self.expect(
                "=",
                "after the aggregation (aggregations are assigned a function, e.g. `= count()`)",
            )?;
            let (func, func_span) = self.ident("an aggregating function (count, sum, avg, …)")?;
            self.expect("(", "after the aggregating function")?;
            let args = self.call_args()?;
            let end = self.lex.pos();
            return Ok(Stmt::Aggregate {
                name,
                keys,
                func,
                args,
                span: Span::new(span.start, end),
                func_span,
            });
        }
        let e = self.expr(0)?;
        // Assignment?
        let target = match &e.kind {
            ExprKind::Name(n) => Some(Target::Global(n.clone())),
            ExprKind::SelfVar(n) => Some(Target::SelfVar(n.clone())),
            ExprKind::ThisVar(n) => Some(Target::ThisVar(n.clone())),
            _ => None,
        };
        let (tok, op_span) = self.peek()?.clone();
        let op = match tok {
            Tok::Punct(p) => match p {
                "=" => Some("="),
                "+=" => Some("+"),
                "-=" => Some("-"),
                "*=" => Some("*"),
                "/=" => Some("/"),
                "%=" => Some("%"),
                "&=" => Some("&"),
                "|=" => Some("|"),
                "^=" => Some("^"),
                "<<=" => Some("<<"),
                ">>=" => Some(">>"),
                "++" => Some("++"),
                "--" => Some("--"),
                _ => None,
            },
            _ => None,
        };
        let Some(op) = op else {
            return Ok(Stmt::Expr(e));
        };
        self.next()?;
        let Some(target) = target else {
            return Err(self.err(
                e.span,
                "only variables (`x`, `self->x`, `this->x`) can be assigned",
            ));
        };
        let span = e.span.to(op_span);
        match op {
            "++" | "--" => {
                let one = Expr {
                    kind: ExprKind::Int(1),
                    span: op_span,
                };
                Ok(Stmt::Assign(
                    target,
                    if op == "++" { "+" } else { "-" },
                    one,
                    span,
                ))
            }
            _ => {
                let rhs = self.expr(0)?;
                let span = span.to(rhs.span);
                Ok(Stmt::Assign(target, op, rhs, span))
            }
        }
    }

    fn call_args(&mut self) -> Result<Vec<Expr>, ScriptError> {
        let mut args = Vec::new();
        if self.eat(")")? {
            return Ok(args);
        }
        loop {
            args.push(self.expr(0)?);
            if self.eat(",")? {
                continue;
            }
            self.expect(")", "to close the argument list")?;
            return Ok(args);
        }
    }

    fn expr(&mut self, min_bp: u8) -> Result<Expr, ScriptError> {
        let (depth, height) = (self.depth, self.height);
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            let span = self.peek()?.1;
            return Err(self.err(span, "expression nested too deeply"));
        }
        self.nest()?;
        let r = self.expr_inner(min_bp);
        (self.depth, self.height) = (depth, height);
        if depth == 0 {
            return self.check_height(r);
        }
        r
    }

    /// Refuses a whole expression taller than [`MAX_HEIGHT`] (out of line: `expr` recurses,
    /// so its frame stays small).
    #[inline(never)]
    fn check_height(&self, r: Result<Expr, ScriptError>) -> Result<Expr, ScriptError> {
        let e = r?;
        if tree_height(&e) > MAX_HEIGHT {
            return Err(self.err(e.span, too_deep()));
        }
        Ok(e)
    }

    /// One more level of expression tree height, refused past [`MAX_NESTING`].
    fn nest(&mut self) -> Result<(), ScriptError> {
        self.height += 1;
        if self.height > MAX_NESTING {
            let span = self.peek()?.1;
            return Err(self.err(span, too_deep()));
        }
        Ok(())
    }

    fn expr_inner(&mut self, min_bp: u8) -> Result<Expr, ScriptError> {
        let mut lhs = self.prefix()?;
        loop {
            let (tok, _) = self.peek()?.clone();
            let Tok::Punct(op) = tok else { break };
            let Some((l, r)) = infix_bp(op) else { break };
            if l < min_bp {
                break;
            }
            if op == "/" && self.in_predicate && self.lex.peek_char() == Some('{') {
                break;
            }
            // Each operator of a chain nests the tree one level deeper on its left.
            self.nest()?;
            self.next()?;
            if op == "?" {
                let then = self.expr(0)?;
                self.expect(":", "in the conditional expression")?;
                let els = self.expr(r)?;
                let span = lhs.span.to(els.span);
                lhs = Expr {
                    kind: ExprKind::Ternary(Box::new(lhs), Box::new(then), Box::new(els)),
                    span,
                };
                continue;
            }
            let rhs = self.expr(r)?;
            let span = lhs.span.to(rhs.span);
            lhs = Expr {
                kind: ExprKind::Binary(op, Box::new(lhs), Box::new(rhs)),
                span,
            };
        }
        Ok(lhs)
    }

    fn prefix(&mut self) -> Result<Expr, ScriptError> {
        let (tok, span) = self.next()?;
        match tok {
            Tok::Int(v) => Ok(Expr {
                kind: ExprKind::Int(v),
                span,
            }),
            Tok::Str(s) => Ok(Expr {
                kind: ExprKind::Str(s),
                span,
            }),
            Tok::Agg(name) => Ok(Expr {
                kind: ExprKind::AggRef(name),
                span,
            }),
            Tok::Punct(op @ ("-" | "+" | "!" | "~")) => {
                let e = self.expr(PREFIX_BP)?;
                let span = span.to(e.span);
                Ok(Expr {
                    kind: ExprKind::Unary(op, Box::new(e)),
                    span,
                })
            }
            Tok::Punct("(") => {
                let e = self.expr(0)?;
                self.expect(")", "to close the parenthesis")?;
                Ok(e)
            }
            Tok::Ident(name) => self.name(name, span),
            other => Err(self.err(
                span,
                format!("expected an expression, found {}", other.describe()),
            )),
        }
    }

    fn name(&mut self, name: String, span: Span) -> Result<Expr, ScriptError> {
        match name.as_str() {
            "self" | "this" => {
                self.expect("->", &format!("after `{name}`"))?;
                let (var, vspan) = self.ident("a variable name")?;
                let kind = if name == "self" {
                    ExprKind::SelfVar(var)
                } else {
                    ExprKind::ThisVar(var)
                };
                Ok(Expr {
                    kind,
                    span: span.to(vspan),
                })
            }
            "args" => {
                let mut index = 0;
                let mut end = span;
                if self.eat("[")? {
                    let (t, s) = self.next()?;
                    match t {
                        Tok::Int(v) => index = v,
                        other => {
                            return Err(self.err(
                                s,
                                format!("expected an argument index, found {}", other.describe()),
                            ))
                        }
                    }
                    end = self.expect("]", "after the argument index")?;
                }
                let mut path = Vec::new();
                if self.eat("->")? {
                    loop {
                        let (field, fspan) = self.ident("a field name")?;
                        end = fspan;
                        path.push((field, fspan));
                        if !self.eat(".")? {
                            break;
                        }
                    }
                }
                Ok(Expr {
                    kind: ExprKind::Args(index, path),
                    span: span.to(end),
                })
            }
            _ => {
                if self.is_punct("(")? {
                    self.next()?;
                    let args = self.call_args()?;
                    let end = self.lex.pos();
                    return Ok(Expr {
                        kind: ExprKind::Call(name, args),
                        span: Span::new(span.start, end),
                    });
                }
                Ok(Expr {
                    kind: ExprKind::Name(name),
                    span,
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_provider_style_clause() {
        let p = parse(
            "#pragma D option quiet\nibs-exec-2000 /execname == \"x\" && args[0]->IbsOpData3.bit.IbsDcMiss == 1/\n{ @a[execname, args[0]->cpu_id] = sum(args[0]->IbsOpData3.bit.IbsDcMiss); }\nEND { printa(\"%s %@d\\n\", @a); }",
        )
        .unwrap();
        assert_eq!(p.options[0].0, "quiet");
        assert_eq!(p.clauses.len(), 2);
        assert_eq!(p.clauses[0].probes[0].0, "ibs-exec-2000");
        assert!(p.clauses[0].predicate.is_some());
        match &p.clauses[0].body[0] {
            Stmt::Aggregate { keys, func, .. } => {
                assert_eq!(keys.len(), 2);
                assert_eq!(func, "sum");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn division_inside_a_predicate() {
        let p = parse("BEGIN { x = 4; } tick-1s /x / 2 > 1/ { x = 0 }").unwrap();
        let Some(pred) = &p.clauses[1].predicate else {
            panic!()
        };
        assert!(matches!(pred.kind, ExprKind::Binary(">", ..)));
    }

    #[test]
    fn precedence_is_c() {
        let p = parse("BEGIN { x = 1 + 2 * 3 == 7 && 1 ? 4 : 5 }").unwrap();
        let Stmt::Assign(_, _, e, _) = &p.clauses[0].body[0] else {
            panic!()
        };
        assert!(matches!(e.kind, ExprKind::Ternary(..)));
    }

    #[test]
    fn syntax_error_has_position() {
        let e = parse("BEGIN\n{\n  x = (1 + ;\n}").unwrap_err();
        let s = e.to_string();
        assert!(s.starts_with("3:12: syntax error"), "{s}");
        assert!(s.contains("\n             ^"), "{s}");
    }

    #[test]
    fn if_else_if_else_nests_in_the_else_branch() {
        let p =
            parse("BEGIN { if (a) { x = 1; y = 2; } else if (b) z = 3; else { } w = 4; }").unwrap();
        let body = &p.clauses[0].body;
        assert_eq!(body.len(), 2);
        let Stmt::If(_, then, els) = &body[0] else {
            panic!("{body:?}")
        };
        assert_eq!(then.len(), 2);
        assert_eq!(els.len(), 1);
        let Stmt::If(_, then2, els2) = &els[0] else {
            panic!("{els:?}")
        };
        assert_eq!((then2.len(), els2.len()), (1, 0));
        assert!(matches!(body[1], Stmt::Assign(..)));
    }

    #[test]
    fn declarations_at_top_level() {
        let p =
            parse("int a, b;\nself unsigned long c;\nthis char *d;\nstring e;\nBEGIN { }").unwrap();
        let d: Vec<(Scope, &str, Vec<&str>)> = p
            .decls
            .iter()
            .map(|d| {
                (
                    d.scope,
                    d.ty.as_str(),
                    d.names.iter().map(|n| n.0.as_str()).collect(),
                )
            })
            .collect();
        assert_eq!(
            d,
            vec![
                (Scope::Global, "int", vec!["a", "b"]),
                (Scope::SelfVar, "unsigned long", vec!["c"]),
                (Scope::ThisVar, "char *", vec!["d"]),
                (Scope::Global, "string", vec!["e"]),
            ]
        );
        assert_eq!(p.clauses.len(), 1);
        let e = parse("int\n;").unwrap_err().to_string();
        assert!(
            e.starts_with("2:1: syntax error: expected a variable name, found `;`"),
            "{e}"
        );
        let e = parse("self ;").unwrap_err().to_string();
        assert!(
            e.starts_with("1:6: syntax error: expected a type after `self`"),
            "{e}"
        );
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let src = format!("BEGIN {{ x = {}1; }}", "(".repeat(10000));
        assert!(parse(&src).is_err());
        let src = format!("BEGIN {{ x = {}1; }}", "-".repeat(10000));
        assert!(parse(&src).is_err());
        let src = format!("BEGIN {{ {} }}", "if (1) ".repeat(10000));
        assert!(parse(&src).is_err());
        // 32 levels are fine, with the deepest expressions inside.
        let deep = format!("{}1{}", "(".repeat(190), ")".repeat(190));
        let src = format!("BEGIN {{ {}x = {deep}; }}", "if (1) ".repeat(31));
        assert!(parse(&src).is_ok());
    }
}
