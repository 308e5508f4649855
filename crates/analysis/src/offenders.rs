//! Worst offenders in bounded memory: IBM's paired-sampling detector (US9280438) run on the
//! sample stream.
//!
//! Per event type, a [`Detector`] is a two-counter state machine:
//! 1. **capture**: the location of the next observation becomes the candidate;
//! 2. **count**: every later observation of the event adds its weight to the first counter;
//!    those at the candidate's location also add to the second counter;
//! 3. if the second counter reaches `t2` no later than the first reaches `t1`, the candidate is
//!    **confirmed** (a significant source of the event) and goes to a bounded table of
//!    offenders; either way (confirmed, or the first counter reached `t1` first: a **miss**)
//!    the next observation is captured as a new candidate.
//!
//! The weight of an observation is its sample period ([`Unit::Events`]: each sample stands for
//! `period` events) or 1 ([`Unit::Samples`]). The capturing observation itself is not counted,
//! as the hardware starts its counters after the capture. The state is O(1) per event and the
//! offender table has a fixed capacity, so memory does not grow with the number of samples or
//! distinct addresses. The math (capture and confirmation chances, expected time to detection)
//! is in docs/offenders.md; [`confirm_probability`] and [`expected_observations_to_detection`]
//! compute it.
//!
//! [`events`] runs one detector per event of a sample stream with the user's settings;
//! [`report`] is `report --offenders` (the report model, the exact comparison, the document).

use culprit_decode::model::{EventId, Location};
use serde::Serialize;

pub mod events;
pub mod report;

pub use events::{EventDetectors, Settings};

/// What the thresholds count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    /// Events: each sample adds its period.
    Events,
    /// Samples: each sample adds 1.
    Samples,
}

/// Thresholds of the detector.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Config {
    /// Terminal value of the first counter (all observations of the event).
    pub t1: u64,
    /// Terminal value of the second counter (observations at the candidate).
    pub t2: u64,
    /// What `t1` and `t2` count.
    pub unit: Unit,
    /// Capacity of the offender table (distinct confirmed locations kept).
    pub capacity: usize,
}

/// Default `t1` in samples (see docs/offenders.md for why).
pub const DEFAULT_T1_SAMPLES: u64 = 100;
/// Default `t2` in samples.
pub const DEFAULT_T2_SAMPLES: u64 = 5;
/// Default offender table capacity.
pub const DEFAULT_CAPACITY: usize = 64;

impl Default for Config {
    fn default() -> Config {
        Config {
            t1: DEFAULT_T1_SAMPLES,
            t2: DEFAULT_T2_SAMPLES,
            unit: Unit::Samples,
            capacity: DEFAULT_CAPACITY,
        }
    }
}

/// Why a [`Config`] is unusable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// A threshold is zero.
    #[error("--t1 and --t2 must be > 0 (got t1 {t1}, t2 {t2})")]
    Zero {
        /// t1.
        t1: u64,
        /// t2.
        t2: u64,
    },
    /// `t2 > t1`: nothing could ever be confirmed.
    #[error("--t2 ({t2}) must not exceed --t1 ({t1}): no candidate could ever be confirmed")]
    T2AboveT1 {
        /// t1.
        t1: u64,
        /// t2.
        t2: u64,
    },
    /// Zero table capacity.
    #[error("the offender table needs a capacity > 0")]
    NoCapacity,
}

impl Config {
    /// Checks the thresholds.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.t1 == 0 || self.t2 == 0 {
            return Err(ConfigError::Zero {
                t1: self.t1,
                t2: self.t2,
            });
        }
        if self.t2 > self.t1 {
            return Err(ConfigError::T2AboveT1 {
                t1: self.t1,
                t2: self.t2,
            });
        }
        if self.capacity == 0 {
            return Err(ConfigError::NoCapacity);
        }
        Ok(())
    }
}

/// One observation: a sample reduced to what the detector needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Observation {
    /// Where the event happened (the identity of an address: DSO and file offset).
    pub location: Location,
    /// The sampled address (AVMA), kept for display.
    pub ip: u64,
    /// Process id, for symbolizing JIT code.
    pub pid: i32,
    /// Sample period (events this sample stands for).
    pub period: u64,
    /// Time in ns.
    pub time: u64,
}

