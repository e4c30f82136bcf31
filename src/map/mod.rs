//! The kill-timing map: for every (strategy, task, crash point) a real night in which the worker
//! dies there on its first attempt, is restarted and finishes (or loses a commit's answer, or is
//! paused past its lease there); each cell is that night's verdict, derived from its rows.
//! `reclaim map` prints it, the dashboard's map screen draws it.

pub mod exec;
mod exec_cell;
mod junit;
mod layout;
mod point;
mod tested;

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use serde::Serialize;

use crate::engine::{EngineConfig, LaneConfig, Pace};
use crate::error::Error;
use crate::harness;
use crate::supervisor::schedule::KillPlan;
use crate::task::task_id;
use crate::verdict::Status;
use crate::warehouse::Warehouse;
use crate::worker::{CrashAt, Strategy};

pub use self::junit::{band_case, whole_map_case};
pub use self::layout::{Columns, Layout, MapCell};
pub use self::point::Point;
pub use self::tested::{Tally, Tested, account, not_tested_note};

/// What a night's worker goes through: a named crash point, the answer to one of its commits
/// lost, or a pause past its lease (every match on it pointing at what a new fault must also do).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kill {
    /// The worker SIGKILLs itself at this task and point on its first attempt.
    Crash(CrashAt),
    /// The answer to the commit that brings the table to `task + 1` rows (the task's own, on the
    /// first attempt) is lost: the commit lands, the worker's connection is closed before it hears
    /// so, and it writes the item again on a new one.
    LostAnswer { task: u64 },
    /// Two workers claim the queue; the one that reaches the task's write (on its first attempt,
    /// its lease taken) is stopped there for twice its lease and continued: the other worker
    /// took the item over meanwhile.
    Pause { task: u64 },
}

impl Kill {
    /// The task the kill is about (a column of the map).
    #[must_use]
    pub fn task(self) -> u64 {
        match self {
            Self::Crash(crash) => crash.task,
            Self::LostAnswer { task } | Self::Pause { task } => task,
        }
    }

    /// The band the kill belongs to within a strategy (a row of the map).
    #[must_use]
    pub fn point(self) -> Point {
        match self {
            Self::Crash(crash) => Point::Crash(crash.point),
            Self::LostAnswer { .. } => Point::LostAnswer,
            Self::Pause { .. } => Point::Pause,
        }
    }

    /// The crash, when the night's fault is one.
    #[must_use]
    pub fn crash(self) -> Option<CrashAt> {
        match self {
            Self::Crash(crash) => Some(crash),
            Self::LostAnswer { .. } | Self::Pause { .. } => None,
        }
    }

    /// The night's fault at `point` of `task`.
    #[must_use]
    pub fn at(task: u64, point: Point) -> Self {
        match point {
            Point::Crash(point) => Self::Crash(CrashAt { task, point }),
            Point::LostAnswer => Self::LostAnswer { task },
            Point::Pause => Self::Pause { task },
        }
    }
}

impl fmt::Display for Kill {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Crash(crash) => write!(f, "{crash}"),
            Self::LostAnswer { task } | Self::Pause { task } => {
                write!(f, "{}:{}", task_id(*task), self.point())
            }
        }
    }
}

/// One night of the map: a strategy under one kill.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlannedNight {
    pub strategy: Strategy,
    pub kill: Kill,
}

/// What the map covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub strategies: Vec<Strategy>,
    pub points: Vec<Point>,
    /// First and last task, inclusive.
    pub tasks: (u64, u64),
    pub items: u64,
}

impl Plan {
    /// The bands, top to bottom: each strategy, each point within it.
    #[must_use]
    pub fn bands(&self) -> Vec<(Strategy, Point)> {
        self.strategies
            .iter()
            .flat_map(|&s| {
                (self.points.iter())
                    .filter(move |p| p.reached_by(s))
                    .map(move |&p| (s, p))
            })
            .collect()
    }

    /// How many tasks each band spans.
    #[must_use]
    pub fn task_count(&self) -> u64 {
        self.tasks.1 - self.tasks.0 + 1
    }

