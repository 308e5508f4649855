//! `culprit stat`'s counting: the event groups to count (`{a,b}` groups, the default set),
//! repeated counting runs on a target, and events the machine does not support
//! (`<not supported>`, as perf, with the kernel's reason). It returns raw counts: the
//! aggregation over runs, derived metrics and the report model are `analysis::stat`'s.
//! `--topdown`'s counting is [`topdown`].

pub mod facts;
pub mod topdown;

use std::time::Duration;

use crate::count::{self, CountOptions, Interval, Reading};
use crate::error::RecordError;
use crate::events::{self, EventError, EventSpec};
use crate::launch::ChildExit;
use crate::support;
use crate::target::Target;

/// Why `culprit stat` cannot count.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StatError {
    /// Counting failed (event, target, permissions).
    #[error(transparent)]
    Count(#[from] RecordError),
    /// An event list does not parse.
    #[error(transparent)]
    Event(#[from] EventError),
    /// The options do not go together, or the machine lacks what they need.
    #[error("{0}")]
    Invalid(String),
}

/// Splits `-e` text into groups: `{a,b}` is one group, every other event its own group
/// (perf stat's default).
pub fn parse_groups(list: &str) -> Result<Vec<Vec<EventSpec>>, StatError> {
    let invalid = |why: String| StatError::Invalid(format!("-e `{list}`: {why}"));
    let mut groups = Vec::new();
    let mut rest = list;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('{') {
            let end = after
                .find('}')
                .ok_or_else(|| invalid("`{` without a closing `}`".into()))?;
            let specs = events::parse_event_list(&after[..end])?;
            if specs.is_empty() {
                return Err(invalid("empty group `{}`".into()));
            }
            groups.push(specs);
            rest = &after[end + 1..];
            if rest.starts_with(':') {
                return Err(invalid(
                    "modifiers after a group (`}:u`) are not supported; put them on each event"
                        .into(),
                ));
            }
            rest = rest.strip_prefix(',').unwrap_or(rest);
        } else {
            let end = rest.find('{').unwrap_or(rest.len());
            let chunk = rest[..end].trim_end_matches(',');
            if !chunk.is_empty() {
                groups.extend(
                    events::parse_event_list(chunk)?
                        .into_iter()
                        .map(|s| vec![s]),
                );
            }
            rest = &rest[end..];
        }
    }
    Ok(groups)
}

/// perf stat's default events: the software ones and the hardware ones (shown as
/// `<not supported>` on a machine without a hardware PMU, as perf does).
pub const DEFAULT_EVENTS: &str = "task-clock,context-switches,cpu-migrations,page-faults,\
    cycles,instructions,branches,branch-misses";

/// The groups of `-e` lists (all of them, in order), or the default set when none is given.
pub fn groups_of(lists: &[String]) -> Result<Vec<Vec<EventSpec>>, StatError> {
    let mut groups = Vec::new();
    for list in lists {
        groups.extend(parse_groups(list)?);
    }
    if groups.is_empty() {
        groups = parse_groups(DEFAULT_EVENTS)?;
    }
    Ok(groups)
}

/// Options of `culprit stat` (without `--topdown`).
#[derive(Debug, Clone)]
pub struct StatOptions {
    /// The event groups ([`groups_of`]).
    pub groups: Vec<Vec<EventSpec>>,
    /// Whom to count.
    pub target: Target,
    /// `-I`: report the counts of every interval of this length.
    pub interval: Option<Duration>,
    /// `-r`: run the command this many times.
    pub repeat: u32,
}

