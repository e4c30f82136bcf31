//! The undisturbed night as an oracle (`--compare`): the job run to its end twice without a
//! fault (no kill, no crash point) on the same queue, each night in a folder of its own
//! (`night-reference-1`, `-2`; on PostgreSQL a schema each), the final state of its tables read
//! from both. A command prepares it once and judges each of its nights against it
//! (`Oracle::judge`); what the two undisturbed nights disagree on is said once
//! (`Oracle::account`), never judged.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::base::text::{count, escape_controls};
use crate::engine::{EngineConfig, LaneWorker};
use crate::error::{Context as _, Error};
use crate::supervisor::schedule::KillPlan;
use crate::verdict::account::{Account, Outcome};
use crate::verdict::compare::{Comparison, Nondeterminism};
use crate::verdict::state::{ColumnName, State};
use crate::warehouse::Warehouse;

/// What a comparison looks at: the tables named (every table when none is), and the columns
/// that may differ from night to night.
#[derive(Debug, Clone, Default)]
pub struct Scope {
    pub tables: Vec<String>,
    pub ignored: BTreeSet<ColumnName>,
}

/// The two undisturbed nights' states, or why they cannot be the reference.
#[derive(Debug)]
pub enum Reference {
    States(State, State),
    NoReference(String),
}

/// The reference and what it compares, prepared once and shared by a command's nights.
#[derive(Debug)]
pub struct Oracle {
    reference: Reference,
    scope: Scope,
    warehouse: Warehouse,
}

/// The folders the undisturbed nights run in, inside `dir`.
#[must_use]
pub fn folders(dir: &Path) -> [PathBuf; 2] {
    [1, 2].map(|n| dir.join(format!("night-reference-{n}")))
}

impl Oracle {
    /// Runs the night `night` describes (its first lane) twice without a fault, in folders of
    /// its own inside `dir`, and reads the tables `scope` names (every one when it names none)
    /// at the end of each. A table or column named that the undisturbed night never wrote
    /// leaves no reference: a comparison of what it never wrote would pass without having
    /// looked.
    pub fn undisturbed(night: &EngineConfig, dir: &Path, scope: Scope) -> Result<Self, Error> {
        let warehouse = night.warehouse();
        let reference = reference(night, dir, &scope.tables)?;
        let reference = match missing(&reference, &scope) {
            Some(why) => Reference::NoReference(why),
            None => reference,
        };
        Ok(Self {
            reference,
            scope,
            warehouse,
        })
    }

    /// The tables of the night on `db` compared with the reference.
    pub fn judge(&self, db: &Path) -> Result<Comparison, Error> {
        Ok(match &self.reference {
            Reference::States(first, second) => {
                let night = self.warehouse.read_state(db, &self.scope.tables)?;
                Comparison::of((first, second), &night, &self.scope.ignored)
            }
            Reference::NoReference(why) => Comparison::without_reference(why.clone()),
        })
    }

    /// The night on `db` against the reference, its differences only (`None` without a
    /// reference): what the reference itself leaves uncompared is the oracle's to say, once for
    /// all its nights (`account`).
    pub fn differences(&self, db: &Path) -> Result<Option<Comparison>, Error> {
        Ok(match &self.reference {
            Reference::States(..) => Some(Comparison {
                nondeterministic: Nondeterminism::default(),
                ..self.judge(db)?
            }),
            Reference::NoReference(_) => None,
        })
    }

    /// What the reference itself leaves untested, said once for all the nights judged against
    /// it: no reference at all, or the columns and tables the two undisturbed nights disagree on.
    #[must_use]
    pub fn account(&self) -> Account {
        match &self.reference {
            Reference::States(first, second) => {
                Comparison::of((first, second), first, &self.scope.ignored).account()
            }
            Reference::NoReference(why) => Comparison::without_reference(why.clone()).account(),
        }
    }

    /// The reference in a line: its tables and rows, and what the two undisturbed nights
    /// disagree on; or why there is none.
    #[must_use]
    pub fn line(&self) -> String {
        let (first, second) = match &self.reference {
            Reference::States(first, second) => (first, second),
            Reference::NoReference(why) => return format!("none: {why}"),
        };
        let names: Vec<String> = first.tables.keys().map(|t| escape_controls(t)).collect();
        let odd = Nondeterminism::between(first, second, &self.scope.ignored);
        let differ: Vec<String> = (odd.columns.iter().map(ToString::to_string))
            .chain(odd.tables.iter().map(|t| escape_controls(t)))
            .collect();
        let agree = if differ.is_empty() {
            "the two undisturbed nights agree".to_string()
        } else {
            format!(
                "the two undisturbed nights differ in {}: not compared",
                differ.join(", ")
            )
        };
        format!(
            "{} ({}), {}; {agree}",
            count(first.tables.len() as u64, "table", "tables"),
            names.join(", "),
            count(first.rows(), "row", "rows"),
        )
    }
}

/// The two undisturbed nights' states, or why they are none.
fn reference(night: &EngineConfig, dir: &Path, only: &[String]) -> Result<Reference, Error> {
    let Some(lane) = night.lanes.first() else {
        return Err(Error::Refused("a night without a lane".into()));
    };
    let warehouse = night.warehouse();
    let file = lane
        .db
        .file_name()
        .unwrap_or(std::ffi::OsStr::new("warehouse.db"));
    let mut states = Vec::new();
    for (n, folder) in folders(dir).iter().enumerate() {
        std::fs::create_dir(folder).context(|| format!("cannot create {}", folder.display()))?;
        let db = folder.join(file);
        warehouse.claim_lane(&db)?;
        let mut lane = lane.clone();
        lane.db.clone_from(&db);
        // Undisturbed: the job's own crash point is a fault too.
        if let LaneWorker::Exec(job) = &mut lane.worker {
            job.crash_at = None;
        }
        let config = EngineConfig {
            lanes: vec![lane],
            kills: KillPlan {
                seed: night.kills.seed,
                ..KillPlan::default()
            },
            hang: None,
            wipe_at_task: None,
            ..night.clone()
        };
        let report = super::drive(config, |_| {})?;
        let judged = report.account().judge(false);
        if !report.completed || judged.outcome == Outcome::Fail {
            let why = report.never_completed().unwrap_or_else(|| judged.reasons());
            return Ok(Reference::NoReference(format!(
                "undisturbed night {} did not hold by itself ({why}), so it is no reference",
                n + 1
            )));
        }
        states.push(warehouse.read_state(&db, only)?);
    }
    let second = states.pop().unwrap_or_default();
    let first = states.pop().unwrap_or_default();
    Ok(Reference::States(first, second))
}

/// Why the reference cannot stand for `scope`: a table or column it names that the
/// undisturbed night never wrote.
fn missing(reference: &Reference, scope: &Scope) -> Option<String> {
    let Reference::States(first, _) = reference else {
        return None;
    };
    let table = |name: &str| first.tables.get(name);
    (scope.tables.iter())
        .find(|name| table(name).is_none())
        .map(|name| {
            format!(
                "--compare-table {}: the undisturbed night has no such table",
                escape_controls(name)
            )
        })
        .or_else(|| {
            scope.ignored.iter().find_map(|c| {
                let known = table(&c.table).is_some_and(|t| t.columns.contains(&c.column));
                (!known).then(|| {
                    format!(
                        "--ignore-column {}.{}: the undisturbed night has no such column",
                        escape_controls(&c.table),
                        escape_controls(&c.column)
                    )
                })
            })
        })
}
