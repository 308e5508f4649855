//! Quick probes of what the running kernel and CPU let us measure.

use perf_event_open_sys as sys;

/// Opens a counting event of the given type/config on the calling thread and closes it.
/// Returns the errno on failure.
pub fn try_open_counter(attr_type: u32, config: u64) -> Result<(), i32> {
    let mut attr = sys::bindings::perf_event_attr::default();
    attr.type_ = attr_type;
    attr.size = std::mem::size_of::<sys::bindings::perf_event_attr>() as u32;
    attr.config = config;
    attr.set_disabled(1);
    attr.set_exclude_kernel(1);
    attr.set_exclude_hv(1);
    // SAFETY: attr is a valid, fully initialised perf_event_attr that outlives the call.
    let fd = unsafe {
        sys::perf_event_open(
            &mut attr,
            0,
            -1,
            -1,
            sys::bindings::PERF_FLAG_FD_CLOEXEC as _,
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(0));
    }
    // SAFETY: fd is a file descriptor we own.
    unsafe { libc::close(fd) };
    Ok(())
}

/// Whether a hardware PMU is usable for this process: the generic `instructions` event opens.
///
/// On VMs without a virtual PMU this fails with ENOENT/EOPNOTSUPP; culprit then falls back to
/// software events (cpu-clock).
pub fn hardware_pmu_available() -> bool {
    try_open_counter(
        sys::bindings::PERF_TYPE_HARDWARE,
        sys::bindings::PERF_COUNT_HW_INSTRUCTIONS as u64,
    )
    .is_ok()
}
