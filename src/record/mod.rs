//! Session recordings: a night as JSON lines (a header, then events and metric samples as they
//! happen, then the verdict), written as it happens; reading one back is `read`'s.
//!
//! The format is versioned (`version` in the header); see README, "Recordings".

use std::fs::File;
use std::io::{self, Seek as _, Write as _};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

mod kills;
mod legacy;
mod read;

pub use self::read::{Recording, RecordingError};
use crate::engine::{Committed, Engine, Entry, Fact, Kind, LaneSnapshot, Mark, Source};
use crate::scenario::Caption;
use crate::verdict::Status;
use crate::warehouse::Inspection;
use crate::worker::Strategy;

/// The `format` field of every recording's header.
pub const FORMAT: &str = "reclaim-session";
/// Real time without an exact look (`Engine::exact_looks`) after which a recording of a night
/// that has them samples the clock's figures all the same: a worker stalled with a write in
/// flight leaves none, and the recording is not left without figures meanwhile.
pub const EXACT_OR_CLOCK: Duration = Duration::from_secs(1);
/// How long a recording waits for the night's first look while its workers start (a debug
/// build beside a loaded machine's other work, or under a CPU quota, can take seconds) before
/// it samples the clock instead: as long as the clock waits for any process.
const START_WAIT: Duration = Duration::from_secs(8);
/// The format version this build writes, and the only one it reads.
pub const VERSION: u32 = 1;
/// Real time between two metric samples at most.
pub const SAMPLE_EVERY: Duration = Duration::from_millis(100);
/// Real time between two metric samples at least: a sample each second of the night's clock
/// (what a replay at that second shows), but a night at full speed, whose clock runs through
/// many seconds a millisecond, is not written out a second at a time.
pub const SAMPLE_AT_MOST_EVERY: Duration = Duration::from_millis(2);

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
    /// Written `strategy`, as it always was: a strategy's name, or `exec`.
    pub strategy: WorkerKind,
    pub items: u64,
    pub db: PathBuf,
    /// Its items reach a vendor (a side effect, an outbox's relay, an exec job's `--vendor`):
    /// its samples then hold the messages there. Absent (false) in recordings made before it
    /// was written, where an outbox lane still says so by its strategy.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub vendor: bool,
}

impl LaneInfo {
    /// Whether the lane's items reached a vendor, as the header tells.
    #[must_use]
    pub fn reaches_vendor(&self) -> bool {
        self.vendor || self.strategy == WorkerKind::Strategy(Strategy::Outbox)
    }
}

/// Who did a recorded lane's work: one of reclaim's strategies, or someone else's job (`exec`).
/// A recording names it by its word, so a name this build does not know (a strategy of another
/// reclaim) still reads, and is refused only where it is needed (`shrink`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "String", from = "String")]
pub enum WorkerKind {
    Strategy(Strategy),
    Exec,
    Unknown(String),
}

impl WorkerKind {
    /// The lane worker a night's lane runs.
    #[must_use]
    pub fn of(worker: &crate::engine::LaneWorker) -> Self {
        worker.strategy().map_or(Self::Exec, Self::Strategy)
    }

    /// Its word in the recording: `naive`, `guarded`, ..., `exec`.
    #[must_use]
    pub fn name(&self) -> &str {
        match self {
            Self::Strategy(strategy) => strategy.name(),
            Self::Exec => crate::engine::EXEC_LABEL,
            Self::Unknown(name) => name,
        }
    }
}

impl From<String> for WorkerKind {
    fn from(name: String) -> Self {
        if name == crate::engine::EXEC_LABEL {
            return Self::Exec;
        }
        Strategy::from_name(&name).map_or(Self::Unknown(name), Self::Strategy)
    }
}

impl From<WorkerKind> for String {
    fn from(worker: WorkerKind) -> Self {
        worker.name().to_string()
    }
}

