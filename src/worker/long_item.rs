//! Work that outlives an instance (`--long-item TASK:SECS`, `--split K`): the one item whose
//! work takes real seconds before its commit, and that work in committed steps.

use std::fmt;
use std::thread;
use std::time::Duration;

use serde::Serialize;

use super::protocol::{Step, WorkerLine};
use super::{Ctx, Row, WorkerError};
use crate::task::task_id;

/// `TASK:SECS`: the one unit of work that takes longer than the others (`--long-item`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LongItem {
    pub task: u64,
    /// Real time, at the configured pace.
    pub work: Duration,
}

impl fmt::Display for LongItem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", task_id(self.task), self.work.as_secs_f64())
    }
}

impl Serialize for LongItem {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl std::str::FromStr for LongItem {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let quoted = crate::base::text::shorten(text, 40);
        let (task, secs) = text
            .split_once(':')
            .ok_or_else(|| format!("expected TASK:SECS such as task-050:2, got '{quoted}'"))?;
        let task = crate::task::parse_task_id(task)
            .ok_or_else(|| format!("'{quoted}': not a task id such as task-050"))?;
        let secs = secs
            .parse::<f64>()
            .ok()
            .filter(|s| s.is_finite() && (0.001..=3600.0).contains(s))
            .ok_or_else(|| format!("'{quoted}': the work is 0.001..=3600 seconds"))?;
        Ok(Self {
            task,
            work: Duration::from_secs_f64(secs),
        })
    }
}

/// The item's real work, done in slices: only a slice's own span counts as work done, so a
/// worker stopped meanwhile (SIGSTOP: a lecture's stop, a paused night) has not worked while it
/// was stopped, and the kills land in the same place of the work however long a stop lasts.
fn work(span: Duration) {
    const SLICE: Duration = Duration::from_millis(10);
    let mut left = span;
    while !left.is_zero() {
        let slice = left.min(SLICE);
        thread::sleep(slice);
        left -= slice;
    }
}

impl Ctx<'_> {
    /// The long item's work, done before its row commits (a kill loses whatever is not
    /// committed). In one piece it starts again from nothing after every kill; split into
    /// `--split K` steps, each step commits as it finishes and a restart resumes after the last
    /// one committed: the postmortem's "split the work rather than persist harder".
    pub(super) fn work_long_item(&mut self, rows: &[&Row]) -> Result<(), WorkerError> {
        let Some(long) = self.config.long_item else {
            return Ok(());
        };
        let task = task_id(long.task);
        if !rows.iter().any(|r| r.task_id == task) {
            return Ok(());
        }
        let steps = self.config.split.max(1);
        let step_work = long.work.div_f64(steps as f64);
        let done = if steps > 1 {
            self.db.steps_done(&task)?
        } else {
            0
        };
        if done > 0 {
            self.say(&WorkerLine::Step(Step::ResumesAt {
                task: long.task,
                step: done + 1,
                steps,
            }));
        }
        // Gated (and not granted everything: a night at full speed), each step's work ends
        // when the supervisor's clock reaches its end: the work is on the night's schedule,
        // and a kill lands between the same two steps at any speed and load.
        let gate = self.gate.clone().filter(|g| !g.unlimited());
        if self.gate.is_some() {
            let left = long.work.mul_f64((steps - done) as f64 / steps as f64);
            self.say(&WorkerLine::work(long.task, left));
        }
        // INVARIANT: the last step is the row's own transaction, so a kill after it leaves the
        // row (and its checkpoint) or nothing, as for any other item.
        for step in done..steps {
            match &gate {
                Some(gate) => gate.wait_steps(step + 1 - done),
                None => work(step_work),
            }
            if step + 1 < steps {
                self.db.mark_step(&task, step)?;
                self.say(&WorkerLine::Step(Step::Done {
                    task: long.task,
                    step: step + 1,
                    steps,
                }));
            }
        }
        Ok(())
    }
}
