//! A report's sentences made from its figures, and its `--json` keys, on fixed figures; how
//! long the headless loop waits between looks.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::report::TIMELINE_KEPT;
use super::{RunReport, Unfired};
use crate::base::clock::SimTime;
use crate::engine::{Entry, KillWindows, Kind, Source};
use crate::warehouse::{Inspection, Judged};
use crate::worker::Strategy;

/// `rows` rows of a queue of `items`, `duplicated` of its keys twice.
fn inspection(items: u64, rows: u64, duplicated: u64) -> Inspection {
    let distinct = rows - duplicated;
    Inspection {
        db: PathBuf::from("/tmp/night/warehouse.db"),
        items,
        rows,
        distinct,
        duplicated_task_ids: duplicated,
        extra_rows: duplicated,
        missing: items.saturating_sub(distinct),
        unexpected: 0,
        checkpoints: None,
        rows_without_checkpoint: None,
        checkpoints_without_row: None,
        runs: 2,
        schema: crate::warehouse::SchemaFacts::default(),
        integrity_ok: true,
        integrity: "ok".into(),
        consistent: false,
        judged: Judged::Keys,
        queue: None,
    }
}

/// A naive night of 10 items killed once: it restarted at zero and wrote 4 rows twice.
fn naive_night() -> RunReport {
    RunReport {
        strategy: Some(Strategy::Naive),
        seed: 7,
        scale: 600.0,
        elapsed_ms: 1234,
        inspection: inspection(10, 14, 4),
        completed: true,
        claimed_words: Some("ok".into()),
        claimed_rows_written: Some(14),
        restarted_at_zero: true,
        kills: 1,
        restarts: 1,
        deaths_on_its_own: 0,
        gave_up_why: None,
        kills_in_window: KillWindows::default(),
        pause_planned: None,
        pause_rows_planned: None,
        pauses: crate::engine::Pauses::default(),
        answers_planned: Vec::new(),
        answers_planned_keys: Vec::new(),
        answers_lost: Vec::new(),
        checkpoint_before_row: None,
        row_before_checkpoint: None,
        started_before_first_done: 2,
        kill_delays_ms: vec![300],
        kills_planned: 1,
        kill_rows_planned: None,
        kill_rows_landed: None,
        kill_at_rows: None,
        unfired: Vec::new(),
        points_announced: BTreeMap::new(),
        kills_after_points: BTreeMap::new(),
        messages: None,
        timeline: Vec::new(),
        timeline_left_out: 0,
        state: None,
    }
}

fn entry(second: f64, text: &str) -> Entry {
    Entry {
        sim: SimTime(second),
        real_ms: 0,
        lane: Some(0),
        source: Source::Worker,
        kind: Kind::Log,
        text: text.into(),
        mark: None,
        slot: None,
        fact: None,
    }
}

#[test]
fn the_verdict_sets_the_claim_beside_the_rows() {
    let naive = naive_night();
    assert_eq!(
        naive.verdict(),
        "claimed=ok derived=DATA WRONG (4 duplicated task ids)"
    );
    assert_eq!(
        naive.lessons(),
        [
            "worker restarts at item zero: does the checkpoint table get queried?",
            "row count exceeds queue size: is there a unique key on the work id?",
            "status ok, data wrong: derive status from the rows produced",
        ]
    );
    // Someone else's job: its own words, quoted; its silence said so.
    let job = RunReport {
        strategy: None,
        claimed_words: Some("done rows=14".into()),
        ..naive_night()
    };
    assert_eq!(
        job.verdict(),
        "claimed \"done rows=14\" derived=DATA WRONG (4 duplicated task ids)"
    );
    let silent = RunReport {
        claimed_words: None,
        ..job
    };
    assert!(silent.verdict().starts_with("claimed \"(no output)\" "));
    assert_eq!(silent.claimed_status(), "none");
}

