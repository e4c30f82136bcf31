//! What a band of the map puts each of its nights through: a crash point of reclaim's worker
//! (the worker SIGKILLs itself there), or a fault of the host's past the SIGKILL (the answer to
//! a commit lost on its way back to the worker, a worker stopped past its lease).

use std::fmt;

use crate::worker::{CrashPoint, Strategy};

/// A band's point within a strategy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Point {
    /// The worker dies at this crash point on its first attempt.
    Crash(CrashPoint),
    /// The answer to the commit of the task is lost: committed on the server, the worker's
    /// connection closed before the answer reached it (PostgreSQL only).
    LostAnswer,
    /// The worker that reaches the task's write (its lease taken) is stopped there (SIGSTOP) for
    /// twice its lease, then continued: another worker took the item over meanwhile.
    Pause,
}

impl Point {
    /// Every point, crash points first, by the names `--points` takes.
    pub const ALL: [Self; 8] = [
        Self::Crash(CrashPoint::BeforeWrite),
        Self::Crash(CrashPoint::AfterRowCommit),
        Self::Crash(CrashPoint::AfterCommit),
        Self::Crash(CrashPoint::AfterHeartbeat),
        Self::Crash(CrashPoint::AfterSend),
        Self::Crash(CrashPoint::AfterRelaySend),
        Self::LostAnswer,
        Self::Pause,
    ];

    /// The map's default: the crash points every strategy passes.
    #[must_use]
    pub fn rows() -> Vec<Self> {
        CrashPoint::ROWS.map(Self::Crash).to_vec()
    }

    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Crash(point) => point.name(),
            Self::LostAnswer => "lost-answer",
            Self::Pause => "pause",
        }
    }

    /// Whether a worker of `strategy` ever meets this point in the map (which sends no side
    /// effect: only the outbox's relay sends). Every strategy commits, so every one can lose an
    /// answer; a pause past a lease is met only where items are held by a lease.
    #[must_use]
    pub fn reached_by(self, strategy: Strategy) -> bool {
        match self {
            Self::Crash(point) => point.reached_by(strategy, false),
            Self::LostAnswer => true,
            Self::Pause => strategy.claims_items(),
        }
    }

    /// Why a strategy that never meets this point in the map does not.
    #[must_use]
    pub fn unreached(self) -> &'static str {
        match self {
            Self::Crash(_) | Self::LostAnswer => "it sends nothing without a side effect",
            Self::Pause => "a pause past a lease tests only items held by a lease",
        }
    }

    /// Whether the point needs a server between the workers and their rows: a commit's answer
    /// travels only on a connection.
    #[must_use]
    pub fn needs_server(self) -> bool {
        matches!(self, Self::LostAnswer)
    }

    /// What a night at this point that tested nothing lacked.
    #[must_use]
    pub fn never(self) -> &'static str {
        match self {
            Self::Crash(_) => "the crash never fired",
            Self::LostAnswer => "the answer was never lost",
            Self::Pause => "the pause never happened",
        }
    }
}

impl fmt::Display for Point {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_point_has_its_own_name_and_the_lost_answer_alone_needs_a_server() {
        let names: Vec<&str> = Point::ALL.iter().map(|p| p.name()).collect();
        for (i, name) in names.iter().enumerate() {
            assert!(!names[..i].contains(name), "{name} twice");
        }
        let servers: Vec<Point> = Point::ALL
            .into_iter()
            .filter(|p| p.needs_server())
            .collect();
        assert_eq!(servers, [Point::LostAnswer]);
        assert!(
            Strategy::all()
                .iter()
                .all(|&s| Point::LostAnswer.reached_by(s))
        );
        assert!(!Point::Crash(CrashPoint::AfterRelaySend).reached_by(Strategy::Naive));
        let paused: Vec<Strategy> = (Strategy::all().iter().copied())
            .filter(|&s| Point::Pause.reached_by(s))
            .collect();
        assert_eq!(paused, [Strategy::Claim, Strategy::Fenced]);
    }
}
