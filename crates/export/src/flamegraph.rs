//! Flame graphs (SVG) drawn by the `inferno` crate from the folded stacks of
//! [`crate::folded`]: one event, frames weighed by period (or samples), kernel frames
//! annotated `_[k]`; search, zoom and the frame details are inferno's own SVG script.
//!
//! Colours: by default ([`Colors::Dso`]) by where the code is: the kernel orange, the sampled
//! programs red to yellow, each shared library one hue of its own (blue, green, aqua, purple
//! or yellow, by its name), JIT code green and code outside any mapping grey; the shade
//! within a hue follows the function name, so the same function has the same colour in every
//! graph. Any inferno palette can be asked for instead ([`Colors::Palette`]).
//!
//! The differential graph ([`write_differential`]) is Brendan Gregg's: the other profile's
//! stacks, each frame red when its share grew over the baseline's and blue when it shrank
//! (inferno's `differential` module, with the baseline normalized to the other's total, so
//! that the `+x%` of a frame's details is its change in share, `culprit diff`'s Delta).

use std::io::{self, Write};

use inferno::flamegraph::color::{BasicPalette, Color, Palette, PaletteMap};
use inferno::flamegraph::{self, Direction};

use culprit_analysis::recording::Stopped;
use culprit_analysis::stacks::{
    stack_profile, MappingKind, PeriodUnit, StackOptions, StackProfile, NONE,
};
use culprit_symbols::ProfileInput;

use crate::folded::{self, FoldedOptions};
use crate::ExportError;

/// How frames are coloured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Colors {
    /// By the code's mapping: kernel, the programs, each library (see the module docs).
    #[default]
    Dso,
    /// One of inferno's palettes (`hot`, `java`, `rust`, …: [`Palette::VARIANTS`]).
    Palette(Palette),
}

impl Colors {
    /// `dso` or an inferno palette name.
    pub fn parse(name: &str) -> Result<Colors, String> {
        if name == "dso" {
            return Ok(Colors::Dso);
        }
        name.parse::<Palette>().map(Colors::Palette).map_err(|_| {
            format!(
                "unknown colour scheme '{name}' (known: dso, {})",
                Palette::VARIANTS.join(", ")
            )
        })
    }
}

/// What a flame graph shows and how.
#[derive(Debug, Clone, Default)]
pub struct FlameGraphOptions {
    /// The event drawn; `None`: the first event sampled.
    pub event: Option<String>,
    /// Frame naming (root frame with `-PID`/`-PID/TID`, addresses of unknown frames); kernel
    /// frames are always annotated `_[k]` and JIT frames `_[j]`.
    pub folded: FoldedOptions,
    /// Weigh frames by sample counts instead of periods.
    pub samples: bool,
    /// Icicle graph: the roots at the top, stacks growing down.
    pub inverted: bool,
    /// Frame colours.
    pub colors: Colors,
    /// The title (default `Flame Graph`, `Icicle Graph` or `Differential Flame Graph`).
    pub title: Option<String>,
    /// Width of the image in pixels (`None`: it fills the window).
    pub width: Option<usize>,
}

/// What a flame graph drew.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlameGraphSummary {
    /// The event drawn.
    pub event: String,
    /// The distinct stacks drawn (of the other profile for a differential graph).
    pub stacks: u64,
    /// The total weight (periods or samples) of the graph.
    pub total: u64,
    /// What the weight counts (`samples`, `ns`, or the event's name for other events).
    pub count_name: String,
    /// Problems met reading the input(s).
    pub warnings: Vec<String>,
    /// Where reading a damaged input stopped (what was read is drawn).
    pub stopped: Vec<(String, Stopped)>,
}

/// Reads `input` (and `other`, for a differential graph against `input`) and draws its
/// flame graph to `out`. `progress[i](done, total)` reports the bytes read of input `i`.
pub fn flamegraph(
    input: &ProfileInput,
    other: Option<&ProfileInput>,
    stacks: &StackOptions,
    opts: &FlameGraphOptions,
    out: &mut dyn Write,
    progress: [Box<dyn FnMut(u64, u64) + Send>; 2],
) -> Result<FlameGraphSummary, ExportError> {
    let [pa, pb] = progress;
    let a = stack_profile(input, stacks, pa)?;
    let b = match other {
        Some(o) => Some(stack_profile(o, stacks, pb)?),
        None => None,
    };
    let mut summary = match &b {
        Some(b) => write_differential(&a, b, opts, out)?,
        None => write_flamegraph(&a, opts, out)?,
    };
    for p in std::iter::once(&a).chain(b.as_ref()) {
        let file = &p.summary.input;
        summary
            .warnings
            .extend(p.summary.warnings.iter().map(|w| format!("{file}: {w}")));
        if let Some(s) = &p.summary.stopped {
            summary.stopped.push((file.clone(), s.clone()));
        }
    }
    Ok(summary)
}

