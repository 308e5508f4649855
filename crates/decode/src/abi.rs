//! perf's ABI: the numbers of `include/uapi/linux/perf_event.h` and of perf's own file format
//! (`tools/perf/util/header.h`, `tools/lib/perf/include/perf/event.h`,
//! `tools/perf/Documentation/perf.data-file-format.txt`).
//!
//! The one home of these numbers: the reader decodes with them and the recorder
//! (culprit-collect) encodes `perf_event_attr`s and perf.data files with them.

/// The perf.data magic (`PERFILE2`), as a little-endian writer puts it.
pub const MAGIC: &[u8; 8] = b"PERFILE2";
/// The same magic written by a big-endian machine.
pub const MAGIC_BIG_ENDIAN: &[u8; 8] = b"2ELIFREP";
/// The legacy (version 1) magic: the byte order is not in it but in the sizes after it.
pub const MAGIC_V1: &[u8; 8] = b"PERFFILE";
/// Size of `struct perf_file_header` (magic, size, attr_size, 3 sections, 4 feature words).
pub const FILE_HEADER_SIZE: usize = 104;
/// The file header without its feature bits, as perf wrote it before features existed.
pub const FILE_HEADER_SIZE_NO_FEATURES: usize = 72;
/// Size of the pipe-mode header (magic, size).
pub const PIPE_HEADER_SIZE: usize = 16;
/// `PERF_ATTR_SIZE_VER0`: the smallest `perf_event_attr`.
pub const ATTR_SIZE_VER0: usize = 64;
/// `PERF_ATTR_SIZE_VER7`: the size perf 6.1 writes (up to and including `sig_data`).
pub const ATTR_SIZE_VER7: usize = 128;
/// Alignment perf pads header strings (and BUILD_ID file names) to (`NAME_ALIGN`).
pub const NAME_ALIGN: usize = 64;
/// `PERF_EVENT_UPDATE__NAME`: an EVENT_UPDATE record carrying the event's name.
pub const EVENT_UPDATE_NAME: u64 = 2;

/// `perf_event_attr.type` (`enum perf_type_id`); larger values are dynamic PMU types.
pub mod perf_type {
    /// `PERF_TYPE_HARDWARE`: generic hardware events (cycles, instructions, ...).
    pub const HARDWARE: u32 = 0;
    /// `PERF_TYPE_SOFTWARE`: kernel software events (cpu-clock, page-faults, ...).
    pub const SOFTWARE: u32 = 1;
    /// `PERF_TYPE_TRACEPOINT`.
    pub const TRACEPOINT: u32 = 2;
    /// `PERF_TYPE_HW_CACHE`: generic cache events.
    pub const HW_CACHE: u32 = 3;
    /// `PERF_TYPE_RAW`: the CPU's own event encoding (on x86, the `cpu` PMU has this type).
    pub const RAW: u32 = 4;
    /// `PERF_TYPE_BREAKPOINT`.
    pub const BREAKPOINT: u32 = 5;
}

