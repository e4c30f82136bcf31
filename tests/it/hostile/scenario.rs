//! Scenario files are data: a lane that runs a command runs only with `--allow-exec`, and the
//! refusal shows each command in full.

use std::path::Path;
use std::time::Duration;

use super::{tempdir, write};
use crate::support::{assert_one_line_error, path_arg, reclaim_in_dir};

const LIMIT: Duration = Duration::from_secs(60);

/// `evil.toml`: a lane that looks like reclaim's own and runs `touch pwned` when opened.
fn evil(dir: &Path, name: &str) -> std::path::PathBuf {
    let path = dir.join("evil.toml");
    write(
        &path,
        &format!(
            "title = \"looks harmless\"\nitems = 5\ndelay_ms = 0.0\n\
             [[lane]]\nname = \"{name}\"\nexec = \"touch pwned; echo done rows_written=0 status=ok\"\n\
             [[lane]]\nstrategy = \"guarded\"\n"
        ),
    );
    path
}

#[test]
fn a_scenario_that_runs_a_command_is_refused_without_allow_exec_and_shows_it() {
    let tmp = tempdir();
    let file = evil(tmp.path(), "guarded-v2");
    for command in ["run", "tui"] {
        let run = reclaim_in_dir(tmp.path(), &[command, "--scenario", path_arg(&file)], LIMIT);
        assert_one_line_error(
            &run,
            "lane guarded-v2 runs `touch pwned; echo done rows_written=0 status=ok`",
        );
        assert!(run.stderr.contains("--allow-exec"), "{}", run.stderr);
        assert!(
            !tmp.path().join("pwned").exists()
                && std::fs::read_dir(tmp.path())
                    .into_iter()
                    .flatten()
                    .flatten()
                    .all(|e| !e.path().join("night1-1-guarded-v2").join("pwned").exists()),
            "{command}: the command ran"
        );
    }
}

#[test]
fn with_allow_exec_the_command_runs_and_is_printed_first() {
    let tmp = tempdir();
    let file = evil(tmp.path(), "my-job");
    let run = reclaim_in_dir(
        tmp.path(),
        &["run", "--scenario", path_arg(&file), "--allow-exec"],
        LIMIT,
    );
    let first = run.stderr.lines().next().unwrap_or_default();
    assert!(
        first.contains("lane my-job runs `touch pwned; echo done rows_written=0 status=ok`"),
        "{}",
        run.stderr
    );
    assert!(
        run.stdout.starts_with("reclaim run  scenario="),
        "{}",
        run.stdout
    );
}

#[test]
fn an_exec_lane_cannot_take_a_strategys_name() {
    let tmp = tempdir();
    let file = evil(tmp.path(), "naive");
    let run = reclaim_in_dir(
        tmp.path(),
        &["run", "--scenario", path_arg(&file), "--allow-exec"],
        LIMIT,
    );
    assert_one_line_error(&run, "an exec lane named \"naive\"");
    assert!(!run.stdout.contains("lanes=naive"), "{}", run.stdout);
}

#[test]
fn shipped_scenarios_need_no_flag() {
    let tmp = tempdir();
    let run = reclaim_in_dir(
        tmp.path(),
        &["run", "--scenario", "crash-window", "--json"],
        Duration::from_secs(120),
    );
    assert!(run.code == Some(0) || run.code == Some(1), "{}", run.stderr);
    assert!(!run.stderr.contains("--allow-exec"), "{}", run.stderr);
}

#[test]
fn map_refuses_a_strategy_named_twice() {
    let tmp = tempdir();
    let run = reclaim_in_dir(
        tmp.path(),
        &["map", "--strategy", "naive,naive", "--items", "3"],
        LIMIT,
    );
    assert_one_line_error(&run, "naive is named twice");
    assert!(!run.stderr.contains("stopped by"), "{}", run.stderr);
}