/// The folded stacks a flame graph is drawn from: every frame annotated (`_[k]` kernel,
/// `_[j]` JIT), weighed by period or samples.
fn graph_stacks(
    profile: &StackProfile,
    opts: &FlameGraphOptions,
) -> Result<(u32, Vec<(String, u64)>), ExportError> {
    let event = crate::single_event(profile, opts.event.as_deref())?.ok_or_else(|| {
        ExportError::Unsupported(format!("{}: no samples to draw", profile.summary.input))
    })?;
    let fo = FoldedOptions {
        annotate_kernel: true,
        annotate_jit: true,
        count_samples: opts.samples,
        ..opts.folded.clone()
    };
    Ok((event, folded::folded_stacks(profile, event, &fo)))
}

/// What the weight of `event` counts, for the frame details.
fn count_name(profile: &StackProfile, event: u32, samples: bool) -> String {
    match profile.events.get(event as usize) {
        _ if samples => "samples".to_string(),
        Some(e) if e.unit == PeriodUnit::Nanoseconds => "ns".to_string(),
        Some(e) => e.name.clone(),
        None => "samples".to_string(),
    }
}

fn inferno_options<'a>(
    opts: &FlameGraphOptions,
    default_title: &str,
    subtitle: String,
    count_name: String,
    palette_map: Option<&'a mut PaletteMap>,
) -> flamegraph::Options<'a> {
    let mut o = flamegraph::Options::default();
    o.title = opts
        .title
        .clone()
        .unwrap_or_else(|| default_title.to_string());
    o.subtitle = Some(subtitle);
    o.count_name = count_name;
    o.image_width = opts.width;
    o.direction = if opts.inverted {
        Direction::Inverted
    } else {
        Direction::Straight
    };
    // Colours follow names, never chance: the same input gives the same SVG.
    o.hash = true;
    if let Colors::Palette(p) = opts.colors {
        o.colors = p;
    }
    o.palette_map = palette_map;
    let search = format!(
        "#{:02x}{:02x}{:02x}",
        SEARCH_COLOR.r, SEARCH_COLOR.g, SEARCH_COLOR.b
    );
    if let Ok(c) = search.parse() {
        o.search_color = c;
    }
    o
}

/// Draws the flame graph of one event of `profile` as SVG.
pub fn write_flamegraph(
    profile: &StackProfile,
    opts: &FlameGraphOptions,
    out: &mut dyn Write,
) -> Result<FlameGraphSummary, ExportError> {
    let (event, stacks) = graph_stacks(profile, opts)?;
    let total: u64 = stacks.iter().map(|s| s.1).sum();
    let name = profile.events[event as usize].name.clone();
    let count = count_name(profile, event, opts.samples);
    let lines = folded_lines(&stacks);
    let mut map = match opts.colors {
        Colors::Dso => Some(dso_palette(profile)),
        Colors::Palette(_) => None,
    };
    let default_title = if opts.inverted {
        "Icicle Graph"
    } else {
        "Flame Graph"
    };
    let subtitle = format!("{}: event '{name}'", profile.summary.input);
    let mut o = inferno_options(opts, default_title, subtitle, count.clone(), map.as_mut());
    draw(&mut o, lines.iter().map(String::as_str), out)?;
    Ok(FlameGraphSummary {
        event: name,
        stacks: stacks.len() as u64,
        total,
        count_name: count,
        warnings: Vec::new(),
        stopped: Vec::new(),
    })
}