/// `perf_event_attr.sample_type` bits (`enum perf_event_sample_format`, `PERF_SAMPLE_*`).
pub mod sample_type {
    /// `PERF_SAMPLE_IP`.
    pub const IP: u64 = 1 << 0;
    /// `PERF_SAMPLE_TID`.
    pub const TID: u64 = 1 << 1;
    /// `PERF_SAMPLE_TIME`.
    pub const TIME: u64 = 1 << 2;
    /// `PERF_SAMPLE_ADDR`.
    pub const ADDR: u64 = 1 << 3;
    /// `PERF_SAMPLE_READ`.
    pub const READ: u64 = 1 << 4;
    /// `PERF_SAMPLE_CALLCHAIN`.
    pub const CALLCHAIN: u64 = 1 << 5;
    /// `PERF_SAMPLE_ID`.
    pub const ID: u64 = 1 << 6;
    /// `PERF_SAMPLE_CPU`.
    pub const CPU: u64 = 1 << 7;
    /// `PERF_SAMPLE_PERIOD`.
    pub const PERIOD: u64 = 1 << 8;
    /// `PERF_SAMPLE_STREAM_ID`.
    pub const STREAM_ID: u64 = 1 << 9;
    /// `PERF_SAMPLE_RAW`.
    pub const RAW: u64 = 1 << 10;
    /// `PERF_SAMPLE_BRANCH_STACK`.
    pub const BRANCH_STACK: u64 = 1 << 11;
    /// `PERF_SAMPLE_REGS_USER`.
    pub const REGS_USER: u64 = 1 << 12;
    /// `PERF_SAMPLE_STACK_USER`.
    pub const STACK_USER: u64 = 1 << 13;
    /// `PERF_SAMPLE_WEIGHT`.
    pub const WEIGHT: u64 = 1 << 14;
    /// `PERF_SAMPLE_DATA_SRC`.
    pub const DATA_SRC: u64 = 1 << 15;
    /// `PERF_SAMPLE_IDENTIFIER`.
    pub const IDENTIFIER: u64 = 1 << 16;
    /// `PERF_SAMPLE_TRANSACTION`.
    pub const TRANSACTION: u64 = 1 << 17;
    /// `PERF_SAMPLE_REGS_INTR`.
    pub const REGS_INTR: u64 = 1 << 18;
    /// `PERF_SAMPLE_PHYS_ADDR`.
    pub const PHYS_ADDR: u64 = 1 << 19;
    /// `PERF_SAMPLE_AUX`.
    pub const AUX: u64 = 1 << 20;
    /// `PERF_SAMPLE_CGROUP`.
    pub const CGROUP: u64 = 1 << 21;
    /// `PERF_SAMPLE_DATA_PAGE_SIZE`.
    pub const DATA_PAGE_SIZE: u64 = 1 << 22;
    /// `PERF_SAMPLE_CODE_PAGE_SIZE`.
    pub const CODE_PAGE_SIZE: u64 = 1 << 23;
    /// `PERF_SAMPLE_WEIGHT_STRUCT`.
    pub const WEIGHT_STRUCT: u64 = 1 << 24;
}

/// `perf_event_attr.read_format` bits (`enum perf_event_read_format`, `PERF_FORMAT_*`).
pub mod read_format {
    /// `PERF_FORMAT_TOTAL_TIME_ENABLED`.
    pub const TOTAL_TIME_ENABLED: u64 = 1 << 0;
    /// `PERF_FORMAT_TOTAL_TIME_RUNNING`.
    pub const TOTAL_TIME_RUNNING: u64 = 1 << 1;
    /// `PERF_FORMAT_ID`.
    pub const ID: u64 = 1 << 2;
    /// `PERF_FORMAT_GROUP`: a read returns every member of the group.
    pub const GROUP: u64 = 1 << 3;
    /// `PERF_FORMAT_LOST`.
    pub const LOST: u64 = 1 << 4;
}