    /// Whether every point of the map is a crash point.
    #[must_use]
    pub fn only_crashes(&self) -> bool {
        self.points.iter().all(|p| matches!(p, Point::Crash(_)))
    }

    /// What a night that went through nothing lacked, for the map's lines: `crash`, or `fault`
    /// where the map has other points than crashes.
    #[must_use]
    pub fn fault(&self) -> &'static str {
        if self.only_crashes() {
            "crash"
        } else {
            "fault"
        }
    }

    /// Every night, task by task, so the map fills from left to right in every band at once.
    #[must_use]
    pub fn nights(&self) -> Vec<PlannedNight> {
        let bands = self.bands();
        (self.tasks.0..=self.tasks.1)
            .flat_map(|task| {
                bands.iter().map(move |&(strategy, point)| PlannedNight {
                    strategy,
                    kill: Kill::at(task, point),
                })
            })
            .collect()
    }
}

/// What the code implies for a night: the duplicated task ids its rows must show (the
/// strategy's table says it, `Strategy::expected_duplicates`).
#[must_use]
pub fn expected_duplicates(strategy: Strategy, kill: Kill) -> u64 {
    match kill {
        Kill::Crash(crash) => strategy.expected_duplicates(crash),
        Kill::LostAnswer { .. } => strategy.lost_answer_duplicates(),
        Kill::Pause { .. } => strategy.pause_duplicates(),
    }
}

/// One cell: a finished night, its figures read from its rows. The JSON keys are stable.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Cell {
    pub strategy: Strategy,
    /// The kill, typed (`task` and `point` say it in the JSON).
    #[serde(skip)]
    pub kill: Kill,
    pub task: u64,
    pub point: String,
    pub rows: u64,
    pub distinct: u64,
    pub duplicated_task_ids: u64,
    pub missing: u64,
    pub derived_status: Status,
    /// The job completed after its restart.
    pub completed: bool,
    /// The fault happened (the crash fired, the answer was lost, the pause landed holding a
    /// lease for twice its length): a night whose fault never happened tested nothing.
    pub killed: bool,
    /// The night's database, when kept (`--keep`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub db: Option<PathBuf>,
}

/// A cell as the map draws it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Outcome {
    /// Every task exactly once, the job completed, and the kill happened.
    Right,
    /// Tasks written more than once: how many task ids.
    Duplicated(u64),
    /// Tasks with no row: how many.
    Missing(u64),
    /// Anything else the rows say (incomplete, corrupt) or a kill that never happened.
    Wrong,
}

impl Cell {
    #[must_use]
    pub fn outcome(&self) -> Outcome {
        if self.missing > 0 {
            Outcome::Missing(self.missing)
        } else if self.duplicated_task_ids > 0 {
            Outcome::Duplicated(self.duplicated_task_ids)
        } else if self.derived_status.is_ok() && self.completed && self.killed {
            Outcome::Right
        } else {
            Outcome::Wrong
        }
    }

    #[must_use]
    pub fn is_right(&self) -> bool {
        self.outcome() == Outcome::Right
    }

    /// Right, wrong, or a night that tested nothing (its crash never fired).
    #[must_use]
    pub fn tested(&self) -> Tested {
        let clean = self.completed && self.derived_status.is_ok() && self.missing == 0;
        Tested::of(
            self.is_right(),
            self.killed,
            clean && self.duplicated_task_ids == 0,
        )
    }

    /// The kill this cell's night ran under.
    #[must_use]
    pub fn kill(&self) -> Kill {
        self.kill
    }

    /// The verdict in a word or two: right, DUPLICATED n, MISSING n, UNTESTED, WRONG.
    #[must_use]
    pub fn verdict(&self) -> String {
        match self.outcome() {
            Outcome::Right => "right".to_string(),
            Outcome::Duplicated(n) => format!("DUPLICATED {n}"),
            Outcome::Missing(n) => format!("MISSING {n}"),
            Outcome::Wrong if !self.killed => {
                format!("UNTESTED: {}", self.kill.point().never())
            }
            Outcome::Wrong => format!("WRONG ({})", self.derived_status.label()),
        }
    }

