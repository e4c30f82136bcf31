//! Where in the unit of work a kill landed, read from the database right after it: the windows
//! a strategy is (or is not) safe in. A random storm that never lands in a strategy's dangerous
//! window proves nothing about it, and these counts are how a report can say so.

use serde::{Deserialize, Serialize};

use crate::worker::Strategy;

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
}

impl KillWindow {
    pub const ALL: [Self; 3] = [
        Self::BeforeAnyCommit,
        Self::AfterRowCommit,
        Self::AfterCommit,
    ];

    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::BeforeAnyCommit => "before-any-commit",
            Self::AfterRowCommit => "after-row-commit",
            Self::AfterCommit => "after-commit",
        }
    }

    /// The window in which a kill breaks `strategy`'s data, if there is one.
    #[must_use]
    pub fn dangerous_for(strategy: Strategy) -> Option<Self> {
        match strategy {
            Strategy::Naive => Some(Self::AfterCommit),
            Strategy::TwoCommit => Some(Self::AfterRowCommit),
            Strategy::Keyed | Strategy::Guarded | Strategy::Outbox => None,
        }
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

impl std::fmt::Display for KillWindow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// How many kills landed in each window; as JSON, `{"before-any-commit": 0, ...}`, every window
/// present so a zero is visible.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KillWindows {
    #[serde(rename = "before-any-commit")]
    pub before_any_commit: u32,
    #[serde(rename = "after-row-commit")]
    pub after_row_commit: u32,
    #[serde(rename = "after-commit")]
    pub after_commit: u32,
}

impl KillWindows {
    pub fn add(&mut self, window: KillWindow) {
        *self.slot(window) += 1;
    }

    #[must_use]
    pub fn get(&self, window: KillWindow) -> u32 {
        match window {
            KillWindow::BeforeAnyCommit => self.before_any_commit,
            KillWindow::AfterRowCommit => self.after_row_commit,
            KillWindow::AfterCommit => self.after_commit,
        }
    }

    fn slot(&mut self, window: KillWindow) -> &mut u32 {
        match window {
            KillWindow::BeforeAnyCommit => &mut self.before_any_commit,
            KillWindow::AfterRowCommit => &mut self.after_row_commit,
            KillWindow::AfterCommit => &mut self.after_commit,
        }
    }

    /// The sum of two nights' counts.
    #[must_use]
    pub fn plus(mut self, other: Self) -> Self {
        for window in KillWindow::ALL {
            *self.slot(window) += other.get(window);
        }
        self
    }

    /// The windows no kill landed in, in order.
    #[must_use]
    pub fn never_hit(&self) -> Vec<KillWindow> {
        KillWindow::ALL
            .into_iter()
            .filter(|&w| self.get(w) == 0)
            .collect()
    }

    /// What to say beside a PASS of `strategy` when no kill landed in the window that breaks
    /// it: that pass tested nothing about the danger.
    #[must_use]
    pub fn unearned(&self, strategy: Strategy) -> Option<String> {
        let window = KillWindow::dangerous_for(strategy)?;
        (self.get(window) == 0).then(|| {
            format!(
                "no kill landed in {window}, the window that breaks {strategy}: this pass did not test it"
            )
        })
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
    fn a_pass_that_missed_the_dangerous_window_says_so() {
        let mut windows = KillWindows::default();
        windows.add(KillWindow::AfterCommit);
        windows.add(KillWindow::AfterCommit);
        let said = windows.unearned(Strategy::TwoCommit).unwrap_or_default();
        assert!(said.contains("after-row-commit"), "{said}");
        assert_eq!(windows.unearned(Strategy::Naive), None);
        assert_eq!(windows.unearned(Strategy::Guarded), None);
        assert_eq!(
            windows.never_hit(),
            vec![KillWindow::BeforeAnyCommit, KillWindow::AfterRowCommit]
        );
        let json = serde_json::to_string(&windows).unwrap_or_default();
        assert_eq!(
            json,
            r#"{"before-any-commit":0,"after-row-commit":0,"after-commit":2}"#
        );
    }
}