/// Draws the differential flame graph of `other` against `baseline` (one event, the same
/// name in both): `other`'s stacks, red where a frame's share grew, blue where it shrank.
pub fn write_differential(
    baseline: &StackProfile,
    other: &StackProfile,
    opts: &FlameGraphOptions,
    out: &mut dyn Write,
) -> Result<FlameGraphSummary, ExportError> {
    let (event, after) = graph_stacks(other, opts)?;
    let name = other.events[event as usize].name.clone();
    let base_opts = FlameGraphOptions {
        event: Some(name.clone()),
        ..opts.clone()
    };
    let (_, before) = graph_stacks(baseline, &base_opts)?;
    let mut joined = Vec::new();
    inferno::differential::from_readers(
        inferno::differential::Options {
            normalize: true,
            strip_hex: false,
        },
        folded_text(&before).as_bytes(),
        folded_text(&after).as_bytes(),
        &mut joined,
    )?;
    let joined = String::from_utf8(joined)
        .map_err(|e| ExportError::Unsupported(format!("differential stacks are not UTF-8: {e}")))?;
    let total: u64 = after.iter().map(|s| s.1).sum();
    let count = count_name(other, event, opts.samples);
    let subtitle = format!(
        "{} against {}: event '{name}'; red grew, blue shrank",
        other.summary.input, baseline.summary.input
    );
    let mut o = inferno_options(
        opts,
        "Differential Flame Graph",
        subtitle,
        count.clone(),
        None,
    );
    draw(&mut o, joined.lines(), out)?;
    Ok(FlameGraphSummary {
        event: name,
        stacks: after.len() as u64,
        total,
        count_name: count,
        warnings: Vec::new(),
        stopped: Vec::new(),
    })
}

/// Runs inferno; a graph without stacks is an error naming why.
fn draw<'a>(
    o: &mut flamegraph::Options<'_>,
    lines: impl Iterator<Item = &'a str>,
    out: &mut dyn Write,
) -> Result<(), ExportError> {
    let mut lines = lines.peekable();
    if lines.peek().is_none() {
        return Err(ExportError::Unsupported(
            "no stacks to draw (no samples of the event)".to_string(),
        ));
    }
    flamegraph::from_lines(o, lines, io::BufWriter::new(out))?;
    Ok(())
}

/// `stack weight` lines, sorted (inferno merges neighbouring stacks).
fn folded_lines(stacks: &[(String, u64)]) -> Vec<String> {
    stacks
        .iter()
        .map(|(s, w)| format!("{} {w}", unambiguous_stack(s)))
        .collect()
}

fn folded_text(stacks: &[(String, u64)]) -> String {
    let mut text = String::new();
    for (s, w) in stacks {
        text.push_str(&unambiguous_stack(s));
        text.push(' ');
        text.push_str(&w.to_string());
        text.push('\n');
    }
    text
}

/// The stack as inferno must read it: inferno takes the last one or two space-separated
/// numbers of a line as its counts (two: a differential graph), so a leaf named `f 999`
/// would lose ` 999` and become a delta. That space becomes a no-break space (U+00A0), which
/// the SVG shows the same. Newlines and other control characters are already escaped (`\x0a`)
/// by the folded stacks.
fn unambiguous_stack(stack: &str) -> std::borrow::Cow<'_, str> {
    match stack.rsplit_once(' ') {
        Some((head, tail)) if !tail.is_empty() && tail.bytes().all(|b| b.is_ascii_digit()) => {
            std::borrow::Cow::Owned(format!("{head}\u{a0}{tail}"))
        }
        _ => std::borrow::Cow::Borrowed(stack),
    }
}