    /// The night's counts, read from its rows.
    #[must_use]
    pub fn counts(&self) -> String {
        format!(
            "{} rows, {} distinct, {} duplicated, {} missing",
            self.rows, self.distinct, self.duplicated_task_ids, self.missing
        )
    }

    /// The cell's figures in one line.
    #[must_use]
    pub fn figures(&self) -> String {
        format!("{}: {}", self.counts(), self.verdict())
    }
}

/// "1 duplicated task id", "12 duplicated task ids".
#[must_use]
pub fn task_ids(n: u64) -> String {
    format!("{n} duplicated task id{}", if n == 1 { "" } else { "s" })
}

/// Per strategy: how many cells, how many right, and the worst.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    pub strategy: Strategy,
    pub cells: usize,
    pub right: usize,
    pub duplicated: usize,
    pub missing: usize,
    pub other: usize,
    /// The most duplicated task ids in one night of this strategy.
    pub worst_duplicated_task_ids: u64,
}

/// The summaries of `cells`, one per strategy of `plan`, in its order.
#[must_use]
pub fn summarize(plan: &Plan, cells: &[Cell]) -> Vec<Summary> {
    plan.strategies
        .iter()
        .map(|&strategy| {
            let mine: Vec<&Cell> = cells.iter().filter(|c| c.strategy == strategy).collect();
            let count = |f: fn(Outcome) -> bool| mine.iter().filter(|c| f(c.outcome())).count();
            Summary {
                strategy,
                cells: mine.len(),
                right: count(|o| o == Outcome::Right),
                duplicated: count(|o| matches!(o, Outcome::Duplicated(_))),
                missing: count(|o| matches!(o, Outcome::Missing(_))),
                other: count(|o| o == Outcome::Wrong),
                worst_duplicated_task_ids: mine
                    .iter()
                    .map(|c| c.duplicated_task_ids)
                    .max()
                    .unwrap_or(0),
            }
        })
        .collect()
}

/// Real time per item of a pause cell's night (`paced_pause`): the one band that needs a clock.
pub const PAUSE_DELAY: Duration = Duration::from_millis(10);

/// Drives the map's nights: each at full speed (no pause per item, no restart delay; a pause
/// band's paced, `paced_pause`), in its own database under `dir`, removed afterwards unless
/// kept.
#[derive(Debug, Clone)]
pub struct Runner {
    pub exe: PathBuf,
    pub dir: PathBuf,
    pub items: u64,
    pub keep: bool,
    /// Each night's `--progress-deadline` (`None`: the engine's default).
    pub progress_deadline: Option<Duration>,
    /// Each night's worker's auto-checkpoint: short when `dir` is in memory
    /// (`warehouse::sqlite::wal`).
    wal_autocheckpoint: Option<u32>,
    /// Where every night's rows go (SQLite files unless set).
    pub warehouse: Warehouse,
}

impl Runner {
    /// A runner of nights in `dir` (one of the map's own, `fresh_dir`).
    #[must_use]
    pub fn new(exe: PathBuf, dir: PathBuf, items: u64, keep: bool) -> Self {
        let wal_autocheckpoint = crate::warehouse::sqlite::wal::night_autocheckpoint(&dir);
        Self {
            exe,
            dir,
            items,
            keep,
            progress_deadline: None,
            wal_autocheckpoint,
            warehouse: Warehouse::Sqlite,
        }
    }

