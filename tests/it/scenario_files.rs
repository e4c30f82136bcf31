//! Scenario files as fixtures: each broken one under `tests/fixtures/scenarios/refused/` is
//! refused by `reclaim tui --scenario FILE` (validated before a terminal is needed, so plain
//! pipes do) in exactly the line its snapshot (`NAME.refusal`, the file's path written `FILE`)
//! holds, exit 2, nothing printed on stdout and nothing in its folder changed.
//! `RECLAIM_BLESS=1 cargo test --test it scenario_files` writes the snapshots anew, as insta's
//! review does: read the diff before committing it.

use std::fs;
use std::path::{Path, PathBuf};

use crate::support::{path_arg, reclaim_in, snapshot_tree, tempdir};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/scenarios/refused")
}

#[test]
fn every_broken_scenario_fixture_is_refused_in_its_snapshot_line() {
    let dir = fixtures();
    let mut names: Vec<String> = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .filter_map(|p| p.file_name()?.to_str().map(str::to_owned))
        .collect();
    names.sort();
    // The fixtures as committed: a folder read empty would pass vacuously.
    assert!(names.len() >= 40, "{names:?}");
    let bless = std::env::var_os("RECLAIM_BLESS").is_some();
    let mut failures = Vec::new();
    for name in &names {
        let tmp = tempdir();
        let file = tmp.path().join(name);
        fs::copy(dir.join(name), &file).unwrap_or_else(|e| panic!("{name}: {e}"));
        let before = snapshot_tree(tmp.path());
        let run = reclaim_in(tmp.path(), &["tui", "--scenario", path_arg(&file)]);
        if run.code != Some(2) || !run.stdout.is_empty() {
            failures.push(format!(
                "{name}: exit {:?}, stdout {:?}",
                run.code, run.stdout
            ));
        }
        if snapshot_tree(tmp.path()) != before {
            failures.push(format!("{name}: reclaim changed or added files"));
        }
        let said = run.stderr.replace(path_arg(&file), "FILE");
        let snapshot = dir.join(name.replace(".toml", ".refusal"));
        if bless {
            fs::write(&snapshot, &said).unwrap_or_else(|e| panic!("{name}: {e}"));
            continue;
        }
        let expected = fs::read_to_string(&snapshot)
            .unwrap_or_else(|e| panic!("{}: {e} (RECLAIM_BLESS=1 writes it)", snapshot.display()));
        if said != expected || said.lines().count() != 1 {
            failures.push(format!(
                "{name}:\n  expected {expected:?}\n  said     {said:?}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
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
