//! `culprit list`'s text: the inventory that `culprit_collect::inventory` takes, as a
//! document of aligned sections (System, Capabilities, Notes, PMUs, the event kinds, this
//! CPU's event table), in perf list's layout for the table. Collect only gathers.

use std::io::Write;

use culprit_collect::events::tables::{self, TableOut};
use culprit_collect::inventory::{EventOut, Listing};
use culprit_output::Document;

/// The inventory as a document: one section of aligned lines per part (System,
/// Capabilities, Notes, PMUs, the event kinds, this CPU's event table).
pub fn document(l: &Listing) -> Document {
    let mut buf = Vec::new();
    // Writing into memory cannot fail.
    let _ = write_text(l, &mut buf);
    let text = String::from_utf8_lossy(&buf);
    let mut doc = Document::new();
    for part in text.trim_end_matches('\n').split("\n\n") {
        doc.lines(part.lines().map(str::to_string).collect());
    }
    doc
}

/// Writes the inventory as aligned text sections.
fn write_text(l: &Listing, out: &mut dyn Write) -> std::io::Result<()> {
    const W: usize = 24;
    writeln!(out, "System")?;
    let cpu = l
        .cpu
        .as_ref()
        .map(|c| c.describe())
        .unwrap_or_else(|| "unknown".to_string());
    writeln!(out, "  {:<W$}{cpu}", "CPU")?;
    writeln!(
        out,
        "  {:<W$}{}",
        "Virtual machine",
        l.virtualization
            .as_ref()
            .map(|v| format!("yes ({v})"))
            .unwrap_or_else(|| "no (as far as cpuinfo/DMI tell)".to_string())
    )?;
    let opt = |v: Option<String>| v.unwrap_or_else(|| "unknown".to_string());
    writeln!(
        out,
        "  {:<W$}{}",
        "perf_event_paranoid",
        opt(l.perf_event_paranoid.map(|v| v.to_string()))
    )?;
    writeln!(
        out,
        "  {:<W$}{}",
        "NMI watchdog",
        opt(l.nmi_watchdog.map(|v| if v {
            "on".to_string()
        } else {
            "off".to_string()
        }))
    )?;
    writeln!(
        out,
        "  {:<W$}{}",
        "max sample rate",
        opt(l.perf_event_max_sample_rate.map(|v| format!("{v} Hz")))
    )?;

    writeln!(out, "\nCapabilities")?;
    let c = &l.capabilities;
    writeln!(out, "  {:<W$}{}", "Hardware PMU", yes_no(l.hardware_pmu))?;
    writeln!(
        out,
        "  {:<W$}{} — {}",
        "Precise (:p) up to", c.precise_ip_max, c.precise_ip_why
    )?;
    writeln!(
        out,
        "  {:<W$}{}",
        "max_precise",
        c.max_precise
            .map(|v| v.to_string())
            .unwrap_or_else(|| "unknown (no cpu/caps/max_precise)".to_string())
    )?;
    for (name, ibs) in [("IBS op", &c.ibs_op), ("IBS fetch", &c.ibs_fetch)] {
        let text = if ibs.present {
            let caps: Vec<String> = ibs.caps.iter().map(|(k, v)| format!("{k}={v}")).collect();
            let formats: Vec<String> = ibs.formats.iter().map(|f| f.name.clone()).collect();
            format!(
                "yes (type {}; terms {}; caps {})",
                ibs.attr_type.unwrap_or(0),
                formats.join(","),
                if caps.is_empty() {
                    "none".to_string()
                } else {
                    caps.join(" ")
                }
            )
        } else {
            "no".to_string()
        };
        writeln!(out, "  {:<W$}{text}", name)?;
    }
    writeln!(
        out,
        "  {:<W$}{}",
        "Branch stacks",
        match &c.branch_stack.error {
            None => "yes".to_string(),
            Some(e) => format!("no ({e})"),
        }
    )?;
    writeln!(out, "  {:<W$}{}", "Usable counters", c.counters.usable)?;

    if !l.notes.is_empty() {
        writeln!(out, "\nNotes")?;
        for n in &l.notes {
            writeln!(out, "  - {n}")?;
        }
    }

    writeln!(out, "\nPMUs (sysfs)")?;
    for p in &l.pmus {
        let formats: Vec<String> = p
            .formats
            .iter()
            .map(|f| format!("{}={}", f.name, f.spec))
            .collect();
        writeln!(
            out,
            "  {:<14} type {:<4} {}",
            p.name,
            p.attr_type,
            if formats.is_empty() {
                "(no format terms)".to_string()
            } else {
                formats.join(" ")
            }
        )?;
        for a in &p.events {
            writeln!(
                out,
                "      {:<34} {}",
                format!("{}/{}/", p.name, a.name),
                a.terms
            )?;
        }
    }

    for (kind, title) in [
        ("hardware", "Generic hardware events"),
        ("software", "Software events"),
        ("cache", "Hardware cache events"),
    ] {
        let evs: Vec<&EventOut> = l.events.iter().filter(|e| e.kind == kind).collect();
        if evs.is_empty() {
            continue;
        }
        writeln!(out, "\n{title}")?;
        for e in evs {
            let mut name = e.name.clone();
            if !e.aliases.is_empty() {
                name = format!("{name} OR {}", e.aliases.join(" OR "));
            }
            let status = match &e.error {
                None => "opens".to_string(),
                Some(err) => format!("does not open: {err}"),
            };
            writeln!(out, "  {name:<48} {status}")?;
        }
    }

    write_table_text(&l.table, out)?;

    Ok(())
}

