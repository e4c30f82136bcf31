//! Pseudo-terminal tests of the dashboard: the real binary in a real pty, read back through a
//! vt100 emulator (ratatui redraws only the cells that changed, so only the emulated screen says
//! what a user sees), with real workers, real keys and signals, and the databases read back.

use std::collections::BTreeSet;
use std::fs;
use std::path::PathBuf;
use std::thread;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use portable_pty::CommandBuilder;

use crate::support::Dashboard;
use crate::support::{
    BIN, assert_one_line_error, duplicated_ids, open_ro, path_arg, reclaim_within, rows,
    workers_under,
};
use crate::support::{
    COLS, NAIVE_DB, PROMPTLY, ROWS, STARTUP, alive_worker, assert_no_worker_left,
    assert_refused_before_the_terminal, assert_terminal_restored, children, header_clock,
    past_the_first_caption, the_tui_dir, tui_dirs, wait_for_workers,
};
use crate::support::{
    GUARDED_DB, ORPHAN_GRACE, POLL, alive, collect_pids, lane_pids, lane_text, worker_of,
};

#[test]
fn the_dashboard_opens_and_its_clock_advances() {
    let tmp = crate::support::tempdir();
    let mut dashboard = Dashboard::start(&[], tmp.path(), COLS, ROWS).unwrap();
    past_the_first_caption(&mut dashboard);
    let mut first = None;
    dashboard
        .wait_for(
            "the header with reclaim and a 02:0x clock",
            Instant::now() + STARTUP,
            |screen| {
                first = header_clock(screen);
                first.as_ref().is_some_and(|(_, header)| {
                    header.contains("reclaim") && header.contains("02:0")
                })
            },
        )
        .unwrap();
    let (start, header) = first.unwrap();
    assert!(
        (2 * 3600..2 * 3600 + 10 * 60).contains(&start),
        "the night starts at 02:0x: {header}"
    );
    let mut later = None;
    dashboard
        .wait_for(
            "a later clock",
            Instant::now() + Duration::from_secs(5),
            |screen| {
                later = header_clock(screen);
                later.as_ref().is_some_and(|(t, _)| *t > start)
            },
        )
        .unwrap();
    let (_, later_header) = later.unwrap();
    assert!(
        later_header.contains("reclaim"),
        "the header lost its name: {later_header}"
    );
    // Each frame between the synchronized-update marks: a terminal that honours them never
    // shows one half drawn, and the tests read only whole ones.
    let frames = dashboard.whole_frames().unwrap();
    assert!(frames >= 2, "{frames} frames marked whole");
}

#[test]
fn k_kills_the_selected_lanes_real_worker_and_the_supervisor_restarts_it() {
    let tmp = crate::support::tempdir();
    let mut dashboard = Dashboard::start(&[], tmp.path(), COLS, ROWS).unwrap();
    past_the_first_caption(&mut dashboard);
    let reclaim = dashboard.pid();
    // The first lane (naive) is selected when the dashboard opens.
    let mut first = None;
    dashboard
        .wait_for(
            "the naive lane's running pid",
            Instant::now() + STARTUP,
            |screen| {
                first = lane_pids(screen, 0, 2)
                    .into_iter()
                    .find(|&p| worker_of(p, reclaim));
                first.is_some()
            },
        )
        .unwrap();
    let old = first.unwrap();
    let guarded = wait_for_workers(&mut dashboard, 2).unwrap()[1].clone();
    dashboard.send(b"k").unwrap();
    // The kill's caption holds the night while it is read: c goes on.
    dashboard
        .wait_for("the kill's caption", Instant::now() + STARTUP, |screen| {
            screen
                .contents()
                .contains("The host takes the machine back")
        })
        .unwrap();
    dashboard.send(b"c").unwrap();
    let (mut reclaimed, mut gone, mut restarted) = (false, false, None);
    dashboard
        .wait_for(
            &format!("naive's pid {old} reclaimed, gone, and a new worker running"),
            Instant::now() + Duration::from_secs(5),
            |screen| {
                reclaimed |= screen
                    .rows(0, COLS)
                    .any(|row| row.contains("instance reclaimed by host") && row.contains("naive"));
                gone |= !alive(old);
                restarted = restarted.or_else(|| {
                    lane_pids(screen, 0, 2)
                        .into_iter()
                        .find(|&p| p != old && worker_of(p, reclaim))
                });
                reclaimed && gone && restarted.is_some()
            },
        )
        .unwrap();
    let new = restarted.unwrap();
    assert_ne!(new, old);
    assert!(!alive(old), "the killed worker {old} came back");
    // k kills the selected lane only: guarded's worker is untouched.
    let screen_now = dashboard.text();
    assert!(
        guarded.iter().all(|&p| worker_of(p, reclaim)),
        "guarded's workers {guarded:?} died with naive's:\n{screen_now}"
    );
    assert!(
        !screen_now
            .lines()
            .any(|row| row.contains("reclaimed") && row.contains("guarded")),
        "guarded was reclaimed too:\n{screen_now}"
    );
}

