//! Scenarios: TOML files describing a night (its lanes, pace and what the host does), parsed
//! strictly, then validated into a `Scenario` the engine can run. The shipped ones are embedded
//! in the binary so they work from any folder.

mod captions;
mod consent;
mod file;

pub use captions::{
    CAPTION_EVENTS, CAPTION_FIGURES, Caption, CaptionEvent, CaptionFigures, LaneShape,
    caption_lane, caption_times, captions_apply, current_caption, fill_caption, title_for,
};
pub use consent::{ALLOW_EXEC, LaneCommand};
pub use file::parse_pace;
use file::{QUOTE_MAX, ScenarioFile, WORD_MAX};

use std::path::{Path, PathBuf};
use std::time::Duration;

use thiserror::Error;

use crate::base::text::escape_controls;
use crate::engine::{EngineConfig, HangPlan, LaneConfig, LaneWorker, Pace};
use crate::fake_vendor::VendorModes;
use crate::supervisor::schedule::KillPlan;
use crate::worker::{CrashAt, LongItem, SideEffect};

/// The shipped scenarios, by name; the first is the default.
pub const SHIPPED: [(&str, &str); 13] = [
    (
        "incident",
        include_str!("../../assets/scenarios/incident.toml"),
    ),
    (
        "kill-storm",
        include_str!("../../assets/scenarios/kill-storm.toml"),
    ),
    (
        "crash-window",
        include_str!("../../assets/scenarios/crash-window.toml"),
    ),
    (
        "duplicate-delivery",
        include_str!("../../assets/scenarios/duplicate-delivery.toml"),
    ),
    (
        "wiped-checkpoints",
        include_str!("../../assets/scenarios/wiped-checkpoints.toml"),
    ),
    (
        "hung-worker",
        include_str!("../../assets/scenarios/hung-worker.toml"),
    ),
    (
        "all-strategies",
        include_str!("../../assets/scenarios/all-strategies.toml"),
    ),
    (
        "side-effects",
        include_str!("../../assets/scenarios/side-effects.toml"),
    ),
    (
        "vendor-forgets",
        include_str!("../../assets/scenarios/vendor-forgets.toml"),
    ),
    (
        "long-item",
        include_str!("../../assets/scenarios/long-item.toml"),
    ),
    ("claim", include_str!("../../assets/scenarios/claim.toml")),
    (
        "the-pause",
        include_str!("../../assets/scenarios/the-pause.toml"),
    ),
    (
        "the-lost-answer",
        include_str!("../../assets/scenarios/the-lost-answer.toml"),
    ),
];

/// The most lanes a night can show side by side.
pub const MAX_LANES: usize = 6;

/// A scenario is a page of TOML; anything far larger is not one.
const MAX_SCENARIO_BYTES: u64 = 1024 * 1024;

#[derive(Debug, Error, PartialEq)]
pub enum ScenarioError {
    #[error("no scenario named '{0}'; shipped: {shipped}, or give the path of a .toml file", shipped = shipped_names())]
    Unknown(String),
    #[error("cannot read scenario {path}: {message}")]
    Read { path: String, message: String },
    #[error("{0}")]
    Path(String),
    #[error("scenario {source_name}: line {line}: {message}")]
    Parse {
        source_name: String,
        line: usize,
        message: String,
    },
    #[error(
        "scenario {source_name} runs commands of its own: {commands}; none was run: read them, then pass --allow-exec to run them"
    )]
    RunsCommands {
        source_name: String,
        commands: String,
    },
    #[error("scenario {source_name}: {message}")]
    Invalid {
        source_name: String,
        message: String,
    },
}

fn shipped_names() -> String {
    SHIPPED.map(|(name, _)| name).join(", ")
}

/// `02:11:47` as seconds after midnight.
#[must_use]
pub fn parse_clock(text: &str) -> Option<f64> {
    let mut parts = text.split(':');
    let h: u32 = parts.next()?.parse().ok()?;
    let m: u32 = parts.next()?.parse().ok()?;
    let s: u32 = parts.next()?.parse().ok()?;
    if parts.next().is_some() || h > 23 || m > 59 || s > 59 {
        return None;
    }
    Some(f64::from(h * 3600 + m * 60 + s))
}

