//! culprit-collect: Linux PMU collection (event parsing, perf_event_open, ring buffers,
//! launching and attaching) and the perf.data writer.
#![deny(missing_docs)]

pub mod events;
pub mod perfdata;
pub mod probe;
pub mod sysfs;
