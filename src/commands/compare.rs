//! `--compare`: the undisturbed night, the oracle a job is judged against by its effects. The
//! job runs to its end twice without a fault (no kill, no crash point) on the same queue, each
//! night in a folder of its own beside the night's (`night-reference-1`, `-2`; on PostgreSQL a
//! schema each); the final state of its tables is read from both, then from the disturbed
//! night, and `verdict::compare` says what differs. The comparison joins the night's account.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::base::text::escape_controls;
use crate::cli::CompareArgs;
use crate::engine::{EngineConfig, LaneWorker};
use crate::error::{Context as _, Error};
use crate::supervisor::schedule::KillPlan;
use crate::verdict::compare::Comparison;
use crate::verdict::state::State;
use crate::warehouse::Warehouse;

/// The two undisturbed nights' states, or why they cannot be the reference.
pub(super) enum Reference {
    States(State, State),
    NoReference(String),
}

/// What `run --compare` says before its nights.
pub(super) const HEADER: &str = "compare      the undisturbed night first: the job run to its end twice without a fault (night-reference-1, -2 in the night's folder); its tables' final state is the reference";

impl Reference {
    /// The reference, unless a table or column the user named is not in it: a comparison of
    /// what the undisturbed night never wrote would pass without having looked.
    #[must_use]
    pub(super) fn naming(self, args: &CompareArgs) -> Self {
        let Self::States(first, _) = &self else {
            return self;
        };
        let table = |name: &str| first.tables.get(name);
        let missing = (args.tables.iter())
            .find(|name| table(name).is_none())
            .map(|name| {
                format!(
                    "--compare-table {}: the undisturbed night has no such table",
                    escape_controls(name)
                )
            })
            .or_else(|| {
                args.ignore.iter().find_map(|c| {
                    let known = table(&c.table).is_some_and(|t| t.columns.contains(&c.column));
                    (!known).then(|| {
                        format!(
                            "--ignore-column {}.{}: the undisturbed night has no such column",
                            escape_controls(&c.table),
                            escape_controls(&c.column)
                        )
                    })
                })
            });
        match missing {
            Some(why) => Self::NoReference(why),
            None => self,
        }
    }
}

/// `--compare` where it cannot work: without `--exec` (reclaim's own workers are judged by
/// their rows), or with `--db` (the undisturbed nights need a folder of reclaim's own).
pub(super) fn refuse(args: &CompareArgs, exec: bool, db: Option<&Path>) -> Result<(), Error> {
    if args.compare && !exec {
        return Err(Error::Refused(
            "--compare judges your --exec job by its tables; reclaim's own strategies are judged by their rows".into(),
        ));
    }
    if args.compare && db.is_some() {
        return Err(Error::Refused(
            "--compare runs the undisturbed nights in the night's own folder; drop --db (the folder's path is printed, and kept with --keep)".into(),
        ));
    }
    Ok(())
}

/// The night driven, its timeline printed; with `--compare`, the undisturbed night first
/// (twice, in the night's folder `dir`), and the tables on `db` compared with it at the end.
pub(super) fn drive_run(
    args: &crate::cli::RunArgs,
    config: EngineConfig,
    (dir, db): (Option<&Path>, &Path),
    record: Option<(&Path, String)>,
    out: &mut dyn Write,
) -> Result<crate::harness::RunReport, Error> {
    if args.compare.compare && !args.json {
        let _ = writeln!(out, "{HEADER}");
    }
    let reference = (dir.filter(|_| args.compare.compare))
        .map(|dir| undisturbed(&config, dir, &args.compare.tables))
        .transpose()?
        .map(|reference| reference.naming(&args.compare));
    let warehouse = config.warehouse();
    let mut report = crate::harness::drive_recorded(config, record, |line| {
        if !args.json {
            let _ = writeln!(out, "{line}");
        }
    })?;
    if let Some(reference) = &reference {
        report.state = Some(judge(reference, db, &warehouse, &args.compare)?);
    }
    Ok(report)
}

/// The folders the undisturbed nights run in, inside `dir`.
#[must_use]
pub(super) fn folders(dir: &Path) -> [PathBuf; 2] {
    [1, 2].map(|n| dir.join(format!("night-reference-{n}")))
}

/// Runs the night `night` describes (its first lane) twice without a fault, in `dir`, and
/// reads its tables (`only` those, when named) at the end of each.
pub(super) fn undisturbed(
    night: &EngineConfig,
    dir: &Path,
    only: &[String],
) -> Result<Reference, Error> {
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
        let report = crate::harness::drive(config, |_| {})?;
        let judged = report.account().judge(false);
        if !report.completed || judged.outcome == crate::verdict::account::Outcome::Fail {
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

/// The night on `db` compared with `reference`.
pub(super) fn judge(
    reference: &Reference,
    db: &Path,
    warehouse: &Warehouse,
    args: &CompareArgs,
) -> Result<Comparison, Error> {
    Ok(match reference {
        Reference::States(first, second) => {
            let night = warehouse.read_state(db, &args.tables)?;
            Comparison::of((first, second), &night, &args.ignored())
        }
        Reference::NoReference(why) => Comparison::without_reference(why.clone()),
    })
}
