//! Integration tests of session recordings: `run --record`, `replay --check`, the replay
//! dashboard's state scrubbed in-process, `run --replay-schedule`, and recordings that are bad,
//! cut short or left behind by a reclaim killed mid-night.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use reclaim::engine::Mark;
use reclaim::record::Recording;
use reclaim::tui::Screen as _;
use reclaim::tui::replay::ReplayApp;
use serde_json::Value;

use crate::support::{
    Run, assert_one_line_error, distinct, duplicated_ids, gone_within, json_of, number, open_ro,
    path_arg, read_bytes, reclaim_within, rows,
};

/// A hang guard, not a timing assertion: every night here takes a few seconds at most.
const LIMIT: Duration = Duration::from_secs(90);

/// What the naive strategy leaves after crashing once right after committing task-111.
const NAIVE_ROWS: u64 = 312;
const NAIVE_DUPLICATED: u64 = 112;
const NAIVE_DERIVED: &str = "DATA WRONG (112 duplicated task ids)";

fn reclaim(args: &[&str]) -> Run {
    reclaim_within(args, &[], LIMIT)
}

/// `reclaim run --db DB --record RECORD EXTRA...`.
fn recorded_night(db: &Path, record: &Path, extra: &[&str]) -> Run {
    let mut args = vec!["run", "--db", path_arg(db), "--record", path_arg(record)];
    args.extend_from_slice(extra);
    reclaim(&args)
}

/// The postmortem's night: naive, crashing once after committing task-111, recorded to
/// `dir/n.jsonl` (reported as JSON). Returns the recording's path and the run's report.
fn naive_crash_night(dir: &Path) -> (PathBuf, PathBuf, Value) {
    let db = dir.join("n.db");
    let record = dir.join("n.jsonl");
    let run = recorded_night(
        &db,
        &record,
        &[
            "--strategy",
            "naive",
            "--crash-at",
            "task-111:after-commit",
            "--delay-ms",
            "2",
            "--json",
        ],
    );
    assert_eq!(
        run.code,
        Some(1),
        "naive run:\n{}\n{}",
        run.stdout,
        run.stderr
    );
    let report = json_of(&run);
    (record, db, report)
}

fn load(path: &Path) -> Recording {
    Recording::load(path).unwrap_or_else(|e| panic!("cannot load {}: {e}", path.display()))
}

fn replay_check(file: &Path, json: bool) -> Run {
    let mut args = vec!["replay", "--check", path_arg(file)];
    if json {
        args.push("--json");
    }
    reclaim(&args)
}

/// The `replay --check` line for lane `name`: `naive  claimed=... rows=... duplicated_task_ids=...`.
fn lane_line<'a>(run: &'a Run, name: &str) -> &'a str {
    run.stdout
        .lines()
        .find(|l| l.split_whitespace().next() == Some(name))
        .unwrap_or_else(|| panic!("no line for lane {name}:\n{}", run.stdout))
}

#[test]
fn a_recorded_naive_night_replays_to_the_same_wrong_verdict() {
    let tmp = crate::support::tempdir();
    let (record, db, report) = naive_crash_night(tmp.path());
    assert_eq!(number(&report, "rows"), NAIVE_ROWS, "{report}");
    assert_eq!(number(&report, "duplicated_task_ids"), NAIVE_DUPLICATED);
    // The figures, read back independently.
    let conn = open_ro(&db);
    assert_eq!(rows(&conn), NAIVE_ROWS);
    assert_eq!(duplicated_ids(&conn).len() as u64, NAIVE_DUPLICATED);

    let check = replay_check(&record, false);
    assert_eq!(check.code, Some(1), "{}\n{}", check.stdout, check.stderr);
    assert!(check.stderr.trim().is_empty(), "{}", check.stderr);
    let verdict = lane_line(&check, "naive");
    assert!(
        verdict.contains(&format!(
            "rows={NAIVE_ROWS} duplicated_task_ids={NAIVE_DUPLICATED}"
        )),
        "{verdict}"
    );
    assert!(
        verdict.contains(&format!("claimed=ok derived={NAIVE_DERIVED}")),
        "{verdict}"
    );
    assert!(
        !check.stdout.contains("never completed"),
        "a finished night is not cut short:\n{}",
        check.stdout
    );

    let json = json_of(&replay_check(&record, true));
    assert_eq!(json["ok"], Value::Bool(false), "{json}");
    assert_eq!(json["ended"], Value::Bool(true), "{json}");
    assert_eq!(json["truncated"], Value::Bool(false), "{json}");
    let lanes = json["lanes"].as_array().unwrap();
    assert_eq!(lanes.len(), 1, "{json}");
    let lane = &lanes[0];
    assert_eq!(number(lane, "rows"), number(&report, "rows"), "{json}");
    assert_eq!(
        number(lane, "duplicated_task_ids"),
        number(&report, "duplicated_task_ids"),
        "{json}"
    );
    assert_eq!(lane["derived_status"], report["derived_status"], "{json}");
    assert_eq!(lane["claimed_status"], report["claimed_status"], "{json}");
    assert_eq!(lane["completed"], Value::Bool(true), "{json}");
}

