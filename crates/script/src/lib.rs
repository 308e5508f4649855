//! culprit-script: the `culprit trace` language — DTrace's D syntax (clauses, predicates,
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
//! only I/O is the caller's symbolizer behind [`SymbolSource`].
//!
//! ```
//! let prog = culprit_script::compile(
//!     "pmc:::cpu-clock /pid > 0/ { @n[execname] = count(); }",
//!     &culprit_script::Options::default(),
//! ).unwrap();
//! assert_eq!(prog.clauses().len(), 1);
//! ```
#![deny(missing_docs)]

pub mod agg;
pub mod ast;
mod compile;
pub mod error;
pub mod fields;
pub mod format;
pub mod lexer;
pub mod parser;
pub mod probe;
mod run;

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

pub use compile::{compile, ClauseInfo, Options, Program};
pub use error::ScriptError;
pub use run::{NoSymbols, Runner, SymbolSource, What};

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

/// A small, fast hasher for integer keys (FxHash).
#[derive(Default, Clone, Copy)]
pub struct FxHasher {
    hash: u64,
}

const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl Hasher for FxHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut b = [0u8; 8];
            b[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(b));
        }
    }
    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.hash = (self.hash.rotate_left(5) ^ i).wrapping_mul(SEED);
    }
    #[inline]
    fn write_i64(&mut self, i: i64) {
        self.write_u64(i as u64);
    }
    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.write_u64(i as u64);
    }
    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.write_u64(u64::from(i));
    }
    #[inline]
    fn write_i32(&mut self, i: i32) {
        self.write_u64(i as u32 as u64);
    }
    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.write_u64(u64::from(i));
    }
    #[inline]
    fn finish(&self) -> u64 {
        self.hash
    }
}

/// `BuildHasher` for [`FxHasher`].
pub type FxBuild = BuildHasherDefault<FxHasher>;

/// Interned strings: every string value is a `u32` id, so comparisons and keys are integers.
#[derive(Debug, Default, Clone)]
pub struct Interner {
    ids: HashMap<Box<str>, u32, FxBuild>,
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
