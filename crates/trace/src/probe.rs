//! Probe descriptions: `BEGIN`, `END`, `tick-N`, `pmc:::EVENT[-PERIOD]`, `ibs:::op[-N]`,
//! `ibs:::fetch[-N]`, the provider's `ibs-exec-N`/`ibs-fetch-N`, `profile:::hz-N`,
//! `tracepoint:SYSTEM:NAME` (bpftrace's spelling; `tp:` and DTrace's
//! `tracepoint:SYSTEM::NAME` too), `mem:::ADDR[:ACCESS[:LEN]]` (hardware breakpoints).

use crate::error::hint;

/// One parsed probe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Probe {
    /// Before the first sample.
    Begin,
    /// After the last sample (or `exit`).
    End,
    /// Every `ns` nanoseconds of sample time.
    Tick {
        /// Interval in ns.
        ns: u64,
    },
    /// Samples of a PMU event (any event `culprit record -e` accepts; `*` globs offline).
    Pmc {
        /// Event name.
        event: String,
        /// Period suffix, if any.
        period: Option<u64>,
    },
    /// IBS op samples; `period` in ops (`ibs-exec-N` gives N × 16).
    IbsOp {
        /// Period in ops.
        period: Option<u64>,
    },
    /// IBS fetch samples; `period` in fetches.
    IbsFetch {
        /// Period in fetches.
        period: Option<u64>,
    },
    /// cpu-clock samples at `hz`.
    Profile {
        /// Frequency.
        hz: u64,
    },
    /// Hits of a kernel tracepoint, `system:name` (`*` and `?` glob).
    Tracepoint {
        /// `system:name`.
        event: String,
    },
    /// Hits of a hardware breakpoint (`mem:::0x404048:rw`): every access to the watched
    /// bytes is a sample.
    Breakpoint {
        /// The watched address.
        addr: u64,
        /// Access letters (`rw`, `w`, `x`) as written; `None`: perf's default when recording
        /// (`rw`), any breakpoint on the address when reading a file.
        access: Option<String>,
        /// Bytes watched; `None`: perf's default (4, or 8 for `x`).
        len: Option<u64>,
    },
}

impl Probe {
    /// The `-e` event a breakpoint probe records (`mem:0x404048:rw`, `mem:0x404048/8:w`).
    pub fn breakpoint_event(addr: u64, access: Option<&str>, len: Option<u64>) -> String {
        let len = len.map(|l| format!("/{l}")).unwrap_or_default();
        format!("mem:{addr:#x}{len}:{}", access.unwrap_or("rw"))
    }
}

/// The forms accepted, for error hints.
pub const FORMS: &[&str] = &[
    "BEGIN",
    "END",
    "tick-1s",
    "tick-100ms",
    "pmc:::EVENT",
    "pmc:::EVENT-PERIOD",
    "ibs:::op",
    "ibs:::op-N",
    "ibs:::fetch",
    "ibs:::fetch-N",
    "ibs-exec-N",
    "ibs-fetch-N",
    "profile:::hz-N",
    "profile-N",
    "tracepoint:SYSTEM:NAME",
    "mem:::ADDR",
    "mem:::ADDR:rw",
    "mem:::ADDR:w:8",
];

