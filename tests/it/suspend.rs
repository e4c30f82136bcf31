//! reclaim itself stopped and continued: the dashboard suspended (Ctrl-Z, SIGTSTP) gives the
//! terminal back, stops its workers with it and redraws everything on `fg`; a headless night
//! stopped by SIGSTOP does not count the time it was not watching as a worker's silence; and a
//! worker hung under a supervisor that keeps watching still trips the dead-man's switch.

use std::collections::BTreeSet;
use std::io::Read as _;
use std::path::Path;
use std::process::Stdio;
use std::thread;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use crate::support::Dashboard;
use crate::support::{
    COLS, ROWS, STARTUP, alive_worker, assert_no_worker_left, assert_screen_restored, children,
    stat_fields, wait_for_workers,
};
use crate::support::{Run, path_arg, workers_under};

/// How long reclaim may take to stop, or to come back, after the signal.
const PROMPTLY: Duration = Duration::from_secs(5);
const POLL: Duration = Duration::from_millis(20);

/// A process's state letter in /proc (R, S, T for stopped, Z, ...).
fn state(pid: u32) -> Option<String> {
    stat_fields(pid)?.into_iter().next()
}

fn pid_u32(pid: Pid) -> u32 {
    u32::try_from(pid.as_raw()).unwrap_or(u32::MAX)
}

/// Polls until `check` holds, up to `limit`; `Err` says what was awaited.
fn poll_until(what: &str, limit: Duration, mut check: impl FnMut() -> bool) -> Result<(), String> {
    let deadline = Instant::now() + limit;
    while !check() {
        if Instant::now() >= deadline {
            return Err(format!("{what}: not within {limit:?}"));
        }
        thread::sleep(POLL);
    }
    Ok(())
}

/// The live workers of the dashboard (its children running `reclaim worker`).
fn workers(dashboard: &Dashboard) -> Vec<u32> {
    children(dashboard.pid())
        .into_iter()
        .filter(|&p| alive_worker(p))
        .collect()
}

/// Whether the dashboard, with its header and its footer, fills the alternate screen (the
/// cursor hidden, the mouse reported, as before the suspension).
fn dashboard_drawn(screen: &vt100::Screen) -> bool {
    let text = screen.contents();
    screen.alternate_screen()
        && screen.hide_cursor()
        && screen.mouse_protocol_mode() != vt100::MouseProtocolMode::None
        && text.contains("reclaim")
        && text.contains("quit")
}

/// Suspends the dashboard with `stop` and checks what a user at the shell would see: reclaim
/// stopped (state T), the terminal back in its normal mode on the main screen, every worker
/// stopped too. Then continues it and checks that the whole dashboard is drawn again and the
/// workers run (unless `paused_before`: a night the user paused stays paused).
fn suspend_and_continue(
    dashboard: &mut Dashboard,
    stop: impl FnOnce(&mut Dashboard) -> Result<(), String>,
    paused_before: bool,
) -> Result<(), String> {
    let me = pid_u32(dashboard.pid());
    let before = workers(dashboard);
    if before.is_empty() {
        return Err("no worker was running before the suspension".into());
    }
    stop(dashboard)?;
    poll_until("reclaim stopped (state T)", PROMPTLY, || {
        state(me).as_deref() == Some("T")
    })?;
    // What reclaim wrote before it stopped may still be on its way through the pty.
    dashboard.wait_for(
        "the main screen back while reclaim is stopped",
        Instant::now() + PROMPTLY,
        |screen| !screen.alternate_screen(),
    )?;
    dashboard.with_screen(assert_screen_restored);
    if dashboard.raw_mode() != Some(false) {
        return Err(format!(
            "the terminal is left in raw mode while reclaim is stopped ({:?})",
            dashboard.raw_mode()
        ));
    }
    let running = || -> Vec<(u32, Option<String>)> {
        before
            .iter()
            .filter(|&&p| alive_worker(p))
            .map(|&p| (p, state(p)))
            .filter(|(_, s)| s.as_deref() != Some("T"))
            .collect()
    };
    // The SIGSTOPs were sent before reclaim stopped; a busy machine may take a moment to land them.
    if poll_until("every worker stopped", PROMPTLY, || running().is_empty()).is_err() {
        return Err(format!(
            "workers kept running while reclaim was stopped: {:?}",
            running()
        ));
    }
    // A while stopped, as a user at the shell would leave it; the workers stay stopped.
    thread::sleep(Duration::from_millis(300));
    if before
        .iter()
        .any(|&p| alive_worker(p) && state(p).as_deref() != Some("T"))
    {
        return Err("a worker ran on while reclaim was stopped".into());
    }

    kill(dashboard.pid(), Signal::SIGCONT).map_err(|e| format!("SIGCONT: {e}"))?;
    dashboard.wait_for(
        "the whole dashboard drawn again after SIGCONT",
        Instant::now() + PROMPTLY,
        dashboard_drawn,
    )?;
    if dashboard.raw_mode() != Some(true) {
        return Err("the dashboard runs on without raw mode".into());
    }
    let after = workers(dashboard);
    if paused_before {
        if after.iter().any(|&p| state(p).as_deref() != Some("T")) {
            return Err("a night the user had paused was resumed by fg".into());
        }
    } else {
        poll_until("the workers running again", PROMPTLY, || {
            workers(dashboard)
                .iter()
                .all(|&p| state(p).as_deref() != Some("T"))
        })?;
    }
    Ok(())
}

