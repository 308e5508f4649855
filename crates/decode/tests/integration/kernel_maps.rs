//! Which MMAP/MMAP2 records map code, by perf's rules (machine__process_mmap2_event: kernel
//! maps whatever their protection; a process's map unless it is a data map).

use culprit_decode::model::{CpuMode, DsoKind};
use culprit_decode::Reader;

use crate::synth::{comm, file, mmap2, sample_a, Data, ID_A, USER};

const KERNEL: u16 = 1;
/// `PERF_RECORD_MISC_MMAP_DATA`.
const MMAP_DATA: u16 = 1 << 13;
const PROT_READ: u32 = 1;
const PROT_EXEC: u32 = 4;

/// perf 6.16 and later write the kernel's (and modules') MMAP2 with protection `---p`
/// (prot 0): those still map the kernel. A process's map without `PROT_EXEC`, or flagged
/// as data, maps no code.
#[test]
fn test_kernel_mmap2_without_prot_exec_still_maps_the_kernel() {
    let mut d = Data::default();
    let k = 0xffff_ffff_8100_0000u64;
    d.rec_id(
        10,
        KERNEL,
        mmap2(-1, k, 0x100_0000, k, 0, "[kernel.kallsyms]_text"),
        -1,
        0,
        ID_A,
    );
    d.rec_id(
        10,
        KERNEL,
        mmap2(
            -1,
            0xffff_ffff_c000_0000,
            0x1000,
            0,
            0,
            "/lib/modules/6.17/kernel/fs/ext4.ko",
        ),
        -1,
        0,
        ID_A,
    );
    d.rec_id(3, 0, comm(7, 7, "app"), 7, 1, ID_A);
    d.rec_id(
        10,
        USER,
        mmap2(7, 0x40_0000, 0x1000, 0, PROT_READ | PROT_EXEC, "/bin/app"),
        7,
        2,
        ID_A,
    );
    // A data map over nothing else, by prot and by the flag.
    d.rec_id(
        10,
        USER,
        mmap2(7, 0x50_0000, 0x1000, 0, PROT_READ, "/bin/data"),
        7,
        3,
        ID_A,
    );
    d.rec_id(
        10,
        USER | MMAP_DATA,
        mmap2(7, 0x60_0000, 0x1000, 0, PROT_READ, "/bin/data2"),
        7,
        4,
        ID_A,
    );
    d.rec(9, KERNEL, sample_a(k + 0x1234, 7, 7, 10, 1, &[]));
    d.rec(9, KERNEL, sample_a(0xffff_ffff_c000_0010, 7, 7, 11, 1, &[]));
    d.rec(9, USER, sample_a(0x40_0010, 7, 7, 12, 1, &[]));
    d.rec(9, USER, sample_a(0x50_0010, 7, 7, 13, 1, &[]));
    d.rec(9, USER, sample_a(0x60_0010, 7, 7, 14, 1, &[]));
    let p = Reader::from_bytes(&file(&d)).collect().unwrap();
    let got: Vec<_> = p
        .samples
        .iter()
        .map(|s| {
            (
                s.cpumode,
                p.dso(&s.location).map(|d| (d.kind, d.short_name.as_str())),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (
                CpuMode::Kernel,
                Some((DsoKind::Kernel, "[kernel.kallsyms]"))
            ),
            (CpuMode::Kernel, Some((DsoKind::KernelModule, "[ext4]"))),
            (CpuMode::User, Some((DsoKind::Elf, "app"))),
            (CpuMode::User, None),
            (CpuMode::User, None),
        ]
    );
}

/// A build-id table whose kernel image is a vmlinux file names the kernel DSO
/// `[kernel.vmlinux]` with that file's build-id, as perf prints it (real files of
/// google/autofdo: `perf record` with and without a vmlinux).
#[test]
fn test_kernel_dso_named_kernel_vmlinux_from_the_build_id_table() {
    let kernel_dso = |name: &str| {
        let p = culprit_decode::Reader::open(crate::common::fixture(&format!(
            "real-perf-data/google-autofdo/{name}"
        )))
        .collect()
        .unwrap();
        let d = p.dsos.iter().find(|d| d.kind == DsoKind::Kernel).unwrap();
        let hex: String = d
            .build_id
            .iter()
            .flatten()
            .map(|b| format!("{b:02x}"))
            .collect();
        (d.short_name.clone(), hex)
    };
    assert_eq!(
        kernel_dso("perf-vmlinux.data"),
        (
            "[kernel.vmlinux]".to_string(),
            "948da3c05fff6a515eab7b9dd416e30564b2ccf2".to_string()
        )
    );
    assert_eq!(
        kernel_dso("perf-kernel.data"),
        (
            "[kernel.kallsyms]".to_string(),
            "d4eba24dde8ec63cbdf519e6b4008c4ecdcf1f49".to_string()
        )
    );
}

/// Code in anonymous memory is shown as perf shows it: `[JIT] tid PID`, after the process's
/// perf map (real file: perf 6.1 reports chrome's `//anon` code as `[JIT] tid 2046`).
#[test]
fn test_anonymous_code_is_named_jit_tid_like_perf() {
    let p = culprit_decode::Reader::open(crate::common::fixture(
        "real-perf-data/google-perf_data_converter/perf.data.forkexit-3.4",
    ))
    .collect()
    .unwrap();
    let jit: Vec<_> = p
        .samples
        .iter()
        .filter_map(|s| p.dso(&s.location))
        .filter(|d| d.kind == DsoKind::Anonymous)
        .map(|d| (d.path.as_str(), d.short_name.as_str(), d.pid))
        .collect();
    assert!(!jit.is_empty());
    for d in jit {
        assert_eq!(d, ("//anon", "[JIT] tid 2046", Some(2046)));
    }
}

/// `PERF_RECORD_KSYMBOL` body: addr, len, ksym_type, flags, the NUL-padded name.
fn ksymbol(addr: u64, len: u32, flags: u16, name: &str) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(&addr.to_le_bytes());
    b.extend_from_slice(&len.to_le_bytes());
    b.extend_from_slice(&1u16.to_le_bytes()); // PERF_RECORD_KSYMBOL_TYPE_BPF
    b.extend_from_slice(&flags.to_le_bytes());
    b.extend_from_slice(name.as_bytes());
    b.resize((b.len() + 8) & !7, 0);
    b
}