#[test]
fn a_recorded_guarded_night_with_seeded_kills_replays_to_ok() {
    let tmp = crate::support::tempdir();
    let db = tmp.path().join("g.db");
    let record = tmp.path().join("g.jsonl");
    let run = recorded_night(
        &db,
        &record,
        &[
            "--strategy",
            "guarded",
            "--kills",
            "3",
            "--seed",
            "9",
            "--delay-ms",
            "4",
            "--kill-window",
            "0.05..0.3",
            "--json",
        ],
    );
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    let report = json_of(&run);
    assert_eq!(number(&report, "rows"), 200, "{report}");
    assert_eq!(number(&report, "duplicated_task_ids"), 0, "{report}");
    // Not a night that happened to dodge every kill.
    let recording = load(&record);
    assert!(
        !recording.kill_moments().is_empty(),
        "the recording has no kill: {:?}",
        recording.events
    );
    assert_eq!(
        recording.kill_moments().len() as u64,
        number(&report, "kills")
    );

    let check = replay_check(&record, false);
    assert_eq!(check.code, Some(0), "{}\n{}", check.stdout, check.stderr);
    let verdict = lane_line(&check, "guarded");
    assert!(
        verdict.contains("claimed=ok derived=ok")
            && verdict.contains("rows=200 duplicated_task_ids=0"),
        "{verdict}"
    );

    let json = json_of(&replay_check(&record, true));
    assert_eq!(json["ok"], Value::Bool(true), "{json}");
    let lane = &json["lanes"][0];
    assert_eq!(number(lane, "rows"), number(&report, "rows"), "{json}");
    assert_eq!(number(lane, "duplicated_task_ids"), 0, "{json}");
}

#[test]
fn the_replay_dashboard_shows_the_live_figures_at_the_end_and_at_any_moment() {
    let tmp = crate::support::tempdir();
    let (record, _db, report) = naive_crash_night(tmp.path());
    let recording = load(&record);
    let kill_sim = recording
        .events
        .iter()
        .find(|e| e.mark == Some(Mark::Kill))
        .map_or_else(
            || panic!("no kill event in {:?}", recording.events),
            |e| e.sim,
        );
    let mut app = ReplayApp::new(recording.clone());

    // The end of the night: the live run's figures and verdict.
    app.seek(f64::MAX);
    let end = app.view();
    let lane = &end.lanes[0];
    assert_eq!(lane.rows, number(&report, "rows"));
    assert_eq!(lane.rows, NAIVE_ROWS);
    assert_eq!(lane.duplicated, NAIVE_DUPLICATED);
    assert!(lane.derived.contains(NAIVE_DERIVED), "{}", lane.derived);
    assert_eq!(lane.derived_ok, Some(false));
    assert_eq!(lane.claimed.as_deref(), Some("rows_written=312 status=ok"));
    assert!(
        end.symptoms.iter().all(|(_, lit)| *lit),
        "every symptom is lit at the end: {:?}",
        end.symptoms
    );
    assert!(
        end.timeline
            .iter()
            .any(|(l, _)| l.contains("instance reclaimed by host")),
        "{:?}",
        end.timeline
    );
    assert!(!end.replay.as_ref().unwrap().partial);

    // Scrubbed back to just before the crash: what was recorded then, not the end's figures.
    let before = kill_sim - 1.0;
    let recorded = recording
        .samples
        .iter()
        .rfind(|s| s.sim <= before)
        .unwrap_or_else(|| panic!("no sample before {before}"));
    let recorded = &recorded.lanes[0];
    assert!(recorded.rows > 0, "the night had begun: {recorded:?}");
    app.seek(before);
    let then = app.view();
    let lane = &then.lanes[0];
    assert!((then.clock.0 - before).abs() < 1e-9, "{:?}", then.clock);
    assert_eq!(lane.rows, recorded.rows);
    assert_eq!(lane.distinct, recorded.distinct);
    assert!(lane.rows <= 112, "rows={} before the crash", lane.rows);
    assert_eq!(lane.duplicated, 0);
    assert_eq!(lane.claimed, None);
    assert!(lane.derived.starts_with("in progress"), "{}", lane.derived);
    assert_eq!(lane.derived_ok, None);
    assert!(lane.markers.is_empty(), "{:?}", lane.markers);
    assert!(
        then.symptoms.iter().all(|(_, lit)| !*lit),
        "no symptom yet before the crash: {:?}",
        then.symptoms
    );
    assert!(
        !then
            .timeline
            .iter()
            .any(|(l, _)| l.contains("instance reclaimed by host")),
        "{:?}",
        then.timeline
    );
}

