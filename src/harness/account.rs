//! A night's account (`verdict::account`) from its report: what it saw go wrong, what it left
//! untested, and where a test's kills landed over all its nights.

use super::RunReport;
use crate::engine::KillWindows;
use crate::verdict::Derived;
use crate::verdict::account::{self, Account};

impl RunReport {
    /// The night's account: what it saw go wrong and what it left untested (`verdict::account`
    /// turns it into pass / fail / untested, the same in every command and output).
    #[must_use]
    pub fn account(&self) -> Account {
        let mut account = self.account_but_windows();
        account.absorb(&windows_account(&[self]), "");
        account
    }

    /// The night's account but for where its kills landed: what a test of several nights
    /// judges night by night (the windows it judges over all its nights, `windows_account`).
    #[must_use]
    pub fn account_but_windows(&self) -> Account {
        let mut account = Account::new();
        let never_completed = self.never_completed();
        let derived = self.derived();
        // A night never completed has its rows still to come: that it never completed says it.
        let still_to_come =
            matches!(derived, Derived::Incomplete { .. }) && never_completed.is_some();
        if let Some(reason) = never_completed {
            account.push(account::Kind::NeverCompleted, reason);
        }
        if !derived.is_ok() && !still_to_come {
            account.push(account::Kind::Data, format!("the rows: {derived}"));
        }
        if let Some(key) = &self.checkpoint_before_row {
            account.push(
                account::Kind::CheckpointBeforeRow,
                super::checkpoint_first(key),
            );
        }
        if let Some(said) = self.messages_verdict().filter(|_| !self.messages_hold()) {
            account.push(account::Kind::Messages, said);
        }
        for said in self.not_fired_gaps() {
            account.push(account::Kind::NotFired, said);
        }
        if let Some(pause) = self.pause_planned {
            if self.pauses.landed == 0 {
                account.push(
                    account::Kind::NotFired,
                    format!("the pause at {pause} never happened: no worker's first attempt reached that write"),
                );
            } else if self
                .strategy
                .is_some_and(crate::worker::Strategy::claims_items)
                && self.pauses.past_lease == 0
            {
                account.push(
                    account::Kind::WindowNeverHit,
                    format!(
                        "the pause ({} s) ended before the lease it held ({} s): no worker woke to find its item taken over",
                        pause.secs,
                        crate::worker::LEASE_SECS
                    ),
                );
            }
        }
        if let Some(pause) = self.pause_rows_planned.filter(|_| !self.pauses.at_rows) {
            account.push(
                account::Kind::NotFired,
                format!(
                    "the pause at {} rows never happened: the table never held {} rows while a job ran",
                    pause.rows, pause.rows
                ),
            );
        }
        for never in self.answers_never_lost() {
            account.push(account::Kind::NotFired, never);
        }
        if let Some(state) = &self.state {
            account.absorb(&state.account(), "");
        }
        if self.inspection.judged == crate::warehouse::Judged::Counts {
            account.push(
                account::Kind::Unobserved,
                "the rows were judged by counts, not key by key",
            );
        }
        account
    }

    /// Whether the night set out to kill: a kill made, or one planned.
    fn set_out_to_kill(&self) -> bool {
        self.kills > 0 || self.kills_planned > 0 || !self.unfired.is_empty()
    }
}

/// Where the kills of `reports` (the nights of one test) landed, judged together: each window
/// that can break the job and that no kill of any of them reached (its strategy's; for a job of
/// the user's, between a message's send and its record when it has a vendor, and between a row
/// and its checkpoint once seen apart; each point the job announced), kills that all landed
/// before their attempt's first commit, and kills that could not be placed. Only nights that
/// set out to kill are asked.
#[must_use]
pub fn windows_account(reports: &[&RunReport]) -> Account {
    let mut account = Account::new();
    let killing: Vec<&RunReport> = (reports.iter().copied())
        .filter(|r| r.set_out_to_kill())
        .collect();
    let Some(first) = killing.first() else {
        return account;
    };
    let windows =
        (killing.iter()).fold(KillWindows::default(), |sum, r| sum.plus(r.kills_in_window));
    let kills: u32 = killing.iter().map(|r| r.kills).sum();
    let mut announced = std::collections::BTreeMap::<&str, u64>::new();
    let mut at_points = std::collections::BTreeMap::<&str, u32>::new();
    for report in &killing {
        for (point, times) in &report.points_announced {
            *announced.entry(point).or_default() += times;
        }
        for (point, n) in &report.kills_after_points {
            *at_points.entry(point).or_default() += n;
        }
    }
    let never_hit = account::Kind::WindowNeverHit;
    match first.strategy {
        Some(strategy) => {
            if let Some(said) = windows.unearned(strategy) {
                account.push(never_hit, said);
            }
        }
        // A job of the user's that reaches a vendor: reclaim cannot know whether it sends
        // before its commit or after it (an outbox), so a kill in either window will do; where
        // it lands says which (a kill at a message: `--kill-at-message`, or prove's).
        None if windows.sends
            && windows.get(crate::engine::KillWindow::AfterSend) == 0
            && windows.get(crate::engine::KillWindow::AfterRelaySend) == 0 =>
        {
            account.push(never_hit, "no kill landed between a message's send and the job's record of it (after-send: its row not committed; after-relay-send: committed, the send not marked), where a restart sends again without a key the vendor honours (--kill-at-message N lands one there)");
        }
        None => {}
    }
    // A job of the user's seen committing a row before its checkpoint has after-row-commit as
    // a window of its own: a kill there makes the restart do that item again.
    if first.strategy.is_none()
        && windows.get(crate::engine::KillWindow::AfterRowCommit) == 0
        && let Some(key) = killing
            .iter()
            .find_map(|r| r.row_before_checkpoint.as_deref())
    {
        account.push(
            never_hit,
            format!(
                "the job commits a row before its checkpoint (seen: {} had its row and no checkpoint), and no kill landed between the two (after-row-commit), where a restart does that item again",
                crate::base::text::escape_controls(key)
            ),
        );
    }
    let unhit: Vec<String> = (announced.iter())
        .filter(|(point, _)| {
            let killed_there = at_points.get(*point).copied().unwrap_or(0);
            let in_window = (crate::engine::KillWindow::ALL.into_iter())
                .find(|w| w.name() == **point)
                .map_or(0, |w| windows.get(w));
            killed_there == 0 && in_window == 0
        })
        .map(|(point, times)| {
            format!(
                "{} ({})",
                crate::base::text::escape_controls(point),
                crate::base::text::count(*times, "time", "times")
            )
        })
        .collect();
    if !unhit.is_empty() {
        account.push(
            never_hit,
            format!(
                "the job announced {} and no kill landed there (map --exec kills at every point it announces; --crash-at KEY:POINT at one)",
                unhit.join(", ")
            ),
        );
    }
    if kills > 0 && windows.after_a_commit() == 0 && at_points.values().sum::<u32>() == 0 {
        account.push(
            account::Kind::NothingAtStake,
            format!(
                "{} landed before its attempt's first commit: no committed work was at stake, so no restart was tested",
                if kills == 1 {
                    "the one kill".to_string()
                } else {
                    format!("every one of the {kills} kills")
                }
            ),
        );
    }
    if windows.unplaced > 0 {
        account.push(
            account::Kind::Unobserved,
            format!(
                "{} after a commit could not be placed before or after a checkpoint",
                crate::base::text::count(u64::from(windows.unplaced), "kill", "kills")
            ),
        );
    }
    account
}
