//! The kill-timing map of someone else's job (`map --exec`): every key of its queue x every
//! crash point it announces (or, for a job that announces none, a kill after every row count),
//! each a real night in a folder of its own with a real SIGKILL and a restart, the verdict
//! derived from the rows.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use crate::engine::{EngineConfig, ExecJob, LaneConfig, LaneWorker};
use crate::error::{Context as _, Error};
use crate::harness;
use crate::supervisor::schedule::KillPlan;
use crate::worker::protocol::points::CrashPlan;

pub use super::exec_cell::{CellState, ExecCell, ExecKill, MESSAGE_BAND};

/// The label of the map's first night, the undisturbed one that hears the job's points.
const PROBE: &str = "probe";

/// Every night of a map (or a search) over keys `tasks.0..=tasks.1`: each key at each point, in
/// key order so the bands fill together; or, with no point, a kill after each row count of the
/// range (1-based). With a vendor (`messages`), a kill at each message of the range too.
#[must_use]
pub fn plan(points: &[String], tasks: (u64, u64), messages: bool) -> Vec<ExecKill> {
    let at_messages = (tasks.0..=tasks.1)
        .filter(move |_| messages)
        .map(|i| ExecKill::Message(i + 1));
    if points.is_empty() {
        return (tasks.0..=tasks.1)
            .map(|i| ExecKill::Rows(i + 1))
            .chain(at_messages)
            .collect();
    }
    (tasks.0..=tasks.1)
        .flat_map(|index| {
            points.iter().map(move |name| ExecKill::Point {
                index,
                name: name.clone(),
            })
        })
        .chain(at_messages)
        .collect()
}

/// The bands of a map: one a point, or `rows` for a job that announces none; and `message`
/// for a job with a vendor.
#[must_use]
pub fn bands(points: &[String], messages: bool) -> Vec<String> {
    let mut bands = if points.is_empty() {
        vec!["rows".into()]
    } else {
        points.to_vec()
    };
    if messages {
        bands.push(MESSAGE_BAND.into());
    }
    bands
}

/// The map screen's shape for a job's map: a band a point (or one of row counts), a column a
/// key (or a row count) of `tasks`.
#[must_use]
pub fn layout(job: &ExecJob, points: &[String], tasks: (u64, u64)) -> crate::map::Layout {
    use crate::map::{Columns, Layout};
    let names = if points.is_empty() {
        Columns::Rows
    } else {
        Columns::Keys(job.queue.clone())
    };
    Layout {
        title: format!(
            "reclaim map --exec {} · {}",
            crate::base::text::escape_controls(&crate::base::text::shorten(&job.command, 40)),
            job.queue.describe()
        ),
        bands: bands(points, job.vendor)
            .into_iter()
            .map(|band| (crate::engine::EXEC_LABEL.to_string(), band))
            .collect(),
        columns: tasks,
        names,
        items: job.queue.len(),
        about: "Each cell is a real night of your job: SIGKILLed from outside at that key and point (or once its table holds that many rows), restarted, finished; the verdict comes from the rows.",
    }
}

/// The dashboard's night for a cell of a job's map: the job alone, killed as the cell's night
/// was, at `delay` an item (told `RECLAIM_DELAY_MS`) so it can be watched.
#[must_use]
pub fn scenario_for(job: &ExecJob, cell: &ExecCell, delay: Duration) -> crate::scenario::Scenario {
    use crate::scenario::{Scenario, ScenarioLane};
    let mut job = job.clone();
    let (mut at_rows, mut at_message) = (None, None);
    match &cell.kill {
        ExecKill::Point { index, name } => {
            job.crash_at = Some(CrashPlan {
                key: job.queue.key(*index),
                point: name.clone(),
            });
        }
        ExecKill::Rows(rows) => at_rows = Some(*rows),
        ExecKill::Message(n) => at_message = Some(*n),
    }
    let what = crate::map::MapCell::name(cell);
    let found = crate::map::MapCell::detail(cell);
    Scenario {
        max_restarts: 3,
        kill_at_rows: at_rows,
        kill_at_message: at_message,
        ..Scenario::map_night(
            format!("The map's night: your job at {what}"),
            format!("the map found: {found}"),
            job.queue.len(),
            delay,
            vec![ScenarioLane::plain(
                "your job".into(),
                LaneWorker::Exec(Box::new(job)),
            )],
            format!("The kill the map's cell ran: {what}. The map found {found}."),
        )
    }
}

/// Drives the map's nights of one job: each in a folder of its own under `dir` (the job may open
/// its database by name), at full speed (no pause per item, no restart delay).
#[derive(Debug, Clone)]
pub struct ExecRunner {
    pub exe: PathBuf,
    pub dir: PathBuf,
    pub job: ExecJob,
    /// The database's file name in each night's folder.
    pub db_name: String,
    pub keep: bool,
    /// The pace told to the job (`RECLAIM_DELAY_MS`) on nights killed at a row count: a job
    /// that keeps it gives the observer time to land the kill at that count (at a crash point
    /// the job waits for its kill, so those nights run at full speed).
    pub rows_delay: Duration,
    /// Each night's `--progress-deadline` (`None`: the engine's default).
    pub progress_deadline: Option<Duration>,
    /// `--vendor`: the key policy of the vendor each night's job sends to (the job is told
    /// `RECLAIM_VENDOR_URL`); `None` without one.
    pub vendor: Option<crate::fake_vendor::Keys>,
    /// Where every night's rows go.
    pub warehouse: crate::warehouse::Warehouse,
    /// `--compare`: the undisturbed night each night's tables are compared with.
    pub oracle: Option<std::sync::Arc<harness::compare::Oracle>>,
}