#[test]
fn q_quits_leaving_no_worker_and_the_terminal_restored() {
    let tmp = crate::support::tempdir();
    let mut dashboard =
        Dashboard::start(&["tui", "--keep", "always"], tmp.path(), COLS, ROWS).unwrap();
    past_the_first_caption(&mut dashboard);
    let pids = collect_pids(&mut dashboard, 2, Duration::from_millis(1500)).unwrap();
    assert!(
        pids.iter().any(|&p| alive_worker(p)),
        "no pid on screen is a live worker: {pids:?}"
    );
    dashboard.send(b"q").unwrap();
    let status = dashboard.wait_exit(PROMPTLY).unwrap();
    assert_eq!(status.exit_code(), 0, "{status:?}:\n{}", dashboard.text());
    assert_no_worker_left(&pids);
    assert_terminal_restored(&dashboard);
    let text = dashboard.text();
    assert!(
        text.contains("databases are kept in") && text.contains("(--keep always"),
        "no word of the databases, or of the policy, after quitting:\n{text}"
    );
    let dir = the_tui_dir(tmp.path());
    assert!(
        text.contains(&dir.display().to_string()),
        "the message does not name {}:\n{text}",
        dir.display()
    );
    for name in [NAIVE_DB, GUARDED_DB] {
        let db = dir.join(name);
        assert!(db.is_file(), "{} is missing", db.display());
        let written = rows(&open_ro(&db));
        assert!(written > 0, "{} has no records", db.display());
    }
}

/// Opens the dashboard, stops it with `stop`, and checks it went promptly and cleanly.
fn assert_stops_cleanly(stop: impl FnOnce(&mut Dashboard) -> Result<(), String>) {
    let tmp = crate::support::tempdir();
    let mut dashboard = Dashboard::start(&[], tmp.path(), COLS, ROWS)
        .unwrap_or_else(|e| panic!("cannot start the dashboard: {e}"));
    let pids = collect_pids(&mut dashboard, 2, Duration::from_millis(500))
        .unwrap_or_else(|e| panic!("{e}"));
    stop(&mut dashboard).unwrap_or_else(|e| panic!("{e}"));
    let status = dashboard
        .wait_exit(PROMPTLY)
        .unwrap_or_else(|e| panic!("{e}"));
    // Killed by the signal would mean no cleanup ran at all.
    assert_eq!(
        status.signal(),
        None,
        "reclaim died of the signal:\n{}",
        dashboard.text()
    );
    assert_no_worker_left(&pids);
    assert_terminal_restored(&dashboard);
}

#[test]
fn ctrl_c_quits_cleanly() {
    assert_stops_cleanly(|d| d.send(b"\x03"));
}

#[test]
fn sigterm_quits_cleanly() {
    assert_stops_cleanly(|d| d.signal(Signal::SIGTERM));
}

#[test]
fn sighup_quits_cleanly() {
    assert_stops_cleanly(|d| d.signal(Signal::SIGHUP));
}

/// Both lanes finished: the notice says so, or each lane's state line reads `done`.
fn night_over(screen: &vt100::Screen) -> bool {
    let done = |lane| {
        lane_text(screen, lane, 2)
            .lines()
            .any(|row| row.contains("done  ") && row.contains("restarts"))
    };
    screen.contents().contains("the night is over") || (done(0) && done(1))
}