#[test]
fn a_suspended_dashboard_gives_the_terminal_back_and_fg_redraws_all_of_it() {
    let tmp = crate::support::tempdir();
    let mut dashboard = Dashboard::start(&[], tmp.path(), COLS, ROWS).unwrap();
    let mut seen: BTreeSet<u32> = wait_for_workers(&mut dashboard, 2)
        .unwrap()
        .into_iter()
        .flatten()
        .collect();

    // `kill -TSTP`, as a shell's job control (or a user) sends it.
    suspend_and_continue(&mut dashboard, |d| d.signal(Signal::SIGTSTP), false).unwrap();
    seen.extend(workers(&dashboard));
    // Ctrl-Z: in raw mode the terminal sends it as a key, not as SIGTSTP.
    suspend_and_continue(&mut dashboard, |d| d.send(b"\x1a"), false).unwrap();
    seen.extend(workers(&dashboard));
    // Paused by the user first: stopped with reclaim, and still paused after fg.
    dashboard.send(b"p").unwrap();
    suspend_and_continue(&mut dashboard, |d| d.signal(Signal::SIGTSTP), true).unwrap();
    seen.extend(workers(&dashboard));

    dashboard.send(b"q").unwrap();
    let status = dashboard.wait_exit(PROMPTLY).unwrap();
    assert!(status.success(), "{status:?}\n{}", dashboard.text());
    dashboard.with_screen(assert_screen_restored);
    assert_no_worker_left(&seen);
}

