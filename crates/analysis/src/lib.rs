//! culprit-analysis: pure analyses over the sample model (hotspots, call trees, …).
#![deny(missing_docs)]
