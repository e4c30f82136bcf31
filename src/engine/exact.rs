//! Looks at the night whose figures are exactly those of one moment, for a recording: a
//! recording made at 16x in the dashboard, at 1x or headless then holds the same figures at
//! every second.
//!
//! A write granted ahead of the clock may already be in the rows when they are read, so a
//! look stamped with the clock can show a row of a later second; a tick that grants the next
//! write before reading can read it half the time. In exact mode (`Engine::look_exactly`) the
//! grants go one moment at a time (none past the earliest write not yet heard), the rows are
//! read once more as each tick begins, before anything new is granted, and a look is kept only
//! when no write is in flight: then the rows hold every write up to the latest heard, and none
//! after it, which is a moment of the night.

use std::time::{Duration, Instant};

use super::{Attempt, Engine, LaneSnapshot, SlotState};

/// Every lane's figures at one moment, read when the rows held exactly that moment's writes.
#[derive(Debug, Clone, PartialEq)]
pub struct ExactLook {
    /// The moment: the latest write heard, or the clock when it is past it.
    pub sim: f64,
    pub real_ms: u64,
    pub lanes: Vec<LaneSnapshot>,
}

/// Whether a night can be looked at exactly as this module does it: each lane one worker of
/// reclaim's own, on SQLite, with no relay, vendor, long item or planned pause (a hang and a
/// wipe of the checkpoints are moments of the night like a kill). Measured on those (the
/// incident, kill-storm, hung-worker, wiped-checkpoints: headless and 16x alike at every
/// second); a worker that waits its turn in lockstep, sleeps on a lease, or a relay that never
/// asks for a grant would hold every grant (found in review: a recorded side-effects night
/// never wrote a row), so such a night is looked at by second (`BySecond`).
#[must_use]
pub fn fits(config: &super::EngineConfig) -> bool {
    use crate::worker::Strategy;
    config.lanes.iter().all(|lane| {
        let own = lane
            .worker
            .strategy()
            .is_some_and(|s| !matches!(s, Strategy::Claim | Strategy::Fenced | Strategy::Outbox));
        own && lane.workers == 1
            && !lane.needs_vendor()
            && lane.long_item.is_none()
            && lane.pause_at.is_none()
            && matches!(lane.warehouse, crate::warehouse::Warehouse::Sqlite)
    })
}

impl Engine {
    /// Looks at the night exactly from now on (a recording begun on a night under way; one
    /// begun with the night starts it so, `Engine::start_with`): grants one moment at a time,
    /// and keeps the looks of each tick whose figures are one moment's (`exact_looks`).
    pub fn look_exactly(&mut self) {
        self.exact = fits(&self.config);
        self.by_second = (!self.exact).then(|| BySecond::after(self.clock.now().0));
    }

    /// The night is changed by hand in a way exact looks are not made for (a worker added, one
    /// paused): from now on it is looked at as each second ends.
    pub(super) fn stop_looking_exactly(&mut self) {
        if self.exact {
            self.exact = false;
            self.by_second = Some(BySecond::after(self.clock.now().0));
        }
    }

    /// Whether the night's figures can be placed on a moment: it looks exactly and every
    /// worker has a pace (a night at full speed, or an external job, has no moments but the
    /// clock's), or it is looked at by second while a worker on the clock's pace runs.
    #[must_use]
    pub fn looks_exactly(&self) -> bool {
        if self.by_second.is_some() {
            return self.paced_worker_runs();
        }
        self.looks_at_moments()
    }

    /// Whether the night is looked at as each second ends (`BySecond`), not one moment at a
    /// time.
    #[must_use]
    pub fn looks_by_second(&self) -> bool {
        self.by_second.is_some()
    }

    /// Whether no worker has been granted or made a write yet, and no look has been taken: the
    /// rows are still the night's start's, however long the workers take to start, and the
    /// first look is of that moment too (`look`).
    #[must_use]
    pub fn before_first_look(&self) -> bool {
        self.looks_taken == 0
            && (self.lanes.iter())
                .all(|l| l.attempts().iter().all(|a| a.granted == 0 && a.writes == 0))
    }

    /// Whether the night is looked at one moment at a time now (see `looks_exactly`).
    fn looks_at_moments(&self) -> bool {
        self.exact
            && (self.lanes.iter()).all(|l| {
                l.attempts()
                    .iter()
                    .zip(l.slots())
                    .all(|(a, s)| a.paced() || !s.is_live())
            })
    }

    /// The exact looks of the last tick, in order: at most one as it began and one as it
    /// ended.
    #[must_use]
    pub fn exact_looks(&self) -> &[ExactLook] {
        &self.looks
    }

    /// The earliest moment of a write not yet heard from a worker that runs (`None`: no
    /// worker writes). In exact mode nothing is granted past it, so one read between two
    /// grants sees each moment whole; and in a night that `fits` (no long item's steps) a look
    /// taken before it still holds at any moment up to it (a hung worker writes nothing).
    #[must_use]
    pub fn next_write(&self) -> Option<f64> {
        (self.lanes.iter())
            .flat_map(|l| l.slots().iter().zip(l.attempts()))
            .filter(|(slot, a)| {
                slot.is_live() && slot.state() == SlotState::Running && a.paced() && !a.working()
            })
            .map(|(_, a)| a.done_at(a.writes + 1))
            .reduce(f64::min)
    }