/// Parses one probe description.
pub fn parse(desc: &str) -> Result<Probe, String> {
    if let Some(rest) = desc.strip_prefix("mem:::") {
        return parse_breakpoint(desc, rest);
    }
    // provider:module:function:name; the provider and name carry the meaning here.
    let parts: Vec<&str> = desc.split(':').collect();
    // Tracepoints: bpftrace's `tracepoint:SYSTEM:NAME` (`tp:` for short), or DTrace's
    // four parts with the system as the module, `tracepoint:SYSTEM::NAME`.
    let tracepoint = match parts.as_slice() {
        ["tracepoint" | "tp", sys, name] | ["tracepoint" | "tp", sys, "", name] => {
            Some((*sys, *name))
        }
        ["tracepoint" | "tp", ..] => {
            return Err(format!(
                "`{desc}`: expected tracepoint:SYSTEM:NAME (e.g. tracepoint:sched:sched_switch)"
            ))
        }
        _ => None,
    };
    if let Some((sys, name)) = tracepoint {
        let word = |s: &str| {
            !s.is_empty()
                && s.bytes().all(|b| {
                    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b'*' | b'?')
                })
        };
        if !word(sys) || !word(name) {
            return Err(format!(
                "`{desc}`: expected tracepoint:SYSTEM:NAME (e.g. tracepoint:sched:sched_switch)"
            ));
        }
        return Ok(Probe::Tracepoint {
            event: format!("{sys}:{name}"),
        });
    }
    let (provider, name) = match parts.as_slice() {
        [name] => ("", *name),
        [p, _, _, name] => (*p, *name),
        _ => {
            return Err(format!(
                "`{desc}` is not a probe description (PROVIDER:::NAME or NAME; known forms: {})",
                FORMS.join(", ")
            ))
        }
    };
    let bad = |what: &str| format!("`{desc}`: {what}");
    match (provider, name) {
        ("" | "dtrace", "BEGIN") => Ok(Probe::Begin),
        ("" | "dtrace", "END") => Ok(Probe::End),
        ("" | "profile", n) if n.starts_with("tick-") => {
            let ns = duration_ns(&n[5..]).ok_or_else(|| {
                bad("expected tick-N with a unit: ns, us, ms, s, sec, m, hz (e.g. tick-1s)")
            })?;
            Ok(Probe::Tick { ns })
        }
        ("profile", n) if n.starts_with("hz-") => {
            let hz = positive(&n[3..]).ok_or_else(|| bad("expected profile:::hz-N, N in Hz"))?;
            Ok(Probe::Profile { hz })
        }
        ("" | "profile", n) if n.starts_with("profile-") => {
            let t = n[8..].trim_end_matches("hz");
            let hz = positive(t).ok_or_else(|| bad("expected profile-N, N in Hz"))?;
            Ok(Probe::Profile { hz })
        }
        ("pmc", ev) => {
            if ev.is_empty() {
                return Err(bad("pmc::: needs an event name (e.g. pmc:::cycles)"));
            }
            let (event, period) = split_period(ev);
            if period == Some(0) {
                return Err(bad("the period must be positive"));
            }
            Ok(Probe::Pmc {
                event: event.to_string(),
                period,
            })
        }
        ("ibs", "op") => Ok(Probe::IbsOp { period: None }),
        ("ibs", "fetch") => Ok(Probe::IbsFetch { period: None }),
        ("ibs", n) if n.starts_with("op-") => Ok(Probe::IbsOp {
            period: Some(positive(&n[3..]).ok_or_else(|| bad("expected ibs:::op-N"))?),
        }),
        ("ibs", n) if n.starts_with("fetch-") => Ok(Probe::IbsFetch {
            period: Some(positive(&n[6..]).ok_or_else(|| bad("expected ibs:::fetch-N"))?),
        }),
        ("" | "ibs", n) if n.starts_with("ibs-exec-") => Ok(Probe::IbsOp {
            period: Some(
                units16(&n[9..]).ok_or_else(|| bad("expected ibs-exec-N, N in units of 16 ops"))?,
            ),
        }),
        ("" | "ibs", n) if n.starts_with("ibs-fetch-") => Ok(Probe::IbsFetch {
            period: Some(
                units16(&n[10..])
                    .ok_or_else(|| bad("expected ibs-fetch-N, N in units of 16 fetches"))?,
            ),
        }),
        ("" | "ibs", _) | ("dtrace" | "profile", _) => Err(format!(
            "unknown probe `{desc}`{}",
            hint(desc, FORMS.iter().copied())
        )),
        (p, _) => Err(format!(
            "unknown provider `{p}` in `{desc}`{} (providers: dtrace, profile, pmc, ibs, tracepoint, mem)",
            hint(p, ["dtrace", "profile", "pmc", "ibs", "tracepoint", "mem"])
        )),
    }
}

/// `mem:::ADDR[:ACCESS[:LEN]]`: the address (hex or decimal), access letters from `rwx`, and
/// the length in bytes.
fn parse_breakpoint(desc: &str, rest: &str) -> Result<Probe, String> {
    let bad = |what: &str| {
        format!("`{desc}`: {what} (write mem:::0xADDR, mem:::0xADDR:rw or mem:::0xADDR:w:8)")
    };
    let mut parts = rest.split(':');
    let addr_text = parts.next().unwrap_or("");
    let addr = match addr_text
        .strip_prefix("0x")
        .or_else(|| addr_text.strip_prefix("0X"))
    {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => addr_text.parse().ok(),
    }
    .ok_or_else(|| bad(&format!("`{addr_text}` is not an address")))?;
    let access = match parts.next() {
        None => None,
        Some(a) if !a.is_empty() && a.chars().all(|c| "rwx".contains(c)) => Some(a.to_string()),
        Some(a) => return Err(bad(&format!("`{a}` is not an access (letters r, w, x)"))),
    };
    let len = match parts.next() {
        None => None,
        Some(l) => {
            Some(positive(l).ok_or_else(|| bad(&format!("`{l}` is not a length in bytes")))?)
        }
    };
    if parts.next().is_some() {
        return Err(bad("too many parts"));
    }
    Ok(Probe::Breakpoint { addr, access, len })
}

/// `cycles-10000` → (`cycles`, 10000); `cpu-clock` → (`cpu-clock`, None).
fn split_period(ev: &str) -> (&str, Option<u64>) {
    if let Some((name, p)) = ev.rsplit_once('-') {
        if !name.is_empty() && !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) {
            return (name, p.parse().ok());
        }
    }
    (ev, None)
}

fn positive(s: &str) -> Option<u64> {
    s.parse::<u64>().ok().filter(|&v| v > 0)
}