/// A confirmed offender.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Offender {
    /// Location (DSO and file offset).
    #[serde(skip)]
    pub location: Location,
    /// The sampled address at the first confirmation.
    pub ip: u64,
    /// Process id at the first confirmation.
    pub pid: i32,
    /// Times this location was confirmed.
    pub confirmations: u64,
    /// First counter at the first confirmation.
    pub count1: u64,
    /// Second counter at the first confirmation.
    pub count2: u64,
    /// Time (ns) of the first confirmation.
    pub first_time: u64,
    /// Time (ns) of the latest confirmation.
    pub last_time: u64,
    /// Observations the detector had seen when this location was first confirmed.
    pub first_observation: u64,
}

#[derive(Debug, Clone, Copy)]
enum State {
    Capturing,
    Counting {
        candidate: Location,
        ip: u64,
        pid: i32,
        c1: u64,
        c2: u64,
    },
}

/// What one observation did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// The observation became the candidate.
    Captured,
    /// Counted; the round goes on.
    Counted,
    /// The candidate was confirmed (index into [`Detector::offenders`]).
    Confirmed(usize),
    /// The first counter reached `t1` first; the next observation is captured.
    Missed,
}

/// The paired-counter detector of one event type.
#[derive(Debug, Clone)]
pub struct Detector {
    config: Config,
    state: State,
    offenders: Vec<Offender>,
    observations: u64,
    rounds: u64,
    confirmations: u64,
    evictions: u64,
}

impl Detector {
    /// A detector with these thresholds (validate them first with [`Config::validate`]; an
    /// invalid config is clamped: zero thresholds become 1, `t2` at most `t1`).
    pub fn new(mut config: Config) -> Detector {
        config.t1 = config.t1.max(1);
        config.t2 = config.t2.clamp(1, config.t1);
        config.capacity = config.capacity.max(1);
        Detector {
            config,
            state: State::Capturing,
            offenders: Vec::with_capacity(config.capacity),
            observations: 0,
            rounds: 0,
            confirmations: 0,
            evictions: 0,
        }
    }

    /// The thresholds in use.
    pub fn config(&self) -> Config {
        self.config
    }

    /// Feeds one observation.
    pub fn observe(&mut self, o: &Observation) -> Step {
        self.observations += 1;
        let w = match self.config.unit {
            Unit::Events => o.period.max(1),
            Unit::Samples => 1,
        };
        match &mut self.state {
            State::Capturing => {
                self.rounds += 1;
                self.state = State::Counting {
                    candidate: o.location,
                    ip: o.ip,
                    pid: o.pid,
                    c1: 0,
                    c2: 0,
                };
                Step::Captured
            }
            State::Counting {
                candidate,
                ip,
                pid,
                c1,
                c2,
            } => {
                *c1 = c1.saturating_add(w);
                if o.location == *candidate {
                    *c2 = c2.saturating_add(w);
                }
                // "No later than": the second counter wins a tie.
                if *c2 >= self.config.t2 {
                    let (loc, ip, pid, c1, c2) = (*candidate, *ip, *pid, *c1, *c2);
                    self.state = State::Capturing;
                    self.confirmations += 1;
                    Step::Confirmed(self.confirm(loc, ip, pid, c1, c2, o.time))
                } else if *c1 >= self.config.t1 {
                    self.state = State::Capturing;
                    Step::Missed
                } else {
                    Step::Counted
                }
            }
        }
    }

    fn confirm(&mut self, loc: Location, ip: u64, pid: i32, c1: u64, c2: u64, time: u64) -> usize {
        if let Some(i) = self.offenders.iter().position(|x| x.location == loc) {
            let x = &mut self.offenders[i];
            x.confirmations += 1;
            x.last_time = time;
            return i;
        }
        let entry = Offender {
            location: loc,
            ip,
            pid,
            confirmations: 1,
            count1: c1,
            count2: c2,
            first_time: time,
            last_time: time,
            first_observation: self.observations,
        };
        if self.offenders.len() < self.config.capacity {
            self.offenders.push(entry);
            return self.offenders.len() - 1;
        }
        // Full: replace the entry confirmed least often (the oldest such on a tie), so a
        // fixed table keeps the strongest offenders.
        self.evictions += 1;
        let mut victim = 0;
        for (i, x) in self.offenders.iter().enumerate() {
            let v = &self.offenders[victim];
            if (x.confirmations, x.last_time) < (v.confirmations, v.last_time) {
                victim = i;
            }
        }
        self.offenders[victim] = entry;
        victim
    }

