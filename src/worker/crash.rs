//! Named crash points: a worker SIGKILLs itself at an exact place, so a kill inside a narrow
//! window is reproducible instead of lucky.

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

use crate::task::{parse_task_id, task_id};

/// Where in the unit of work the worker dies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CrashPoint {
    /// Before the task's transaction begins.
    BeforeWrite,
    /// Between the row's commit and the checkpoint's commit (two-commit); for the strategies
    /// that commit once, the same as `after-commit`.
    AfterRowCommit,
    /// After the transaction that holds the task has committed.
    AfterCommit,
    /// After the heartbeat for the task has been written.
    AfterHeartbeat,
    /// After the task's message has reached the vendor (`--side-effect email`), before the
    /// row's transaction: sent, not committed. The outbox worker sends nothing, and dies at the
    /// same place in the item.
    AfterSend,
    /// The relay's: after the vendor has the task's message, before the outbox entry is marked
    /// sent (delivered, not marked).
    AfterRelaySend,
}

impl CrashPoint {
    pub const ALL: [Self; 6] = [
        Self::BeforeWrite,
        Self::AfterRowCommit,
        Self::AfterCommit,
        Self::AfterHeartbeat,
        Self::AfterSend,
        Self::AfterRelaySend,
    ];

    /// The points every strategy passes, side effect or not (the map's default).
    pub const ROWS: [Self; 4] = [
        Self::BeforeWrite,
        Self::AfterRowCommit,
        Self::AfterCommit,
        Self::AfterHeartbeat,
    ];

    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::BeforeWrite => "before-write",
            Self::AfterRowCommit => "after-row-commit",
            Self::AfterCommit => "after-commit",
            Self::AfterHeartbeat => "after-heartbeat",
            Self::AfterSend => "after-send",
            Self::AfterRelaySend => "after-relay-send",
        }
    }
}

impl CrashPoint {
    /// Whether a worker of `strategy` (sending a side effect or not) ever reaches this point: a
    /// sweep that names a point the job never passes would test nothing.
    #[must_use]
    pub fn reached_by(self, strategy: super::Strategy, side_effect: bool) -> bool {
        match self {
            Self::AfterSend => side_effect || strategy.relays(),
            Self::AfterRelaySend => strategy.relays(),
            _ => true,
        }
    }
}

impl fmt::Display for CrashPoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// `TASK:POINT`, for example `task-111:after-commit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CrashAt {
    pub task: u64,
    pub point: CrashPoint,
}

impl fmt::Display for CrashAt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", task_id(self.task), self.point)
    }
}

impl Serialize for CrashAt {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl FromStr for CrashAt {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let points = CrashPoint::ALL.map(CrashPoint::name).join(", ");
        // A value quoted back is cut: a 309-digit task must leave the error line readable.
        let quoted = |value: &str| crate::text::shorten(value, 40);
        let (task, point) = text.split_once(':').ok_or_else(|| {
            format!(
                "expected TASK:POINT such as task-111:after-commit, got '{}'",
                quoted(text)
            )
        })?;
        let task = parse_task_id(task)
            .ok_or_else(|| format!("'{}' is not a task id such as task-111", quoted(task)))?;
        let point = CrashPoint::ALL
            .into_iter()
            .find(|p| p.name() == point)
            .ok_or_else(|| {
                format!(
                    "unknown crash point '{}'; the points are {points}",
                    quoted(point)
                )
            })?;
        Ok(Self { task, point })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_postmortem_crash_and_rejects_nonsense() {
        let crash: CrashAt = "task-111:after-commit"
            .parse()
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(crash.task, 111);
        assert_eq!(crash.point, CrashPoint::AfterCommit);
        assert_eq!(crash.to_string(), "task-111:after-commit");
        assert!("task-111".parse::<CrashAt>().is_err());
        let err = "task-1:sometime"
            .parse::<CrashAt>()
            .err()
            .unwrap_or_default();
        assert!(err.contains(
            "before-write, after-row-commit, after-commit, after-heartbeat, after-send, after-relay-send"
        ));
    }
}
