//! Files written whole or not at all: an export that fails on a full disk leaves nothing (the
//! retry once there is room works); speaker notes that cannot be written leave no half line
//! and are said on screen once.

use std::fs;
use std::time::{Duration, Instant};

use crate::support::Dashboard;
use crate::support::mounted;
use crate::support::{path_arg, reclaim_in_dir, record_short_night};

const LIMIT: Duration = Duration::from_secs(60);

#[test]
fn an_export_that_fills_the_disk_leaves_no_file_and_the_retry_works() {
    let Some((tmp, dir, mount)) = mounted("size=8k") else {
        return;
    };
    record_short_night(tmp.path());
    let recording = tmp.path().join("night.jsonl");
    for name in ["night.cast", "frame.svg"] {
        let out = dir.join(name);
        let args = ["replay", path_arg(&recording), "--export", path_arg(&out)];
        let full = reclaim_in_dir(tmp.path(), &args, LIMIT);
        assert_eq!(full.code, Some(2), "{name}: {}", full.stderr);
        assert!(
            full.stderr.contains("No space left on device"),
            "{name}: {}",
            full.stderr
        );
        let left: Vec<String> = fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{e}"))
            .filter_map(Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        assert!(left.is_empty(), "{name}: left behind {left:?}");
        // Room again: the same command works (it said `already exists` to a half file).
        mount.remount("size=1m");
        let again = reclaim_in_dir(tmp.path(), &args, LIMIT);
        assert_eq!(again.code, Some(0), "{name}: {}", again.stderr);
        let text = fs::read_to_string(&out).unwrap_or_default();
        assert!(
            text.ends_with('\n') || text.trim_end().ends_with("</svg>"),
            "{name} is not whole"
        );
        fs::remove_file(&out).unwrap_or_else(|e| panic!("{e}"));
        mount.remount("size=8k");
    }
}

#[test]
fn notes_that_cannot_be_written_leave_no_half_line_and_are_said_on_screen() {
    let Some((tmp, dir, _mount)) = mounted("size=4k") else {
        return;
    };
    // A notes file reclaim wrote before, filling the one page the disk has but 20 bytes: the
    // night's heading (longer) cannot be appended whole.
    let notes = dir.join("notes.txt");
    let mut text = String::from("# reclaim speaker notes: an earlier night\n");
    while text.len() < 4096 - 20 {
        text.push_str("# padding\n");
    }
    fs::write(&notes, &text).unwrap_or_else(|e| panic!("{e}"));
    let before = fs::read(&notes).unwrap_or_default();
    let mut dashboard = Dashboard::start(
        &["tui", "--lecture", "--notes", path_arg(&notes)],
        tmp.path(),
        120,
        40,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    dashboard
        .wait_for(
            "the notes' failure said on screen",
            Instant::now() + Duration::from_secs(30),
            |s| s.contents().contains("stopped: No space left on device"),
        )
        .unwrap_or_else(|e| panic!("{e}"));
    dashboard.send(b"q").unwrap_or_else(|e| panic!("{e}"));
    let _ = dashboard.wait_exit(Duration::from_secs(10));
    let after = fs::read(&notes).unwrap_or_default();
    assert!(
        after == before,
        "the notes were cut mid-line: they end {:?}",
        String::from_utf8_lossy(&after[after.len().saturating_sub(40)..])
    );
}

/// A recording that meets a full disk stops, said once on stderr; the night goes on to its
/// verdict and says where its database is (before, the night's end printed only the error, and
/// exit 2: no verdict, no database).
#[test]
fn a_recording_that_fills_the_disk_stops_and_the_night_still_gives_its_verdict() {
    let Some((tmp, dir, _mount)) = mounted("size=4k") else {
        return;
    };
    let record = dir.join("rec.jsonl");
    let db = tmp.path().join("w.db");
    let args = [
        "run",
        "--strategy",
        "naive",
        "--items",
        "300",
        "--delay-ms",
        "2",
        "--kill-at-rows",
        "150",
        "--record",
        path_arg(&record),
        "--db",
        path_arg(&db),
    ];
    let run = reclaim_in_dir(tmp.path(), &args, LIMIT);
    assert_eq!(run.code, Some(1), "{}\n{}", run.stdout, run.stderr);
    let warned: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.contains("No space left on device"))
        .collect();
    assert_eq!(warned.len(), 1, "{}", run.stderr);
    assert!(
        warned[0].contains("the recording stops here"),
        "{}",
        run.stderr
    );
    assert!(
        run.stdout
            .contains("verdict      claimed=ok derived=DATA WRONG"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains(&format!("database     {}", path_arg(&db))),
        "{}",
        run.stdout
    );
    // What was written is whole up to its last line: a replay reads it.
    let replay = reclaim_in_dir(tmp.path(), &["replay", path_arg(&record), "--check"], LIMIT);
    assert_ne!(replay.code, Some(2), "{}", replay.stderr);
}