    /// The moment the rows as last read hold exactly, if they hold one: no running worker has
    /// a write (or a step of the long item) granted and not yet said, each has asked for its
    /// next, and the latest write heard comes before the earliest still to come.
    fn exact_moment(&self) -> Result<f64, Inexact> {
        let mut latest = self.clock.now().0;
        let mut next = f64::INFINITY;
        for lane in &self.lanes {
            for (slot, a) in lane.slots().iter().zip(lane.attempts()) {
                // A worker that has ended (its `done` stamped with its last write's moment,
                // perhaps ahead of the clock) or died: the rows hold its writes up to then.
                if a.paced() {
                    latest = latest.max(a.now());
                }
                if !(slot.is_live() && slot.state() == SlotState::Running) {
                    continue;
                }
                // One the clock has given up waiting for (stopped from outside reclaim, say):
                // its write may be in the rows or not.
                if a.given_up_on() {
                    return Err(Inexact::GivenUp);
                }
                let stepping = a.work.is_some_and(|w| w.done < w.granted);
                if !a.paced() || a.writes < a.granted || a.need <= a.writes || stepping {
                    return Err(Inexact::InFlight);
                }
                if !a.working() {
                    next = next.min(a.done_at(a.writes + 1));
                }
            }
        }
        if latest < next - 1e-9 {
            Ok(latest)
        } else {
            Err(Inexact::InFlight)
        }
    }

    /// As a tick begins, in exact mode: reads every lane's rows and keeps the look if it is
    /// exact; the tick grants nothing new unless it is (so no moment's writes are granted
    /// before the moment just before them has been looked at whole), or unless the clock has
    /// given up on a worker (it goes on without it, as a night not recorded does: a recording
    /// never holds the night; those ticks keep no look).
    pub(super) fn look_first(&mut self, now: Instant) {
        self.grants_held = false;
        if !self.looks_at_moments() {
            return;
        }
        self.observe(now);
        self.grants_held = self.look(now) == Err(Inexact::InFlight);
    }

    /// Keeps the look if the rows as last read are exact (see `exact_moment`), stamped with
    /// their moment; each lane's heartbeat age is its age then, not at the clock's reading.
    pub(super) fn look(&mut self, now: Instant) -> Result<(), Inexact> {
        let sim = self.exact_moment()?;
        if self.before_first_look() {
            // Before the first grant the rows are the night's start's, however long the
            // workers took to start: the look is of that moment too.
            let start = self.look_at(crate::base::clock::NIGHT_START, now);
            self.looks.push(start);
        }
        self.looks_taken += 1;
        let look = self.look_at(sim, now);
        self.looks.push(look);
        Ok(())
    }

    /// Every lane's figures as last read, stamped `sim`; each lane's heartbeat age is its age
    /// then, not at the clock's reading.
    fn look_at(&self, sim: f64, now: Instant) -> ExactLook {
        let dead_man = self.config.dead_man;
        ExactLook {
            sim,
            real_ms: self.elapsed(now).as_millis() as u64,
            lanes: (self.lanes.iter())
                .map(|l| (l.snapshot_at(dead_man, sim)).aged(l.heartbeat_age_at(sim), dead_man))
                .collect(),
        }
    }

    /// Whether a worker on the clock's pace runs (not the relay, not someone else's job, not
    /// hung or paused): the night has moments of its own to look at by second.
    fn paced_worker_runs(&self) -> bool {
        (self.lanes.iter()).any(|l| (0..l.slots().len()).any(|i| l.scheduled(i)))
    }

    /// The end of the second to be looked at next, in a night looked at by second while a
    /// worker on the clock's pace runs: neither the clock nor any grant goes past it until
    /// its look is taken (or given up).
    pub(super) fn second_edge(&self) -> Option<f64> {
        let by = self.by_second?;
        self.paced_worker_runs().then_some(by.edge)
    }

