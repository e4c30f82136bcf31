//! Unit and snapshot tests of the replay: scrubbing, stepping, playing, lecture stops, captions.

use super::*;
use crate::engine::{ClaimedDone, LaneSnapshot, Mark, Source, StateKind};
use crate::record::{End, Event, Header, LaneInfo, Sample};
use crate::scenario::Caption;

const KILL: f64 = 707.0;
const RESTART: f64 = 725.0;

/// A naive night, sampled every 10 sim seconds: one row per 6.3 sim seconds, killed at
/// 02:11:47 (707 s) and restarted from task-000 18 s later.
fn samples() -> Vec<Sample> {
    let (kill, restart) = (KILL, RESTART);
    let rows_at = |t: f64| -> u64 {
        if t < restart {
            ((t / 6.3) as u64).min(112)
        } else {
            112 + (((t - restart) / 6.3) as u64).min(200)
        }
    };
    (0..=200)
        .map(|i| {
            let t = f64::from(i) * 10.0;
            let rows = rows_at(t);
            let distinct = rows.min(112).max(rows.saturating_sub(112).min(200));
            let done = rows >= 312;
            Sample {
                real_ms: (t * 10.0) as u64,
                sim: NIGHT_START + t,
                lanes: vec![LaneSnapshot {
                    rows,
                    distinct,
                    duplicated: rows.saturating_sub(112).min(112),
                    outside: 0,
                    checkpoints: None,
                    heartbeat_age: Some(4.0),
                    alive: !done && !(kill..restart).contains(&t),
                    progress: true,
                    stale: false,
                    state: if done {
                        "done".into()
                    } else {
                        "running pid 4242".into()
                    },
                    state_kind: if done {
                        StateKind::Done
                    } else {
                        StateKind::Running
                    },
                    task: Some(crate::task::task_id((rows.max(1) - 1) % 200)),
                    restarts: u32::from(t >= restart),
                    kills: u32::from(t >= kill),
                    workers: 1,
                    messages: None,
                    claimed: done.then(|| ClaimedDone {
                        rows_written: 312,
                        status: "ok".into(),
                    }),
                    restarted_at_zero: t >= restart + 10.0,
                    no_heartbeat: false,
                }],
            }
        })
        .collect()
}

fn recording() -> Recording {
    let (kill, restart) = (KILL, RESTART);
    let samples = samples();
    let event = |t: f64, source, kind: crate::engine::Kind, text: &str, mark| Event {
        real_ms: (t * 10.0) as u64,
        sim: NIGHT_START + t,
        lane: Some(0),
        source,
        kind,
        text: text.into(),
        mark,
        fact: None,
    };
    Recording {
        header: Header {
            format: crate::record::FORMAT.into(),
            version: crate::record::VERSION,
            reclaim: "0.1.0".into(),
            started_unix: 0.0,
            title: "A recorded night".into(),
            scenario: "incident".into(),
            seed: 214,
            scale: 100.0,
            dead_man: 300.0,
            lanes: vec![LaneInfo {
                name: "naive".into(),
                strategy: crate::record::WorkerKind::Strategy(crate::worker::Strategy::Naive),
                items: 200,
                db: "/tmp/night1-1-naive.db".into(),
                vendor: false,
            }],
            captions: vec![Caption {
                at: None,
                on: Some("kill".into()),
                lane: None,
                text: "The host reclaims the instance.".into(),
                notes: None,
            }],
            warehouse: None,
        },
        events: vec![
            event(
                1.0,
                Source::Worker,
                crate::engine::Kind::Start,
                "run_id=(none)  items=200",
                None,
            ),
            event(
                kill,
                Source::Runner,
                crate::engine::Kind::Notice,
                "instance reclaimed by host",
                Some(Mark::Kill),
            ),
            event(
                restart,
                Source::Runner,
                crate::engine::Kind::Notice,
                "supervisor restarts the worker",
                Some(Mark::Restart),
            ),
            event(
                1970.0,
                Source::Worker,
                crate::engine::Kind::Done,
                "rows_written=312  status=ok",
                None,
            ),
        ],
        samples,
        end: Some(End {
            real_ms: 20_000,
            sim: NIGHT_START + 2000.0,
            lanes: vec![LaneEnd {
                items: 200,
                rows: 312,
                distinct: 200,
                duplicated_task_ids: 112,
                missing: 0,
                derived_status: crate::verdict::Status::DataWrong,
                derived: "DATA WRONG (112 duplicated task ids)".into(),
                claimed_status: Some("ok".into()),
                completed: true,
                state: None,
                state_differs: false,
            }],
        }),
        truncated: false,
    }
}