/// `perf_event_attr` flag bits: the bitfield word at offset 40 (`disabled`, `inherit`, ...).
pub mod attr_flag {
    /// `disabled`: start disabled.
    pub const DISABLED: u64 = 1 << 0;
    /// `inherit`: children inherit the event.
    pub const INHERIT: u64 = 1 << 1;
    /// `pinned`: always on the PMU.
    pub const PINNED: u64 = 1 << 2;
    /// `exclusive`: alone on the PMU.
    pub const EXCLUSIVE: u64 = 1 << 3;
    /// `exclude_user`: don't count user space.
    pub const EXCLUDE_USER: u64 = 1 << 4;
    /// `exclude_kernel`: don't count the kernel.
    pub const EXCLUDE_KERNEL: u64 = 1 << 5;
    /// `exclude_hv`: don't count the hypervisor.
    pub const EXCLUDE_HV: u64 = 1 << 6;
    /// `exclude_idle`: don't count when idle.
    pub const EXCLUDE_IDLE: u64 = 1 << 7;
    /// `mmap`: emit MMAP records for executable mappings.
    pub const MMAP: u64 = 1 << 8;
    /// `comm`: emit COMM records.
    pub const COMM: u64 = 1 << 9;
    /// `freq`: `sample_period` is a frequency.
    pub const FREQ: u64 = 1 << 10;
    /// `enable_on_exec`: enable at the next exec.
    pub const ENABLE_ON_EXEC: u64 = 1 << 12;
    /// `task`: emit FORK/EXIT records.
    pub const TASK: u64 = 1 << 13;
    /// Shift of the two-bit `precise_ip` field.
    pub const PRECISE_IP_SHIFT: u32 = 15;
    /// `mmap_data`: emit MMAP records for data (non-executable) mappings too.
    pub const MMAP_DATA: u64 = 1 << 17;
    /// `sample_id_all`: append the sample id to non-sample records.
    pub const SAMPLE_ID_ALL: u64 = 1 << 18;
    /// `exclude_host`: don't count in the host.
    pub const EXCLUDE_HOST: u64 = 1 << 19;
    /// `exclude_guest`: don't count in guests.
    pub const EXCLUDE_GUEST: u64 = 1 << 20;
    /// `exclude_callchain_user`: no user frames in the kernel callchain (dwarf unwinding
    /// does them).
    pub const EXCLUDE_CALLCHAIN_USER: u64 = 1 << 22;
    /// `mmap2`: emit MMAP2 instead of MMAP.
    pub const MMAP2: u64 = 1 << 23;
    /// `comm_exec`: flag COMM records caused by exec.
    pub const COMM_EXEC: u64 = 1 << 24;
    /// `context_switch`: PERF_RECORD_SWITCH records when the task leaves or enters a CPU.
    pub const CONTEXT_SWITCH: u64 = 1 << 26;
    /// `write_backward`: the kernel writes records backward into the ring (overwrite mode).
    pub const WRITE_BACKWARD: u64 = 1 << 27;
    /// `build_id`: MMAP2 records carry build ids.
    pub const BUILD_ID: u64 = 1 << 34;
}

/// `perf_event_attr.branch_sample_type` bits (`PERF_SAMPLE_BRANCH_*`).
pub mod branch_sample_type {
    /// `PERF_SAMPLE_BRANCH_CALL_STACK`: the branch stack is the LBR call stack
    /// (`--call-graph lbr`), which gives the user part of the call chain.
    pub const CALL_STACK: u64 = 1 << 11;
    /// `PERF_SAMPLE_BRANCH_HW_INDEX`: the branch stack starts with the hardware index.
    pub const HW_INDEX: u64 = 1 << 17;
    /// `PERF_SAMPLE_BRANCH_COUNTERS`: each branch entry has a counters word.
    pub const COUNTERS: u64 = 1 << 19;
}

