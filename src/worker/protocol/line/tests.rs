//! `WorkerLine` written and read back: every variant round-trips, and reads as it always did.

use super::*;
use crate::worker::CrashPoint;

/// One of each variant (and of each of their own variants): a variant added without a case
/// here fails `every_variant_is_in_the_sample`.
fn sample() -> Vec<WorkerLine> {
    vec![
        WorkerLine::Start {
            run_id: None,
            items: 200,
            strategy: Strategy::Naive,
            pid: 4242,
        },
        WorkerLine::Start {
            run_id: Some("run-1-2".into()),
            items: 7,
            strategy: Strategy::Guarded,
            pid: 1,
        },
        WorkerLine::Resume(Resume::From {
            task: 56,
            skipped: 56,
        }),
        WorkerLine::Resume(Resume::NothingLeft { skipped: 200 }),
        WorkerLine::Crash {
            at: CrashAt {
                task: 111,
                point: CrashPoint::AfterCommit,
            },
        },
        WorkerLine::Done {
            rows_written: 312,
            inserted: 200,
        },
        WorkerLine::Wait { need: 113 },
        WorkerLine::Wrote {
            writes: 112,
            last: 111,
        },
        WorkerLine::Wake {
            at: Moment(7203.0 + 6.3 * 14.0),
        },
        WorkerLine::Work {
            task: 50,
            left_ms: 1400,
        },
        WorkerLine::Work {
            task: 1234,
            left_ms: 7,
        },
        WorkerLine::Step(Step::Done {
            task: 50,
            step: 3,
            steps: 10,
        }),
        WorkerLine::Step(Step::ResumesAt {
            task: 50,
            step: 4,
            steps: 10,
        }),
        WorkerLine::Idle { until: None },
        WorkerLine::Idle {
            until: Some(2 * 3600 + 11 * 60 + 47),
        },
        WorkerLine::Lost { task: 12 },
        WorkerLine::Pause {
            task: 10,
            until: Moment(7260.0 + 0.1 + 0.2),
        },
        WorkerLine::Relay(Relay::Started {
            vendor: SocketAddr::from(([127, 0, 0, 1], 4242)),
            pid: 77,
        }),
        WorkerLine::Relay(Relay::Finished {
            delivered: 200,
            answered_from_keys: 1,
        }),
        WorkerLine::Point(Point {
            name: "after-row-commit".into(),
            key: "ord 00042".into(),
        }),
        WorkerLine::Other("heartbeat: writing x again".into()),
    ]
}

#[test]
fn every_line_a_worker_prints_parses_back_to_itself() {
    for line in sample() {
        let text = line.to_string();
        assert_eq!(text.parse::<WorkerLine>(), Ok(line.clone()), "{text}");
        if !matches!(line, WorkerLine::Other(_)) {
            assert!(text.starts_with(line.word()), "{text}");
            assert!(text.ends_with(&line.fields()), "{text}");
        }
    }
}

/// Which variant a line is: a variant added to `WorkerLine` stops the compiler here, and
/// its number then fails the test until `sample` has a case of it.
fn variant(line: &WorkerLine) -> usize {
    match line {
        WorkerLine::Start { .. } => 0,
        WorkerLine::Resume(_) => 1,
        WorkerLine::Crash { .. } => 2,
        WorkerLine::Done { .. } => 3,
        WorkerLine::Wait { .. } => 4,
        WorkerLine::Wrote { .. } => 5,
        WorkerLine::Wake { .. } => 6,
        WorkerLine::Work { .. } => 7,
        WorkerLine::Step(_) => 8,
        WorkerLine::Idle { .. } => 9,
        WorkerLine::Lost { .. } => 10,
        WorkerLine::Pause { .. } => 11,
        WorkerLine::Relay(_) => 12,
        WorkerLine::Point(_) => 13,
        WorkerLine::Other(_) => 14,
    }
}