/// Why `spec` does not count here, in words, from the kernel's answer to opening it.
pub fn not_supported_reason(spec: &EventSpec) -> String {
    let errno = support::try_open_event(spec).err();
    let hardware = matches!(
        spec.attr_type,
        culprit_decode::abi::perf_type::HARDWARE
            | culprit_decode::abi::perf_type::HW_CACHE
            | culprit_decode::abi::perf_type::RAW
    );
    let sysfs = crate::sysfs::Sysfs::system();
    match errno {
        Some(libc::ENOENT | libc::ENODEV) if hardware && !crate::events::has_core_pmu(&sysfs) => {
            "this machine has no hardware PMU (no core PMU under \
             /sys/bus/event_source/devices: a VM without a virtual PMU); software events \
             (task-clock, cpu-clock, page-faults, context-switches) count"
                .to_string()
        }
        Some(libc::ENOENT) => "the kernel has no such event on this CPU (ENOENT)".to_string(),
        Some(libc::ENODEV) => "no PMU here counts it (ENODEV)".to_string(),
        Some(libc::EOPNOTSUPP) => {
            "the PMU cannot count it as asked (EOPNOTSUPP: a modifier or setting it lacks)"
                .to_string()
        }
        Some(e) => format!(
            "opening it failed: {}",
            std::io::Error::from_raw_os_error(e)
        ),
        None => "it did not count during the run".to_string(),
    }
}

/// Whether `spec` opens here, or (`false`) this machine does not have it (ENOENT, ENODEV,
/// EOPNOTSUPP: perf's `<not supported>`); other failures (permissions) are left to counting.
/// At `-vv` an unsupported event's attr is shown as perf stat shows it ([`count::display_not_opened`]).
fn supported_here(spec: &EventSpec, leader: bool, target: &Target) -> bool {
    // A precision the machine refuses: what the kernel's EOPNOTSUPP would say.
    if events::check_precise(spec).is_err() {
        count::display_not_opened(spec, leader, target, libc::EOPNOTSUPP);
        return false;
    }
    match support::try_open_event(spec) {
        Err(errno @ (libc::ENOENT | libc::ENODEV | libc::EOPNOTSUPP)) => {
            count::display_not_opened(spec, leader, target, errno);
            false
        }
        _ => true,
    }
}

/// The groups without their unsupported events, and where each event went (`None`: not
/// supported).
type Supported = (Vec<Vec<EventSpec>>, Vec<Vec<Option<(usize, usize)>>>);

fn split_supported(groups: &[Vec<EventSpec>], target: &Target) -> Supported {
    let mut kept: Vec<Vec<EventSpec>> = Vec::new();
    let mut place = Vec::new();
    for g in groups {
        let mut members = Vec::new();
        let mut where_ = Vec::new();
        for (i, spec) in g.iter().enumerate() {
            if supported_here(spec, i == 0, target) {
                where_.push(Some((kept.len(), members.len())));
                members.push(spec.clone());
            } else {
                where_.push(None);
            }
        }
        if !members.is_empty() {
            kept.push(members);
        }
        place.push(where_);
    }
    (kept, place)
}

/// Readings in the counted shape back in the requested shape (`None`: not supported).
fn expand(
    place: &[Vec<Option<(usize, usize)>>],
    got: &[Vec<Reading>],
) -> Vec<Vec<Option<Reading>>> {
    place
        .iter()
        .map(|g| {
            g.iter()
                .map(|p| p.and_then(|(gi, ei)| got.get(gi)?.get(ei).copied()))
                .collect()
        })
        .collect()
}

/// One `-I` interval's readings in the requested shape (`None`: not supported).
#[derive(Debug, Clone)]
pub struct IntervalReadings {
    /// Time since counting started, at the end of the interval.
    pub elapsed: Duration,
    /// `[group][event]` readings.
    pub groups: Vec<Vec<Option<Reading>>>,
}

