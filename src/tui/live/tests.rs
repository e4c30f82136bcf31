//! Unit tests of the live screen's pure decisions: `LiveApp::update` (what a key does to the
//! night) and `LiveApp::route` (what it does to the screen: look back, lecture stop, help).

use std::time::Instant;

use super::app::next_strategy;
use super::*;
use crate::base::limits::MAX_WORKERS;
use crate::tui::night::{LaneFacts, NightFacts};
use crate::worker::Strategy;

fn lane(alive: bool) -> LaneFacts {
    LaneFacts {
        strategy: Some(Strategy::Naive),
        alive,
        finished: false,
        workers: 1,
    }
}

/// Two lanes running, ten lines of timeline, one caption not yet reached.
fn facts() -> NightFacts {
    NightFacts {
        lanes: vec![lane(true), lane(true)],
        timeline: 10,
        paused: false,
        random_kills: false,
        seed: 214,
        recording: false,
        captions: 2,
    }
}

fn notice(app: &LiveApp) -> Option<&str> {
    app.chrome.notice()
}

#[test]
fn k_kills_the_selected_lane_and_only_a_live_one() {
    let mut app = LiveApp::default();
    let now = Instant::now();
    let mut f = facts();
    assert_eq!(
        app.update(KeyAction::KillLane, &f, now),
        [NightCommand::Kill(0)]
    );
    app.update(KeyAction::NextLane, &f, now);
    assert_eq!(
        app.update(KeyAction::KillLane, &f, now),
        [NightCommand::Kill(1)]
    );
    f.lanes[1].alive = false;
    assert_eq!(app.update(KeyAction::KillLane, &f, now), []);
    assert_eq!(notice(&app), Some("no worker is running in this lane"));
    assert_eq!(
        app.update(KeyAction::KillAll, &f, now),
        [NightCommand::KillAll]
    );
}

#[test]
fn speed_keys_step_within_bounds_and_tell_the_night() {
    let mut app = LiveApp::default();
    let now = Instant::now();
    let f = facts();
    assert_eq!(
        app.update(KeyAction::SpeedUp, &f, now),
        [NightCommand::SetSpeed(2.0)]
    );
    assert_eq!(notice(&app), Some("speed 2x"));
    for _ in 0..10 {
        app.update(KeyAction::SpeedUp, &f, now);
    }
    assert_eq!(
        app.update(KeyAction::SpeedUp, &f, now),
        [NightCommand::SetSpeed(16.0)]
    );
    for _ in 0..20 {
        app.update(KeyAction::SpeedDown, &f, now);
    }
    assert_eq!(
        app.update(KeyAction::SpeedDown, &f, now),
        [NightCommand::SetSpeed(0.125)]
    );
}

#[test]
fn space_pauses_a_running_night_and_resumes_a_paused_one() {
    let mut app = LiveApp::default();
    let now = Instant::now();
    let mut f = facts();
    assert_eq!(
        app.update(KeyAction::TogglePause, &f, now),
        [NightCommand::Pause]
    );
    f.paused = true;
    assert_eq!(
        app.update(KeyAction::TogglePause, &f, now),
        [NightCommand::Resume]
    );
}

#[test]
fn help_closes_on_the_next_key_which_does_nothing_else_and_quit_closes_the_recording() {
    let mut app = LiveApp::default();
    let now = Instant::now();
    let f = facts();
    assert_eq!(app.update(KeyAction::ToggleHelp, &f, now), []);
    assert!(app.chrome.help);
    assert_eq!(app.update(KeyAction::ToggleHelp, &f, now), []);
    assert!(!app.chrome.help);
    app.update(KeyAction::ToggleHelp, &f, now);
    assert_eq!(
        app.update(KeyAction::KillLane, &f, now),
        [],
        "k only closed the help"
    );
    assert!(!app.chrome.help);
    assert_eq!(
        app.update(KeyAction::KillLane, &f, now),
        [NightCommand::Kill(0)]
    );
    assert!(!app.chrome.quit);
    assert_eq!(
        app.update(KeyAction::Quit, &f, now),
        [NightCommand::FinishRecording]
    );
    assert!(app.chrome.quit);
}