/// Record types: the kernel's `PERF_RECORD_*` (below 64) and perf's user types (64 on).
pub mod record_type {
    /// `PERF_RECORD_MMAP`.
    pub const MMAP: u32 = 1;
    /// `PERF_RECORD_LOST`.
    pub const LOST: u32 = 2;
    /// `PERF_RECORD_COMM`.
    pub const COMM: u32 = 3;
    /// `PERF_RECORD_EXIT`.
    pub const EXIT: u32 = 4;
    /// `PERF_RECORD_THROTTLE`.
    pub const THROTTLE: u32 = 5;
    /// `PERF_RECORD_UNTHROTTLE`.
    pub const UNTHROTTLE: u32 = 6;
    /// `PERF_RECORD_FORK`.
    pub const FORK: u32 = 7;
    /// `PERF_RECORD_SAMPLE`.
    pub const SAMPLE: u32 = 9;
    /// `PERF_RECORD_MMAP2`.
    pub const MMAP2: u32 = 10;
    /// `PERF_RECORD_LOST_SAMPLES`.
    pub const LOST_SAMPLES: u32 = 13;
    /// `PERF_RECORD_SWITCH`: the sampled task left or entered a CPU.
    pub const SWITCH: u32 = 14;
    /// `PERF_RECORD_SWITCH_CPU_WIDE`: as [`SWITCH`], with the other task's pid and tid.
    pub const SWITCH_CPU_WIDE: u32 = 15;
    /// `PERF_RECORD_KSYMBOL`: kernel code registered or unregistered at run time (a BPF
    /// program's JIT image, a trampoline), with its name.
    pub const KSYMBOL: u32 = 17;
    /// `PERF_RECORD_BPF_EVENT`: a BPF program loaded or unloaded (its id and tag).
    pub const BPF_EVENT: u32 = 18;
    /// `PERF_RECORD_HEADER_ATTR`.
    pub const HEADER_ATTR: u32 = 64;
    /// `PERF_RECORD_HEADER_TRACING_DATA`.
    pub const HEADER_TRACING_DATA: u32 = 66;
    /// `PERF_RECORD_HEADER_BUILD_ID`.
    pub const HEADER_BUILD_ID: u32 = 67;
    /// `PERF_RECORD_FINISHED_ROUND`: everything before it may be sorted.
    pub const FINISHED_ROUND: u32 = 68;
    /// `PERF_RECORD_AUXTRACE_INFO`.
    pub const AUXTRACE_INFO: u32 = 70;
    /// `PERF_RECORD_AUXTRACE`.
    pub const AUXTRACE: u32 = 71;
    /// `PERF_RECORD_EVENT_UPDATE`.
    pub const EVENT_UPDATE: u32 = 78;
    /// `PERF_RECORD_HEADER_FEATURE`.
    pub const HEADER_FEATURE: u32 = 80;
    /// `PERF_RECORD_COMPRESSED`.
    pub const COMPRESSED: u32 = 81;
    /// `PERF_RECORD_FINISHED_INIT`.
    pub const FINISHED_INIT: u32 = 82;
    /// `PERF_RECORD_COMPRESSED2`.
    pub const COMPRESSED2: u32 = 83;
}

/// perf's name of a record type (`MMAP`, `SAMPLE`, `HEADER_TRACING_DATA`…), for messages.
pub fn record_type_name(t: u32) -> &'static str {
    match t {
        1 => "MMAP",
        2 => "LOST",
        3 => "COMM",
        4 => "EXIT",
        5 => "THROTTLE",
        6 => "UNTHROTTLE",
        7 => "FORK",
        8 => "READ",
        9 => "SAMPLE",
        10 => "MMAP2",
        11 => "AUX",
        12 => "ITRACE_START",
        13 => "LOST_SAMPLES",
        14 => "SWITCH",
        15 => "SWITCH_CPU_WIDE",
        16 => "NAMESPACES",
        17 => "KSYMBOL",
        18 => "BPF_EVENT",
        19 => "CGROUP",
        20 => "TEXT_POKE",
        21 => "AUX_OUTPUT_HW_ID",
        66 => "HEADER_TRACING_DATA",
        70 => "AUXTRACE_INFO",
        71 => "AUXTRACE",
        81 => "COMPRESSED",
        83 => "COMPRESSED2",
        64..=100 => "perf user record",
        _ => "unknown",
    }
}

/// `perf_event_header.misc` bits (`PERF_RECORD_MISC_*`).
pub mod misc {
    /// `PERF_RECORD_MISC_KERNEL`: kernel cpumode.
    pub const KERNEL: u16 = 1;
    /// `PERF_RECORD_MISC_USER`: user cpumode.
    pub const USER: u16 = 2;
    /// `PERF_RECORD_MISC_MMAP_DATA` of MMAP/MMAP2 records: a data (non-executable) mapping.
    pub const MMAP_DATA: u16 = 1 << 13;
    /// `PERF_RECORD_MISC_COMM_EXEC` of COMM records: the name change came from exec (the
    /// same bit as [`MMAP_DATA`], on another record type).
    pub const COMM_EXEC: u16 = 1 << 13;
    /// `PERF_RECORD_MISC_SWITCH_OUT` of SWITCH records: the task left the CPU (else it
    /// entered it).
    pub const SWITCH_OUT: u16 = 1 << 13;
    /// `PERF_RECORD_MISC_SWITCH_OUT_PREEMPT` of SWITCH records: it left preempted
    /// (runnable).
    pub const SWITCH_OUT_PREEMPT: u16 = 1 << 14;
    /// `PERF_RECORD_MISC_EXACT_IP` of samples: the ip is the instruction that caused the event.
    pub const EXACT_IP: u16 = 1 << 14;
    /// `PERF_RECORD_MISC_MMAP_BUILD_ID` of MMAP2 records: they carry a build id instead of
    /// device and inode (the same bit as [`EXACT_IP`], on another record type).
    pub const MMAP_BUILD_ID: u16 = 1 << 14;
    /// `PERF_RECORD_MISC_BUILD_ID_SIZE` of a build-id entry: the `size` byte after the 20
    /// id bytes is valid.
    pub const BUILD_ID_SIZE: u16 = 1 << 15;
}

