//! One night of `map --exec` as a cell of the map: the kill it ran (`ExecKill`), its figures,
//! its verdict and its mark, and (`--compare`) its tables against the undisturbed night's.

use std::path::PathBuf;

use serde::Serialize;

use crate::verdict::Status;

/// Where one night kills the job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExecKill {
    /// At a point the job announces, in the unit of work of the key at `index`.
    Point { index: u64, name: String },
    /// As soon as the table holds this many rows.
    Rows(u64),
    /// When the job's vendor has message N (1-based), before it answers: after a send, before
    /// whatever the job does next (`--vendor`).
    Message(u64),
}

impl ExecKill {
    /// The band the cell is drawn in: the point's name, or `rows`.
    #[must_use]
    pub fn band(&self) -> String {
        match self {
            Self::Point { name, .. } => name.clone(),
            Self::Rows(_) => "rows".into(),
            Self::Message(_) => MESSAGE_BAND.into(),
        }
    }

    /// The column: the key's index, or the row count less one.
    #[must_use]
    pub fn column(&self) -> u64 {
        match self {
            Self::Point { index, .. } => *index,
            Self::Rows(rows) | Self::Message(rows) => rows - 1,
        }
    }
}

/// The band of kills at a message, in a map of a job with a vendor.
pub const MESSAGE_BAND: &str = "message";

/// One finished night. The JSON keys are stable.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExecCell {
    /// The point's name, or `rows` for a kill at a row count.
    pub band: String,
    /// The key the point was in, or `after N rows`.
    pub at: String,
    #[serde(skip)]
    pub column: u64,
    /// The kill, typed (`band` and `at` say it in the JSON).
    #[serde(skip)]
    pub kill: ExecKill,
    pub rows: u64,
    pub distinct: u64,
    pub duplicated_task_ids: u64,
    pub missing: u64,
    /// Rows whose key is not one of the queue's.
    pub outside: u64,
    pub derived_status: Status,
    pub completed: bool,
    /// The kill happened: a night whose kill never fired tested nothing.
    pub killed: bool,
    /// A kill at a row count: the rows the table held once it had landed (a job that writes
    /// between two reads of the observer may have gone past the count).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub landed_at_rows: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub db: Option<PathBuf>,
    /// A key this night's observer saw with its checkpoint committed and no row: the job
    /// commits its checkpoint first (said beside the map, not per cell).
    #[serde(skip)]
    pub checkpoint_before_row: Option<String>,
    /// The vendor's verdict when its messages are wrong (a night with `--vendor`): doubled,
    /// missing or outside the queue.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub messages_wrong: Option<String>,
    /// `--compare`: this night's tables against the undisturbed night's (`None`: not compared).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state: Option<CellState>,
}

/// A night's tables against the undisturbed night's, as a map's cell holds them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CellState {
    Same,
    /// The tables that differ and by how many rows (`accounts 2 rows`); then the first
    /// differing rows, as the comparison says them.
    Differs {
        tables: String,
        said: String,
    },
}

impl CellState {
    pub(super) fn of(comparison: &crate::verdict::compare::Comparison) -> Self {
        if comparison.diffs.is_empty() {
            return Self::Same;
        }
        let account = comparison.account();
        let said = (account.entries.iter())
            .find(|e| e.kind == crate::verdict::account::Kind::State)
            .map_or_else(String::new, |e| e.said.clone());
        Self::Differs {
            tables: comparison.differ().join(", "),
            said,
        }
    }

    fn differs(&self) -> bool {
        matches!(self, Self::Differs { .. })
    }
}

impl ExecCell {
    /// Every key once, the job completed, and the kill happened.
    #[must_use]
    pub fn is_right(&self) -> bool {
        self.killed
            && self.completed
            && self.derived_status.is_ok()
            && self.messages_wrong.is_none()
            && !self.state_differs()
    }

