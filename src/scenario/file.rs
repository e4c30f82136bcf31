//! The scenario file as TOML has it (unknown fields refused with their line), and its
//! validation into a `Scenario`: every value checked, every error one line naming the field.

use std::time::Duration;

use serde::Deserialize;

use crate::engine::{LaneWorker, Pace};
use crate::fake_vendor::{Keys, VendorModes};
use crate::supervisor::schedule::parse_window;
use crate::worker::{CrashAt, LongItem, SideEffect, Strategy};

use super::{Caption, MAX_LANES, Scenario, ScenarioLane, parse_clock};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ScenarioFile {
    title: String,
    about: Option<String>,
    #[serde(default = "default_scale")]
    scale: f64,
    #[serde(default = "default_items")]
    items: u64,
    #[serde(default = "default_delay_ms")]
    delay_ms: f64,
    /// When the first workers start, such as "02:00:03".
    start_at: Option<String>,
    /// Each attempt's pace, such as "112 in 11m44s"; the last one holds for later attempts.
    #[serde(default)]
    pace: Vec<String>,
    #[serde(default = "default_restart_delay")]
    restart_delay: f64,
    #[serde(default = "default_max_restarts")]
    max_restarts: u32,
    #[serde(default = "default_dead_man")]
    dead_man: f64,
    #[serde(default)]
    seed: u64,
    #[serde(default)]
    host: HostFile,
    #[serde(default)]
    lane: Vec<LaneFile>,
    #[serde(default)]
    caption: Vec<Caption>,
    /// "sqlite" (the default) or "postgres": a private PostgreSQL cluster for the night. A
    /// server's URL is given on the command line only.
    warehouse: Option<String>,
}

/// A value of the scenario file that does not hold, in a sentence naming the field and what is
/// allowed; the scenario's name is added where the whole file is refused
/// (`ScenarioError::Invalid`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Invalid(pub String);

impl From<crate::task::BeyondQueue> for Invalid {
    fn from(beyond: crate::task::BeyondQueue) -> Self {
        Self(beyond.to_string())
    }
}

/// `112 in 11m44s`: that many items in that much sim time (hours, minutes, seconds).
pub fn parse_pace(text: &str) -> Result<Pace, Invalid> {
    let bad = || {
        Invalid(format!(
            "\"{}\" is not a pace such as \"112 in 11m44s\"",
            quoted(text)
        ))
    };
    let (items, span) = text.split_once(" in ").ok_or_else(bad)?;
    let items: u64 = items.trim().parse().map_err(|_| bad())?;
    if items == 0 {
        return Err(bad());
    }
    let mut secs = 0.0;
    let mut number = String::new();
    for c in span.trim().chars() {
        match c {
            '0'..='9' | '.' => number.push(c),
            'h' | 'm' | 's' => {
                let n: f64 = number.parse().map_err(|_| bad())?;
                number.clear();
                secs += n * match c {
                    'h' => 3600.0,
                    'm' => 60.0,
                    _ => 1.0,
                };
            }
            _ => return Err(bad()),
        }
    }
    if !number.is_empty() || !(0.0..=86_400.0).contains(&secs) {
        return Err(bad());
    }
    Ok(Pace { secs, items })
}

pub(super) fn default_scale() -> f64 {
    100.0
}

pub(super) fn default_items() -> u64 {
    200
}

pub(super) fn default_delay_ms() -> f64 {
    63.0
}

pub(super) fn default_restart_delay() -> f64 {
    18.0
}

pub(super) fn default_max_restarts() -> u32 {
    100
}