/// A validated night.
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    /// The shipped name or the file's path.
    pub source: String,
    pub title: String,
    pub about: String,
    pub scale: f64,
    pub items: u64,
    pub delay: Duration,
    /// Sim seconds after 02:00:00 at which the first workers start.
    pub start_at: f64,
    /// Each attempt's pace in sim time (the last for every later attempt).
    pub paces: Vec<Pace>,
    /// Sim seconds.
    pub restart_delay: f64,
    pub max_restarts: u32,
    /// Sim seconds.
    pub dead_man: f64,
    pub seed: u64,
    pub kill_at_task: Option<u64>,
    pub kill_at_rows: Option<u64>,
    /// Kill once the lane's vendor has message N, before it answers (a map --exec cell's
    /// night; a scenario file cannot ask for it).
    pub kill_at_message: Option<u64>,
    pub random_kills: u32,
    pub kill_window: (Duration, Duration),
    pub hang_at_task: Option<u64>,
    /// Sim seconds.
    pub hang_for: Option<f64>,
    /// Every lane's worker that reaches this task's write is stopped there for a while.
    pub pause_at: Option<crate::worker::PauseAt>,
    /// ... or at a task drawn from the seed, for this many sim seconds (`host.random_pause_for`;
    /// at a row count drawn, in a night of jobs).
    pub random_pause_for: Option<f64>,
    /// Every exec lane's job stopped once its table holds N rows (`host.pause_at_rows`).
    pub pause_at_rows: Option<crate::worker::PauseAtRows>,
    /// Each lane's commits whose answers are lost, by the rows they bring the lane to.
    pub lose_answers: Vec<u64>,
    /// Each lane's commits whose answers are lost, by the task whose row they bring in first.
    pub lose_answer_tasks: Vec<u64>,
    /// Answers lost at row counts drawn from the seed (`host.random_lost_answers`).
    pub random_lost_answers: u64,
    /// The night's private cluster restarted once the first lane's table holds these rows
    /// (`host.restart_server_at_rows`; how, the night's warehouse says: `Server::restarter`).
    pub restart_server_at_rows: Option<u64>,
    /// ... or once the first lane commits this task (`host.restart_server_at_task`).
    pub restart_server_at_task: Option<u64>,
    /// ... or at a row count drawn from the seed (`host.random_server_restart`).
    pub random_server_restart: bool,
    pub wipe_at_task: Option<u64>,
    pub lanes: Vec<ScenarioLane>,
    pub captions: Vec<Caption>,
    /// Where the night's rows go: SQLite, or a private PostgreSQL cluster (`Spec::Private`).
    pub warehouse: crate::warehouse::Spec,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ScenarioLane {
    pub name: String,
    pub worker: LaneWorker,
    pub workers: usize,
    pub batch: u64,
    pub crash_at: Option<CrashAt>,
    pub side_effect: Option<SideEffect>,
    /// The vendor's modes (its seed is the night's).
    pub vendor: VendorModes,
    pub long_item: Option<LongItem>,
    pub split: u64,
    /// An exec lane judged by its tables too, against its undisturbed night (`compare`).
    pub compare: Option<crate::verdict::compare::Scope>,
}

impl ScenarioLane {
    /// One worker with batch 1 and no crash point, side effect, long item or split: a map's lane.
    #[must_use]
    pub fn plain(name: String, worker: LaneWorker) -> Self {
        Self {
            name,
            worker,
            workers: 1,
            batch: 1,
            crash_at: None,
            side_effect: None,
            vendor: VendorModes::default(),
            long_item: None,
            split: 1,
            compare: None,
        }
    }
}

