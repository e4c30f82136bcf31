//! The progress deadline of a headless night (`--progress-deadline`): a job that stops moving
//! (hung on a lock, asleep after its last row, spinning) is given up on after a bound of real
//! time instead of being waited for forever. Progress is what reclaim can see of the work: a new
//! row, a heartbeat naming another task, a message at the vendor, a worker started, killed or ended, a line
//! of reclaim's own worker's protocol. Your job's own output is not progress: a job that only
//! prints ("retrying...") is not moving. Also the other early end: a job's table that lacks the
//! column it was said to have (`stop_on_wrong_shape`).

use std::time::{Duration, Instant};

use super::{Engine, Kind, SlotState, Source};

/// The deadline unless told otherwise: far above any pause between two rows of a night run at
/// one of reclaim's paces, well under a CI job's own timeout.
pub const DEFAULT_PROGRESS_DEADLINE: Duration = Duration::from_secs(120);

/// How many items' pauses a night may go without progress, when that is longer than the
/// default: a job paced at a minute an item is not stalled after two minutes.
const ITEMS_OF_PAUSE: u32 = 10;

/// What reclaim has seen of a night so far; two equal readings mean nothing moved between them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Progress {
    /// Lines of reclaim's own workers (and relays): its protocol, one a write or a step.
    lines: u64,
    lanes: Vec<LaneProgress>,
}

/// One lane's part of `Progress`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct LaneProgress {
    rows: u64,
    /// The key of the queue the heartbeat names: a beat naming the same key again, or no key of
    /// the queue (a timestamp), is not progress.
    beat: Option<String>,
    messages: Option<u64>,
    /// Each slot's attempt and state: a start, a kill, an exit.
    slots: Vec<(u32, SlotState)>,
}

/// Watches a night's `Progress` and says when it has stood still for its deadline while a
/// worker was alive (a night waiting for its own restart delay is reclaim's wait, not the job's).
#[derive(Debug)]
pub struct ProgressWatch {
    deadline: Duration,
    seen: Option<Progress>,
    since: Instant,
    /// The last look: a long gap since it is time reclaim itself was not running (stopped,
    /// suspended), which is not the job's to answer for.
    last: Instant,
}

/// A gap between two looks longer than this is reclaim's own absence (its loop looks every few
/// milliseconds).
const ABSENT: Duration = Duration::from_secs(1);

impl ProgressWatch {
    #[must_use]
    pub fn new(deadline: Duration, now: Instant) -> Self {
        Self {
            deadline,
            seen: None,
            since: now,
            last: now,
        }
    }

    /// Whether the night has made no progress for the deadline with a worker alive, looked at
    /// `now`; the engine is not changed.
    pub fn stalled(&mut self, engine: &Engine, now: Instant) -> bool {
        let alive = engine.lanes().iter().any(super::Lane::alive);
        self.look(engine.progress(), alive, now)
    }

    /// `stalled` for one reading of the night.
    fn look(&mut self, progress: Progress, alive: bool, now: Instant) -> bool {
        let gap = now.saturating_duration_since(std::mem::replace(&mut self.last, now));
        if gap > ABSENT {
            self.since += gap;
        }
        if !alive || self.seen.as_ref() != Some(&progress) {
            self.seen = Some(progress);
            self.since = now;
            return false;
        }
        now.saturating_duration_since(self.since) >= self.deadline
    }
}

impl Engine {
    /// What has moved in the night so far (`ProgressWatch`).
    #[must_use]
    pub fn progress(&self) -> Progress {
        Progress {
            lines: self.lines_heard,
            lanes: (self.lanes.iter())
                .map(|l| LaneProgress {
                    rows: l.observer().rows,
                    beat: (l.heartbeat_task().map(ToOwned::to_owned))
                        .filter(|task| l.config().queue().index_of(task).is_some()),
                    messages: l.messages().map(|m| m.received),
                    slots: (l.slots().iter())
                        .map(|s| (s.attempt(), s.state()))
                        .collect(),
                })
                .collect(),
        }
    }

    /// The night's deadline without progress: the configured one, or the default (or ten
    /// items' pause, if longer), plus the work of a long item (`--long-item`) that writes
    /// nothing while it works, stretched for a night played slower than its scale.
    #[must_use]
    pub fn progress_deadline(&self) -> Duration {
        self.config.progress_deadline.unwrap_or_else(|| {
            let longest = |part: fn(&super::Lane) -> Duration| {
                (self.lanes.iter()).map(part).max().unwrap_or_default()
            };
            let pause = longest(|l| l.config().delay);
            let long_item = longest(|l| l.config().long_item.map_or(Duration::ZERO, |li| li.work));
            let at_1x =
                DEFAULT_PROGRESS_DEADLINE.max(pause.saturating_mul(ITEMS_OF_PAUSE)) + long_item;
            // Slower than its scale (`run --scenario --speed 0.25`), every quiet stretch of the
            // night takes that much longer in real time.
            at_1x.div_f64(self.config.speed.min(1.0))
        })
    }

