//! Named crash points: a worker SIGKILLs itself at an exact place, so a kill inside a narrow
//! window is reproducible instead of lucky; and the windows an unplanned kill lands in, as the
//! rows place it afterwards.

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

use super::Strategy;
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
    pub fn reached_by(self, strategy: Strategy, side_effect: bool) -> bool {
        match self {
            Self::AfterSend => side_effect || strategy.relays(),
            Self::AfterRelaySend => strategy.relays(),
            Self::BeforeWrite | Self::AfterRowCommit | Self::AfterCommit | Self::AfterHeartbeat => {
                true
            }
        }
    }
}

impl fmt::Display for CrashPoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A window a kill can land in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KillWindow {
    /// The killed attempt had committed nothing: harmless for every strategy.
    BeforeAnyCommit,
    /// The newest row has no checkpoint yet: the row committed, its checkpoint did not
    /// (two-commit's window; guarded commits both at once and can never be caught here).
    AfterRowCommit,
    /// The attempt had committed work and every row it wrote is checkpointed (or the strategy
    /// keeps no checkpoints): naive's window, since its restart begins again at task-000.
    AfterCommit,
    /// The item in flight had already reached the vendor (its message sent) and its row had
    /// not committed: the restart sends it again unless the vendor honours a key.
    AfterSend,
    /// A message left after its row committed (an outbox's relay), before the sender marked
    /// it sent: the restart sends it again, with its key.
    AfterRelaySend,
}

impl KillWindow {
    pub const ALL: [Self; 5] = [
        Self::BeforeAnyCommit,
        Self::AfterRowCommit,
        Self::AfterCommit,
        Self::AfterSend,
        Self::AfterRelaySend,
    ];

    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::BeforeAnyCommit => "before-any-commit",
            Self::AfterRowCommit => "after-row-commit",
            Self::AfterCommit => "after-commit",
            Self::AfterSend => "after-send",
            Self::AfterRelaySend => "after-relay-send",
        }
    }

    /// The windows in which a kill breaks `strategy`'s data or its messages: its own, and,
    /// when each item also sends before its commit (`sends`), the send->commit window.
    #[must_use]
    pub fn dangerous_for(strategy: Strategy, sends: bool) -> Vec<Self> {
        strategy
            .breaking_window()
            .into_iter()
            .chain(sends.then_some(Self::AfterSend))
            .collect()
    }

    /// The window, from what the database held once the killed worker was reaped: whether the
    /// killed attempt had committed any row, and (for a strategy that checkpoints) whether the
    /// newest row has its checkpoint.
    #[must_use]
    pub fn classify(committed_by_attempt: bool, newest_row_checkpointed: Option<bool>) -> Self {
        match (committed_by_attempt, newest_row_checkpointed) {
            (false, _) => Self::BeforeAnyCommit,
            (true, Some(false)) => Self::AfterRowCommit,
            (true, _) => Self::AfterCommit,
        }
    }
}

impl fmt::Display for KillWindow {
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
        let quoted = |value: &str| crate::base::text::shorten(value, 40);
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
    fn a_kill_is_placed_by_what_the_rows_say() {
        assert_eq!(
            KillWindow::classify(false, Some(false)),
            KillWindow::BeforeAnyCommit
        );
        assert_eq!(
            KillWindow::classify(true, Some(false)),
            KillWindow::AfterRowCommit
        );
        assert_eq!(
            KillWindow::classify(true, Some(true)),
            KillWindow::AfterCommit
        );
        assert_eq!(KillWindow::classify(true, None), KillWindow::AfterCommit);
    }

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