impl Scenario {
    /// The dashboard's night for one cell of a map (enter on the map screen): `lanes` at 100x,
    /// paced `delay` an item, restarted 18 sim seconds after a kill, with one caption at the kill;
    /// every other knob at its default, on SQLite.
    #[must_use]
    pub fn map_night(
        title: String,
        about: String,
        items: u64,
        delay: Duration,
        lanes: Vec<ScenarioLane>,
        kill_caption: String,
    ) -> Self {
        Self {
            source: "map".into(),
            title,
            about,
            scale: 100.0,
            items,
            delay,
            start_at: 0.0,
            paces: vec![Pace::per_item(delay.as_secs_f64() * 100.0)],
            restart_delay: 18.0,
            max_restarts: 100,
            dead_man: crate::engine::DEFAULT_DEAD_MAN,
            seed: 0,
            kill_at_task: None,
            kill_at_rows: None,
            kill_at_message: None,
            random_kills: 0,
            kill_window: crate::supervisor::schedule::DEFAULT_WINDOW,
            hang_at_task: None,
            hang_for: None,
            pause_at: None,
            random_pause_for: None,
            pause_at_rows: None,
            lose_answers: Vec::new(),
            lose_answer_tasks: Vec::new(),
            random_lost_answers: 0,
            restart_server_at_rows: None,
            restart_server_at_task: None,
            random_server_restart: false,
            wipe_at_task: None,
            warehouse: crate::warehouse::Spec::Sqlite,
            lanes,
            captions: vec![Caption {
                at: None,
                on: Some("kill".into()),
                lane: None,
                text: kill_caption,
                notes: None,
            }],
        }
    }
}

impl Scenario {
    /// Loads a shipped scenario by name, or a TOML file by path.
    pub fn load(name_or_path: &str) -> Result<Self, ScenarioError> {
        if let Some((name, text)) = SHIPPED.iter().find(|(name, _)| *name == name_or_path) {
            return Self::parse(name, text);
        }
        let path = Path::new(name_or_path);
        if matches!(
            crate::base::paths::look(path),
            Ok(crate::base::paths::PathKind::Missing)
        ) {
            // Cut like any quoted value, with room for a path: it names neither a shipped
            // scenario nor a file, so the whole of it helps no one.
            return Err(ScenarioError::Unknown(escape_controls(
                &crate::base::text::shorten(name_or_path, 2 * QUOTE_MAX),
            )));
        }
        // Checked without opening (a FIFO would block), and read only up to a bound.
        let read_error = |message: String| ScenarioError::Read {
            path: escape_controls(name_or_path),
            message,
        };
        let real = crate::base::paths::existing_file(path, "scenario")
            .map_err(|e| ScenarioError::Path(e.to_string()))?;
        let mut text = String::new();
        std::io::Read::read_to_string(
            &mut std::io::Read::take(
                std::fs::File::open(&real).map_err(|e| read_error(e.to_string()))?,
                MAX_SCENARIO_BYTES + 1,
            ),
            &mut text,
        )
        .map_err(|e| read_error(e.to_string()))?;
        if text.len() as u64 > MAX_SCENARIO_BYTES {
            return Err(read_error(format!(
                "larger than {} KiB, too large to be a scenario",
                MAX_SCENARIO_BYTES / 1024
            )));
        }
        let mut scenario = Self::parse(name_or_path, &text)?;
        // An exec lane may name a job beside its file: told where that is.
        let folder =
            (std::path::absolute(&real).ok()).and_then(|file| file.parent().map(Path::to_path_buf));
        for lane in &mut scenario.lanes {
            if let LaneWorker::Exec(job) = &mut lane.worker {
                job.scenario_dir.clone_from(&folder);
            }
        }
        Ok(scenario)
    }

    /// The default scenario: the incident.
    pub fn default_incident() -> Result<Self, ScenarioError> {
        Self::parse(SHIPPED[0].0, SHIPPED[0].1)
    }

    /// Parses and validates scenario text; `source` names it in errors.
    pub fn parse(source: &str, text: &str) -> Result<Self, ScenarioError> {
        let source = &escape_controls(source);
        let invalid = |message: String| ScenarioError::Invalid {
            source_name: source.clone(),
            message: escape_controls(&crate::base::text::shorten_words(&message, WORD_MAX)),
        };
        if text.trim().is_empty() {
            return Err(invalid(
                "the file is empty; a scenario needs a title and at least one [[lane]]".into(),
            ));
        }
        let file: ScenarioFile = toml::from_str(text).map_err(|e| {
            let line = e.span().map_or(1, |span| {
                text[..span.start.min(text.len())].matches('\n').count() + 1
            });
            ScenarioError::Parse {
                source_name: source.clone(),
                line,
                message: escape_controls(&crate::base::text::shorten_words(
                    e.message().trim(),
                    WORD_MAX,
                )),
            }
        })?;
        file.validate(source).map_err(|e| invalid(e.0))
    }

