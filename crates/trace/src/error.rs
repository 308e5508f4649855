//! Errors with a source position, printed like a compiler does (line:column and a caret).

/// A byte range in the program source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Span {
    /// First byte.
    pub start: usize,
    /// One past the last byte.
    pub end: usize,
}

impl Span {
    /// A span from `start` to `end`.
    pub fn new(start: usize, end: usize) -> Span {
        Span { start, end }
    }

    /// A span covering both.
    pub fn to(self, other: Span) -> Span {
        Span::new(self.start.min(other.start), self.end.max(other.end))
    }
}

/// Why a program cannot run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ScriptError {
    /// A syntax, name or type error at a place in the source.
    #[error("{rendered}")]
    At {
        /// `syntax error`, `unknown field`, `type error`, …
        kind: &'static str,
        /// The message alone.
        message: String,
        /// 1-based line.
        line: usize,
        /// 1-based column (in characters).
        column: usize,
        /// The full rendering: `line:col: kind: message`, the source line and a caret.
        rendered: String,
    },
    /// The program does not fit the input (e.g. its events are absent from the file).
    #[error("{0}")]
    Input(String),
}

impl ScriptError {
    /// An error at `span` of `src`.
    pub fn at(
        src: &str,
        span: Span,
        kind: &'static str,
        message: impl Into<String>,
    ) -> ScriptError {
        let message = message.into();
        let start = span.start.min(src.len());
        let line_start = src[..start].rfind('\n').map_or(0, |i| i + 1);
        let line_end = src[start..].find('\n').map_or(src.len(), |i| start + i);
        let line = src[..start].matches('\n').count() + 1;
        let column = src[line_start..start].chars().count() + 1;
        let width = src
            .get(start..span.end.min(line_end).max(start))
            .map_or(1, |s| s.chars().count().max(1));
        let (text, caret_at, width) = excerpt(&src[line_start..line_end], column - 1, width);
        let rendered = format!(
            "{line}:{column}: {kind}: {message}\n  {text}\n  {}{}",
            " ".repeat(caret_at),
            "^".repeat(width)
        );
        ScriptError::At {
            kind,
            message,
            line,
            column,
            rendered,
        }
    }
}

/// How many characters of a long source line are shown on each side of the error.
const EXCERPT_SIDE: usize = 40;

/// The part of a source line shown under an error: the whole line when short, else a window
/// around the error's column (`…` marks the cuts), so that a generated 20 KB line does not
/// flood the terminal. Returns the text, the caret's column in it and the caret's width.
fn excerpt(line: &str, column: usize, width: usize) -> (String, usize, usize) {
    let chars: Vec<char> = line.chars().collect();
    if chars.len() <= 2 * EXCERPT_SIDE + 20 {
        return (line.to_string(), column, width);
    }
    let from = column.saturating_sub(EXCERPT_SIDE);
    let to = (column + width.min(EXCERPT_SIDE) + EXCERPT_SIDE).min(chars.len());
    let mut text = String::new();
    let mut caret_at = column - from;
    if from > 0 {
        text.push('…');
        caret_at += 1;
    }
    text.extend(&chars[from..to]);
    if to < chars.len() {
        text.push('…');
    }
    (text, caret_at, width.min(to.saturating_sub(column)).max(1))
}

/// The names among `candidates` closest to `name` (edit distance), best first, for "did you
/// mean" hints.
pub fn closest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    let lname = name.to_ascii_lowercase();
    let mut scored: Vec<(usize, &str)> = candidates
        .into_iter()
        .map(|c| {
            let lc = c.to_ascii_lowercase();
            let mut d = levenshtein(&lname, &lc);
            if lc.contains(&lname) || lname.contains(&lc) {
                d = d.min(lc.len().abs_diff(lname.len()).min(2));
            }
            (d, c)
        })
        .collect();
    scored.sort();
    scored.dedup_by(|a, b| a.1 == b.1);
    let limit = (name.len() / 2).max(3);
    scored
        .into_iter()
        .filter(|(d, _)| *d <= limit)
        .take(3)
        .map(|(_, c)| c)
        .collect()
}

/// " (did you mean `a`, `b`?)" or "".
pub fn hint<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> String {
    let c = closest(name, candidates);
    if c.is_empty() {
        String::new()
    } else {
        let list: Vec<String> = c.iter().map(|s| format!("`{s}`")).collect();
        format!(" (did you mean {}?)", list.join(", "))
    }
}

fn levenshtein(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur.push(sub.min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caret_under_the_spot() {
        let e = ScriptError::at(
            "BEGIN\n{ x = ; }",
            Span::new(10, 11),
            "syntax error",
            "oops",
        );
        assert_eq!(
            e.to_string(),
            "2:5: syntax error: oops\n  { x = ; }\n      ^"
        );
    }

    #[test]
    fn long_lines_are_cut_around_the_error() {
        let src = format!("BEGIN {{ x = {}; }}", vec!["1"; 500].join("+"));
        let at = src.find(";").unwrap();
        let e = ScriptError::at(&src, Span::new(at, at + 1), "syntax error", "oops");
        let shown = e.to_string();
        let lines: Vec<&str> = shown.lines().collect();
        assert!(lines[1].chars().count() < 2 * EXCERPT_SIDE + 10, "{shown}");
        assert!(lines[1].starts_with("  …+1+1"), "{shown}");
        let caret = lines[2].find('^').unwrap();
        assert_eq!(lines[1].chars().nth(caret), Some(';'), "{shown}");
        assert!(lines[0].starts_with(&format!("1:{}:", at + 1)), "{shown}");
    }

    #[test]
    fn closest_names() {
        assert_eq!(
            closest("IbsDcMis", ["IbsDcMiss", "IbsLdOp", "IbsDcMisAcc"])[0],
            "IbsDcMiss"
        );
        assert!(closest("zzzzzz", ["count", "sum"]).is_empty());
    }
}