impl std::fmt::Display for WorkerKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
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
    /// What the line says as data (on an `item` event what had committed, on a notice a hang,
    /// a resume, a death on its own); absent where nothing reads it back, and on every line of a
    /// recording made before facts were recorded (see `fact`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fact: Option<Fact>,
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
            fact: entry.fact.clone(),
        }
    }

    /// What the line says as data: the recorded fact, or, in a recording made before facts were
    /// recorded, what the line's words say (`legacy`, the one reader of a timeline sentence).
    #[must_use]
    pub fn fact(&self) -> Option<Fact> {
        (self.fact.clone()).or_else(|| legacy::fact(self.kind, self.mark, &self.text))
    }

    /// What had committed when the worker died, on an `item` event.
    #[must_use]
    pub fn last_committed(&self) -> Option<Committed> {
        match self.fact()? {
            Fact::Committed(committed) => Some(committed),
            Fact::Hung
            | Fact::Resumed
            | Fact::DiedOnItsOwn
            | Fact::AtCrashPoint
            | Fact::PastQueue => None,
        }
    }

    /// The line as the timeline shows it.
    #[must_use]
    pub fn line(&self, lane_name: Option<&str>, width: usize) -> String {
        crate::engine::timeline_line(
            crate::base::clock::SimTime(self.sim),
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
    /// `compare`: the lane's tables against its undisturbed night's, in a few words (`state
    /// the same`, `state differs: accounts 2 rows`); `None` where not compared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    /// Those tables differ from the undisturbed night's: the lane went wrong by its effects.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub state_differs: bool,
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
            state: None,
            state_differs: false,
        }
    }

    /// The lane's tables compared with its undisturbed night's (`compare`): said beside the
    /// rows' verdict.
    #[must_use]
    pub fn compared(self, comparison: &crate::verdict::compare::Comparison) -> Self {
        // What the undisturbed nights disagreed on was not compared: said, not passed over.
        let odd = &comparison.nondeterministic;
        let unjudged: Vec<String> = (odd.columns.iter().map(ToString::to_string))
            .chain(
                odd.tables
                    .iter()
                    .map(|t| crate::base::text::escape_controls(t)),
            )
            .collect();
        let said = match unjudged.as_slice() {
            [] => comparison.short(),
            names => format!(
                "{} (not compared: {})",
                comparison.short(),
                names.join(", ")
            ),
        };
        Self {
            state: Some(said),
            state_differs: !comparison.diffs.is_empty(),
            ..self
        }
    }

    /// Completed, its rows right, and its tables (where compared) the undisturbed night's.
    #[must_use]
    pub fn is_ok(&self) -> bool {
        self.completed && self.derived_status.is_ok() && !self.state_differs
    }

    /// A recorded lane's verdict as its figures at one moment give it (`snap`, a sample's):
    /// what a replay, its slides and `replay --check` show, whatever the recording's `end` line
    /// says. `claimed` and `completed` are the end line's.
    #[must_use]
    pub fn from_sample(
        snap: &LaneSnapshot,
        items: u64,
        claimed: Option<&str>,
        completed: bool,
    ) -> Self {
        let derived = sample_verdict(Some(snap), items);
        // The job said it was done: what is still missing was lost, as `run` judges it.
        let derived = if completed {
            derived.once_ended()
        } else {
            derived
        };
        Self {
            items,
            rows: snap.rows,
            distinct: snap.distinct,
            duplicated_task_ids: snap.duplicated,
            missing: items.saturating_sub(snap.distinct),
            derived_status: derived.status(),
            derived: derived.to_string(),
            claimed_status: claimed.map(ToOwned::to_owned),
            completed,
            state: None,
            state_differs: false,
        }
    }
}

/// The verdict a sample's figures give (none: a lane never sampled), by the one rule (`Derived::from_facts`). A sample
/// counts distinct keys of the queue and the rows outside it, so every other row beyond the
/// distinct ones is a duplicate; it cannot see the integrity check.
#[must_use]
pub fn sample_verdict(snap: Option<&LaneSnapshot>, items: u64) -> crate::verdict::Derived {
    let figure = |f: fn(&LaneSnapshot) -> u64| snap.map_or(0, f);
    let (rows, distinct, outside) = (
        figure(|s| s.rows),
        figure(|s| s.distinct),
        figure(|s| s.outside),
    );
    crate::verdict::Derived::from_facts(crate::verdict::RowFacts {
        integrity_ok: true,
        duplicated: figure(|s| s.duplicated),
        extra: (rows.saturating_sub(distinct)).saturating_sub(outside),
        missing: items.saturating_sub(distinct),
        unexpected: outside,
        orphan_checkpoints: 0,
    })
}

