//! From counts to the tree of slot fractions: thresholds, reliability, the critical
//! bottleneck and hints ([`compute`]).

use serde::Serialize;

use super::*;

/// One counted value with its enabled/running times.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Count {
    /// Raw count.
    pub value: u64,
    /// Nanoseconds enabled.
    pub enabled_ns: u64,
    /// Nanoseconds running.
    pub running_ns: u64,
}

impl Count {
    /// running/enabled in 0..=1 (1 when never enabled).
    pub fn fraction(&self) -> f64 {
        if self.enabled_ns == 0 {
            1.0
        } else {
            (self.running_ns as f64 / self.enabled_ns as f64).min(1.0)
        }
    }

    /// The count scaled to the enabled time (0 when it never ran).
    pub fn scaled(&self) -> f64 {
        if self.running_ns == 0 || self.running_ns >= self.enabled_ns {
            if self.running_ns == 0 && self.enabled_ns > 0 {
                return 0.0;
            }
            return self.value as f64;
        }
        self.value as f64 * self.enabled_ns as f64 / self.running_ns as f64
    }
}

/// The counts of one formula: raw values when it lives in one group, scaled otherwise.
struct FormulaCounts {
    values: Vec<(Ev, f64)>,
    /// Reference (cycles/slots) of the formula's first group, on the same footing.
    reference: f64,
    reliability: f64,
}

impl FormulaCounts {
    fn get(&self, e: Ev) -> f64 {
        self.values
            .iter()
            .find(|(k, _)| *k == e)
            .map_or(0.0, |(_, v)| *v)
    }
}

fn formula_counts(plan: &Plan, counts: &[Vec<Count>], f: Formula) -> Option<FormulaCounts> {
    let groups = &plan.placement.iter().find(|(g, _)| *g == f)?.1;
    let split = groups.len() > 1;
    let mut values = Vec::new();
    let mut reliability: f64 = 1.0;
    let mut reference = None;
    for &gi in groups {
        let defs = plan.groups.get(gi)?;
        let cs = counts.get(gi)?;
        for (d, c) in defs.iter().zip(cs) {
            reliability = reliability.min(c.fraction());
            // Inside one group the raw counts share one time base: no scaling (and none of
            // its error). Across groups, scaled counts only.
            let v = if split { c.scaled() } else { c.value as f64 };
            if d.key == Ev::Cycles || d.key == Ev::Slots {
                reference.get_or_insert(v);
            }
            if !values.iter().any(|(k, _)| *k == d.key) {
                values.push((d.key, v));
            }
        }
    }
    // Groups counted over different windows only disagree when they were multiplexed.
    if split && reliability < 1.0 {
        reliability *= SPLIT_PENALTY;
    }
    Some(FormulaCounts {
        values,
        reference: reference.unwrap_or(0.0),
        reliability,
    })
}

fn div(a: f64, b: f64) -> f64 {
    if b == 0.0 {
        0.0
    } else {
        a / b
    }
}

/// Level-1 fractions of pipeline slots (0..1).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Level1 {
    /// Slots lost because the frontend supplied nothing.
    pub frontend_bound: f64,
    /// Slots spent on ops that never retired.
    pub bad_speculation: f64,
    /// Slots lost because the backend could not accept ops.
    pub backend_bound: f64,
    /// Slots that retired ops.
    pub retiring: f64,
    /// Slots given to the other SMT thread (AMD; 0 on Intel).
    pub smt_contention: f64,
}

impl Level1 {
    /// The sum of the five fractions (1 by construction within one group).
    pub fn sum(&self) -> f64 {
        self.frontend_bound
            + self.bad_speculation
            + self.backend_bound
            + self.retiring
            + self.smt_contention
    }
}

/// What a node measures, for thresholds and hints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Frontend bound.
    Frontend,
    /// Fetch latency.
    FetchLatency,
    /// Fetch bandwidth.
    FetchBandwidth,
    /// Bad speculation.
    BadSpeculation,
    /// Branch mispredicts.
    Mispredicts,
    /// Machine clears / pipeline restarts.
    Restarts,
    /// Backend bound.
    Backend,
    /// Memory bound.
    Memory,
    /// Core bound.
    Core,
    /// Retiring.
    Retiring,
    /// Heavy operations / microcode.
    Heavy,
    /// Light operations / fast path.
    Light,
    /// SMT contention.
    Smt,
}