#[test]
fn the_default_night_ends_at_312_and_200_in_the_real_databases() {
    let tmp = crate::support::tempdir();
    let mut dashboard = Dashboard::start(&[], tmp.path(), COLS, ROWS).unwrap();
    // Not the captions' test (captions.rs is): past each caption's hold at once.
    dashboard
        .wait_past_captions(
            "the night is over",
            Instant::now() + Duration::from_secs(60),
            night_over,
        )
        .unwrap();
    dashboard
        .wait_for(
            "naive's claim and its verdict",
            Instant::now() + Duration::from_secs(5),
            |screen| {
                let naive = lane_text(screen, 0, 2);
                naive.contains("rows_written=312 status=ok")
                    && naive.contains("DATA WRONG (112 duplicated task ids)")
            },
        )
        .unwrap();
    dashboard
        .wait_for(
            "guarded's verdict",
            Instant::now() + Duration::from_secs(5),
            |screen| lane_text(screen, 1, 2).contains("derived ok"),
        )
        .unwrap();
    dashboard.send(b"q").unwrap();
    let status = dashboard.wait_exit(PROMPTLY).unwrap();
    assert_eq!(status.exit_code(), 0, "{status:?}:\n{}", dashboard.text());

    let dir = the_tui_dir(tmp.path());
    let naive = open_ro(&dir.join(NAIVE_DB));
    assert_eq!(rows(&naive), 312);
    assert_eq!(duplicated_ids(&naive).len(), 112);
    let guarded = open_ro(&dir.join(GUARDED_DB));
    assert_eq!(rows(&guarded), 200);
    assert_eq!(duplicated_ids(&guarded), Vec::<String>::new());
}

#[test]
fn a_terminal_too_small_says_so_and_q_still_quits() {
    let tmp = crate::support::tempdir();
    let mut dashboard = Dashboard::start(&[], tmp.path(), 50, 15).unwrap();
    dashboard
        .wait_for("too small", Instant::now() + STARTUP, |screen| {
            screen.contents().contains("too small")
        })
        .unwrap();
    // The night runs behind the notice: its workers must go with it.
    let reclaim = dashboard.pid();
    let mut workers = BTreeSet::new();
    dashboard
        .wait_for("workers running", Instant::now() + STARTUP, |_| {
            workers.extend(children(reclaim).into_iter().filter(|&p| alive_worker(p)));
            !workers.is_empty()
        })
        .unwrap();
    dashboard.send(b"q").unwrap();
    let status = dashboard.wait_exit(PROMPTLY).unwrap();
    assert_eq!(status.exit_code(), 0, "{status:?}:\n{}", dashboard.text());
    assert_no_worker_left(&workers);
    assert_terminal_restored(&dashboard);
}

#[test]
fn without_a_terminal_it_refuses_in_one_line_and_starts_no_worker() {
    for args in [&[][..], &["tui"][..]] {
        let tmp = crate::support::tempdir();
        let run = reclaim_within(args, &[("TMPDIR", tmp.path())], Duration::from_secs(10));
        assert_one_line_error(&run, "terminal");
        assert_eq!(run.stdout, "", "reclaim {args:?} drew on a pipe");
        assert_eq!(tui_dirs(tmp.path()), Vec::<PathBuf>::new(), "{args:?}");
    }
}

#[test]
fn a_piped_stdout_is_refused_even_with_a_terminal_on_stdin() {
    let tmp = crate::support::tempdir();
    let out = crate::support::tempdir();
    let mut command = CommandBuilder::new("sh");
    command.args([
        "-c",
        r#"exec "$0" >"$1/stdout" 2>"$1/stderr""#,
        BIN,
        out.path().to_str().unwrap(),
    ]);
    let mut dashboard = Dashboard::spawn(command, tmp.path(), COLS, ROWS).unwrap();
    let status = dashboard.wait_exit(PROMPTLY).unwrap();
    assert_eq!(status.exit_code(), 2, "{status:?}");
    let stderr = fs::read_to_string(out.path().join("stderr")).unwrap();
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "expected one line on stderr:\n{stderr}");
    assert!(lines[0].contains("terminal"), "{stderr}");
    assert!(
        !dashboard.entered_alternate_screen(),
        "it switched the terminal on stdin to the alternate screen"
    );
    assert_eq!(tui_dirs(tmp.path()), Vec::<PathBuf>::new());
}

#[test]
fn an_unknown_scenario_is_refused_before_the_terminal() {
    assert_refused_before_the_terminal(&["tui", "--scenario", "nope"], "nope");
}

#[test]
fn a_scenario_with_an_unknown_field_is_refused_before_the_terminal() {
    let dir = crate::support::tempdir();
    let path = dir.path().join("typo.toml");
    fs::write(&path, "items = 10\n\n[[lane]]\nstrateg = \"naive\"\n").unwrap();
    let path = path.to_str().unwrap();
    assert_refused_before_the_terminal(&["tui", "--scenario", path], "unknown field `strateg`");
}

