//! Precise-sample collection. `culprit record --ibs op|fetch|op,fetch`: turns the IBS flags into `ibs_op`/`ibs_fetch`
//! events, validated against the PMUs' sysfs `format/` and `caps/` files and the kernel's
//! rules (arch/x86/events/amd/ibs.c), so that a request the kernel would refuse with a bare
//! EINVAL is refused here with the reason and what to do instead.
//!
//! Rules checked: the PMU exists; the period is a multiple of 16 within the kernel's
//! bounds (fetch 0x10..=0xFFFF0, op 0x90..=0x7FFFFF0); micro-op counting needs `cnt_ctl`,
//! L3-miss filtering needs `l3missonly` (Zen 4+), the load-latency filter needs `ldlat` (Zen 5,
//! 128..=2048, op only, forces L3MissOnly as the kernel does), `--rand` is a fetch setting
//! (`rand_en`); per-process IBS needs Linux 6.2+; IBS needs CAP_PERFMON/CAP_SYS_ADMIN or
//! `perf_event_paranoid` ≤ 0. The recorder requests PERF_SAMPLE_RAW for IBS events, and the
//! file header gets the PMU mappings and caps, which decoding needs.
//!
//! PEBS: precise Intel load/store events get PERF_SAMPLE_ADDR, WEIGHT and DATA_SRC
//! ([`pebs_memory_sample_bits`]), as `perf mem record` asks.

use culprit_decode::abi::{perf_type, sample_type};

use crate::events::{EventSpec, SampleRate};
use crate::sysfs::{ConfigWord, Pmu, Sysfs};

/// What `--ibs` and its companion flags asked for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IbsRequest {
    /// Sample ops (`ibs_op`).
    pub op: bool,
    /// Sample fetches (`ibs_fetch`).
    pub fetch: bool,
    /// `--ibs-period N`: fetches/cycles/ops between samples (multiple of 16).
    pub period: Option<u64>,
    /// `--ibs-count ops`: count dispatched micro-ops instead of cycles (op only).
    pub count_ops: bool,
    /// `--l3-miss-only`: keep only samples that missed the L3 (Zen 4+).
    pub l3_miss_only: bool,
    /// `--ldlat N`: keep only loads with a DC-miss latency above N cycles (Zen 5).
    pub ldlat: Option<u64>,
    /// `--rand`: randomize the fetch counter's low bits.
    pub rand: bool,
}

/// The facts about this machine the rules depend on (injected for tests).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IbsHost {
    /// Kernel version (major, minor), if known.
    pub kernel: Option<(u32, u32)>,
    /// Recording one process tree (not `-a`).
    pub per_process: bool,
    /// Effective uid is 0 or CAP_PERFMON/CAP_SYS_ADMIN is in effect.
    pub privileged: bool,
    /// `kernel.perf_event_paranoid`, if readable.
    pub paranoid: Option<i32>,
    /// CPU description for messages (e.g. `GenuineIntel family 6 model 85`).
    pub cpu: String,
}

impl IbsHost {
    /// Reads the facts of the running machine.
    pub fn current(per_process: bool) -> IbsHost {
        IbsHost {
            kernel: kernel_version(),
            per_process,
            privileged: privileged(),
            paranoid: crate::support::perf_event_paranoid(),
            cpu: crate::sysfs::cpu_identity()
                .map(|c| c.describe())
                .unwrap_or_else(|| "an unknown CPU".to_string()),
        }
    }
}

