//! A lane at one moment (`LaneSnapshot`): what the dashboard draws and a recording keeps.

use serde::Serialize;

use super::{ClaimedDone, Lane};
use crate::supervisor::slot::SlotState;

/// What a lane's panel says about its workers, in one word.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StateKind {
    Running,
    Hung,
    Restarting,
    Done,
    Failed,
}

/// A lane at one moment: what the dashboard shows and what a recording keeps.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[allow(clippy::struct_excessive_bools)] // Reason: independent observed facts, recorded as such.
pub struct LaneSnapshot {
    pub rows: u64,
    /// Distinct keys of the queue among the rows.
    pub distinct: u64,
    /// Keys of the queue with more than one row.
    pub duplicated: u64,
    /// Rows whose key is not one of the queue's.
    #[serde(default)]
    pub outside: u64,
    /// `None` for strategies without a checkpoints table.
    pub checkpoints: Option<u64>,
    /// Heartbeat age in sim seconds.
    pub heartbeat_age: Option<f64>,
    /// A worker process exists.
    pub alive: bool,
    /// The heartbeat is younger than the dead-man's threshold.
    pub progress: bool,
    /// The dead-man's switch is firing.
    pub stale: bool,
    /// `running pid 1234`, `killed by SIGKILL, restarting`, ...
    pub state: String,
    pub state_kind: StateKind,
    pub task: Option<String>,
    pub restarts: u32,
    pub kills: u32,
    pub workers: usize,
    pub claimed: Option<ClaimedDone>,
    pub restarted_at_zero: bool,
    /// An external job that has not written its heartbeat file (yet): no progress signal at
    /// all, which the panel says instead of "stale".
    #[serde(default)]
    pub no_heartbeat: bool,
    /// The messages at the lane's vendor (a lane with a side effect or an outbox).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub messages: Option<crate::fake_vendor::Counts>,
}

impl LaneSnapshot {
    /// A lane of `rows` rows, each distinct and checkpointed, running or `done`: for tests.
    #[cfg(test)]
    #[must_use]
    pub(crate) fn of_rows(rows: u64, done: bool) -> Self {
        Self {
            rows,
            distinct: rows,
            duplicated: 0,
            outside: 0,
            checkpoints: Some(rows),
            heartbeat_age: Some(0.0),
            alive: !done,
            progress: true,
            stale: false,
            state: String::new(),
            state_kind: if done {
                StateKind::Done
            } else {
                StateKind::Running
            },
            task: None,
            restarts: 0,
            kills: 0,
            workers: 1,
            claimed: None,
            restarted_at_zero: false,
            no_heartbeat: false,
            messages: None,
        }
    }

    /// Nothing more will happen in the lane: every worker is done, failed or out of restarts.
    #[must_use]
    pub fn finished(&self) -> bool {
        matches!(self.state_kind, StateKind::Done | StateKind::Failed)
    }

    /// The heartbeat is watched: a worker runs, hangs or is about to be restarted
    /// (`LaneHeartbeat::read`). A lane over keeps the age it ended with, and its switch never
    /// fires.
    #[must_use]
    pub fn watched(&self) -> bool {
        matches!(
            self.state_kind,
            StateKind::Running | StateKind::Hung | StateKind::Restarting
        )
    }

    /// The lane with its heartbeat `age` at another moment than the one it was read at (a
    /// look's, a carried sample's): progress by that age, and the dead-man's switch firing if
    /// a watched lane's age is past `dead_man`.
    #[must_use]
    pub fn aged(self, age: Option<f64>, dead_man: f64) -> Self {
        let over = age.is_some_and(|age| age > dead_man);
        let stale = self.stale || (self.watched() && over);
        Self {
            heartbeat_age: age,
            progress: age.is_some() && !over,
            stale,
            ..self
        }
    }
}

impl Lane {
    /// The lane as its panel shows it at sim time `clock`: as `snapshot`, but a worker spawned
    /// ahead of its attempt's start on the clock (the incident's workers start at 02:00:03,
    /// their processes at 02:00:00) is `starting at 02:00:03, pid N`: its process exists, its
    /// night (the log's `start` line) has not begun.
    #[must_use]
    pub fn snapshot_at(&self, dead_man: f64, clock: f64) -> LaneSnapshot {
        let mut snapshot = self.snapshot(dead_man);
        if snapshot.state_kind != StateKind::Running {
            return snapshot;
        }
        let running = (self.slots.iter().zip(&self.attempts))
            .filter(|(slot, _)| slot.state() == SlotState::Running)
            .map(|(_, attempt)| attempt.started());
        let first = running.clone().fold(f64::INFINITY, f64::min);
        if running.count() > 0 && first > clock + 1e-9 {
            let pids = (self.live_pids().iter().map(ToString::to_string))
                .collect::<Vec<_>>()
                .join(",");
            snapshot.state = format!(
                "starting at {}, pid {pids}",
                crate::base::clock::SimTime(first)
            );
        }
        snapshot
    }

    /// The lane as its panel shows it now.
    #[must_use]
    pub fn snapshot(&self, dead_man: f64) -> LaneSnapshot {
        let o = &self.observer;
        let states = self.slot_states();
        let pids = self
            .live_pids()
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(",");
        let (state, state_kind) = if let Some(failure) = self.failure() {
            (format!("failed: {failure}"), StateKind::Failed)
        } else if states.contains(&SlotState::Hung) {
            (format!("hung (SIGSTOP) pid {pids}"), StateKind::Hung)
        } else if states.contains(&SlotState::Running) {
            (format!("running pid {pids}"), StateKind::Running)
        } else if states.contains(&SlotState::Restarting) {
            (
                "killed by SIGKILL, restarting".into(),
                StateKind::Restarting,
            )
        } else if states.contains(&SlotState::GaveUp) {
            (
                format!("gave up after {} restarts", self.restarts()),
                StateKind::Failed,
            )
        } else {
            ("done".into(), StateKind::Done)
        };
        LaneSnapshot {
            rows: o.rows,
            distinct: o.distinct,
            duplicated: o.duplicated,
            outside: o.unexpected,
            // reclaim's own checkpoints table, or the one an external job was told to keep
            // (`--checkpoint-table`), once seen.
            checkpoints: (self.config.worker.has_checkpoints() || o.checkpoints_seen)
                .then_some(o.checkpoints),
            no_heartbeat: !self.heartbeat.seen() && self.config.worker.job().is_some(),
            heartbeat_age: self.heartbeat.sim_age(),
            alive: self.alive(),
            progress: (self.heartbeat.sim_age()).is_some_and(|age| age <= dead_man),
            stale: self.heartbeat.stale(),
            state,
            state_kind,
            task: o
                .last_task
                .map(|t| crate::base::text::escape_controls(&o.key(t))),
            restarts: self.restarts(),
            kills: self.kills(),
            workers: self.config.workers,
            claimed: self.claimed.clone(),
            restarted_at_zero: self.restarted_at_zero(),
            messages: self.messages(),
        }
    }
}
