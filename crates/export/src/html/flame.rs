//! The call tree of the page ([`FlameTree`]): the stack model's stacks, command first, merged
//! by frame per parent, every node weighed by the periods of the samples through it; nodes
//! too light to see in any event are pruned, so that the page stays small whatever the
//! number of distinct stacks.

use rustc_hash::FxHashMap;

use culprit_analysis::stacks::{MappingKind, StackProfile, NONE};

use super::model::{FlameTree, Frame, FrameKind};
use crate::common::frame_name;

/// Nodes lighter than this share of every event's total are pruned.
pub const MIN_FRACTION: f64 = 1e-5;

/// At most this many nodes are kept: when more reach [`MIN_FRACTION`], the threshold is
/// raised to the weight of the last one kept.
pub const MAX_NODES: usize = 40_000;

/// Per (thread, stack) of the samples: the call-tree node its samples weigh on (the deepest
/// node kept by the pruning) and its leaf frame (the sampled function).
pub type LeafOf = FxHashMap<(u32, u32), (u32, u32)>;

/// The call tree of `profile` and where each (thread, stack) landed in it; `columns[e]` is
/// the page's event column of the profile's event `e` (`None`: not shown), `ncols` the
/// number of page columns.
pub fn flame_tree(
    profile: &StackProfile,
    columns: &[Option<usize>],
    ncols: usize,
) -> (FlameTree, LeafOf) {
    let programs: Vec<&str> = profile.threads.iter().map(|t| t.comm.as_str()).collect();
    // The SVG flame graph's colours (`culprit flamegraph`): one scheme for both.
    let palette = crate::flamegraph::dso_palette(profile);
    let mut frames: Vec<Frame> = Vec::new();
    let mut frame_of: FxHashMap<(String, String, u8), u32> = FxHashMap::default();
    let mut intern = |frames: &mut Vec<Frame>, name: String, dso: String, kind: FrameKind| {
        let key = (name, dso, kind as u8);
        if let Some(&f) = frame_of.get(&key) {
            return f;
        }
        let color = (kind != FrameKind::Comm)
            .then(|| {
                let k = crate::flamegraph::palette_key(
                    &key.0,
                    kind == FrameKind::Kernel,
                    kind == FrameKind::Jit,
                );
                palette.get(&k)
            })
            .flatten()
            .map(|c| format!("#{:02x}{:02x}{:02x}", c.r, c.g, c.b));
        frames.push(Frame {
            name: key.0.clone(),
            dso: key.1.clone(),
            kind,
            color,
        });
        let f = (frames.len() - 1) as u32;
        frame_of.insert(key, f);
        f
    };
    // Each function's frame (by kernel or not: code outside any mapping can be either).
    let mut function_frame: FxHashMap<(u32, bool), u32> = FxHashMap::default();
    let comm_frames: Vec<u32> = profile
        .threads
        .iter()
        .map(|t| intern(&mut frames, t.comm.clone(), String::new(), FrameKind::Comm))
        .collect();

    // The tree: node 0 the root; children found by (parent, frame).
    let mut parent: Vec<u32> = vec![NONE];
    let mut frame: Vec<u32> = vec![NONE];
    let mut value: Vec<Vec<u64>> = vec![vec![0]; ncols];
    let mut child: FxHashMap<(u32, u32), u32> = FxHashMap::default();
    // Page node of each (thread, stack node) seen: stacks share their prefixes.
    let mut node_of: FxHashMap<(u32, u32), (u32, u32)> = FxHashMap::default();
    let mut path: Vec<u32> = Vec::new();
    for s in &profile.samples {
        let Some(col) = columns.get(s.event as usize).copied().flatten() else {
            continue;
        };
        let Some(&comm) = comm_frames.get(s.thread as usize) else {
            continue;
        };
        let leaf = match node_of.get(&(s.thread, s.stack)) {
            Some(&(n, _)) => n,
            None => {
                path.clear();
                path.push(comm);
                for (lf, loc) in profile.stack_frames(s.stack) {
                    let f = *function_frame
                        .entry((lf.function, loc.kernel))
                        .or_insert_with(|| {
                            let (name, dso, kind) =
                                describe(profile, &programs, lf.function, loc.kernel);
                            intern(&mut frames, name, dso, kind)
                        });
                    path.push(f);
                }
                let mut n = 0u32;
                for &f in &path {
                    n = *child.entry((n, f)).or_insert_with(|| {
                        parent.push(n);
                        frame.push(f);
                        for v in value.iter_mut() {
                            v.push(0);
                        }
                        (parent.len() - 1) as u32
                    });
                }
                node_of.insert(
                    (s.thread, s.stack),
                    (n, path.last().copied().unwrap_or(comm)),
                );
                n
            }
        };
        // The weight goes to the leaf and every node above it.
        let v = &mut value[col];
        let mut n = leaf;
        while n != NONE {
            v[n as usize] += s.period;
            n = parent[n as usize];
        }
    }
    let (tree, kept) = prune(frames, parent, frame, value);
    for (node, _) in node_of.values_mut() {
        *node = kept[*node as usize];
    }
    (tree, node_of)
}

