//! A recorded night at one moment: which sample each lane's figures come from, and when each
//! lane ended. Samples are stamped with the clock, a worker's lines with its work (a `done`
//! may be stamped a little ahead of the sample that first shows the lane over), so a lane's
//! figures are chosen per lane: before its last line, the samples of it still working; from
//! its last line on, the sample that shows it over. Pure: the replay, its exports and a look
//! back all read a moment through here, so none shows a verdict, a claim or a figure the night
//! had not come to.

use crate::engine::LaneSnapshot;
use crate::record::{Event, Sample};

/// How near two moments are the same one, in sim seconds.
const SAME: f64 = 1e-6;

/// Where a lane ended in a recording.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LaneOver {
    /// The first sample that shows the lane over.
    pub sample: usize,
    /// The moment of the lane's last line logged by then (its `done`, or its last failure), or
    /// that sample's moment when it logged none.
    pub at: f64,
}

/// Where `lane` ended, if the recording shows it over.
#[must_use]
pub fn lane_over(samples: &[Sample], events: &[Event], lane: usize) -> Option<LaneOver> {
    let sample =
        (samples.iter()).position(|s| s.lanes.get(lane).is_some_and(LaneSnapshot::finished))?;
    let over = &samples[sample];
    // The lines logged by the time that sample was taken (in real time: a `done` is stamped
    // with its work's moment, which may be after the sample's clock reading).
    let said = (events.iter())
        .filter(|e| e.lane == Some(lane) && e.real_ms <= over.real_ms)
        .map(|e| e.sim)
        .fold(f64::NEG_INFINITY, f64::max);
    let at = if said.is_finite() { said } else { over.sim };
    Some(LaneOver { sample, at })
}

/// The index of the last sample at or before `at` (the first, before any).
#[must_use]
pub fn sample_index(samples: &[Sample], at: f64) -> Option<usize> {
    if samples.is_empty() {
        return None;
    }
    Some(
        samples
            .partition_point(|s| s.sim <= at + 1e-9)
            .saturating_sub(1),
    )
}

/// The index of the sample `lane`'s figures come from at `at`: the lane still working before
/// its last line, the lane over from it on.
#[must_use]
pub fn lane_sample_index(samples: &[Sample], at: f64, over: Option<LaneOver>) -> Option<usize> {
    let i = sample_index(samples, at)?;
    Some(match over {
        Some(over) if at >= over.at - SAME => i.max(over.sample),
        Some(over) if over.sample > 0 => i.min(over.sample - 1),
        _ => i,
    })
}

/// Whether `lane` has ended at `at` (its verdict and its claim may show).
#[must_use]
pub fn ended(over: Option<LaneOver>, at: f64) -> bool {
    over.is_some_and(|o| at >= o.at - SAME)
}

/// Each lane's snapshot at `at`, and how many samples each lane's curves may draw from.
#[must_use]
pub fn snapshots_at(
    samples: &[Sample],
    at: f64,
    overs: &[Option<LaneOver>],
) -> Vec<Option<(usize, LaneSnapshot)>> {
    overs
        .iter()
        .enumerate()
        .map(|(lane, over)| {
            let i = lane_sample_index(samples, at, *over)?;
            Some((i, samples[i].lanes.get(lane)?.clone()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snap(rows: u64, done: bool) -> LaneSnapshot {
        LaneSnapshot::of_rows(rows, done)
    }

    #[test]
    fn a_lane_is_over_at_its_done_line_with_the_figures_that_show_it_over() {
        // The incident's guarded lane as recorded: its `done` is stamped 02:15:21.24, a little
        // after the clock's reading in the sample that first shows it over (02:15:20.67).
        let samples = vec![
            Sample {
                real_ms: 9196,
                sim: 1000.0,
                lanes: vec![snap(199, false)],
            },
            Sample {
                real_ms: 9216,
                sim: 1002.0,
                lanes: vec![snap(200, true)],
            },
            Sample {
                real_ms: 9300,
                sim: 1010.0,
                lanes: vec![snap(200, true)],
            },
        ];
        let events = vec![Event {
            real_ms: 9216,
            sim: 1002.5,
            lane: Some(0),
            source: crate::engine::Source::Worker,
            kind: crate::engine::Kind::Done,
            text: "rows_written=200  status=ok".into(),
            mark: None,
            fact: None,
        }];
        let over = lane_over(&samples, &events, 0);
        assert_eq!(
            over,
            Some(LaneOver {
                sample: 1,
                at: 1002.5
            })
        );
        let at = |t| lane_sample_index(&samples, t, over);
        // Before the done line: still working, even where the sample shows it over.
        assert_eq!(at(1002.2), Some(0));
        assert!(!ended(over, 1002.2));
        // At it: the figures that show it over.
        assert_eq!(at(1002.5), Some(1));
        assert!(ended(over, 1002.5));
        assert_eq!(at(1020.0), Some(2));
    }
}
