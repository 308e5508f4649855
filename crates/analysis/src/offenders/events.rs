//! Detectors per event of a sample stream, with thresholds from the user's settings: explicit
//! thresholds as given, defaults in samples, or defaults in events scaled by the event's
//! typical period (which is not known before its first samples).

use culprit_decode::model::{EventId, Sample};

use super::{Config, ConfigError, Detector, Detectors, Observation, Step, Unit};

/// The user's thresholds (`--t1`, `--t2`, `--offenders-unit`); `None`: the default for the
/// unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    /// First counter's terminal value.
    pub t1: Option<u64>,
    /// Second counter's terminal value.
    pub t2: Option<u64>,
    /// What they count.
    pub unit: Unit,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            t1: None,
            t2: None,
            unit: Unit::Samples,
        }
    }
}

impl Settings {
    /// The detector config for an event whose typical sample has `period`: explicit
    /// thresholds are used as given; defaults are in samples, scaled by the period in events.
    pub fn config(&self, period: u64) -> Result<Config, ConfigError> {
        let scale = match self.unit {
            Unit::Samples => 1,
            Unit::Events => period.max(1),
        };
        let c = Config {
            t1: self
                .t1
                .unwrap_or(super::DEFAULT_T1_SAMPLES.saturating_mul(scale)),
            t2: self
                .t2
                .unwrap_or(super::DEFAULT_T2_SAMPLES.saturating_mul(scale)),
            unit: self.unit,
            capacity: super::DEFAULT_CAPACITY,
        };
        c.validate()?;
        Ok(c)
    }

    /// Whether a default threshold counts events, which needs the event's typical period.
    fn needs_probe(&self) -> bool {
        self.unit == Unit::Events && (self.t1.is_none() || self.t2.is_none())
    }
}

/// Samples buffered per event before its detector exists, when default thresholds in events
/// need the event's typical period (frequency-mode periods ramp up from 1 at the start).
pub const PERIOD_PROBE: usize = 32;

/// Per-event detectors. With explicit thresholds, or in samples, a detector starts at the
/// event's first sample; with default thresholds in events it starts after [`PERIOD_PROBE`]
/// samples (replayed into it), scaled by their median period.
#[derive(Debug, Clone)]
pub struct EventDetectors {
    settings: Settings,
    per_event: Vec<Option<Detectors>>,
    pending: Vec<Vec<Observation>>,
}

impl EventDetectors {
    /// Detectors with these settings (bad explicit thresholds are refused here, before any
    /// work).
    pub fn new(settings: Settings) -> Result<EventDetectors, ConfigError> {
        settings.config(1)?;
        Ok(EventDetectors {
            settings,
            per_event: Vec::new(),
            pending: Vec::new(),
        })
    }

    /// Feeds one sample; `None` while its event's detector waits for its typical period.
    pub fn observe(&mut self, s: &Sample) -> Option<Step> {
        let i = s.event as usize;
        if self.per_event.len() <= i {
            self.per_event.resize_with(i + 1, || None);
            self.pending.resize_with(i + 1, Vec::new);
        }
        let o = Observation {
            location: s.location,
            ip: s.ip,
            pid: s.pid,
            period: s.period,
            time: s.time,
        };
        if self.per_event[i].is_none() && self.settings.needs_probe() {
            self.pending[i].push(o);
            if self.pending[i].len() < PERIOD_PROBE {
                return None;
            }
            return self.start(i);
        }
        let settings = self.settings;
        let d = self.per_event[i].get_or_insert_with(|| {
            // Validated in new(); a scaled default cannot fail (t2 <= t1 scale alike).
            Detectors::new(settings.config(s.period).unwrap_or_default())
        });
        Some(d.observe(s.event, &o))
    }

    /// Creates event `i`'s detector from its buffered samples and replays them.
    fn start(&mut self, i: usize) -> Option<Step> {
        let pending = std::mem::take(&mut self.pending[i]);
        let mut periods: Vec<u64> = pending.iter().map(|o| o.period).collect();
        periods.sort_unstable();
        let median = periods.get(periods.len() / 2).copied().unwrap_or(1);
        let mut d = Detectors::new(self.settings.config(median).unwrap_or_default());
        let mut last = None;
        for o in &pending {
            last = Some(d.observe(i as EventId, o));
        }
        self.per_event[i] = Some(d);
        last
    }

    /// Starts the detectors of events that had fewer than [`PERIOD_PROBE`] samples (at the
    /// end of the stream).
    pub fn flush(&mut self) {
        for i in 0..self.pending.len() {
            if !self.pending[i].is_empty() {
                self.start(i);
            }
        }
    }

    /// The detector of event `e`, once it exists.
    pub fn get(&self, e: EventId) -> Option<&Detector> {
        self.per_event.get(e as usize)?.as_ref()?.get(e)
    }

    /// Bytes of all detectors and of the samples buffered for the period probe.
    pub fn memory_bytes(&self) -> usize {
        self.per_event.capacity() * std::mem::size_of::<Option<Detectors>>()
            + self.pending.capacity() * std::mem::size_of::<Vec<Observation>>()
            + self
                .pending
                .iter()
                .map(|v| v.capacity() * std::mem::size_of::<Observation>())
                .sum::<usize>()
            + self
                .per_event
                .iter()
                .flatten()
                .map(|d| d.memory_bytes())
                .sum::<usize>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use culprit_decode::model::Location;

    fn sample(event: u16, off: u64, period: u64) -> Sample {
        Sample {
            event,
            ip: 0x1000 + off,
            location: Location {
                dso: Some(0),
                file_offset: off,
            },
            period,
            ..Sample::default()
        }
    }

    #[test]
    fn test_default_thresholds_in_events_scale_by_the_median_period() {
        let mut d = EventDetectors::new(Settings {
            t1: None,
            t2: None,
            unit: Unit::Events,
        })
        .unwrap();
        for _ in 0..PERIOD_PROBE - 1 {
            assert_eq!(d.observe(&sample(0, 1, 1000)), None);
        }
        assert!(d.get(0).is_none());
        assert!(d.observe(&sample(0, 1, 1000)).is_some());
        let c = d.get(0).unwrap().config();
        assert_eq!((c.t1, c.t2), (100 * 1000, 5 * 1000));
        // Explicit thresholds start at once and are refused when unusable.
        assert!(EventDetectors::new(Settings {
            t1: Some(5),
            t2: Some(6),
            unit: Unit::Samples
        })
        .is_err());
        let mut s = EventDetectors::new(Settings::default()).unwrap();
        assert_eq!(s.observe(&sample(1, 1, 7)), Some(Step::Captured));
        assert!(s.get(0).is_none() && s.get(1).is_some());
    }
}