fn screen(app: &ReplayApp) -> String {
    crate::tui::ui::render_text(&app.view(), 100, 30)
}

#[test]
fn scrubbing_shows_the_values_recorded_at_that_moment() {
    let mut app = ReplayApp::new(recording());
    app.seek(NIGHT_START + 700.0);
    let view = app.view();
    // The sample at 700 s: 111 rows, nothing duplicated yet, no verdict.
    assert_eq!(view.clock.to_string(), "02:11:40");
    assert_eq!(view.lanes[0].rows, 111);
    assert_eq!(view.lanes[0].duplicated, 0);
    assert_eq!(view.lanes[0].derived_ok, None);
    assert_eq!(view.timeline.len(), 1);
    insta::assert_snapshot!(screen(&app));

    app.update(KeyAction::ScrubForward, Instant::now())
        .unwrap_or_default();
    let view = app.view();
    assert_eq!(view.clock.to_string(), "02:11:55");
    assert_eq!(view.lanes[0].kills, 1);
    assert_eq!(
        view.caption.as_deref(),
        Some("The host reclaims the instance.")
    );
}

#[test]
fn the_end_shows_the_recorded_verdict() {
    let mut app = ReplayApp::new(recording());
    app.update(KeyAction::JumpEnd, Instant::now())
        .unwrap_or_default();
    let view = app.view();
    assert_eq!(view.lanes[0].rows, 312);
    assert_eq!(
        view.lanes[0].derived,
        "DATA WRONG (112 duplicated task ids)"
    );
    assert_eq!(
        view.lanes[0].claimed.as_deref(),
        Some("rows_written=312 status=ok")
    );
    assert!(
        view.symptoms.iter().all(|(_, seen)| *seen),
        "{:?}",
        view.symptoms
    );
    insta::assert_snapshot!(screen(&app));
}

#[test]
fn stepping_moves_from_event_to_event_and_caption_to_caption() {
    let mut app = ReplayApp::new(recording());
    let now = Instant::now();
    app.update(KeyAction::NextEvent, now).unwrap_or_default();
    assert_eq!(app.view().clock.to_string(), "02:00:01");
    app.update(KeyAction::NextEvent, now).unwrap_or_default();
    assert_eq!(app.view().clock.to_string(), "02:11:47");
    app.update(KeyAction::PrevEvent, now).unwrap_or_default();
    assert_eq!(app.view().clock.to_string(), "02:00:01");
    app.update(KeyAction::NextCaption, now).unwrap_or_default();
    assert_eq!(app.view().clock.to_string(), "02:11:47");
}

#[test]
fn playing_advances_at_the_recorded_scale_and_stops_at_the_end() {
    let mut app = ReplayApp::new(recording());
    let t0 = Instant::now();
    app.tick(t0).unwrap_or_default();
    app.tick(t0 + std::time::Duration::from_secs(2))
        .unwrap_or_default();
    // 2 real seconds at 100 sim seconds per second.
    assert_eq!(app.view().clock.to_string(), "02:03:20");
    // Held at the kill's caption while it is read (`a_replay_holds_each_caption_...`).
    app.tick(t0 + std::time::Duration::from_secs(600))
        .unwrap_or_default();
    assert_eq!(app.view().clock.to_string(), "02:11:47");
    app.tick(t0 + std::time::Duration::from_secs(610))
        .unwrap_or_default();
    app.tick(t0 + std::time::Duration::from_secs(1200))
        .unwrap_or_default();
    let view = app.view();
    assert_eq!(view.clock.to_string(), "02:33:20");
    assert!(view.paused);
}

