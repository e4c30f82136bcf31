//! A lane's reading of its workers' lines, their exits and its restart rules, on hand-made lines
//! and exits: no process runs, and the lane's database is never there (nothing is read).

use std::path::PathBuf;

use super::ends::CRASH_LOOP;
use super::*;
use crate::engine::config::ExecJob;
use crate::engine::timeline::{Fact, Kind, Source};
use crate::queue::Queue;
use crate::supervisor::slot::{Exit, RestartPolicy};
use crate::warehouse::RowSource;
use crate::worker::protocol::{Resume, WorkerLine};
use crate::worker::{CrashAt, CrashPoint, Strategy};

/// The clock's reading when a line is heard: past the night's start (02:00:00).
const CLOCK: f64 = 7300.0;
const SCALE: f64 = 600.0;
const POLICY: RestartPolicy = RestartPolicy {
    delay: 18.0,
    max: 2,
};

/// A database that does not exist: the observer finds nothing to read.
fn nowhere() -> PathBuf {
    PathBuf::from("/nonexistent/reclaim-lane-tests/night.db")
}

/// A lane of `workers` of reclaim's naive worker, each on its first attempt.
fn lane(workers: usize) -> Lane {
    let config = LaneConfig {
        workers,
        ..LaneConfig::new(Strategy::Naive, nowhere(), 5)
    };
    begun(Lane::new(config))
}

/// A lane running someone else's job, its one worker on its first attempt.
fn job_lane() -> Lane {
    let job = ExecJob::new("./job", None, RowSource::default(), Queue::tasks(5))
        .unwrap_or_else(|e| panic!("{e}"));
    begun(Lane::new(LaneConfig::new(
        LaneWorker::Exec(Box::new(job)),
        nowhere(),
        5,
    )))
}

fn begun(mut lane: Lane) -> Lane {
    for slot in lane.slots_mut() {
        slot.begin_without_a_process();
    }
    lane
}

/// Slot 0's `attempt` printed `text` on stdout, heard at `clock`.
fn said(
    lane: &mut Lane,
    attempt: u32,
    text: &str,
    clock: f64,
) -> (Option<Note>, Option<(u64, f64)>) {
    lane.heard((0, attempt), false, Some(text.to_string()), (clock, SCALE))
}

fn note(lane: &mut Lane, words: &WorkerLine) -> Note {
    said(lane, 1, &words.to_string(), CLOCK)
        .0
        .unwrap_or_else(|| panic!("no note for {words}"))
}

#[test]
fn start_and_resume_go_on_the_timeline_in_their_fields_at_the_clocks_reading() {
    let mut lane = lane(1);
    let start = WorkerLine::Start {
        run_id: None,
        items: 5,
        strategy: Strategy::Naive,
        pid: 4242,
    };
    let n = note(&mut lane, &start);
    assert_eq!((n.source, n.kind), (Source::Worker, Kind::Start));
    assert_eq!(n.text, "run_id=(none)  items=5  strategy=naive  pid=4242");
    assert_eq!(n.at, Some(CLOCK));
    let resume = WorkerLine::Resume(Resume::From {
        task: 3,
        skipped: 3,
    });
    let n = note(&mut lane, &resume);
    assert_eq!(n.kind, Kind::Resume);
    assert_eq!(n.text, "from=task-003  skipped=3");
    // Neither is a claim.
    assert_eq!(lane.claimed(), None);
}

#[test]
fn an_item_written_moves_the_attempt_on_and_is_no_line_of_the_timeline() {
    let mut lane = lane(1);
    let wrote = WorkerLine::Wrote { writes: 3, last: 2 };
    let heard = said(&mut lane, 1, &wrote.to_string(), CLOCK + 5.0);
    assert_eq!(heard, (None, Some((2, CLOCK + 5.0))));
    assert_eq!(lane.attempts()[0].writes, 3);
    assert_eq!(lane.attempts()[0].last_task, Some(2));
}

#[test]
fn each_done_is_the_workers_claim_and_the_last_one_stands() {
    let mut lane = lane(1);
    let done = |rows_written| WorkerLine::Done {
        rows_written,
        inserted: 5,
    };
    let n = note(&mut lane, &done(5));
    assert_eq!(n.kind, Kind::Done);
    assert_eq!(n.text, "rows_written=5  status=ok  inserted=5");
    let claim = |rows_written| ClaimedDone {
        rows_written,
        status: "ok".into(),
    };
    assert_eq!(lane.claimed(), Some(&claim(5)));
    // A second `done` (a restarted worker's, or a worker repeating itself) replaces the first.
    let _ = note(&mut lane, &done(8));
    assert_eq!(lane.claimed(), Some(&claim(8)));
}

