//! The dashboard's view model: plain data, built from the engine each frame (or from a fixed
//! state in tests), and rendered without any I/O.

use crate::base::clock::SimTime;
pub use crate::engine::{StateKind, Tone};
use crate::tui::keymap::Mode;
use crate::verdict::Symptom;

/// Everything one frame shows.
#[derive(Debug, Clone, PartialEq)]
#[allow(clippy::struct_excessive_bools)] // Reason: independent facts of one frame, each its own.
pub struct Dashboard {
    pub title: String,
    pub scenario: String,
    pub clock: SimTime,
    pub speed: f64,
    pub paused: bool,
    pub seed: u64,
    pub random_kills: bool,
    pub lanes: Vec<LaneView>,
    pub selected: usize,
    /// The selected lane takes the whole width, with larger charts (`z`, for a projector).
    pub zoom: bool,
    /// The shared timeline, oldest first, already formatted, each line with how loudly to show
    /// it (from its kind, never from its words).
    pub timeline: Vec<(String, Tone)>,
    /// Lines scrolled back from the newest; 0 follows the night.
    pub timeline_scroll: usize,
    /// Which rows of the postmortem's symptom table have been observed.
    pub symptoms: Vec<(Symptom, bool)>,
    pub help: bool,
    /// A one-line notice (the result of the last key), if any.
    pub notice: Option<String>,
    /// The x-axis end, in sim seconds since 02:00, shared by every lane's charts.
    pub x_max: f64,
    pub db_dir: String,
    pub mode: Mode,
    /// The teaching caption for this moment, if the scenario has one.
    pub caption: Option<String>,
    /// The session file being recorded, if any.
    pub recording: Option<String>,
    /// Where a replay stands, when this is one.
    pub replay: Option<ReplayBar>,
    /// The duplicated task ids of a lane, when the user asked for them (`i`).
    pub ids: Option<IdsView>,
    /// Lecture mode's line: where the night has stopped and why, or that it plays on to the
    /// next stop. `None` outside lecture mode.
    pub lecture: Option<LectureLine>,
    /// The night's PostgreSQL, as the header names it; `None` on SQLite (nothing shown).
    pub warehouse: Option<String>,
}

/// Lecture mode's line, in full and in brief (for a narrow window).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LectureLine {
    /// Stopped at a moment (rather than playing on, or paused by hand).
    pub stopped: bool,
    pub full: String,
    pub brief: String,
    /// How many reasons it stopped for (0 when not stopped).
    pub reasons: usize,
}

/// A lane's task ids written more than once, one line each: `task-000  x2  pid-1, pid-2`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdsView {
    pub lane: String,
    /// The lane's database, for the `inspect --db ... --ids` that lists them all.
    pub db: String,
    pub lines: Vec<String>,
    /// How many duplicated ids there are in all (`lines` may hold fewer).
    pub total: u64,
}

/// A replay's position in its night.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayBar {
    pub end: SimTime,
    pub playing: bool,
    /// The recording ended early (cut short or torn).
    pub partial: bool,
}

/// One lane's panel.
#[derive(Debug, Clone, PartialEq)]
pub struct LaneView {
    pub name: String,
    pub strategy: String,
    /// `running pid 1234`, `killed by SIGKILL, restarting`, `hung (SIGSTOP)`, `done`, ...
    pub state: String,
    pub state_kind: StateKind,
    /// A worker process exists (the postmortem's health check).
    pub alive: bool,
    /// The heartbeat is younger than the dead-man's threshold.
    pub progress: bool,
    pub task: Option<String>,
    pub restarts: u32,
    pub kills: u32,
    pub workers: usize,
    pub items: u64,
    pub rows: u64,
    pub distinct: u64,
    pub duplicated: u64,
    pub checkpoints: Option<u64>,
    /// Messages at the vendor, for a lane whose items leave the database.
    pub messages: Option<crate::fake_vendor::Counts>,
    pub series: Series,
    /// Kill and restart moments, sim seconds since 02:00.
    pub markers: Vec<Marker>,
    /// Heartbeat age in sim seconds, if known.
    pub heartbeat_age: Option<f64>,
    /// An exec lane's job keeps no heartbeat file: there is no progress signal to show.
    pub no_heartbeat: bool,
    pub dead_man: f64,
    /// `runner heartbeat stale: 312s` while the switch fires.
    pub alert: Option<String>,
    /// The worker's `done` line, if it printed one.
    pub claimed: Option<String>,
    /// The status derived from the rows.
    pub derived: String,
    pub derived_ok: Option<bool>,
    /// Why claimed and derived disagree, when they do.
    pub disagreement: Option<String>,
    /// `compare`: the lane's tables against its undisturbed night's once it is over, and
    /// whether they differ (`None`: not compared).
    pub tables: Option<(String, bool)>,
}

/// The lane's curves over sim time (seconds since 02:00), downsampled to bounded size.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Series {
    pub rows: Vec<(f64, f64)>,
    pub distinct: Vec<(f64, f64)>,
    pub duplicated: Vec<(f64, f64)>,
    pub checkpoints: Vec<(f64, f64)>,
    pub heartbeat_age: Vec<(f64, f64)>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Marker {
    pub at: f64,
    pub kind: MarkerKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MarkerKind {
    Kill,
    Restart,
}
