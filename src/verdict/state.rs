//! The final state of the tables a job wrote, as the warehouse read it, and the difference
//! between two such states: rows matched by their primary key (or, in a table without one, as
//! whole-row multisets), the columns named as volatile left out. Pure: the warehouse reads a
//! `State` (`Backend::read_state`), `compare` judges it against the undisturbed night's.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::base::text::{escape_controls, shorten};

/// How many differing rows of a table a difference names (the counts say the rest).
pub const FIRST: usize = 3;

/// One value as the warehouse holds it. PostgreSQL's are read as text (`CAST(c AS TEXT)`), so
/// two nights of one engine always compare like with like.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Cell {
    Null,
    Int(i64),
    /// A float's bits, so equal values are equal cells (a NaN is equal to itself).
    Real(u64),
    Text(String),
    Blob(Vec<u8>),
}

impl Cell {
    /// The value as a verdict says it: `NULL`, `100`, `1.5`, the text with its control
    /// characters escaped (at most 40 characters), a blob as `x'00ff..'`.
    #[must_use]
    pub fn shown(&self) -> String {
        match self {
            Self::Null => "NULL".into(),
            Self::Int(n) => n.to_string(),
            Self::Real(bits) => f64::from_bits(*bits).to_string(),
            Self::Text(text) => escape_controls(&shorten(text, 40)),
            Self::Blob(bytes) => {
                let hex: String = bytes.iter().take(16).fold(String::new(), |mut hex, b| {
                    use std::fmt::Write as _;
                    let _ = write!(hex, "{b:02x}");
                    hex
                });
                let more = if bytes.len() > 16 { ".." } else { "" };
                format!("x'{hex}{more}'")
            }
        }
    }
}

/// One table at the end of a night: its columns in order, its primary key's columns (empty:
/// none), its rows.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Table {
    pub name: String,
    pub columns: Vec<String>,
    pub key: Vec<usize>,
    pub rows: Vec<Vec<Cell>>,
}

/// The tables of a night, by name.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct State {
    pub tables: BTreeMap<String, Table>,
}

impl State {
    /// Every row of every table.
    #[must_use]
    pub fn rows(&self) -> u64 {
        self.tables.values().map(|t| t.rows.len() as u64).sum()
    }
}

/// A column left out of a comparison: `TABLE.COLUMN`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ColumnName {
    pub table: String,
    pub column: String,
}

/// `--ignore-column` given something other than `TABLE.COLUMN`.
#[derive(Debug, thiserror::Error)]
#[error("{0} is not TABLE.COLUMN (accounts.updated_at, say)")]
pub struct NotAColumn(String);

/// More rows in the tables compared than a comparison holds.
#[derive(Debug, thiserror::Error)]
#[error("more than {limit} rows in the tables compared; name fewer with --compare-table")]
pub struct TooManyRows {
    pub limit: u64,
}

impl std::str::FromStr for ColumnName {
    type Err = NotAColumn;

    fn from_str(text: &str) -> Result<Self, NotAColumn> {
        match text.split_once('.') {
            Some((table, column)) if !table.is_empty() && !column.is_empty() => Ok(Self {
                table: table.to_string(),
                column: column.to_string(),
            }),
            _ => Err(NotAColumn(escape_controls(text))),
        }
    }
}

impl serde::Serialize for ColumnName {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl std::fmt::Display for ColumnName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}.{}",
            escape_controls(&self.table),
            escape_controls(&self.column)
        )
    }
}

/// One row that differs: where it is, and what differs in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowDiff {
    /// The row's key (`id=acct-03`), or the whole row where the table has none.
    pub key: String,
    /// The columns that differ: name, the reference's value, this night's.
    pub cells: Vec<(String, String, String)>,
}