/// Feature bit numbers of the perf.data header (`HEADER_*` in tools/perf/util/header.h).
pub mod feature {
    /// `HEADER_TRACING_DATA`.
    pub const TRACING_DATA: u32 = 1;
    /// `HEADER_BUILD_ID`.
    pub const BUILD_ID: u32 = 2;
    /// `HEADER_HOSTNAME`.
    pub const HOSTNAME: u32 = 3;
    /// `HEADER_OSRELEASE`.
    pub const OSRELEASE: u32 = 4;
    /// `HEADER_VERSION`.
    pub const VERSION: u32 = 5;
    /// `HEADER_ARCH`.
    pub const ARCH: u32 = 6;
    /// `HEADER_NRCPUS`.
    pub const NRCPUS: u32 = 7;
    /// `HEADER_CPUDESC`.
    pub const CPUDESC: u32 = 8;
    /// `HEADER_CPUID`.
    pub const CPUID: u32 = 9;
    /// `HEADER_TOTAL_MEM`.
    pub const TOTAL_MEM: u32 = 10;
    /// `HEADER_CMDLINE`.
    pub const CMDLINE: u32 = 11;
    /// `HEADER_EVENT_DESC`.
    pub const EVENT_DESC: u32 = 12;
    /// `HEADER_CPU_TOPOLOGY`.
    pub const CPU_TOPOLOGY: u32 = 13;
    /// `HEADER_PMU_MAPPINGS`.
    pub const PMU_MAPPINGS: u32 = 16;
    /// `HEADER_GROUP_DESC`.
    pub const GROUP_DESC: u32 = 17;
    /// `HEADER_SAMPLE_TIME`.
    pub const SAMPLE_TIME: u32 = 21;
    /// `HEADER_BPF_PROG_INFO`.
    pub const BPF_PROG_INFO: u32 = 25;
    /// `HEADER_COMPRESSED`.
    pub const COMPRESSED: u32 = 27;
    /// `HEADER_CPU_PMU_CAPS`.
    pub const CPU_PMU_CAPS: u32 = 28;
    /// `HEADER_PMU_CAPS`.
    pub const PMU_CAPS: u32 = 31;
}

/// Call-chain context markers (`enum perf_callchain_context`), as the u64s a chain holds.
pub mod callchain_context {
    /// `PERF_CONTEXT_USER`: the user part of the chain follows.
    pub const USER: u64 = -512i64 as u64;
    /// `PERF_CONTEXT_MAX`: every value from here up is a marker, not an address.
    pub const MAX: u64 = -4095i64 as u64;
}

/// `perf_mem_data_src` bit encodings (`PERF_MEM_*`): the `data_src` of a sample.
pub mod mem {
    /// mem_op shift.
    pub const OP_SHIFT: u32 = 0;
    /// mem_lvl shift.
    pub const LVL_SHIFT: u32 = 5;
    /// mem_snoop shift.
    pub const SNOOP_SHIFT: u32 = 19;
    /// mem_lock shift.
    pub const LOCK_SHIFT: u32 = 24;
    /// mem_dtlb shift.
    pub const TLB_SHIFT: u32 = 26;
    /// mem_lvl_num shift.
    pub const LVLNUM_SHIFT: u32 = 33;
    /// mem_remote shift.
    pub const REMOTE_SHIFT: u32 = 37;
    /// mem_snoopx shift.
    pub const SNOOPX_SHIFT: u32 = 38;
    /// mem_blk shift.
    pub const BLK_SHIFT: u32 = 40;
    /// mem_hops shift.
    pub const HOPS_SHIFT: u32 = 43;