/// Why an IBS request cannot be recorded here.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum IbsError {
    /// `--ibs` value not understood.
    #[error("--ibs `{0}`: expected op, fetch or op,fetch")]
    BadKinds(String),
    /// The PMU is missing.
    #[error(
        "this machine has no {pmu} PMU (/sys/bus/event_source/devices/{pmu} is missing; CPU: \
         {cpu}): AMD IBS needs an AMD CPU (family 10h or later) whose IBS the kernel exposes, \
         and in a virtual machine a hypervisor that passes IBS through (most do not). What you \
         can do: record here with `-e cycles` or `-e cpu-clock` (culprit annotate then estimates \
         skid), use PEBS on Intel (`-e cycles:pp` where cpu/caps/max_precise allows it), or \
         record with `--ibs` on AMD bare metal and read the file here with `culprit ibs` and \
         `culprit script`"
    )]
    NoPmu {
        /// `ibs_op` or `ibs_fetch`.
        pmu: &'static str,
        /// This machine's CPU.
        cpu: String,
    },
    /// A flag needs a PMU format term this kernel/CPU does not have.
    #[error("{flag} needs the `{term}` term of {pmu} ({needs}), which this machine's {pmu} does not have (see /sys/bus/event_source/devices/{pmu}/format)")]
    MissingTerm {
        /// The flag.
        flag: &'static str,
        /// The format term.
        term: &'static str,
        /// The PMU.
        pmu: &'static str,
        /// What provides it.
        needs: &'static str,
    },
    /// A flag that does not apply to the requested kinds.
    #[error("{0}")]
    NotApplicable(String),
    /// Period out of the kernel's rules.
    #[error("--ibs-period {period}: {why}")]
    BadPeriod {
        /// The period given.
        period: u64,
        /// What is wrong.
        why: String,
    },
    /// Load-latency threshold out of range.
    #[error("--ldlat {0}: the IBS load-latency threshold must be between 128 and 2048 cycles")]
    BadLdlat(u64),
    /// Per-process IBS on an old kernel.
    #[error("per-process IBS needs Linux 6.2 or later (this kernel is {major}.{minor}): record system-wide with -a (needs privileges), or upgrade the kernel")]
    OldKernel {
        /// Kernel major.
        major: u32,
        /// Kernel minor.
        minor: u32,
    },
    /// Not enough privileges.
    #[error("IBS samples every privilege level, so the kernel needs CAP_PERFMON (or CAP_SYS_ADMIN) or kernel.perf_event_paranoid <= 0 (it is {paranoid}): run as root, `setcap cap_perfmon+ep` the culprit binary, or `sysctl kernel.perf_event_paranoid=0`")]
    Privilege {
        /// The current setting (`unknown` if unreadable).
        paranoid: String,
    },
    /// sysfs unreadable.
    #[error("cannot read the {pmu} PMU description: {why}")]
    Sysfs {
        /// The PMU.
        pmu: &'static str,
        /// The error.
        why: String,
    },
}

/// Parses `op`, `fetch`, `op,fetch` (either order).
pub fn parse_kinds(s: &str) -> Result<(bool, bool), IbsError> {
    let (mut op, mut fetch) = (false, false);
    for part in s.split(',').map(str::trim) {
        match part {
            "op" if !op => op = true,
            "fetch" if !fetch => fetch = true,
            _ => return Err(IbsError::BadKinds(s.to_string())),
        }
    }
    if !(op || fetch) {
        return Err(IbsError::BadKinds(s.to_string()));
    }
    Ok((op, fetch))
}

fn set_term(
    spec: &mut EventSpec,
    pmu: &Pmu,
    term: &'static str,
    value: u64,
    flag: &'static str,
    needs: &'static str,
) -> Result<(), IbsError> {
    let pmu_name: &'static str = if pmu.name == "ibs_op" {
        "ibs_op"
    } else {
        "ibs_fetch"
    };
    let f = pmu.format(term).ok_or(IbsError::MissingTerm {
        flag,
        term,
        pmu: pmu_name,
        needs,
    })?;
    let (mask, bits) = f.place(value).ok_or_else(|| {
        IbsError::NotApplicable(format!("{flag}: {value} does not fit the `{term}` field"))
    })?;
    let word = match f.word {
        ConfigWord::Config => &mut spec.config,
        ConfigWord::Config1 => &mut spec.config1,
        ConfigWord::Config2 => &mut spec.config2,
        ConfigWord::Config3 => {
            return Err(IbsError::NotApplicable(format!(
                "{flag}: `{term}` lives in config3, which culprit does not set"
            )))
        }
    };
    *word = (*word & !mask) | bits;
    Ok(())
}

