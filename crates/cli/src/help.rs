//! The EXAMPLES block after each verb's `--help`, laid out for an 80-column terminal: an
//! example whose description does not fit beside it gets the description on the next line,
//! a command longer than the line is continued with ` \` at a space outside quotes (so it can
//! still be pasted into a shell), and prose is wrapped at word boundaries. Nothing wraps
//! mid-line in the terminal.

/// The width help text must fit.
pub const WIDTH: usize = 80;

/// Column where descriptions start when they fit beside their command.
const DESC_INDENT: usize = 6;

/// Lays out an after-help text (see the module doc). Example lines start with two spaces
/// and `culprit`; a run of three or more spaces separates the command from its
/// description.
pub fn layout(text: &str) -> String {
    let mut out = Vec::new();
    for line in text.lines() {
        if let Some(example) = line.strip_prefix("  ").filter(|l| l.starts_with("culprit")) {
            let (cmd, desc) = match example.find("   ") {
                Some(i) => (example[..i].trim_end(), Some(example[i..].trim())),
                None => (example.trim_end(), None),
            };
            if line.len() <= WIDTH {
                out.push(line.to_string());
                continue;
            }
            out.extend(command_lines(cmd));
            if let Some(d) = desc {
                out.extend(wrap(d, WIDTH - DESC_INDENT).map(|l| format!("{:DESC_INDENT$}{l}", "")));
            }
        } else if line.len() > WIDTH {
            let indent = line.len() - line.trim_start().len();
            out.extend(
                wrap(line.trim_start(), WIDTH - indent).map(|l| format!("{:indent$}{l}", "")),
            );
        } else {
            out.push(line.to_string());
        }
    }
    out.join("\n")
}

/// A command as lines of at most [`WIDTH`]: broken at spaces outside quotes, each broken
/// line ending in ` \`, continuation lines indented.
fn command_lines(cmd: &str) -> Vec<String> {
    let mut breaks = Vec::new();
    let mut quote = None;
    for (i, c) in cmd.char_indices() {
        match (c, quote) {
            ('\'' | '"', None) => quote = Some(c),
            (c, Some(q)) if c == q => quote = None,
            (' ', None) => breaks.push(i),
            _ => {}
        }
    }
    let mut lines = Vec::new();
    let mut start = 0;
    let mut indent = 2;
    loop {
        let room = WIDTH - indent - 2;
        if cmd.len() - start <= WIDTH - indent {
            lines.push(format!("{:indent$}{}", "", &cmd[start..]));
            return lines;
        }
        // The last space that keeps this piece within the room; else the first one after.
        let cut = breaks
            .iter()
            .copied()
            .rev()
            .find(|&b| b > start && b - start <= room)
            .or_else(|| breaks.iter().copied().find(|&b| b > start));
        let Some(cut) = cut else {
            lines.push(format!("{:indent$}{}", "", &cmd[start..]));
            return lines;
        };
        lines.push(format!("{:indent$}{} \\", "", &cmd[start..cut]));
        start = cut + 1;
        indent = 4;
    }
}

/// Words of `text` in lines of at most `width` (a longer word stands alone).
fn wrap(text: &str, width: usize) -> impl Iterator<Item = String> {
    let mut lines = Vec::new();
    let mut cur = String::new();
    for w in text.split_whitespace() {
        if !cur.is_empty() && cur.len() + 1 + w.len() > width {
            lines.push(std::mem::take(&mut cur));
        }
        if !cur.is_empty() {
            cur.push(' ');
        }
        cur.push_str(w);
    }
    if !cur.is_empty() {
        lines.push(cur);
    }
    lines.into_iter()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_layout_fits_80_columns_and_keeps_commands_pasteable() {
        let text = "EXAMPLES:\n  culprit report -i host1.data -i host2.data --sort sym   one report of several files\n  culprit trace -e 'ibs-exec-2000 { @[execname] = sum(args[0]->IbsOpData3.bit.IbsDcMiss); }' -a -- sleep 5\n  culprit list\n\nPercentages are of each event's total period over all its samples (as `perf report`), always.";
        let out = layout(text);
        for l in out.lines() {
            assert!(
                l.len() <= WIDTH || !l.contains(' ') || l.contains('{'),
                "{l:?}"
            );
        }
        assert!(out.contains("  culprit report -i host1.data -i host2.data --sort sym\n      one report of several files"), "{out}");
        // The long quoted program is not broken inside its quotes.
        assert!(
            out.contains(
                "'ibs-exec-2000 { @[execname] = sum(args[0]->IbsOpData3.bit.IbsDcMiss); }' \\"
            ),
            "{out}"
        );
        assert!(out.contains("  culprit list\n"), "{out}");
        assert!(
            out.lines()
                .all(|l| l.len() <= WIDTH || l.contains("IbsDcMiss")),
            "{out}"
        );
    }
}