/// A node of the Top-Down tree.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Node {
    /// Metric name (`frontend_bound`, `memory`, …).
    pub name: String,
    /// Fraction of pipeline slots.
    pub value: f64,
    /// Above its threshold (and its parent flagged, and not mismeasured).
    pub flagged: bool,
    /// 0..=1, see the module docs.
    pub reliability: f64,
    /// reliability < 0.7.
    pub unreliable: bool,
    /// Outside (-0.05, 1.05): a measurement problem, never flagged.
    pub mismeasured: bool,
    /// On the path to the critical bottleneck (the last one is the bottleneck).
    pub critical: bool,
    /// The threshold it is compared with (None: never flagged).
    pub threshold: Option<f64>,
    /// What it measures.
    pub role: Role,
    /// One line: what it usually means, what to try, which culprit command drills down
    /// (only for flagged nodes).
    pub hint: Option<String>,
    /// Level-2 children.
    pub children: Vec<Node>,
}

/// The result of a Top-Down analysis.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Topdown {
    /// Model name.
    pub model: String,
    /// Level computed.
    pub level: u8,
    /// Level-1 fractions.
    pub level1: Level1,
    /// The tree (level-1 nodes, with children at level 2).
    pub tree: Vec<Node>,
    /// The critical bottleneck's name, when something is flagged.
    pub bottleneck: Option<String>,
    /// The label of the thresholds used.
    pub thresholds: String,
}

/// The Intel TMA threshold of a node (topdown.md section 4), and whether a child needs its
/// parent flagged (always, by the drill-down rule).
pub fn threshold(role: Role) -> Option<f64> {
    match role {
        Role::Frontend => Some(0.15),
        Role::FetchLatency => Some(0.10),
        Role::FetchBandwidth => Some(0.20),
        Role::BadSpeculation => Some(0.15),
        Role::Mispredicts => Some(0.10),
        Role::Restarts => Some(0.10),
        Role::Backend => Some(0.20),
        Role::Memory => Some(0.20),
        Role::Core => Some(0.10),
        Role::Retiring => Some(0.70),
        Role::Heavy => Some(0.10),
        Role::Light => Some(0.60),
        // TMA has no SMT node: reported, never flagged.
        Role::Smt => None,
    }
}

