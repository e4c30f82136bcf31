//! Session recordings: a night as JSON lines (a header, then events and metric samples as they
//! happen, then the verdict), written as it happens; reading one back is `read`'s.
//!
//! The format is versioned (`version` in the header); see README, "Recordings".

use std::fs::File;
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

mod read;

pub(crate) use self::read::committed_task;
pub use self::read::{Recording, RecordingError};
use crate::engine::{Engine, Entry, Kind, LaneSnapshot, Mark, Source};
use crate::scenario::Caption;
use crate::store::inspect::Inspection;
use crate::verdict::Status;

/// The `format` field of every recording's header.
pub const FORMAT: &str = "reclaim-session";
/// The format version this build writes, and the only one it reads.
pub const VERSION: u32 = 1;
/// Real time between two metric samples.
pub const SAMPLE_EVERY: Duration = Duration::from_millis(100);

/// One line of a recording.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum SessionLine {
    Header(Header),
    Event(Event),
    Sample(Sample),
    End(End),
}

/// What the night was: written first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Header {
    pub format: String,
    pub version: u32,
    /// The reclaim version that recorded it.
    pub reclaim: String,
    /// Seconds since the Unix epoch when the night began.
    pub started_unix: f64,
    pub title: String,
    /// The scenario's name or path, or the `run` command line.
    pub scenario: String,
    pub seed: u64,
    pub scale: f64,
    pub dead_man: f64,
    pub lanes: Vec<LaneInfo>,
    #[serde(default)]
    pub captions: Vec<Caption>,
    /// The night's PostgreSQL (`postgres (private cluster)` or the server without its
    /// password); absent for SQLite.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warehouse: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LaneInfo {
    pub name: String,
    pub strategy: String,
    pub items: u64,
    pub db: PathBuf,
}

/// A timeline line: spawn, signal, exit, restart, hang/resume, alert, the worker's own lines.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    pub real_ms: u64,
    pub sim: f64,
    pub lane: Option<usize>,
    pub source: Source,
    pub kind: Kind,
    pub text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mark: Option<Mark>,
}

impl Event {
    #[must_use]
    pub fn from_entry(entry: &Entry) -> Self {
        Self {
            real_ms: entry.real_ms,
            sim: entry.sim.0,
            lane: entry.lane,
            source: entry.source,
            kind: entry.kind,
            text: entry.text.clone(),
            mark: entry.mark,
        }
    }

    /// The line as the timeline shows it.
    #[must_use]
    pub fn line(&self, lane_name: Option<&str>, width: usize) -> String {
        crate::engine::timeline_line(
            crate::clock::SimTime(self.sim),
            lane_name.map(|name| (name, width)),
            self.source,
            self.kind,
            &self.text,
        )
    }
}

/// Every lane's figures at one moment: what the charts are drawn from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    pub real_ms: u64,
    pub sim: f64,
    pub lanes: Vec<LaneSnapshot>,
}

/// The night's verdict, derived from the rows when it ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct End {
    pub real_ms: u64,
    pub sim: f64,
    pub lanes: Vec<LaneEnd>,
}

/// One lane's verdict, from `inspect` on its database.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LaneEnd {
    pub items: u64,
    pub rows: u64,
    pub distinct: u64,
    pub duplicated_task_ids: u64,
    pub missing: u64,
    /// `ok`, `data_wrong`, `incomplete`, `corrupt`.
    pub derived_status: Status,
    /// `DATA WRONG (112 duplicated task ids)`.
    pub derived: String,
    pub claimed_status: Option<String>,
    pub completed: bool,
}

impl LaneEnd {
    #[must_use]
    pub fn from_inspection(
        inspection: &Inspection,
        claimed: Option<&str>,
        completed: bool,
    ) -> Self {
        let derived = inspection.derived();
        // A job that ended with a key of its queue still missing has lost it.
        let derived = if completed {
            derived.once_ended()
        } else {
            derived
        };
        Self {
            items: inspection.items,
            rows: inspection.rows,
            distinct: inspection.distinct,
            duplicated_task_ids: inspection.duplicated_task_ids,
            missing: inspection.missing,
            derived_status: derived.status(),
            derived: derived.to_string(),
            claimed_status: claimed.map(ToOwned::to_owned),
            completed,
        }
    }