    /// The confirmed offenders, in order of first confirmation (or replacement).
    pub fn offenders(&self) -> &[Offender] {
        &self.offenders
    }

    /// The offenders sorted by confirmations (most first), then by first confirmation.
    pub fn ranked(&self) -> Vec<Offender> {
        let mut v = self.offenders.clone();
        v.sort_by(|a, b| {
            b.confirmations
                .cmp(&a.confirmations)
                .then(a.first_observation.cmp(&b.first_observation))
        });
        v
    }

    /// Observations fed so far.
    pub fn observations(&self) -> u64 {
        self.observations
    }

    /// Rounds started (candidates captured).
    pub fn rounds(&self) -> u64 {
        self.rounds
    }

    /// Confirmations so far (counting repeats of the same location).
    pub fn confirmations(&self) -> u64 {
        self.confirmations
    }

    /// Offenders dropped from a full table.
    pub fn evictions(&self) -> u64 {
        self.evictions
    }

    /// Bytes this detector occupies, table included (fixed: the table's capacity is
    /// reserved up front and never grows).
    pub fn memory_bytes(&self) -> usize {
        std::mem::size_of::<Detector>()
            + self.offenders.capacity() * std::mem::size_of::<Offender>()
    }
}

/// One [`Detector`] per event of a profile.
#[derive(Debug, Clone)]
pub struct Detectors {
    config: Config,
    per_event: Vec<Option<Detector>>,
}

impl Detectors {
    /// Detectors created lazily per event id, all with `config`.
    pub fn new(config: Config) -> Detectors {
        Detectors {
            config,
            per_event: Vec::new(),
        }
    }

    /// Feeds one observation of `event`.
    pub fn observe(&mut self, event: EventId, o: &Observation) -> Step {
        let i = event as usize;
        if self.per_event.len() <= i {
            self.per_event.resize(i + 1, None);
        }
        self.per_event[i]
            .get_or_insert_with(|| Detector::new(self.config))
            .observe(o)
    }

    /// The detector of `event`, if it saw anything.
    pub fn get(&self, event: EventId) -> Option<&Detector> {
        self.per_event.get(event as usize)?.as_ref()
    }

    /// (event, detector) for every event that saw observations.
    pub fn iter(&self) -> impl Iterator<Item = (EventId, &Detector)> {
        self.per_event
            .iter()
            .enumerate()
            .filter_map(|(i, d)| Some((i as EventId, d.as_ref()?)))
    }

    /// Total bytes of all detectors.
    pub fn memory_bytes(&self) -> usize {
        std::mem::size_of::<Detectors>()
            + self.per_event.capacity() * std::mem::size_of::<Option<Detector>>()
            + self
                .per_event
                .iter()
                .flatten()
                .map(|d| d.memory_bytes() - std::mem::size_of::<Detector>())
                .sum::<usize>()
    }
}

/// Bytes a `HashMap<(DsoId, file offset), u64>` histogram (hashbrown, as std's) needs for
/// `n` distinct addresses: buckets are a power of two at most 7/8 full, each bucket holds a
/// 24-byte entry (u32 + u64 key, u64 count, padded) and one control byte, plus 16 trailing
/// control bytes. This is the memory a full histogram costs, for comparison with
/// [`Detector::memory_bytes`].
pub fn histogram_bytes(n: usize) -> usize {
    if n == 0 {
        return 0;
    }
    let buckets = if n < 8 {
        if n < 4 {
            4
        } else {
            8
        }
    } else {
        (n.saturating_mul(8) / 7).next_power_of_two()
    };
    buckets * (24 + 1) + 16
}

/// The chance that one round confirms an address causing a fraction `p` of the events:
/// `p` (it is captured) times `P(Binomial(t1, p) >= t2)` (among the next `t1` observations,
/// at least `t2` are its own). Thresholds in observations (samples, or events when every
/// sample has the same period and the thresholds are multiples of it).
pub fn confirm_probability(t1: u64, t2: u64, p: f64) -> f64 {
    if !(0.0..=1.0).contains(&p) || t2 > t1 || t2 == 0 {
        return 0.0;
    }
    p * binomial_tail(t1, t2, p)
}

