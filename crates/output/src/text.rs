//! Text rendering: `# ` header lines, aligned tables with units (numbers right-aligned, text
//! left-aligned), call trees, the hottest rows highlighted on a colour terminal, every line
//! fitted to the width, and every control character from a file's names escaped.

use std::borrow::Cow;
use std::io::{self, Write};

use crate::model::{Document, Fit, Section, Table, Tree, TreeNode, Values};
use crate::style::TextOptions;

/// Writes a document as text (its notes are not written: see [`write_notes`]).
pub fn write(out: &mut dyn Write, doc: &Document, o: &TextOptions) -> io::Result<()> {
    let mut w = LineWriter { out, o };
    for h in &doc.header {
        w.comment(h)?;
    }
    if !doc.header.is_empty() {
        w.line("#", None)?;
    }
    let mut first = true;
    for s in &doc.sections {
        if !first {
            w.line("", None)?;
        }
        first = false;
        match s {
            Section::Table(t) => write_table_to(&mut w, t)?,
            Section::Lines(lines) => {
                for l in lines {
                    // Prose and key-value lines wrap under their own indentation (+2).
                    let l = escape(l);
                    let indent = l.len() - l.trim_start_matches(' ').len();
                    w.wrapped(&l, &" ".repeat(indent + 2))?;
                }
            }
        }
    }
    if !doc.footer.is_empty() {
        w.line("#", None)?;
        for f in &doc.footer {
            w.comment(f)?;
        }
    }
    Ok(())
}

/// Writes one table as text (title, header, rows, trees).
pub fn write_table(out: &mut dyn Write, t: &Table, o: &TextOptions) -> io::Result<()> {
    write_table_to(&mut LineWriter { out, o }, t)
}

/// Writes notes to `err` as `culprit: warning: text` (warnings always; information and hints
/// unless `quiet`), each once.
pub fn write_notes(err: &mut dyn Write, notes: &[crate::Note], quiet: bool) -> io::Result<()> {
    let mut seen = std::collections::HashSet::new();
    for n in notes {
        if !seen.insert((n.kind, n.text.as_str())) {
            continue;
        }
        let label = match n.kind {
            crate::NoteKind::Warning => "warning",
            crate::NoteKind::Info if quiet => continue,
            crate::NoteKind::Info => "note",
            crate::NoteKind::Hint if quiet => continue,
            crate::NoteKind::Hint => "hint",
        };
        writeln!(err, "culprit: {label}: {}", escape(&n.text))?;
    }
    Ok(())
}

/// Writes lines, fitted to the width, optionally coloured.
struct LineWriter<'a> {
    out: &'a mut dyn Write,
    o: &'a TextOptions,
}

impl LineWriter<'_> {
    /// `# text`, with `text` escaped.
    fn comment(&mut self, text: &str) -> io::Result<()> {
        let mut l = String::with_capacity(text.len() + 2);
        l.push_str("# ");
        l.push_str(&escape(text));
        self.wrapped(&l, "#   ")
    }

    /// A line (already escaped) broken at blanks to the width, continuation lines starting
    /// with `hang`; a word too long for a line is cut.
    fn wrapped(&mut self, text: &str, hang: &str) -> io::Result<()> {
        let Some(width) = self.o.width else {
            return self.line(text, None);
        };
        if text_width(text) <= width || text_width(hang) + 10 > width {
            return self.line(text, None);
        }
        let mut line = String::new();
        let mut fresh = true;
        let indent = text.len() - text.trim_start_matches(' ').len();
        line.push_str(&text[..indent]);
        for word in text[indent..].split(' ') {
            let used = text_width(&line);
            if !fresh && used + 1 + text_width(word) > width {
                self.line(&line, None)?;
                line.clear();
                line.push_str(hang);
                fresh = true;
            }
            if !fresh {
                line.push(' ');
            }
            line.push_str(word);
            fresh = false;
        }
        self.line(&line, None)
    }

    /// A line (already escaped), cut to the width, coloured with `color` when colours are on.
    fn line(&mut self, text: &str, color: Option<&str>) -> io::Result<()> {
        let text = match self.o.width {
            Some(w) => cut(text, w),
            None => Cow::Borrowed(text),
        };
        match color.filter(|_| self.o.color) {
            Some(c) => writeln!(self.out, "{}", crate::style::paint(&text, c)),
            None => {
                self.out.write_all(text.as_bytes())?;
                self.out.write_all(b"\n")
            }
        }
    }
}