#[test]
fn a_panic_in_any_thread_restores_the_terminal_and_leaves_no_worker() {
    // First, that `workers_under` sees a running dashboard's workers at all.
    let tmp = crate::support::tempdir();
    let mut dashboard = Dashboard::start(&[], tmp.path(), COLS, ROWS).unwrap();
    let deadline = Instant::now() + STARTUP;
    while workers_under(tmp.path()).len() < 2 && Instant::now() < deadline {
        thread::sleep(POLL);
    }
    assert_eq!(workers_under(tmp.path()).len(), 2, "{}", dashboard.text());
    dashboard.send(b"q").unwrap();
    dashboard.wait_exit(PROMPTLY).unwrap();
    for place in ["loop", "thread"] {
        let tmp = crate::support::tempdir();
        let mut command = CommandBuilder::new(BIN);
        command.env("RECLAIM_TEST_PANIC", place);
        let mut dashboard = Dashboard::spawn(command, tmp.path(), COLS, ROWS).unwrap();
        let status = dashboard.wait_exit(STARTUP).unwrap();
        assert_eq!(status.exit_code(), 101, "{place}: {}", dashboard.text());
        assert!(
            dashboard.text().contains("RECLAIM_TEST_PANIC"),
            "{place}: {}",
            dashboard.text()
        );
        // The workers had started (their databases exist) and are gone within a second.
        assert!(
            !tui_dirs(tmp.path()).is_empty(),
            "{place}: no night was started"
        );
        let deadline = Instant::now() + ORPHAN_GRACE;
        while !workers_under(tmp.path()).is_empty() && Instant::now() < deadline {
            thread::sleep(POLL);
        }
        assert_eq!(
            workers_under(tmp.path()),
            Vec::<i32>::new(),
            "{place}: workers left"
        );
        assert_terminal_restored(&dashboard);
    }
}

/// The header's clock as sim seconds since 02:00 (`02:11:47` -> 707).
fn night_clock(screen: &vt100::Screen) -> Option<u32> {
    header_clock(screen).and_then(|(clock, _)| clock.checked_sub(2 * 3600))
}

