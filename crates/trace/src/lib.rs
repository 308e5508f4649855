//! culprit-trace: the `culprit trace` language — DTrace's D syntax (clauses, predicates,
//! aggregations, printf/printa) over culprit's decoded samples, with the Solaris IBS
//! provider's probe and structure names so that its scripts run unchanged.
//!
//! Pipeline: [`lexer`] → [`parser`] (syntax tree, errors with line:column and a caret) →
//! [`compile()`] (names, probes and types checked before anything runs; every expression
//! becomes a closure over the sample, no tree walking or name lookups at run time) →
//! [`Runner`] (binds the probes to the events of an input, runs BEGIN, the sample clauses,
//! ticks and END, keeps aggregations within a key limit).
//!
//! Pure: a program can only read samples (no file writes, commands or memory reads); the
//! only I/O is the caller's symbolizer behind [`SymbolSource`]. [`session`] runs a program
//! over a perf.data file, or over the samples of a live recording the caller makes and hands
//! it ([`session::LiveSession`]; this crate opens no events), and writes what it prints.
//!
//! ```
//! let prog = culprit_trace::compile(
//!     "pmc:::cpu-clock /pid > 0/ { @n[execname] = count(); }",
//!     &culprit_trace::Options::default(),
//! ).unwrap();
//! assert_eq!(prog.clauses().len(), 1);
//! ```
#![deny(missing_docs)]

pub mod agg;
pub mod ast;
mod compile;
mod env;
pub mod error;
pub mod fields;
pub mod format;
mod ir;
pub mod lexer;
pub mod parser;
pub mod probe;
mod run;
pub mod session;

use rustc_hash::FxHashMap;

pub use compile::{compile, Options, DEFAULT_AGG_MEMORY};
pub use env::{NoSymbols, SymbolSource, What};
pub use error::ScriptError;
pub use ir::{ClauseInfo, Program};
pub use run::Runner;

/// The language's value types (all held in 64 bits at run time; strings are interned ids).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ty {
    /// 64-bit signed integer.
    Int,
    /// An address (unsigned; printed in hex as a key).
    Addr,
    /// A string.
    Str,
}

impl Ty {
    /// The type's name in messages and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Ty::Int => "int",
            Ty::Addr => "address",
            Ty::Str => "string",
        }
    }

    /// Integers and addresses.
    pub fn is_int(self) -> bool {
        self != Ty::Str
    }
}

/// Interned strings: every string value is a `u32` id, so comparisons and keys are integers.
#[derive(Debug, Default, Clone)]
pub struct Interner {
    ids: FxHashMap<Box<str>, u32>,
    names: Vec<Box<str>>,
}

impl Interner {
    /// The id of `s`, adding it if new.
    pub fn intern(&mut self, s: &str) -> u32 {
        if let Some(&id) = self.ids.get(s) {
            return id;
        }
        let id = self.names.len() as u32;
        self.names.push(s.into());
        self.ids.insert(s.into(), id);
        id
    }

    /// The string of an id (`""` if unknown).
    pub fn get(&self, id: u32) -> &str {
        self.names.get(id as usize).map_or("", |s| s)
    }

    /// Number of strings.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// Whether no string is interned.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
}