/// `P(Binomial(n, p) >= k)`, summed in log space (stable for n up to millions).
pub fn binomial_tail(n: u64, k: u64, p: f64) -> f64 {
    if k == 0 {
        return 1.0;
    }
    if k > n || p <= 0.0 {
        return 0.0;
    }
    if p >= 1.0 {
        return 1.0;
    }
    // P(X < k) = sum_{i<k} C(n,i) p^i (1-p)^(n-i), accumulated term by term.
    let (lp, lq) = (p.ln(), (1.0 - p).ln());
    let mut log_c = 0.0f64; // ln C(n, 0)
    let mut below = 0.0f64;
    for i in 0..k {
        if i > 0 {
            log_c += ((n - i + 1) as f64).ln() - (i as f64).ln();
        }
        below += (log_c + i as f64 * lp + (n - i) as f64 * lq).exp();
    }
    (1.0 - below).clamp(0.0, 1.0)
}

/// Expected observations until an address with fraction `p` is first confirmed, when every
/// other observation comes from addresses that never confirm (the worst case for waiting:
/// every other round runs the full `t1`). A round costs 1 capture plus `t1` observations on a
/// miss, or about `t2 / p` when it confirms; rounds repeat until one confirms (chance
/// [`confirm_probability`] each). Infinite when `p` can never be confirmed.
pub fn expected_observations_to_detection(t1: u64, t2: u64, p: f64) -> f64 {
    let q = confirm_probability(t1, t2, p);
    if q <= 0.0 {
        return f64::INFINITY;
    }
    // Failed rounds: geometric number (1-q)/q of them, each 1 + t1 long (a captured-but-
    // missed round of the address itself also ends at t1). The final round: 1 + t2/p.
    (1.0 - q) / q * (1.0 + t1 as f64) + 1.0 + t2 as f64 / p
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obs(off: u64, period: u64, time: u64) -> Observation {
        Observation {
            location: Location {
                dso: Some(0),
                file_offset: off,
            },
            ip: 0x1000 + off,
            pid: 1,
            period,
            time,
        }
    }

    fn cfg(t1: u64, t2: u64, unit: Unit) -> Config {
        Config {
            t1,
            t2,
            unit,
            capacity: 4,
        }
    }

    #[test]
    fn confirms_when_second_counter_reaches_t2_first() {
        let mut d = Detector::new(cfg(10, 3, Unit::Samples));
        assert_eq!(d.observe(&obs(1, 1, 0)), Step::Captured);
        assert_eq!(d.observe(&obs(2, 1, 1)), Step::Counted);
        assert_eq!(d.observe(&obs(1, 1, 2)), Step::Counted);
        assert_eq!(d.observe(&obs(1, 1, 3)), Step::Counted);
        assert_eq!(d.observe(&obs(1, 1, 4)), Step::Confirmed(0));
        let o = &d.offenders()[0];
        assert_eq!((o.count1, o.count2, o.first_time), (4, 3, 4));
        assert_eq!(o.location.file_offset, 1);
        // A new round starts with a capture.
        assert_eq!(d.observe(&obs(7, 1, 5)), Step::Captured);
    }

    #[test]
    fn misses_when_first_counter_reaches_t1_first() {
        let mut d = Detector::new(cfg(4, 2, Unit::Samples));
        d.observe(&obs(1, 1, 0));
        assert_eq!(d.observe(&obs(1, 1, 0)), Step::Counted);
        assert_eq!(d.observe(&obs(2, 1, 0)), Step::Counted);
        assert_eq!(d.observe(&obs(3, 1, 0)), Step::Counted);
        assert_eq!(d.observe(&obs(4, 1, 0)), Step::Missed);
        assert!(d.offenders().is_empty());
    }

    #[test]
    fn tie_goes_to_the_second_counter() {
        // t1 == t2: every observation at the candidate; both reach the threshold together.
        let mut d = Detector::new(cfg(2, 2, Unit::Samples));
        d.observe(&obs(5, 1, 0));
        d.observe(&obs(5, 1, 0));
        assert_eq!(d.observe(&obs(5, 1, 0)), Step::Confirmed(0));
    }

    #[test]
    fn events_unit_weights_by_period() {
        let mut d = Detector::new(cfg(1000, 300, Unit::Events));
        d.observe(&obs(1, 100, 0));
        assert_eq!(d.observe(&obs(1, 100, 1)), Step::Counted);
        assert_eq!(d.observe(&obs(2, 500, 2)), Step::Counted);
        assert_eq!(d.observe(&obs(1, 200, 3)), Step::Confirmed(0));
        assert_eq!(d.offenders()[0].count1, 800);
        // Counting in samples, the same stream would not confirm yet.
        let mut s = Detector::new(cfg(1000, 300, Unit::Samples));
        for (o, p) in [(1, 100), (1, 100), (2, 500), (1, 200)] {
            assert!(!matches!(s.observe(&obs(o, p, 0)), Step::Confirmed(_)));
        }
    }

    #[test]
    fn repeat_confirmations_count_on_one_entry_and_table_is_bounded() {
        let mut d = Detector::new(cfg(3, 1, Unit::Samples));
        // Pairs (capture X, then X again) confirm X at once.
        for round in 0..20u64 {
            let off = round % 8;
            d.observe(&obs(off, 1, round));
            d.observe(&obs(off, 1, round));
        }
        assert_eq!(d.offenders().len(), 4, "capacity 4");
        assert!(d.evictions() > 0);
        let before = d.memory_bytes();
        for i in 0..10_000u64 {
            d.observe(&obs(i, 1, i));
        }
        assert_eq!(d.memory_bytes(), before, "memory is fixed");
        let mut d = Detector::new(cfg(3, 1, Unit::Samples));
        for _ in 0..5 {
            d.observe(&obs(9, 1, 0));
            d.observe(&obs(9, 1, 0));
        }
        assert_eq!(d.offenders().len(), 1);
        assert_eq!(d.offenders()[0].confirmations, 5);
    }

    #[test]
    fn config_validation() {
        assert!(cfg(10, 11, Unit::Samples).validate().is_err());
        assert!(cfg(0, 0, Unit::Samples).validate().is_err());
        assert!(Config::default().validate().is_ok());
    }

    #[test]
    fn binomial_tail_matches_direct_sums() {
        // P(Bin(4, 0.5) >= 2) = 11/16.
        assert!((binomial_tail(4, 2, 0.5) - 11.0 / 16.0).abs() < 1e-12);
        assert!((binomial_tail(10, 1, 0.1) - (1.0 - 0.9f64.powi(10))).abs() < 1e-12);
        assert_eq!(binomial_tail(5, 6, 0.9), 0.0);
    }

    /// A deterministic xorshift stream for the simulation.
    fn rng(state: &mut u64) -> f64 {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        (*state >> 11) as f64 / (1u64 << 53) as f64
    }

    #[test]
    fn simulation_agrees_with_the_formulas() {
        // One address with fraction p, the rest spread over 10 000 addresses that never confirm.
        let (t1, t2, p) = (100u64, 5u64, 0.1f64);
        let mut seed = 0x9e3779b97f4a7c15u64;
        let runs = 300;
        let mut total = 0.0;
        let (mut rounds, mut hits) = (0u64, 0u64);
        for _ in 0..runs {
            let mut d = Detector::new(cfg(t1, t2, Unit::Samples));
            let mut n = 0u64;
            loop {
                n += 1;
                let off = if rng(&mut seed) < p {
                    0
                } else {
                    1 + (rng(&mut seed) * 10_000.0) as u64
                };
                match d.observe(&obs(off, 1, n)) {
                    Step::Confirmed(_) => {
                        assert_eq!(d.offenders()[0].location.file_offset, 0);
                        break;
                    }
                    Step::Captured => rounds += 1,
                    _ => {}
                }
            }
            hits += 1;
            total += n as f64;
        }
        let per_round = hits as f64 / rounds as f64;
        let q = confirm_probability(t1, t2, p);
        assert!(
            (per_round - q).abs() < 0.3 * q,
            "per-round confirmation {per_round} vs formula {q}"
        );
        let mean = total / runs as f64;
        let want = expected_observations_to_detection(t1, t2, p);
        assert!(
            (mean - want).abs() < 0.25 * want,
            "mean observations to detection {mean} vs formula {want}"
        );
    }
}