    /// mem_op: not available.
    pub const OP_NA: u64 = 0x01;
    /// mem_op: load.
    pub const OP_LOAD: u64 = 0x02;
    /// mem_op: store.
    pub const OP_STORE: u64 = 0x04;
    /// mem_op: prefetch.
    pub const OP_PFETCH: u64 = 0x08;
    /// mem_op: code execution.
    pub const OP_EXEC: u64 = 0x10;

    /// mem_lvl: not available.
    pub const LVL_NA: u64 = 0x01;
    /// mem_lvl: hit.
    pub const LVL_HIT: u64 = 0x02;
    /// mem_lvl: miss.
    pub const LVL_MISS: u64 = 0x04;
    /// mem_lvl: L1.
    pub const LVL_L1: u64 = 0x08;
    /// mem_lvl: line fill buffer.
    pub const LVL_LFB: u64 = 0x10;
    /// mem_lvl: L2.
    pub const LVL_L2: u64 = 0x20;
    /// mem_lvl: L3.
    pub const LVL_L3: u64 = 0x40;
    /// mem_lvl: local DRAM.
    pub const LVL_LOC_RAM: u64 = 0x80;
    /// mem_lvl: remote DRAM, one hop.
    pub const LVL_REM_RAM1: u64 = 0x100;
    /// mem_lvl: remote DRAM, two hops.
    pub const LVL_REM_RAM2: u64 = 0x200;
    /// mem_lvl: remote cache, one hop.
    pub const LVL_REM_CCE1: u64 = 0x400;
    /// mem_lvl: remote cache, two hops.
    pub const LVL_REM_CCE2: u64 = 0x800;
    /// mem_lvl: I/O memory.
    pub const LVL_IO: u64 = 0x1000;
    /// mem_lvl: uncached memory.
    pub const LVL_UNC: u64 = 0x2000;

    /// mem_snoop: not available.
    pub const SNOOP_NA: u64 = 0x01;
    /// mem_snoop: no snoop.
    pub const SNOOP_NONE: u64 = 0x02;
    /// mem_snoop: snoop hit.
    pub const SNOOP_HIT: u64 = 0x04;
    /// mem_snoop: snoop miss.
    pub const SNOOP_MISS: u64 = 0x08;
    /// mem_snoop: snoop hit modified.
    pub const SNOOP_HITM: u64 = 0x10;

    /// mem_lock: not available.
    pub const LOCK_NA: u64 = 0x01;
    /// mem_lock: locked transaction.
    pub const LOCK_LOCKED: u64 = 0x02;

    /// mem_dtlb: not available.
    pub const TLB_NA: u64 = 0x01;
    /// mem_dtlb: hit.
    pub const TLB_HIT: u64 = 0x02;
    /// mem_dtlb: miss.
    pub const TLB_MISS: u64 = 0x04;
    /// mem_dtlb: L1.
    pub const TLB_L1: u64 = 0x08;
    /// mem_dtlb: L2.
    pub const TLB_L2: u64 = 0x10;
    /// mem_dtlb: hardware walker.
    pub const TLB_WK: u64 = 0x20;
    /// mem_dtlb: OS fault handler.
    pub const TLB_OS: u64 = 0x40;