/// Display width of a text (characters; bytes for ASCII, the common case).
pub fn text_width(s: &str) -> usize {
    if s.is_ascii() {
        s.len()
    } else {
        s.chars().count()
    }
}

/// `s` cut to `width` characters, the last one `…`, when it is wider.
pub fn cut(s: &str, width: usize) -> Cow<'_, str> {
    if text_width(s) <= width {
        return Cow::Borrowed(s);
    }
    let mut t = String::with_capacity(width + 3);
    push_cut(&mut t, s, width);
    Cow::Owned(t)
}

/// Appends `s` cut to `width` characters, the last one `…` (`s` is wider).
fn push_cut(out: &mut String, s: &str, width: usize) {
    let keep = width.saturating_sub(1);
    let end = s.char_indices().nth(keep).map_or(s.len(), |(i, _)| i);
    out.push_str(&s[..end]);
    out.push('…');
}

/// Prose header lines are wrapped to this many characters: with their `# `, 80 columns.
pub const HEADER_WIDTH: usize = 78;

/// `text` broken at blanks into lines of at most `width` characters (a longer word stays
/// whole), continuation lines indented by two blanks.
pub fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split(' ') {
        let used = line.chars().count();
        let fresh = line.is_empty() || line == "  ";
        if !fresh && used + 1 + word.chars().count() > width {
            lines.push(std::mem::replace(&mut line, "  ".to_string()));
        } else if !fresh {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.trim().is_empty() || lines.is_empty() {
        lines.push(line);
    }
    lines
}

/// `s` with tabs replaced by blanks up to the next multiple of 8 characters, as a terminal
/// shows them (so that widths can be measured).
pub fn expand_tabs(s: &str) -> Cow<'_, str> {
    if !s.contains('\t') {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    let mut col = 0;
    for c in s.chars() {
        if c == '\t' {
            let n = 8 - col % 8;
            push_spaces(&mut out, n);
            col += n;
        } else {
            out.push(c);
            col += 1;
        }
    }
    Cow::Owned(out)
}

/// `s` with control characters (terminal escapes, newlines, tabs: from names in files)
/// written as `\xNN` / `\u{NNNN}`, so that a name can neither break a line nor drive the
/// terminal.
pub fn escape(s: &str) -> Cow<'_, str> {
    // Most names are ASCII without control characters: a byte scan tells.
    let plain = if s.is_ascii() {
        !s.bytes().any(|b| b < 0x20 || b == 0x7f)
    } else {
        !s.chars().any(char::is_control)
    };
    if plain {
        return Cow::Borrowed(s);
    }
    let mut t = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if c.is_control() {
            use std::fmt::Write as _;
            let _ = if (c as u32) < 0x80 {
                write!(t, "\\x{:02x}", c as u32)
            } else {
                write!(t, "\\u{{{:04x}}}", c as u32)
            };
        } else {
            t.push(c);
        }
    }
    Cow::Owned(t)
}

/// Appends `n` spaces.
fn push_spaces(out: &mut String, mut n: usize) {
    const SPACES: &str = "                                                                ";
    while n > 0 {
        let k = n.min(SPACES.len());
        out.push_str(&SPACES[..k]);
        n -= k;
    }
}

/// Formatted cells by (column, value), direct-mapped: most rows of a big report show the
/// same few percentages and counts, so each distinct value is formatted once per slot, not
/// once per row and pass.
struct CellCache {
    slots: Vec<Option<(usize, u64, String)>>,
}

impl CellCache {
    const BITS: u32 = 10;

    fn new() -> CellCache {
        CellCache {
            slots: vec![None; 1 << Self::BITS],
        }
    }