/// Writes the table's events grouped by topic, laid out as `perf list` lays them out.
fn yes_no(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

fn write_table_text(t: &TableOut, out: &mut dyn std::io::Write) -> std::io::Result<()> {
    writeln!(out, "\nEvent table {}", tables::table_reason(t))?;
    let mut topic = None;
    for e in t.events.iter().filter(|e| !e.deprecated) {
        if topic != Some(&e.topic) {
            writeln!(out, "\n{}:", e.topic)?;
            topic = Some(&e.topic);
        }
        // As perf list: the name, then the description in brackets with a non-core unit.
        let unit = if e.pmu == "cpu" {
            String::new()
        } else {
            format!(". Unit: {}", e.pmu)
        };
        writeln!(out, "  {}", e.name)?;
        writeln!(out, "       [{}{unit}]", e.description.replace('\n', " "))?;
    }
    // Deprecated names by name only: older perf listed many of them as current, and
    // scripts still use them; a paragraph keeps thousands of uncore ones from burying the
    // rest (their descriptions are in `--format json`).
    let mut deprecated: Vec<&str> = t
        .events
        .iter()
        .filter(|e| e.deprecated)
        .map(|e| e.name.as_str())
        .collect();
    if !deprecated.is_empty() {
        deprecated.sort_unstable();
        deprecated.dedup();
        writeln!(
            out,
            "\ndeprecated (still accepted; the table names newer events for them):"
        )?;
        let mut line = String::from(" ");
        for name in deprecated {
            if line.len() > 1 && line.len() + 1 + name.len() > DEPRECATED_WIDTH {
                writeln!(out, "{line}")?;
                line = String::from(" ");
            }
            line.push(' ');
            line.push_str(name);
        }
        writeln!(out, "{line}")?;
    }
    Ok(())
}

/// The width the deprecated names are wrapped to (perf list's 80 columns).
const DEPRECATED_WIDTH: usize = 80;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_render_text_sections_and_ibs() {
        let mut out = Vec::new();
        write_text(&Listing::example(true, true), &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains(
            "  IBS op                  yes (type 11; terms cnt_ctl; caps zen4_ibs_extensions=1)\n"
        ), "{text}");
        assert!(text.contains("  IBS fetch               no\n"), "{text}");
        assert!(text.contains("  Usable counters         5\n"), "{text}");
        assert!(text.contains("\nEvent table x86/amdzen5: CPU id AuthenticAMD-26-2-0 (from /proc/cpuinfo) matches mapfile.csv row `AuthenticAMD-26-[[:xdigit:]]+,v1,amdzen5,core`\n"), "{text}");
        assert!(
            text.contains("\npipeline:\n  ex_ret_ops\n       [retired macro-ops]\n"),
            "{text}"
        );
    }
}
