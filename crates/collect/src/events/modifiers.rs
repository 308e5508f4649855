//! perf 6.1's event modifiers (`cycles:upp`, `{a,b}:k`), applied as perf's
//! `get_event_modifier()` in `tools/perf/util/parse-events.c` applies them, so that culprit's
//! attr bits equal perf's for every spelling:
//!
//! - `u`, `k`, `h`: the first of them excludes every privilege level, then each one named is
//!   included again; `u` also sets `exclude_guest`.
//! - `G`, `H`: the same scheme for guest and host (`exclude_guest`, `exclude_host`).
//! - `p` raises precise_ip (at most 3) and sets `exclude_guest`; `P` asks for the most
//!   precise the kernel accepts (perf's precise_max).
//! - `I` exclude_idle, `D` pinned, `e` exclusive.
//! - Written on one event, the modifiers start from nothing: `exclude_guest`, set by default,
//!   stays only when `u`, `p` or `H` says so (`cycles:k` counts guests, as in perf). On a group
//!   (`{…}:mods`) they start from each member's own bits.
//!
//! `S` (leader sampling) belongs to groups and is handled there; `W` (weak group) and `b`
//! (BPF counters) change how perf runs an event, not its attr, and culprit does not do them.

use super::{EventError, EventSpec};

/// The modifier letters perf 6.1's lexer takes (`[ukhpPGHSDIWeb]+`).
const PERF_MODIFIERS: &str = "ukhpPGHSDIWeb";

/// Applies `mods` to `spec` with perf's rules. `on_group`: the modifiers follow a group's
/// `}` and start from the member's current bits. Returns whether any of `u`, `k`, `h` was
/// given (the privilege levels were chosen).
pub(super) fn apply_perf_modifiers(
    spec: &mut EventSpec,
    mods: &str,
    event: &str,
    on_group: bool,
) -> Result<bool, EventError> {
    if mods.is_empty() {
        return Ok(false);
    }
    check_letters(mods, event)?;
    let current = |bit: bool| on_group && bit;
    let (mut eu, mut ek, mut eh) = (
        current(spec.exclude_user),
        current(spec.exclude_kernel),
        current(spec.exclude_hv),
    );
    let (mut e_host, mut e_guest) = (current(spec.exclude_host), current(spec.exclude_guest));
    let mut e_idle = current(spec.exclude_idle);
    let mut precise = if on_group { spec.precise_ip } else { 0 };
    let mut precise_max = on_group && spec.precise_max;
    let mut pinned = current(spec.pinned);
    let mut exclusive = current(spec.exclusive);
    let mut exclude = eu || ek || eh;
    let mut exclude_gh = false;
    let mut privilege = false;
    for c in mods.chars() {
        match c {
            'u' | 'k' | 'h' => {
                privilege = true;
                if !exclude {
                    exclude = true;
                    (eu, ek, eh) = (true, true, true);
                }
                match c {
                    'u' => {
                        if !exclude_gh {
                            e_guest = true;
                        }
                        eu = false;
                    }
                    'k' => ek = false,
                    _ => eh = false,
                }
            }
            'G' | 'H' => {
                if !exclude_gh {
                    exclude_gh = true;
                    (e_guest, e_host) = (true, true);
                }
                if c == 'G' {
                    e_guest = false;
                } else {
                    e_host = false;
                }
            }
            'I' => e_idle = true,
            'p' => {
                precise += 1;
                // perf: "use of precise requires exclude_guest".
                if !exclude_gh {
                    e_guest = true;
                }
            }
            'P' => precise_max = true,
            'D' => pinned = true,
            'e' => exclusive = true,
            'S' => {
                return Err(unsupported(
                    event,
                    c,
                    "sample_read on a single event is not supported by culprit; group the \
                     events and sample the leader: `{cycles,instructions}:S`",
                ))
            }
            'W' => {
                return Err(unsupported(
                    event,
                    c,
                    "weak groups (split the group when it does not fit) are not supported by \
                     culprit; drop `W` or make smaller groups",
                ))
            }
            'b' => {
                return Err(unsupported(
                    event,
                    c,
                    "BPF counters are not supported by culprit; drop `b`",
                ))
            }
            _ => return Err(unsupported(event, c, "unknown modifier")),
        }
    }
    if precise > 3 {
        return Err(EventError::BadModifier {
            event: event.to_string(),
            modifier: "p".repeat(usize::from(precise)),
            why: "at most three `p` (precise_ip 0..3)".to_string(),
        });
    }
    spec.exclude_user = eu;
    spec.exclude_kernel = ek;
    spec.exclude_hv = eh;
    spec.exclude_host = e_host;
    spec.exclude_guest = e_guest;
    spec.exclude_idle = e_idle;
    spec.precise_ip = precise;
    spec.precise_max = precise_max;
    spec.pinned = pinned;
    spec.exclusive = exclusive;
    Ok(privilege)
}