/// How one table differs from the reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TableDiff {
    /// The same table, with rows that differ.
    Rows {
        table: String,
        /// Rows of both, by key, whose values differ.
        changed: u64,
        /// Rows of the reference with no row here.
        missing: u64,
        /// Rows here with none in the reference.
        extra: u64,
        /// The first of each, in key order.
        first_changed: Vec<RowDiff>,
        first_missing: Vec<String>,
        first_extra: Vec<String>,
        /// How many rows differ in each column (matched rows only).
        columns: BTreeMap<String, u64>,
    },
    /// Its columns are not the reference's.
    Shape {
        table: String,
        reference: Vec<String>,
        night: Vec<String>,
    },
    /// A table of the reference this night does not have.
    Missing { table: String },
    /// A table this night has that the reference does not.
    Extra { table: String },
}

impl TableDiff {
    #[must_use]
    pub fn table(&self) -> &str {
        match self {
            Self::Rows { table, .. }
            | Self::Shape { table, .. }
            | Self::Missing { table }
            | Self::Extra { table } => table,
        }
    }

    /// The rows it counts as differing (a whole table missing or reshaped: none counted).
    #[must_use]
    pub fn rows(&self) -> u64 {
        match self {
            Self::Rows {
                changed,
                missing,
                extra,
                ..
            } => changed + missing + extra,
            _ => 0,
        }
    }

    /// One sentence: `accounts: 3 rows differ (id=acct-03 balance: reference 100, this night
    /// 150; ...)`.
    #[must_use]
    pub fn said(&self) -> String {
        let name = escape_controls(self.table());
        match self {
            Self::Missing { .. } => {
                format!("{name}: the undisturbed night made it, this night did not")
            }
            Self::Extra { .. } => {
                format!("{name}: this night made it, the undisturbed night did not")
            }
            Self::Shape {
                reference, night, ..
            } => format!(
                "{name}: its columns differ (reference: {}; this night: {})",
                escape_controls(&reference.join(", ")),
                escape_controls(&night.join(", "))
            ),
            Self::Rows {
                changed,
                missing,
                extra,
                first_changed,
                first_missing,
                first_extra,
                ..
            } => {
                let mut parts = Vec::new();
                let more = |shown: usize, all: u64| if all > shown as u64 { "; ..." } else { "" };
                if *changed > 0 {
                    let rows: Vec<String> = first_changed
                        .iter()
                        .map(|row| {
                            let cells: Vec<String> = (row.cells.iter())
                                .map(|(column, reference, night)| {
                                    format!(
                                        "{}: reference {reference}, this night {night}",
                                        escape_controls(column)
                                    )
                                })
                                .collect();
                            format!("{} {}", row.key, cells.join(", "))
                        })
                        .collect();
                    parts.push(format!(
                        "{} ({}{})",
                        crate::base::text::count(*changed, "row differs", "rows differ"),
                        rows.join("; "),
                        more(first_changed.len(), *changed)
                    ));
                }
                if *missing > 0 {
                    parts.push(format!(
                        "{} of the reference missing ({}{})",
                        crate::base::text::count(*missing, "row", "rows"),
                        first_missing.join("; "),
                        more(first_missing.len(), *missing)
                    ));
                }
                if *extra > 0 {
                    parts.push(format!(
                        "{} not in the reference ({}{})",
                        crate::base::text::count(*extra, "row", "rows"),
                        first_extra.join("; "),
                        more(first_extra.len(), *extra)
                    ));
                }
                format!("{name}: {}", parts.join(", "))
            }
        }
    }
}

/// What differs between `reference` and `night`, table by table (in name order), the columns
/// of `ignored` left out. Empty: the same state.
#[must_use]
pub fn compare(reference: &State, night: &State, ignored: &BTreeSet<ColumnName>) -> Vec<TableDiff> {
    let names: BTreeSet<&String> = reference.tables.keys().chain(night.tables.keys()).collect();
    let mut diffs = Vec::new();
    for name in names {
        match (reference.tables.get(name), night.tables.get(name)) {
            (Some(a), Some(b)) => diffs.extend(compare_table(a, b, ignored)),
            (Some(_), None) => diffs.push(TableDiff::Missing {
                table: name.clone(),
            }),
            (None, Some(_)) => diffs.push(TableDiff::Extra {
                table: name.clone(),
            }),
            (None, None) => {}
        }
    }
    diffs
}