/// What [`run`] counted: raw readings in the requested shape, per run.
#[derive(Debug, Clone)]
pub struct StatCounts {
    /// `runs[r][g][e]`: event `e` of requested group `g` in run `r` (`None`: not supported).
    pub runs: Vec<Vec<Vec<Option<Reading>>>>,
    /// Each run's wall time.
    pub elapsed_runs: Vec<Duration>,
    /// `-I`: the intervals of every run, in order.
    pub intervals: Vec<IntervalReadings>,
    /// How the (last) launched command ended.
    pub exit: Option<ChildExit>,
    /// Whether Ctrl-C ended counting.
    pub interrupted: bool,
    /// Whether only user space was counted (perf_event_paranoid).
    pub user_only: bool,
}

/// Counts `opts.groups` on the target, `opts.repeat` times (stopping at Ctrl-C). Events
/// this machine does not have are returned as `None` (not supported, as perf), unless no
/// event at all can be counted (then the first one's error). `on_interval` receives each
/// `-I` interval's readings as they come; `warn` non-fatal messages.
pub fn run(
    opts: &StatOptions,
    on_interval: &mut dyn FnMut(&IntervalReadings),
    warn: &mut dyn FnMut(String),
) -> Result<StatCounts, StatError> {
    if opts.repeat == 0 {
        return Err(StatError::Invalid(
            "-r: the number of runs must be at least 1".into(),
        ));
    }
    if opts.repeat > 1 && !matches!(opts.target, Target::Command(_)) {
        return Err(StatError::Invalid(
            "-r repeats a command: it cannot be used with -p, or -a without a command".into(),
        ));
    }
    let (kept, place) = split_supported(&opts.groups, &opts.target);
    // Nothing countable: count what was asked for, to report why it does not open.
    let (counted, place) = if kept.is_empty() {
        let identity = opts
            .groups
            .iter()
            .enumerate()
            .map(|(gi, g)| (0..g.len()).map(|ei| Some((gi, ei))).collect())
            .collect();
        (opts.groups.clone(), identity)
    } else {
        (kept, place)
    };
    let copts = CountOptions {
        groups: counted,
        target: opts.target.clone(),
        interval: opts.interval,
    };
    let mut out = StatCounts {
        runs: Vec::new(),
        elapsed_runs: Vec::new(),
        intervals: Vec::new(),
        exit: None,
        interrupted: false,
        user_only: false,
    };
    for _ in 0..opts.repeat {
        let mut on_iv = |iv: &Interval| {
            let readings = IntervalReadings {
                elapsed: iv.elapsed,
                groups: expand(&place, &iv.groups),
            };
            on_interval(&readings);
            out.intervals.push(readings);
        };
        let res = count::count(&copts, &mut on_iv, warn)?;
        out.runs.push(expand(&place, &res.groups));
        out.elapsed_runs.push(res.elapsed);
        (out.exit, out.interrupted, out.user_only) = (res.exit, res.interrupted, res.user_only);
        if res.interrupted {
            break;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_parse_groups_braces_and_singletons() {
        let g = parse_groups("task-clock,{page-faults,context-switches},cpu-migrations").unwrap();
        let names: Vec<Vec<&str>> = g
            .iter()
            .map(|g| g.iter().map(|e| e.name.as_str()).collect())
            .collect();
        assert_eq!(
            names,
            vec![
                vec!["task-clock"],
                vec!["page-faults", "context-switches"],
                vec!["cpu-migrations"]
            ]
        );
        assert!(parse_groups("{task-clock").is_err());
        assert!(parse_groups("{task-clock}:u").is_err());
        assert!(parse_groups("no-such-event-xyz").is_err());
    }

    /// Readings of the counted (supported-only) groups land back in the requested shape,
    /// with `None` where an event was left out.
    #[test]
    fn test_expand_restores_the_requested_shape() {
        let r = |value| Reading {
            value,
            enabled_ns: 1,
            running_ns: 1,
        };
        let place = vec![vec![Some((0, 0)), None], vec![Some((1, 0))]];
        let got = vec![vec![r(5)], vec![r(7)]];
        assert_eq!(
            expand(&place, &got),
            vec![vec![Some(r(5)), None], vec![Some(r(7))]]
        );
    }
}
