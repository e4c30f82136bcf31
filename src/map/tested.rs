//! What a map's cells tested, and what the map says of them: right, wrong or nothing (a kill
//! that never fired), counted alike for reclaim's map and an own job's, and the whole map's
//! account, which the one rule (`verdict::account`) judges.

use crate::verdict::account::{Account, Kind};

/// What a cell's night tested, for the map's exit: right, wrong, or nothing (its kill never
/// fired and the rows are otherwise right: never counted right, failed only by `--strict`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tested {
    Right,
    Wrong,
    Nothing,
}

impl Tested {
    /// From a night's figures: `right` (killed, completed, rows right), `killed`, `clean`
    /// (completed with every key once).
    #[must_use]
    pub fn of(right: bool, killed: bool, clean: bool) -> Self {
        if right {
            Self::Right
        } else if !killed && clean {
            Self::Nothing
        } else {
            Self::Wrong
        }
    }
}

/// How many of a map's cells tested something wrong and how many tested nothing: the figures
/// both maps' summaries, JSON and exits are made of.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    pub wrong: usize,
    pub untested: usize,
}

impl Tally {
    #[must_use]
    pub fn of(cells: impl IntoIterator<Item = Tested>) -> Self {
        cells.into_iter().fold(Self::default(), |t, cell| Self {
            wrong: t.wrong + usize::from(cell == Tested::Wrong),
            untested: t.untested + usize::from(cell == Tested::Nothing),
        })
    }
}

/// A whole map's account, for the one rule: its wrong cells, the cells whose `what` (crash,
/// kill) never fired, and a map left before it finished (`left`: the nights that never ran).
#[must_use]
pub fn account(tally: Tally, nights: usize, left: Option<usize>, what: &str) -> Account {
    let mut account = Account::new();
    if let Some(left) = left {
        account.push(
            Kind::NeverCompleted,
            format!(
                "the map was left before it finished: {} never ran",
                crate::base::text::count(left as u64, "night", "nights")
            ),
        );
    } else if nights == 0 {
        account.push(Kind::NeverCompleted, "no night of the map ran");
    }
    if tally.wrong > 0 {
        account.push(
            Kind::Data,
            format!(
                "{} wrong",
                crate::base::text::count(tally.wrong as u64, "cell", "cells")
            ),
        );
    }
    if tally.untested > 0 {
        account.push(
            Kind::NotFired,
            format!(
                "{} tested nothing: its {what} never fired",
                crate::base::text::count(tally.untested as u64, "cell", "cells")
            ),
        );
    }
    account
}

/// `; 3 untested (the crash never fired; --strict fails them)`, or nothing.
#[must_use]
pub fn not_tested_note(untested: usize, what: &str) -> String {
    if untested == 0 {
        return String::new();
    }
    format!("; {untested} untested (the {what} never fired; --strict fails them)")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tally_counts_wrong_and_untested_cells_apart_and_right_ones_in_neither() {
        let cells = [
            Tested::Right,
            Tested::Wrong,
            Tested::Nothing,
            Tested::Wrong,
            Tested::Right,
        ];
        assert_eq!(
            Tally::of(cells),
            Tally {
                wrong: 2,
                untested: 1
            }
        );
        assert_eq!(Tally::of([]), Tally::default());
    }
}
