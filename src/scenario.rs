//! Scenarios: TOML files describing a night (its lanes, pace and what the host does), parsed
//! strictly, then validated into a `Scenario` the engine can run. The shipped ones are embedded
//! in the binary so they work from any folder.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::engine::{EngineConfig, HangPlan, Kind, LaneConfig, LaneWorker, Pace};
use crate::supervisor::schedule::{KillPlan, parse_window};
use crate::text::escape_controls;
use crate::vendor::{Keys, VendorModes};
use crate::worker::{CrashAt, LongItem, SideEffect, Strategy};

/// The shipped scenarios, by name; the first is the default.
pub const SHIPPED: [(&str, &str); 10] = [
    (
        "incident",
        include_str!("../assets/scenarios/incident.toml"),
    ),
    (
        "kill-storm",
        include_str!("../assets/scenarios/kill-storm.toml"),
    ),
    (
        "crash-window",
        include_str!("../assets/scenarios/crash-window.toml"),
    ),
    (
        "duplicate-delivery",
        include_str!("../assets/scenarios/duplicate-delivery.toml"),
    ),
    (
        "wiped-checkpoints",
        include_str!("../assets/scenarios/wiped-checkpoints.toml"),
    ),
    (
        "hung-worker",
        include_str!("../assets/scenarios/hung-worker.toml"),
    ),
    (
        "all-strategies",
        include_str!("../assets/scenarios/all-strategies.toml"),
    ),
    (
        "side-effects",
        include_str!("../assets/scenarios/side-effects.toml"),
    ),
    (
        "vendor-forgets",
        include_str!("../assets/scenarios/vendor-forgets.toml"),
    ),
    (
        "long-item",
        include_str!("../assets/scenarios/long-item.toml"),
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
    #[error("scenario {source_name}: {message}")]
    Invalid {
        source_name: String,
        message: String,
    },
}

fn shipped_names() -> String {
    SHIPPED.map(|(name, _)| name).join(", ")
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScenarioFile {
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
}

/// A teaching caption attached to a moment: a sim time (`at = "02:11:47"`) or the first event of
/// a kind (`on = "kill"`), optionally in one lane.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Caption {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lane: Option<String>,
    pub text: String,
}

/// The events a caption can wait for.
pub const CAPTION_EVENTS: [&str; 7] = [
    "start", "kill", "restart", "resume", "done", "alert", "symptom",
];

impl Caption {
    fn validate(&self, n: usize, lanes: &[ScenarioLane]) -> Result<(), String> {
        match (&self.at, &self.on) {
            (Some(at), None) => {
                parse_clock(at).ok_or_else(|| {
                    format!("caption {n}: at = \"{at}\" is not a time such as 02:11:47")
                })?;
            }
            (None, Some(on)) => {
                if !CAPTION_EVENTS.contains(&on.as_str()) {
                    return Err(format!(
                        "caption {n}: on = \"{on}\" is not one of {}",
                        CAPTION_EVENTS.join(", ")
                    ));
                }
            }
            _ => {
                return Err(format!(
                    "caption {n}: give exactly one of at = \"HH:MM:SS\" or on = \"EVENT\""
                ));
            }
        }
        if let Some(lane) = &self.lane
            && !lanes.iter().any(|l| &l.name == lane)
        {
            return Err(format!(
                "caption {n}: lane = \"{lane}\" is not a lane of this scenario"
            ));
        }
        if self.text.trim().is_empty() {
            return Err(format!("caption {n}: text is empty"));
        }
        if let Some(name) = unknown_placeholders(&self.text).first() {
            return Err(format!(
                "caption {n}: {{{}}} is not one of the night's figures ({})",
                quoted(name),
                CAPTION_FIGURES.map(|f| format!("{{{f}}}")).join(", ")
            ));
        }
        Ok(())
    }
}

/// The figures a caption's text may name, `{rows}` and the like: the night's own, so a caption
/// is never wrong about them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaptionFigures {
    pub lane: String,
    pub items: u64,
    pub rows: u64,
    pub distinct: u64,
    pub duplicated: u64,
    pub kills: u32,
    pub restarts: u32,
    /// What the worker claimed (`rows_written`), once it has.
    pub claimed: Option<u64>,
    pub checkpoints: Option<u64>,
}

