//! The kill-timing map of someone else's job (`map --exec`): every key of its queue x every
//! crash point it announces (or, for a job that announces none, a kill after every row count),
//! each a real night in a folder of its own with a real SIGKILL and a restart, the verdict
//! derived from the rows.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use serde::Serialize;

use crate::engine::{EngineConfig, ExecJob, LaneConfig, LaneWorker};
use crate::error::{Context as _, Error};
use crate::harness;
use crate::supervisor::schedule::KillPlan;
use crate::verdict::Status;
use crate::worker::protocol::points::CrashPlan;

/// The label of the map's first night, the undisturbed one that hears the job's points.
const PROBE: &str = "probe";

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
    fn of(comparison: &crate::verdict::compare::Comparison) -> Self {
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