/// One table against the reference's.
#[must_use]
pub fn compare_table(
    reference: &Table,
    night: &Table,
    ignored: &BTreeSet<ColumnName>,
) -> Option<TableDiff> {
    let kept = |t: &Table| -> Vec<String> {
        (t.columns.iter())
            .filter(|c| !is_ignored(ignored, &t.name, c))
            .cloned()
            .collect()
    };
    let (columns, theirs) = (kept(reference), kept(night));
    let same_set: BTreeSet<&String> = columns.iter().collect();
    if same_set != theirs.iter().collect() || columns.len() != theirs.len() {
        return Some(TableDiff::Shape {
            table: reference.name.clone(),
            reference: reference.columns.clone(),
            night: night.columns.clone(),
        });
    }
    let at = |t: &Table| -> Vec<usize> {
        (columns.iter())
            .filter_map(|c| t.columns.iter().position(|x| x == c))
            .collect()
    };
    let (ours_at, theirs_at) = (at(reference), at(night));
    let keyed = !reference.key.is_empty()
        && key_names(reference) == key_names(night)
        && key_names(reference).iter().all(|k| columns.contains(k));
    let diff = if keyed {
        by_key(reference, night, (&columns, &ours_at, &theirs_at))
    } else {
        None
    };
    // No key, or a key that repeats (a NULL in a SQLite key): whole rows, as multisets.
    let diff =
        diff.unwrap_or_else(|| as_multisets(reference, night, (&columns, &ours_at, &theirs_at)));
    (diff.rows() > 0).then_some(diff)
}

fn key_names(t: &Table) -> Vec<&String> {
    t.key.iter().map(|&i| &t.columns[i]).collect()
}

fn is_ignored(ignored: &BTreeSet<ColumnName>, table: &str, column: &str) -> bool {
    ignored.contains(&ColumnName {
        table: table.to_string(),
        column: column.to_string(),
    })
}

type Kept<'a> = (&'a [String], &'a [usize], &'a [usize]);

/// Rows matched by key; `None` when a key repeats in either table.
fn by_key(
    reference: &Table,
    night: &Table,
    (columns, ours, theirs): Kept<'_>,
) -> Option<TableDiff> {
    let key_of =
        |t: &Table, row: &[Cell]| -> Vec<Cell> { t.key.iter().map(|&i| row[i].clone()).collect() };
    let mut index: HashMap<Vec<Cell>, usize> = HashMap::with_capacity(reference.rows.len());
    for (i, row) in reference.rows.iter().enumerate() {
        if index.insert(key_of(reference, row), i).is_some() {
            return None;
        }
    }
    let mut seen = vec![false; reference.rows.len()];
    let mut keys_here = std::collections::HashSet::with_capacity(night.rows.len());
    let said_key = |t: &Table, row: &[Cell]| -> String {
        let parts: Vec<String> = (t.key.iter())
            .map(|&i| format!("{}={}", escape_controls(&t.columns[i]), row[i].shown()))
            .collect();
        parts.join(" ")
    };
    let (mut changed, mut extra) = (0, 0);
    let (mut first_changed, mut first_extra) = (Vec::new(), Vec::new());
    let mut per_column = BTreeMap::new();
    let mut sorted: Vec<&Vec<Cell>> = night.rows.iter().collect();
    sorted.sort_by_cached_key(|r| key_of(night, r));
    for row in sorted {
        let key = key_of(night, row);
        if !keys_here.insert(key.clone()) {
            return None;
        }
        let Some(&i) = index.get(&key) else {
            extra += 1;
            if first_extra.len() < FIRST {
                first_extra.push(said_key(night, row));
            }
            continue;
        };
        seen[i] = true;
        let theirs_row = &reference.rows[i];
        let cells: Vec<(String, String, String)> = (columns.iter().zip(ours.iter().zip(theirs)))
            .filter(|(_, (a, b))| theirs_row[**a] != row[**b])
            .map(|(c, (a, b))| (c.clone(), theirs_row[*a].shown(), row[*b].shown()))
            .collect();
        if cells.is_empty() {
            continue;
        }
        changed += 1;
        for (column, _, _) in &cells {
            *per_column.entry(column.clone()).or_insert(0) += 1;
        }
        if first_changed.len() < FIRST {
            first_changed.push(RowDiff {
                key: said_key(night, row),
                cells,
            });
        }
    }
    let mut missing_rows: Vec<&Vec<Cell>> = (reference.rows.iter().zip(&seen))
        .filter(|(_, s)| !**s)
        .map(|(r, _)| r)
        .collect();
    missing_rows.sort_by_cached_key(|r| key_of(reference, r));
    Some(TableDiff::Rows {
        table: reference.name.clone(),
        changed,
        missing: missing_rows.len() as u64,
        extra,
        first_changed,
        first_missing: (missing_rows.iter().take(FIRST))
            .map(|r| said_key(reference, r))
            .collect(),
        first_extra,
        columns: per_column,
    })
}