/// The placeholders a caption may use.
pub const CAPTION_FIGURES: [&str; 10] = [
    "lane",
    "items",
    "rows",
    "distinct",
    "duplicated",
    "extra",
    "kills",
    "restarts",
    "claimed",
    "checkpoints",
];

impl CaptionFigures {
    /// A lane's figures as its panel shows them.
    #[must_use]
    pub fn of(snap: &crate::engine::LaneSnapshot, lane: &str, items: u64) -> Self {
        Self {
            lane: lane.to_string(),
            items,
            rows: snap.rows,
            distinct: snap.distinct,
            duplicated: snap.duplicated,
            kills: snap.kills,
            restarts: snap.restarts,
            claimed: snap.claimed.as_ref().map(|c| c.rows_written),
            checkpoints: snap.checkpoints,
        }
    }

    fn get(&self, name: &str) -> Option<String> {
        let dash = || "-".to_string();
        Some(match name {
            "lane" => self.lane.clone(),
            "items" => self.items.to_string(),
            "rows" => self.rows.to_string(),
            "distinct" => self.distinct.to_string(),
            "duplicated" => self.duplicated.to_string(),
            "extra" => self.rows.saturating_sub(self.distinct).to_string(),
            "kills" => self.kills.to_string(),
            "restarts" => self.restarts.to_string(),
            "claimed" => self.claimed.map_or_else(dash, |c| c.to_string()),
            "checkpoints" => self.checkpoints.map_or_else(dash, |c| c.to_string()),
            _ => return None,
        })
    }
}

/// A caption's text with its `{name}` placeholders replaced by the night's figures.
#[must_use]
pub fn fill_caption(text: &str, figures: &CaptionFigures) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let found = after
            .find('}')
            .and_then(|close| figures.get(&after[..close]).map(|value| (value, close)));
        if let Some((value, close)) = found {
            out.push_str(&value);
            rest = &after[close + 1..];
        } else {
            out.push('{');
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

/// The placeholders a caption's text names that are not figures, if any.
fn unknown_placeholders(text: &str) -> Vec<String> {
    let mut unknown = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find('{') {
        let after = &rest[open + 1..];
        let Some(close) = after.find('}') else { break };
        let name = &after[..close];
        if !CAPTION_FIGURES.contains(&name) {
            unknown.push(name.to_string());
        }
        rest = &after[close + 1..];
    }
    unknown
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

/// One event as captions see it: sim time, kind, mark, lane.
#[derive(Debug, Clone, Copy)]
pub struct CaptionEvent {
    pub sim: f64,
    pub kind: Kind,
    pub mark: Option<crate::engine::Mark>,
    pub lane: Option<usize>,
}

/// When each caption falls (seconds after midnight), given the night's events so far; `None`
/// for a caption whose event has not happened.
#[must_use]
pub fn caption_times(
    captions: &[Caption],
    lane_names: &[String],
    events: &(impl Iterator<Item = CaptionEvent> + Clone),
) -> Vec<Option<f64>> {
    use crate::engine::Mark;
    captions
        .iter()
        .map(|caption| {
            if let Some(at) = &caption.at {
                return parse_clock(at);
            }
            let on = caption.on.as_deref().unwrap_or_default();
            let lane = caption
                .lane
                .as_ref()
                .and_then(|name| lane_names.iter().position(|n| n == name));
            events
                .clone()
                .find(|e| {
                    let kind_matches = match on {
                        "kill" => e.mark == Some(Mark::Kill),
                        "restart" => e.mark == Some(Mark::Restart),
                        other => e.kind.name() == other,
                    };
                    kind_matches && (lane.is_none() || e.lane == lane)
                })
                .map(|e| e.sim)
        })
        .collect()
}

/// The caption showing at `now` (seconds after midnight): the latest one whose moment has come.
#[must_use]
pub fn current_caption(times: &[Option<f64>], now: f64) -> Option<usize> {
    times
        .iter()
        .enumerate()
        .filter_map(|(i, t)| t.filter(|&t| t <= now).map(|t| (i, t)))
        .max_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)))
        .map(|(i, _)| i)
}