fn check_period(period: u64, op: bool) -> Result<(), IbsError> {
    let bad = |why: String| IbsError::BadPeriod { period, why };
    if period & 0xf != 0 {
        return Err(bad(format!(
            "IBS counts in units of 16: use a multiple of 16, e.g. {}",
            (period + 15) & !0xf
        )));
    }
    let (min, max) = if op {
        (0x90, 0x7FF_FFF0)
    } else {
        (0x10, 0xF_FFF0)
    };
    if period < min {
        return Err(bad(format!(
            "the kernel's minimum for {} is {min}",
            if op { "ibs_op" } else { "ibs_fetch" }
        )));
    }
    if period > max {
        return Err(bad(format!(
            "the kernel's maximum for {} is {max:#x}{}",
            if op { "ibs_op" } else { "ibs_fetch" },
            if op {
                " (0xFFFF0 on CPUs without the OpCntExt capability)"
            } else {
                ""
            }
        )));
    }
    Ok(())
}

/// Builds the IBS events for a request, or says why this machine cannot record it.
pub fn ibs_specs(
    sysfs: &Sysfs,
    req: &IbsRequest,
    host: &IbsHost,
) -> Result<Vec<EventSpec>, IbsError> {
    if !(req.op || req.fetch) {
        return Err(IbsError::BadKinds(String::new()));
    }
    // Flags that make sense only for one kind.
    if req.count_ops && !req.op {
        return Err(IbsError::NotApplicable(
            "--ibs-count ops applies to op sampling: use --ibs op".into(),
        ));
    }
    if req.ldlat.is_some() && !req.op {
        return Err(IbsError::NotApplicable(
            "--ldlat filters op samples (loads): use --ibs op".into(),
        ));
    }
    if req.rand && !req.fetch {
        return Err(IbsError::NotApplicable(
            "--rand randomizes the fetch counter: use --ibs fetch (op sampling randomizes by itself)"
                .into(),
        ));
    }
    if let Some(l) = req.ldlat {
        if !(128..=2048).contains(&l) {
            return Err(IbsError::BadLdlat(l));
        }
    }
    let mut out = Vec::new();
    for (want, name) in [(req.fetch, "ibs_fetch"), (req.op, "ibs_op")] {
        if !want {
            continue;
        }
        let pmu_name: &'static str = name;
        let pmu = sysfs
            .pmu(name)
            .map_err(|e| IbsError::Sysfs {
                pmu: pmu_name,
                why: e.to_string(),
            })?
            .ok_or_else(|| IbsError::NoPmu {
                pmu: pmu_name,
                cpu: host.cpu.clone(),
            })?;
        let op = name == "ibs_op";
        let mut spec = EventSpec::new(format!("{name}//"), Some(name), pmu.attr_type, 0);
        let mut terms = Vec::new();
        if let Some(p) = req.period {
            check_period(p, op)?;
            spec.rate = Some(SampleRate::Period(p));
            terms.push(format!("period={p}"));
        }
        if op && req.count_ops {
            set_term(
                &mut spec,
                &pmu,
                "cnt_ctl",
                1,
                "--ibs-count ops",
                "IBS op counting",
            )?;
            terms.push("cnt_ctl=1".into());
        }
        if req.l3_miss_only || (op && req.ldlat.is_some()) {
            set_term(
                &mut spec,
                &pmu,
                "l3missonly",
                1,
                "--l3-miss-only",
                "Zen 4 or later",
            )?;
            terms.push("l3missonly=1".into());
        }
        if op {
            if let Some(l) = req.ldlat {
                set_term(&mut spec, &pmu, "ldlat", l, "--ldlat", "Zen 5 or later")?;
                terms.push(format!("ldlat={l}"));
            }
        }
        if !op && req.rand {
            set_term(
                &mut spec,
                &pmu,
                "rand_en",
                1,
                "--rand",
                "IBS fetch randomization",
            )?;
            terms.push("rand_en=1".into());
        }
        spec.name = format!("{name}/{}/", terms.join(","));
        out.push(spec);
    }
    if host.per_process {
        if let Some((major, minor)) = host.kernel {
            if (major, minor) < (6, 2) {
                return Err(IbsError::OldKernel { major, minor });
            }
        }
    }
    if !host.privileged && host.paranoid.is_none_or(|p| p > 0) {
        return Err(IbsError::Privilege {
            paranoid: host
                .paranoid
                .map(|p| p.to_string())
                .unwrap_or_else(|| "unknown".into()),
        });
    }
    Ok(out)
}

