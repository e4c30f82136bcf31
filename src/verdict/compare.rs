//! A night judged by its effects (`--compare`): the final state of the tables the job wrote,
//! compared with the undisturbed night's (the same job on the same queue, run to its end
//! without a fault). The undisturbed night runs twice: what differs between those two is the
//! job's own nondeterminism, said and left out of the comparison (untested there), never
//! judged. What differs from this night is the bug, row by row.

use std::collections::BTreeSet;

use serde::Serialize;

use super::account::{Account, Kind};
use super::state::{ColumnName, State, TableDiff, compare, compare_table};
use crate::base::text::{count, escape_controls};

/// What two undisturbed nights of the job disagree on.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Nondeterminism {
    /// Columns whose values differ (each table's other columns agree).
    pub columns: Vec<ColumnName>,
    /// Tables whose rows differ beyond a few columns (keys, counts), or that one night made.
    pub tables: Vec<String>,
}

impl Nondeterminism {
    /// What `a` and `b`, two undisturbed nights, disagree on, `ignored` left out.
    #[must_use]
    pub fn between(a: &State, b: &State, ignored: &BTreeSet<ColumnName>) -> Self {
        let mut found = Self::default();
        let names: BTreeSet<&String> = a.tables.keys().chain(b.tables.keys()).collect();
        for name in names {
            let (Some(x), Some(y)) = (a.tables.get(name), b.tables.get(name)) else {
                found.tables.push(name.clone());
                continue;
            };
            match compare_table(x, y, ignored) {
                None => {}
                Some(TableDiff::Rows {
                    missing: 0,
                    extra: 0,
                    columns,
                    ..
                }) => found
                    .columns
                    .extend(columns.into_keys().map(|column| ColumnName {
                        table: name.clone(),
                        column,
                    })),
                Some(_) => {
                    // The columns whose values differ, each as a multiset: if leaving them out
                    // makes the two agree, they are the nondeterminism; else the whole table.
                    let candidates: Vec<ColumnName> = (x.columns.iter())
                        .filter(|c| y.columns.contains(c))
                        .filter(|c| values(x, c) != values(y, c))
                        .map(|c| ColumnName {
                            table: name.clone(),
                            column: c.clone(),
                        })
                        .filter(|c| !ignored.contains(c))
                        .collect();
                    let mut wider = ignored.clone();
                    wider.extend(candidates.iter().cloned());
                    if !candidates.is_empty() && compare_table(x, y, &wider).is_none() {
                        found.columns.extend(candidates);
                    } else {
                        found.tables.push(name.clone());
                    }
                }
            }
        }
        found
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.columns.is_empty() && self.tables.is_empty()
    }
}

/// The values of `column` in `table`, sorted: a column's multiset.
fn values<'a>(table: &'a super::state::Table, column: &str) -> Vec<&'a super::state::Cell> {
    let Some(i) = table.columns.iter().position(|x| x == column) else {
        return Vec::new();
    };
    let mut v: Vec<&super::state::Cell> = table.rows.iter().map(|r| &r[i]).collect();
    v.sort();
    v
}

/// What a comparison looks at: the tables named (every table when none is), and the columns
/// that may differ from night to night.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Scope {
    pub tables: Vec<String>,
    pub ignored: BTreeSet<ColumnName>,
}

/// A night's state against the undisturbed night's: what differs, and what could not be judged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Comparison {
    /// The tables this night holds that were compared (those named, or all), in name order.
    pub tables: Vec<String>,
    /// Their rows, this night.
    pub rows: u64,
    /// How each differs from the reference (empty: the same state).
    #[serde(serialize_with = "said_diffs")]
    pub diffs: Vec<TableDiff>,
    /// What the two undisturbed nights disagreed on: not compared.
    pub nondeterministic: Nondeterminism,
    /// Why there is nothing to compare with (the undisturbed night did not hold), if so.
    pub no_reference: Option<String>,
}

fn said_diffs<S: serde::Serializer>(diffs: &[TableDiff], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(diffs.iter().map(|d| {
        serde_json::json!({
            "table": d.table(),
            "rows": d.rows(),
            "said": d.said(),
        })
    }))
}

impl Comparison {
    /// `night` against the first of two undisturbed nights (`references`), what the two
    /// disagree on left out, and the columns `ignored` (`--ignore-column`).
    #[must_use]
    pub fn of(references: (&State, &State), night: &State, ignored: &BTreeSet<ColumnName>) -> Self {
        let nondeterministic = Nondeterminism::between(references.0, references.1, ignored);
        Self::against((references.0, nondeterministic), night, ignored)
    }

