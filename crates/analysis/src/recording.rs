//! What every report says about the recording it was made from: the `#` header lines of
//! text output and the `meta` and `stopped` objects of JSON output.

use culprit_decode::model::Profile;
use serde::Serialize;

/// The recording's header facts (JSON `meta`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RecordingMeta {
    /// The recording command line.
    pub cmdline: Option<String>,
    /// First to last sample, in ns.
    pub duration_ns: Option<u64>,
    /// Host it was recorded on.
    pub hostname: Option<String>,
    /// Samples the kernel reported lost.
    pub lost: u64,
    /// Kernel release.
    pub os_release: Option<String>,
    /// Version of the recording tool (perf's bare version, or `culprit x.y.z`).
    pub perf_version: Option<String>,
}

impl RecordingMeta {
    /// The facts of `profile`.
    pub fn of(profile: &Profile) -> RecordingMeta {
        let m = &profile.meta;
        RecordingMeta {
            cmdline: m.cmdline.clone(),
            duration_ns: m.time_range.map(|(a, b)| b.saturating_sub(a)),
            hostname: m.hostname.clone(),
            lost: profile.lost,
            os_release: m.os_release.clone(),
            perf_version: m.perf_version.clone(),
        }
    }
}

/// Where reading a damaged file stopped (JSON `stopped`): the reader's own account, as
/// every report gives it.
pub use culprit_decode::model::ReadStop as Stopped;

/// The header lines every text report of `file` starts with (without `# `): the file,
/// the command line, the recording tool and host, and (`with_duration`) the time span.
pub fn header_lines(profile: &Profile, file: &str, with_duration: bool) -> Vec<String> {
    let m = &profile.meta;
    let mut lines = vec![format!("File: {file}")];
    if let Some(c) = &m.cmdline {
        lines.push(format!("Command line: {c}"));
    }
    if !with_duration {
        return lines;
    }
    if let Some(v) = &m.perf_version {
        let host = m.hostname.as_deref().unwrap_or("?");
        // perf writes its bare version ("6.1.187"); culprit writes "culprit 0.1.0".
        let tool = if v.starts_with(|c: char| c.is_ascii_digit()) {
            format!("perf {v}")
        } else {
            v.clone()
        };
        lines.push(format!("Recorded by {tool} on {host}"));
    }
    if let Some((a, b)) = m.time_range {
        lines.push(format!(
            "Duration: {} (first to last sample)",
            culprit_output::units::human_ns(b.saturating_sub(a))
        ));
    }
    lines
}

/// Whether event `id` of `profile` counts nanoseconds (the software clock events, and
/// perf's `offcpu-time`, whose period is the time blocked), so that its periods are durations.
pub fn period_is_ns(profile: &Profile, id: culprit_decode::model::EventId) -> bool {
    profile
        .events
        .get(usize::from(id))
        .is_some_and(|i| event_counts_ns(i.attr_type, i.config, &i.name))
}

/// Whether an event of this attr type, config and name counts nanoseconds: `cpu-clock`
/// (software 0), `task-clock` (software 1), `offcpu-time` (perf's and culprit's name for
/// off-CPU samples, as [`crate::stacks::period_unit`] has it).
pub fn event_counts_ns(attr_type: u32, config: u64, name: &str) -> bool {
    (attr_type == culprit_decode::abi::perf_type::SOFTWARE && config <= 1)
        || name.starts_with("offcpu-time")
}
