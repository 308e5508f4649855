//! `--topdown` glue: `collect::stat::topdown` says what the host offers and counts,
//! `analysis::topdown` picks the model and plans its groups, `analysis::stat::topdown`
//! computes the report. Also the level-1 sampling events of `culprit record --topdown`.

use culprit_analysis::stat::{self as model, topdown as td_model, Count, CpuInfo, RunFacts};
use culprit_analysis::topdown::{self, EventDef, Model, TopdownError};
use culprit_collect::events::EventSpec;
use culprit_collect::launch::ChildExit;
use culprit_collect::stat::topdown::{self as counting, TopdownHost, TopdownOptions};
use culprit_collect::sysfs::CpuIdentity;
use culprit_collect::target::Target;

/// The CPU as the stat report names it.
pub fn cpu_info(cpu: &CpuIdentity) -> CpuInfo {
    CpuInfo {
        vendor: cpu.vendor.clone(),
        family: cpu.family,
        model: cpu.model,
        model_name: cpu.model_name.clone(),
        hypervisor: cpu.hypervisor,
    }
}

/// The facts of a counting run for the report: its target, the time of each run, how the
/// command ended, whether it was interrupted or counted user space only, and the CPU.
pub fn run_facts(
    target: &Target,
    elapsed_runs: &[std::time::Duration],
    exit: Option<ChildExit>,
    interrupted: bool,
    user_only: bool,
    cpu: Option<CpuInfo>,
) -> RunFacts {
    let (exit_code, signal) = match exit {
        Some(ChildExit::Exited(c)) => (Some(c), None),
        Some(ChildExit::Signaled(s)) => (None, Some(s)),
        None => (None, None),
    };
    RunFacts {
        target: target.describe(),
        elapsed_runs: elapsed_runs.iter().map(|d| d.as_nanos() as f64).collect(),
        exit_code,
        signal,
        interrupted,
        user_only,
        cpu,
    }
}

/// A collect reading as the model's count.
pub fn count_of(r: &culprit_collect::count::Reading) -> Count {
    Count {
        value: r.value,
        enabled_ns: r.enabled_ns,
        running_ns: r.running_ns,
    }
}

/// The Top-Down model of a host.
fn model_of(host: &TopdownHost) -> Result<Model, TopdownError> {
    topdown::model_for(
        &host.cpu.vendor,
        host.cpu.family,
        host.cpu.model,
        host.has_topdown_fe_bound,
        host.has_topdown_heavy_ops,
    )
}

fn spec_of(e: &EventDef) -> EventSpec {
    EventSpec::new(e.name.clone(), Some("cpu"), e.attr_type, e.config)
}

/// The level-1 events `culprit record --topdown` samples on this machine (each its own
/// sampling event; the periods recorded with every sample estimate the counts per function).
pub fn sampling_specs() -> anyhow::Result<Vec<EventSpec>> {
    let model = model_of(&counting::host("record")?)?;
    Ok(topdown::sampling_events(model)?
        .iter()
        .map(spec_of)
        .collect())
}

