//! Brendan Gregg's folded (collapsed) stacks: one line per distinct stack, frames root first
//! joined by `;`, then a space and the stack's weight. The frames are named as
//! `perf script | stackcollapse-perf.pl` (and inferno-collapse-perf) name them, so that the
//! output equals that pipeline's on the same file:
//! - the root frame is the command name (spaces as `_`), with `-PID` or `-PID/TID` when asked;
//! - a function without a symbol is `[DSO file name]` (`[unknown]` outside any mapping);
//! - `;` in names becomes `:`, and a C++-style parameter list is cut (not Go's `.(*T)` nor
//!   `(anonymous namespace)`);
//! - kernel frames get `_[k]` and JIT frames `_[j]` when asked;
//! - the weight is the sum of the samples' periods (perf script prints the period), and only
//!   one event is folded: the one asked for, else the first event sampled.

use std::io::{self, Write};

use rustc_hash::FxHashMap;

use culprit_analysis::stacks::{MappingKind, StackProfile, NONE};

/// How the frames of folded stacks are named and weighed.
#[derive(Debug, Clone, Default)]
pub struct FoldedOptions {
    /// Append `-PID` to the root (command) frame.
    pub pid: bool,
    /// Append `-PID/TID` to the root frame (implies `pid`).
    pub tid: bool,
    /// Suffix kernel frames with `_[k]`.
    pub annotate_kernel: bool,
    /// Suffix JIT frames (anonymous code) with `_[j]`.
    pub annotate_jit: bool,
    /// Name unknown frames with their address: `[dso <0xADDR>]`.
    pub addrs: bool,
    /// Weigh stacks by samples instead of periods.
    pub count_samples: bool,
}

/// Folded stacks of one event: `(stack, weight)`, sorted by stack.
pub fn folded_stacks(
    profile: &StackProfile,
    event: u32,
    opts: &FoldedOptions,
) -> Vec<(String, u64)> {
    let mut names: Vec<Option<String>> = vec![None; profile.functions.len()];
    let mut by_stack: FxHashMap<String, u64> = FxHashMap::default();
    let mut line = String::new();
    for s in profile.samples.iter().filter(|s| s.event == event) {
        line.clear();
        let Some(thread) = profile.threads.get(s.thread as usize) else {
            continue;
        };
        // Control characters (a newline would end the line) are escaped like every name
        // culprit prints: `\xNN`.
        line.push_str(&culprit_output::text::escape(&thread.comm).replace(' ', "_"));
        if opts.tid {
            line.push_str(&format!("-{}/{}", thread.pid, thread.tid));
        } else if opts.pid {
            line.push_str(&format!("-{}", thread.pid));
        }
        for (frame, loc) in profile.stack_frames(s.stack) {
            line.push(';');
            let function = &profile.functions[frame.function as usize];
            if function.unknown && opts.addrs {
                line.push_str(&unknown_name(profile, function.mapping, Some(loc.address)));
            } else {
                let name = names[frame.function as usize].get_or_insert_with(|| {
                    if function.unknown {
                        unknown_name(profile, function.mapping, None)
                    } else {
                        tidy(&function.name)
                    }
                });
                line.push_str(name);
            }
            let mapping = profile.mapping(loc.mapping);
            if opts.annotate_kernel && loc.kernel {
                line.push_str("_[k]");
            } else if opts.annotate_jit && mapping.is_some_and(|m| m.kind == MappingKind::Anonymous)
            {
                line.push_str("_[j]");
            }
        }
        let weight = if opts.count_samples {
            s.count
        } else {
            s.period
        };
        match by_stack.get_mut(line.as_str()) {
            Some(w) => *w += weight,
            None => {
                by_stack.insert(line.clone(), weight);
            }
        }
    }
    let mut out: Vec<(String, u64)> = by_stack.into_iter().collect();
    out.sort_unstable();
    out
}

/// Writes folded stacks, one `stack weight` line each.
pub fn write(out: &mut dyn Write, stacks: &[(String, u64)]) -> io::Result<()> {
    for (stack, weight) in stacks {
        writeln!(out, "{stack} {weight}")?;
    }
    Ok(())
}

/// The name of code without a symbol: `[file name of the DSO]`, `[unknown]` outside any
/// mapping (with `<0xADDR>` when `addr` is given).
fn unknown_name(profile: &StackProfile, mapping: u32, addr: Option<u64>) -> String {
    let module = if mapping == NONE {
        None
    } else {
        profile.mapping(mapping).map(|m| m.path.as_str())
    };
    let base = match module {
        None => {
            if addr.is_none() {
                return "[unknown]".to_string();
            }
            "unknown"
        }
        Some(path) => path.rsplit('/').next().unwrap_or(path),
    };
    let base = culprit_output::text::escape(base).replace(';', ":");
    match addr {
        Some(a) => format!("[{base} <{a:x}>]"),
        None => format!("[{base}]"),
    }
}

/// `;` is the frame separator: it becomes `:`. A top-level parameter list is cut
/// (`ns::f(int)` → `ns::f`), except Go's method receivers (`pkg.(*T).M`) and C++'s
/// `(anonymous namespace)`.
pub fn tidy(name: &str) -> String {
    let name = culprit_output::text::escape(name).replace(';', ":");
    let mut depth = 0i32;
    let mut after_dot = None;
    for (i, c) in name.char_indices() {
        match c {
            '<' | '{' | '[' => depth += 1,
            '>' | '}' | ']' | ')' => depth -= 1,
            '(' => {
                if depth == 0 {
                    let go = after_dot == Some(i);
                    let anonymous = name[i..].starts_with("(anonymous namespace)");
                    if !go && !anonymous {
                        return name[..i].to_string();
                    }
                }
                depth += 1;
            }
            '.' => after_dot = Some(i + 1),
            _ => {}
        }
    }
    name
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tidy_cuts_parameters_but_not_go_receivers_or_anonymous_namespaces() {
        assert_eq!(tidy("ns::f(int, char*)"), "ns::f");
        assert_eq!(
            tidy("std::vector<int (*)(int)>::push_back(int)"),
            "std::vector<int (*)(int)>::push_back"
        );
        assert_eq!(tidy("net/http.(*Client).Do"), "net/http.(*Client).Do");
        assert_eq!(
            tidy("(anonymous namespace)::g()"),
            "(anonymous namespace)::g"
        );
        assert_eq!(tidy("a;b"), "a:b");
        assert_eq!(tidy("plain"), "plain");
    }
}