#[test]
fn a_recorded_kill_schedule_kills_another_strategy_at_the_same_places() {
    let tmp = crate::support::tempdir();
    let a = tmp.path().join("A.jsonl");
    let b = tmp.path().join("B.jsonl");
    let first = recorded_night(
        &tmp.path().join("a.db"),
        &a,
        &[
            "--strategy",
            "naive",
            "--kills",
            "3",
            "--seed",
            "9",
            "--delay-ms",
            "10",
        ],
    );
    assert_eq!(first.code, Some(1), "{}\n{}", first.stdout, first.stderr);
    let b_db = tmp.path().join("b.db");
    let second = recorded_night(
        &b_db,
        &b,
        &["--strategy", "guarded", "--replay-schedule", path_arg(&a)],
    );
    assert_eq!(second.code, Some(0), "{}\n{}", second.stdout, second.stderr);
    let plan = second
        .stdout
        .lines()
        .find(|l| l.starts_with("kill plan"))
        .unwrap_or_else(|| panic!("no kill plan line:\n{}", second.stdout));
    assert!(plan.contains("kills replayed from a recording"), "{plan}");

    // The first kill lands after the same committed task, whatever the strategy; the later
    // ones at the same places too, as far as guarded (which resumes) can reach them.
    let (a_kills, b_kills) = (load(&a).kill_moments(), load(&b).kill_moments());
    assert!(!a_kills.is_empty(), "the first night had no kill");
    assert_eq!(a_kills.len(), b_kills.len(), "{a_kills:?} vs {b_kills:?}");
    assert_eq!(a_kills[0], b_kills[0], "{a_kills:?} vs {b_kills:?}");
    let conn = open_ro(&b_db);
    assert_eq!(rows(&conn), 200);
    assert_eq!(distinct(&conn), 200);
    assert!(duplicated_ids(&conn).is_empty());
}

/// A good, short recording to spoil.
fn good_recording(dir: &Path) -> Vec<u8> {
    let record = dir.join("good.jsonl");
    let run = recorded_night(
        &dir.join("good.db"),
        &record,
        &["--strategy", "guarded", "--delay-ms", "2"],
    );
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    read_bytes(&record)
}

/// Refused by both `replay --check` and `run --replay-schedule`: exit 2, one line naming the
/// file and `needle`, nothing printed, no database created, the file left as it was.
fn assert_refused(dir: &Path, file: &Path, needle: &str) {
    let before = fs::read(file).ok();
    let shown = path_arg(file);
    let check = replay_check(file, false);
    assert_one_line_error(&check, needle);
    assert!(check.stderr.contains(shown), "{}", check.stderr);
    assert!(check.stdout.is_empty(), "{}", check.stdout);

    let db = dir.join("refused.db");
    let run = reclaim(&[
        "run",
        "--strategy",
        "guarded",
        "--delay-ms",
        "2",
        "--db",
        path_arg(&db),
        "--replay-schedule",
        path_arg(file),
    ]);
    assert_one_line_error(&run, needle);
    assert!(run.stderr.contains(shown), "{}", run.stderr);
    assert!(run.stdout.is_empty(), "{}", run.stdout);
    assert!(!db.exists(), "a refused run created {}", db.display());
    assert_eq!(fs::read(file).ok(), before, "{} changed", file.display());
}