/// A BPF program's KSYMBOL record maps its code inside the kernel's map, as perf's
/// machine__process_ksymbol_register: samples there are in a DSO named after the program
/// (offsets from its first byte); the kernel keeps the addresses around it, and damaged
/// KSYMBOL bodies change nothing.
#[test]
fn test_ksymbol_records_map_bpf_programs_by_name() {
    let mut d = Data::default();
    let k = 0xffff_ffff_8100_0000u64;
    let prog = 0xffff_ffff_c002_5b94u64;
    d.rec_id(
        10,
        KERNEL,
        mmap2(-1, k, 0x100_0000, k, 0, "[kernel.kallsyms]_text"),
        -1,
        0,
        ID_A,
    );
    let name = "bpf_prog_3f3fc3766c8ee4df_culprit_hot";
    d.rec_id(17, 0, ksymbol(prog, 0x100, 0, name), -1, 1, ID_A);
    // Cut short: no name, no length.
    d.rec_id(17, 0, vec![0; 6], -1, 2, ID_A);
    d.rec(9, KERNEL, sample_a(prog + 0x10, 7, 7, 10, 1, &[]));
    d.rec(9, KERNEL, sample_a(prog + 0x100, 7, 7, 11, 1, &[]));
    d.rec(9, KERNEL, sample_a(k + 0x10, 7, 7, 12, 1, &[]));
    let p = Reader::from_bytes(&file(&d)).collect().unwrap();
    let got: Vec<_> = p
        .samples
        .iter()
        .map(|s| {
            let dso = p.dso(&s.location).map(|d| (d.kind, d.short_name.clone()));
            (dso, s.location.file_offset)
        })
        .collect();
    let kernel = Some((DsoKind::Kernel, "[kernel.kallsyms]".to_string()));
    assert_eq!(
        got,
        [
            (Some((DsoKind::Ksymbol, name.to_string())), 0x10),
            (kernel.clone(), prog + 0x100),
            (kernel, k + 0x10),
        ]
    );
}
