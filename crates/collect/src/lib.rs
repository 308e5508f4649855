//! culprit-collect: Linux PMU collection (event parsing, perf_event_open, ring buffers,
//! launching and attaching) and the perf.data writer.
#![deny(missing_docs)]

pub mod buildid;
pub mod buildid_cache;
pub mod count;
pub mod error;
pub mod events;
pub mod ibs;
pub mod inventory;
pub mod launch;
pub mod live;
pub mod modes;
pub mod offcpu;
pub mod perfdata;
pub mod privilege;
pub mod procfs;
pub mod record;
pub mod ring;
pub mod stat;
pub mod support;
pub mod sysfs;
pub mod target;
pub mod tracefs;
pub mod verbose;
