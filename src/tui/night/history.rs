//! The live night's charts over time: each lane's curves (downsampled as they grow), its kill and
//! restart markers, and its verdict, read on a thread of its own once the lane is over.

use std::sync::mpsc;
use std::time::Instant;

use crate::record::LaneEnd;
use crate::tui::chrome::{MAX_POINTS, marker_kind};
use crate::tui::lecture::Why;
use crate::tui::view::Marker;

use super::LiveNight;

/// One curve, downsampled as it grows.
#[derive(Debug, Clone, Default)]
pub(super) struct Curve {
    pub(super) points: Vec<(f64, f64)>,
    /// Minimum sim seconds between kept points.
    gap: f64,
}

impl Curve {
    fn push(&mut self, t: f64, v: f64) {
        // A night held still (a caption being read, paused) samples the same point every tick:
        // kept once, it neither crowds out the night's history nor changes the frame.
        if self.points.last() == Some(&(t, v)) {
            return;
        }
        let n = self.points.len();
        // Too close to the point before the last: move the last point instead of adding one.
        if n > 1 && t - self.points[n - 2].0 < self.gap {
            self.points[n - 1] = (t, v);
        } else {
            self.points.push((t, v));
        }
        if self.points.len() > MAX_POINTS {
            let kept: Vec<(f64, f64)> = self.points.iter().copied().step_by(2).collect();
            self.points = kept;
            self.gap = if self.gap == 0.0 { 1.0 } else { self.gap * 2.0 };
        }
    }
}

#[derive(Debug, Default)]
/// One lane's charts and verdict, as the night has drawn them so far.
pub(super) struct LaneHistory {
    pub(super) rows: Curve,
    pub(super) distinct: Curve,
    pub(super) duplicated: Curve,
    pub(super) checkpoints: Curve,
    pub(super) heartbeat_age: Curve,
    pub(super) markers: Vec<Marker>,
    /// The verdict of `inspect` once the lane has finished.
    pub(super) end: Option<LaneEnd>,
    /// The verdict being read, on its own thread.
    pub(super) pending: Option<mpsc::Receiver<Option<LaneEnd>>>,
    /// The verdict has been read (or could not be: then `end` stays empty).
    pub(super) verdict_read: bool,
    /// The lane had finished at the last sample: its curves end there instead of running on
    /// flat (and the frame stays the same, so it is not drawn again).
    pub(super) ended: bool,
}

impl LiveNight {
    /// Adds this tick's figures to the charts, and reads each finished lane's verdict.
    pub(super) fn record_history(&mut self, now: Instant) {
        let t = self.engine.clock().at(now).since_start();
        let dead_man = self.engine.config().dead_man;
        let mut verdicts = Vec::new();
        for (i, (lane, history)) in (self.engine.lanes().iter().zip(&mut self.history)).enumerate()
        {
            let o = &lane.observer();
            if !history.ended {
                history.rows.push(t, o.rows as f64);
                history.distinct.push(t, o.distinct as f64);
                history.duplicated.push(t, o.duplicated as f64);
                history.checkpoints.push(t, o.checkpoints as f64);
                if let Some(age) = lane.heartbeat_sim_age() {
                    history.heartbeat_age.push(t, age);
                }
            }
            history.ended = lane.finished();
            if let Some(pending) = &history.pending
                && let Ok(end) = pending.try_recv()
            {
                if let Some(end) = &end {
                    let messages = lane.snapshot(dead_man).messages;
                    let name = &lane.config().name;
                    verdicts.push((i, Why::verdict(name, &end.derived, messages.as_ref())));
                }
                history.end = end;
                history.pending = None;
                history.verdict_read = true;
            }
            if lane.finished() && !history.verdict_read && history.pending.is_none() {
                // The verdict comes from the rows, read once when the lane is over, on a thread
                // of its own: `inspect` reads the whole table, seconds at a million rows, and
                // the dashboard must not freeze meanwhile.
                let (tx, rx) = mpsc::channel();
                let config = lane.config().clone();
                let claimed = lane.claimed().map(|c| c.status.clone());
                let completed = lane.completed();
                // Only while the lane runs the job its oracle was made for (`s` may have
                // changed it to one of reclaim's strategies).
                let oracle = (self.oracles.get(i).cloned().flatten())
                    .filter(|_| lane.config().worker.job().is_some());
                let spawned = std::thread::Builder::new()
                    .name("reclaim-verdict".into())
                    .spawn(move || {
                        let end = config
                            .inspect()
                            .ok()
                            .map(|i| LaneEnd::from_inspection(&i, claimed.as_deref(), completed));
                        // `compare`: its tables too, against its undisturbed night's; a read
                        // that fails is said as that, never as the same.
                        let end = end.map(|end| match oracle.map(|o| o.judge(&config.db)) {
                            None => end,
                            Some(Ok(comparison)) => end.compared(&comparison),
                            Some(Err(e)) => LaneEnd {
                                state: Some(format!(
                                    "state not read: {}",
                                    crate::base::text::escape_controls(&e.to_string())
                                )),
                                ..end
                            },
                        });
                        let _ = tx.send(end);
                    });
                if spawned.is_ok() {
                    history.pending = Some(rx);
                }
            }
        }
        // A lane's verdict belongs to the moment its last line says it ended (its `done`,
        // stamped by the work, may be ahead of the clock): a lecture stops there, with it.
        for (lane, why) in verdicts {
            let at = self.frontier(Some(lane));
            self.ahead.push((at, why));
        }
        for entry in &self.engine.timeline()[self.marked..] {
            if let (Some(mark), Some(lane)) = (entry.mark, entry.lane) {
                self.history[lane].markers.push(Marker {
                    at: entry.sim.since_start(),
                    kind: marker_kind(mark),
                });
            }
        }
        self.marked = self.engine.timeline().len();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn curves_stay_bounded_and_keep_their_ends() {
        let mut curve = Curve::default();
        for i in 0..100_000 {
            curve.push(f64::from(i), f64::from(i) * 2.0);
        }
        assert!(curve.points.len() <= MAX_POINTS, "{}", curve.points.len());
        assert_eq!(curve.points.first(), Some(&(0.0, 0.0)));
        assert_eq!(curve.points.last(), Some(&(99_999.0, 199_998.0)));
    }

    #[test]
    fn a_night_held_still_adds_no_point_and_keeps_its_history_whole() {
        let mut curve = Curve::default();
        for i in 0..300 {
            curve.push(f64::from(i), f64::from(i));
        }
        let before = curve.points.clone();
        // A hold of a minute at 10 ticks a second, at the moment reached.
        for _ in 0..600 {
            curve.push(299.0, 299.0);
        }
        assert_eq!(curve.points, before, "gap {}", curve.gap);
        // The clock moves on: the point is added as before.
        curve.push(300.0, 300.0);
        assert_eq!(curve.points.last(), Some(&(300.0, 300.0)));
        assert_eq!(curve.points.len(), before.len() + 1);
    }
}