    /// Row `row` of column `col` formatted (numbers cached; text borrowed or escaped).
    fn cell<'a>(&'a mut self, col: usize, values: &'a Values, row: usize) -> Cow<'a, str> {
        let bits = match values {
            Values::Text(v) => return escape(v.get(row).map_or("", String::as_str)),
            Values::Texts(v) => return escape(v.get(row).unwrap_or("")),
            Values::Count(v) | Values::Human(v) | Values::Ns(v) | Values::Bytes(v) => {
                v.get(row).copied().unwrap_or(0)
            }
            Values::Percent(v) | Values::Estimate(v) | Values::Delta(v) | Values::Float(v, _) => {
                v.get(row).copied().unwrap_or(f64::NAN).to_bits()
            }
            Values::Address(v) => match v.get(row).copied().flatten() {
                Some(a) => a,
                None => return Cow::Borrowed(""),
            },
            Values::Int(v) => match v.get(row).copied().flatten() {
                Some(x) => x as u64,
                None => return Cow::Borrowed(""),
            },
        };
        let i = ((bits ^ (col as u64).rotate_left(32)).wrapping_mul(0x9e37_79b9_7f4a_7c15)
            >> (64 - Self::BITS)) as usize;
        let slot = &mut self.slots[i];
        match slot {
            Some((c, b, _)) if *c == col && *b == bits => {}
            _ => {
                let mut text = match slot.take() {
                    Some((_, _, t)) => t,
                    None => String::new(),
                };
                text.clear();
                values.text_into(row, &mut text);
                *slot = Some((col, bits, text));
            }
        }
        Cow::Borrowed(slot.as_ref().map_or("", |(_, _, t)| t.as_str()))
    }
}

/// Column widths fitted to `limit` (the whole line, with its 2-character prefix and
/// 2-character gaps): shrinkable columns are narrowed, the widest first, not below their
/// minimum.
fn fit_widths(widths: &mut [usize], fits: &[Fit], limit: Option<usize>) {
    let Some(limit) = limit else { return };
    let total = |w: &[usize]| 2 + w.iter().sum::<usize>() + 2 * w.len().saturating_sub(1);
    let mut excess = total(widths).saturating_sub(limit);
    while excess > 0 {
        // The widest column that may still shrink.
        let Some((i, room)) = widths
            .iter()
            .zip(fits)
            .enumerate()
            .filter_map(|(i, (&w, f))| match f {
                Fit::Shrink(min) if w > *min => Some((i, w - min)),
                _ => None,
            })
            .max_by_key(|&(i, _)| widths[i])
        else {
            break;
        };
        // Down to the next widest shrinkable column's width (or by what is needed).
        let next = widths
            .iter()
            .zip(fits)
            .enumerate()
            .filter(|&(j, (_, f))| j != i && matches!(f, Fit::Shrink(_)))
            .map(|(_, (&w, _))| w)
            .filter(|&w| w < widths[i])
            .max()
            .unwrap_or(0);
        let step = excess.min(room).min((widths[i] - next).max(1));
        widths[i] -= step;
        excess -= step;
    }
}

fn write_table_to(w: &mut LineWriter<'_>, t: &Table) -> io::Result<()> {
    if let Some(title) = &t.title {
        w.comment(title)?;
    }
    let cols: Vec<(usize, &crate::Column)> = t
        .columns
        .iter()
        .enumerate()
        .filter(|(_, c)| c.in_text)
        .collect();
    let rows = t.rows();
    let mut cache = CellCache::new();
    let mut widths: Vec<usize> = cols.iter().map(|(_, c)| text_width(&c.name)).collect();
    for row in 0..rows {
        for (k, (ci, c)) in cols.iter().enumerate() {
            let cw = text_width(&cache.cell(*ci, &c.values, row));
            widths[k] = widths[k].max(cw);
        }
    }
    let fits: Vec<Fit> = cols.iter().map(|(_, c)| c.fit).collect();
    fit_widths(&mut widths, &fits, w.o.width);
    // Too wide still: with columns to repeat, continue the others in further panels (each
    // with the repeated key columns) instead of cutting them off.
    let line_width = |ws: &[usize]| 2 + ws.iter().sum::<usize>() + 2 * ws.len().saturating_sub(1);
    let repeat = t.repeat.min(cols.len());
    let panels: Vec<Vec<usize>> = match w.o.width {
        Some(limit) if repeat > 0 && repeat < cols.len() && line_width(&widths) > limit => {
            let mut panels = Vec::new();
            let mut cur: Vec<usize> = (0..repeat).collect();
            for k in repeat..cols.len() {
                let mut ws: Vec<usize> = cur.iter().map(|&i| widths[i]).collect();
                ws.push(widths[k]);
                if cur.len() > repeat && line_width(&ws) > limit {
                    panels.push(std::mem::replace(&mut cur, (0..repeat).collect()));
                }
                cur.push(k);
            }
            panels.push(cur);
            panels
        }
        _ => vec![(0..cols.len()).collect()],
    };
    for (p, panel) in panels.iter().enumerate() {
        if p > 0 {
            w.line("", None)?;
        }
        let pcols: Vec<(usize, &crate::Column)> = panel.iter().map(|&k| cols[k]).collect();
        let pwidths: Vec<usize> = panel.iter().map(|&k| widths[k]).collect();
        write_panel(w, t, &pcols, &pwidths, &mut cache, p == 0)?;
    }
    if rows == 0 {
        w.comment(t.empty.as_deref().unwrap_or("(no rows)"))?;
    }
    Ok(())
}