#[test]
fn a_crash_line_names_the_point_the_slot_dies_at() {
    let mut lane = lane(1);
    let at = CrashAt {
        task: 2,
        point: CrashPoint::AfterCommit,
    };
    let n = note(&mut lane, &WorkerLine::Crash { at });
    assert_eq!(n.kind, Kind::Crash);
    assert_eq!(n.text, format!("at={at}"));
    assert_eq!(lane.slots()[0].crashed_at(), Some(at));
}

#[test]
fn an_old_attempts_late_line_is_shown_unstamped_and_moves_nothing() {
    let mut lane = lane(1);
    lane.slots_mut()[0].begin_without_a_process();
    // Attempt 1's pipe is read after attempt 2 began.
    let stale = WorkerLine::Wrote { writes: 4, last: 3 };
    assert_eq!(
        said(&mut lane, 1, &stale.to_string(), CLOCK + 60.0),
        (None, None)
    );
    assert_eq!(lane.attempts()[0].writes, 0);
    let now = lane.attempts()[0].now();
    assert!(
        (now - crate::base::clock::NIGHT_START).abs() < 1e-9,
        "{now}"
    );
    let done = WorkerLine::Done {
        rows_written: 4,
        inserted: 4,
    };
    let (n, wrote) = said(&mut lane, 1, &done.to_string(), CLOCK + 60.0);
    let n = n.unwrap_or_else(|| panic!("no note"));
    assert_eq!((n.kind, n.at, wrote), (Kind::Done, None, None));
    // The current attempt's line is stamped.
    let (n, _) = said(&mut lane, 2, "anything else", CLOCK + 61.0);
    assert_eq!(
        n.map(|n| (n.kind, n.at)),
        Some((Kind::Log, Some(CLOCK + 61.0)))
    );
}

#[test]
fn a_line_out_of_the_protocol_is_shown_whole_and_named_by_worker_when_there_are_several() {
    let mut lane = lane(2);
    let (n, _) = lane.heard((1, 1), false, Some("done whatever".into()), (CLOCK, SCALE));
    let n = n.unwrap_or_else(|| panic!("no note"));
    assert_eq!((n.kind, n.text.as_str()), (Kind::Log, "done whatever  w=2"));
    assert_eq!(lane.claimed(), None);
}

#[test]
fn stderr_is_shown_as_stderr_and_never_read_as_the_protocol() {
    let mut lane = lane(1);
    let done = WorkerLine::Done {
        rows_written: 5,
        inserted: 5,
    };
    let (n, _) = lane.heard((0, 1), true, Some(done.to_string()), (CLOCK, SCALE));
    let n = n.unwrap_or_else(|| panic!("no note"));
    assert_eq!((n.kind, n.text), (Kind::Stderr, done.to_string()));
    assert_eq!(lane.claimed(), None);
    // A pipe's end says nothing.
    assert_eq!(lane.heard((0, 1), true, None, (CLOCK, SCALE)), (None, None));
}

#[test]
fn a_jobs_last_line_is_its_claim_and_its_crash_points_are_not() {
    let mut lane = job_lane();
    let (n, _) = said(&mut lane, 1, "done rows_written=7 status=ok", CLOCK);
    assert_eq!(n.map(|n| n.kind), Some(Kind::Log));
    assert_eq!(
        lane.claimed().map(|c| (c.rows_written, c.status.as_str())),
        Some((7, "done rows_written=7 status=ok"))
    );
    // A crash point with no plan is counted, not shown, not a claim.
    assert_eq!(
        said(&mut lane, 1, "reclaim-point after-commit task-001", CLOCK),
        (None, None)
    );
    assert_eq!(lane.claimed().map(|c| c.rows_written), Some(7));
    // A claim is kept to its first 120 characters.
    let _ = said(&mut lane, 1, &"x".repeat(500), CLOCK);
    assert_eq!(lane.claimed().map(|c| c.status.len()), Some(120));
}