#[test]
fn a_job_never_completed_says_how_its_attempts_ended() {
    assert_eq!(naive_night().never_completed(), None);
    let cut = |kills, own, gave_up: Option<&str>| RunReport {
        completed: false,
        kills,
        deaths_on_its_own: own,
        restarts: 3,
        gave_up_why: gave_up.map(Into::into),
        ..naive_night()
    };
    let said = |r: RunReport| r.never_completed().unwrap_or_default();
    assert_eq!(
        said(cut(0, 0, Some("no progress for 120 s"))),
        "the job never completed: no progress for 120 s"
    );
    let limit = "the job never completed: the supervisor gave up after 3 restarts, its limit: ";
    assert_eq!(said(cut(0, 0, None)), format!("{limit}no attempt finished"));
    assert_eq!(
        said(cut(4, 0, None)),
        format!("{limit}every attempt was killed before it finished")
    );
    assert_eq!(
        said(cut(0, 4, None)),
        format!("{limit}every attempt died on its own before it finished")
    );
    assert_eq!(
        said(cut(1, 3, None)),
        format!("{limit}1 attempt was killed by the host and 3 died on their own before finishing")
    );
}

#[test]
fn only_the_kills_that_leave_the_night_untested_are_its_gaps() {
    let report = RunReport {
        unfired: vec![
            Unfired::KillAtRows { n: 50, rows: 14 },
            Unfired::Random {
                planned: 3,
                fired: 1,
                completed: true,
            },
        ],
        ..naive_night()
    };
    assert_eq!(report.not_fired().len(), 2);
    assert_eq!(
        report.not_fired_gaps(),
        ["the kill at 50 rows never fired: the table held 14 rows at the end"]
    );
}

/// A loss and a restart planned at a task that never happened are said as such, each a gap
/// in the night's account; a loss at a task that did happen is not.
#[test]
fn faults_planned_at_a_task_that_never_came_are_said_not_fired() {
    let report = RunReport {
        answers_planned_keys: vec!["task-003".into(), "task-009".into()],
        answers_lost: vec![crate::warehouse::postgres::answers::LostAnswer {
            planned: 4,
            rows: 4,
            keys: vec!["task-003".into()],
            at_keys: vec!["task-003".into()],
        }],
        unfired: vec![Unfired::ServerRestartAtTask {
            key: "task-011".into(),
        }],
        ..naive_night()
    };
    assert_eq!(
        report.answers_never_lost(),
        [
            "the answer to task-009's commit was never lost: no commit brought its row in while the proxy looked"
        ]
    );
    let gaps: Vec<String> = (report.account().entries.iter())
        .filter(|e| e.kind == crate::verdict::account::Kind::NotFired)
        .map(|e| e.said.clone())
        .collect();
    assert!(
        gaps.iter()
            .any(|g| g.starts_with("the answer to task-009's commit")),
        "{gaps:?}"
    );
    assert!(
        gaps.iter()
            .any(|g| g.starts_with("the server restart after task-011's commit never happened")),
        "{gaps:?}"
    );
    assert!(!gaps.iter().any(|g| g.contains("task-003")), "{gaps:?}");
}

#[test]
fn the_vendors_verdict_is_said_whenever_a_vendor_was_reached() {
    assert_eq!(naive_night().messages_verdict(), None);
    assert!(naive_night().messages_hold());
    let counts = crate::fake_vendor::Counts {
        received: 10,
        distinct: 10,
        requests: 10,
        ..crate::fake_vendor::Counts::default()
    };
    let right = RunReport {
        messages: Some(counts),
        ..naive_night()
    };
    assert_eq!(
        right.messages_verdict().as_deref(),
        Some(super::MESSAGES_OK)
    );
    let none_arrived = RunReport {
        messages: Some(crate::fake_vendor::Counts {
            received: 0,
            missing: 10,
            ..counts
        }),
        ..naive_night()
    };
    assert!(!none_arrived.messages_hold());
    assert!(
        (none_arrived.messages_verdict().unwrap_or_default())
            .starts_with("messages WRONG: no message arrived at the vendor")
    );
}