impl ExecRunner {
    /// One undisturbed night: which points the job announces (in the order first heard, and
    /// as BTreeMap order otherwise), and whether it holds with no kill at all.
    pub fn probe(&self, cancel: &AtomicBool) -> Result<(Vec<String>, harness::RunReport), Error> {
        let report = self.night(PROBE, (None, Duration::ZERO), &KillPlan::default(), cancel)?;
        Ok((report.points_announced.keys().cloned().collect(), report))
    }

    /// `--compare`: the undisturbed night, run twice in the map's folder (`night-reference-1`,
    /// `-2`), the tables `scope` names read at the end of each.
    pub fn undisturbed(
        &self,
        scope: harness::compare::Scope,
    ) -> Result<harness::compare::Oracle, Error> {
        let lane = self.lane(
            self.dir.join(&self.db_name),
            self.job.clone(),
            Duration::ZERO,
            None,
        );
        let config = self.config(lane, &KillPlan::default());
        harness::compare::Oracle::undisturbed(&config, &self.dir, scope)
    }

    /// Night `n` under `kill`.
    pub fn run(&self, n: usize, kill: &ExecKill, cancel: &AtomicBool) -> Result<ExecCell, Error> {
        let (crash, plan, at) = match kill {
            ExecKill::Point { index, name } => {
                let key = self.job.queue.key(*index);
                let at = crate::base::text::escape_controls(&key);
                (
                    Some(CrashPlan {
                        key,
                        point: name.clone(),
                    }),
                    KillPlan::default(),
                    at,
                )
            }
            ExecKill::Rows(rows) => (
                None,
                KillPlan {
                    at_rows: Some(*rows),
                    ..KillPlan::default()
                },
                format!("after {}", crate::base::text::count(*rows, "row", "rows")),
            ),
            // The job is held at its send until the kill: it runs at full speed.
            ExecKill::Message(n) => (
                None,
                KillPlan {
                    at_message: Some(*n),
                    ..KillPlan::default()
                },
                format!("at message {n}"),
            ),
        };
        let delay = if crash.is_some() || plan.at_message.is_some() {
            Duration::ZERO
        } else {
            self.rows_delay
        };
        let report = self.night(&format!("{n:05}"), (crash, delay), &plan, cancel)?;
        Ok(ExecCell {
            band: kill.band(),
            at,
            column: kill.column(),
            rows: report.inspection.rows,
            distinct: report.inspection.distinct,
            duplicated_task_ids: report.inspection.duplicated_task_ids,
            missing: report.inspection.missing,
            outside: report.inspection.unexpected,
            derived_status: report.derived_status(),
            completed: report.completed,
            killed: report.kills > 0,
            landed_at_rows: (report.kill_at_rows)
                .map(|(_, landed)| landed)
                .filter(|_| report.kills > 0),
            kill: kill.clone(),
            messages_wrong: report
                .messages_verdict()
                .filter(|_| !report.messages_hold()),
            state: report.state.as_ref().map(CellState::of),
            db: self.keep.then_some(report.inspection.db),
            checkpoint_before_row: report.checkpoint_before_row,
        })
    }

    fn night(
        &self,
        label: &str,
        (crash, delay): (Option<CrashPlan>, Duration),
        plan: &KillPlan,
        cancel: &AtomicBool,
    ) -> Result<harness::RunReport, Error> {
        // `night-...`: on PostgreSQL the folder names the night's schema, claimed here.
        let folder = self.dir.join(format!("night-{label}"));
        std::fs::create_dir(&folder)
            .context(|| format!("cannot create the night's folder {}", folder.display()))?;
        self.warehouse.claim_lane(&folder.join(&self.db_name))?;
        let mut job = self.job.clone();
        job.crash_at = crash;
        // The kill falls in the first attempt; the restart only has to finish, at full speed.
        job.unpaced_restarts = true;
        let db = folder.join(&self.db_name);
        let lane = self.lane(db.clone(), job, delay, plan.at_message);
        let config = self.config(lane, plan);
        let report = harness::drive_until(config, cancel, |_| {}).and_then(|mut report| {
            // `--compare`: a cell's night judged by its tables too (the probe is not a cell).
            if let (Some(oracle), false) = (&self.oracle, label == PROBE) {
                report.state = oracle.differences(&db)?;
            }
            Ok(report)
        });
        if !self.keep {
            // The night is over and its engine dropped: no connection holds these files.
            let _ = std::fs::remove_dir_all(&folder);
        }
        report
    }

    /// A night's lane: `job` on `db`, told `delay` per row, its vendor holding message
    /// `hold_at` (if any) unanswered until the kill.
    fn lane(&self, db: PathBuf, job: ExecJob, delay: Duration, hold_at: Option<u64>) -> LaneConfig {
        let items = job.queue.len();
        LaneConfig {
            delay,
            vendor: crate::fake_vendor::VendorModes {
                keys: self.vendor.unwrap_or(crate::fake_vendor::Keys::Honour),
                hold_at,
                ..crate::fake_vendor::VendorModes::default()
            },
            ..LaneConfig::new(LaneWorker::Exec(Box::new(job)), db, items)
        }
    }

    /// The night `lane` describes under `plan`, as every night of the map is driven.
    fn config(&self, lane: LaneConfig, plan: &KillPlan) -> EngineConfig {
        EngineConfig {
            restart_delay: 0.0,
            // One kill, one restart; a few more would only hide a job that cannot finish.
            max_restarts: 3,
            progress_deadline: self.progress_deadline,
            ..EngineConfig::new(vec![lane], plan.clone(), self.exe.clone())
        }
        .on(&self.warehouse)
    }
}
