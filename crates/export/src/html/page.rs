//! Writes a [`Page`] as one self-contained HTML file: the skeleton, the inline CSS and script
//! (page.css, page.js and page_views.js, written by hand: no framework, nothing fetched), and the model as a
//! JSON data block.
//!
//! Safety of names from the file: the JSON escapes `<`, `>` and `&` (`\u003c`, …), which
//! only ever occur inside JSON strings, so the block is still the same JSON and no text in it
//! can close the `<script>` element or open another; the only other file text in the HTML,
//! the title, is HTML-escaped. The Content-Security-Policy allows no fetch of any kind
//! (`default-src 'none'`) and runs only the page's own script and style, by their SHA-256
//! hashes: even a name that became markup could not run.

use std::io::{self, Write};

use base64::Engine as _;
use sha2::{Digest, Sha256};

use super::model::Page;

const CSS: &str = include_str!("page.css");
/// The script: page.js (data, helpers, tabs, timeline, transforms, summary, table) then
/// page_views.js (the other views and the start): one function split in two files.
const JS: &str = concat!(include_str!("page.js"), include_str!("page_views.js"));

/// The page's body before the data: the header, the tab bar and one empty section per view
/// (the script fills them).
const BODY: &str = r#"<header><h1>culprit</h1><span id="title"></span></header>
<nav id="tabs"></nav>
<main>
<section id="v-summary" class="view"></section>
<section id="v-timeline" class="view"></section>
<section id="v-functions" class="view"></section>
<section id="v-flame" class="view"></section>
<section id="v-calltree" class="view"></section>
<section id="v-trees" class="view"></section>
<section id="v-annotate" class="view"></section>
<section id="v-why" class="view"></section>
<section id="v-topdown" class="view"></section>
<section id="v-ibs" class="view"></section>
<section id="v-diff" class="view"></section>
</main>
<div id="tip" hidden></div>
<noscript>This report draws its views with JavaScript: allow scripts for this file.</noscript>
"#;

/// `'sha256-…'`, a CSP source of `text`.
fn csp_hash(text: &str) -> String {
    let digest = Sha256::digest(text.as_bytes());
    format!(
        "'sha256-{}'",
        base64::engine::general_purpose::STANDARD.encode(digest)
    )
}

/// `s` with HTML's special characters escaped (for the title).
fn html_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c if c.is_control() => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

/// The model as JSON safe inside a `<script>` element: `<`, `>` and `&` as `\u` escapes.
pub(crate) fn data_json(page: &Page) -> io::Result<Vec<u8>> {
    let json = serde_json::to_vec(page).map_err(io::Error::other)?;
    let mut out = Vec::with_capacity(json.len() + json.len() / 64);
    for b in json {
        match b {
            b'<' => out.extend_from_slice(b"\\u003c"),
            b'>' => out.extend_from_slice(b"\\u003e"),
            b'&' => out.extend_from_slice(b"\\u0026"),
            b => out.push(b),
        }
    }
    Ok(out)
}

/// Writes `page` as HTML; returns the bytes written.
pub fn write_page(page: &Page, out: &mut dyn Write) -> io::Result<u64> {
    let mut w = crate::Counting {
        inner: out,
        bytes: 0,
    };
    let csp = format!(
        "default-src 'none'; script-src {}; style-src {}; img-src data:; base-uri 'none'; \
         form-action 'none'",
        csp_hash(JS),
        csp_hash(CSS)
    );
    write!(
        w,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"{csp}\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"generator\" content=\"{}\">\n\
         <title>culprit: {}</title>\n<style>{CSS}</style>\n</head>\n<body>\n{BODY}",
        html_escape(&page.generator),
        html_escape(&page.summary.input),
    )?;
    w.write_all(b"<script type=\"application/json\" id=\"culprit-data\">")?;
    w.write_all(&data_json(page)?)?;
    w.write_all(b"</script>\n<script>")?;
    w.write_all(JS.as_bytes())?;
    w.write_all(b"</script>\n</body></html>\n")?;
    w.flush()?;
    Ok(w.bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_html_escape_escapes_markup_and_quotes() {
        assert_eq!(
            html_escape("<script>alert('x')</script> & \"q\""),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;"
        );
    }

    /// A page whose names are markup.
    fn page_named(name: &str) -> Page {
        use super::super::model::*;
        Page {
            schema: SCHEMA,
            generator: "culprit test".to_string(),
            summary: Summary {
                input: name.to_string(),
                ..Summary::default()
            },
            events: Vec::new(),
            functions: FunctionTable {
                rows: vec![FunctionRow {
                    name: name.to_string(),
                    dso: name.to_string(),
                    tag: "[.]".to_string(),
                    addr: None,
                    samples: vec![1],
                    period: vec![1],
                    percent: vec![culprit_output::json::Round4(100.0)],
                    annotation: None,
                    frame: None,
                }],
                hidden: 0,
            },
            flame: FlameTree::default(),
            timeline: None,
            annotations: Vec::new(),
            annotate_note: String::new(),
            topdown: None,
            topdown_note: None,
            ibs: None,
            ibs_note: None,
            why_deskid: None,
            why_memory: None,
            why_latency: None,
            diff: None,
            diff_hidden: Vec::new(),
            diff_flame: None,
        }
    }

    #[test]
    fn test_data_json_cannot_close_its_script_and_reads_back_the_same() {
        let name = "</script><script>alert(1)</script>&amp;<!--";
        let data = data_json(&page_named(name)).unwrap();
        for b in [b'<', b'>', b'&'] {
            assert!(!data.contains(&b), "{} in the data block", b as char);
        }
        let back: serde_json::Value = serde_json::from_slice(&data).unwrap();
        assert_eq!(back["functions"]["rows"][0]["name"], name);
        assert_eq!(back["summary"]["input"], name);
    }

    #[test]
    fn test_write_page_has_one_data_block_and_escapes_the_title() {
        let name = "</script><title>x";
        let mut out = Vec::new();
        let n = write_page(&page_named(name), &mut out).unwrap();
        assert_eq!(n, out.len() as u64);
        let html = String::from_utf8(out).unwrap();
        assert_eq!(html.matches("<script").count(), 2);
        assert_eq!(html.matches("</script>").count(), 2);
        assert!(html.contains("<title>culprit: &lt;/script&gt;&lt;title&gt;x</title>"));
        assert!(html.contains(&csp_hash(JS)) && html.contains(&csp_hash(CSS)));
    }

    #[test]
    fn test_csp_hash_is_the_base64_sha256_of_the_text() {
        // SHA-256 of the empty string.
        assert_eq!(
            csp_hash(""),
            "'sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU='"
        );
    }

    #[test]
    fn test_the_script_never_writes_markup() {
        // Names reach the DOM through textContent only.
        for bad in [
            "innerHTML",
            "outerHTML",
            "insertAdjacentHTML",
            "document.write",
        ] {
            assert!(!JS.contains(bad), "page.js uses {bad}");
        }
    }
}
