//! The syntax tree, as parsed (names not yet resolved).

use crate::error::Span;

/// A whole program.
#[derive(Debug, Clone, Default)]
pub struct Program {
    /// `#pragma D option NAME[=VALUE]` lines, in order.
    pub options: Vec<(String, Option<String>, Span)>,
    /// The clauses, in source order.
    pub clauses: Vec<Clause>,
    /// Top-level variable declarations (`int x;`, `self string s;`), in source order.
    pub decls: Vec<Decl>,
}

/// Which variables a declaration names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// A global.
    Global,
    /// `self->x`.
    SelfVar,
    /// `this->x`.
    ThisVar,
}

/// `[self|this] TYPE name[, name…];` at top level.
#[derive(Debug, Clone)]
pub struct Decl {
    /// Scope.
    pub scope: Scope,
    /// The type as written (`int`, `uint64_t`, `unsigned long`, `string`, `void *`).
    pub ty: String,
    /// Where the type is.
    pub ty_span: Span,
    /// The declared names.
    pub names: Vec<(String, Span)>,
}

/// `probe[, probe…] [/predicate/] { statements }`.
#[derive(Debug, Clone)]
pub struct Clause {
    /// Probe descriptions as written.
    pub probes: Vec<(String, Span)>,
    /// The predicate, if any.
    pub predicate: Option<Expr>,
    /// The body.
    pub body: Vec<Stmt>,
}

/// An expression.
#[derive(Debug, Clone)]
pub struct Expr {
    /// What it is.
    pub kind: ExprKind,
    /// Where it is.
    pub span: Span,
}

/// Expression kinds.
#[derive(Debug, Clone)]
pub enum ExprKind {
    /// Integer literal.
    Int(i64),
    /// String literal.
    Str(String),
    /// A bare name: built-in variable or global.
    Name(String),
    /// `self->x`.
    SelfVar(String),
    /// `this->x`.
    ThisVar(String),
    /// `args[N]->a.b.c` or `args->a.b`: the index and the member path.
    Args(i64, Vec<(String, Span)>),
    /// `op x`.
    Unary(&'static str, Box<Expr>),
    /// `x op y`.
    Binary(&'static str, Box<Expr>, Box<Expr>),
    /// `c ? a : b`.
    Ternary(Box<Expr>, Box<Expr>, Box<Expr>),
    /// `f(args)`.
    Call(String, Vec<Expr>),
    /// `@a` used as an argument (printa, trunc, clear, normalize).
    AggRef(String),
}

/// Where an assignment stores.
#[derive(Debug, Clone)]
pub enum Target {
    /// A global.
    Global(String),
    /// `self->x`.
    SelfVar(String),
    /// `this->x`.
    ThisVar(String),
}

/// A statement.
#[derive(Debug, Clone)]
pub enum Stmt {
    /// `x = e`, `x += e`, `x++`… (`op` is `=` or the compound operator without `=`).
    Assign(Target, &'static str, Expr, Span),
    /// `@name[keys] = func(args)`.
    Aggregate {
        /// Aggregation name (`""` for `@`).
        name: String,
        /// Keys.
        keys: Vec<Expr>,
        /// Aggregating function.
        func: String,
        /// Its arguments.
        args: Vec<Expr>,
        /// The whole statement.
        span: Span,
        /// The function name.
        func_span: Span,
    },
    /// An action call or expression statement.
    Expr(Expr),
    /// `if (cond) { … } else { … }` (`else if` nests in the else branch).
    If(Expr, Vec<Stmt>, Vec<Stmt>),
}