/// A recording that is not there; the broken ones, as files, are `recording_files`'.
#[test]
fn a_missing_recording_is_refused_with_one_line() {
    let tmp = crate::support::tempdir();
    let dir = tmp.path();
    assert_refused(dir, &dir.join("missing.jsonl"), "does not exist");
}

#[test]
fn a_recording_torn_in_its_last_line_is_checked_with_a_warning() {
    let tmp = crate::support::tempdir();
    let good = good_recording(tmp.path());
    // Cut in the middle of the last line (the verdict).
    let body = good.strip_suffix(b"\n").unwrap();
    let last_start = body.iter().rposition(|&b| b == b'\n').unwrap() + 1;
    let cut = last_start + (body.len() - last_start) / 2;
    let torn = tmp.path().join("torn.jsonl");
    fs::write(&torn, &body[..cut]).unwrap();
    assert!(load(&torn).truncated);

    let check = replay_check(&torn, false);
    assert!(
        matches!(check.code, Some(0 | 1)),
        "a torn recording is still checked:\n{}\n{}",
        check.stdout,
        check.stderr
    );
    let warnings = check.stderr_lines();
    assert_eq!(warnings.len(), 1, "{}", check.stderr);
    assert!(
        warnings[0].contains("warning") && warnings[0].contains("cut short"),
        "{}",
        warnings[0]
    );
    let verdict = lane_line(&check, "guarded");
    assert!(
        verdict.contains("rows=200 duplicated_task_ids=0"),
        "{verdict}"
    );
    // The verdict line was the part torn off: the recording cannot show the night ended.
    assert_eq!(check.code, Some(1), "{}", check.stdout);
    assert!(check.stdout.contains("never completed"), "{}", check.stdout);

    let json = json_of(&replay_check(&torn, true));
    assert_eq!(json["truncated"], Value::Bool(true), "{json}");
    assert_eq!(json["ok"], Value::Bool(false), "{json}");
}

#[test]
fn a_recording_cut_after_a_few_lines_never_completed() {
    let tmp = crate::support::tempdir();
    let good = good_recording(tmp.path());
    let text = String::from_utf8(good).unwrap();
    let head: Vec<&str> = text.lines().take(4).collect();
    let cut = tmp.path().join("cut.jsonl");
    fs::write(&cut, format!("{}\n", head.join("\n"))).unwrap();

    let check = replay_check(&cut, false);
    assert_eq!(check.code, Some(1), "{}\n{}", check.stdout, check.stderr);
    assert!(check.stderr.trim().is_empty(), "{}", check.stderr);
    assert!(check.stdout.contains("never completed"), "{}", check.stdout);
    let json = json_of(&replay_check(&cut, true));
    assert_eq!(json["ended"], Value::Bool(false), "{json}");
    assert_eq!(json["ok"], Value::Bool(false), "{json}");
    assert_eq!(json["lanes"][0]["completed"], Value::Bool(false), "{json}");
}

#[test]
fn record_refuses_an_existing_file_and_leaves_it_alone() {
    let tmp = crate::support::tempdir();
    let record = tmp.path().join("R.jsonl");
    fs::write(&record, "precious\n").unwrap();
    let db = tmp.path().join("x.db");
    let run = recorded_night(&db, &record, &["--strategy", "guarded", "--delay-ms", "2"]);
    assert_one_line_error(&run, "already exists");
    assert!(run.stderr.contains("R.jsonl"), "{}", run.stderr);
    assert_eq!(read_bytes(&record), b"precious\n");
    assert!(!db.exists(), "a refused run created {}", db.display());
}

/// A `reclaim run` started by a test, SIGKILLed (and reaped) whenever the test lets go of it.
struct Night(Child);

