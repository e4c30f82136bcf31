//! `run --scenario NAME --record FILE`: a shipped scenario's night recorded headless, for a
//! replay or slides without the dashboard, and read back to the same verdict.

use std::time::Duration;

use crate::support::{path_arg, reclaim_in_dir};

#[test]
fn a_scenario_run_headless_records_its_night_and_the_replay_reads_the_same_verdict() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let record = dir.path().join("night.jsonl");
    let limit = Duration::from_secs(120);
    let run = reclaim_in_dir(
        dir.path(),
        &[
            "run",
            "--scenario",
            "crash-window",
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
