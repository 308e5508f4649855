//! ARM Statistical Profiling Extension (SPE) decoding.
//!
//! SPE writes a byte stream of packets into the AUX buffer; a run of packets ending at a
//! timestamp or end packet describes one sampled operation (a "record"). [`packet`] splits the
//! stream into packets with the semantics of perf's `arm-spe-pkt-decoder.c` (Linux 6.1), and
//! [`record`] groups packets into records as perf's `arm-spe-decoder.c` does, and [`synth`] says
//! which perf events each record becomes. All are pure and never panic: every byte sequence
//! decodes to packets, records or skipped bytes.

pub mod packet;
pub mod record;
pub mod synth;

pub use packet::{decode_packet, AddressKind, CounterKind, Packet, PacketError};
pub use record::{decode_records, SpeRecord};
pub use synth::{
    data_source, sample_address, synthesized_events, DataSourceMapping, SpeEvent, ALL_EVENTS,
};