/// A caption holds the replay at its moment for as long as the live night holds for it: no
/// sim second goes by while it is read (3 s real for a short one), then playing goes on at the
/// recorded pace. Scrubbed back before it, it is held again.
#[test]
fn a_replay_holds_each_caption_as_long_as_the_live_night() {
    let secs = std::time::Duration::from_secs_f64;
    let mut app = ReplayApp::new(recording());
    let t0 = Instant::now();
    app.tick(t0).unwrap_or_default();
    // 10 real seconds would play 1000 sim seconds: playing stops at the caption's moment.
    app.tick(t0 + secs(10.0)).unwrap_or_default();
    let kill = NIGHT_START + KILL;
    let at_kill = |app: &ReplayApp| (app.cursor - kill).abs() < 1e-9;
    assert!(at_kill(&app), "{}", app.cursor);
    assert_eq!(
        app.view().caption.as_deref(),
        Some("The host reclaims the instance.")
    );
    // Read for 3 s of real time (a caption this short): 0 sim seconds played meanwhile.
    for tenth in 1..30 {
        app.tick(t0 + secs(10.0 + f64::from(tenth) / 10.0))
            .unwrap_or_default();
        assert!(at_kill(&app), "at +{tenth} tenths: {}", app.cursor);
    }
    // Read: 0.2 s of real time since the last tick plays 20 sim seconds, from the caption on.
    app.tick(t0 + secs(13.1)).unwrap_or_default();
    assert!((app.cursor - (kill + 20.0)).abs() < 1e-6, "{}", app.cursor);
    // Back before it and played again: held again; a caption behind is not.
    app.seek(NIGHT_START + 700.0);
    app.playing = true;
    app.tick(t0 + secs(14.0)).unwrap_or_default();
    assert!(at_kill(&app), "{}", app.cursor);
    app.seek(NIGHT_START + 710.0);
    app.playing = true;
    app.tick(t0 + secs(15.0)).unwrap_or_default();
    assert!(app.cursor > NIGHT_START + 710.0, "{}", app.cursor);
}

#[test]
fn time_spent_suspended_is_not_played() {
    let mut app = ReplayApp::new(recording());
    let t0 = Instant::now();
    app.tick(t0).unwrap_or_default();
    app.tick(t0 + std::time::Duration::from_secs(1))
        .unwrap_or_default();
    app.suspend(t0 + std::time::Duration::from_secs(1));
    // Stopped for an hour, then one more second of playing.
    let back = t0 + std::time::Duration::from_secs(3601);
    app.unsuspend(back);
    app.tick(back + std::time::Duration::from_secs(1))
        .unwrap_or_default();
    assert_eq!(app.view().clock.to_string(), "02:03:20");
}

#[test]
fn a_lecture_stops_at_each_moment_and_space_goes_on() {
    let mut app = ReplayApp::new(recording()).lecture(false);
    let t0 = Instant::now();
    let later = |s: u64| t0 + std::time::Duration::from_secs(s);
    app.tick(t0).unwrap_or_default();
    // An hour of real time: playing would reach the end, but stops at the kill.
    app.tick(later(3600)).unwrap_or_default();
    let view = app.view();
    assert_eq!(view.clock.to_string(), "02:11:47");
    assert!(view.paused);
    assert_eq!(
        view.lecture.as_ref().map(|l| l.full.as_str()),
        Some("stopped at 02:11:47: the host kills naive; a caption. space goes on")
    );
    assert_eq!(
        view.caption.as_deref(),
        Some("The host reclaims the instance.")
    );
    // Nothing moves until space.
    app.tick(later(7200)).unwrap_or_default();
    assert_eq!(app.view().clock.to_string(), "02:11:47");
    app.update(KeyAction::TogglePause, later(7200))
        .unwrap_or_default();
    app.tick(later(7300)).unwrap_or_default();
    let view = app.view();
    assert_eq!(view.clock.to_string(), "02:12:05");
    assert_eq!(
        view.lecture.as_ref().map(|l| l.full.as_str()),
        Some("stopped at 02:12:05: the supervisor restarts naive. space goes on")
    );
    app.update(KeyAction::TogglePause, later(7300))
        .unwrap_or_default();
    app.tick(later(7400)).unwrap_or_default();
    // The 201st row, where the recorded figures first show it (a sample every 10 s).
    let view = app.view();
    assert_eq!(view.clock.to_string(), "02:21:30");
    assert_eq!(
        view.lecture.as_ref().map(|l| l.full.as_str()),
        Some("stopped at 02:21:30: symptom: row count exceeds queue size. space goes on")
    );
    app.update(KeyAction::TogglePause, later(7400))
        .unwrap_or_default();
    app.tick(later(7500)).unwrap_or_default();
    // The lane's done line, with its verdict, its claim and the symptom they make together:
    // the lane ended there (live reads the verdict then), not at the recording's last line,
    // and its figures are those that show it over.
    let view = app.view();
    assert_eq!(view.clock.to_string(), "02:32:50");
    assert_eq!(
        view.lecture.as_ref().map(|l| l.full.as_str()),
        Some(
            "stopped at 02:32:50: symptom: status ok, data wrong; naive says done; naive's \
             rows say DATA WRONG (112 duplicated task ids). space goes on"
        )
    );
    assert_eq!(
        view.lanes[0].derived,
        "DATA WRONG (112 duplicated task ids)"
    );
    assert_eq!(view.lanes[0].rows, 312);
    assert_eq!(
        view.lanes[0].claimed.as_deref(),
        Some("rows_written=312 status=ok")
    );
    // Nothing is left: space plays to the end and the line says so.
    app.update(KeyAction::TogglePause, later(7600))
        .unwrap_or_default();
    app.tick(later(7700)).unwrap_or_default();
    assert_eq!(
        app.view().lecture.map(|l| l.full),
        Some("the night is over: nothing left to stop at".into())
    );
}