/// Appends a night to a file as it happens. Each line is written whole and flushed, so a
/// recording cut short (reclaim killed) is readable up to its last complete line.
#[derive(Debug)]
pub struct Recorder {
    path: PathBuf,
    file: File,
    events_written: usize,
    samples: Sampler,
    ended: bool,
    /// The latest moment a caption of the header is set for (0 when none is).
    last_caption: f64,
    /// The moment of the last sample written: samples never go back in time.
    written_sim: f64,
    /// The night's dead-man's switch, in sim seconds (the header's).
    dead_man: f64,
    /// When the recording began.
    created: Instant,
    /// The last sample written, and the timeline's lines written when it was.
    last_written: Option<Sample>,
    lines_at_sample: usize,
}

impl Recorder {
    /// Creates `path` (it must not exist) and writes the header.
    pub fn create(path: &Path, header: &Header) -> io::Result<Self> {
        let file = File::options().write(true).create_new(true).open(path)?;
        let mut recorder = Self {
            path: path.to_path_buf(),
            file,
            events_written: 0,
            samples: Sampler::default(),
            ended: false,
            written_sim: f64::NEG_INFINITY,
            dead_man: header.dead_man,
            created: Instant::now(),
            last_written: None,
            lines_at_sample: 0,
            last_caption: (header.captions.iter())
                .filter_map(|c| c.at.as_deref().and_then(crate::scenario::parse_clock))
                .fold(0.0, f64::max),
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
        // inside this call. A write that fails part-way (a full disk, `ulimit -f`) is taken
        // back to the last whole line.
        let whole = self.file.stream_position()?;
        let written = self.file.write_all(text.as_bytes());
        if written.is_err() {
            let _ = self.file.set_len(whole);
            let _ = self.file.seek(io::SeekFrom::Start(whole));
        }
        written?;
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
        let new_lines = !lines.is_empty();
        let mut due = Vec::new();
        // Each look whose rows hold one moment, stamped with that moment (in a night looked
        // at by second, one is taken as its last worker on the pace ends, after which it is
        // sampled at the clock).
        for look in engine.exact_looks() {
            let sample = Sample {
                real_ms: look.real_ms,
                sim: look.sim,
                lanes: look.lanes.clone(),
            };
            due.extend(self.samples.due_exact(sample, now, new_lines));
        }
        if engine.looks_exactly() {
            // None in this tick, in a new second: the last sample's figures hold until the next
            // write (a heartbeat a second older), when no line was logged since. A night looked
            // at by second has a look at the end of each.
            if due.is_empty()
                && !engine.looks_by_second()
                && !new_lines
                && self.lines_at_sample == self.events_written
                && let Some(sample) = self.carried(engine, now)
            {
                due.push(self.samples.taken(sample, now));
            }
            // None for a while (a worker that keeps a write in flight, stalled or stopped):
            // the clock's figures, as a night without moments is sampled. Not while the
            // workers are still starting (up to `START_WAIT`): the first look is of the night's
            // start, and a sample at the clock's reading would come before it.
            let quiet = self.samples.quiet_for(now, self.created);
            if due.is_empty()
                && quiet >= EXACT_OR_CLOCK
                && !(quiet < START_WAIT && engine.before_first_look())
            {
                due.push(self.samples.take(engine, now));
            }
        } else {
            due.extend(self.samples.due(engine, now, new_lines));
        }
        for mut sample in due {
            if engine.finished() {
                // Over, the night's figures are its end's: stamped there, not at a clock
                // that runs on while the verdict is read.
                sample.sim = sample.sim.min(self.night_end(engine));
            }
            self.write_sample(sample)?;
        }
        Ok(())
    }

    /// The last sample written, carried to the start of the clock's second: its figures are
    /// still the night's there when no write can have landed since (the clock before the next
    /// write's moment), its heartbeats older by the time passed.
    fn carried(&self, engine: &Engine, now: Instant) -> Option<Sample> {
        let last = self.last_written.as_ref()?;
        let clock = engine.clock().now().0;
        let before_next = engine.next_write().is_none_or(|next| clock < next);
        if engine.finished() || !before_next || clock.floor() <= last.sim.floor() {
            return None;
        }
        // Stamped at the second's start, which it holds as well as the clock's reading (no
        // write between): the same stamp and heartbeat age however far the clock had got.
        Some(Sample {
            real_ms: engine.elapsed(now).as_millis() as u64,
            ..carried_to(last.clone(), clock.floor(), self.dead_man)
        })
    }

    /// Where the night ends: its last line (a `done` is stamped with its work's moment, which
    /// may be ahead of the clock), or its last caption when that comes soon after it.
    fn night_end(&self, engine: &Engine) -> f64 {
        let last_line = (engine.timeline().iter().map(|e| e.sim.0)).fold(0.0, f64::max);
        night_end(last_line, self.last_caption)
    }

    /// Writes `sample`, never before the last one written.
    fn write_sample(&mut self, mut sample: Sample) -> io::Result<()> {
        if sample.sim < self.written_sim {
            sample = carried_to(sample, self.written_sim, self.dead_man);
        }
        self.written_sim = sample.sim;
        self.lines_at_sample = self.events_written;
        self.write(&SessionLine::Sample(sample.clone()))?;
        self.last_written = Some(sample);
        Ok(())
    }

    /// Writes the last sample and the verdict; nothing is written after it.
    pub fn end(&mut self, engine: &Engine, now: Instant, lanes: Vec<LaneEnd>) -> io::Result<()> {
        if self.ended {
            return Ok(());
        }
        self.observe(engine, now)?;
        // The night ends at its last line (or caption), as the live dashboard's does, not at
        // the clock's reading: a headless clock runs on past the last line by however long the
        // verdict took to read (02:19:32 on one run, 02:19:31 on the next). The last sample,
        // every row in, is that moment's, so a slide at the done line's second shows the lane
        // over.
        let mut last = self.samples.take(engine, now);
        let over = self.night_end(engine).max(self.written_sim);
        last.sim = over;
        self.write_sample(last)?;
        self.ended = true;
        self.write(&SessionLine::End(End {
            real_ms: engine.elapsed(now).as_millis() as u64,
            sim: over,
            lanes,
        }))
    }
}

/// How long after its last line a caption set by time may still end a night (the pause's
/// fenced caption comes 5 s after it). One set later, a scenario's mistake or a night cut
/// short, is not waited for: the clock would run on, idle, to it.
pub const CAPTION_AFTER_THE_END: f64 = 60.0;

/// `sample` carried to the later moment `at`: its figures, its watched heartbeats older by the
/// time between. A sample carried to the start of the clock's second; a look written after a
/// later one, which holds from its own moment on (a second's look is stamped with its last
/// write, and a relay's delivery can come after a look at the second's end): kept at its own
/// age, a look of 02:01:03.0 written after one of 02:01:03.999 showed a heartbeat 1 ms old at
/// the end of 02:01:03, where it was 1 s.
fn carried_to(sample: Sample, at: f64, dead_man: f64) -> Sample {
    Sample {
        sim: at,
        lanes: (sample.lanes.into_iter())
            .map(|lane| {
                let age = age_grown(&lane, sample.sim, at);
                lane.aged(age, dead_man)
            })
            .collect(),
        ..sample
    }
}

/// `lane`'s heartbeat age, as it was at `from`, at the later moment `to`: older by the time
/// between while the lane is watched; a lane over keeps the age it ended with.
fn age_grown(lane: &LaneSnapshot, from: f64, to: f64) -> Option<f64> {
    let since = if lane.watched() { to - from } else { 0.0 };
    lane.heartbeat_age.map(|age| age + since)
}

/// Where a night ends, given its last line and its last caption set by time (seconds after
/// midnight): the later, when the caption is at most `CAPTION_AFTER_THE_END` after the line.
#[must_use]
pub fn night_end(last_line: f64, last_caption: f64) -> f64 {
    if last_caption <= last_line + CAPTION_AFTER_THE_END {
        last_line.max(last_caption)
    } else {
        last_line
    }
}

/// When a night's figures are sampled (a recording's, the dashboard's look-back tape): every
/// `SAMPLE_EVERY` of real time and at every new timeline line; between those, each second of
/// the clock and each time a lane's figures move (a row, a restart, a state), so a replay, a
/// slide or a look back at a moment shows that moment's figures, not a sample's seconds
/// before it; never twice within `SAMPLE_AT_MOST_EVERY` of real time but for those.
#[derive(Debug, Default)]
pub struct Sampler {
    next: Option<Instant>,
    last: Option<Taken>,
}

/// The last sample a `Sampler` took.
#[derive(Debug)]
struct Taken {
    /// When it was taken.
    at: Instant,
    /// Its moment on the clock.
    sim: f64,
    lanes: Vec<LaneSnapshot>,
    /// An exact look's (`due_exact`), not the clock's or one carried.
    exact: bool,
}

impl Sampler {
    /// A sample of `engine` if one is due at `now` (`new_lines`: the timeline has lines since
    /// the last).
    pub fn due(&mut self, engine: &Engine, now: Instant, new_lines: bool) -> Option<Sample> {
        self.due_of(now, new_lines, || sample(engine, now))
    }