#[test]
fn s_cycles_the_selected_lanes_strategy_and_the_timeline_follows_the_new_night() {
    let mut app = LiveApp::default();
    let now = Instant::now();
    let mut f = facts();
    f.lanes[1].strategy = Some(Strategy::Fenced);
    app.update(KeyAction::NextLane, &f, now);
    app.update(KeyAction::ScrollUp, &f, now);
    assert_eq!(app.chrome.scroll, 3);
    assert_eq!(
        app.update(KeyAction::CycleStrategy, &f, now),
        [NightCommand::SetStrategy(1, Strategy::Naive)]
    );
    assert_eq!(app.chrome.scroll, 0);
    assert_eq!(app.chrome.selected, 1);
}

#[test]
fn reset_puts_speed_and_selection_back_and_restarts() {
    let mut app = LiveApp::default();
    let now = Instant::now();
    let f = facts();
    app.update(KeyAction::SpeedUp, &f, now);
    app.update(KeyAction::NextLane, &f, now);
    assert_eq!(app.update(KeyAction::Reset, &f, now), [NightCommand::Reset]);
    assert!((app.chrome.speed - 1.0).abs() < f64::EPSILON);
    assert_eq!(app.chrome.selected, 0);
    assert_eq!(
        app.update(KeyAction::Restart, &f, now),
        [NightCommand::Restart]
    );
}

#[test]
fn o_starts_a_recording_or_finishes_the_one_running() {
    let mut app = LiveApp::default();
    let now = Instant::now();
    let mut f = facts();
    assert_eq!(
        app.update(KeyAction::ToggleRecord, &f, now),
        [NightCommand::StartRecording]
    );
    f.recording = true;
    assert_eq!(
        app.update(KeyAction::ToggleRecord, &f, now),
        [NightCommand::FinishRecording]
    );
}

#[test]
fn random_kills_toggle_and_say_the_seed() {
    let mut app = LiveApp::default();
    let now = Instant::now();
    let mut f = facts();
    assert_eq!(
        app.update(KeyAction::ToggleRandomKills, &f, now),
        [NightCommand::SetRandomKills(true)]
    );
    assert_eq!(notice(&app), Some("random kills on (seed 214)"));
    f.random_kills = true;
    assert_eq!(
        app.update(KeyAction::ToggleRandomKills, &f, now),
        [NightCommand::SetRandomKills(false)]
    );
    assert_eq!(notice(&app), Some("random kills off (seed 214)"));
}

#[test]
fn a_worker_is_added_only_to_a_running_lane_below_the_limit() {
    let mut app = LiveApp::default();
    let now = Instant::now();
    let mut f = facts();
    assert_eq!(
        app.update(KeyAction::AddWorker, &f, now),
        [NightCommand::AddWorker(0)]
    );
    f.lanes[0].workers = MAX_WORKERS;
    assert_eq!(app.update(KeyAction::AddWorker, &f, now), []);
    assert_eq!(notice(&app), Some("at most 64 workers per lane"));
    f.lanes[0].workers = 1;
    f.lanes[0].finished = true;
    assert_eq!(app.update(KeyAction::AddWorker, &f, now), []);
    assert_eq!(
        notice(&app),
        Some("this lane has finished; n starts the night again")
    );
}

#[test]
fn c_asks_the_night_for_its_next_caption_and_says_when_there_are_none() {
    let mut app = LiveApp::default();
    let now = Instant::now();
    let mut f = facts();
    assert_eq!(
        app.update(KeyAction::NextCaption, &f, now),
        [NightCommand::NextCaption]
    );
    f.captions = 0;
    assert_eq!(app.update(KeyAction::NextCaption, &f, now), []);
    assert_eq!(notice(&app), Some("this scenario has no captions"));
}

#[test]
fn i_asks_for_the_selected_lanes_duplicated_ids() {
    let mut app = LiveApp::default();
    let now = Instant::now();
    let f = facts();
    app.update(KeyAction::NextLane, &f, now);
    assert_eq!(
        app.update(KeyAction::ShowIds, &f, now),
        [NightCommand::ShowIds(1)]
    );
}

#[test]
fn strategies_cycle_through_all_seven() {
    let mut s = Strategy::Naive;
    let mut seen = Vec::new();
    for _ in 0..7 {
        s = next_strategy(s);
        seen.push(s);
    }
    assert_eq!(
        seen,
        [
            Strategy::TwoCommit,
            Strategy::Keyed,
            Strategy::Guarded,
            Strategy::Outbox,
            Strategy::Claim,
            Strategy::Fenced,
            Strategy::Naive
        ]
    );
}

