//! culprit-symbols: turns (DSO, file offset) pairs into function names, source lines and inline
//! frames, from ELF symbol tables, DWARF, separate debug files and kallsyms.
#![deny(missing_docs)]