    /// `night` against `reference`, what two undisturbed nights disagreed on (`nondeterministic`,
    /// found once by `Nondeterminism::between`) and the columns `ignored` left out.
    #[must_use]
    pub fn against(
        (reference, nondeterministic): (&State, Nondeterminism),
        night: &State,
        ignored: &BTreeSet<ColumnName>,
    ) -> Self {
        let mut all = ignored.clone();
        all.extend(nondeterministic.columns.iter().cloned());
        let diffs = compare(reference, night, &all)
            .into_iter()
            .filter(|d| !nondeterministic.tables.iter().any(|t| t == d.table()))
            .collect();
        Self {
            tables: night.tables.keys().cloned().collect(),
            rows: night.rows(),
            diffs,
            nondeterministic,
            no_reference: None,
        }
    }

    /// Nothing compared: the undisturbed night could not be the reference, for `why`.
    #[must_use]
    pub fn without_reference(why: String) -> Self {
        Self {
            tables: Vec::new(),
            rows: 0,
            diffs: Vec::new(),
            nondeterministic: Nondeterminism::default(),
            no_reference: Some(why),
        }
    }

    /// The rows that differ, over every table.
    #[must_use]
    pub fn differing_rows(&self) -> u64 {
        self.diffs.iter().map(TableDiff::rows).sum()
    }

    /// What the comparison adds to the night's account: a difference is wrong; the job's own
    /// nondeterminism, and a reference that could not be had, leave it untested there.
    #[must_use]
    pub fn account(&self) -> Account {
        let mut account = Account::new();
        if let Some(why) = &self.no_reference {
            account.push(
                Kind::Unobserved,
                format!("the state was not compared: {why}"),
            );
            return account;
        }
        if !self.diffs.is_empty() {
            let said: Vec<String> = self.diffs.iter().map(TableDiff::said).collect();
            account.push(
                Kind::State,
                format!(
                    "state differs from the undisturbed night: {}",
                    said.join("; ")
                ),
            );
        }
        let columns = &self.nondeterministic.columns;
        if !columns.is_empty() {
            let names: Vec<String> = columns.iter().map(ToString::to_string).collect();
            let flags: Vec<String> = names
                .iter()
                .map(|n| format!("--ignore-column {n}"))
                .collect();
            account.push(
                Kind::Nondeterministic,
                format!(
                    "the job's own nondeterminism: two undisturbed nights differ in {}, so {} not compared ({} to say it may differ)",
                    names.join(", "),
                    if columns.len() == 1 { "it was" } else { "they were" },
                    flags.join(" ")
                ),
            );
        }
        let tables = &self.nondeterministic.tables;
        if !tables.is_empty() {
            let names: Vec<String> = tables.iter().map(|t| escape_controls(t)).collect();
            account.push(
                Kind::Nondeterministic,
                format!(
                    "the job's own nondeterminism: two undisturbed nights left different rows in {}, so {} not compared (--compare-table names the tables to compare)",
                    names.join(", "),
                    if tables.len() == 1 { "it was" } else { "they were" },
                ),
            );
        }
        account
    }

    /// The verdict in a few words: `state the same`, or the tables that differ and by how many
    /// rows (`state differs: accounts 2 rows`); `state not compared` without a reference.
    #[must_use]
    pub fn short(&self) -> String {
        if self.no_reference.is_some() {
            return "state not compared".into();
        }
        let differ = self.differ();
        if differ.is_empty() {
            "state the same".into()
        } else {
            format!("state differs: {}", differ.join(", "))
        }
    }

    /// Each table that differs, with its rows that do (`accounts 2 rows`).
    #[must_use]
    pub fn differ(&self) -> Vec<String> {
        (self.diffs.iter())
            .map(|d| match d.rows() {
                0 => escape_controls(d.table()),
                n => format!("{} {}", escape_controls(d.table()), count(n, "row", "rows")),
            })
            .collect()
    }