#[test]
fn a_cut_timeline_names_the_cut_between_its_ends() {
    let half = TIMELINE_KEPT / 2;
    let report = RunReport {
        timeline: (0..TIMELINE_KEPT)
            .map(|i| entry(i as f64, &format!("line {i}")))
            .collect(),
        timeline_left_out: 7,
        ..naive_night()
    };
    let lines = report.timeline_lines();
    assert_eq!(lines.len(), TIMELINE_KEPT + 1);
    assert!(lines[half - 1].ends_with(&format!("line {}", half - 1)));
    assert_eq!(lines[half], "…  7 lines left out (timeline_left_out)  …");
    assert!(lines[half + 1].ends_with(&format!("line {half}")));
    let whole = RunReport {
        timeline: vec![entry(0.0, "only")],
        ..naive_night()
    };
    assert_eq!(whole.timeline_lines().len(), 1);
}

#[test]
fn the_json_keeps_its_keys_and_writes_the_sentences_beside_the_figures() {
    let value = serde_json::to_value(naive_night()).unwrap_or_default();
    let keys: Vec<&str> = (value.as_object().into_iter())
        .flat_map(|o| o.keys().map(String::as_str))
        .collect();
    // Sorted, as serde_json's map holds them; `kill_rows_*` and the points only when they apply.
    assert_eq!(
        keys,
        [
            "claimed_rows_written",
            "claimed_status",
            "completed",
            "db",
            "derived_status",
            "distinct",
            "duplicated_task_ids",
            "elapsed_ms",
            "items",
            "judged",
            "kill_delays_ms",
            "kill_landed_at_rows",
            "kill_sent_at_rows",
            "kills",
            "kills_in_window",
            "kills_planned",
            "lessons",
            "messages_distinct",
            "messages_duplicated",
            "messages_missing",
            "messages_outside",
            "messages_received",
            "messages_requests",
            "messages_verdict",
            "missing",
            "never_completed",
            "not_fired",
            "outside",
            "queue_notes",
            "restarts",
            "rows",
            "runs",
            "scale",
            "seed",
            "started_before_first_done",
            "strategy",
            "symptoms",
            "timeline",
            "timeline_left_out",
            "verdict",
        ]
    );
    assert_eq!(value["strategy"], "naive");
    assert_eq!(value["derived_status"], "data_wrong");
    assert_eq!(value["verdict"], naive_night().verdict());
    assert_eq!(value["lessons"].as_array().map(Vec::len), Some(3));
    assert_eq!(value["runs"], 2);
    let job = serde_json::to_value(RunReport {
        strategy: None,
        ..naive_night()
    })
    .unwrap_or_default();
    // Someone else's job: `exec`, and no run count (its rows carry no run id).
    assert_eq!(job["strategy"], "exec");
    assert!(job.get("runs").is_none());
}

/// A quiet night waits until just after its clock's next moment, never shorter than `TICK`
/// nor longer than `QUIET_TICK`; a clock standing on a moment is looked at every `TICK`; one
/// that real time does not move waits `QUIET_TICK`. A moment beyond any `Duration` (a clock
/// crawling towards the end of time) waits `QUIET_TICK` too, not an overflow (a map night
/// panicked on it).
#[test]
fn a_quiet_wait_ends_just_past_the_clocks_next_moment_and_never_late() {
    use super::{QUIET_TICK, REACH, TICK, quiet_wait};
    use std::time::Duration;
    assert_eq!(quiet_wait(None), QUIET_TICK);
    assert_eq!(quiet_wait(Some(Duration::ZERO)), TICK);
    assert_eq!(quiet_wait(Some(Duration::from_micros(500))), TICK);
    let soon = Duration::from_micros(3_250);
    assert_eq!(quiet_wait(Some(soon)), soon + REACH);
    assert_eq!(quiet_wait(Some(Duration::from_secs(5))), QUIET_TICK);
    assert_eq!(quiet_wait(Some(Duration::MAX)), QUIET_TICK);
}