/// The one-line hint of a node for a model.
pub fn hint(model: Model, role: Role) -> String {
    let amd = model.is_amd();
    let pick = |a: &str, i: &str| if amd { a.to_string() } else { i.to_string() };
    match role {
        Role::Frontend => format!(
            "instruction supply starves dispatch (i-cache/iTLB misses, decode limits): shrink or reorder hot code (PGO/LTO); drill down: `culprit stat --topdown --level 2 -- CMD`, then `culprit record -e {} -- CMD` + `culprit annotate`",
            pick("ic_tag_hit_miss.instruction_cache_miss", "L1-icache-load-misses")
        ),
        Role::FetchLatency => format!(
            "fetch stalls (i-cache/iTLB misses, branch resteers): improve code locality, fewer indirect branches; drill down: `culprit record -e {} -- CMD` + `culprit annotate`",
            pick("ic_tag_hit_miss.instruction_cache_miss", "L1-icache-load-misses")
        ),
        Role::FetchBandwidth => format!(
            "the frontend delivers too few ops per cycle (op-cache misses, decoder limits): tighten hot loops; drill down: `culprit record -e {} -- CMD` + `culprit annotate`",
            pick("op_cache_hit_miss.op_cache_miss", "cycles")
        ),
        Role::BadSpeculation => format!(
            "work thrown away after mispredictions or restarts: make branches predictable (branchless code, sorted data); drill down: `culprit record -e {} -- CMD` + `culprit annotate`",
            pick("ex_ret_brn_misp", "branch-misses")
        ),
        Role::Mispredicts => format!(
            "branch mispredictions: use branchless selects, sort or partition the data, hint likely paths; drill down: `culprit record -e {} -- CMD` + `culprit annotate`",
            pick("ex_ret_brn_misp", "branch-misses")
        ),
        Role::Restarts => format!(
            "pipeline restarts (memory-ordering clears, self-modifying code, false sharing): look for shared written lines; drill down: `culprit record -e {} -- CMD` + `culprit annotate`",
            match model {
                Model::Zen4 => "resyncs_or_nc_redirects",
                Model::Zen5 => "bp_redirects.resync",
                _ => "machine_clears.count (raw r10401c3)",
            }
        ),
        Role::Backend => "the backend cannot accept ops (waiting for data or execution units): drill down: `culprit stat --topdown --level 2 -- CMD`".to_string(),
        Role::Memory => format!(
            "loads wait for cache/DRAM misses: improve locality (blocking, smaller/denser data, prefetch); drill down: `culprit record -e {} -- CMD` + `culprit annotate`",
            pick("ls_any_fills_from_sys.all", "L1-dcache-load-misses")
        ),
        Role::Core => "execution units or dependency chains limit (divides, long latency ops): break dependency chains, vectorize; drill down: `culprit record -e cycles -- CMD` + `culprit annotate`".to_string(),
        Role::Retiring => "most slots do useful work: speed now comes from doing less work (better algorithm, vectorization); `culprit record -e instructions -- CMD` shows where".to_string(),
        Role::Heavy => format!(
            "microcoded/multi-op instructions (divides, gathers, string ops): replace them in hot code; drill down: `culprit record -e {} -- CMD` + `culprit annotate`",
            pick("ex_ret_ucode_ops", "instructions")
        ),
        Role::Light => "many simple ops: vectorize or reduce the instruction count; `culprit record -e instructions -- CMD` + `culprit annotate`".to_string(),
        Role::Smt => "the sibling SMT thread took dispatch slots: pin threads to separate cores (taskset) or disable SMT".to_string(),
    }
}

/// A node before flagging.
struct Raw {
    name: &'static str,
    role: Role,
    value: f64,
    reliability: f64,
    children: Vec<Raw>,
}

fn leaf(name: &'static str, role: Role, value: f64, reliability: f64) -> Raw {
    Raw {
        name,
        role,
        value,
        reliability,
        children: Vec::new(),
    }
}