    /// Gives up on every lane still going after `waited` without progress: its live workers
    /// are killed (their whole groups) and nothing is restarted. Said on the timeline, and in
    /// each lane's report as why the job never completed.
    pub fn give_up_without_progress(&mut self, now: Instant, waited: Duration) {
        for lane in 0..self.lanes.len() {
            if self.lanes[lane].finished() {
                continue;
            }
            let mut pids = Vec::new();
            for slot in 0..self.lanes[lane].slots().len() {
                let state = self.lanes[lane].slots()[slot].state();
                if self.lanes[lane].slots()[slot].is_live() {
                    pids.push(self.lanes[lane].slots()[slot].pid().to_string());
                    self.lanes[lane].slots_mut()[slot].kill();
                    self.lanes[lane].forget_temp_beat(slot);
                }
                if !matches!(state, SlotState::Done | SlotState::Failed) {
                    self.lanes[lane].slots_mut()[slot].give_up();
                }
            }
            self.lanes[lane].stop_vendor();
            self.lanes[lane].stop_answers();
            let reason = format!(
                "no progress for {} s (no new row, no heartbeat, no worker started or ended): reclaim gave up on the night (--progress-deadline)",
                waited.as_secs_f64()
            );
            // The pids on the timeline only: the report's reason reads the same for every night
            // given up on (prove says it once).
            let who = match pids.len() {
                0 => "no worker was alive".to_string(),
                1 => format!("its worker (pid {}) was killed", pids[0]),
                _ => format!("its workers (pids {}) were killed", pids.join(", ")),
            };
            let text = format!("{reason}; {who}");
            let killed = if pids.is_empty() {
                ""
            } else {
                " and killed its workers"
            };
            self.lanes[lane].give_up_because(format!("{reason}{killed}"));
            self.log(now, Some(lane), Source::Runner, Kind::Error, text);
        }
    }
}

impl Engine {
    /// A job's table without the column it was said to have (`--key`, `--checkpoint-key`) is
    /// the same on every poll: every worker is killed at the first look, said on the timeline,
    /// and the error ends the night, rather than a whole night run that cannot be judged (or,
    /// for checkpoints, whose kills would all be misplaced).
    pub(super) fn stop_on_wrong_shape(&mut self, now: Instant) -> Result<(), super::EngineError> {
        let Some((lane, error)) = (self.lanes.iter_mut().enumerate())
            .find_map(|(i, lane)| lane.take_wrong_shape().map(|e| (i, e)))
        else {
            return Ok(());
        };
        let pids: Vec<String> = (self.lanes.iter())
            .flat_map(|l| {
                l.slots()
                    .iter()
                    .filter(|s| s.is_live())
                    .map(|s| s.pid().to_string())
            })
            .collect();
        self.shutdown();
        let who = if pids.is_empty() {
            String::new()
        } else {
            format!(" (killed pid {})", pids.join(", "))
        };
        self.log(
            now,
            Some(lane),
            Source::Runner,
            Kind::Error,
            if matches!(error, crate::warehouse::StoreError::CountSqlTooLong { .. }) {
                format!("reclaim stopped the night: --count-sql took its whole time limit{who}")
            } else {
                format!("reclaim stopped the night: the job's table cannot be read as named{who}")
            },
        );
        Err(error.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_night_is_stalled_only_when_nothing_moved_for_the_deadline_with_a_worker_alive() {
        let t0 = Instant::now();
        let progress = |rows| Progress {
            lines: 0,
            lanes: vec![LaneProgress {
                rows,
                beat: None,
                messages: None,
                slots: vec![(1, SlotState::Running)],
            }],
        };
        let mut watch = ProgressWatch::new(Duration::from_secs(2), t0);
        // Looks every `step` ms up to `to_ms` (the loop looks every few ms; a step of a minute
        // is reclaim itself stopped): stalled at the last look?
        assert!(!watch.look(progress(1), true, t0));
        let mut at = Duration::ZERO;
        let mut until = |p: Progress, alive: bool, to_ms: u64, step: u64| {
            let mut stalled = false;
            while at < Duration::from_millis(to_ms) {
                at = (at + Duration::from_millis(step)).min(Duration::from_millis(to_ms));
                stalled = watch.look(p.clone(), alive, t0 + at);
            }
            stalled
        };
        assert!(!until(progress(1), true, 1900, 100));
        assert!(until(progress(1), true, 2000, 100));
        // A new row is progress: the wait starts again.
        assert!(!until(progress(2), true, 3900, 100));
        // No worker alive (a restart delay): reclaim's own wait, never the job's stall.
        assert!(!until(progress(2), false, 10_000, 100));
        assert!(!until(progress(2), true, 11_900, 100));
        assert!(until(progress(2), true, 12_000, 100));
        // reclaim itself stopped for a minute (no look between): not counted against the job.
        assert!(!until(progress(3), true, 12_100, 100));
        assert!(!until(progress(3), true, 72_100, 60_000));
        assert!(!until(progress(3), true, 74_000, 100));
        assert!(until(progress(3), true, 74_100, 100));
    }
}
