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
// ARM SPE decoding against perf 6.1's output (tests/spe_oracle.rs, kept beside the harness).
#[path = "../spe_oracle.rs"]
mod spe_oracle;
mod stream;
mod synth;
mod truncation;