    /// Runs `night` (the `n`th of the map) to its end and reads its cell from the rows; once
    /// `cancel` is set the night ends early, its workers killed (`Error::Stopped`).
    pub fn run(&self, n: usize, night: PlannedNight, cancel: &AtomicBool) -> Result<Cell, Error> {
        let (task, point) = (night.kill.task(), night.kill.point());
        let db = self.dir.join(format!(
            "{n:05}-{}-{}-{point}.db",
            night.strategy,
            task_id(task),
        ));
        // The night's lane made ready before it starts (on PostgreSQL, a schema of its own).
        self.warehouse.claim_lane(&db)?;
        let mut lane = LaneConfig {
            delay: Duration::ZERO,
            // Full speed: no sim time between items, nothing to wait for.
            paces: vec![Pace::per_item(0.0)],
            crash_at: night.kill.crash(),
            // The task's own commit on the first attempt: one worker writes the queue in order.
            lose_answers: match night.kill {
                Kill::LostAnswer { task } => vec![task + 1],
                Kill::Crash(_) | Kill::Pause { .. } => Vec::new(),
            },
            // Nothing watches a map night write by write: its one kill is its own crash point.
            quiet_writes: true,
            wal_autocheckpoint: self.wal_autocheckpoint,
            ..LaneConfig::new(night.strategy, db.clone(), self.items)
        };
        let mut config = EngineConfig {
            restart_delay: 0.0,
            // One crash, one restart; a few more would only hide a worker that cannot finish.
            max_restarts: 3,
            progress_deadline: self.progress_deadline,
            ..EngineConfig::new(Vec::new(), KillPlan::default(), self.exe.clone())
        };
        if let Kill::Pause { task } = night.kill {
            paced_pause(&mut lane, &mut config, task);
        }
        config.lanes = vec![lane];
        let config = config.on(&self.warehouse);
        let report = harness::drive_until(config, cancel, |_| {});
        if report.is_err() && !self.keep {
            remove_night(&db);
        }
        let report = report?;
        let killed = match night.kill {
            // The crash kills the first attempt, so a crash that fired shows as a restart.
            Kill::Crash(_) => report.restarts > 0,
            Kill::LostAnswer { .. } => !report.answers_lost.is_empty(),
            // A pause tests the lease only once it outlasted one.
            Kill::Pause { .. } => report.pauses.past_lease > 0,
        };
        let cell = Cell {
            strategy: night.strategy,
            kill: night.kill,
            task,
            point: point.name().to_string(),
            rows: report.inspection.rows,
            distinct: report.inspection.distinct,
            duplicated_task_ids: report.inspection.duplicated_task_ids,
            missing: report.inspection.missing,
            derived_status: report.derived_status(),
            completed: report.completed,
            killed,
            db: self.keep.then(|| db.clone()),
        };
        if self.keep {
            checkpoint_kept(&db);
        } else {
            // The night is over and its engine dropped: no connection holds these files.
            remove_night(&db);
        }
        Ok(cell)
    }
}

/// A pause cell's night: a lease must run out while its holder sleeps and another worker take
/// the item over, so the night has a clock (`PAUSE_DELAY` an item at `PROOF_SCALE`, as
/// `prove`'s pause test at its default pace) and two workers; the one that reaches `task`'s
/// write is stopped there for twice the lease.
fn paced_pause(lane: &mut LaneConfig, config: &mut EngineConfig, task: u64) {
    const SCALE: f64 = crate::engine::PROOF_SCALE;
    lane.delay = PAUSE_DELAY;
    lane.paces = vec![Pace::per_item(PAUSE_DELAY.as_secs_f64() * SCALE)];
    lane.workers = 2;
    lane.quiet_writes = false;
    lane.pause_at = Some(crate::worker::PauseAt::past_lease(task));
    config.scale = SCALE;
}

/// Folds a kept night's log into its database (`wal_checkpoint(TRUNCATE)`): a night's
/// `-wal` held ~2 MB its database did not need, about 7 GB for a whole map kept in memory.
/// A database that cannot be checkpointed is kept as it is: the figures were already read.
fn checkpoint_kept(db: &Path) {
    if let Ok(conn) = rusqlite::Connection::open_with_flags(
        db,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
    ) {
        let _ = conn.busy_timeout(Duration::from_secs(5));
        let _ = conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()));
    }
}

/// What one kept night's database takes at most, checkpointed: measured 36-80 KB for 200
/// items across the strategies (about 400 bytes an item at most, the guarded one's checkpoints
/// included), plus its first pages and heartbeat.
fn kept_night_bytes(items: u64) -> u64 {
    8 * 1024 + items.saturating_mul(420)
}

