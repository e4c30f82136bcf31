//! The moments a lecture stops on, found as the live night reaches them: timeline lines worth
//! stopping for, symptoms as they light, each lane's verdict at its last line (waited for a
//! bounded while).

use std::time::{Duration, Instant};

use crate::engine::LaneSnapshot;
use crate::tui::chrome::symptoms;
use crate::tui::lecture::{self, Why};
use crate::verdict::Symptom;

use super::LiveNight;

/// The longest a lecture's stop on a `done` line waits for the lane's verdict (real time): an
/// outbox lane is over once its relay, which the clock does not pace, has delivered the rest,
/// which a loaded machine may take seconds to do. Normally read within milliseconds.
const VERDICT_AWAITED: Duration = Duration::from_secs(10);

impl LiveNight {
    /// What a lecture stops for that has happened since the last call, oldest first.
    pub fn take_moments(&mut self) -> Vec<Why> {
        std::mem::take(&mut self.moments)
    }

    /// The symptoms the timeline does not carry (rows beyond the queue, a claim the rows
    /// contradict), as they light: moments for a lecture.
    pub(super) fn look_for_symptoms(&mut self) {
        let dead_man = self.engine.config().dead_man;
        let snapshots: Vec<LaneSnapshot> = (self.engine.lanes().iter())
            .map(|l| l.snapshot(dead_man))
            .collect();
        let items: Vec<u64> = self
            .engine
            .lanes()
            .iter()
            .map(|l| l.config().items)
            .collect();
        let now = symptoms(&snapshots, &items, &self.lane_ends());
        // Rows past the queue: the clock waits on the row that takes them there (see
        // `Engine::stop_on`), so they light at the clock. A claim the rows contradict lights
        // with the lane's last line, which the work may have stamped ahead of it.
        let clock = self.engine.clock().now().0;
        let at = self.frontier(None);
        let past_queue = Why::Symptom(Symptom::RowsExceedQueue.seen().to_string());
        let lit = lecture::newly_lit(&mut self.lit, &now);
        self.ahead
            .extend((lit.into_iter()).map(|why| (if why == past_queue { clock } else { at }, why)));
    }

    /// The newest moment the night's lines (of `lane`, or of any) have reached, or the clock if
    /// it is further on.
    pub(super) fn frontier(&self, lane: Option<usize>) -> f64 {
        (self.engine.timeline().iter())
            .filter(|e| lane.is_none() || e.lane == lane)
            .map(|e| e.sim.0)
            .fold(self.engine.clock().now().0, f64::max)
    }

    /// Looks at the timeline's new entries for the moments a lecture stops on.
    pub(super) fn look_for_moments(&mut self, now: Instant) {
        for entry in &self.engine.timeline()[self.looked..] {
            let lane = (entry.lane)
                .and_then(|l| self.lanes.get(l))
                .map(|l| l.name.as_str());
            let said = (entry.kind, entry.mark, entry.fact.as_ref());
            if let Some(why) = lecture::why(said, lane, &entry.text) {
                self.ahead.push((entry.sim.0, why));
            }
        }
        self.looked = self.engine.timeline().len();
        let clock = self.engine.clock().now().0;
        let (due, ahead): (Vec<_>, Vec<_>) = std::mem::take(&mut self.ahead)
            .into_iter()
            .partition(|(at, _)| *at <= clock + 1e-6);
        self.ahead = ahead;
        // A lecture stops on a `done` line with the lane's verdict, which is read once the lane
        // is over: the stop waits for it (the clock held, a bounded while) rather than showing
        // the line now and the verdict as a stop of its own at the same second, or never.
        let unread = |why: &Why| match why {
            Why::Done(name) => self.verdict_awaited(name),
            _ => false,
        };
        // And for the figures of its moment: every write due by then made and read.
        let waiting = self.stop_on_captions
            && !due.is_empty()
            && (due.iter().any(|(_, why)| unread(why)) || !self.engine.settled(now));
        // A lane over without a `done` line (its supervisor gave up) has its verdict stop at
        // its end too: the clock waits there for it, not wherever it has run to meanwhile.
        let waiting = waiting || (self.stop_on_captions && self.verdict_pending());
        let since = *self.awaiting_verdict.get_or_insert(now);
        if waiting && now.saturating_duration_since(since) < VERDICT_AWAITED {
            self.ahead.extend(due);
        } else {
            self.awaiting_verdict = None;
            if !self.unshown.is_empty() {
                let times = self.caption_times();
                self.refill_captions(&times);
            }
            self.moments.extend(due.into_iter().map(|(_, why)| why));
        }
        if !waiting {
            self.awaiting_verdict = None;
        }
    }

    /// Whether a lane is over and its verdict not read yet.
    fn verdict_pending(&self) -> bool {
        (self.engine.lanes().iter().zip(&self.history))
            .any(|(l, h)| l.finished() && !h.verdict_read)
    }

    /// Whether the lane named `name` is over, or about to be (its last worker said done), and
    /// its verdict not read yet.
    pub(super) fn verdict_awaited(&self, name: &str) -> bool {
        let Some(i) = self.lanes.iter().position(|l| l.name == name) else {
            return false;
        };
        let (Some(lane), Some(history)) = (self.engine.lanes().get(i), self.history.get(i)) else {
            return false;
        };
        !history.verdict_read && (lane.finished() || lane.live_pids().len() <= 1)
    }
}
