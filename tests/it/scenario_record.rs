//! Nights recorded: `run --scenario NAME --record FILE` (a shipped scenario's night headless,
//! for a replay or slides without the dashboard, read back to the same verdict), a scenario
//! whose last caption comes after its last line, and a session of several nights in the
//! dashboard under `--record FILE`.

use std::time::{Duration, Instant};

use reclaim::record::Recording;

use crate::support::{COLS, Dashboard, PROMPTLY, ROWS, past_the_first_caption};
use crate::support::{path_arg, reclaim_in_dir};

#[test]
fn a_scenario_run_headless_records_its_night_and_the_replay_reads_the_same_verdict() {
    let dir = crate::support::tempdir();
    let record = dir.path().join("night.jsonl");
    let limit = Duration::from_secs(120);
    let run = reclaim_in_dir(
        dir.path(),
        &[
            "run",
            "--scenario",
            "crash-window",
            "--speed",
            "16",
            "--record",
            path_arg(&record),
        ],
        limit,
    );
    // 1: the night ran and two-commit's data is wrong, as the scenario means it to be.
    assert_eq!(run.code, Some(1), "{}\n{}", run.stdout, run.stderr);
    assert!(record.is_file(), "{}", run.stdout);
    let check = reclaim_in_dir(dir.path(), &["replay", "--check", path_arg(&record)], limit);
    assert_eq!(check.code, Some(1), "{}\n{}", check.stdout, check.stderr);
    let lane = |name: &str| {
        (check.stdout.lines())
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap_or_else(|| panic!("no {name} in\n{}", check.stdout))
            .to_string()
    };
    assert!(
        lane("two-commit").contains("derived=DATA WRONG (1 duplicated task id)"),
        "{}",
        check.stdout
    );
    assert!(lane("guarded").contains("derived=ok"), "{}", check.stdout);
    // The kill at the crash point names the task it left half done, not the next one.
    assert!(
        run.stdout.contains(
            "two-commit  worker  item    task-050  its row committed, its checkpoint not"
        ),
        "{}",
        run.stdout
    );
    // The run's own verdict lines say the same.
    assert!(
        run.stdout
            .contains("two-commit  claimed=ok derived=DATA WRONG (1 duplicated task id)"),
        "{}",
        run.stdout
    );
}

/// The pause's fenced caption is set for 02:01:30, five seconds after the night's last line
/// (claim's sleeper done at 02:01:25): the recording ends there, so a replay reaches it (it
/// ended at 02:01:25, and the caption was never shown; a lecture said "nothing left to stop
/// at" while it was still ahead).
#[test]
fn a_caption_after_the_last_line_is_where_the_recording_ends() {
    let dir = crate::support::tempdir();
    let record = dir.path().join("pause.jsonl");
    let limit = Duration::from_secs(120);
    let args = [
        "run",
        "--scenario",
        "the-pause",
        "--record",
        path_arg(&record),
    ];
    let run = reclaim_in_dir(dir.path(), &args, limit);
    assert_eq!(run.code, Some(1), "{}\n{}", run.stdout, run.stderr);
    let recording = Recording::load(&record).unwrap_or_else(|e| panic!("{e}"));
    let last_line = (recording.events.iter()).fold(0.0, |t: f64, e| t.max(e.sim));
    let end = recording.end.as_ref().map(|e| e.sim);
    let fenced_caption = 2.0 * 3600.0 + 90.0;
    assert!(last_line < fenced_caption, "{last_line}");
    assert_eq!(end, Some(fenced_caption), "{:?}", recording.end);
}

/// `tui --record night.jsonl`, then `s` (another strategy: a new night): the named file keeps
/// the first night, said cut short, and the second goes beside it, in `night-2.jsonl`, which
/// the screen names; both are named when the dashboard ends. Before, the named file was cut
/// off and the rest of the session recorded in the temporary folder.
#[test]
fn a_new_night_under_record_goes_beside_the_named_file() {
    let dir = crate::support::tempdir();
    let named = dir.path().join("night.jsonl");
    let beside = dir.path().join("night-2.jsonl");
    let mut dashboard = Dashboard::start(
        &["tui", "--record", path_arg(&named)],
        dir.path(),
        COLS,
        ROWS,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    past_the_first_caption(&mut dashboard);
    dashboard.send(b"s").unwrap_or_else(|e| panic!("{e}"));
    let deadline = Instant::now() + Duration::from_secs(60);
    dashboard
        .wait_for("the second night's recording named", deadline, |screen| {
            screen.contents().contains("night-2.jsonl")
        })
        .unwrap_or_else(|e| panic!("{e}"));
    dashboard.send(b"q").unwrap_or_else(|e| panic!("{e}"));
    let status = dashboard
        .wait_exit(PROMPTLY)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(status.exit_code(), 0, "{status:?}\n{}", dashboard.text());
    let first = Recording::load(&named).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        first.end.is_none(),
        "the first night was cut short: {:?}",
        first.end
    );
    let second = Recording::load(&beside).unwrap_or_else(|e| panic!("{e}"));
    assert_ne!(first.header.title, "", "{:?}", first.header);
    assert_ne!(
        (first.header.lanes.iter().map(|l| l.name.clone())).collect::<Vec<_>>(),
        (second.header.lanes.iter().map(|l| l.name.clone())).collect::<Vec<_>>(),
        "the second night runs another strategy"
    );
    let said = dashboard.text();
    for file in ["night.jsonl", "night-2.jsonl"] {
        assert!(
            said.contains(&format!("{file} (reclaim replay")),
            "{file} not named at the end:\n{said}"
        );
    }
}