#[test]
fn a_restart_is_due_after_the_delay_and_past_the_limit_the_lane_gives_up_once() {
    let mut lane = lane(2);
    for slot in lane.slots_mut() {
        slot.restart_after_failure(100.0, POLICY);
    }
    let (due, notes) = lane.due_restarts(117.0, POLICY);
    assert!(due.is_empty() && notes.is_empty());
    let (due, notes) = lane.due_restarts(118.0, POLICY);
    assert_eq!(due, [(0, 118.0), (1, 118.0)]);
    let texts: Vec<&str> = notes.iter().map(|n| n.text.as_str()).collect();
    assert_eq!(texts, ["supervisor restarts the worker (attempt 2)"; 2]);
    assert_eq!(lane.restarts(), 2);
    // Both die again: no restart is left, and the giving up is said once.
    for slot in lane.slots_mut() {
        slot.begin_without_a_process();
        slot.restart_after_failure(200.0, POLICY);
    }
    let (due, notes) = lane.due_restarts(218.0, POLICY);
    assert!(due.is_empty());
    let texts: Vec<&str> = notes.iter().map(|n| n.text.as_str()).collect();
    assert_eq!(
        texts,
        ["giving up after 2 restarts: the job never completed"]
    );
    assert_eq!(lane.slot_states(), [SlotState::GaveUp; 2]);
    assert!(lane.finished() && !lane.completed());
    assert_eq!(lane.gave_up_why(), None);
}

#[test]
fn a_job_that_dies_on_its_own_with_no_new_row_gives_up_on_the_tenth_in_a_row() {
    let mut lane = job_lane();
    // It wrote a row once: it got going, so a death is restarted.
    lane.observer.rows = 1;
    let die = |lane: &mut Lane| lane.job_failed(0, "database is locked", 1, (300.0, POLICY));
    let first = die(&mut lane);
    assert_eq!(first.len(), 1);
    assert_eq!(first[0].fact, Some(Fact::DiedOnItsOwn));
    assert_eq!(lane.slots()[0].state(), SlotState::Restarting);
    for _ in 1..CRASH_LOOP {
        let _ = die(&mut lane);
    }
    assert_eq!(lane.gave_up_why(), None);
    // A new row between deaths starts the count again.
    lane.observer.rows = 2;
    for _ in 0..CRASH_LOOP {
        let _ = die(&mut lane);
    }
    assert_eq!(lane.gave_up_why(), None);
    let last = die(&mut lane);
    assert_eq!(last[0].kind, Kind::Error);
    assert!(
        last[0]
            .text
            .starts_with("giving up: the job died on its own 10 times in a row")
    );
    assert!(
        lane.gave_up_why()
            .is_some_and(|w| w.contains("database is locked"))
    );
    assert_eq!(lane.slots()[0].state(), SlotState::GaveUp);
    assert_eq!(lane.deaths_on_its_own(), 2 * CRASH_LOOP + 1);
    assert_eq!(lane.failure(), None);
}

#[test]
fn a_job_that_fails_before_its_first_row_or_cannot_start_is_said_once_not_restarted() {
    for (code, said) in [
        (
            1,
            "the worker failed before its first row, so it is not restarted: no such table",
        ),
        (127, "the worker could not start: no such table"),
    ] {
        let mut lane = job_lane();
        let notes = lane.job_failed(0, "no such table", code, (300.0, POLICY));
        assert_eq!(notes.len(), 1);
        assert!(notes[0].text.starts_with(said), "{}", notes[0].text);
        assert!(lane.start_failed());
        assert_eq!(lane.deaths_on_its_own(), 0);
        assert_eq!(lane.slots()[0].restart_due(), None);
    }
}

#[test]
fn how_an_exit_ends_reclaims_own_worker() {
    let mut lane = lane(1);
    let host = Exit::Killed {
        signal: 9,
        by_host: true,
    };
    assert!(lane.exited(0, &Exit::Done, (300.0, POLICY)).is_empty());
    assert!(lane.exited(0, &host, (300.0, POLICY)).is_empty());
    assert_eq!(lane.failure(), None);
    // The server ended the session: restarted as after a kill, a death on its own.
    let lost = Exit::Failed {
        reason: format!("{}: server closed the connection", crate::warehouse::LOST),
        code: 1,
    };
    let notes = lane.exited(0, &lost, (300.0, POLICY));
    assert!(
        notes[0].text.ends_with("restarted as after a kill"),
        "{}",
        notes[0].text
    );
    assert_eq!(lane.deaths_on_its_own(), 1);
    assert_eq!(lane.slots()[0].restart_due(), Some(318.0));
    assert_eq!(lane.failure(), None);
    // Any other failure ends the lane.
    let failed = Exit::Failed {
        reason: "disk full".into(),
        code: 1,
    };
    let notes = lane.exited(0, &failed, (300.0, POLICY));
    assert_eq!(
        (notes[0].kind, notes[0].text.as_str()),
        (Kind::Error, "worker failed: disk full")
    );
    assert_eq!(lane.failure(), Some("disk full"));
    assert!(lane.finished());
}

