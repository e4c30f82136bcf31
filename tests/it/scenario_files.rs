//! Scenario files as fixtures: each broken one under `tests/fixtures/scenarios/refused/` is
//! refused by `reclaim tui --scenario FILE` (validated before a terminal is needed, so plain
//! pipes do) in exactly the line its snapshot holds (`support::fixtures`).
//! `RECLAIM_BLESS=1 cargo test --test it scenario_files` writes the snapshots anew.

use std::fs;

use crate::support::fixtures::{assert_fixtures_as_snapshotted, refusals};
use crate::support::{path_arg, reclaim_in, tempdir};

#[test]
fn every_broken_scenario_fixture_is_refused_in_its_snapshot_line() {
    assert_fixtures_as_snapshotted("scenarios/refused", "toml", 40, "refusal", |file, dir| {
        refusals(file, dir, &[&["tui", "--scenario", file]])
    });
}

/// A folder where the file should be.
#[test]
fn a_folder_named_as_the_scenario_is_refused_in_one_line() {
    let tmp = tempdir();
    let dir = tmp.path().join("folder.toml");
    fs::create_dir(&dir).unwrap_or_else(|e| panic!("{e}"));
    let run = reclaim_in(tmp.path(), &["tui", "--scenario", path_arg(&dir)]);
    crate::support::assert_one_line_error(&run, "scenario");
    crate::support::assert_one_line_error(&run, "is a folder");
}