/// Counts this CPU's Top-Down groups on the target and computes the tree: the stat report
/// with its `topdown` object set; `Ok(Err(_))` when this CPU has no hand-written model
/// (its table's Top-Down metrics may then stand in).
pub fn run(
    target: Target,
    level: u8,
    no_multiplex: bool,
    repeat: u32,
    warn: &mut dyn FnMut(String),
) -> anyhow::Result<Result<model::StatReport, TopdownError>> {
    let opts = TopdownOptions {
        target,
        no_multiplex,
        repeat,
    };
    counting::check(&opts)?;
    let host = counting::host("stat")?;
    let model = match model_of(&host) {
        Ok(m) => m,
        Err(e @ TopdownError::Unsupported(_)) => return Ok(Err(e)),
        Err(e) => return Err(e.into()),
    };
    // How many general-purpose counters really count (6 on Zen, but 5 on our VMs).
    let counters = culprit_collect::support::usable_counters(8).usable;
    let plan = topdown::plan(model, level, counters)?;
    let groups: Vec<Vec<EventSpec>> = plan
        .groups
        .iter()
        .map(|g| g.iter().map(spec_of).collect())
        .collect();
    let counted = counting::count_groups(&groups, &opts, warn)?;
    let sums: Vec<Vec<Count>> = counted
        .sums
        .iter()
        .map(|g| g.iter().map(count_of).collect())
        .collect();
    let facts = run_facts(
        &opts.target,
        &counted.elapsed_runs,
        counted.exit,
        counted.interrupted,
        false,
        Some(cpu_info(&host.cpu)),
    );
    Ok(Ok(td_model::report(
        &plan,
        counters,
        no_multiplex,
        repeat,
        &sums,
        facts,
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use culprit_analysis::topdown::{event_def, Ev};
    use culprit_collect::events::EventParser;
    use culprit_collect::sysfs::Sysfs;

    use culprit_testkit::FakeSysfs;

    /// A sysfs `devices` tree with one `cpu` PMU (type 4) of these format files.
    fn fake_cpu_pmu(formats: &[(&str, &str)]) -> FakeSysfs {
        let sysfs = FakeSysfs::empty();
        sysfs.pmu("cpu", 4, formats, &[], &[]);
        sysfs
    }

    fn amd_cpu(model: Model) -> CpuIdentity {
        CpuIdentity {
            vendor: "AuthenticAMD".to_string(),
            family: if model == Model::Zen4 { 0x19 } else { 0x1A },
            model: if model == Model::Zen4 { 0x11 } else { 0x02 },
            stepping: 1,
            model_name: String::new(),
            hypervisor: false,
        }
    }

    /// Top-Down's event encodings (analysis::topdown::event_def, hand-written) equal what
    /// collect's tables give for the same names: Zen 4 and Zen 5 through an AMD `cpu` PMU,
    /// Skylake-class Intel through an Intel one (in verbs, where collect and analysis
    /// meet; collect does not see analysis).
    #[test]
    fn test_topdown_encodings_equal_the_tables() {
        let amd = fake_cpu_pmu(&[
            ("event", "config:0-7,32-35"),
            ("umask", "config:8-15"),
            ("edge", "config:18"),
            ("inv", "config:23"),
            ("cmask", "config:24-31"),
        ]);
        let intel = fake_cpu_pmu(&[
            ("event", "config:0-7"),
            ("umask", "config:8-15"),
            ("edge", "config:18"),
            ("pc", "config:19"),
            ("any", "config:21"),
            ("inv", "config:23"),
            ("cmask", "config:24-31"),
            ("offcore_rsp", "config1:0-63"),
            ("ldlat", "config1:0-15"),
            ("frontend", "config1:0-23"),
        ]);
        let cases = [
            (
                Model::Zen4,
                EventParser::new(Sysfs::at(&amd.root), Some(amd_cpu(Model::Zen4))),
            ),
            (
                Model::Zen5,
                EventParser::new(Sysfs::at(&amd.root), Some(amd_cpu(Model::Zen5))),
            ),
            (
                Model::IntelSkylake,
                EventParser::new(Sysfs::at(&intel.root), None).with_cpuid("GenuineIntel-6-55-4"),
            ),
        ];
        let keys = [
            Ev::Cycles,
            Ev::AmdFeNoOps,
            Ev::AmdBackendStalls,
            Ev::AmdSmtContention,
            Ev::AmdOpsDispatched,
            Ev::AmdRetOps,
            Ev::AmdBrMisp,
            Ev::AmdRestarts,
            Ev::AmdNotComplete,
            Ev::AmdLoadNotComplete,
            Ev::AmdUcodeOps,
            Ev::IntelIdqNotDelivered,
            Ev::IntelIdqCycles0,
            Ev::IntelUopsIssued,
            Ev::IntelRetireSlots,
            Ev::IntelMacroFused,
            Ev::IntelRecoveryCycles,
            Ev::IntelBrMisp,
            Ev::IntelMachineClears,
            Ev::IntelStallsMemAny,
            Ev::IntelStallsTotal,
            Ev::IntelBoundOnStores,
            Ev::IntelPorts1,
            Ev::IntelPorts2,
        ];
        let mut checked = 0;
        for (model, parser) in &cases {
            let table = parser.table().unwrap();
            for key in keys {
                let def = event_def(*model, key);
                // Only named table events of this model (generic `cycles` and `cpu/…/`
                // spellings are not table lookups).
                if table.event(&def.name).is_none() {
                    continue;
                }
                let spec = parser
                    .parse_event(&def.name)
                    .unwrap_or_else(|e| panic!("{model:?} {}: {e}", def.name));
                assert_eq!(
                    (spec.attr_type, spec.config),
                    (def.attr_type, def.config),
                    "{model:?} {}: Top-Down's encoding differs from the table's",
                    def.name
                );
                checked += 1;
            }
        }
        assert!(
            checked >= 20,
            "only {checked} Top-Down events found in the tables"
        );
    }
}