/// The incident in the dashboard, recorded, with `keys` sent once the header's clock has
/// reached each moment (sim seconds since 02:00); ends with the night over, the screen and
/// the recording handed back.
fn incident_with_keys(keys: &[(u32, &[u8])]) -> (String, reclaim::record::Recording) {
    let tmp = crate::support::tempdir();
    let record = tmp.path().join("night.jsonl");
    let mut dashboard = Dashboard::start(
        &["tui", "--record", path_arg(&record)],
        tmp.path(),
        COLS,
        ROWS,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    // The speed is under test, not the captions: past each caption's hold at once (`c` moves
    // no clock and changes no speed).
    for (at, bytes) in keys {
        dashboard
            .wait_past_captions(
                "the clock to reach the moment for a key",
                Instant::now() + Duration::from_secs(90),
                |screen| night_clock(screen).is_some_and(|t| t >= *at),
            )
            .unwrap_or_else(|e| panic!("{e}"));
        dashboard.send(bytes).unwrap_or_else(|e| panic!("{e}"));
    }
    dashboard
        .wait_past_captions(
            "the night is over, naive's claim shown",
            Instant::now() + Duration::from_secs(120),
            |screen| night_over(screen) && lane_text(screen, 0, 2).contains("rows_written=312"),
        )
        .unwrap_or_else(|e| panic!("{e}"));
    let screen = dashboard.text();
    dashboard.send(b"q").unwrap_or_else(|e| panic!("{e}"));
    let status = dashboard
        .wait_exit(PROMPTLY)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(status.exit_code(), 0, "{status:?}:\n{screen}");
    let recording = reclaim::record::Recording::load(&record).unwrap_or_else(|e| panic!("{e}"));
    (screen, recording)
}

/// Sim seconds since 02:00 of the first recorded event of `lane` whose line contains `text`.
fn event_at(recording: &reclaim::record::Recording, lane: usize, text: &str) -> f64 {
    recording
        .events
        .iter()
        .find(|e| e.lane == Some(lane) && e.text.contains(text))
        .map_or_else(
            || panic!("no {text:?} in lane {lane}: {:?}", recording.events),
            |e| e.sim - reclaim::base::clock::NIGHT_START,
        )
}

/// What a user sees of the incident whatever the speed: the kill at 02:11:47, the restart
/// 18 sim-seconds later, naive done at 02:19:31 with 312 rows, and an axis of 02:00-02:20.
fn assert_the_same_night(screen: &str, recording: &reclaim::record::Recording) {
    let kill = event_at(recording, 0, "instance reclaimed by host");
    let restart = event_at(recording, 0, "supervisor restarts");
    let done = event_at(recording, 0, "rows_written=312");
    assert!((kill - 707.0).abs() < 0.01, "the kill at 02:11:47: {kill}");
    assert!((restart - kill - 18.0).abs() < 1e-6, "{kill} -> {restart}");
    assert!((done - 1171.0).abs() < 0.01, "done at 02:19:31: {done}");
    assert!(
        screen.contains("02:20"),
        "the axis ends at 02:20:\n{screen}"
    );
    assert!(
        !screen.contains("02:3"),
        "the axis never grows past 02:20:\n{screen}"
    );
}

#[test]
fn at_4x_the_incident_is_the_same_night() {
    // `+` twice from the start: the whole night at 4x.
    let (screen, recording) = incident_with_keys(&[(0, b"++")]);
    assert_the_same_night(&screen, &recording);
}

#[test]
fn at_a_quarter_speed_the_incident_is_the_same_night() {
    // Fast to 02:11, the kill and the restart at 0.25x, then fast to the end.
    let (screen, recording) =
        incident_with_keys(&[(0, b"++++"), (660, b"------"), (730, b"++++++")]);
    assert_the_same_night(&screen, &recording);
}

#[test]
fn a_key_over_the_help_only_closes_it_and_kills_nothing() {
    let tmp = crate::support::tempdir();
    let mut dashboard = Dashboard::start(&[], tmp.path(), COLS, ROWS).unwrap();
    // Past the first caption's hold; no `c` from here on, as a key over the help closes it.
    dashboard
        .wait_past_captions("a worker writing", Instant::now() + STARTUP, |screen| {
            night_clock(screen).is_some_and(|t| t >= 20)
        })
        .unwrap();
    dashboard.send(b"?").unwrap();
    dashboard
        .wait_for("the help", Instant::now() + PROMPTLY, |screen| {
            screen.contents().contains("only closes this")
        })
        .unwrap();
    dashboard.send(b"k").unwrap();
    dashboard
        .wait_for("the help closed", Instant::now() + PROMPTLY, |screen| {
            !screen.contents().contains("only closes this")
        })
        .unwrap();
    // Well on into the night, before the scenario's own kill at 02:11:47: nothing was killed.
    dashboard
        .wait_for("02:08 on the clock", Instant::now() + STARTUP, |screen| {
            night_clock(screen).is_some_and(|t| t >= 480)
        })
        .unwrap();
    let screen = dashboard.text();
    assert!(!screen.contains("instance reclaimed"), "{screen}");
    assert!(!screen.contains("restarting"), "{screen}");
    dashboard.send(b"q").unwrap();
    let status = dashboard.wait_exit(PROMPTLY).unwrap();
    assert_eq!(status.exit_code(), 0, "{status:?}");
}

#[test]
fn i_lists_the_naive_lanes_duplicated_ids_and_any_key_only_closes_the_list() {
    let tmp = crate::support::tempdir();
    let mut dashboard = Dashboard::start(&[], tmp.path(), COLS, ROWS).unwrap();
    // At 16x, past each caption's hold, the whole night is over in a second or two.
    dashboard.send(b"++++").unwrap();
    dashboard
        .wait_past_captions(
            "the night is over",
            Instant::now() + Duration::from_secs(60),
            night_over,
        )
        .unwrap();
    dashboard.send(b"i").unwrap();
    dashboard
        .wait_for(
            "naive's duplicated ids",
            Instant::now() + PROMPTLY,
            |screen| {
                let text = screen.contents();
                text.contains("naive: 112 task ids written more than once")
                    && text.contains("task-000  x2  pid-")
            },
        )
        .unwrap();
    // `n` would start the night again: over the list it only closes it.
    dashboard.send(b"n").unwrap();
    dashboard
        .wait_for("the list closed", Instant::now() + PROMPTLY, |screen| {
            !screen
                .contents()
                .contains("written more than once (any key")
        })
        .unwrap();
    // The same night, not a new one: naive's claim is still there.
    let naive = dashboard.with_screen(|screen| lane_text(screen, 0, 2));
    assert!(naive.contains("rows_written=312"), "{naive}");
    dashboard.send(b"q").unwrap();
    let status = dashboard.wait_exit(PROMPTLY).unwrap();
    assert_eq!(status.exit_code(), 0, "{status:?}");
}
