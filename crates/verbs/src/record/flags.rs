//! perf's spellings of `culprit record`'s flags read into `culprit_collect`'s types: the
//! recording modes, the call-graph spec, the `-e` event lists with `--ibs`'s events, and
//! `--off-cpu`'s value. Each error names the flag it is about, as the command line spells it.

use std::time::Duration;

use anyhow::{bail, Context};
use culprit_collect::events::{self, EventSpec};
use culprit_collect::modes::{self, RecordModes};
use culprit_collect::record::{self, CallGraph};

/// The flags of the recording modes, as given: `-z`, `--compression-level`, `--duration`,
/// `--max-size`, `--switch-output`, `--switch-max-files`, `--overwrite`.
#[derive(Debug, Clone, Default)]
pub struct ModeFlags {
    /// `-z`: zstd level 1 (unless `compression_level` is given).
    pub z: bool,
    /// `--compression-level N`.
    pub compression_level: Option<u32>,
    /// `--duration SECONDS`.
    pub duration: Option<f64>,
    /// `--max-size SIZE` (`500M`).
    pub max_size: Option<String>,
    /// `--switch-output[=signal|SIZE|TIME]` (`signal` when given without a value).
    pub switch_output: Option<String>,
    /// `--switch-max-files N`.
    pub switch_max_files: Option<usize>,
    /// `--overwrite`: the flight recorder.
    pub overwrite: bool,
}

/// The recording modes of the flags. A command read as `--switch-output`'s value is the
/// error to name first, so callers read the modes before anything else.
pub fn modes(flags: &ModeFlags) -> anyhow::Result<RecordModes> {
    let duration = match flags.duration {
        None => None,
        Some(s) if s.is_finite() && s > 0.0 && s < 1e9 => Some(Duration::from_secs_f64(s)),
        Some(s) => bail!("--duration {s}: expected a number of seconds > 0"),
    };
    let max_size = flags
        .max_size
        .as_deref()
        .map(modes::parse_size)
        .transpose()
        .map_err(|e| anyhow::anyhow!("--max-size {e}"))?;
    let switch_output = flags
        .switch_output
        .as_deref()
        .map(modes::parse_switch_output)
        .transpose()
        .map_err(|e| anyhow::anyhow!(e))?;
    Ok(RecordModes {
        compression_level: flags.compression_level.or(flags.z.then_some(1)),
        duration,
        max_size,
        switch_output,
        switch_max_files: flags.switch_max_files,
        overwrite: flags.overwrite,
    })
}

/// `-g` and `--call-graph fp|dwarf[,SIZE]` (the spec wins over `-g`).
pub fn call_graph(g: bool, spec: Option<&str>) -> anyhow::Result<CallGraph> {
    let Some(spec) = spec else {
        return Ok(if g { CallGraph::Fp } else { CallGraph::None });
    };
    let (mode, size) = match spec.split_once(',') {
        Some((m, s)) => (m, Some(s)),
        None => (spec, None),
    };
    match (mode, size) {
        ("fp", None) => Ok(CallGraph::Fp),
        ("dwarf", None) => Ok(CallGraph::Dwarf(record::DEFAULT_DWARF_STACK)),
        ("dwarf", Some(s)) => {
            let n: u32 = s
                .parse()
                .with_context(|| format!("--call-graph dwarf,SIZE: `{s}` is not a number"))?;
            if n == 0 || n & 7 != 0 || n > 65528 {
                bail!("--call-graph dwarf,SIZE: SIZE must be a multiple of 8 between 8 and 65528, not {n}");
            }
            Ok(CallGraph::Dwarf(n))
        }
        _ => bail!("--call-graph `{spec}`: expected `fp` or `dwarf[,SIZE]` (lbr is not supported)"),
    }
}

/// `--ibs` and its companion flags, as given.
#[derive(Debug, Clone, Default)]
pub struct IbsFlags {
    /// `--ibs op|fetch|op,fetch`.
    pub kinds: String,
    /// `--ibs-period N`.
    pub period: Option<u64>,
    /// `--ibs-count ops|cycles`.
    pub count: Option<String>,
    /// `--l3-miss-only`.
    pub l3_miss_only: bool,
    /// `--ldlat N`.
    pub ldlat: Option<u64>,
    /// `--rand`.
    pub rand: bool,
}

/// The events of the `-e` lists (in order), then `--ibs`'s `ibs_op`/`ibs_fetch` events,
/// validated against this machine's PMUs and kernel (`culprit_collect::ibs`; `all_cpus`:
/// a system-wide recording, which IBS allows more often than a per-process one). Reads
/// sysfs to resolve the names.
pub fn event_specs(
    lists: &[String],
    ibs: Option<&IbsFlags>,
    all_cpus: bool,
) -> anyhow::Result<Vec<EventSpec>> {
    let mut specs = Vec::new();
    for list in lists {
        specs.extend(events::parse_event_list(list)?);
    }
    let ibs = match ibs {
        Some(flags) => ibs_specs(flags, all_cpus)?,
        None => Vec::new(),
    };
    for s in &ibs {
        // The kernel allows one event per IBS PMU (a second gets ENOSPC).
        if let Some(dup) = specs.iter().find(|e| e.pmu == s.pmu) {
            bail!(
                "--ibs and -e {} both use the {} PMU, which takes one event at a time",
                dup.name,
                s.pmu.as_deref().unwrap_or("IBS")
            );
        }
    }
    specs.extend(ibs);
    Ok(specs)
}