#[test]
fn a_jobs_exit_zero_is_its_only_word_that_it_finished() {
    let mut lane = job_lane();
    let notes = lane.exited(0, &Exit::Done, (300.0, POLICY));
    assert_eq!(notes.len(), 1);
    assert_eq!((notes[0].kind, notes[0].at), (Kind::Done, Some(300.0)));
    assert!(notes[0].text.starts_with("exited 0"));
}

/// The dashboard's `a` adds a worker to a lane: each tick then looks for a pause ending on every
/// slot, the new one too, whose place was never made (an index out of bounds, exit 101).
#[test]
fn a_slot_added_by_hand_is_looked_at_like_the_others() {
    let mut lane = lane(1);
    let added = lane.add_slot();
    assert_eq!((added, lane.config().workers), (1, 2));
    // Every per-slot record has the new slot's place (a pause of it is written there).
    assert_eq!(lane.paused_until.len(), lane.slots.len());
    assert!(lane.end_pauses(CLOCK, false).is_empty());
    assert_eq!(lane.pause_ends(), None);
}

/// The incident's workers are spawned at 02:00:00 and start on the clock at 02:00:03 (the log's
/// first `start` line): until then the panel says when, not `running pid N` ahead of the line
/// that names the pid.
#[test]
fn a_worker_spawned_ahead_of_its_start_is_starting_until_the_clock_gets_there() {
    let mut lane = lane(1);
    let start = crate::base::clock::NIGHT_START + 3.0;
    lane.attempts[0] = Attempt::new(start, Pace::per_item(1.0));
    let before = lane.snapshot_at(300.0, crate::base::clock::NIGHT_START);
    assert!(
        before.state.starts_with("starting at 02:00:03, pid"),
        "{}",
        before.state
    );
    assert_eq!(before.state_kind, StateKind::Running);
    let at = lane.snapshot_at(300.0, start);
    assert!(at.state.starts_with("running pid"), "{}", at.state);
}

/// Once an outbox lane's workers are done, the clock waits at their last write for the relay
/// to end (its last lines and its end are that moment's, whatever the machine's load), and
/// only while the relay is not stuck: a relay stopped from outside is gone on without after
/// `STALL`, as a worker is.
#[test]
fn a_relay_ending_after_its_workers_holds_the_clock_at_their_last_write_until_stuck() {
    use std::process::Command;
    use std::time::{Duration, Instant};

    use crate::supervisor::process;
    use nix::sys::signal::Signal;

    let mut lane = begun(Lane::new(LaneConfig::new(Strategy::Outbox, nowhere(), 5)));
    assert_eq!(lane.slots().len(), 2, "a worker and the relay");
    // The worker's fifth write fell at 110 (one every 2 s from 100).
    lane.attempts[0] = Attempt::new(100.0, Pace::per_item(2.0));
    lane.attempts[0].writes = 5;
    let (tx, _rx) = std::sync::mpsc::channel();
    let mut sleep = Command::new("sleep");
    sleep.arg("30");
    lane.slots[1]
        .spawn(sleep, (0, 1), &tx, (false, false))
        .unwrap_or_else(|e| panic!("{e}"));
    let t0 = Instant::now();
    let stall = t0 + Duration::from_millis(1600);
    // The worker still runs: its own write holds the clock, not the relay.
    assert_eq!(lane.relay_end_hold(t0), None);
    lane.slots[0].done_without_a_process();
    assert_eq!(lane.relay_end_hold(t0), Some(110.0));
    // A relay stopped from outside reclaim is stuck: waited for up to `STALL`, no longer.
    process::signal_group(lane.slots[1].pid(), Signal::SIGSTOP).unwrap_or_else(|e| panic!("{e}"));
    let pid = lane.slots[1].pid();
    let stopped = || {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
            stat.rsplit(')')
                .next()
                .is_some_and(|r| r.trim_start().starts_with('T'))
        })
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    while !stopped() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(stopped(), "sleep {pid} was never seen stopped");
    assert_eq!(
        lane.relay_end_hold(t0 + Duration::from_secs(1)),
        Some(110.0)
    );
    assert_eq!(lane.relay_end_hold(stall), None);
    lane.slots[1].kill();
    // Gone, the relay holds nothing.
    assert_eq!(lane.relay_end_hold(stall), None);
}