/// The sample_type bits a PEBS memory event needs (as `perf mem record`: the data address,
/// the load latency and where the data came from), or 0 for other events. Memory events are
/// the precise (`:p`) Intel load/store events of the reference: loads `event=0xcd,umask=0x1`
/// (with `ldlat`), stores `event=0xd0,umask=0x82` (Haswell+) or `0xcd/0x2` (Sandy Bridge),
/// Gracemont loads/stores `0xd0/0x5`, `0xd0/0x6`.
pub fn pebs_memory_sample_bits(spec: &EventSpec) -> u64 {
    // PERF_TYPE_RAW is also the `cpu` PMU's dynamic type on x86.
    let core = spec.attr_type == perf_type::RAW || spec.pmu.as_deref() == Some("cpu");
    if !core || spec.precise_ip == 0 {
        return 0;
    }
    let (event, umask) = (spec.config & 0xff, (spec.config >> 8) & 0xff);
    match (event, umask) {
        (0xcd, 0x1) | (0xcd, 0x2) | (0xd0, 0x82) | (0xd0, 0x5) | (0xd0, 0x6) => {
            sample_type::ADDR | sample_type::WEIGHT | sample_type::DATA_SRC
        }
        _ => 0,
    }
}

/// Kernel (major, minor) from `uname -r` (`/proc/sys/kernel/osrelease`).
pub fn kernel_version() -> Option<(u32, u32)> {
    let s = std::fs::read_to_string("/proc/sys/kernel/osrelease").ok()?;
    parse_kernel_version(&s)
}

/// Parses `6.1.0-18-amd64` → (6, 1).
pub fn parse_kernel_version(s: &str) -> Option<(u32, u32)> {
    let mut it = s.trim().split(['.', '-']);
    let major = it.next()?.parse().ok()?;
    let minor = it.next()?.parse().ok()?;
    Some((major, minor))
}