pub(super) fn default_dead_man() -> f64 {
    crate::engine::DEFAULT_DEAD_MAN
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct HostFile {
    kill_at_task: Option<String>,
    /// Kill once the first lane's table holds this many rows.
    kill_at_rows: Option<u64>,
    #[serde(default)]
    random_kills: u32,
    kill_window: Option<String>,
    hang_at_task: Option<String>,
    /// Sim seconds the hang lasts; absent: until someone resumes it.
    hang_for: Option<f64>,
    /// Stop the worker that reaches this task's write (its lease taken), in every lane.
    pause_at_task: Option<String>,
    /// Sim seconds that pause lasts.
    pause_for: Option<f64>,
    /// A pause of this many sim seconds at a task drawn from the seed (a row count, for exec
    /// lanes).
    random_pause_for: Option<f64>,
    /// `N:SECS`: every exec lane's job stopped once its table holds N rows, for SECS.
    pause_at_rows: Option<String>,
    /// Lose the answer to the commit that brings each lane's rows to each of these (PostgreSQL).
    lose_answer_at: Option<Vec<u64>>,
    /// Lose the answer to the first commit that brings each of these tasks' rows in.
    lose_answer_at_task: Option<Vec<String>>,
    /// Lose this many answers, at row counts drawn from the seed.
    #[serde(default)]
    random_lost_answers: u64,
    /// Restart the night's private cluster once the first lane's table holds this many rows.
    restart_server_at_rows: Option<u64>,
    /// ... or once the first lane commits this task.
    restart_server_at_task: Option<String>,
    /// ... or at a row count drawn from the seed.
    #[serde(default)]
    random_server_restart: bool,
    wipe_at_task: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct LaneFile {
    /// reclaim's own worker ...
    strategy: Option<Strategy>,
    /// ... or yours: a shell command run in the lane's own folder (see `run --exec`).
    exec: Option<String>,
    setup_sql: Option<String>,
    table: Option<String>,
    key: Option<String>,
    name: Option<String>,
    #[serde(default = "one")]
    workers: usize,
    #[serde(default = "one_u64")]
    batch: u64,
    crash_at: Option<String>,
    /// An exec lane's queue: its keys as a printf format of the item's number (`ord-%05d`).
    key_format: Option<String>,
    /// An exec lane's checkpoint table, to place each kill against it.
    checkpoint_table: Option<String>,
    /// An exec lane's job sends to a vendor of its own (told `RECLAIM_VENDOR_URL`).
    #[serde(default)]
    vendor: bool,
    /// `email`: each item also sends a message to the lane's vendor, before its commit.
    side_effect: Option<SideEffect>,
    /// The lane's vendor: `honour`, `ignore` or `expire=SECS` its Idempotency-Keys.
    vendor_keys: Option<String>,
    vendor_drop_responses: Option<f64>,
    /// `TASK:SECS`: one item whose work takes that long (real seconds) before its commit.
    long_item: Option<String>,
    /// That work in K checkpointed steps (guarded, outbox).
    split: Option<u64>,
    /// An exec lane judged by its tables too, against its undisturbed night (`--compare`).
    #[serde(default)]
    compare: bool,
    /// The tables compared (`--compare-table`) [default: every table of the lane's database].
    compare_tables: Option<Vec<String>>,
    /// `TABLE.COLUMN`s that may differ from night to night (`--ignore-column`).
    ignore_columns: Option<Vec<String>>,
}

pub(super) fn one() -> usize {
    1
}

pub(super) fn one_u64() -> u64 {
    1
}

/// The latest a scenario's lanes may start after the night begins, in sim seconds: a night
/// is a night, and a start later than this (`23:59:00`) left the clock idling for hours
/// before the first row.
const LATEST_START: f64 = 6.0 * 3600.0;

impl ScenarioFile {
    /// When the first workers start (sim seconds after 02:00:00) and each attempt's pace.
    fn timing(&self) -> Result<(f64, Vec<Pace>), Invalid> {
        let start_at = match &self.start_at {
            Some(text) => {
                let at = parse_clock(text).ok_or_else(|| {
                    Invalid(format!(
                        "start_at = \"{}\" is not a time such as 02:00:03",
                        quoted(text)
                    ))
                })?;
                if at < crate::base::clock::NIGHT_START {
                    return Err(Invalid(format!(
                        "start_at = \"{}\" is before the night begins (02:00:00)",
                        quoted(text)
                    )));
                }
                if at > crate::base::clock::NIGHT_START + LATEST_START {
                    return Err(Invalid(format!(
                        "start_at = \"{}\" is more than 6 hours after the night begins \
                         (02:00:00): a lane starts by 08:00:00",
                        quoted(text)
                    )));
                }
                at - crate::base::clock::NIGHT_START
            }
            None => 0.0,
        };
        let mut paces = Vec::new();
        for (i, text) in self.pace.iter().enumerate() {
            paces.push(parse_pace(text).map_err(|e| Invalid(format!("pace {}: {e}", i + 1)))?);
        }
        if paces.is_empty() {
            // No pace given: an item takes delay_ms of real time at the scale.
            paces.push(Pace::per_item(self.delay_ms / 1000.0 * self.scale));
        }
        Ok((start_at, paces))
    }
}

/// `text` (the scenario's `what`) is refused if it holds a character that would act on the
/// screen, a slide or the notes rather than be read there (an escape sequence, a bidi override).
pub(super) fn plain(what: &str, text: &str, allowed: &[char]) -> Result<(), Invalid> {
    match crate::base::text::acting_char(text, allowed) {
        Some(c) => Err(Invalid(format!(
            "{what} holds U+{:04X}, a control character that would act on the screen rather than be read; write it out",
            u32::from(c)
        ))),
        None => Ok(()),
    }
}

impl ScenarioFile {
    /// Each lane validated, each name once.
    fn lanes(&self) -> Result<Vec<ScenarioLane>, Invalid> {
        let mut lanes: Vec<ScenarioLane> = Vec::new();
        for (i, lane) in self.lane.iter().enumerate() {
            let lane = lane.validate(i + 1, self.items)?;
            if lanes.iter().any(|l| l.name == lane.name) {
                return Err(Invalid(format!(
                    "lane {}: the name \"{}\" is used twice; give each lane a name",
                    i + 1,
                    lane.name
                )));
            }
            lanes.push(lane);
        }
        Ok(lanes)
    }

    /// A task id field (`host.kill_at_task = "task-111"`), checked against the queue.
    fn task_field(&self, field: &str, value: Option<&str>) -> Result<Option<u64>, Invalid> {
        let Some(text) = value else { return Ok(None) };
        let index = crate::task::parse_task_id(text).ok_or_else(|| {
            Invalid(format!(
                "{field} = \"{}\" is not a task id such as task-111",
                quoted(text)
            ))
        })?;
        crate::task::check_in_queue(
            &format!("{field} = \"{}\":", quoted(text)),
            index,
            self.items,
        )?;
        Ok(Some(index))
    }

    pub(super) fn validate(self, source: &str) -> Result<Scenario, Invalid> {
        let _ = source;
        if self.title.trim().is_empty() {
            return Err(Invalid("title is empty".into()));
        }
        plain("title", &self.title, &[])?;
        plain("about", self.about.as_deref().unwrap_or_default(), &['\n'])?;
        range("scale", self.scale, 0.01, 100_000.0)?;
        if !(1..=crate::base::limits::MAX_ITEMS).contains(&self.items) {
            return Err(Invalid(format!(
                "items = {} is outside 1..={}",
                self.items,
                crate::base::limits::MAX_ITEMS
            )));
        }
        range("delay_ms", self.delay_ms, 0.0, 60_000.0)?;
        range("restart_delay", self.restart_delay, 0.0, 86_400.0)?;
        let (start_at, paces) = self.timing()?;
        range("dead_man", self.dead_man, 1.0, 86_400.0)?;
        if self.lane.is_empty() {
            return Err(Invalid(
                "no [[lane]] tables; a scenario needs at least one lane".into(),
            ));
        }
        if self.lane.len() > MAX_LANES {
            return Err(Invalid(format!(
                "{} lanes; at most {MAX_LANES} fit side by side",
                self.lane.len()
            )));
        }
        let task = |field: &str, value: &Option<String>| self.task_field(field, value.as_deref());
        let host = &self.host;
        let kill_at_task = task("host.kill_at_task", &host.kill_at_task)?;
        let hang_at_task = task("host.hang_at_task", &host.hang_at_task)?;
        let wipe_at_task = task("host.wipe_at_task", &host.wipe_at_task)?;
        if let Some(hang_for) = host.hang_for {
            range("host.hang_for", hang_for, 0.0, 86_400.0)?;
        }
        let window =
            |t: &str| parse_window(t).map_err(|e| Invalid(format!("host.kill_window: {e}")));
        let kill_window = (host.kill_window.as_deref().map(window).transpose()?)
            .unwrap_or(crate::supervisor::schedule::DEFAULT_WINDOW);
        let lanes = self.lanes()?;
        let pause = task("host.pause_at_task", &host.pause_at_task)?;
        let pause_at = pause_of(pause, host.pause_for, &lanes)?;
        let random_pause_for = random_pause_of(host, &lanes)?;
        let pause_at_rows = pause_rows_of(host, &lanes, self.items)?;
        for (i, caption) in self.caption.iter().enumerate() {
            caption.validate(i + 1, &lanes)?;
        }
        let warehouse = warehouse_of(self.warehouse.as_deref())?;
        let (lose_answers, restart_server_at_rows) =
            server_faults(host, &warehouse, (self.items, lanes.first()))?;
        let mut lose_answer_tasks = (host.lose_answer_at_task.iter().flatten())
            .map(|t| {
                task("host.lose_answer_at_task", &Some(t.clone())).map(Option::unwrap_or_default)
            })
            .collect::<Result<Vec<u64>, Invalid>>()?;
        lose_answer_tasks.sort_unstable();
        lose_answer_tasks.dedup();
        let restart_server_at_task =
            task("host.restart_server_at_task", &host.restart_server_at_task)?;
        Ok(Scenario {
            lose_answers,
            lose_answer_tasks,
            random_lost_answers: host.random_lost_answers,
            restart_server_at_rows,
            restart_server_at_task,
            random_server_restart: host.random_server_restart,
            warehouse,
            source: source.to_string(),
            title: self.title,
            about: self.about.unwrap_or_default(),
            scale: self.scale,
            items: self.items,
            delay: Duration::from_secs_f64(self.delay_ms / 1000.0),
            start_at,
            paces,
            restart_delay: self.restart_delay,
            max_restarts: self.max_restarts,
            dead_man: self.dead_man,
            seed: self.seed,
            kill_at_task,
            kill_at_rows: host.kill_at_rows,
            kill_at_message: None,
            random_kills: host.random_kills,
            kill_window,
            hang_at_task,
            hang_for: host.hang_for,
            pause_at,
            random_pause_for,
            pause_at_rows,
            wipe_at_task,
            lanes,
            captions: self.caption,
        })
    }
}

/// The host's faults between the workers and the server: the answers lost
/// (`host.lose_answer_at`) and the server restart (`host.restart_server_at_rows`).
fn server_faults(
    host: &HostFile,
    warehouse: &crate::warehouse::Spec,
    (items, first): (u64, Option<&ScenarioLane>),
) -> Result<(Vec<u64>, Option<u64>), Invalid> {
    let workers = first.map_or(1, |l| l.workers);
    let faults = (
        lost_answers_of(host.lose_answer_at.clone(), warehouse, items)?,
        server_restart_of(host.restart_server_at_rows, warehouse, (items, workers))?,
    );
    // The first lane's rows place a restart: a retry after a lost answer that writes again
    // (a job's, or a strategy's without a key) adds rows no bound by writes foresees.
    let doubles =
        first.is_none_or(|l| (l.worker.strategy()).is_none_or(|s| s.lost_answer_duplicates() > 0));
    check_by_task_and_random(host, warehouse, items, doubles)?;
    Ok(faults)
}

/// The lost answers by task and at random, and the server restart by task and at random: on
/// a private PostgreSQL cluster, one server restart at most, no more random losses than items.
fn check_by_task_and_random(
    host: &HostFile,
    warehouse: &crate::warehouse::Spec,
    items: u64,
    doubles: bool,
) -> Result<(), Invalid> {
    let loses = host
        .lose_answer_at_task
        .as_ref()
        .is_some_and(|t| !t.is_empty())
        || host.random_lost_answers > 0;
    if loses && !warehouse.is_postgres() {
        return Err(Invalid(
            "host.lose_answer_at_task and host.random_lost_answers lose commits' answers between the workers and a PostgreSQL server: add warehouse = \"postgres\"".into(),
        ));
    }
    if host.random_lost_answers > items {
        return Err(Invalid(format!(
            "host.random_lost_answers = {}: more than the night's {items} items, each lost answer at a row count of its own",
            host.random_lost_answers
        )));
    }
    let restarts = [
        host.restart_server_at_rows.is_some(),
        host.restart_server_at_task.is_some(),
        host.random_server_restart,
    ];
    if restarts.iter().filter(|&&r| r).count() > 1 {
        return Err(Invalid(
            "host.restart_server_at_rows, host.restart_server_at_task and host.random_server_restart each plan the night's one server restart: name one".into(),
        ));
    }
    let any_loss = loses || host.lose_answer_at.as_ref().is_some_and(|a| !a.is_empty());
    if (restarts[0] || restarts[2]) && any_loss && doubles {
        return Err(Invalid(
            "a server restart placed by rows (host.restart_server_at_rows, host.random_server_restart) cannot land on its row in a night that loses answers: the first lane's retry writes its rows twice in one write; place it after a task's commit (host.restart_server_at_task)".into(),
        ));
    }
    if (restarts[1] || restarts[2]) && !warehouse.is_postgres() {
        return Err(Invalid(
            "host.restart_server_at_task and host.random_server_restart restart the night's PostgreSQL server, and SQLite has none: add warehouse = \"postgres\" (a private cluster of reclaim's own)".into(),
        ));
    }
    Ok(())
}

/// `host.lose_answer_at`: row counts the night reaches, on a private PostgreSQL cluster (the
/// answers are lost between the workers and a server).
fn lost_answers_of(
    counts: Option<Vec<u64>>,
    warehouse: &crate::warehouse::Spec,
    items: u64,
) -> Result<Vec<u64>, Invalid> {
    let counts = counts.unwrap_or_default();
    if counts.is_empty() {
        return Ok(counts);
    }
    if !warehouse.is_postgres() {
        return Err(Invalid(
            "host.lose_answer_at loses commits' answers between the workers and a PostgreSQL server: add warehouse = \"postgres\"".into(),
        ));
    }
    if let Some(bad) = counts.iter().find(|&&n| n == 0 || n > items) {
        return Err(Invalid(format!(
            "host.lose_answer_at: {bad} is not a row count of the night's {items} items (1 to {items})"
        )));
    }
    Ok(counts)
}

/// `host.restart_server_at_rows`: a row count the first lane's table can reach (each of its
/// workers writing the whole queue at most), on a private PostgreSQL cluster: reclaim restarts
/// only a server it started.
fn server_restart_of(
    rows: Option<u64>,
    warehouse: &crate::warehouse::Spec,
    (items, workers): (u64, usize),
) -> Result<Option<u64>, Invalid> {
    let Some(rows) = rows else {
        return Ok(None);
    };
    if !warehouse.is_postgres() {
        return Err(Invalid(
            "host.restart_server_at_rows restarts the night's PostgreSQL server, and SQLite has none: add warehouse = \"postgres\" (a private cluster of reclaim's own)".into(),
        ));
    }
    let reach = items.saturating_mul(workers as u64);
    if rows == 0 || rows > reach {
        return Err(Invalid(format!(
            "host.restart_server_at_rows: {rows} is not a row count the first lane's table reaches (1 to {reach})"
        )));
    }
    Ok(Some(rows))
}

/// `host.pause_at_task` and `host.pause_for`, which go together, for lanes of reclaim's own
/// worker only (the pause is placed at its write).
fn pause_of(
    task: Option<u64>,
    secs: Option<f64>,
    lanes: &[ScenarioLane],
) -> Result<Option<crate::worker::PauseAt>, Invalid> {
    let pause = match (task, secs) {
        (Some(task), Some(secs)) => {
            range("host.pause_for", secs, 1.0, 86_400.0)?;
            crate::worker::PauseAt { task, secs }
        }
        (None, None) => return Ok(None),
        _ => return Err(Invalid(
            "host.pause_at_task and host.pause_for go together: the task whose write the pause stops, and its length in sim seconds".into(),
        )),
    };
    if lanes.iter().any(|l| l.worker.job().is_some()) {
        return Err(Invalid(
            "host.pause_at_task stops reclaim's own worker at its write; a lane running a job (exec) cannot be stopped there".into(),
        ));
    }
    Ok(Some(pause))
}

/// `host.random_pause_for`: a pause drawn from the seed, instead of `host.pause_at_task` or
/// `host.pause_at_rows`: at a task's write for reclaim's own workers, at a row count for jobs
/// (exec); lanes of one kind.
fn random_pause_of(host: &HostFile, lanes: &[ScenarioLane]) -> Result<Option<f64>, Invalid> {
    let Some(secs) = host.random_pause_for else {
        return Ok(None);
    };
    range("host.random_pause_for", secs, 1.0, 86_400.0)?;
    if host.pause_at_task.is_some() || host.pause_at_rows.is_some() {
        return Err(Invalid(
            "host.random_pause_for, host.pause_at_task and host.pause_at_rows each plan the night's one pause: name one".into(),
        ));
    }
    let jobs = lanes.iter().filter(|l| l.worker.job().is_some()).count();
    if jobs > 0 && jobs < lanes.len() {
        return Err(Invalid(
            "host.random_pause_for stops reclaim's own workers at a task's write and jobs (exec) at a row count: give it lanes of one kind".into(),
        ));
    }
    Ok(Some(secs))
}

/// `host.pause_at_rows = "N:SECS"`: every lane's job (exec) stopped once its table holds N rows
/// (1 to the queue's items, times its workers), for lanes of jobs only.
fn pause_rows_of(
    host: &HostFile,
    lanes: &[ScenarioLane],
    items: u64,
) -> Result<Option<crate::worker::PauseAtRows>, Invalid> {
    let Some(text) = &host.pause_at_rows else {
        return Ok(None);
    };
    let pause: crate::worker::PauseAtRows =
        (text.parse()).map_err(|e: String| Invalid(format!("host.pause_at_rows: {e}")))?;
    if host.pause_at_task.is_some() {
        return Err(Invalid(
            "host.pause_at_rows and host.pause_at_task each plan the night's one pause: name one"
                .into(),
        ));
    }
    if lanes.iter().any(|l| l.worker.job().is_none()) {
        return Err(Invalid(
            "host.pause_at_rows stops a lane's job (exec), placed by its rows; reclaim's own worker is stopped at a task's write: host.pause_at_task".into(),
        ));
    }
    let reach = items.saturating_mul(lanes.iter().map(|l| l.workers as u64).max().unwrap_or(1));
    if pause.rows > reach {
        return Err(Invalid(format!(
            "host.pause_at_rows: {} is not a row count a lane's table reaches (1 to {reach})",
            pause.rows
        )));
    }
    Ok(Some(pause))
}

impl LaneFile {
    /// An exec lane's job: its table and key (default `records`/`task_id`), its setup checked,
    /// the postmortem's queue.
    fn exec_worker(&self, n: usize, command: &str, items: u64) -> Result<LaneWorker, Invalid> {
        let rows = crate::warehouse::RowSource {
            table: self
                .table
                .clone()
                .unwrap_or_else(|| crate::warehouse::DEFAULT_TABLE.into()),
            key: self
                .key
                .clone()
                .unwrap_or_else(|| crate::warehouse::DEFAULT_KEY.into()),
            count_sql: None,
            checkpoints: None,
        };
        let checkpoints =
            self.checkpoint_table
                .as_ref()
                .map(|table| crate::warehouse::Checkpoints {
                    table: table.clone(),
                    key: rows.key.clone(),
                    guessed: false,
                });
        let rows = crate::warehouse::RowSource {
            checkpoints,
            ..rows
        };
        let queue = match &self.key_format {
            Some(format) => crate::queue::Queue::formatted(
                crate::queue::KeyFormat::parse(format)
                    .map_err(|e| Invalid(format!("lane {n}: {e}")))?,
                items,
            ),
            None => crate::queue::Queue::tasks(items),
        };
        let mut job = crate::engine::ExecJob::new(command, self.setup_sql.as_deref(), rows, queue)
            .map_err(|e| Invalid(format!("lane {n}: {e}")))?;
        // A point the job announces, in a unit of work of its queue.
        if let Some(text) = &self.crash_at {
            let mut plan = crate::worker::protocol::points::CrashPlan::parse(text)
                .map_err(|e| Invalid(format!("lane {n}: crash_at: {e}")))?;
            let index = job.queue.resolve(&plan.key).ok_or_else(|| {
                Invalid(format!(
                    "lane {n}: crash_at {text}: not a key of the queue ({})",
                    job.queue.describe()
                ))
            })?;
            plan.key = job.queue.key(index);
            job.crash_at = Some(plan);
        }
        job.vendor = self.vendor;
        Ok(LaneWorker::Exec(Box::new(job)))
    }

    pub(super) fn validate(&self, n: usize, items: u64) -> Result<ScenarioLane, Invalid> {
        if !(1..=crate::base::limits::MAX_WORKERS).contains(&self.workers) {
            return Err(Invalid(format!(
                "lane {n}: workers = {} is outside 1..={}",
                self.workers,
                crate::base::limits::MAX_WORKERS
            )));
        }
        if !(1..=crate::base::limits::MAX_BATCH).contains(&self.batch) {
            return Err(Invalid(format!(
                "lane {n}: batch = {} is outside 1..={}",
                self.batch,
                crate::base::limits::MAX_BATCH
            )));
        }
        let worker = match (self.strategy, &self.exec) {
            (Some(_), Some(_)) => {
                return Err(Invalid(format!(
                    "lane {n}: give strategy (reclaim's worker) or exec (yours), not both"
                )));
            }
            (None, None) => {
                return Err(Invalid(format!(
                    "lane {n}: needs a strategy (naive, two-commit, keyed, guarded) or exec = \"your command\""
                )));
            }
            (Some(strategy), None) => {
                if self.setup_sql.is_some() || self.table.is_some() || self.key.is_some() {
                    return Err(Invalid(format!(
                        "lane {n}: setup_sql, table and key describe an exec lane's job"
                    )));
                }
                LaneWorker::Strategy(strategy)
            }
            (None, Some(command)) => self.exec_worker(n, command, items)?,
        };
        if self.batch > 1 && !worker.strategy().is_some_and(Strategy::batches) {
            return Err(Invalid(format!(
                "lane {n}: batch applies to keyed, guarded and outbox only"
            )));
        }
        let crash_at = match &self.crash_at {
            // An exec lane's crash point is its job's, kept in its job.
            Some(_) if worker.job().is_some() => None,
            Some(text) => {
                let crash: CrashAt = text
                    .parse()
                    .map_err(|e| Invalid(format!("lane {n}: crash_at: {e}")))?;
                crate::task::check_in_queue(&format!("lane {n}: crash_at"), crash.task, items)?;
                Some(crash)
            }
            None => None,
        };
        let name = self
            .name
            .clone()
            .unwrap_or_else(|| worker.label().to_string());
        if name.is_empty()
            || name.chars().count() > 24
            || name.contains(['/', '\\'])
            || crate::base::text::acting_char(&name, &[]).is_some()
        {
            return Err(Invalid(format!(
                "lane {n}: name {name:?} must be 1..=24 characters, no slashes or control characters"
            )));
        }
        if worker.job().is_some() && taken_by_reclaim(&name) {
            return Err(Invalid(format!(
                "lane {n}: an exec lane named {name:?} would read as reclaim's own {name:?}; name it after your job"
            )));
        }
        let (vendor, long_item, split) = self.leaves_the_database(n, &worker, items, crash_at)?;
        let compare = self.compare_scope(n, &worker)?;
        Ok(ScenarioLane {
            compare,
            name,
            worker,
            workers: self.workers,
            batch: self.batch,
            crash_at,
            side_effect: self.side_effect,
            vendor,
            long_item,
            split,
        })
    }

    /// `compare`, with its tables and volatile columns, checked as `run --compare` checks its
    /// flags: for an exec lane only.
    fn compare_scope(
        &self,
        n: usize,
        worker: &LaneWorker,
    ) -> Result<Option<crate::verdict::compare::Scope>, Invalid> {
        if !self.compare {
            if self.compare_tables.is_some() || self.ignore_columns.is_some() {
                return Err(Invalid(format!(
                    "lane {n}: compare_tables and ignore_columns need compare = true"
                )));
            }
            return Ok(None);
        }
        if worker.job().is_none() {
            return Err(Invalid(format!(
                "lane {n}: compare judges an exec lane's job by its tables; reclaim's own workers are judged by their rows"
            )));
        }
        let ignored = (self.ignore_columns.iter().flatten())
            .map(|text| {
                text.parse()
                    .map_err(|e| Invalid(format!("lane {n}: ignore_columns: {e}")))
            })
            .collect::<Result<_, _>>()?;
        Ok(Some(crate::verdict::compare::Scope {
            tables: self.compare_tables.clone().unwrap_or_default(),
            ignored,
        }))
    }

    /// The side effect, the vendor's modes, the long item and its steps, checked as `run`
    /// checks its flags.
    fn leaves_the_database(
        &self,
        n: usize,
        worker: &LaneWorker,
        items: u64,
        crash_at: Option<CrashAt>,
    ) -> Result<(VendorModes, Option<LongItem>, u64), Invalid> {
        let strategy = worker.strategy();
        let relays = strategy.is_some_and(Strategy::relays);
        if self.side_effect.is_some() && strategy.is_none() {
            return Err(Invalid(format!(
                "lane {n}: side_effect needs reclaim's own worker; an exec lane sends what it sends (vendor = true gives it a vendor)"
            )));
        }
        if self.vendor && strategy.is_some() {
            return Err(Invalid(format!(
                "lane {n}: vendor = true gives an exec lane's job a vendor; reclaim's worker reaches one by side_effect = \"email\" or strategy = \"outbox\""
            )));
        }
        let reaches_vendor = self.side_effect.is_some() || relays || self.vendor;
        if !reaches_vendor && (self.vendor_keys.is_some() || self.vendor_drop_responses.is_some()) {
            return Err(Invalid(format!(
                "lane {n}: vendor_keys and vendor_drop_responses need side_effect = \"email\" or strategy = \"outbox\""
            )));
        }
        let keys = match &self.vendor_keys {
            Some(text) => text
                .parse::<Keys>()
                .map_err(|e| Invalid(format!("lane {n}: vendor_keys: {e}")))?,
            None => Keys::Honour,
        };
        let drop_responses = self.vendor_drop_responses.unwrap_or(0.0);
        range(
            &format!("lane {n}: vendor_drop_responses"),
            drop_responses,
            0.0,
            1.0,
        )?;
        if let Some(crash) = crash_at {
            use crate::worker::CrashPoint;
            if (crash.point == CrashPoint::AfterRelaySend && !relays)
                || (crash.point == CrashPoint::AfterSend && !reaches_vendor)
            {
                return Err(Invalid(format!(
                    "lane {n}: crash_at {crash}: this lane never passes that point (after-send needs side_effect or outbox; after-relay-send needs outbox)"
                )));
            }
        }
        let long_item = match &self.long_item {
            Some(text) => {
                if strategy.is_none() {
                    return Err(Invalid(format!(
                        "lane {n}: long_item needs reclaim's own worker"
                    )));
                }
                let long: LongItem = text
                    .parse()
                    .map_err(|e| Invalid(format!("lane {n}: long_item: {e}")))?;
                crate::task::check_in_queue(&format!("lane {n}: long_item"), long.task, items)?;
                Some(long)
            }
            None => None,
        };
        let split = self.split.unwrap_or(1);
        if !(1..=1000).contains(&split) {
            return Err(Invalid(format!(
                "lane {n}: split = {split} is outside 1..=1000"
            )));
        }
        if split > 1 && !strategy.is_some_and(Strategy::splits) {
            return Err(Invalid(format!(
                "lane {n}: split needs a strategy that checkpoints in the row's transaction: guarded or outbox"
            )));
        }
        Ok((
            VendorModes {
                keys,
                drop_responses,
                seed: 0,
                hold_at: None,
            },
            long_item,
            split,
        ))
    }
}

/// A strategy's name: an exec lane so named would pass for reclaim's own worker in every
/// `lanes=` line and panel.
fn taken_by_reclaim(name: &str) -> bool {
    use clap::ValueEnum as _;
    let name = name.trim().to_ascii_lowercase();
    Strategy::value_variants()
        .iter()
        .any(|s| s.name().eq_ignore_ascii_case(&name))
}

pub(super) fn range(field: &str, value: f64, lo: f64, hi: f64) -> Result<(), Invalid> {
    if value.is_finite() && (lo..=hi).contains(&value) {
        Ok(())
    } else if !value.is_finite() || value.abs() < 1e15 {
        // NaN and inf print short.
        Err(Invalid(format!("{field} = {value} is outside {lo}..={hi}")))
    } else {
        // Printed whole, 1e308 is a 309-digit line: say what is wrong, and what is allowed.
        let size = if value < 0.0 {
            "is too small"
        } else {
            "is too large"
        };
        Err(Invalid(format!(
            "{field} {size}; it must be within {lo}..={hi}"
        )))
    }
}

/// `warehouse = ...`: "sqlite" (the default) or "postgres", a private cluster. A server is
/// named on the command line only: a file is data, and reaching a server is the user's call.
fn warehouse_of(value: Option<&str>) -> Result<crate::warehouse::Spec, Invalid> {
    match value {
        None | Some("sqlite") => Ok(crate::warehouse::Spec::Sqlite),
        Some("postgres" | "postgresql") => Ok(crate::warehouse::Spec::Private),
        Some(url) if url.starts_with("postgres://") || url.starts_with("postgresql://") => Err(Invalid(
            "warehouse: a server's URL is given on the command line (--warehouse postgres://...), never in a scenario file; here give \"sqlite\" or \"postgres\" (a private cluster)".into(),
        )),
        Some(other) => Err(Invalid(format!(
            "warehouse: \"{}\" is not a warehouse; give \"sqlite\" or \"postgres\"",
            quoted(other)
        ))),
    }
}

/// A value quoted from the file, cut to a readable length.
pub(super) fn quoted(text: &str) -> String {
    crate::base::text::shorten(text, QUOTE_MAX)
}

/// The most characters of a user's value an error line quotes.
pub(super) const QUOTE_MAX: usize = 40;

/// Any longer word in an error line (a value quoted by the TOML parser or a lane's message) is
/// cut too; longer than `QUOTE_MAX` so a value already quoted and cut stays whole.
pub(super) const WORD_MAX: usize = 60;