    /// In a night looked at by second, once the clock stands at the end of the second: the
    /// look, when every lane has settled there (each write due made and read, each relay's
    /// deliveries counted: `Engine::settled`, as a lecture's stop waits for); then the next
    /// second. Not settled within `SECOND_WAIT` (a worker stopped from outside, say), the
    /// second has no look and the night goes on: a recording never holds the night.
    pub(super) fn look_at_second(&mut self, now: Instant) {
        let Some(mut by) = self.by_second else {
            return;
        };
        let clock = self.clock.now().0;
        if !self.paced_worker_runs() {
            if by.ran {
                // Ended in this tick (hung by the plan, say): its end's look now.
                self.look_at_pace_end(now);
            }
            // Nothing on the pace: the clock's figures are the moment's (`looks_exactly` is
            // false); looks go on from the clock's second.
            self.by_second = Some(BySecond::after(clock));
            return;
        }
        by.ran = true;
        if clock > by.edge + 1e-9 {
            // Past it (no worker on the pace held the clock there, and one runs now): a look
            // now would be of a later moment, so none; looks go on from the clock's second.
            self.by_second = Some(BySecond::after(clock));
            return;
        }
        if clock < by.edge - 1e-9 || self.paused_at.is_some() {
            // Paused, the wait starts again once the night goes on.
            by.since = None;
            self.by_second = Some(by);
            return;
        }
        let since = *by.since.get_or_insert(now);
        // A worker the clock has given up on (stopped from outside reclaim) would make every
        // second wait out `SECOND_WAIT`: such a second gets no look.
        let given_up = |e: &Self| {
            (e.lanes.iter()).any(|l| l.attempts().iter().any(super::pace::Attempt::given_up_on))
        };
        if self.settled(now) {
            // Stamped at the second's last moment of a worker (a write, a start), or at its
            // start: the figures have held from there to its end.
            let at = self.latest_moment(by.edge.floor(), by.edge);
            let look = self.look_at(at, now);
            self.looks.push(look);
        } else if now.saturating_duration_since(since) < SECOND_WAIT && !given_up(self) {
            self.by_second = Some(by);
            return;
        }
        self.by_second = Some(BySecond {
            edge: by.edge + 1.0,
            since: None,
            ran: true,
        });
    }

    /// In a night looked at by second, once the last worker on the pace has ended (killed,
    /// crashed, done, maybe within a second not looked at yet): the rows it left, read again
    /// now, stamped with its last moment. Called as a tick begins, before the clock moves or a
    /// restart is spawned: a loaded machine's long tick could take the clock to the restart's
    /// moment and start the worker again within it, and the kill's second had no look (a
    /// recording of side-effects showed 49 rows and no kill from 02:05:15 to 02:05:32).
    pub(super) fn look_at_pace_end(&mut self, now: Instant) {
        let Some(by) = self.by_second else {
            return;
        };
        if !by.ran || self.paced_worker_runs() {
            return;
        }
        let clock = self.clock.now().0;
        self.observe(now);
        let at = self
            .latest_moment(f64::NEG_INFINITY, clock)
            .max(self.last_mark(clock));
        let look = self.look_at(at, now);
        self.looks.push(look);
        self.by_second = Some(BySecond::after(clock));
    }

    /// The moment of the latest line with a chart mark (a kill, a restart) up to `clock`, or
    /// the night's start: a look taken as the last worker on the pace ends holds its kill.
    fn last_mark(&self, clock: f64) -> f64 {
        (self.timeline.iter().rev())
            .filter(|e| e.mark.is_some() && e.sim.0 <= clock + 1e-9)
            .map(|e| e.sim.0)
            .next()
            .unwrap_or(crate::base::clock::NIGHT_START)
    }

    /// The latest moment of a worker on the pace (its last write or step, or its start) from
    /// `from` to `to`; `from` when there is none (`to` when `from` is unbounded).
    fn latest_moment(&self, from: f64, to: f64) -> f64 {
        (self.lanes.iter())
            .flat_map(|l| l.attempts().iter().filter(|a| a.paced()).map(Attempt::now))
            .filter(|&m| m >= from && m <= to)
            .reduce(f64::max)
            .unwrap_or(if from.is_finite() { from } else { to })
    }
}

/// Where in a second the clock and the grants stop for its look: its last millisecond, so the
/// look holds every write of the second (a write's moment has its pace's decimals). The look
/// is stamped with the second's latest moment of a worker (or its start), which a CSV
/// export's three decimals name the second of.
const SECOND_LOOKED_AT: f64 = 0.999;

/// How long the clock waits at the end of a second for every lane to settle before going on
/// without that second's look: a write takes milliseconds even on a loaded machine.
const SECOND_WAIT: Duration = Duration::from_secs(2);

/// A recorded night exact looks are not made for (a relay, a vendor, workers in lockstep or
/// on leases, a long item, a pause, PostgreSQL) is looked at as each second ends: the clock
/// and the grants stop at the end of the second, the night settles there, its figures are
/// read, and it goes on. Each second's figures are then that moment's at any speed, coarser
/// than an exact look (one look a second) and with no grant held back within the second.
#[derive(Debug, Clone, Copy)]
pub(super) struct BySecond {
    /// Where the clock stops for the next look: the end of its second.
    edge: f64,
    /// When the clock got there, while the night settles.
    since: Option<Instant>,
    /// A worker on the pace ran when the night was last looked at.
    ran: bool,
}

impl BySecond {
    /// Looks from the end of the second `clock` is in (the next one's, past it).
    pub(super) fn after(clock: f64) -> Self {
        let edge = clock.floor() + SECOND_LOOKED_AT;
        Self {
            edge: if edge < clock - 1e-9 {
                edge + 1.0
            } else {
                edge
            },
            since: None,
            ran: false,
        }
    }
}

/// Why the rows as last read hold no one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Inexact {
    /// A write is in flight, or a worker has not asked for its next: the tick waits for it.
    InFlight,
    /// The clock has given up waiting for a worker's write.
    GivenUp,
}