/// The `ibs_op`/`ibs_fetch` events of `--ibs` and its companion flags.
fn ibs_specs(flags: &IbsFlags, all_cpus: bool) -> anyhow::Result<Vec<EventSpec>> {
    use culprit_collect::ibs::{self as cibs, IbsHost, IbsRequest};
    let (op, fetch) = cibs::parse_kinds(&flags.kinds)?;
    let count_ops = match flags.count.as_deref() {
        None | Some("cycles") => false,
        Some("ops") => true,
        Some(other) => bail!("--ibs-count `{other}`: expected ops or cycles"),
    };
    let req = IbsRequest {
        op,
        fetch,
        period: flags.period,
        count_ops,
        l3_miss_only: flags.l3_miss_only,
        ldlat: flags.ldlat,
        rand: flags.rand,
    };
    let host = IbsHost::current(!all_cpus);
    Ok(cibs::ibs_specs(
        &culprit_collect::sysfs::Sysfs::system(),
        &req,
        &host,
    )?)
}

/// `--off-cpu[=wakers]`'s value (`Some("")` without one): whether the wakers are recorded too.
pub fn off_cpu_wakers(value: Option<&str>) -> anyhow::Result<bool> {
    match value {
        None | Some("") => Ok(false),
        Some("wakers") => Ok(true),
        Some(other) => bail!("--off-cpu={other}: expected --off-cpu or --off-cpu=wakers"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn switch(value: &str) -> anyhow::Result<RecordModes> {
        modes(&ModeFlags {
            switch_output: Some(value.to_string()),
            ..ModeFlags::default()
        })
    }

    #[test]
    fn test_record_mode_flags_as_perf_spells_them() {
        let z = ModeFlags {
            z: true,
            ..ModeFlags::default()
        };
        assert_eq!(modes(&z).unwrap().compression_level, Some(1));
        let level = ModeFlags {
            z: true,
            compression_level: Some(7),
            ..ModeFlags::default()
        };
        assert_eq!(modes(&level).unwrap().compression_level, Some(7));
        // --switch-output without a value is `signal`.
        assert_eq!(
            switch("signal").unwrap().switch_output,
            Some(modes::SwitchOutput::Signal)
        );
        assert_eq!(
            switch("100M").unwrap().switch_output,
            Some(modes::SwitchOutput::Size(100 << 20))
        );
        assert_eq!(
            switch("30s").unwrap().switch_output,
            Some(modes::SwitchOutput::Time(Duration::from_secs(30)))
        );
        // A command right after --switch-output is read as its value: the error says so.
        let e = switch("prog").unwrap_err();
        assert!(e.to_string().contains("`--`"), "{e}");
        let m = modes(&ModeFlags {
            duration: Some(1.5),
            max_size: Some("2M".to_string()),
            switch_max_files: Some(4),
            overwrite: true,
            ..ModeFlags::default()
        })
        .unwrap();
        assert_eq!(m.duration, Some(Duration::from_millis(1500)));
        assert_eq!(m.max_size, Some(2 << 20));
        assert_eq!(m.switch_max_files, Some(4));
        assert!(m.overwrite && m.dumps_on_signal());
        let negative = ModeFlags {
            duration: Some(-1.0),
            ..ModeFlags::default()
        };
        assert!(modes(&negative).is_err());
        let lots = ModeFlags {
            max_size: Some("lots".to_string()),
            ..ModeFlags::default()
        };
        assert!(modes(&lots).is_err());
    }

    #[test]
    fn test_call_graph_specs() {
        assert_eq!(
            call_graph(false, Some("dwarf,4096")).unwrap(),
            CallGraph::Dwarf(4096)
        );
        assert_eq!(
            call_graph(false, Some("dwarf")).unwrap(),
            CallGraph::Dwarf(record::DEFAULT_DWARF_STACK)
        );
        assert_eq!(call_graph(false, Some("fp")).unwrap(), CallGraph::Fp);
        assert!(call_graph(false, Some("lbr")).is_err());
        assert!(call_graph(false, Some("dwarf,7")).is_err());
        assert!(call_graph(false, Some("dwarf,x")).is_err());
        assert_eq!(call_graph(true, None).unwrap(), CallGraph::Fp);
        assert_eq!(call_graph(false, None).unwrap(), CallGraph::None);
    }

    #[test]
    fn test_off_cpu_values() {
        assert!(!off_cpu_wakers(None).unwrap());
        assert!(!off_cpu_wakers(Some("")).unwrap());
        assert!(off_cpu_wakers(Some("wakers")).unwrap());
        assert!(off_cpu_wakers(Some("wake"))
            .unwrap_err()
            .to_string()
            .contains("--off-cpu=wake"));
    }
}