/// A kept map whose databases would not fit in the folder it writes them to.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error(
    "--keep: {nights} nights' databases of {items} items take about {:.1} MB, and {} has {:.1} MB free{memory}; narrow --tasks, --points or --strategy, or set TMPDIR to a folder with room",
    *bytes as f64 / 1e6,
    dir.display(),
    *free as f64 / 1e6
)]
pub struct NoRoom {
    pub nights: usize,
    pub items: u64,
    pub bytes: u64,
    pub dir: PathBuf,
    pub free: u64,
    /// " (memory)" when the folder is in /dev/shm, else empty.
    pub memory: &'static str,
}

/// The line a kept map says before it starts: how many databases, about how much, and where;
/// or why it cannot start (the folder has not that much room).
pub fn kept_size(dir: &Path, nights: usize, items: u64) -> Result<String, NoRoom> {
    let bytes = (nights as u64).saturating_mul(kept_night_bytes(items));
    let mb = bytes as f64 / 1e6;
    let memory = if dir.starts_with("/dev/shm") {
        " (memory)"
    } else {
        ""
    };
    let free = nix::sys::statvfs::statvfs(dir)
        .ok()
        .map(|s| s.blocks_available().saturating_mul(s.fragment_size()));
    if let Some(free) = free.filter(|&free| free < bytes) {
        return Err(NoRoom {
            nights,
            items,
            bytes,
            dir: dir.to_path_buf(),
            free,
            memory,
        });
    }
    Ok(format!(
        "reclaim map: --keep keeps {nights} databases of {items} items, about {mb:.1} MB, in {}{memory}",
        dir.display()
    ))
}

/// A night's database and the files beside it.
fn remove_night(db: &Path) {
    let _ = std::fs::remove_file(db);
    for suffix in ["-wal", "-shm", "-journal"] {
        let mut name = db.as_os_str().to_owned();
        name.push(suffix);
        let _ = std::fs::remove_file(PathBuf::from(name));
    }
    let _ = std::fs::remove_file(crate::heartbeat::default_path(db));
}

/// A folder for the map's databases: TMPDIR when it is set (the user's choice), else in memory
/// (`/dev/shm`) when the system has one, since a night's database lives for milliseconds and
/// never needs the disk, else the system temp dir.
pub fn fresh_dir(label: &str) -> std::io::Result<PathBuf> {
    let shm = Path::new("/dev/shm");
    let base = if std::env::var_os("TMPDIR").is_none() && shm.is_dir() && tempfile_in(shm) {
        shm.to_path_buf()
    } else {
        std::env::temp_dir()
    };
    // A folder of reclaim's own: what a night creates inside it cannot meet a name someone else
    // planted. The map removes it itself, unless `--keep`.
    Ok(crate::base::paths::private_dir_in(&base, label)?.keep())
}

/// The map's folder kept (its path, to print) when asked to (`--keep always`), or when the
/// dashboard's nights opened from the map are in it (they keep their databases, as `reclaim
/// tui` does) and the policy is not `never`; otherwise removed.
#[must_use]
pub fn keep_or_remove(dir: &Path, keep: crate::base::kept::Keep) -> Option<String> {
    use crate::base::kept::Keep;
    let kept = (keep == Keep::Always || (watched(dir) && keep == Keep::Failed))
        .then(|| dir.display().to_string());
    if kept.is_none() {
        let _ = std::fs::remove_dir_all(dir);
    }
    kept
}

/// Why a map's folder was kept, naming the policy: `--keep always`, or the nights opened
/// from the map's screen under `--keep failed`. The map's folder stays where the map ran (in
/// memory when it could): `reclaim kept` does not list it.
#[must_use]
pub fn kept_why(dir: &Path, always: bool) -> &'static str {
    if !always && watched(dir) {
        "--keep failed keeps the nights you opened from the map; rm -r removes them"
    } else {
        "--keep always; rm -r removes them"
    }
}

fn watched(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|mut entries| {
        entries.any(|e| e.is_ok_and(|e| e.file_name().to_string_lossy().starts_with("watch-")))
    })
}

