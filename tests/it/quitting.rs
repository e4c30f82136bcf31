//! Esc never ends a night: in the live dashboard's lecture (after a look back too) and in a
//! replay, Esc leaves the night running; `q` quits, and the help says so. The real binary in a
//! pty, read back through a vt100 emulator.
//!
//! Keys are typed in one write after each Esc: crossterm reads an Esc followed at once by
//! another byte as Alt+that key, but two Esc bytes together as one Esc, so `ESC ESC ?` is Esc
//! then `?`, in that order, with no wait between them.

use std::time::Instant;

use crate::support::Dashboard;
use crate::support::path_arg;
use crate::support::{PROMPTLY, STARTUP};

/// Tall enough for the whole help, its `q` line last.
const COLS: u16 = 110;
const ROWS: u16 = 60;

/// One Esc, then `?`: the help opens only if the Esc before it did not quit.
const ESC_THEN_HELP: &[u8] = b"\x1b\x1b?";

/// Types Esc then `?` and waits for the help, which names `q`, Ctrl-C and Esc; closes it.
fn esc_keeps_the_night(dashboard: &mut Dashboard, mode: &str) {
    dashboard
        .send(ESC_THEN_HELP)
        .unwrap_or_else(|e| panic!("{e}"));
    // The help's last line, drawn whole: `q  quit (or Ctrl-C; Esc never quits): ...`.
    let quit_line = |s: &vt100::Screen| {
        (s.contents().lines())
            .any(|l| l.contains(" q ") && l.contains("quit (or Ctrl-C; Esc never quits)"))
    };
    dashboard
        .wait_for(
            &format!("the help's q line after Esc ({mode})"),
            Instant::now() + PROMPTLY,
            quit_line,
        )
        .unwrap_or_else(|e| panic!("{e}"));
    // Any key over the help only closes it.
    dashboard.send(b"x").unwrap_or_else(|e| panic!("{e}"));
    dashboard
        .wait_for("the help closed", Instant::now() + PROMPTLY, |s| {
            !s.contents().contains("only closes this")
        })
        .unwrap_or_else(|e| panic!("{e}"));
}

fn q_quits(dashboard: &mut Dashboard) {
    dashboard.send(b"q").unwrap_or_else(|e| panic!("{e}"));
    let status = dashboard
        .wait_exit(PROMPTLY)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(status.exit_code(), 0, "{}", dashboard.text());
}

#[test]
fn esc_in_a_lecture_and_after_a_look_back_does_not_quit() {
    let tmp = crate::support::tempdir();
    let mut dashboard = Dashboard::start(&["tui", "--lecture"], tmp.path(), COLS, ROWS)
        .unwrap_or_else(|e| panic!("{e}"));
    dashboard
        .wait_for("the first stop", Instant::now() + STARTUP, |s| {
            s.contents().contains("02:00, the nightly job")
        })
        .unwrap_or_else(|e| panic!("{e}"));
    esc_keeps_the_night(&mut dashboard, "lecture");
    // `b`, Esc (back to now), Esc: the second used to quit.
    dashboard.send(b"b").unwrap_or_else(|e| panic!("{e}"));
    dashboard
        .wait_for("the look back", Instant::now() + PROMPTLY, |s| {
            s.contents().contains("LOOKING BACK")
        })
        .unwrap_or_else(|e| panic!("{e}"));
    dashboard
        .send(b"\x1b\x1b")
        .unwrap_or_else(|e| panic!("{e}"));
    dashboard
        .wait_for("back to now", Instant::now() + PROMPTLY, |s| {
            !s.contents().contains("LOOKING BACK")
        })
        .unwrap_or_else(|e| panic!("{e}"));
    esc_keeps_the_night(&mut dashboard, "after a look back");
    q_quits(&mut dashboard);
}

#[test]
fn esc_in_a_replay_does_not_quit() {
    let tmp = crate::support::tempdir();
    let record = tmp.path().join("night.jsonl");
    let db = tmp.path().join("w.db");
    let run = crate::support::reclaim(&[
        "run",
        "--strategy",
        "naive",
        "--db",
        path_arg(&db),
        "--items",
        "5",
        "--delay-ms",
        "0",
        "--record",
        path_arg(&record),
    ]);
    assert!(record.is_file(), "{}\n{}", run.stdout, run.stderr);
    let mut dashboard = Dashboard::start(&["replay", path_arg(&record)], tmp.path(), COLS, ROWS)
        .unwrap_or_else(|e| panic!("{e}"));
    dashboard
        .wait_for("the replay", Instant::now() + STARTUP, |s| {
            s.contents().contains("REPLAY")
        })
        .unwrap_or_else(|e| panic!("{e}"));
    esc_keeps_the_night(&mut dashboard, "replay");
    q_quits(&mut dashboard);
}
