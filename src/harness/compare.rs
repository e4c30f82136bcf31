//! The undisturbed night as an oracle (`--compare`): the job run to its end twice without a
//! fault (no kill, no crash point) on the same queue, each night in a folder of its own
//! (`night-reference-1`, `-2`; on PostgreSQL a schema each), the final state of its tables read
//! from both. A command prepares it once and judges each of its nights against it
//! (`Oracle::judge`); what the two undisturbed nights disagree on is said once
//! (`Oracle::account`), never judged.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::base::text::{count, escape_controls};
use crate::engine::{EngineConfig, LaneWorker};
use crate::error::{Context as _, Error};
use crate::supervisor::schedule::KillPlan;
use crate::verdict::account::{Account, Outcome};
pub use crate::verdict::compare::Scope;
use crate::verdict::compare::{Comparison, Nondeterminism};
use crate::verdict::state::State;
use crate::warehouse::Warehouse;

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
    /// What the two undisturbed nights disagree on, found once: never compared.
    nondeterministic: Nondeterminism,
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
        let nondeterministic = match &reference {
            Reference::States(first, second) => {
                Nondeterminism::between(first, second, &scope.ignored)
            }
            Reference::NoReference(_) => Nondeterminism::default(),
        };
        Ok(Self {
            reference,
            nondeterministic,
            scope,
            warehouse,
        })
    }

    /// Why there is no reference (an undisturbed night that did not hold, a name it never
    /// wrote), if there is none.
    #[must_use]
    pub fn no_reference(&self) -> Option<&str> {
        match &self.reference {
            Reference::States(..) => None,
            Reference::NoReference(why) => Some(why),
        }
    }

    /// The tables of the night on `db` compared with the reference.
    pub fn judge(&self, db: &Path) -> Result<Comparison, Error> {
        Ok(match &self.reference {
            Reference::States(first, _) => {
                let night = self.warehouse.read_state(db, &self.scope.tables)?;
                let reference = (first, self.nondeterministic.clone());
                Comparison::against(reference, &night, &self.scope.ignored)
            }
            Reference::NoReference(why) => Comparison::without_reference(why.clone()),
        })
    }

    /// The night on `db` against the reference, its differences only (`None` without a
    /// reference): what the reference itself leaves uncompared is the oracle's to say, once for
    /// all its nights (`account`).
    pub fn differences(&self, db: &Path) -> Result<Option<Comparison>, Error> {
        if self.no_reference().is_some() {
            return Ok(None);
        }
        Ok(Some(Comparison {
            nondeterministic: Nondeterminism::default(),
            ..self.judge(db)?
        }))
    }

    /// What the reference itself leaves untested, said once for all the nights judged against
    /// it: no reference at all, or the columns and tables the two undisturbed nights disagree on.
    #[must_use]
    pub fn account(&self) -> Account {
        match &self.reference {
            // No night compared, so no difference: only what the two disagreed on.
            Reference::States(first, _) => Comparison {
                tables: first.tables.keys().cloned().collect(),
                rows: first.rows(),
                diffs: Vec::new(),
                nondeterministic: self.nondeterministic.clone(),
                no_reference: None,
            }
            .account(),
            Reference::NoReference(why) => Comparison::without_reference(why.clone()).account(),
        }
    }

    /// The reference in a line: its tables and rows, and what the two undisturbed nights
    /// disagree on; or why there is none.
    #[must_use]
    pub fn line(&self) -> String {
        let first = match &self.reference {
            Reference::States(first, _) => first,
            Reference::NoReference(why) => return format!("none: {why}"),
        };
        let names: Vec<String> = first.tables.keys().map(|t| escape_controls(t)).collect();
        let odd = &self.nondeterministic;
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

/// An oracle for each lane of `night` that `scopes` asks to compare (`None` for the others), its
/// undisturbed nights in a folder of the lane's own inside `dir` (`LANE-undisturbed`): a
/// scenario's lanes, prepared before its night starts.
pub fn for_lanes(
    night: &EngineConfig,
    scopes: &[Option<Scope>],
    dir: &Path,
) -> Result<Vec<Option<Arc<Oracle>>>, Error> {
    (night.lanes.iter().zip(scopes))
        .map(|(lane, scope)| {
            let Some(scope) = scope else {
                return Ok(None);
            };
            let folder = dir.join(format!("{}-undisturbed", lane.name));
            std::fs::create_dir(&folder)
                .context(|| format!("cannot create {}", folder.display()))?;
            let config = EngineConfig {
                lanes: vec![lane.clone()],
                ..night.clone()
            };
            Ok(Some(Arc::new(Oracle::undisturbed(
                &config,
                &folder,
                scope.clone(),
            )?)))
        })
        .collect()
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
        // Undisturbed: a crash point (the job's own or reclaim's), a pause and a message held
        // for a kill are faults too.
        if let LaneWorker::Exec(job) = &mut lane.worker {
            job.crash_at = None;
        }
        lane.crash_at = None;
        lane.pause_at = None;
        lane.pause_at_rows = None;
        lane.lose_answers.clear();
        lane.lose_answer_tasks.clear();
        lane.answer_proxy = false;
        lane.vendor.hold_at = None;
        let config = EngineConfig {
            lanes: vec![lane],
            kills: KillPlan {
                seed: night.kills.seed,
                ..KillPlan::default()
            },
            hang: None,
            wipe_at_task: None,
            restart_server_at_rows: None,
            restart_server_at_task: None,
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

/// Why the reference cannot stand for `scope`: every table or column it names that the
/// undisturbed night never wrote, each said (`None` when it wrote them all).
fn missing(reference: &Reference, scope: &Scope) -> Option<String> {
    let Reference::States(first, _) = reference else {
        return None;
    };
    let table = |name: &str| first.tables.get(name);
    let tables = (scope.tables.iter())
        .filter(|name| table(name).is_none())
        .map(|name| {
            format!(
                "--compare-table {}: the undisturbed night has no such table",
                escape_controls(name)
            )
        });
    let columns = (scope.ignored.iter())
        .filter(|c| !table(&c.table).is_some_and(|t| t.columns.contains(&c.column)))
        .map(|c| {
            format!(
                "--ignore-column {}.{}: the undisturbed night has no such column",
                escape_controls(&c.table),
                escape_controls(&c.column)
            )
        });
    let said: Vec<String> = tables.chain(columns).collect();
    (!said.is_empty()).then(|| said.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verdict::state::tests::{state, table, text};

    #[test]
    fn every_name_the_undisturbed_night_never_wrote_is_said() {
        let applied = table(
            "applied",
            &["transfer_id", "applied_at"],
            &[0],
            &[&[text("tr-0000"), text("02:00")]],
        );
        let reference = Reference::States(state(vec![applied.clone()]), state(vec![applied]));
        let scope = |tables: &[&str], ignored: &[&str]| Scope {
            tables: tables.iter().map(|t| (*t).to_string()).collect(),
            ignored: (ignored.iter())
                .map(|c| c.parse().unwrap_or_else(|e| panic!("{c}: {e}")))
                .collect(),
        };
        assert_eq!(
            missing(&reference, &scope(&["applied"], &["applied.applied_at"])),
            None
        );
        assert_eq!(
            missing(
                &reference,
                &scope(&["acounts", "applied"], &["z.x", "applied.aplied_at"])
            )
            .as_deref(),
            Some(
                "--compare-table acounts: the undisturbed night has no such table; \
                 --ignore-column applied.aplied_at: the undisturbed night has no such column; \
                 --ignore-column z.x: the undisturbed night has no such column"
            )
        );
        let none = Reference::NoReference("undisturbed night 1 did not hold".into());
        assert_eq!(missing(&none, &scope(&["acounts"], &[])), None);
    }
}