    /// The engine's configuration for this night: databases under `dir`, suffixed with `run`
    /// so a restarted night never reuses an old file.
    #[must_use]
    pub fn engine_config(&self, dir: &Path, run: u32, exe: PathBuf) -> EngineConfig {
        EngineConfig {
            lanes: self
                .lanes
                .iter()
                .enumerate()
                .map(|(i, lane)| {
                    let name = file_name_part(&lane.name);
                    let db = match &lane.worker {
                        LaneWorker::Strategy(_) => {
                            dir.join(format!("night{run}-{}-{name}.db", i + 1))
                        }
                        // Someone else's job runs in its database's folder and may open
                        // `warehouse.db` there by name: a folder of its own per lane and night.
                        LaneWorker::Exec(_) => dir
                            .join(format!("night{run}-{}-{name}", i + 1))
                            .join("warehouse.db"),
                    };
                    LaneConfig {
                        name: lane.name.clone(),
                        delay: self.delay,
                        paces: self.paces.clone(),
                        batch: lane.batch,
                        workers: lane.workers,
                        crash_at: lane.crash_at,
                        pause_at: self.pause(),
                        pause_at_rows: self.pause_rows(),
                        lose_answers: self.lost_answer_rows(),
                        lose_answer_tasks: self.lose_answer_tasks.clone(),
                        side_effect: lane.side_effect,
                        vendor: VendorModes {
                            seed: self.seed,
                            hold_at: lane.vendor.hold_at.or(self.kill_at_message),
                            ..lane.vendor
                        },
                        long_item: lane.long_item,
                        split: lane.split,
                        ..LaneConfig::new(lane.worker.clone(), db, self.items)
                    }
                })
                .collect(),
            kills: KillPlan {
                random: self.random_kills,
                window: self.kill_window,
                rows: None,
                at_task: self.kill_at_task,
                at_rows: self.kill_at_rows,
                at_message: self.kill_at_message,
                replayed: Vec::new(),
                seed: self.seed,
            },
            start_at: self.start_at,
            restart_delay: self.restart_delay,
            max_restarts: self.max_restarts,
            scale: self.scale,
            speed: 1.0,
            dead_man: self.dead_man,
            exe,
            hang: self.hang_at_task.map(|at_task| HangPlan {
                at_task,
                resume_after: self.hang_for,
            }),
            wipe_at_task: self.wipe_at_task,
            progress_deadline: None,
            restart_server_at_rows: self.server_restart_rows(),
            restart_server_at_task: self.restart_server_at_task,
        }
    }

    /// Whether the night loses answers (by rows, by task or at random): its lanes then run
    /// through proxies of reclaim's own.
    #[must_use]
    pub fn loses_answers(&self) -> bool {
        !self.lose_answers.is_empty()
            || !self.lose_answer_tasks.is_empty()
            || self.random_lost_answers > 0
    }

    /// The planned server restart in words, with the field that plans it.
    #[must_use]
    pub fn server_restart_said(&self) -> Option<String> {
        if let Some(rows) = self.restart_server_at_rows {
            Some(format!("at {rows} rows (host.restart_server_at_rows)"))
        } else if let Some(task) = self.restart_server_at_task {
            let key = (self.lanes.first())
                .map_or_else(|| crate::task::task_id(task), |l| l.worker.task_key(task));
            Some(format!(
                "after {}'s commit (host.restart_server_at_task)",
                crate::base::text::escape_controls(&key)
            ))
        } else {
            (self.random_server_restart).then(|| {
                "at a row count drawn from the seed (host.random_server_restart)".to_string()
            })
        }
    }

    /// The pause of reclaim's own workers: the one named, or one at a task drawn from the seed.
    #[must_use]
    pub fn pause(&self) -> Option<crate::worker::PauseAt> {
        self.pause_at.or_else(|| {
            let (secs, drawn) = self.drawn_pause().filter(|_| !self.of_jobs())?;
            Some(crate::worker::PauseAt {
                task: drawn.saturating_sub(1),
                secs,
            })
        })
    }