    #[must_use]
    pub fn is_ok(&self) -> bool {
        self.completed && self.derived_status.is_ok()
    }
}

/// Appends a night to a file as it happens. Each line is written whole and flushed, so a
/// recording cut short (reclaim killed) is readable up to its last complete line.
#[derive(Debug)]
pub struct Recorder {
    path: PathBuf,
    file: File,
    events_written: usize,
    next_sample: Option<Instant>,
    ended: bool,
}

impl Recorder {
    /// Creates `path` (it must not exist) and writes the header.
    pub fn create(path: &Path, header: &Header) -> io::Result<Self> {
        let file = File::options().write(true).create_new(true).open(path)?;
        let mut recorder = Self {
            path: path.to_path_buf(),
            file,
            events_written: 0,
            next_sample: None,
            ended: false,
        };
        recorder.write(&SessionLine::Header(header.clone()))?;
        Ok(recorder)
    }

    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn write(&mut self, line: &SessionLine) -> io::Result<()> {
        let mut text = serde_json::to_string(line).map_err(io::Error::other)?;
        text.push('\n');
        // One write per line: a reader never sees half of a line unless the process died
        // inside this call.
        self.file.write_all(text.as_bytes())?;
        self.file.flush()
    }

    /// Writes the engine's new timeline entries, and a sample when one is due.
    pub fn observe(&mut self, engine: &Engine, now: Instant) -> io::Result<()> {
        let entries = &engine.timeline()[self.events_written..];
        let lines: Vec<SessionLine> = entries
            .iter()
            .map(|e| SessionLine::Event(Event::from_entry(e)))
            .collect();
        self.events_written = engine.timeline().len();
        for line in &lines {
            self.write(line)?;
        }
        if self.next_sample.is_none_or(|at| now >= at) || !lines.is_empty() {
            self.sample(engine, now)?;
        }
        Ok(())
    }

    fn sample(&mut self, engine: &Engine, now: Instant) -> io::Result<()> {
        self.next_sample = Some(now + SAMPLE_EVERY);
        self.write(&SessionLine::Sample(sample(engine, now)))
    }

    /// Writes the last sample and the verdict; nothing is written after it.
    pub fn end(&mut self, engine: &Engine, now: Instant, lanes: Vec<LaneEnd>) -> io::Result<()> {
        if self.ended {
            return Ok(());
        }
        self.observe(engine, now)?;
        self.sample(engine, now)?;
        self.ended = true;
        self.write(&SessionLine::End(End {
            real_ms: engine.elapsed(now).as_millis() as u64,
            sim: engine.clock().at(now).0,
            lanes,
        }))
    }
}

/// Every lane as it stands at `now`.
#[must_use]
pub fn sample(engine: &Engine, now: Instant) -> Sample {
    let dead_man = engine.config().dead_man;
    Sample {
        real_ms: engine.elapsed(now).as_millis() as u64,
        sim: engine.clock().at(now).0,
        lanes: engine
            .lanes()
            .iter()
            .map(|l| l.snapshot(dead_man))
            .collect(),
    }
}

/// The header for a night the engine is about to run.
#[must_use]
pub fn header(
    engine: &Engine,
    title: &str,
    scenario: &str,
    seed: u64,
    captions: Vec<Caption>,
) -> Header {
    Header {
        format: FORMAT.into(),
        version: VERSION,
        reclaim: env!("CARGO_PKG_VERSION").into(),
        started_unix: crate::heartbeat::unix_now(),
        title: title.into(),
        scenario: scenario.into(),
        seed,
        scale: engine.config().scale,
        dead_man: engine.config().dead_man,
        lanes: engine
            .lanes()
            .iter()
            .map(|l| LaneInfo {
                name: l.config.name.clone(),
                strategy: l.config.worker.label().into(),
                items: l.config.items,
                db: l.config.db.clone(),
            })
            .collect(),
        captions,
        warehouse: crate::warehouse::describe_active(),
    }
}
