//! perf's `--time START,STOP`: keep only the samples timed inside a window. The bounds are
//! seconds of the samples' clock (what `culprit script` prints), with up to 9 decimals;
//! either may be left out (`10.5,` or `,11`). As perf, both bounds are inclusive, and the
//! samples outside the window are dropped before anything counts them: the totals (the
//! percentage base) are the window's.

use std::fmt;
use std::str::FromStr;

use culprit_decode::model::{Profile, Sample};

/// A time window of samples, in nanoseconds (both ends inclusive).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TimeWindow {
    /// The first time kept (none: from the start).
    pub start: Option<u64>,
    /// The last time kept (none: to the end).
    pub end: Option<u64>,
}

impl TimeWindow {
    /// Whether a sample at `time` (ns) is in the window.
    pub fn contains(&self, time: u64) -> bool {
        self.start.is_none_or(|s| time >= s) && self.end.is_none_or(|e| time <= e)
    }
}

/// Why a `--time` value is not a window.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("--time {value:?}: {reason} (expected START,STOP in seconds, e.g. 1234.5,1236 or 1234.5,)")]
pub struct TimeWindowError {
    value: String,
    reason: &'static str,
}

/// `12.345` seconds as nanoseconds (at most 9 decimals, as perf).
fn parse_seconds(text: &str) -> Result<u64, &'static str> {
    let (whole, frac) = text.split_once('.').unwrap_or((text, ""));
    if whole.is_empty() && frac.is_empty() {
        return Err("a bound has no digits");
    }
    if !whole
        .bytes()
        .chain(frac.bytes())
        .all(|b| b.is_ascii_digit())
    {
        return Err("a bound is not a number of seconds");
    }
    if frac.len() > 9 {
        return Err("more than 9 decimals (nanoseconds)");
    }
    let secs: u64 = if whole.is_empty() {
        0
    } else {
        whole.parse().map_err(|_| "a bound is too large")?
    };
    let nanos: u64 = format!("{frac:0<9}").parse().unwrap_or(0);
    secs.checked_mul(1_000_000_000)
        .and_then(|n| n.checked_add(nanos))
        .ok_or("a bound is too large")
}

impl FromStr for TimeWindow {
    type Err = TimeWindowError;

    fn from_str(value: &str) -> Result<Self, Self::Err> {
        let err = |reason| TimeWindowError {
            value: value.to_string(),
            reason,
        };
        let (a, b) = value.split_once(',').ok_or_else(|| err("no comma"))?;
        let bound = |s: &str| {
            let s = s.trim();
            if s.is_empty() {
                Ok(None)
            } else {
                parse_seconds(s).map(Some)
            }
        };
        let window = TimeWindow {
            start: bound(a).map_err(err)?,
            end: bound(b).map_err(err)?,
        };
        if let (Some(s), Some(e)) = (window.start, window.end) {
            if s > e {
                return Err(err("START is after STOP"));
            }
        }
        Ok(window)
    }
}

impl fmt::Display for TimeWindow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let secs = |t: u64| format!("{}.{:09}", t / 1_000_000_000, t % 1_000_000_000);
        write!(
            f,
            "{},{}",
            self.start.map(secs).unwrap_or_default(),
            self.end.map(secs).unwrap_or_default()
        )
    }
}

/// A [`culprit_decode::Fold`] that passes on only the samples inside a window.
#[derive(Debug)]
pub struct InWindow<F> {
    /// The window.
    pub window: TimeWindow,
    /// What the kept samples are folded into.
    pub inner: F,
}

impl<F: culprit_decode::Fold> culprit_decode::Fold for InWindow<F> {
    fn add(&mut self, profile: &Profile, sample: &Sample) {
        if self.window.contains(sample.time) {
            self.inner.add(profile, sample);
        }
    }

    fn split(&self) -> Self {
        InWindow {
            window: self.window,
            inner: self.inner.split(),
        }
    }

    fn merge(&mut self, later: Self, profile: &Profile) {
        self.inner.merge(later.inner, profile);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_parse_reads_seconds_to_the_nanosecond_and_open_bounds() {
        let w: TimeWindow = "12.5,13.000000001".parse().unwrap();
        assert_eq!(w.start, Some(12_500_000_000));
        assert_eq!(w.end, Some(13_000_000_001));
        let w: TimeWindow = "7,".parse().unwrap();
        assert_eq!((w.start, w.end), (Some(7_000_000_000), None));
        let w: TimeWindow = ",.25".parse().unwrap();
        assert_eq!((w.start, w.end), (None, Some(250_000_000)));
        assert_eq!(w.to_string(), ",0.250000000");
        assert_eq!(
            "12.5,13.000000001"
                .parse::<TimeWindow>()
                .unwrap()
                .to_string(),
            "12.500000000,13.000000001"
        );
    }

    #[test]
    fn test_parse_rejects_what_is_not_a_window() {
        for bad in ["12", "a,b", "1.0000000001,2", "3,2", "1.2.3,4", "-1,2"] {
            assert!(bad.parse::<TimeWindow>().is_err(), "{bad}");
        }
    }

    #[test]
    fn test_contains_keeps_both_bounds() {
        let w = TimeWindow {
            start: Some(10),
            end: Some(20),
        };
        assert!(!w.contains(9) && w.contains(10) && w.contains(20) && !w.contains(21));
        assert!(TimeWindow::default().contains(0));
    }
}