    /// The pause of the lanes' jobs (exec): the one named, or at a row count drawn.
    #[must_use]
    pub fn pause_rows(&self) -> Option<crate::worker::PauseAtRows> {
        self.pause_at_rows.or_else(|| {
            let (secs, rows) = self.drawn_pause().filter(|_| self.of_jobs())?;
            Some(crate::worker::PauseAtRows { rows, secs })
        })
    }

    /// `host.random_pause_for`'s length and its draw from the seed (1 to the items).
    fn drawn_pause(&self) -> Option<(f64, u64)> {
        let secs = self.random_pause_for?;
        let drawn = crate::base::seeded::distinct_in(
            self.seed,
            crate::base::seeded::Stream::Pause,
            1,
            self.items,
        );
        Some((secs, *drawn.first()?))
    }

    /// Whether every lane runs a job of the user's (exec).
    fn of_jobs(&self) -> bool {
        !self.lanes.is_empty() && self.lanes.iter().all(|l| l.worker.job().is_some())
    }

    /// The row counts whose answers are lost: those named, and those drawn from the seed.
    #[must_use]
    pub fn lost_answer_rows(&self) -> Vec<u64> {
        let drawn = crate::base::seeded::distinct_in(
            self.seed,
            crate::base::seeded::Stream::LostAnswers,
            self.random_lost_answers,
            self.items,
        );
        let mut rows: Vec<u64> = self.lose_answers.iter().copied().chain(drawn).collect();
        rows.sort_unstable();
        rows.dedup();
        rows
    }

    /// The row count the server restarts at: the one named, or the one drawn from the seed.
    #[must_use]
    pub fn server_restart_rows(&self) -> Option<u64> {
        self.restart_server_at_rows.or_else(|| {
            let drawn = crate::base::seeded::distinct_in(
                self.seed,
                crate::base::seeded::Stream::ServerRestart,
                1,
                self.items,
            );
            drawn
                .first()
                .copied()
                .filter(|_| self.random_server_restart)
        })
    }
}