    /// The console's `state` line.
    #[must_use]
    pub fn line(&self) -> String {
        if let Some(why) = &self.no_reference {
            return format!("not compared: {why}");
        }
        let names: Vec<String> = self.tables.iter().map(|t| escape_controls(t)).collect();
        let what = format!(
            "{} ({}), {}, compared with the undisturbed night (run twice)",
            count(self.tables.len() as u64, "table", "tables"),
            names.join(", "),
            count(self.rows, "row", "rows")
        );
        let differ = self.differ();
        let verdict = if differ.is_empty() {
            format!("{what}: the same")
        } else {
            format!("{what}: differs in {}", differ.join(", "))
        };
        let nondeterministic: Vec<String> = (self.nondeterministic.columns.iter())
            .map(ToString::to_string)
            .chain(
                self.nondeterministic
                    .tables
                    .iter()
                    .map(|t| escape_controls(t)),
            )
            .collect();
        if nondeterministic.is_empty() {
            verdict
        } else {
            format!(
                "{verdict}; not compared (the undisturbed nights differ there): {}",
                nondeterministic.join(", ")
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::state::Cell;
    use super::super::state::tests::{state, table, text};
    use super::*;
    use crate::verdict::account::Outcome;

    fn ledger(balance: i64, stamp: &str) -> State {
        state(vec![
            table(
                "accounts",
                &["id", "balance"],
                &[0],
                &[
                    &[text("a"), Cell::Int(balance)],
                    &[text("b"), Cell::Int(50)],
                ],
            ),
            table(
                "applied",
                &["transfer_id", "applied_at"],
                &[0],
                &[&[text("tr-1"), text(stamp)]],
            ),
        ])
    }

    #[test]
    fn a_difference_fails_naming_table_key_column_and_both_values() {
        let none = BTreeSet::new();
        let reference = ledger(100, "t0");
        let night = ledger(150, "t0");
        let compared = Comparison::of((&reference, &reference.clone()), &night, &none);
        let judged = compared.account().judge(false);
        assert_eq!(judged.outcome, Outcome::Fail);
        assert_eq!(
            judged.reasons(),
            "state differs from the undisturbed night: accounts: 1 row differs (id=a balance: reference 100, this night 150)"
        );
        assert_eq!(
            compared.line(),
            "2 tables (accounts, applied), 3 rows, compared with the undisturbed night (run twice): differs in accounts 1 row"
        );
        let same = Comparison::of((&reference, &reference.clone()), &reference.clone(), &none);
        assert_eq!(same.account().judge(true).outcome, Outcome::Pass);
    }

    #[test]
    fn a_column_the_undisturbed_nights_disagree_on_is_said_untested_until_ignored() {
        let (a, b) = (ledger(100, "12:00:01"), ledger(100, "12:00:02"));
        let night = ledger(100, "12:00:03");
        let compared = Comparison::of((&a, &b), &night, &BTreeSet::new());
        assert_eq!(
            compared.nondeterministic.columns,
            vec!["applied.applied_at".parse::<ColumnName>().unwrap()]
        );
        let judged = compared.account().judge(false);
        assert_eq!(judged.outcome, Outcome::Untested);
        assert!(
            judged
                .reasons()
                .contains("--ignore-column applied.applied_at"),
            "{}",
            judged.reasons()
        );
        // Nondeterminism never hides a difference elsewhere.
        let wrong = ledger(150, "12:00:03");
        let judged = Comparison::of((&a, &b), &wrong, &BTreeSet::new())
            .account()
            .judge(false);
        assert_eq!(judged.outcome, Outcome::Fail);
        let ignored: BTreeSet<ColumnName> = ["applied.applied_at".parse().unwrap()].into();
        let judged = Comparison::of((&a, &b), &night, &ignored)
            .account()
            .judge(true);
        assert_eq!(judged.outcome, Outcome::Pass);
    }

    #[test]
    fn nondeterminism_in_a_keyless_table_is_found_by_its_columns_or_said_of_the_table() {
        let log = |stamp: &str, n: i64| {
            table(
                "log",
                &["at", "n"],
                &[],
                &[&[text(stamp), Cell::Int(n)], &[text("x"), Cell::Int(2)]],
            )
        };
        let found = Nondeterminism::between(
            &state(vec![log("t1", 1)]),
            &state(vec![log("t2", 1)]),
            &BTreeSet::new(),
        );
        assert_eq!(found.columns, vec!["log.at".parse::<ColumnName>().unwrap()]);
        let three = table("log", &["at", "n"], &[], &[&[text("x"), Cell::Int(2)]]);
        let found = Nondeterminism::between(
            &state(vec![log("t1", 1)]),
            &state(vec![three]),
            &BTreeSet::new(),
        );
        assert_eq!(found.tables, vec!["log".to_string()]);
        let compared = Comparison::of(
            (&state(vec![log("t1", 1)]), &state(vec![log("x", 2)])),
            &state(vec![log("t1", 9)]),
            &BTreeSet::new(),
        );
        assert_eq!(compared.account().judge(false).outcome, Outcome::Untested);
    }

    #[test]
    fn no_reference_is_untested_never_a_pass() {
        let compared =
            Comparison::without_reference("the undisturbed night never completed".into());
        let judged = compared.account().judge(false);
        assert_eq!(judged.outcome, Outcome::Untested);
        assert!(judged.reasons().contains("never completed"));
    }
}