/// Whether a folder can be written (a read-only /dev/shm is no use): an unnamed file made there
/// exclusively, gone when dropped, so no name in the shared folder is ever opened.
fn tempfile_in(dir: &Path) -> bool {
    tempfile::tempfile_in(dir).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::worker::CrashPoint;

    #[test]
    fn a_kept_map_says_its_size_and_is_refused_past_the_room_its_folder_has() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let said = kept_size(dir.path(), 96, 200).unwrap_or_else(|e| panic!("{e}"));
        assert!(
            said.contains("keeps 96 databases of 200 items, about 8.9 MB"),
            "{said}"
        );
        // 42 PB: more than any folder holds.
        let refused = kept_size(dir.path(), 1_000_000, 100_000_000)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(refused.contains("MB free"), "{refused}");
    }

    fn cell(strategy: Strategy, dup: u64, missing: u64, status: Status) -> Cell {
        Cell {
            strategy,
            kill: Kill::Crash(CrashAt {
                task: 3,
                point: CrashPoint::AfterCommit,
            }),
            task: 3,
            point: "after-commit".into(),
            rows: 10 + dup,
            distinct: 10 - missing,
            duplicated_task_ids: dup,
            missing,
            derived_status: status,
            completed: true,
            killed: true,
            db: None,
        }
    }

    #[test]
    fn the_code_implies_these_duplicates() {
        let at = |task, point| Kill::Crash(CrashAt { task, point });
        assert_eq!(
            expected_duplicates(Strategy::Naive, at(7, CrashPoint::BeforeWrite)),
            7
        );
        assert_eq!(
            expected_duplicates(Strategy::Naive, at(7, CrashPoint::AfterHeartbeat)),
            8
        );
        assert_eq!(
            expected_duplicates(Strategy::TwoCommit, at(7, CrashPoint::AfterRowCommit)),
            1
        );
        assert_eq!(
            expected_duplicates(Strategy::TwoCommit, at(7, CrashPoint::AfterCommit)),
            0
        );
        for point in CrashPoint::ALL {
            assert_eq!(expected_duplicates(Strategy::Guarded, at(7, point)), 0);
            assert_eq!(expected_duplicates(Strategy::Keyed, at(7, point)), 0);
        }
        // A lost answer's retry: the row again, unless a key the database enforces refuses it.
        let lost = Kill::LostAnswer { task: 7 };
        for (strategy, implied) in [
            (Strategy::Naive, 1),
            (Strategy::TwoCommit, 1),
            (Strategy::Claim, 1),
            (Strategy::Fenced, 1),
            (Strategy::Keyed, 0),
            (Strategy::Guarded, 0),
            (Strategy::Outbox, 0),
        ] {
            assert_eq!(expected_duplicates(strategy, lost), implied, "{strategy}");
        }
        assert_eq!(lost.to_string(), "task-007:lost-answer");
        assert_eq!(Kill::at(7, Point::LostAnswer), lost);
    }

    #[test]
    fn outcomes_and_summaries_count_what_the_rows_say() {
        let plan = Plan {
            strategies: vec![Strategy::Naive, Strategy::Guarded],
            points: vec![Point::Crash(CrashPoint::AfterCommit)],
            tasks: (0, 1),
            items: 10,
        };
        assert_eq!(plan.nights().len(), 4);
        let mut untested = cell(Strategy::Guarded, 0, 0, Status::Ok);
        untested.killed = false;
        let cells = vec![
            cell(Strategy::Naive, 4, 0, Status::DataWrong),
            cell(Strategy::Naive, 0, 2, Status::Incomplete),
            cell(Strategy::Guarded, 0, 0, Status::Ok),
            untested.clone(),
        ];
        assert_eq!(cells[0].outcome(), Outcome::Duplicated(4));
        assert_eq!(cells[1].outcome(), Outcome::Missing(2));
        assert!(cells[2].is_right());
        assert_eq!(untested.outcome(), Outcome::Wrong);
        assert!(untested.figures().contains("UNTESTED"));
        let summary = summarize(&plan, &cells);
        assert_eq!(summary[0].duplicated, 1);
        assert_eq!(summary[0].missing, 1);
        assert_eq!(summary[0].worst_duplicated_task_ids, 4);
        assert_eq!((summary[1].right, summary[1].other), (1, 1));
    }
}