#[test]
fn a_caption_shows_the_figures_recorded_at_its_moment() {
    let mut rec = recording();
    rec.header.captions[0].text = "{rows} rows, {kills} kill".into();
    rec.header.captions[0].notes = Some("say {rows}".into());
    let mut app = ReplayApp::new(rec);
    app.seek(NIGHT_START + 750.0);
    // At the kill (707 s) the panel shows the last sample at or before it (700 s's, here), and
    // the caption names the same figures.
    let rows_at_kill = |app: &mut ReplayApp| {
        app.seek(NIGHT_START + KILL);
        app.view().lanes.first().map(|l| (l.rows, l.kills))
    };
    assert_eq!(rows_at_kill(&mut app), Some((111, 0)));
    assert_eq!(app.view().caption.as_deref(), Some("111 rows, 0 kill"));
    assert_eq!(app.caption_texts[0].1.as_deref(), Some("say 111"));
    // A recorder samples at each new timeline line: with the kill's own sample, its figures.
    let mut rec = recording();
    rec.header.captions[0].text = "{rows} rows, {kills} kill".into();
    let mut at_kill = rec.samples[71].clone();
    at_kill.sim = NIGHT_START + KILL;
    at_kill.lanes[0].rows = 112;
    at_kill.lanes[0].distinct = 112;
    rec.samples.insert(71, at_kill);
    let mut app = ReplayApp::new(rec);
    assert_eq!(rows_at_kill(&mut app), Some((112, 1)));
    assert_eq!(app.view().caption.as_deref(), Some("112 rows, 1 kill"));
}

/// The incident's guarded lane as a dashboard recorded it at 1x: its `done` line is heard in
/// a tick whose sample still shows 199 rows; the next shows it over with 200. The caption on
/// its `done` names the 200 the panel beside it shows, never 199.
#[test]
fn a_caption_on_a_done_line_names_the_figures_the_lane_ends_with() {
    let mut rec = recording();
    rec.header.captions[0].on = Some("done".into());
    rec.header.captions[0].text = "ends with {rows} rows for {items} items".into();
    let done = NIGHT_START + 1970.0;
    let last = rec.samples.len() - 1;
    // A sample at the done line's moment, taken before the last row was read.
    let mut before = rec.samples[last].clone();
    before.sim = done;
    before.real_ms = 19_700;
    before.lanes[0].rows = 311;
    before.lanes[0].claimed = None;
    before.lanes[0].state_kind = StateKind::Running;
    before.lanes[0].state = "running pid 4242".into();
    before.lanes[0].alive = true;
    rec.samples.retain(|s| s.sim < done);
    rec.samples.push(before);
    let mut after = rec.samples[rec.samples.len() - 1].clone();
    after.lanes[0] = samples()[last].lanes[0].clone();
    after.sim = done + 0.4;
    after.real_ms = 19_720;
    rec.samples.push(after);
    if let Some(e) = rec
        .events
        .iter_mut()
        .find(|e| e.kind == crate::engine::Kind::Done)
    {
        e.real_ms = 19_710;
    }
    let mut app = ReplayApp::new(rec);
    app.seek(done);
    let view = app.view();
    assert_eq!(view.lanes.first().map(|l| l.rows), Some(312));
    assert_eq!(app.caption_texts[0].0, "ends with 312 rows for 200 items");
}

/// A recording whose `end` line was edited to say `ok` over samples with duplicates: the
/// replay (and so its slides, drawn from it) shows the verdict the figures give.
#[test]
fn an_end_line_edited_to_ok_still_shows_data_wrong() {
    let mut rec = recording();
    if let Some(end) = rec.end.as_mut() {
        end.lanes[0].derived_status = crate::verdict::Status::Ok;
        end.lanes[0].derived = "ok".into();
        end.lanes[0].duplicated_task_ids = 0;
    }
    let mut app = ReplayApp::new(rec);
    app.seek(NIGHT_START + 2000.0);
    let view = app.view();
    let lane = view.lanes.first();
    assert_eq!(
        lane.map(|l| l.derived.as_str()),
        Some("DATA WRONG (112 duplicated task ids)")
    );
    assert_eq!(lane.and_then(|l| l.derived_ok), Some(false));
    assert!(screen(&app).contains("DATA WRONG"), "{}", screen(&app));
}