    /// `make`'s sample if one is due at `now`.
    fn due_of(
        &mut self,
        now: Instant,
        new_lines: bool,
        make: impl FnOnce() -> Sample,
    ) -> Option<Sample> {
        if self.next.is_none_or(|at| now >= at) || new_lines {
            return Some(self.taken(make(), now));
        }
        let last = self.last.as_ref()?;
        if now.duration_since(last.at) < SAMPLE_AT_MOST_EVERY {
            return None;
        }
        let next = make();
        (next.sim.floor() > last.sim.floor() || !same_figures(&last.lanes, &next.lanes))
            .then(|| self.taken(next, now))
    }

    /// `sample`, an exact look's (`Engine::exact_looks`), if it is due: always when its
    /// figures moved (a change dropped would leave a moment of the night unrecorded), or a
    /// heartbeat's beat since a sample of the clock or one carried; else as `due_of` takes the
    /// clock's.
    pub fn due_exact(&mut self, sample: Sample, now: Instant, new_lines: bool) -> Option<Sample> {
        let moved = (self.last.as_ref()).is_none_or(|last| {
            !same_figures(&last.lanes, &sample.lanes) || (!last.exact && !same_beats(last, &sample))
        });
        let taken = if moved {
            Some(self.taken(sample, now))
        } else {
            self.due_of(now, new_lines, || sample)
        };
        if let (Some(_), Some(last)) = (&taken, &mut self.last) {
            last.exact = true;
        }
        taken
    }