/// One panel of a table: the header and rows of these columns; the first panel also has the
/// lines before rows and the trees under them.
fn write_panel(
    w: &mut LineWriter<'_>,
    t: &Table,
    cols: &[(usize, &crate::Column)],
    widths: &[usize],
    cache: &mut CellCache,
    first: bool,
) -> io::Result<()> {
    let rows = t.rows();
    let right: Vec<bool> = cols.iter().map(|(_, c)| c.values.right_aligned()).collect();
    let n = widths.len();
    // Appends cell `k` (aligned in its column, cut to its width) and the gap after it.
    // Called for every cell of every row: it allocates only to cut a cell.
    let push_cell = |line: &mut String, k: usize, s: &str| {
        let last = k + 1 == n;
        let width = text_width(s);
        let pad = widths[k].saturating_sub(width);
        if right[k] {
            push_spaces(line, pad);
        }
        if width > widths[k] {
            push_cut(line, s, widths[k]);
        } else {
            line.push_str(s);
        }
        if !right[k] && !last {
            push_spaces(line, pad);
        }
        if !last {
            line.push_str("  ");
        }
    };
    let mut line = String::from("# ");
    for (k, (_, c)) in cols.iter().enumerate() {
        push_cell(&mut line, k, &escape(c.name.as_str()));
    }
    w.line(line.trim_end(), None)?;
    let no_trees: &[crate::model::RowTree] = &[];
    let no_lines: &[(usize, String)] = &[];
    let mut trees = if first { t.trees.as_slice() } else { no_trees }
        .iter()
        .peekable();
    let mut lines_before = if first {
        t.lines_before.as_slice()
    } else {
        no_lines
    }
    .iter()
    .peekable();
    // Where lines before rows start: the row prefix and the text columns before `lines_at`.
    let lines_indent = 2 + cols
        .iter()
        .zip(widths)
        .take_while(|((ci, _), _)| *ci < t.lines_at)
        .map(|(_, w)| w + 2)
        .sum::<usize>();
    for row in 0..rows {
        while let Some((_, l)) = lines_before.next_if(|(r, _)| *r <= row) {
            line.clear();
            push_spaces(&mut line, lines_indent);
            line.push_str(&escape(l));
            w.line(&line, None)?;
        }
        line.clear();
        line.push_str("  ");
        for (k, (ci, c)) in cols.iter().enumerate() {
            push_cell(&mut line, k, &cache.cell(*ci, &c.values, row));
        }
        let hot = t
            .highlight
            .and_then(|h| t.columns.get(h))
            .and_then(|c| c.values.percent(row))
            .unwrap_or(0.0);
        let color = if hot >= 10.0 {
            Some(crate::style::HOT)
        } else if hot >= 1.0 {
            Some(crate::style::WARM)
        } else {
            None
        };
        w.line(&line, color)?;
        while let Some(rt) = trees.next_if(|rt| rt.row <= row) {
            if rt.row < row {
                continue;
            }
            if let Some(label) = &rt.label {
                w.line(&format!("{:>10}[{}]", "", escape(label)), None)?;
            }
            write_tree(w, &rt.tree)?;
            w.line("", None)?;
        }
    }
    Ok(())
}

/// A call tree, as perf's `-g` graph: the root, then `├─ 12.34% name` lines.
fn write_tree(w: &mut LineWriter<'_>, tree: &Tree) -> io::Result<()> {
    const INDENT: &str = "            ";
    w.line(&format!("{INDENT}{}", escape(&tree.name)), None)?;
    write_nodes(w, &tree.children, &mut INDENT.to_string())
}