/// Root, or CAP_PERFMON (38) / CAP_SYS_ADMIN (21) in the effective set.
fn privileged() -> bool {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        return true;
    }
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("CapEff:"))
                .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        })
        .is_some_and(|caps| caps & ((1 << 38) | (1 << 21)) != 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sysfs::testutil::{FakeMachines, FakeSysfs};

    fn host() -> IbsHost {
        IbsHost {
            kernel: Some((6, 8)),
            per_process: true,
            privileged: true,
            paranoid: Some(2),
            cpu: "AuthenticAMD family 25 model 17".into(),
        }
    }

    fn req(op: bool, fetch: bool) -> IbsRequest {
        IbsRequest {
            op,
            fetch,
            ..IbsRequest::default()
        }
    }

    #[test]
    fn test_no_ibs_pmu_is_explained() {
        let fake = FakeSysfs::no_hw();
        let e = ibs_specs(&Sysfs::at(&fake.root), &req(true, false), &host()).unwrap_err();
        let msg = e.to_string();
        assert!(matches!(e, IbsError::NoPmu { pmu: "ibs_op", .. }), "{msg}");
        assert!(
            msg.contains("hypervisor") && msg.contains("culprit ibs"),
            "{msg}"
        );
    }

    #[test]
    fn test_specs_on_zen_like_tree() {
        let fake = FakeSysfs::amd();
        let s = Sysfs::at(&fake.root);
        let r = IbsRequest {
            op: true,
            fetch: true,
            period: Some(0x10000),
            count_ops: true,
            l3_miss_only: false,
            ldlat: Some(256),
            rand: true,
        };
        let specs = ibs_specs(&s, &r, &host()).unwrap();
        assert_eq!(specs.len(), 2);
        let (fetch, op) = (&specs[0], &specs[1]);
        assert_eq!(fetch.attr_type, 10);
        assert_eq!(fetch.config, 1 << 57);
        assert_eq!(fetch.name, "ibs_fetch/period=65536,rand_en=1/");
        assert_eq!(op.attr_type, 11);
        // cnt_ctl (bit 19) and l3missonly (bit 16, forced by ldlat), ldlat in config1.
        assert_eq!(op.config, (1 << 19) | (1 << 16));
        assert_eq!(op.config1, 256);
        assert_eq!(op.rate, Some(SampleRate::Period(0x10000)));
        assert_eq!(op.pmu.as_deref(), Some("ibs_op"));
    }

    #[test]
    fn test_kernel_rules() {
        let fake = FakeSysfs::amd();
        let s = Sysfs::at(&fake.root);
        let mut r = req(true, false);
        r.period = Some(1000);
        assert!(ibs_specs(&s, &r, &host())
            .unwrap_err()
            .to_string()
            .contains("multiple of 16, e.g. 1008"));
        r.period = Some(0x80);
        assert!(matches!(
            ibs_specs(&s, &r, &host()),
            Err(IbsError::BadPeriod { .. })
        ));
        r.period = None;
        r.ldlat = Some(64);
        assert_eq!(ibs_specs(&s, &r, &host()), Err(IbsError::BadLdlat(64)));
        let mut old = host();
        old.kernel = Some((6, 1));
        assert_eq!(
            ibs_specs(&s, &req(true, false), &old),
            Err(IbsError::OldKernel { major: 6, minor: 1 })
        );
        old.per_process = false;
        assert!(ibs_specs(&s, &req(true, false), &old).is_ok());
        let mut user = host();
        user.privileged = false;
        assert!(matches!(
            ibs_specs(&s, &req(true, false), &user),
            Err(IbsError::Privilege { .. })
        ));
        user.paranoid = Some(0);
        assert!(ibs_specs(&s, &req(true, false), &user).is_ok());
        let mut r = req(true, false);
        r.rand = true;
        assert!(matches!(
            ibs_specs(&s, &r, &host()),
            Err(IbsError::NotApplicable(_))
        ));
    }

    #[test]
    fn test_missing_terms_on_pre_zen4_tree() {
        let fake = FakeSysfs::empty();
        fake.pmu("ibs_op", 11, &[("cnt_ctl", "config:19")], &[], &[]);
        let s = Sysfs::at(&fake.root);
        let mut r = req(true, false);
        r.l3_miss_only = true;
        let e = ibs_specs(&s, &r, &host()).unwrap_err();
        assert!(
            matches!(
                e,
                IbsError::MissingTerm {
                    term: "l3missonly",
                    ..
                }
            ),
            "{e}"
        );
        assert!(e.to_string().contains("Zen 4"));
    }

    #[test]
    fn test_pebs_memory_events_request_addr_weight_data_src() {
        let mut load = EventSpec::new("cpu/event=0xcd,umask=0x1,ldlat=3/P", Some("cpu"), 4, 0x1cd);
        load.config1 = 3;
        assert_eq!(pebs_memory_sample_bits(&load), 0);
        load.precise_ip = 2;
        assert_eq!(
            pebs_memory_sample_bits(&load),
            (1 << 3) | (1 << 14) | (1 << 15)
        );
        let mut store = EventSpec::new("r82d0:pp", None, 4, 0x82d0);
        store.precise_ip = 2;
        assert_ne!(pebs_memory_sample_bits(&store), 0);
        let mut cycles = EventSpec::new("cycles:pp", None, 0, 0);
        cycles.precise_ip = 2;
        assert_eq!(pebs_memory_sample_bits(&cycles), 0);
        let mut other = EventSpec::new("r1c4:p", None, 4, 0x1c4);
        other.precise_ip = 1;
        assert_eq!(pebs_memory_sample_bits(&other), 0);
    }

    #[test]
    fn test_parse_kinds_and_kernel_version() {
        assert_eq!(parse_kinds("op"), Ok((true, false)));
        assert_eq!(parse_kinds("fetch,op"), Ok((true, true)));
        assert!(parse_kinds("op,op").is_err());
        assert!(parse_kinds("ops").is_err());
        assert_eq!(parse_kernel_version("6.1.0-18-amd64\n"), Some((6, 1)));
        assert_eq!(parse_kernel_version("6.12"), Some((6, 12)));
    }
}