/// Whole rows (the kept columns) counted on each side: a row the reference has more often is
/// missing here, one this night has more often is extra.
fn as_multisets(reference: &Table, night: &Table, (columns, ours, theirs): Kept<'_>) -> TableDiff {
    let mut counts: HashMap<Vec<&Cell>, i64> = HashMap::with_capacity(reference.rows.len());
    for row in &reference.rows {
        *counts
            .entry(ours.iter().map(|&i| &row[i]).collect())
            .or_insert(0) += 1;
    }
    for row in &night.rows {
        *counts
            .entry(theirs.iter().map(|&i| &row[i]).collect())
            .or_insert(0) -= 1;
    }
    let mut differing: Vec<(Vec<&Cell>, i64)> =
        counts.into_iter().filter(|(_, n)| *n != 0).collect();
    differing.sort();
    let said = |row: &[&Cell]| -> String {
        let cells: Vec<String> = (columns.iter().zip(row))
            .map(|(c, v)| format!("{}={}", escape_controls(c), v.shown()))
            .collect();
        cells.join(" ")
    };
    let side = |positive: bool| -> (u64, Vec<String>) {
        let rows: Vec<&(Vec<&Cell>, i64)> = (differing.iter())
            .filter(|(_, n)| (*n > 0) == positive)
            .collect();
        let count = rows.iter().map(|(_, n)| n.unsigned_abs()).sum();
        (
            count,
            rows.iter().take(FIRST).map(|(r, _)| said(r)).collect(),
        )
    };
    let (missing, first_missing) = side(true);
    let (extra, first_extra) = side(false);
    TableDiff::Rows {
        table: reference.name.clone(),
        changed: 0,
        missing,
        extra,
        first_changed: Vec::new(),
        first_missing,
        first_extra,
        columns: BTreeMap::new(),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn table(name: &str, columns: &[&str], key: &[usize], rows: &[&[Cell]]) -> Table {
        Table {
            name: name.into(),
            columns: columns.iter().map(|c| (*c).to_string()).collect(),
            key: key.to_vec(),
            rows: rows.iter().map(|r| r.to_vec()).collect(),
        }
    }

    pub(crate) fn text(s: &str) -> Cell {
        Cell::Text(s.into())
    }

    pub(crate) fn state(tables: Vec<Table>) -> State {
        State {
            tables: tables.into_iter().map(|t| (t.name.clone(), t)).collect(),
        }
    }

    fn accounts(balances: &[i64]) -> Table {
        let rows: Vec<Vec<Cell>> = (balances.iter().enumerate())
            .map(|(i, b)| vec![text(&format!("acct-{i}")), Cell::Int(*b)])
            .collect();
        let rows: Vec<&[Cell]> = rows.iter().map(Vec::as_slice).collect();
        table("accounts", &["id", "balance"], &[0], &rows)
    }

    #[test]
    fn rows_matched_by_key_name_the_column_and_both_values() {
        let none = BTreeSet::new();
        let a = state(vec![accounts(&[100, 200, 300, 400, 500])]);
        let mut b = state(vec![accounts(&[100, 250, 300, 450, 510])]);
        // Order of rows is no difference.
        b.tables.get_mut("accounts").unwrap().rows.reverse();
        let diffs = compare(&a, &b, &none);
        assert_eq!(diffs.len(), 1);
        assert_eq!(diffs[0].rows(), 3);
        assert_eq!(
            diffs[0].said(),
            "accounts: 3 rows differ (id=acct-1 balance: reference 200, this night 250; id=acct-3 balance: reference 400, this night 450; id=acct-4 balance: reference 500, this night 510)"
        );
        assert!(compare(&a, &a.clone(), &none).is_empty());
    }

    #[test]
    fn a_row_missing_or_extra_is_said_by_its_key() {
        let a = state(vec![accounts(&[1, 2, 3])]);
        let b = state(vec![accounts(&[1, 2])]);
        let diffs = compare(&a, &b, &BTreeSet::new());
        assert_eq!(
            diffs[0].said(),
            "accounts: 1 row of the reference missing (id=acct-2)"
        );
        let diffs = compare(&b, &a, &BTreeSet::new());
        assert_eq!(
            diffs[0].said(),
            "accounts: 1 row not in the reference (id=acct-2)"
        );
    }

    #[test]
    fn a_table_without_a_key_is_compared_as_a_multiset_of_whole_rows() {
        let row = |n: i64| vec![text("deposit"), Cell::Int(n)];
        let a = table("log", &["what", "n"], &[], &[&row(1), &row(2), &row(2)]);
        let b = table(
            "log",
            &["what", "n"],
            &[],
            &[&row(2), &row(1), &row(2), &row(2)],
        );
        let same = table("log", &["what", "n"], &[], &[&row(2), &row(1), &row(2)]);
        let none = BTreeSet::new();
        assert_eq!(compare_table(&a, &same, &none), None);
        let diff = compare_table(&a, &b, &none).unwrap();
        assert_eq!(
            diff.said(),
            "log: 1 row not in the reference (what=deposit n=2)"
        );
    }

    #[test]
    fn an_ignored_column_is_no_difference_and_a_changed_shape_is_one() {
        let a = table("t", &["id", "at"], &[0], &[&[Cell::Int(1), text("12:00")]]);
        let b = table("t", &["id", "at"], &[0], &[&[Cell::Int(1), text("12:01")]]);
        let ignore: BTreeSet<ColumnName> = ["t.at".parse().unwrap()].into();
        assert_eq!(compare_table(&a, &b, &ignore), None);
        assert!(compare_table(&a, &b, &BTreeSet::new()).is_some());
        let wider = table(
            "t",
            &["id", "at", "x"],
            &[0],
            &[&[Cell::Int(1), text("12:00"), Cell::Null]],
        );
        assert!(matches!(
            compare_table(&a, &wider, &BTreeSet::new()),
            Some(TableDiff::Shape { .. })
        ));
        let gone = compare(&state(vec![a]), &state(vec![]), &BTreeSet::new());
        assert_eq!(
            gone[0].said(),
            "t: the undisturbed night made it, this night did not"
        );
    }

    #[test]
    fn a_key_that_repeats_falls_back_to_whole_rows() {
        let a = table(
            "t",
            &["k", "v"],
            &[0],
            &[&[Cell::Null, Cell::Int(1)], &[Cell::Null, Cell::Int(2)]],
        );
        let b = table(
            "t",
            &["k", "v"],
            &[0],
            &[&[Cell::Null, Cell::Int(2)], &[Cell::Null, Cell::Int(1)]],
        );
        assert_eq!(compare_table(&a, &b, &BTreeSet::new()), None);
    }

    #[test]
    fn values_from_the_job_are_said_with_control_characters_escaped() {
        let a = table("t", &["id", "v"], &[0], &[&[text("a\x1b[2J"), text("x")]]);
        let b = table("t", &["id", "v"], &[0], &[&[text("a\x1b[2J"), text("y\n")]]);
        let said = compare_table(&a, &b, &BTreeSet::new()).unwrap().said();
        assert!(!said.chars().any(char::is_control), "{said:?}");
        assert!(said.contains("id=a\\u{1b}[2J"), "{said}");
        assert!("nodot".parse::<ColumnName>().is_err());
        assert!(".x".parse::<ColumnName>().is_err());
    }
}
