//! What the live screen can ask of its night (`NightCommand`) and what it knows of the night to
//! decide (`NightFacts`): the words between the screen's pure `update` and `LiveNight`, which
//! carries the commands out.

use crate::worker::Strategy;

/// What should happen to the night: `update`'s answer, carried out by `LiveNight::execute` in order.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum NightCommand {
    /// The host reclaims this lane's workers (SIGKILL).
    Kill(usize),
    /// The host reclaims the instance: every lane at once.
    KillAll,
    SetRandomKills(bool),
    /// SIGSTOP the lane's workers, or SIGCONT them if they are hung.
    ToggleHang(usize),
    /// SIGSTOP one running worker of the lane for `engine::HAND_PAUSE_SECS` of the night.
    PauseWorker(usize),
    /// Restart the night's private PostgreSQL cluster now.
    RestartServer,
    /// Lose the answer to the lane's next commit that brings a row (its proxy's).
    LoseAnswer(usize),
    /// The lane runs this strategy from now on: the night starts again on fresh databases.
    SetStrategy(usize, Strategy),
    WipeCheckpoints(usize),
    AddWorker(usize),
    /// A new night from 02:00 on fresh databases (recorded if this one was).
    Restart,
    /// The scenario's own strategies, speed and random kills, from 02:00.
    Reset,
    /// The night starts again from 02:00, recorded into a session file.
    StartRecording,
    /// The recording gets its verdict (if the night has one) and is closed.
    FinishRecording,
    Pause,
    Resume,
    SetSpeed(f64),
    /// The next caption the night has reached, at once.
    NextCaption,
    /// List this lane's duplicated task ids (read from its rows).
    ShowIds(usize),
}

/// What `update` needs to know about the night to decide.
#[derive(Debug, Clone, PartialEq)]
pub struct NightFacts {
    pub lanes: Vec<LaneFacts>,
    /// Lines in the timeline.
    pub timeline: usize,
    pub paused: bool,
    pub random_kills: bool,
    pub seed: u64,
    pub recording: bool,
    /// How many captions the scenario has.
    pub captions: usize,
}

/// What `update` needs to know about one lane.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LaneFacts {
    /// `None` for a lane running the user's own command (`exec`).
    pub strategy: Option<Strategy>,
    /// A worker process exists.
    pub alive: bool,
    pub finished: bool,
    pub workers: usize,
}
