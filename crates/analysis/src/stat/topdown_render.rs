//! The text and `-x` CSV layouts of `stat --topdown`'s tree
//! (`collect::stat::topdown` counts and [`crate::topdown`] computes).

use crate::stat::topdown::TopdownOut;
use crate::topdown::{self, Node};

/// The text report: what was counted how, the tree with flags, reliability and the
/// critical bottleneck, and hints.
pub fn text_lines(td: &TopdownOut, target: &str, groups: usize) -> Vec<String> {
    let mut w = vec![
        String::new(),
        format!(
            " Top-Down level {} for {target}: {}, {} slots per cycle, {} usable counters",
            td.level, td.model, td.slots_per_cycle, td.usable_counters
        ),
    ];
    let how = match td.mode.as_str() {
        "no_multiplex" => format!(
            "--no-multiplex: the command ran once per group ({groups} runs per repeat), no multiplexing"
        ),
        "at_once" => format!("{groups} group(s) counted at once, no multiplexing"),
        _ => format!(
            "{groups} groups multiplexed in one run (each ratio inside one group; use --no-multiplex for exact counts)"
        ),
    };
    w.push(format!(" {how}"));
    w.push(format!(" flags use {}", td.thresholds));
    w.push(String::new());
    w.push(format!(
        "   {:<34} {:>8}  {:>11}",
        "metric", "% slots", "reliability"
    ));
    fn rows(w: &mut Vec<String>, nodes: &[Node], depth: usize) {
        for n in nodes {
            let mark = if n.flagged { "*" } else { " " };
            let name = format!("{}{}", "  ".repeat(depth), n.name);
            let mut notes = Vec::new();
            if n.flagged {
                notes.push("FLAGGED");
            }
            if n.critical && !n.children.iter().any(|c| c.critical) {
                notes.push("<== critical bottleneck");
            }
            if n.mismeasured {
                notes.push("mismeasured");
            }
            if n.unreliable {
                notes.push("unreliable");
            }
            let line = format!(
                " {mark} {name:<34} {:>7.1}%  {:>11.2}  {}",
                n.value * 100.0,
                n.reliability,
                notes.join(" ")
            );
            w.push(line.trim_end().to_string());
            rows(w, &n.children, depth + 1);
        }
    }
    rows(&mut w, &td.tree, 0);
    w.push(String::new());
    w.push(match &td.bottleneck {
        Some(b) => format!(" critical bottleneck: {b}"),
        None => " nothing is over its threshold".to_string(),
    });
    fn hints(w: &mut Vec<String>, nodes: &[Node]) {
        for n in nodes {
            if let Some(h) = &n.hint {
                w.push(format!("   {}: {h}", n.name));
            }
            hints(w, &n.children);
        }
    }
    if td.tree.iter().any(|n| n.flagged) {
        w.push(" hints:".to_string());
        hints(&mut w, &td.tree);
    }
    if td.tree.iter().any(|n| n.unreliable) {
        w.push(format!(
            " note: reliability < {} means the counters ran for too little of the run (multiplexing); rerun with --no-multiplex",
            topdown::UNRELIABLE_BELOW
        ));
    }
    w.push(String::new());
    w
}

/// One `-x SEP` line per node:
/// `value,slots,topdown.PARENT.NAME,reliability,flagged(0/1),critical(0/1)`.
pub fn csv_lines(td: &TopdownOut, sep: &str) -> Vec<String> {
    fn walk(out: &mut Vec<String>, sep: &str, nodes: &[Node], path: &str) {
        for n in nodes {
            let name = if path.is_empty() {
                n.name.clone()
            } else {
                format!("{path}.{}", n.name)
            };
            out.push(format!(
                "{:.4}{sep}slots{sep}topdown.{name}{sep}{:.2}{sep}{}{sep}{}",
                n.value,
                n.reliability,
                u8::from(n.flagged),
                u8::from(n.critical)
            ));
            walk(out, sep, &n.children, &name);
        }
    }
    let mut out = Vec::new();
    walk(&mut out, sep, &td.tree, "");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stat::topdown::pointer_chase_example;

    #[test]
    fn test_topdown_text_tree_flags_bottleneck_hints() {
        let (plan, out) = pointer_chase_example().unwrap();
        let text = text_lines(&out, "'./pointer_chase'", plan.groups.len()).join("\n");
        assert!(text.contains("Top-Down level 2 for './pointer_chase': AMD Zen 5, 8 slots per cycle, 5 usable counters"), "{text}");
        assert!(text.contains("groups multiplexed in one run"), "{text}");
        assert!(
            text.contains("Intel TMA thresholds (AMD publishes none)"),
            "{text}"
        );
        assert!(text.contains("% slots"), "{text}");
        let line = |name: &str| {
            text.lines()
                .find(|l| l.split_whitespace().any(|w| w == name))
                .unwrap_or_else(|| panic!("{name} in {text}"))
        };
        let be = line("backend_bound");
        assert!(
            be.starts_with(" * ") && be.contains("86.0%") && be.contains("FLAGGED"),
            "{be}"
        );
        let mem = line("memory");
        assert!(
            mem.contains("<== critical bottleneck") && mem.contains("unreliable"),
            "{mem}"
        );
        assert!(!line("cpu").contains("FLAGGED"));
        assert!(text.contains("critical bottleneck: memory"), "{text}");
        assert!(
            text.contains("memory: loads wait for cache/DRAM misses"),
            "{text}"
        );
        assert!(
            text.contains("culprit record -e ls_any_fills_from_sys.all -- CMD"),
            "{text}"
        );
        assert!(text.contains("rerun with --no-multiplex"), "{text}");
    }
}
