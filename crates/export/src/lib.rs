//! culprit-export: the profile in the formats of the tools users have, one module per format.
#![deny(missing_docs)]

pub mod autofdo;
pub mod bolt;
pub mod pgo;