/// perf's `check_modifier()`: only known letters, and none twice except `p`.
fn check_letters(mods: &str, event: &str) -> Result<(), EventError> {
    for (i, c) in mods.char_indices() {
        if !PERF_MODIFIERS.contains(c) {
            return Err(unsupported(event, c, "unknown modifier"));
        }
        if c != 'p' && mods[i + c.len_utf8()..].contains(c) {
            return Err(unsupported(
                event,
                c,
                "a modifier may be given only once (except `p`)",
            ));
        }
    }
    Ok(())
}

fn unsupported(event: &str, c: char, why: &str) -> EventError {
    EventError::BadModifier {
        event: event.to_string(),
        modifier: c.to_string(),
        why: why.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn apply(mods: &str) -> EventSpec {
        let mut s = EventSpec::new("cycles", None, 0, 0);
        apply_perf_modifiers(&mut s, mods, "cycles", false).unwrap();
        s
    }

    /// (user, kernel, hv, guest, host, idle) excluded.
    fn excl(s: &EventSpec) -> [bool; 6] {
        [
            s.exclude_user,
            s.exclude_kernel,
            s.exclude_hv,
            s.exclude_guest,
            s.exclude_host,
            s.exclude_idle,
        ]
    }

    #[test]
    fn test_modifiers_follow_perf_exclude_bits() {
        // Observed with `perf record -vv -e cycles:MODS` (perf 6.1).
        let (t, f) = (true, false);
        assert_eq!(excl(&apply("")), [f, f, f, t, f, f]);
        assert_eq!(excl(&apply("u")), [f, t, t, t, f, f]);
        assert_eq!(excl(&apply("k")), [t, f, t, f, f, f]);
        assert_eq!(excl(&apply("h")), [t, t, f, f, f, f]);
        assert_eq!(excl(&apply("G")), [f, f, f, f, t, f]);
        assert_eq!(excl(&apply("H")), [f, f, f, t, f, f]);
        assert_eq!(excl(&apply("I")), [f, f, f, f, f, t]);
        assert_eq!(excl(&apply("pp")), [f, f, f, t, f, f]);
        assert_eq!(apply("pp").precise_ip, 2);
        let max = apply("P");
        assert!(max.precise_max && max.precise_ip == 0 && !max.exclude_guest);
        let d = apply("De");
        assert!(d.pinned && d.exclusive);
    }

    #[test]
    fn test_modifiers_refused_as_perf_does() {
        let mut s = EventSpec::new("cycles", None, 0, 0);
        for bad in ["uu", "pppp", "x", "W", "b", "S"] {
            assert!(
                apply_perf_modifiers(&mut s, bad, "cycles", false).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn test_group_modifiers_start_from_the_members_bits() {
        let mut s = EventSpec::new("cycles", None, 0, 0);
        apply_perf_modifiers(&mut s, "u", "cycles:u", false).unwrap();
        // `{cycles:u}:k`: the member already excludes the kernel and the hypervisor; the
        // group's `k` includes the kernel again and keeps the rest.
        apply_perf_modifiers(&mut s, "k", "{cycles:u}:k", true).unwrap();
        assert!(!s.exclude_user && !s.exclude_kernel && s.exclude_hv);
    }
}