/// A 32-bit FNV-1a hash of `s`, for colours that follow names.
fn name_hash(s: &str) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in s.bytes() {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

/// The search highlight of the SVG and the HTML flame graphs: pure blue, at least 120 (RGB
/// distance) from every shade of every hue of [`Colors::Dso`], so a match never looks like a
/// frame of some library.
pub const SEARCH_COLOR: Color = Color::new(0, 0, 255);

/// The key of a frame in [`dso_palette`]: the folded stack's name of a function (`tidy`, with
/// `_[k]` for kernel code and `_[j]` for JIT code).
pub(crate) fn palette_key(name: &str, kernel: bool, jit: bool) -> String {
    let name = folded::tidy(name);
    match (kernel, jit) {
        (true, _) => format!("{name}_[k]"),
        (false, true) => format!("{name}_[j]"),
        _ => name,
    }
}

/// Hues of [`Colors::Dso`]; a library's hue is picked by its name.
const LIBRARY_HUES: [BasicPalette; 5] = [
    BasicPalette::Blue,
    BasicPalette::Aqua,
    BasicPalette::Purple,
    BasicPalette::Green,
    BasicPalette::Yellow,
];

/// A colour of `hue`, its shade picked by `s` (0..1): FlameGraph's ranges.
fn shade(hue: BasicPalette, s: f32) -> Color {
    let v = |lo: u8, span: u8| lo.saturating_add((f32::from(span) * s) as u8);
    match hue {
        // FlameGraph's "hot": red to yellow.
        BasicPalette::Hot | BasicPalette::Red => Color::new(v(205, 50), v(0, 230), 55),
        BasicPalette::Orange => Color::new(v(190, 65), v(90, 65), 0),
        BasicPalette::Blue => Color::new(v(80, 60), v(80, 60), v(190, 55)),
        BasicPalette::Aqua => Color::new(v(50, 60), v(165, 55), v(165, 55)),
        BasicPalette::Purple => Color::new(v(190, 65), v(80, 60), v(190, 65)),
        BasicPalette::Green => Color::new(v(0, 60), v(200, 55), v(0, 60)),
        BasicPalette::Yellow => Color::new(v(175, 55), v(175, 55), v(50, 20)),
        _ => Color::new(v(160, 40), v(160, 40), v(160, 40)),
    }
}

/// The colour of every frame name of `profile` by its mapping (see [`Colors::Dso`]).
pub fn dso_palette(profile: &StackProfile) -> PaletteMap {
    let programs: Vec<&str> = profile.threads.iter().map(|t| t.comm.as_str()).collect();
    let mut map = PaletteMap::default();
    for f in &profile.functions {
        let mapping = (f.mapping != NONE)
            .then(|| profile.mapping(f.mapping))
            .flatten();
        let kind = mapping.map(|m| m.kind);
        let name = if f.unknown {
            match mapping {
                Some(m) => format!("[{}]", m.path.rsplit('/').next().unwrap_or(&m.path)),
                None => "[unknown]".to_string(),
            }
        } else {
            folded::tidy(&f.name)
        };
        let (name, hue) = match kind {
            Some(MappingKind::Kernel | MappingKind::KernelModule) => {
                (format!("{name}_[k]"), BasicPalette::Orange)
            }
            Some(MappingKind::Anonymous) => (format!("{name}_[j]"), BasicPalette::Green),
            Some(MappingKind::File | MappingKind::Vdso) => {
                let m = mapping.map_or("", |m| m.short_name.as_str());
                let program = programs.iter().any(|c| is_program(m, c));
                let hue = if program {
                    BasicPalette::Hot
                } else {
                    LIBRARY_HUES[name_hash(m) as usize % LIBRARY_HUES.len()]
                };
                (name, hue)
            }
            None => {
                // Kernel code outside any mapping is annotated too.
                insert(&mut map, format!("{name}_[k]"), BasicPalette::Orange);
                (name, BasicPalette::Mem)
            }
        };
        insert(&mut map, name, hue);
    }
    map
}

/// Gives `name` a shade of `hue`, unless it has a colour already.
fn insert(map: &mut PaletteMap, name: String, hue: BasicPalette) {
    if map.get(&name).is_none() {
        let s = (name_hash(&name) % 1000) as f32 / 1000.0;
        map.insert(&name, shade(hue, s));
    }
}

/// Whether the mapping named `dso` is the program of a thread named `comm` (a command name
/// is the program's file name, cut to 15 bytes by the kernel).
pub(crate) fn is_program(dso: &str, comm: &str) -> bool {
    !comm.is_empty() && (dso == comm || (comm.len() >= 15 && dso.starts_with(comm)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use culprit_analysis::stacks::{Function, Mapping, ThreadInfo};

    fn mapping(path: &str, kind: MappingKind) -> Mapping {
        Mapping {
            path: path.to_string(),
            short_name: path.rsplit('/').next().unwrap().to_string(),
            build_id: None,
            kind,
            address_range: (0, 0),
        }
    }

    fn function(name: &str, mapping: u32, unknown: bool) -> Function {
        Function {
            name: name.to_string(),
            mapping,
            file: None,
            unknown,
        }
    }

    #[test]
    fn test_dso_palette_colours_kernel_program_libraries_and_unknown_code() {
        let profile = StackProfile {
            threads: vec![ThreadInfo {
                pid: 1,
                tid: 1,
                comm: "prog".to_string(),
            }],
            mappings: vec![
                mapping("[kernel.kallsyms]", MappingKind::Kernel),
                mapping("/usr/bin/prog", MappingKind::File),
                mapping("/usr/lib/libc.so.6", MappingKind::File),
                mapping("//anon", MappingKind::Anonymous),
            ],
            functions: vec![
                function("schedule", 0, false),
                function("main", 1, false),
                function("ns::f(int)", 1, false),
                function("memcpy", 2, false),
                function("[unknown]", 2, true),
                function("jitted", 3, false),
                function("[unknown]", NONE, true),
            ],
            ..StackProfile::default()
        };
        let map = dso_palette(&profile);
        let get = |name: &str| {
            map.get(name)
                .unwrap_or_else(|| panic!("no colour for {name}"))
        };
        // Kernel: orange (FlameGraph's), under the annotated name the folded stacks use.
        let k = get("schedule_[k]");
        assert!(k.r >= 190 && (90..=155).contains(&k.g) && k.b == 0, "{k:?}");
        assert!(map.get("schedule").is_none());
        // The program: red to yellow, names as the folded stacks write them.
        for name in ["main", "ns::f"] {
            let c = get(name);
            assert!(c.r >= 205 && c.b == 55, "{name}: {c:?}");
        }
        // A library: its own hue, not the program's; its unknown code by the file name.
        for name in ["memcpy", "[libc.so.6]"] {
            let c = get(name);
            assert!(!(c.r >= 205 && c.b == 55), "{name}: {c:?}");
        }
        let j = get("jitted_[j]");
        assert!(j.g >= 200 && j.r <= 60 && j.b <= 60, "{j:?}");
        // Outside any mapping: grey, or orange in the kernel.
        let u = get("[unknown]");
        assert!(u.r == u.g && u.g == u.b, "{u:?}");
        assert_eq!(get("[unknown]_[k]").b, 0);
        // The same names always get the same colours.
        assert_eq!(dso_palette(&profile), map);
    }

    #[test]
    fn test_leaf_name_ending_in_digits_is_not_read_as_a_count() {
        // The name `nl\nnext 999` as the folded stacks write it (newline escaped).
        let stacks = vec![("prog;nl\\x0anext 999".to_string(), 1234u64)];
        let lines = folded_lines(&stacks);
        let mut o = flamegraph::Options::default();
        let mut svg = Vec::new();
        draw(&mut o, lines.iter().map(String::as_str), &mut svg).unwrap();
        let svg = String::from_utf8(svg).unwrap();
        // One graph of 1,234 samples whose leaf keeps its whole name; no differential delta.
        assert!(
            svg.contains("nl\\x0anext\u{a0}999 (1,234 samples, 100.00%)"),
            "{svg}"
        );
        // The differential path parses the same lines.
        let text = folded_text(&stacks);
        assert!(text.ends_with("next\u{a0}999 1234\n"), "{text}");
    }

    #[test]
    fn test_search_color_is_far_from_every_dso_shade() {
        let hues = [
            BasicPalette::Hot,
            BasicPalette::Orange,
            BasicPalette::Mem,
            BasicPalette::Blue,
            BasicPalette::Aqua,
            BasicPalette::Purple,
            BasicPalette::Green,
            BasicPalette::Yellow,
        ];
        for hue in hues {
            for k in 0..=100 {
                let c = shade(hue, k as f32 / 100.0);
                let d = |a: u8, b: u8| (f64::from(a) - f64::from(b)).powi(2);
                let dist =
                    (d(c.r, SEARCH_COLOR.r) + d(c.g, SEARCH_COLOR.g) + d(c.b, SEARCH_COLOR.b))
                        .sqrt();
                assert!(dist >= 120.0, "{hue:?} shade {k}: {c:?} is {dist:.0} away");
            }
        }
    }

    #[test]
    fn test_colors_parse_dso_and_inferno_palettes() {
        assert_eq!(Colors::parse("dso"), Ok(Colors::Dso));
        assert!(matches!(Colors::parse("hot"), Ok(Colors::Palette(_))));
        assert!(matches!(Colors::parse("rust"), Ok(Colors::Palette(_))));
        let err = Colors::parse("nosuch").unwrap_err();
        assert!(err.contains("dso") && err.contains("java"), "{err}");
    }

    #[test]
    fn test_is_program_matches_the_command_name_cut_to_15_bytes() {
        assert!(is_program("prog", "prog"));
        assert!(is_program("a_very_long_program_name", "a_very_long_pro"));
        assert!(!is_program("libc.so.6", "prog"));
        assert!(!is_program("prog", ""));
    }
}
