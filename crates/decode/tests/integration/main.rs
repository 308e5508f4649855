//! culprit-decode integration tests: committed fixtures against perf's own view of them,
//! IBS raw payloads, truncated and corrupt inputs, live recordings, fuzz regressions.

mod branches;
mod common;
mod fixtures;
mod ibs;
mod kernel_maps;
mod live;
mod options;
mod oracle;
mod parallel;
mod regressions;
mod stream;
mod synth;
mod truncation;
