//! The events of a live trace: what each sample probe of a program asks for (an event by
//! name or wildcard, a `profile` rate, IBS op or fetch sampling) turned into the events to
//! record, checked for what one recording can hold.

use crate::events::{self, EventError, EventSpec, SampleRate};
use crate::ibs::{self, IbsError, IbsHost, IbsRequest};
use crate::sysfs::Sysfs;

/// What one sample probe of a program samples.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EventRequest {
    /// An event by name (`pmc:::cpu-clock`), or every known event matching a `*`/`?` pattern,
    /// with the period of `pmc:::event-N` (else the recorder's rate).
    Event {
        /// The name or pattern.
        name: String,
        /// Events per sample.
        period: Option<u64>,
    },
    /// `profile:::hz-N`: cpu-clock at N Hz.
    Profile {
        /// Samples per second.
        hz: u64,
    },
    /// IBS op sampling (`ibs-exec-N`), with its period (ops per sample).
    IbsOp {
        /// Ops per sample (`None`: the PMU's default).
        period: Option<u64>,
    },
    /// IBS fetch sampling, with its period.
    IbsFetch {
        /// Fetches per sample (`None`: the PMU's default).
        period: Option<u64>,
    },
    /// Every hit of the tracepoints matching `system:name` (`*` and `?` glob).
    Tracepoint {
        /// `system:name`.
        event: String,
    },
}

/// Why the probes of a program cannot be recorded live.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProbeEventError {
    /// The program samples nothing.
    #[error("the program has no sample probes (pmc:::, profile:::, ibs:::, tracepoint:): nothing to record live; give -i FILE to run it over a recording")]
    NoSampleProbes,
    /// A wildcard that matches no event.
    #[error(
        "probe `{probe}`: `{pattern}` matches no event known here (`culprit list` shows them)"
    )]
    NoMatch {
        /// The probe's text.
        probe: String,
        /// The pattern.
        pattern: String,
    },
    /// A wildcard that matches more events than one recording should open.
    #[error("probe `{probe}`: `{pattern}` matches {count} events ({}, …); at most {MAX_GLOB_EVENTS} live: narrow the pattern", .first.join(", "))]
    TooMany {
        /// The probe's text.
        probe: String,
        /// The pattern.
        pattern: String,
        /// How many it matches.
        count: usize,
        /// The first few.
        first: Vec<String>,
    },
    /// An event name this machine does not know.
    #[error("probe `{probe}`: {error}")]
    Event {
        /// The probe's text.
        probe: String,
        /// Why the name was rejected (in the message: not a `source`, which would repeat it).
        error: Box<EventError>,
    },
    /// Two `profile` rates (one cpu-clock event per recording).
    #[error("probe `{probe}`: cpu-clock is already recorded by another probe; one cpu-clock rate per program")]
    CpuClockTwice {
        /// The probe's text.
        probe: String,
    },
    /// Two periods for one IBS PMU.
    #[error("probe `{probe}`: one IBS {kind} period per program (the PMU takes one event)")]
    IbsPeriods {
        /// The probe's text.
        probe: String,
        /// `op` or `fetch`.
        kind: &'static str,
    },
    /// IBS cannot be recorded here.
    #[error(transparent)]
    Ibs(#[from] IbsError),
}

/// Most events one live wildcard probe may open (more would be multiplexed on the few
/// hardware counters and name more events than a program can mean).
pub const MAX_GLOB_EVENTS: usize = 16;

/// `*` and `?` over a whole name.
pub fn glob_match(pat: &[u8], name: &[u8]) -> bool {
    match (pat.first(), name.first()) {
        (None, None) => true,
        (Some(b'*'), _) => {
            glob_match(&pat[1..], name) || (!name.is_empty() && glob_match(pat, &name[1..]))
        }
        (Some(b'?'), Some(_)) => glob_match(&pat[1..], &name[1..]),
        (Some(a), Some(b)) if a == b => glob_match(&pat[1..], &name[1..]),
        _ => false,
    }
}

/// The event names this machine knows (generic, cache, the CPU's event table, sysfs aliases)
/// that match a wildcard pattern (`ls_*`), for the probe `probe`.
pub fn expand_event_glob(pattern: &str, probe: &str) -> Result<Vec<String>, ProbeEventError> {
    let names: Vec<String> = events::EventParser::system()
        .known_names()
        .into_iter()
        .filter(|n| !n.contains('/') && glob_match(pattern.as_bytes(), n.as_bytes()))
        .collect();
    if names.is_empty() {
        return Err(ProbeEventError::NoMatch {
            probe: probe.to_string(),
            pattern: pattern.to_string(),
        });
    }
    if names.len() > MAX_GLOB_EVENTS {
        return Err(ProbeEventError::TooMany {
            probe: probe.to_string(),
            pattern: pattern.to_string(),
            count: names.len(),
            first: names[..5].to_vec(),
        });
    }
    Ok(names)
}