impl Night {
    fn pid(&self) -> Pid {
        Pid::from_raw(i32::try_from(self.0.id()).unwrap_or(i32::MAX))
    }
}

impl Drop for Night {
    fn drop(&mut self) {
        // Not reaped until `wait` below, so the pid still names our child.
        let _ = kill(self.pid(), Signal::SIGKILL);
        let _ = self.0.wait();
    }
}

/// `pid=NNN` from an event's text.
fn pid_in(text: &str) -> Option<i32> {
    text.split_whitespace()
        .find_map(|word| word.strip_prefix("pid="))
        .and_then(|pid| pid.parse().ok())
}

/// The recording at `path` once it has `lines` complete lines and a worker's `start` event
/// (whose pid is returned), or a failure after the deadline.
fn wait_for_recording(path: &Path, lines: usize) -> i32 {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let complete = fs::read_to_string(path).map_or(0, |t| t.matches('\n').count());
        let pid = Recording::load(path).ok().and_then(|r| {
            r.events
                .iter()
                .find(|e| e.kind == reclaim::engine::Kind::Start)
                .and_then(|e| pid_in(&e.text))
        });
        if let (true, Some(pid)) = (complete >= lines, pid) {
            return pid;
        }
        assert!(
            Instant::now() < deadline,
            "{} has {complete} lines and no worker start after 30 s",
            path.display()
        );
        thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn a_session_killed_mid_night_leaves_a_readable_recording() {
    let tmp = crate::support::tempdir();
    let record = tmp.path().join("R.jsonl");
    let mut night = Night(
        crate::support::reclaim_command()
            .args(["run", "--strategy", "guarded", "--delay-ms", "20"])
            .arg("--record")
            .arg(&record)
            .arg("--db")
            .arg(tmp.path().join("r.db"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let worker = wait_for_recording(&record, 5);
    kill(night.pid(), Signal::SIGKILL).unwrap();
    let status = night.0.wait().unwrap();
    assert!(!status.success(), "{status:?}");
    assert!(
        gone_within(worker, Duration::from_secs(1)),
        "worker pid {worker} outlived its SIGKILLed reclaim"
    );

    let recording = load(&record);
    assert_eq!(recording.header.lanes.len(), 1);
    assert_eq!(recording.header.lanes[0].strategy.name(), "guarded");
    assert!(!recording.samples.is_empty(), "no samples");
    assert!(recording.end.is_none(), "the night did not end");
    let app = ReplayApp::new(recording);
    assert!(app.view().replay.unwrap().partial);

    let check = replay_check(&record, false);
    assert_eq!(check.code, Some(1), "{}\n{}", check.stdout, check.stderr);
    assert!(check.stdout.contains("never completed"), "{}", check.stdout);
}

#[test]
fn a_recording_replayed_onto_guarded_kills_at_the_same_task_at_another_pace() {
    let tmp = crate::support::tempdir();
    let (a, b) = (tmp.path().join("A.jsonl"), tmp.path().join("B.jsonl"));
    let first = recorded_night(
        &tmp.path().join("a.db"),
        &a,
        &["--strategy", "naive", "--kill-at-task", "task-111"],
    );
    assert_eq!(first.code, Some(1), "{}\n{}", first.stdout, first.stderr);
    // Another strategy at another pace: the same place is another moment of the night.
    let second = recorded_night(
        &tmp.path().join("b.db"),
        &b,
        &[
            "--strategy",
            "guarded",
            "--delay-ms",
            "4",
            "--replay-schedule",
            path_arg(&a),
        ],
    );
    assert_eq!(second.code, Some(0), "{}\n{}", second.stdout, second.stderr);
    assert!(
        second
            .stdout
            .contains("1 kill replayed from a recording: after task-111"),
        "{}",
        second.stdout
    );
    let item = second
        .stdout
        .lines()
        .find(|l| l.contains("worker  item"))
        .unwrap_or_else(|| panic!("no kill:\n{}", second.stdout));
    assert!(
        item.contains("task-112  in flight") && item.contains("last committed: task-111"),
        "{item}"
    );
    assert_eq!(load(&a).kill_moments(), load(&b).kill_moments());
    assert!(second.stdout.contains("kills=1"), "{}", second.stdout);
}
