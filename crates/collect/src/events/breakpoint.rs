//! Hardware breakpoints: perf's `mem:ADDR[/LEN][:ACCESS]` (PERF_TYPE_BREAKPOINT).
//!
//! A breakpoint samples every access (`sample_period` 1) to `LEN` bytes at `ADDR` of the kind
//! named by `ACCESS` (`r`, `w`, `x`, combined; default `rw`). The defaults are perf's
//! (`parse_events_add_breakpoint`): length 4 for data, `sizeof(long)` for execution. The event
//! is named as perf names it (`mem:0x404048:rw`), so files from both tools read alike.
//!
//! x86 debug registers watch writes, reads-or-writes, or instruction fetches: a read-only or a
//! mixed data/execute breakpoint is refused here with the reason, instead of the kernel's
//! bare EINVAL. So are lengths other than 1, 2, 4, 8 and addresses not aligned to the length.

use culprit_decode::abi::perf_type;

use super::{EventError, EventSpec};

/// `HW_BREAKPOINT_R`: data reads.
pub const BP_R: u32 = 1;
/// `HW_BREAKPOINT_W`: data writes.
pub const BP_W: u32 = 2;
/// `HW_BREAKPOINT_X`: instruction execution.
pub const BP_X: u32 = 4;

/// The access letters of a `bp_type`, in perf's order (`rwx`).
pub fn access_letters(bp_type: u32) -> String {
    [(BP_R, 'r'), (BP_W, 'w'), (BP_X, 'x')]
        .iter()
        .filter(|(bit, _)| bp_type & bit != 0)
        .map(|(_, c)| *c)
        .collect()
}

/// Whether `event` is written as a breakpoint (`mem:` prefix).
pub fn is_breakpoint(event: &str) -> bool {
    event.trim_start().starts_with("mem:")
}

fn syntax(event: &str, why: impl Into<String>) -> EventError {
    EventError::Syntax {
        event: event.to_string(),
        why: why.into(),
    }
}

fn number(s: &str) -> Option<u64> {
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => s.parse().ok(),
    }
}

/// Parses `mem:ADDR[/LEN][:ACCESS]`, followed by optional privilege modifiers (`:u`, `:k`)
/// which the caller applies: returns the event and the modifier text.
pub fn parse(event: &str) -> Result<(EventSpec, &str), EventError> {
    let body = event
        .trim()
        .strip_prefix("mem:")
        .ok_or_else(|| syntax(event, "a breakpoint starts with `mem:`"))?;
    let mut parts = body.split(':');
    let place = parts.next().unwrap_or("");
    let (addr_text, len_text) = match place.split_once('/') {
        Some((a, l)) => (a, Some(l)),
        None => (place, None),
    };
    let addr = number(addr_text).ok_or_else(|| {
        syntax(
            event,
            format!("`{addr_text}` is not an address: write mem:0xADDR[/LEN][:rwx], e.g. mem:0x404048/8:w"),
        )
    })?;
    // The next part is the access when it is made of r/w/x only; anything after is modifiers.
    let rest: Vec<&str> = parts.collect();
    let (access, mods) = match rest.as_slice() {
        [] => ("", ""),
        [a] if !a.is_empty() && a.chars().all(|c| "rwx".contains(c)) => (*a, ""),
        [m] => ("", *m),
        [a, m] if !a.is_empty() && a.chars().all(|c| "rwx".contains(c)) => (*a, *m),
        _ => {
            return Err(syntax(
                event,
                "write mem:ADDR[/LEN][:ACCESS][:MODIFIERS], ACCESS made of r, w, x (e.g. mem:0x404048:rw:u)",
            ))
        }
    };
    let mut bp_type = 0;
    for c in access.chars() {
        let bit = match c {
            'r' => BP_R,
            'w' => BP_W,
            _ => BP_X,
        };
        if bp_type & bit != 0 {
            return Err(syntax(event, format!("access `{c}` given twice")));
        }
        bp_type |= bit;
    }
    if bp_type == 0 {
        bp_type = BP_R | BP_W;
    }
    let len = match len_text {
        Some(l) => number(l).filter(|&n| n > 0).ok_or_else(|| {
            syntax(
                event,
                format!("`{l}` is not a length in bytes (1, 2, 4 or 8)"),
            )
        })?,
        None if bp_type == BP_X => std::mem::size_of::<usize>() as u64,
        None => 4,
    };
    check_x86(event, addr, len, bp_type)?;
    let name = format!("mem:{addr:#x}:{}", access_letters(bp_type));
    let mut spec = EventSpec::new(name, Some("breakpoint"), perf_type::BREAKPOINT, 0);
    // bp_addr and bp_len share their places with config1 and config2 in perf_event_attr.
    spec.config1 = addr;
    spec.config2 = len;
    spec.bp_type = bp_type;
    // Its rate is the recording's: every hit unless -c/-F say otherwise (as perf).
    Ok((spec, mods))
}

