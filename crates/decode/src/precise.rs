//! The precise view of samples as a stream delivers them ([`PreciseDecoder`]): which
//! samples are IBS and of which kind, the IBS context of the file's CPU, and the one rule
//! that gives a sample's [`PreciseSample`] (IBS ops with a data source, else PEBS/SPE
//! fields). `culprit script`, the latency histograms, the HTML report's "why" column and
//! `culprit ibs` (which decodes IBS of files without an AMD CPUID too, with
//! [`IbsContext::NEUTRAL`]) all take their IBS kinds and decodings from here.

use crate::ibs::{self, IbsContext, IbsError, IbsKind, IbsSample};
use crate::model::{Profile, Sample};
use crate::pebs::{self, PreciseSample};

/// The precise view of samples, as a stream delivers them: each event's IBS kind, the IBS
/// context once the header's CPUID is known, and the rule that gives a sample's
/// [`PreciseSample`] (IBS ops with a data source; else PEBS/SPE fields). One rule for
/// `script` and every other view of latencies, data sources and addresses.
#[derive(Debug, Default)]
pub struct PreciseDecoder {
    /// Per event: its IBS kind (events may still arrive in a pipe-mode stream).
    kinds: Vec<Option<IbsKind>>,
    /// The IBS decoding context of the file's CPU, once the header's CPUID is known.
    ctx: Option<Option<IbsContext>>,
}

/// A sample's IBS decoding, if its event is IBS and the file's CPU decodes it.
pub type IbsDecoding = Option<Result<IbsSample, IbsError>>;

impl PreciseDecoder {
    /// The IBS kind of sample `s`'s event (`None` for an event of another PMU).
    pub fn kind(&mut self, profile: &Profile, s: &Sample) -> Option<IbsKind> {
        if self.kinds.len() != profile.events.len() {
            self.kinds = profile
                .events
                .iter()
                .map(|e| e.pmu.as_deref().and_then(IbsKind::from_pmu))
                .collect();
        }
        self.kinds.get(s.event as usize).copied().flatten()
    }

    /// Sample `s` of `profile` (the profile read so far): its IBS decoding, its precise
    /// model, and the IBS context used.
    pub fn decode(
        &mut self,
        profile: &Profile,
        s: &Sample,
    ) -> (IbsDecoding, Option<PreciseSample>, Option<IbsContext>) {
        let kind = self.kind(profile, s);
        // The header's features (CPUID) come before the samples, in a file and in a
        // pipe-mode stream alike; decided once the CPUID is known.
        let ctx = match self.ctx {
            Some(ctx) => ctx,
            None => {
                let ctx = IbsContext::from_meta(&profile.meta);
                if profile.meta.cpuid.is_some() {
                    self.ctx = Some(ctx);
                }
                ctx
            }
        };
        // perf decodes IBS only for AMD files (CPUID) whose PMU mapping names the IBS PMU.
        let decoded = match (kind, &ctx) {
            (Some(k), Some(c)) => Some(ibs::decode(k, profile.raw(s), c)),
            _ => None,
        };
        let precise = match (&decoded, &ctx) {
            (Some(Ok(IbsSample::Op(op))), Some(c)) => {
                Some(pebs::from_ibs_op(op, c, s.ip)).filter(|p| p.data_src.is_some())
            }
            (None, _) => pebs::from_pebs(s),
            _ => None,
        };
        (decoded, precise, ctx)
    }
}