    /// mem_lvl_num: L1.
    pub const LVLNUM_L1: u64 = 0x01;
    /// mem_lvl_num: L2.
    pub const LVLNUM_L2: u64 = 0x02;
    /// mem_lvl_num: L3.
    pub const LVLNUM_L3: u64 = 0x03;
    /// mem_lvl_num: L4.
    pub const LVLNUM_L4: u64 = 0x04;
    /// mem_lvl_num: L2 miss handling buffer.
    pub const LVLNUM_L2_MHB: u64 = 0x05;
    /// mem_lvl_num: memory-side cache.
    pub const LVLNUM_MSC: u64 = 0x06;
    /// mem_lvl_num: uncached.
    pub const LVLNUM_UNC: u64 = 0x08;
    /// mem_lvl_num: CXL.
    pub const LVLNUM_CXL: u64 = 0x09;
    /// mem_lvl_num: I/O.
    pub const LVLNUM_IO: u64 = 0x0a;
    /// mem_lvl_num: any cache.
    pub const LVLNUM_ANY_CACHE: u64 = 0x0b;
    /// mem_lvl_num: line fill buffer.
    pub const LVLNUM_LFB: u64 = 0x0c;
    /// mem_lvl_num: DRAM.
    pub const LVLNUM_RAM: u64 = 0x0d;
    /// mem_lvl_num: persistent memory.
    pub const LVLNUM_PMEM: u64 = 0x0e;
    /// mem_lvl_num: not available.
    pub const LVLNUM_NA: u64 = 0x0f;

    /// `PERF_MEM_NA`: what an unfilled data_src holds.
    pub const NA: u64 = (OP_NA << OP_SHIFT)
        | (LVL_NA << LVL_SHIFT)
        | (SNOOP_NA << SNOOP_SHIFT)
        | (LOCK_NA << LOCK_SHIFT)
        | (TLB_NA << TLB_SHIFT);
}

/// perf's build-id cache directory, where `record` stores copies of the recorded objects
/// and readers look them up by build-id: `$PERF_BUILDID_DIR` (perf's `buildid.dir`), else
/// `$HOME/.debug`; `None` without either.
pub fn buildid_cache_dir() -> Option<std::path::PathBuf> {
    let nonempty = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
    nonempty("PERF_BUILDID_DIR")
        .map(std::path::PathBuf::from)
        .or_else(|| nonempty("HOME").map(|h| std::path::PathBuf::from(h).join(".debug")))
}

/// `struct bpf_prog_info` offsets (`linux/bpf.h`) of the fields HEADER_BPF_PROG_INFO is read
/// for, and perf's `arrays` bits (`struct perf_bpil`).
pub mod bpf_prog_info {
    /// `id`: the program's id.
    pub const ID: usize = 4;
    /// `tag`: 8 bytes, the program's tag.
    pub const TAG: usize = 8;
    /// `jited_prog_len`: bytes of JIT code.
    pub const JITED_PROG_LEN: usize = 16;
    /// `jited_prog_insns`: the JIT code (an offset into the data).
    pub const JITED_PROG_INSNS: usize = 24;
    /// `name`: 16 bytes, NUL-padded.
    pub const NAME: usize = 64;
    /// `nr_jited_ksyms`: functions (program and subprograms).
    pub const NR_JITED_KSYMS: usize = 104;
    /// `nr_jited_func_lens`.
    pub const NR_JITED_FUNC_LENS: usize = 108;
    /// `jited_ksyms`: u64 address per function (an offset into the data).
    pub const JITED_KSYMS: usize = 112;
    /// `jited_func_lens`: u32 length per function (an offset into the data).
    pub const JITED_FUNC_LENS: usize = 120;
    /// `nr_prog_tags`.
    pub const NR_PROG_TAGS: usize = 180;
    /// `prog_tags`: 8-byte tag per function (an offset into the data).
    pub const PROG_TAGS: usize = 184;
    /// Bits of perf's `arrays` mask (`enum perf_bpil_array_types`): which pointers of the
    /// info are offsets into the data that follows it.
    /// `PERF_BPIL_JITED_INSNS`.
    pub const JITED_INSNS_BIT: u64 = 1 << 0;
    /// `PERF_BPIL_JITED_KSYMS`.
    pub const JITED_KSYMS_BIT: u64 = 1 << 3;
    /// `PERF_BPIL_JITED_FUNC_LENS`.
    pub const JITED_FUNC_LENS_BIT: u64 = 1 << 4;
    /// `PERF_BPIL_PROG_TAGS`.
    pub const PROG_TAGS_BIT: u64 = 1 << 8;
}