const LIVE: ScreenFacts = ScreenFacts {
    looking_back: false,
    at_stop: false,
};
const LOOKING_BACK: ScreenFacts = ScreenFacts {
    looking_back: true,
    at_stop: false,
};
const AT_STOP: ScreenFacts = ScreenFacts {
    looking_back: false,
    at_stop: true,
};

#[test]
fn b_and_the_event_keys_look_back_and_the_look_back_takes_every_key_but_now_and_quit() {
    let mut app = LiveApp::default();
    let now = Instant::now();
    let f = facts();
    for action in [KeyAction::ScrubBack, KeyAction::PrevEvent] {
        assert_eq!(
            app.route(action, LIVE, &f, now),
            [LiveEffect::LookBack(action)]
        );
    }
    // Looking back, the replay has the keys: scrubbing, stepping, its own help, its lanes.
    for action in [
        KeyAction::ScrubBack,
        KeyAction::ScrubForward,
        KeyAction::NextEvent,
        KeyAction::JumpStart,
        KeyAction::ToggleHelp,
        KeyAction::NextLane,
    ] {
        assert_eq!(
            app.route(action, LOOKING_BACK, &f, now),
            [LiveEffect::Review(action)]
        );
    }
    assert_eq!(
        app.route(KeyAction::BackToNow, LOOKING_BACK, &f, now),
        [LiveEffect::BackToNow]
    );
    // Quitting from a look back leaves it, then closes the recording as from the live night.
    assert_eq!(
        app.route(KeyAction::Quit, LOOKING_BACK, &f, now),
        [
            LiveEffect::EndReview,
            LiveEffect::Night(NightCommand::FinishRecording)
        ]
    );
    assert!(app.chrome.quit);
}

#[test]
fn space_at_a_lectures_stop_steps_the_stop_and_elsewhere_pauses() {
    let mut app = LiveApp::default();
    let now = Instant::now();
    let mut f = facts();
    f.paused = true;
    assert_eq!(
        app.route(KeyAction::TogglePause, AT_STOP, &f, now),
        [LiveEffect::StepStop]
    );
    assert_eq!(
        app.route(KeyAction::TogglePause, LIVE, &f, now),
        [LiveEffect::Night(NightCommand::Resume)]
    );
    // Over the help, space only closes it, even at a stop.
    app.route(KeyAction::ToggleHelp, AT_STOP, &f, now);
    assert!(app.chrome.help);
    assert_eq!(app.route(KeyAction::TogglePause, AT_STOP, &f, now), []);
    assert!(!app.chrome.help);
    // The other keys at a stop act as ever.
    assert_eq!(
        app.route(KeyAction::KillLane, AT_STOP, &f, now),
        [LiveEffect::Night(NightCommand::Kill(0))]
    );
}

#[test]
fn the_help_pauses_a_running_night_and_not_a_paused_one() {
    let mut app = LiveApp::default();
    let now = Instant::now();
    let mut f = facts();
    assert_eq!(
        app.route(KeyAction::ToggleHelp, LIVE, &f, now),
        [LiveEffect::PauseForHelp]
    );
    assert!(app.chrome.help);
    // `?` again closes it: nothing to pause.
    assert_eq!(app.route(KeyAction::ToggleHelp, LIVE, &f, now), []);
    f.paused = true;
    assert_eq!(app.route(KeyAction::ToggleHelp, LIVE, &f, now), []);
    assert!(app.chrome.help);
}

#[test]
fn i_reads_the_ids_for_the_screen_and_the_night_keys_go_to_the_night() {
    let mut app = LiveApp::default();
    let now = Instant::now();
    let f = facts();
    app.route(KeyAction::NextLane, LIVE, &f, now);
    assert_eq!(
        app.route(KeyAction::ShowIds, LIVE, &f, now),
        [LiveEffect::ShowIds(1)]
    );
    assert_eq!(
        app.route(KeyAction::KillAll, LIVE, &f, now),
        [LiveEffect::Night(NightCommand::KillAll)]
    );
    assert_eq!(
        app.route(KeyAction::Restart, LIVE, &f, now),
        [LiveEffect::Night(NightCommand::Restart)]
    );
    // The chrome's own keys change the screen only.
    assert_eq!(app.route(KeyAction::ScrollUp, LIVE, &f, now), []);
    assert_eq!(app.route(KeyAction::NextLane, LIVE, &f, now), []);
}