/// The provider's N: the IBS MaxCnt field (bits 19:4 of the count), so the period is N × 16;
/// N must fit the field's 16 bits.
fn units16(s: &str) -> Option<u64> {
    positive(s).filter(|&v| v <= 0xffff).map(|v| v * 16)
}

fn duration_ns(s: &str) -> Option<u64> {
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (n, unit) = s.split_at(split);
    let n = positive(n)?;
    let mul = match unit {
        "ns" | "nsec" => 1,
        "us" | "usec" => 1_000,
        "ms" | "msec" => 1_000_000,
        "s" | "sec" | "" => 1_000_000_000,
        "m" | "min" => 60_000_000_000,
        "hz" => return Some(1_000_000_000 / n).filter(|&v| v > 0),
        _ => return None,
    };
    n.checked_mul(mul)
}

/// Whether `name` matches the glob `pat` (`*` and `?`).
pub fn glob(pat: &str, name: &str) -> bool {
    fn rec(p: &[u8], n: &[u8]) -> bool {
        match p.split_first() {
            None => n.is_empty(),
            Some((b'*', rest)) => (0..=n.len()).any(|i| rec(rest, &n[i..])),
            Some((b'?', rest)) => !n.is_empty() && rec(rest, &n[1..]),
            Some((c, rest)) => n.first() == Some(c) && rec(rest, &n[1..]),
        }
    }
    // Bounded: probe names are short, but keep hostile patterns from exploding.
    pat.matches('*').count() <= 4 && rec(pat.as_bytes(), name.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tracepoint_forms() {
        let tp = |e: &str| {
            Ok(Probe::Tracepoint {
                event: e.to_string(),
            })
        };
        assert_eq!(
            parse("tracepoint:sched:sched_switch"),
            tp("sched:sched_switch")
        );
        assert_eq!(parse("tp:syscalls:sys_enter_*"), tp("syscalls:sys_enter_*"));
        assert_eq!(
            parse("tracepoint:sched::sched_wakeup"),
            tp("sched:sched_wakeup")
        );
        for bad in [
            "tracepoint:sched",
            "tracepoint::x",
            "tracepoint:a:b:c:d",
            "tp:a b:c",
        ] {
            let e = parse(bad).unwrap_err();
            assert!(e.contains("tracepoint:SYSTEM:NAME"), "{bad}: {e}");
        }
    }

    #[test]
    fn forms() {
        assert_eq!(parse("BEGIN"), Ok(Probe::Begin));
        assert_eq!(parse("tick-100ms"), Ok(Probe::Tick { ns: 100_000_000 }));
        assert_eq!(
            parse("profile:::tick-1s"),
            Ok(Probe::Tick { ns: 1_000_000_000 })
        );
        assert_eq!(
            parse("pmc:::ls_any_fills_from_sys.all-10000"),
            Ok(Probe::Pmc {
                event: "ls_any_fills_from_sys.all".into(),
                period: Some(10000)
            })
        );
        assert_eq!(
            parse("pmc:::cpu-clock"),
            Ok(Probe::Pmc {
                event: "cpu-clock".into(),
                period: None
            })
        );
        assert_eq!(
            parse("ibs-exec-2000"),
            Ok(Probe::IbsOp {
                period: Some(32000)
            })
        );
        assert_eq!(
            parse("ibs:::ibs-fetch-500"),
            Ok(Probe::IbsFetch { period: Some(8000) })
        );
        assert_eq!(
            parse("ibs:::op-100000"),
            Ok(Probe::IbsOp {
                period: Some(100000)
            })
        );
        assert_eq!(parse("profile:::hz-99"), Ok(Probe::Profile { hz: 99 }));
        assert_eq!(
            parse("mem:::0x404048"),
            Ok(Probe::Breakpoint {
                addr: 0x404048,
                access: None,
                len: None
            })
        );
        assert_eq!(
            parse("mem:::4210760:w:8"),
            Ok(Probe::Breakpoint {
                addr: 0x404048,
                access: Some("w".into()),
                len: Some(8)
            })
        );
        assert_eq!(
            Probe::breakpoint_event(0x404048, None, None),
            "mem:0x404048:rw"
        );
        assert_eq!(
            Probe::breakpoint_event(0x404048, Some("w"), Some(8)),
            "mem:0x404048/8:w"
        );
        for bad in [
            "mem:::",
            "mem:::0x10:q",
            "mem:::0x10:rw:0",
            "mem:::0x10:rw:8:9",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
        assert!(parse("ibs-exec-0").is_err());
        assert!(parse("ibs-exec-70000").is_err());
        let e = parse("ibs:::opp").unwrap_err();
        assert!(e.contains("ibs:::op"), "{e}");
        let e = parse("pcm:::cycles").unwrap_err();
        assert!(e.contains("`pmc`"), "{e}");
    }

    #[test]
    fn globs() {
        assert!(glob("cpu-*", "cpu-clock"));
        assert!(!glob("cpu-*", "cycles"));
        assert!(glob("*", "x"));
    }
}
