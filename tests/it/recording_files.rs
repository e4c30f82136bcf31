//! Recordings as fixtures. Each broken one under `tests/fixtures/recordings/refused/` is
//! refused in exactly the line its snapshot holds (`support::fixtures`) by all three readers of a
//! recording: `replay --check`, `replay` (the dashboard loads the file before it needs a
//! terminal) and `run --replay-schedule` (which creates no database). Each valid one under
//! `valid/` is checked by `replay --check` to exactly its `NAME.check` snapshot.
//! `RECLAIM_BLESS=1 cargo test --test it recording_files` writes the snapshots anew.
//!
//! The fixtures are one recorded night (`run --strategy guarded --items 20 --delay-ms 0`), its
//! database named relatively, spoiled one way each; a change to the recording's format that
//! stops reading them is a change these tests are meant to show.

use std::fs;

use crate::support::fixtures::{Said, assert_fixtures_as_snapshotted, refusals};
use crate::support::{assert_one_line_error, path_arg, reclaim_in, tempdir};

#[test]
fn every_broken_recording_fixture_is_refused_in_its_snapshot_line_by_every_reader() {
    assert_fixtures_as_snapshotted("recordings/refused", "jsonl", 13, "refusal", |file, dir| {
        let db = dir.join("refused.db");
        let db = path_arg(&db);
        let schedule = [
            "run",
            "--strategy",
            "guarded",
            "--db",
            db,
            "--replay-schedule",
            file,
        ];
        refusals(
            file,
            dir,
            &[&["replay", "--check", file], &["replay", file], &schedule],
        )
    });
}

/// Not every odd file is garbage: the night with Windows line endings reads as the same night.
#[test]
fn every_valid_recording_fixture_is_checked_to_its_snapshot() {
    assert_fixtures_as_snapshotted("recordings/valid", "jsonl", 2, "check", |file, dir| {
        let run = reclaim_in(dir, &["replay", "--check", file]);
        let mut wrong = Vec::new();
        if run.code != Some(0) || !run.stderr.is_empty() {
            wrong.push(format!("exit {:?}, stderr {:?}", run.code, run.stderr));
        }
        vec![Said {
            what: "replay --check".into(),
            text: run.stdout.replace(file, "FILE"),
            wrong,
        }]
    });
}

/// A folder where the recording should be, refused by every reader in one line.
#[test]
fn a_folder_named_as_the_recording_is_refused_in_one_line() {
    let tmp = tempdir();
    let folder = tmp.path().join("folder.jsonl");
    fs::create_dir(&folder).unwrap_or_else(|e| panic!("{e}"));
    let shown = path_arg(&folder);
    let db = tmp.path().join("refused.db");
    for args in [
        &["replay", "--check", shown][..],
        &["replay", shown],
        &[
            "run",
            "--strategy",
            "guarded",
            "--db",
            path_arg(&db),
            "--replay-schedule",
            shown,
        ],
    ] {
        let run = reclaim_in(tmp.path(), args);
        assert_one_line_error(&run, "is a folder");
        assert!(run.stdout.is_empty(), "{args:?}: {}", run.stdout);
    }
    assert!(!db.exists(), "a refused run created {}", db.display());
}