fn write_nodes(w: &mut LineWriter<'_>, nodes: &[TreeNode], prefix: &mut String) -> io::Result<()> {
    let n = nodes.len();
    for (i, c) in nodes.iter().enumerate() {
        let last = i + 1 == n;
        w.line(
            &format!(
                "{prefix}{}{:.2}% {}",
                if last { "└─ " } else { "├─ " },
                c.percent,
                escape(&c.name)
            ),
            None,
        )?;
        let len = prefix.len();
        prefix.push_str(if last { "   " } else { "│  " });
        write_nodes(w, &c.children, prefix)?;
        prefix.truncate(len);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Column, RowTree};

    fn render(doc: &Document, width: Option<usize>, color: bool) -> String {
        let mut v = Vec::new();
        write(&mut v, doc, &TextOptions { width, color }).unwrap();
        String::from_utf8(v).unwrap()
    }

    fn sample_table() -> Table {
        let mut t = Table::new(vec![
            Column::new("Self", "percent", Values::Percent(vec![62.5, 0.5])),
            Column::new("Samples", "samples", Values::Count(vec![125, 1])),
            Column::new("Period", "period", Values::Ns(vec![125_000_000, 1_000_000])),
            Column::new(
                "Symbol",
                "sym",
                Values::Text(vec![
                    "a_very_long_function_name_that_would_not_fit_in_eighty_columns_at_all_x"
                        .into(),
                    "evil\x1b[2Jname".into(),
                ]),
            )
            .shrink(12),
        ]);
        t.highlight = Some(0);
        t
    }

    #[test]
    fn test_table_aligns_numbers_right_and_text_left() {
        let mut d = Document::new();
        d.header("Event 'cpu-clock'");
        d.table(sample_table());
        let s = render(&d, None, false);
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(lines[0], "# Event 'cpu-clock'");
        assert_eq!(lines[1], "#");
        assert!(
            lines[2].starts_with("#   Self  Samples     Period  Symbol"),
            "{s}"
        );
        assert!(
            lines[3].starts_with("  62.50%      125  125.00 ms  a_very"),
            "{s}"
        );
        assert!(
            lines[4].starts_with("   0.50%        1    1.00 ms  evil\\x1b[2Jname"),
            "{s}"
        );
    }

    #[test]
    fn test_fits_width_by_shrinking_text_and_cutting_lines() {
        let mut d = Document::new();
        d.header("File: ".to_string() + &"x".repeat(200));
        d.table(sample_table());
        let s = render(&d, Some(80), false);
        for l in s.lines() {
            assert!(text_width(l) <= 80, "{l:?} is {} wide", text_width(l));
        }
        assert!(s.contains('…'));
    }

    #[test]
    fn test_packed_texts_render_as_texts() {
        let texts = vec![
            "main".to_string(),
            "a,b".into(),
            String::new(),
            "évité".into(),
        ];
        let table = |v: Values| {
            let mut d = Document::new();
            d.table(Table::new(vec![
                Column::new("N", "n", Values::Count(vec![1, 2, 3, 4])),
                Column::new("Symbol", "sym", v),
            ]));
            d
        };
        let packed: crate::TextColumn = texts.iter().collect();
        assert_eq!(packed.get(3), Some("évité"));
        assert_eq!(packed.get(4), None);
        let a = table(Values::Text(texts.clone()));
        let b = table(Values::Texts(packed));
        assert_eq!(render(&a, Some(40), false), render(&b, Some(40), false));
        let csv = |d: &Document| {
            let mut v = Vec::new();
            crate::csv::write(&mut v, d.tables().next().unwrap()).unwrap();
            String::from_utf8(v).unwrap()
        };
        assert_eq!(csv(&a), csv(&b));
    }

    #[test]
    fn test_prose_lines_and_comments_wrap_under_their_indentation() {
        let mut d = Document::new();
        d.header("Note: ".to_string() + &"word ".repeat(30));
        d.lines(vec![format!(
            "  - IBS: {}",
            "not available here ".repeat(8)
        )]);
        let s = render(&d, Some(60), false);
        let lines: Vec<&str> = s.lines().collect();
        assert!(lines.iter().all(|l| text_width(l) <= 60), "{s}");
        assert!(lines[0].starts_with("# Note: word"));
        assert!(lines[1].starts_with("#   word"), "{s}");
        let body = lines
            .iter()
            .position(|l| l.starts_with("  - IBS:"))
            .unwrap();
        assert!(lines[body + 1].starts_with("    here"), "{s}");
        // Nothing lost: the words are all there.
        assert_eq!(s.matches("word").count(), 30);
        assert_eq!(s.matches("available").count(), 8);
    }

    #[test]
    fn test_wide_table_continues_in_panels_under_its_key_columns() {
        let mut cols = vec![Column::new(
            "Location",
            "loc",
            Values::Text(vec!["lib+0x10".into(), "lib+0x20".into()]),
        )];
        for i in 0..20 {
            cols.push(Column::new(
                format!("Counter{i}"),
                format!("c{i}"),
                Values::Count(vec![i, 1000 + i]),
            ));
        }
        let mut t = Table::new(cols);
        t.repeat = 1;
        let mut d = Document::new();
        d.table(t.clone());
        let s = render(&d, Some(80), false);
        assert!(s.lines().all(|l| text_width(l) <= 80), "{s}");
        // Every counter is shown, none cut; the location heads every panel.
        for i in 0..20 {
            assert!(s.contains(&format!("Counter{i}")), "{s}");
            assert!(s.contains(&format!("{}", 1000 + i)), "{s}");
        }
        assert!(!s.contains('…'), "{s}");
        let panels = s.lines().filter(|l| l.starts_with("# Location")).count();
        assert!(panels >= 3, "{s}");
        assert_eq!(s.matches("lib+0x20").count(), panels);
        // Without columns to repeat, lines are cut instead.
        t.repeat = 0;
        let mut d = Document::new();
        d.table(t);
        let s = render(&d, Some(80), false);
        assert_eq!(s.lines().filter(|l| l.starts_with("# Location")).count(), 1);
        assert!(s.contains('…'));
    }

    #[test]
    fn test_wrap() {
        assert_eq!(wrap("a b c", 3), vec!["a b", "  c"]);
        assert_eq!(wrap("abcdef gh", 3), vec!["abcdef", "  gh"]);
        assert_eq!(wrap("short", 78), vec!["short"]);
        for l in wrap(&"word ".repeat(40), 78) {
            assert!(l.len() <= 78, "{l}");
        }
    }

    #[test]
    fn test_expand_tabs() {
        assert_eq!(expand_tabs("\tx"), "        x");
        assert_eq!(expand_tabs("ab\tc"), "ab      c");
        assert_eq!(expand_tabs("abc"), "abc");
    }

    #[test]
    fn test_lines_before_rows_start_at_their_column() {
        let mut t = sample_table();
        t.lines_before = vec![(1, "x.c:3  int\tx;".into())];
        t.lines_at = 3;
        let mut d = Document::new();
        d.table(t);
        let s = render(&d, None, false);
        let lines: Vec<&str> = s.lines().collect();
        let at = lines[3].find("evil").unwrap();
        assert_eq!(lines[2].find("x.c:3"), Some(at), "{s}");
        assert!(lines[2].ends_with("int\\x09x;"), "{s}");
    }

    #[test]
    fn test_highlight_only_with_colour() {
        let mut d = Document::new();
        d.table(sample_table());
        assert!(!render(&d, None, false).contains('\x1b'));
        let c = render(&d, None, true);
        assert!(c.contains("\x1b[1;31m  62.50%"), "{c:?}");
        // The name's own escape stays escaped.
        assert!(!c.contains("\x1b[2J"));
    }

    #[test]
    fn test_trees_under_rows_and_empty_table() {
        let mut t = sample_table();
        t.trees.push(RowTree {
            row: 0,
            label: None,
            tree: Tree {
                name: "main".into(),
                children: vec![TreeNode {
                    percent: 50.0,
                    name: "caller".into(),
                    children: vec![],
                }],
            },
        });
        let mut d = Document::new();
        d.table(t);
        let s = render(&d, None, false);
        assert!(
            s.contains("            main\n            └─ 50.00% caller\n"),
            "{s}"
        );
        let mut e = Document::new();
        let mut t = Table::new(vec![Column::new("Self", "p", Values::Percent(vec![]))]);
        t.empty = Some("(no samples: --comm nosuch matched no sample)".into());
        e.table(t);
        assert!(render(&e, None, false).contains("# (no samples: --comm nosuch"));
    }

    #[test]
    fn test_notes_once_and_quiet() {
        let notes = vec![
            crate::Note::warning("lost 3 samples"),
            crate::Note::warning("lost 3 samples"),
            crate::Note {
                kind: crate::NoteKind::Hint,
                text: "try -g".into(),
            },
        ];
        let mut v = Vec::new();
        write_notes(&mut v, &notes, false).unwrap();
        assert_eq!(
            String::from_utf8(v).unwrap(),
            "culprit: warning: lost 3 samples\nculprit: hint: try -g\n"
        );
        let mut v = Vec::new();
        write_notes(&mut v, &notes, true).unwrap();
        assert_eq!(
            String::from_utf8(v).unwrap(),
            "culprit: warning: lost 3 samples\n"
        );
    }
}