    /// `--compare` found this night's tables other than the undisturbed night's.
    #[must_use]
    pub fn state_differs(&self) -> bool {
        self.state.as_ref().is_some_and(CellState::differs)
    }

    /// Right, wrong, or a night that tested nothing (its kill never fired, its point was never
    /// reached).
    #[must_use]
    pub fn tested(&self) -> crate::map::Tested {
        let clean = self.counts_clean() && self.derived_status.is_ok();
        crate::map::Tested::of(self.is_right(), self.killed, clean)
    }

    /// Completed, and every key of the queue once with nothing outside it.
    fn counts_clean(&self) -> bool {
        self.completed
            && self.missing == 0
            && self.duplicated_task_ids == 0
            && self.outside == 0
            && self.messages_wrong.is_none()
            && !self.state_differs()
    }

    /// The verdict in a word or two, as the built-in map says it.
    #[must_use]
    pub fn verdict(&self) -> String {
        let said = self.data_verdict();
        if !self.killed && !self.counts_clean() {
            // Wrong all the same: the night went wrong without the kill it was for.
            return format!("{said} (its kill never fired)");
        }
        said
    }

    fn data_verdict(&self) -> String {
        if !self.completed {
            // Given up on (out of restarts, no progress, a crash loop): whatever its rows.
            let missing = if self.missing > 0 {
                format!(", {} missing", self.missing)
            } else {
                String::new()
            };
            format!("NEVER COMPLETED{missing}")
        } else if self.missing > 0 {
            format!("MISSING {}", self.missing)
        } else if self.duplicated_task_ids > 0 {
            format!("DUPLICATED {}", self.duplicated_task_ids)
        } else if self.outside > 0 {
            format!("{} rows OUTSIDE the queue", self.outside)
        } else if let Some(messages) = &self.messages_wrong {
            messages.clone()
        } else if let Some(CellState::Differs { tables, .. }) = &self.state {
            format!("STATE DIFFERS ({tables})")
        } else if !self.killed {
            "UNTESTED: the kill never fired".into()
        } else if self.is_right() {
            "right".into()
        } else {
            format!("WRONG ({})", self.derived_status.label())
        }
    }

    /// One character for the text map: `·` right, a digit the duplicated keys (`#` for 10 or
    /// more), `!` missing, `≠` every key once but the tables other than the undisturbed
    /// night's (`--compare`), `?` anything else (the kill never fired included).
    #[must_use]
    pub fn mark(&self) -> char {
        if self.missing > 0 {
            '!'
        } else if self.duplicated_task_ids > 0 {
            char::from_digit(self.duplicated_task_ids.min(10) as u32, 10).unwrap_or('#')
        } else if self.state_differs()
            && self.completed
            && self.outside == 0
            && self.messages_wrong.is_none()
        {
            // Every key once and nothing else wrong: only the tables say it.
            '≠'
        } else if self.is_right() {
            '·'
        } else {
            '?'
        }
    }
}

impl crate::map::MapCell for ExecCell {
    fn band(&self) -> (String, String) {
        (crate::engine::EXEC_LABEL.to_string(), self.band.clone())
    }

    fn column(&self) -> u64 {
        self.column
    }

    fn outcome(&self) -> crate::map::Outcome {
        use crate::map::Outcome;
        if self.missing > 0 {
            Outcome::Missing(self.missing)
        } else if self.duplicated_task_ids > 0 {
            Outcome::Duplicated(self.duplicated_task_ids)
        } else if self.is_right() {
            Outcome::Right
        } else {
            Outcome::Wrong
        }
    }

    fn verdict(&self) -> String {
        ExecCell::verdict(self)
    }