/// `112 in 11m44s`: that many items in that much sim time (hours, minutes, seconds).
pub fn parse_pace(text: &str) -> Result<Pace, String> {
    let bad = || {
        format!(
            "\"{}\" is not a pace such as \"112 in 11m44s\"",
            quoted(text)
        )
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

fn default_scale() -> f64 {
    100.0
}
fn default_items() -> u64 {
    200
}
fn default_delay_ms() -> f64 {
    63.0
}
fn default_restart_delay() -> f64 {
    18.0
}
fn default_max_restarts() -> u32 {
    100
}
fn default_dead_man() -> f64 {
    crate::engine::DEFAULT_DEAD_MAN
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct HostFile {
    kill_at_task: Option<String>,
    #[serde(default)]
    random_kills: u32,
    kill_window: Option<String>,
    hang_at_task: Option<String>,
    /// Sim seconds the hang lasts; absent: until someone resumes it.
    hang_for: Option<f64>,
    wipe_at_task: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct LaneFile {
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
    /// `email`: each item also sends a message to the lane's vendor, before its commit.
    side_effect: Option<SideEffect>,
    /// The lane's vendor: `honour`, `ignore` or `expire=SECS` its Idempotency-Keys.
    vendor_keys: Option<String>,
    vendor_drop_responses: Option<f64>,
    /// `TASK:SECS`: one item whose work takes that long (real seconds) before its commit.
    long_item: Option<String>,
    /// That work in K checkpointed steps (guarded, outbox).
    split: Option<u64>,
}

fn one() -> usize {
    1
}
fn one_u64() -> u64 {
    1
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
    pub random_kills: u32,
    pub kill_window: (Duration, Duration),
    pub hang_at_task: Option<u64>,
    /// Sim seconds.
    pub hang_for: Option<f64>,
    pub wipe_at_task: Option<u64>,
    pub lanes: Vec<ScenarioLane>,
    pub captions: Vec<Caption>,
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
}

impl Scenario {
    /// Loads a shipped scenario by name, or a TOML file by path.
    pub fn load(name_or_path: &str) -> Result<Self, ScenarioError> {
        if let Some((name, text)) = SHIPPED.iter().find(|(name, _)| *name == name_or_path) {
            return Self::parse(name, text);
        }
        let path = Path::new(name_or_path);
        if matches!(crate::paths::look(path), Ok(crate::paths::Entry::Missing)) {
            // Cut like any quoted value, with room for a path: it names neither a shipped
            // scenario nor a file, so the whole of it helps no one.
            return Err(ScenarioError::Unknown(escape_controls(
                &crate::text::shorten(name_or_path, 2 * QUOTE_MAX),
            )));
        }
        // Checked without opening (a FIFO would block), and read only up to a bound.
        let read_error = |message: String| ScenarioError::Read {
            path: escape_controls(name_or_path),
            message,
        };
        let real = crate::paths::existing_file(path, "scenario")
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
        Self::parse(name_or_path, &text)
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
            message: escape_controls(&crate::text::shorten_words(&message, WORD_MAX)),
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
                message: escape_controls(&crate::text::shorten_words(e.message().trim(), WORD_MAX)),
            }
        })?;
        file.validate(source).map_err(invalid)
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
                    let db = match &lane.worker {
                        LaneWorker::Strategy(_) => {
                            dir.join(format!("night{run}-{}-{}.db", i + 1, lane.name))
                        }
                        // Someone else's job runs in its database's folder and may open
                        // `warehouse.db` there by name: a folder of its own per lane and night.
                        LaneWorker::Exec(_) => dir
                            .join(format!("night{run}-{}-{}", i + 1, lane.name))
                            .join("warehouse.db"),
                    };
                    LaneConfig {
                        name: lane.name.clone(),
                        delay: self.delay,
                        paces: self.paces.clone(),
                        batch: lane.batch,
                        workers: lane.workers,
                        crash_at: lane.crash_at,
                        side_effect: lane.side_effect,
                        vendor: VendorModes {
                            seed: self.seed,
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
                at_task: self.kill_at_task,
                at_rows: None,
                replayed: Vec::new(),
                seed: self.seed,
            },
            start_at: self.start_at,
            restart_delay: self.restart_delay,
            max_restarts: self.max_restarts,
            scale: self.scale,
            dead_man: self.dead_man,
            exe,
            hang: self.hang_at_task.map(|at_task| HangPlan {
                at_task,
                resume_after: self.hang_for,
            }),
            wipe_at_task: self.wipe_at_task,
        }
    }
}

impl ScenarioFile {
    /// When the first workers start (sim seconds after 02:00:00) and each attempt's pace.
    fn timing(&self) -> Result<(f64, Vec<Pace>), String> {
        let start_at = match &self.start_at {
            Some(text) => {
                let at = parse_clock(text).ok_or_else(|| {
                    format!(
                        "start_at = \"{}\" is not a time such as 02:00:03",
                        quoted(text)
                    )
                })?;
                if at < crate::clock::NIGHT_START {
                    return Err(format!(
                        "start_at = \"{}\" is before the night begins (02:00:00)",
                        quoted(text)
                    ));
                }
                at - crate::clock::NIGHT_START
            }
            None => 0.0,
        };
        let mut paces = Vec::new();
        for (i, text) in self.pace.iter().enumerate() {
            paces.push(parse_pace(text).map_err(|e| format!("pace {}: {e}", i + 1))?);
        }
        if paces.is_empty() {
            // No pace given: an item takes delay_ms of real time at the scale.
            paces.push(Pace::per_item(self.delay_ms / 1000.0 * self.scale));
        }
        Ok((start_at, paces))
    }
}

impl ScenarioFile {
    fn validate(self, source: &str) -> Result<Scenario, String> {
        let _ = source;
        if self.title.trim().is_empty() {
            return Err("title is empty".into());
        }
        range("scale", self.scale, 0.01, 100_000.0)?;
        if !(1..=crate::limits::MAX_ITEMS).contains(&self.items) {
            return Err(format!(
                "items = {} is outside 1..={}",
                self.items,
                crate::limits::MAX_ITEMS
            ));
        }
        range("delay_ms", self.delay_ms, 0.0, 60_000.0)?;
        range("restart_delay", self.restart_delay, 0.0, 86_400.0)?;
        let (start_at, paces) = self.timing()?;
        range("dead_man", self.dead_man, 1.0, 86_400.0)?;
        if self.lane.is_empty() {
            return Err("no [[lane]] tables; a scenario needs at least one lane".into());
        }
        if self.lane.len() > MAX_LANES {
            return Err(format!(
                "{} lanes; at most {MAX_LANES} fit side by side",
                self.lane.len()
            ));
        }
        let task = |field: &str, value: &Option<String>| -> Result<Option<u64>, String> {
            let Some(text) = value else { return Ok(None) };
            let index = crate::task::parse_task_id(text).ok_or_else(|| {
                format!(
                    "{field} = \"{}\" is not a task id such as task-111",
                    quoted(text)
                )
            })?;
            crate::task::check_in_queue(
                &format!("{field} = \"{}\":", quoted(text)),
                index,
                self.items,
            )?;
            Ok(Some(index))
        };
        let host = &self.host;
        let kill_at_task = task("host.kill_at_task", &host.kill_at_task)?;
        let hang_at_task = task("host.hang_at_task", &host.hang_at_task)?;
        let wipe_at_task = task("host.wipe_at_task", &host.wipe_at_task)?;
        if let Some(hang_for) = host.hang_for {
            range("host.hang_for", hang_for, 0.0, 86_400.0)?;
        }
        let kill_window = match &host.kill_window {
            Some(text) => parse_window(text).map_err(|e| format!("host.kill_window: {e}"))?,
            None => crate::supervisor::schedule::DEFAULT_WINDOW,
        };
        let mut lanes: Vec<ScenarioLane> = Vec::new();
        for (i, lane) in self.lane.iter().enumerate() {
            let lane = lane.validate(i + 1, self.items)?;
            if lanes.iter().any(|l| l.name == lane.name) {
                return Err(format!(
                    "lane {}: the name \"{}\" is used twice; give each lane a name",
                    i + 1,
                    lane.name
                ));
            }
            lanes.push(lane);
        }
        for (i, caption) in self.caption.iter().enumerate() {
            caption.validate(i + 1, &lanes)?;
        }
        Ok(Scenario {
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
            random_kills: host.random_kills,
            kill_window,
            hang_at_task,
            hang_for: host.hang_for,
            wipe_at_task,
            lanes,
            captions: self.caption,
        })
    }
}

impl LaneFile {
    fn validate(&self, n: usize, items: u64) -> Result<ScenarioLane, String> {
        if !(1..=crate::limits::MAX_WORKERS).contains(&self.workers) {
            return Err(format!(
                "lane {n}: workers = {} is outside 1..={}",
                self.workers,
                crate::limits::MAX_WORKERS
            ));
        }
        if !(1..=crate::limits::MAX_BATCH).contains(&self.batch) {
            return Err(format!(
                "lane {n}: batch = {} is outside 1..={}",
                self.batch,
                crate::limits::MAX_BATCH
            ));
        }
        let worker = match (self.strategy, &self.exec) {
            (Some(_), Some(_)) => {
                return Err(format!(
                    "lane {n}: give strategy (reclaim's worker) or exec (yours), not both"
                ));
            }
            (None, None) => {
                return Err(format!(
                    "lane {n}: needs a strategy (naive, two-commit, keyed, guarded) or exec = \"your command\""
                ));
            }
            (Some(strategy), None) => {
                if self.setup_sql.is_some() || self.table.is_some() || self.key.is_some() {
                    return Err(format!(
                        "lane {n}: setup_sql, table and key describe an exec lane's job"
                    ));
                }
                LaneWorker::Strategy(strategy)
            }
            (None, Some(command)) => {
                let args = crate::cli::ExecArgs {
                    exec: Some(command.clone()),
                    setup_sql: self.setup_sql.clone(),
                    table: self
                        .table
                        .clone()
                        .unwrap_or_else(|| crate::store::rows::DEFAULT_TABLE.into()),
                    key: self
                        .key
                        .clone()
                        .unwrap_or_else(|| crate::store::rows::DEFAULT_KEY.into()),
                    count_sql: None,
                };
                let job = args.to_job().map_err(|e| format!("lane {n}: {e}"))?;
                if self.crash_at.is_some() {
                    return Err(format!(
                        "lane {n}: crash_at needs reclaim's own worker; an exec lane has no named crash points"
                    ));
                }
                job.map(LaneWorker::Exec)
                    .ok_or_else(|| format!("lane {n}: exec is empty"))?
            }
        };
        if self.batch > 1 && !worker.strategy().is_some_and(Strategy::batches) {
            return Err(format!(
                "lane {n}: batch applies to keyed, guarded and outbox only"
            ));
        }
        let crash_at = match &self.crash_at {
            Some(text) => {
                let crash: CrashAt = text
                    .parse()
                    .map_err(|e| format!("lane {n}: crash_at: {e}"))?;
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
            || name.chars().any(char::is_control)
        {
            return Err(format!(
                "lane {n}: name {name:?} must be 1..=24 characters, no slashes or control characters"
            ));
        }
        let (vendor, long_item, split) = self.leaves_the_database(n, &worker, items, crash_at)?;
        Ok(ScenarioLane {
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

    /// The side effect, the vendor's modes, the long item and its steps, checked as `run`
    /// checks its flags.
    fn leaves_the_database(
        &self,
        n: usize,
        worker: &LaneWorker,
        items: u64,
        crash_at: Option<CrashAt>,
    ) -> Result<(VendorModes, Option<LongItem>, u64), String> {
        let strategy = worker.strategy();
        let relays = strategy.is_some_and(Strategy::relays);
        if self.side_effect.is_some() && strategy.is_none() {
            return Err(format!(
                "lane {n}: side_effect needs reclaim's own worker; an exec lane sends what it sends"
            ));
        }
        let reaches_vendor = self.side_effect.is_some() || relays;
        if !reaches_vendor && (self.vendor_keys.is_some() || self.vendor_drop_responses.is_some()) {
            return Err(format!(
                "lane {n}: vendor_keys and vendor_drop_responses need side_effect = \"email\" or strategy = \"outbox\""
            ));
        }
        let keys = match &self.vendor_keys {
            Some(text) => text
                .parse::<Keys>()
                .map_err(|e| format!("lane {n}: vendor_keys: {e}"))?,
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
                return Err(format!(
                    "lane {n}: crash_at {crash}: this lane never passes that point (after-send needs side_effect or outbox; after-relay-send needs outbox)"
                ));
            }
        }
        let long_item = match &self.long_item {
            Some(text) => {
                if strategy.is_none() {
                    return Err(format!("lane {n}: long_item needs reclaim's own worker"));
                }
                let long: LongItem = text
                    .parse()
                    .map_err(|e| format!("lane {n}: long_item: {e}"))?;
                crate::task::check_in_queue(&format!("lane {n}: long_item"), long.task, items)?;
                Some(long)
            }
            None => None,
        };
        let split = self.split.unwrap_or(1);
        if !(1..=1000).contains(&split) {
            return Err(format!("lane {n}: split = {split} is outside 1..=1000"));
        }
        if split > 1 && !strategy.is_some_and(Strategy::splits) {
            return Err(format!(
                "lane {n}: split needs a strategy that checkpoints in the row's transaction: guarded or outbox"
            ));
        }
        Ok((
            VendorModes {
                keys,
                drop_responses,
                seed: 0,
            },
            long_item,
            split,
        ))
    }
}

fn range(field: &str, value: f64, lo: f64, hi: f64) -> Result<(), String> {
    if value.is_finite() && (lo..=hi).contains(&value) {
        Ok(())
    } else if !value.is_finite() || value.abs() < 1e15 {
        // NaN and inf print short.
        Err(format!("{field} = {value} is outside {lo}..={hi}"))
    } else {
        // Printed whole, 1e308 is a 309-digit line: say what is wrong, and what is allowed.
        let size = if value < 0.0 {
            "is too small"
        } else {
            "is too large"
        };
        Err(format!("{field} {size}; it must be within {lo}..={hi}"))
    }
}

/// A value quoted from the file, cut to a readable length.
fn quoted(text: &str) -> String {
    crate::text::shorten(text, QUOTE_MAX)
}

/// The most characters of a user's value an error line quotes.
const QUOTE_MAX: usize = 40;
/// Any longer word in an error line (a value quoted by the TOML parser or a lane's message) is
/// cut too; longer than `QUOTE_MAX` so a value already quoted and cut stays whole.
const WORD_MAX: usize = 60;

#[cfg(test)]
mod tests {
    use super::*;

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
                "exec = \"x\"\ncrash_at = \"task-001:after-commit\"",
                "no named crash points",
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
    fn captions_fall_on_their_time_or_their_event() {
        use crate::engine::Mark;
        let text = "title = \"x\"\n[[lane]]\nstrategy = \"naive\"\n\
            [[caption]]\nat = \"02:00:00\"\ntext = \"start\"\n\
            [[caption]]\non = \"kill\"\ntext = \"kill\"\n";
        let s = Scenario::parse("t", text).unwrap_or_else(|e| panic!("{e}"));
        let events = [CaptionEvent {
            sim: 7907.0,
            kind: Kind::Notice,
            mark: Some(Mark::Kill),
            lane: Some(0),
        }];
        let times = caption_times(&s.captions, &["naive".into()], &events.iter().copied());
        assert_eq!(times, [Some(7200.0), Some(7907.0)]);
        assert_eq!(current_caption(&times, 7500.0), Some(0));
        assert_eq!(current_caption(&times, 7907.0), Some(1));
        assert_eq!(current_caption(&times, 7000.0), None);
        let bad = "title = \"x\"\n[[lane]]\nstrategy = \"naive\"\n[[caption]]\non = \"lunch\"\ntext = \"t\"\n";
        let err = Scenario::parse("t", bad)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("caption 1: on = \"lunch\""), "{err}");
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
