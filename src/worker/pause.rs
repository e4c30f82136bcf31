//! A pause longer than a lease (`--pause-at TASK:SECS`): the worker that reaches TASK's write
//! (its grant in hand, a claim worker's lease taken) says `pause` with the moment the pause ends
//! and waits there for a grant at or after it; the supervisor SIGSTOPs it on that line and
//! SIGCONTs it at that moment (`engine::lane::paused`). The worker's part only places the stop:
//! between the claim and the commit, at every speed and load, as a crash point places a kill.

use std::fmt;

use serde::Serialize;

use super::Ctx;
use super::protocol::{Moment, WorkerLine};
use crate::task::task_id;

/// Where a worker is stopped and for how long: at `task`'s write, for `secs` of the night.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PauseAt {
    pub task: u64,
    /// Sim seconds.
    pub secs: f64,
}

impl PauseAt {
    /// The pause that tests a lease: at `task`'s write, for twice the lease (`prove`'s test,
    /// the map's pause band and its night in the dashboard).
    #[must_use]
    pub fn past_lease(task: u64) -> Self {
        Self {
            task,
            secs: 2.0 * super::LEASE_SECS,
        }
    }
}

impl fmt::Display for PauseAt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", task_id(self.task), self.secs)
    }
}

impl Serialize for PauseAt {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl std::str::FromStr for PauseAt {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let quoted = crate::base::text::shorten(text, 40);
        let (task, secs) = text
            .split_once(':')
            .ok_or_else(|| format!("expected TASK:SECS such as task-010:60, got '{quoted}'"))?;
        let task = crate::task::parse_task_id(task)
            .ok_or_else(|| format!("'{quoted}': not a task id such as task-010"))?;
        let secs = pause_secs(secs)
            .ok_or_else(|| format!("'{quoted}': the pause is 1..=86400 seconds of the night"))?;
        Ok(Self { task, secs })
    }
}

/// Where an `--exec` job is stopped and for how long (`--pause-at-rows N:SECS`): once its table
/// holds `rows` rows, for `secs` of the night. A job of the user's says nothing of its writes,
/// so the rows place the stop, as they place `--kill-at-rows`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PauseAtRows {
    pub rows: u64,
    /// Sim seconds.
    pub secs: f64,
}

impl fmt::Display for PauseAtRows {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.rows, self.secs)
    }
}

impl Serialize for PauseAtRows {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl std::str::FromStr for PauseAtRows {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let quoted = crate::base::text::shorten(text, 40);
        let (rows, secs) = text
            .split_once(':')
            .ok_or_else(|| format!("expected N:SECS such as 5:600, got '{quoted}'"))?;
        let rows = rows
            .parse::<u64>()
            .ok()
            .filter(|&n| n >= 1)
            .ok_or_else(|| format!("'{quoted}': N is a count of rows, 1 or more"))?;
        let secs = pause_secs(secs)
            .ok_or_else(|| format!("'{quoted}': the pause is 1..=86400 seconds of the night"))?;
        Ok(Self { rows, secs })
    }
}

/// A pause's length: 1..=86400 seconds of the night (`None` otherwise).
pub(crate) fn pause_secs(secs: &str) -> Option<f64> {
    secs.parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && (1.0..=86_400.0).contains(s))
}

impl Ctx<'_> {
    /// Stops here, once, if `--pause-at` names one of `tasks` (and, for a claim worker, this is
    /// the item's first lease): says `pause` with the moment it
    /// ends (`at`, the moment of the write granted, plus the pause) and waits for a grant at or
    /// after it. A night without moments (`--delay-ms 0`) has no pause to time: nothing.
    pub(super) fn pause_if(&mut self, tasks: &[u64], at: Option<f64>) {
        let (Some(pause), Some(at), Some(gate)) = (self.config.pause_at, at, self.gate.clone())
        else {
            return;
        };
        // On a queue, only the worker holding the item's first lease: the one that takes it
        // over once that lease has ended writes it.
        if self.paused || !tasks.contains(&pause.task) || self.lease.is_some_and(|n| n > 1) {
            return;
        }
        self.paused = true;
        let until = at + pause.secs;
        self.say(&WorkerLine::Pause {
            task: pause.task,
            until: Moment(until),
        });
        // INVARIANT: the write granted before the pause is given back (the supervisor hears
        // `pause` as `wake`): it is granted again at or after `until`, after the SIGCONT.
        gate.wait_for(self.writes + tasks.len() as u64, Some(until));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pause_reads_back_and_bad_ones_are_refused() {
        let pause: PauseAt = "task-010:60".parse().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            pause,
            PauseAt {
                task: 10,
                secs: 60.0
            }
        );
        assert_eq!(pause.to_string().parse::<PauseAt>(), Ok(pause));
        for bad in [
            "task-010",
            "x:60",
            "task-010:0",
            "task-010:nan",
            "task-010:1e9",
        ] {
            assert!(bad.parse::<PauseAt>().is_err(), "{bad}");
        }
    }

    #[test]
    fn a_pause_at_rows_reads_back_and_bad_ones_are_refused() {
        let pause: PauseAtRows = "5:3000".parse().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            pause,
            PauseAtRows {
                rows: 5,
                secs: 3000.0
            }
        );
        assert_eq!(pause.to_string().parse::<PauseAtRows>(), Ok(pause));
        for bad in ["5", "0:60", "-1:60", "x:60", "5:0.5", "5:inf", "5:90000"] {
            assert!(bad.parse::<PauseAtRows>().is_err(), "{bad}");
        }
    }
}