/// The events to record for a program's sample probes (each with its text, for messages):
/// one event per distinct name (a later probe of a recorded name adds nothing), one cpu-clock
/// rate, one period per IBS PMU. `per_process`: the target is processes, not the system
/// (IBS needs to know).
pub fn probe_event_specs(
    probes: &[(EventRequest, String)],
    per_process: bool,
) -> Result<Vec<EventSpec>, ProbeEventError> {
    if probes.is_empty() {
        return Err(ProbeEventError::NoSampleProbes);
    }
    let mut specs: Vec<EventSpec> = Vec::new();
    let (mut op, mut fetch): (Option<Option<u64>>, Option<Option<u64>>) = (None, None);
    for (req, text) in probes {
        match req {
            EventRequest::Event { name, period } => {
                let names = if name.contains(['*', '?']) {
                    expand_event_glob(name, text)?
                } else {
                    vec![name.clone()]
                };
                for name in names {
                    if specs.iter().any(|s| s.name == name) {
                        continue; // another probe (or pattern) records it already
                    }
                    let mut spec =
                        events::parse_event(&name).map_err(|source| ProbeEventError::Event {
                            probe: text.clone(),
                            error: Box::new(source),
                        })?;
                    if let Some(p) = period {
                        spec.rate = Some(SampleRate::Period(*p));
                    }
                    specs.push(spec);
                }
            }
            EventRequest::Tracepoint { event } => {
                let tps = events::EventParser::system()
                    .tracepoints(event)
                    .map_err(|source| ProbeEventError::Event {
                        probe: text.clone(),
                        error: Box::new(source),
                    })?;
                for spec in tps {
                    if !specs.iter().any(|s| s.name == spec.name) {
                        specs.push(spec);
                    }
                }
            }
            EventRequest::Profile { hz } => {
                let mut spec =
                    events::parse_event("cpu-clock").map_err(|source| ProbeEventError::Event {
                        probe: text.clone(),
                        error: Box::new(source),
                    })?;
                spec.rate = Some(SampleRate::Frequency(*hz));
                if specs.iter().any(|s| s.name == spec.name) {
                    return Err(ProbeEventError::CpuClockTwice {
                        probe: text.clone(),
                    });
                }
                specs.push(spec);
            }
            EventRequest::IbsOp { period } => {
                if op.is_some_and(|q| q != *period) {
                    return Err(ProbeEventError::IbsPeriods {
                        probe: text.clone(),
                        kind: "op",
                    });
                }
                op = Some(*period);
            }
            EventRequest::IbsFetch { period } => {
                if fetch.is_some_and(|q| q != *period) {
                    return Err(ProbeEventError::IbsPeriods {
                        probe: text.clone(),
                        kind: "fetch",
                    });
                }
                fetch = Some(*period);
            }
        }
    }
    for (is_op, period) in [(true, op), (false, fetch)] {
        let Some(period) = period else { continue };
        let req = IbsRequest {
            op: is_op,
            fetch: !is_op,
            period,
            // The provider's ibs-exec-N counts ops.
            count_ops: is_op,
            l3_miss_only: false,
            ldlat: None,
            rand: false,
        };
        let host = IbsHost::current(per_process);
        specs.extend(ibs::ibs_specs(&Sysfs::system(), &req, &host)?);
    }
    Ok(specs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_glob_match_whole_names() {
        assert!(glob_match(b"ls_*", b"ls_any_fills_from_sys.all"));
        assert!(glob_match(b"*-clock", b"cpu-clock"));
        assert!(glob_match(b"t?sk-clock", b"task-clock"));
        assert!(!glob_match(b"ls_*", b"xls_a"));
        assert!(!glob_match(b"cpu-clock?", b"cpu-clock"));
        assert!(glob_match(b"*", b""));
    }

    #[test]
    fn test_expand_event_glob_software_names() {
        let v = expand_event_glob("*-clock", "p").unwrap();
        assert!(v.contains(&"cpu-clock".to_string()), "{v:?}");
        assert!(v.contains(&"task-clock".to_string()), "{v:?}");
        assert!(v.iter().all(|n| n.ends_with("-clock")), "{v:?}");
        let e = expand_event_glob("no_such_event_*", "p")
            .unwrap_err()
            .to_string();
        assert!(e.contains("matches no event"), "{e}");
        let e = expand_event_glob("*", "p").unwrap_err().to_string();
        assert!(e.contains("narrow the pattern"), "{e}");
    }

    #[test]
    fn test_probe_event_specs_dedup_and_conflicts() {
        let ev = |n: &str| {
            (
                EventRequest::Event {
                    name: n.into(),
                    period: None,
                },
                format!("pmc:::{n}"),
            )
        };
        let specs = probe_event_specs(&[ev("cpu-clock"), ev("*-clock")], true).unwrap();
        let names: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            names.iter().filter(|n| **n == "cpu-clock").count(),
            1,
            "{names:?}"
        );
        assert!(names.contains(&"task-clock"), "{names:?}");
        let twice = [
            ev("cpu-clock"),
            (EventRequest::Profile { hz: 99 }, "profile:::hz-99".into()),
        ];
        assert!(matches!(
            probe_event_specs(&twice, true),
            Err(ProbeEventError::CpuClockTwice { .. })
        ));
        assert_eq!(
            probe_event_specs(&[], true),
            Err(ProbeEventError::NoSampleProbes)
        );
        let bad = probe_event_specs(&[ev("no-such-event")], true)
            .unwrap_err()
            .to_string();
        assert!(
            bad.starts_with("probe `pmc:::no-such-event`: unknown event"),
            "{bad}"
        );
    }
}