    /// Real time since the last sample taken, or since `from` (the recording's start) before
    /// the first.
    #[must_use]
    pub fn quiet_for(&self, now: Instant, from: Instant) -> Duration {
        let since = (self.last.as_ref()).map_or(from, |last| last.at);
        now.saturating_duration_since(since)
    }

    /// A sample of `engine` now, whatever is due.
    pub fn take(&mut self, engine: &Engine, now: Instant) -> Sample {
        self.taken(sample(engine, now), now)
    }

    /// `take` of a sample made already: for tests.
    #[cfg(test)]
    fn take_of(&mut self, now: Instant, sample: Sample) {
        self.taken(sample, now);
    }

    /// `sample`, taken at `now`: not an exact look's unless `due_exact` says so.
    fn taken(&mut self, sample: Sample, now: Instant) -> Sample {
        self.next = Some(now + SAMPLE_EVERY);
        self.last = Some(Taken {
            at: now,
            sim: sample.sim,
            lanes: sample.lanes.clone(),
            exact: false,
        });
        sample
    }
}

/// Whether each lane's heartbeat in `now` is the beat it had in the sample `last`, grown by
/// the time between. A sample of the clock taken while a worker was between its commit and
/// its beat (a loaded machine can hold it there past `EXACT_OR_CLOCK`) has the new row and the
/// old beat; the exact look after it has the same figures and the new beat, and is the one
/// its second must end with (02:09:19 of a side-effects recording: 6.5 s where the night's
/// age was 0.2 s).
fn same_beats(last: &Taken, now: &Sample) -> bool {
    last.lanes.len() == now.lanes.len()
        && last.lanes.iter().zip(&now.lanes).all(|(a, b)| {
            match (age_grown(a, last.sim, now.sim), b.heartbeat_age) {
                (Some(a), Some(b)) => (a - b).abs() < 1e-6,
                (a, b) => a.is_none() && b.is_none(),
            }
        })
}

/// Whether two samples' lanes show the same figures, their heartbeats' ages aside (those move
/// with the clock, and a sample each second keeps them).
fn same_figures(before: &[LaneSnapshot], now: &[LaneSnapshot]) -> bool {
    before.len() == now.len()
        && before.iter().zip(now).all(|(a, b)| {
            LaneSnapshot {
                heartbeat_age: b.heartbeat_age,
                ..a.clone()
            } == *b
        })
}

/// Every lane as it stands at `now`.
#[must_use]
pub fn sample(engine: &Engine, now: Instant) -> Sample {
    let dead_man = engine.config().dead_man;
    let sim = engine.clock().at(now).0;
    Sample {
        real_ms: engine.elapsed(now).as_millis() as u64,
        sim,
        lanes: (engine.lanes().iter())
            .map(|l| l.snapshot_at(dead_man, sim))
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
                name: l.config().name.clone(),
                strategy: WorkerKind::of(&l.config().worker),
                items: l.config().items,
                db: l.config().db.clone(),
                vendor: l.config().needs_vendor(),
            })
            .collect(),
        captions,
        warehouse: engine.config().warehouse().describe(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pause's fenced caption, 5 s after the last line, ends the night; a caption set an
    /// hour after it (a scenario's mistake) does not hold the night open for an hour.
    #[test]
    fn a_caption_soon_after_the_last_line_ends_the_night_one_far_after_does_not() {
        let line = 7285.0;
        let end = |caption: f64| crate::base::clock::SimTime(night_end(line, caption)).to_string();
        assert_eq!(end(7290.0), "02:01:30");
        assert_eq!(end(7200.0), "02:01:25");
        assert_eq!(end(line + 3600.0), "02:01:25");
    }

    fn at(sim: f64, rows: u64, heartbeat: f64) -> Sample {
        Sample {
            real_ms: 0,
            sim,
            lanes: vec![LaneSnapshot {
                heartbeat_age: Some(heartbeat),
                ..LaneSnapshot::of_rows(rows, false)
            }],
        }
    }

    #[test]
    fn a_lane_worker_is_written_as_the_word_it_always_was() {
        for (word, worker) in [
            ("naive", WorkerKind::Strategy(Strategy::Naive)),
            ("two-commit", WorkerKind::Strategy(Strategy::TwoCommit)),
            ("exec", WorkerKind::Exec),
            ("a-later-one", WorkerKind::Unknown("a-later-one".into())),
        ] {
            let json = format!("\"{word}\"");
            assert_eq!(serde_json::to_string(&worker).ok(), Some(json.clone()));
            assert_eq!(serde_json::from_str::<WorkerKind>(&json).ok(), Some(worker));
        }
        let line = r#"{"name":"mine","strategy":"exec","items":7,"db":"w.db"}"#;
        let info: Option<LaneInfo> = serde_json::from_str(line).ok();
        assert_eq!(info.map(|i| i.strategy), Some(WorkerKind::Exec));
    }

    #[test]
    fn a_sample_is_taken_each_second_of_the_clock_and_each_time_the_figures_move() {
        let start = Instant::now();
        let ms = |n: u64| start + Duration::from_millis(n);
        let mut sampler = Sampler::default();
        let mut kept = |now, sample: Sample| -> Option<f64> {
            sampler.due_of(now, false, || sample).map(|s| s.sim)
        };
        // The first is always taken; the same second with the same rows (a heartbeat older) is
        // not; a row in the same second is; a new second is, its figures unchanged.
        assert_eq!(kept(ms(0), at(8121.1, 199, 0.0)), Some(8121.1));
        assert_eq!(kept(ms(5), at(8121.5, 199, 0.4)), None);
        assert_eq!(kept(ms(10), at(8121.6, 200, 0.0)), Some(8121.6));
        assert_eq!(kept(ms(15), at(8122.0, 200, 0.4)), Some(8122.0));
        // Within SAMPLE_AT_MOST_EVERY of the last, nothing moves it.
        assert_eq!(kept(ms(16), at(8123.0, 201, 0.0)), None);
        assert_eq!(kept(ms(18), at(8123.4, 201, 0.0)), Some(8123.4));
        // SAMPLE_EVERY after the last, a sample whatever it shows.
        assert_eq!(kept(ms(120), at(8123.45, 201, 0.05)), Some(8123.45));
        // A new timeline line takes one at once.
        assert_eq!(
            sampler
                .due_of(ms(121), true, || at(8123.46, 201, 0.0))
                .map(|s| s.sim),
            Some(8123.46)
        );
    }

    #[test]
    fn a_look_written_after_a_later_one_is_stamped_there_its_heartbeats_older() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("r.jsonl");
        let line = super::read::tests::header_line();
        let mut header: Header = match serde_json::from_str(&line) {
            Ok(SessionLine::Header(header)) => header,
            other => panic!("{other:?}"),
        };
        header.lanes.push(header.lanes[0].clone());
        let mut recorder = Recorder::create(&path, &header).unwrap_or_else(|e| panic!("{e}"));
        // A running lane and one over, which keeps the age it ended with.
        let lanes = |sim, age| {
            let mut sample = at(sim, 10, age);
            sample.lanes.push(LaneSnapshot {
                heartbeat_age: Some(4.0),
                ..LaneSnapshot::of_rows(10, true)
            });
            sample
        };
        // The look at the second's end, then the second's own look, stamped with its write
        // (the relay's delivery came between them).
        for sample in [lanes(7263.999, 0.999), lanes(7263.0, 0.0)] {
            recorder
                .write_sample(sample)
                .unwrap_or_else(|e| panic!("{e}"));
        }
        let recording = Recording::load(&path).unwrap_or_else(|e| panic!("{e}"));
        let last = recording
            .samples
            .last()
            .unwrap_or_else(|| panic!("no sample"));
        assert_eq!((last.sim * 1000.0).round() as i64, 7_263_999);
        // The running lane's beat, 0.999 s old there; the lane over keeps its 4 s.
        let ages: Vec<i64> = (last.lanes.iter())
            .map(|l| (l.heartbeat_age.unwrap_or(-1.0) * 1000.0).round() as i64)
            .collect();
        assert_eq!(ages, [999, 4000]);
    }

    #[test]
    fn an_exact_look_after_a_sample_of_the_clock_is_kept_when_a_beat_moved_between() {
        let start = Instant::now();
        let ms = |n: u64| start + Duration::from_millis(n);
        let mut sampler = Sampler::default();
        // The clock's figures, taken while the worker stood between its commit (row 86) and
        // its beat: the beat still that of row 85, 6.3 s before.
        sampler.take_of(ms(0), at(7759.8, 86, 6.3));
        // The exact look at the same moment, its beat the write's: kept, however soon.
        let kept = |sampler: &mut Sampler, now, sample| {
            sampler.due_exact(sample, now, false).map(|s| s.sim)
        };
        assert_eq!(kept(&mut sampler, ms(1), at(7759.8, 86, 0.0)), Some(7759.8));
        // Exact looks of the same beat, its age grown: not within SAMPLE_AT_MOST_EVERY.
        assert_eq!(kept(&mut sampler, ms(2), at(7759.9, 86, 0.1)), None);
        // A sample of the clock whose beat is the look's, grown: the next look is not kept
        // for it either.
        sampler.take_of(ms(30), at(7759.95, 86, 0.15));
        assert_eq!(kept(&mut sampler, ms(31), at(7759.99, 86, 0.19)), None);
    }
}
