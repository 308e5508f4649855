//! The compiled program: what [`crate::compile()`] produces and [`crate::Runner`] runs.
//! Every expression and statement is a closure over the per-firing [`Env`]; the clauses
//! keep their probes for binding and the aggregations their declarations.

use crate::agg::Func;
use crate::env::Env;
use crate::probe::Probe;
use crate::{Interner, Ty};

/// A compiled integer-valued expression (strings are interned ids).
pub(crate) type IntFn = Box<dyn Fn(&mut Env<'_>) -> i64>;
/// A compiled statement.
pub(crate) type StmtFn = Box<dyn Fn(&mut Env<'_>)>;

/// One clause's probes, for binding and for choosing what to record live.
#[derive(Debug, Clone)]
pub struct ClauseInfo {
    /// The probes with their text as written.
    pub probes: Vec<(Probe, String)>,
    /// 1-based source line of the clause.
    pub line: usize,
}

/// One compiled clause.
pub(crate) struct CClause {
    pub pred: Option<IntFn>,
    pub body: Vec<StmtFn>,
    pub n_this: usize,
    /// Not only aggregations: without quiet, each firing prints DTrace's
    /// `CPU ID FUNCTION:NAME` line (aggregating clauses record nothing per firing).
    pub records: bool,
}

/// A declared aggregation.
pub(crate) struct AggDecl {
    pub name: String,
    pub func: Func,
    pub key_types: Vec<Ty>,
}

/// A checked, compiled program.
pub struct Program {
    pub(crate) infos: Vec<ClauseInfo>,
    pub(crate) clauses: Vec<CClause>,
    pub(crate) aggs: Vec<AggDecl>,
    pub(crate) strings: Interner,
    pub(crate) n_globals: usize,
    pub(crate) n_self: usize,
    pub(crate) max_this: usize,
    /// Quiet mode.
    pub quiet: bool,
    /// Key limit.
    pub max_keys: usize,
    /// Bytes the aggregations may hold together.
    pub agg_memory: usize,
    /// See [`Program::uses_locations`].
    pub(crate) locations: bool,
}

impl std::fmt::Debug for Program {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Program")
            .field("clauses", &self.infos)
            .field("quiet", &self.quiet)
            .field("max_keys", &self.max_keys)
            .field("agg_memory", &self.agg_memory)
            .finish()
    }
}

impl Program {
    /// Whether the program reads samples' code locations (`sym`, `mod`, `srcline`, `%a`,
    /// `offenders`). When it does not, the reader need not resolve them
    /// (`Reader::skip_locations`).
    pub fn uses_locations(&self) -> bool {
        self.locations
    }

    /// The clauses' probes, in source order.
    pub fn clauses(&self) -> &[ClauseInfo] {
        &self.infos
    }

    /// The sample probes (not BEGIN/END/tick) of all clauses, deduplicated.
    pub fn sample_probes(&self) -> Vec<(Probe, String)> {
        let mut v: Vec<(Probe, String)> = Vec::new();
        for c in &self.infos {
            for p in &c.probes {
                if !matches!(p.0, Probe::Begin | Probe::End | Probe::Tick { .. })
                    && !v.iter().any(|q| q.0 == p.0)
                {
                    v.push(p.clone());
                }
            }
        }
        v
    }
}