#[test]
fn every_variant_is_in_the_sample() {
    let seen: std::collections::BTreeSet<usize> = sample().iter().map(variant).collect();
    let last = seen.last().copied().unwrap_or(0);
    assert_eq!(
        seen,
        (0..=last).collect(),
        "a variant has no case in sample()"
    );
    assert_eq!(variant(&WorkerLine::Other(String::new())), last);
}

/// The text each line had when it was written by hand, before the protocol typed it: the
/// timeline and recordings show the same words.
#[test]
fn the_lines_read_as_they_always_did() {
    let cases = [
        (
            WorkerLine::Done {
                rows_written: 312,
                inserted: 200,
            },
            "done    rows_written=312  status=ok  inserted=200",
        ),
        (
            WorkerLine::work(50, std::time::Duration::from_millis(1400)),
            "work    task-050  1.400 s",
        ),
        (
            WorkerLine::Step(Step::Done {
                task: 50,
                step: 3,
                steps: 10,
            }),
            "step    task-050  3/10",
        ),
        (
            WorkerLine::Step(Step::ResumesAt {
                task: 50,
                step: 4,
                steps: 10,
            }),
            "step    task-050  resumes at 4/10",
        ),
        (
            WorkerLine::idle(Some(7907.9)),
            "idle  every item left is leased by another worker: waiting for one to finish or its lease to end (the first ends at 02:11:47)",
        ),
        (
            WorkerLine::Lost { task: 12 },
            "lost  task-012: its lease ended and another worker took it; this worker wrote nothing for it",
        ),
        (
            WorkerLine::Relay(Relay::Started {
                vendor: SocketAddr::from(([127, 0, 0, 1], 4242)),
                pid: 77,
            }),
            "relay   vendor=127.0.0.1:4242  pid=77",
        ),
        (
            WorkerLine::Relay(Relay::Finished {
                delivered: 200,
                answered_from_keys: 1,
            }),
            "relay   delivered=200  answered_from_keys=1  outbox=all sent",
        ),
        (
            WorkerLine::Point(Point {
                name: "after-send".into(),
                key: "ord-00042".into(),
            }),
            "reclaim-point after-send ord-00042",
        ),
    ];
    for (line, text) in cases {
        assert_eq!(line.to_string(), text);
    }
}

#[test]
fn garbled_lines_are_the_workers_own() {
    for text in [
        "done garbage",
        "work    task-050  1.4 s",
        "work    task-050  1.400",
        "step    task-050  3",
        "step    task-050  resumes 4/10",
        "idle  waiting",
        "idle  every item left is leased by another worker: waiting for one to finish or its lease to end (the first ends at 25:00:00)",
        "lost  task-012: gone",
        "relay   delivered=1",
        "relay   vendor=nowhere  pid=1",
    ] {
        assert_eq!(
            text.parse::<WorkerLine>(),
            Ok(WorkerLine::Other(text.into()))
        );
    }
}

#[test]
fn a_job_says_its_crash_points_and_nothing_else_in_the_protocol() {
    assert_eq!(
        WorkerLine::of_job("reclaim-point after-row-commit ord-00042"),
        WorkerLine::Point(Point {
            name: "after-row-commit".into(),
            key: "ord-00042".into(),
        })
    );
    for own in [
        "done    rows_written=312  status=ok  inserted=200",
        "start   run_id=(none)  items=200  strategy=naive  pid=1",
        "crash   at=task-111:after-commit",
    ] {
        assert_eq!(WorkerLine::of_job(own), WorkerLine::Other(own.into()));
    }
    assert_eq!(claimed_rows("done rows_written=12 status=ok"), Some(12));
    assert_eq!(claimed_rows("done status=ok"), None);
    assert_eq!(claimed_rows("rows_written=x"), None);
}

#[test]
fn a_workers_error_line_gives_its_reason() {
    let reason = "database is locked";
    assert_eq!(error_reason(&format!("{ERROR_PREFIX}{reason}")), reason);
    assert_eq!(error_reason("Traceback: boom"), "Traceback: boom");
}