/// Splits a parent into two children by an in-group share.
fn split(
    parent: &Raw,
    share: f64,
    rel: f64,
    a: (&'static str, Role),
    b: (&'static str, Role),
) -> Vec<Raw> {
    let r = parent.reliability.min(rel);
    vec![
        leaf(a.0, a.1, parent.value * share, r),
        leaf(b.0, b.1, parent.value * (1.0 - share), r),
    ]
}

/// What a model's level-1 and level-2 nodes are computed from: the counts of the plan's
/// formulas (`None`: not counted), the model's width in slots a cycle, and whether level 2
/// is wanted.
struct Inputs<'a> {
    fc: &'a dyn Fn(Formula) -> Option<FormulaCounts>,
    w: f64,
    l2: bool,
}

/// AMD Zen 4/5 (PPR's pipeline utilization): level 1 from dispatch slots, level 2 by
/// splitting each node with a ratio of its own events.
fn amd_nodes(inp: &Inputs) -> Vec<Raw> {
    let (fc, w, l2) = (inp.fc, inp.w, inp.l2);
    let frac = |f: Formula, num: &dyn Fn(&FormulaCounts) -> f64| -> (f64, f64) {
        fc(f).map_or((0.0, 0.0), |c| {
            (div(num(&c), w * c.reference), c.reliability)
        })
    };
    let (fe, fe_r) = frac(Formula::AmdFe, &|c| c.get(Ev::AmdFeNoOps));
    let (be, be_r) = frac(Formula::AmdBe, &|c| c.get(Ev::AmdBackendStalls));
    let (smt, smt_r) = frac(Formula::AmdSmt, &|c| c.get(Ev::AmdSmtContention));
    let (ret, ret_r) = frac(Formula::AmdRet, &|c| c.get(Ev::AmdRetOps));
    let (bs, bs_r) = frac(Formula::AmdBs, &|c| {
        c.get(Ev::AmdOpsDispatched) - c.get(Ev::AmdRetOps)
    });
    let mut fe_n = leaf("frontend_bound", Role::Frontend, fe, fe_r);
    let mut bs_n = leaf("bad_speculation", Role::BadSpeculation, bs, bs_r);
    let mut be_n = leaf("backend_bound", Role::Backend, be, be_r);
    let mut ret_n = leaf("retiring", Role::Retiring, ret, ret_r);
    let smt_n = leaf("smt_contention", Role::Smt, smt, smt_r);
    if l2 {
        if let Some(c) = fc(Formula::AmdFeSplit) {
            let share = div(w * c.get(Ev::AmdFeNoOpsCmask), c.get(Ev::AmdFeNoOps));
            fe_n.children = split(
                &fe_n,
                share,
                c.reliability,
                ("latency", Role::FetchLatency),
                ("bandwidth", Role::FetchBandwidth),
            );
        }
        if let Some(c) = fc(Formula::AmdBsSplit) {
            let m = c.get(Ev::AmdBrMisp);
            let share = div(m, m + c.get(Ev::AmdRestarts));
            bs_n.children = split(
                &bs_n,
                share,
                c.reliability,
                ("mispredicts", Role::Mispredicts),
                ("pipeline_restarts", Role::Restarts),
            );
        }
        if let Some(c) = fc(Formula::AmdBeSplit) {
            let share = div(c.get(Ev::AmdLoadNotComplete), c.get(Ev::AmdNotComplete));
            be_n.children = split(
                &be_n,
                share,
                c.reliability,
                ("memory", Role::Memory),
                ("cpu", Role::Core),
            );
        }
        if let Some(c) = fc(Formula::AmdRetSplit) {
            let share = 1.0 - div(c.get(Ev::AmdUcodeOps), c.get(Ev::AmdRetOps));
            ret_n.children = split(
                &ret_n,
                share,
                c.reliability,
                ("fastpath", Role::Light),
                ("microcode", Role::Heavy),
            );
        }
    }
    vec![fe_n, bs_n, be_n, ret_n, smt_n]
}

/// Intel Skylake-style TMA from counters: backend_bound is the remainder of the others.
fn skylake_nodes(inp: &Inputs) -> Vec<Raw> {
    let (fc, w, l2) = (inp.fc, inp.w, inp.l2);
    let slots = |c: &FormulaCounts| w * c.reference;
    let (fe, fe_r) = fc(Formula::SklFe).map_or((0.0, 0.0), |c| {
        (
            div(c.get(Ev::IntelIdqNotDelivered), slots(&c)),
            c.reliability,
        )
    });
    let (bs, bs_r) = fc(Formula::SklBs).map_or((0.0, 0.0), |c| {
        (
            div(
                c.get(Ev::IntelUopsIssued) - c.get(Ev::IntelRetireSlots)
                    + w * c.get(Ev::IntelRecoveryCycles),
                slots(&c),
            ),
            c.reliability,
        )
    });
    let (ret, ret_r) = fc(Formula::SklRet).map_or((0.0, 0.0), |c| {
        (div(c.get(Ev::IntelRetireSlots), slots(&c)), c.reliability)
    });
    // TMA defines backend_bound as the remainder.
    let be = 1.0 - fe - bs - ret;
    let be_r = fe_r.min(bs_r).min(ret_r);
    let mut fe_n = leaf("frontend_bound", Role::Frontend, fe, fe_r);
    let mut bs_n = leaf("bad_speculation", Role::BadSpeculation, bs, bs_r);
    let mut be_n = leaf("backend_bound", Role::Backend, be, be_r);
    let mut ret_n = leaf("retiring", Role::Retiring, ret, ret_r);
    if l2 {
        if let Some(c) = fc(Formula::SklFeSplit) {
            let share = div(
                w * c.get(Ev::IntelIdqCycles0),
                c.get(Ev::IntelIdqNotDelivered),
            );
            fe_n.children = split(
                &fe_n,
                share,
                c.reliability,
                ("fetch_latency", Role::FetchLatency),
                ("fetch_bandwidth", Role::FetchBandwidth),
            );
        }
        if let Some(c) = fc(Formula::SklBsSplit) {
            let m = c.get(Ev::IntelBrMisp);
            let share = div(m, m + c.get(Ev::IntelMachineClears));
            bs_n.children = split(
                &bs_n,
                share,
                c.reliability,
                ("branch_mispredicts", Role::Mispredicts),
                ("machine_clears", Role::Restarts),
            );
        }
        if let Some(c) = fc(Formula::SklBeSplit) {
            let stores = c.get(Ev::IntelBoundOnStores);
            let share = div(
                c.get(Ev::IntelStallsMemAny) + stores,
                c.get(Ev::IntelStallsTotal)
                    + c.get(Ev::IntelPorts1)
                    + ret * c.get(Ev::IntelPorts2)
                    + stores,
            );
            be_n.children = split(
                &be_n,
                share,
                c.reliability.min(ret_r),
                ("memory_bound", Role::Memory),
                ("core_bound", Role::Core),
            );
        }
        if let Some(c) = fc(Formula::SklRetSplit) {
            let heavy = div(
                c.get(Ev::IntelRetireSlots) + c.get(Ev::IntelMacroFused) - c.get(Ev::Instructions),
                slots(&c),
            );
            let r = ret_n.reliability.min(c.reliability);
            ret_n.children = vec![
                leaf("light_operations", Role::Light, ret - heavy, r),
                leaf("heavy_operations", Role::Heavy, heavy, r),
            ];
        }
    }
    vec![fe_n, bs_n, be_n, ret_n]
}

/// Intel's PERF_METRICS counter (Ice Lake and later): every node read as a share of slots.
fn perf_metrics_nodes(inp: &Inputs) -> Vec<Raw> {
    let (fc, l2) = (inp.fc, inp.l2);
    let c = fc(Formula::PerfMetrics);
    let r = c.as_ref().map_or(0.0, |c| c.reliability);
    let f = |e: Ev| c.as_ref().map_or(0.0, |c| div(c.get(e), c.reference));
    let (fe, bs, be, ret) = (
        f(Ev::TdFeBound),
        f(Ev::TdBadSpec),
        f(Ev::TdBeBound),
        f(Ev::TdRetiring),
    );
    let mut fe_n = leaf("frontend_bound", Role::Frontend, fe, r);
    let mut bs_n = leaf("bad_speculation", Role::BadSpeculation, bs, r);
    let mut be_n = leaf("backend_bound", Role::Backend, be, r);
    let mut ret_n = leaf("retiring", Role::Retiring, ret, r);
    if l2 {
        let (fl, bm, mb, hv) = (
            f(Ev::TdFetchLat),
            f(Ev::TdBrMispredict),
            f(Ev::TdMemBound),
            f(Ev::TdHeavyOps),
        );
        fe_n.children = vec![
            leaf("fetch_latency", Role::FetchLatency, fl, r),
            leaf("fetch_bandwidth", Role::FetchBandwidth, fe - fl, r),
        ];
        bs_n.children = vec![
            leaf("branch_mispredicts", Role::Mispredicts, bm, r),
            leaf("machine_clears", Role::Restarts, bs - bm, r),
        ];
        be_n.children = vec![
            leaf("memory_bound", Role::Memory, mb, r),
            leaf("core_bound", Role::Core, be - mb, r),
        ];
        ret_n.children = vec![
            leaf("light_operations", Role::Light, ret - hv, r),
            leaf("heavy_operations", Role::Heavy, hv, r),
        ];
    }
    vec![fe_n, bs_n, be_n, ret_n]
}

/// Computes the Top-Down tree from the counts of `plan`'s groups (`counts[g][i]` is the count
/// of `plan.groups[g][i]`). Groups may come from one multiplexed run or from one run each
/// (`--no-multiplex`): every ratio uses counts of one group.
pub fn compute(plan: &Plan, counts: &[Vec<Count>]) -> Topdown {
    let model = plan.model;
    let fc = |f| formula_counts(plan, counts, f);
    let inp = Inputs {
        fc: &fc,
        w: model.width() as f64,
        l2: plan.level >= 2,
    };
    let nodes = match model {
        Model::Zen4 | Model::Zen5 => amd_nodes(&inp),
        Model::IntelSkylake => skylake_nodes(&inp),
        Model::IntelPerfMetrics { .. } => perf_metrics_nodes(&inp),
    };
    let value_of = |name: &str| {
        nodes
            .iter()
            .find(|n| n.name == name)
            .map_or(0.0, |n| n.value)
    };
    let level1 = Level1 {
        frontend_bound: value_of("frontend_bound"),
        bad_speculation: value_of("bad_speculation"),
        backend_bound: value_of("backend_bound"),
        retiring: value_of("retiring"),
        smt_contention: value_of("smt_contention"),
    };
    let mut tree: Vec<Node> = nodes.into_iter().map(|n| flag(model, n, true)).collect();
    let bottleneck = mark_bottleneck(&mut tree);
    Topdown {
        model: model.name().to_string(),
        level: plan.level,
        level1,
        tree,
        bottleneck,
        thresholds: model.thresholds_label().to_string(),
    }
}

fn valid(v: f64) -> bool {
    v > VALID_RANGE.0 && v < VALID_RANGE.1
}

fn flag(model: Model, raw: Raw, parent_flagged: bool) -> Node {
    let th = threshold(raw.role);
    let mismeasured = !valid(raw.value);
    let mut flagged = parent_flagged && !mismeasured && th.is_some_and(|t| raw.value > t);
    // Retiring is also flagged when its heavy-operations child is over its threshold.
    if raw.role == Role::Retiring && !mismeasured {
        flagged |= raw.children.iter().any(|c| {
            c.role == Role::Heavy
                && valid(c.value)
                && threshold(Role::Heavy).is_some_and(|t| c.value > t)
        });
    }
    let children: Vec<Node> = raw
        .children
        .into_iter()
        .map(|c| flag(model, c, flagged))
        .collect();
    Node {
        name: raw.name.to_string(),
        value: raw.value,
        flagged,
        reliability: raw.reliability,
        unreliable: raw.reliability < UNRELIABLE_BELOW,
        mismeasured,
        critical: false,
        threshold: th,
        role: raw.role,
        // With level-2 children present, point at them instead of "rerun at level 2".
        hint: flagged.then(|| {
            if raw.role == Role::Backend && !children.is_empty() {
                "the backend cannot accept ops (waiting for data or execution units): see its \
                 level-2 children below"
                    .to_string()
            } else {
                hint(model, raw.role)
            }
        }),
        children,
    }
}

/// Descends into the highest flagged sibling at each level, stopping when there is none or
/// when the two highest flagged siblings are within [`BOTTLENECK_MARGIN`] (then the parent is
/// the bottleneck; at the top the higher one is taken). Marks the path `critical`.
fn mark_bottleneck(tree: &mut [Node]) -> Option<String> {
    let mut level: &mut [Node] = tree;
    let mut found: Option<String> = None;
    let mut top = true;
    loop {
        let mut flagged: Vec<usize> = (0..level.len()).filter(|&i| level[i].flagged).collect();
        flagged.sort_by(|&a, &b| level[b].value.total_cmp(&level[a].value));
        let Some(&best) = flagged.first() else {
            break;
        };
        if !top {
            if let Some(&second) = flagged.get(1) {
                if level[best].value - level[second].value <= BOTTLENECK_MARGIN {
                    break;
                }
            }
        }
        level[best].critical = true;
        found = Some(level[best].name.clone());
        let ambiguous_top = top
            && flagged
                .get(1)
                .is_some_and(|&s| level[best].value - level[s].value <= BOTTLENECK_MARGIN);
        if ambiguous_top {
            break;
        }
        top = false;
        level = &mut level[best].children;
    }
    found
}