/// A lane's name as part of a file name: letters, digits, `.`, `_` and `-` kept, anything else
/// (a space, a slash, a quote) a `-`, so a path never needs quoting in a shell.
fn file_name_part(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '-'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::worker::Strategy;

    #[test]
    fn every_shipped_scenario_parses() {
        for (name, text) in SHIPPED {
            let scenario = Scenario::parse(name, text).unwrap_or_else(|e| panic!("{e}"));
            assert!(!scenario.lanes.is_empty(), "{name}");
        }
    }

    #[test]
    fn the_default_is_the_incident_side_by_side() {
        let s = Scenario::default_incident().unwrap_or_else(|e| panic!("{e}"));
        let strategies: Vec<Strategy> =
            s.lanes.iter().filter_map(|l| l.worker.strategy()).collect();
        assert_eq!(strategies, [Strategy::Naive, Strategy::Guarded]);
        assert_eq!(s.kill_at_task, Some(111));
        // 112 items at the scenario's pace land the kill at about 02:11:47 (707 sim seconds).
        let kill_sim = 112.0 * s.delay.as_secs_f64() * s.scale;
        assert!((690.0..=725.0).contains(&kill_sim), "{kill_sim}");
    }

    #[test]
    fn an_unknown_field_is_named_with_its_line() {
        let text = "title = \"x\"\n[[lane]]\nstrategy = \"naive\"\nstrateg = \"keyed\"\n";
        let err = Scenario::parse("t.toml", text)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            err.starts_with("scenario t.toml: line 4: unknown field `strateg`"),
            "{err}"
        );
    }

    #[test]
    fn wrong_types_values_and_emptiness_are_refused() {
        let cases = [
            ("title = 3\n[[lane]]\nstrategy = \"naive\"\n", "line 1"),
            (
                "title = \"x\"\n[[lane]]\nstrategy = \"lazy\"\n",
                "unknown variant `lazy`",
            ),
            (
                "title = \"x\"\nitems = 0\n[[lane]]\nstrategy = \"naive\"\n",
                "items = 0",
            ),
            ("title = \"x\"\n", "at least one lane"),
            ("", "empty"),
            (
                "title = \"x\"\n[host]\nkill_at_task = \"task-900\"\n[[lane]]\nstrategy = \"naive\"\n",
                "beyond the queue",
            ),
            (
                "title = \"x\"\n[[lane]]\nstrategy = \"naive\"\nbatch = 5\n",
                "keyed, guarded and outbox only",
            ),
        ];
        for (text, needle) in cases {
            let err = Scenario::parse("t", text)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(err.contains(needle), "{text:?} -> {err}");
            assert!(!err.contains('\n'), "one line: {err}");
        }
    }

    #[test]
    fn an_exec_lane_runs_your_job_in_a_folder_of_its_own() {
        let text = "title = \"x\"\n[[lane]]\nstrategy = \"guarded\"\n[[lane]]\nname = \"mine\"\nexec = \"python3 my_job.py\"\nsetup_sql = \"CREATE TABLE jobs(id TEXT)\"\ntable = \"jobs\"\nkey = \"id\"\n";
        let scenario = Scenario::parse("t", text).unwrap_or_else(|e| panic!("{e}"));
        let config = scenario.engine_config(Path::new("/n"), 2, PathBuf::from("/bin/reclaim"));
        let lane = &config.lanes[1];
        let Some(job) = lane.worker.job() else {
            panic!("lane 2 runs the job: {lane:?}");
        };
        assert_eq!(job.command, "python3 my_job.py");
        assert_eq!(job.setup_sql.as_deref(), Some("CREATE TABLE jobs(id TEXT)"));
        assert_eq!(
            (job.rows.table.as_str(), job.rows.key.as_str()),
            ("jobs", "id")
        );
        assert_eq!(lane.db, Path::new("/n/night2-2-mine/warehouse.db"));
        assert_eq!(config.lanes[0].worker.strategy(), Some(Strategy::Guarded));
        let cases = [
            ("strategy = \"naive\"\nexec = \"x\"", "not both"),
            ("name = \"x\"", "needs a strategy"),
            (
                "exec = \"x\"\ncrash_at = \"task-999:after-commit\"",
                "not a key of the queue",
            ),
            ("exec = \"x\"\ncrash_at = \"task-001\"", "not KEY:POINT"),
            (
                "strategy = \"naive\"\nvendor = true",
                "gives an exec lane's job a vendor",
            ),
            (
                "strategy = \"naive\"\ntable = \"t\"",
                "describe an exec lane",
            ),
            (
                "exec = \"x\"\nsetup_sql = \"CREAT\"",
                "--setup-sql does not run",
            ),
        ];
        for (lane, needle) in cases {
            let text = format!("title = \"x\"\n[[lane]]\n{lane}\n");
            let err = Scenario::parse("t", &text)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(err.contains(needle), "{lane:?} -> {err}");
        }
    }

    #[test]
    fn a_huge_value_is_named_too_large_and_a_quoted_one_is_cut() {
        let digits = "9".repeat(309);
        let cases = [
            (
                format!("title = \"x\"\nscale = {digits}.0\n[[lane]]\nstrategy = \"naive\"\n"),
                "",
            ),
            (
                "title = \"x\"\nscale = 1e308\n[[lane]]\nstrategy = \"naive\"\n".to_string(),
                "scale is too large; it must be within 0.01..=100000",
            ),
            (
                "title = \"x\"\ndelay_ms = -1e300\n[[lane]]\nstrategy = \"naive\"\n".to_string(),
                "delay_ms is too small; it must be within 0..=60000",
            ),
            (
                format!(
                    "title = \"x\"\n[host]\nkill_at_task = \"task-{digits}\"\n[[lane]]\nstrategy = \"naive\"\n"
                ),
                "host.kill_at_task = \"task-9999999999999999999999999999999999…\" is not a task id",
            ),
            (
                format!(
                    "title = \"x\"\n[[lane]]\nstrategy = \"naive\"\ncrash_at = \"{digits}:before-write\"\n"
                ),
                "lane 1: crash_at:",
            ),
        ];
        for (text, needle) in cases {
            let err = Scenario::parse("t", &text)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(err.contains(needle), "{err}");
            assert!(err.chars().count() < 160, "readable: {err}");
            assert!(!err.contains(&"9".repeat(41)), "cut: {err}");
        }
    }

    #[test]
    fn unknown_names_list_the_shipped_ones() {
        let err = Scenario::load("nope")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("incident, kill-storm"), "{err}");
    }
}