/// A function's frame: its name (the file's name for code without a symbol), DSO and kind.
fn describe(
    profile: &StackProfile,
    programs: &[&str],
    function: u32,
    kernel: bool,
) -> (String, String, FrameKind) {
    let name = frame_name(profile, function).into_owned();
    let mapping = profile
        .functions
        .get(function as usize)
        .and_then(|f| profile.mapping(f.mapping));
    let dso = mapping.map(|m| m.short_name.clone()).unwrap_or_default();
    let kind = match mapping.map(|m| m.kind) {
        _ if kernel => FrameKind::Kernel,
        Some(MappingKind::Kernel | MappingKind::KernelModule) => FrameKind::Kernel,
        Some(MappingKind::Anonymous) => FrameKind::Jit,
        Some(MappingKind::File | MappingKind::Vdso) => {
            if programs
                .iter()
                .any(|c| crate::flamegraph::is_program(&dso, c))
            {
                FrameKind::Program
            } else {
                FrameKind::Library
            }
        }
        None => FrameKind::Unknown,
    };
    (name, dso, kind)
}

/// Drops the nodes below the threshold (their weight stays in their parents' totals) and
/// renumbers the rest, parents first; also gives, per node before pruning, its new number or
/// that of its nearest kept ancestor.
fn prune(
    frames: Vec<Frame>,
    parent: Vec<u32>,
    frame: Vec<u32>,
    value: Vec<Vec<u64>>,
) -> (FlameTree, Vec<u32>) {
    let n = parent.len();
    // Each node's largest share of an event's total (the root: 1).
    let totals: Vec<u64> = value
        .iter()
        .map(|v| v.first().copied().unwrap_or(0))
        .collect();
    let share: Vec<f64> = (0..n)
        .map(|i| {
            value
                .iter()
                .zip(&totals)
                .filter(|(_, &t)| t > 0)
                .map(|(v, &t)| v[i] as f64 / t as f64)
                .fold(0.0, f64::max)
        })
        .collect();
    let mut min = MIN_FRACTION;
    let heavy = share.iter().filter(|&&s| s >= min).count();
    if heavy > MAX_NODES {
        // A child never outweighs its parent: the kept nodes stay a tree.
        let mut sorted = share.clone();
        sorted.sort_unstable_by(|a, b| b.total_cmp(a));
        min = sorted[MAX_NODES - 1].max(min);
    }
    let mut new_id = vec![NONE; n];
    let mut kept = vec![0u32; n];
    let mut out = FlameTree {
        frames,
        value: vec![Vec::new(); value.len()],
        min_fraction: min,
        ..FlameTree::default()
    };
    for i in 0..n {
        let p = parent[i];
        let keep = i == 0 || (share[i] >= min && p != NONE && new_id[p as usize] != NONE);
        if !keep || out.parent.len() >= MAX_NODES {
            out.pruned += 1;
            // Parents come first: the parent's kept node is known.
            kept[i] = if p == NONE { 0 } else { kept[p as usize] };
            continue;
        }
        new_id[i] = out.parent.len() as u32;
        kept[i] = new_id[i];
        out.parent.push(if p == NONE {
            -1
        } else {
            i64::from(new_id[p as usize])
        });
        out.frame.push(if frame[i] == NONE {
            -1
        } else {
            i64::from(frame[i])
        });
        for (o, v) in out.value.iter_mut().zip(&value) {
            o.push(v[i]);
        }
    }
    (out, kept)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil;

    #[test]
    fn test_flame_tree_sums_each_stack_into_its_nodes_and_the_root() {
        let p = testutil::profile();
        let cols: Vec<Option<usize>> = (0..p.events.len()).map(Some).collect();
        let (t, leaves) = flame_tree(&p, &cols, p.events.len());
        for s in &p.samples {
            let (node, frame) = leaves[&(s.thread, s.stack)];
            assert!((node as usize) < t.parent.len());
            assert!((frame as usize) < t.frames.len());
        }
        assert_eq!(t.parent[0], -1);
        for (e, ev) in p.events.iter().enumerate() {
            assert_eq!(t.value[e][0], ev.period, "root of event {e}");
            // A node weighs at least the sum of its children.
            for i in 1..t.parent.len() {
                let kids: u64 = (0..t.parent.len())
                    .filter(|&c| t.parent[c] == i as i64)
                    .map(|c| t.value[e][c])
                    .sum();
                assert!(kids <= t.value[e][i], "node {i} event {e}");
            }
        }
        // Every node's parent comes first; the root's children are commands.
        for i in 1..t.parent.len() {
            assert!((t.parent[i] as usize) < i);
            if t.parent[i] == 0 {
                assert_eq!(t.frames[t.frame[i] as usize].kind, FrameKind::Comm);
            }
        }
    }

    #[test]
    fn test_prune_keeps_a_tree_and_counts_what_it_drops() {
        // root -> a (1000) -> b (1) ; root -> c (9)
        let frames = vec![];
        let parent = vec![NONE, 0, 1, 0];
        let frame = vec![NONE, 0, 1, 2];
        let value = vec![vec![1_000_000, 999_990, 1, 10]];
        let (t, kept) = prune(frames, parent, frame, value);
        // b's samples weigh on a, its kept parent.
        assert_eq!(kept, vec![0, 1, 1, 2]);
        // b weighs 1e-6 of the total: pruned; c 1e-5: kept.
        assert_eq!(t.parent, vec![-1, 0, 0]);
        assert_eq!(t.value[0], vec![1_000_000, 999_990, 10]);
        assert_eq!(t.pruned, 1);
    }
}