/// The x86 debug registers' limits (arch/x86/kernel/hw_breakpoint.c), as clear errors.
fn check_x86(event: &str, addr: u64, len: u64, bp_type: u32) -> Result<(), EventError> {
    if !cfg!(any(target_arch = "x86_64", target_arch = "x86")) {
        return Ok(());
    }
    let unsupported = |what: String| EventError::Unsupported {
        event: event.to_string(),
        what,
    };
    match bp_type {
        BP_W | 0b011 => {}
        BP_X => {
            if len != std::mem::size_of::<usize>() as u64 {
                return Err(unsupported(format!(
                    "an execution breakpoint watches one instruction: its length is {} (sizeof(long)), not {len}",
                    std::mem::size_of::<usize>()
                )));
            }
            return Ok(());
        }
        BP_R => {
            return Err(unsupported(
                "x86 debug registers cannot watch reads alone: use `:rw` (reads and writes) or `:w`"
                    .to_string(),
            ))
        }
        _ => {
            return Err(unsupported(
                "x86 debug registers watch data (`:w`, `:rw`) or execution (`:x`), not both: use two events"
                    .to_string(),
            ))
        }
    }
    if ![1, 2, 4, 8].contains(&len) {
        return Err(unsupported(format!(
            "a data breakpoint watches 1, 2, 4 or 8 bytes, not {len}"
        )));
    }
    if !addr.is_multiple_of(len) {
        return Err(unsupported(format!(
            "address {addr:#x} is not aligned to the length {len}: x86 watches aligned ranges (use mem:{:#x}/{len} or a shorter length)",
            addr - addr % len
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_breakpoint_defaults_and_names_as_perf() {
        let (s, mods) = parse("mem:0x404048").unwrap();
        assert_eq!(s.name, "mem:0x404048:rw");
        assert_eq!(s.attr_type, perf_type::BREAKPOINT);
        assert_eq!(
            (s.config1, s.config2, s.bp_type),
            (0x404048, 4, BP_R | BP_W)
        );
        assert_eq!(s.rate, None);
        assert_eq!(mods, "");
        let (s, _) = parse("mem:0x404048/8:w").unwrap();
        assert_eq!(
            (s.name.as_str(), s.config2, s.bp_type),
            ("mem:0x404048:w", 8, BP_W)
        );
        let (s, _) = parse("mem:4210760:x").unwrap();
        assert_eq!((s.config1, s.config2, s.bp_type), (4210760, 8, BP_X));
        let (s, mods) = parse("mem:0x1000:rw:u").unwrap();
        assert_eq!((s.bp_type, mods), (BP_R | BP_W, "u"));
        let (_, mods) = parse("mem:0x1000:u").unwrap();
        assert_eq!(mods, "u");
        assert_eq!(access_letters(7), "rwx");
    }

    #[test]
    fn test_breakpoint_in_an_event_list() {
        use crate::sysfs::testutil::{FakeMachines, FakeSysfs};
        let fake = FakeSysfs::amd();
        let p = super::super::EventParser::new(crate::sysfs::Sysfs::at(&fake.root), None);
        // The `/` of a length is not a term list: the comma after it still separates.
        let v = p
            .parse_event_list("mem:0x404048/8:w,cpu-clock,mem:0x404050:rw:u")
            .unwrap();
        let names: Vec<&str> = v.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["mem:0x404048:w", "cpu-clock", "mem:0x404050:rw"]);
        assert_eq!(v[0].config2, 8);
        assert!(v[2].exclude_kernel && !v[2].exclude_user);
        assert_eq!(v[1].bp_type, 0);
    }

    #[test]
    fn test_breakpoint_errors_say_why() {
        for (bad, says) in [
            ("mem:", "not an address"),
            ("mem:zz", "not an address"),
            ("mem:0x1000/0", "not a length"),
            ("mem:0x1000:ww", "twice"),
            ("mem:0x1000:rw:u:k", "MODIFIERS"),
        ] {
            let e = parse(bad).unwrap_err().to_string();
            assert!(e.contains(says), "{bad}: {e}");
        }
        if cfg!(target_arch = "x86_64") {
            for (bad, says) in [
                ("mem:0x1000:r", "reads alone"),
                ("mem:0x1000:rx", "not both"),
                ("mem:0x1000/3", "1, 2, 4 or 8"),
                ("mem:0x1002/4", "not aligned"),
                ("mem:0x1000/4:x", "one instruction"),
            ] {
                let e = parse(bad).unwrap_err().to_string();
                assert!(e.contains(says), "{bad}: {e}");
            }
        }
    }
}