/// `reclaim run ARGS` with `kill -STOP` once its worker has written rows, held `stopped_for`;
/// then `kill -CONT`, and run to its end. A gated worker waits for the supervisor's grants, so
/// while reclaim is stopped the night stands still: not one row is written meanwhile.
fn run_stopped_while_the_worker_waits(args: &[&str], dir: &Path, stopped_for: Duration) -> Run {
    let mut child = crate::support::reclaim_command()
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run reclaim {args:?}: {e}"));
    let pid = Pid::from_raw(i32::try_from(child.id()).unwrap_or(i32::MAX));
    let mut stdout = child.stdout.take().unwrap_or_else(|| panic!("no stdout"));
    let mut stderr = child.stderr.take().unwrap_or_else(|| panic!("no stderr"));
    let out = thread::spawn(move || {
        let mut text = String::new();
        let _ = stdout.read_to_string(&mut text);
        text
    });
    let err = thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    let db = dir.join("w.db");
    let written = || {
        rusqlite::Connection::open_with_flags(&db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .and_then(|c| c.query_row("SELECT count(*) FROM records", [], |r| r.get::<_, u64>(0)))
            .unwrap_or(0)
    };
    let started = poll_until("a worker writing", Duration::from_secs(20), || {
        !workers_under(dir).is_empty() && written() > 0
    });
    if let Err(e) = started {
        let _ = child.kill();
        panic!("{e}");
    }
    kill(pid, Signal::SIGSTOP).unwrap_or_else(|e| panic!("SIGSTOP: {e}"));
    let before = written();
    // Stopped as long as a user at the shell might leave it (the scenario, not a wait).
    thread::sleep(stopped_for);
    let after = written();
    kill(pid, Signal::SIGCONT).unwrap_or_else(|e| panic!("SIGCONT: {e}"));
    // The grants already sent when reclaim stopped may still be written, however late a loaded
    // machine lands them: at most 40 ms of writes ahead of the clock (`GRANT_AHEAD` in
    // src/engine/mod.rs), four items at 10 ms, and the one in hand. An ungated worker would have
    // written a row every 10 ms of the stop.
    assert!(
        after <= before + 5,
        "{} rows were written while reclaim was stopped",
        after - before
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap_or_else(|e| panic!("wait: {e}")) {
            break status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            panic!("reclaim {args:?} still running a minute after SIGCONT");
        }
        thread::sleep(POLL);
    };
    let output = std::process::Output {
        status,
        stdout: out.join().unwrap_or_default().into_bytes(),
        stderr: err.join().unwrap_or_default().into_bytes(),
    };
    Run::from_output(&format!("reclaim {args:?}"), &output)
}

#[test]
fn time_reclaim_itself_was_stopped_is_not_a_workers_silence() {
    // At 120x the dead-man's 300 sim-seconds are 2.5 real seconds; a stop of 3 s used to be
    // reported as `runner heartbeat stale: 360s` or more.
    for (what, extra) in [
        ("running", &["--items", "60"][..]),
        // A crash after the stop: the restart is due, its last beat old.
        (
            "crashed",
            &["--items", "200", "--crash-at", "task-100:after-commit"][..],
        ),
    ] {
        let dir = crate::support::tempdir();
        let db = dir.path().join("w.db");
        let mut args = vec![
            "run",
            "--strategy",
            "guarded",
            "--delay-ms",
            "10",
            "--restart-delay",
            "12",
            "--scale",
            "120",
            "--db",
            path_arg(&db),
        ];
        args.extend_from_slice(extra);
        let run = run_stopped_while_the_worker_waits(&args, dir.path(), Duration::from_secs(3));
        assert_eq!(run.code, Some(0), "{what}: {}\n{}", run.stdout, run.stderr);
        assert!(
            !run.stdout.contains("heartbeat stale"),
            "{what}: a false dead-man's alert:\n{}",
            run.stdout
        );
        assert!(
            run.stdout.contains("derived=ok") && run.stdout.contains("completed=yes"),
            "{what}: {}",
            run.stdout
        );
    }
}

#[test]
fn a_worker_hung_under_a_watching_supervisor_still_trips_the_dead_mans_switch() {
    // The shipped scenario hangs every worker (SIGSTOP) at task-080 for 420 sim-seconds; the
    // switch fires at 300.
    let tmp = crate::support::tempdir();
    let mut dashboard = Dashboard::start(
        &["tui", "--scenario", "hung-worker"],
        tmp.path(),
        COLS,
        ROWS,
    )
    .unwrap();
    dashboard
        .wait_for(
            "the dead-man's switch firing on the hung worker",
            Instant::now() + STARTUP + Duration::from_secs(30),
            |screen| screen.contents().contains("heartbeat stale"),
        )
        .unwrap();
    dashboard.send(b"q").unwrap();
    let status = dashboard.wait_exit(PROMPTLY).unwrap();
    assert!(status.success(), "{status:?}");
}