    fn detail(&self) -> String {
        let counts = format!(
            "{} rows, {} distinct, {} duplicated, {} missing",
            self.rows, self.distinct, self.duplicated_task_ids, self.missing
        );
        // `--compare`: the night's effects beside its rows.
        let counts = match &self.state {
            None => counts,
            Some(CellState::Same) => format!("{counts}, state the same"),
            Some(CellState::Differs { tables, .. }) => format!("{counts}, state differs: {tables}"),
        };
        match (&self.kill, self.landed_at_rows) {
            (ExecKill::Rows(rows), Some(landed)) if landed != *rows => {
                format!("{counts}; the kill landed with {landed} rows written")
            }
            (ExecKill::Point { .. }, _) if self.killed => {
                format!("{counts}; killed at the point the job announced")
            }
            (ExecKill::Message(_), _) => match &self.messages_wrong {
                Some(messages) => format!("{counts}; {messages}"),
                None => format!("{counts}; every message once"),
            },
            _ => counts,
        }
    }

    fn name(&self) -> String {
        match &self.kill {
            ExecKill::Point { name, .. } => format!("{}:{name}", self.at),
            ExecKill::Rows(_) | ExecKill::Message(_) => self.at.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A night killed at `tr-0003:after-balance-commit` whose rows are right: every key once.
    fn cell(state: Option<CellState>, killed: bool) -> ExecCell {
        ExecCell {
            band: "after-balance-commit".into(),
            at: "tr-0003".into(),
            column: 3,
            kill: ExecKill::Point {
                index: 3,
                name: "after-balance-commit".into(),
            },
            rows: 12,
            distinct: 12,
            duplicated_task_ids: 0,
            missing: 0,
            outside: 0,
            derived_status: Status::Ok,
            completed: true,
            killed,
            landed_at_rows: None,
            db: None,
            checkpoint_before_row: None,
            messages_wrong: None,
            state,
        }
    }

    fn differs() -> CellState {
        CellState::Differs {
            tables: "accounts 2 rows".into(),
            said: "state differs from the undisturbed night: accounts: 2 rows differ".into(),
        }
    }

    #[test]
    fn a_cell_whose_tables_differ_is_wrong_though_its_rows_are_right() {
        let wrong = cell(Some(differs()), true);
        assert!(!wrong.is_right());
        assert_eq!(wrong.tested(), crate::map::Tested::Wrong);
        assert_eq!(wrong.mark(), '≠');
        assert_eq!(wrong.verdict(), "STATE DIFFERS (accounts 2 rows)");
        assert!(crate::map::MapCell::detail(&wrong).contains("state differs: accounts 2 rows"));
        // Its kill never fired, and the tables differ all the same: wrong, and said so.
        let unfired = cell(Some(differs()), false);
        assert_eq!(unfired.tested(), crate::map::Tested::Wrong);
        assert_eq!(
            unfired.verdict(),
            "STATE DIFFERS (accounts 2 rows) (its kill never fired)"
        );
        // A row outside the queue changes a table too: the stronger verdict keeps its mark.
        let outside = ExecCell {
            outside: 1,
            ..cell(Some(differs()), true)
        };
        assert_eq!(outside.mark(), '?');
        assert_eq!(outside.verdict(), "1 rows OUTSIDE the queue");
    }

    #[test]
    fn a_cell_the_same_as_the_reference_or_not_compared_is_judged_by_its_rows() {
        for state in [Some(CellState::Same), None] {
            let right = cell(state.clone(), true);
            assert!(right.is_right());
            assert_eq!(right.mark(), '·');
            assert_eq!(right.verdict(), "right");
            assert_eq!(
                cell(state, false).tested(),
                crate::map::Tested::Nothing,
                "a kill that never fired tested nothing"
            );
        }
        let json = |cell: ExecCell| serde_json::to_value(cell).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(json(cell(Some(CellState::Same), true))["state"], "same");
        let differing = json(cell(Some(differs()), true));
        assert_eq!(differing["state"]["differs"]["tables"], "accounts 2 rows");
        let plain = json(cell(None, true));
        assert_eq!(plain["rows"], 12);
        assert!(plain.get("state").is_none());
    }
}
